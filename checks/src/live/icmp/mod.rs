//! The ICMP driver: the sockets and the loop that feed the sans-IO engine
//! ([`crate::facts::icmp`]) on this machine.
mod driver;
mod error_queue;
mod socket;

use crate::facts::icmp::{PathProbe, Settings, SocketKind, Target};
use crate::facts::ProbeError;

/// Measure every target concurrently. Fails only when no ICMP socket can
/// be opened at all (no privilege: [`ProbeError::PermissionDenied`]).
pub fn measure(
    targets: &[Target],
    settings: &Settings,
) -> Result<(Vec<PathProbe>, SocketKind), ProbeError> {
    let mut driver = driver::Driver::new(targets, settings)?;
    driver.run();
    let kind = driver.socket_kind();
    Ok((driver.results(), kind))
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::icmp::packet::{checksum, payload, payload_matches};
    use crate::facts::icmp::plan::{
        ladder, refinement, COMMON_MTUS, MAX_LADDER, MIN_PROBE_V4, MIN_PROBE_V6,
    };
    use std::net::IpAddr;
    use std::net::Ipv4Addr;
    use std::time::{Duration, Instant};

    #[test]
    fn refinement_closes_a_jumbo_gap_in_two_rounds() {
        // Black hole at 1500 behind a 9000 target, minimal probe answered.
        let r2 = ladder(MIN_PROBE_V4, 9001);
        assert!(r2.len() as u32 <= MAX_LADDER + 2 * COMMON_MTUS.len() as u32);
        assert!(r2.contains(&1500) && r2.contains(&1501));
        // Worst case: the path MTU falls in the widest gap of the ladder.
        let widest = r2
            .windows(2)
            .map(|w| w[1] - w[0] - 1)
            .chain([r2[0] - MIN_PROBE_V4 - 1, 9001 - r2[r2.len() - 1] - 1])
            .max()
            .unwrap();
        assert!(widest <= MAX_LADDER, "widest gap {widest}");
        // …which round 2 probes whole.
        assert_eq!(refinement(5000, 5000 + widest + 1, 2).len() as u32, widest);
    }

    #[test]
    fn refinement_reaches_any_size_within_three_rounds() {
        // Simulate the planner against every path MTU in a range: at most 3
        // rounds, exact to the byte.
        for (min, target) in [
            (MIN_PROBE_V4, 9000u32),
            (MIN_PROBE_V6, 9000),
            (MIN_PROBE_V4, 65535),
        ] {
            for pmtu in (min..=target)
                .step_by(97)
                .chain([1500, 1280, 4000, target - 1, min + 1])
            {
                let mut lo = min;
                let mut hi = target + 1;
                let mut rounds = 1;
                let mut sizes = ladder(lo, hi);
                sizes.push(target);
                loop {
                    for s in &sizes {
                        if *s <= pmtu {
                            lo = lo.max(*s);
                        } else {
                            hi = hi.min(*s);
                        }
                    }
                    if hi == lo + 1 || lo == target {
                        break;
                    }
                    rounds += 1;
                    assert!(
                        rounds <= 3,
                        "pmtu {pmtu} target {target}: gap {lo}..{hi} after 3 rounds"
                    );
                    sizes = refinement(lo, hi, 3 - rounds + 1);
                }
                assert_eq!(lo, pmtu.min(target), "pmtu {pmtu}");
            }
        }
    }

    #[test]
    fn small_gaps_are_probed_whole() {
        assert_eq!(refinement(1500, 1503, 2), vec![1501, 1502]);
        assert!(refinement(1500, 1501, 3).is_empty());
        assert!(refinement(1500, 1500, 3).is_empty());
    }

    #[test]
    fn payload_pattern_detects_corruption_and_foreign_replies() {
        let nonce = *b"spxnonce";
        let p = payload(&nonce, 7, 1472);
        assert_eq!(p.len(), 1472);
        assert!(payload_matches(&nonce, 7, &p));
        assert!(!payload_matches(&nonce, 8, &p), "other sequence");
        assert!(!payload_matches(b"othernon", 7, &p), "other run");
        let mut bad = p.clone();
        bad[900] ^= 1;
        assert!(!payload_matches(&nonce, 7, &bad));
    }

    #[test]
    fn checksum_matches_rfc1071_example() {
        // RFC 1071 §3 example bytes; the one's complement sum is 0xddf2.
        assert_eq!(
            checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            !0xddf2
        );
        // A packet with its checksum filled sums to zero.
        let mut pkt = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1, 1, 2, 3];
        let c = checksum(&pkt);
        pkt[2..4].copy_from_slice(&c.to_be_bytes());
        assert_eq!(checksum(&pkt), 0);
    }

    #[test]
    fn exact_path_mtu_needs_both_bounds() {
        let mut p = PathProbe {
            addr: "198.18.0.2".parse().unwrap(),
            target_mtu: 9000,
            rtt: None,
            largest_answered: Some(1500),
            smallest_refused: Some(1501),
            too_big: None,
            local_limit: None,
            other_error: None,
            rounds: 1,
            probes_sent: 3,
            refused_at_send: 0,
            cut_short: false,
        };
        assert_eq!(p.exact_path_mtu(), Some(1500));
        p.smallest_refused = Some(1600);
        assert_eq!(p.exact_path_mtu(), None);
        p.largest_answered = Some(9000);
        assert!(p.target_answered());
        assert_eq!(p.exact_path_mtu(), Some(9000));
    }

    #[test]
    fn loopback_answers_a_jumbo_probe() {
        // Loopback only (MTU 65536): the engine end to end, when allowed.
        let target = Target {
            addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
            scope_id: 0,
            target_mtu: 9000,
        };
        let settings = Settings {
            round_timeout: Duration::from_secs(1),
            deadline: Instant::now() + Duration::from_secs(5),
            max_rounds: 3,
        };
        match measure(&[target], &settings) {
            Ok((r, _)) => {
                assert!(r[0].target_answered(), "{r:?}");
                assert_eq!(r[0].exact_path_mtu(), Some(9000));
                assert!(r[0].rtt.is_some());
                assert_eq!(r[0].rounds, 1);
            }
            Err(ProbeError::PermissionDenied { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
}
