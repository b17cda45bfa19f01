//! `nic.tso`: under load, does the NIC get TSO super-packets, or does the
//! host CPU segment everything?
//!
//! The measurement behind the tuning page's headline: on the same ConnectX-5,
//! host traffic went out as 4,165,267 TSO super-packets at 39.3 wire
//! packets per descriptor (92.6 Gbit/s), guest traffic over the geneve
//! overlay as 0 super-packets, 1.0 wire packet per descriptor (17.6 Gbit/s).
//! nic.offloads says whether the feature is on; this check says whether it
//! is used, from the driver's own counters over the sample window.

use std::time::Duration;

use serde::Serialize;

use crate::check::Check;
use crate::ctx::Ctx;
use crate::finding::{Finding, SkipReason, Status};
use crate::host::HostRef;
use crate::probe::ethtool::{driver_counters, Reported, GENERIC_TSO_COUNTERS};
use crate::probe::sysfs_net;
use crate::probe::underlay_nics::{self, Selection};
use crate::probe::ProbeError;

pub struct NicTso;

/// Below this many wire packets per second the link is idle for this purpose.
pub const MIN_PPS: f64 = 1_000.0;
/// Bulk traffic: the average transmitted frame is at least this large.
/// Acks and requests are small and never segmented.
pub const BULK_AVG_BYTES: f64 = 1_000.0;
/// At this rate of full frames (≈1.2 Gbit/s) zero TSO is the seed's failure,
/// not a trickle.
pub const FAIL_PPS: f64 = 100_000.0;
/// Fewer wire packets per TSO descriptor than this: most bulk bytes are
/// still segmented in software. A 64 KB super-packet is ~45 frames at 1500.
pub const WARN_RATIO: f64 = 4.0;

/// One interface's counters at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxCounters {
    /// Wire packets sent (`statistics/tx_packets`).
    pub packets: u64,
    pub bytes: u64,
    /// Sum of the driver's TSO descriptor counters.
    pub tso: u64,
}

/// The TSO descriptor counters among `stats` for `driver`: its own names
/// where the driver is known ([`crate::probe::ethtool::DRIVER_COUNTERS`]:
/// none for ice, i40e, ixgbe, bnxt_en, ena, virtio_net), else the mlx
/// spellings. Each name once, in driver order.
pub fn tso_counter_names(driver: Option<&str>, stats: &[(String, u64)]) -> Vec<String> {
    let wanted: &[&str] = match driver.and_then(driver_counters) {
        Some(d) => d.tso,
        None => &GENERIC_TSO_COUNTERS,
    };
    let mut names: Vec<String> = Vec::new();
    for (n, _) in stats {
        let n = n.trim();
        if wanted.contains(&n) && !names.iter().any(|x| x == n) {
            names.push(n.to_owned());
        }
    }
    names
}

/// Sum of every entry of the named counters (vmxnet3 repeats its name per
/// queue).
pub fn tso_sum(stats: &[(String, u64)], names: &[String]) -> u64 {
    stats
        .iter()
        .filter(|(n, _)| names.iter().any(|x| x == n.trim()))
        .map(|(_, v)| *v)
        .fold(0u64, |a, v| a.saturating_add(v))
}

/// What the window measured on one interface.
#[derive(Clone, Debug, PartialEq)]
pub struct InterfaceSample {
    pub name: String,
    pub driver: Option<String>,
    /// The TSO counters the driver has; empty when it has none.
    pub tso_counters: Vec<String>,
    pub start: TxCounters,
    pub end: TxCounters,
}

impl Check for NicTso {
    fn id(&self) -> &'static str {
        "nic.tso"
    }

    fn title(&self) -> &'static str {
        "Underlay NIC gets TSO super-packets under load"
    }

    fn explain(&self) -> &'static str {
        "Reads the underlay NIC's transmit counters at the start and end of the sample \
         window (--sample): wire packets and bytes (sysfs statistics) and the driver's TSO \
         descriptor counters by name through SIOCETHTOOL (what `ethtool -S IF` shows: mlx5_core \
         tx_tso_packets and tx_tso_inner_packets, mlx4_en tso_packets, sfc tx_tso_bursts, \
         vmxnet3 TSO pkts tx, igb and e1000e tx_tcp_seg_good) of the underlay NICs \
         (VLANs and bonds followed down to the devices beneath). The ratio is wire \
         packets per TSO descriptor. ice, i40e, ixgbe, bnxt_en, ena and virtio_net count \
         no TSO descriptors (only packets and bytes per queue).\n\
         \n\
         Verdicts: bulk traffic (full-size frames, at least 1000 packets/s) with no TSO \
         descriptors at all: warn, and fail from 100,000 packets/s — the overlay gets no \
         hardware segmentation offload. Fewer than 4 wire packets per descriptor: warn. \
         An idle link, or a driver without TSO counters (veth, ice, i40e, ixgbe, bnxt_en, \
         ena, virtio_net), is a skip that says so.\n\
         \n\
         Why: measured on a ConnectX-5, 3 clients into one server: host traffic 4,165,267 \
         TSO super-packets, 39.3 wire packets per descriptor, 92.6 Gbit/s; guest traffic \
         over the geneve overlay 0 super-packets, 1.0 per descriptor, 17.6 Gbit/s (5.3x). \
         The guest's 64 KB GSO packets reach the host intact and are cut into 1518-byte \
         frames in software between the tap and the NIC.\n\
         \n\
         Fix: first nic.offloads (tx-udp_tnl-segmentation must be on). If it is on and \
         this still fails, the driver declines to offload geneve GSO or the OVS datapath \
         drops GSO before the driver: the tuning page's open question, distinguishable by \
         the same measurement over a VXLAN tunnel. Jumbo frames mitigate (about sixfold \
         fewer descriptors)."
    }

    fn samples(&self) -> bool {
        true
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let host = ctx.host();
        let sel = match underlay_nics::underlay(ctx) {
            Ok(s) => underlay_nics::hardware(host, s),
            Err(f) => return f,
        };
        let t0 = host.clock();
        let mut samples = match first_reading(host, &sel) {
            Ok(s) => s,
            Err(e) => return e.into(),
        };
        ctx.wait_for_window_end();
        for s in &mut samples {
            match read_counters(host, &s.name, &s.tso_counters) {
                Ok(c) => s.end = c,
                Err(e) => return e.into(),
            }
        }
        let window = host.clock().saturating_sub(t0);
        judge(&samples, window).with("interface_source", &sel.source)
    }
}

fn read_counters(
    host: HostRef<'_>,
    name: &str,
    tso_names: &[String],
) -> Result<TxCounters, ProbeError> {
    let tso = if tso_names.is_empty() {
        0
    } else {
        match host.ethtool_stats(name)? {
            Reported::Yes(stats) => tso_sum(&stats, tso_names),
            Reported::NotReported => 0,
        }
    };
    Ok(TxCounters {
        packets: sysfs_net::attr_u64(host, name, "statistics/tx_packets")?,
        bytes: sysfs_net::attr_u64(host, name, "statistics/tx_bytes")?,
        tso,
    })
}

fn first_reading(host: HostRef<'_>, sel: &Selection) -> Result<Vec<InterfaceSample>, ProbeError> {
    let mut out = Vec::new();
    for name in &sel.interfaces {
        let stats = host.ethtool_stats(name)?.ok().unwrap_or_default();
        let driver = underlay_nics::driver(host, name);
        let tso_counters = tso_counter_names(driver.as_deref(), &stats);
        let start = TxCounters {
            packets: sysfs_net::attr_u64(host, name, "statistics/tx_packets")?,
            bytes: sysfs_net::attr_u64(host, name, "statistics/tx_bytes")?,
            tso: tso_sum(&stats, &tso_counters),
        };
        out.push(InterfaceSample {
            name: name.clone(),
            driver,
            tso_counters,
            start,
            end: start,
        });
    }
    Ok(out)
}

#[derive(Serialize)]
struct Evidence {
    name: String,
    driver: Option<String>,
    tso_counters: Vec<String>,
    tx_packets: u64,
    tx_packets_per_sec: u64,
    avg_tx_bytes: u64,
    tso_descriptors: u64,
    wire_packets_per_descriptor: Option<f64>,
    verdict: Status,
    reason: String,
}

fn judge_one(s: &InterfaceSample, secs: f64) -> (Status, String, Evidence) {
    let packets = s.end.packets.saturating_sub(s.start.packets);
    let bytes = s.end.bytes.saturating_sub(s.start.bytes);
    let tso = s.end.tso.saturating_sub(s.start.tso);
    let pps = packets as f64 / secs;
    let avg = if packets > 0 {
        bytes as f64 / packets as f64
    } else {
        0.0
    };
    let ratio = if tso > 0 {
        Some(((packets as f64 / tso as f64) * 10.0).round() / 10.0)
    } else if packets > 0 {
        Some(1.0)
    } else {
        None
    };
    let driver = s
        .driver
        .clone()
        .unwrap_or_else(|| "unknown driver".to_owned());
    let (status, reason) = if s.tso_counters.is_empty() {
        let why = match s.driver.as_deref().and_then(driver_counters) {
            Some(d) if d.tso.is_empty() => format!(
                "its statistics count wire packets per queue ({}), not TSO descriptors; whether TSO is on is nic.offloads' answer",
                d.tx_queue_packets
            ),
            Some(d) => format!("none of {} was reported", d.tso.join(", ")),
            None => format!(
                "none this doctor recognises (it reads {})",
                GENERIC_TSO_COUNTERS.join(", ")
            ),
        };
        (
            Status::Skip,
            format!(
                "{} ({driver}): the driver has no TSO counters: {why}",
                s.name
            ),
        )
    } else if pps < MIN_PPS {
        (
            Status::Skip,
            format!("{}: idle link ({pps:.0} packets/s)", s.name),
        )
    } else if avg < BULK_AVG_BYTES && tso == 0 {
        (
            Status::Skip,
            format!(
                "{}: no bulk traffic to segment (average frame {avg:.0} B)",
                s.name
            ),
        )
    } else if tso == 0 {
        let status = if pps >= FAIL_PPS {
            Status::Fail
        } else {
            Status::Warn
        };
        (
            status,
            format!(
                "{} ({driver}): {packets} wire packets ({pps:.0}/s, average {avg:.0} B) and 0 TSO descriptors: 1.0 wire packet per descriptor",
                s.name
            ),
        )
    } else {
        let r = ratio.unwrap_or(1.0);
        let status = if r < WARN_RATIO {
            Status::Warn
        } else {
            Status::Pass
        };
        (
            status,
            format!("{}: {r:.1} wire packets per TSO descriptor ({tso} descriptors, {pps:.0} packets/s)", s.name),
        )
    };
    let ev = Evidence {
        name: s.name.clone(),
        driver: s.driver.clone(),
        tso_counters: s.tso_counters.clone(),
        tx_packets: packets,
        tx_packets_per_sec: pps.round() as u64,
        avg_tx_bytes: avg.round() as u64,
        tso_descriptors: tso,
        wire_packets_per_descriptor: ratio,
        verdict: status,
        reason: reason.clone(),
    };
    (status, reason, ev)
}

pub fn judge(samples: &[InterfaceSample], window: Duration) -> Finding {
    let secs = window.as_secs_f64().max(0.001);
    let judged: Vec<(Status, String, Evidence)> =
        samples.iter().map(|s| judge_one(s, secs)).collect();
    let worst = |st: Status| {
        judged
            .iter()
            .filter(move |(s, _, _)| *s == st)
            .map(|(_, r, _)| r.as_str())
    };
    let fails: Vec<&str> = worst(Status::Fail).collect();
    let warns: Vec<&str> = worst(Status::Warn).collect();
    let passes: Vec<&str> = worst(Status::Pass).collect();
    let skips: Vec<&str> = worst(Status::Skip).collect();
    let names: Vec<&str> = samples.iter().map(|s| s.name.as_str()).collect();
    let fixes = [
        format!("check the tunnel features: `spx doctor --check nic.offloads`; if off, `ethtool -K {} tx-udp_tnl-segmentation on`", names.first().copied().unwrap_or("IF")),
        "if they are on and TSO is still unused, the driver declines to offload geneve GSO or the OVS datapath drops GSO before the driver: compare the same transfer over a VXLAN tunnel (the tuning page's open question)".to_owned(),
        "mitigate meanwhile with jumbo frames where the fabric carries them (about sixfold fewer descriptors): `spx doctor --for enable-jumbo`".to_owned(),
    ];
    let finding = if !fails.is_empty() {
        Finding::fail(format!(
            "the overlay gets no hardware segmentation offload: {} (measured on the same NIC: 17.6 Gbit/s against 92.6 with TSO, 5.3x)",
            fails.join("; ")
        ))
        .fixes(fixes)
    } else if !warns.is_empty() {
        Finding::warn(format!(
            "little or no hardware segmentation under load: {}",
            warns.join("; ")
        ))
        .fixes(fixes)
    } else if !passes.is_empty() {
        Finding::pass(passes.join("; "))
    } else {
        Finding::skip(SkipReason::NothingToMeasure(skips.join("; ")))
    };
    let evidence: Vec<Evidence> = judged.into_iter().map(|(_, _, e)| e).collect();
    finding
        .with("interfaces", evidence)
        .with("window_ms", window.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw_captures as hw;

    fn mlx5(packets: u64, bytes: u64, tso: u64) -> InterfaceSample {
        InterfaceSample {
            name: "enp65s0f0np0".into(),
            driver: Some("mlx5_core".into()),
            tso_counters: vec!["tx_tso_packets".into(), "tx_tso_inner_packets".into()],
            start: TxCounters {
                packets: 1_000,
                bytes: 100_000,
                tso: 10,
            },
            end: TxCounters {
                packets: 1_000 + packets,
                bytes: 100_000 + bytes,
                tso: 10 + tso,
            },
        }
    }

    #[test]
    fn seed_guest_overlay_zero_tso_under_load_fails() {
        // performance-tuning: guest over the VPC, 17.6 Gbit/s of 1518-byte
        // frames (1514 counted without FCS): 1.45M packets/s, 0 TSO.
        let pkts = 17_600_000_000 / 8 / 1518;
        let f = judge(&[mlx5(pkts, pkts * 1514, 0)], Duration::from_secs(1));
        assert_eq!(f.status, Status::Fail, "{}", f.summary);
        assert!(
            f.summary.contains("1.0 wire packet per descriptor"),
            "{}",
            f.summary
        );
        assert!(f.summary.contains("5.3x"));
        assert_eq!(
            f.evidence["interfaces"][0]["wire_packets_per_descriptor"],
            1.0
        );
        assert!(f.remediation[0].contains("ethtool -K enp65s0f0np0 tx-udp_tnl-segmentation on"));
    }

    #[test]
    fn zero_tso_on_a_lighter_load_warns() {
        let f = judge(&[mlx5(5_000, 5_000 * 1514, 0)], Duration::from_secs(1));
        assert_eq!(f.status, Status::Warn, "{}", f.summary);
    }

    #[test]
    fn seed_host_39_3_packets_per_descriptor_passes() {
        // performance-tuning: host on the underlay, 4,165,267 TSO
        // super-packets at 39.3 wire packets each, over a 60 s run.
        let tso = 4_165_267u64;
        let pkts = (tso as f64 * 39.3) as u64;
        let f = judge(&[mlx5(pkts, pkts * 1514, tso)], Duration::from_secs(60));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(
            f.evidence["interfaces"][0]["wire_packets_per_descriptor"],
            39.3
        );
        assert!(
            f.summary.contains("39.3 wire packets per TSO descriptor"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn few_packets_per_descriptor_warn() {
        let f = judge(
            &[mlx5(300_000, 300_000 * 1514, 150_000)],
            Duration::from_secs(1),
        );
        assert_eq!(f.status, Status::Warn);
        assert_eq!(
            f.evidence["interfaces"][0]["wire_packets_per_descriptor"],
            2.0
        );
    }

    #[test]
    fn idle_small_or_counterless_is_a_skip_with_the_reason() {
        let f = judge(&[mlx5(10, 15_140, 0)], Duration::from_secs(1));
        assert_eq!(f.status, Status::Skip);
        assert!(f.summary.contains("idle link"), "{}", f.summary);
        let f = judge(&[mlx5(50_000, 50_000 * 66, 0)], Duration::from_secs(1));
        assert_eq!(f.status, Status::Skip);
        assert!(f.summary.contains("no bulk traffic"), "{}", f.summary);
        let mut veth = mlx5(1_000_000, 1_514_000_000, 0);
        veth.tso_counters.clear();
        veth.driver = Some("veth".into());
        let f = judge(&[veth], Duration::from_secs(1));
        assert_eq!(f.status, Status::Skip);
        assert!(
            f.summary
                .contains("(veth): the driver has no TSO counters: none this doctor recognises"),
            "{}",
            f.summary
        );
    }

    /// One capture's counters judged as one window: what the driver
    /// counted since it loaded is the end sample, zero the start. Only the
    /// verdict, the counters found and the ratio are asserted; the rate is
    /// an artefact of the one-second window chosen here.
    fn capture(
        driver: &str,
        file: &str,
        packets: u64,
        bytes: u64,
    ) -> (InterfaceSample, Vec<(String, u64)>) {
        let stats = hw::stats(&hw::load(driver, file));
        let tso_counters = tso_counter_names(Some(driver), &stats);
        let end = TxCounters {
            packets,
            bytes,
            tso: tso_sum(&stats, &tso_counters),
        };
        let s = InterfaceSample {
            name: "eth0".into(),
            driver: Some(driver.into()),
            tso_counters,
            start: TxCounters::default(),
            end,
        };
        (s, stats)
    }

    fn sum_where(stats: &[(String, u64)], pred: impl Fn(&str) -> bool) -> u64 {
        stats.iter().filter(|(n, _)| pred(n)).map(|(_, v)| v).sum()
    }

    #[test]
    fn mlx5_connectx4_lx_capture_passes_at_16_packets_per_descriptor() {
        // Ubuntu 18.04 (4.15): 896,117,891 packets, 56,041,559 TSO
        // descriptors, no encapsulated TSO (no tunnel on that host).
        let stats = hw::stats(&hw::load("mlx5_core", "ethq-issue8.ethtool-S.txt"));
        let (s, _) = capture(
            "mlx5_core",
            "ethq-issue8.ethtool-S.txt",
            hw::stat(&stats, "tx_packets"),
            hw::stat(&stats, "tx_bytes"),
        );
        assert_eq!(s.tso_counters, ["tx_tso_packets", "tx_tso_inner_packets"]);
        // The per-queue copies (tx0_tso_packets…) are not added again.
        assert_eq!(s.end.tso, 56_041_559);
        let per_queue = sum_where(&stats, |n| {
            n.starts_with("tx") && n.ends_with("_tso_packets") && n != "tx_tso_packets"
        });
        assert_eq!(per_queue, 56_041_559, "the capture's queues add up");
        let f = judge(&[s], Duration::from_secs(1));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert!(
            f.summary
                .contains("16.0 wire packets per TSO descriptor (56041559 descriptors"),
            "{}",
            f.summary
        );
        assert_eq!(
            f.evidence["interfaces"][0]["wire_packets_per_descriptor"],
            16.0
        );
    }

    #[test]
    fn sfc_counts_descriptors_as_bursts_not_packets() {
        // sfc's tx_tso_packets (390) are the segments TSO produced; the
        // descriptors are tx_tso_bursts (82). Reading tx_tso_packets, as the
        // generic names would, makes 1865 packets look like 4.8 per
        // descriptor instead of 22.7.
        let stats = hw::stats(&hw::load("sfc", "ethq-tests.ethtool-S.txt"));
        let (s, _) = capture(
            "sfc",
            "ethq-tests.ethtool-S.txt",
            hw::stat(&stats, "port_tx_packets"),
            hw::stat(&stats, "port_tx_bytes"),
        );
        assert_eq!(s.tso_counters, ["tx_tso_bursts"]);
        assert_eq!(hw::stat(&stats, "tx_tso_packets"), 390);
        let f = judge(&[s], Duration::from_secs(1));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(
            f.evidence["interfaces"][0]["wire_packets_per_descriptor"],
            22.7
        );
        assert_eq!(f.evidence["interfaces"][0]["tso_descriptors"], 82);
    }

    #[test]
    fn vmxnet3_tso_counter_is_summed_over_its_queues() {
        let stats = hw::stats(&hw::load("vmxnet3", "ethq-tests.ethtool-S.txt"));
        let names = tso_counter_names(Some("vmxnet3"), &stats);
        assert_eq!(names, ["TSO pkts tx"]);
        let entries: Vec<u64> = stats
            .iter()
            .filter(|(n, _)| n == "TSO pkts tx")
            .map(|(_, v)| *v)
            .collect();
        assert!(entries.len() > 1, "one per Tx queue: {entries:?}");
        assert_eq!(tso_sum(&stats, &names), entries.iter().sum::<u64>());
    }

    #[test]
    fn e1000e_desktop_traffic_is_not_bulk() {
        // tx_tcp_seg_good is e1000e's TSO counter; 274,383 packets of
        // 114 B on average never needed segmenting.
        let stats = hw::stats(&hw::load("e1000e", "ethq-tests.ethtool-S.txt"));
        let (s, _) = capture(
            "e1000e",
            "ethq-tests.ethtool-S.txt",
            hw::stat(&stats, "tx_packets"),
            hw::stat(&stats, "tx_bytes"),
        );
        assert_eq!(s.tso_counters, ["tx_tcp_seg_good"]);
        let f = judge(&[s], Duration::from_secs(1));
        assert_eq!(f.status, Status::Skip, "{}", f.summary);
        assert!(
            f.summary
                .contains("no bulk traffic to segment (average frame 114 B)"),
            "{}",
            f.summary
        );
    }

    /// Drivers whose statistics hold no TSO descriptor count: the check
    /// says so and names the per-queue counters the driver does keep,
    /// which the capture must contain.
    #[test]
    fn drivers_without_tso_counters_skip_naming_what_they_count() {
        for (driver, file, queue0, named) in hw::WITHOUT_TSO_COUNTERS {
            let stats = hw::stats(&hw::load(driver, file));
            let packets = hw::stat(&stats, queue0);
            assert!(packets > 0, "{driver}: {queue0} is in the capture");
            let (s, _) = capture(driver, file, packets, packets * 1514);
            assert!(s.tso_counters.is_empty(), "{driver}: {:?}", s.tso_counters);
            let f = judge(&[s], Duration::from_secs(1));
            assert_eq!(f.status, Status::Skip, "{driver}: {}", f.summary);
            assert!(
                f.summary
                    .contains(&format!("eth0 ({driver}): the driver has no TSO counters")),
                "{}",
                f.summary
            );
            assert!(f.summary.contains(named), "{driver}: {}", f.summary);
            assert!(f.summary.contains("nic.offloads"), "{}", f.summary);
        }
        // Under a known name that counts TSO, the generic mlx names are not
        // consulted: ice never reports tx_tso_packets, and if a build did it
        // would not be read as descriptors.
        let ice = [("tx_tso_packets".to_owned(), 5u64)];
        assert!(tso_counter_names(Some("ice"), &ice).is_empty());
        assert_eq!(tso_counter_names(Some("veth"), &ice), ["tx_tso_packets"]);
    }
}
