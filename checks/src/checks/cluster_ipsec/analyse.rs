//! The judgement of `cluster.ipsec`, pure: what every node holds for every
//! other (its `ipsec.policy` evidence, addresses matched to nodes) in, the
//! nodes whose local IPsec is not up while others encrypt to them or hold
//! policies for them out. No words here ([`super::words`] says them).

use std::collections::BTreeMap;

use super::ClusterIpsecKind;
use crate::checks::ipsec_flags::IpsecFlagsEvidence;
use crate::checks::ipsec_policy::IpsecPolicyEvidence;
use crate::cluster::{self, ClusterFacts, IpsecGate, Unjudged};

/// What one node holds for another.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// System policies with an end at the other node.
    pub policies: usize,
    /// ESP SAs with it, either way.
    pub sas: usize,
}

impl Held {
    pub fn any(&self) -> bool {
        self.policies > 0 || self.sas > 0
    }
}

/// One node's side, as its report says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSide {
    /// Policies that demand ESP for geneve, toward anyone.
    pub geneve_policies: usize,
    /// ESP SAs, with anyone.
    pub sa_count: usize,
    /// What it holds for each other node, by node name.
    pub holds: BTreeMap<String, Held>,
}

impl NodeSide {
    /// It holds no IPsec policy or SA at all.
    pub fn holds_nothing(&self) -> bool {
        self.geneve_policies == 0 && self.sa_count == 0 && self.holds.values().all(|h| !h.any())
    }

    fn held_for(&self, node: &str) -> Held {
        self.holds.get(node).copied().unwrap_or_default()
    }
}

/// A node whose IPsec toward others is not up while they expect it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Down {
    pub node: String,
    /// It holds no policy or SA at all (else only not for these others).
    pub nothing: bool,
    /// Nodes that hold SAs with it (they encrypt to it).
    pub encrypted_by: Vec<String>,
    /// Nodes that hold policies for it but no SA (they demand ESP toward
    /// it; IKE never completes).
    pub armed_by: Vec<String>,
}

/// What is wrong with one node's IPsec, beside the others'.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// Others expect IPsec with it and it holds none for them: their
    /// geneve to it, and its to them, is dropped.
    BlackHoled(Down),
    /// It holds no policy or SA at all, and no other node expects IPsec
    /// with it either: its geneve is plaintext both ways.
    NotUp { node: String },
}

impl Problem {
    pub fn kind(&self) -> ClusterIpsecKind {
        match self {
            Problem::BlackHoled(_) => ClusterIpsecKind::BlackHoled,
            Problem::NotUp { .. } => ClusterIpsecKind::NotUp,
        }
    }

    pub fn node(&self) -> &str {
        match self {
            Problem::BlackHoled(d) => &d.node,
            Problem::NotUp { node } => node,
        }
    }
}

/// Every node's IPsec side by side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Analysis {
    /// `NB_Global.ipsec` as the node that read NB reported it.
    pub nb_global_ipsec: Option<bool>,
    /// Every node judged, by name.
    pub sides: BTreeMap<String, NodeSide>,
    /// The nodes whose `ipsec.policy` could not be read.
    pub unjudged: Vec<Unjudged>,
    /// The black-holed nodes, then those not up, each by name.
    pub problems: Vec<Problem>,
    /// Nodes that hold IPsec for every other node that holds it for them.
    pub up: Vec<String>,
}

impl Analysis {
    /// No node holds any IPsec policy or SA.
    pub fn nowhere(&self) -> bool {
        self.up.is_empty()
            && !self.problems.is_empty()
            && self
                .problems
                .iter()
                .all(|p| matches!(p, Problem::NotUp { .. }))
    }
}

/// Judge the nodes' reports: where IPsec is wanted, what every node that
/// answered with its policies holds for the others.
pub fn analyse(facts: &ClusterFacts) -> Result<Analysis, IpsecGate> {
    let read = cluster::ipsec_evidence::<IpsecPolicyEvidence>(facts, "ipsec.policy")?;
    let book = facts.address_book();
    let mut sides = BTreeMap::new();
    for (node, e) in read.read {
        let mut side = NodeSide {
            geneve_policies: e.geneve_policies,
            sa_count: e.sa_count,
            ..NodeSide::default()
        };
        for p in &e.peers {
            if let Some(owner) = book.owner(p.peer).filter(|o| *o != node) {
                let held = side.holds.entry(owner.to_owned()).or_default();
                held.policies += p.policies;
                held.sas += p.sas;
            }
        }
        sides.insert(node.to_owned(), side);
    }
    let (problems, up) = judge_sides(&sides);
    Ok(Analysis {
        nb_global_ipsec: facts
            .answered()
            .filter_map(|n| n.evidence::<IpsecFlagsEvidence>("ipsec.flags"))
            .find_map(|e| e.nb_global_ipsec),
        sides,
        unjudged: read.unjudged,
        problems,
        up,
    })
}

/// Each side against the others': the problems (black-holed first), and
/// the nodes that are up.
fn judge_sides(sides: &BTreeMap<String, NodeSide>) -> (Vec<Problem>, Vec<String>) {
    let (mut down, mut bare, mut up) = (Vec::new(), Vec::new(), Vec::new());
    for (x, side) in sides {
        let mut d = Down {
            node: x.clone(),
            nothing: side.holds_nothing(),
            encrypted_by: Vec::new(),
            armed_by: Vec::new(),
        };
        for (y, other) in sides {
            if x == y || side.held_for(y).any() {
                continue;
            }
            let theirs = other.held_for(x);
            if theirs.sas > 0 {
                d.encrypted_by.push(y.clone());
            } else if theirs.policies > 0 {
                d.armed_by.push(y.clone());
            }
        }
        if !d.encrypted_by.is_empty() || !d.armed_by.is_empty() {
            down.push(Problem::BlackHoled(d));
        } else if d.nothing {
            bare.push(Problem::NotUp { node: x.clone() });
        } else {
            up.push(x.clone());
        }
    }
    down.extend(bare);
    (down, up)
}
