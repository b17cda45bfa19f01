//! `ipsec.errors`: is the kernel's IPsec layer dropping packets now?
//!
//! `/proc/net/xfrm_stat` counts every packet xfrm drops, by cause, since
//! boot: a policy that demands ESP with no SA to give it
//! (`XfrmOutNoStates`), plaintext geneve meeting a policy that demands ESP
//! (`XfrmInTmplMismatch`), ESP for an SA this node does not hold
//! (`XfrmInNoStates`)... In the incident that made issue 22 every health
//! signal stayed green while these counted; they are the one place the
//! kernel says it is throwing geneve away. Read at both ends of the shared
//! sample window (no window of its own), through the host seam: a replay
//! judges the window that was recorded. A counter that only grew before the
//! window is history, not a failure (under `auto=route` the first packet
//! toward each peer is counted while IKE runs).
//!
//! [`analyse`] compares the readings (pure); `words` says it.

mod analyse;
mod words;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::facts::xfrm::{XfrmStat, XFRM_STAT};
use crate::facts::ProbeError;
use crate::finding::{Finding, SkipReason};
use crate::metrics::{MetricDef, MetricType, Series};
use crate::read::xfrm::read_xfrm_stat;

pub use analyse::{analyse, meaning, Analysis, Moved};

pub struct IpsecErrors;

crate::kinds! {
    /// What `ipsec.errors` can say, per counter and for the check.
    pub enum IpsecErrorsKind for "ipsec.errors" {
        /// No counter of /proc/net/xfrm_stat moved during the sample window, and none has counted since boot.
        Ok = pass("ok"),
        /// No counter moved during the sample window; some counted before it: history (under auto=route the first packet toward each peer is counted while IKE runs), not a failure now.
        History = pass("history"),
        /// A counter of /proc/net/xfrm_stat advanced during the sample window: the IPsec layer is dropping packets now; each counter is named with what it means for geneve (XfrmOutNoStates: no SA for a policy's ESP; XfrmInTmplMismatch: a peer sends in clear; XfrmInNoStates: a peer encrypts to an SA this node lost).
        Dropping = fail("dropping"),
    }
}

static DECLARED: Declared = Declared::of::<IpsecErrorsKind, IpsecErrorsEvidence>();

/// The two readings, as the report carries them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpsecErrorsEvidence {
    pub window_ms: u64,
    /// Every counter at the end of the window (since boot), by name.
    pub counters: BTreeMap<String, u64>,
    /// The counters that advanced during the window.
    pub advanced: Vec<Advanced>,
    /// Counters above 0 that did not move during the window.
    pub history: Vec<String>,
    /// Whether the config wants IPsec; null without a config.
    pub ipsec_wanted: Option<bool>,
}

/// One counter that advanced during the window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Advanced {
    pub counter: String,
    pub delta: u64,
    pub total: u64,
    /// What it means on this node.
    pub meaning: String,
}

static XFRM_ERRORS_TOTAL: MetricDef = MetricDef {
    name: "spx_doctor_xfrm_errors_total",
    help: "Packets the IPsec (xfrm) layer dropped since boot, by /proc/net/xfrm_stat counter.",
    kind: MetricType::Counter,
    labels: &["counter"],
};
static XFRM_ERRORS_IN_WINDOW: MetricDef = MetricDef {
    name: "spx_doctor_xfrm_errors_in_window",
    help: "Packets the IPsec (xfrm) layer dropped during this run's sample window, by /proc/net/xfrm_stat counter.",
    kind: MetricType::Gauge,
    labels: &["counter"],
};

impl Evidence for IpsecErrorsEvidence {
    const METRICS: &'static [&'static MetricDef] = &[&XFRM_ERRORS_TOTAL, &XFRM_ERRORS_IN_WINDOW];
    fn series(&self) -> Vec<Series> {
        let mut out = Vec::new();
        for (name, total) in &self.counters {
            out.push(Series::labelled(
                &XFRM_ERRORS_TOTAL,
                vec![name.clone()],
                *total as f64,
            ));
        }
        for name in self.counters.keys() {
            let delta = self
                .advanced
                .iter()
                .find(|a| &a.counter == name)
                .map_or(0, |a| a.delta);
            out.push(Series::labelled(
                &XFRM_ERRORS_IN_WINDOW,
                vec![name.clone()],
                delta as f64,
            ));
        }
        out
    }
}

/// What the window measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub start: XfrmStat,
    pub end: XfrmStat,
    pub window: Duration,
    /// Whether the config wants IPsec (`None`: no config).
    pub ipsec_wanted: Option<bool>,
}

impl Check for IpsecErrors {
    fn id(&self) -> &'static str {
        "ipsec.errors"
    }

    fn title(&self) -> &'static str {
        "The IPsec layer drops nothing during the sample window (/proc/net/xfrm_stat)"
    }

    fn explain(&self) -> &'static str {
        "Reads /proc/net/xfrm_stat (the xfrm layer's drop counters, per network namespace; \
         kernels built with CONFIG_XFRM_STATISTICS, as Debian's are) at the start and the \
         end of the shared sample window (--sample; no window of its own). Every counter \
         that advanced is named with how much and what it means here: XfrmOutNoStates, a \
         policy demands ESP but no SA exists (IKE never completed), about one per packet \
         sent; XfrmInTmplMismatch, plaintext geneve from a peer met this node's inbound \
         policy; XfrmInNoStates, a peer encrypts to this node, which holds no SA for it (a \
         flush or a charon restart); XfrmOutPolBlock, XfrmInStateProtoError, XfrmInNoPols \
         and the rest likewise. Advancing: fail. Counted only before the window: history, \
         a pass that names them (under auto=route the first packet toward each peer is \
         counted while IKE runs). None: pass. Needs no config; with one, the meaning \
         follows whether IPsec is wanted.\n\
         \n\
         Why: in a partial enable (NB_Global ipsec=true while two of three chassis failed \
         their local setup) cross-chassis guest traffic was black-holed for 5.5 minutes \
         while every health signal stayed green; these counters were the kernel saying so. \
         All of the named ones were seen on a real 6.1 kernel with three namespace nodes \
         and geneve.\n\
         \n\
         Fix: follows the counter. XfrmOutNoStates: IKE toward a peer (ipsec.xfrm and \
         ipsec.policy name it; openvswitch-ipsec and charon on the peer). \
         XfrmInTmplMismatch: the peer sending in clear (cluster.ipsec names it; restart \
         openvswitch-ipsec there). XfrmInNoStates: `systemctl restart openvswitch-ipsec` \
         on this node."
    }

    fn samples(&self) -> bool {
        true
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let ipsec_wanted = ctx.expectations().ok().map(|e| e.ipsec_wanted);
        let sampled = match ctx.across_window(read_xfrm_stat, || ()) {
            Ok(s) => s,
            Err(ProbeError::NotFound(_)) => {
                return Finding::skip(SkipReason::NotApplicable(format!(
                    "no {XFRM_STAT}: this kernel does not count IPsec drops (built without CONFIG_XFRM_STATISTICS)"
                )))
            }
            Err(e) => return e.into(),
        };
        judge(&Sample {
            start: sampled.start,
            end: sampled.end,
            window: sampled.window,
            ipsec_wanted,
        })
    }
}

/// The verdict on `sample`: [`analyse`]d, then said (`words::finding`).
pub fn judge(sample: &Sample) -> Finding {
    words::finding(sample, &analyse(&sample.start, &sample.end))
}

#[cfg(test)]
pub(crate) mod tests;
