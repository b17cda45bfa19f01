//! The doctor's own JetStream KV bucket, `spx-doctor`: every agent's
//! latest periodic report under its node's name, with a short history.
//!
//! A value is an [`Entry`]: the node, the agent's interval (how a reader
//! tells a stale node from a quiet one), when it was written, and the
//! node's JSON v1 report exactly as a run writes it.
//!
//! The bucket is made by the first agent that finds it missing, in the
//! shape a KV bucket has (stream `KV_spx-doctor` on `$KV.spx-doctor.>`,
//! rollups allowed, deletes denied, direct get), bounded: [`HISTORY`]
//! revisions per node, [`MAX_VALUE`] per value and [`MAX_BYTES`] in all,
//! the oldest revisions going first when full. async-nats 0.51's
//! `create_key_value` cannot be used for it: it first asks the server for
//! its account info and cannot read the answer of Debian's nats-server
//! 2.9.10, so the stream is created with `create_stream` and then opened
//! with `get_key_value`, which reads nothing of the account. A reader
//! (`spx-doctor watch`) only opens it, never creates it.

use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::one_line;

pub const BUCKET: &str = "spx-doctor";
/// Revisions kept per node.
pub const HISTORY: i64 = 5;
/// A value at most (Spinifex's max_payload).
pub const MAX_VALUE: i32 = 1 << 20;
/// The whole bucket at most.
pub const MAX_BYTES: i64 = 64 << 20;
/// An entry read back is refused past this (whatever the server holds).
const MAX_ENTRY: usize = 4 << 20;

/// What an agent writes after each periodic run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub node: String,
    /// The agent's `--interval`: a report older than two of them is stale.
    pub interval_ms: u64,
    /// When the agent wrote it (RFC 3339).
    pub written_at: String,
    /// The node's JSON v1 report.
    pub report: Value,
}

impl Entry {
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("an entry always serializes")
    }

    /// Read the value under key `node` (outside data: strictly; the
    /// report must be `node`'s own JSON v1 report).
    pub fn parse(node: &str, bytes: &[u8]) -> Result<Entry, String> {
        if bytes.len() > MAX_ENTRY {
            return Err(format!(
                "an entry of {} bytes (more than 4 MiB)",
                bytes.len()
            ));
        }
        let e: Entry = serde_json::from_slice(bytes)
            .map_err(|e| one_line(&format!("not an entry of the doctor's ({e})")))?;
        if e.node != node {
            return Err(format!(
                "the entry under {node} is node {}'s",
                one_line(&e.node)
            ));
        }
        if e.interval_ms == 0 {
            return Err("an entry without its interval".into());
        }
        if humantime::parse_rfc3339(&e.written_at).is_err() {
            return Err(format!(
                "written_at {} is not a time",
                one_line(&e.written_at)
            ));
        }
        if e.report.get("node").and_then(Value::as_str) != Some(node) {
            return Err(format!("the report under {node} is not {node}'s"));
        }
        Ok(e)
    }

    pub fn interval(&self) -> Duration {
        Duration::from_millis(self.interval_ms)
    }
}

/// The stream of a KV bucket, as the KV layer lays it out.
pub fn stream_config() -> stream::Config {
    stream::Config {
        name: format!("KV_{BUCKET}"),
        description: Some("spx-doctor: each node agent's latest periodic report".into()),
        subjects: vec![format!("$KV.{BUCKET}.>")],
        max_messages_per_subject: HISTORY,
        max_bytes: MAX_BYTES,
        max_message_size: MAX_VALUE,
        storage: stream::StorageType::File,
        num_replicas: 1,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        discard: stream::DiscardPolicy::Old,
        ..stream::Config::default()
    }
}

/// The bucket, made when missing (an agent).
pub async fn open_or_create(js: &jetstream::Context) -> Result<kv::Store, String> {
    if let Ok(s) = js.get_key_value(BUCKET).await {
        return Ok(s);
    }
    js.get_or_create_stream(stream_config())
        .await
        .map_err(|e| one_line(&format!("cannot create the {BUCKET} bucket: {e}")))?;
    js.get_key_value(BUCKET)
        .await
        .map_err(|e| one_line(&format!("cannot open the {BUCKET} bucket: {e}")))
}

/// The bucket as it is (a reader): never made here.
pub async fn open(js: &jetstream::Context) -> Result<kv::Store, String> {
    js.get_key_value(BUCKET).await.map_err(|e| {
        one_line(&format!(
            "cannot open the {BUCKET} bucket (it is made by the first agent that runs with an --interval): {e}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(node: &str, report_node: &str) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "node": node, "interval_ms": 2000, "written_at": "2026-01-01T00:00:00.000Z",
            "report": {"schema_version": 1, "node": report_node, "checks": []}
        }))
        .unwrap()
    }

    #[test]
    fn an_entry_is_the_keys_own() {
        let e = Entry::parse("n1", &entry("n1", "n1")).unwrap();
        assert_eq!(e.interval(), Duration::from_secs(2));
        assert!(Entry::parse("n2", &entry("n1", "n1")).is_err());
        assert!(Entry::parse("n1", &entry("n1", "n9")).is_err());
        let e = Entry::parse("n1", b"\x1b[2Jnope").unwrap_err();
        assert!(!e.contains('\u{1b}'), "{e}");
        let back = Entry::parse("n1", &e_json()).unwrap();
        assert_eq!(Entry::parse("n1", &back.to_json()).unwrap(), back);
    }

    fn e_json() -> Vec<u8> {
        entry("n1", "n1")
    }

    #[test]
    fn the_bucket_is_bounded_and_kv_shaped() {
        let c = stream_config();
        assert_eq!(c.name, "KV_spx-doctor");
        assert_eq!(c.subjects, ["$KV.spx-doctor.>"]);
        assert_eq!(c.max_messages_per_subject, HISTORY);
        assert!(c.max_bytes > 0 && c.max_message_size > 0);
        assert!(c.allow_rollup && c.deny_delete && c.allow_direct);
    }
}
