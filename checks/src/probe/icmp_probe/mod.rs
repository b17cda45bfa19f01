//! Path MTU measurement with don't-fragment ICMP echo, to many peers at once.
//!
//! Why not `ping -M do` in a loop: the manual proof took 29 s for 4 peers and
//! only answered yes/no, and tracepath reports 9000 on a path an L2 switch
//! black-holes above 1500 (no "fragmentation needed" ever comes back). Here
//! every probe is an echo request that exactly fills M bytes (payload M−28
//! on IPv4, M−48 on IPv6) sent with `IP_PMTUDISC_PROBE`/`IPV6_PMTUDISC_PROBE`
//! (DF set, the cached path MTU ignored, so a probe larger than an earlier
//! "fragmentation needed" still leaves), to all peers concurrently:
//!
//! * round 1: a minimal probe (twice) and the target size; as soon as the
//!   minimal probe answers and the target does not, a ladder of sizes
//!   (common MTU boundaries and an even spread) goes out in the same round;
//!   a "fragmentation needed"/"packet too big" names the hop's MTU at once
//!   (`IP_RECVERR` error queue, `ee_info`) and that exact size is probed
//!   immediately;
//! * rounds 2 and 3 refine the gap between the largest size that answered
//!   and the smallest that did not, re-probing a silent upper bound once so
//!   that one lost packet cannot pass for a black hole.
//!
//! A 9000-byte target is exact to the byte after round 2 at the latest
//! (≈95 sizes per ladder), so a black hole costs two probe timeouts and a
//! healthy path one round trip. Every round is bounded by the probe timeout
//! and the run's deadline.
//!
//! surge-ping was evaluated and not used: it cannot read the socket error
//! queue (its receive task would spin on POLLERR) and it receives into a
//! 2048-byte buffer, truncating the jumbo replies this module must verify.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::facts::ProbeError;

mod driver;
mod engine;
mod error_queue;
mod packet;
mod plan;
mod socket;

pub use self::packet::{checksum, payload};
pub use self::plan::{
    ladder, min_probe, overhead, refinement, COMMON_MTUS, IPV4_OVERHEAD, IPV6_OVERHEAD, MAX_LADDER,
    MIN_PROBE_V4, MIN_PROBE_V6,
};

/// One destination to measure.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Target {
    pub addr: IpAddr,
    /// The interface index a link-local IPv6 address is reached on
    /// (`sin6_scope_id`); 0 for every other address.
    pub scope_id: u32,
    /// The size that must pass (the target underlay MTU).
    pub target_mtu: u32,
}

#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// One round's bound (`--probe-timeout`).
    pub round_timeout: Duration,
    /// Nothing runs past this (the run's global deadline).
    pub deadline: Instant,
    /// At most this many rounds (3).
    pub max_rounds: u32,
}

/// Which kind of ICMP socket carried the probes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SocketKind {
    /// `SOCK_DGRAM` ICMP ("ping socket"): no privilege needed when
    /// `net.ipv4.ping_group_range` includes our group.
    Datagram,
    /// `SOCK_RAW`: needs CAP_NET_RAW.
    Raw,
}

impl SocketKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SocketKind::Datagram => "icmp-datagram",
            SocketKind::Raw => "raw",
        }
    }
}

/// A hop that answered "fragmentation needed" (IPv4) or "packet too big"
/// (IPv6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TooBig {
    /// The router (or host) that sent the error.
    pub from: Option<IpAddr>,
    /// The next-hop MTU it reported.
    pub mtu: u32,
}

/// What was measured towards one target.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PathProbe {
    pub addr: IpAddr,
    pub target_mtu: u32,
    /// Round trip of the first minimal probe that answered.
    pub rtt: Option<Duration>,
    /// Largest size that came back as a verified echo reply.
    pub largest_answered: Option<u32>,
    /// Smallest size above `largest_answered` known not to pass: no reply
    /// within its round, an ICMP error, or refused locally.
    pub smallest_refused: Option<u32>,
    /// The smallest MTU a hop reported, if any did.
    pub too_big: Option<TooBig>,
    /// The largest size this host could send (EMSGSIZE: the egress
    /// device's MTU), when a probe was refused locally.
    pub local_limit: Option<u32>,
    /// Another ICMP error (host/net unreachable, administratively
    /// prohibited, time exceeded), described.
    pub other_error: Option<String>,
    /// Rounds this target took part in.
    pub rounds: u32,
    pub probes_sent: u32,
    /// The run's deadline ended a round early (or prevented one) while
    /// probes to this target were unanswered: silence proves nothing then.
    pub cut_short: bool,
}

impl PathProbe {
    /// The peer answered an echo request at all.
    pub fn reachable(&self) -> bool {
        self.largest_answered.is_some()
    }

    pub fn target_answered(&self) -> bool {
        self.largest_answered.is_some_and(|l| l >= self.target_mtu)
    }

    /// The path MTU, exact to the byte: the largest size that answered,
    /// when the next size up is known not to pass (or it is the target).
    pub fn exact_path_mtu(&self) -> Option<u32> {
        let lo = self.largest_answered?;
        if lo >= self.target_mtu || self.smallest_refused == Some(lo + 1) {
            Some(lo)
        } else {
            None
        }
    }
}

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
    use super::packet::payload_matches;
    use super::*;
    use std::net::Ipv4Addr;

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
