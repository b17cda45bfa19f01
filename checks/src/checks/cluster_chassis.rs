//! `cluster.chassis`: every node's southbound chassis is registered where
//! the node's own Open_vSwitch says.
//!
//! In a cluster run one node reads OVN for the cluster (`ovn_read_by`),
//! and only it sees the SB `Chassis` table; every node reads only its own
//! Open_vSwitch (`external_ids:system-id`, its chassis id, and
//! `ovn-encap-ip`). Both land in `ovn.cluster`'s evidence of each report,
//! and only side by side do they say whether each node's chassis carries
//! the address its tunnels must reach. The judgement is pure
//! ([`analyse`]); the words of a missing or misplaced chassis are
//! `ovn.cluster`'s own ([`words`](crate::checks::ovn_cluster::words)).

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::checks::ovn_cluster::words::{
    encap_mismatch_fix, encap_mismatch_text, ips, missing_chassis_fix,
};
use crate::checks::ovn_cluster::OvnClusterEvidence;
use crate::cluster::{self, and_list, ClusterFacts};
use crate::evidence::Evidence;
use crate::finding::{Finding, SkipReason, Status, Subject};
use crate::kind::most_severe;

pub struct ClusterChassis;

crate::kinds! {
    /// What `cluster.chassis` can say, per node and for the check.
    pub enum ClusterChassisKind for "cluster.chassis" {
        /// Every node's chassis (by its system-id) is in SB at the addresses its own Open_vSwitch ovn-encap-ip gives.
        Ok = pass("ok"),
        /// A node's chassis id (its Open_vSwitch system-id) has no SB chassis: its ovn-controller has not registered.
        MissingChassis = fail("missing-chassis"),
        /// A node's SB chassis carries other tunnel addresses than its own ovn-encap-ip: the others send its tunnels elsewhere.
        EncapMismatch = fail("encap-mismatch"),
        /// Not every node could be judged: the SB chassis were not read (the node reading OVN did not answer, or could not read SB), or a node's own identity is unknown (it did not answer, or its Open_vSwitch could not be read).
        NotJudged = error("not-judged"),
    }
}

static DECLARED: Declared = Declared::of::<ClusterChassisKind, ClusterChassisEvidence>();

/// One node: its own identity beside what SB holds for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeChassis {
    pub node: String,
    /// Its Open_vSwitch `external_ids:system-id` (its chassis id).
    pub system_id: Option<String>,
    /// Its Open_vSwitch `external_ids:ovn-encap-ip`.
    pub local_encap_ips: Vec<IpAddr>,
    /// The encaps of the SB chassis of that id; null when there is none.
    pub sb_encap_ips: Option<Vec<IpAddr>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterChassisEvidence {
    /// The node whose report carries the SB chassis.
    pub read_by: Option<String>,
    /// Every node judged.
    pub nodes: Vec<NodeChassis>,
    /// Why a node could not be judged.
    pub unjudged: Vec<String>,
}

impl Evidence for ClusterChassisEvidence {}

impl Check for ClusterChassis {
    fn id(&self) -> &'static str {
        "cluster.chassis"
    }

    fn title(&self) -> &'static str {
        "Every node's SB chassis carries the encap IP its own Open_vSwitch gives"
    }

    fn explain(&self) -> &'static str {
        "Puts every node's own chassis identity (its Open_vSwitch external_ids:system-id \
         and ovn-encap-ip, from its ovn.cluster evidence) beside the southbound Chassis \
         table that the one node reading OVN for the cluster saw (its ovn.cluster \
         evidence): each node's chassis, found by its system-id, must exist and carry \
         exactly the addresses of its ovn-encap-ip. Only the cluster run sees both: a \
         node reads only its own Open_vSwitch, and only one node reads SB. Skips when \
         ovn.cluster was not selected or no SB is named; a node that did not answer, or \
         whose Open_vSwitch could not be read, is not judged (an error, never a pass).\n\
         \n\
         Why: a chassis registered at an old address (a renumbered node, an \
         ovn-controller that has not re-registered) sends every tunnel to that node \
         elsewhere: its guests lose the overlay while the node itself looks healthy.\n\
         \n\
         Fix: on the node named, `ovs-vsctl get Open_vSwitch . external_ids:ovn-encap-ip` \
         must be its overlay address; `systemctl restart ovn-controller` re-registers the \
         chassis from it. A missing chassis: `systemctl status ovn-controller`, its \
         system-id and ovn-remote, then restart it."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    crate::check::cluster_check!(judge);
}

/// What the reports say: the SB chassis (from the node that read them)
/// and every node's own identity.
#[derive(Clone, Debug, PartialEq)]
pub struct ChassisFacts {
    /// The node that read SB, and what it read: (name, hostname-less
    /// chassis as (id, encaps)), the SB list as `--db` takes it.
    pub sb: Result<SbView, String>,
    /// Per selected node: its identity, or why it is unknown.
    pub nodes: Vec<(String, Result<Identity, String>)>,
}

/// The SB chassis as the reading node reported them.
#[derive(Clone, Debug, PartialEq)]
pub struct SbView {
    pub read_by: String,
    pub chassis: Vec<(String, Vec<IpAddr>)>,
    /// The SB members, quoted for `--db`.
    pub db: String,
}

/// A node's own chassis identity.
#[derive(Clone, Debug, PartialEq)]
pub struct Identity {
    pub system_id: Option<String>,
    pub encap_ips: Vec<IpAddr>,
}

/// One thing wrong.
#[derive(Clone, Debug, PartialEq)]
pub enum Problem {
    Missing {
        node: String,
        id: String,
    },
    Encap {
        node: String,
        sb: Vec<IpAddr>,
        local: Vec<IpAddr>,
    },
    NotJudged {
        node: Option<String>,
        why: String,
    },
}

/// Read the reports. `Err`: the check skips, with that reason.
pub fn facts(cf: &ClusterFacts) -> Result<ChassisFacts, SkipReason> {
    if !cf.selected("ovn.cluster") {
        return Err(SkipReason::NotApplicable(
            "ovn.cluster was not selected (--check/--skip), so no node read its chassis identity or SB"
                .into(),
        ));
    }
    let evidence = |n: &cluster::NodeAnswer| n.evidence::<OvnClusterEvidence>("ovn.cluster");
    let reader = cf
        .answered()
        .find(|n| evidence(n).is_some_and(|e| e.read_by.is_none()));
    let told = cf
        .answered()
        .find_map(|n| evidence(n).and_then(|e| e.read_by));
    let sb = match reader {
        Some(n) => {
            let e = evidence(n).expect("found by its evidence");
            match (e.chassis, e.sb) {
                (Some(chassis), Some(sb)) => Ok(SbView {
                    read_by: n.name.clone(),
                    chassis: chassis.into_iter().map(|c| (c.name, c.encap_ips)).collect(),
                    db: format!("\"{}\"", sb.endpoints),
                }),
                (_, None) => {
                    // SB named nowhere: nothing to compare with.
                    let why = n
                        .check("ovn.cluster")
                        .map_or_else(String::new, |c| c.summary.clone());
                    return Err(SkipReason::NotApplicable(format!(
                        "{} read no SB ({why})",
                        n.name
                    )));
                }
                (None, Some(_)) => Err(format!(
                    "{} could not read the SB chassis: {}",
                    n.name,
                    n.check("ovn.cluster").map_or("", |c| c.summary.as_str())
                )),
            }
        }
        None => Err(match told {
            Some(r) => format!("{r}, which reads OVN for the cluster, gave no ovn.cluster result"),
            None => "no node read OVN SB".to_owned(),
        }),
    };
    let nodes = cf
        .nodes
        .iter()
        .map(|n| {
            let id = match (&n.report, evidence(n)) {
                (Err(e), _) => Err(format!("{} did not answer ({})", n.name, e.kind.as_str())),
                (Ok(_), Some(OvnClusterEvidence { local: Some(l), .. })) => Ok(Identity {
                    system_id: l.system_id,
                    encap_ips: l.encap_ips,
                }),
                (Ok(_), _) => Err(format!(
                    "{}'s own Open_vSwitch was not read ({})",
                    n.name,
                    n.check("ovn.cluster")
                        .map_or("no ovn.cluster result", |c| c.summary.as_str())
                )),
            };
            (n.name.clone(), id)
        })
        .collect();
    Ok(ChassisFacts { sb, nodes })
}

/// Every problem, node by node.
pub fn analyse(f: &ChassisFacts) -> Vec<Problem> {
    let sb = match &f.sb {
        Ok(sb) => sb,
        Err(why) => {
            return vec![Problem::NotJudged {
                node: None,
                why: why.clone(),
            }]
        }
    };
    let mut out = Vec::new();
    for (node, id) in &f.nodes {
        let id = match id {
            Ok(id) => id,
            Err(why) => {
                out.push(Problem::NotJudged {
                    node: Some(node.clone()),
                    why: why.clone(),
                });
                continue;
            }
        };
        // The chassis is the system-id's (Spinifex pins it to the node
        // name; ovn.cluster on the node names a difference).
        let chassis_id = id.system_id.clone().unwrap_or_else(|| node.clone());
        match sb.chassis.iter().find(|(name, _)| *name == chassis_id) {
            None => out.push(Problem::Missing {
                node: node.clone(),
                id: chassis_id,
            }),
            Some((_, encaps)) if *encaps != id.encap_ips => out.push(Problem::Encap {
                node: node.clone(),
                sb: encaps.clone(),
                local: id.encap_ips.clone(),
            }),
            Some(_) => {}
        }
    }
    out
}

pub fn judge(cf: &ClusterFacts) -> Finding {
    let f = match facts(cf) {
        Ok(f) => f,
        Err(why) => return Finding::skip(why),
    };
    let problems = analyse(&f);
    let db =
        f.sb.as_ref()
            .map_or_else(|_| "<ovn_sb_addr>".to_owned(), |s| s.db.clone());
    let mut subjects = Vec::new();
    let mut texts = Vec::new();
    let mut fixes = Vec::new();
    let mut kinds = Vec::new();
    for p in &problems {
        let (kind, subject, text, fix) = match p {
            Problem::Missing { node, id } => (
                ClusterChassisKind::MissingChassis,
                node.clone(),
                if id == node {
                    format!("{node} has no SB chassis: its ovn-controller has not registered")
                } else {
                    format!("{node}'s chassis {id:?} (its system-id) is not in SB")
                },
                Some(missing_chassis_fix(node, &db)),
            ),
            Problem::Encap { node, sb, local } => (
                ClusterChassisKind::EncapMismatch,
                node.clone(),
                encap_mismatch_text(node, sb, local),
                Some(encap_mismatch_fix(node, &db)),
            ),
            Problem::NotJudged { node, why } => (
                ClusterChassisKind::NotJudged,
                node.clone().unwrap_or_else(|| "SB Chassis".into()),
                why.clone(),
                None,
            ),
        };
        kinds.push(kind);
        subjects.push(Subject::new(kind, subject, text.clone()));
        texts.push(text);
        fixes.extend(fix);
    }
    let mut nodes = Vec::new();
    if let Ok(sb) = &f.sb {
        for (node, id) in &f.nodes {
            let Ok(id) = id else { continue };
            let chassis_id = id.system_id.clone().unwrap_or_else(|| node.clone());
            let found = sb.chassis.iter().find(|(n, _)| *n == chassis_id);
            let sb_encap_ips = found.map(|(_, e)| e.clone());
            if !problems.iter().any(|p| matches!(p, Problem::Missing { node: n, .. } | Problem::Encap { node: n, .. } if n == node)) {
                subjects.push(Subject::new(
                    ClusterChassisKind::Ok,
                    node.clone(),
                    format!("chassis {chassis_id}, encap {}", ips(&id.encap_ips)),
                ));
            }
            nodes.push(NodeChassis {
                node: node.clone(),
                system_id: id.system_id.clone(),
                local_encap_ips: id.encap_ips.clone(),
                sb_encap_ips,
            });
        }
    }
    let evidence = ClusterChassisEvidence {
        read_by: f.sb.as_ref().ok().map(|s| s.read_by.clone()),
        nodes,
        unjudged: problems
            .iter()
            .filter_map(|p| match p {
                Problem::NotJudged { why, .. } => Some(why.clone()),
                _ => None,
            })
            .collect(),
    };
    let finding = match most_severe(kinds.iter().copied()) {
        Some(kind) => Finding::new(kind, texts.join("; ")).fixes(fixes),
        None => {
            let ok: Vec<String> = subjects
                .iter()
                .filter(|s| s.status() == Status::Pass)
                .map(|s| format!("{} ({})", s.subject, s.summary))
                .collect();
            Finding::new(
                ClusterChassisKind::Ok,
                format!(
                    "every node's SB chassis (read by {}) carries the encap its own Open_vSwitch gives: {}",
                    evidence.read_by.as_deref().unwrap_or("?"),
                    and_list(&ok)
                ),
            )
        }
    };
    finding.evidence(&evidence).subjects(subjects)
}

#[cfg(test)]
mod tests {
    //! Node reports as ovn.cluster writes them (its evidence, typed), for
    //! the corners; the real thing over sshd is tests/cluster_verdicts.rs.
    use serde_json::{json, Value};

    use super::{judge as judged, ClusterChassisEvidence};
    use crate::checks::ovn_cluster::evidence::{ChassisEvidence, LocalEvidence, RaftEvidence};
    use crate::checks::ovn_cluster::OvnClusterEvidence;
    use crate::cluster::testing::{answer, config, facts, report, unreached};
    use crate::cluster::{ClusterFacts, NodeAnswer, UnreachedKind};
    use crate::finding::{Finding, Status};

    const NAMES: [&str; 3] = ["n0", "n1", "n2"];
    const SB: &str = "tcp:198.18.9.1:6642,tcp:198.18.9.2:6642,tcp:198.18.9.3:6642";

    fn judge(f: &ClusterFacts) -> Finding {
        crate::schema_check::valid("cluster.chassis", judged(f))
    }

    fn encap(i: usize) -> String {
        format!("198.18.0.{}", i + 1)
    }

    /// Node i's ovn.cluster evidence: n0 reads OVN (the SB chassis given),
    /// the others only their own identity.
    fn evidence(i: usize, chassis: &[(&str, &str)], system_id: &str, local: &str) -> Value {
        let reader = i == 0;
        let e = OvnClusterEvidence {
            read_by: (!reader).then(|| "n0".to_owned()),
            nb: None,
            sb: reader.then(|| RaftEvidence {
                db: "OVN_Southbound".into(),
                endpoints: SB.into(),
                cid: None,
                leader: None,
                members: vec![],
            }),
            lag_bound_ms: None,
            nodes: NAMES.iter().map(|s| s.to_string()).collect(),
            chassis: reader.then(|| {
                chassis
                    .iter()
                    .map(|(name, ip)| ChassisEvidence {
                        name: (*name).into(),
                        hostname: None,
                        encap_ips: vec![ip.parse().unwrap()],
                        of_a_node: NAMES.contains(name),
                    })
                    .collect()
            }),
            chassis_read_from: None,
            local: Some(LocalEvidence {
                node: Some(NAMES[i].into()),
                endpoint: "unix:/var/run/openvswitch/db.sock".into(),
                system_id: Some(system_id.into()),
                encap_ips: vec![local.parse().unwrap()],
            }),
        };
        serde_json::to_value(e).unwrap()
    }

    fn node(i: usize, evidence: Value) -> NodeAnswer {
        let checks = json!([{
            "id": "ovn.cluster", "title": "t", "status": "pass", "summary": "s",
            "evidence": evidence, "remediation": [], "duration_ms": 1
        }]);
        answer(
            NAMES[i],
            report("0.1.0", config(NAMES[i], true, 1500, &NAMES), &[], checks),
        )
    }

    fn sb() -> Vec<(&'static str, String)> {
        NAMES
            .iter()
            .enumerate()
            .map(|(i, n)| (*n, encap(i)))
            .collect()
    }

    fn cluster(chassis: &[(&str, String)], ids: [(&str, String); 3]) -> ClusterFacts {
        let chassis: Vec<(&str, &str)> = chassis.iter().map(|(n, ip)| (*n, ip.as_str())).collect();
        let nodes = ids
            .iter()
            .enumerate()
            .map(|(i, (id, ip))| node(i, evidence(i, &chassis, id, ip)))
            .collect();
        facts(nodes, &["ovn.cluster"])
    }

    fn ids() -> [(&'static str, String); 3] {
        [("n0", encap(0)), ("n1", encap(1)), ("n2", encap(2))]
    }

    #[test]
    fn every_nodes_chassis_where_its_own_ovs_says_passes() {
        let v = judge(&cluster(&sb(), ids()));
        crate::snapshot::snapshot!("cluster.chassis", v);
        assert_eq!(v.status, Status::Pass, "{}", v.summary);
        assert_eq!(
            v.summary,
            "every node's SB chassis (read by n0) carries the encap its own Open_vSwitch gives: \
             n0 (chassis n0, encap 198.18.0.1), n1 (chassis n1, encap 198.18.0.2) and n2 (chassis n2, encap 198.18.0.3)"
        );
        let e: ClusterChassisEvidence = v.evidence_as().unwrap();
        assert_eq!(e.nodes.len(), 3);
    }

    #[test]
    fn a_chassis_at_an_old_address_is_named_from_the_nodes_own_report() {
        let mut ids = ids();
        ids[2].1 = "198.18.0.30".into();
        let v = judge(&cluster(&sb(), ids));
        crate::snapshot::snapshot!("cluster.chassis", v);
        assert_eq!(v.kind.name, "encap-mismatch");
        assert_eq!(
            v.summary,
            "n2's SB chassis has encap 198.18.0.3, but its own Open_vSwitch says ovn-encap-ip 198.18.0.30: \
             the other nodes send n2's tunnels to the wrong address"
        );
        let e: ClusterChassisEvidence = v.evidence_as().unwrap();
        assert_eq!(
            e.nodes[2].sb_encap_ips.as_ref().unwrap()[0].to_string(),
            "198.18.0.3"
        );
    }

    #[test]
    fn a_chassis_is_found_by_the_nodes_system_id() {
        // n1 registered under its package-generated id: found by it (its
        // own ovn.cluster names the id), not missing here.
        let mut chassis = sb();
        chassis[1].0 = "4d1e3c1a";
        let mut ids = ids();
        ids[1].0 = "4d1e3c1a";
        assert_eq!(judge(&cluster(&chassis, ids.clone())).status, Status::Pass);
        // Not registered at all.
        chassis.remove(1);
        let v = judge(&cluster(&chassis, ids));
        crate::snapshot::snapshot!("cluster.chassis", v);
        assert_eq!(v.kind.name, "missing-chassis");
        assert_eq!(
            v.summary,
            "n1's chassis \"4d1e3c1a\" (its system-id) is not in SB"
        );
    }

    #[test]
    fn a_node_without_a_report_or_the_reader_without_sb_is_not_judged() {
        let mut f = cluster(&sb(), ids());
        f.nodes[1] = unreached("n1", UnreachedKind::ConnectionRefused, "");
        let v = judge(&f);
        crate::snapshot::snapshot!("cluster.chassis", v);
        assert_eq!((v.status, v.kind.name), (Status::Error, "not-judged"));
        assert_eq!(v.summary, "n1 did not answer (connection refused)");

        // The reader could not read the chassis (SB named, not answering).
        let mut e = evidence(0, &[], "n0", &encap(0));
        e["chassis"] = Value::Null;
        let mut f = cluster(&sb(), ids());
        f.nodes[0] = node(0, e);
        let v = judge(&f);
        crate::snapshot::snapshot!("cluster.chassis", v);
        assert_eq!(v.kind.name, "not-judged");

        // The reader itself did not answer.
        let mut f = cluster(&sb(), ids());
        f.nodes[0] = unreached("n0", UnreachedKind::TimedOut, "");
        let v = judge(&f);
        crate::snapshot::snapshot!("cluster.chassis", v);
        assert_eq!(
            v.summary,
            "n0, which reads OVN for the cluster, gave no ovn.cluster result"
        );
    }

    #[test]
    fn without_ovn_cluster_or_an_sb_it_skips() {
        let mut f = cluster(&sb(), ids());
        f.node_checks.clear();
        assert_eq!(judge(&f).status, Status::Skip);
        let mut e = evidence(0, &[], "n0", &encap(0));
        e["sb"] = Value::Null;
        e["chassis"] = Value::Null;
        let mut f = cluster(&sb(), ids());
        f.nodes[0] = node(0, e);
        let v = judge(&f);
        crate::snapshot::snapshot!("cluster.chassis", v);
        assert_eq!(v.status, Status::Skip, "{}", v.summary);
    }
}
