//! `cluster.reachable`: every selected node answered with a valid report.
//!
//! A node that did not is never a fail: nothing was measured on it, so the
//! run is inconclusive (exit 2) unless something else failed. Each failure
//! is named the way an operator fixes it: connection refused or timed out,
//! a host key that changed or is unknown, publickey refused, `sudo` wanting
//! a password, the binary missing (127), a doctor of another version, or an
//! answer that is not a report.

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared, Scope};
use crate::cluster::{self, and_list, ClusterFacts, NodeAnswer, Unreached, UnreachedKind};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::finding::{Finding, Subject};

pub struct ClusterReachable;

crate::kinds! {
    /// What `cluster.reachable` can say, per node and for the check.
    pub enum ClusterReachableKind for "cluster.reachable" {
        /// Every selected node answered with a valid JSON v1 report, from the same doctor.
        Ok = pass("ok"),
        /// A node did not answer (connection refused, host key, sudo, binary missing, deadline…): nothing is concluded about it, so the run is inconclusive.
        Unanswered = error("unanswered"),
        /// No node was selected.
        NoNodes = error("no-nodes"),
        /// A node runs another version of the doctor: its findings may differ.
        OtherVersion = warn("other-version"),
    }
}

static DECLARED: Declared = Declared::of::<ClusterReachableKind, ClusterReachableEvidence>();

/// Who answered, and why the others did not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterReachableEvidence {
    pub nodes: Vec<NodeReach>,
    pub answered: usize,
    pub selected: usize,
}

/// One node's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeReach {
    pub name: String,
    /// The address ssh was given; null for this node.
    pub host: Option<String>,
    pub answered: bool,
    pub version: Option<String>,
    pub reason: Option<UnreachedKind>,
    pub detail: Option<String>,
}

impl Evidence for ClusterReachableEvidence {}

impl Check for ClusterReachable {
    fn id(&self) -> &'static str {
        "cluster.reachable"
    }

    fn title(&self) -> &'static str {
        "Every node answered with a valid report"
    }

    fn explain(&self) -> &'static str {
        "In `spx doctor --cluster`, every selected node runs the doctor at once: this node \
         in-process, the others over OpenSSH (the system `ssh`, with BatchMode=yes, so the \
         host's ssh_config, agent and known_hosts apply and nothing ever prompts), as \
         `ssh HOST -- [sudo -n] spx-doctor --format json --config PATH ...`. This check \
         passes when every node answered with a valid JSON v1 report by the run's \
         --timeout.\n\
         \n\
         A node that did not answer is an error (inconclusive, exit 2), never a fail, and \
         is named with the reason: connection refused or timed out, host key changed (never \
         accepted) or unknown, permission denied (publickey), sudo wants a password, the \
         remote binary not found (exit 127), a doctor of another version, or an answer that \
         is not a report. A node running another version of the doctor is a warning.\n\
         \n\
         Why: jumbo frames and IPsec are cluster-wide changes, and a preflight that could \
         not see a node has not proven anything about it.\n\
         \n\
         Fix: what the finding names: install the doctor on every node, the key \
         install-node.sh sets up (ssh -o BatchMode=yes as user spinifex), passwordless sudo \
         for the doctor, or a verified host key."
    }

    fn scope(&self) -> Scope {
        Scope::Cluster
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, _ctx: &Ctx) -> Finding {
        cluster::outside_cluster_run()
    }
}

pub fn judge(facts: &ClusterFacts) -> Finding {
    let total = facts.nodes.len();
    let unreached: Vec<(&NodeAnswer, &Unreached)> = facts.unreached().collect();
    let other_version: Vec<(&str, &str)> = facts
        .answered()
        .filter_map(|n| {
            let v = n.version().unwrap_or("unknown");
            (v != facts.version).then_some((n.name.as_str(), v))
        })
        .collect();
    let via_ssh = facts.answered().filter(|n| n.host.is_some()).count();
    let in_process: Vec<&str> = facts
        .answered()
        .filter(|n| n.host.is_none())
        .map(|n| n.name.as_str())
        .collect();
    let subjects: Vec<Subject> = facts
        .nodes
        .iter()
        .map(|n| match (&n.report, n.version()) {
            (Err(why), _) => {
                Subject::new(ClusterReachableKind::Unanswered, &n.name, why.to_string())
            }
            (Ok(_), Some(v)) if v != facts.version => Subject::new(
                ClusterReachableKind::OtherVersion,
                &n.name,
                format!("runs spx-doctor {v} (this is {})", facts.version),
            ),
            (Ok(_), _) => Subject::new(
                ClusterReachableKind::Ok,
                &n.name,
                if n.host.is_some() {
                    "answered over ssh"
                } else {
                    "answered in-process"
                },
            ),
        })
        .collect();
    let evidence = |f: Finding| {
        let nodes = facts
            .nodes
            .iter()
            .map(|n| NodeReach {
                name: n.name.clone(),
                host: n.host.clone(),
                answered: n.report.is_ok(),
                version: n.version().map(str::to_owned),
                reason: n.report.as_ref().err().map(|e| e.kind),
                detail: n.report.as_ref().err().map(|e| e.detail.clone()),
            })
            .collect();
        f.evidence(&ClusterReachableEvidence {
            nodes,
            answered: total - unreached.len(),
            selected: total,
        })
        .subjects(subjects.clone())
    };
    if total == 0 {
        return evidence(Finding::new(
            ClusterReachableKind::NoNodes,
            "no node was selected",
        ));
    }
    if !unreached.is_empty() {
        let parts: Vec<String> = unreached
            .iter()
            .map(|(n, why)| format!("{} ({why})", n.name))
            .collect();
        let mut f = Finding::new(
            ClusterReachableKind::Unanswered,
            format!(
                "{} of {total} nodes did not answer, so nothing is concluded about {}: {}",
                unreached.len(),
                if unreached.len() == 1 { "it" } else { "them" },
                parts.join("; ")
            ),
        );
        for (n, why) in &unreached {
            f = f.fix(remedy(facts, n, why));
        }
        return evidence(f);
    }
    let how = match (in_process.as_slice(), via_ssh) {
        ([], n) => format!("{n} over ssh"),
        ([me], 0) => format!("{me} in-process"),
        ([me], n) => format!("{me} in-process, {n} over ssh"),
        (_, n) => format!("{n} over ssh"),
    };
    if !other_version.is_empty() {
        let parts: Vec<String> = other_version
            .iter()
            .map(|(n, v)| format!("{n} runs {v}"))
            .collect();
        return evidence(
            Finding::new(
                ClusterReachableKind::OtherVersion,
                format!(
                    "all {total} nodes answered ({how}), but {} (this is {}): findings may differ between versions",
                    and_list(&parts),
                    facts.version
                ),
            )
            .fix(format!(
                "install spx-doctor {} on {}, the same build on every node",
                facts.version,
                and_list(&other_version.iter().map(|(n, _)| *n).collect::<Vec<_>>())
            )),
        );
    }
    evidence(Finding::new(
        ClusterReachableKind::Ok,
        format!("all {total} nodes answered with a valid report ({how})"),
    ))
}

/// The fix for one node that did not answer.
fn remedy(facts: &ClusterFacts, n: &NodeAnswer, why: &Unreached) -> String {
    let name = &n.name;
    let host = n.host.as_deref().unwrap_or("?");
    let user = facts.ssh_user.as_deref().unwrap_or("the ssh user");
    let bin = &facts.remote_bin;
    match why.kind {
        UnreachedKind::NoAddress => format!(
            "{name}: give it `host = \"ADDRESS\"` under [nodes.{name}] in spinifex.toml, or leave it out with --nodes"
        ),
        UnreachedKind::SshMissing => "install the OpenSSH client here (`apt-get install openssh-client`)".into(),
        UnreachedKind::ConnectionRefused => format!(
            "{name}: nothing accepts ssh at {host}: `systemctl status ssh` on {name}, and check the address in [nodes.{name}]"
        ),
        UnreachedKind::TimedOut | UnreachedKind::NoRoute | UnreachedKind::Deadline => format!(
            "{name}: is {host} up and does its firewall admit ssh from this node? `ssh -o BatchMode=yes {host} true` must return at once (or raise --timeout)"
        ),
        UnreachedKind::NameUnresolved => format!(
            "{name}: {host} does not resolve: fix [nodes.{name}] host or DNS/hosts on this node"
        ),
        UnreachedKind::HostKeyChanged => format!(
            "{name}: its host key is not the one in known_hosts. If {name} was reinstalled, compare the new key out of band (`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on {name}) and only then `ssh-keygen -R {host}`; otherwise treat it as an attack. spx doctor never accepts a changed key"
        ),
        UnreachedKind::HostKeyUnknown => format!(
            "{name}: known_hosts has no key for {host}; verify its fingerprint on the node (`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`) and add it (`ssh-keyscan {host} >> ~/.ssh/known_hosts` after comparing)"
        ),
        UnreachedKind::PermissionDenied => format!(
            "{name}: install this node's public key for {user} there, as scripts/install-node.sh does (`ssh-copy-id {host}`), or pass --ssh-user"
        ),
        UnreachedKind::SudoPassword | UnreachedKind::SudoRefused => format!(
            "{name}: let {user} run the doctor with passwordless sudo: `{user} ALL=(root) NOPASSWD: /usr/local/bin/{bin}` in /etc/sudoers.d/spx-doctor (edit with `visudo -f`)",
            bin = bin.rsplit('/').next().unwrap_or(bin)
        ),
        UnreachedKind::BinaryNotFound | UnreachedKind::NotExecutable => format!(
            "{name}: install spx-doctor {} there (`install -m 0755 spx-doctor /usr/local/bin/`), or pass --remote-bin PATH",
            facts.version
        ),
        UnreachedKind::OtherVersion => format!(
            "{name}: install spx-doctor {} there: its doctor does not understand what this one asked",
            facts.version
        ),
        UnreachedKind::RemoteRefused => format!(
            "{name}: run `{bin} --format json` there to see the refusal; the config must be readable at the same path on every node"
        ),
        UnreachedKind::InvalidAnswer => format!(
            "{name}: `ssh {host} {bin} --format json` must print one JSON v1 report; a login banner or profile script printing to stdout breaks it"
        ),
        UnreachedKind::Ssh => format!("{name}: `ssh -v -o BatchMode=yes {host} true` shows what fails"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::testing::*;
    use crate::finding::Status;
    use serde_json::json;

    /// Every verdict these tests see is also checked against the schema.
    fn judge(facts: &ClusterFacts) -> Finding {
        crate::schema_check::valid("cluster.reachable", super::judge(facts))
    }

    fn ok(name: &str, version: &str) -> NodeAnswer {
        answer(
            name,
            report(
                version,
                config(name, true, 1500, &["a", "b", "c"]),
                &[],
                json!([]),
            ),
        )
    }

    #[test]
    fn all_answered_passes() {
        let mut a = ok("a", "0.1.0");
        a.host = None;
        let f = judge(&facts(vec![a, ok("b", "0.1.0"), ok("c", "0.1.0")], &[]));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(
            f.summary,
            "all 3 nodes answered with a valid report (a in-process, 2 over ssh)"
        );
    }

    #[test]
    fn a_node_that_did_not_answer_is_an_error_never_a_fail() {
        let f = judge(&facts(
            vec![
                ok("a", "0.1.0"),
                unreached(
                    "b",
                    UnreachedKind::HostKeyChanged,
                    "REMOTE HOST IDENTIFICATION HAS CHANGED",
                ),
                unreached(
                    "c",
                    UnreachedKind::SudoPassword,
                    "sudo: a password is required",
                ),
            ],
            &[],
        ));
        assert_eq!(f.status, Status::Error);
        assert!(
            f.summary.starts_with("2 of 3 nodes did not answer"),
            "{}",
            f.summary
        );
        assert!(f
            .summary
            .contains("b (host key changed: REMOTE HOST IDENTIFICATION HAS CHANGED)"));
        assert!(f
            .summary
            .contains("c (sudo wants a password: sudo: a password is required)"));
        assert!(f.remediation[0].contains("never accepts a changed key"));
        assert!(f.remediation[1].contains("NOPASSWD"));
        assert_eq!(f.evidence["nodes"][1]["reason"], "host-key-changed");
        assert_eq!(
            f.kind.code("cluster.reachable"),
            "cluster.reachable/unanswered"
        );
        let kinds: Vec<&str> = f.findings.iter().map(|s| s.kind.name).collect();
        assert_eq!(kinds, ["ok", "unanswered", "unanswered"]);
    }

    #[test]
    fn another_version_warns() {
        let f = judge(&facts(vec![ok("a", "0.1.0"), ok("b", "0.0.9")], &[]));
        assert_eq!(f.status, Status::Warn);
        assert!(
            f.summary.contains("b runs 0.0.9 (this is 0.1.0)"),
            "{}",
            f.summary
        );
    }
}
