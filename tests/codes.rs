//! Codes and levels against the real binary: every result has a code the
//! catalog explains, and `--allow`/`--deny` (flags and the config's
//! `[doctor]` table) change a real verdict, measured in a namespace of our
//! own where the test itself makes the kernel count UDP drops.

use std::net::UdpSocket;
use std::time::Duration;

use serde_json::Value;
use spx_checks::kind::Origin;

use crate::support::{self, check, run, run_json, spx, write_config, Netns};
use spx_test_harness::root_test;

const PAST_DROPS: &str = "udp.rcvbuf-errors/past-drops";

#[test]
fn every_result_has_a_code_the_catalog_explains() {
    let (_, doc) = run_json(spx().args([
        "--check",
        "sysctl,udp,nic,cpu,tcp,qemu,ipsec,mtu",
        "--sample",
        "100ms",
    ]));
    for c in doc["checks"].as_array().unwrap() {
        let code = c["code"].as_str().unwrap();
        let (status, out, err) = run(spx().args(["explain", code]));
        assert_eq!(status, 0, "{code}: {err}");
        let status = c["status"].as_str().unwrap();
        assert!(out.starts_with(&format!("{code} — {status}")), "{out}");
        if c["status"] == "skip" {
            assert_eq!(
                c["skip_reason"].as_str(),
                code.rsplit('/').next(),
                "a skip's code names its reason: {c:#}"
            );
        }
    }
}

#[test]
fn list_codes_is_the_catalog() {
    let (code, out, _) = run(spx().args(["list", "--codes"]).env("COLUMNS", "400"));
    assert_eq!(code, 0);
    for c in spx_checks::codes::all() {
        let shown = match c.kind.origin {
            Origin::Common => format!("CHECK-ID/{}", c.kind.name),
            _ => c.code(),
        };
        assert!(
            out.lines().any(|l| l.contains(&format!(" {shown} "))),
            "list --codes lacks {shown}"
        );
    }
}

#[test]
fn codes_that_cannot_take_a_level_are_one_line_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let typo = write_config(dir.path(), "[doctor]\nallow = [\"qemu.tuning/no-vhots\"]\n");
    for (args, says) in [
        (
            vec!["--allow", "nic.rings/shalow-ring"],
            "--allow: unknown code \"nic.rings/shalow-ring\" (did you mean \"nic.rings/shallow-ring\"?)",
        ),
        (
            vec!["--deny", "qemu.tuning/no-vhost"],
            "only warnings can be denied",
        ),
        (vec!["--allow", "nic.rings/ok"], "only warnings, failures and errors can be allowed"),
        (
            vec!["--allow", "cluster.reachable/timed-out"],
            "common to every check",
        ),
        (
            vec!["--allow", PAST_DROPS, "--deny", PAST_DROPS],
            "a code is allowed or denied, not both",
        ),
        (
            vec!["--config", typo.to_str().unwrap()],
            "key `doctor.allow`: unknown code \"qemu.tuning/no-vhots\" (did you mean \"qemu.tuning/no-vhost\"?)",
        ),
    ] {
        let (code, out, err) = run(spx().args(&args));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty());
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// A preflight never passes on an allowed problem: it refuses the flag, as
/// it refuses `--skip`, and sets the standing config's allow aside.
#[test]
fn a_preflight_refuses_to_allow_what_it_depends_on() {
    let (code, _, err) = run(spx().args([
        "--for",
        "disable-ipsec",
        "--allow",
        "ipsec.flags/stale-nb-ipsec",
    ]));
    assert_eq!(code, 2);
    assert_eq!(
        err.trim(),
        "spx-doctor: error: --allow ipsec.flags/stale-nb-ipsec: the disable-ipsec preflight requires ipsec.flags"
    );
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "node = \"spx1\"\n[nodes.spx1]\n[nodes.spx1.vpcd]\novn_nb_addr = \"unix:/nonexistent/spx-test-nb.sock\"\n\
         [doctor]\nallow = [\"ipsec.flags/stale-nb-ipsec\", \"qemu.tuning/no-vhost\"]\n",
    );
    let (_, doc) = run_json(
        spx()
            .args(["--for", "disable-ipsec", "--timeout", "3s", "--config"])
            .arg(&config),
    );
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("[doctor] allow ipsec.flags/stale-nb-ipsec")
            && notes.contains("set aside: the disable-ipsec preflight requires ipsec.flags"),
        "{doc:#}"
    );
    assert_eq!(doc["allow"], serde_json::json!(["qemu.tuning/no-vhost"]));
}

/// Make the namespace's kernel count UDP receive-buffer drops, then stop:
/// a later run sees drops since boot and none in its window, a warning.
fn drops_in_the_past(ns: &Netns) {
    let dropped = ns.in_thread(|| {
        let (rx, to) = support::tiny_udp_receiver();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        for _ in 0..2000 {
            let _ = tx.send_to(&[0x5a_u8; 1200], to);
        }
        // The sender's datagrams are all queued or dropped by now.
        std::thread::sleep(Duration::from_millis(50));
        drop(rx);
        std::fs::read_to_string("/proc/thread-self/net/snmp").unwrap()
    });
    let snmp = dropped.join().unwrap();
    // The oracle: the kernel's own counter, read independently.
    let udp: Vec<&str> = snmp.lines().filter(|l| l.starts_with("Udp:")).collect();
    let (names, values) = (udp[0], udp[1]);
    let i = names
        .split_whitespace()
        .position(|w| w == "RcvbufErrors")
        .unwrap();
    let errors: u64 = values.split_whitespace().nth(i).unwrap().parse().unwrap();
    assert!(errors > 0, "the flood dropped nothing: {snmp}");
}

fn udp_check(doc: &Value) -> &Value {
    check(doc, "udp.rcvbuf-errors")
}

#[root_test]
fn allow_and_deny_turn_a_real_warning_from_flags_and_config() {
    let ns = Netns::new();
    drops_in_the_past(&ns);
    let base = ["--check", "udp", "--sample", "200ms"];

    let (code, doc) = run_json(ns.spx().args(base));
    let c = udp_check(&doc);
    assert_eq!(
        (c["status"].as_str(), c["code"].as_str()),
        (Some("warn"), Some(PAST_DROPS)),
        "{c:#}"
    );
    assert_eq!(code, 0);
    let (code, _) = run_json(ns.spx().args(base).arg("--strict"));
    assert_eq!(code, 1, "--strict fails a warning");

    // --deny: the warning fails the run.
    let (code, doc) = run_json(ns.spx().args(base).args(["--deny", PAST_DROPS]));
    let c = udp_check(&doc);
    assert_eq!(code, 1, "{c:#}");
    assert_eq!(c["status"], "fail");
    assert_eq!(c["status_was"], "warn");
    assert_eq!(c["denied"], serde_json::json!([PAST_DROPS]));
    assert_eq!(doc["deny"], serde_json::json!([PAST_DROPS]));

    // --allow: a pass that still says what it was, even under --strict.
    let (code, doc) = run_json(
        ns.spx()
            .args(base)
            .args(["--allow", PAST_DROPS, "--strict"]),
    );
    let c = udp_check(&doc);
    assert_eq!(code, 0, "{c:#}");
    assert_eq!(c["status"], "pass");
    assert_eq!(c["status_was"], "warn");
    assert_eq!(c["code"], PAST_DROPS);
    assert_eq!(c["allowed"], serde_json::json!([PAST_DROPS]));
    assert_eq!(doc["summary"]["allowed"], 1);
    assert!(doc.get("notes").is_none(), "{doc:#}");
    let (_, table, _) = run(ns.spx().args(base).args(["--allow", PAST_DROPS]));
    assert!(
        table.contains("allowed") && table.contains(&format!("allowed: {PAST_DROPS}")),
        "{table}"
    );
    assert!(table.contains("1 pass (1 allowed)"), "{table}");

    // The same from the config's [doctor] table; a flag wins over it.
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!("node = \"spx1\"\n[doctor]\nallow = [\"{PAST_DROPS}\"]\n"),
    );
    let (code, doc) = run_json(ns.spx().args(base).arg("--config").arg(&config));
    assert_eq!(code, 0);
    assert_eq!(udp_check(&doc)["allowed"], serde_json::json!([PAST_DROPS]));
    let (code, doc) = run_json(
        ns.spx()
            .args(base)
            .args(["--deny", PAST_DROPS, "--config"])
            .arg(&config),
    );
    assert_eq!(code, 1, "the flag's deny wins over the config's allow");
    assert_eq!(udp_check(&doc)["status"], "fail");
}

#[root_test]
fn a_stale_allow_is_a_note_and_not_an_exit_code() {
    let ns = Netns::new();
    let args = [
        "--check",
        "udp",
        "--sample",
        "200ms",
        "--allow",
        "udp.rcvbuf-errors/dropping",
        // Its check does not run: nothing to say about it.
        "--allow",
        "nic.rings/shallow-ring",
    ];
    let (code, doc) = run_json(ns.spx().args(args));
    assert_eq!(code, 0);
    assert_eq!(udp_check(&doc)["code"], "udp.rcvbuf-errors/ok");
    assert_eq!(
        doc["notes"],
        serde_json::json!(["--allow udp.rcvbuf-errors/dropping matched nothing: udp.rcvbuf-errors concluded pass without it (a stale allow hides nothing; remove it)"])
    );
    let (code, table, _) = run(ns.spx().args(args));
    assert_eq!(code, 0);
    assert!(
        table.contains("\nnote: --allow udp.rcvbuf-errors/dropping matched nothing"),
        "{table}"
    );
    let (code, prom, _) = run(ns.spx().args(args).args(["--format", "prometheus"]));
    assert_eq!(code, 0);
    assert!(prom.contains("\nspx_doctor_notes 1\n"), "{prom}");
}
