//! How `ipsec.xfrm` says what [`super::analyse`] found: each problem's
//! words, the fixes beside their kinds (written once: `explain` quotes
//! them), the headline, the subjects and the evidence.

use std::collections::BTreeSet;
use std::net::IpAddr;

use super::analyse::{Analysis, Leg, PeerState, Problem};
use super::{
    pending_entries, sa_entries, IpsecXfrmEvidence, IpsecXfrmKind, PeerView, XfrmFacts,
    OVN_ALGORITHM,
};
use crate::cluster::and_list;
use crate::expect::ovs_sa_layout;
use crate::finding::{Finding, Subject};
use crate::kind::{most_severe, Kinds};

/// IKE pending or failing toward `peers`: their IPsec daemons, the CA in
/// charon's trust store on both ends, and charon's own account.
fn ike_pending_fixes(peers: &str) -> [String; 3] {
    [
        format!("on {peers}: openvswitch-ipsec (ovs-monitor-ipsec) and the IKE daemon it starts must run: `systemctl status openvswitch-ipsec` and `ipsec statusall` (charon's pid is in /var/run/charon.pid)"),
        format!("on {peers} and on this node: the cluster CA must be in charon's trust store, which strongSwan's starter reads from /etc/ipsec.d/cacerts only (Spinifex links it there as spinifex-ca.pem): `ls -lL /etc/ipsec.d/cacerts/`, then `ipsec rereadcacerts`"),
        format!("on this node: `ipsec statusall` shows the IKE_SA toward {peers} and `journalctl -t charon | grep -E 'AUTH_FAILED|no trusted|retransmit'` why it does not complete; the kernel drops this node's geneve to {peers} until it does"),
    ]
}

/// Missing SAs (and another algorithm, unless IKE is pending):
/// ovs-monitor-ipsec writes the IKE config again and re-initiates.
const RESTART_FIXES: [&str; 3] = [
    "on this node: `systemctl restart openvswitch-ipsec` (ovs-monitor-ipsec rewrites the IKE config and re-initiates every tunnel)",
    "`ovs-appctl -t ovs-monitor-ipsec tunnels/show` lists the tunnels it should have; `swanctl --list-sas` (or `ipsec statusall`) shows which came up",
    "on the peers named: run `spx doctor --check ipsec.flags,ipsec.xfrm` there too; IKE (UDP 500, 4500) and ESP (IP protocol 50) must pass between the nodes' underlay addresses",
];

/// Another algorithm than OVN's.
fn algorithm_fix() -> String {
    format!("OVN negotiates {OVN_ALGORITHM} (IKE aes_gcm128): SAs with other algorithms come from an IKE configuration OVN does not own (check /etc/ipsec.conf, /etc/swanctl/)")
}

/// SAs toward an address that is no current peer.
const STALE_FIX: &str =
    "if that node is gone for good: `systemctl restart openvswitch-ipsec` on this node drops its SAs";

/// ESP state left with IPsec not wanted.
const LEFTOVER_FIXES: [&str; 3] = [
    "on this node: `systemctl stop openvswitch-ipsec` and stop charon (`systemctl stop strongswan-starter`, or `strongswan` where charon-systemd runs)",
    "`ip xfrm state flush proto esp` and `ip xfrm policy flush` (removes every ESP SA and IPsec policy on this node: only when nothing else here uses IPsec)",
    "then `spx doctor --check ipsec.xfrm,ipsec.flags` must pass: while NB_Global.ipsec or ipsec_encapsulation still read true, the IPsec daemons set the SAs up again",
];

/// The steps that fix a headline whose problems are of `kinds`, each
/// kind's once, in this order; `peers`: those IKE is pending toward. The
/// restart serves missing SAs, and another algorithm when no IKE is
/// pending (with IKE pending, the peers come first); stale SAs are fixed
/// only once nothing fails.
fn fixes(kinds: &[IpsecXfrmKind], peers: &str) -> Vec<String> {
    let has = |k: IpsecXfrmKind| kinds.contains(&k);
    let mut steps: Vec<String> = Vec::new();
    if has(IpsecXfrmKind::LeftoverSas) {
        steps.extend(LEFTOVER_FIXES.map(String::from));
    }
    if has(IpsecXfrmKind::IkePending) {
        steps.extend(ike_pending_fixes(peers));
    }
    if has(IpsecXfrmKind::MissingSas)
        || (has(IpsecXfrmKind::WrongAlgorithm) && !has(IpsecXfrmKind::IkePending))
    {
        steps.extend(RESTART_FIXES.map(String::from));
    }
    if has(IpsecXfrmKind::WrongAlgorithm) {
        steps.push(algorithm_fix());
    }
    if has(IpsecXfrmKind::StaleSas) && steps.is_empty() {
        steps.push(STALE_FIX.to_owned());
    }
    steps
}

/// `explain`'s last paragraph: each kind's fixes, as a finding gives them
/// (steps an earlier kind gives are named by that kind).
pub fn explain_fixes() -> String {
    let mut text = String::from(
        "Fix: the steps a finding of each kind gives (one of several kinds gives each one's steps, once).",
    );
    let mut shown: Vec<(String, &str)> = Vec::new();
    for kind in IpsecXfrmKind::ALL {
        let name = kind.doc().name;
        let steps = fixes(&[*kind], "the peers named");
        if !steps.is_empty() {
            text.push_str(&format!("\n{name}:"));
        }
        let mut before = None;
        for step in steps {
            match shown.iter().find(|(s, _)| *s == step) {
                Some((_, earlier)) if before != Some(*earlier) => {
                    text.push_str(&format!("\n- the steps of {earlier} above"));
                    before = Some(*earlier);
                }
                Some(_) => {}
                None => {
                    text.push_str(&format!("\n- {step}"));
                    shown.push((step, name));
                    before = None;
                }
            }
        }
    }
    text
}

fn arrow(a: impl std::fmt::Display, b: impl std::fmt::Display) -> String {
    format!("{a}->{b}")
}

fn arrows(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(a, b)| arrow(a, b))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The pairs, each once, in order.
fn arrow_set(pairs: &[(IpAddr, IpAddr)]) -> Vec<String> {
    let set: BTreeSet<String> = pairs.iter().map(|(s, d)| arrow(s, d)).collect();
    set.into_iter().collect()
}

fn list(ips: &[IpAddr]) -> String {
    let words: Vec<String> = ips.iter().map(ToString::to_string).collect();
    and_list(&words)
}

fn uses(algorithm: &Option<String>) -> &str {
    algorithm.as_deref().unwrap_or("no encryption")
}

impl Problem {
    /// Its own clause of the headline; `None` for those said together
    /// (missing SAs, another algorithm) or in a headline of their own
    /// (stale SAs).
    fn said(&self) -> Option<String> {
        match self {
            Problem::Leftover { sas, pending } => {
                let (pairs, waiting) = (arrow_set(sas), arrow_set(pending));
                let mut parts = Vec::new();
                if !pairs.is_empty() {
                    parts.push(format!(
                        "{} ESP SAs remain although IPsec is not wanted (charon still running?): {}",
                        sas.len(),
                        pairs.join(", ")
                    ));
                }
                if !waiting.is_empty() {
                    parts.push(format!(
                        "{}the kernel waits for keys for {} (ACQUIRE states: a policy still demands ESP, and what it sends is dropped)",
                        if pairs.is_empty() {
                            "IPsec is not wanted, yet "
                        } else {
                            ""
                        },
                        waiting.join(", ")
                    ));
                }
                Some(parts.join("; "))
            }
            Problem::IkePending(s) => Some(format!(
                "IKE pending or failing toward {}: the kernel is waiting for keys and drops what it sends (no SA for {})",
                s.peer,
                arrows(&self.unserved())
            )),
            Problem::FewPeers { reached, nodes } => Some(format!(
                "SAs and policies reach {reached} peers, the config has {nodes} nodes ({} peers)",
                nodes.saturating_sub(1)
            )),
            Problem::FewSas {
                count,
                floor,
                nodes,
                peers,
            } => Some(format!(
                "{count} ESP SAs, fewer than 2x({nodes}-1) = {floor}: OVN's Encap table lists {peers} peers for the config's {nodes} nodes"
            )),
            Problem::Missing(_) | Problem::WrongAlgorithm { .. } | Problem::Stale { .. } => None,
        }
    }

    /// Its subjects beside the peers' own.
    fn subjects(&self) -> Vec<Subject> {
        match self {
            Problem::Leftover { sas, pending } => arrow_set(sas)
                .into_iter()
                .map(|p| Subject::new(self.kind(), p, "an ESP SA with IPsec not wanted"))
                .chain(arrow_set(pending).into_iter().map(|p| {
                    Subject::new(
                        self.kind(),
                        p,
                        "an ACQUIRE state with IPsec not wanted: a policy still demands ESP",
                    )
                }))
                .collect(),
            Problem::WrongAlgorithm {
                src,
                dst,
                algorithm,
            } => vec![Subject::new(
                self.kind(),
                arrow(src, dst),
                format!("uses {}, not {OVN_ALGORITHM}", uses(algorithm)),
            )],
            Problem::Stale { src, dst } => vec![Subject::new(
                self.kind(),
                arrow(src, dst),
                "not a current peer's SA",
            )],
            _ => Vec::new(),
        }
    }
}

/// A peer's subject.
fn peer_subject(s: &PeerState, policies_read: bool) -> Subject {
    let peer = s.peer.to_string();
    if s.out == Leg::Pending {
        return Subject::new(
            IpsecXfrmKind::IkePending,
            peer,
            format!(
                "IKE pending or failing: the kernel waits for keys (an ACQUIRE state, reqid {}) and drops what it sends; {} ESP SAs with it",
                s.pending_reqids
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                s.sas
            ),
        );
    }
    if s.out.is_problem() || s.inbound.is_problem() {
        let said: Vec<String> = [(s.out, "outbound"), (s.inbound, "inbound")]
            .into_iter()
            .filter(|(leg, _)| leg.is_problem())
            .map(|(leg, dir)| match leg {
                Leg::Lost => format!(
                    "no {dir} SA, though the rest of its CHILD_SA is here (removed behind the IKE daemon's back: its packets are dropped)"
                ),
                _ if policies_read => format!("no {dir} SA, and no policy demands one"),
                _ => format!("no {dir} SA"),
            })
            .collect();
        return Subject::new(IpsecXfrmKind::MissingSas, peer, said.join("; "));
    }
    match (s.out, s.inbound) {
        (Leg::Armed, Leg::Armed) => Subject::new(
            IpsecXfrmKind::Armed,
            peer,
            "no SA yet, armed: policies demand ESP for geneve both ways and IKE makes the SAs on the first packet",
        ),
        (Leg::Armed, _) => Subject::new(
            IpsecXfrmKind::Armed,
            peer,
            format!(
                "{} ESP SAs carry its geneve to here; this node's geneve to it has no SA yet (armed: made on the first packet)",
                s.sas
            ),
        ),
        (_, Leg::Armed) => Subject::new(
            IpsecXfrmKind::Armed,
            peer,
            format!(
                "{} ESP SAs carry this node's geneve to it; its geneve to here has no SA yet (armed: made when it first sends)",
                s.sas
            ),
        ),
        _ => Subject::new(
            IpsecXfrmKind::Ok,
            peer,
            format!("{} ESP SAs: geneve encrypted both ways", s.sas),
        ),
    }
}

/// What the failing headline says after "IPsec is wanted but".
fn failing(facts: &XfrmFacts, analysis: &Analysis) -> String {
    let problems = &analysis.problems;
    let mut said: Vec<String> = Vec::new();
    let count = analysis.count;
    if count < facts.expected_min
        && problems
            .iter()
            .any(|p| matches!(p, Problem::IkePending(_) | Problem::Missing(_)))
    {
        said.push(format!(
            "{count} ESP SAs, fewer than 2x({}-1) = {}",
            facts.node_count, facts.expected_min
        ));
    }
    said.extend(problems.iter().filter_map(Problem::said));
    let missing = |pick: fn(Leg) -> bool| -> Vec<(String, String)> {
        problems
            .iter()
            .filter_map(|p| match p {
                Problem::Missing(s) => Some(s.legs(pick)),
                _ => None,
            })
            .flatten()
            .collect()
    };
    let unprotected = missing(|leg| leg == Leg::Missing);
    if !unprotected.is_empty() {
        said.push(format!(
            "missing {}{}",
            arrows(&unprotected),
            match &facts.policies {
                Ok(_) =>
                    " (no SA, and no policy demands one: nothing encrypts that geneve)".to_owned(),
                Err(e) => format!(" (no SA; the policies could not be read: {e})"),
            }
        ));
    }
    let lost = missing(|leg| leg == Leg::Lost);
    if !lost.is_empty() {
        said.push(format!(
            "missing {} (the SA is gone but the rest of its CHILD_SA is here: removed behind the IKE daemon's back, so its packets are dropped)",
            arrows(&lost)
        ));
    }
    let wrong: BTreeSet<String> = problems
        .iter()
        .filter_map(|p| match p {
            Problem::WrongAlgorithm {
                src,
                dst,
                algorithm,
            } => Some(format!("{} uses {}", arrow(src, dst), uses(algorithm))),
            _ => None,
        })
        .collect();
    if !wrong.is_empty() {
        said.push(format!(
            "not {OVN_ALGORITHM}: {}",
            wrong.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    said.join("; ")
}

/// The SA table as judged.
fn evidence(facts: &XfrmFacts, analysis: &Analysis) -> IpsecXfrmEvidence {
    let wanted = facts.ipsec_wanted;
    let (policy_count, policy_error) = match &facts.policies {
        Ok(p) => (Some(p.iter().filter(|p| !p.socket).count()), None),
        Err(e) => (None, Some(e.clone())),
    };
    let problems = &analysis.problems;
    IpsecXfrmEvidence {
        sa_count: analysis.count,
        expected_min: facts.expected_min,
        expected: if wanted {
            ovs_sa_layout(facts.node_count)
        } else {
            0
        },
        algorithms: facts
            .states
            .iter()
            .filter(|s| s.is_esp_sa())
            .map(|s| s.algorithm.clone().unwrap_or_else(|| "none".into()))
            .collect(),
        sas: sa_entries(&facts.states, &facts.local_addresses),
        missing_pairs: problems
            .iter()
            .flat_map(Problem::unserved)
            .map(|(a, b)| arrow(a, b))
            .collect(),
        stale_pairs: problems
            .iter()
            .filter_map(|p| match p {
                Problem::Stale { src, dst } => Some(arrow(src, dst)),
                _ => None,
            })
            .collect(),
        pending: pending_entries(&facts.states),
        pending_peers: problems
            .iter()
            .filter_map(|p| match p {
                Problem::IkePending(s) => Some(s.peer),
                _ => None,
            })
            .collect(),
        armed_peers: analysis
            .peers
            .iter()
            .filter(|s| s.is_armed())
            .map(|s| s.peer)
            .collect(),
        policy_count,
        policy_error,
        peers: match &facts.peers {
            PeerView::Known { peers, .. } if wanted => Some(peers.clone()),
            _ => None,
        },
        peer_source: match &facts.peers {
            PeerView::Unknown { why } if wanted => {
                format!("the SAs and policies themselves (OVN not asked: {why})")
            }
            PeerView::Unknown { why } => why.clone(),
            PeerView::Known { source, .. } => source.clone(),
        },
    }
}

/// The finding for `facts`, as `analysis` judged them: the most severe
/// problem's headline, else armed or ok.
pub fn finding(facts: &XfrmFacts, analysis: &Analysis) -> Finding {
    let evidence = evidence(facts, analysis);
    let count = analysis.count;
    let policies_read = facts.policies.is_ok();
    let subjects: Vec<Subject> = analysis
        .peers
        .iter()
        .map(|s| peer_subject(s, policies_read))
        .chain(analysis.problems.iter().flat_map(Problem::subjects))
        .collect();
    let kinds: Vec<IpsecXfrmKind> = analysis.problems.iter().map(Problem::kind).collect();
    let fixes = fixes(&kinds, &list(&evidence.pending_peers));
    let finding = match most_severe(kinds) {
        Some(IpsecXfrmKind::LeftoverSas) => Finding::new(
            IpsecXfrmKind::LeftoverSas,
            analysis
                .problems
                .iter()
                .filter_map(Problem::said)
                .collect::<Vec<_>>()
                .join("; "),
        ),
        Some(IpsecXfrmKind::StaleSas) => Finding::new(
            IpsecXfrmKind::StaleSas,
            format!(
                "{count} ESP SAs cover every peer, but {} involve addresses that are not current peers (a removed node?): {}",
                evidence.stale_pairs.len(),
                evidence.stale_pairs.join(", ")
            ),
        ),
        Some(kind) => Finding::new(
            kind,
            format!("IPsec is wanted but {}", failing(facts, analysis)),
        ),
        None if !evidence.armed_peers.is_empty() => {
            let armed = &evidence.armed_peers;
            let encrypted: Vec<IpAddr> = analysis
                .peers
                .iter()
                .filter(|s| s.out == Leg::Encrypted && s.inbound == Leg::Encrypted)
                .map(|s| s.peer)
                .collect();
            let mut summary = format!(
                "armed: no SA yet with {} for {} geneve in at least one direction; IPsec policies demand ESP for it and IKE makes the SAs on the first packet (ovs-monitor-ipsec's auto=route)",
                list(armed),
                if armed.len() == 1 { "its" } else { "their" },
            );
            if !encrypted.is_empty() {
                summary.push_str(&format!(
                    "; geneve encrypted both ways with {} ({count} ESP SAs, {OVN_ALGORITHM})",
                    list(&encrypted)
                ));
            }
            Finding::new(IpsecXfrmKind::Armed, summary)
        }
        None if facts.ipsec_wanted => Finding::new(
            IpsecXfrmKind::Ok,
            format!(
                "{count} ESP SAs ({OVN_ALGORITHM}): geneve encrypted both ways with all {} peers (ovs-monitor-ipsec's layout holds 4 per peer, 4x({}-1) = {}; at least 2x({}-1) = {} expected)",
                analysis.peers.len(),
                facts.node_count,
                ovs_sa_layout(facts.node_count),
                facts.node_count,
                facts.expected_min
            ),
        ),
        None => Finding::new(
            IpsecXfrmKind::Ok,
            "no ESP SAs, as expected with IPsec not wanted",
        ),
    };
    finding.fixes(fixes).evidence(&evidence).subjects(subjects)
}
