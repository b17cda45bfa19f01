//! Site checks (doctor.d) against real executables: Debian's
//! monitoring-plugins unchanged, JSON plugins, the contrib examples, and
//! every failure the Nagios runners before this one met, each a plugin
//! written to fail that way. Each gives its typed error or refusal, the
//! rest of the run stands, and nothing is left running (read in /proc).
//!
//! The executables live under the checkout's target/tmp
//! ([`support::site::SiteLab`]): anything under /tmp is refused, as it
//! should be.

mod cluster;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use spx_test_harness::root_test;

use crate::support::site::{processes_with, state, SiteLab, CHECK_DISK, CHECK_LOAD};
use crate::support::{self, check, run, run_json, run_json_unrecorded, strings};

/// `--check` of the site's checks and one built-in one beside them.
const WITH_A_BUILT_IN: &str = "site,sysctl.udp-buffers";

/// The exit code of a run where a site check erred: 1 when the built-in
/// check beside it failed on this host, else 2.
fn erred(doc: &Value) -> i32 {
    if check(doc, "sysctl.udp-buffers")["status"] == "fail" {
        1
    } else {
        2
    }
}

/// The built-in check still ran to its own verdict.
fn built_in_stood(doc: &Value) {
    let c = check(doc, "sysctl.udp-buffers");
    assert!(
        ["pass", "warn", "fail"].contains(&c["status"].as_str().unwrap()),
        "{c:#}"
    );
}

/// `/proc/loadavg`'s three averages.
fn loadavg() -> [f64; 3] {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap();
    let v: Vec<f64> = text
        .split_whitespace()
        .take(3)
        .map(|w| w.parse().unwrap())
        .collect();
    [v[0], v[1], v[2]]
}

#[test]
fn stock_monitoring_plugins_and_a_json_plugin_run_unchanged() {
    let lab = SiteLab::new();
    lab.check(
        "load",
        "nagios",
        &[CHECK_LOAD, "-w", "1000,1000,1000", "-c", "2000,2000,2000"],
        "5s",
    );
    lab.check(
        "disk",
        "nagios",
        &[CHECK_DISK, "-w", "1%", "-c", "1%", "-p", "/"],
        "5s",
    );
    let json = lab.script(
        "answer",
        r#"cat > /dev/null
echo '{"status": "warn", "code": "warning", "summary": "the array answers slowly", "fix": ["look at the array"], "evidence": {"rtt_ms": 41}}'"#,
    );
    lab.check("answer", "json", &[json.to_str().unwrap()], "5s");
    let before = loadavg();
    let (code, doc) = run_json(lab.doctor().args(["--check", WITH_A_BUILT_IN]));
    let after = loadavg();
    assert!(code <= 1, "{doc:#}");
    built_in_stood(&doc);

    let load = check(&doc, "site.load");
    assert_eq!(load["status"], "pass", "{load:#}");
    assert_eq!(load["code"], "site.load/ok");
    assert!(
        load["summary"]
            .as_str()
            .unwrap()
            .starts_with("LOAD OK - total load average: "),
        "{load:#}"
    );
    // check_load's perfdata against /proc/loadavg, read around the run.
    let perf = load["evidence"]["perfdata"].as_array().unwrap();
    let labels: Vec<&str> = perf.iter().map(|p| p["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["load1", "load5", "load15"]);
    for (i, p) in perf.iter().enumerate() {
        let v = p["value"].as_f64().unwrap();
        let (lo, hi) = (before[i].min(after[i]), before[i].max(after[i]));
        assert!(
            v >= lo - 0.01 && v <= hi + 0.01,
            "{} {v} not in {lo}..{hi}",
            labels[i]
        );
        assert_eq!(p["crit"], "2000.000");
    }
    assert_eq!(
        load["evidence"]["isolation"]["by"],
        if support::is_root() {
            "cgroup"
        } else {
            "process-group"
        }
    );

    let disk = check(&doc, "site.disk");
    assert!(
        ["pass", "fail"].contains(&disk["status"].as_str().unwrap()),
        "{disk:#}"
    );
    assert!(
        disk["summary"].as_str().unwrap().starts_with("DISK "),
        "{disk:#}"
    );
    // check_disk's / against statvfs: used bytes within what moved meanwhile.
    let root = disk["evidence"]["perfdata"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["label"] == "/")
        .unwrap_or_else(|| panic!("{disk:#}"));
    assert_eq!(root["uom"], "B", "{root}");
    let st = nix::sys::statvfs::statvfs("/").unwrap();
    let size = st.blocks() as f64 * st.fragment_size() as f64;
    assert!(
        (root["max"].as_f64().unwrap() - size).abs() < size * 0.001,
        "{root} vs {size}"
    );

    let answer = check(&doc, "site.answer");
    assert_eq!(answer["code"], "site.answer/warning", "{answer:#}");
    assert_eq!(answer["summary"], "the array answers slowly");
    assert_eq!(strings(&answer["remediation"])[0], "look at the array");
    assert_eq!(answer["evidence"]["answer_evidence"]["rtt_ms"], 41);
    assert!(lab.left_running().is_empty());
}

#[test]
fn every_output_format_carries_a_site_check() {
    let lab = SiteLab::new();
    lab.check(
        "load",
        "nagios",
        &[CHECK_LOAD, "-w", "1000,1000,1000", "-c", "2000,2000,2000"],
        "5s",
    );
    let (code, text, err) =
        support::run_replayed(
            lab.doctor()
                .args(["--check", "site", "--format", "prometheus"]),
        );
    assert_eq!(code, 0, "{err}");
    crate::monitoring::promtool_check(&text);
    for series in [
        "spx_doctor_check_code{check=\"site.load\",code=\"site.load/ok\"} 1",
        "# TYPE spx_doctor_site_value gauge",
        "spx_doctor_site_value{check=\"site.load\",label=\"load15\",uom=\"\"} ",
    ] {
        assert!(text.contains(series), "{series} not in\n{text}");
    }
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("site.xml");
    let (code, _, err) = run(lab
        .doctor()
        .args(["--check", "site", "--format", "junit", "--output"])
        .arg(&junit));
    assert_eq!(code, 0, "{err}");
    if crate::junit::junitparser_or_skip("every_output_format_carries_a_site_check") {
        let read = crate::junit::read_junit(&junit);
        let text = read.to_string();
        assert!(text.contains("site.load"), "{read:#}");
    }
    if let Some(python) = support::otlp::python_or_skip("every_output_format_carries_a_site_check")
    {
        let otlp = dir.path().join("site.otlp");
        let (code, _, err) = run(lab
            .doctor()
            .args(["--check", "site", "--format", "otlp", "--output"])
            .arg(&otlp));
        assert_eq!(code, 0, "{err}");
        let decoded = support::otlp::decode(&python, &otlp);
        let values: Vec<&Value> = decoded["series"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["name"] == "spx_doctor_site_value")
            .collect();
        assert_eq!(values.len(), 3, "{decoded:#}");
        assert_eq!(values[0]["attributes"]["check"], "site.load", "{decoded:#}");
    }
}

/// Icinga 2 killed a hung plugin but not its children (#2672): here its
/// whole cgroup is killed at its timeout, the child that left its process
/// group (setsid) too, and the run is not held up.
#[root_test]
fn a_plugin_that_forks_and_hangs_is_killed_whole_at_its_timeout() {
    let lab = SiteLab::new();
    let pids = lab.root().join("pids");
    let m = &lab.marker;
    let hang = lab.script(
        "hang",
        &format!(
            "echo $$ >> {p}\nsleep 1000.{m} &\necho $! >> {p}\nsetsid sleep 1001.{m} &\necho $! >> {p}\n\
             while :; do sleep 1000.{m}; done",
            p = pids.display()
        ),
    );
    lab.check("hang", "nagios", &[hang.to_str().unwrap()], "1s");
    lab.check(
        "load",
        "nagios",
        &[CHECK_LOAD, "-w", "1000,1000,1000", "-c", "2000,2000,2000"],
        "5s",
    );
    let t0 = Instant::now();
    let (code, doc) = run_json(
        lab.doctor()
            .args(["--check", WITH_A_BUILT_IN, "--timeout", "8s"]),
    );
    let took = t0.elapsed();
    assert_eq!(code, erred(&doc), "{doc:#}");
    let hang = check(&doc, "site.hang");
    assert_eq!(hang["code"], "site.hang/timeout", "{hang:#}");
    assert!(
        hang["summary"]
            .as_str()
            .unwrap()
            .contains("(its timeout, 1s): its process group and cgroup were killed"),
        "{hang:#}"
    );
    assert_eq!(hang["evidence"]["isolation"]["by"], "cgroup", "{hang:#}");
    assert_eq!(check(&doc, "site.load")["status"], "pass");
    built_in_stood(&doc);
    assert!(took < Duration::from_secs(6), "the run waited: {took:?}");
    let pids: Vec<i32> = std::fs::read_to_string(&pids)
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 3, "the plugin and its two children");
    for pid in &pids {
        let s = state(*pid);
        assert!(
            s.is_none() || s.as_deref() == Some("Z"),
            "pid {pid} is {s:?}"
        );
    }
    assert!(lab.left_running().is_empty(), "{:?}", lab.left_running());
    let cgroup = hang["evidence"]["isolation"]["path"].as_str().unwrap();
    assert!(!Path::new(cgroup).exists(), "{cgroup} was not removed");
}

/// Without a cgroup of its own (a doctor that cannot make one: here one
/// running as nobody), the plugin's process group is killed whole.
#[root_test]
fn without_a_cgroup_the_process_group_is_killed_whole() {
    let lab = SiteLab::new();
    let m = &lab.marker;
    let hang = lab.script(
        "hang",
        &format!("sleep 1000.{m} &\nsleep 1001.{m} &\nwhile :; do sleep 1000.{m}; done"),
    );
    lab.check("hang", "nagios", &[hang.to_str().unwrap()], "1s");
    let mut cmd = std::process::Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(support::bin())
        .args(["--check", "site", "--config"])
        .arg(lab.config())
        .env("HOME", "/nonexistent-spx-test-home");
    let (code, doc) = run_json_unrecorded(&mut cmd);
    assert_eq!(code, 2, "{doc:#}");
    let hang = check(&doc, "site.hang");
    assert_eq!(hang["code"], "site.hang/timeout", "{hang:#}");
    assert_eq!(
        hang["evidence"]["isolation"]["by"], "process-group",
        "{hang:#}"
    );
    let deadline = Instant::now() + Duration::from_secs(2);
    while !lab.left_running().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(lab.left_running().is_empty(), "{:?}", lab.left_running());
}

#[test]
fn failures_of_the_nagios_api_are_errors_that_say_which() {
    let lab = SiteLab::new();
    let flood = lab.script(
        "flood",
        "head -c 10485760 /dev/zero | tr '\\0' x\necho\nexit 0",
    );
    let exit255 = lab.script("exit255", "echo 'OK - lying'\nexit 255");
    let missing = lab.script("missing", "no_such_command_for_spx_doctor --x");
    let segv = lab.script("segv", "echo 'OK - about to crash'\nkill -SEGV $$");
    let escapes = lab.script(
        "escapes",
        "printf 'OK \\033[2J\\033]0;owned\\007 \\342\\200\\256done\\r\\n'",
    );
    for (name, exe) in [
        ("flood", &flood),
        ("exit255", &exit255),
        ("missing", &missing),
        ("segv", &segv),
        ("escapes", &escapes),
    ] {
        lab.check(name, "nagios", &[exe.to_str().unwrap()], "10s");
    }
    let t0 = Instant::now();
    let (code, doc) = run_json(lab.doctor().args(["--check", WITH_A_BUILT_IN]));
    assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
    assert_eq!(code, erred(&doc), "{doc:#}");
    built_in_stood(&doc);
    let said = |id: &str| {
        let c = check(&doc, id);
        (
            c["code"].as_str().unwrap().to_owned(),
            c["summary"].as_str().unwrap().to_owned(),
        )
    };
    let (code, summary) = said("site.flood");
    assert_eq!(code, "site.flood/output-cut");
    assert_eq!(
        summary,
        "wrote more than 64 KiB on stdout: stopped there and killed"
    );
    let flood = check(&doc, "site.flood");
    let written = flood["evidence"]["output_bytes"].as_u64().unwrap();
    assert!((65537..10 * 1024 * 1024).contains(&written), "{written}");
    assert_eq!(
        said("site.exit255"),
        (
            "site.exit255/bad-exit".into(),
            "exit 255, which is no Nagios state (0 to 3): OK - lying".into()
        )
    );
    let (code, summary) = said("site.missing");
    assert_eq!(code, "site.missing/bad-exit");
    assert!(
        summary.starts_with(
            "exit 127 (a shell found no such command), which is no Nagios state (0 to 3): "
        ),
        "{summary}"
    );
    assert!(
        summary.contains("no_such_command_for_spx_doctor"),
        "{summary}"
    );
    assert_eq!(
        said("site.segv"),
        (
            "site.segv/killed".into(),
            "killed by SIGSEGV (signal 11): OK - about to crash".into()
        )
    );
    // The report keeps the text as written…
    let (code, summary) = said("site.escapes");
    assert_eq!(code, "site.escapes/ok");
    assert_eq!(summary, "OK \x1b[2J\x1b]0;owned\x07 \u{202e}done");
    // …and the table shows it inert.
    let (_, table, _) =
        run(lab
            .doctor()
            .args(["--check", "site.escapes", "--color", "never", "-v"]));
    assert!(
        !table.contains('\x1b') && !table.contains('\x07') && !table.contains('\u{202e}'),
        "{table:?}"
    );
    assert!(
        table.contains("OK \\x1b[2J\\x1b]0;owned\\x07 \\u{202e}done"),
        "{table}"
    );
    assert!(lab.left_running().is_empty(), "{:?}", lab.left_running());
}

/// The Nagios runners ran as root what the monitoring user could write
/// (nagioscore #424): here a file or folder anyone else could change is
/// refused, and a canary shows nothing ran.
#[test]
fn unsafe_files_are_refused_and_never_run() {
    let lab = SiteLab::new();
    let canary = lab.root().join("canary");
    let body = format!("touch {}\necho OK", canary.display());
    let group = lab.script("group-writable", &body);
    support::site::set_mode(&group, 0o775);
    let open = lab.root().join("open");
    std::fs::create_dir(&open).unwrap();
    support::site::set_mode(&open, 0o777);
    let in_open = open.join("check");
    std::fs::write(&in_open, format!("#!/bin/sh\n{body}\n")).unwrap();
    support::site::set_mode(&in_open, 0o755);
    let tmp_target = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tmp_target.path(), format!("#!/bin/sh\n{body}\n")).unwrap();
    support::site::set_mode(tmp_target.path(), 0o755);
    let link = lab.root().join("bin/to-tmp");
    std::os::unix::fs::symlink(tmp_target.path(), &link).unwrap();
    let fine = lab.script("fine", "echo 'OK - fine'");
    lab.check("group-writable", "nagios", &[group.to_str().unwrap()], "5s");
    lab.check(
        "world-writable-dir",
        "nagios",
        &[in_open.to_str().unwrap()],
        "5s",
    );
    lab.check("symlink-to-tmp", "nagios", &[link.to_str().unwrap()], "5s");
    lab.check("relative", "nagios", &["bin/fine"], "5s");
    let loose = lab.check(
        "loose-definition",
        "nagios",
        &[fine.to_str().unwrap()],
        "5s",
    );
    support::site::set_mode(&loose, 0o666);
    lab.check("fine", "nagios", &[fine.to_str().unwrap()], "5s");

    let (code, doc) = run_json(lab.doctor().args(["--check", WITH_A_BUILT_IN]));
    assert_eq!(code, erred(&doc), "{doc:#}");
    built_in_stood(&doc);
    assert_eq!(check(&doc, "site.fine")["status"], "pass");
    let refused = |id: &str| {
        let c = check(&doc, id);
        assert_eq!(c["code"], format!("{id}/refused"), "{c:#}");
        c["summary"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        refused("site.group-writable"),
        format!(
            "refused to run: {} is group-writable (mode 0775)",
            group.display()
        )
    );
    assert_eq!(
        refused("site.world-writable-dir"),
        format!(
            "refused to run: {} is world-writable (mode 0777)",
            open.display()
        )
    );
    assert_eq!(
        refused("site.symlink-to-tmp"),
        format!(
            "refused to run: /tmp is world-writable (mode 1777) (the executable {} is a symbolic link that leads there)",
            link.display()
        )
    );
    assert_eq!(
        refused("site.relative"),
        "refused to run: the executable bin/fine is a relative path: give it from /"
    );
    assert_eq!(
        refused("site.loose-definition"),
        format!(
            "refused to run: {} is world-writable (mode 0666)",
            loose.display()
        )
    );
    assert_eq!(
        strings(&check(&doc, "site.group-writable")["remediation"]),
        [format!("`chmod go-w {}`", group.display())]
    );
    assert!(!canary.exists(), "a refused plugin ran");
}

#[test]
fn a_json_plugin_that_answers_no_answer_is_an_error_with_the_parse_failure() {
    let lab = SiteLab::new();
    let broken = lab.script("broken", "echo '{\"status\": \"pass\", \"code\": \"ok\"'");
    let outside = lab.script(
        "outside",
        "echo '{\"status\": \"healthy\", \"code\": \"ok\", \"summary\": \"fine\"}'",
    );
    lab.check("broken", "json", &[broken.to_str().unwrap()], "5s");
    lab.check("outside", "json", &[outside.to_str().unwrap()], "5s");
    let (code, doc) = run_json(lab.doctor().args(["--check", WITH_A_BUILT_IN]));
    assert_eq!(code, erred(&doc), "{doc:#}");
    built_in_stood(&doc);
    let broken = check(&doc, "site.broken");
    assert_eq!(broken["code"], "site.broken/bad-answer");
    assert_eq!(
        broken["summary"],
        "its answer is not one: not one JSON value: EOF while parsing an object at line 2 column 0"
    );
    let outside = check(&doc, "site.outside");
    assert_eq!(outside["code"], "site.outside/bad-answer");
    assert_eq!(
        outside["summary"],
        "its answer is not one: status: \"healthy\" is not one of pass, warn, fail, error"
    );
}

#[test]
fn a_broken_doctor_d_file_stops_the_run_naming_the_file_and_the_key() {
    let lab = SiteLab::new();
    let file = lab.file(
        "broken",
        "id = \"site.broken\"\ntitle = \"x\"\ncommand = \"/bin/true --shell-string\"\n\
         timeout = \"5s\"\nprotocol = \"nagios\"\nexplain = \"x\"\n",
    );
    for args in [
        vec!["--check", "sysctl"],
        vec!["list", "--config"],
        vec!["explain", "sysctl.udp-buffers", "--config"],
    ] {
        let mut cmd = support::spx();
        if args[0] == "--check" {
            cmd.args(&args).arg("--config").arg(lab.config());
        } else {
            cmd.args(&args).arg(lab.config());
        }
        let (code, out, err) = run(&mut cmd);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert_eq!(
            err.trim(),
            format!(
                "spx-doctor: error: config: {}:3:11: key `command`: invalid type: string \"/bin/true --shell-string\", expected a sequence",
                file.display()
            ),
            "{args:?}"
        );
    }
}

/// A site check named in `profiles` is part of that preflight: it runs,
/// it cannot be skipped, and its failure fails the preflight.
#[test]
fn a_site_check_in_a_profile_gates_the_preflight() {
    let lab = SiteLab::new();
    let failing = lab.script("storage", "echo 'CRITICAL - the array takes 1500'\nexit 2");
    lab.check_with(
        "storage",
        "nagios",
        &[failing.to_str().unwrap()],
        "5s",
        "profiles = [\"enable-jumbo\"]\n",
    );
    let (code, doc) = run_json(
        lab.doctor()
            .args(["--for", "enable-jumbo", "--peer", "127.0.0.1"]),
    );
    assert_eq!(code, 1, "{doc:#}");
    let ids: Vec<&str> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["mtu.path", "site.storage"]);
    assert_eq!(check(&doc, "site.storage")["code"], "site.storage/critical");
    let (code, _, err) =
        run(lab
            .doctor()
            .args(["--for", "enable-jumbo", "--skip", "site.storage"]));
    assert_eq!(code, 2);
    assert!(
        err.contains("--skip site.storage: the enable-jumbo preflight requires it"),
        "{err}"
    );
    let (code, _, err) =
        run(lab
            .doctor()
            .args(["--for", "enable-jumbo", "--allow", "site.storage/critical"]));
    assert_eq!(code, 2);
    assert!(
        err.contains("the enable-jumbo preflight requires site.storage"),
        "{err}"
    );
    // Without the preflight it is one of the default checks.
    let (code, doc) = run_json(lab.doctor().args(["--check", "site"]));
    assert_eq!(code, 1, "{doc:#}");
}

#[test]
fn levels_selection_list_and_explain_take_site_checks_and_codes() {
    let lab = SiteLab::new();
    let warn = lab.script("warn", "echo 'WARNING - 80% full'\nexit 1");
    let crit = lab.script("crit", "echo 'CRITICAL - fans stopped'\nexit 2");
    lab.check("warn", "nagios", &[warn.to_str().unwrap()], "5s");
    lab.check("crit", "nagios", &[crit.to_str().unwrap()], "5s");
    let (code, doc) = run_json(lab.doctor().args([
        "--check",
        "site",
        "--allow",
        "site.crit/critical",
        "--deny",
        "site.warn/warning",
    ]));
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(check(&doc, "site.crit")["status"], "pass");
    assert_eq!(check(&doc, "site.crit")["allowed"][0], "site.crit/critical");
    assert_eq!(check(&doc, "site.warn")["status"], "fail");
    let (code, doc) = run_json(
        lab.doctor()
            .args(["--skip", "site.crit", "--check", "site"]),
    );
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["checks"].as_array().unwrap().len(), 1);
    let (code, _, err) = run(lab.doctor().args(["--allow", "site.crit/critcal"]));
    assert_eq!(code, 2);
    assert!(
        err.contains("did you mean \"site.crit/critical\"?"),
        "{err}"
    );
    let (code, _, err) = run(lab.doctor().args(["--allow", "site.crit/ok"]));
    assert_eq!(code, 2);
    assert!(err.contains("a pass: only warnings"), "{err}");

    let (code, list, _) = run(support::spx().arg("list").arg("--config").arg(lab.config()));
    assert_eq!(code, 0);
    assert!(
        list.contains("site.crit") && list.contains("The lab's crit"),
        "{list}"
    );
    let (_, codes, _) = run(support::spx()
        .args(["list", "--codes", "--config"])
        .arg(lab.config()));
    assert!(codes.contains("site.crit/stuck"), "{codes}");
    let (code, text, _) = run(support::spx()
        .args(["explain", "site.crit", "--config"])
        .arg(lab.config()));
    assert_eq!(code, 0);
    assert!(text.starts_with("site.crit — The lab's crit\n"), "{text}");
    assert!(text.contains("A test's site check: crit."), "{text}");
    let (code, text, _) = run(support::spx()
        .args(["explain", "site.crit/stuck", "--config"])
        .arg(lab.config()));
    assert_eq!(code, 0);
    assert!(text.contains("uninterruptible sleep"), "{text}");
    // The doctor.d beside the config: a config elsewhere has none of them.
    let (code, _, err) = run(support::spx().args(["explain", "site.crit"]));
    assert_eq!(code, 2);
    assert!(err.contains("unknown check \"site.crit\""), "{err}");
    // Completion through Spinifex's `spx doctor` offers them.
    let (_, words, _) = run(support::spx()
        .env("SPINIFEX_CONFIG_PATH", lab.config())
        .args(["__complete", "--check", "site."]));
    assert!(words.contains("site.crit\tThe lab's crit"), "{words}");
}

/// What a plugin is given: the context on stdin, a fixed environment, no
/// terminal, `/` as its working directory, a session and process group of
/// its own and, where the doctor can make one, a cgroup of its own. The
/// node and its peer are two namespaces, so the peers are real.
#[root_test]
fn the_plugin_is_given_the_context_and_nothing_else() {
    let node = support::Netns::new();
    let peer = support::Netns::new();
    node.veth("sl0", &peer, "sl1");
    node.ip(&["addr", "add", "198.18.77.1/24", "dev", "sl0"]);
    peer.ip(&["addr", "add", "198.18.77.2/24", "dev", "sl1"]);
    let lab = SiteLab::with_config(
        "node = \"site-lab\"\n[network]\nipsec_enabled = true\nunderlay_mtu = 1500\n\
         [nodes.site-lab]\nhost = \"198.18.77.1\"\n[nodes.other]\nhost = \"198.18.77.2\"\n",
    );
    let out = lab.root().join("seen");
    let seen = lab.script(
        "seen",
        &format!(
            "cat > {o}.stdin\nenv > {o}.env\npwd > {o}.pwd\nps -o pid=,pgid=,sid=,tty= -p $$ > {o}.ps\n\
             cat /proc/self/cgroup > {o}.cgroup\nls -l /proc/self/fd > {o}.fd\necho OK",
            o = out.display()
        ),
    );
    lab.check("seen", "nagios", &[seen.to_str().unwrap()], "5s");
    let mut cmd = node.spx();
    cmd.env("SPX_SECRET", "leak")
        .args([
            "--for",
            "enable-jumbo",
            "--check",
            "site.seen",
            "--mtu",
            "9000",
            "--timeout",
            "9s",
            "--config",
        ])
        .arg(lab.config());
    let (code, doc) = run_json(&mut cmd);
    assert!(code <= 2, "{doc:#}");
    let seen = check(&doc, "site.seen");
    assert_eq!(seen["status"], "pass", "{doc:#}");
    let read = |ext: &str| std::fs::read_to_string(format!("{}.{ext}", out.display())).unwrap();
    let context: Value = serde_json::from_str(&read("stdin")).unwrap();
    assert_eq!(context["version"], 1);
    assert_eq!(context["check"], "site.seen");
    assert_eq!(context["node"], "site-lab");
    assert_eq!(context["config"], lab.config().display().to_string());
    assert_eq!(
        context["mtu"],
        serde_json::json!({"target": 9000, "underlay": 1500})
    );
    assert_eq!(context["ipsec_wanted"], true);
    assert_eq!(context["profile"], "enable-jumbo");
    assert_eq!(
        context["peers"],
        serde_json::json!([{"address": "198.18.77.2", "name": "other", "source": "config"}])
    );
    assert_eq!(context["timeout_ms"], 5000);
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let deadline = context["deadline_unix_ms"].as_u64().unwrap();
    assert!(
        deadline > now_ms.saturating_sub(9_000) && deadline < now_ms + 9_000,
        "{deadline}"
    );
    let mut env: Vec<String> = read("env").lines().map(str::to_owned).collect();
    env.retain(|l| l != "PWD=/" && !l.starts_with("SHLVL=") && l != "_=/usr/bin/env");
    env.sort();
    assert_eq!(
        env,
        [
            "LANG=C".to_owned(),
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_owned(),
            "SPX_DOCTOR_CHECK=site.seen".to_owned(),
            format!("SPX_DOCTOR_CONFIG={}", lab.config().display()),
            "SPX_DOCTOR_NODE=site-lab".to_owned(),
            "SPX_DOCTOR_TIMEOUT_MS=5000".to_owned(),
        ]
    );
    assert_eq!(read("pwd").trim(), "/");
    let ps: Vec<String> = read("ps").split_whitespace().map(str::to_owned).collect();
    assert_eq!(ps[0], ps[1], "its own process group: {ps:?}");
    assert_eq!(ps[0], ps[2], "its own session: {ps:?}");
    assert_eq!(ps[3], "?", "no terminal: {ps:?}");
    // stdin, stdout, stderr and the one `ls` opened: nothing of the doctor's.
    let fds = read("fd");
    let fd_lines: Vec<&str> = fds.lines().filter(|l| l.contains(" -> ")).collect();
    assert_eq!(fd_lines.len(), 4, "{fds}");
    // `ip netns exec` mounts its own /sys, without the cgroup2 mount: the
    // plugin then has its process group, and says why it has no cgroup.
    match seen["evidence"]["isolation"]["by"].as_str() {
        Some("cgroup") => {
            assert!(
                read("cgroup").contains("/spx-doctor.site_seen."),
                "{}",
                read("cgroup")
            )
        }
        _ => assert_eq!(
            seen["evidence"]["isolation"]["why"], "no cgroup v2 is mounted",
            "{seen:#}"
        ),
    }
}

/// Site checks run beside the built-in ones, each on its own thread, within
/// the run's deadline: six that take a second each cost about a second.
#[test]
fn site_checks_run_in_parallel_within_the_deadline() {
    let lab = SiteLab::new();
    let slow = lab.script("slow", "sleep 1\necho 'OK - slept'");
    for i in 0..6 {
        lab.check(
            &format!("slow{i}"),
            "nagios",
            &[slow.to_str().unwrap()],
            "5s",
        );
    }
    let stalls = lab.script("stalls", &format!("sleep 1000.{}", lab.marker));
    lab.check("stalls", "nagios", &[stalls.to_str().unwrap()], "60s");
    let t0 = Instant::now();
    let (code, doc) =
        run_json_unrecorded(
            lab.doctor()
                .args(["--check", WITH_A_BUILT_IN, "--timeout", "3s"]),
        );
    let took = t0.elapsed();
    assert_eq!(code, erred(&doc), "{doc:#}");
    for i in 0..6 {
        assert_eq!(check(&doc, &format!("site.slow{i}"))["status"], "pass");
    }
    // Its own timeout is a minute; the run's deadline came first.
    let stalls = check(&doc, "site.stalls");
    assert_eq!(stalls["code"], "site.stalls/timeout", "{stalls:#}");
    assert!(
        stalls["summary"]
            .as_str()
            .unwrap()
            .contains("the run's deadline (--timeout)"),
        "{stalls:#}"
    );
    assert!(took < Duration::from_millis(3500), "{took:?}");
    assert!(
        doc["duration_ms"].as_u64().unwrap() <= 3000,
        "{}",
        doc["duration_ms"]
    );
    assert!(lab.left_running().is_empty(), "{:?}", lab.left_running());
}

/// The contrib examples, as docs/site-checks.md installs them: check_load
/// unchanged, and the JSON storage-mtu plugin against a real path.
#[root_test]
fn the_contrib_examples_work_as_documented() {
    let contrib = support::repo_root().join("contrib/site-checks");
    // Two namespaces: "array" at 10.9.0.5 behind a 1500-byte link, and the
    // node; loopback carries 9000 (65536).
    let node = support::Netns::new();
    let array = support::Netns::new();
    node.veth("st0", &array, "st1");
    node.ip(&["addr", "add", "10.9.0.1/24", "dev", "st0"]);
    array.ip(&["addr", "add", "10.9.0.5/24", "dev", "st1"]);
    let lab = SiteLab::new();
    let plugin = lab.plugin(
        "storage-mtu",
        &std::fs::read_to_string(contrib.join("storage-mtu")).unwrap(),
    );
    let installed = |file: &str, from: &str, to: &str| {
        let text = std::fs::read_to_string(contrib.join(file))
            .unwrap()
            .replace(from, to);
        lab.file(file.trim_end_matches(".toml"), &text);
    };
    installed(
        "load.toml",
        "\"--percpu\", \"-w\", \"1.5,1.2,1.0\", \"-c\", \"3.0,2.5,2.0\"",
        "\"-w\", \"1000,1000,1000\", \"-c\", \"2000,2000,2000\"",
    );
    installed(
        "storage-mtu.toml",
        "\"/usr/local/lib/spx-doctor/storage-mtu\", \"--mtu\", \"9000\", \"10.9.0.5\", \"10.9.0.6\"",
        &format!("{:?}, \"--mtu\", \"9000\", \"127.0.0.1\"", plugin.to_str().unwrap()),
    );
    let (code, doc) = run_json(
        node.spx()
            .args(["--check", "site", "--config"])
            .arg(lab.config()),
    );
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(check(&doc, "site.load")["code"], "site.load/ok");
    let st = check(&doc, "site.storage-mtu");
    assert_eq!(
        st["summary"], "every storage address (127.0.0.1) carries 9000 with DF set",
        "{st:#}"
    );

    // The array behind 1500: named, with the exact command for this node.
    installed(
        "storage-mtu.toml",
        "\"/usr/local/lib/spx-doctor/storage-mtu\", \"--mtu\", \"9000\", \"10.9.0.5\", \"10.9.0.6\"",
        &format!("{:?}, \"--mtu\", \"9000\", \"10.9.0.5\"", plugin.to_str().unwrap()),
    );
    let (code, doc) = run_json(
        node.spx()
            .args(["--for", "enable-jumbo", "--peer", "127.0.0.1", "--config"])
            .arg(lab.config()),
    );
    assert_eq!(code, 1, "{doc:#}");
    let st = check(&doc, "site.storage-mtu");
    assert_eq!(st["code"], "site.storage-mtu/low-mtu", "{st:#}");
    assert_eq!(
        st["summary"],
        "10.9.0.5 answer a plain echo but not one of 9000 bytes with DF set: jumbo frames to it are dropped"
    );
    let fixes = strings(&st["remediation"]);
    assert_eq!(fixes[0], "ip link set dev st0 mtu 9000");
    // The printed fix, applied on both ends, makes it pass.
    node.ip(&["link", "set", "dev", "st0", "mtu", "9000"]);
    array.ip(&["link", "set", "dev", "st1", "mtu", "9000"]);
    let (code, doc) = run_json(
        node.spx()
            .args(["--check", "site.storage-mtu", "--config"])
            .arg(lab.config()),
    );
    assert_eq!(code, 0, "{doc:#}");
}

/// node-problem-detector's monitor blocked on a plugin in uninterruptible
/// sleep (#1050). A real one: the plugin touches a FUSE mount whose server
/// reads every request and answers none; killed at its timeout it stays
/// in D, unkillable. The doctor reports it stuck at the run's deadline
/// and exits; released afterwards, the plugin is gone.
#[root_test]
fn a_plugin_in_uninterruptible_sleep_is_reported_stuck_and_not_waited_for() {
    if !Path::new("/dev/fuse").exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI needs /dev/fuse"
        );
        return;
    }
    let lab = SiteLab::new();
    let mount = lab.root().join("mnt");
    std::fs::create_dir(&mount).unwrap();
    let stuck = lab.script(
        "stuck",
        &format!(
            "echo $$ >> {}\nexec stat {}/anything",
            lab.root().join("pids").display(),
            mount.display()
        ),
    );
    lab.check("stuck", "nagios", &[stuck.to_str().unwrap()], "1s");
    lab.check(
        "load",
        "nagios",
        &[CHECK_LOAD, "-w", "1000,1000,1000", "-c", "2000,2000,2000"],
        "5s",
    );
    let report = lab.root().join("report.json");
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "/usr/bin/python3"])
        .arg(support::repo_root().join("tests/support/fuse_stuck.py"))
        .arg(&mount)
        .arg(&report)
        .arg("--")
        .arg(support::bin())
        .args(["--check", WITH_A_BUILT_IN, "--timeout", "4s", "--config"])
        .arg(lab.config())
        .env("HOME", "/nonexistent-spx-test-home");
    let t0 = Instant::now();
    let (code, doc) = run_json_unrecorded(&mut cmd);
    let took = t0.elapsed();
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(code, erred(&doc), "{doc:#}");
    let c = check(&doc, "site.stuck");
    assert_eq!(c["code"], "site.stuck/stuck", "{c:#}");
    let pid = c["evidence"]["ended"]["pid"].as_i64().unwrap();
    assert_eq!(c["evidence"]["ended"]["state"], "D", "{c:#}");
    assert!(
        c["summary"].as_str().unwrap().contains(&format!(
            "process {pid} was still there at the run's deadline (state D, uninterruptible sleep): the run did not wait for it"
        )),
        "{c:#}"
    );
    // The rest of the run stood, and it ended by its deadline.
    assert_eq!(check(&doc, "site.load")["status"], "pass");
    built_in_stood(&doc);
    assert!(
        doc["duration_ms"].as_u64().unwrap() <= 4000,
        "{}",
        doc["duration_ms"]
    );
    // After the doctor exited the plugin was still in D (SIGKILL pending);
    // its request answered, it went.
    assert_eq!(r["at_exit"][pid.to_string()], "D", "{r}");
    assert_eq!(r["after_release"][pid.to_string()], Value::Null, "{r}");
    // The doctor's wall, start to exit, as the wrapper timed it: within
    // --timeout + 1.5 s (a debug build's start and exit), however long the
    // wrapper itself took on a loaded machine.
    assert!(
        r["wall_ms"].as_u64().unwrap() <= 5500,
        "{r} (all of it {took:?})"
    );
    assert!(processes_with(&lab.root().display().to_string()).is_empty());
    // Its cgroup outlived the doctor (the doctor's next run sweeps such).
    if let Some(cgroup) = c["evidence"]["isolation"]["path"].as_str() {
        let _ = std::fs::remove_dir(cgroup);
    }
}

/// A bundle keeps what the plugin answered and the site's definitions: a
/// replay, on a machine without that doctor.d, judges the same answer
/// again and runs nothing.
#[test]
fn a_replay_judges_the_recorded_answer_and_runs_nothing() {
    let lab = SiteLab::new();
    let ran = lab.root().join("ran");
    let counted = lab.script(
        "counted",
        &format!(
            "echo x >> {}\necho 'WARNING - 3 of 4 fans|fans=3;;;0;4'\nexit 1",
            ran.display()
        ),
    );
    let file = lab.check("counted", "nagios", &[counted.to_str().unwrap()], "5s");
    let dir = support::bundle_dir();
    let bundle = dir.path().join("site.spxb");
    let (code, mut live) = run_json_unrecorded(
        lab.doctor()
            .args(["--check", "site", "--record"])
            .arg(&bundle),
    );
    assert_eq!(code, 0, "{live:#}");
    assert_eq!(std::fs::read_to_string(&ran).unwrap().lines().count(), 1);
    let text = support::bundle_text(&bundle);
    assert!(text.contains("\"kind\":\"site\""), "the request");
    assert!(text.contains("WARNING - 3 of 4 fans"), "the answer");
    std::fs::remove_file(&file).unwrap();
    std::fs::remove_file(&counted).unwrap();

    let (code, mut replayed) = run_json_unrecorded(support::spx().arg("--replay").arg(&bundle));
    assert_eq!(code, 0, "{replayed:#}");
    replayed.as_object_mut().unwrap().remove("replayed_from");
    live.as_object_mut().unwrap().remove("replayed_from");
    assert_eq!(replayed, live);
    assert_eq!(
        check(&replayed, "site.counted")["code"],
        "site.counted/warning"
    );
    // Levels apply to its codes in a replay too.
    let (code, denied) = run_json_unrecorded(
        support::spx()
            .arg("--replay")
            .arg(&bundle)
            .args(["--deny", "site.counted/warning"]),
    );
    assert_eq!(code, 1, "{denied:#}");
    assert_eq!(check(&denied, "site.counted")["status"], "fail");
    assert_eq!(
        std::fs::read_to_string(&ran).unwrap().lines().count(),
        1,
        "a replay ran the plugin"
    );
}
