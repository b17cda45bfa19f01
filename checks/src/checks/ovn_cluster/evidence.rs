//! The evidence of `ovn.cluster`: what every member said, the chassis, and
//! this node's own chassis identity (which `cluster.chassis` reads from
//! every node's report), with the series they carry.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::evidence::Evidence;
use crate::metrics::{MetricDef, MetricType, Series};

use super::analyse::RaftView;
use super::facts::{DbFacts, MemberRead, OvnFacts, Read};

/// Every member of one database as it answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaftEvidence {
    /// `OVN_Northbound` or `OVN_Southbound`.
    pub db: String,
    /// The list asked, comma-separated.
    pub endpoints: String,
    /// The cluster id most members answered with.
    pub cid: Option<String>,
    /// The one leader's endpoint (null: none, or more than one).
    pub leader: Option<String>,
    pub members: Vec<MemberEvidence>,
}

/// One member, at the end of the window (and its index at the start).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberEvidence {
    pub endpoint: String,
    /// The config node at its address, when one is.
    pub node: Option<String>,
    pub answered: bool,
    /// Why it did not answer, or what it serves instead.
    pub error: Option<String>,
    pub model: Option<String>,
    pub connected: Option<bool>,
    pub leader: Option<bool>,
    /// The last log entry it applied, at the end of the window.
    pub index: Option<u64>,
    /// The same at the start of the window.
    pub index_at_start: Option<u64>,
    /// Entries behind the most advanced member, at the end.
    pub behind: Option<u64>,
    pub cid: Option<String>,
    pub sid: Option<String>,
}

/// One SB chassis.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChassisEvidence {
    pub name: String,
    pub hostname: Option<String>,
    pub encap_ips: Vec<IpAddr>,
    /// Whether a `[nodes.*]` of the config has its name.
    pub of_a_node: bool,
}

/// This node's own chassis identity, from its Open_vSwitch database.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalEvidence {
    /// This node's name (the config's `node`).
    pub node: Option<String>,
    /// The Open_vSwitch endpoint read.
    pub endpoint: String,
    /// `external_ids:system-id`: its chassis id.
    pub system_id: Option<String>,
    /// `external_ids:ovn-encap-ip`.
    pub encap_ips: Vec<IpAddr>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OvnClusterEvidence {
    /// In a cluster run, the node that read NB and SB when it is another
    /// (this node then judged only its own identity); null otherwise.
    pub read_by: Option<String>,
    pub nb: Option<RaftEvidence>,
    pub sb: Option<RaftEvidence>,
    /// At least this long passed between the two readings: the bound a
    /// lagging member is named against (judged from 500 ms).
    pub lag_bound_ms: Option<u64>,
    /// The config's `[nodes.*]`: one chassis each.
    pub nodes: Vec<String>,
    /// Every SB chassis; null when not read here.
    pub chassis: Option<Vec<ChassisEvidence>>,
    /// The SB member the chassis were read from.
    pub chassis_read_from: Option<String>,
    /// Null when this node's Open_vSwitch could not be read.
    pub local: Option<LocalEvidence>,
}

static MEMBER_UP: MetricDef = MetricDef {
    name: "spx_doctor_ovn_raft_member_up",
    help: "1 when the OVN database member answered and is connected to the list's cluster (or is the standalone database), else 0.",
    kind: MetricType::Gauge,
    labels: &["db", "member"],
};

static LEADERS: MetricDef = MetricDef {
    name: "spx_doctor_ovn_raft_leaders",
    help: "Members of the OVN database's cluster that say they lead (1 is healthy).",
    kind: MetricType::Gauge,
    labels: &["db"],
};

static LAG: MetricDef = MetricDef {
    name: "spx_doctor_ovn_raft_member_lag_entries",
    help: "Raft log entries the member has applied fewer of than the most advanced member.",
    kind: MetricType::Gauge,
    labels: &["db", "member"],
};

static CHASSIS: MetricDef = MetricDef {
    name: "spx_doctor_ovn_sb_chassis",
    help: "Chassis in the OVN southbound database.",
    kind: MetricType::Gauge,
    labels: &[],
};

impl Evidence for OvnClusterEvidence {
    const METRICS: &'static [&'static MetricDef] = &[&MEMBER_UP, &LEADERS, &LAG, &CHASSIS];

    fn series(&self) -> Vec<Series> {
        let mut out = Vec::new();
        for raft in [&self.nb, &self.sb].into_iter().flatten() {
            let mut leaders = 0;
            for m in &raft.members {
                let ours = m.model.as_deref() == Some("standalone") || m.cid == raft.cid;
                let up = m.connected == Some(true) && ours;
                leaders += usize::from(up && m.leader == Some(true));
                let labels = vec![raft.db.clone(), m.endpoint.clone()];
                out.push(Series::labelled(
                    &MEMBER_UP,
                    labels.clone(),
                    f64::from(u8::from(up)),
                ));
                if let Some(b) = m.behind {
                    out.push(Series::labelled(&LAG, labels, b as f64));
                }
            }
            out.push(Series::labelled(
                &LEADERS,
                vec![raft.db.clone()],
                leaders as f64,
            ));
        }
        if let Some(c) = &self.chassis {
            out.push(Series::of(&CHASSIS, c.len() as f64));
        }
        out
    }
}

fn read_error(r: &MemberRead) -> Option<String> {
    match r {
        MemberRead::Row(_) => None,
        MemberRead::Lacks(serves) => Some(format!(
            "serves {}",
            if serves.is_empty() {
                "no database".to_owned()
            } else {
                serves.join(", ")
            }
        )),
        MemberRead::Silent(why) => Some(why.clone()),
        MemberRead::Denied(needs) => Some(format!("needs {needs}")),
    }
}

fn raft(d: &DbFacts) -> RaftEvidence {
    let view = RaftView::of(d);
    let members = d
        .members
        .iter()
        .map(|m| {
            let row = m.end.row();
            MemberEvidence {
                endpoint: m.who.endpoint.to_string(),
                node: m.who.node.clone(),
                answered: !matches!(m.end, MemberRead::Silent(_) | MemberRead::Denied(_)),
                error: read_error(&m.end),
                model: row.map(|r| r.model.clone()),
                connected: row.map(|r| r.connected),
                leader: row.map(|r| r.leader),
                index: row.and_then(|r| r.index),
                index_at_start: m.start.row().and_then(|r| r.index),
                behind: view
                    .end_max
                    .zip(row.and_then(|r| r.index))
                    .map(|(top, i)| top.saturating_sub(i)),
                cid: row.and_then(|r| r.cid.clone()),
                sid: row.and_then(|r| r.sid.clone()),
            }
        })
        .collect();
    RaftEvidence {
        db: d.db.name().to_owned(),
        endpoints: d.list(),
        cid: view.cid.clone(),
        leader: view.leader(d).map(|l| l.endpoint.to_string()),
        members,
    }
}

impl OvnClusterEvidence {
    pub fn of(facts: &OvnFacts) -> OvnClusterEvidence {
        let (chassis, chassis_read_from) = match &facts.chassis {
            Read::Answered { value, from } => (
                Some(
                    value
                        .iter()
                        .map(|c| ChassisEvidence {
                            name: c.name.clone(),
                            hostname: c.hostname.clone(),
                            encap_ips: c.encap_ips.clone(),
                            of_a_node: facts.nodes.contains(&c.name),
                        })
                        .collect(),
                ),
                Some(from.to_string()),
            ),
            _ => (None, None),
        };
        OvnClusterEvidence {
            read_by: facts.read_by().map(str::to_owned),
            nb: facts.nb.read().map(raft),
            sb: facts.sb.read().map(raft),
            lag_bound_ms: facts.lag_bound.map(|b| b.as_millis() as u64),
            nodes: facts.nodes.clone(),
            chassis,
            chassis_read_from,
            local: match &facts.local {
                Read::Answered { value, from } => Some(LocalEvidence {
                    node: facts.node.clone(),
                    endpoint: from.to_string(),
                    system_id: value.system_id.clone(),
                    encap_ips: value.encap_ips.clone(),
                }),
                _ => None,
            },
        }
    }
}
