//! The doctor's own JetStream KV bucket, `spx-doctor`: every agent's
//! latest periodic report under its node's name, with a short history.
//!
//! A value is an [`Entry`]: the node, the agent's interval (how a reader
//! tells a stale node from a quiet one), when it was written, who wrote it
//! (the agent's identity: two agents writing as one node are a duplicate),
//! and the node's JSON v1 report exactly as a run writes it; or, when the
//! report does not fit the server's max_payload, a small entry saying so
//! ([`TooLarge`]: its size, the limit and the report's counts), so a reader
//! shows the node as `too-large` rather than as a node without a report.
//!
//! The bucket is made by the first agent that finds it missing, in the
//! shape a KV bucket has (stream `KV_spx-doctor` on `$KV.spx-doctor.>`,
//! rollups allowed, deletes denied, direct get), bounded: [`HISTORY`]
//! revisions per node, [`MAX_VALUE`] per value and [`bound`] in all (two
//! rounds of the config's nodes' largest values, [`MAX_BYTES`] at least),
//! the oldest revisions going first when full. The oldest go by bytes,
//! whoever wrote them: a bound below one round pushes nodes' only
//! revisions out (64 MiB held 140 of 1,024 nodes' half-MB reports), so an
//! agent whose config names more nodes than the bucket's bound covers
//! raises it ([`open_or_create`]), never lowers it. It is the agents' state:
//! one deleted by hand (`nats kv del spx-doctor`, a JetStream clean-up) is
//! made again, with the same bounds, by the next agent whose write finds
//! it missing ([`is_missing`], [`remake`]). async-nats 0.51's
//! `create_key_value` cannot be used for it: it first asks the server for
//! its account info and cannot read the answer of Debian's nats-server
//! 2.9.10, so the stream is created with `create_stream` and then opened
//! with `get_key_value`, which reads nothing of the account. A reader
//! (`spx-doctor watch`) only opens it, never creates it.
//!
//! Each value carries its writer's identity in headers as well
//! ([`put`]), so a reader takes the history's writers from the headers
//! alone ([`history`]: a headers-only pass) and only each node's latest
//! value whole: at 1,024 nodes the bucket holds about 2 GiB of
//! revisions, of which a reader needs under 500 MB.

use std::time::{Duration, Instant, SystemTime};

use async_nats::jetstream::{self, consumer, context, kv, stream};
use async_nats::HeaderMap;
use bytes::Bytes;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use spx_checks::cluster::AgentIdentity;

use super::one_line;

pub const BUCKET: &str = "spx-doctor";
/// Revisions kept per node.
pub const HISTORY: i64 = 5;
/// A value at most (Spinifex's max_payload).
pub const MAX_VALUE: i32 = 1 << 20;
/// The whole bucket at least (the bound of a cluster of up to 32 nodes).
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
    /// Who wrote it (absent in entries of doctors before issue 36).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<AgentIdentity>,
    /// The node's JSON v1 report; null when it did not fit ([`TooLarge`]).
    pub report: Value,
    /// Why `report` is null: the report did not fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub too_large: Option<TooLarge>,
}

/// An entry as a reader reads it: its report left as text.
#[derive(Deserialize)]
struct Stored {
    node: String,
    interval_ms: u64,
    written_at: String,
    #[serde(default)]
    identity: Option<AgentIdentity>,
    #[serde(default)]
    report: Option<Box<RawValue>>,
    #[serde(default)]
    too_large: Option<TooLarge>,
}

/// The `node` a report's text names (`None`: not an object naming one).
fn report_node(report: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    struct Named {
        node: Option<String>,
    }
    // An object only (serde takes a struct in field order from an array).
    if !report.get().starts_with('{') {
        return None;
    }
    serde_json::from_str::<Named>(report.get()).ok()?.node
}

/// A report that did not fit the bucket, in a few numbers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TooLarge {
    /// The whole entry's size, in bytes.
    pub size: usize,
    /// What the server takes (its max_payload, or the bucket's value limit
    /// when smaller).
    pub limit: usize,
    /// Which limit: `max_payload` or `bucket`.
    pub by: String,
    /// The report's `summary` counts (pass, warn, fail, skip, error).
    pub summary: Value,
    /// The report's exit code.
    pub exit_code: Option<i64>,
}

/// The words for a report that does not fit, the same for `--cluster`'s
/// refusal and `watch`'s node.
pub fn too_large_said(size: usize, limit: usize, by: &str) -> String {
    match by {
        "bucket" => format!(
            "the report ({size} bytes) does not fit the {BUCKET} bucket's values ({limit} bytes)"
        ),
        _ => format!(
            "the report ({size} bytes) does not fit the server's max_payload ({limit} bytes)"
        ),
    }
}

impl TooLarge {
    /// What a reader says of the node: the words of `--cluster`, then the
    /// counts the agent kept.
    pub fn said(&self, written_at: &str) -> String {
        let n = |k: &str| self.summary.get(k).and_then(Value::as_u64).unwrap_or(0);
        format!(
            "{}; its run at {written_at}: {} pass, {} warn, {} fail, {} skip, {} error{}",
            too_large_said(self.size, self.limit, &self.by),
            n("pass"),
            n("warn"),
            n("fail"),
            n("skip"),
            n("error"),
            self.exit_code
                .map(|c| format!(", exit {c}"))
                .unwrap_or_default()
        )
    }
}

impl Entry {
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("an entry always serializes")
    }

    /// The entry that says the report did not fit: this one without its
    /// report, with its size, `limit` and counts.
    pub fn too_large(&self, size: usize, limit: usize, by: &str) -> Entry {
        Entry {
            report: Value::Null,
            too_large: Some(TooLarge {
                size,
                limit,
                by: by.to_owned(),
                summary: self.report.get("summary").cloned().unwrap_or(Value::Null),
                exit_code: self.report.get("exit_code").and_then(Value::as_i64),
            }),
            ..self.clone()
        }
    }

    /// Read the value under key `node` (outside data: strictly; the
    /// report must be `node`'s own JSON v1 report, unless it did not fit).
    pub fn parse(node: &str, bytes: &[u8]) -> Result<Entry, String> {
        let (mut e, report) = Entry::parse_held(node, bytes)?;
        if let Some(r) = report {
            e.report = serde_json::from_str(r.get())
                .map_err(|e| one_line(&format!("not an entry of the doctor's ({e})")))?;
        }
        Ok(e)
    }

    /// [`Entry::parse`] for a reader that holds the report as text: the
    /// entry with a null `report`, and the report as it was written
    /// (checked as JSON, never made a tree: at 1,024 nodes a reader holds
    /// 465 MB of them).
    pub fn parse_held(node: &str, bytes: &[u8]) -> Result<(Entry, Option<Box<RawValue>>), String> {
        if bytes.len() > MAX_ENTRY {
            return Err(format!(
                "an entry of {} bytes (more than 4 MiB)",
                bytes.len()
            ));
        }
        let raw: Stored = serde_json::from_slice(bytes)
            .map_err(|e| one_line(&format!("not an entry of the doctor's ({e})")))?;
        let mut e = Entry {
            node: raw.node,
            interval_ms: raw.interval_ms,
            written_at: raw.written_at,
            identity: raw.identity,
            report: Value::Null,
            too_large: raw.too_large,
        };
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
        e.identity = e.identity.and_then(super::identity::checked);
        let report = raw.report.filter(|r| r.get() != "null");
        match (&e.too_large, &report) {
            (Some(t), None) if t.size > t.limit => {}
            (Some(_), _) => return Err("a too-large entry that is not one".into()),
            (None, Some(r)) if report_node(r).as_deref() == Some(node) => {}
            (None, _) => return Err(format!("the report under {node} is not {node}'s")),
        }
        Ok((e, report))
    }

    pub fn interval(&self) -> Duration {
        Duration::from_millis(self.interval_ms)
    }
}

/// The bucket's bound for a cluster of `nodes`: two rounds of the
/// largest value each node may write ([`MAX_VALUE`]), [`MAX_BYTES`] at
/// least. Every node writes once an interval, so the last interval's
/// revisions, each node's latest among them, take at most one round; the
/// second is room for runs that end early or late and for history.
pub fn bound(nodes: usize) -> i64 {
    i64::try_from(nodes)
        .unwrap_or(i64::MAX)
        .saturating_mul(2 * i64::from(MAX_VALUE))
        .max(MAX_BYTES)
}

/// The stream of a KV bucket, as the KV layer lays it out, for a cluster
/// of `nodes`.
pub fn stream_config(nodes: usize) -> stream::Config {
    stream::Config {
        name: format!("KV_{BUCKET}"),
        description: Some("spx-doctor: each node agent's latest periodic report".into()),
        subjects: vec![format!("$KV.{BUCKET}.>")],
        max_messages_per_subject: HISTORY,
        max_bytes: bound(nodes),
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

/// The bucket, made when missing (an agent whose config names `nodes`),
/// its bound raised when below [`bound`]`(nodes)`. The note, when there is
/// one, says what was done to the bound or could not be (for the log).
pub async fn open_or_create(
    js: &jetstream::Context,
    nodes: usize,
) -> Result<(kv::Store, Option<String>), String> {
    let note = match js.get_stream(format!("KV_{BUCKET}")).await {
        Ok(s) => grow(js, s.cached_info().config.clone(), nodes).await,
        Err(_) => match make(js, nodes).await {
            Ok(note) => note,
            Err(e) if exists(&e) => None,
            Err(e) => return Err(one_line(&format!("cannot create the {BUCKET} bucket: {e}"))),
        },
    };
    let store = js
        .get_key_value(BUCKET)
        .await
        .map_err(|e| one_line(&format!("cannot open the {BUCKET} bucket: {e}")))?;
    Ok((store, note))
}

fn exists(e: &context::CreateStreamError) -> bool {
    matches!(e.kind(), context::CreateStreamErrorKind::JetStream(j)
        if j.error_code() == jetstream::ErrorCode::STREAM_NAME_EXIST)
}

/// What a bound below one round of `nodes` comes to.
fn short_said(bytes: i64, nodes: usize) -> String {
    format!(
        "it holds every node's latest report only while the {nodes} nodes' reports come to less than {bytes} bytes, and `spx-doctor watch` shows the rest unknown"
    )
}

/// Make the bucket for `nodes`; when the server will not hold that much
/// (its `max_file_store`, an account's limits), at [`MAX_BYTES`], with a
/// note saying so.
async fn make(
    js: &jetstream::Context,
    nodes: usize,
) -> Result<Option<String>, context::CreateStreamError> {
    match js.create_stream(stream_config(nodes)).await {
        Ok(_) => Ok(None),
        Err(e) if exists(&e) || bound(nodes) == MAX_BYTES => Err(e),
        Err(e) => {
            js.create_stream(stream_config(0)).await?;
            Ok(Some(one_line(&format!(
                "the server would not make the {BUCKET} bucket {} bytes large ({e}): made it {MAX_BYTES} bytes large; {}",
                bound(nodes),
                short_said(MAX_BYTES, nodes)
            ))))
        }
    }
}

/// Raise the bucket's bound (`config`, as the server holds it) to
/// [`bound`]`(nodes)` when below it; never lower it (another agent's config
/// may name more nodes).
async fn grow(js: &jetstream::Context, config: stream::Config, nodes: usize) -> Option<String> {
    let was = config.max_bytes;
    let want = bound(nodes);
    if was < 0 || was >= want {
        return None;
    }
    let raised = stream::Config {
        max_bytes: want,
        ..config
    };
    Some(one_line(&match js.update_stream(raised).await {
        Ok(_) => format!(
            "the {BUCKET} bucket held at most {was} bytes, less than two rounds of {nodes} nodes' largest reports: raised to {want}"
        ),
        Err(e) => format!(
            "cannot raise the {BUCKET} bucket's bound from {was} to {want} bytes ({e}); {}",
            short_said(was, nodes)
        ),
    }))
}

/// Who made the bucket again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Remade {
    /// This agent, with [`stream_config`]'s bounds (and a note when the
    /// server would take only [`MAX_BYTES`]).
    Here(Option<String>),
    /// Another agent, first.
    Elsewhere,
}

/// Make the bucket again after a write found it missing: with the same
/// bounds when it is still missing (another agent may have been first).
pub async fn remake(js: &jetstream::Context, nodes: usize) -> Result<(kv::Store, Remade), String> {
    let who = match js.get_stream(format!("KV_{BUCKET}")).await {
        Ok(_) => Remade::Elsewhere,
        Err(_) => match make(js, nodes).await {
            Ok(note) => Remade::Here(note),
            // Made between the two questions, by another agent.
            Err(e) if exists(&e) => Remade::Elsewhere,
            Err(e) => {
                return Err(one_line(&format!(
                    "cannot make the {BUCKET} bucket again: {e}"
                )))
            }
        },
    };
    let store = js
        .get_key_value(BUCKET)
        .await
        .map_err(|e| one_line(&format!("cannot open the {BUCKET} bucket: {e}")))?;
    Ok((store, who))
}

/// Write `value` as `node`'s latest revision, with `who` (the writing
/// agent) in its headers as well as in the entry, so a reader of the
/// history needs the headers alone. Waits for JetStream's acknowledgement.
pub async fn put(
    js: &jetstream::Context,
    node: &str,
    value: Bytes,
    who: Option<&AgentIdentity>,
) -> Result<(), context::PublishError> {
    let mut h = HeaderMap::new();
    if let Some(id) = who {
        super::identity::insert(&mut h, id);
    }
    js.publish_with_headers(format!("$KV.{BUCKET}.{node}"), h, value)
        .await?
        .await?;
    Ok(())
}

/// Whether `e`, a failed write's or open's error, says the bucket's stream
/// does not exist: the server's "no responders" to a KV put (no stream
/// takes the subject), or JetStream's "stream not found" (10059).
pub fn is_missing(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(p) = err.downcast_ref::<context::PublishError>() {
            if p.kind() == context::PublishErrorKind::StreamNotFound {
                return true;
            }
        }
        if let Some(g) = err.downcast_ref::<context::GetStreamError>() {
            if let context::GetStreamErrorKind::JetStream(j) = g.kind() {
                if j.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND {
                    return true;
                }
            }
        }
        next = err.source();
    }
    false
}

/// The subject JetStream announces the bucket's stream deleted on.
pub fn deleted_advisory() -> String {
    format!("$JS.EVENT.ADVISORY.STREAM.DELETED.KV_{BUCKET}")
}

/// What a reader says when the bucket is not there.
pub fn missing_said() -> String {
    format!("the bucket {BUCKET} does not exist; agents make it again on their next write")
}

/// The bucket as it is (a reader): never made here. `Ok(None)`: it does
/// not exist.
pub async fn open(js: &jetstream::Context) -> Result<Option<kv::Store>, String> {
    match js.get_key_value(BUCKET).await {
        Ok(s) => Ok(Some(s)),
        Err(e) if is_missing(&e) => Ok(None),
        Err(e) => Err(one_line(&format!(
            "cannot open the {BUCKET} bucket (it is made by the first agent that runs with an --interval): {e}"
        ))),
    }
}

/// One revision as a reader holds it.
#[derive(Clone, Debug)]
pub struct Revision {
    pub key: String,
    pub value: bytes::Bytes,
    /// When the server stored it.
    pub stored: SystemTime,
    pub revision: u64,
    pub put: bool,
}

impl Revision {
    pub fn of(e: &kv::Entry) -> Revision {
        Revision {
            key: e.key.clone(),
            value: e.value.clone(),
            stored: SystemTime::from(e.created),
            revision: e.revision,
            put: e.operation == kv::Operation::Put,
        }
    }
}

const KV_OPERATION: &str = "KV-Operation";

/// The node a subject of the bucket's is under.
fn key_of(subject: &str) -> Option<&str> {
    subject
        .strip_prefix("$KV.")?
        .strip_prefix(BUCKET)?
        .strip_prefix('.')
}

/// Whether a revision with this `KV-Operation` header is a put (not a
/// delete or purge).
fn is_put(op: Option<&str>) -> bool {
    !matches!(op, Some("DEL" | "PURGE"))
}

/// One revision as its headers tell it: the node, when it was stored,
/// whether it was a put (not a delete or purge), and who wrote it.
#[derive(Clone, Debug)]
pub struct Written {
    pub key: String,
    pub stored: SystemTime,
    pub put: bool,
    /// From the headers [`put`] writes (`None` in revisions written
    /// without them).
    pub identity: Option<AgentIdentity>,
}

/// What a reader takes from the bucket, in the order [`history`] gives it.
#[derive(Debug)]
pub enum Read {
    /// A revision's headers (every revision the bucket holds, oldest
    /// first).
    Written(Written),
    /// A node's latest revision, whole.
    Latest(Revision),
}

/// What the bucket holds, handed to `each` as it comes
/// (never gathered): first every revision's headers, oldest first, through
/// one headers-only ordered consumer (who wrote what, when: at most
/// [`HISTORY`] per node); then each node's latest revision whole, got by
/// its sequence; and the watch that goes on with each revision stored
/// after those (returned). Each answer within `step`, all of it by
/// `deadline`.
pub async fn history(
    js: &jetstream::Context,
    store: &kv::Store,
    deadline: Instant,
    step: Duration,
    mut each: impl FnMut(Read),
) -> Result<kv::Watch, String> {
    let late = || format!("no answer from JetStream about the {BUCKET} bucket in time");
    let left = || deadline.saturating_duration_since(Instant::now()).min(step);
    let s = tokio::time::timeout(left(), js.get_stream(format!("KV_{BUCKET}")))
        .await
        .map_err(|_| late())?
        .map_err(|e| one_line(&format!("cannot read the {BUCKET} bucket: {e}")))?;
    let failed = |e: &dyn std::fmt::Display| {
        one_line(&format!("cannot read the {BUCKET} bucket's history: {e}"))
    };
    // Each node's latest revision as the headers told it, and the last
    // revision read: the second pass gets each of those by its sequence
    // (a direct get), and the watch goes on after the last. (A consumer
    // delivering the last revision per subject would do both, but Debian's
    // nats-server 2.9.10 left out a node's latest after a restart.)
    let mut latest: std::collections::HashMap<String, u64> = Default::default();
    let mut last = 0;
    // Nothing held: nothing to read. (The stream's count as it was read:
    // an ordered consumer's own count is not known when it is made.)
    if s.cached_info().state.messages > 0 {
        let headers = tokio::time::timeout(
            left(),
            s.create_consumer(consumer::push::OrderedConfig {
                deliver_subject: js.client().new_inbox(),
                description: Some("spx-doctor: the bucket's writers".into()),
                filter_subject: format!("$KV.{BUCKET}.>"),
                headers_only: true,
                deliver_policy: consumer::DeliverPolicy::All,
                replay_policy: consumer::ReplayPolicy::Instant,
                ..Default::default()
            }),
        )
        .await
        .map_err(|_| late())?
        .map_err(|e| failed(&e))?;
        let mut messages = tokio::time::timeout(left(), headers.messages())
            .await
            .map_err(|_| late())?
            .map_err(|e| failed(&e))?;
        loop {
            let m = tokio::time::timeout(left(), messages.next())
                .await
                .map_err(|_| late())?
                .ok_or_else(|| format!("the read of the {BUCKET} bucket's history ended"))?
                .map_err(|e| failed(&e))?;
            let info = m.info().map_err(|e| failed(&e))?;
            let (stored, pending) = (SystemTime::from(info.published), info.pending);
            last = info.stream_sequence;
            let get = |name: &str| {
                m.headers
                    .as_ref()
                    .and_then(|h| h.get(name))
                    .map(|v| v.as_str().to_owned())
            };
            if let Some(key) = key_of(&m.subject) {
                latest.insert(key.to_owned(), last);
                each(Read::Written(Written {
                    key: key.to_owned(),
                    stored,
                    put: is_put(get(KV_OPERATION).as_deref()),
                    identity: super::identity::from_headers(get),
                }));
            }
            if pending == 0 {
                break;
            }
        }
    }
    let mut sequences: Vec<u64> = latest.into_values().collect();
    sequences.sort_unstable();
    // A few at a time, handed on in the order they were stored.
    let mut gets =
        futures_util::stream::iter(sequences.into_iter().map(|q| s.direct_get(q))).buffered(32);
    while let Some(got) = tokio::time::timeout(left(), gets.next())
        .await
        .map_err(|_| late())?
    {
        match got {
            Ok(m) => {
                if let Some(key) = key_of(&m.subject) {
                    each(Read::Latest(Revision {
                        key: key.to_owned(),
                        put: is_put(m.headers.get(KV_OPERATION).map(|v| v.as_str())),
                        value: m.payload,
                        stored: SystemTime::from(m.time),
                        revision: m.sequence,
                    }));
                }
            }
            // Gone since (the bucket's bound): a newer one comes through
            // the watch.
            Err(e) if e.kind() == stream::DirectGetErrorKind::NotFound => {}
            Err(e) => return Err(failed(&e)),
        }
    }
    drop(gets);
    let watch = tokio::time::timeout(left(), store.watch_all_from_revision(last + 1))
        .await
        .map_err(|_| late())?
        .map_err(|e| one_line(&format!("cannot watch the {BUCKET} bucket: {e}")))?;
    Ok(watch)
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
        // A reader holds the report as it was written, as text.
        let (held, report) = Entry::parse_held("n1", &e_json()).unwrap();
        assert!(held.report.is_null());
        let report = report.expect("the report");
        let tree: Value = serde_json::from_str(report.get()).unwrap();
        assert_eq!(tree, back.report);
        // An array in the report's field order is not a report.
        let mut v: Value = serde_json::from_slice(&e_json()).unwrap();
        v["report"] = serde_json::json!(["n1"]);
        let array = serde_json::to_vec(&v).unwrap();
        assert!(Entry::parse_held("n1", &array).is_err());
        assert!(Entry::parse("n1", &array).is_err());
    }

    fn e_json() -> Vec<u8> {
        entry("n1", "n1")
    }

    #[test]
    fn a_report_that_does_not_fit_leaves_a_small_entry_saying_so() {
        let full = Entry::parse("n1", &e_json()).unwrap();
        let mut report = full.report.clone();
        report["summary"] = json!({"pass": 12, "warn": 1, "fail": 0, "skip": 3, "error": 1});
        report["exit_code"] = json!(2);
        let full = Entry { report, ..full };
        let small = full.too_large(41_233, 8192, "max_payload");
        let back = Entry::parse("n1", &small.to_json()).unwrap();
        assert!(back.report.is_null());
        let t = back.too_large.unwrap();
        assert_eq!(
            t.said(&back.written_at),
            "the report (41233 bytes) does not fit the server's max_payload (8192 bytes); its run at 2026-01-01T00:00:00.000Z: 12 pass, 1 warn, 0 fail, 3 skip, 1 error, exit 2"
        );
        assert!(small.to_json().len() < 1024, "{}", small.to_json().len());
        // A report of null without saying why is not an entry.
        let mut bad = full.clone();
        bad.report = Value::Null;
        assert!(Entry::parse("n1", &bad.to_json()).is_err());
    }

    #[test]
    fn the_bucket_is_bounded_and_kv_shaped() {
        let c = stream_config(3);
        assert_eq!(c.name, "KV_spx-doctor");
        assert_eq!(c.subjects, ["$KV.spx-doctor.>"]);
        assert_eq!(c.max_messages_per_subject, HISTORY);
        assert!(c.max_bytes > 0 && c.max_message_size > 0);
        assert!(c.allow_rollup && c.deny_delete && c.allow_direct);
    }
}
