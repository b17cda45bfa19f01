//! `spx-doctor agent`: the doctor as a service on every node, answering
//! run requests on Spinifex's NATS the way the daemon answers
//! `spinifex.node.status`.
//!
//! It connects as the daemon does (its own `[nodes.<node>.nats]`: host,
//! TLS against `cacert`, the `acl` token), retries with backoff until the
//! bus is there and reconnects the same way when it goes, and says every
//! change of state on stderr, which is the journal under systemd. It
//! answers `spinifex.doctor.run` (every agent, no queue group) and
//! `spinifex.doctor.<node>.run`. A request ([`wire::Request`]) is read
//! strictly; a refusal is a typed error answer. Accepted requests get an
//! acknowledgement at once, then the node's JSON v1 report, made by the
//! same code as `spx-doctor --format json` ([`crate::node_report`]), or a
//! typed error when it does not fit the server's max_payload. Runs are
//! scheduled by [`scheduler`]: one at a time, shared, bounded per minute.
//!
//! Every `--interval` (`[doctor] interval`, default 60 s; 0: never) it
//! also runs the default set by itself, start to start, sharing the
//! sample window with requests: the first at once, the second at a fixed
//! phase drawn from the node's name (within one interval) and the rest one
//! interval apart, so agents started together spread their runs. After each periodic run it writes the
//! report into the doctor's JetStream bucket ([`bucket`]: key = node,
//! with its interval and identity), publishes a [`Transition`](crate::bus::events::Transition) on
//! `spinifex.doctor.events.<node>` for every check whose code changed
//! since the last periodic report (the bucket's, across restarts), both
//! from a task of their own ([`writer`], which also makes a deleted bucket
//! again), and, when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, hands the run's
//! series as OTLP metrics ([`crate::otlp`]) to a bounded queue that a
//! thread of its own sends ([`telemetry`]): a mute collector never holds a
//! run back.
//!
//! Every answer carries the agent's identity ([`identity`]); the agent
//! answers `spinifex.doctor.<node>.identity` and asks there itself, at
//! start and every interval, logging an error when another agent answers
//! as its node ([`twins`]). The client pings the server every
//! [`crate::bus::PING_INTERVAL`], so a connection the network dropped is
//! noticed by the agent, not by TCP's retransmissions, and reconnects
//! with the backoff capped at 10 s.
//!
//! tokio runs the bus side on one thread; a run is a plain thread that
//! calls the synchronous checks, as the CLI does.

pub mod scheduler;
mod telemetry;
mod twins;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::{Client, Event, HeaderMap, Subject};
use bytes::Bytes;
use futures_util::StreamExt;
use spx_checks::cluster::AgentIdentity;
use spx_checks::path::node::NodeQuery;
use spx_checks::settings::Preflight;
use spx_checks::ConfigState;
use tokio::signal::unix::{signal, SignalKind};

use crate::bus::held::{self, Held, HeldReport};
use crate::bus::identity;
use crate::bus::wire::{
    self, ErrorBody, ErrorReply, Fetch, PathRequest, RefusalKind, Request, RunKey, TraceParent,
    HEADER_NODE, HEADER_REPLY, HEADER_REPORT_BYTES, HEADER_REQUEST, HEADER_RUNS_PER_MINUTE,
    HEADER_SHARED_BY, HEADER_TRACEPARENT,
};
use crate::bus::{backoff, bucket, NatsConfig};
use crate::cli::{AgentArgs, Change, Format, RunArgs};
use crate::render::journal::{log, Priority};
use crate::settings::{Settings, UsageError};
use scheduler::{Job, Limits, Offered, Periodic, Refused, Scheduler, Start, Why};

/// The interval when neither the flag nor the config gives one.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);
/// A periodic run's own timeout: what a default `--cluster` run gives
/// each node (10 s less the 2 s kept for the transport), so a default
/// cluster request arriving during a periodic run can share it.
pub const PERIODIC_TIMEOUT: Duration = Duration::from_secs(8);

/// Requests that may share one run, or wait for one together.
const MAX_WAITERS: usize = 1024;
/// Different requests that may wait while a run is in progress.
const MAX_WAITING: usize = 8;
/// Requests read ahead of the agent per subscription: a flood beyond it
/// is dropped by the client (and logged), never queued without bound.
const SUBSCRIPTION_CAPACITY: usize = 4096;
/// One connection attempt's bound (and each reconnect attempt's).
const CONNECT_TIMEOUT: Duration = crate::bus::ATTEMPT_TIMEOUT;

pub fn run(args: AgentArgs) -> anyhow::Result<u8> {
    let started = std::time::SystemTime::now();
    crate::runner::install_panic_hook();
    crate::heap::one_heap_arena();
    // The config is found and validated exactly as a run finds it.
    let probe = RunArgs {
        config: args.config.clone(),
        timeout: "10s".into(),
        sample: "1s".into(),
        probe_timeout: "1s".into(),
        ..RunArgs::default()
    };
    let settings = Settings::from_args(probe)?;
    let (path, node, nodes) = match &settings.config {
        ConfigState::Loaded { path, config } => match &config.node {
            Some(node) => (path.clone(), node.clone(), config.nodes.len().max(1)),
            None => {
                return Err(UsageError(format!(
                    "agent: {} names no `node`: an agent answers for the node its config is",
                    path.display()
                ))
                .into())
            }
        },
        ConfigState::Missing { looked_at } => {
            return Err(UsageError(format!(
                "agent: no config at {} (pass --config PATH)",
                looked_at
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" or ")
            ))
            .into())
        }
        ConfigState::Unreadable { path, reason } => {
            return Err(
                UsageError(format!("agent: cannot read {} ({reason})", path.display())).into(),
            )
        }
    };
    let nats = NatsConfig::read(&path, &node)
        .map_err(|e| UsageError(format!("agent: {e}")))?
        .ok_or_else(|| {
            UsageError(format!(
                "agent: {} has no [nodes.{node}.nats]: the agent reaches NATS as the daemon does (host, cacert, acl.token)",
                path.display()
            ))
        })?;
    let interval = match &args.interval {
        Some(text) => spx_checks::config::parse_interval(text)
            .map_err(|e| UsageError(format!("--interval {e}")))?,
        None => match &settings.config {
            ConfigState::Loaded { config, .. } => config.doctor.interval(),
            _ => None,
        }
        .unwrap_or(DEFAULT_INTERVAL),
    };
    let env = |k: &str| std::env::var(k).ok();
    let otlp = match crate::otlp::endpoint(&env) {
        Ok(url) => url,
        Err(e) => {
            log(Priority::Warning, &format!("{e}; not exporting metrics"));
            None
        }
    };
    let exporter = otlp.clone().and_then(telemetry::Exporter::start);
    let agent = Agent {
        node,
        nodes,
        config: path,
        nats,
        interval,
        otlp,
        exporter,
        identity: identity::of_this_host(started),
        limits: Limits {
            runs_per_minute: args.runs_per_minute,
            max_waiters: MAX_WAITERS,
            max_waiting_groups: MAX_WAITING,
        },
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(2)
        .build()?;
    rt.block_on(serve(agent))
}

struct Agent {
    node: String,
    /// How many nodes the config names (when the agent started).
    nodes: usize,
    config: PathBuf,
    nats: NatsConfig,
    limits: Limits,
    /// Between periodic runs' starts; zero: none.
    interval: Duration,
    /// Where each periodic run's metrics go (OTLP/HTTP).
    otlp: Option<String>,
    /// The queue and thread that send them.
    exporter: Option<telemetry::Exporter>,
    /// Who this agent is, in every answer and entry.
    identity: AgentIdentity,
}

impl Agent {
    /// What a periodic run measures: the default set, as a plain run
    /// (which reads OVN itself when the config names NB and SB).
    fn periodic(&self) -> Periodic {
        Periodic {
            key: RunKey {
                checks: Vec::new(),
                skips: Vec::new(),
                profile: None,
                sample: Duration::from_secs(1),
                ovn_read_by: None,
                path: None,
            },
            every: self.interval,
            timeout: PERIODIC_TIMEOUT,
            phase: phase_of(&self.node, self.interval),
        }
    }
}

/// Where in each interval this node's periodic runs fall: a fixed offset
/// below the interval, from the node's name (the gap between its first
/// and second run). A cluster's agents started
/// together (one rollout, or a lab) then spread their runs over the
/// interval instead of all probing each other in the same second, and a
/// fault between two nodes is seen by whichever agent runs next.
fn phase_of(node: &str, every: Duration) -> Duration {
    use std::hash::{Hash, Hasher};
    let ms = every.as_millis() as u64;
    if ms == 0 {
        return Duration::ZERO;
    }
    let mut h = std::hash::DefaultHasher::new();
    node.hash(&mut h);
    Duration::from_millis(h.finish() % ms)
}

/// Who waits for a run's answer.
struct Waiter {
    reply: Subject,
    request: String,
    trace: Option<TraceParent>,
    /// The largest report its answer takes (the request's
    /// `inline_max_bytes`).
    inline_max: Option<usize>,
}

/// What a run thread hands back.
struct RunOutput {
    /// The answer, or why there is none: the refusal's kind (`internal`
    /// for a run that failed; `not-here`, `peer-not-listed` for a path
    /// request this node does not serve) and its line.
    result: Result<Ran, (RefusalKind, String)>,
    took: Duration,
}

struct Ran {
    /// The answer's kind (`report`, or `path` for a path request).
    reply: &'static str,
    body: Bytes,
    exit_code: i32,
    checks: usize,
    /// The report (a periodic run's, for the bucket and the events).
    doc: Option<serde_json::Value>,
}

async fn serve(agent: Agent) -> anyhow::Result<u8> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    log(
        Priority::Info,
        &format!(
            "starting for node {}: NATS at {} ({}, {}), at most {} runs a minute on request; {}; {}",
            agent.node,
            agent.nats.server,
            match &agent.nats.cacert {
                Some(ca) => format!("TLS against {}", ca.display()),
                None => "no cacert: TLS only if the server asks".into(),
            },
            if agent.nats.has_token() {
                "token from the config"
            } else {
                "no token"
            },
            agent.limits.runs_per_minute,
            if agent.interval.is_zero() {
                "no periodic runs".to_owned()
            } else {
                format!(
                    "a periodic run every {} into the {} bucket",
                    humantime::format_duration(agent.interval),
                    bucket::BUCKET
                )
            },
            match &agent.otlp {
                Some(url) => format!("OTLP metrics to {url}"),
                None => "no OTLP export (OTEL_EXPORTER_OTLP_ENDPOINT is not set)".to_owned(),
            }
        ),
    );
    let client = {
        let mut attempt = 0usize;
        loop {
            attempt += 1;
            let server = agent.nats.server.clone();
            let name = format!("spx-doctor agent {}", agent.node);
            // A stop during an attempt ends it: systemd's stop never
            // waits out a connect to a server that does not answer.
            let connecting = agent.nats.connect(&name, CONNECT_TIMEOUT, |o| {
                o.event_callback(events(server))
                    .subscription_capacity(SUBSCRIPTION_CAPACITY)
            });
            let connected = tokio::select! {
                c = connecting => c,
                _ = term.recv() => return Ok(stopped()),
                _ = int.recv() => return Ok(stopped()),
            };
            match connected {
                Ok(c) => break c,
                Err(f) => {
                    let wait = backoff(attempt + 1);
                    log(
                        Priority::Warning,
                        &format!(
                            "cannot connect: {} (attempt {attempt}); retrying in {:.1} s",
                            f.detail,
                            wait.as_secs_f64()
                        ),
                    );
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = term.recv() => return Ok(stopped()),
                        _ = int.recv() => return Ok(stopped()),
                    }
                }
            }
        }
    };
    let mine_subject = wire::node_subject(&agent.node);
    let path_subject = wire::node_path_subject(&agent.node);
    let fetch_subject = wire::node_fetch_subject(&agent.node);
    let mut all = client.subscribe(wire::SUBJECT_ALL).await?;
    let mut mine = client.subscribe(mine_subject.clone()).await?;
    let mut who = client.subscribe(identity::subject(&agent.node)).await?;
    let mut paths = client.subscribe(path_subject.clone()).await?;
    let mut fetches = client.subscribe(fetch_subject.clone()).await?;
    client.flush().await?;
    let info = client.server_info();
    log(
        Priority::Notice,
        &format!(
            "connected to NATS at {} (server {} {}, max_payload {} bytes); answering {}, {}, {} and {}",
            agent.nats.server,
            info.server_name,
            info.version,
            client.max_payload(),
            wire::SUBJECT_ALL,
            mine_subject,
            path_subject,
            fetch_subject
        ),
    );

    // Who else answers as this node: now, then every interval (every
    // minute without periodic runs).
    let twins = Arc::new(std::sync::Mutex::new(twins::Twins::default()));
    tokio::spawn(twins::watch(
        client.clone(),
        agent.node.clone(),
        agent.identity.clone(),
        if agent.interval.is_zero() {
            DEFAULT_INTERVAL
        } else {
            agent.interval
        },
        Arc::clone(&twins),
    ));
    let mut state = State {
        agent: &agent,
        client: &client,
        scheduler: Scheduler::new(agent.limits).with_periodic(agent.periodic(), Instant::now()),
        running: None,
        wake: None,
        quiet: Quiet::default(),
        held: Held::default(),
        writer: (!agent.interval.is_zero()).then(|| {
            writer::Writer::spawn(
                client.clone(),
                agent.node.clone(),
                agent.nodes,
                agent.interval,
                agent.identity.clone(),
            )
        }),
    };
    // The first periodic run is due now.
    state.tick().await;
    loop {
        let wake = state.wake;
        tokio::select! {
            m = all.next() => match m {
                Some(msg) => state.request(msg).await,
                None => break,
            },
            m = mine.next() => match m {
                Some(msg) => state.request(msg).await,
                None => break,
            },
            m = who.next() => match m {
                Some(msg) => twins::answer(&client, &agent.node, &agent.identity, &twins, msg).await,
                None => break,
            },
            m = paths.next() => match m {
                Some(msg) => state.path_request(msg).await,
                None => break,
            },
            m = fetches.next() => match m {
                Some(msg) => state.fetch(msg).await,
                None => break,
            },
            out = async { state.running.as_mut().expect("guarded").await }, if state.running.is_some() => {
                state.running = None;
                state.finished(out.unwrap_or(RunOutput {
                    result: Err((RefusalKind::Internal, "the run thread ended without an answer".into())),
                    took: Duration::ZERO,
                }))
                .await;
            }
            _ = async { tokio::time::sleep_until(wake.expect("guarded").into()).await }, if wake.is_some() => {}
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
        state.tick().await;
    }
    // Answers already handed to the client go out, unless the bus is
    // gone: a stop never waits on a server that is not there.
    let _ = tokio::time::timeout(Duration::from_secs(1), client.flush()).await;
    Ok(stopped())
}

fn stopped() -> u8 {
    log(Priority::Notice, "stopping");
    0
}

/// Log the connection's changes of state (the client reconnects by
/// itself, with [`backoff`]).
fn events(
    server: String,
) -> impl Fn(Event) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + Sync>>
       + Send
       + Sync
       + 'static {
    let lost = Arc::new(AtomicBool::new(false));
    let slow = Arc::new(AtomicU64::new(0));
    move |event| {
        let (lost, slow, server) = (Arc::clone(&lost), Arc::clone(&slow), server.clone());
        Box::pin(async move {
            match event {
                Event::Disconnected => {
                    lost.store(true, Ordering::Relaxed);
                    log(
                        Priority::Warning,
                        &format!(
                            "lost the connection to NATS at {server}; reconnecting with backoff (0.5 s doubling to 10 s)"
                        ),
                    );
                }
                Event::Connected => {
                    if lost.swap(false, Ordering::Relaxed) {
                        log(
                            Priority::Notice,
                            &format!("reconnected to NATS at {server}"),
                        );
                    }
                }
                Event::ClientError(e) => log(
                    Priority::Warning,
                    &format!("reconnecting to NATS at {server}: {e}"),
                ),
                Event::ServerError(e) => {
                    log(Priority::Error, &format!("NATS at {server} says: {e}"))
                }
                Event::SlowConsumer(_) => {
                    let now = unix_seconds();
                    if slow.swap(now, Ordering::Relaxed) + 10 <= now {
                        log(
                            Priority::Warning,
                            "requests arrive faster than this agent reads them: the excess is dropped unanswered",
                        );
                    }
                }
                Event::LameDuckMode => log(
                    Priority::Warning,
                    &format!("NATS at {server} is going away (lame duck mode)"),
                ),
                Event::Draining | Event::Closed => {}
            }
        })
    }
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Refusals are logged at most once every 10 s, with a count of the
/// others, so a flood of bad requests cannot flood the journal.
#[derive(Default)]
struct Quiet {
    last: Option<Instant>,
    held: u64,
}

impl Quiet {
    fn refusal(&mut self, text: &str) {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|l| now.duration_since(l) < Duration::from_secs(10))
        {
            self.held += 1;
            return;
        }
        let more = match std::mem::take(&mut self.held) {
            0 => String::new(),
            n => format!(" ({n} more refused since the last one logged)"),
        };
        self.last = Some(now);
        log(Priority::Warning, &format!("{text}{more}"));
    }
}

struct State<'a> {
    agent: &'a Agent,
    client: &'a Client,
    scheduler: Scheduler<Waiter>,
    running: Option<tokio::sync::oneshot::Receiver<RunOutput>>,
    wake: Option<Instant>,
    quiet: Quiet,
    /// Reports larger than their request's `inline_max_bytes`, for a fetch.
    held: Held,
    /// Writes each periodic report to the bucket, off this loop (none
    /// without periodic runs).
    writer: Option<writer::Writer>,
}

impl State<'_> {
    fn headers(&self, kind: &str, request: Option<&str>, trace: Option<TraceParent>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(HEADER_REPLY, kind);
        h.insert(HEADER_NODE, self.agent.node.as_str());
        if let Some(r) = request {
            h.insert(HEADER_REQUEST, r);
        }
        h.insert(
            HEADER_RUNS_PER_MINUTE,
            self.agent.limits.runs_per_minute.to_string(),
        );
        if let Some(t) = trace {
            h.insert(HEADER_TRACEPARENT, t.child(span_id()).to_string());
        }
        identity::insert(&mut h, &self.agent.identity);
        h
    }

    async fn send(&self, to: Subject, headers: HeaderMap, body: Bytes) {
        // A requester that went away is not the agent's problem.
        let _ = self.client.publish_with_headers(to, headers, body).await;
    }

    #[allow(clippy::too_many_arguments)]
    async fn refuse(
        &mut self,
        to: Subject,
        request: Option<String>,
        trace: Option<TraceParent>,
        kind: RefusalKind,
        message: String,
        retry_after: Option<Duration>,
    ) {
        self.quiet.refusal(&format!(
            "refused request {} from {}: {}: {message}",
            request.as_deref().unwrap_or("(no id)"),
            scheduler::requester(to.as_str()),
            kind.as_str()
        ));
        let body = ErrorReply {
            error: ErrorBody {
                kind,
                message,
                node: self.agent.node.clone(),
                request: request.clone(),
                runs_per_minute: matches!(kind, RefusalKind::Busy | RefusalKind::RateLimited)
                    .then_some(self.agent.limits.runs_per_minute),
                retry_after_ms: retry_after.map(|d| d.as_millis() as u64),
            },
        }
        .to_json();
        let headers = self.headers(wire::REPLY_ERROR, request.as_deref(), trace);
        self.send(to, headers, Bytes::from(body)).await;
    }

    /// Where a request's answer goes and the trace it came in, or `None`
    /// (said once) when it names no reply subject: nobody to answer.
    fn addressed(
        &mut self,
        msg: &async_nats::Message,
        what: &str,
    ) -> Option<(Subject, Option<TraceParent>)> {
        let Some(reply) = msg.reply.clone() else {
            self.quiet.refusal(&format!(
                "ignored {what} without a reply subject (nobody to answer)"
            ));
            return None;
        };
        let trace = msg
            .headers
            .as_ref()
            .and_then(|h| h.get(HEADER_TRACEPARENT))
            .and_then(|v| TraceParent::parse(v.as_str()));
        Some((reply, trace))
    }

    async fn request(&mut self, msg: async_nats::Message) {
        let Some((reply, trace)) = self.addressed(&msg, "a request") else {
            return;
        };
        // Read against this node's catalogue as it is now: a site check
        // dropped into doctor.d since the last run is known (a broken file
        // leaves the last catalogue; the run then says what is wrong).
        let _ = crate::settings::install_catalogue(Some(self.agent.config.clone()));
        let req = match Request::parse(&msg.payload) {
            Ok(r) => r,
            Err((id, r)) => {
                self.refuse(reply, id, trace, r.kind, r.message, None).await;
                return;
            }
        };
        self.offer(req.key(), req.timeout, req.id, reply, trace, req.inline_max)
            .await;
    }

    /// A fetch: the report held for a request, given once. One this agent
    /// does not hold is not its to answer (another agent answering as this
    /// node may hold it, and a report is held for a minute at most).
    async fn fetch(&mut self, msg: async_nats::Message) {
        let Some((reply, trace)) = self.addressed(&msg, "a fetch") else {
            return;
        };
        let fetch = match Fetch::parse(&msg.payload) {
            Ok(f) => f,
            Err((id, r)) => {
                self.refuse(reply, id, trace, r.kind, r.message, None).await;
                return;
            }
        };
        let Some(held) = self.held.take(&fetch.id, Instant::now()) else {
            return;
        };
        self.answer(reply, fetch.id, trace, held).await;
    }

    /// A report (or a path's facts) to its requester, or the typed
    /// refusal when it does not fit the server's max_payload.
    async fn answer(
        &mut self,
        reply: Subject,
        request: String,
        trace: Option<TraceParent>,
        report: HeldReport,
    ) {
        let mut h = self.headers(report.kind, Some(&request), trace);
        h.insert(HEADER_SHARED_BY, report.shared.to_string());
        let sent = self
            .client
            .publish_with_headers(reply.clone(), h, report.body.clone())
            .await;
        if let Err(e) = sent {
            if e.kind() == async_nats::client::PublishErrorKind::MaxPayloadExceeded {
                let message = bucket::too_large_said(
                    report.body.len(),
                    self.client.max_payload(),
                    "max_payload",
                );
                self.refuse(
                    reply,
                    Some(request),
                    trace,
                    RefusalKind::TooLarge,
                    message,
                    None,
                )
                .await;
            }
        }
    }

    /// A path request: this node's side of a guest's path, scheduled
    /// like a run (one at a time, bounded per minute).
    async fn path_request(&mut self, msg: async_nats::Message) {
        let Some((reply, trace)) = self.addressed(&msg, "a path request") else {
            return;
        };
        let req = match PathRequest::parse(&msg.payload) {
            Ok(r) => r,
            Err((id, r)) => {
                self.refuse(reply, id, trace, r.kind, r.message, None).await;
                return;
            }
        };
        self.offer(req.key(), req.timeout, req.id, reply, trace, None)
            .await;
    }

    async fn offer(
        &mut self,
        key: RunKey,
        timeout: Duration,
        id: String,
        reply: Subject,
        trace: Option<TraceParent>,
        inline_max: Option<usize>,
    ) {
        let now = Instant::now();
        let job = Job {
            key,
            deadline: now + timeout,
            waiter: Waiter {
                reply: reply.clone(),
                request: id.clone(),
                trace,
                inline_max,
            },
            from: Some(scheduler::requester(reply.as_str())),
        };
        match self.scheduler.offer(job, now) {
            Offered::Joined | Offered::Queued => {
                let h = self.headers(wire::REPLY_ACCEPTED, Some(&id), trace);
                self.send(reply, h, Bytes::new()).await;
            }
            Offered::Refused(w, r) => self.refused(w, r).await,
        }
    }

    async fn refused(&mut self, w: Waiter, r: Refused) {
        let kind = match r.why {
            Why::Busy => RefusalKind::Busy,
            Why::RateLimited => RefusalKind::RateLimited,
        };
        self.refuse(
            w.reply,
            Some(w.request),
            w.trace,
            kind,
            r.message,
            r.retry_after,
        )
        .await;
    }

    /// Start what can start; refuse what can no longer run in time.
    async fn tick(&mut self) {
        let t = self.scheduler.tick(Instant::now());
        for (w, r) in t.refused {
            self.refused(w, r).await;
        }
        if t.missed > 0 {
            log(
                Priority::Warning,
                &format!(
                    "{} periodic run(s) missed: the run before took past the slot (interval {})",
                    t.missed,
                    humantime::format_duration(self.agent.interval)
                ),
            );
        }
        if let Some(start) = t.start {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let (config, node) = (self.agent.config.clone(), self.agent.node.clone());
            let otlp = self.agent.exporter.clone().filter(|_| start.periodic);
            let spawned = std::thread::Builder::new()
                .name("run".into())
                .spawn(move || {
                    let t0 = Instant::now();
                    let result = std::panic::catch_unwind(|| run_once(&config, &node, &start))
                        .unwrap_or_else(|_| {
                            Err((RefusalKind::Internal, "the run panicked".into()))
                        });
                    if let (Some(exporter), Ok(Ran { doc: Some(doc), .. })) = (&otlp, &result) {
                        exporter.offer(metrics_request(&node, doc));
                    }
                    let _ = tx.send(RunOutput {
                        result,
                        took: t0.elapsed(),
                    });
                });
            match spawned {
                Ok(_) => self.running = Some(rx),
                Err(e) => {
                    self.finished(RunOutput {
                        result: Err((
                            RefusalKind::Internal,
                            format!("cannot start a run thread: {e}"),
                        )),
                        took: Duration::ZERO,
                    })
                    .await
                }
            }
        }
        self.wake = t.wake;
    }

    /// A run ended: answer everyone who shared it.
    async fn finished(&mut self, out: RunOutput) {
        let (waiters, periodic) = self.scheduler.finish_run();
        let run = self.scheduler.runs;
        let ids: Vec<&str> = waiters.iter().map(|w| w.request.as_str()).collect();
        let traces: Vec<String> = waiters
            .iter()
            .filter_map(|w| w.trace.map(|t| t.trace_id_hex()))
            .collect();
        let shared = waiters.len();
        match &out.result {
            Ok(ran) => log(
                Priority::Info,
                &format!(
                    "run {run}{}: {} checks, exit {}, {:.2} s, {} bytes; answers {shared} request(s){}{}",
                    if periodic { " (periodic)" } else { "" },
                    ran.checks,
                    ran.exit_code,
                    out.took.as_secs_f64(),
                    ran.body.len(),
                    if ids.is_empty() { String::new() } else { format!(": {}", shown_ids(&ids)) },
                    if traces.is_empty() {
                        String::new()
                    } else {
                        format!(" (trace {})", traces.join(", "))
                    }
                ),
            ),
            Err((RefusalKind::Internal, e)) => log(Priority::Error, &format!("run {run} failed: {e}")),
            Err((kind, e)) => log(
                Priority::Info,
                &format!("run {run}: {}: {e}; answers {shared} request(s)", kind.as_str()),
            ),
        }
        if periodic {
            if let (Some(w), Ok(Ran { doc: Some(doc), .. })) = (&self.writer, &out.result) {
                w.offer(doc.clone());
            }
        }
        for w in waiters {
            match &out.result {
                Ok(ran) => {
                    let report = HeldReport {
                        kind: ran.reply,
                        body: ran.body.clone(),
                        shared,
                    };
                    if held::inline(ran.body.len(), w.inline_max) {
                        self.answer(w.reply, w.request, w.trace, report).await;
                    } else {
                        let mut h = self.headers(wire::REPLY_HELD, Some(&w.request), w.trace);
                        h.insert(HEADER_REPORT_BYTES, ran.body.len().to_string());
                        self.held.hold(w.request, report, Instant::now());
                        self.send(w.reply, h, Bytes::new()).await;
                    }
                }
                Err((kind, e)) => {
                    self.refuse(w.reply, Some(w.request), w.trace, *kind, e.clone(), None)
                        .await
                }
            }
        }
        drop(out);
        crate::heap::give_back_freed_memory();
    }
}

fn shown_ids(ids: &[&str]) -> String {
    if ids.len() <= 4 {
        ids.join(", ")
    } else {
        format!("{}, … ({} in all)", ids[..3].join(", "), ids.len())
    }
}

fn span_id() -> [u8; 8] {
    let mut id = [0u8; 8];
    if getrandom::fill(&mut id).is_err() || id == [0; 8] {
        id = (unix_nanos() | 1).to_le_bytes();
    }
    id
}

fn unix_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

/// One run, exactly as `spx-doctor --config CONFIG --format json` with
/// the request's flags would run it (or, for a path request, as
/// `spx-doctor path-facts` would answer it).
fn run_once(config: &Path, node: &str, start: &Start) -> Result<Ran, (RefusalKind, String)> {
    if let Some(q) = &start.key.path {
        return run_path(config, q, start.timeout);
    }
    let internal = |e: String| (RefusalKind::Internal, e);
    let settings = Settings::from_args(run_args(config, node, &start.key, start.timeout))
        .map_err(|e| internal(format!("the run's settings: {e}")))?;
    let report = crate::node_report(&settings, &crate::Facts::Live);
    let doc = serde_json::to_value(&report).map_err(|e| internal(e.to_string()))?;
    let body = serde_json::to_vec(&doc).map_err(|e| internal(e.to_string()))?;
    Ok(Ran {
        reply: wire::REPLY_REPORT,
        body: Bytes::from(body),
        exit_code: report.exit_code,
        checks: report.checks.len(),
        doc: start.periodic.then_some(doc),
    })
}

/// A path request's answer: this node's side, as `path-facts` gives it,
/// served only for a guest this node runs and a peer of its own list.
fn run_path(config: &Path, q: &NodeQuery, timeout: Duration) -> Result<Ran, (RefusalKind, String)> {
    let ms = |d: Duration| format!("{}ms", d.as_millis().max(1));
    let settings = Settings::from_args(RunArgs {
        config: Some(config.to_owned()),
        timeout: ms(timeout),
        sample: "1ms".into(),
        probe_timeout: ms(timeout.min(Duration::from_secs(1))),
        ..RunArgs::default()
    })
    .map_err(|e| (RefusalKind::Internal, format!("the run's settings: {e}")))?;
    let ctx = spx_checks::Ctx::new(settings.config.clone(), settings.options.clone())
        .deadline_from(settings.started)
        .for_check(crate::path::SCOPE);
    let facts = spx_checks::path::gather::node_facts(&ctx, q);
    if let (Some(guest), Some(Err(why))) = (&q.guest, &facts.guest) {
        return Err((
            RefusalKind::NotHere,
            format!("{} is not on this node: {why}", guest.label()),
        ));
    }
    if let Some(why) = facts.toward.as_ref().and_then(|t| t.refused.clone()) {
        return Err((RefusalKind::PeerNotListed, why));
    }
    let body = serde_json::to_vec(&facts).map_err(|e| (RefusalKind::Internal, e.to_string()))?;
    Ok(Ran {
        reply: wire::REPLY_PATH,
        body: Bytes::from(body),
        exit_code: 0,
        checks: 0,
        doc: None,
    })
}

/// A periodic run's series, as `--format prometheus` writes them, as an
/// encoded OTLP request (for [`telemetry::Exporter`]).
fn metrics_request(node: &str, doc: &serde_json::Value) -> Vec<u8> {
    let env = |k: &str| std::env::var(k).ok();
    let host = doc
        .get("host")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    let started = doc
        .get("started_at")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    let request = crate::otlp::request(
        &crate::render::prometheus::families_of_doc(doc),
        crate::otlp::resource(Some(node), host, &env),
        crate::otlp::unix_nanos(started),
    );
    crate::otlp::encode(&request)
}

/// The flags of a run for `key`: only what the vocabulary carries; the
/// config is the agent's own.
fn run_args(config: &Path, node: &str, key: &RunKey, timeout: Duration) -> RunArgs {
    let ms = |d: Duration| format!("{}ms", d.as_millis().max(1));
    RunArgs {
        check: key.checks.clone(),
        skip: key.skips.clone(),
        config: Some(config.to_owned()),
        format: Format::Json,
        timeout: ms(timeout),
        sample: ms(key.sample),
        probe_timeout: ms(timeout.min(Duration::from_secs(1))),
        for_change: key.profile.map(|p| match p {
            Preflight::EnableJumbo => Change::EnableJumbo,
            Preflight::DisableIpsec => Change::DisableIpsec,
            Preflight::EnableIpsec => Change::EnableIpsec,
        }),
        cluster: crate::cluster::args::ClusterArgs {
            // The reader reads; everyone else leaves OVN alone.
            ovn_read_by: key.ovn_read_by.clone().filter(|r| r != node),
            ..Default::default()
        },
        ..RunArgs::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nodes_phase_is_fixed_below_its_interval_and_spread_over_a_cluster() {
        let every = Duration::from_secs(60);
        let phases: Vec<Duration> = (0..64).map(|i| phase_of(&format!("n{i}"), every)).collect();
        assert!(phases.iter().all(|p| *p < every));
        assert_eq!(
            phase_of("n7", every),
            phases[7],
            "the same node, the same phase"
        );
        // Spread, not bunched: the 64 phases fall in at least 6 of the 60
        // seconds' tenths.
        let tenths: std::collections::BTreeSet<u128> =
            phases.iter().map(|p| p.as_millis() / 6000).collect();
        assert!(tenths.len() >= 6, "{tenths:?}");
        assert_eq!(phase_of("n1", Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn a_run_takes_only_what_the_request_carries() {
        let key = RunKey {
            checks: vec!["mtu".into()],
            skips: vec!["mtu.overlay".into()],
            profile: Some(Preflight::EnableJumbo),
            sample: Duration::from_millis(500),
            ovn_read_by: Some("n0".into()),
            path: None,
        };
        let cfg = Path::new("/etc/spinifex/spinifex.toml");
        let a = run_args(cfg, "n1", &key, Duration::from_millis(7950));
        assert_eq!(a.config.as_deref(), Some(cfg));
        assert_eq!((a.timeout.as_str(), a.sample.as_str()), ("7950ms", "500ms"));
        assert_eq!(a.probe_timeout, "1000ms");
        assert_eq!(a.cluster.ovn_read_by.as_deref(), Some("n0"));
        assert!(a.peer.is_empty() && a.interface.is_empty() && a.record.is_none());
        assert!(a.output.is_none() && a.nb_db.is_none() && a.mtu.is_none());
        // The reader itself reads OVN.
        let b = run_args(cfg, "n0", &key, Duration::from_millis(600));
        assert_eq!(b.cluster.ovn_read_by, None);
        assert_eq!(b.probe_timeout, "600ms");
    }
}
