//! The judgement of `ovn.cluster`, without I/O and without words: facts in
//! ([`OvnFacts`]), typed problems out. The words an operator reads, and
//! the commands that fix each problem, are beside the kinds in
//! [`super::words`].

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use crate::facts::ovsdb::raft::ServerDb;

use super::facts::{Db, DbFacts, DbSide, MemberRead, MemberRef, OvnFacts, Read};

/// A member is lagging when, at the end of the sample window, it has not
/// applied the entry the most advanced member had applied at the start,
/// at least this long before. A healthy follower applies an entry one
/// round trip after it is committed: OVS's leader sends the new commit
/// index to every follower the moment it advances (`raft.c`,
/// `raft_consider_updating_commit_index` sends heartbeats), whatever the
/// election timer; 500 ms is that round trip on any LAN with room for a
/// loaded host, and still below the seconds a member cut off from its
/// leader goes on saying it is connected (two election timers). Below
/// this bound (a `--sample` under 750 ms, whose first reading may take a
/// third of it) lag is not judged, and the summary says so.
pub const LAG_MIN_BOUND: Duration = Duration::from_millis(500);

/// From this many `[nodes.*]` on, Spinifex runs NB and SB as a raft of
/// three (`install-node.sh`: "Three or more nodes run RAFT across the
/// first three"); below it, one standalone database on the first node.
pub const RAFT_FROM_NODES: usize = 3;
/// The raft members Spinifex runs (its install check expects three
/// `OVN_Northbound` members).
pub const RAFT_MEMBERS: usize = 3;

/// The cluster id of a member still joining (ovsdb-server 3.1 writes the
/// all-zero uuid until the join completes): no cluster's.
pub const NO_CID: &str = "00000000-0000-0000-0000-000000000000";

/// Why a member of the list is not of this cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Foreign {
    /// It is a raft member of another cluster.
    OtherCluster { cid: String, cluster: String },
    /// It answers, but serves other databases (named), not this one.
    Lacks(Vec<String>),
}

/// One thing wrong, with what the words need to name it and fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// No member of the database answered.
    Unreachable {
        db: Db,
        silent: Vec<(MemberRef, String)>,
    },
    /// The members of the cluster that answered have no leader: the raft
    /// lost its quorum, or is electing.
    NoLeader {
        db: Db,
        connected: usize,
        listed: usize,
    },
    /// More than one member says it leads.
    SeveralLeaders { db: Db, leaders: Vec<MemberRef> },
    /// A member holds the database standalone (or as a relay) where
    /// Spinifex runs a raft.
    NotClustered {
        db: Db,
        member: MemberRef,
        model: String,
        nodes: usize,
        listed: usize,
    },
    /// A member of the list is not of this cluster.
    ForeignMember {
        db: Db,
        member: MemberRef,
        why: Foreign,
    },
    /// A member does not answer while others do.
    MemberDown {
        db: Db,
        member: MemberRef,
        why: String,
        /// Members of the cluster that answered, connected.
        healthy: usize,
        listed: usize,
        leader: Option<MemberRef>,
    },
    /// A member answers but is not in contact with a majority.
    Disconnected {
        db: Db,
        member: MemberRef,
        leader: Option<MemberRef>,
    },
    /// A connected member that has not applied, by the end of the window,
    /// what the most advanced member had applied at its start.
    Lagging {
        db: Db,
        member: MemberRef,
        index: Option<u64>,
        reference: u64,
        /// Entries behind the most advanced member at the end.
        behind: Option<u64>,
        bound: Duration,
        leader: Option<MemberRef>,
    },
    /// The list is not the raft Spinifex runs: not three members (for a
    /// cluster of three nodes or more), two members, or one server named
    /// twice.
    MemberCount {
        db: Db,
        listed: usize,
        nodes: usize,
        same_server: Vec<(MemberRef, MemberRef)>,
    },
    /// A config node without an SB chassis.
    MissingChassis {
        node: String,
        /// This node's own chassis, registered under another id (its
        /// system-id).
        registered_as: Option<String>,
    },
    /// An SB chassis of no config node.
    StaleChassis {
        name: String,
        hostname: Option<String>,
        encap_ips: Vec<IpAddr>,
        /// It is this node's own system-id.
        this_nodes_id: bool,
    },
    /// This node's chassis registered other tunnel addresses than its
    /// Open_vSwitch `ovn-encap-ip`.
    EncapMismatch {
        node: String,
        sb: Vec<IpAddr>,
        local: Vec<IpAddr>,
    },
    /// This node's `external_ids:system-id` is not its node name.
    ChassisIdMismatch {
        node: String,
        system_id: Option<String>,
    },
    /// The SB chassis could not be read (the raft answered, the table
    /// did not).
    ChassisUnread { why: String },
    /// This node's Open_vSwitch database could not be read.
    LocalUnreadable { why: String },
}

/// What one database's members amount to: the cluster they form, and its
/// leader.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RaftView {
    /// The cluster id most members answered with (the list's cluster).
    pub cid: Option<String>,
    /// Indexes (into the members) of the rows of that cluster, at the end.
    pub cluster: Vec<usize>,
    /// Of those, the connected ones that lead.
    pub leaders: Vec<usize>,
    /// The highest index applied by the cluster at the start and at the
    /// end of the window.
    pub start_max: Option<u64>,
    pub end_max: Option<u64>,
}

impl RaftView {
    pub fn of(d: &DbFacts) -> RaftView {
        let clustered = |r: &MemberRead| r.row().filter(|r| r.clustered()).cloned();
        // The list's cluster: the cid most members answered with; a tie
        // goes to the one with a leader, then to the first listed.
        let mut votes: BTreeMap<&str, (usize, bool, usize)> = BTreeMap::new();
        for (i, m) in d.members.iter().enumerate() {
            let row = m
                .end
                .row()
                .filter(|r| r.clustered() && r.cid.as_deref() != Some(NO_CID));
            if let Some(ServerDb { cid: Some(c), .. }) = row {
                let lead = m.end.row().is_some_and(|r| r.leader && r.connected);
                let e = votes.entry(c).or_insert((0, false, i));
                e.0 += 1;
                e.1 |= lead;
            }
        }
        let cid = votes
            .iter()
            .max_by_key(|(_, (n, lead, first))| (*n, *lead, std::cmp::Reverse(*first)))
            .map(|(c, _)| (*c).to_owned());
        let ours = |r: &ServerDb| r.clustered() && r.cid == cid;
        let cluster: Vec<usize> = (0..d.members.len())
            .filter(|i| d.members[*i].end.row().is_some_and(ours))
            .collect();
        let leaders = cluster
            .iter()
            .copied()
            .filter(|i| {
                d.members[*i]
                    .end
                    .row()
                    .is_some_and(|r| r.connected && r.leader)
            })
            .collect();
        let max = |pick: fn(&super::facts::Member) -> &MemberRead| {
            d.members
                .iter()
                .filter_map(|m| clustered(pick(m)).filter(|r| r.cid == cid)?.index)
                .max()
        };
        RaftView {
            start_max: max(|m| &m.start),
            end_max: max(|m| &m.end),
            cid,
            cluster,
            leaders,
        }
    }

    /// The leader, when there is exactly one.
    pub fn leader<'a>(&self, d: &'a DbFacts) -> Option<&'a MemberRef> {
        match self.leaders.as_slice() {
            [one] => Some(&d.members[*one].who),
            _ => None,
        }
    }
}

/// Every problem, databases first (NB, SB), then the chassis, then this
/// node's own identity.
pub fn analyse(facts: &OvnFacts) -> Vec<Problem> {
    let mut out = Vec::new();
    let nodes = facts.nodes.len();
    for side in [&facts.nb, &facts.sb] {
        if let DbSide::Read(d) = side {
            analyse_db(d, nodes, facts.lag_bound, &mut out);
        }
    }
    analyse_chassis(facts, &mut out);
    out
}

fn analyse_db(d: &DbFacts, nodes: usize, lag_bound: Option<Duration>, out: &mut Vec<Problem>) {
    let db = d.db;
    let listed = d.members.len();
    let answered = d
        .members
        .iter()
        .any(|m| matches!(m.end, MemberRead::Row(_) | MemberRead::Lacks(_)));
    if !answered {
        let silent: Vec<(MemberRef, String)> = d
            .members
            .iter()
            .filter_map(|m| match &m.end {
                MemberRead::Silent(why) => Some((m.who.clone(), why.clone())),
                _ => None,
            })
            .collect();
        if !silent.is_empty() {
            out.push(Problem::Unreachable { db, silent });
        }
        return;
    }
    let view = RaftView::of(d);
    let leader = view.leader(d).cloned();
    let healthy = view
        .cluster
        .iter()
        .filter(|i| d.members[**i].end.row().is_some_and(|r| r.connected))
        .count();
    for m in &d.members {
        let member = m.who.clone();
        match &m.end {
            MemberRead::Lacks(serves) => out.push(Problem::ForeignMember {
                db,
                member,
                why: Foreign::Lacks(serves.clone()),
            }),
            MemberRead::Silent(why) => out.push(Problem::MemberDown {
                db,
                member,
                why: why.clone(),
                healthy,
                listed,
                leader: leader.clone(),
            }),
            MemberRead::Denied(_) => {}
            MemberRead::Row(r) if !r.clustered() => {
                // Spinifex runs one standalone database below three nodes;
                // anything else that is no raft member is not what it runs.
                let expected = r.model == "standalone" && nodes < RAFT_FROM_NODES && listed == 1;
                if !expected {
                    out.push(Problem::NotClustered {
                        db,
                        member,
                        model: r.model.clone(),
                        nodes,
                        listed,
                    });
                }
            }
            // Not connected first: a member still joining has no cluster
            // id yet (all zeros), and is not of another cluster.
            MemberRead::Row(r) if !r.connected => out.push(Problem::Disconnected {
                db,
                member,
                leader: leader.clone(),
            }),
            MemberRead::Row(r) if r.cid != view.cid => out.push(Problem::ForeignMember {
                db,
                member,
                why: Foreign::OtherCluster {
                    cid: r.cid.clone().unwrap_or_default(),
                    cluster: view.cid.clone().unwrap_or_default(),
                },
            }),
            MemberRead::Row(_) => {}
        }
    }
    if view.cluster.is_empty() {
        return;
    }
    match view.leaders.len() {
        0 => out.push(Problem::NoLeader {
            db,
            connected: healthy,
            listed,
        }),
        1 => {}
        _ => out.push(Problem::SeveralLeaders {
            db,
            leaders: view
                .leaders
                .iter()
                .map(|i| d.members[*i].who.clone())
                .collect(),
        }),
    }
    if let (Some(bound), Some(reference)) =
        (lag_bound.filter(|b| *b >= LAG_MIN_BOUND), view.start_max)
    {
        for i in &view.cluster {
            let m = &d.members[*i];
            let Some(r) = m.end.row().filter(|r| r.connected) else {
                continue;
            };
            if r.index.is_some_and(|x| x >= reference) {
                continue;
            }
            out.push(Problem::Lagging {
                db,
                member: m.who.clone(),
                index: r.index,
                reference,
                behind: view.end_max.zip(r.index).map(|(top, x)| top - x),
                bound,
                leader: leader.clone(),
            });
        }
    }
    let mut same_server = Vec::new();
    for (a, i) in view.cluster.iter().enumerate() {
        for j in &view.cluster[a + 1..] {
            let (x, y) = (&d.members[*i], &d.members[*j]);
            let sid = |m: &super::facts::Member| m.end.row().and_then(|r| r.sid.clone());
            if sid(x).is_some() && sid(x) == sid(y) {
                same_server.push((x.who.clone(), y.who.clone()));
            }
        }
    }
    let count_off = (nodes >= RAFT_FROM_NODES && listed != RAFT_MEMBERS) || listed == 2;
    if count_off || !same_server.is_empty() {
        out.push(Problem::MemberCount {
            db,
            listed,
            nodes,
            same_server,
        });
    }
}

fn analyse_chassis(facts: &OvnFacts, out: &mut Vec<Problem>) {
    let local = facts.local.value();
    if let (Some(node), Some(l)) = (&facts.node, local) {
        if l.system_id.as_deref() != Some(node.as_str()) {
            out.push(Problem::ChassisIdMismatch {
                node: node.clone(),
                system_id: l.system_id.clone(),
            });
        }
    }
    match &facts.chassis {
        Read::Answered { value: chassis, .. } => {
            for node in &facts.nodes {
                let this_node = facts.node.as_ref() == Some(node);
                match chassis.iter().find(|c| &c.name == node) {
                    Some(c) => {
                        if let (true, Some(l)) = (this_node, local) {
                            if l.encap_ips != c.encap_ips {
                                out.push(Problem::EncapMismatch {
                                    node: node.clone(),
                                    sb: c.encap_ips.clone(),
                                    local: l.encap_ips.clone(),
                                });
                            }
                        }
                    }
                    None => out.push(Problem::MissingChassis {
                        node: node.clone(),
                        registered_as: local
                            .filter(|_| this_node)
                            .and_then(|l| l.system_id.clone())
                            .filter(|id| id != node && chassis.iter().any(|c| &c.name == id)),
                    }),
                }
            }
            for c in chassis.iter().filter(|c| !facts.nodes.contains(&c.name)) {
                out.push(Problem::StaleChassis {
                    name: c.name.clone(),
                    hostname: c.hostname.clone(),
                    encap_ips: c.encap_ips.clone(),
                    this_nodes_id: local.and_then(|l| l.system_id.as_ref()) == Some(&c.name),
                });
            }
        }
        Read::Failed(why) => {
            // An SB no member of which answered is named once, as such.
            let sb_silent = out
                .iter()
                .any(|p| matches!(p, Problem::Unreachable { db: Db::Sb, .. }));
            if !sb_silent {
                out.push(Problem::ChassisUnread { why: why.clone() });
            }
        }
        Read::Denied(_) | Read::NotAsked => {}
    }
    if let Read::Failed(why) = &facts.local {
        out.push(Problem::LocalUnreadable { why: why.clone() });
    }
}
