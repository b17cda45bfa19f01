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

use std::time::Duration;

use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};
use spx_checks::check::category;
use spx_checks::Status;

use crate::report::{CheckReport, Report};

/// The `<testsuites name>`.
const REPORT_NAME: &str = "spx-doctor";

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
        [(name, report.checks.as_slice())],
        strict,
        &Run {
            started_at: &report.started_at,
            duration_ms: report.duration_ms,
        },
    )
}

/// The XML for a list of (suite name, checks): one `<testsuite>` each, in
/// order, a `<testcase>` per check. `strict` turns warnings into failures,
/// as `--strict` does the exit code.
pub fn render_suites<'a>(
    suites: impl IntoIterator<Item = (&'a str, &'a [CheckReport])>,
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

fn build<'a>(
    suites: impl IntoIterator<Item = (&'a str, &'a [CheckReport])>,
    strict: bool,
) -> quick_junit::Report {
    let mut junit = quick_junit::Report::new(REPORT_NAME);
    for (name, checks) in suites {
        let mut suite = TestSuite::new(name);
        suite.set_time(
            checks
                .iter()
                .map(|c| Duration::from_millis(c.duration_ms))
                .max()
                .unwrap_or_default(),
        );
        suite.add_test_cases(checks.iter().map(|c| case(c, strict)));
        junit.add_test_suite(suite);
    }
    junit
}

fn case(check: &CheckReport, strict: bool) -> TestCase {
    let mut out = None;
    let status = match check.status {
        Status::Pass => TestCaseStatus::success(),
        Status::Warn if !strict => {
            out = Some(check.summary.as_str());
            TestCaseStatus::success()
        }
        Status::Warn | Status::Fail => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(check.summary.as_str())
                .set_type(status_name(check.status))
                .set_description(check.remediation.join("\n"));
            s
        }
        Status::Error => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_message(check.summary.as_str())
                .set_type(status_name(check.status));
            s
        }
        Status::Skip => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(check.summary.as_str());
            s
        }
    };
    let mut case = TestCase::new(check.id, status);
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
    use serde_json::Map;

    fn c(id: &'static str, status: Status, summary: &str, fix: &[&str]) -> CheckReport {
        CheckReport {
            id,
            title: "",
            status,
            summary: summary.to_owned(),
            evidence: Map::new(),
            remediation: fix.iter().map(|s| (*s).to_owned()).collect(),
            duration_ms: 3,
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
        let xml = render_suites([("spx1", checks.as_slice())], false, &RUN);
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
        let xml = render_suites([("spx1", checks.as_slice())], true, &RUN);
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
                ("spx1", &checks[..2]),
                ("spx2", &checks[2..]),
                ("cluster", &checks[..0]),
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
