//! The judgement of `ipsec.xfrm`, pure: the facts in, what holds for each
//! peer and what is wrong out. No words here ([`super::words`] says it).

use std::collections::BTreeSet;
use std::net::IpAddr;

use super::{IpsecXfrmKind, PeerView, XfrmFacts, GENEVE_PORT, OVN_ALGORITHM};
use crate::facts::links::nameable;
use crate::facts::xfrm::{
    PolicyAction, PolicyDir, Port, SecurityAssociation, XfrmPolicy, IPPROTO_ESP, IPPROTO_UDP,
};

/// One direction of geneve with a peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leg {
    /// An ESP SA carries it.
    Encrypted,
    /// No SA, and the kernel holds an ACQUIRE state for it: IKE is pending
    /// or failing, and what is sent is dropped. (Outbound only: the
    /// ACQUIRE of the other direction lives on the peer.)
    Pending,
    /// No SA, and a policy demands ESP for it: IKE makes the SA on the
    /// first packet.
    Armed,
    /// No SA, though its CHILD_SA left a trace: the policy's template still
    /// names the SPI of an outbound SA that is gone (strongSwan writes it
    /// while the SA exists and clears it when it deletes the CHILD_SA), or
    /// the CHILD_SA's other SA (same reqid) is still here. An SA removed
    /// behind the IKE daemon's back: its packets are dropped.
    Lost,
    /// No SA, and nothing demands one (or the policies were not read):
    /// nothing encrypts it.
    Missing,
}

impl Leg {
    /// No SA carries it and that is not by design.
    pub fn is_problem(self) -> bool {
        matches!(self, Leg::Pending | Leg::Lost | Leg::Missing)
    }
}

/// What holds for one peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerState {
    pub peer: IpAddr,
    /// This node's address toward it, the one the kernel really uses
    /// (`local_toward`); None when nothing says (never loopback, never
    /// link-local).
    pub local: Option<IpAddr>,
    /// This node's geneve to the peer.
    pub out: Leg,
    /// The peer's geneve to this node.
    pub inbound: Leg,
    /// ESP SAs with the peer, either way.
    pub sas: usize,
    /// The reqids of the ACQUIRE states toward it.
    pub pending_reqids: Vec<u32>,
}

impl PeerState {
    /// The directions (`src`, `dst`) whose leg is `pick`ed.
    pub fn legs(&self, pick: impl Fn(Leg) -> bool) -> Vec<(String, String)> {
        let me = self
            .local
            .map_or_else(|| "this-node".to_owned(), |l| l.to_string());
        let peer = self.peer.to_string();
        let mut out = Vec::new();
        if pick(self.out) {
            out.push((me.clone(), peer.clone()));
        }
        if pick(self.inbound) {
            out.push((peer, me));
        }
        out
    }

    pub fn is_armed(&self) -> bool {
        !self.out.is_problem()
            && !self.inbound.is_problem()
            && (self.out == Leg::Armed || self.inbound == Leg::Armed)
    }
}

/// What is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// IPsec is not wanted but ESP states remain: SAs (`src`, `dst`) and
    /// ACQUIRE states (a policy still demands ESP).
    Leftover {
        sas: Vec<(IpAddr, IpAddr)>,
        pending: Vec<(IpAddr, IpAddr)>,
    },
    /// IKE pending or failing toward a peer.
    IkePending(PeerState),
    /// A peer's geneve without an SA that nothing demands.
    Missing(PeerState),
    /// OVN not asked: the SAs and policies reach fewer peers than the
    /// config's N−1.
    FewPeers { reached: usize, nodes: usize },
    /// Every peer known is fine, yet fewer ESP SAs than 2×(N−1): the peers
    /// known fall short of the config's nodes.
    FewSas {
        count: usize,
        floor: usize,
        nodes: usize,
        peers: usize,
    },
    /// An ESP SA not on OVN's algorithm (`None`: no encryption).
    WrongAlgorithm {
        src: IpAddr,
        dst: IpAddr,
        algorithm: Option<String>,
    },
    /// An ESP SA whose far end is no current peer.
    Stale { src: IpAddr, dst: IpAddr },
}

impl Problem {
    pub fn kind(&self) -> IpsecXfrmKind {
        match self {
            Problem::Leftover { .. } => IpsecXfrmKind::LeftoverSas,
            Problem::IkePending(_) => IpsecXfrmKind::IkePending,
            Problem::Missing(_) | Problem::FewPeers { .. } | Problem::FewSas { .. } => {
                IpsecXfrmKind::MissingSas
            }
            Problem::WrongAlgorithm { .. } => IpsecXfrmKind::WrongAlgorithm,
            Problem::Stale { .. } => IpsecXfrmKind::StaleSas,
        }
    }

    /// The directions of geneve (`src`, `dst`) it names as without an SA
    /// (the evidence's `missing_pairs`): toward a peer IKE is pending with,
    /// every one not encrypted; else those whose SA is missing not by design.
    pub fn unserved(&self) -> Vec<(String, String)> {
        match self {
            Problem::IkePending(s) => s.legs(|leg| leg != Leg::Encrypted),
            Problem::Missing(s) => s.legs(Leg::is_problem),
            _ => Vec::new(),
        }
    }
}

/// Everything [`analyse`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    /// ESP SAs (larval states are not SAs).
    pub count: usize,
    /// Every peer, in the order known (empty when IPsec is not wanted).
    pub peers: Vec<PeerState>,
    pub problems: Vec<Problem>,
}

fn esp_sa(s: &SecurityAssociation) -> bool {
    s.is_esp_sa()
}

/// Whether the state carries geneve from `src` to `dst` (a state without
/// a selector carries everything between its ends).
fn carries_geneve(s: &SecurityAssociation, src: IpAddr, dst: IpAddr) -> bool {
    s.src == src
        && s.dst == dst
        && s.selector
            .as_ref()
            .is_none_or(|sel| sel.selects(src, dst, IPPROTO_UDP, Port::Any, Port::Is(GENEVE_PORT)))
}

/// Whether `p` demands ESP for geneve from `src` to `dst` in `dir`. A
/// socket's own policy (charon's IKE sockets) never does.
fn demands_esp(p: &XfrmPolicy, dir: PolicyDir, src: IpAddr, dst: IpAddr) -> bool {
    !p.socket
        && p.dir == dir
        && p.action == PolicyAction::Allow
        && p.requires(IPPROTO_ESP).is_some()
        && p.selector
            .selects(src, dst, IPPROTO_UDP, Port::Any, Port::Is(GENEVE_PORT))
}

/// The far end of a host-to-host system policy with one end in `local`.
pub(crate) fn host_peer(p: &XfrmPolicy, local: &[IpAddr]) -> Option<IpAddr> {
    let full = |a: IpAddr, prefix: u8| prefix == if a.is_ipv4() { 32 } else { 128 };
    let s = &p.selector;
    if p.socket || !full(s.src, s.src_prefix) || !full(s.dst, s.dst_prefix) {
        return None;
    }
    match (local.contains(&s.src), local.contains(&s.dst)) {
        (true, false) => Some(s.dst),
        (false, true) => Some(s.src),
        _ => None,
    }
}

/// The peers the tables themselves name, when OVN could not be asked: the
/// far ends of ESP states (of larval ones, outbound only: an ACQUIRE is
/// this node's) and of host-to-host policies that demand ESP.
pub(crate) fn peers_in_tables(
    states: &[SecurityAssociation],
    policies: &[XfrmPolicy],
    local: &[IpAddr],
) -> Vec<IpAddr> {
    let mut found = BTreeSet::new();
    for s in states.iter().filter(|s| s.is_esp()) {
        if local.contains(&s.src) && !local.contains(&s.dst) {
            found.insert(s.dst);
        } else if local.contains(&s.dst) && !local.contains(&s.src) && !s.larval {
            found.insert(s.src);
        }
    }
    found.extend(
        policies
            .iter()
            .filter(|p| p.requires(IPPROTO_ESP).is_some())
            .filter_map(|p| host_peer(p, local)),
    );
    found.into_iter().collect()
}

/// This node's address toward `peer`, the one the kernel really uses: the
/// local end of an ESP state with the peer (an SA, or an ACQUIRE, which is
/// the packet's own source), else of a host-to-host policy with it; else,
/// when `local` is OVN's ovn-encap-ip (`tunnel_source`), that address of
/// the peer's family; else the preferred source of the route to the peer
/// (`RTM_GETROUTE`, `ip route get PEER`). Never loopback, never link-local
/// ([`nameable`]): the host's first address is loopback, and naming it
/// (`127.0.0.1->10.9.0.3`) sent operators after a pair that does not exist.
pub fn local_toward(
    peer: IpAddr,
    local: &[IpAddr],
    tunnel_source: bool,
    states: &[SecurityAssociation],
    policies: &[XfrmPolicy],
    route_source: Option<IpAddr>,
) -> Option<IpAddr> {
    let usable = |a: IpAddr| nameable(a) && a.is_ipv4() == peer.is_ipv4();
    let from_states = states.iter().filter(|s| s.is_esp()).find_map(|s| {
        if s.dst == peer && local.contains(&s.src) && usable(s.src) {
            Some(s.src)
        } else if s.src == peer && local.contains(&s.dst) && usable(s.dst) {
            Some(s.dst)
        } else {
            None
        }
    });
    let from_policies = || {
        policies
            .iter()
            .filter(|p| p.requires(IPPROTO_ESP).is_some() && host_peer(p, local) == Some(peer))
            .find_map(|p| {
                let s = &p.selector;
                [s.src, s.dst]
                    .into_iter()
                    .find(|a| *a != peer && local.contains(a) && usable(*a))
            })
    };
    from_states
        .or_else(from_policies)
        .or_else(|| {
            tunnel_source
                .then(|| local.iter().copied().find(|a| usable(*a)))
                .flatten()
        })
        .or(route_source.filter(|a| usable(*a)))
}

/// What holds for `peer`, seen from `local` (this node's addresses).
fn peer_state(
    peer: IpAddr,
    local: &[IpAddr],
    states: &[SecurityAssociation],
    policies: Option<&[XfrmPolicy]>,
    toward: Option<IpAddr>,
) -> PeerState {
    let with_peer = |s: &&SecurityAssociation| {
        (s.src == peer && local.contains(&s.dst)) || (s.dst == peer && local.contains(&s.src))
    };
    let sas: Vec<&SecurityAssociation> = states
        .iter()
        .filter(|s| esp_sa(s))
        .filter(with_peer)
        .collect();
    // A policy's CHILD_SA left a trace: its template names an SPI, or an
    // SA of its reqid is still here.
    let traced = |p: &XfrmPolicy| {
        p.requires(IPPROTO_ESP)
            .is_some_and(|t| t.spi != 0 || sas.iter().any(|s| s.reqid == t.reqid))
    };
    let leg = |dir: PolicyDir, src: &dyn Fn(IpAddr) -> (IpAddr, IpAddr)| {
        let flows: Vec<(IpAddr, IpAddr)> = local.iter().map(|l| src(*l)).collect();
        if flows
            .iter()
            .any(|(a, b)| sas.iter().any(|s| carries_geneve(s, *a, *b)))
        {
            return Leg::Encrypted;
        }
        // An ACQUIRE state outlives the policy that made it (until it
        // expires): it means IKE is pending only while a policy still
        // demands ESP. Without one the kernel sends in clear.
        let pending = dir == PolicyDir::Out
            && states
                .iter()
                .any(|s| s.is_esp() && s.larval && s.dst == peer && local.contains(&s.src));
        let Some(policies) = policies else {
            return if pending { Leg::Pending } else { Leg::Missing };
        };
        let demanding: Vec<&XfrmPolicy> = policies
            .iter()
            .filter(|p| flows.iter().any(|(a, b)| demands_esp(p, dir, *a, *b)))
            .collect();
        if demanding.is_empty() {
            Leg::Missing
        } else if pending {
            Leg::Pending
        } else if demanding.iter().any(|p| traced(p)) {
            Leg::Lost
        } else {
            Leg::Armed
        }
    };
    PeerState {
        peer,
        local: toward,
        out: leg(PolicyDir::Out, &|l| (l, peer)),
        inbound: leg(PolicyDir::In, &|l| (peer, l)),
        sas: sas.len(),
        pending_reqids: states
            .iter()
            .filter(|s| s.is_esp() && s.larval && s.dst == peer && local.contains(&s.src))
            .map(|s| s.reqid)
            .collect(),
    }
}

/// Judge the facts: each peer's legs, and the problems.
pub fn analyse(facts: &XfrmFacts) -> Analysis {
    let esp: Vec<&SecurityAssociation> = facts.states.iter().filter(|s| esp_sa(s)).collect();
    let count = esp.len();
    let mut problems = Vec::new();
    if !facts.ipsec_wanted {
        let sas: Vec<(IpAddr, IpAddr)> = esp.iter().map(|s| (s.src, s.dst)).collect();
        let pending: Vec<(IpAddr, IpAddr)> = facts
            .states
            .iter()
            .filter(|s| s.is_esp() && s.larval)
            .map(|s| (s.src, s.dst))
            .collect();
        if !sas.is_empty() || !pending.is_empty() {
            problems.push(Problem::Leftover { sas, pending });
        }
        return Analysis {
            count,
            peers: Vec::new(),
            problems,
        };
    }

    let known = facts.policies.as_ref().ok().map(Vec::as_slice);
    let policies = known.unwrap_or_default();
    let (local, peers): (Vec<IpAddr>, Vec<IpAddr>) = match &facts.peers {
        PeerView::Known { local, peers, .. } => (local.clone(), peers.clone()),
        PeerView::Unknown { .. } => {
            let local = facts.local_addresses.clone();
            let peers = peers_in_tables(&facts.states, policies, &local);
            (local, peers)
        }
    };
    let tunnel_source = matches!(facts.peers, PeerView::Known { .. });
    let states: Vec<PeerState> = peers
        .iter()
        .map(|p| {
            let toward = local_toward(
                *p,
                &local,
                tunnel_source,
                &facts.states,
                policies,
                facts.route_sources.get(p).copied(),
            );
            peer_state(*p, &local, &facts.states, known, toward)
        })
        .collect();
    for s in &states {
        if s.out == Leg::Pending {
            problems.push(Problem::IkePending(s.clone()));
        } else if s.out.is_problem() || s.inbound.is_problem() {
            problems.push(Problem::Missing(s.clone()));
        }
    }
    let want = facts.node_count.saturating_sub(1);
    if matches!(facts.peers, PeerView::Unknown { .. }) && peers.len() < want {
        problems.push(Problem::FewPeers {
            reached: peers.len(),
            nodes: facts.node_count,
        });
    }
    if problems.is_empty() && count < facts.expected_min && states.iter().all(|s| !s.is_armed()) {
        problems.push(Problem::FewSas {
            count,
            floor: facts.expected_min,
            nodes: facts.node_count,
            peers: peers.len(),
        });
    }
    for s in &esp {
        if s.algorithm.as_deref() != Some(OVN_ALGORITHM) {
            problems.push(Problem::WrongAlgorithm {
                src: s.src,
                dst: s.dst,
                algorithm: s.algorithm.clone(),
            });
        }
    }
    if let PeerView::Known { local, peers, .. } = &facts.peers {
        let pairs: BTreeSet<(IpAddr, IpAddr)> = esp.iter().map(|s| (s.src, s.dst)).collect();
        for (src, dst) in pairs {
            let remote = if local.contains(&src) {
                Some(dst)
            } else if local.contains(&dst) {
                Some(src)
            } else {
                None
            };
            if remote.is_none_or(|r| !peers.contains(&r)) {
                problems.push(Problem::Stale { src, dst });
            }
        }
    }
    Analysis {
        count,
        peers: states,
        problems,
    }
}
