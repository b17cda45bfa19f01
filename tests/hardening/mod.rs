//! Issue 8: the doctor runs as root every minute on every node, so it must
//! be the most boring program on the host. Each "must hold" property is a
//! test of the real binary here:
//!
//! - never writes: a full run (and both preflight profiles) inside a lab
//!   node changes nothing: links, MTUs, features, channels, rings, sysctls,
//!   xfrm, OVSDB contents, the config file;
//! - no shell, no injection: hostile config values and flags are refused
//!   with exit 2 naming the key, a canary file never appears, and a full
//!   run under strace executes nothing but spx (and journalctl, by argv);
//! - unprivileged: as uid 65534 a full report, no panic, a privilege
//!   problem is a `skip` naming what is needed, never an `error`;
//! - never hangs: every outside party misbehaving at once still ends
//!   within `--timeout` + 500 ms, each reported as `error` with its reason;
//! - clear refusals: `docs/bad-input.md` is generated from the table below
//!   and every row is run;
//! - text from outside is data: an interface name made of escape
//!   sequences reaches the table shown inert (`terminal.rs`; a node's
//!   forged report is `cluster::a_node_report_of_terminal_control_is_shown_inert`).
//!
//! (A panicking check becoming an `error` while the others still report is
//! proven in `src/runner.rs`'s unit tests.)

use std::collections::BTreeMap;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::ovsdb_server::OvsdbServer;
use crate::support::qemu::QemuGuest;
use crate::support::{self, run, run_json, spx, Netns};
use spx_test_harness::root_test;

mod bad_input;
mod hangs;
mod injection;
mod lab;
mod terminal;
mod unprivileged;

const NOBODY: &str = "65534";

/// Every node check (the cluster checks belong to `--cluster`).
fn all_ids() -> Vec<&'static str> {
    spx_checks::CHECKS
        .iter()
        .filter(|c| c.scope() == spx_checks::Scope::Node)
        .map(|c| c.id())
        .collect()
}

/// Every node check of `CHECKS` is in the report, once.
fn assert_complete(doc: &Value) {
    let mut got: Vec<&str> = doc["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    got.sort_unstable();
    let mut want = all_ids();
    want.sort_unstable();
    assert_eq!(got, want, "a full report has every check once: {doc:#}");
}

fn status<'a>(doc: &'a Value, id: &str) -> &'a str {
    support::check(doc, id)["status"].as_str().unwrap_or("?")
}

fn summary<'a>(doc: &'a Value, id: &str) -> &'a str {
    support::check(doc, id)["summary"].as_str().unwrap_or("")
}

/// A temp dir that uid 65534 can enter and read.
fn world_readable_tempdir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("spx-hardening-")
        .tempdir()
        .expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn write_file(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Quote a value as a TOML basic string, escaping what TOML requires.
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[root_test]
fn bad_input_table_is_what_spx_says() {
    bad_input::bad_input_table_is_what_spx_says();
}
