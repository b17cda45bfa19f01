//! The judgement of `ipsec.policy`, pure: the policies, the states and the
//! peers in, what covers each peer's geneve in each direction out. No words
//! here ([`super::words`] says it).
//!
//! A direction of geneve (UDP to port 6081, any source port) is judged as
//! the kernel decides it for an unmarked packet: of the system policies of
//! that direction whose selector takes every such packet, the one of the
//! lowest priority value wins (sockets' own policies, charon's IKE sockets,
//! apply only to their sockets' packets; a policy with a mark applies only
//! to packets of that mark). Its ESP template is satisfied the way the
//! kernel looks the SA up: same ends (the packet's, in transport mode),
//! protocol, mode and reqid (an inbound template of reqid 0 takes any), the
//! template's SPI when it names one, and the SA's own selector taking the
//! packet.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::checks::ipsec_xfrm::analyse::{host_peer, peers_in_tables};
use crate::checks::ipsec_xfrm::{PeerView, GENEVE_PORT};
use crate::facts::xfrm::{
    PolicyAction, PolicyDir, PolicyTemplate, Port, SecurityAssociation, XfrmPolicy, IPPROTO_ESP,
    IPPROTO_UDP,
};

/// What covers one direction of geneve with a peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cover {
    /// A policy demands ESP and an installed SA satisfies its template.
    Encrypted,
    /// A policy demands ESP and no SA carries this direction yet, nothing
    /// waits for one: IKE makes it on the first packet (`auto=route`).
    Armed,
    /// A policy demands ESP, no SA carries it, and the kernel holds an
    /// ACQUIRE state for it: it waits for IKE and drops what is sent.
    NoSa,
    /// A policy demands ESP, and no installed SA can satisfy its template
    /// although the direction had or has one (its template names an SPI no
    /// SA holds, or the SAs carrying it are of another reqid or mode):
    /// dropped.
    TemplateMismatch,
    /// No policy demands ESP for it: sent (or accepted) in plaintext,
    /// whatever SAs exist.
    Plaintext,
    /// A block policy selects it: dropped.
    Blocked,
}

impl Cover {
    /// Geneve in this direction is not carried as IPsec wants it.
    pub fn is_problem(self) -> bool {
        !matches!(self, Cover::Encrypted | Cover::Armed)
    }

    /// How bad it is: 0 encrypted, up to 5 plaintext.
    fn rank(self) -> u8 {
        match self {
            Cover::Encrypted => 0,
            Cover::Armed => 1,
            Cover::NoSa => 2,
            Cover::TemplateMismatch => 3,
            Cover::Blocked => 4,
            Cover::Plaintext => 5,
        }
    }

    /// How the evidence names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Cover::Encrypted => "encrypted",
            Cover::Armed => "armed",
            Cover::NoSa => "no-sa",
            Cover::TemplateMismatch => "template-mismatch",
            Cover::Plaintext => "plaintext",
            Cover::Blocked => "blocked",
        }
    }
}

/// One direction as judged, with the policy that decided it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Direction {
    pub cover: Cover,
    /// The winning policy's priority, reqid and SPI (0: none named), when
    /// a policy decided it.
    pub policy: Option<(u32, u32, u32)>,
    /// ESP SAs whose selector takes this direction's geneve (whether or not
    /// they satisfy the template).
    pub carriers: usize,
}

/// What holds for one peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerCover {
    pub peer: IpAddr,
    /// This node's address toward it (the first local one of its family).
    pub local: Option<IpAddr>,
    /// This node's geneve to the peer.
    pub out: Direction,
    /// The peer's geneve to this node.
    pub inbound: Direction,
    /// System policies with an end at the peer (host to host, UDP), either
    /// direction: ovs-monitor-ipsec's layout holds 4.
    pub policies: usize,
    /// ESP SAs with the peer, either direction (larval states aside).
    pub sas: usize,
}

impl PeerCover {
    /// The directions of `pick`ed cover, as (`src`, `dst`).
    pub fn legs(&self, pick: impl Fn(Cover) -> bool) -> Vec<(String, String)> {
        let me = self
            .local
            .map_or_else(|| "this-node".to_owned(), |l| l.to_string());
        let peer = self.peer.to_string();
        let mut out = Vec::new();
        if pick(self.out.cover) {
            out.push((me.clone(), peer.clone()));
        }
        if pick(self.inbound.cover) {
            out.push((peer, me));
        }
        out
    }

    /// The worse of its two directions.
    pub fn worst(&self) -> Cover {
        let rank = Cover::rank;
        if rank(self.out.cover) >= rank(self.inbound.cover) {
            self.out.cover
        } else {
            self.inbound.cover
        }
    }
}

/// What the facts hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    /// Every peer judged (empty when IPsec is not wanted).
    pub peers: Vec<PeerCover>,
    /// Peers were not known (OVN not asked) and the policies and SAs reach
    /// fewer than the config's N−1: how many they reach.
    pub few_peers: Option<usize>,
    /// IPsec not wanted: the system policies that still demand ESP for
    /// geneve, or block it.
    pub leftover: Vec<XfrmPolicy>,
    /// System policies (sockets' own aside).
    pub policy_count: usize,
    /// System policies that demand ESP for UDP 6081 traffic (either port).
    pub geneve_policies: usize,
    /// ESP SAs (larval states aside).
    pub sa_count: usize,
}

/// The facts `ipsec.policy` judges.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyFacts {
    pub ipsec_wanted: bool,
    pub node_count: usize,
    pub states: Vec<SecurityAssociation>,
    pub policies: Vec<XfrmPolicy>,
    pub peers: PeerView,
    /// This host's own addresses.
    pub local_addresses: Vec<IpAddr>,
}

/// Whether `p` applies to a packet without a mark.
fn unmarked(p: &XfrmPolicy) -> bool {
    p.mark.is_none_or(|m| m.value & m.mask == 0)
}

/// Whether `p` selects UDP to or from port 6081 at all (either port).
fn touches_geneve(p: &XfrmPolicy) -> bool {
    let s = &p.selector;
    let port = |port: u16, mask: u16| mask != 0 && port & mask == GENEVE_PORT & mask;
    (s.proto == 0 || s.proto == IPPROTO_UDP)
        && (port(s.dport, s.dport_mask) || port(s.sport, s.sport_mask) || {
            s.dport_mask == 0 && s.sport_mask == 0
        })
}

/// The system policy the kernel applies to unmarked geneve from `src` to
/// `dst` in `dir`: the lowest priority value among those that select all of
/// it, the first listed among equals.
pub fn effective(
    policies: &[XfrmPolicy],
    dir: PolicyDir,
    src: IpAddr,
    dst: IpAddr,
) -> Option<&XfrmPolicy> {
    policies
        .iter()
        .filter(|p| {
            !p.socket
                && p.dir == dir
                && unmarked(p)
                && p.selector
                    .selects(src, dst, IPPROTO_UDP, Port::Any, Port::Is(GENEVE_PORT))
        })
        .min_by_key(|p| p.priority)
}

/// Whether SA `s` carries geneve from `src` to `dst` (its ends, and its
/// selector taking the packet; none takes everything).
fn carries(s: &SecurityAssociation, src: IpAddr, dst: IpAddr) -> bool {
    s.is_esp_sa()
        && s.src == src
        && s.dst == dst
        && s.selector
            .as_ref()
            .is_none_or(|sel| sel.selects(src, dst, IPPROTO_UDP, Port::Any, Port::Is(GENEVE_PORT)))
}

/// Whether SA `s` satisfies template `t` for geneve from `src` to `dst` in
/// `dir`, as the kernel looks it up.
pub fn satisfies(
    s: &SecurityAssociation,
    t: &PolicyTemplate,
    dir: PolicyDir,
    src: IpAddr,
    dst: IpAddr,
) -> bool {
    // Transport mode takes the packet's ends; tunnel mode the template's.
    let (from, to) = if t.mode == 0 {
        (src, dst)
    } else {
        (t.src, t.dst)
    };
    let reqid = match dir {
        PolicyDir::Out => s.reqid == t.reqid,
        _ => t.reqid == 0 || s.reqid == t.reqid,
    };
    s.is_esp_sa()
        && s.proto == t.proto
        && s.src == from
        && s.dst == to
        && s.mode == t.mode
        && reqid
        && (t.spi == 0 || s.spi == t.spi)
        && s.selector
            .as_ref()
            .is_none_or(|sel| sel.selects(src, dst, IPPROTO_UDP, Port::Any, Port::Is(GENEVE_PORT)))
}

/// One direction: geneve from `src` to `dst` as `dir` judges it.
fn direction(
    policies: &[XfrmPolicy],
    states: &[SecurityAssociation],
    dir: PolicyDir,
    src: IpAddr,
    dst: IpAddr,
) -> Direction {
    let carriers = states.iter().filter(|s| carries(s, src, dst)).count();
    let Some(p) = effective(policies, dir, src, dst) else {
        return Direction {
            cover: Cover::Plaintext,
            policy: None,
            carriers,
        };
    };
    let template = p.requires(IPPROTO_ESP);
    let policy = Some((
        p.priority,
        template.map_or(0, |t| t.reqid),
        template.map_or(0, |t| t.spi),
    ));
    let cover = match (p.action, template) {
        (PolicyAction::Block, _) => Cover::Blocked,
        (PolicyAction::Allow, None) => Cover::Plaintext,
        (PolicyAction::Allow, Some(t)) => {
            if states.iter().any(|s| satisfies(s, t, dir, src, dst)) {
                Cover::Encrypted
            } else if t.spi != 0 || carriers > 0 {
                Cover::TemplateMismatch
            } else if dir == PolicyDir::Out
                && states.iter().any(|s| {
                    s.is_esp()
                        && s.larval
                        && s.src == src
                        && s.dst == dst
                        && (s.reqid == t.reqid || t.reqid == 0)
                })
            {
                Cover::NoSa
            } else {
                Cover::Armed
            }
        }
    };
    Direction {
        cover,
        policy,
        carriers,
    }
}

/// What holds for `peer`, from `local`: judged from each local address of
/// the peer's family (loopback aside), the one that fares best counts (a
/// node with two addresses uses one toward a peer).
fn peer_cover(
    peer: IpAddr,
    local: &[IpAddr],
    states: &[SecurityAssociation],
    policies: &[XfrmPolicy],
) -> PeerCover {
    let mine: Vec<IpAddr> = local
        .iter()
        .copied()
        .filter(|l| l.is_ipv4() == peer.is_ipv4() && !l.is_loopback())
        .collect();
    let best = |judged: Vec<(IpAddr, Direction)>| -> Option<(IpAddr, Direction)> {
        judged.into_iter().min_by_key(|(_, d)| d.cover.rank())
    };
    let out = best(
        mine.iter()
            .map(|l| (*l, direction(policies, states, PolicyDir::Out, *l, peer)))
            .collect(),
    );
    let inbound = best(
        mine.iter()
            .map(|l| (*l, direction(policies, states, PolicyDir::In, peer, *l)))
            .collect(),
    );
    let none = Direction {
        cover: Cover::Plaintext,
        policy: None,
        carriers: 0,
    };
    PeerCover {
        peer,
        local: out.as_ref().map(|(l, _)| *l).or(mine.first().copied()),
        out: out.map_or_else(|| none.clone(), |(_, d)| d),
        inbound: inbound.map_or(none, |(_, d)| d),
        policies: policies
            .iter()
            .filter(|p| p.selector.proto == IPPROTO_UDP && host_peer(p, local) == Some(peer))
            .count(),
        sas: states
            .iter()
            .filter(|s| {
                s.is_esp_sa()
                    && ((s.src == peer && local.contains(&s.dst))
                        || (s.dst == peer && local.contains(&s.src)))
            })
            .count(),
    }
}

/// Judge the facts.
pub fn analyse(facts: &PolicyFacts) -> Analysis {
    let system: Vec<&XfrmPolicy> = facts.policies.iter().filter(|p| !p.socket).collect();
    let geneve: Vec<&XfrmPolicy> = system
        .iter()
        .copied()
        .filter(|p| touches_geneve(p))
        .collect();
    let mut out = Analysis {
        peers: Vec::new(),
        few_peers: None,
        leftover: Vec::new(),
        policy_count: system.len(),
        geneve_policies: geneve
            .iter()
            .filter(|p| p.action == PolicyAction::Allow && p.requires(IPPROTO_ESP).is_some())
            .count(),
        sa_count: facts.states.iter().filter(|s| s.is_esp_sa()).count(),
    };
    if !facts.ipsec_wanted {
        out.leftover = geneve
            .into_iter()
            .filter(|p| {
                unmarked(p)
                    && (p.action == PolicyAction::Block || p.requires(IPPROTO_ESP).is_some())
            })
            .cloned()
            .collect();
        return out;
    }
    let (local, peers): (Vec<IpAddr>, Vec<IpAddr>) = match &facts.peers {
        PeerView::Known { local, peers, .. } => (local.clone(), peers.clone()),
        PeerView::Unknown { .. } => {
            let local = facts.local_addresses.clone();
            let peers = peers_in_tables(&facts.states, &facts.policies, &local);
            (local, peers)
        }
    };
    let mut peers = peers;
    peers.sort();
    peers.dedup();
    out.peers = peers
        .iter()
        .map(|p| peer_cover(*p, &local, &facts.states, &facts.policies))
        .collect();
    let want = facts.node_count.saturating_sub(1);
    if matches!(facts.peers, PeerView::Unknown { .. }) && peers.len() < want {
        out.few_peers = Some(peers.len());
    }
    out
}
