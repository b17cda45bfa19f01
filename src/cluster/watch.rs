//! `spx-doctor watch`: the whole cluster, live, from the agents' periodic
//! reports in the doctor's JetStream bucket.
//!
//! It connects as `--cluster --via nats` does (this node's
//! `[nodes.<node>.nats]`: the NATS credentials are all it needs), opens
//! the bucket (never makes it, writes nothing), and judges the cluster
//! checks over every config node's latest report with the very code of
//! `--cluster` ([`super::judge`]): the matrix, drift, SA pairs, and every
//! cluster check the catalog has. A node whose latest report is older than
//! two of its own intervals (read from its entry, against the server's
//! time of the revision) is `stale`, and a config node with no entry is
//! `unknown`: both are nodes without an answer, so never a pass, and the
//! run is inconclusive (exit 2) unless something failed. A node whose
//! agent wrote a small entry because its report did not fit the server's
//! max_payload is `too-large`, in the words of `--cluster`; one whose
//! recent revisions alternate between two agents is `duplicate`
//! (`cluster.bus` names both). A bucket deleted under a running watch is
//! said in its header (JetStream's stream-deleted advisory says it at
//! once), waited for and picked up again when an agent makes it again;
//! `--once` against a missing bucket says so, never that every node is
//! stale. Before a live view shows a node stale (or unknown) it asks the
//! server for that node's latest revision and takes it when it is newer
//! than the one held: its watch of the bucket may have stopped delivering
//! (a consumer lost on the server says nothing to the client for two 5 s
//! heartbeats) or fallen behind.
//!
//! - `--once`: one cluster report from what the bucket holds now, drawn as
//!   `--cluster` draws it (`--format table|json`), with its exit codes.
//! - live, on a terminal: the cluster table redrawn as entries arrive and
//!   every second, with the nodes' states and what changed and since when.
//!   The cluster is judged at most about once a second however many
//!   entries arrive (a few a second from hundreds of nodes): an entry that
//!   arrives within a second of the last judgement waits for the tick.
//! - live, `--format json`: one JSON object per line, never redrawn: a
//!   check's transition in the agents' event shape (`node: null` for a
//!   cluster check) and a node's change of state
//!   (`{"kind":"node","node","status","since"}`); first the state as found.

use std::collections::{BTreeMap, VecDeque};
use std::io::IsTerminal;
use std::time::{Duration, Instant, SystemTime};

use futures_util::StreamExt;
use spx_checks::cluster::{
    AgentIdentity, NodeAnswer, Received, ReportText, Transport, Unreached, UnreachedKind,
};
use spx_checks::{natural, ConfigState};
use tokio::signal::unix::{signal, SignalKind};

use super::plan::Plan;
use super::Gathered;
use crate::bus::bucket::{self, Entry, Read, Revision, Written};
use crate::bus::events::{self, NodeState, Seen, Transition};
use crate::bus::{backoff, identity, one_line, NatsConfig};
use crate::cli::{RunArgs, WatchArgs, WatchFormat};
use crate::render::inert::{Lead, Screen};
use crate::render::term::Term;
use crate::render::{self, Style};
use crate::report::cluster::ClusterReport;
use crate::settings::UsageError;

/// A report older than this many of its node's intervals is stale.
pub const STALE_AFTER_INTERVALS: u32 = 2;
/// Revisions of one node alternating between agents within this many of
/// its intervals are a duplicate node.
pub const DUPLICATE_WITHIN_INTERVALS: u32 = 3;
/// Transitions the live table keeps on screen.
const CHANGES_SHOWN: usize = 12;
/// While the bucket is missing, it is looked for this often.
const BUCKET_POLL: Duration = Duration::from_secs(1);

/// What the bucket holds for one node.
#[derive(Clone, Debug)]
pub struct Held {
    /// The entry, or why its value is not one. Its `report` is taken out
    /// into [`Held::report`]: held as text, not as a tree.
    pub entry: Result<Entry, String>,
    /// The entry's report, as text with its typed view, read once (none
    /// when it did not fit).
    pub report: Option<Received>,
    /// When the server stored this revision.
    pub stored: SystemTime,
    pub revision: u64,
    /// Its recent revisions, oldest first: when each was stored and who
    /// wrote it (at most the bucket's history).
    pub writers: Writers,
}

/// Who wrote a node's recent revisions: when each was stored, and by
/// whom, oldest first (at most the bucket's history).
pub type Writers = Vec<(SystemTime, Option<AgentIdentity>)>;

/// Take a revision's headers (the bucket's history, read before each
/// node's latest value) into `written`: who wrote it and when.
fn hold_written(written: &mut BTreeMap<String, Writers>, w: Written) {
    if !w.put {
        written.remove(&w.key);
        return;
    }
    let writers = written.entry(w.key).or_default();
    writers.push((w.stored, w.identity));
    let keep = bucket::HISTORY as usize;
    if writers.len() > keep {
        writers.drain(..writers.len() - keep);
    }
}

/// Take revision `r` into `held` (a delete or purge forgets the node),
/// with the writers its headers were read with (`written`) when it is the
/// node's first revision held.
fn hold(held: &mut BTreeMap<String, Held>, written: &mut BTreeMap<String, Writers>, r: &Revision) {
    // One taken ahead of the watch (`View::catch_up`) is not undone when
    // the watch delivers what came before it.
    if held.get(&r.key).is_some_and(|h| r.stored < h.stored) {
        return;
    }
    if !r.put {
        held.remove(&r.key);
        written.remove(&r.key);
        return;
    }
    let (entry, report) = match Entry::parse_held(&r.key, &r.value) {
        // Read as a report once, when taken: a redraw judges what is held.
        Ok((e, report)) => (Ok(e), report.map(|r| Received::from(ReportText::from(r)))),
        Err(why) => (Err(why), None),
    };
    let who = entry.as_ref().ok().and_then(|e| e.identity.clone());
    let mut writers = held
        .remove(&r.key)
        .map(|h| h.writers)
        .or_else(|| written.remove(&r.key))
        .unwrap_or_default();
    // Its headers may have been read already.
    if writers.last().is_none_or(|(at, _)| *at < r.stored) {
        writers.push((r.stored, who));
    }
    let keep = bucket::HISTORY as usize;
    if writers.len() > keep {
        writers.drain(..writers.len() - keep);
    }
    held.insert(
        r.key.clone(),
        Held {
            entry,
            report,
            stored: r.stored,
            revision: r.revision,
            writers,
        },
    );
}

/// A node's state at `now`.
#[derive(Clone, Debug)]
pub struct NodeNow {
    /// Its answer for the judgement.
    pub answer: Result<Received, Unreached>,
    /// `ok`, `stale`, `unknown`, `too-large` or `duplicate`.
    pub status: &'static str,
    pub since: SystemTime,
    /// The agents its recent revisions came from.
    pub agents: Vec<AgentIdentity>,
}

/// A node's state at `now`: its answer for the judgement, its status
/// word and since when. `floor`: when the bucket was last made again
/// (a node's age counts from then at most: its agent writes into the new
/// bucket within one interval).
pub fn node_state(
    node: &str,
    held: Option<&Held>,
    now: SystemTime,
    watch_began: SystemTime,
    floor: Option<SystemTime>,
) -> NodeNow {
    let state = |answer, status, since, agents| NodeNow {
        answer,
        status,
        since,
        agents,
    };
    let Some(h) = held else {
        return state(
            Err(Unreached::new(
                UnreachedKind::NoReport,
                format!("no entry under {node} in the {} bucket", bucket::BUCKET),
            )),
            "unknown",
            watch_began,
            Vec::new(),
        );
    };
    let entry = match &h.entry {
        Ok(e) => e,
        Err(why) => {
            return state(
                Err(Unreached::new(
                    UnreachedKind::InvalidAnswer,
                    format!("revision {}: {why}", h.revision),
                )),
                "unknown",
                h.stored,
                Vec::new(),
            )
        }
    };
    let twins = identity::alternating(
        &h.writers,
        now,
        entry.interval() * DUPLICATE_WITHIN_INTERVALS,
    );
    if !twins.is_empty() {
        let at: Vec<String> = twins
            .iter()
            .map(|a| format!("at {}", a.addresses_said()))
            .collect();
        return state(
            Err(Unreached::new(
                UnreachedKind::DuplicateNode,
                format!(
                    "its recent revisions alternate between {} agents ({}): see cluster.bus",
                    twins.len(),
                    at.join(" and ")
                ),
            )),
            "duplicate",
            h.stored,
            twins,
        );
    }
    let agents: Vec<AgentIdentity> = entry.identity.iter().cloned().collect();
    let limit = entry.interval() * STALE_AFTER_INTERVALS;
    let counted_from = floor.map_or(h.stored, |f| f.max(h.stored));
    let age = now.duration_since(counted_from).unwrap_or_default();
    if age > limit {
        let shown =
            |d: Duration| humantime::format_duration(Duration::from_secs(d.as_secs())).to_string();
        return state(
            Err(Unreached::new(
                UnreachedKind::Stale,
                format!(
                    "its latest report is {} old (written {}), more than {STALE_AFTER_INTERVALS} of its intervals ({})",
                    shown(now.duration_since(h.stored).unwrap_or_default()),
                    humantime::format_rfc3339_seconds(h.stored),
                    shown(entry.interval())
                ),
            )),
            "stale",
            counted_from + limit,
            agents,
        );
    }
    if let Some(t) = &entry.too_large {
        return state(
            Err(Unreached::new(
                UnreachedKind::TooLarge,
                format!("too-large: {}", t.said(&entry.written_at)),
            )),
            "too-large",
            h.stored,
            agents,
        );
    }
    match &h.report {
        Some(report) => state(Ok(report.clone()), "ok", h.stored, agents),
        None => state(
            Err(Unreached::new(
                UnreachedKind::NoReport,
                "its entry holds no report",
            )),
            "unknown",
            h.stored,
            agents,
        ),
    }
}

/// The cluster report over what is held, at `now`.
fn judge(
    plan: &Plan,
    held: &BTreeMap<String, Held>,
    now: SystemTime,
    began: SystemTime,
    floor: Option<SystemTime>,
) -> (ClusterReport, Vec<(String, &'static str, SystemTime)>) {
    let mut states = Vec::with_capacity(plan.nodes.len());
    let nodes: Vec<NodeAnswer> = plan
        .nodes
        .iter()
        .map(|n| {
            let s = node_state(&n.name, held.get(&n.name), now, began, floor);
            states.push((n.name.clone(), s.status, s.since));
            let mut answer = NodeAnswer::received(n.name.clone(), None, s.answer);
            answer.agents = s.agents;
            answer
        })
        .collect();
    let report = super::judge(
        plan,
        Gathered {
            vias: vec![Transport::Jetstream.as_str(); nodes.len()],
            nodes,
            config_addresses: plan.config_addresses.clone(),
            transport: Transport::Jetstream,
            started_at: now,
            t0: Instant::now(),
        },
    );
    (report, states)
}

pub fn run(args: WatchArgs) -> anyhow::Result<u8> {
    crate::runner::install_panic_hook();
    // The plan of a default --cluster run: its nodes, its node and
    // cluster checks, its levels.
    let probe = RunArgs {
        config: args.config.clone(),
        timeout: args.timeout.clone(),
        sample: "1s".into(),
        probe_timeout: "1s".into(),
        ..RunArgs::default()
    };
    let mut plan = Plan::from_args(probe)?;
    let ConfigState::Loaded { path, .. } = &plan.settings.config else {
        unreachable!("a plan has a config");
    };
    let path = path.clone();
    let Some(me) = plan.config.node.clone() else {
        return Err(UsageError(format!(
            "watch: {} names no `node`, so there is no [nodes.NODE.nats] to reach NATS by",
            path.display()
        ))
        .into());
    };
    let nats = NatsConfig::read(&path, &me)
        .map_err(|e| UsageError(format!("watch: {e}")))?
        .ok_or_else(|| {
            UsageError(format!(
                "watch: {} has no [nodes.{me}.nats] (host, cacert, acl.token): watch reads the agents' reports on NATS",
                path.display()
            ))
        })?;
    let resolved = Plan::resolve_names(&plan.names_to_resolve, Duration::from_secs(1));
    for (node, ips) in resolved {
        plan.config_addresses.entry(node).or_default().extend(ips);
    }
    let to_terminal = std::io::stdout().is_terminal();
    let style = Style {
        verbose: args.verbose,
        strict: false,
        term: Term::detect(args.term, to_terminal),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if args.once {
        let timeout = plan.timeout;
        return rt.block_on(once(&plan, &nats, args.format, &style, timeout));
    }
    stop_watchdog();
    rt.block_on(live(&plan, &nats, args.format, &style, to_terminal))
}

/// How long a stop (SIGTERM, SIGINT) may wait for the live view.
const STOP_WITHIN: Duration = Duration::from_secs(1);

/// The live loop reads a stop only between judgements, and at a thousand
/// nodes one judgement takes seconds (`bench/scale.sh`: killed 10 s after
/// SIGTERM). This thread hears the stop too, and ends the process with the
/// loop's own exit code (0) when the loop has not within [`STOP_WITHIN`].
/// Nothing is left to undo: the view never hides the cursor or switches
/// screens.
fn stop_watchdog() {
    let _ = std::thread::Builder::new().name("stop".into()).spawn(|| {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async {
            let (Ok(mut term), Ok(mut int)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) else {
                return;
            };
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            tokio::time::sleep(STOP_WITHIN).await;
            std::process::exit(0);
        });
    });
}

async fn once(
    plan: &Plan,
    nats: &NatsConfig,
    format: WatchFormat,
    style: &Style,
    timeout: Duration,
) -> anyhow::Result<u8> {
    let deadline = Instant::now() + timeout;
    let me = &nats.node;
    let client = nats
        .connect(&format!("spx-doctor watch --once ({me})"), timeout, |o| o)
        .await
        .map_err(|f| anyhow::anyhow!("watch: {}", f.detail))?;
    let js = async_nats::jetstream::new(client);
    let left = || deadline.saturating_duration_since(Instant::now());
    let store = tokio::time::timeout(left(), bucket::open(&js))
        .await
        .map_err(|_| anyhow::anyhow!("watch: no answer from JetStream within --timeout"))?
        .map_err(|e| anyhow::anyhow!("watch: {e}"))?
        .ok_or_else(|| anyhow::anyhow!("watch: {}", bucket::missing_said()))?;
    let mut held = BTreeMap::new();
    let mut written = BTreeMap::new();
    // Each revision's bytes are let go once held (as its report's text).
    let asked: std::collections::HashSet<&str> =
        plan.nodes.iter().map(|n| n.name.as_str()).collect();
    bucket::history(&js, &store, deadline, Duration::MAX, |read| match read {
        Read::Written(w) if asked.contains(w.key.as_str()) => hold_written(&mut written, w),
        Read::Latest(r) if asked.contains(r.key.as_str()) => hold(&mut held, &mut written, &r),
        _ => {}
    })
    .await
    .map_err(|e| anyhow::anyhow!("watch: {e}"))?;
    drop(written);
    let now = SystemTime::now();
    let (report, _) = judge(plan, &held, now, now, None);
    drop(held);
    if format == WatchFormat::Json {
        // Streamed, as `--cluster` writes it.
        render::to_stdout_with(|w| render::json::write_cluster(&report, w))?;
        return Ok(report.exit_code as u8);
    }
    let out = render::render_cluster(&report, format.into(), style, None);
    render::to_stdout_bytes(&out)?;
    Ok(report.exit_code as u8)
}

/// What the live view remembers between two judgements.
#[derive(Default)]
struct Memory {
    /// Each node's checks, as last seen in an ok report.
    nodes: BTreeMap<String, BTreeMap<String, Seen>>,
    /// Each node's state and since when.
    states: BTreeMap<String, (&'static str, SystemTime)>,
    /// The cluster checks, as last judged.
    cluster: Option<BTreeMap<String, Seen>>,
    /// What changed, newest last.
    changes: VecDeque<String>,
}

/// One line of the live JSON output.
enum Line {
    Transition(Transition),
    Node(NodeState),
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

fn clock(t: SystemTime) -> String {
    // HH:MM:SS of an RFC 3339 time, UTC.
    let s = humantime::format_rfc3339_seconds(t).to_string();
    s.get(11..19).unwrap_or(&s).to_owned()
}

impl Memory {
    /// What changed since the last judgement, in order: node states,
    /// each node's checks, the cluster checks.
    fn update(
        &mut self,
        report: &ClusterReport,
        states: &[(String, &'static str, SystemTime)],
    ) -> Vec<Line> {
        let mut out = Vec::new();
        for (node, status, since) in states {
            if self.states.get(node).map(|s| s.0) != Some(*status) {
                self.states.insert(node.clone(), (status, *since));
                out.push(Line::Node(NodeState {
                    kind: "node".into(),
                    node: node.clone(),
                    status: status.to_string(),
                    since: rfc3339(*since),
                }));
            }
        }
        for n in &report.nodes {
            if n.report.is_none() {
                continue;
            }
            let now = events::seen(n.checks());
            let since = n.started_at().unwrap_or("");
            let before = self.nodes.get(&n.name);
            out.extend(
                events::transitions(Some(&n.name), before, &now, since)
                    .into_iter()
                    .map(Line::Transition),
            );
            self.nodes.insert(n.name.clone(), now);
        }
        // Read from the checks as they are, never a tree of them: at 1,024
        // nodes the path matrix's is two million objects.
        let now = report
            .checks
            .iter()
            .map(|c| {
                (
                    c.id.to_owned(),
                    Seen {
                        code: c.code.clone(),
                        status: c.status.as_str().to_owned(),
                        summary: c.summary.clone(),
                    },
                )
            })
            .collect();
        out.extend(
            events::transitions(None, self.cluster.as_ref(), &now, &report.started_at)
                .into_iter()
                .map(Line::Transition),
        );
        self.cluster = Some(now);
        out
    }

    /// The changes as the table lists them (first sightings are the state
    /// found, not changes).
    fn remember(&mut self, lines: &[Line]) {
        for l in lines {
            let text = match l {
                Line::Transition(t) => match &t.code_before {
                    None => continue,
                    Some(before) => format!(
                        "{}  {:<10} {} -> {} ({})",
                        clock(humantime::parse_rfc3339(&t.since).unwrap_or(SystemTime::UNIX_EPOCH)),
                        t.node.as_deref().unwrap_or("cluster"),
                        before,
                        t.code_after,
                        t.status
                    ),
                },
                Line::Node(n) => format!(
                    "{}  {:<10} {}",
                    clock(humantime::parse_rfc3339(&n.since).unwrap_or(SystemTime::UNIX_EPOCH)),
                    n.node,
                    n.status
                ),
            };
            self.changes
                .push_back(render::inert::inert(&text).into_owned());
            while self.changes.len() > CHANGES_SHOWN {
                self.changes.pop_front();
            }
        }
    }
}

/// The live table: a header with the nodes' states, what changed, then
/// the cluster table, cut to `rows` lines when the terminal has that many
/// (the top, which says what changed, always shows).
fn screen(
    report: &ClusterReport,
    memory: &Memory,
    status: &str,
    style: &Style,
    now: SystemTime,
    rows: Option<usize>,
) -> String {
    let term = &style.term;
    let mut top = Screen::new();
    let headline = format!(
        "spx-doctor watch · {} nodes from the {} bucket · {} UTC{}",
        report.nodes.len(),
        bucket::BUCKET,
        clock(now),
        if status.is_empty() {
            String::new()
        } else {
            format!(" · {status}")
        }
    );
    top.wrap(term, &Lead::default(), &headline, 2);
    // The nodes in natural order (c2 before c10), as every list.
    let mut states: Vec<(&String, &(&str, SystemTime))> = memory.states.iter().collect();
    states.sort_by(|a, b| natural::cmp(a.0, b.0));
    let states: Vec<String> = states
        .into_iter()
        .map(|(n, (s, since))| match *s {
            "ok" => format!(
                "{n} ok ({} s old)",
                now.duration_since(*since).unwrap_or_default().as_secs()
            ),
            other => format!("{n} {other} since {}", clock(*since)),
        })
        .collect();
    top.wrap(
        term,
        &Lead::default(),
        &format!("nodes: {}", states.join(" · ")),
        2,
    );
    top.line("changes (newest last):");
    if memory.changes.is_empty() {
        top.line("  none since the watch began");
    }
    for c in &memory.changes {
        top.wrap(term, &Lead::indent(2), c, 4);
    }
    top.line("");
    let mut out = top.into_string();
    out.push_str(&render::cluster::table(report, style));
    match rows {
        Some(rows) if out.lines().count() > rows && rows > 2 => {
            let lines: Vec<&str> = out.lines().collect();
            // One line fewer than the terminal: the last newline must not
            // scroll the top away.
            let kept = rows - 2;
            let mut cut = lines[..kept].join("\n");
            cut.push_str(&format!(
                "\n… {} more lines (a taller terminal shows them; `spx-doctor watch --once` prints them all)\n",
                lines.len() - kept
            ));
            cut
        }
        _ => out,
    }
}

/// Why the live view is not current (shown in its header, or on stderr).
fn say(status: &mut String, text: String, json: bool) {
    if json && *status != text && !text.is_empty() {
        render::error_line(&text);
    }
    *status = text;
}

async fn live(
    plan: &Plan,
    nats: &NatsConfig,
    format: WatchFormat,
    style: &Style,
    to_terminal: bool,
) -> anyhow::Result<u8> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let json = format == WatchFormat::Json;
    let began = SystemTime::now();
    let mut view = View {
        plan,
        style,
        json,
        to_terminal,
        began,
        held: BTreeMap::new(),
        written: BTreeMap::new(),
        memory: Memory::default(),
        status: String::new(),
        last_screen: String::new(),
        primed: false,
        floor: None,
        drawn: None,
        took: Duration::ZERO,
        asked: BTreeMap::new(),
    };
    let mut attempt = 0usize;
    let me = nats.node.clone();
    'session: loop {
        attempt += 1;
        let wait = backoff(attempt);
        if !wait.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = term.recv() => return Ok(0),
                _ = int.recv() => return Ok(0),
            }
        }
        let client = match nats
            .connect(
                &format!("spx-doctor watch ({me})"),
                crate::bus::ATTEMPT_TIMEOUT,
                |o| o,
            )
            .await
        {
            Ok(c) => c,
            Err(f) => {
                view.waiting(format!("waiting for NATS: {}", f.detail));
                continue;
            }
        };
        // JetStream says at once when the bucket's stream is deleted.
        let Ok(mut deleted) = client.subscribe(bucket::deleted_advisory()).await else {
            view.waiting("cannot subscribe to JetStream's advisories; reconnecting".into());
            continue;
        };
        let js = async_nats::jetstream::new(client);
        let mut lost_bucket = false;
        'bucket: loop {
            let store = match bucket::open(&js).await {
                Ok(Some(s)) => s,
                Ok(None) => {
                    lost_bucket = true;
                    view.waiting(bucket::missing_said());
                    tokio::select! {
                        _ = tokio::time::sleep(BUCKET_POLL) => {}
                        _ = term.recv() => return Ok(0),
                        _ = int.recv() => return Ok(0),
                    }
                    continue 'bucket;
                }
                Err(e) => {
                    view.waiting(format!("waiting for the bucket: {e}"));
                    continue 'session;
                }
            };
            // Who wrote each revision the bucket holds, each node's latest
            // whole, then each new one as it comes. Each answer within 5 s:
            // the whole read is not bounded (at 1,024 nodes it is 465 MB).
            let deadline = Instant::now() + Duration::from_secs(3600);
            let step = Duration::from_secs(5);
            if std::mem::take(&mut lost_bucket) {
                view.floor = Some(SystemTime::now());
            }
            let read = bucket::history(&js, &store, deadline, step, |read| view.read(read)).await;
            view.written.clear();
            let mut watch = match read {
                Ok(w) => w,
                Err(e) => {
                    view.say(e);
                    continue 'session;
                }
            };
            attempt = 0;
            view.say(String::new());
            let mut ticker = tokio::time::interval(REDRAW);
            loop {
                tokio::select! {
                    e = watch.next() => match e {
                        Some(Ok(e)) => {
                            view.take(&Revision::of(&e));
                            // At most one judgement a REDRAW for the
                            // revisions (hundreds of nodes write several a
                            // second); the tick shows what came since.
                            if !view.drawn_within(view.gap()) {
                                view.catch_up(&store).await;
                                view.draw()?;
                            }
                            continue;
                        }
                        Some(Err(e)) => {
                            view.say(one_line(&format!("the watch of the bucket ended: {e}; reopening")));
                            continue 'bucket;
                        }
                        None => {
                            view.say("the watch of the bucket ended; reopening".into());
                            continue 'bucket;
                        }
                    },
                    m = deleted.next() => {
                        if m.is_none() {
                            continue 'session;
                        }
                        lost_bucket = true;
                        view.waiting(bucket::missing_said());
                        continue 'bucket;
                    }
                    // The first tick is at once: the state found.
                    _ = ticker.tick() => {
                        if view.drawn_within(view.gap()) {
                            continue;
                        }
                    }
                    _ = term.recv() => return Ok(0),
                    _ = int.recv() => return Ok(0),
                }
                view.catch_up(&store).await;
                view.draw()?;
            }
        }
    }
}

/// How long the live view waits for the server's latest revision of a
/// node it would show stale.
const CONFIRM_WITHIN: Duration = Duration::from_secs(2);

/// How often the live view judges the cluster at most (beside the
/// revision that finds it idle for that long), and at least.
const REDRAW: Duration = Duration::from_secs(1);

/// The live view: what is held, what changed, what is said.
struct View<'a> {
    plan: &'a Plan,
    style: &'a Style,
    json: bool,
    to_terminal: bool,
    began: SystemTime,
    held: BTreeMap<String, Held>,
    /// Writers read from the bucket's history's headers, for nodes whose
    /// latest revision has not come yet (only while the history is read).
    written: BTreeMap<String, Writers>,
    memory: Memory,
    /// Why the view is not current (its header, or a line on stderr).
    status: String,
    last_screen: String,
    /// The first judgement is the state found, not a change.
    primed: bool,
    /// When the bucket was last made again.
    floor: Option<SystemTime>,
    /// When the view was last judged and drawn.
    drawn: Option<Instant>,
    /// How long the last judgement took.
    took: Duration,
    /// Nodes found stale or unknown and asked of the server: the stored
    /// time of the revision held then (`None`: none held).
    asked: BTreeMap<String, Option<SystemTime>>,
}

impl View<'_> {
    fn take(&mut self, r: &Revision) {
        if self.plan.nodes.iter().any(|n| n.name == r.key) {
            hold(&mut self.held, &mut self.written, r);
        }
    }

    /// What the bucket's history gives: a revision's headers, or a node's
    /// latest revision.
    fn read(&mut self, read: Read) {
        match read {
            Read::Written(w) if self.plan.nodes.iter().any(|n| n.name == w.key) => {
                hold_written(&mut self.written, w)
            }
            Read::Written(_) => {}
            Read::Latest(r) => self.take(&r),
        }
    }

    fn say(&mut self, text: String) {
        say(&mut self.status, text, self.json);
    }

    /// While there is nothing to show: why, on the terminal (or stderr).
    fn waiting(&mut self, text: String) {
        let changed = self.status != text;
        self.say(text);
        if changed || self.to_terminal {
            draw_waiting(&self.status, self.json, self.to_terminal);
        }
    }

    /// Before a node is shown stale or unknown, the server's latest
    /// revision of it, taken when it is newer than the one held: the
    /// bucket's watch may have stopped delivering (its consumer lost on the
    /// server says nothing for two 5 s heartbeats; it ends then and is
    /// opened again) or fallen behind. Each such node is asked once per
    /// revision held; an answer that does not come in time, or an error,
    /// decides nothing (the advisory or the watch's end says a deleted
    /// bucket).
    async fn catch_up(&mut self, store: &async_nats::jetstream::kv::Store) {
        let now = SystemTime::now();
        let suspects: Vec<(String, Option<SystemTime>)> = self
            .plan
            .nodes
            .iter()
            .filter_map(|n| {
                let h = self.held.get(&n.name);
                let s = node_state(&n.name, h, now, self.began, self.floor);
                let stored = h.map(|h| h.stored);
                (matches!(s.status, "stale" | "unknown")
                    && self.asked.get(&n.name) != Some(&stored))
                .then(|| (n.name.clone(), stored))
            })
            .collect();
        for (node, stored) in suspects {
            let latest = tokio::time::timeout(CONFIRM_WITHIN, store.entry(node.as_str())).await;
            match latest {
                Ok(Ok(Some(e))) if stored.is_none_or(|s| SystemTime::from(e.created) > s) => {
                    self.take(&Revision::of(&e));
                }
                Ok(Ok(_)) => {
                    self.asked.insert(node, stored);
                }
                Ok(Err(_)) | Err(_) => {}
            }
        }
    }

    /// Whether the view was judged and drawn less than `d` ago.
    fn drawn_within(&self, d: Duration) -> bool {
        self.drawn.is_some_and(|t| t.elapsed() < d)
    }

    /// The least time between two judgements' starts: [`REDRAW`], or twice
    /// what the last one took, so judging takes at most half a core (at
    /// 1,024 nodes a judgement takes about a second).
    fn gap(&self) -> Duration {
        REDRAW.max(self.took * 2)
    }

    /// Judge what is held now and show what changed.
    fn draw(&mut self) -> anyhow::Result<()> {
        let started = Instant::now();
        self.drawn = Some(started);
        let shown = self.judge_and_show();
        // What the judgement made and let go, back to the kernel.
        crate::heap::give_back_freed_memory();
        self.took = started.elapsed();
        shown
    }

    fn judge_and_show(&mut self) -> anyhow::Result<()> {
        let now = SystemTime::now();
        let (report, states) = judge(self.plan, &self.held, now, self.began, self.floor);
        let lines = self.memory.update(&report, &states);
        if self.json {
            let mut text = String::new();
            for l in &lines {
                let v = match l {
                    Line::Transition(t) => serde_json::to_string(t),
                    Line::Node(n) => serde_json::to_string(n),
                };
                text.push_str(&v.expect("a line always serializes"));
                text.push('\n');
            }
            if !text.is_empty() {
                render::to_stdout(&text)?;
            }
            return Ok(());
        }
        if self.primed {
            self.memory.remember(&lines);
        }
        self.primed = true;
        let rows = self
            .to_terminal
            .then(terminal_size::terminal_size)
            .flatten()
            .map(|(_, h)| usize::from(h.0));
        let view = screen(&report, &self.memory, &self.status, self.style, now, rows);
        if self.to_terminal {
            // Home, the view with each line's rest cleared, then
            // everything below it cleared: no flicker.
            let body: String = view.lines().map(|l| format!("{l}\x1b[K\n")).collect();
            render::to_stdout(&format!("\x1b[H{body}\x1b[J"))?;
        } else if !lines.is_empty() || self.last_screen.is_empty() {
            render::to_stdout(&format!("{view}\n"))?;
        }
        self.last_screen = view;
        Ok(())
    }
}

/// While there is no bucket to show: the reason, on the terminal.
fn draw_waiting(status: &str, json: bool, to_terminal: bool) {
    if !json && to_terminal {
        let _ = render::to_stdout(&format!("\x1b[H\x1b[2Jspx-doctor watch · {status}\n"));
    } else if !json {
        render::error_line(status);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn value(node: &str, interval_ms: u64, who: Option<&str>) -> bytes::Bytes {
        let mut v = json!({
            "node": node, "interval_ms": interval_ms, "written_at": "2026-01-01T00:00:00.000Z",
            "report": {"schema_version": 1, "node": node, "checks": []}
        });
        if let Some(m) = who {
            v["identity"] = json!({"machine_id": m, "boot_id": "b007", "started_at": "2026-01-01T00:00:00Z", "addresses": ["198.19.0.3"]});
        }
        bytes::Bytes::from(serde_json::to_vec(&v).unwrap())
    }

    fn revision(node: &str, stored: SystemTime, interval_ms: u64, who: Option<&str>) -> Revision {
        Revision {
            key: node.into(),
            value: value(node, interval_ms, who),
            stored,
            revision: 7,
            put: true,
        }
    }

    fn held(node: &str, stored: SystemTime, interval_ms: u64) -> Held {
        let mut h = BTreeMap::new();
        hold(
            &mut h,
            &mut BTreeMap::new(),
            &revision(node, stored, interval_ms, None),
        );
        h.remove(node).unwrap()
    }

    #[test]
    fn a_node_is_stale_past_two_of_its_own_intervals_and_unknown_without_an_entry() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let h = held("n1", t0, 2000);
        let s = node_state("n1", Some(&h), t0 + Duration::from_secs(4), t0, None);
        assert!(s.answer.is_ok() && s.status == "ok" && s.since == t0);
        let s = node_state("n1", Some(&h), t0 + Duration::from_millis(4001), t0, None);
        assert_eq!(s.status, "stale");
        assert_eq!(s.since, t0 + Duration::from_secs(4));
        let why = s.answer.unwrap_err();
        assert_eq!(why.kind, UnreachedKind::Stale);
        assert!(
            why.detail.contains("more than 2 of its intervals (2s)"),
            "{}",
            why.detail
        );
        // The bucket made again at t0 + 3 s: its age counts from then.
        let floor = Some(t0 + Duration::from_secs(3));
        let s = node_state("n1", Some(&h), t0 + Duration::from_secs(6), t0, floor);
        assert_eq!(s.status, "ok");
        // Its own interval: a 60 s agent is fine at 100 s.
        let slow = held("n2", t0, 60_000);
        assert_eq!(
            node_state("n2", Some(&slow), t0 + Duration::from_secs(100), t0, None).status,
            "ok"
        );
        let s = node_state("n3", None, t0, t0, None);
        assert_eq!(
            (s.answer.unwrap_err().kind, s.status),
            (UnreachedKind::NoReport, "unknown")
        );
        // A value that is not an entry of ours is no answer.
        let mut h = BTreeMap::new();
        hold(
            &mut h,
            &mut BTreeMap::new(),
            &Revision {
                value: bytes::Bytes::from_static(b"{}"),
                ..revision("n4", t0, 2000, None)
            },
        );
        assert_eq!(
            node_state("n4", h.get("n4"), t0, t0, None)
                .answer
                .unwrap_err()
                .kind,
            UnreachedKind::InvalidAnswer
        );
    }

    /// Issue 36: a report that did not fit is `too-large` in `--cluster`'s
    /// words, never a node without a report.
    #[test]
    fn a_small_entry_is_too_large_in_the_words_of_cluster() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let full = Entry::parse("n1", &value("n1", 2000, None)).unwrap();
        let small = full.too_large(41_233, 8192, "max_payload");
        let mut h = BTreeMap::new();
        hold(
            &mut h,
            &mut BTreeMap::new(),
            &Revision {
                value: bytes::Bytes::from(small.to_json()),
                ..revision("n1", t0, 2000, None)
            },
        );
        let s = node_state("n1", h.get("n1"), t0 + Duration::from_secs(1), t0, None);
        assert_eq!(s.status, "too-large");
        let why = s.answer.unwrap_err();
        assert_eq!(why.kind, UnreachedKind::TooLarge);
        assert!(
            why.to_string().starts_with("the report does not fit NATS: too-large: the report (41233 bytes) does not fit the server's max_payload (8192 bytes); its run at 2026-01-01T00:00:00.000Z"),
            "{why}"
        );
    }

    #[test]
    fn revisions_alternating_between_two_agents_are_a_duplicate() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut h = BTreeMap::new();
        for (i, who) in ["aaaa", "bbbb", "aaaa", "bbbb"].iter().enumerate() {
            hold(
                &mut h,
                &mut BTreeMap::new(),
                &revision("n2", t0 + Duration::from_secs(i as u64), 2000, Some(who)),
            );
        }
        let s = node_state("n2", h.get("n2"), t0 + Duration::from_secs(4), t0, None);
        assert_eq!(s.status, "duplicate");
        assert_eq!(s.agents.len(), 2);
        assert_eq!(s.answer.unwrap_err().kind, UnreachedKind::DuplicateNode);
        // Six seconds (three intervals) after the last alternation, it is
        // one agent's node again.
        for i in 0..5 {
            hold(
                &mut h,
                &mut BTreeMap::new(),
                &revision(
                    "n2",
                    t0 + Duration::from_secs(10 + 2 * i),
                    2000,
                    Some("aaaa"),
                ),
            );
        }
        let s = node_state("n2", h.get("n2"), t0 + Duration::from_secs(19), t0, None);
        assert_eq!(s.status, "ok", "{:?}", s.answer);
        assert_eq!(h["n2"].writers.len(), bucket::HISTORY as usize);
    }

    /// The history's writers come from its headers; the node's latest
    /// revision, read whole after them, is counted once.
    #[test]
    fn writers_read_from_headers_then_the_latest_whole_find_a_duplicate() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let who = |m: &str| {
            Entry::parse("n2", &value("n2", 2000, Some(m)))
                .unwrap()
                .identity
        };
        let (mut held, mut written) = (BTreeMap::new(), BTreeMap::new());
        let at = |i: u64| t0 + Duration::from_secs(i);
        for (i, m) in ["aaaa", "bbbb", "aaaa", "bbbb"].iter().enumerate() {
            hold_written(
                &mut written,
                Written {
                    key: "n2".into(),
                    stored: at(i as u64),
                    put: true,
                    identity: who(m),
                },
            );
        }
        hold(
            &mut held,
            &mut written,
            &revision("n2", at(3), 2000, Some("bbbb")),
        );
        assert!(written.is_empty(), "taken into the node's writers");
        assert_eq!(held["n2"].writers.len(), 4, "the latest counted once");
        let s = node_state("n2", held.get("n2"), at(4), t0, None);
        assert_eq!((s.status, s.agents.len()), ("duplicate", 2));
        // A delete in the history forgets what was written before it.
        let mut written = BTreeMap::new();
        for put in [true, false] {
            hold_written(
                &mut written,
                Written {
                    key: "n3".into(),
                    stored: t0,
                    put,
                    identity: who("aaaa"),
                },
            );
        }
        assert!(written.is_empty());
    }
}
