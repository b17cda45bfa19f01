//! `--record` and `--replay` themselves. That a replay gives the live
//! report is asserted by every JSON run of the suite (`support::run_json`
//! records and replays); here: what a bundle never holds (keys and
//! certificates), that a replay reads nothing of the host it runs on, and
//! what a replay does with a bundle of another version.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::support::ovsdb_server::OvsdbServer;
use crate::support::{self, bundle_dir, bundle_text, check, run, spx};

/// A private key and a certificate pasted into `Open_vSwitch .
/// other_config` as PEM text: neither may reach a bundle. (OVS means these
/// keys as file paths; a path is kept, [`PATH`].)
const SECRETS: [(&str, &str); 2] = [
    (
        "private_key",
        "-----BEGIN PRIVATE KEY----- spx-test-secret-4f1c9a7e -----END PRIVATE KEY-----",
    ),
    (
        "certificate",
        "-----BEGIN CERTIFICATE----- spx-test-cert-0b6d2e11 -----END CERTIFICATE-----",
    ),
];

/// The CA certificate as ovs-monitor-ipsec is really given it: a path,
/// which names the file and holds no secret (ipsec.cert judges that file).
const PATH: (&str, &str) = ("ca_cert", "/etc/keys/spx-test-cacert-77aa31f0.pem");

#[test]
fn ovsdb_keys_and_certificates_never_enter_a_bundle() {
    let nb = OvsdbServer::nb();
    let ovs = OvsdbServer::ovs();
    nb.nbctl(&["set", "NB_Global", ".", "ipsec=true"]);
    let mut set = vec![
        "set".to_owned(),
        "Open_vSwitch".to_owned(),
        ".".to_owned(),
        "other_config:ipsec_encapsulation=true".to_owned(),
        "external_ids:ovn-encap-ip=198.18.0.1".to_owned(),
    ];
    for (key, value) in SECRETS.into_iter().chain([PATH]) {
        set.push(format!("other_config:{key}=\"{value}\""));
    }
    let set: Vec<&str> = set.iter().map(String::as_str).collect();
    ovs.vsctl(&set);
    // The ovsdb-server holds them: the doctor's read would see them.
    let row = ovs.vsctl(&["get", "Open_vSwitch", ".", "other_config"]);
    assert!(row.contains("spx-test-secret-4f1c9a7e"), "{row}");

    let dir = tempfile::tempdir().unwrap();
    let config = support::write_config(
        dir.path(),
        &format!(
            "node = \"spx1\"\n[network]\nipsec_enabled = true\n\
             [nodes.spx1]\nhost = \"198.18.0.1\"\n[nodes.spx2]\nhost = \"198.18.0.2\"\n\
             [nodes.spx1.vpcd]\novn_nb_addr = \"{}\"\n",
            nb.tcp()
        ),
    );
    let bundles = bundle_dir();
    let bundle = bundles.path().join("node.spxb");
    let mut cmd = spx();
    cmd.args(["--check", "ipsec.flags", "--config"])
        .arg(&config)
        .args(["--ovs-db", &ovs.unix(), "--format", "json", "--record"])
        .arg(&bundle);
    let (code, out, err) = run(&mut cmd);
    assert_eq!(code, 0, "{out}{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(check(&doc, "ipsec.flags")["status"], "pass", "{doc:#}");

    let text = bundle_text(&bundle);
    // The row was read and recorded: the flag the check judges, and the
    // encap IP beside the keys.
    assert!(text.contains(r#"["ipsec_encapsulation","true"]"#), "{text}");
    assert!(text.contains("198.18.0.1"), "{text}");
    for (key, value) in SECRETS {
        let marker = value.split_whitespace().nth(1).unwrap_or(value);
        assert!(!text.contains(marker), "the bundle holds {key}: {text}");
        assert!(!text.contains(key), "the bundle names {key}: {text}");
    }
    assert!(
        text.contains(&format!(r#"["{}","{}"]"#, PATH.0, PATH.1)),
        "the bundle lacks the {} path: {text}",
        PATH.0
    );
    support::assert_replays(&bundle, &doc, None);
}

/// Record a run of `checks` on this host (unprivileged checks, a short
/// window): its report and its bundle.
fn recorded(checks: &str, dir: &Path) -> (Value, std::path::PathBuf) {
    let bundle = dir.join("host.spxb");
    let mut cmd = spx();
    cmd.args(["--check", checks, "--sample", "100ms", "--format", "json"])
        .arg("--record")
        .arg(&bundle);
    let (code, out, err) = run(&mut cmd);
    assert!(code < 2, "{out}{err}");
    (serde_json::from_str(&out).unwrap(), bundle)
}

fn replay(bundle: &Path, args: &[&str]) -> (i32, Value) {
    let mut cmd = spx();
    cmd.arg("--replay").arg(bundle).args(args);
    support::run_json_unrecorded(&mut cmd)
}

#[test]
fn a_replay_reads_nothing_of_the_host_it_runs_on() {
    if !support::tool_or_skip(
        "a_replay_reads_nothing_of_the_host_it_runs_on",
        "strace",
        Path::new("/usr/bin/strace").exists(),
    ) {
        return;
    }
    let dir = bundle_dir();
    let (live, bundle) = recorded(
        "sysctl.udp-buffers,udp.rcvbuf-errors,cpu.softirq,tcp.reordering,mtu.overlay,qemu.tuning",
        dir.path(),
    );
    let trace = dir.path().join("trace");
    let mut cmd = Command::new("/usr/bin/strace");
    cmd.args(["-f", "-qq", "-e", "trace=%network,openat,execve", "-o"])
        .arg(&trace)
        .arg(support::bin())
        .arg("--replay")
        .arg(&bundle)
        .args(["--format", "json"])
        .env("HOME", "/nonexistent-spx-test-home")
        .env_remove("SPINIFEX_CONFIG_PATH");
    let (code, out, err) = run(&mut cmd);
    assert_eq!(code, live["exit_code"], "{err}");
    let mut doc: Value = serde_json::from_str(&out).unwrap();
    doc.as_object_mut().unwrap().remove("replayed_from");
    assert_eq!(doc, live);
    let trace = std::fs::read_to_string(&trace).unwrap();
    for line in trace.lines() {
        // No socket of any kind (netlink, ICMP, OVSDB, QMP), no program
        // run, no file of the host's state opened: only the bundle, the
        // loader's libraries and the process's own /proc/self.
        assert!(
            !line.contains("socket(") && !line.contains("connect("),
            "a replay opened a socket: {line}"
        );
        if line.contains("execve(") {
            assert!(line.contains(support::bin()), "a replay ran {line}");
        }
        if let Some(path) = line.split('"').nth(1).filter(|_| line.contains("openat(")) {
            let library = path.ends_with(".so") || path.contains(".so.");
            let allowed = path == bundle.to_str().unwrap()
                || path.starts_with("/etc/ld.so")
                || library
                || path.starts_with("/proc/self/");
            assert!(allowed, "a replay opened {path}: {line}");
        }
    }
}

/// Rewrite a bundle: `edit` gets the header and the records.
fn rewrite(bundle: &Path, to: &Path, edit: impl FnOnce(&mut Value, &mut Vec<Value>)) {
    let file = std::fs::File::open(bundle).unwrap();
    let mut lines = std::io::BufReader::new(flate2::read::GzDecoder::new(file)).lines();
    let mut header: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    let mut records: Vec<Value> = lines
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    edit(&mut header, &mut records);
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(to).unwrap(),
        flate2::Compression::default(),
    );
    for v in std::iter::once(&header).chain(&records) {
        writeln!(gz, "{v}").unwrap();
    }
    gz.finish().unwrap();
}

#[test]
fn a_bundle_of_another_version_replays_what_it_can_and_skips_the_rest() {
    let dir = bundle_dir();
    let (live, bundle) = recorded(
        "sysctl.udp-buffers,udp.rcvbuf-errors,cpu.softirq",
        dir.path(),
    );
    let other = dir.path().join("other.spxb");
    rewrite(&bundle, &other, |header, records| {
        // A newer doctor: another version, a field and a check this one
        // does not know, a request kind it never makes.
        header["doctor_version"] = json!("0.9.0");
        header["collected_by"] = json!("a field from the future");
        header["checks"]
            .as_array_mut()
            .unwrap()
            .push(json!({"id": "future.check", "duration_ms": 3}));
        records.push(json!({
            "t_ms": 1.0, "scope": "udp.rcvbuf-errors",
            "request": {"kind": "bpf-map", "name": "udp_drops"},
            "ok": {"count": 7}, "note": "a field from the future",
        }));
        // ...and one that never read /proc/stat at the end of
        // cpu.softirq's window (an older doctor, say).
        let last_stat = records
            .iter()
            .rposition(|r| r["scope"] == "cpu.softirq" && r["request"]["path"] == "/proc/stat")
            .expect("cpu.softirq read /proc/stat");
        records.remove(last_stat);
    });
    let (code, doc) = replay(&other, &[]);
    let from = &doc["replayed_from"];
    assert_eq!(from["recorded_by"], "0.9.0");
    let notes = support::strings(&from["notes"]);
    assert_eq!(
        notes,
        [
            format!(
                "recorded by spx-doctor 0.9.0, replayed by {}",
                env!("CARGO_PKG_VERSION")
            ),
            "the recorded run ran checks this version does not know: future.check".to_owned(),
            "ignored records of request kinds this version does not know: bpf-map (1)".to_owned(),
        ]
    );
    // What the bundle holds is judged as it was live.
    for id in ["sysctl.udp-buffers", "udp.rcvbuf-errors"] {
        assert_eq!(check(&doc, id), check(&live, id), "{id}");
    }
    // What it lacks is a skip that names it, never a guess.
    let c = check(&doc, "cpu.softirq");
    assert_eq!(c["status"], "skip", "{c:#}");
    assert_eq!(c["code"], "cpu.softirq/not-recorded");
    assert_eq!(c["skip_reason"], "not-recorded");
    assert_eq!(
        c["summary"],
        "not in the bundle: no answer to file /proc/stat (recorded by spx-doctor 0.9.0)"
    );
    assert!(code < 2, "{doc:#}");

    // A check the recorded run did not run, asked for by name.
    let (_, doc) = replay(&bundle, &["--check", "tcp.reordering,sysctl"]);
    let c = check(&doc, "tcp.reordering");
    assert_eq!(c["status"], "skip");
    assert_eq!(
        c["summary"],
        "not in the bundle: the recorded run did not run tcp.reordering"
    );
    assert_eq!(
        check(&doc, "sysctl.udp-buffers"),
        check(&live, "sysctl.udp-buffers")
    );
    // tcp.reordering and the sysctl category's two (udp-buffers, neigh).
    assert_eq!(doc["checks"].as_array().unwrap().len(), 3);
}

#[test]
fn a_replay_applies_the_recorded_policy_and_more_flags_on_top() {
    let dir = bundle_dir();
    let bundle = dir.path().join("strict.spxb");
    // sysctl.udp-buffers fails at the kernel default and passes at 16 MiB;
    // either way --deny of its failure code adds nothing to its status, but
    // --strict is kept: a warning anywhere would fail the replay too.
    let (code, live) = support::run_json_unrecorded(spx().args([
        "--check",
        "sysctl.udp-buffers",
        "--strict",
        "--record",
        bundle.to_str().unwrap(),
    ]));
    let (replayed_code, doc) = replay(&bundle, &[]);
    assert_eq!(replayed_code, code);
    assert_eq!(doc["exit_code"], live["exit_code"]);
    // The table says where its facts came from.
    let (_, table, _) = run(spx().env("COLUMNS", "200").arg("--replay").arg(&bundle));
    let footer = format!(
        "replayed from {}: recorded on {} at {} by spx-doctor {}",
        bundle.display(),
        live["host"].as_str().unwrap(),
        live["started_at"].as_str().unwrap(),
        env!("CARGO_PKG_VERSION")
    );
    assert!(table.contains(&footer), "{table}");
    // Asked for on the replay line, an allow of the check's failure turns
    // it into a pass, as it would have live.
    let failed = check(&live, "sysctl.udp-buffers")["status"] == "fail";
    let code_word = check(&live, "sysctl.udp-buffers")["code"]
        .as_str()
        .unwrap()
        .to_owned();
    if failed {
        let (code, doc) = replay(&bundle, &["--allow", &code_word]);
        assert_eq!(code, 0, "{doc:#}");
        assert_eq!(
            check(&doc, "sysctl.udp-buffers")["allowed"],
            json!([code_word])
        );
    }
}

#[test]
fn a_bundle_is_outside_data_and_its_options_are_checked_like_flags() {
    let dir = bundle_dir();
    let (_, bundle) = recorded("sysctl.udp-buffers", dir.path());
    for (field, value, says) in [
        ("timeout", json!({"secs": u64::MAX, "nanos": 0}), "timeout"),
        ("sample", json!({"secs": 3600, "nanos": 0}), "sample"),
        ("mtu", json!(70000), "mtu 70000"),
        ("interfaces", json!(["../../etc"]), "interface name"),
    ] {
        let crafted = dir.path().join("crafted.spxb");
        rewrite(&bundle, &crafted, |header, _| {
            header["options"][field] = value.clone();
        });
        let (code, out, err) = run(spx().arg("--replay").arg(&crafted));
        assert_eq!(code, 2, "{field}: {out}{err}");
        assert!(out.is_empty());
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("the bundle's options are not ones spx-doctor takes")
                && err.contains(says),
            "{field}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}
