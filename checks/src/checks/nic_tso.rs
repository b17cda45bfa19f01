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

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::facts::ethtool::{driver_counters, Reported, GENERIC_TSO_COUNTERS};
use crate::facts::ProbeError;
use crate::finding::{Finding, SkipReason, Status, Subject};
use crate::host::HostRef;
use crate::kind::most_severe;
use crate::read::sysfs_net;
use crate::targets::underlay_nics::{self, Selection};

pub struct NicTso;

crate::kinds! {
    /// What `nic.tso` can say, per interface and for the check.
    pub enum NicTsoKind for "nic.tso" {
        /// Under bulk load the NIC gets TSO super-packets: at least 4 wire packets per descriptor.
        Ok = pass("ok"),
        /// At 100,000 full-size packets/s or more, not one TSO descriptor: the host CPU segments everything (the overlay without hardware segmentation offload: 17.6 against 92.6 Gbit/s).
        NoTso = fail("no-tso"),
        /// Bulk traffic gets little hardware segmentation: no TSO descriptor at a lower rate, or fewer than 4 wire packets per descriptor.
        LittleTso = warn("little-tso"),
    }
}

static DECLARED: Declared = Declared::of::<NicTsoKind, NicTsoEvidence>();

/// What the sample window measured on each interface.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NicTsoEvidence {
    pub interfaces: Vec<TsoEvidence>,
    pub window_ms: u64,
    /// "--interface", "ports of br-vpc", "routes to peers", "default route".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_source: Option<String>,
}

/// One interface over the window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TsoEvidence {
    pub name: String,
    pub driver: Option<String>,
    /// The driver's TSO descriptor counters read; empty when it has none.
    pub tso_counters: Vec<String>,
    pub tx_packets: u64,
    pub tx_packets_per_sec: u64,
    pub avg_tx_bytes: u64,
    pub tso_descriptors: u64,
    /// Null when nothing was sent.
    pub wire_packets_per_descriptor: Option<f64>,
    pub verdict: Status,
    pub reason: String,
}

impl Evidence for NicTsoEvidence {}

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
/// where the driver is known ([`crate::facts::ethtool::DRIVER_COUNTERS`]:
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
         vmxnet3 TSO pkts tx, igb and e1000e tx_tcp_seg_good) of the underlay NICs, \
         chosen as every NIC check chooses them (--interface, else the underlay NICs, else \
         the default route's interface, which a note then says; VLANs and bonds \
         followed down to the devices beneath). The ratio is wire \
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

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let host = ctx.host();
        let sel = match underlay_nics::select(ctx) {
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
        sel.annotate(judge_from(&samples, window, Some(&sel.source)))
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
        packets: sysfs_net::statistic(host, name, "tx_packets")?,
        bytes: sysfs_net::statistic(host, name, "tx_bytes")?,
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
            packets: sysfs_net::statistic(host, name, "tx_packets")?,
            bytes: sysfs_net::statistic(host, name, "tx_bytes")?,
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

/// How one interface came out: a kind, or why it could not be judged.
enum Outcome {
    Judged(NicTsoKind),
    /// Skipped, for the reason this makes of the words.
    Skipped(fn(String) -> SkipReason),
}

fn judge_one(s: &InterfaceSample, secs: f64) -> (Outcome, String, TsoEvidence) {
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
    let (outcome, reason) = if s.tso_counters.is_empty() {
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
        let reason = format!(
            "{} ({driver}): the driver has no TSO counters: {why}",
            s.name
        );
        (Outcome::Skipped(SkipReason::NotApplicable), reason)
    } else if pps < MIN_PPS {
        let reason = format!("{}: idle link ({pps:.0} packets/s)", s.name);
        (Outcome::Skipped(SkipReason::NothingToMeasure), reason)
    } else if avg < BULK_AVG_BYTES && tso == 0 {
        let reason = format!(
            "{}: no bulk traffic to segment (average frame {avg:.0} B)",
            s.name
        );
        (Outcome::Skipped(SkipReason::NothingToMeasure), reason)
    } else if tso == 0 {
        let kind = if pps >= FAIL_PPS {
            NicTsoKind::NoTso
        } else {
            NicTsoKind::LittleTso
        };
        (
            Outcome::Judged(kind),
            format!(
                "{} ({driver}): {packets} wire packets ({pps:.0}/s, average {avg:.0} B) and 0 TSO descriptors: 1.0 wire packet per descriptor",
                s.name
            ),
        )
    } else {
        let r = ratio.unwrap_or(1.0);
        let kind = if r < WARN_RATIO {
            NicTsoKind::LittleTso
        } else {
            NicTsoKind::Ok
        };
        (
            Outcome::Judged(kind),
            format!("{}: {r:.1} wire packets per TSO descriptor ({tso} descriptors, {pps:.0} packets/s)", s.name),
        )
    };
    let status = match &outcome {
        Outcome::Judged(k) => crate::kind::Kinds::doc(*k).status,
        Outcome::Skipped(_) => Status::Skip,
    };
    let ev = TsoEvidence {
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
    (outcome, reason, ev)
}

pub fn judge(samples: &[InterfaceSample], window: Duration) -> Finding {
    judge_from(samples, window, None)
}

/// The verdict, with `source` saying how the interfaces were chosen.
pub fn judge_from(samples: &[InterfaceSample], window: Duration, source: Option<&str>) -> Finding {
    let secs = window.as_secs_f64().max(0.001);
    let judged: Vec<(Outcome, String, TsoEvidence)> =
        samples.iter().map(|s| judge_one(s, secs)).collect();
    let of = |kind: NicTsoKind| -> Vec<&str> {
        judged
            .iter()
            .filter(|(o, _, _)| matches!(o, Outcome::Judged(k) if *k == kind))
            .map(|(_, r, _)| r.as_str())
            .collect()
    };
    let (fails, warns, passes) = (
        of(NicTsoKind::NoTso),
        of(NicTsoKind::LittleTso),
        of(NicTsoKind::Ok),
    );
    let skips: Vec<&str> = judged
        .iter()
        .filter(|(o, _, _)| matches!(o, Outcome::Skipped(_)))
        .map(|(_, r, _)| r.as_str())
        .collect();
    let names: Vec<&str> = samples.iter().map(|s| s.name.as_str()).collect();
    let fixes = [
        format!("check the tunnel features: `spx doctor --check nic.offloads`; if off, `ethtool -K {} tx-udp_tnl-segmentation on`", names.first().copied().unwrap_or("IF")),
        "if they are on and TSO is still unused, the driver declines to offload geneve GSO or the OVS datapath drops GSO before the driver: compare the same transfer over a VXLAN tunnel (the tuning page's open question)".to_owned(),
        "mitigate meanwhile with jumbo frames where the fabric carries them (about sixfold fewer descriptors): `spx doctor --for enable-jumbo`".to_owned(),
    ];
    let worst = most_severe(judged.iter().filter_map(|(o, _, _)| match o {
        Outcome::Judged(k) => Some(*k),
        Outcome::Skipped(_) => None,
    }));
    let finding = match worst {
        Some(kind @ NicTsoKind::NoTso) => Finding::new(
            kind,
            format!(
                "the overlay gets no hardware segmentation offload: {} (measured on the same NIC: 17.6 Gbit/s against 92.6 with TSO, 5.3x)",
                fails.join("; ")
            ),
        )
        .fixes(fixes),
        Some(kind @ NicTsoKind::LittleTso) => Finding::new(
            kind,
            format!(
                "little or no hardware segmentation under load: {}",
                warns.join("; ")
            ),
        )
        .fixes(fixes),
        Some(kind @ NicTsoKind::Ok) => Finding::new(kind, passes.join("; ")),
        None => Finding::skip(SkipReason::NothingToMeasure(skips.join("; "))),
    };
    let mut subjects = Vec::new();
    let mut interfaces = Vec::new();
    for ((outcome, reason, ev), s) in judged.into_iter().zip(samples) {
        // The reason starts with the interface's name.
        let text = reason
            .strip_prefix(s.name.as_str())
            .map_or(reason.as_str(), |r| r.trim_start_matches(':').trim_start());
        subjects.push(match outcome {
            Outcome::Judged(kind) => Subject::new(kind, &s.name, text),
            Outcome::Skipped(why) => Subject::skipped(&s.name, why(text.to_owned())),
        });
        interfaces.push(ev);
    }
    finding
        .evidence(&NicTsoEvidence {
            interfaces,
            window_ms: window.as_millis() as u64,
            interface_source: source.map(str::to_owned),
        })
        .subjects(subjects)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw_captures as hw;

    /// Every verdict these tests see is also checked against the schema.
    fn judge(samples: &[InterfaceSample], window: Duration) -> Finding {
        crate::schema_check::valid("nic.tso", super::judge(samples, window))
    }

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
        crate::snapshot::snapshot!("nic.tso", f);
        assert_eq!(f.status, Status::Fail, "{}", f.summary);
        assert_eq!(
            f.evidence["interfaces"][0]["wire_packets_per_descriptor"],
            1.0
        );
        assert!(f.remediation[0].contains("ethtool -K enp65s0f0np0 tx-udp_tnl-segmentation on"));
        assert_eq!(f.kind.code("nic.tso"), "nic.tso/no-tso");
        assert_eq!(f.findings[0].subject, "enp65s0f0np0");
        assert!(
            f.findings[0].summary.starts_with("(mlx5_core): "),
            "{}",
            f.findings[0].summary
        );
    }

    #[test]
    fn zero_tso_on_a_lighter_load_warns() {
        let f = judge(&[mlx5(5_000, 5_000 * 1514, 0)], Duration::from_secs(1));
        assert_eq!(f.status, Status::Warn, "{}", f.summary);
        assert_eq!(f.kind.code("nic.tso"), "nic.tso/little-tso");
        // An idle second NIC beside it is a skip of its own.
        let mut idle = mlx5(10, 10 * 1514, 0);
        idle.name = "enp65s0f1np1".into();
        let f = judge(
            &[mlx5(5_000, 5_000 * 1514, 0), idle],
            Duration::from_secs(1),
        );
        assert_eq!(
            f.findings[1].kind.code("nic.tso"),
            "nic.tso/nothing-to-measure"
        );
        assert_eq!(f.findings[1].summary, "idle link (10 packets/s)");
    }

    #[test]
    fn seed_host_39_3_packets_per_descriptor_passes() {
        // performance-tuning: host on the underlay, 4,165,267 TSO
        // super-packets at 39.3 wire packets each, over a 60 s run.
        let tso = 4_165_267u64;
        let pkts = (tso as f64 * 39.3) as u64;
        let f = judge(&[mlx5(pkts, pkts * 1514, tso)], Duration::from_secs(60));
        crate::snapshot::snapshot!("nic.tso", f);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(
            f.evidence["interfaces"][0]["wire_packets_per_descriptor"],
            39.3
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
