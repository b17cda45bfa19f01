//! One simulated agent: its own NATS connection and node name, the
//! subjects the agent answers (`spinifex.doctor.run` and its node's own),
//! the agent's own scheduler (`src/agent/scheduler.rs`, compiled here as it
//! is: one run at a time, shared, bounded per minute, periodic runs with a
//! phase), and the agent's answers ([`crate::answer`]). A "run" takes the
//! node's recorded run time instead of probing anyone, then answers with
//! the node's re-judged report; a periodic run writes the report into the
//! doctor's bucket and publishes what changed since the last one, as the
//! agent does (`src/bus/bucket.rs`, `src/bus/events.rs`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use async_nats::jetstream::kv;
use async_nats::{Client, HeaderMap, Subject};
use bytes::Bytes;
use futures_util::StreamExt;

use crate::answer::{report_for, Answer, Speaker};
use crate::bus::events::{self, Seen};
use crate::bus::held::{self, Held, HeldReport};
use crate::bus::wire::{
    self, Fetch, RefusalKind, Request, RunKey, TraceParent, HEADER_TRACEPARENT,
};
use crate::bus::{backoff, bucket, one_line, NatsConfig};
use crate::scheduler::{Job, Limits, Offered, Periodic, Refused, Scheduler, Start, Why};

/// A periodic run's timeout, as the agent's (`PERIODIC_TIMEOUT`).
const PERIODIC_TIMEOUT: Duration = Duration::from_secs(8);
/// One bucket write or open, at most this long (the agent's bound).
const BUS_WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// Requests read ahead per subscription (the agent's bound).
const SUBSCRIPTION_CAPACITY: usize = 4096;

/// One node of the swarm.
pub struct NodeSpec {
    pub name: String,
    /// The node's report of a default run, compact JSON; the flapping
    /// node has two, which its periodic runs take in turn.
    pub reports: Vec<Bytes>,
    /// Each report's checks, as transitions compare them.
    pub seen: Vec<BTreeMap<String, Seen>>,
    /// Between periodic runs (zero: none) and the first run's phase.
    pub interval: Duration,
    pub phase: Duration,
    /// How long a run takes.
    pub run_time: Duration,
}

/// What every node shares.
pub struct Common {
    pub nats: NatsConfig,
    pub limits: Limits,
    pub counts: Counts,
    /// Refuse `inline_max_bytes` as an agent from before it does.
    pub before_inline_max: bool,
    /// The swarm's nodes (the bucket is made for them, as an agent makes
    /// it for its config's).
    pub nodes: usize,
}

/// What the swarm did, over all nodes.
#[derive(Default)]
pub struct Counts {
    pub connected: AtomicU64,
    pub requests: AtomicU64,
    pub refused: AtomicU64,
    pub reports: AtomicU64,
    pub report_bytes: AtomicU64,
    pub kv_writes: AtomicU64,
    pub kv_bytes: AtomicU64,
    pub kv_failed: AtomicU64,
    pub events: AtomicU64,
}

fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

struct Waiter {
    reply: Subject,
    request: String,
    trace: Option<TraceParent>,
    inline_max: Option<usize>,
}

/// Connect as node `spec.name` (retrying with the agent's backoff until
/// `stop`), then answer until `stop`.
pub async fn run(
    spec: NodeSpec,
    common: Arc<Common>,
    gate: Arc<tokio::sync::Semaphore>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let client = {
        let mut attempt = 0usize;
        loop {
            attempt += 1;
            let permit = gate.acquire().await;
            let connected = common
                .nats
                .connect(
                    &format!("spx-swarm agent {}", spec.name),
                    Duration::from_secs(10),
                    |o| o.subscription_capacity(SUBSCRIPTION_CAPACITY),
                )
                .await;
            drop(permit);
            match connected {
                Ok(c) => break c,
                Err(f) => {
                    if attempt == 1 || attempt.is_multiple_of(10) {
                        eprintln!(
                            "spx-swarm: {}: cannot connect: {} (attempt {attempt})",
                            spec.name, f.detail
                        );
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(backoff(attempt + 1)) => {}
                        _ = stop.changed() => return,
                    }
                }
            }
        }
    };
    let subscribed = async {
        let all = client.subscribe(wire::SUBJECT_ALL).await?;
        let mine = client.subscribe(wire::node_subject(&spec.name)).await?;
        let fetches = client
            .subscribe(wire::node_fetch_subject(&spec.name))
            .await?;
        client.flush().await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>((all, mine, fetches))
    };
    let (mut all, mut mine, mut fetches) = match subscribed.await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("spx-swarm: {}: cannot subscribe: {e}", spec.name);
            return;
        }
    };
    add(&common.counts.connected, 1);
    let mut node = Node {
        speaker: Speaker {
            node: spec.name.clone(),
            runs_per_minute: common.limits.runs_per_minute,
            identity: crate::answer::identity_of(&spec.name, SystemTime::now()),
        },
        scheduler: Scheduler::new(common.limits),
        running: None,
        wake: None,
        client: &client,
        common: &common,
        store: None,
        last: None,
        periodic_runs: 0,
        held: Held::default(),
        spec: &spec,
    };
    if !spec.interval.is_zero() {
        let p = Periodic {
            key: default_key(),
            every: spec.interval,
            timeout: PERIODIC_TIMEOUT,
            phase: spec.phase,
        };
        // The first periodic run at the phase, not at once: a swarm
        // started in one instant does not write N reports in one second.
        node.scheduler =
            Scheduler::new(common.limits).with_periodic(p, Instant::now() + spec.phase);
    }
    node.tick().await;
    loop {
        let wake = node.wake;
        let ends = node.running.as_ref().map(|(at, _)| *at);
        tokio::select! {
            m = all.next() => match m {
                Some(msg) => node.request(msg).await,
                None => break,
            },
            m = mine.next() => match m {
                Some(msg) => node.request(msg).await,
                None => break,
            },
            m = fetches.next() => match m {
                Some(msg) => node.fetch(msg).await,
                None => break,
            },
            _ = async { tokio::time::sleep_until(ends.expect("guarded").into()).await }, if ends.is_some() => {
                node.finished().await;
            }
            _ = async { tokio::time::sleep_until(wake.expect("guarded").into()).await }, if wake.is_some() => {}
            _ = stop.changed() => break,
        }
        node.tick().await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), client.flush()).await;
}

/// What a periodic run measures: the default set, as a plain run.
fn default_key() -> RunKey {
    RunKey {
        checks: Vec::new(),
        skips: Vec::new(),
        profile: None,
        sample: Duration::from_secs(1),
        ovn_read_by: None,
        path: None,
    }
}

struct Node<'a> {
    spec: &'a NodeSpec,
    speaker: Speaker,
    scheduler: Scheduler<Waiter>,
    /// The run in progress: when it ends, and what it measures.
    running: Option<(Instant, Start)>,
    wake: Option<Instant>,
    client: &'a Client,
    common: &'a Common,
    store: Option<kv::Store>,
    /// The last periodic report's checks.
    last: Option<usize>,
    periodic_runs: usize,
    held: Held,
}

/// Where a request's answer goes, and the trace it came in (none without a
/// reply subject: nobody to answer).
fn addressed(msg: &async_nats::Message) -> Option<(Subject, Option<TraceParent>)> {
    let reply = msg.reply.clone()?;
    let trace = msg
        .headers
        .as_ref()
        .and_then(|h| h.get(HEADER_TRACEPARENT))
        .and_then(|v| TraceParent::parse(v.as_str()));
    Some((reply, trace))
}

fn span() -> [u8; 8] {
    let n = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        | 1;
    n.to_le_bytes()
}

impl Node<'_> {
    async fn send(&self, to: Subject, a: Answer) {
        let mut h = HeaderMap::new();
        for (k, v) in a.headers {
            h.insert(k, v.as_str());
        }
        let _ = self.client.publish_with_headers(to, h, a.body).await;
    }

    async fn request(&mut self, msg: async_nats::Message) {
        add(&self.common.counts.requests, 1);
        let Some((reply, trace)) = addressed(&msg) else {
            return;
        };
        let parsed = match Request::parse(&msg.payload) {
            Ok(r) if self.common.before_inline_max && r.inline_max.is_some() => {
                Err((Some(r.id), wire::before_inline_max_refusal()))
            }
            other => other,
        };
        let req = match parsed {
            Ok(r) => r,
            Err((id, r)) => {
                add(&self.common.counts.refused, 1);
                let a = self
                    .speaker
                    .refusal(id, trace, span(), r.kind, r.message, None);
                self.send(reply, a).await;
                return;
            }
        };
        let now = Instant::now();
        let job = Job {
            key: req.key(),
            deadline: now + req.timeout,
            waiter: Waiter {
                reply: reply.clone(),
                request: req.id.clone(),
                trace,
                inline_max: req.inline_max,
            },
            from: Some(crate::scheduler::requester(reply.as_str())),
        };
        match self.scheduler.offer(job, now) {
            Offered::Joined | Offered::Queued => {
                let a = self.speaker.accepted(&req.id, trace, span());
                self.send(reply, a).await;
            }
            Offered::Refused(w, r) => self.refused(w, r).await,
        }
    }

    /// A fetch, as the agent answers it: the held report once, silence
    /// for an id it does not hold, a typed refusal outside the vocabulary.
    async fn fetch(&mut self, msg: async_nats::Message) {
        let Some((reply, trace)) = addressed(&msg) else {
            return;
        };
        let fetch = match Fetch::parse(&msg.payload) {
            Ok(f) => f,
            Err((id, r)) => {
                add(&self.common.counts.refused, 1);
                let a = self
                    .speaker
                    .refusal(id, trace, span(), r.kind, r.message, None);
                self.send(reply, a).await;
                return;
            }
        };
        if let Some(h) = self.held.take(&fetch.id, Instant::now()) {
            self.deliver(reply, fetch.id, trace, h).await;
        }
    }

    /// A report to its requester, or the typed refusal when it does not
    /// fit the server's max_payload.
    async fn deliver(
        &mut self,
        reply: Subject,
        request: String,
        trace: Option<TraceParent>,
        report: HeldReport,
    ) {
        let len = report.body.len();
        let a = self
            .speaker
            .report(&request, trace, span(), report.shared, report.body);
        let mut h = HeaderMap::new();
        for (k, v) in a.headers {
            h.insert(k, v.as_str());
        }
        let sent = self
            .client
            .publish_with_headers(reply.clone(), h, a.body)
            .await;
        match sent {
            Ok(()) => {
                add(&self.common.counts.reports, 1);
                add(&self.common.counts.report_bytes, len as u64);
            }
            Err(e) if e.kind() == async_nats::client::PublishErrorKind::MaxPayloadExceeded => {
                let message = format!(
                    "the report ({len} bytes) does not fit the server's max_payload ({} bytes): {e}",
                    self.client.max_payload()
                );
                let a = self.speaker.refusal(
                    Some(request),
                    trace,
                    span(),
                    RefusalKind::TooLarge,
                    message,
                    None,
                );
                self.send(reply, a).await;
            }
            Err(_) => {}
        }
    }

    async fn refused(&mut self, w: Waiter, r: Refused) {
        add(&self.common.counts.refused, 1);
        let kind = match r.why {
            Why::Busy => RefusalKind::Busy,
            Why::RateLimited => RefusalKind::RateLimited,
        };
        let a = self.speaker.refusal(
            Some(w.request),
            w.trace,
            span(),
            kind,
            r.message,
            r.retry_after.map(|d| d.as_millis() as u64),
        );
        self.send(w.reply, a).await;
    }

    async fn tick(&mut self) {
        let t = self.scheduler.tick(Instant::now());
        for (w, r) in t.refused {
            self.refused(w, r).await;
        }
        if let Some(start) = t.start {
            let took = self.spec.run_time.min(start.timeout);
            self.running = Some((Instant::now() + took, start));
        }
        self.wake = t.wake;
    }

    /// The report a periodic run (or a run sharing one) makes now.
    fn current(&self) -> usize {
        self.periodic_runs % self.spec.reports.len()
    }

    async fn finished(&mut self) {
        let Some((_, start)) = self.running.take() else {
            return;
        };
        let (waiters, periodic) = self.scheduler.finish_run();
        let which = self.current();
        if periodic {
            self.periodic_runs += 1;
        }
        let body = report_for(&self.spec.reports[which], &start.key);
        let shared = waiters.len();
        for w in waiters {
            let report = HeldReport {
                kind: wire::REPLY_REPORT,
                body: body.clone(),
                shared,
            };
            if held::inline(body.len(), w.inline_max) {
                self.deliver(w.reply, w.request, w.trace, report).await;
            } else {
                let a = self.speaker.held(&w.request, w.trace, span(), body.len());
                self.held.hold(w.request, report, Instant::now());
                self.send(w.reply, a).await;
            }
        }
        if periodic {
            self.periodic(which).await;
        }
    }

    /// A periodic run ended: the report into the bucket, what changed as
    /// events.
    async fn periodic(&mut self, which: usize) {
        let node = &self.spec.name;
        let now = &self.spec.seen[which];
        if let Some(before) = self.last.map(|i| &self.spec.seen[i]) {
            let since = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
            for t in events::transitions(Some(node), Some(before), now, &since) {
                let body = serde_json::to_vec(&t).expect("an event always serializes");
                if self
                    .client
                    .publish(events::subject(node), Bytes::from(body))
                    .await
                    .is_ok()
                {
                    add(&self.common.counts.events, 1);
                }
            }
        }
        self.last = Some(which);
        let js = async_nats::jetstream::new(self.client.clone());
        if self.store.is_none() {
            let opened = bucket::open_or_create(&js, self.common.nodes);
            match tokio::time::timeout(BUS_WRITE_TIMEOUT, opened).await {
                Ok(Ok((s, note))) => {
                    if let Some(note) = note {
                        eprintln!("spx-swarm: {node}: {note}");
                    }
                    self.store = Some(s);
                }
                Ok(Err(e)) => eprintln!("spx-swarm: {node}: {e}"),
                Err(_) => eprintln!("spx-swarm: {node}: no answer from JetStream about the bucket"),
            }
        }
        if self.store.is_none() {
            add(&self.common.counts.kv_failed, 1);
            return;
        }
        let entry = entry(
            node,
            self.spec.interval,
            SystemTime::now(),
            &self.spec.reports[which],
        );
        let len = entry.len() as u64;
        // As an agent writes it; the swarm's entries carry no identity.
        let put = bucket::put(&js, node, entry, None);
        let put = tokio::time::timeout(BUS_WRITE_TIMEOUT, put).await;
        match put {
            Ok(Ok(_)) => {
                add(&self.common.counts.kv_writes, 1);
                add(&self.common.counts.kv_bytes, len);
            }
            Ok(Err(e)) => {
                if self
                    .common
                    .counts
                    .kv_failed
                    .fetch_add(1, Ordering::Relaxed)
                    .is_multiple_of(100)
                {
                    eprintln!(
                        "spx-swarm: {node}: cannot write the bucket: {}",
                        one_line(&e.to_string())
                    );
                }
            }
            Err(_) => add(&self.common.counts.kv_failed, 1),
        }
    }
}

/// The bucket entry an agent writes (`bucket::Entry`'s JSON), with the
/// report's bytes as they are, not parsed again.
pub fn entry(node: &str, interval: Duration, at: SystemTime, report: &[u8]) -> Bytes {
    let head = format!(
        "{{\"node\":{},\"interval_ms\":{},\"written_at\":\"{}\",\"report\":",
        serde_json::to_string(node).expect("a string serializes"),
        interval.as_millis(),
        humantime::format_rfc3339_millis(at)
    );
    let mut out = Vec::with_capacity(head.len() + report.len() + 1);
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(report);
    out.push(b'}');
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_as_the_agents() {
        let report = br#"{"schema_version":1,"node":"n7","checks":[]}"#;
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let bytes = entry("n7", Duration::from_secs(60), at, report);
        let e = bucket::Entry::parse("n7", &bytes).expect("the agent's reader takes it");
        assert_eq!(e.interval(), Duration::from_secs(60));
        assert_eq!(e.report["node"], "n7");
        assert_eq!(e.written_at, "2027-01-15T08:00:00.000Z");
    }
}
