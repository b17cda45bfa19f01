//! `cluster.bus`: every node answers on the bus as one agent.
//!
//! A machine re-imaged from another node's disk keeps that node's
//! `/etc/spinifex`: its node name and the bus token. Its agent then answers
//! as that node from another address, and before this check a `--cluster
//! --via nats` took whichever answer came first (exit 0 on some runs, on
//! others a path matrix gone odd from the two reports mixed), while `watch`
//! showed the node ok with its bucket history alternating between two
//! address sets. Every answer and every bucket entry carries the agent's
//! identity (machine id, boot id, process start, addresses): the gather
//! keeps every answer of the window, `watch` every recent revision, and two
//! identities for one node are a duplicate. Its reports are not taken as
//! the node's (the node is `duplicate`, never ok, and out of the matrix),
//! and this check names both agents by address with the fix.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::cluster::{and_list, AgentIdentity, ClusterFacts, Transport};
use crate::evidence::Evidence;
use crate::finding::{Finding, SkipReason, Subject};

pub struct ClusterBus;

crate::kinds! {
    /// What `cluster.bus` can say, per node and for the check.
    pub enum ClusterBusKind for "cluster.bus" {
        /// Every node that answered on the bus answered as one agent (one process on one machine).
        Ok = pass("ok"),
        /// Two agents answer as one node (two machines, most often one re-imaged from the other's disk with its /etc/spinifex, or two processes on one machine): neither report is taken as the node's, so the node is not judged.
        DuplicateNode = fail("duplicate-node"),
    }
}

static DECLARED: Declared = Declared::of::<ClusterBusKind, ClusterBusEvidence>();

/// The agents that answered as more than one node's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterBusEvidence {
    /// How the reports came (`nats`: answers in one gather window;
    /// `jetstream`: the bucket's recent revisions).
    pub via: Transport,
    pub duplicates: Vec<DuplicateNode>,
}

/// One node two or more agents answer as.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DuplicateNode {
    pub node: String,
    /// Each agent, in the order it was first heard.
    pub agents: Vec<AgentIdentity>,
    /// The node's addresses in the coordinator's config (`host`,
    /// `advertise`): the agent at one of them is the node the config means.
    pub config_addresses: Vec<IpAddr>,
}

impl Evidence for ClusterBusEvidence {}

impl Check for ClusterBus {
    fn id(&self) -> &'static str {
        "cluster.bus"
    }

    fn title(&self) -> &'static str {
        "Every node answers on the bus as one agent"
    }

    fn explain(&self) -> &'static str {
        "Every answer an agent sends on NATS and every entry it writes to the spx-doctor \
         bucket carries who it is: /etc/machine-id, the boot id \
         (/proc/sys/kernel/random/boot_id), when the agent process started, and the host's \
         addresses. `--cluster --via nats` keeps every answer that arrives for a node in \
         the gather window, not only the first; `watch` keeps each node's recent revisions. \
         Two agents answering as one node in one window, or bucket revisions of one node \
         alternating between two agents within the last few intervals, are a duplicate: \
         this check fails naming both by address, the node is `duplicate` (never ok), and \
         neither report is judged or placed in the path matrix. Over ssh there is no bus: \
         the check skips.\n\
         \n\
         Why: a machine re-imaged from a node's disk keeps that node's /etc/spinifex, its \
         node name and token, and comes up at another address. Its agent answers as the \
         node it was copied from: a cluster run then took whichever answer came first \
         (exit 0 on some runs, a path matrix gone odd on others, from the two reports \
         mixed), and the bucket's history for the node alternated between two address \
         sets while `watch` showed it ok. The agents themselves log an error when another \
         identity answers for their node name.\n\
         \n\
         Fix: give the re-imaged machine (the one at an address the config does not give \
         the node) its own node name and token, or stop spx-doctor-agent there until it \
         has them. Two agents on one machine: stop the one that is not \
         spx-doctor-agent.service."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    crate::check::cluster_check!(judge);
}

/// The first 8 characters of an id, as a finding shows it.
fn short(id: Option<&str>) -> String {
    match id {
        Some(id) if id.chars().count() > 8 => {
            format!("{}…", id.chars().take(8).collect::<String>())
        }
        Some(id) => id.to_owned(),
        None => "unknown".to_owned(),
    }
}

/// Whether `a` is at one of `places`.
fn placed(a: &AgentIdentity, places: &[IpAddr]) -> bool {
    a.addresses.iter().any(|ip| places.contains(ip))
}

/// "one at 198.19.0.3 (machine-id 1a2b3c4d…, started 12:00:01)".
fn one(a: &AgentIdentity, places: &[IpAddr]) -> String {
    format!(
        "one at {}{} (machine-id {}, boot {}, started {})",
        a.addresses_said(),
        if placed(a, places) {
            ", where the config places it"
        } else {
            ""
        },
        short(a.machine_id.as_deref()),
        short(a.boot_id.as_deref()),
        a.started_at.as_deref().unwrap_or("unknown")
    )
}

/// One duplicate in words: what answers as the node, and the fix.
fn said(d: &DuplicateNode) -> (String, String) {
    let count = match d.agents.len() {
        2 => "two".to_owned(),
        n => n.to_string(),
    };
    let machines = d
        .agents
        .iter()
        .all(|a| d.agents.iter().all(|b| a == b || !a.same_machine(b)));
    let what = if machines {
        "machines"
    } else {
        "agent processes on one machine"
    };
    let agents: Vec<String> = d
        .agents
        .iter()
        .map(|a| one(a, &d.config_addresses))
        .collect();
    let text = format!(
        "{count} {what} answer as {}: {}; neither report is taken as {}'s",
        d.node,
        and_list(&agents),
        d.node
    );
    let others: Vec<&AgentIdentity> = d
        .agents
        .iter()
        .filter(|a| !placed(a, &d.config_addresses))
        .collect();
    let fix = if !machines {
        format!(
            "{}: two spx-doctor agents run on one machine with {}'s config: stop the one that is not spx-doctor-agent.service (`systemctl status spx-doctor-agent` names its pid; `ps -C spx-doctor -o pid,lstart,args` lists them)",
            d.node, d.node
        )
    } else {
        let which = match others.as_slice() {
            [one] if others.len() < d.agents.len() => {
                format!("the machine at {}", one.addresses_said())
            }
            _ => format!(
                "the machine that is not {} (at {})",
                d.node,
                and_list(
                    &d.agents
                        .iter()
                        .map(AgentIdentity::addresses_said)
                        .collect::<Vec<_>>()
                )
            ),
        };
        format!(
            "a machine re-imaged from {node}'s disk keeps {node}'s /etc/spinifex (its node name and token): give {which} its own node name and token (`node` and its own [nodes.NAME] in /etc/spinifex/spinifex.toml, joined as a new node), or stop spx-doctor-agent there until it has them",
            node = d.node
        )
    };
    (text, fix)
}

pub fn judge(facts: &ClusterFacts) -> Finding {
    if facts.transport == Transport::Ssh {
        return Finding::skip(SkipReason::NotApplicable(
            "the reports came over ssh, each from the address the config gives: no agent answered on the bus".into(),
        ));
    }
    let duplicates: Vec<DuplicateNode> = facts
        .nodes
        .iter()
        .filter(|n| n.agents.len() > 1)
        .map(|n| DuplicateNode {
            node: n.name.clone(),
            agents: n.agents.clone(),
            config_addresses: facts
                .config_addresses
                .get(&n.name)
                .cloned()
                .unwrap_or_default(),
        })
        .collect();
    let evidence = ClusterBusEvidence {
        via: facts.transport,
        duplicates: duplicates.clone(),
    };
    let heard = facts.nodes.iter().filter(|n| !n.agents.is_empty()).count();
    let subjects: Vec<Subject> = facts
        .nodes
        .iter()
        .filter(|n| !n.agents.is_empty())
        .map(|n| match duplicates.iter().find(|d| d.node == n.name) {
            Some(d) => Subject::new(ClusterBusKind::DuplicateNode, &n.name, said(d).0),
            None => Subject::new(ClusterBusKind::Ok, &n.name, "answers as one agent"),
        })
        .collect();
    if duplicates.is_empty() {
        let how = match facts.transport {
            Transport::Jetstream => "wrote its recent bucket entries",
            _ => "answered",
        };
        return Finding::new(
            ClusterBusKind::Ok,
            format!("each of the {heard} node(s) whose agent {how} on the bus did so as one agent"),
        )
        .evidence(&evidence)
        .subjects(subjects);
    }
    let words: Vec<(String, String)> = duplicates.iter().map(said).collect();
    Finding::new(
        ClusterBusKind::DuplicateNode,
        words
            .iter()
            .map(|(t, _)| t.as_str())
            .collect::<Vec<_>>()
            .join("; "),
    )
    .fixes(words.into_iter().map(|(_, f)| f))
    .evidence(&evidence)
    .subjects(subjects)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::testing::{answer, config, facts, report, unreached};
    use crate::cluster::{NodeAnswer, UnreachedKind};
    use crate::finding::Status;
    use serde_json::json;

    fn judge(facts: &ClusterFacts) -> Finding {
        crate::schema_check::valid("cluster.bus", super::judge(facts))
    }

    fn agent(machine: &str, boot: &str, started: &str, addresses: &[&str]) -> AgentIdentity {
        AgentIdentity {
            machine_id: Some(machine.into()),
            boot_id: Some(boot.into()),
            started_at: Some(started.into()),
            addresses: addresses.iter().map(|a| a.parse().unwrap()).collect(),
        }
    }

    fn ok(name: &str, a: AgentIdentity) -> NodeAnswer {
        let mut n = answer(
            name,
            report(
                "0.1.0",
                config(name, false, 1500, &["c1", "c2", "c3"]),
                &[],
                json!([]),
            ),
        );
        n.host = None;
        n.agents = vec![a];
        n
    }

    // The clone of issue 36: c3's disk re-imaged onto another machine,
    // which came up at 198.19.0.9 with c3's /etc/spinifex.
    fn cloned() -> ClusterFacts {
        let c3 = agent(
            "3f1c9a0e5d7b4e21a8c6f0b2d4e6a8c0",
            "0b9e2c71-6f55-4b4e-9a57-2a0f3b1d7c11",
            "2026-03-02T10:00:01Z",
            &["198.19.0.3", "198.18.0.3"],
        );
        let clone = agent(
            "9d2e7b41c0a34f6e8b1d5c7a9e3f2b60",
            "5c4a1e9d-2b7f-4a63-8e10-7d9b0c2e4f55",
            "2026-03-02T11:42:10Z",
            &["198.19.0.9"],
        );
        let mut c3n = unreached(
            "c3",
            UnreachedKind::DuplicateNode,
            "two agents answer as c3",
        );
        c3n.agents = vec![c3, clone];
        let mut f = facts(
            vec![
                ok(
                    "c1",
                    agent("a1", "b1", "2026-03-02T10:00:00Z", &["198.19.0.1"]),
                ),
                ok(
                    "c2",
                    agent("a2", "b2", "2026-03-02T10:00:00Z", &["198.19.0.2"]),
                ),
                c3n,
            ],
            &[],
        );
        f.transport = Transport::Nats;
        f.config_addresses
            .insert("c3".into(), vec!["198.19.0.3".parse().unwrap()]);
        f
    }

    #[test]
    fn a_clone_is_named_by_both_addresses_and_the_one_to_mend() {
        let f = judge(&cloned());
        crate::snapshot::snapshot!("cluster.bus", f);
        assert_eq!(f.status, Status::Fail);
        assert_eq!(f.kind.code("cluster.bus"), "cluster.bus/duplicate-node");
        assert!(
            f.summary.starts_with("two machines answer as c3: one at 198.19.0.3, 198.18.0.3, where the config places it (machine-id 3f1c9a0e…")
                && f.summary.contains("and one at 198.19.0.9 (machine-id 9d2e7b41…")
                && f.summary.ends_with("neither report is taken as c3's"),
            "{}",
            f.summary
        );
        assert_eq!(
            f.remediation,
            ["a machine re-imaged from c3's disk keeps c3's /etc/spinifex (its node name and token): give the machine at 198.19.0.9 its own node name and token (`node` and its own [nodes.NAME] in /etc/spinifex/spinifex.toml, joined as a new node), or stop spx-doctor-agent there until it has them"]
        );
        assert_eq!(f.findings[2].kind.name, "duplicate-node", "c3 alone");
        assert!(f.findings[..2].iter().all(|s| s.kind.name == "ok"));
        assert_eq!(
            f.evidence["duplicates"][0]["agents"][1]["addresses"],
            json!(["198.19.0.9"])
        );
    }

    #[test]
    fn two_processes_on_one_machine_and_an_unplaced_pair_are_told_apart() {
        let mut f = cloned();
        // Neither at the config's address: both are named.
        f.config_addresses.clear();
        let out = judge(&f);
        assert!(
            out.remediation[0].contains(
                "give the machine that is not c3 (at 198.19.0.3, 198.18.0.3 and 198.19.0.9)"
            ),
            "{:?}",
            out.remediation
        );
        // One machine, one boot, two starts: two processes there.
        let a = agent("m", "b", "2026-03-02T10:00:01Z", &["198.19.0.3"]);
        let b = agent("m", "b", "2026-03-02T10:05:00Z", &["198.19.0.3"]);
        f.nodes[2].agents = vec![a, b];
        let out = judge(&f);
        crate::snapshot::snapshot!("cluster.bus", out);
        assert!(
            out.summary
                .starts_with("two agent processes on one machine answer as c3"),
            "{}",
            out.summary
        );
        assert!(out.remediation[0].contains("stop the one that is not spx-doctor-agent.service"));
    }

    #[test]
    fn one_agent_per_node_passes_and_ssh_has_no_bus() {
        let mut f = cloned();
        f.nodes.truncate(2);
        let out = judge(&f);
        crate::snapshot::snapshot!("cluster.bus", out);
        assert_eq!(out.status, Status::Pass, "{}", out.summary);
        assert_eq!(
            out.summary,
            "each of the 2 node(s) whose agent answered on the bus did so as one agent"
        );
        f.transport = Transport::Ssh;
        assert_eq!(judge(&f).status, Status::Skip);
        f.transport = Transport::Jetstream;
        assert!(judge(&f)
            .summary
            .contains("wrote its recent bucket entries"));
    }
}
