//! What changed, as the doctor says it: a check whose code changed between
//! two reports (a [`Transition`]), and a node whose state changed (a
//! [`NodeState`]). An agent publishes its transitions on
//! `spinifex.doctor.events.<node>` after each periodic run; `spx-doctor
//! watch --format json` writes the same shapes, one per line, with
//! `node: null` for a cluster check.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The subject `node`'s agent publishes its transitions on.
pub fn subject(node: &str) -> String {
    format!("spinifex.doctor.events.{node}")
}

/// A check whose code changed: `{"kind":"transition","node","check",
/// "code_before","code_after","status","since","summary"}`, codes in full
/// (`mtu.path/black-hole`). `code_before` is null for a check first seen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    pub kind: String,
    pub node: Option<String>,
    pub check: String,
    pub code_before: Option<String>,
    pub code_after: String,
    pub status: String,
    /// When the new code was first seen (the start of the run that saw it).
    pub since: String,
    pub summary: String,
}

/// A change of a node's state in the bucket: `ok` (a current report),
/// `stale` (none for two of its intervals), `unknown` (never one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeState {
    pub kind: String,
    pub node: String,
    pub status: String,
    pub since: String,
}

/// One check's result, as transitions compare them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub code: String,
    pub status: String,
    pub summary: String,
}

/// Each check's result in a JSON v1 report (or a cluster report's
/// `checks`), by id.
pub fn seen(checks: &[Value]) -> BTreeMap<String, Seen> {
    let text = |c: &Value, k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    checks
        .iter()
        .filter_map(|c| {
            let id = c.get("id")?.as_str()?.to_owned();
            Some((
                id,
                Seen {
                    code: text(c, "code"),
                    status: text(c, "status"),
                    summary: text(c, "summary"),
                },
            ))
        })
        .collect()
}

/// The transitions from `before` to `after` on `node` (None: the
/// cluster's own checks), in check order. With no `before` at all (the
/// first report seen) every check is new.
pub fn transitions(
    node: Option<&str>,
    before: Option<&BTreeMap<String, Seen>>,
    after: &BTreeMap<String, Seen>,
    since: &str,
) -> Vec<Transition> {
    after
        .iter()
        .filter_map(|(id, now)| {
            let was = before.and_then(|b| b.get(id));
            if was.is_some_and(|w| w.code == now.code) {
                return None;
            }
            Some(Transition {
                kind: "transition".into(),
                node: node.map(str::to_owned),
                check: id.clone(),
                code_before: was.map(|w| w.code.clone()),
                code_after: now.code.clone(),
                status: now.status.clone(),
                since: since.to_owned(),
                summary: now.summary.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_transition_is_a_change_of_code_written_in_full() {
        let before = seen(&[
            json!({"id": "mtu.path", "status": "pass", "code": "mtu.path/ok", "summary": "fine"}),
            json!({"id": "udp.buffers", "status": "pass", "code": "udp.buffers/ok", "summary": "ok"}),
        ]);
        let after = seen(&[
            json!({"id": "mtu.path", "status": "fail", "code": "mtu.path/black-hole", "summary": "n2 drops 1473"}),
            json!({"id": "udp.buffers", "status": "pass", "code": "udp.buffers/ok", "summary": "ok, other words"}),
        ]);
        let t = transitions(
            Some("n1"),
            Some(&before),
            &after,
            "2026-01-01T00:00:00.000Z",
        );
        assert_eq!(t.len(), 1, "{t:?}");
        let v = serde_json::to_value(&t[0]).unwrap();
        assert_eq!(
            v,
            json!({"kind": "transition", "node": "n1", "check": "mtu.path",
                   "code_before": "mtu.path/ok", "code_after": "mtu.path/black-hole",
                   "status": "fail", "since": "2026-01-01T00:00:00.000Z", "summary": "n2 drops 1473"})
        );
        // Nothing before: every check is first seen; the same again: nothing.
        assert_eq!(transitions(None, None, &after, "t").len(), 2);
        assert!(transitions(None, Some(&after), &after, "t").is_empty());
        assert_eq!(subject("n1"), "spinifex.doctor.events.n1");
    }
}
