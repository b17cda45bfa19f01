//! `tcp.reordering`: is TCP reading reordering as loss?
//!
//! Spreading one flow over several queue pairs reorders its packets; TCP
//! takes that for loss, retransmits, and collapses its window. With IPsec on,
//! guest multiqueue cost 12% for this reason (guest counters: reordering:189,
//! dsack_dups:116, ssthresh collapsing). The netdev thread on veth + vxlan
//! showed the same signature host-wide ("Detected reordering 11424 times
//! using SACK", forward retransmits). Replaces `watch -d -n 1 netstat -st`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::facts::ethtool::Reported;
use crate::finding::{Finding, SkipReason};
use crate::read::proc_stats::{read_tcp_counters, TcpCounters};
use crate::targets::underlay_nics;

pub struct TcpReordering;

/// Fewer segments sent than this in the window: nothing to judge.
pub const MIN_OUT_SEGS: u64 = 1_000;
/// Reorder detections or D-SACKs per 100,000 segments sent that warn…
pub const EVENTS_PER_100K: f64 = 1.0;
/// …when at least this many happened (one stray event is not a pattern).
pub const MIN_EVENTS: u64 = 10;
/// Retransmitted share of segments sent that warns (a LAN retransmits far
/// less than 0.1%).
pub const RETRANS_SHARE: f64 = 0.001;

/// What the window measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub start: TcpCounters,
    pub end: TcpCounters,
    pub window: Duration,
    /// From the config: Some(true) IPsec wanted, Some(false) not, None no config.
    pub ipsec_wanted: Option<bool>,
    /// Interfaces running more than one queue pair: (name, pairs).
    pub multiqueue: Vec<(String, u32)>,
}

crate::kinds! {
    /// What `tcp.reordering` can say.
    pub enum TcpReorderingKind for "tcp.reordering" {
        /// TCP sent enough in the window and saw no pattern of reordering, spurious retransmission or loss.
        Ok = pass("ok"),
        /// Reordering or D-SACKs with IPsec on and a NIC running several queue pairs: multiqueue spreads one ESP flow and TCP reads the reordering as loss (measured: -12%).
        MultiqueueReordering = warn("multiqueue-reordering"),
        /// Reorder detections, D-SACKs (spurious retransmissions) or retransmissions of 0.1% or more: TCP is mistaking reordering for loss, or losing segments.
        ReorderingOrLoss = warn("reordering-or-loss"),
    }
}

static DECLARED: Declared = Declared::of::<TcpReorderingKind, TcpReorderingEvidence>();

/// The counters' growth over the window, and the rates judged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TcpReorderingEvidence {
    pub out_segs: u64,
    pub retrans_segs: u64,
    pub sack_reorder: u64,
    pub ts_reorder: u64,
    pub reno_reorder: u64,
    pub dsack_recv: u64,
    pub window_ms: u64,
    /// Absent when TCP was idle (nothing to divide by).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder_per_100k_segs: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsack_per_100k_segs: Option<f64>,
    /// `IF runs N queue pairs`, for every interface with more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiqueue: Option<Vec<String>>,
}

impl Evidence for TcpReorderingEvidence {}

impl Check for TcpReordering {
    fn id(&self) -> &'static str {
        "tcp.reordering"
    }

    fn title(&self) -> &'static str {
        "TCP does not mistake reordering for loss"
    }

    fn explain(&self) -> &'static str {
        "Reads TcpExt TCPSACKReorder, TCPTSReorder, TCPRenoReorder and TCPDSACKRecv \
         (/proc/net/netstat) and Tcp RetransSegs and OutSegs (/proc/net/snmp) at the start \
         and end of the sample window (--sample), in this network namespace.\n\
         \n\
         Verdict, with at least 1000 segments sent: at least 10 reorder detections or \
         10 D-SACKs (spurious retransmissions) and at least 1 per 100,000 segments sent, \
         or retransmissions of 0.1% or more, warn. When IPsec is wanted and the NIC runs \
         several queue pairs, the warning names the cause.\n\
         \n\
         Why: spreading one flow over several queue pairs reorders its packets and TCP \
         reads that as loss. With IPsec on, guest multiqueue cost 12% (1.75 -> 1.54 \
         Gbit/s for one client); the guest's counters showed reordering:189, \
         dsack_dups:116 and ssthresh collapsing. Spinifex therefore gives guests one \
         queue pair while IPsec is on and min(vCPUs, 8) when it is off, where \
         multiqueue is worth +54%.\n\
         \n\
         Fix: per connection, `ss -ti` shows reordering: and dsack_dups:. In a guest \
         with IPsec on and several queue pairs, `ethtool -L IF combined 1` (the guest \
         was started before the setting changed; stop/start it)."
    }

    fn samples(&self) -> bool {
        true
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let sampled = match ctx.across_window(read_tcp_counters, || multiqueue_interfaces(ctx)) {
            Ok(s) => s,
            Err(e) => return e.into(),
        };
        judge(&Sample {
            start: sampled.start,
            end: sampled.end,
            window: sampled.window,
            ipsec_wanted: ctx.expect.as_ref().map(|e| e.ipsec_wanted),
            multiqueue: sampled.during,
        })
    }
}

/// Interfaces (underlay, or a guest's default-route NIC) running more than
/// one queue pair. Unreadable channels count as not known, not as one.
fn multiqueue_interfaces(ctx: &Ctx) -> Vec<(String, u32)> {
    let Ok(sel) = underlay_nics::select(ctx) else {
        return Vec::new();
    };
    let host = ctx.host();
    let sel = underlay_nics::hardware(host, sel);
    let Ok(read) = underlay_nics::read_each(host, &sel, |h, name| h.ethtool_channels(name)) else {
        return Vec::new();
    };
    read.into_iter()
        .filter_map(|(name, c)| match c {
            Reported::Yes(c) if c.current_pairs() > 1 => Some((name, c.current_pairs())),
            _ => None,
        })
        .collect()
}

fn per_100k(events: u64, out: u64) -> f64 {
    (events as f64 * 100_000.0 / out as f64 * 100.0).round() / 100.0
}

pub fn judge(s: &Sample) -> Finding {
    let d = s.end.since(&s.start);
    let window_ms = s.window.as_millis() as u64;
    let mut evidence = TcpReorderingEvidence {
        out_segs: d.out_segs,
        retrans_segs: d.retrans_segs,
        sack_reorder: d.sack_reorder,
        ts_reorder: d.ts_reorder,
        reno_reorder: d.reno_reorder,
        dsack_recv: d.dsack_recv,
        window_ms,
        reorder_per_100k_segs: None,
        dsack_per_100k_segs: None,
        multiqueue: None,
    };
    if d.out_segs < MIN_OUT_SEGS {
        return Finding::skip(SkipReason::NothingToMeasure(format!(
            "TCP was idle during the {window_ms} ms window ({} segments sent)",
            d.out_segs
        )))
        .evidence(&evidence);
    }
    let reorder = d.reorder_events();
    let reorder_rate = per_100k(reorder, d.out_segs);
    let dsack_rate = per_100k(d.dsack_recv, d.out_segs);
    let retrans = d.retrans_segs as f64 / d.out_segs as f64;
    let mut signs = Vec::new();
    if reorder >= MIN_EVENTS && reorder_rate >= EVENTS_PER_100K {
        signs.push(format!(
            "{reorder} reorder detections ({reorder_rate} per 100k segments)"
        ));
    }
    if d.dsack_recv >= MIN_EVENTS && dsack_rate >= EVENTS_PER_100K {
        signs.push(format!(
            "{} D-SACKs, i.e. spurious retransmissions ({dsack_rate} per 100k segments)",
            d.dsack_recv
        ));
    }
    if d.retrans_segs >= MIN_EVENTS && retrans >= RETRANS_SHARE {
        signs.push(format!(
            "{} of {} segments retransmitted ({:.2}%)",
            d.retrans_segs,
            d.out_segs,
            retrans * 100.0
        ));
    }
    let mq: Vec<String> = s
        .multiqueue
        .iter()
        .map(|(n, q)| format!("{n} runs {q} queue pairs"))
        .collect();
    let finding = if signs.is_empty() {
        Finding::new(
            TcpReorderingKind::Ok,
            format!(
                "{} segments sent in {window_ms} ms: {reorder} reorder detections, {} D-SACKs, {} retransmitted",
                d.out_segs, d.dsack_recv, d.retrans_segs
            ),
        )
    } else if s.ipsec_wanted == Some(true) && !mq.is_empty() {
        multiqueue_reordering(s, &signs, &mq, window_ms)
    } else {
        Finding::new(
            TcpReorderingKind::ReorderingOrLoss,
            format!(
                "{} in {window_ms} ms: TCP is mistaking reordering for loss or losing segments",
                signs.join(", ")
            ),
        )
        .fix("find the connections: `ss -ti` shows reordering: and dsack_dups: per socket")
        .fix("look for drops on the path: `ethtool -S IF | grep -i -e drop -e discard -e missed` and `nstat -az TcpExtTCPSACKReorder TcpExtTCPDSACKRecv TcpRetransSegs`")
        .fix("a flow spread over several queues or paths (multiqueue, bonding round-robin, veth in a tunnel stack) reorders: keep one flow on one queue")
    };
    evidence.reorder_per_100k_segs = Some(reorder_rate);
    evidence.dsack_per_100k_segs = Some(dsack_rate);
    evidence.multiqueue = Some(mq);
    finding.evidence(&evidence)
}

/// `multiqueue-reordering`: the signs, with IPsec on and several queue pairs.
fn multiqueue_reordering(s: &Sample, signs: &[String], mq: &[String], window_ms: u64) -> Finding {
    let mut f = Finding::new(
        TcpReorderingKind::MultiqueueReordering,
        format!(
            "{} in {window_ms} ms, with IPsec on and {}: spreading one ESP flow over several queue pairs reorders it and TCP reads that as loss (measured: multiqueue cost 12% with IPsec on; reordering:189, dsack_dups:116, ssthresh collapsing)",
            signs.join(", "),
            mq.join(", ")
        ),
    );
    for (name, _) in &s.multiqueue {
        f = f.fix(format!("ethtool -L {name} combined 1"));
    }
    f.fix("Spinifex gives guests one queue pair while IPsec is on: a guest with more was started before the setting changed; stop and start it")
        .fix("confirm per connection with `ss -ti` (reordering: and dsack_dups: must stay low)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Status;
    use crate::seeds;

    /// Every verdict these tests see is also checked against the schema.
    fn judge(s: &Sample) -> Finding {
        crate::schema_check::valid("tcp.reordering", super::judge(s))
    }

    fn sample(end: TcpCounters) -> Sample {
        Sample {
            start: TcpCounters::default(),
            end,
            window: Duration::from_secs(1),
            ipsec_wanted: None,
            multiqueue: vec![],
        }
    }

    #[test]
    fn netdev_thread_active_side_warns() {
        // netdev, "vxlan/veth performance issues" (2013), active side of
        // veth -> bridge -> vxlan -> NIC: "541234150 segments send out",
        // "14248 segments retransmited", "Detected reordering 11424 times
        // using SACK". Taken as one window.
        let s = sample(TcpCounters {
            sack_reorder: 11_424,
            out_segs: 541_234_150,
            retrans_segs: 14_248,
            ..TcpCounters::default()
        });
        let f = judge(&s);
        assert_eq!(f.status, Status::Warn, "{}", f.summary);
        assert!(
            f.summary
                .contains("11424 reorder detections (2.11 per 100k segments)"),
            "{}",
            f.summary
        );
        assert_eq!(f.evidence["sack_reorder"], 11_424);
        // The passive side of the same run: no reordering, no retransmits.
        let p = sample(TcpCounters {
            out_segs: 27_430_160,
            ..TcpCounters::default()
        });
        assert_eq!(judge(&p).status, Status::Pass);
    }

    #[test]
    fn seed_guest_multiqueue_with_ipsec_names_the_cause() {
        // performance-tuning §3: a guest on IPsec with multiqueue, one 60 s
        // iperf at 1.54 Gbit/s (~7.98M segments of 1448 B), counters
        // reordering:189 and dsack_dups:116.
        let mut s = sample(TcpCounters {
            sack_reorder: seeds::tcp::REORDERING,
            dsack_recv: seeds::tcp::DSACK_DUPS,
            out_segs: 7_977_900,
            retrans_segs: 400,
            ..TcpCounters::default()
        });
        s.window = Duration::from_secs(60);
        s.ipsec_wanted = Some(true);
        s.multiqueue = vec![("enp0s16".into(), 4)];
        let f = judge(&s);
        crate::snapshot::snapshot!("tcp.reordering", f);
        assert_eq!(f.status, Status::Warn, "{}", f.summary);
        assert_eq!(f.remediation[0], "ethtool -L enp0s16 combined 1");
        // Without IPsec the same counters warn without blaming multiqueue.
        s.ipsec_wanted = Some(false);
        let f = judge(&s);
        crate::snapshot::snapshot!("tcp.reordering", f);
        assert_eq!(f.status, Status::Warn);
        assert!(!f.summary.contains("ESP"));
    }

    #[test]
    fn retransmits_alone_warn_and_idle_skips() {
        let f = judge(&sample(TcpCounters {
            out_segs: 100_000,
            retrans_segs: 200,
            ..TcpCounters::default()
        }));
        assert_eq!(f.status, Status::Warn);
        assert!(f.summary.contains("0.20%"), "{}", f.summary);
        let f = judge(&sample(TcpCounters {
            out_segs: 999,
            retrans_segs: 999,
            ..TcpCounters::default()
        }));
        assert_eq!(f.status, Status::Skip);
        // A few stray events on a busy host are not a pattern.
        let f = judge(&sample(TcpCounters {
            out_segs: 100_000,
            sack_reorder: 9,
            dsack_recv: 9,
            ..TcpCounters::default()
        }));
        assert_eq!(f.status, Status::Pass);
    }
}
