//! `#[root_test]` (tests/harness) proven on a probe: a test crate of one
//! root-only test whose body panics, compiled with `rustc` against the
//! attribute's own source and the runtime policy (`support/root.rs`), so
//! what the attribute does is seen from outside, as libtest reports it:
//!
//! - built without root (no `cfg(spx_root)`): ignored, with the reason;
//!   the body runs only when ignored tests are asked for;
//! - built as root, run by another user: the skip reason, then `ok`;
//!   under `CI=true`, a failure;
//! - built as root, run as root: the body runs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{self, run};
use spx_test_harness::root_test;

const PROBE: &str = r#"
#[path = "ROOT_RS"]
mod support;
use spx_test_harness::root_test;

#[root_test]
fn needs_root() {
    panic!("the body ran");
}
"#;

/// `rustc`, as cargo names it, else on PATH.
fn rustc() -> String {
    std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into())
}

fn rustc_or_skip(test: &str) -> bool {
    let there = Command::new(rustc())
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    support::tool_or_skip(test, "rustc (the toolchain that builds these tests)", there)
}

/// The probe built in `dir` (world-readable), with `cfg(spx_root)` when
/// `as_root`: the attribute compiled from tests/harness/src/lib.rs, then
/// the probe against it.
fn probe(dir: &Path, as_root: bool) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let root = support::repo_root();
    let harness = dir.join("libspx_test_harness.so");
    let compile = |cmd: &mut Command| {
        let (code, out, err) = run(cmd);
        assert_eq!(code, 0, "{out}{err}");
    };
    compile(
        Command::new(rustc())
            .args([
                "--edition",
                "2021",
                "--crate-type",
                "proc-macro",
                "--crate-name",
                "spx_test_harness",
                "--extern",
                "proc_macro",
                "-o",
            ])
            .arg(&harness)
            .arg(root.join("tests/harness/src/lib.rs")),
    );
    let source = dir.join("probe.rs");
    let root_rs = root.join("tests/support/root.rs");
    std::fs::write(&source, PROBE.replace("ROOT_RS", root_rs.to_str().unwrap())).unwrap();
    let bin = dir.join(if as_root { "probe-root" } else { "probe" });
    let mut cmd = Command::new(rustc());
    cmd.args([
        "--edition",
        "2021",
        "--test",
        "--check-cfg",
        "cfg(spx_root)",
    ])
    .arg("--extern")
    .arg(format!("spx_test_harness={}", harness.display()))
    .arg("-o")
    .arg(&bin)
    .arg(&source);
    if as_root {
        cmd.args(["--cfg", "spx_root"]);
    }
    compile(&mut cmd);
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn built_without_root_a_root_test_is_ignored_with_its_reason() {
    if !rustc_or_skip("built_without_root_a_root_test_is_ignored_with_its_reason") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = probe(dir.path(), false);
    let (code, out, err) = run(Command::new(&bin).env_remove("CI"));
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("test needs_root ... ignored, needs root (network namespaces): run as root, or with CI=true where it must run"),
        "{out}"
    );
    assert!(out.contains("0 passed; 0 failed; 1 ignored"), "{out}");
    // The attribute is all that holds the body back.
    let (code, out, _) = run(Command::new(&bin).arg("--include-ignored"));
    assert_eq!(code, 101, "{out}");
    assert!(out.contains("the body ran"), "{out}");
}

#[root_test]
fn built_as_root_a_root_test_runs_skips_for_another_user_and_fails_under_ci() {
    if !rustc_or_skip("built_as_root_a_root_test_runs_skips_for_another_user_and_fails_under_ci") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = probe(dir.path(), true);
    let nobody = |ci: bool| {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
            .arg(&bin)
            .arg("--nocapture")
            .current_dir("/");
        if ci {
            cmd.env("CI", "true");
        } else {
            cmd.env_remove("CI");
        }
        run(&mut cmd)
    };
    // As root: the body runs.
    let (code, out, _) = run(Command::new(&bin).env_remove("CI"));
    assert_eq!(code, 101, "{out}");
    assert!(out.contains("the body ran"), "{out}");
    // As another user: the reason, and the body never runs.
    let (code, out, err) = nobody(false);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("skipping needs_root: needs root (network namespaces)")
            && out.contains("test needs_root ... ok")
            && !out.contains("the body ran"),
        "{out}"
    );
    // Under CI=true it must run: without root it fails, saying so.
    let (code, out, err) = nobody(true);
    assert_eq!(code, 101, "{out}{err}");
    assert!(
        out.contains("test needs_root ... FAILED")
            && err.contains("needs_root needs root and CI=true: it must run here")
            && !err.contains("the body ran"),
        "{out}{err}"
    );
}
