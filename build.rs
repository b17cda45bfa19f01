//! Sets `cfg(spx_root)` when the build runs as root or under `CI=true`:
//! `#[root_test]` (tests/harness) then builds root-only tests as ordinary
//! tests; otherwise they are `#[ignore]`d with the reason, so a run without
//! root reports them as ignored, never as passes.

#![allow(clippy::disallowed_macros)] // a build script talks to cargo on stdout

fn main() {
    println!("cargo::rustc-check-cfg=cfg(spx_root)");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-changed=build.rs");
    let ci = std::env::var("CI").as_deref() == Ok("true");
    if ci || effective_uid() == Some(0) {
        println!("cargo::rustc-cfg=spx_root");
    }
}

/// The effective uid, from `/proc/self/status` (`Uid: real effective …`).
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}
