//! `cluster.reachable`: every selected node answered with a valid report.
//!
//! A node that did not is never a fail: nothing was measured on it, so the
//! run is inconclusive (exit 2) unless something else failed. Each failure
//! is named the way an operator fixes it: connection refused or timed out,
//! a host key that changed or is unknown, publickey refused, `sudo` wanting
//! a password, the binary missing (127), a doctor of another version, or an
//! answer that is not a report.

use crate::check::{Check, Scope};
use crate::cluster::{self, and_list, ClusterFacts, NodeAnswer, Unreached, UnreachedKind};
use crate::ctx::Ctx;
use crate::finding::Finding;

pub struct ClusterReachable;

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
    let evidence = |f: Finding| {
        let nodes: Vec<serde_json::Value> = facts
            .nodes
            .iter()
            .map(|n| {
                serde_json::json!({
                    "name": n.name,
                    "host": n.host,
                    "answered": n.report.is_ok(),
                    "version": n.version(),
                    "reason": n.report.as_ref().err().map(|e| e.kind),
                    "detail": n.report.as_ref().err().map(|e| &e.detail),
                })
            })
            .collect();
        f.with("nodes", nodes)
            .with("answered", total - unreached.len())
            .with("selected", total)
    };
    if total == 0 {
        return evidence(Finding::error("no node was selected"));
    }
    if !unreached.is_empty() {
        let parts: Vec<String> = unreached
            .iter()
            .map(|(n, why)| format!("{} ({why})", n.name))
            .collect();
        let mut f = Finding::error(format!(
            "{} of {total} nodes did not answer, so nothing is concluded about {}: {}",
            unreached.len(),
            if unreached.len() == 1 { "it" } else { "them" },
            parts.join("; ")
        ));
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
            Finding::warn(format!(
                "all {total} nodes answered ({how}), but {} (this is {}): findings may differ between versions",
                and_list(&parts),
                facts.version
            ))
            .fix(format!(
                "install spx-doctor {} on {}, the same build on every node",
                facts.version,
                and_list(&other_version.iter().map(|(n, _)| *n).collect::<Vec<_>>())
            )),
        );
    }
    evidence(Finding::pass(format!(
        "all {total} nodes answered with a valid report ({how})"
    )))
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
