//! How `ipsec.policy` says what [`super::analyse`] found: the summary, the
//! per-peer (or per-policy) subjects, the fixes and the evidence.

use std::net::IpAddr;

use super::analyse::{Analysis, Cover, Direction, PeerCover, PolicyFacts};
use super::{IpsecPolicyEvidence, IpsecPolicyKind, PeerEntry};
use crate::checks::ipsec_xfrm::PeerView;
use crate::facts::xfrm::{PolicyAction, PolicyDir, XfrmPolicy, IPPROTO_ESP};
use crate::finding::{Finding, Subject};
use crate::kind::most_severe;

fn arrows(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(a, b)| format!("{a}->{b}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn list(ips: &[IpAddr]) -> String {
    let words: Vec<String> = ips.iter().map(ToString::to_string).collect();
    crate::cluster::and_list(&words)
}

/// A policy as an operator reads it next to `ip xfrm policy`.
pub fn describe(p: &XfrmPolicy) -> String {
    let s = &p.selector;
    let dir = match p.dir {
        PolicyDir::In => "in",
        PolicyDir::Out => "out",
        PolicyDir::Fwd => "fwd",
    };
    let what = match (p.action, p.requires(IPPROTO_ESP)) {
        (PolicyAction::Block, _) => "block".to_owned(),
        (PolicyAction::Allow, Some(t)) => format!("ESP reqid {}", t.reqid),
        (PolicyAction::Allow, None) => "allow".to_owned(),
    };
    format!(
        "{}/{}->{}/{} dir {dir} {} ({what})",
        s.src,
        s.src_prefix,
        s.dst,
        s.dst_prefix,
        s.ports_text()
    )
}

/// The kind a cover is reported under.
fn kind_of(c: Cover) -> IpsecPolicyKind {
    match c {
        Cover::Encrypted => IpsecPolicyKind::Ok,
        Cover::Armed => IpsecPolicyKind::Armed,
        Cover::NoSa => IpsecPolicyKind::NoSa,
        Cover::TemplateMismatch => IpsecPolicyKind::TemplateMismatch,
        Cover::Plaintext => IpsecPolicyKind::Plaintext,
        Cover::Blocked => IpsecPolicyKind::Blocked,
    }
}

/// One direction's problem, in words.
fn said(d: &Direction, out: bool) -> Option<String> {
    let (reqid, spi) = d.policy.map_or((0, 0), |(_, r, s)| (r, s));
    let way = if out {
        "this node's geneve to it"
    } else {
        "its geneve to here"
    };
    Some(match d.cover {
        Cover::Encrypted | Cover::Armed => return None,
        Cover::Plaintext if d.carriers > 0 => format!(
            "{way} is in plaintext: no policy demands ESP for it, and the {} SA(s) that would carry it are unused",
            d.carriers
        ),
        Cover::Plaintext if out => {
            format!("{way} leaves in plaintext: no policy demands ESP for it")
        }
        Cover::Plaintext => {
            format!("{way} is accepted in plaintext: no policy demands ESP for it")
        }
        Cover::NoSa => format!(
            "a policy demands ESP for {way} (reqid {reqid}) and no SA exists: the kernel waits for IKE (an ACQUIRE state) and drops it"
        ),
        Cover::TemplateMismatch if spi != 0 => format!(
            "a policy demands ESP for {way} with SA spi 0x{spi:08x} (reqid {reqid}), which no installed SA is: dropped"
        ),
        Cover::TemplateMismatch => format!(
            "a policy demands ESP for {way} (reqid {reqid}) and none of the {} SA(s) carrying it satisfies its template (another reqid or mode): dropped",
            d.carriers
        ),
        Cover::Blocked => format!("a block policy selects {way}: dropped"),
    })
}

fn peer_subject(p: &PeerCover) -> Subject {
    let peer = p.peer.to_string();
    let problems: Vec<String> = [said(&p.out, true), said(&p.inbound, false)]
        .into_iter()
        .flatten()
        .collect();
    if !problems.is_empty() {
        return Subject::new(kind_of(p.worst()), peer, problems.join("; "));
    }
    match (p.out.cover, p.inbound.cover) {
        (Cover::Encrypted, Cover::Encrypted) => Subject::new(
            IpsecPolicyKind::Ok,
            peer,
            format!(
                "geneve both ways under ESP policies, carried by SAs that satisfy their templates ({} policies, {} SAs)",
                p.policies, p.sas
            ),
        ),
        (out, inbound) => Subject::new(
            IpsecPolicyKind::Armed,
            peer,
            format!(
                "policies demand ESP for geneve both ways; no SA yet for {} (IKE makes it on the first packet)",
                match (out, inbound) {
                    (Cover::Armed, Cover::Armed) => "either direction",
                    (Cover::Armed, _) => "this node's geneve to it",
                    _ => "its geneve to here",
                }
            ),
        ),
    }
}

/// The finding for `facts`, as `analysis` judged them.
pub fn finding(facts: &PolicyFacts, analysis: &Analysis) -> Finding {
    let mut evidence = IpsecPolicyEvidence {
        ipsec_wanted: facts.ipsec_wanted,
        policy_count: analysis.policy_count,
        geneve_policies: analysis.geneve_policies,
        sa_count: analysis.sa_count,
        peers: analysis
            .peers
            .iter()
            .map(|p| PeerEntry {
                peer: p.peer,
                out: p.out.cover,
                inbound: p.inbound.cover,
                policies: p.policies,
                sas: p.sas,
            })
            .collect(),
        peer_source: match &facts.peers {
            PeerView::Known { source, .. } => source.clone(),
            PeerView::Unknown { why } if facts.ipsec_wanted => {
                format!("the SAs and policies themselves (OVN not asked: {why})")
            }
            PeerView::Unknown { why } => why.clone(),
        },
        leftover: analysis.leftover.iter().map(describe).collect(),
        plaintext: Vec::new(),
        dropped: Vec::new(),
    };
    if !facts.ipsec_wanted {
        return not_wanted(analysis, evidence);
    }
    let plaintext: Vec<(String, String)> = analysis
        .peers
        .iter()
        .flat_map(|p| p.legs(|c| c == Cover::Plaintext))
        .collect();
    let dropped: Vec<(String, String)> = analysis
        .peers
        .iter()
        .flat_map(|p| p.legs(|c| c.is_problem() && c != Cover::Plaintext))
        .collect();
    evidence.plaintext = plaintext.iter().map(|(a, b)| format!("{a}->{b}")).collect();
    evidence.dropped = dropped.iter().map(|(a, b)| format!("{a}->{b}")).collect();
    let subjects: Vec<Subject> = analysis.peers.iter().map(peer_subject).collect();

    let mut kinds: Vec<IpsecPolicyKind> = analysis
        .peers
        .iter()
        .map(|p| p.worst())
        .filter(|c| c.is_problem())
        .map(kind_of)
        .collect();
    let mut statements: Vec<String> = Vec::new();
    if let Some(reached) = analysis.few_peers {
        let nodes = facts.node_count;
        let why = match &facts.peers {
            PeerView::Unknown { why } => why.clone(),
            PeerView::Known { .. } => String::new(),
        };
        statements.push(if reached == 0 {
            format!(
                "this node holds no IPsec policy or SA for any peer (the config has {nodes} nodes): its geneve leaves in plaintext (the peers were not asked of OVN: {why})"
            )
        } else {
            format!(
                "policies and SAs reach {reached} peer(s), the config has {nodes} nodes ({} peers): the others' geneve is not covered (the peers were not asked of OVN: {why})",
                nodes.saturating_sub(1)
            )
        });
        kinds.push(IpsecPolicyKind::Plaintext);
    }
    let with_cover = |c: Cover| -> Vec<(String, String)> {
        analysis
            .peers
            .iter()
            .flat_map(|p| p.legs(|x| x == c))
            .collect()
    };
    if !plaintext.is_empty() {
        let unused: usize = analysis
            .peers
            .iter()
            .map(|p| {
                [&p.out, &p.inbound]
                    .iter()
                    .filter(|d| d.cover == Cover::Plaintext)
                    .map(|d| d.carriers)
                    .sum::<usize>()
            })
            .sum();
        statements.push(format!(
            "no policy demands ESP for {}: geneve in plaintext{}",
            arrows(&plaintext),
            if unused > 0 {
                format!(" ({unused} SA(s) without a policy that would use them)")
            } else {
                String::new()
            }
        ));
    }
    let waiting = with_cover(Cover::NoSa);
    if !waiting.is_empty() {
        statements.push(format!(
            "policies demand ESP for {} but no SA exists (IKE pending or failing): dropped",
            arrows(&waiting)
        ));
    }
    let mismatch = with_cover(Cover::TemplateMismatch);
    if !mismatch.is_empty() {
        statements.push(format!(
            "no installed SA satisfies the policy template for {}: dropped",
            arrows(&mismatch)
        ));
    }
    let blocked = with_cover(Cover::Blocked);
    if !blocked.is_empty() {
        statements.push(format!("a block policy drops {}", arrows(&blocked)));
    }

    let finding = if let Some(kind) = most_severe(kinds.iter().copied()) {
        let mut f = Finding::new(
            kind,
            format!("IPsec is wanted but {}", statements.join("; ")),
        );
        if kinds.contains(&IpsecPolicyKind::Plaintext) {
            f = f.fixes([
                "on this node: ovs-monitor-ipsec has charon install 4 policies per peer (`-in-` and `-out-`, udp dport and sport 6081): `systemctl restart openvswitch-ipsec`, and `spx doctor --check ipsec.daemon` says whether it and charon run",
                "`ip xfrm policy` must then list `proto udp dport 6081` both ways for every peer (`ovs-appctl -t ovs-monitor-ipsec tunnels/show` lists the tunnels it configures)",
            ]);
        }
        let pending: Vec<IpAddr> = analysis
            .peers
            .iter()
            .filter(|p| p.out.cover == Cover::NoSa || p.inbound.cover == Cover::NoSa)
            .map(|p| p.peer)
            .collect();
        if !pending.is_empty() {
            let peers = list(&pending);
            f = f.fixes([
                format!("on {peers}: openvswitch-ipsec (ovs-monitor-ipsec) and charon must run, with the cluster CA in charon's trust store (/etc/ipsec.d/cacerts): `spx doctor --check ipsec.policy,ipsec.daemon` there names what is missing"),
                format!("on this node: `ipsec statusall` shows the IKE_SA toward {peers}, `journalctl -t charon | grep -E 'AUTH_FAILED|no trusted|retransmit'` why it does not complete"),
            ]);
        }
        if !mismatch.is_empty() {
            let peers: Vec<IpAddr> = analysis
                .peers
                .iter()
                .filter(|p| {
                    p.out.cover == Cover::TemplateMismatch
                        || p.inbound.cover == Cover::TemplateMismatch
                })
                .map(|p| p.peer)
                .collect();
            f = f.fix(format!(
                "the policies and the SAs come from different IKE sessions (an SA removed or replaced behind charon's back): `systemctl restart openvswitch-ipsec` on this node and on {}",
                list(&peers)
            ));
        }
        if !blocked.is_empty() {
            f = f.fix(
                "`ip xfrm policy` shows the block policy (action block) that takes geneve: remove the one that is not ovs-monitor-ipsec's prevent_unencrypted shunt (which takes only its skb_mark)",
            );
        }
        f.fix("then `spx doctor --check ipsec.policy,ipsec.xfrm` must pass")
    } else {
        let armed: Vec<IpAddr> = analysis
            .peers
            .iter()
            .filter(|p| p.out.cover == Cover::Armed || p.inbound.cover == Cover::Armed)
            .map(|p| p.peer)
            .collect();
        let n = analysis.peers.len();
        if armed.is_empty() {
            Finding::new(
                IpsecPolicyKind::Ok,
                format!(
                    "geneve to and from all {n} peers is covered by ESP policies ({} of them; ovs-monitor-ipsec writes 4 per peer) and carried by SAs that satisfy their templates",
                    analysis.geneve_policies
                ),
            )
        } else {
            Finding::new(
                IpsecPolicyKind::Armed,
                format!(
                    "geneve to and from all {n} peers is covered by ESP policies ({} of them); no SA yet with {} in at least one direction: armed, IKE makes the SAs on the first packet",
                    analysis.geneve_policies,
                    list(&armed)
                ),
            )
        }
    };
    finding.evidence(&evidence).subjects(subjects)
}

fn not_wanted(analysis: &Analysis, evidence: IpsecPolicyEvidence) -> Finding {
    if analysis.leftover.is_empty() {
        return Finding::new(
            IpsecPolicyKind::Ok,
            format!(
                "no policy demands ESP for geneve, as expected with IPsec not wanted ({} system policies)",
                analysis.policy_count
            ),
        )
        .evidence(&evidence);
    }
    let subjects: Vec<Subject> = analysis
        .leftover
        .iter()
        .map(|p| {
            Subject::new(
                IpsecPolicyKind::LeftoverPolicies,
                describe(p),
                "a geneve policy with IPsec not wanted",
            )
        })
        .collect();
    Finding::new(
        IpsecPolicyKind::LeftoverPolicies,
        format!(
            "IPsec is not wanted, yet {} policies still take geneve: {} (what they select is dropped while no IKE daemon answers, or encrypted against the MTU the config implies)",
            analysis.leftover.len(),
            analysis
                .leftover
                .iter()
                .map(describe)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .fixes([
        "on this node: `systemctl stop openvswitch-ipsec` and stop charon (`systemctl stop strongswan-starter`, or `strongswan` where charon-systemd runs): charon removes the policies it installed",
        "what remains: `ip xfrm policy flush` (removes every IPsec policy on this node: only when nothing else here uses IPsec)",
        "then `spx doctor --check ipsec.policy,ipsec.xfrm,ipsec.flags` must pass",
    ])
    .evidence(&evidence)
    .subjects(subjects)
}
