//! `udp.rcvbuf-errors`: is the kernel dropping UDP datagrams because a
//! socket's receive buffer is full, now, during the sample window?
//!
//! A raised ceiling (sysctl.udp-buffers) is necessary but not proof: the
//! counters are. Replaces `nstat -az | grep UdpRcvbufErrors` watched by eye
//! and `journalctl -u spinifex-predastore | grep 'receive buffer size'`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::checks::sysctl_udp_buffers;
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::facts::journal::JournalLookup;
use crate::finding::Finding;
use crate::metrics::{MetricDef, MetricType, Series};
use crate::read::kernel_files::sysctl_u64;
use crate::read::snmp::{read_udp_rcvbuf_errors, UdpRcvbufErrors};

pub struct RcvbufErrors;

const PREDASTORE_UNIT: &str = "spinifex-predastore";
const QUIC_WARNING: &str = "receive buffer size";

/// What the window measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub start: UdpRcvbufErrors,
    pub end: UdpRcvbufErrors,
    pub window: Duration,
    /// `net.core.rmem_max` when readable, to say which fix applies.
    pub rmem_max: Option<u64>,
    /// quic-go's warning lines from this boot, when the journal was read.
    pub journal: Option<Vec<String>>,
}

crate::kinds! {
    /// What `udp.rcvbuf-errors` can say.
    pub enum RcvbufErrorsKind for "udp.rcvbuf-errors" {
        /// No UDP datagram dropped for want of receive buffer since boot.
        Ok = pass("ok"),
        /// Udp/Udp6 RcvbufErrors advanced during the sample window: datagrams (QUIC's among them) are being thrown away now.
        Dropping = fail("dropping"),
        /// Drops were counted since boot, none during the window: it happened, under load, earlier.
        PastDrops = warn("past-drops"),
        /// No drops counted, but spinifex-predastore logged quic-go's 'receive buffer size' warning this boot.
        QuicWarning = warn("quic-warning"),
    }
}

static DECLARED: Declared = Declared::of::<RcvbufErrorsKind, RcvbufErrorsEvidence>();

/// What the window measured, as the report carries it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RcvbufErrorsEvidence {
    /// Udp + Udp6 RcvbufErrors since boot, at the end of the window.
    pub rcvbuf_errors_total: u64,
    /// How many the window added.
    pub rcvbuf_errors_delta: u64,
    pub window_ms: u64,
    pub udp_rcvbuf_errors: u64,
    /// `None` without IPv6.
    pub udp6_rcvbuf_errors: Option<u64>,
    /// quic-go's warning lines from this boot, when the journal was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predastore_journal: Option<Vec<String>>,
}

static RCVBUF_ERRORS_TOTAL: MetricDef = MetricDef {
    name: "spx_doctor_udp_rcvbuf_errors_total",
    help: "UDP datagrams dropped for want of receive buffer since boot (Udp and Udp6).",
    kind: MetricType::Counter,
    labels: &[],
};
static RCVBUF_ERRORS_IN_WINDOW: MetricDef = MetricDef {
    name: "spx_doctor_udp_rcvbuf_errors_in_window",
    help: "UDP receive-buffer drops during this run's sample window.",
    kind: MetricType::Gauge,
    labels: &[],
};

impl Evidence for RcvbufErrorsEvidence {
    const METRICS: &'static [&'static MetricDef] =
        &[&RCVBUF_ERRORS_TOTAL, &RCVBUF_ERRORS_IN_WINDOW];
    fn series(&self) -> Vec<Series> {
        vec![
            Series::of(&RCVBUF_ERRORS_TOTAL, self.rcvbuf_errors_total as f64),
            Series::of(&RCVBUF_ERRORS_IN_WINDOW, self.rcvbuf_errors_delta as f64),
        ]
    }
}

impl Check for RcvbufErrors {
    fn id(&self) -> &'static str {
        "udp.rcvbuf-errors"
    }

    fn title(&self) -> &'static str {
        "No UDP datagrams dropped for want of receive buffer"
    }

    fn explain(&self) -> &'static str {
        "Reads Udp RcvbufErrors (/proc/net/snmp) and Udp6RcvbufErrors (/proc/net/snmp6) \
         at the start and the end of the sample window (--sample), the counters \
         `nstat -az | grep UdpRcvbufErrors` shows. Advancing during the window: fail, \
         with the rate. Non-zero but still: warn (they count since boot). Zero: pass. \
         Where journalctl exists it also looks, bounded in time, for quic-go's \
         'receive buffer size' warning in spinifex-predastore's journal of this boot.\n\
         \n\
         Why: every datagram counted here was thrown away by the kernel. Predastore's \
         QUIC traffic does not survive that: on a cluster at the default buffer ceiling \
         the nodes had shed 80k-125k datagrams each, shard writes failed with EIO, and \
         two guests remounted their root filesystems read-only.\n\
         \n\
         Fix: raise the ceilings (see `spx doctor explain sysctl.udp-buffers`). If they \
         are already 16 MiB, find the dropping socket with `ss -uamp` (skmem's d<N> \
         counts its drops): its reader is not keeping up or did not ask for a buffer."
    }

    fn samples(&self) -> bool {
        true
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let host = ctx.host();
        let journal_bound = ctx.bounded(Duration::from_secs(2));
        let sampled = match ctx.across_window(read_udp_rcvbuf_errors, || {
            host.journal(PREDASTORE_UNIT, QUIC_WARNING, journal_bound)
        }) {
            Ok(s) => s,
            Err(e) => return e.into(),
        };
        let journal = match sampled.during {
            Ok(JournalLookup::Lines(lines)) => Some(lines),
            _ => None,
        };
        judge(&Sample {
            start: sampled.start,
            end: sampled.end,
            window: sampled.window,
            rmem_max: sysctl_u64(host, "net.core.rmem_max").ok(),
            journal,
        })
    }
}

pub fn judge(s: &Sample) -> Finding {
    let total = s.end.total();
    let delta = total.saturating_sub(s.start.total());
    let window_ms = s.window.as_millis() as u64;
    let warned = s.journal.as_ref().and_then(|lines| lines.last());
    let finding = if delta > 0 {
        dropping(s, delta, total, window_ms)
    } else if total > 0 {
        Finding::new(
            RcvbufErrorsKind::PastDrops,
            format!(
                "{total} UDP datagrams dropped for want of receive buffer since boot, none during the {window_ms} ms window"
            ),
        )
        .fix("watch under load: `nstat -az UdpRcvbufErrors Udp6RcvbufErrors` must not advance")
    } else if let Some(line) = warned {
        Finding::new(
            RcvbufErrorsKind::QuicWarning,
            format!(
                "no drops counted, but spinifex-predastore logged quic-go's '{QUIC_WARNING}' warning this boot: {line}"
            ),
        )
        .fixes(sysctl_udp_buffers::remediation())
    } else {
        Finding::new(
            RcvbufErrorsKind::Ok,
            format!("no UDP receive-buffer drops since boot ({window_ms} ms window)"),
        )
    };
    finding.evidence(&RcvbufErrorsEvidence {
        rcvbuf_errors_total: total,
        rcvbuf_errors_delta: delta,
        window_ms,
        udp_rcvbuf_errors: s.end.udp,
        udp6_rcvbuf_errors: s.end.udp6,
        predastore_journal: s.journal.clone(),
    })
}

/// `dropping`: the counters advanced during the window.
fn dropping(s: &Sample, delta: u64, total: u64, window_ms: u64) -> Finding {
    let rate = delta as f64 / s.window.as_secs_f64().max(0.001);
    let f = Finding::new(
        RcvbufErrorsKind::Dropping,
        format!(
            "{delta} UDP datagrams dropped for want of receive buffer in {window_ms} ms ({rate:.0}/s; {total} since boot): every one is a lost QUIC datagram"
        ),
    );
    let f = if s.rmem_max.is_some_and(|m| m < sysctl_udp_buffers::REQUIRED) {
        f.fixes(sysctl_udp_buffers::remediation())
    } else {
        f.fix(
            "the buffer ceiling is already raised: find the dropping socket with `ss -uamp` (skmem d<N> counts its drops) and fix its reader or its SO_RCVBUF",
        )
    };
    f.fix("then confirm the counter is still: `nstat -az UdpRcvbufErrors Udp6RcvbufErrors`")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Status;
    use crate::seeds;

    /// Every verdict these tests see is also checked against the schema.
    fn judge(s: &Sample) -> Finding {
        crate::schema_check::valid("udp.rcvbuf-errors", super::judge(s))
    }

    fn sample(start: u64, end: u64) -> Sample {
        Sample {
            start: UdpRcvbufErrors {
                udp: start,
                udp6: Some(0),
            },
            end: UdpRcvbufErrors {
                udp: end,
                udp6: Some(0),
            },
            window: Duration::from_secs(1),
            rmem_max: Some(seeds::udp::DEFAULT_CEILING),
            journal: None,
        }
    }

    #[test]
    fn seed_cluster_dropping_under_load_fails_with_the_rate() {
        // performance-tuning §1: a node that had shed 80k datagrams, still
        // dropping during the window.
        let f = judge(&sample(
            seeds::udp::SHED_SINCE_BOOT,
            seeds::udp::SHED_SINCE_BOOT + seeds::udp::SHED_IN_WINDOW,
        ));
        crate::snapshot::snapshot!("udp.rcvbuf-errors", f);
        assert_eq!(f.status, Status::Fail);
        assert_eq!(
            f.evidence["rcvbuf_errors_delta"],
            seeds::udp::SHED_IN_WINDOW
        );
        assert_eq!(f.remediation[1], "sysctl --system");
    }

    #[test]
    fn raised_ceiling_points_at_the_socket_instead() {
        let mut s = sample(0, 10);
        s.rmem_max = Some(sysctl_udp_buffers::REQUIRED);
        let f = judge(&s);
        assert_eq!(f.status, Status::Fail);
        assert!(f.remediation[0].contains("ss -uamp"));
    }

    #[test]
    fn old_drops_warn_and_none_pass() {
        // The seed's worst node: 125k since boot, fixed since.
        let f = judge(&sample(125_000, 125_000));
        assert_eq!(f.status, Status::Warn);
        assert_eq!(f.evidence["rcvbuf_errors_total"], 125_000);
        assert_eq!(judge(&sample(0, 0)).status, Status::Pass);
    }

    #[test]
    fn udp6_counts_too_and_a_quic_warning_is_not_a_pass() {
        let mut s = sample(0, 0);
        s.end.udp6 = Some(3);
        assert_eq!(judge(&s).status, Status::Fail);
        let mut s = sample(0, 0);
        s.journal = Some(vec![seeds::udp::QUIC_WARNING.into()]);
        let f = judge(&s);
        assert_eq!(f.status, Status::Warn);
        assert!(f.summary.contains("416 kiB"));
    }
}
