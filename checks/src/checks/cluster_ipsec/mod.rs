//! `cluster.ipsec`: where IPsec is wanted, is any node's local IPsec not up
//! while other nodes encrypt to it, or hold policies for it?
//!
//! Each node sees only its own policies and SAs. In the partial enable of
//! issue 22 (`NB_Global ipsec=true` set while two of three chassis had
//! failed their local setup) the third node's policies demanded ESP toward
//! the other two, which held nothing: each node's geneve to the others was
//! dropped or sent in clear, and cross-chassis guest traffic was
//! black-holed for 5.5 minutes while every health signal stayed green. On
//! the two, no counter moved; only the tables side by side name them. The
//! tables come from every node's `ipsec.policy` evidence (per peer: its
//! policies and SAs), the flag from `ipsec.flags`'s `NB_Global.ipsec` as
//! the node that read NB reported it; addresses are matched to nodes like
//! every cluster check does ([`crate::cluster::ClusterFacts::address_book`]).
//!
//! [`analyse`] judges (pure); `words` says it. Judged by `--cluster` from
//! the nodes' reports, and by anything else that judges stored reports
//! through its [`crate::ClusterJudge`].

mod analyse;
mod words;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::cluster::ClusterFacts;
use crate::evidence::Evidence;
use crate::finding::Finding;

pub use analyse::{analyse, Analysis, Down, Held, NodeSide, Problem};

pub struct ClusterIpsec;

crate::kinds! {
    /// What `cluster.ipsec` can say, per node and for the check.
    pub enum ClusterIpsecKind for "cluster.ipsec" {
        /// IPsec wanted: every node holds IPsec policies or SAs for every other node that holds them for it.
        Ok = pass("ok"),
        /// A node holds no SAs or policies for other nodes that encrypt to it or hold policies for it: their geneve to it is dropped (it has no SA), its geneve to them is sent in clear and dropped (their policies demand ESP): cross-chassis guest traffic to and from it is black-holed (a partial enable).
        BlackHoled = fail("black-holed"),
        /// IPsec wanted, yet a node holds no IPsec policy or SA at all and no other node expects IPsec with it (or none holds any): its geneve is plaintext both ways.
        NotUp = fail("not-up"),
        /// The nodes disagree on whether IPsec is wanted (see cluster.config-drift).
        IpsecDisagrees = error("ipsec-disagrees"),
        /// Not every node could be judged: its ipsec.policy was not read (no CAP_NET_ADMIN, no answer).
        NotJudged = error("not-judged"),
    }
}

static DECLARED: Declared = Declared::of::<ClusterIpsecKind, ClusterIpsecEvidence>();

/// What every node holds for the others, and who is named.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterIpsecEvidence {
    /// `NB_Global.ipsec` as the node that read NB reported it; null when
    /// no node did.
    pub nb_global_ipsec: Option<bool>,
    /// Every node judged.
    pub nodes: Vec<NodeIpsec>,
    /// Nodes black-holed: others expect IPsec with them, they hold none.
    pub black_holed: Vec<String>,
    /// Nodes holding no IPsec at all that no other node expects it with.
    pub not_up: Vec<String>,
    /// Nodes not judged, and why.
    pub unjudged: Vec<String>,
}

/// One node's side.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeIpsec {
    pub node: String,
    /// Policies demanding ESP for geneve it holds.
    pub geneve_policies: usize,
    /// ESP SAs it holds.
    pub sa_count: usize,
    /// The other nodes it holds SAs with.
    pub sas_with: Vec<String>,
    /// The other nodes it holds policies (and no SA) for.
    pub policies_for: Vec<String>,
}

impl Evidence for ClusterIpsecEvidence {}

impl Check for ClusterIpsec {
    fn id(&self) -> &'static str {
        "cluster.ipsec"
    }

    fn title(&self) -> &'static str {
        "No node's IPsec is down while other nodes encrypt to it or hold policies for it"
    }

    fn explain(&self) -> &'static str {
        "Where IPsec is wanted (ipsec_enabled on every node of a cluster of more than one), \
         puts every node's IPsec side by side: from each node's ipsec.policy evidence, \
         which other nodes it holds policies or ESP SAs for (dumped over netlink; the peers' \
         addresses matched to nodes by the config's host/advertise and the addresses each \
         node reports). A node that holds no SA or policy for another node that encrypts \
         to it (holds SAs with it) or holds policies for it is named: the other's geneve to \
         it arrives encrypted for an SA it does not have (XfrmInNoStates there) or is never \
         sent (IKE never completes: XfrmOutNoStates on the other), and its own geneve leaves \
         in clear and meets the other's inbound policy (XfrmInTmplMismatch): cross-chassis \
         guest traffic to and from it is black-holed. A node holding no IPsec at all that \
         no other expects IPsec with (or a cluster where no node holds any) is not up: its \
         geneve is plaintext. NB_Global.ipsec, from ipsec.flags on the node that read NB, \
         is quoted.\n\
         \n\
         Skips when IPsec is not wanted (ipsec.policy then names leftovers on each node) or \
         ipsec.policy was not selected; a node whose policies were not read is not judged.\n\
         \n\
         Why: in a partial enable NB_Global ipsec=true was set while two of three chassis \
         had failed their local setup; cross-chassis guest traffic was black-holed for 5.5 \
         minutes while every health signal stayed green. On the two nodes no counter \
         moved: only the tables side by side show them.\n\
         \n\
         Fix: on the nodes named, run `spx doctor --check ipsec` (ipsec.daemon, ipsec.cert \
         and ipsec.policy say what failed) and `systemctl restart openvswitch-ipsec`; to end \
         the outage first, roll the enable back (`spx doctor --for disable-ipsec` prints \
         the runbook)."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    crate::check::cluster_check!(judge);
}

/// The verdict on the nodes' reports: `analyse` finds, `words` says.
pub fn judge(facts: &ClusterFacts) -> Finding {
    words::finding(analyse(facts))
}

#[cfg(test)]
mod tests;
