//! The cluster as `spx doctor --cluster` sees it: every selected node's
//! report (JSON v1, from the node itself over OpenSSH, or from this process
//! for this node), or exactly why a node did not answer.
//!
//! The cross-node checks (`cluster.*`) judge these facts, which no single
//! node can see: whether every node answered, whether their configs agree,
//! the N×N path-MTU matrix, and whether every node's outbound ESP SAs exist
//! on the node they point to. They read the reports as the public JSON v1
//! contract, typed ([`NodeReport`]: each check's evidence as the check's
//! own struct), so a node's report is judged the same whether it came over
//! ssh or from this process.

mod node_report;
pub mod runbook;

pub use node_report::{
    CheckResult, NodeReport, ReportText, ReportedConfig, ReportedTool, SiteDigest,
};

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::evidence::Evidence;
use crate::finding::{Finding, SkipReason};
use crate::kind::Kinds;

/// Why a node has no report. `kind` is what an operator acts on; `detail`
/// is what ssh, sudo or the remote doctor said, verbatim (one line).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unreached {
    pub kind: UnreachedKind,
    pub detail: String,
    /// How long the node waited for one of `--parallel` ssh sessions before
    /// its own started (or until the deadline, for [`UnreachedKind::Queued`]);
    /// `None` when it started at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued: Option<Duration>,
}

impl Unreached {
    pub fn new(kind: UnreachedKind, detail: impl Into<String>) -> Unreached {
        Unreached {
            kind,
            detail: detail.into(),
            queued: None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnreachedKind {
    /// The config names no `host` or `advertise` for the node.
    NoAddress,
    /// `ssh` itself could not be started here.
    SshMissing,
    ConnectionRefused,
    TimedOut,
    NoRoute,
    NameUnresolved,
    /// The node's host key differs from the one in known_hosts.
    HostKeyChanged,
    /// No host key for the node in known_hosts (BatchMode never asks).
    HostKeyUnknown,
    PermissionDenied,
    /// `sudo -n` on the node wants a password.
    SudoPassword,
    /// `sudo` on the node refused for another reason (not in sudoers…).
    SudoRefused,
    /// The remote shell or sudo did not find the doctor binary (exit 127).
    BinaryNotFound,
    /// Found but not executable (exit 126).
    NotExecutable,
    /// The remote doctor does not know a flag this one forwarded: another
    /// version.
    OtherVersion,
    /// The remote doctor refused (its one-line error, exit 2).
    RemoteRefused,
    /// The remote answered, but not with a JSON v1 report.
    InvalidAnswer,
    /// Nothing (or not all of it) by the run's deadline; ssh was stopped.
    Deadline,
    /// Still waiting for one of `--parallel` ssh sessions at the deadline:
    /// never started.
    Queued,
    /// Any other ssh failure (exit 255), with ssh's words.
    Ssh,
    /// Over NATS: no agent answered for the node by the deadline.
    NoAgent,
    /// Over NATS: this node could not reach its NATS server (refused,
    /// timed out, no route, a name that does not resolve).
    NatsConnect,
    /// Over NATS: the CA could not be read or the server's certificate
    /// does not verify against it.
    NatsTls,
    /// Over NATS: the server refused the token.
    NatsAuth,
    /// Over NATS: the node's agent refused the request (a typed refusal:
    /// most often a doctor of another version).
    AgentRefused,
    /// Over NATS: the node's agent was busy with other runs, or at its
    /// runs-per-minute bound.
    AgentBusy,
    /// Over NATS: the node's report does not fit the server's max_payload.
    TooLarge,
    /// From the doctor's JetStream bucket (`spx-doctor watch`): the node's
    /// latest report is older than two of its agent's intervals. What it
    /// said then is not taken as true now.
    Stale,
    /// From the doctor's JetStream bucket: the node is in the config but
    /// its agent never wrote a report there.
    NoReport,
    /// Over NATS: someone holds the node's subscription (the server said
    /// nothing of "no responders") but no answer came by the deadline: its
    /// agent is stopped, hung or overloaded.
    AgentSilent,
    /// Two agents answer as the node (two machines, or two processes):
    /// neither report is taken as the node's (`cluster.bus` names them).
    DuplicateNode,
}

impl UnreachedKind {
    pub fn as_str(self) -> &'static str {
        match self {
            UnreachedKind::NoAddress => "no address",
            UnreachedKind::SshMissing => "ssh not found",
            UnreachedKind::ConnectionRefused => "connection refused",
            UnreachedKind::TimedOut => "connection timed out",
            UnreachedKind::NoRoute => "no route to host",
            UnreachedKind::NameUnresolved => "name does not resolve",
            UnreachedKind::HostKeyChanged => "host key changed",
            UnreachedKind::HostKeyUnknown => "host key unknown",
            UnreachedKind::PermissionDenied => "permission denied",
            UnreachedKind::SudoPassword => "sudo wants a password",
            UnreachedKind::SudoRefused => "sudo refused",
            UnreachedKind::BinaryNotFound => "remote binary not found (exit 127)",
            UnreachedKind::NotExecutable => "remote binary not executable (exit 126)",
            UnreachedKind::OtherVersion => "remote doctor of another version",
            UnreachedKind::RemoteRefused => "remote doctor refused",
            UnreachedKind::InvalidAnswer => "not a JSON v1 report",
            UnreachedKind::Deadline => "no answer by the deadline",
            UnreachedKind::Queued => "still queued behind --parallel at the deadline",
            UnreachedKind::Ssh => "ssh failed",
            UnreachedKind::NoAgent => "no agent answered on NATS",
            UnreachedKind::NatsConnect => "cannot connect to NATS",
            UnreachedKind::NatsTls => "NATS TLS failed",
            UnreachedKind::NatsAuth => "NATS refused the token",
            UnreachedKind::AgentRefused => "the agent refused the request",
            UnreachedKind::AgentBusy => "the agent was busy",
            UnreachedKind::TooLarge => "the report does not fit NATS",
            UnreachedKind::Stale => "stale: no report for two of its intervals",
            UnreachedKind::NoReport => "unknown: its agent never wrote a report",
            UnreachedKind::AgentSilent => "its agent did not answer",
            UnreachedKind::DuplicateNode => "two agents answer as this node",
        }
    }

    /// A failure of this node's own session with NATS (every node then
    /// fails the same way), not of the node asked.
    pub fn is_bus(self) -> bool {
        matches!(
            self,
            UnreachedKind::NatsConnect | UnreachedKind::NatsTls | UnreachedKind::NatsAuth
        )
    }
}

impl std::fmt::Display for Unreached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.detail.is_empty() {
            f.write_str(self.kind.as_str())
        } else {
            write!(f, "{}: {}", self.kind.as_str(), self.detail)
        }
    }
}

/// How the nodes' reports were gathered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// This node in-process, the others over OpenSSH.
    #[default]
    Ssh,
    /// Every node's agent over Spinifex's NATS.
    Nats,
    /// Every node's latest periodic report, from the doctor's JetStream
    /// bucket (`spx-doctor watch`).
    Jetstream,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Ssh => "ssh",
            Transport::Nats => "nats",
            Transport::Jetstream => "jetstream",
        }
    }
}

/// One selected node and what it answered.
#[derive(Clone, Debug)]
pub struct NodeAnswer {
    /// Its `[nodes.NAME]`.
    pub name: String,
    /// The address ssh was given; `None` for this node (run in-process).
    pub host: Option<String>,
    /// Its report, JSON v1 as the node wrote it (its text, held once), or
    /// why there is none.
    pub report: Result<ReportText, Unreached>,
    /// The same report, typed (its evidence read from that text on demand).
    typed: Option<NodeReport>,
    /// What ssh made of its configuration for this node (`ssh -G`), when
    /// it was asked: the user, host, port and known_hosts the fixes name.
    pub ssh: Option<SshTarget>,
    /// Over the bus: every agent that answered as this node in the gather
    /// window (or wrote its bucket entries in turn), each once, in the
    /// order first heard. More than one is a duplicate node. Empty over ssh.
    pub agents: Vec<AgentIdentity>,
}

/// One agent process, as it says who it is on the bus: the machine
/// (`/etc/machine-id`), this boot of it (`/proc/sys/kernel/random/boot_id`),
/// when the process started, and the host's addresses. A machine re-imaged
/// from another keeps the other's `/etc/spinifex` (node name and token) but
/// not its boot, and rarely its addresses: two identities answering as one
/// node are two agents.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AgentIdentity {
    pub machine_id: Option<String>,
    pub boot_id: Option<String>,
    /// When the agent process started (RFC 3339).
    pub started_at: Option<String>,
    /// The host's own unicast addresses (no loopback, no link-local).
    #[serde(default)]
    pub addresses: Vec<IpAddr>,
}

impl AgentIdentity {
    /// The same agent process: the same machine, boot and start (its
    /// addresses may change under it).
    pub fn same_agent(&self, other: &AgentIdentity) -> bool {
        self.machine_id == other.machine_id
            && self.boot_id == other.boot_id
            && self.started_at == other.started_at
    }

    /// On the same running machine (the same machine id and boot): two such
    /// agents are two processes there, not two machines.
    pub fn same_machine(&self, other: &AgentIdentity) -> bool {
        self.machine_id == other.machine_id && self.boot_id == other.boot_id
    }

    /// Its addresses as a finding names them (`198.19.0.3, 198.18.0.3`),
    /// or `an unknown address`.
    pub fn addresses_said(&self) -> String {
        if self.addresses.is_empty() {
            "an unknown address".to_owned()
        } else {
            self.addresses
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}

/// A node as ssh reaches it, after the ssh_config (`ssh -G`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SshTarget {
    /// The user ssh logs in as.
    pub user: String,
    /// The host ssh connects to (`Hostname`, else the name it was given).
    pub hostname: String,
    pub port: u16,
    /// `HostKeyAlias`: the name known_hosts holds the key under instead.
    pub host_key_alias: Option<String>,
    /// `UserKnownHostsFile`, in ssh's order.
    pub known_hosts: Vec<String>,
    /// `StrictHostKeyChecking` as ssh_config sets it (`true`, `false`,
    /// `ask`, `accept-new`): the run passes `yes` unless it is `accept-new`.
    pub strict_host_key_checking: String,
}

impl SshTarget {
    /// The name known_hosts holds this host's key under: the alias, else
    /// the host, as `[host]:port` off port 22.
    pub fn known_hosts_name(&self) -> String {
        match &self.host_key_alias {
            Some(a) => a.clone(),
            None if self.port == 22 => self.hostname.clone(),
            None => format!("[{}]:{}", self.hostname, self.port),
        }
    }

    /// The known_hosts file ssh writes and `ssh-keygen -R` edits: the
    /// first `UserKnownHostsFile`.
    pub fn known_hosts_file(&self) -> Option<&str> {
        self.known_hosts.first().map(String::as_str)
    }
}

/// A node's report as it arrived, and its typed view, read once: a gather
/// reads each report as it comes, while others are still on the way,
/// rather than all of them after the last.
#[derive(Clone, Debug)]
pub struct Received {
    pub text: ReportText,
    typed: Option<NodeReport>,
}

impl From<ReportText> for Received {
    fn from(text: ReportText) -> Received {
        let typed = NodeReport::read(&text);
        Received { text, typed }
    }
}

impl Received {
    /// `node`'s report, read in one pass when it has the shape a cluster
    /// run requires ([`NodeReport::read_shaped`]); the text back when it
    /// has not, for the caller to look closer.
    pub fn shaped(text: ReportText, node: &str) -> Result<Received, ReportText> {
        match NodeReport::read_shaped(&text, node) {
            Some(typed) => Ok(Received {
                text,
                typed: Some(typed),
            }),
            None => Err(text),
        }
    }
}

impl From<serde_json::Value> for Received {
    fn from(v: serde_json::Value) -> Received {
        Received::from(ReportText::from(v))
    }
}

impl NodeAnswer {
    pub fn new(
        name: String,
        host: Option<String>,
        report: Result<ReportText, Unreached>,
    ) -> NodeAnswer {
        NodeAnswer::received(name, host, report.map(Received::from))
    }

    /// [`NodeAnswer::new`] with the report already read.
    pub fn received(
        name: String,
        host: Option<String>,
        report: Result<Received, Unreached>,
    ) -> NodeAnswer {
        let (report, typed) = match report {
            Ok(r) => (Ok(r.text), r.typed),
            Err(e) => (Err(e), None),
        };
        NodeAnswer {
            name,
            host,
            report,
            typed,
            ssh: None,
            agents: Vec::new(),
        }
    }

    /// Its report, typed; `None` when it did not answer (or answered with
    /// something that does not read as a JSON v1 node report).
    pub fn typed(&self) -> Option<&NodeReport> {
        self.typed.as_ref()
    }

    /// This node's result for check `id`, when its report has one.
    pub fn check(&self, id: &str) -> Option<&CheckResult> {
        self.typed()?.check(id)
    }

    /// The evidence of check `id` in this node's report, read back as the
    /// check's own type `E`.
    pub fn evidence<E: Evidence>(&self, id: &str) -> Option<E> {
        self.check(id)?.evidence_as()
    }

    /// `tool.version` of the doctor that wrote the report.
    pub fn version(&self) -> Option<&str> {
        Some(&self.typed()?.tool.version)
    }

    /// The config the node ran with, as it reported it.
    pub fn config(&self) -> Option<&ReportedConfig> {
        self.typed()?.config.as_ref()
    }
}

/// Everything the cluster checks judge.
#[derive(Clone, Debug, Default)]
pub struct ClusterFacts {
    /// The selected nodes, in order (`--nodes`, else by name).
    pub nodes: Vec<NodeAnswer>,
    /// Every `[nodes.*]` name in the coordinator's config.
    pub config_nodes: Vec<String>,
    /// Addresses the coordinator's config gives each node (`host`,
    /// `advertise`, resolved), by node name.
    pub config_addresses: BTreeMap<String, Vec<IpAddr>>,
    /// The node checks every node was asked to run.
    pub node_checks: Vec<String>,
    /// This doctor's version.
    pub version: String,
    /// `--ssh-user`, for remediation text.
    pub ssh_user: Option<String>,
    /// `--remote-bin`, for remediation text.
    pub remote_bin: String,
    /// `--ssh-config`, for remediation text.
    pub ssh_config: Option<String>,
    /// The remote command started with `sudo -n`.
    pub sudo: bool,
    /// `--parallel`: at most this many ssh sessions at once.
    pub parallel: usize,
    /// How the reports were gathered.
    pub transport: Transport,
}

impl ClusterFacts {
    pub fn answered(&self) -> impl Iterator<Item = &NodeAnswer> {
        self.nodes.iter().filter(|n| n.report.is_ok())
    }

    pub fn unreached(&self) -> impl Iterator<Item = (&NodeAnswer, &Unreached)> {
        self.nodes
            .iter()
            .filter_map(|n| n.report.as_ref().err().map(|e| (n, e)))
    }

    /// True when every node checks was asked to run `id`.
    pub fn selected(&self, id: &str) -> bool {
        self.node_checks.iter().any(|c| c == id)
    }

    /// Who owns each address: the config's `host`/`advertise`, and the
    /// addresses every answering node reported as its own. Every node of
    /// the config is in the book, selected or not.
    pub fn address_book(&self) -> AddressBook {
        let mut book = AddressBook::default();
        for (name, addrs) in &self.config_addresses {
            for a in addrs {
                book.claim(*a, name);
            }
        }
        for n in self.answered() {
            for a in n.typed().map_or(&[][..], |r| &r.addresses) {
                book.claim(*a, &n.name);
            }
        }
        book
    }

    /// Whether every node of the config was selected and answered: only
    /// then is an address that nobody owns proven foreign.
    pub fn complete(&self) -> bool {
        self.config_nodes
            .iter()
            .all(|c| self.nodes.iter().any(|n| &n.name == c && n.report.is_ok()))
    }

    /// Names of the selected nodes, in order.
    pub fn names(&self) -> Vec<&str> {
        self.nodes.iter().map(|n| n.name.as_str()).collect()
    }
}

/// Address → node.
#[derive(Clone, Debug, Default)]
pub struct AddressBook {
    owner: BTreeMap<IpAddr, BTreeSet<String>>,
}

impl AddressBook {
    /// `node` claims `addr` (beside any other node that does).
    pub fn claim(&mut self, addr: IpAddr, node: &str) {
        let claimants = self.owner.entry(addr).or_default();
        if !claimants.contains(node) {
            claimants.insert(node.to_owned());
        }
    }

    /// Every claim of `other` made in this book too.
    pub fn merge(&mut self, other: AddressBook) {
        for (addr, nodes) in other.owner {
            self.owner.entry(addr).or_default().extend(nodes);
        }
    }

    /// Whether any node claims `addr`.
    pub fn is_claimed(&self, addr: IpAddr) -> bool {
        self.owner.contains_key(&addr)
    }

    /// The node owning `addr`, when exactly one does.
    pub fn owner(&self, addr: IpAddr) -> Option<&str> {
        match self.owner.get(&addr) {
            Some(set) if set.len() == 1 => set.iter().next().map(String::as_str),
            _ => None,
        }
    }

    /// Every node claiming `addr` (more than one is a config mistake).
    pub fn claimants(&self, addr: IpAddr) -> Vec<&str> {
        self.owner
            .get(&addr)
            .map(|s| s.iter().map(String::as_str).collect())
            .unwrap_or_default()
    }
}

/// Whether the nodes that answered want IPsec, as their configs say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IpsecWanted {
    /// Every node that said wants it (or none said).
    Wanted,
    /// No node that said wants it.
    NotWanted,
    /// They disagree: which nodes want it and which do not, in words.
    Disagree(String),
}

/// Whether IPsec is wanted, by the answering nodes' reported configs: the
/// question the IPsec cluster checks ask first.
pub fn ipsec_wanted(facts: &ClusterFacts) -> IpsecWanted {
    let views: Vec<(&str, Option<bool>)> = facts
        .answered()
        .map(|n| (n.name.as_str(), n.config().map(|c| c.ipsec_wanted())))
        .collect();
    let pick = |want: bool| -> Vec<&str> {
        views
            .iter()
            .filter(|(_, w)| *w == Some(want))
            .map(|(n, _)| *n)
            .collect()
    };
    let (yes, no) = (pick(true), pick(false));
    match (yes.is_empty(), no.is_empty()) {
        (true, false) => IpsecWanted::NotWanted,
        (false, false) => IpsecWanted::Disagree(format!(
            "the nodes disagree on whether IPsec is wanted ({} {} it, {} {} not; see cluster.config-drift)",
            and_list(&yes),
            if yes.len() == 1 { "wants" } else { "want" },
            and_list(&no),
            if no.len() == 1 { "does" } else { "do" }
        )),
        _ => IpsecWanted::Wanted,
    }
}

/// Why an IPsec cluster check has nothing to judge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IpsecGate {
    /// The node check whose evidence it judges was not selected.
    NotSelected,
    /// No node that answered wants IPsec.
    NotWanted,
    /// The nodes disagree on whether IPsec is wanted (in words).
    Disagree(String),
}

impl IpsecGate {
    /// A check's finding when it stops at the gate, in its own words: what
    /// reading was not selected, why IPsec not being wanted leaves nothing
    /// to judge, and what is unknown (`the SAs expected are unknown`) when
    /// the nodes disagree, said as `disagrees`.
    pub fn finding(
        self,
        not_selected: &str,
        not_wanted: &str,
        disagrees: impl Kinds,
        unknown: &str,
    ) -> Finding {
        match self {
            IpsecGate::NotSelected => Finding::skip(SkipReason::NotApplicable(not_selected.into())),
            IpsecGate::NotWanted => Finding::skip(SkipReason::NotApplicable(not_wanted.into())),
            IpsecGate::Disagree(said) => Finding::new(disagrees, format!("{said}, so {unknown}")),
        }
    }
}

/// A node whose evidence of a node check could not be judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unjudged {
    /// It did not answer (`why`: the kind of failure).
    NoAnswer { node: String, why: &'static str },
    /// Its `check` carries no evidence (its summary says why).
    Unread {
        node: String,
        check: &'static str,
        summary: String,
    },
    /// Its report has no `check`.
    NoCheck { node: String, check: &'static str },
}

impl Unjudged {
    /// In one line, as a finding lists it.
    pub fn said(&self) -> String {
        match self {
            Unjudged::NoAnswer { node, why } => format!("{node} did not answer ({why})"),
            Unjudged::Unread {
                node,
                check,
                summary,
            } => format!("{node}'s {check}: {summary}"),
            Unjudged::NoCheck { node, check } => format!("{node}'s report has no {check}"),
        }
    }
}

/// Every node's evidence of one node check, read back typed.
#[derive(Clone, Debug)]
pub struct NodesEvidence<'a, E> {
    /// By node name, in node order.
    pub read: Vec<(&'a str, E)>,
    /// The nodes whose evidence could not be read, in node order.
    pub unjudged: Vec<Unjudged>,
}

/// How the IPsec cluster checks open: node check `id` must have been
/// selected and IPsec be wanted ([`ipsec_wanted`]); then every node's `id`
/// evidence, read back as `E`, or why it could not be.
pub fn ipsec_evidence<'a, E: Evidence>(
    facts: &'a ClusterFacts,
    id: &'static str,
) -> Result<NodesEvidence<'a, E>, IpsecGate> {
    if !facts.selected(id) {
        return Err(IpsecGate::NotSelected);
    }
    match ipsec_wanted(facts) {
        IpsecWanted::NotWanted => return Err(IpsecGate::NotWanted),
        IpsecWanted::Disagree(said) => return Err(IpsecGate::Disagree(said)),
        IpsecWanted::Wanted => {}
    }
    let mut out = NodesEvidence {
        read: Vec::new(),
        unjudged: Vec::new(),
    };
    for n in &facts.nodes {
        let node = n.name.clone();
        let why = match (n.report.as_ref(), n.check(id)) {
            (Err(e), _) => Unjudged::NoAnswer {
                node,
                why: e.kind.as_str(),
            },
            (Ok(_), None) => Unjudged::NoCheck { node, check: id },
            (Ok(_), Some(c)) => match c.evidence_as::<E>() {
                Some(e) => {
                    out.read.push((&n.name, e));
                    continue;
                }
                None => Unjudged::Unread {
                    node,
                    check: id,
                    summary: c.summary.clone(),
                },
            },
        };
        out.unjudged.push(why);
    }
    Ok(out)
}

/// What a cluster check returns when asked for outside `--cluster`.
pub fn outside_cluster_run() -> Finding {
    Finding::skip(SkipReason::NotApplicable(
        "a cluster check compares every node's report: run `spx doctor --cluster`".into(),
    ))
}

/// `a->b`, the way pairs are named in every cluster finding.
pub fn pair(from: &str, to: &str) -> String {
    format!("{from}->{to}")
}

/// "a, b and c".
pub fn and_list<S: AsRef<str>>(items: &[S]) -> String {
    match items {
        [] => String::new(),
        [one] => one.as_ref().to_owned(),
        [rest @ .., last] => format!(
            "{} and {}",
            rest.iter()
                .map(|s| s.as_ref())
                .collect::<Vec<_>>()
                .join(", "),
            last.as_ref()
        ),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Recorded-shape node reports for the cluster checks' unit tests.
    use serde_json::{json, Value};

    use super::{ClusterFacts, NodeAnswer, Unreached, UnreachedKind};

    pub fn report(version: &str, config: Value, addresses: &[&str], checks: Value) -> Value {
        json!({
            "schema_version": 1,
            "tool": {"name": "spx-doctor", "version": version},
            "host": "lab",
            "node": config.get("node").cloned().unwrap_or(Value::Null),
            "profile": "default",
            "started_at": "2026-01-01T00:00:00.000Z",
            "duration_ms": 1000,
            "exit_code": 0,
            "summary": {"pass": 0, "warn": 0, "fail": 0, "skip": 0, "error": 0},
            "checks": checks,
            "config": config,
            "addresses": addresses,
        })
    }

    pub fn config(node: &str, ipsec: bool, mtu: u32, nodes: &[&str]) -> Value {
        json!({
            "path": "/etc/spinifex/spinifex.toml",
            "node": node,
            "ipsec_enabled": ipsec,
            "underlay_mtu": mtu,
            "nodes": nodes,
        })
    }

    pub fn answer(name: &str, report: Value) -> NodeAnswer {
        NodeAnswer::new(name.into(), Some(format!("{name}.lab")), Ok(report.into()))
    }

    pub fn unreached(name: &str, kind: UnreachedKind, detail: &str) -> NodeAnswer {
        NodeAnswer::new(
            name.into(),
            Some(format!("{name}.lab")),
            Err(Unreached::new(kind, detail)),
        )
    }

    pub fn facts(nodes: Vec<NodeAnswer>, checks: &[&str]) -> ClusterFacts {
        let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
        ClusterFacts {
            config_nodes: names,
            nodes,
            node_checks: checks.iter().map(|s| s.to_string()).collect(),
            version: "0.1.0".into(),
            remote_bin: "spx-doctor".into(),
            parallel: 32,
            ..ClusterFacts::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::and_list;
    use super::testing::{answer, config, facts, report, unreached};
    use super::UnreachedKind;

    #[test]
    fn the_address_book_takes_the_config_and_the_reports() {
        let mut f = facts(
            vec![
                answer(
                    "a",
                    report(
                        "0.1.0",
                        config("a", true, 1500, &["a", "b"]),
                        &["198.18.0.1", "fd00::1"],
                        json!([]),
                    ),
                ),
                unreached("b", UnreachedKind::ConnectionRefused, ""),
            ],
            &[],
        );
        f.config_addresses
            .insert("b".into(), vec!["198.18.0.2".parse().unwrap()]);
        let book = f.address_book();
        assert_eq!(book.owner("198.18.0.1".parse().unwrap()), Some("a"));
        assert_eq!(book.owner("fd00::1".parse().unwrap()), Some("a"));
        assert_eq!(book.owner("198.18.0.2".parse().unwrap()), Some("b"));
        assert_eq!(book.owner("198.18.0.9".parse().unwrap()), None);
        assert!(!f.complete(), "b did not answer");
    }

    #[test]
    fn every_cluster_check_is_judged_and_only_those() {
        let f = facts(vec![], &[]);
        let ctx = || {
            crate::Ctx::new(
                crate::ConfigState::Missing { looked_at: vec![] },
                crate::Options::default(),
            )
        };
        for c in crate::CHECKS {
            let Some(judge) = c.cluster() else {
                assert_eq!(c.scope(), crate::Scope::Node, "{}", c.id());
                continue;
            };
            assert_eq!(c.scope(), crate::Scope::Cluster, "{}", c.id());
            assert!(c.id().starts_with("cluster."), "{}", c.id());
            let out = judge(&f);
            assert!(!out.summary.is_empty(), "{}", c.id());
            assert_eq!(
                c.run(&ctx()).status,
                crate::Status::Skip,
                "{} outside --cluster",
                c.id()
            );
        }
        let ids: Vec<&str> = crate::CHECKS
            .iter()
            .filter(|c| c.cluster().is_some())
            .map(|c| c.id())
            .collect();
        assert_eq!(
            ids,
            [
                "cluster.reachable",
                "cluster.bus",
                "cluster.config-drift",
                "cluster.path-matrix",
                "cluster.sa-pairs",
                "cluster.chassis",
                "cluster.ipsec"
            ]
        );
    }

    #[test]
    fn lists_read_as_prose() {
        assert_eq!(and_list(&["a"]), "a");
        assert_eq!(and_list(&["a", "b", "c"]), "a, b and c");
        assert_eq!(and_list::<&str>(&[]), "");
    }
}
