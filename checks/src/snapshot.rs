//! Snapshots of a check's JSON, as the v1 report carries it, so that a
//! change which only moves code (issue 21) can prove the verdicts it
//! produces are byte-identical before and after: `cargo insta review`
//! shows any difference, and under `CI=true` a missing or changed snapshot
//! fails the test instead of being written.
//!
//! Every snapshot lives in `checks/snapshots/`, named by the test's module
//! path, so moving a check's file into a folder leaves its snapshots where
//! they are. Nothing is redacted: every fact a test feeds is recorded
//! (clock readings included), so the JSON does not vary between runs. The
//! one varying field of a report's check entry, `duration_ms`, is the
//! runner's measurement of the run and is not part of the check's verdict;
//! it is left out here rather than redacted.

use serde_json::{json, Value};

use crate::finding::Finding;

/// `f` as check `id`'s entry of the v1 report (`checks[]`), without the
/// runner's `duration_ms`. Key order is the report's.
pub fn check_json(id: &str, f: &Finding) -> Value {
    check_json_titled(id, crate::find(id).map_or("", |c| c.title()), f)
}

/// [`check_json`] of a check the catalogue does not list (a site check
/// made in a test), titled `title`.
pub fn check_json_titled(id: &str, title: &str, f: &Finding) -> Value {
    let mut doc = json!({
        "id": id,
        "title": title,
        "status": f.status,
        "code": f.kind.code(id),
        "summary": f.summary,
    });
    if let Some(skip) = f.kind.skip {
        doc["skip_reason"] = json!(skip);
    }
    if let Some(n) = &f.needs {
        doc["needs"] = json!(n);
    }
    if !f.notes.is_empty() {
        doc["notes"] = json!(f.notes);
    }
    doc["evidence"] = json!(f.evidence);
    doc["remediation"] = json!(f.remediation);
    doc["findings"] = f
        .findings
        .iter()
        .map(|s| {
            let mut v = json!({
                "code": s.kind.code(id),
                "status": s.status(),
                "subject": s.subject,
                "summary": s.summary,
            });
            if let Some(n) = &s.needs {
                v["needs"] = json!(n);
            }
            v
        })
        .collect();
    doc
}

/// Snapshot `finding`, check `id`'s verdict, as its report JSON:
/// `snapshot!("mtu.overlay", f)` names it after the test (a second one in
/// the same test gets `-2`), `snapshot!("nic.rings", f, "rings_of_ice")`
/// by the name given (for a test that judges one check on many inputs).
macro_rules! snapshot {
    ($id:expr, $finding:expr) => {
        insta::with_settings!({
            snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"),
            omit_expression => true,
        }, {
            insta::assert_json_snapshot!($crate::snapshot::check_json($id, &$finding));
        })
    };
    ($id:expr, $finding:expr, $name:expr) => {
        insta::with_settings!({
            snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"),
            omit_expression => true,
        }, {
            insta::assert_json_snapshot!($name, $crate::snapshot::check_json($id, &$finding));
        })
    };
}
pub(crate) use snapshot;
