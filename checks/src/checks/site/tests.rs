//! The site check's judgement on recorded runs: each way a plugin can
//! answer (or fail to), the Nagios states with a real check_load's output,
//! the JSON protocol's answers, and every failure the Nagios runners before
//! this one met. Each verdict is checked against the report schema and
//! pinned as its report JSON.

use std::path::Path;

use serde_json::{json, Value};

use super::{checks_of, judge, series};
use crate::check::Check;
use crate::facts::site::secure::{Problem, Refusal, Role};
use crate::facts::site::{Ended, Isolation, SiteRun, TimeoutBy};
use crate::finding::{Finding, Status};
use crate::host::{Fact, Request};
use crate::replayed_runs::Facts;
use crate::settings::Preflight;
use crate::site_definition::parse;

const LOAD: &str = r#"
id = "site.load"
title = "The node's load is under its thresholds"
command = ["/usr/lib/nagios/plugins/check_load", "-w", "5,4,3", "-c", "10,8,6"]
timeout = "5s"
protocol = "nagios"
explain = "monitoring-plugins' check_load, unchanged."
fix = ["find what loads the node: `top -b -n 1 | head -20`"]
"#;

const STORAGE: &str = r#"
id = "site.storage-mtu"
title = "The storage network carries 9000"
command = ["/usr/local/lib/spx-doctor/storage-mtu"]
timeout = "5s"
protocol = "json"
explain = "Pings the storage array at 9000 with DF set."
profiles = ["enable-jumbo"]

[codes.low-mtu]
status = "fail"
means = "The storage path carries less than 9000: jumbo frames to the array are dropped."
"#;

fn check(text: &str) -> &'static dyn Check {
    let def = parse(text, Path::new("/etc/spinifex/doctor.d/x.toml")).unwrap();
    checks_of(&[def])[0]
}

fn ran(ended: Ended, output: &str) -> SiteRun {
    SiteRun {
        ended,
        output: output.to_owned(),
        output_bytes: output.len() as u64,
        stderr: String::new(),
        duration_ms: 12,
        isolation: Isolation::Cgroup {
            path: "/sys/fs/cgroup/system.slice/spx-doctor.site_x.1.0".into(),
        },
    }
}

fn exited(code: i32, output: &str) -> SiteRun {
    ran(Ended::Exited { code }, output)
}

/// The verdict, checked against the schema, and its report JSON.
fn verdict(c: &dyn Check, run: &SiteRun) -> (Finding, Value) {
    let f = judge(c.site().unwrap(), c.declared().kinds, run);
    let doc = crate::snapshot::check_json_titled(c.id(), c.title(), &f);
    crate::schema_check::valid_doc(c.id(), doc.clone());
    (f, doc)
}

macro_rules! pin {
    ($doc:expr) => {
        insta::with_settings!({
            snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"),
            omit_expression => true,
        }, {
            insta::assert_json_snapshot!($doc);
        })
    };
}

// Captured on Debian 12, monitoring-plugins-basic 2.3.3:
// `/usr/lib/nagios/plugins/check_load -w 5,4,3 -c 10,8,6` on a 2-core VM.
const CHECK_LOAD_OK: &str = "LOAD OK - total load average: 1.27, 1.77, 1.25|load1=1.270;5.000;10.000;0; load5=1.770;4.000;8.000;0; load15=1.250;3.000;6.000;0; \n";
const CHECK_LOAD_CRITICAL: &str = "LOAD CRITICAL - total load average: 11.58, 10.80, 6.73|load1=11.580;5.000;10.000;0; load5=10.800;4.000;8.000;0; load15=6.730;3.000;6.000;0; \n";

#[test]
fn the_nagios_states_are_pass_warn_fail_and_error() {
    let c = check(LOAD);
    let (f, doc) = verdict(c, &exited(0, CHECK_LOAD_OK));
    pin!(doc);
    assert_eq!(f.status, Status::Pass);
    assert_eq!(f.kind.code(c.id()), "site.load/ok");
    assert_eq!(f.summary, "LOAD OK - total load average: 1.27, 1.77, 1.25");
    let labels: Vec<(String, String, f64)> = series(c.id(), &f.evidence)
        .into_iter()
        .map(|s| (s.labels[0].clone(), s.labels[1].clone(), s.value))
        .collect();
    assert_eq!(
        labels,
        [
            ("site.load".into(), "load1".into(), 1.27),
            ("site.load".into(), "load5".into(), 1.77),
            ("site.load".into(), "load15".into(), 1.25)
        ]
    );
    assert_eq!(
        series(c.id(), &f.evidence)[0].metric.name,
        "spx_doctor_site_value"
    );

    let (f, doc) = verdict(c, &exited(2, CHECK_LOAD_CRITICAL));
    pin!(doc);
    assert_eq!(f.status, Status::Fail);
    assert_eq!(f.kind.code(c.id()), "site.load/critical");
    assert_eq!(
        f.remediation,
        [
            "find what loads the node: `top -b -n 1 | head -20`",
            "`spx-doctor explain site.load`: the site's own runbook for it (/etc/spinifex/doctor.d/x.toml)"
        ]
    );
    let (f, _) = verdict(
        c,
        &exited(1, "LOAD WARNING - 6.0\nfirst\n\nsecond | a=1\nb=2\n"),
    );
    assert_eq!(f.kind.name, "warning");
    let ev: super::SiteEvidence = f.evidence_as().unwrap();
    assert_eq!(ev.detail, ["first", "second"]);
    assert_eq!(ev.perfdata.len(), 2);
    let (f, _) = verdict(c, &exited(3, "LOAD UNKNOWN - cannot read /proc/loadavg\n"));
    assert_eq!((f.status, f.kind.name), (Status::Error, "unknown"));
    let (f, _) = verdict(c, &exited(0, ""));
    assert_eq!(f.summary, "OK (exit 0, no output)");
}

/// Icinga, Naemon and node-problem-detector read these as CRITICAL, OK or
/// Unknown in turn; here each is an error that says what happened.
#[test]
fn what_is_no_answer_is_an_error_that_says_so() {
    let c = check(LOAD);
    let mut not_found = exited(127, "");
    not_found.stderr = "sh: 1: check_thing: not found\n".into();
    let cases: Vec<(SiteRun, &str, &str)> = vec![
        (exited(255, "oops\n"), "bad-exit", "exit 255, which is no Nagios state (0 to 3): oops"),
        (
            not_found,
            "bad-exit",
            "exit 127 (a shell found no such command), which is no Nagios state (0 to 3): sh: 1: check_thing: not found",
        ),
        (
            ran(Ended::Signaled { signal: 11, name: "SIGSEGV".into() }, ""),
            "killed",
            "killed by SIGSEGV (signal 11)",
        ),
        (
            ran(Ended::TimedOut { after_ms: 5001, by: TimeoutBy::Own }, ""),
            "timeout",
            "still running after 5001 ms (its timeout, 5s): its process group and cgroup were killed",
        ),
        (
            ran(Ended::TimedOut { after_ms: 9700, by: TimeoutBy::RunDeadline }, ""),
            "timeout",
            "still running after 9700 ms (the run's deadline (--timeout)): its process group and cgroup were killed",
        ),
        (
            ran(Ended::OutputCut { limit: 65536 }, &"x".repeat(65536)),
            "output-cut",
            "wrote more than 64 KiB on stdout: stopped there and killed",
        ),
        (
            ran(
                Ended::Stuck { pid: 4242, state: Some("D".into()), killed_after_ms: 1000, earlier: false },
                "",
            ),
            "stuck",
            "killed after 1000 ms, process 4242 was still there at the run's deadline (state D, uninterruptible sleep): the run did not wait for it",
        ),
        (
            SiteRun::not_started(Ended::CannotRun {
                error: "/usr/lib/nagios/plugins/check_load: No such file or directory (os error 2)".into(),
            }),
            "cannot-run",
            "could not run: /usr/lib/nagios/plugins/check_load: No such file or directory (os error 2)",
        ),
    ];
    for (run, name, summary) in cases {
        let (f, doc) = verdict(c, &run);
        assert_eq!(f.status, Status::Error, "{name}");
        assert_eq!(f.kind.name, name);
        assert_eq!(f.summary, summary);
        if name == "output-cut" {
            // What it wrote is kept, up to a screenful.
            assert_eq!(
                doc["evidence"]["output"].as_str().unwrap().len(),
                4096 + "…".len()
            );
        }
    }
}

#[test]
fn a_refusal_names_the_file_and_what_is_wrong_with_its_fix() {
    let c = check(LOAD);
    let refused = |role, path: &str, problem, via: Option<&str>| {
        SiteRun::not_started(Ended::Refused {
            refusal: Refusal {
                role,
                path: path.into(),
                problem,
                via: via.map(Into::into),
            },
        })
    };
    let (f, doc) = verdict(
        c,
        &refused(
            Role::Executable,
            "/usr/local/lib/spx-doctor/check",
            Problem::GroupWritable { mode: 0o775 },
            None,
        ),
    );
    pin!(doc);
    assert_eq!(
        f.summary,
        "refused to run: /usr/local/lib/spx-doctor/check is group-writable (mode 0775)"
    );
    assert_eq!(
        f.remediation,
        ["`chmod go-w /usr/local/lib/spx-doctor/check`"]
    );
    let (f, _) = verdict(
        c,
        &refused(
            Role::Executable,
            "/tmp",
            Problem::WorldWritable { mode: 0o1777 },
            Some("/etc/spinifex/doctor.d/bin/check"),
        ),
    );
    assert_eq!(f.kind.name, "refused");
    assert!(
        f.summary.ends_with(
            "(the executable /etc/spinifex/doctor.d/bin/check is a symbolic link that leads there)"
        ),
        "{}",
        f.summary
    );
    let (f, _) = verdict(
        c,
        &refused(
            Role::Definition,
            "/etc/spinifex/doctor.d",
            Problem::NotOwned { uid: 1000 },
            None,
        ),
    );
    assert_eq!(
        f.summary,
        "refused to run: /etc/spinifex/doctor.d is owned by uid 1000, not root"
    );
}

#[test]
fn a_json_answer_is_read_against_the_schema_and_the_declared_codes() {
    let c = check(STORAGE);
    assert_eq!(c.profiles(), [Preflight::EnableJumbo]);
    let answer = json!({
        "status": "fail", "code": "low-mtu", "summary": "the array at 198.18.0.5 carries 8000, not 9000",
        "fix": ["ip link set dev bond1 mtu 9000"], "evidence": {"array": "198.18.0.5", "mtu": 8000}
    });
    let (f, doc) = verdict(c, &exited(2, &answer.to_string()));
    pin!(doc);
    assert_eq!(f.kind.code(c.id()), "site.storage-mtu/low-mtu");
    assert_eq!(f.remediation[0], "ip link set dev bond1 mtu 9000");
    assert_eq!(doc["evidence"]["answer_evidence"]["mtu"], 8000);
    let ok = json!({"status": "pass", "code": "ok", "summary": "9000 carried"});
    assert_eq!(
        verdict(c, &exited(0, &ok.to_string())).0.status,
        Status::Pass
    );

    let bad = |output: &str, why: &str| {
        let (f, _) = verdict(c, &exited(0, output));
        assert_eq!(f.kind.name, "bad-answer", "{output}");
        assert_eq!(f.summary, format!("its answer is not one: {why}"));
    };
    bad(
        "OK - fine\n",
        "not one JSON value: expected value at line 1 column 1",
    );
    bad(
        r#"{"status":"ok","code":"ok","summary":"x"}"#,
        "status: \"ok\" is not one of pass, warn, fail, error",
    );
    bad(
        r#"{"status":"fail","code":"no-such","summary":"x"}"#,
        "code \"no-such\" is not one of site.storage-mtu's (ok, warning, critical, unknown, low-mtu; a code of its own is declared under [codes] in /etc/spinifex/doctor.d/x.toml)",
    );
    bad(
        r#"{"status":"warn","code":"low-mtu","summary":"x"}"#,
        "code low-mtu is a fail, but its status says warn",
    );
    bad(
        r#"{"status":"pass","code":"refused","summary":"x"}"#,
        "code \"refused\" is not one of site.storage-mtu's (ok, warning, critical, unknown, low-mtu; a code of its own is declared under [codes] in /etc/spinifex/doctor.d/x.toml)",
    );
    // An exit outside 0–3 is no answer, whatever it printed.
    assert_eq!(
        verdict(c, &exited(255, &ok.to_string())).0.kind.name,
        "bad-exit"
    );
}

#[test]
fn terminal_escapes_are_kept_as_text() {
    let c = check(LOAD);
    let (f, _) = verdict(c, &exited(0, "OK \x1b[2J\x1b]0;owned\x07 \u{202e}done\n"));
    // The report keeps the exact text; every renderer makes it inert.
    assert_eq!(f.summary, "OK \x1b[2J\x1b]0;owned\x07 \u{202e}done");
}

#[test]
fn the_same_file_is_the_same_check_and_explain_says_what_runs() {
    let def = parse(LOAD, Path::new("/etc/spinifex/doctor.d/x.toml")).unwrap();
    let a = checks_of(std::slice::from_ref(&def))[0];
    let b = checks_of(std::slice::from_ref(&def))[0];
    assert!(std::ptr::eq(a.id(), b.id()), "made once");
    assert!(a.explain().ends_with(
        "A site check, from /etc/spinifex/doctor.d/x.toml: runs /usr/lib/nagios/plugins/check_load -w 5,4,3 -c 10,8,6 (nagios protocol, timeout 5s)."
    ), "{}", a.explain());
    assert!(check(STORAGE)
        .explain()
        .ends_with("; part of the preflight enable-jumbo."));
    let codes: Vec<String> = crate::codes::of_check(check(STORAGE))
        .map(|c| c.code())
        .collect();
    assert!(codes.contains(&"site.storage-mtu/low-mtu".to_owned()));
    assert!(codes.contains(&"site.storage-mtu/stuck".to_owned()));
}

/// The check's `run()` through the seam: it asks the host one question,
/// with the run's context, and a replay answers it without running
/// anything.
#[test]
fn a_replay_answers_the_plugins_run() {
    let c = check(LOAD);
    let context = json!({
        "version": 1, "check": "site.load", "node": "spx1",
        "config": "/etc/spinifex/spinifex.toml",
        "mtu": {"target": 9000, "underlay": 1500},
        "ipsec_wanted": true,
        "peers": [{"address": "198.18.0.2", "name": "spx2", "source": "config"}],
        "profile": "enable-jumbo",
    });
    let request = Request::Site {
        check: "site.load".into(),
        definition: "/etc/spinifex/doctor.d/x.toml".into(),
        command: c.site().unwrap().command.clone(),
        timeout: std::time::Duration::from_secs(5),
        requires_root: false,
        context,
    };
    let f = Facts::new()
        .config(
            "node = \"spx1\"\n[nodes.spx1]\nhost = \"198.18.0.1\"\n[nodes.spx2]\nhost = \"198.18.0.2\"\n",
        )
        .opts(|o| {
            o.mtu = Some(9000);
            o.profile = Some(Preflight::EnableJumbo);
        })
        .no_file("/etc/spinifex/firewall/peers.nft")
        .exists("/var/run/openvswitch/db.sock", false)
        .ok(Request::Addresses, Fact::Addresses(vec!["198.18.0.1".parse().unwrap()]))
        .ok(request, Fact::Site(exited(0, CHECK_LOAD_OK)))
        .run(c);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert_eq!(f.summary, "LOAD OK - total load average: 1.27, 1.77, 1.25");
}
