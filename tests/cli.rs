//! The real binary's contract: exit codes, refusals, JSON, generated files.

use crate::support::{self, run, run_json, spx, write_config};

#[test]
fn no_config_runs_host_checks_and_validates() {
    let (code, doc) =
        run_json(spx().args(["doctor", "--check", "sysctl,udp", "--sample", "100ms"]));
    assert!(code == 0 || code == 1, "exit {code}: {doc}");
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["profile"], "default");
    assert_eq!(doc["node"], serde_json::Value::Null);
    assert_eq!(doc["checks"].as_array().unwrap().len(), 2);
    let sum: u64 = ["pass", "warn", "fail", "skip", "error"]
        .iter()
        .map(|k| doc["summary"][k].as_u64().unwrap())
        .sum();
    assert_eq!(sum, 2);
}

#[test]
fn exit_code_follows_the_buffer_verdict() {
    // The oracle is the kernel file itself, read independently.
    let rmem: u64 = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let wmem: u64 = std::fs::read_to_string("/proc/sys/net/core/wmem_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let (code, doc) = run_json(spx().args(["doctor", "--check", "sysctl.udp-buffers"]));
    let c = support::check(&doc, "sysctl.udp-buffers");
    assert_eq!(c["evidence"]["rmem_max"], rmem);
    assert_eq!(c["evidence"]["wmem_max"], wmem);
    let low = rmem < 16_777_216 || wmem < 16_777_216;
    assert_eq!(c["status"], if low { "fail" } else { "pass" });
    assert_eq!(code, if low { 1 } else { 0 });
}

#[test]
fn config_node_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(
        dir.path(),
        "node = \"spx1\"\n[nodes.spx1]\nhost = \"198.18.0.1\"\n",
    );
    let (_, doc) = run_json(
        spx()
            .args(["doctor", "--check", "sysctl"])
            .arg("--config")
            .arg(&cfg),
    );
    assert_eq!(doc["node"], "spx1");
}

#[test]
fn mistyped_config_is_exit_2_with_position_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(
        dir.path(),
        "node = \"spx1\"\n[network]\nunderlay_mtu = \"9000\"\n",
    );
    let (code, out, err) = run(spx().args(["doctor"]).arg("--config").arg(&cfg));
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("spinifex.toml:3:16"), "{err}");
    assert!(err.contains("network.underlay_mtu"), "{err}");
}

#[test]
fn malformed_config_is_exit_2_with_position() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(
        dir.path(),
        "node = \"spx1\"\n[network\nipsec_enabled = true\n",
    );
    let (code, _, err) = run(spx().args(["doctor"]).arg("--config").arg(&cfg));
    assert_eq!(code, 2);
    assert!(err.contains("spinifex.toml:2:"), "{err}");
}

#[test]
fn missing_explicit_config_is_exit_2() {
    let (code, _, err) = run(spx().args(["doctor", "--config", "/nonexistent/spinifex.toml"]));
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot read config /nonexistent/spinifex.toml"),
        "{err}"
    );
}

#[test]
fn unknown_check_is_exit_2_with_suggestion_and_list() {
    let (code, out, err) = run(spx().args(["doctor", "--check", "udp.rcvbuf-eror"]));
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("did you mean \"udp.rcvbuf-errors\""), "{err}");
    assert!(err.contains("sysctl.udp-buffers"), "{err}");
    let (code, _, err) = run(spx().args(["doctor", "--skip", "nope"]));
    assert_eq!(code, 2, "{err}");
    let (code, _, _) = run(spx().args(["doctor", "explain", "nope.nope"]));
    assert_eq!(code, 2);
}

#[test]
fn bad_flags_are_exit_2() {
    for args in [
        &["doctor", "--timeout", "soon"][..],
        &["doctor", "--timeout", "0s"],
        &["doctor", "--sample", "20s"],
        &["doctor", "--probe-timeout", "-1s"],
        &["doctor", "--mtu", "100"],
        &["doctor", "--mtu", "70000"],
        &["doctor", "--interface", "bad/name"],
        &["doctor", "--interface", "waytoolonginterfacename"],
        &["doctor", "--nb-db", "tcp:127.0.0.1"],
        &["doctor", "--sb-db", "ssl:127.0.0.1:6642"],
        &["doctor", "--ovs-db", "unix:relative"],
        &["doctor", "--peer", "$(id)"],
        &["doctor", "--peer", "no-such-host.invalid"],
        &["doctor", "--format", "xml"],
        &["doctor", "--for", "enable-everything"],
    ] {
        let (code, out, err) = run(spx().args(args));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(
            err.starts_with("spx: error: ") || err.starts_with("error: "),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn list_and_explain_come_from_the_check_list() {
    let (code, out, _) = run(spx().args(["doctor", "list"]));
    assert_eq!(code, 0);
    assert!(out.contains("sysctl.udp-buffers") && out.contains("udp.rcvbuf-errors"));
    let (code, out, _) = run(spx().args(["doctor", "explain", "sysctl.udp-buffers"]));
    assert_eq!(code, 0);
    assert!(out.contains("416 KiB"), "{out}");
}

#[test]
fn table_output_has_counts_and_no_color_when_piped() {
    let (_, out, _) = run(spx().args(["doctor", "--check", "sysctl", "--color", "auto"]));
    assert!(
        out.contains("1 checks:") && out.contains("sysctl.udp-buffers"),
        "{out}"
    );
    assert!(!out.contains('\u{1b}'), "no escape codes when piped");
    let (_, out, _) = run(spx().args(["doctor", "--check", "sysctl", "--color", "always"]));
    assert!(out.contains('\u{1b}'), "colour forced");
    let (_, out, _) = run(spx().args(["doctor", "--check", "sysctl", "-v"]));
    assert!(
        out.contains("required: 16777216"),
        "evidence with -v: {out}"
    );
}

#[test]
fn output_file_is_written_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doctor.json");
    let (code, out, err) = run(spx()
        .args([
            "doctor", "--check", "sysctl", "--format", "json", "--output",
        ])
        .arg(&path));
    assert!(code < 2, "{err}");
    assert!(out.is_empty());
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    support::assert_valid(&doc);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file left behind");
}

#[test]
fn broken_pipe_exits_quietly() {
    use std::process::Stdio;
    let mut child = spx()
        .args(["doctor", "list"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before the writer writes
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.code().is_some(),
        "killed by a signal: {:?}",
        out.status
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

/// Generated files must match what the binary generates now. To refresh:
/// `cargo run -q -- completions bash > completions/spx.bash` (zsh: `_spx`,
/// fish: `spx.fish`) and `cargo run -q -- man > doc/spx.1`.
#[test]
fn completions_and_man_page_are_fresh() {
    let root = support::repo_root();
    for (args, file) in [
        (&["completions", "bash"][..], "completions/spx.bash"),
        (&["completions", "zsh"], "completions/_spx"),
        (&["completions", "fish"], "completions/spx.fish"),
        (&["man"], "doc/spx.1"),
    ] {
        let (code, out, _) = run(spx().args(args));
        assert_eq!(code, 0);
        let committed = std::fs::read_to_string(root.join(file)).unwrap_or_default();
        assert!(
            committed == out,
            "{file} is stale: regenerate with `cargo run -q -- {} > {file}`",
            args.join(" ")
        );
    }
    let bash = std::fs::read_to_string(root.join("completions/spx.bash")).unwrap();
    for c in spx_ids() {
        assert!(bash.contains(&c), "bash completion lacks check id {c}");
    }
}

fn spx_ids() -> Vec<String> {
    let (_, out, _) = run(spx().args(["doctor", "list"]));
    out.lines()
        .filter_map(|l| l.split('┆').next())
        .map(|s| s.trim_start_matches('│').trim().to_owned())
        .filter(|s| s.contains('.'))
        .collect()
}

#[test]
fn readme_lists_every_check_and_its_two_commands() {
    let readme = std::fs::read_to_string(support::repo_root().join("README.md")).unwrap();
    for id in spx_ids() {
        assert!(
            readme.contains(&format!("| `{id}` |")),
            "README's check table lacks {id}"
        );
    }
    assert!(readme.contains("cargo run --release -- doctor"));
    assert!(readme.contains("bash .ci/run"));
    let ci = std::fs::read_to_string(support::repo_root().join(".ci/run")).unwrap();
    assert!(ci.contains("cargo test --workspace --locked"));
}

/// `--output /dev/null` once replaced the device with a regular file: the
/// atomic rename must never land on anything but a regular file.
#[test]
fn output_to_a_device_or_a_link_keeps_what_is_there() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    if support::is_root() {
        // A null device of our own, so a regression cannot break the host's.
        let null = dir.path().join("null");
        nix::sys::stat::mknod(
            &null,
            nix::sys::stat::SFlag::S_IFCHR,
            nix::sys::stat::Mode::from_bits_truncate(0o666),
            nix::sys::stat::makedev(1, 3),
        )
        .unwrap();
        let (code, out, err) = run(spx()
            .args(["doctor", "--check", "sysctl", "--output"])
            .arg(&null));
        assert!(code < 2, "{err}");
        assert!(out.is_empty());
        let meta = std::fs::metadata(&null).unwrap();
        assert!(
            meta.file_type().is_char_device(),
            "the device is still a device"
        );
        std::fs::remove_file(&null).unwrap();
    }

    let real = dir.path().join("real.json");
    std::fs::write(&real, "old").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let (code, _, err) = run(spx()
        .args([
            "doctor", "--check", "sysctl", "--format", "json", "--output",
        ])
        .arg(&link));
    assert!(code < 2, "{err}");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link stays"
    );
    assert!(std::fs::read_to_string(&real)
        .unwrap()
        .contains("\"schema_version\": 1"));

    let (code, _, err) = run(spx()
        .args(["doctor", "--check", "sysctl", "--output"])
        .arg(dir.path()));
    assert_eq!(code, 2);
    assert!(err.contains("is a directory"), "{err}");
}

/// The README's bad-input table is the one the hardening test generates
/// (docs/bad-input.md), row for row.
#[test]
fn readme_bad_input_table_is_the_generated_one() {
    let root = support::repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let generated = std::fs::read_to_string(root.join("docs/bad-input.md")).unwrap();
    let rows: Vec<&str> = generated.lines().filter(|l| l.starts_with('|')).collect();
    assert!(rows.len() > 10);
    for row in rows {
        assert!(
            readme.contains(row),
            "README.md lacks this row of docs/bad-input.md (copy the table over):\n{row}"
        );
    }
}
