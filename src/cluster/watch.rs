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
//! run is inconclusive (exit 2) unless something failed.
//!
//! - `--once`: one cluster report from what the bucket holds now, drawn as
//!   `--cluster` draws it (`--format table|json`), with its exit codes.
//! - live, on a terminal: the cluster table redrawn as entries arrive and
//!   every second, with the nodes' states and what changed and since when.
//! - live, `--format json`: one JSON object per line, never redrawn: a
//!   check's transition in the agents' event shape (`node: null` for a
//!   cluster check) and a node's change of state
//!   (`{"kind":"node","node","status","since"}`); first the state as found.

use std::collections::{BTreeMap, VecDeque};
use std::io::IsTerminal;
use std::time::{Duration, Instant, SystemTime};

use async_nats::jetstream::kv;
use futures_util::StreamExt;
use serde_json::Value;
use spx_checks::cluster::{NodeAnswer, Transport, Unreached, UnreachedKind};
use spx_checks::{natural, ConfigState};
use tokio::signal::unix::{signal, SignalKind};

use super::plan::Plan;
use super::Gathered;
use crate::bus::bucket::{self, Entry};
use crate::bus::events::{self, NodeState, Seen, Transition};
use crate::bus::{backoff, one_line, NatsConfig};
use crate::cli::{RunArgs, WatchArgs, WatchFormat};
use crate::render::inert::{Lead, Screen};
use crate::render::term::Term;
use crate::render::{self, Style};
use crate::report::cluster::ClusterReport;
use crate::settings::UsageError;

/// A report older than this many of its node's intervals is stale.
pub const STALE_AFTER_INTERVALS: u32 = 2;
/// Transitions the live table keeps on screen.
const CHANGES_SHOWN: usize = 12;

/// What the bucket holds for one node.
#[derive(Clone, Debug)]
pub struct Held {
    /// The entry, or why its value is not one.
    pub entry: Result<Entry, String>,
    /// When the server stored this revision.
    pub stored: SystemTime,
    pub revision: u64,
}

impl Held {
    fn of(e: &kv::Entry) -> Held {
        Held {
            entry: Entry::parse(&e.key, &e.value),
            stored: SystemTime::from(e.created),
            revision: e.revision,
        }
    }
}

/// A node's state at `now`: its answer for the judgement, its status
/// word (`ok`, `stale`, `unknown`) and since when.
pub fn node_state(
    node: &str,
    held: Option<&Held>,
    now: SystemTime,
    watch_began: SystemTime,
) -> (Result<Value, Unreached>, &'static str, SystemTime) {
    let Some(h) = held else {
        return (
            Err(Unreached::new(
                UnreachedKind::NoReport,
                format!("no entry under {node} in the {} bucket", bucket::BUCKET),
            )),
            "unknown",
            watch_began,
        );
    };
    let entry = match &h.entry {
        Ok(e) => e,
        Err(why) => {
            return (
                Err(Unreached::new(
                    UnreachedKind::InvalidAnswer,
                    format!("revision {}: {why}", h.revision),
                )),
                "unknown",
                h.stored,
            )
        }
    };
    let limit = entry.interval() * STALE_AFTER_INTERVALS;
    let age = now.duration_since(h.stored).unwrap_or_default();
    if age > limit {
        let shown =
            |d: Duration| humantime::format_duration(Duration::from_secs(d.as_secs())).to_string();
        return (
            Err(Unreached::new(
                UnreachedKind::Stale,
                format!(
                    "its latest report is {} old (written {}), more than {STALE_AFTER_INTERVALS} of its intervals ({})",
                    shown(age),
                    humantime::format_rfc3339_seconds(h.stored),
                    shown(entry.interval())
                ),
            )),
            "stale",
            h.stored + limit,
        );
    }
    (Ok(entry.report.clone()), "ok", h.stored)
}

/// The cluster report over what is held, at `now`.
fn judge(
    plan: &Plan,
    held: &BTreeMap<String, Held>,
    now: SystemTime,
    began: SystemTime,
) -> (ClusterReport, Vec<(String, &'static str, SystemTime)>) {
    let mut states = Vec::with_capacity(plan.nodes.len());
    let nodes: Vec<NodeAnswer> = plan
        .nodes
        .iter()
        .map(|n| {
            let (answer, status, since) = node_state(&n.name, held.get(&n.name), now, began);
            states.push((n.name.clone(), status, since));
            NodeAnswer::new(n.name.clone(), None, answer)
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
    rt.block_on(live(&plan, &nats, args.format, &style, to_terminal))
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
        .map_err(|e| anyhow::anyhow!("watch: {e}"))?;
    let mut held = BTreeMap::new();
    for n in &plan.nodes {
        let got = tokio::time::timeout(left(), store.entry(n.name.as_str()))
            .await
            .map_err(|_| anyhow::anyhow!("watch: no answer from JetStream within --timeout"))?
            .map_err(|e| {
                anyhow::anyhow!(
                    "watch: cannot read {}'s entry: {}",
                    n.name,
                    one_line(&e.to_string())
                )
            })?;
        if let Some(e) = got.filter(|e| e.operation == kv::Operation::Put) {
            held.insert(n.name.clone(), Held::of(&e));
        }
    }
    let now = SystemTime::now();
    let (report, _) = judge(plan, &held, now, now);
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
            let Some(doc) = &n.report else { continue };
            let now = events::seen(n.checks());
            let since = doc.get("started_at").and_then(Value::as_str).unwrap_or("");
            let before = self.nodes.get(&n.name);
            out.extend(
                events::transitions(Some(&n.name), before, &now, since)
                    .into_iter()
                    .map(Line::Transition),
            );
            self.nodes.insert(n.name.clone(), now);
        }
        let checks: Vec<Value> = report
            .checks
            .iter()
            .map(|c| serde_json::to_value(c).expect("a check always serializes"))
            .collect();
        let now = events::seen(&checks);
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
    let mut held: BTreeMap<String, Held> = BTreeMap::new();
    let mut memory = Memory::default();
    let mut status = String::new();
    let mut last_screen = String::new();
    // The first judgement is the state found, not a change.
    let mut primed = false;
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
                Duration::from_secs(5),
                |o| o,
            )
            .await
        {
            Ok(c) => c,
            Err(f) => {
                say(&mut status, format!("waiting for NATS: {}", f.detail), json);
                draw_waiting(&status, json, to_terminal);
                continue;
            }
        };
        let js = async_nats::jetstream::new(client);
        let store = match bucket::open(&js).await {
            Ok(s) => s,
            Err(e) => {
                say(&mut status, format!("waiting for the bucket: {e}"), json);
                draw_waiting(&status, json, to_terminal);
                continue;
            }
        };
        let mut watch = match store.watch_all().await {
            Ok(w) => w,
            Err(e) => {
                say(
                    &mut status,
                    one_line(&format!("cannot watch the bucket: {e}")),
                    json,
                );
                draw_waiting(&status, json, to_terminal);
                continue;
            }
        };
        attempt = 0;
        say(&mut status, String::new(), json);
        // What the bucket holds now (each config node's latest), judged at
        // once; then every new revision as it comes.
        for n in &plan.nodes {
            match tokio::time::timeout(Duration::from_secs(5), store.entry(n.name.as_str())).await {
                Ok(Ok(Some(e))) if e.operation == kv::Operation::Put => {
                    held.insert(n.name.clone(), Held::of(&e));
                }
                Ok(Ok(_)) => {
                    held.remove(&n.name);
                }
                Ok(Err(e)) => {
                    say(
                        &mut status,
                        one_line(&format!("cannot read {}'s entry: {e}", n.name)),
                        json,
                    );
                    continue 'session;
                }
                Err(_) => {
                    say(
                        &mut status,
                        "no answer from JetStream; reopening".into(),
                        json,
                    );
                    continue 'session;
                }
            }
        }
        let mut ticker = tokio::time::interval(Duration::from_secs(1));
        loop {
            let dirty;
            tokio::select! {
                e = watch.next() => match e {
                    Some(Ok(e)) => {
                        if plan.nodes.iter().any(|n| n.name == e.key) {
                            if e.operation == kv::Operation::Put {
                                held.insert(e.key.clone(), Held::of(&e));
                            } else {
                                held.remove(&e.key);
                            }
                        }
                        dirty = true;
                    }
                    Some(Err(e)) => {
                        say(&mut status, one_line(&format!("the watch of the bucket ended: {e}; reopening")), json);
                        continue 'session;
                    }
                    None => {
                        say(&mut status, "the watch of the bucket ended; reopening".into(), json);
                        continue 'session;
                    }
                },
                // The first tick is at once: the state found.
                _ = ticker.tick() => { dirty = true; }
                _ = term.recv() => return Ok(0),
                _ = int.recv() => return Ok(0),
            }
            // A revision already judged (the watch repeats what was read)
            // changes nothing; the clock does, once a second.
            if !dirty {
                continue;
            }
            let now = SystemTime::now();
            let (report, states) = judge(plan, &held, now, began);
            let lines = memory.update(&report, &states);
            if json {
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
                continue;
            }
            if primed {
                memory.remember(&lines);
            }
            primed = true;
            let rows = to_terminal
                .then(terminal_size::terminal_size)
                .flatten()
                .map(|(_, h)| usize::from(h.0));
            let view = screen(&report, &memory, &status, style, now, rows);
            if to_terminal {
                // Home, the view with each line's rest cleared, then
                // everything below it cleared: no flicker.
                let body: String = view.lines().map(|l| format!("{l}\x1b[K\n")).collect();
                render::to_stdout(&format!("\x1b[H{body}\x1b[J"))?;
            } else if !lines.is_empty() || last_screen.is_empty() {
                render::to_stdout(&format!("{view}\n"))?;
            }
            last_screen = view;
        }
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

    fn held(node: &str, stored: SystemTime, interval_ms: u64) -> Held {
        let bytes = serde_json::to_vec(&json!({
            "node": node, "interval_ms": interval_ms, "written_at": "2026-01-01T00:00:00.000Z",
            "report": {"schema_version": 1, "node": node, "checks": []}
        }))
        .unwrap();
        Held {
            entry: Entry::parse(node, &bytes),
            stored,
            revision: 7,
        }
    }

    #[test]
    fn a_node_is_stale_past_two_of_its_own_intervals_and_unknown_without_an_entry() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let h = held("n1", t0, 2000);
        let (a, s, since) = node_state("n1", Some(&h), t0 + Duration::from_secs(4), t0);
        assert!(a.is_ok() && s == "ok" && since == t0);
        let (a, s, since) = node_state("n1", Some(&h), t0 + Duration::from_millis(4001), t0);
        assert_eq!(s, "stale");
        assert_eq!(since, t0 + Duration::from_secs(4));
        let why = a.unwrap_err();
        assert_eq!(why.kind, UnreachedKind::Stale);
        assert!(
            why.detail.contains("more than 2 of its intervals (2s)"),
            "{}",
            why.detail
        );
        // Its own interval: a 60 s agent is fine at 100 s.
        let slow = held("n2", t0, 60_000);
        assert_eq!(
            node_state("n2", Some(&slow), t0 + Duration::from_secs(100), t0).1,
            "ok"
        );
        let (a, s, _) = node_state("n3", None, t0, t0);
        assert_eq!(
            (a.unwrap_err().kind, s),
            (UnreachedKind::NoReport, "unknown")
        );
        // A value that is not an entry of ours is no answer.
        let bad = Held {
            entry: Entry::parse("n4", b"{}"),
            stored: t0,
            revision: 1,
        };
        assert_eq!(
            node_state("n4", Some(&bad), t0, t0).0.unwrap_err().kind,
            UnreachedKind::InvalidAnswer
        );
    }
}
