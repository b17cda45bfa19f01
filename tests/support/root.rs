//! The runtime half of `#[root_test]` (tests/harness): a root-only test
//! built as root (or under `CI=true`) that finds itself without root says
//! so and returns, except under `CI=true`, where every test must run.
//! Standard library only: `tests/root_test.rs` compiles this file alone
//! into a probe to prove the policy.

#![allow(dead_code)]

/// True when this process's effective uid is 0 (`/proc/self/status`:
/// `Uid: real effective saved fs`).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Uid:"))?.to_owned();
            line.split_whitespace().nth(2)?.parse::<u32>().ok()
        })
        == Some(0)
}

/// Tests that need root call this first: it returns false (and says why)
/// when not root locally, and fails the test under CI=true, where every
/// test must run.
#[allow(clippy::disallowed_macros)] // the skip reason belongs in the test log
pub fn root_or_skip(test: &str) -> bool {
    if is_root() {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{test} needs root and CI=true: it must run here");
    }
    println!("skipping {test}: needs root (network namespaces)");
    false
}
