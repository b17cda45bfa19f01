//! `--format junit`, read back by a real JUnit reader: Python's
//! `junitparser` (Debian's python3-junitparser), never our own parser. Its
//! counts and per-case results must equal the JSON report of the same run.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::{self, run, run_json, write_config, Netns};
use spx_test_harness::root_test;

/// Reads a JUnit file with junitparser and prints what it understood, as
/// JSON: per suite its counts as written and every case's result.
const READER: &str = r#"
import json, sys
from junitparser import JUnitXml
xml = JUnitXml.fromfile(sys.argv[1])
suites = []
for suite in xml:
    cases = []
    for case in suite:
        cases.append({
            "name": case.name,
            "classname": case.classname,
            "results": [{"kind": type(r).__name__.lower(), "message": r.message,
                         "type": r.type, "text": r.text} for r in case.result],
            "system_out": case.system_out,
        })
    # junitparser 2.8 has no accessor for a suite's <system-err>.
    suites.append({"name": suite.name, "tests": suite.tests, "failures": suite.failures,
                   "errors": suite.errors, "skipped": suite.skipped, "cases": cases,
                   "system_err": suite._elem.findtext("system-err")})
print(json.dumps({"name": xml.name, "suites": suites}))
"#;

/// Debian's python3 (the one python3-junitparser installs into), not
/// whichever python3 is first on $PATH.
const PYTHON: &str = "/usr/bin/python3";

pub fn junitparser_or_skip(test: &str) -> bool {
    let there = Command::new(PYTHON)
        .args(["-c", "import junitparser"])
        .output()
        .is_ok_and(|o| o.status.success());
    support::tool_or_skip(test, "python3-junitparser", there)
}

pub fn read_junit(path: &Path) -> Value {
    let out = Command::new(PYTHON)
        .args(["-c", READER])
        .arg(path)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "junitparser could not read {}: {}\n{}",
        path.display(),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(path).unwrap_or_default()
    );
    serde_json::from_slice(&out.stdout).expect("the reader prints JSON")
}

/// The JUnit document agrees with the JSON report: one suite, named as
/// given, whose counts (as written, and recounted from the cases) and
/// per-check results follow the verdicts.
fn assert_junit_is_the_report(junit: &Value, doc: &Value, suite_name: &str, strict: bool) {
    assert_eq!(junit["name"], "spx-doctor", "{junit:#}");
    let suites = junit["suites"].as_array().unwrap();
    assert_eq!(suites.len(), 1, "one node report, one suite: {junit:#}");
    let suite = &suites[0];
    assert_eq!(suite["name"], suite_name);
    let n = |k: &str| doc["summary"][k].as_u64().unwrap();
    let total = n("pass") + n("warn") + n("fail") + n("skip") + n("error");
    let failures = n("fail") + if strict { n("warn") } else { 0 };
    assert_eq!(suite["tests"], total, "{suite:#}");
    assert_eq!(suite["failures"], failures, "{suite:#}");
    assert_eq!(suite["errors"], n("error"), "{suite:#}");
    assert_eq!(suite["skipped"], n("skip"), "{suite:#}");

    let cases = suite["cases"].as_array().unwrap();
    let checks = doc["checks"].as_array().unwrap();
    assert_eq!(cases.len(), checks.len());
    let kinds = |kind: &str| {
        cases
            .iter()
            .filter(|c| {
                c["results"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r["kind"] == kind)
            })
            .count() as u64
    };
    assert_eq!(kinds("failure"), failures, "recounted from the cases");
    assert_eq!(kinds("error"), n("error"));
    assert_eq!(kinds("skipped"), n("skip"));
    for (case, check) in cases.iter().zip(checks) {
        let id = check["id"].as_str().unwrap();
        assert_eq!(case["name"], id);
        assert_eq!(case["classname"], id.split('.').next().unwrap());
        let results = case["results"].as_array().unwrap();
        let summary = &check["summary"];
        let remediation = check["remediation"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        match check["status"].as_str().unwrap() {
            "pass" => assert!(results.is_empty(), "{case:#}"),
            "warn" if !strict => {
                assert!(results.is_empty(), "a warning passes: {case:#}");
                assert_eq!(&case["system_out"], summary, "{case:#}");
            }
            status @ ("warn" | "fail") => {
                assert_eq!(results.len(), 1, "{case:#}");
                assert_eq!(results[0]["kind"], "failure");
                assert_eq!(results[0]["type"], status);
                assert_eq!(&results[0]["message"], summary);
                assert_eq!(results[0]["text"], remediation.as_str(), "{case:#}");
                assert!(!remediation.is_empty(), "a fail names its fix");
            }
            "error" => {
                assert_eq!(results.len(), 1, "{case:#}");
                assert_eq!(results[0]["kind"], "error");
                assert_eq!(&results[0]["message"], summary);
            }
            "skip" => {
                assert_eq!(results.len(), 1, "{case:#}");
                assert_eq!(results[0]["kind"], "skipped");
                assert_eq!(&results[0]["message"], summary, "the reason");
            }
            other => panic!("status {other}"),
        }
    }
}

#[root_test]
fn junit_read_by_junitparser_equals_the_json_summary() {
    const TEST: &str = "junit_read_by_junitparser_equals_the_json_summary";
    if !junitparser_or_skip(TEST) {
        return;
    }
    // A four-queue veth cut to one queue (nic.queues warns), at 1500 to a
    // peer on the link (mtu.path at 9000 fails, underlay.on-link passes),
    // no xfrm state while the config wants IPsec (ipsec.xfrm fails), NB
    // and OVS refused (ipsec.flags errors), no ring sizes (nic.rings skips).
    let a = Netns::new();
    let b = Netns::new();
    a.veth_queues("juq", &b, "juqp", 4);
    a.ip(&["addr", "add", "198.18.7.1/24", "dev", "juq"]);
    b.ip(&["addr", "add", "198.18.7.2/24", "dev", "juqp"]);
    a.exec(&["ethtool", "-L", "juq", "rx", "1", "tx", "1"]);

    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), support::IPSEC_WANTED_DEAD_DBS);
    let args = [
        "--check",
        "nic.queues,nic.rings,mtu.path,underlay.on-link,ipsec.flags,ipsec.xfrm",
        "--interface",
        "juq",
        "--peer",
        "198.18.7.2",
        "--mtu",
        "9000",
        "--ovs-db",
        "tcp:127.0.0.1:1",
        "--config",
        cfg.to_str().unwrap(),
    ];
    let (code, doc) = run_json(a.spx().args(args));
    for status in ["pass", "warn", "fail", "skip", "error"] {
        assert!(
            doc["summary"][status].as_u64().unwrap() >= 1,
            "the lab gives every verdict; no {status}: {doc:#}"
        );
    }
    assert_eq!(code, 1);

    for strict in [false, true] {
        // Through --output: written atomically, stdout stays empty.
        let out = dir.path().join("junit-spx-doctor.xml");
        let mut cmd = a.spx();
        cmd.args(args)
            .args(["--format", "junit", "--output"])
            .arg(&out);
        let mut strict_doc = doc.clone();
        if strict {
            cmd.arg("--strict");
            let (_, d) = run_json(a.spx().args(args).arg("--strict"));
            strict_doc = d;
        }
        let (jcode, stdout, stderr) = run(&mut cmd);
        assert_eq!(jcode, 1, "{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        let junit = read_junit(&out);
        assert_junit_is_the_report(&junit, &strict_doc, "spx1", strict);
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "temporary files left: {left:?}");
    }
}

/// Without a config the suite is named after the host, as the JSON `host`.
#[test]
fn junit_suite_is_the_host_without_a_config() {
    const TEST: &str = "junit_suite_is_the_host_without_a_config";
    if !junitparser_or_skip(TEST) {
        return;
    }
    let (_, doc) = run_json(support::spx().args(["--check", "sysctl"]));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("junit.xml");
    let (code, stdout, stderr) = run(support::spx()
        .args(["--check", "sysctl", "--format", "junit", "-o"])
        .arg(&out));
    assert_eq!(code, doc["exit_code"], "{stderr}");
    assert!(stdout.is_empty());
    let junit = read_junit(&out);
    let host = doc["host"].as_str().unwrap();
    assert_junit_is_the_report(&junit, &doc, host, false);

    // On stdout too, the same document.
    let (_, xml, _) = run(support::spx().args(["--check", "sysctl", "--format", "junit"]));
    assert!(xml.starts_with("<?xml"), "{xml}");
    assert!(
        xml.contains(&format!("<testsuite name=\"{host}\"")),
        "{xml}"
    );
}
