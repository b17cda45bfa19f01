//! What the agent writes after each periodic run, in a task of its own so
//! the agent's loop never waits on the bus: the transitions as events, and
//! the node's entry in the doctor's bucket ([`bucket`]). Only the latest
//! run waits to be written; one still waiting when the next ends is
//! replaced by it.
//!
//! The bucket is state the agents own, and this is where they keep it:
//! - a write that finds the bucket missing (deleted by hand, or by a
//!   JetStream clean-up) makes it again with the same bounds and writes
//!   again at once, within the same interval, said once in the log;
//! - a report that does not fit the server's max_payload is written as a
//!   small entry saying so (its size, the limit, the report's counts), so
//!   `watch` shows the node `too-large`, never as a node without a report;
//! - a write with no acknowledgement is a sign the connection may be dead:
//!   a PING must come back within [`PONG_WITHIN`], else the client
//!   reconnects at once instead of waiting for its next two pings.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use async_nats::jetstream::{self, kv};
use async_nats::Client;
use bytes::Bytes;
use serde_json::Value;
use spx_checks::cluster::AgentIdentity;

use crate::bus::bucket::{self, Entry, Remade};
use crate::bus::events::{self, Seen};
use crate::bus::one_line;
use crate::render::journal::{log, Priority};

/// One write to the bucket, or one event, at most this long.
pub const BUS_WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// After a write without acknowledgement, a PING's PONG within this, or
/// the connection is taken for dead.
pub const PONG_WITHIN: Duration = Duration::from_secs(1);

/// A periodic run's report, to be written.
#[derive(Clone, Debug)]
pub struct Job {
    pub doc: Value,
}

/// The hand-over to the writer task: only the latest job waits.
pub struct Writer {
    tx: tokio::sync::watch::Sender<Option<Job>>,
}

impl Writer {
    /// Start the writer task on the current runtime.
    /// `nodes`: how many the config names (the bucket is made, or its
    /// bound raised, to hold two rounds of theirs).
    pub fn spawn(
        client: Client,
        node: String,
        nodes: usize,
        interval: Duration,
        me: AgentIdentity,
    ) -> Writer {
        let (tx, rx) = tokio::sync::watch::channel(None);
        tokio::spawn(async move {
            let mut w = State::new(client, node, nodes, interval, me);
            w.open().await;
            let mut rx = rx;
            while rx.changed().await.is_ok() {
                let job = rx.borrow_and_update().clone();
                if let Some(job) = job {
                    w.write(&job).await;
                }
            }
        });
        Writer { tx }
    }

    /// Hand a periodic run's report over; never waits.
    pub fn offer(&self, doc: Value) {
        let _ = self.tx.send(Some(Job { doc }));
    }
}

/// Which of the bucket's states were said, so each is said once.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Said {
    /// A write failed (said once until one works).
    pub failing: bool,
    /// The report does not fit (said once until it fits).
    pub too_large: bool,
    /// The connection was taken for dead (said once until a write works).
    pub dead: bool,
}

struct State {
    client: Client,
    js: jetstream::Context,
    node: String,
    /// The nodes the config names.
    nodes: usize,
    interval: Duration,
    me: AgentIdentity,
    store: Option<kv::Store>,
    /// Each check's result in the last periodic report (from the bucket
    /// when the agent starts), to tell what changed.
    last: Option<BTreeMap<String, Seen>>,
    said: Said,
}

/// What a put came to.
enum Put {
    Done,
    Missing,
    Failed(String),
    NoAck,
}

impl State {
    fn new(
        client: Client,
        node: String,
        nodes: usize,
        interval: Duration,
        me: AgentIdentity,
    ) -> State {
        State {
            js: jetstream::new(client.clone()),
            client,
            node,
            nodes,
            interval,
            me,
            store: None,
            last: None,
            said: Said::default(),
        }
    }

    /// Open (or make) the bucket, and read this node's last report from
    /// it, so a transition across a restart of the agent is still seen.
    async fn open(&mut self) {
        let opened = tokio::time::timeout(
            BUS_WRITE_TIMEOUT,
            bucket::open_or_create(&self.js, self.nodes),
        )
        .await;
        let store = match opened {
            Ok(Ok((s, note))) => {
                if let Some(note) = note {
                    log(Priority::Notice, &note);
                }
                s
            }
            Ok(Err(e)) => {
                log(
                    Priority::Warning,
                    &format!("{e}; retrying after the next periodic run"),
                );
                return;
            }
            Err(_) => {
                log(
                    Priority::Warning,
                    &format!(
                        "no answer from JetStream about the {} bucket within {} s; retrying after the next periodic run",
                        bucket::BUCKET,
                        BUS_WRITE_TIMEOUT.as_secs()
                    ),
                );
                return;
            }
        };
        if self.last.is_none() {
            if let Ok(Ok(Some(value))) =
                tokio::time::timeout(BUS_WRITE_TIMEOUT, store.get(self.node.as_str())).await
            {
                if let Ok(e) = Entry::parse(&self.node, &value) {
                    let checks = e.report.get("checks").and_then(Value::as_array);
                    self.last = checks.map(|c| events::seen(c));
                }
            }
        }
        log(
            Priority::Info,
            &format!(
                "writing each periodic report to the {} bucket (key {}){}",
                bucket::BUCKET,
                self.node,
                if self.last.is_some() {
                    ", after the one it holds"
                } else {
                    ""
                }
            ),
        );
        self.store = Some(store);
    }

    /// A periodic run ended: what changed as events, then its entry.
    async fn write(&mut self, job: &Job) {
        self.publish_transitions(&job.doc).await;
        if self.store.is_none() {
            self.open().await;
        }
        let Some(store) = self.store.clone() else {
            return;
        };
        let Some(bytes) = self.entry(&store, &job.doc).await else {
            return;
        };
        let outcome = match self.put(bytes.clone()).await {
            Put::Missing => self.remade_then_put(bytes).await,
            other => other,
        };
        self.said_of(outcome).await;
    }

    async fn publish_transitions(&mut self, doc: &Value) {
        let started = doc
            .get("started_at")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let now = doc
            .get("checks")
            .and_then(Value::as_array)
            .map(|c| events::seen(c))
            .unwrap_or_default();
        if let Some(before) = &self.last {
            for t in events::transitions(Some(&self.node), Some(before), &now, &started) {
                let body = serde_json::to_vec(&t).expect("an event always serializes");
                let sent = tokio::time::timeout(
                    BUS_WRITE_TIMEOUT,
                    self.client
                        .publish(events::subject(&self.node), Bytes::from(body)),
                )
                .await;
                if let Ok(Err(e)) = sent {
                    log(
                        Priority::Warning,
                        &one_line(&format!("cannot publish a transition of {}: {e}", t.check)),
                    );
                }
                log(
                    Priority::Notice,
                    &format!(
                        "{}: {} -> {} ({})",
                        t.check,
                        t.code_before.as_deref().unwrap_or("none"),
                        t.code_after,
                        t.status
                    ),
                );
            }
        }
        self.last = Some(now);
    }

    /// The entry's bytes: the whole report, or the small entry saying it
    /// does not fit (None: not even that fits).
    async fn entry(&mut self, store: &kv::Store, doc: &Value) -> Option<Bytes> {
        let entry = Entry {
            node: self.node.clone(),
            interval_ms: self.interval.as_millis() as u64,
            written_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            identity: Some(self.me.clone()),
            report: doc.clone(),
            too_large: None,
        };
        let bytes = entry.to_json();
        let bucket_limit = store
            .status()
            .await
            .ok()
            .map(|s| s.info.config.max_message_size)
            .filter(|m| *m > 0)
            .map_or(usize::MAX, |m| m as usize);
        let (limit, by) = limit(self.client.max_payload(), bucket_limit);
        if bytes.len() <= limit {
            if std::mem::take(&mut self.said.too_large) {
                log(
                    Priority::Notice,
                    &format!(
                        "this node's report fits the bucket again ({} bytes, the limit {limit}): writing it whole",
                        bytes.len()
                    ),
                );
            }
            return Some(Bytes::from(bytes));
        }
        let small = entry.too_large(bytes.len(), limit, by).to_json();
        if !std::mem::replace(&mut self.said.too_large, true) {
            log(
                Priority::Warning,
                &format!(
                    "{}: writing a small entry in its place ({} bytes: the size, the limit and the report's counts), so `spx-doctor watch` shows this node as too-large; raise max_payload in nats.conf, or run fewer checks (said once until it fits)",
                    bucket::too_large_said(bytes.len(), limit, by),
                    small.len()
                ),
            );
        }
        if small.len() > limit {
            return None;
        }
        Some(Bytes::from(small))
    }

    async fn put(&self, bytes: Bytes) -> Put {
        let put = bucket::put(&self.js, &self.node, bytes, Some(&self.me));
        match tokio::time::timeout(BUS_WRITE_TIMEOUT, put).await {
            Ok(Ok(_)) => Put::Done,
            Ok(Err(e)) if bucket::is_missing(&e) => Put::Missing,
            Ok(Err(e)) => Put::Failed(one_line(&e.to_string())),
            Err(_) => Put::NoAck,
        }
    }

    /// The bucket is gone: make it again with the same bounds (or find it
    /// made by another agent), then write at once.
    async fn remade_then_put(&mut self, bytes: Bytes) -> Put {
        let remade =
            tokio::time::timeout(BUS_WRITE_TIMEOUT, bucket::remake(&self.js, self.nodes)).await;
        let (store, who) = match remade {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return Put::Failed(e),
            Err(_) => return Put::NoAck,
        };
        let c = bucket::stream_config(self.nodes);
        log(
            Priority::Notice,
            &match who {
                Remade::Here(None) => format!(
                    "the {} bucket was gone (deleted?): made it again with the same bounds ({} revisions per node, {} bytes per value, {} bytes in all) and wrote this node's report",
                    bucket::BUCKET,
                    c.max_messages_per_subject,
                    c.max_message_size,
                    c.max_bytes
                ),
                Remade::Here(Some(note)) => format!(
                    "the {} bucket was gone (deleted?): {note}; wrote this node's report",
                    bucket::BUCKET
                ),
                Remade::Elsewhere => format!(
                    "the {} bucket was gone (deleted?) and another agent made it again: writing this node's report there",
                    bucket::BUCKET
                ),
            },
        );
        let outcome = self.put(bytes).await;
        self.store = Some(store);
        outcome
    }

    async fn said_of(&mut self, outcome: Put) {
        let failed = match outcome {
            Put::Done => {
                if std::mem::take(&mut self.said.failing) {
                    log(
                        Priority::Notice,
                        &format!("writing to the {} bucket again", bucket::BUCKET),
                    );
                }
                self.said.dead = false;
                return;
            }
            Put::Missing => format!("the {} bucket does not exist", bucket::BUCKET),
            Put::Failed(e) => e,
            Put::NoAck => {
                self.check_alive().await;
                format!(
                    "no acknowledgement within {} s",
                    BUS_WRITE_TIMEOUT.as_secs()
                )
            }
        };
        if !std::mem::replace(&mut self.said.failing, true) {
            log(
                Priority::Warning,
                &format!(
                    "cannot write this node's report to the {} bucket: {failed} (said once until it works)",
                    bucket::BUCKET
                ),
            );
        }
    }

    /// A write got no acknowledgement: if a PING gets no PONG either, the
    /// connection is dead; reconnect now.
    async fn check_alive(&mut self) {
        if self.client.connection_state() != async_nats::connection::State::Connected {
            return;
        }
        if let Ok(Ok(())) = tokio::time::timeout(PONG_WITHIN, self.client.flush()).await {
            return;
        }
        if !std::mem::replace(&mut self.said.dead, true) {
            log(
                Priority::Warning,
                &format!(
                    "no acknowledgement from JetStream within {} s and no PONG within {} s: the connection to NATS may be dead; reconnecting now",
                    BUS_WRITE_TIMEOUT.as_secs(),
                    PONG_WITHIN.as_secs()
                ),
            );
        }
        let _ = self.client.force_reconnect().await;
    }
}

/// What an entry must fit: the server's max_payload, or the bucket's
/// value limit when that is smaller, and which one it is.
pub fn limit(max_payload: usize, bucket_values: usize) -> (usize, &'static str) {
    if bucket_values < max_payload {
        (bucket_values, "bucket")
    } else {
        (max_payload, "max_payload")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smaller_limit_is_the_one_said() {
        assert_eq!(limit(1 << 20, 1 << 20), (1 << 20, "max_payload"));
        assert_eq!(limit(8192, 1 << 20), (8192, "max_payload"));
        assert_eq!(limit(8 << 20, 1 << 20), (1 << 20, "bucket"));
        assert_eq!(limit(8192, usize::MAX), (8192, "max_payload"));
    }
}
