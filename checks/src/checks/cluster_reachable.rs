//! `cluster.reachable`: every selected node answered with a valid report.
//!
//! A node that did not is never a fail: nothing was measured on it, so the
//! run is inconclusive (exit 2) unless something else failed. Each failure
//! is named the way an operator fixes it: connection refused or timed out,
//! a host key that changed or is unknown, publickey refused, `sudo` wanting
//! a password, the binary missing (127), a doctor of another version, an
//! answer that is not a report, or a node still queued behind `--parallel`
//! at the deadline; and each fix names what this run used (its ssh command
//! line, user, `--remote-bin`, sudo, the host and known_hosts as `ssh -G`
//! gives them).

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::cluster::{and_list, ClusterFacts, NodeAnswer, Transport, Unreached, UnreachedKind};
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
         `ssh HOST -- [sudo -n] spx-doctor --format json --config PATH ...`; or, with \
         `--via nats` (the default when the config has this node's [nodes.NODE.nats]), \
         every node's `spx-doctor agent` answers one request on Spinifex's NATS. This \
         check passes when every node answered with a valid JSON v1 report by the run's \
         --timeout.\n\
         \n\
         Host keys are always checked: the run passes `-o StrictHostKeyChecking=yes` unless \
         the ssh_config (read with `ssh -G`) says `accept-new`, which also refuses a changed \
         key; a changed key never yields a report, whatever the ssh_config says.\n\
         \n\
         A node that did not answer is an error (inconclusive, exit 2), never a fail, and \
         is named with the reason: connection refused or timed out, host key changed (never \
         accepted) or unknown, permission denied (publickey), sudo wants a password, the \
         remote binary not found (exit 127), a doctor of another version, an answer that \
         is not a report, or still queued behind --parallel at the deadline. Each fix names \
         what this run used: the ssh command line, the user, --remote-bin, the known_hosts \
         file and host form. Over NATS: no agent answered (said once when none did), this \
         node's own NATS session failed (connect, TLS, token: said once), its agent is \
         subscribed but did not answer (stopped, hung, or overloaded), the agent refused, \
         was busy or at its runs-per-minute bound, its report does not fit the server's \
         max_payload, or two agents answer as the node (cluster.bus names them). A node \
         running another version of the doctor is a warning.\n\
         \n\
         Why: jumbo frames and IPsec are cluster-wide changes, and a preflight that could \
         not see a node has not proven anything about it.\n\
         \n\
         Fix: what the finding names: install the doctor on every node, the key \
         install-node.sh sets up (ssh -o BatchMode=yes as user spinifex), passwordless sudo \
         for the doctor, or a verified host key."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    crate::check::cluster_check!(judge);
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
                match (facts.transport, n.host.is_some()) {
                    (Transport::Nats, _) => "its agent answered over NATS",
                    (Transport::Jetstream, _) => "its agent's latest report is current",
                    (Transport::Ssh, true) => "answered over ssh",
                    (Transport::Ssh, false) => "answered in-process",
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
    if let Some(f) = one_cause(facts, &unreached) {
        return evidence(f);
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
        _ if facts.transport == Transport::Nats => match total {
            1 => "its agent over NATS".to_owned(),
            n => format!("{n} agents over NATS"),
        },
        _ if facts.transport == Transport::Jetstream => {
            "the agents' current reports in the spx-doctor bucket".to_owned()
        }
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

/// `word` as a shell reads it back: as it is when it holds nothing a
/// shell acts on, else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/:,+=@%-".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// What this run asked of `n`, in the words of the fixes: the ssh command
/// line it used (`ssh [OPTS] [-F FILE] [-l USER] HOST`), the user it logged
/// in as, the remote command, and the doctor's path.
struct Route<'a> {
    facts: &'a ClusterFacts,
    n: &'a NodeAnswer,
}

impl Route<'_> {
    fn host(&self) -> &str {
        self.n.host.as_deref().unwrap_or("?")
    }

    /// `ssh OPTS [-F FILE] [-l USER] HOST`, as this run ran it.
    fn ssh(&self, opts: &str) -> String {
        let mut words = vec!["ssh".to_owned()];
        if !opts.is_empty() {
            words.push(opts.to_owned());
        }
        if let Some(f) = &self.facts.ssh_config {
            words.push("-F".into());
            words.push(shell_word(f));
        }
        if let Some(u) = &self.facts.ssh_user {
            words.push("-l".into());
            words.push(shell_word(u));
        }
        words.push(shell_word(self.host()));
        words.join(" ")
    }

    /// The user ssh logged in as: `--ssh-user`, else what `ssh -G` said.
    fn user(&self) -> Option<&str> {
        self.facts
            .ssh_user
            .as_deref()
            .or_else(|| self.n.ssh.as_ref().map(|t| t.user.as_str()))
            .filter(|u| !u.is_empty())
    }

    /// The doctor as the remote command named it, behind `sudo -n` when
    /// this run used sudo.
    fn remote(&self, args: &str) -> String {
        let sudo = if self.facts.sudo { "sudo -n " } else { "" };
        format!("{sudo}{} {args}", shell_word(&self.facts.remote_bin))
    }

    /// `--remote-bin` when it is an absolute path.
    fn bin_path(&self) -> Option<&str> {
        Some(self.facts.remote_bin.as_str()).filter(|b| b.starts_with('/'))
    }

    /// The known_hosts file and the name in it, as `ssh -G` said (else
    /// ssh's defaults).
    fn known_hosts(&self) -> (String, String) {
        match &self.n.ssh {
            Some(t) => (
                t.known_hosts_file()
                    .unwrap_or("~/.ssh/known_hosts")
                    .to_owned(),
                t.known_hosts_name(),
            ),
            None => ("~/.ssh/known_hosts".to_owned(), self.host().to_owned()),
        }
    }

    /// `ssh-keyscan [-p PORT] HOST`: the key the node offers now.
    fn keyscan(&self) -> String {
        match &self.n.ssh {
            Some(t) if t.port != 22 => {
                format!("ssh-keyscan -p {} {}", t.port, shell_word(&t.hostname))
            }
            Some(t) => format!("ssh-keyscan {}", shell_word(&t.hostname)),
            None => format!("ssh-keyscan {}", shell_word(self.host())),
        }
    }
}

/// When no node answered for one reason that is not about any node (no
/// agent anywhere, or this node's own session with NATS failed), the
/// finding says it once, with one fix, instead of once per node.
fn one_cause(facts: &ClusterFacts, unreached: &[(&NodeAnswer, &Unreached)]) -> Option<Finding> {
    let total = facts.nodes.len();
    let (_, first) = unreached.first()?;
    if unreached.len() != total || total < 2 {
        return None;
    }
    let same = unreached.iter().all(|(_, w)| {
        w.kind == first.kind && (w.kind == UnreachedKind::NoAgent || w.detail == first.detail)
    });
    if !same {
        return None;
    }
    let them = format!("none of the {total} nodes answered, so nothing is concluded about them");
    match first.kind {
        UnreachedKind::NoAgent => Some(
            Finding::new(
                ClusterReachableKind::Unanswered,
                format!("no spx-doctor agent answered on NATS: are the agents installed? ({them})"),
            )
            .fix(
                "install and start the agent on every node: contrib/systemd/spx-doctor-agent.service (`systemctl enable --now spx-doctor-agent`; `journalctl -u spx-doctor-agent` says whether it is connected)",
            )
            .fix("or run without agents, over OpenSSH: `spx doctor --cluster --via ssh`"),
        ),
        k if k.is_bus() => Some(
            Finding::new(
                ClusterReachableKind::Unanswered,
                format!("{first} ({them})"),
            )
            .fix(bus_remedy(k))
            .fix("or run without NATS, over OpenSSH: `spx doctor --cluster --via ssh`"),
        ),
        _ => None,
    }
}

/// The fix when this node's own session with NATS failed.
fn bus_remedy(kind: UnreachedKind) -> String {
    match kind {
        UnreachedKind::NatsTls => "this node's [nodes.NODE.nats] cacert must be the CA that signed the NATS server's certificate (Spinifex's ca.pem), and the certificate must name the host the config gives".into(),
        UnreachedKind::NatsAuth => "this node's [nodes.NODE.nats.acl] token must be the cluster's NATS token (the one in nats.conf's authorization block)".into(),
        _ => "is NATS running here and listening where this node's [nodes.NODE.nats] host says? `systemctl status spinifex-nats`".into(),
    }
}

/// The fix over NATS, where ssh's words do not apply.
fn nats_remedy(facts: &ClusterFacts, n: &NodeAnswer, why: &Unreached) -> Option<String> {
    let name = &n.name;
    Some(match why.kind {
        UnreachedKind::NoAgent => format!(
            "{name}: start its agent: `systemctl enable --now spx-doctor-agent` there (`journalctl -u spx-doctor-agent` says why it is not connected), or reach it with --via ssh"
        ),
        UnreachedKind::NatsConnect | UnreachedKind::NatsTls | UnreachedKind::NatsAuth => {
            bus_remedy(why.kind)
        }
        UnreachedKind::AgentRefused => format!(
            "{name}: install spx-doctor {} there and restart spx-doctor-agent: its agent does not take what this one asked",
            facts.version
        ),
        UnreachedKind::AgentBusy => format!(
            "{name}: its agent was busy or at its runs-per-minute bound: run again when the refusal says (or raise --runs-per-minute in its unit)"
        ),
        UnreachedKind::TooLarge => format!(
            "{name}: its report does not fit the NATS server's max_payload: raise `max_payload` in nats.conf above the size said (Spinifex's template sets 1MB) and restart nats-server, or run fewer checks there (--check), or reach it with --via ssh"
        ),
        UnreachedKind::AgentSilent => format!(
            "{name}: something holds its agent's subscription on NATS but answers nothing: `systemctl status spx-doctor-agent` and `journalctl -u spx-doctor-agent` on {name} (a stopped or hung agent is restarted with `systemctl restart spx-doctor-agent`; one overloaded logs its runs), or reach it with --via ssh"
        ),
        UnreachedKind::DuplicateNode => format!(
            "{name}: two agents answer as {name}, so neither report is taken as its own: cluster.bus names them and the fix"
        ),
        UnreachedKind::Deadline => format!(
            "{name}: its agent took the request but had no report by the deadline: raise --timeout, and see `journalctl -u spx-doctor-agent` on {name}"
        ),
        UnreachedKind::InvalidAnswer => format!(
            "{name}: what answered as its agent sent no JSON v1 report of {name}: `journalctl -u spx-doctor-agent` on {name}, and is another agent running with {name}'s config?"
        ),
        UnreachedKind::Stale => format!(
            "{name}: its agent stopped writing reports: `systemctl status spx-doctor-agent` and `journalctl -u spx-doctor-agent` on {name} (is it running, and connected to NATS?)"
        ),
        UnreachedKind::NoReport => format!(
            "{name}: start its agent with periodic runs on: `systemctl enable --now spx-doctor-agent` there ([doctor] interval, default 60s, not 0)"
        ),
        _ => return None,
    })
}

/// The fix for one node that did not answer: in the terms this run used
/// (its ssh command line, user, ssh_config, `--remote-bin`, sudo).
fn remedy(facts: &ClusterFacts, n: &NodeAnswer, why: &Unreached) -> String {
    if matches!(facts.transport, Transport::Nats | Transport::Jetstream) {
        if let Some(fix) = nats_remedy(facts, n, why) {
            return fix;
        }
    }
    let name = &n.name;
    let route = Route { facts, n };
    let host = route.host();
    let bin = &facts.remote_bin;
    let secs = |d: std::time::Duration| format!("{:.1}s", d.as_secs_f64());
    let over_ssh = facts.nodes.iter().filter(|n| n.host.is_some()).count();
    match why.kind {
        UnreachedKind::NoAddress => format!(
            "{name}: give it `host = \"ADDRESS\"` under [nodes.{name}] in spinifex.toml, or leave it out with --nodes"
        ),
        UnreachedKind::SshMissing => "install the OpenSSH client here (`apt-get install openssh-client`)".into(),
        UnreachedKind::ConnectionRefused => format!(
            "{name}: nothing accepts ssh at {}: `systemctl status ssh` on {name}, and check the address in [nodes.{name}]",
            match &n.ssh {
                Some(t) if t.port != 22 => format!("{}:{}", t.hostname, t.port),
                Some(t) => t.hostname.clone(),
                None => host.to_owned(),
            }
        ),
        UnreachedKind::Queued => format!(
            "{name}: it waited {} for one of --parallel {} ssh sessions and never started: raise --parallel (to {over_ssh} to start every node at once) or --timeout",
            why.queued.map_or_else(|| "until the deadline".to_owned(), secs),
            facts.parallel
        ),
        UnreachedKind::Deadline if why.queued.is_some() => format!(
            "{name}: its ssh started only after waiting {} for one of --parallel {} sessions, and the deadline cut it off: raise --parallel (to {over_ssh} to start every node at once) or --timeout",
            why.queued.map(secs).unwrap_or_default(),
            facts.parallel
        ),
        UnreachedKind::TimedOut | UnreachedKind::NoRoute | UnreachedKind::Deadline => format!(
            "{name}: is {host} up and does its firewall admit ssh from this node? `{} true` must return at once (or raise --timeout)",
            route.ssh("-o BatchMode=yes")
        ),
        UnreachedKind::NameUnresolved => format!(
            "{name}: {host} does not resolve: fix [nodes.{name}] host or DNS/hosts on this node"
        ),
        UnreachedKind::HostKeyChanged => {
            let (file, key) = route.known_hosts();
            format!(
                "{name}: its host key is not the one {file} holds for {key}. If {name} was reinstalled, verify the new key out of band (`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on {name}'s console, against `{} | ssh-keygen -lf -` here) and only then `ssh-keygen -f {} -R {}`; otherwise treat it as an attack. spx doctor never accepts a changed key, whatever the ssh_config says",
                route.keyscan(),
                shell_word(&file),
                shell_word(&key)
            )
        }
        UnreachedKind::HostKeyUnknown => {
            let (file, key) = route.known_hosts();
            if file == "/dev/null" {
                format!(
                    "{name}: the ssh_config's UserKnownHostsFile is /dev/null, so no host key is ever known (spx doctor checks host keys whatever StrictHostKeyChecking says): point it at a file, then verify {name}'s key on its console (`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`) against `{} | ssh-keygen -lf -` and add it",
                    route.keyscan()
                )
            } else {
                format!(
                    "{name}: {file} has no key for {key}; verify its fingerprint on the node (`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`) against `{} | ssh-keygen -lf -`, and only then add it (`{} >> {}`)",
                    route.keyscan(),
                    route.keyscan(),
                    shell_word(&file)
                )
            }
        }
        UnreachedKind::PermissionDenied => {
            let user = route.user().unwrap_or("the ssh user");
            let config = facts
                .ssh_config
                .as_deref()
                .map(|f| format!("-F {} ", shell_word(f)))
                .unwrap_or_default();
            let at = route
                .user()
                .map(|u| format!("{}@", shell_word(u)))
                .unwrap_or_default();
            format!(
                "{name}: install this node's public key for {user} there, as scripts/install-node.sh does (`ssh-copy-id {config}{at}{}`){}",
                shell_word(host),
                if facts.ssh_user.is_some() { "" } else { ", or pass --ssh-user" }
            )
        }
        UnreachedKind::SudoPassword | UnreachedKind::SudoRefused => {
            let user = route.user().unwrap_or("the ssh user");
            match route.bin_path() {
                Some(path) => format!(
                    "{name}: let {user} run the doctor with passwordless sudo: `{user} ALL=(root) NOPASSWD: {path}` in /etc/sudoers.d/spx-doctor (edit with `visudo -f`)"
                ),
                None => format!(
                    "{name}: let {user} run the doctor with passwordless sudo: `{user} ALL=(root) NOPASSWD: /usr/local/bin/{bin}` in /etc/sudoers.d/spx-doctor (edit with `visudo -f`; the full path sudo finds {bin} at)"
                ),
            }
        }
        UnreachedKind::BinaryNotFound => match route.bin_path() {
            Some(path) => format!(
                "{name}: nothing is at --remote-bin {path} there: install spx-doctor {} at that path (`install -m 0755 spx-doctor {path}` on {name}), or point --remote-bin at where it is installed",
                facts.version
            ),
            None => format!(
                "{name}: {bin} is not on {}: install spx-doctor {} there (`install -m 0755 spx-doctor /usr/local/bin/{bin}`), or pass --remote-bin with its absolute path",
                if facts.sudo {
                    "sudo's secure_path"
                } else {
                    "the PATH of a non-interactive ssh session"
                },
                facts.version
            ),
        },
        UnreachedKind::NotExecutable => match route.bin_path() {
            Some(path) => format!(
                "{name}: --remote-bin {path} is not executable there: `chmod 0755 {path}` on {name} (and its filesystem must not be mounted noexec)"
            ),
            None => format!(
                "{name}: the {bin} on its PATH is not executable: `chmod 0755` it on {name}, or pass --remote-bin with the absolute path of spx-doctor {}",
                facts.version
            ),
        },
        UnreachedKind::OtherVersion => format!(
            "{name}: install spx-doctor {} there{}: its doctor does not understand what this one asked",
            facts.version,
            route.bin_path().map(|p| format!(" (at {p})")).unwrap_or_default()
        ),
        UnreachedKind::RemoteRefused => format!(
            "{name}: `{} -- {}` shows the refusal; the config must be readable at the same path on every node",
            route.ssh(""),
            route.remote("--format json")
        ),
        UnreachedKind::InvalidAnswer => format!(
            "{name}: `{} -- {}` must print one JSON v1 report; a login banner or profile script printing to stdout breaks it",
            route.ssh(""),
            route.remote("--format json")
        ),
        UnreachedKind::Ssh => format!(
            "{name}: `{} true` shows what fails",
            route.ssh("-v -o BatchMode=yes")
        ),
        UnreachedKind::NoAgent
        | UnreachedKind::NatsConnect
        | UnreachedKind::NatsTls
        | UnreachedKind::NatsAuth
        | UnreachedKind::AgentRefused
        | UnreachedKind::AgentBusy
        | UnreachedKind::TooLarge
        | UnreachedKind::Stale
        | UnreachedKind::NoReport
        | UnreachedKind::AgentSilent
        | UnreachedKind::DuplicateNode => nats_remedy(facts, n, why).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::testing::{answer, config, facts, report, unreached};
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
    fn over_nats_a_cause_every_node_shares_is_said_once() {
        let names = ["a", "b", "c"];
        let mut f = facts(
            names
                .iter()
                .map(|n| {
                    unreached(
                        n,
                        UnreachedKind::NoAgent,
                        &format!("is spx-doctor-agent running on {n}?"),
                    )
                })
                .collect(),
            &[],
        );
        f.transport = Transport::Nats;
        let out = judge(&f);
        crate::snapshot::snapshot!("cluster.reachable", out);
        assert_eq!(out.status, Status::Error);
        assert_eq!(out.remediation.len(), 2, "{:?}", out.remediation);
        // This node's own session: the same words for every node, once.
        let mut f = facts(
            names
                .iter()
                .map(|n| {
                    unreached(
                        n,
                        UnreachedKind::NatsAuth,
                        "NATS at 198.19.0.254:4222: authorization violation",
                    )
                })
                .collect(),
            &[],
        );
        f.transport = Transport::Nats;
        let out = judge(&f);
        crate::snapshot::snapshot!("cluster.reachable", out);
        assert_eq!(
            out.summary.matches("authorization violation").count(),
            1,
            "{}",
            out.summary
        );
        // One node without its agent is named per node, with its fix.
        let mut nodes: Vec<NodeAnswer> = ["a", "b"].iter().map(|n| ok(n, "0.1.0")).collect();
        nodes.push(unreached(
            "c",
            UnreachedKind::NoAgent,
            "is spx-doctor-agent running on c?",
        ));
        let mut f = facts(nodes, &[]);
        f.transport = Transport::Nats;
        let out = judge(&f);
        crate::snapshot::snapshot!("cluster.reachable", out);
        // All answered over NATS.
        let mut f = facts(["a", "b"].iter().map(|n| ok(n, "0.1.0")).collect(), &[]);
        f.transport = Transport::Nats;
        let out = judge(&f);
        crate::snapshot::snapshot!("cluster.reachable", out);
        assert_eq!(
            out.summary,
            "all 2 nodes answered with a valid report (2 agents over NATS)"
        );
    }

    #[test]
    fn all_answered_passes() {
        let mut a = ok("a", "0.1.0");
        a.host = None;
        let f = judge(&facts(vec![a, ok("b", "0.1.0"), ok("c", "0.1.0")], &[]));
        crate::snapshot::snapshot!("cluster.reachable", f);
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
        crate::snapshot::snapshot!("cluster.reachable", f);
        assert_eq!(f.status, Status::Error);
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
        crate::snapshot::snapshot!("cluster.reachable", f);
        assert_eq!(f.status, Status::Warn);
    }

    /// `name`'s fix, when it did not answer with `kind`, in `facts`.
    fn fix(
        mut facts: ClusterFacts,
        kind: UnreachedKind,
        target: Option<crate::cluster::SshTarget>,
        queued: Option<std::time::Duration>,
    ) -> String {
        let mut n = unreached("b", kind, "said");
        n.ssh = target;
        if let Err(why) = &mut n.report {
            why.queued = queued;
        }
        facts.nodes.push(n);
        let f = judge(&facts);
        f.remediation.last().unwrap().clone()
    }

    fn target(port: u16, user: &str) -> crate::cluster::SshTarget {
        crate::cluster::SshTarget {
            user: user.into(),
            hostname: "198.19.0.2".into(),
            port,
            host_key_alias: None,
            known_hosts: vec!["/root/.ssh/known_hosts".into()],
            strict_host_key_checking: "false".into(),
        }
    }

    #[test]
    fn host_key_fixes_name_the_file_and_the_host_as_ssh_has_them() {
        let base = || facts(vec![ok("a", "0.1.0")], &[]);
        let f = fix(
            base(),
            UnreachedKind::HostKeyChanged,
            Some(target(2222, "root")),
            None,
        );
        assert!(
            f.contains("`ssh-keygen -f /root/.ssh/known_hosts -R '[198.19.0.2]:2222'`")
                && f.contains("`ssh-keyscan -p 2222 198.19.0.2 | ssh-keygen -lf -`")
                && f.contains("never accepts a changed key, whatever the ssh_config says"),
            "{f}"
        );
        let f = fix(base(), UnreachedKind::HostKeyChanged, None, None);
        assert!(
            f.contains("`ssh-keygen -f '~/.ssh/known_hosts' -R b.lab`"),
            "{f}"
        );
        let mut devnull = target(22, "root");
        devnull.known_hosts = vec!["/dev/null".into()];
        let f = fix(base(), UnreachedKind::HostKeyUnknown, Some(devnull), None);
        assert!(f.contains("UserKnownHostsFile is /dev/null"), "{f}");
        let f = fix(
            base(),
            UnreachedKind::HostKeyUnknown,
            Some(target(22, "root")),
            None,
        );
        assert!(
            f.contains("`ssh-keyscan 198.19.0.2 >> /root/.ssh/known_hosts`"),
            "{f}"
        );
    }

    #[test]
    fn fixes_name_the_path_and_user_this_run_used() {
        let with = |bin: &str, user: Option<&str>, sudo: bool| {
            let mut f = facts(vec![ok("a", "0.1.0")], &[]);
            f.remote_bin = bin.into();
            f.ssh_user = user.map(str::to_owned);
            f.sudo = sudo;
            f.ssh_config = Some("/etc/spx/ssh config".into());
            f
        };
        const BIN: &str = "/etc/spinifex/bin/spx-doctor";
        let f = fix(
            with(BIN, Some("spx"), true),
            UnreachedKind::SudoPassword,
            None,
            None,
        );
        assert!(
            f.contains("`spx ALL=(root) NOPASSWD: /etc/spinifex/bin/spx-doctor`"),
            "{f}"
        );
        assert!(!f.contains("/usr/local/bin"), "{f}");
        // No --ssh-user: the user ssh -G named.
        let f = fix(
            with("spx-doctor", None, true),
            UnreachedKind::SudoRefused,
            Some(target(22, "ops")),
            None,
        );
        assert!(
            f.contains("`ops ALL=(root) NOPASSWD: /usr/local/bin/spx-doctor`"),
            "{f}"
        );
        let f = fix(
            with(BIN, None, false),
            UnreachedKind::BinaryNotFound,
            None,
            None,
        );
        assert!(
            f.contains("`install -m 0755 spx-doctor /etc/spinifex/bin/spx-doctor` on b")
                && !f.contains("pass --remote-bin PATH"),
            "{f}"
        );
        let f = fix(
            with("spx-doctor", None, true),
            UnreachedKind::BinaryNotFound,
            None,
            None,
        );
        assert!(
            f.contains("spx-doctor is not on sudo's secure_path")
                && f.contains("/usr/local/bin/spx-doctor"),
            "{f}"
        );
        let f = fix(
            with(BIN, None, false),
            UnreachedKind::NotExecutable,
            None,
            None,
        );
        assert!(
            f.contains("`chmod 0755 /etc/spinifex/bin/spx-doctor` on b"),
            "{f}"
        );
        let f = fix(
            with(BIN, Some("spx"), true),
            UnreachedKind::InvalidAnswer,
            None,
            None,
        );
        assert!(
            f.contains("`ssh -F '/etc/spx/ssh config' -l spx b.lab -- sudo -n /etc/spinifex/bin/spx-doctor --format json`"),
            "{f}"
        );
        let f = fix(
            with(BIN, None, false),
            UnreachedKind::PermissionDenied,
            Some(target(22, "ops")),
            None,
        );
        assert!(
            f.contains("public key for ops there")
                && f.contains("`ssh-copy-id -F '/etc/spx/ssh config' ops@b.lab`")
                && f.ends_with(", or pass --ssh-user"),
            "{f}"
        );
        let f = fix(
            with(BIN, Some("spx"), false),
            UnreachedKind::PermissionDenied,
            None,
            None,
        );
        assert!(!f.contains("pass --ssh-user"), "{f}");
    }

    #[test]
    fn a_node_that_waited_behind_parallel_is_told_so() {
        let mut here = ok("a", "0.1.0");
        here.host = None;
        let mut f = facts(vec![here, ok("c", "0.1.0")], &[]);
        f.parallel = 1;
        let wait = Some(std::time::Duration::from_millis(2900));
        let q = fix(f.clone(), UnreachedKind::Queued, None, wait);
        assert_eq!(
            q,
            "b: it waited 2.9s for one of --parallel 1 ssh sessions and never started: raise --parallel (to 2 to start every node at once) or --timeout"
        );
        let late = fix(f.clone(), UnreachedKind::Deadline, None, wait);
        assert!(late.contains("raise --parallel"), "{late}");
        let at_once = fix(f, UnreachedKind::Deadline, None, None);
        assert!(at_once.contains("is b.lab up"), "{at_once}");
    }
}
