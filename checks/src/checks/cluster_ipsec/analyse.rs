//! The judgement of `cluster.ipsec`, pure: what every node holds for every
//! other (its `ipsec.policy` evidence, addresses matched to nodes) in, the
//! nodes whose local IPsec is not up while others encrypt to them or hold
//! policies for them out.

use std::collections::BTreeMap;

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

/// What the sides show.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Black-holed: nodes that hold nothing for others that expect IPsec
    /// with them.
    pub down: Vec<Down>,
    /// Nodes that hold no policy or SA at all while no other expects
    /// IPsec with them either: their geneve is plaintext both ways.
    pub bare: Vec<String>,
    /// Nodes that hold IPsec for every other node that holds it for them.
    pub up: Vec<String>,
}

impl Analysis {
    /// No node holds any IPsec policy or SA.
    pub fn nowhere(&self) -> bool {
        self.down.is_empty() && self.up.is_empty() && !self.bare.is_empty()
    }
}

/// Judge the `sides` of the nodes that answered with their policies.
pub fn analyse(sides: &BTreeMap<String, NodeSide>) -> Analysis {
    let mut out = Analysis::default();
    for (x, side) in sides {
        let mut down = Down {
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
                down.encrypted_by.push(y.clone());
            } else if theirs.policies > 0 {
                down.armed_by.push(y.clone());
            }
        }
        if !down.encrypted_by.is_empty() || !down.armed_by.is_empty() {
            out.down.push(down);
        } else if down.nothing {
            out.bare.push(x.clone());
        } else {
            out.up.push(x.clone());
        }
    }
    out
}
