//! `ipsec.errors` judged on the kernel's own text: /proc/net/xfrm_stat as
//! captured (`checks/testdata/proc/net_xfrm_stat`), with the counters set
//! to what the kernel lab measured across a peer's strongSwan stopped while
//! geneve flowed (Debian's 6.1, three namespace nodes). The live side is in
//! `tests/kernel_lab/partial_enable.rs`; the seam's replay of it in
//! `replayed_runs/ipsec.rs`.

use std::time::Duration;

use super::{judge, meaning, IpsecErrorsEvidence, Sample};
use crate::evidence::Evidence;
use crate::facts::xfrm::{parse_xfrm_stat, XfrmStat};
use crate::finding::{Finding, Status};

/// The captured file with `set` counters changed.
pub(crate) fn stat_text(set: &[(&str, u64)]) -> String {
    let text = crate::replayed_runs::capture("net_xfrm_stat");
    text.lines()
        .map(|l| {
            let name = l.split_whitespace().next().unwrap_or("");
            match set.iter().find(|(n, _)| *n == name) {
                Some((n, v)) => format!("{n:<24}\t{v}\n"),
                None => format!("{l}\n"),
            }
        })
        .collect()
}

fn stat(set: &[(&str, u64)]) -> XfrmStat {
    parse_xfrm_stat(&stat_text(set)).unwrap()
}

/// Every verdict these tests see is also checked against the schema.
fn judged(start: &[(&str, u64)], end: &[(&str, u64)], wanted: Option<bool>) -> Finding {
    crate::schema_check::valid(
        "ipsec.errors",
        judge(&Sample {
            start: stat(start),
            end: stat(end),
            window: Duration::from_millis(1000),
            ipsec_wanted: wanted,
        }),
    )
}

#[test]
fn the_capture_reads_32_counters_all_still() {
    let s = stat(&[]);
    assert_eq!(s.counters.len(), 32);
    let f = judged(&[], &[], Some(true));
    crate::snapshot::snapshot!("ipsec.errors", f);
    assert_eq!(f.status, Status::Pass);
    assert_eq!(f.kind.code("ipsec.errors"), "ipsec.errors/ok");
    assert_eq!(
        f.summary,
        "no IPsec drop counted since boot (1000 ms window)"
    );
    assert_eq!(f.evidence["counters"]["XfrmOutNoStates"], 0);
    assert_eq!(f.evidence["advanced"], serde_json::json!([]));
}

#[test]
fn a_survivor_of_a_stopped_peer_names_both_counters_with_their_meaning() {
    // The lab: n3's strongSwan stopped while pings flowed both ways; on n1
    // XfrmOutNoStates +23 and XfrmInTmplMismatch +10 across the stop.
    let f = judged(
        &[("XfrmOutNoStates", 7), ("XfrmInTmplMismatch", 0)],
        &[("XfrmOutNoStates", 30), ("XfrmInTmplMismatch", 10)],
        Some(true),
    );
    crate::snapshot::snapshot!("ipsec.errors", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert_eq!(f.kind.code("ipsec.errors"), "ipsec.errors/dropping");
    // In the file's order: the kernel lists inbound counters first.
    let subjects: Vec<(&str, &str)> = f
        .findings
        .iter()
        .map(|s| (s.subject.as_str(), s.kind.name))
        .collect();
    assert!(subjects.contains(&("XfrmOutNoStates", "dropping")));
    assert!(subjects.contains(&("XfrmInTmplMismatch", "dropping")));
    assert_eq!(subjects.len(), 2);
    assert_eq!(f.evidence["counters"]["XfrmOutNoStates"], 30);
    let advanced = f.evidence["advanced"].as_array().unwrap();
    assert!(advanced
        .iter()
        .any(|a| a["counter"] == "XfrmOutNoStates" && a["delta"] == 23 && a["total"] == 30));
    assert!(f
        .remediation
        .iter()
        .any(|r| r.contains("ipsec.xfrm,ipsec.policy")));
    assert!(f.remediation.iter().any(|r| r.contains("cluster.ipsec")));
    assert!(f.remediation.last().unwrap().contains("xfrm_stat"));
}

#[test]
fn a_node_that_lost_its_sas_names_xfrm_in_no_states() {
    // The lab's stopped node: XfrmInNoStates +3 while its peers still
    // encrypted to it.
    let f = judged(
        &[("XfrmInNoStates", 0)],
        &[("XfrmInNoStates", 3)],
        Some(true),
    );
    crate::snapshot::snapshot!("ipsec.errors", f);
    assert_eq!(f.status, Status::Fail);
}

#[test]
fn counts_before_the_window_are_history_not_a_failure() {
    let f = judged(
        &[("XfrmOutNoStates", 4), ("XfrmInStateProtoError", 2)],
        &[("XfrmOutNoStates", 4), ("XfrmInStateProtoError", 2)],
        Some(true),
    );
    crate::snapshot::snapshot!("ipsec.errors", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert_eq!(f.kind.code("ipsec.errors"), "ipsec.errors/history");
    assert_eq!(f.findings.len(), 0);
}

#[test]
fn with_ipsec_not_wanted_no_states_means_a_leftover_policy() {
    let f = judged(
        &[("XfrmOutNoStates", 0)],
        &[("XfrmOutNoStates", 5)],
        Some(false),
    );
    crate::snapshot::snapshot!("ipsec.errors", f);
    // No config: the general meaning.
    let f = judged(&[("XfrmOutNoStates", 0)], &[("XfrmOutNoStates", 5)], None);
    crate::snapshot::snapshot!("ipsec.errors", f);
    assert_eq!(f.evidence["ipsec_wanted"], serde_json::Value::Null);
}

#[test]
fn every_counter_of_the_capture_has_its_own_meaning() {
    for (name, _) in stat(&[]).counters {
        assert!(
            !meaning(&name, Some(true)).contains("xfrm_proc.rst"),
            "{name} has no meaning of its own"
        );
    }
}

#[test]
fn series_per_counter_total_and_window() {
    let f = judged(
        &[("XfrmInNoStates", 1)],
        &[("XfrmInNoStates", 4)],
        Some(true),
    );
    crate::snapshot::snapshot!("ipsec.errors", f);
    let e: IpsecErrorsEvidence = f.evidence_as().unwrap();
    let series = e.series();
    assert_eq!(series.len(), 64);
    let find = |metric: &str, counter: &str| {
        series
            .iter()
            .find(|s| s.metric.name == metric && s.labels == [counter])
            .map(|s| s.value)
    };
    assert_eq!(
        find("spx_doctor_xfrm_errors_total", "XfrmInNoStates"),
        Some(4.0)
    );
    assert_eq!(
        find("spx_doctor_xfrm_errors_in_window", "XfrmInNoStates"),
        Some(3.0)
    );
    assert_eq!(
        find("spx_doctor_xfrm_errors_in_window", "XfrmOutNoStates"),
        Some(0.0)
    );
}
