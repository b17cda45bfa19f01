//! JUnit XML (`--format junit`) for CI gates, written by `quick-junit`:
//! one `<testsuite>` per node report, one `<testcase>` per check.
//!
//! | verdict | testcase |
//! |---|---|
//! | pass | passed |
//! | warn | passed, the summary in `<system-out>`; with `--strict`, a `<failure>` |
//! | fail | `<failure message=summary>`, the remediation in the body |
//! | error | `<error message=summary>` |
//! | skip | `<skipped message=reason>` |
//!
//! [`render_suites`] takes any list of (suite name, checks), so a cluster
//! report renders one suite per node plus one for its cluster checks with
//! the same code.
//!
//! Text from outside (a node's report, interface names…) is written as
//! the table shows it ([`super::inert`]): a control character, which XML
//! mostly forbids and a CI page or log would act on, as `\x1b`, `\r`…
//! rather than dropped (quick-junit would drop a whole escape sequence,
//! and with it part of a name).

use std::time::Duration;

use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};
use spx_checks::check::category;
use spx_checks::Status;

use serde_json::Value;

use super::inert::inert;
use crate::report::cluster::ClusterReport;
use crate::report::{CheckReport, Report};

/// The `<testsuites name>`.
const REPORT_NAME: &str = "spx-doctor";

/// What one `<testcase>` is drawn from: a check result of this run, or one
/// read back from another node's JSON report (a cluster run).
pub struct Case<'a> {
    pub id: &'a str,
    pub status: Status,
    pub summary: &'a str,
    pub remediation: Vec<&'a str>,
    pub duration_ms: u64,
}

impl<'a> From<&'a CheckReport> for Case<'a> {
    fn from(c: &'a CheckReport) -> Case<'a> {
        Case {
            id: c.id,
            status: c.status,
            summary: &c.summary,
            remediation: c.remediation.iter().map(String::as_str).collect(),
            duration_ms: c.duration_ms,
        }
    }
}

/// One suite: its name, its cases, and what to say when it has none
/// because the node gave no report (`<system-err>`).
pub struct Suite<'a> {
    pub name: &'a str,
    pub cases: Vec<Case<'a>>,
    pub system_err: Option<&'a str>,
}

impl<'a> Suite<'a> {
    pub fn of(name: &'a str, checks: &'a [CheckReport]) -> Suite<'a> {
        Suite {
            name,
            cases: checks.iter().map(Case::from).collect(),
            system_err: None,
        }
    }
}

/// When the run started (RFC 3339, as in the JSON `started_at`) and how
/// long it took: the timestamp and time of the report and of every suite.
pub struct Run<'a> {
    pub started_at: &'a str,
    pub duration_ms: u64,
}

/// One node report: its suite is named after the config's node, else the host.
pub fn render(report: &Report, strict: bool) -> String {
    let name = report.node.as_deref().unwrap_or(&report.host);
    render_suites(
        [Suite::of(name, &report.checks)],
        strict,
        &Run {
            started_at: &report.started_at,
            duration_ms: report.duration_ms,
        },
    )
}

/// The XML for a list of suites: one `<testsuite>` each, in order, a
/// `<testcase>` per check. `strict` turns warnings into failures, as
/// `--strict` does the exit code.
pub fn render_suites<'a>(
    suites: impl IntoIterator<Item = Suite<'a>>,
    strict: bool,
    run: &Run<'_>,
) -> String {
    let mut junit = build(suites, strict);
    junit.set_time(Duration::from_millis(run.duration_ms));
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(run.started_at) {
        junit.set_timestamp(t);
        for suite in &mut junit.test_suites {
            suite.set_timestamp(t);
        }
    }
    let mut xml = junit
        .to_string()
        .expect("a report of UTF-8 strings always serializes");
    if !xml.ends_with('\n') {
        xml.push('\n');
    }
    xml
}

/// A cluster report: one suite per node (its report read back from JSON; a
/// node that gave none is an empty suite whose `<system-err>` says why),
/// then one named `cluster` for the cluster checks.
pub fn render_cluster(report: &ClusterReport, strict: bool) -> String {
    let mut suites: Vec<Suite<'_>> = report
        .nodes
        .iter()
        .map(|n| Suite {
            name: &n.name,
            cases: n
                .doc()
                .and_then(|r| r["checks"].as_array())
                .map(|checks| checks.iter().filter_map(case_of_json).collect())
                .unwrap_or_default(),
            system_err: n.error.as_deref(),
        })
        .collect();
    suites.push(Suite::of("cluster", &report.checks));
    render_suites(
        suites,
        strict,
        &Run {
            started_at: &report.started_at,
            duration_ms: report.duration_ms,
        },
    )
}

/// A check of a node's JSON report v1 (validated by the cluster run).
fn case_of_json(c: &Value) -> Option<Case<'_>> {
    let status = Status::ALL
        .into_iter()
        .find(|s| c["status"].as_str() == Some(s.as_str()))?;
    Some(Case {
        id: c["id"].as_str()?,
        status,
        summary: c["summary"].as_str().unwrap_or_default(),
        remediation: c["remediation"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default(),
        duration_ms: c["duration_ms"].as_u64().unwrap_or_default(),
    })
}

fn build<'a>(suites: impl IntoIterator<Item = Suite<'a>>, strict: bool) -> quick_junit::Report {
    let mut junit = quick_junit::Report::new(REPORT_NAME);
    for s in suites {
        let mut suite = TestSuite::new(inert(s.name).into_owned());
        suite.set_time(
            s.cases
                .iter()
                .map(|c| Duration::from_millis(c.duration_ms))
                .max()
                .unwrap_or_default(),
        );
        if let Some(err) = s.system_err {
            suite.set_system_err(inert(err).into_owned());
        }
        suite.add_test_cases(s.cases.iter().map(|c| case(c, strict)));
        junit.add_test_suite(suite);
    }
    junit
}

fn case(check: &Case<'_>, strict: bool) -> TestCase {
    let summary = inert(check.summary).into_owned();
    let remediation = check
        .remediation
        .iter()
        .map(|r| inert(r))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = None;
    let status = match check.status {
        Status::Pass => TestCaseStatus::success(),
        Status::Warn if !strict => {
            out = Some(summary);
            TestCaseStatus::success()
        }
        Status::Warn | Status::Fail => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(summary)
                .set_type(status_name(check.status))
                .set_description(remediation);
            s
        }
        Status::Error => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_message(summary).set_type(status_name(check.status));
            s
        }
        Status::Skip => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(summary);
            s
        }
    };
    let mut case = TestCase::new(inert(check.id).into_owned(), status);
    case.set_classname(category(check.id))
        .set_time(Duration::from_millis(check.duration_ms));
    if let Some(out) = out {
        case.set_system_out(out);
    }
    case
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Pass => "pass",
        Status::Warn => "warn",
        Status::Fail => "fail",
        Status::Skip => "skip",
        Status::Error => "error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: &'static str, status: Status, summary: &str, fix: &[&str]) -> CheckReport {
        CheckReport {
            summary: summary.to_owned(),
            remediation: fix.iter().map(|s| (*s).to_owned()).collect(),
            duration_ms: 3,
            ..crate::report::tests::c(id, status)
        }
    }

    const RUN: Run<'static> = Run {
        started_at: "2026-11-29T19:06:51.892Z",
        duration_ms: 1004,
    };

    fn checks() -> Vec<CheckReport> {
        vec![
            c("sysctl.udp-buffers", Status::Pass, "ok", &[]),
            c(
                "nic.queues",
                Status::Warn,
                "1 of 4 queues",
                &["ethtool -L x rx 4 tx 4"],
            ),
            c(
                "mtu.path",
                Status::Fail,
                "198.18.0.2 carries 1500, not 9000 <&>",
                &["lower underlay_mtu", "re-check"],
            ),
            c("ipsec.flags", Status::Error, "NB unreachable", &[]),
            c("qemu.tuning", Status::Skip, "no running guests", &[]),
        ]
    }

    #[test]
    fn verdicts_map_to_junit_elements() {
        let checks = checks();
        let xml = render_suites([Suite::of("spx1", &checks)], false, &RUN);
        assert!(xml.starts_with("<?xml"), "{xml}");
        assert!(
            xml.contains(r#"<testsuite name="spx1" tests="5" skipped="1" errors="1" failures="1""#),
            "{xml}"
        );
        assert!(
            xml.contains(r#"<testcase name="mtu.path" classname="mtu""#),
            "{xml}"
        );
        assert!(
            xml.contains(r#"<failure message="198.18.0.2 carries 1500, not 9000 &lt;&amp;&gt;" type="fail">lower underlay_mtu"#),
            "{xml}"
        );
        assert!(
            xml.contains(r#"<error message="NB unreachable" type="error"/>"#),
            "{xml}"
        );
        assert!(
            xml.contains(r#"<skipped message="no running guests"/>"#),
            "{xml}"
        );
        assert!(
            xml.contains("<system-out>1 of 4 queues</system-out>"),
            "{xml}"
        );
    }

    #[test]
    fn strict_makes_a_warning_a_failure() {
        let checks = checks();
        let xml = render_suites([Suite::of("spx1", &checks)], true, &RUN);
        assert!(
            xml.contains(r#"skipped="1" errors="1" failures="2""#),
            "{xml}"
        );
        assert!(
            xml.contains(
                r#"<failure message="1 of 4 queues" type="warn">ethtool -L x rx 4 tx 4</failure>"#
            ),
            "{xml}"
        );
        assert!(!xml.contains("<system-out>"), "{xml}");
    }

    #[test]
    fn one_suite_per_entry_in_order() {
        let checks = checks();
        let xml = render_suites(
            [
                Suite::of("spx1", &checks[..2]),
                Suite::of("spx2", &checks[2..]),
                Suite::of("cluster", &checks[..0]),
            ],
            false,
            &RUN,
        );
        let a = xml.find(r#"<testsuite name="spx1" tests="2""#).unwrap();
        let b = xml.find(r#"<testsuite name="spx2" tests="3""#).unwrap();
        let c = xml.find(r#"<testsuite name="cluster" tests="0""#).unwrap();
        assert!(a < b && b < c, "{xml}");
        assert!(
            xml.contains(r#"<testsuites name="spx-doctor" tests="5""#),
            "{xml}"
        );
    }
}
