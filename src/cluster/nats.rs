//! `--cluster --via nats`: every node's report from its agent, over
//! Spinifex's own bus, in one round, as `spx get nodes` gathers
//! `spinifex.node.status`.
//!
//! This node connects as its daemon does (its `[nodes.<node>.nats]`),
//! publishes the request to each selected node's own subject with a reply
//! inbox per node and a W3C `traceparent`, and gathers until every agent
//! that acknowledged has answered or the run's one deadline. An agent
//! acknowledges at once, then answers with its JSON v1 report or a typed
//! refusal, every message carrying who it is ([`identity`]). Every answer
//! for a node within the window is kept, not only the first: two agents
//! answering as one node (a machine re-imaged from its disk) are a
//! duplicate, and neither report is taken as the node's. A node whose
//! subject nobody holds is named as having no agent at once (the server's
//! "no responders"); one whose subject is held but that said nothing is
//! silent (stopped, hung, or overloaded); one that acknowledged but sent
//! nothing by the deadline has run out of time. A failure of
//! this node's own session (connect, TLS, token) is every node's answer,
//! named once by `cluster.reachable`. A report is checked for the shape
//! of JSON v1 before it is trusted, exactly as one that came over ssh.
//!
//! What the nodes send at once is bounded. The request says the largest
//! report each may put in its answer ([`inline_max_for`]: 16 MiB shared by
//! the nodes asked); a node whose report is larger answers `held` with its
//! size and keeps it, and this side fetches the held reports itself with
//! at most 16 MiB of them on the way at any time. nats-server buffers at
//! most `max_pending` (64 MiB by default) for one client and cuts a client
//! it has sent more as a slow consumer: at 1,024 nodes of 476 KB reports,
//! sent at once, 49 of 1,024 arrived.

use std::time::{Duration, Instant};

use spx_checks::ConfigState;

use async_nats::{HeaderMap, StatusCode};
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::Value;
use spx_checks::cluster::{AgentIdentity, Received, ReportText, Unreached, UnreachedKind};

use crate::bus::identity;
use crate::bus::wire::{
    self, ErrorReply, Fetch, RefusalKind, Request, TraceParent, HEADER_NODE, HEADER_REPLY,
    HEADER_REPORT_BYTES, HEADER_REQUEST, HEADER_TRACEPARENT,
};
use crate::bus::{one_line, FailureKind, NatsConfig};
use crate::cli::RunArgs;
use crate::settings::UsageError;

use super::args::ViaFlag;
use super::plan::Plan;

/// The flags of a cluster run a NATS request cannot carry, as given
/// (taken before the plan consumes the flags).
pub struct Carried {
    via: Option<ViaFlag>,
    given: Vec<&'static str>,
    mtu: Option<u32>,
    /// `--check` or `--skip` was given: the nodes are told which checks.
    selects: bool,
}

impl Carried {
    pub fn of(args: &RunArgs) -> Carried {
        let mut given = Vec::new();
        for (flag, on) in [
            ("--peer", !args.peer.is_empty()),
            ("--interface", !args.interface.is_empty()),
            ("--ovs-db", args.ovs_db.is_some()),
            ("--nb-db", args.nb_db.is_some()),
            ("--sb-db", args.sb_db.is_some()),
            ("--strict", args.strict),
            ("--allow", args.allow.iter().any(|a| !a.is_empty())),
            ("--deny", args.deny.iter().any(|a| !a.is_empty())),
            ("--ssh-config", args.cluster.ssh_config.is_some()),
            ("--ssh-user", args.cluster.ssh_user.is_some()),
            ("--remote-bin", args.cluster.remote_bin.is_some()),
        ] {
            if on {
                given.push(flag);
            }
        }
        Carried {
            via: args.cluster.via,
            given,
            mtu: args.mtu,
            selects: args
                .check
                .iter()
                .chain(&args.skip)
                .any(|s| !s.trim().is_empty()),
        }
    }
}

/// Whether this run goes over NATS (`Some`, with this node's bus), by the
/// default rule or `--via`, and whether everything asked can be carried.
pub fn choose(plan: &Plan, carried: &Carried) -> Result<Option<NatsConfig>, UsageError> {
    let ConfigState::Loaded { path, .. } = &plan.settings.config else {
        return Ok(None);
    };
    let me = plan.config.node.as_deref();
    let section = match me {
        Some(me) => {
            NatsConfig::read(path, me).map_err(|e| UsageError(format!("--cluster: {e}")))?
        }
        None => None,
    };
    let by_default = carried.via.is_none();
    let via = carried.via.unwrap_or(if section.is_some() {
        ViaFlag::Nats
    } else {
        ViaFlag::Ssh
    });
    if via == ViaFlag::Ssh {
        return Ok(None);
    }
    let Some(me) = me else {
        return Err(UsageError(format!(
            "--via nats: {} names no `node`, so there is no [nodes.NODE.nats] to reach NATS by (use --via ssh)",
            path.display()
        )));
    };
    let Some(section) = section else {
        return Err(UsageError(format!(
            "--via nats: {} has no [nodes.{me}.nats] (host, cacert, acl.token) to reach NATS by (use --via ssh)",
            path.display()
        )));
    };
    let why = if by_default {
        format!(" ([nodes.{me}.nats] makes NATS the default)")
    } else {
        String::new()
    };
    let refuse = |flag: &str| {
        UsageError(format!(
            "{flag}: a request over NATS carries only --check, --skip, --for, --timeout and --sample (each agent reads its own config); run with --via ssh to pass {flag}{why}"
        ))
    };
    if let Some(flag) = carried.given.first() {
        return Err(refuse(flag));
    }
    let profile_mtu = plan.profile.and_then(|p| p.default_mtu);
    if carried.mtu.is_some() && carried.mtu != profile_mtu {
        return Err(refuse("--mtu"));
    }
    if plan.settings.options.probe_timeout != Duration::from_secs(1) {
        return Err(refuse("--probe-timeout"));
    }
    if plan.settings.options.timeout > wire::MAX_TIMEOUT {
        return Err(UsageError(format!(
            "--timeout: over NATS an agent runs at most {} s per request, and this run would give the nodes {} s (use --via ssh for longer runs)",
            wire::MAX_TIMEOUT.as_secs(),
            plan.settings.options.timeout.as_secs()
        )));
    }
    Ok(Some(section))
}

/// The request every agent is sent: the plan's node checks, profile,
/// timeout and sample, and the node that reads OVN.
pub fn request(plan: &Plan, carried: &Carried) -> Request {
    Request {
        id: random_hex(8),
        // As over ssh: the node checks when --check/--skip chose them
        // (none selected: the nodes still answer), else the default.
        checks: if carried.selects {
            if plan.node_checks.is_empty() {
                vec!["cluster".to_owned()]
            } else {
                plan.node_checks.iter().map(|c| c.to_string()).collect()
            }
        } else {
            Vec::new()
        },
        skips: Vec::new(),
        profile: plan.profile.map(|p| p.preflight),
        timeout: plan.settings.options.timeout,
        sample: plan.settings.options.sample,
        ovn_read_by: Some(plan.reader.clone()),
        inline_max: Some(inline_max_for(plan.nodes.len())),
    }
}

/// What every node's answers may bring at once, shared by the nodes asked.
const INLINE_BUDGET: usize = 16 << 20;
/// What held reports fetched may bring at once.
const FETCH_BUDGET: usize = 16 << 20;

/// The largest report a node may put in its answer when `nodes` are asked.
pub fn inline_max_for(nodes: usize) -> usize {
    (INLINE_BUDGET / nodes.max(1)).clamp(wire::MIN_INLINE, wire::MAX_INLINE)
}

/// A node's report is a few tens of KiB; the server's max_payload bounds
/// it anyway, and this bounds what this side holds whatever the server.
const MAX_REPLY: usize = 16 << 20;

/// What to ask, of whom, until when.
pub struct Gather {
    pub config: NatsConfig,
    pub request: Request,
    /// The selected nodes, in order.
    pub nodes: Vec<String>,
    pub deadline: Instant,
    pub traceparent: TraceParent,
}

/// What one node answered, and every agent that answered as it.
pub struct NodeGathered {
    /// Read as it arrived ([`Received`]).
    pub report: Result<Received, Unreached>,
    pub agents: Vec<AgentIdentity>,
}

/// One answer per selected node, in order.
pub fn gather(g: Gather) -> Vec<NodeGathered> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    match runtime {
        Ok(rt) => rt.block_on(run(&g)),
        Err(e) => every(
            &g,
            UnreachedKind::NatsConnect,
            format!("cannot start the NATS client: {e}"),
        ),
    }
}

fn every(g: &Gather, kind: UnreachedKind, detail: String) -> Vec<NodeGathered> {
    g.nodes
        .iter()
        .map(|_| NodeGathered {
            report: Err(Unreached::new(kind, detail.clone())),
            agents: Vec::new(),
        })
        .collect()
}

/// What one agent has said so far.
#[derive(Clone)]
enum Said {
    Accepted,
    Done(Result<Received, Unreached>),
}

/// What every agent of one node has said: by identity (`None`: a doctor
/// that does not say who it is), in the order first heard.
#[derive(Default)]
struct Heard {
    agents: Vec<(Option<AgentIdentity>, Said)>,
    /// The server said no one holds the node's subject.
    no_responders: bool,
}

impl Heard {
    fn said(&mut self, who: Option<AgentIdentity>, what: Said) {
        let same = |a: &Option<AgentIdentity>| match (a, &who) {
            (Some(a), Some(b)) => a.same_agent(b),
            (None, None) => true,
            _ => false,
        };
        match self.agents.iter_mut().find(|(a, _)| same(a)) {
            Some((_, Said::Done(_))) => {}
            Some((_, s)) => *s = what,
            None => self.agents.push((who, what)),
        }
    }

    /// Every agent that acknowledged has answered, and someone did (or no
    /// one holds the subject).
    fn done(&self) -> bool {
        self.no_responders
            || (!self.agents.is_empty()
                && self.agents.iter().all(|(_, s)| matches!(s, Said::Done(_))))
    }

    /// The node's answer at the end of the window.
    fn answer(self, node: &str, window: Duration) -> NodeGathered {
        let known: Vec<AgentIdentity> = self.agents.iter().filter_map(|(a, _)| a.clone()).collect();
        if self.agents.len() > 1 {
            let at: Vec<String> = self
                .agents
                .iter()
                .map(|(a, _)| {
                    a.as_ref()
                        .map_or("an agent that did not say who it is".to_owned(), |a| {
                            format!("at {}", a.addresses_said())
                        })
                })
                .collect();
            return NodeGathered {
                report: Err(Unreached::new(
                    UnreachedKind::DuplicateNode,
                    format!(
                        "{} agents answered as {node} in this run ({}): see cluster.bus",
                        self.agents.len(),
                        at.join(" and ")
                    ),
                )),
                agents: known,
            };
        }
        let report = match self.agents.into_iter().next() {
            Some((_, Said::Done(answer))) => answer,
            Some((_, Said::Accepted)) => Err(Unreached::new(
                UnreachedKind::Deadline,
                format!(
                    "{node}'s agent accepted the request but sent no report by the deadline (--timeout)"
                ),
            )),
            None if self.no_responders => Err(no_agent(node)),
            None => Err(Unreached::new(
                UnreachedKind::AgentSilent,
                format!(
                    "its agent is subscribed but did not answer within {:.1} s (stopped, hung, or overloaded)",
                    window.as_secs_f64()
                ),
            )),
        };
        NodeGathered {
            report,
            agents: known,
        }
    }
}

async fn run(g: &Gather) -> Vec<NodeGathered> {
    let left = g.deadline.saturating_duration_since(Instant::now());
    let me = &g.config.node;
    let client = match g
        .config
        .connect(&format!("spx-doctor --cluster ({me})"), left, |o| o)
        .await
    {
        Ok(c) => c,
        Err(f) => {
            let kind = match f.kind {
                FailureKind::Connect => UnreachedKind::NatsConnect,
                FailureKind::Tls => UnreachedKind::NatsTls,
                FailureKind::Auth => UnreachedKind::NatsAuth,
            };
            return every(g, kind, f.detail);
        }
    };
    let inbox = client.new_inbox();
    let mut sub = match client.subscribe(format!("{inbox}.*")).await {
        Ok(s) => s,
        Err(e) => {
            return every(
                g,
                UnreachedKind::NatsConnect,
                one_line(&format!("cannot subscribe to a reply inbox: {e}")),
            )
        }
    };
    let mut headers = HeaderMap::new();
    headers.insert(HEADER_TRACEPARENT, g.traceparent.to_string());
    let body = Bytes::from(g.request.to_json());
    // One request and one reply subject per node, so the server's "no
    // responders" says for which node at once, and silence from a subject
    // someone holds is told apart from no one there.
    let sends: Vec<(String, String)> = g
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (wire::node_subject(n), format!("{inbox}.{i}")))
        .collect();
    let asked = Instant::now();
    for (subject, reply) in &sends {
        let sent = client
            .publish_with_reply_and_headers(
                subject.clone(),
                reply.clone(),
                headers.clone(),
                body.clone(),
            )
            .await;
        if let Err(e) = sent {
            return every(
                g,
                UnreachedKind::NatsConnect,
                one_line(&format!("cannot publish the request on {subject}: {e}")),
            );
        }
    }
    let _ = client.flush().await;

    let mut heard: Vec<Heard> = g.nodes.iter().map(|_| Heard::default()).collect();
    let mut fetches = Fetches::default();
    // An agent from before `inline_max_bytes` refuses it by name: that
    // node is asked once more without it (a cluster mid-upgrade).
    let before_inline_max = Bytes::from(
        Request {
            inline_max: None,
            ..g.request.clone()
        }
        .to_json(),
    );
    let mut asked_again = vec![false; g.nodes.len()];
    while !heard.iter().all(Heard::done) {
        if let Err(e) = fetches.send(&client, g, &inbox, &headers).await {
            return every(g, UnreachedKind::NatsConnect, e);
        }
        let msg = tokio::select! {
            m = sub.next() => match m {
                Some(m) => m,
                None => break,
            },
            _ = tokio::time::sleep_until(g.deadline.into()) => break,
        };
        if msg.status == Some(StatusCode::NO_RESPONDERS) {
            let tail = msg.subject.rsplit('.').next().unwrap_or("");
            if let Some(h) = tail.parse::<usize>().ok().and_then(|i| heard.get_mut(i)) {
                h.no_responders = h.agents.is_empty();
            }
            continue;
        }
        let header = |name: &str| {
            msg.headers
                .as_ref()
                .and_then(|h| h.get(name))
                .map(|v| v.as_str().to_owned())
        };
        if header(HEADER_REQUEST).as_deref() != Some(g.request.id.as_str()) {
            continue;
        }
        let Some(node) = header(HEADER_NODE) else {
            continue;
        };
        // Only the nodes asked.
        let Some(i) = g.nodes.iter().position(|n| *n == node) else {
            continue;
        };
        if header(HEADER_REPLY).as_deref() == Some(wire::REPLY_ERROR)
            && !asked_again[i]
            && ErrorReply::parse(&msg.payload)
                .is_some_and(|e| wire::refuses_inline_max(e.error.kind, &e.error.message))
        {
            asked_again[i] = true;
            let (subject, reply) = &sends[i];
            let sent = client
                .publish_with_reply_and_headers(
                    subject.clone(),
                    reply.clone(),
                    headers.clone(),
                    before_inline_max.clone(),
                )
                .await;
            if sent.is_ok() {
                let _ = client.flush().await;
                heard[i].said(identity::from_headers(header), Said::Accepted);
                continue;
            }
        }
        let said = match header(HEADER_REPLY).as_deref() {
            Some(wire::REPLY_ACCEPTED) => Said::Accepted,
            Some(wire::REPLY_HELD) => match held_size(header(HEADER_REPORT_BYTES).as_deref()) {
                Ok(bytes) => {
                    fetches.queue(i, bytes);
                    Said::Accepted
                }
                Err(why) => Said::Done(Err(why)),
            },
            Some(wire::REPLY_REPORT) => {
                fetches.arrived(i);
                // Read now, while other reports are on the way.
                Said::Done(report(&node, &msg.payload))
            }
            Some(wire::REPLY_ERROR) => Said::Done(Err(refusal(&msg.payload))),
            other => Said::Done(Err(Unreached::new(
                UnreachedKind::InvalidAnswer,
                format!(
                    "an answer of an unknown kind ({})",
                    one_line(other.unwrap_or("none"))
                ),
            ))),
        };
        heard[i].said(identity::from_headers(header), said);
    }
    let window = g.deadline.saturating_duration_since(asked);
    heard
        .into_iter()
        .zip(&g.nodes)
        .map(|(h, node)| h.answer(node, window))
        .collect()
}

/// The held reports to fetch, and those on the way.
#[derive(Default)]
struct Fetches {
    /// (node index, announced bytes), in the order announced.
    queued: std::collections::VecDeque<(usize, usize)>,
    /// Announced bytes of each fetch on the way, by node index.
    on_the_way: std::collections::BTreeMap<usize, usize>,
    bytes: usize,
}

impl Fetches {
    fn queue(&mut self, node: usize, bytes: usize) {
        self.queued.push_back((node, bytes));
    }

    fn arrived(&mut self, node: usize) {
        if let Some(b) = self.on_the_way.remove(&node) {
            self.bytes -= b;
        }
    }

    /// Fetch what fits [`FETCH_BUDGET`] beside what is on the way (one at
    /// least, whatever its size).
    async fn send(
        &mut self,
        client: &async_nats::Client,
        g: &Gather,
        inbox: &str,
        headers: &HeaderMap,
    ) -> Result<(), String> {
        let body = Bytes::from(
            Fetch {
                id: g.request.id.clone(),
            }
            .to_json(),
        );
        let mut sent = false;
        while let Some(&(i, bytes)) = self.queued.front() {
            if !self.on_the_way.is_empty() && self.bytes + bytes > FETCH_BUDGET {
                break;
            }
            self.queued.pop_front();
            let subject = wire::node_fetch_subject(&g.nodes[i]);
            client
                .publish_with_reply_and_headers(
                    subject.clone(),
                    format!("{inbox}.{i}"),
                    headers.clone(),
                    body.clone(),
                )
                .await
                .map_err(|e| one_line(&format!("cannot publish a fetch on {subject}: {e}")))?;
            *self.on_the_way.entry(i).or_default() += bytes;
            self.bytes += bytes;
            sent = true;
        }
        if sent {
            let _ = client.flush().await;
        }
        Ok(())
    }
}

/// A `held` answer's size: a number of bytes this side takes.
fn held_size(said: Option<&str>) -> Result<usize, Unreached> {
    let invalid = |why: String| Unreached::new(UnreachedKind::InvalidAnswer, why);
    let text =
        said.ok_or_else(|| invalid(format!("a held report without {HEADER_REPORT_BYTES}")))?;
    match text.parse::<usize>() {
        Ok(n) if n <= MAX_REPLY => Ok(n),
        Ok(n) => Err(invalid(format!(
            "it holds a report of {n} bytes, more than the {MAX_REPLY} this side takes"
        ))),
        Err(_) => Err(invalid(format!(
            "{HEADER_REPORT_BYTES} is not a number of bytes: {}",
            one_line(text)
        ))),
    }
}

fn no_agent(node: &str) -> Unreached {
    Unreached::new(
        UnreachedKind::NoAgent,
        format!("is spx-doctor-agent running on {node}?"),
    )
}

/// A report from `node`'s agent, checked before it is trusted, and kept as
/// the text it came as. It is checked as JSON once, then read once as the
/// typed report, which also checks its shape ([`Received::shaped`]);
/// anything else is checked on a tree, dropped at once, which says exactly
/// what is wrong.
fn report(node: &str, body: &[u8]) -> Result<Received, Unreached> {
    let invalid = |detail: String| Unreached::new(UnreachedKind::InvalidAnswer, detail);
    if body.len() > MAX_REPLY {
        return Err(invalid(format!("more than {} MiB", MAX_REPLY >> 20)));
    }
    let not_json = |e: serde_json::Error| {
        invalid(format!(
            "not JSON ({e}): {}",
            one_line(&String::from_utf8_lossy(&body[..body.len().min(80)]))
        ))
    };
    let text = match String::from_utf8(body.to_vec()) {
        Ok(text) => text,
        // JSON is UTF-8: the parser says where it is not.
        Err(e) => {
            return Err(
                match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
                    Err(j) => not_json(j),
                    Ok(_) => invalid(format!("not UTF-8 ({e})")),
                },
            )
        }
    };
    let text = ReportText::parse(text).map_err(not_json)?;
    let text = match Received::shaped(text, node) {
        Ok(read) => return Ok(read),
        Err(text) => text,
    };
    let doc = text.to_value();
    let code = doc
        .get("exit_code")
        .and_then(Value::as_i64)
        .map_or(-1, |c| c as i32);
    super::ssh::shape(&doc, code).map_err(invalid)?;
    if doc.get("node").and_then(Value::as_str) != Some(node) {
        return Err(invalid(format!(
            "the report is node {}'s, not {node}'s: two agents answer as {node}, or its config names another node",
            one_line(&doc.get("node").map_or("null".into(), Value::to_string))
        )));
    }
    drop(doc);
    Ok(Received::from(text))
}

/// An agent's typed refusal.
fn refusal(body: &[u8]) -> Unreached {
    let Some(e) = ErrorReply::parse(body) else {
        return Unreached::new(
            UnreachedKind::InvalidAnswer,
            "an error answer that is not one",
        );
    };
    let e = e.error;
    let kind = match e.kind {
        RefusalKind::Busy | RefusalKind::RateLimited => UnreachedKind::AgentBusy,
        RefusalKind::TooLarge => UnreachedKind::TooLarge,
        _ => UnreachedKind::AgentRefused,
    };
    Unreached::new(
        kind,
        one_line(&format!("{}: {}", e.kind.as_str(), e.message)),
    )
}

/// A random id of `n` bytes, in hex (never all zeros).
pub fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    if getrandom::fill(&mut bytes).is_err() || bytes.iter().all(|b| *b == 0) {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64 | 1);
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (t >> ((i % 8) * 8)) as u8 | 1;
        }
    }
    wire::to_hex(&bytes)
}

/// This run's trace context: a child of `TRACEPARENT` in the environment
/// (a caller's trace, the OpenTelemetry convention for processes), else a
/// new trace.
pub fn traceparent() -> TraceParent {
    let mut span = [0u8; 8];
    let mut trace = [0u8; 16];
    let hex = random_hex(24);
    for (i, b) in span.iter_mut().chain(trace.iter_mut()).enumerate() {
        *b = u8::from_str_radix(&hex[i * 2..i * 2 + 2], 16).unwrap_or(1);
    }
    if span == [0; 8] {
        span[0] = 1;
    }
    if let Some(parent) = std::env::var("TRACEPARENT")
        .ok()
        .and_then(|t| TraceParent::parse(&t))
    {
        return parent.child(span);
    }
    if trace == [0; 16] {
        trace[0] = 1;
    }
    TraceParent {
        trace_id: trace,
        parent_id: span,
        flags: 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_report(node: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "schema_version": 1, "tool": {"name": "spx-doctor", "version": "0.1.0"},
            "node": node, "exit_code": 0, "checks": []
        }))
        .unwrap()
    }

    #[test]
    fn a_report_is_the_nodes_own_and_json_v1() {
        assert!(report("n1", &node_report("n1")).is_ok());
        let e = report("n1", &node_report("n2")).unwrap_err();
        assert_eq!(e.kind, UnreachedKind::InvalidAnswer);
        assert!(e.detail.contains("two agents answer as n1"), "{}", e.detail);
        let e = report("n1", b"\x1b[2J{").unwrap_err();
        assert!(e.detail.starts_with("not JSON") && !e.detail.contains('\u{1b}'));
        let e = report("n1", br#"{"schema_version":1,"kind":"cluster"}"#).unwrap_err();
        assert_eq!(e.kind, UnreachedKind::InvalidAnswer);
    }

    /// What the quick look takes, the tree takes too; what it does not,
    /// the tree says why, in the same words as ever.
    #[test]
    fn the_quick_look_takes_only_what_the_tree_takes() {
        let good = br#"{"schema_version":1,"tool":{"name":"spx-doctor","version":"0.1.0"},"node":"n1","exit_code":1,
            "checks":[{"id":"a.b","status":"fail","summary":"s","evidence":{"peers":[{"x":1}]},"remediation":["r"]}]}"#;
        let quick = |node: &str, body: &[u8]| {
            let text = ReportText::parse(String::from_utf8(body.to_vec()).unwrap()).unwrap();
            Received::shaped(text, node).is_ok()
        };
        assert!(quick("n1", good));
        assert_eq!(report("n1", good).unwrap().text.as_str().as_bytes(), good);
        let text = String::from_utf8(good.to_vec()).unwrap();
        for (bad, why) in [
            (
                text.replace(r#""schema_version":1"#, r#""schema_version":1.0"#),
                "not a JSON v1 report (schema_version is not 1)",
            ),
            (
                text.replace(r#""status":"fail""#, r#""status":"bad""#),
                "a.b: status \"bad\"",
            ),
            (
                text.replace(r#""evidence":{"#, r#""evidence":[{"#)
                    .replace(r#"}]},"rem"#, r#"}]}],"rem"#),
                "a.b: lacks summary, evidence or remediation",
            ),
            (
                text.replace(r#""remediation":["r"]"#, r#""remediation":"r""#),
                "a.b: lacks summary, evidence or remediation",
            ),
            (
                text.replace(r#""tool":{"name":"spx-doctor","#, r#""tool":{"#),
                "`tool` lacks name or version",
            ),
            (
                text.replace(r#""exit_code":1"#, r#""exit_code":4294967297"#),
                "the report says exit 4294967297 but the doctor exited 1",
            ),
            (
                text.replace(r#""schema_version":1,"#, r#""schema_version":1,"kind":null,"#),
                "a cluster report, not a node's",
            ),
            // Serde's derive would read a struct from an array of its
            // fields in order; the tree does not, and neither may the
            // quick look.
            (
                text.replace(
                    r#"{"name":"spx-doctor","version":"0.1.0"}"#,
                    r#"["0.1.0","spx-doctor"]"#,
                ),
                "`tool` lacks name or version",
            ),
            (
                text.replace(
                    r#"{"id":"a.b","status":"fail","summary":"s","evidence":{"peers":[{"x":1}]},"remediation":["r"]}"#,
                    r#"["a.b","fail",null,"s",{"peers":[{"x":1}]},["r"]]"#,
                ),
                "a check without an id",
            ),
        ] {
            assert!(!quick("n1", bad.as_bytes()), "{bad}");
            assert_eq!(
                report("n1", bad.as_bytes()).unwrap_err().detail,
                why,
                "{bad}"
            );
        }
        assert!(!quick("n2", good), "another node's");
        assert!(!quick("n1", b"[1]"));
        let e = report("n1", br#"["spx-doctor"]"#).unwrap_err();
        assert_eq!(e.detail, "not a JSON v1 report (schema_version is not 1)");
    }

    fn agent(machine: &str, addr: &str) -> AgentIdentity {
        AgentIdentity {
            machine_id: Some(machine.into()),
            boot_id: Some("b007".into()),
            started_at: Some("2026-03-02T10:00:01Z".into()),
            addresses: vec![addr.parse().unwrap()],
        }
    }

    /// Issue 36: every answer of the window is kept; two agents for one
    /// node are a duplicate, whichever answered first; a held subject that
    /// says nothing is a silent agent, not a missing one.
    #[test]
    fn every_answer_of_the_window_is_kept_and_named() {
        let window = Duration::from_millis(3800);
        let report = || Said::Done(Ok(serde_json::json!({"node": "n2"}).into()));
        let mut h = Heard::default();
        h.said(Some(agent("aaaa", "198.19.0.3")), Said::Accepted);
        h.said(Some(agent("bbbb", "198.19.0.9")), Said::Accepted);
        h.said(Some(agent("aaaa", "198.19.0.3")), report());
        assert!(!h.done(), "the clone's answer is still to come");
        h.said(Some(agent("bbbb", "198.19.0.9")), report());
        assert!(h.done());
        let got = h.answer("n2", window);
        assert_eq!(got.agents.len(), 2);
        let why = got.report.unwrap_err();
        assert_eq!(why.kind, UnreachedKind::DuplicateNode);
        assert_eq!(
            why.detail,
            "2 agents answered as n2 in this run (at 198.19.0.3 and at 198.19.0.9): see cluster.bus"
        );
        // One agent, its report.
        let mut h = Heard::default();
        h.said(Some(agent("aaaa", "198.19.0.3")), Said::Accepted);
        h.said(Some(agent("aaaa", "198.19.0.3")), report());
        assert!(h.answer("n2", window).report.is_ok());
        // Silent, and nobody there.
        let why = Heard::default().answer("n2", window).report.unwrap_err();
        assert_eq!(why.kind, UnreachedKind::AgentSilent);
        assert_eq!(
            why.detail,
            "its agent is subscribed but did not answer within 3.8 s (stopped, hung, or overloaded)"
        );
        let nobody = Heard {
            no_responders: true,
            ..Heard::default()
        };
        assert_eq!(
            nobody.answer("n2", window).report.unwrap_err().kind,
            UnreachedKind::NoAgent
        );
    }

    #[test]
    fn refusals_are_typed() {
        let body = |kind: &str| {
            format!(r#"{{"error":{{"kind":"{kind}","message":"m","node":"n1","request":"r"}}}}"#)
        };
        for (kind, want) in [
            ("busy", UnreachedKind::AgentBusy),
            ("rate-limited", UnreachedKind::AgentBusy),
            ("too-large", UnreachedKind::TooLarge),
            ("unknown-field", UnreachedKind::AgentRefused),
            ("timeout-too-long", UnreachedKind::AgentRefused),
        ] {
            let u = refusal(body(kind).as_bytes());
            assert_eq!(u.kind, want, "{kind}");
            assert_eq!(u.detail, format!("{kind}: m"));
        }
        assert_eq!(refusal(b"nope").kind, UnreachedKind::InvalidAnswer);
        assert_eq!(
            refusal(body("a-new-kind").as_bytes()).kind,
            UnreachedKind::InvalidAnswer
        );
    }

    #[test]
    fn trace_context_continues_a_callers_trace() {
        let a = traceparent();
        let b = traceparent();
        assert_ne!(a.trace_id, b.trace_id, "a new trace each run");
        assert_eq!(TraceParent::parse(&a.to_string()), Some(a));
        assert_eq!(random_hex(8).len(), 16);
    }
}
