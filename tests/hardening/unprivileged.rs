//! Unprivileged: as uid 65534 a full report, a privilege problem a skip
//! naming what is needed.

use super::lab::Lab;
use super::*;
use spx_test_harness::root_test;

/// The binary where uid 65534 can execute it (the build tree may not be).
pub(super) fn nobody_binary(dir: &Path) -> PathBuf {
    let path = dir.join("spx-doctor");
    std::fs::copy(support::bin(), &path).expect("copy spx-doctor");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Run a command that execs a [`nobody_binary`] copy. Another test thread
/// that forks while the copy is open for writing holds that descriptor
/// until its child execs, and exec of the copy then fails with ETXTBSY
/// (exit 126): that is the harness racing itself, so it is retried.
pub(super) fn run_copied(cmd: &mut Command) -> (i32, String, String) {
    let mut tries = 0;
    loop {
        let (code, out, err) = run(cmd);
        tries += 1;
        if code == 126 && err.contains("Text file busy") && tries < 20 {
            std::thread::sleep(std::time::Duration::from_millis(50));
            continue;
        }
        return (code, out, err);
    }
}

/// Words that mean a privilege problem, which must be a skip, not an error.
const PERMISSION_WORDS: &[&str] = &[
    "permission denied",
    "operation not permitted",
    "eperm",
    "eacces",
];

#[root_test]
fn unprivileged_run_is_complete_and_skips_naming_the_privilege() {
    let lab = Lab::new();
    let bin = nobody_binary(lab.dir.path());
    // A guest whose QMP socket only root can reach, as on a real node.
    let _guest = QemuGuest::start(&lab.node, &["-name", "guest=spx-unprivileged-test"]);

    let (_, as_root) = run_json(lab.node.spx().args(lab.doctor_args()));

    let mut cmd = lab.node.command("setpriv");
    cmd.args([
        &format!("--reuid={NOBODY}"),
        &format!("--regid={NOBODY}"),
        "--clear-groups",
        "--inh-caps=-all",
    ])
    .arg(&bin)
    .args(lab.doctor_args())
    .args(["--format", "json"])
    .env("HOME", "/nonexistent-spx-test-home");
    let (_bundles, bundle) = support::record(&mut cmd);
    let (code, out, err) = run_copied(&mut cmd);
    // Host-wide facts (QEMU guests of other tests) may change meanwhile:
    // a check counts as privilege-sensitive only when root concludes
    // before and after the unprivileged run.
    let (_, as_root_after) = run_json(lab.node.spx().args(lab.doctor_args()));
    assert!(!err.contains("panicked"), "{err}");
    assert!((0..=2).contains(&code), "exit {code}: {err}");
    let doc: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("not JSON ({e}); exit {code}; {out}{err}"));
    support::assert_valid(&doc);
    assert_complete(&doc);
    assert_eq!(doc["exit_code"], code);
    // The unprivileged run's bundle replays to its report, skips and all.
    support::assert_replays(&bundle, &doc, None);

    // Exit by the usual rules.
    let statuses: Vec<&str> = all_ids().iter().map(|id| status(&doc, id)).collect();
    let expected = if statuses.contains(&"fail") {
        1
    } else if statuses.contains(&"error") {
        2
    } else {
        0
    };
    assert_eq!(code, expected, "{statuses:?}");

    let mut problems = Vec::new();
    for id in all_ids() {
        let (s, text) = (status(&doc, id), summary(&doc, id));
        let lower = text.to_lowercase();
        if s == "error" && PERMISSION_WORDS.iter().any(|w| lower.contains(w)) {
            problems.push(format!(
                "{id}: error on a privilege problem (should be a skip naming what it needs): {text}"
            ));
        }
        if s == "skip" && status(&as_root, id) != "skip" && status(&as_root_after, id) != "skip" {
            let names_it = text.starts_with("needs ")
                && (text.contains("CAP_") || text.contains("root") || text.contains("group"));
            if !names_it {
                problems.push(format!(
                    "{id}: skips unprivileged (root: {}) without naming the privilege: {text}",
                    status(&as_root, id)
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n\nunprivileged report: {doc:#}",
        problems.join("\n")
    );
    // The two capabilities the issue names, where this lab needs them.
    assert_eq!(status(&doc, "ipsec.xfrm"), "skip", "{doc:#}");
    assert!(
        summary(&doc, "ipsec.xfrm").contains("CAP_NET_ADMIN"),
        "{}",
        summary(&doc, "ipsec.xfrm")
    );
    assert_eq!(status(&doc, "mtu.path"), "skip", "{doc:#}");
    assert!(
        summary(&doc, "mtu.path").contains("CAP_NET_RAW"),
        "{}",
        summary(&doc, "mtu.path")
    );
}
