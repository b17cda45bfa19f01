//! How `ipsec.xfrm` says what [`super::analyse`] found: the summary, the
//! per-peer subjects, the fixes and the evidence.

use std::collections::BTreeSet;
use std::net::IpAddr;

use super::analyse::{Analysis, Leg, PeerState, Problem};
use super::{
    pending_entries, sa_entries, IpsecXfrmEvidence, IpsecXfrmKind, PeerView, XfrmFacts,
    OVN_ALGORITHM,
};
use crate::expect::ovs_sa_layout;
use crate::finding::{Finding, Subject};
use crate::kind::most_severe;

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

fn list(ips: &[IpAddr]) -> String {
    let words: Vec<String> = ips.iter().map(ToString::to_string).collect();
    match words.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The finding for `facts`, as `analysis` judged them.
pub fn finding(facts: &XfrmFacts, analysis: &Analysis) -> Finding {
    let count = analysis.count;
    let algorithms: BTreeSet<String> = facts
        .states
        .iter()
        .filter(|s| s.is_esp_sa())
        .map(|s| s.algorithm.clone().unwrap_or_else(|| "none".into()))
        .collect();
    let (policy_count, policy_error) = match &facts.policies {
        Ok(p) => (Some(p.iter().filter(|p| !p.socket).count()), None),
        Err(e) => (None, Some(e.clone())),
    };
    let evidence = IpsecXfrmEvidence {
        sa_count: count,
        expected_min: facts.expected_min,
        expected: if facts.ipsec_wanted {
            ovs_sa_layout(facts.node_count)
        } else {
            0
        },
        algorithms,
        sas: sa_entries(&facts.states, &facts.local_addresses),
        missing_pairs: Vec::new(),
        stale_pairs: Vec::new(),
        pending: pending_entries(&facts.states),
        pending_peers: Vec::new(),
        armed_peers: Vec::new(),
        policy_count,
        policy_error,
        peers: None,
        peer_source: match &facts.peers {
            PeerView::Unknown { why } if facts.ipsec_wanted => {
                format!("the SAs and policies themselves (OVN not asked: {why})")
            }
            PeerView::Unknown { why } => why.clone(),
            PeerView::Known { source, .. } => source.clone(),
        },
    };
    if !facts.ipsec_wanted {
        return not_wanted(analysis, evidence);
    }
    wanted(facts, analysis, evidence)
}

fn not_wanted(analysis: &Analysis, evidence: IpsecXfrmEvidence) -> Finding {
    let Some(Problem::Leftover { sas, pending }) = analysis.problems.first() else {
        return Finding::new(
            IpsecXfrmKind::Ok,
            "no ESP SAs, as expected with IPsec not wanted",
        )
        .evidence(&evidence);
    };
    let pairs: BTreeSet<String> = sas.iter().map(|(s, d)| arrow(s, d)).collect();
    let waiting: BTreeSet<String> = pending.iter().map(|(s, d)| arrow(s, d)).collect();
    let mut parts = Vec::new();
    if !pairs.is_empty() {
        parts.push(format!(
            "{} ESP SAs remain although IPsec is not wanted (charon still running?): {}",
            sas.len(),
            pairs.iter().cloned().collect::<Vec<_>>().join(", ")
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
            waiting.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let subjects = pairs
        .iter()
        .map(|p| {
            Subject::new(
                IpsecXfrmKind::LeftoverSas,
                p,
                "an ESP SA with IPsec not wanted",
            )
        })
        .chain(waiting.iter().map(|p| {
            Subject::new(
                IpsecXfrmKind::LeftoverSas,
                p,
                "an ACQUIRE state with IPsec not wanted: a policy still demands ESP",
            )
        }))
        .collect::<Vec<_>>();
    Finding::new(IpsecXfrmKind::LeftoverSas, parts.join("; "))
        .fixes([
            "on this node: `systemctl stop openvswitch-ipsec` and stop charon (`systemctl stop strongswan-starter`, or `strongswan` where charon-systemd runs)",
            "`ip xfrm state flush proto esp` and `ip xfrm policy flush` (removes every ESP SA and IPsec policy on this node: only when nothing else here uses IPsec)",
            "then `spx doctor --check ipsec.xfrm,ipsec.flags` must pass: while NB_Global.ipsec or ipsec_encapsulation still read true, the IPsec daemons set the SAs up again",
        ])
        .evidence(&evidence)
        .subjects(subjects)
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

fn wanted(facts: &XfrmFacts, analysis: &Analysis, mut evidence: IpsecXfrmEvidence) -> Finding {
    let count = analysis.count;
    let policies_read = facts.policies.is_ok();
    let mut subjects: Vec<Subject> = analysis
        .peers
        .iter()
        .map(|s| peer_subject(s, policies_read))
        .collect();
    evidence.peers = match &facts.peers {
        PeerView::Known { peers, .. } => Some(peers.clone()),
        PeerView::Unknown { .. } => None,
    };
    evidence.armed_peers = analysis
        .peers
        .iter()
        .filter(|s| s.is_armed())
        .map(|s| s.peer)
        .collect();

    let mut kinds = Vec::new();
    let mut statements = Vec::new();
    let mut missing: Vec<(String, String)> = Vec::new();
    let mut pending_peers: Vec<IpAddr> = Vec::new();
    let mut wrong: BTreeSet<String> = BTreeSet::new();
    let mut stale: Vec<String> = Vec::new();
    for p in &analysis.problems {
        match p {
            Problem::IkePending(s) => {
                let legs = s.legs(|leg| leg != Leg::Encrypted);
                statements.push(format!(
                    "IKE pending or failing toward {}: the kernel is waiting for keys and drops what it sends (no SA for {})",
                    s.peer,
                    arrows(&legs)
                ));
                missing.extend(legs);
                pending_peers.push(s.peer);
                kinds.push(IpsecXfrmKind::IkePending);
            }
            Problem::Missing(s) => {
                missing.extend(s.legs(Leg::is_problem));
                kinds.push(IpsecXfrmKind::MissingSas);
            }
            Problem::FewPeers { reached, nodes } => {
                statements.push(format!(
                    "SAs and policies reach {reached} peers, the config has {nodes} nodes ({} peers)",
                    nodes.saturating_sub(1)
                ));
                kinds.push(IpsecXfrmKind::MissingSas);
            }
            Problem::FewSas {
                count,
                floor,
                nodes,
                peers,
            } => {
                statements.push(format!(
                    "{count} ESP SAs, fewer than 2x({nodes}-1) = {floor}: OVN's Encap table lists {peers} peers for the config's {nodes} nodes"
                ));
                kinds.push(IpsecXfrmKind::MissingSas);
            }
            Problem::WrongAlgorithm {
                src,
                dst,
                algorithm,
            } => {
                let uses = algorithm.as_deref().unwrap_or("no encryption");
                wrong.insert(format!("{} uses {uses}", arrow(src, dst)));
                subjects.push(Subject::new(
                    IpsecXfrmKind::WrongAlgorithm,
                    arrow(src, dst),
                    format!("uses {uses}, not {OVN_ALGORITHM}"),
                ));
                kinds.push(IpsecXfrmKind::WrongAlgorithm);
            }
            Problem::Stale { src, dst } => {
                stale.push(arrow(src, dst));
                subjects.push(Subject::new(
                    IpsecXfrmKind::StaleSas,
                    arrow(src, dst),
                    "not a current peer's SA",
                ));
            }
            Problem::Leftover { .. } => {}
        }
    }
    let missing_legs = |pick: fn(Leg) -> bool| -> Vec<(String, String)> {
        analysis
            .problems
            .iter()
            .filter_map(|p| match p {
                Problem::Missing(s) => Some(s.legs(pick)),
                _ => None,
            })
            .flatten()
            .collect()
    };
    let unprotected = missing_legs(|leg| leg == Leg::Missing);
    if !unprotected.is_empty() {
        statements.push(format!(
            "missing {}{}",
            arrows(&unprotected),
            match &facts.policies {
                Ok(_) =>
                    " (no SA, and no policy demands one: nothing encrypts that geneve)".to_owned(),
                Err(e) => format!(" (no SA; the policies could not be read: {e})"),
            }
        ));
    }
    let lost = missing_legs(|leg| leg == Leg::Lost);
    if !lost.is_empty() {
        statements.push(format!(
            "missing {} (the SA is gone but the rest of its CHILD_SA is here: removed behind the IKE daemon's back, so its packets are dropped)",
            arrows(&lost)
        ));
    }
    if !wrong.is_empty() {
        statements.push(format!(
            "not {OVN_ALGORITHM}: {}",
            wrong.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let failing = analysis
        .problems
        .iter()
        .any(|p| matches!(p, Problem::IkePending(_) | Problem::Missing(_)));
    if failing && count < facts.expected_min {
        statements.insert(
            0,
            format!(
                "{count} ESP SAs, fewer than 2x({}-1) = {}",
                facts.node_count, facts.expected_min
            ),
        );
    }
    evidence.missing_pairs = missing.iter().map(|(a, b)| arrow(a, b)).collect();
    evidence.stale_pairs = stale.clone();
    evidence.pending_peers = pending_peers.clone();

    let armed: Vec<IpAddr> = evidence.armed_peers.clone();
    let encrypted: Vec<IpAddr> = analysis
        .peers
        .iter()
        .filter(|s| s.out == Leg::Encrypted && s.inbound == Leg::Encrypted)
        .map(|s| s.peer)
        .collect();
    let finding = if let Some(kind) = most_severe(kinds) {
        let mut f = Finding::new(
            kind,
            format!("IPsec is wanted but {}", statements.join("; ")),
        );
        if !pending_peers.is_empty() {
            let peers = list(&pending_peers);
            f = f.fixes([
                format!("on {peers}: openvswitch-ipsec (ovs-monitor-ipsec) and the IKE daemon it starts must run: `systemctl status openvswitch-ipsec` and `ipsec statusall` (charon's pid is in /var/run/charon.pid)"),
                format!("on {peers} and on this node: the cluster CA must be in charon's trust store, which strongSwan's starter reads from /etc/ipsec.d/cacerts only (Spinifex links it there as spinifex-ca.pem): `ls -lL /etc/ipsec.d/cacerts/`, then `ipsec rereadcacerts`"),
                format!("on this node: `ipsec statusall` shows the IKE_SA toward {peers} and `journalctl -t charon | grep -E 'AUTH_FAILED|no trusted|retransmit'` why it does not complete; the kernel drops this node's geneve to {peers} until it does"),
            ]);
        }
        if analysis.problems.iter().any(|p| {
            matches!(
                p,
                Problem::Missing(_) | Problem::FewPeers { .. } | Problem::FewSas { .. }
            )
        }) || (!wrong.is_empty() && pending_peers.is_empty())
        {
            f = f.fixes([
                "on this node: `systemctl restart openvswitch-ipsec` (ovs-monitor-ipsec rewrites the IKE config and re-initiates every tunnel)",
                "`ovs-appctl -t ovs-monitor-ipsec tunnels/show` lists the tunnels it should have; `swanctl --list-sas` (or `ipsec statusall`) shows which came up",
                "on the peers named: run `spx doctor --check ipsec.flags,ipsec.xfrm` there too; IKE (UDP 500, 4500) and ESP (IP protocol 50) must pass between the nodes' underlay addresses",
            ]);
        }
        if !wrong.is_empty() {
            f = f.fix(format!(
                "OVN negotiates {OVN_ALGORITHM} (IKE aes_gcm128): SAs with other algorithms come from an IKE configuration OVN does not own (check /etc/ipsec.conf, /etc/swanctl/)"
            ));
        }
        f
    } else if !stale.is_empty() {
        Finding::new(
            IpsecXfrmKind::StaleSas,
            format!(
                "{count} ESP SAs cover every peer, but {} involve addresses that are not current peers (a removed node?): {}",
                stale.len(),
                stale.join(", ")
            ),
        )
        .fix("if that node is gone for good: `systemctl restart openvswitch-ipsec` on this node drops its SAs")
    } else if !armed.is_empty() {
        let mut summary = format!(
            "armed: no SA yet with {} for {} geneve in at least one direction; IPsec policies demand ESP for it and IKE makes the SAs on the first packet (ovs-monitor-ipsec's auto=route)",
            list(&armed),
            if armed.len() == 1 { "its" } else { "their" },
        );
        if !encrypted.is_empty() {
            summary.push_str(&format!(
                "; geneve encrypted both ways with {} ({count} ESP SAs, {OVN_ALGORITHM})",
                list(&encrypted)
            ));
        }
        Finding::new(IpsecXfrmKind::Armed, summary)
    } else {
        Finding::new(
            IpsecXfrmKind::Ok,
            format!(
                "{count} ESP SAs ({OVN_ALGORITHM}): geneve encrypted both ways with all {} peers (ovs-monitor-ipsec's layout holds 4 per peer, 4x({}-1) = {}; at least 2x({}-1) = {} expected)",
                analysis.peers.len(),
                facts.node_count,
                ovs_sa_layout(facts.node_count),
                facts.node_count,
                facts.expected_min
            ),
        )
    };
    finding.evidence(&evidence).subjects(subjects)
}
