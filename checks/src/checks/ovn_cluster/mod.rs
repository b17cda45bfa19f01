//! `ovn.cluster`: OVN's northbound and southbound databases are the raft
//! Spinifex runs, whole and in step, and the southbound database holds one
//! chassis per node, registered where the node's own Open_vSwitch says.
//!
//! Every NB and SB member of the list (`ovn_nb_addr`/`ovn_sb_addr`, or
//! `--nb-db`/`--sb-db`) is asked for its `_Server` `Database` row over
//! RFC 7047, each on its own, at both ends of the shared sample window: a
//! member that does not answer is a fact about that member, never a reason
//! to give up on the others. The layers: [`facts`] (what is judged),
//! [`gather`] (the reads), [`analyse`] (the judgement, pure), [`words`]
//! (each problem's words and fixes), [`evidence`].

pub mod analyse;
pub mod evidence;
pub mod facts;
pub mod gather;
pub mod words;

#[cfg(test)]
mod tests;

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::finding::Finding;

pub use self::evidence::{LocalEvidence, OvnClusterEvidence};

pub struct OvnCluster;

crate::kinds! {
    /// What `ovn.cluster` can say, per database, member and chassis, and for the check.
    pub enum OvnClusterKind for "ovn.cluster" {
        /// Every member answers, connected, in step, with one leader; one SB chassis per node, none of another, registered where each node's Open_vSwitch says (where this node knows it).
        Ok = pass("ok"),
        /// The database's cluster has no leader: it lost its quorum (or is electing), so no change to it can be committed.
        NoLeader = fail("no-leader"),
        /// More than one member says it leads (two clusters in one list, or a cut-off leader).
        SeveralLeaders = fail("several-leaders"),
        /// A member holds the database standalone (or as a relay) where Spinifex runs a raft of three (clusters of three nodes or more).
        NotClustered = fail("not-clustered"),
        /// A member of the list is of another cluster (another cluster id), or serves another database.
        ForeignMember = fail("foreign-member"),
        /// A member does not answer while the others do: the raft has lost a member (with three, it tolerates no further loss).
        MemberDown = fail("member-down"),
        /// A member answers but is not connected to its cluster (out of contact with a majority, or still joining): its clients see stale data.
        MemberDisconnected = fail("member-disconnected"),
        /// A config node has no SB chassis: its ovn-controller has not registered, so it has no overlay networking.
        MissingChassis = fail("missing-chassis"),
        /// An SB chassis belongs to no node of the config (a removed node, or a system-id since changed).
        StaleChassis = fail("stale-chassis"),
        /// A node's SB chassis registered other tunnel addresses than its own Open_vSwitch external_ids:ovn-encap-ip.
        EncapMismatch = fail("encap-mismatch"),
        /// This node's Open_vSwitch external_ids:system-id (its chassis id) is not its node name, which Spinifex pins it to.
        ChassisIdMismatch = fail("chassis-id-mismatch"),
        /// A connected member has not applied, by the end of the sample window, what the most advanced member had applied at its start (at least 500 ms earlier): it serves an old database.
        Lagging = warn("lagging"),
        /// The list is not the raft Spinifex runs: not three members for a cluster of three nodes or more, two members, or one server named twice.
        MemberCount = warn("member-count"),
        /// No member of NB or SB answered, or the SB chassis could not be read: nothing about it is concluded.
        DbUnreachable = error("db-unreachable"),
        /// This node's Open_vSwitch database could not be read: its chassis id and ovn-encap-ip are unknown.
        LocalUnreadable = error("local-unreadable"),
    }
}

static DECLARED: Declared = Declared::of::<OvnClusterKind, OvnClusterEvidence>();

impl Check for OvnCluster {
    fn id(&self) -> &'static str {
        "ovn.cluster"
    }

    fn title(&self) -> &'static str {
        "OVN NB and SB raft members all connected, one leader, in step; one SB chassis per node"
    }

    fn explain(&self) -> &'static str {
        "Asks every member of the OVN northbound and southbound lists (the config's \
         ovn_nb_addr and ovn_sb_addr, or --nb-db and --sb-db), each on its own, for its \
         `_Server` database's `Database` row over OVSDB JSON-RPC (RFC 7047): the storage \
         model, whether the member is connected to its cluster, whether it leads, its \
         cluster and server ids, and the index of the last log entry it applied. Every \
         member is asked at both ends of the shared sample window, all at once. Judged: \
         the model is a raft (Spinifex runs NB and SB as a raft of three for a cluster of \
         three nodes or more, one standalone database below that), every member answers \
         and is connected to the same cluster, exactly one leads, the list names three \
         members, and none lags. A member lags when, at the end of the window, it has not \
         applied the entry the most advanced member had applied at its start, at least \
         500 ms earlier (OVS's leader sends every new commit index to its followers at \
         once, so a healthy follower is one round trip behind). A member that does not \
         answer while others do is named (member-down), never an error.\n\
         \n\
         Then the southbound Chassis table (read from the leader): one chassis per \
         [nodes.*] name (Spinifex pins the chassis id, OVS external_ids:system-id, to the \
         node name; its install check expects one chassis per node name), none left for a \
         node no longer in the config, and this node's chassis registered at the \
         addresses its own Open_vSwitch gives (external_ids:ovn-encap-ip, read from \
         unix:/var/run/openvswitch/db.sock or --ovs-db), whose system-id must be its node \
         name. In a cluster run one node reads NB and SB for the cluster and the others \
         read only their own Open_vSwitch; cluster.chassis then compares every node's \
         identity with the chassis.\n\
         \n\
         Why: a raft that lost a member still works but tolerates no further loss; one \
         without a leader commits nothing, so launches, VPCs and port bindings stop; a \
         lagging or disconnected member serves its clients an old database. A node \
         without a chassis has no overlay networking; a stale chassis keeps tunnels (and \
         IPsec) toward an address no node holds; a chassis at the wrong address sends \
         every tunnel there.\n\
         \n\
         Fix: the finding names each member and chassis and prints the commands: \
         `ovn-appctl -t /var/run/ovn/ovnnb_db.ctl cluster/status OVN_Northbound` to look, \
         `systemctl start ovn-ovsdb-server-nb` to bring a member back, `cluster/kick` and \
         `ovsdb-tool join-cluster` to rejoin one, `ovn-sbctl --db=\"<SB members>\" \
         chassis-del NAME` for a stale chassis, and `ovs-vsctl set Open_vSwitch . \
         external_ids:system-id=NAME` with a restart of ovn-controller for a chassis \
         registered under the wrong id."
    }

    fn samples(&self) -> bool {
        true
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let facts = match gather::gather(ctx) {
            Ok(f) => f,
            Err(f) => return f,
        };
        judge(&facts)
    }
}

/// The verdict on `facts`: problems found, put in words, with the evidence.
pub fn judge(facts: &facts::OvnFacts) -> Finding {
    let problems = analyse::analyse(facts);
    words::finding(facts, &problems).evidence(&OvnClusterEvidence::of(facts))
}
