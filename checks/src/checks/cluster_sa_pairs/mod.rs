//! `cluster.sa-pairs`: where IPsec is wanted, every node's outbound ESP SA
//! to another node exists on that node, with the same SPI and algorithm,
//! and no node holds SAs toward an address that is no node of the cluster.
//!
//! Each node sees only its own SA table: a count of 2×(N−1) and a reverse
//! for every SA can hold on both ends of a pair while the SPIs do not match
//! (one side rekeyed and the other did not), which drops every packet of
//! that direction. Only the two tables side by side show it. The SA lists
//! come from every node's `ipsec.xfrm` evidence (`sas`: src, dst, spi,
//! algorithm, direction, reqid; never keys).
//!
//! What pairs up is one CHILD_SA: strongSwan installs both of its SAs on
//! both ends with the same SPIs, each end under its own reqid (A's `-out-`
//! connection to B is B's `-in-` connection from A), so SPIs are matched
//! and reqids never compared. A pair of nodes that never sent each other
//! geneve holds no SA on either end; when both ends' `ipsec.xfrm` say they
//! are armed for each other (ovs-monitor-ipsec's `auto=route`), that is
//! how it should be.

mod analyse;
mod words;

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::checks::ipsec_xfrm::{SaDirection, SaEntry};
use crate::cluster::ClusterFacts;
use crate::evidence::Evidence;
use crate::finding::Finding;

pub struct ClusterSaPairs;

crate::kinds! {
    /// What `cluster.sa-pairs` can say, per ordered pair of nodes (or node) and for the check.
    pub enum SaPairsKind for "cluster.sa-pairs" {
        /// Every outbound ESP SA is on the node it points to as an inbound SA, same SPI and algorithm (a pair that never sent each other geneve holds none on either end, both armed for it).
        Ok = pass("ok"),
        /// An outbound SA is missing on the node it points to (or a node holds an inbound SA the other end does not have, or no outbound SA at all): that direction's packets are dropped.
        Unpaired = fail("unpaired"),
        /// Both ends hold the SA, but with different algorithms.
        AlgorithmMismatch = fail("algorithm-mismatch"),
        /// A node holds SAs toward an address that is no node of the cluster (a removed node: charon keeps negotiating with nobody).
        ForeignPeer = fail("foreign-peer"),
        /// The nodes disagree on whether IPsec is wanted, so the SAs expected are unknown (see cluster.config-drift).
        IpsecDisagrees = error("ipsec-disagrees"),
        /// Not every pair could be judged: a node's SA table was not read, or SAs point at addresses no answering node claims.
        NotJudged = error("not-judged"),
    }
}

static DECLARED: Declared = Declared::of::<SaPairsKind, SaPairsEvidence>();

/// Every node's SAs side by side, and what does not pair up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SaPairsEvidence {
    pub pairs_checked: usize,
    pub problems: Vec<String>,
    pub foreign: Vec<String>,
    pub unattributed: Vec<String>,
    pub unjudged: Vec<String>,
    pub sas: Vec<ReportedSa>,
}

impl Evidence for SaPairsEvidence {}

impl Check for ClusterSaPairs {
    fn id(&self) -> &'static str {
        "cluster.sa-pairs"
    }

    fn title(&self) -> &'static str {
        "Every outbound ESP SA exists on the node it points to, same SPI and algorithm"
    }

    fn explain(&self) -> &'static str {
        "Where IPsec is wanted (ipsec_enabled on every node of a cluster of more than one), \
         puts every node's SA table side by side (ipsec.xfrm evidence `sas`: src, dst, SPI, \
         algorithm, direction and reqid, dumped over netlink; never keys). For every ordered \
         pair A->B, A's outbound ESP SA (src A, dst B) must exist on B as an inbound SA with \
         the same SPI and algorithm, and B must hold no inbound SA from A that A does not \
         have: the two ends of one CHILD_SA share its SPIs, each under its own reqid (A's \
         `-out-` connection is B's `-in-`), so reqids are never compared. A pair with no SA \
         on either end passes when both ends are armed for each other (ipsec.xfrm: policies \
         demand ESP and IKE makes the SAs on the first packet). \
         No node may hold SAs toward an address that is no node of the cluster (proven only \
         when every node of the config answered). Addresses are matched to nodes by the \
         config's host/advertise and the addresses each node reports as its own.\n\
         \n\
         Skips when IPsec is not wanted (ipsec.xfrm then checks that every node holds no \
         ESP SA) or ipsec.xfrm was not selected; a node whose SA table was not read (no \
         CAP_NET_ADMIN, no answer) leaves its pairs unproven.\n\
         \n\
         Why: each node alone sees the right count of SAs and a reverse for each, yet an \
         SPI that one side rekeyed and the other did not drops every packet of that \
         direction; an SA toward a removed node keeps charon negotiating with nobody.\n\
         \n\
         Fix: `systemctl restart openvswitch-ipsec` on both nodes of a pair named \
         (ovs-monitor-ipsec re-initiates the tunnel); for a foreign peer, remove the stale \
         chassis from OVN, then restart openvswitch-ipsec on the nodes holding its SAs."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    crate::check::cluster_check!(judge);
}

/// One SA as a node reported it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportedSa {
    pub node: String,
    pub src: IpAddr,
    pub dst: IpAddr,
    pub spi: String,
    pub algorithm: Option<String>,
    pub direction: SaDirection,
    /// The reporting node's reqid for it (0 when its doctor did not say).
    #[serde(default)]
    pub reqid: u32,
}

impl ReportedSa {
    fn of(node: &str, s: SaEntry) -> ReportedSa {
        ReportedSa {
            node: node.to_owned(),
            src: s.src,
            dst: s.dst,
            spi: s.spi.to_ascii_lowercase(),
            algorithm: s.algorithm,
            direction: s.direction,
            reqid: s.reqid,
        }
    }
}

/// Judge every node's SAs side by side: `analyse` finds, `words` says.
pub fn judge(facts: &ClusterFacts) -> Finding {
    words::finding(analyse::analyse(facts))
}

#[cfg(test)]
mod tests {
    //! Recorded per-node reports: the `sas` evidence as ipsec.xfrm writes
    //! it, for the corners. Real SAs over real sshd are judged in the
    //! kernel lab (tests/kernel_lab/cluster.rs).
    use super::*;
    use crate::cluster::testing::{answer, config, facts, report};
    use crate::cluster::NodeAnswer;
    use crate::finding::Status;
    use serde_json::{json, Value};

    /// Every verdict these tests see is also checked against the schema.
    fn judge(facts: &ClusterFacts) -> Finding {
        crate::schema_check::valid("cluster.sa-pairs", super::judge(facts))
    }

    const NAMES: [&str; 3] = ["n0", "n1", "n2"];
    const ALG: &str = "rfc4106(gcm(aes))";

    fn ip(i: usize) -> String {
        format!("198.18.0.{}", i + 1)
    }

    /// The SPI of the SA `src`->`dst` of the CHILD_SA that `owner`'s
    /// `-out-` connection made (its geneve to the other end): as strongSwan
    /// installs it on both ends (any distinct value).
    fn spi(owner: usize, src: usize, dst: usize) -> String {
        format!(
            "0x{:08x}",
            0xc000_0000u32 + (owner as u32) * 256 + (src as u32) * 16 + dst as u32
        )
    }

    /// Node `me`'s reqid for the connection toward `peer`: its `-in-`
    /// connection (`out` false) or its `-out-` one. Each node numbers its
    /// own, as charon does.
    fn reqid(me: usize, peer: usize, out: bool) -> u32 {
        let mut n = 0;
        for p in (0..NAMES.len()).filter(|p| *p != me) {
            n += 2;
            if p == peer {
                break;
            }
        }
        n - u32::from(!out)
    }

    fn sa(
        src: usize,
        dst: usize,
        me: usize,
        spi: &str,
        alg: &str,
        reqid: u32,
        ports: &str,
    ) -> Value {
        json!({"src": ip(src), "dst": ip(dst), "spi": spi, "algorithm": alg,
               "direction": if src == me { "out" } else { "in" },
               "reqid": reqid, "selector": ports, "bytes": 0})
    }

    fn node(i: usize, sas: Vec<Value>, ipsec: bool) -> NodeAnswer {
        node_with(i, sas, ipsec, json!([]), json!([]))
    }

    fn node_with(
        i: usize,
        sas: Vec<Value>,
        ipsec: bool,
        armed: Value,
        pending: Value,
    ) -> NodeAnswer {
        let checks = json!([{
            "id": "ipsec.xfrm", "title": "t", "status": "pass", "summary": "s",
            "evidence": {"sa_count": sas.len(), "expected_min": 4, "expected": 8, "algorithms": [ALG], "sas": sas,
                         "missing_pairs": [], "stale_pairs": [], "pending": [], "pending_peers": pending,
                         "armed_peers": armed, "policy_count": 8, "policy_error": null,
                         "peers": null, "peer_source": "s"},
            "remediation": [], "duration_ms": 1
        }]);
        answer(
            NAMES[i],
            report(
                "0.1.0",
                config(NAMES[i], ipsec, 1500, &NAMES),
                &[&ip(i)],
                checks,
            ),
        )
    }

    /// Node i's SAs with peer j as strongSwan holds them under
    /// ovs-monitor-ipsec's layout: two CHILD_SAs, i's `-out-` (i's geneve
    /// to j, `dport 6081`, and j's replies, `sport 6081`) and j's `-out-`
    /// (which is i's `-in-`), 4 SAs; the same SPIs on both ends, each end
    /// under its own reqids.
    fn with_peer(i: usize, j: usize) -> Vec<Value> {
        // (src, dst, whose -out- CHILD_SA, its selector)
        [
            (i, j, i, "udp dport 6081"),
            (j, i, i, "udp sport 6081"),
            (j, i, j, "udp dport 6081"),
            (i, j, j, "udp sport 6081"),
        ]
        .into_iter()
        .map(|(s, d, owner, ports)| {
            sa(
                s,
                d,
                i,
                &spi(owner, s, d),
                ALG,
                reqid(i, j, owner == i),
                ports,
            )
        })
        .collect()
    }

    /// A healthy table for node i: 4 SAs with every other node.
    fn healthy(i: usize) -> Vec<Value> {
        (0..NAMES.len())
            .filter(|j| *j != i)
            .flat_map(|j| with_peer(i, j))
            .collect()
    }

    fn lab(tables: Vec<Vec<Value>>) -> ClusterFacts {
        facts(
            tables
                .into_iter()
                .enumerate()
                .map(|(i, t)| node(i, t, true))
                .collect(),
            &["ipsec.xfrm"],
        )
    }

    #[test]
    fn matching_tables_pass() {
        let tables: Vec<Vec<Value>> = (0..3).map(healthy).collect();
        // One CHILD_SA on both ends: the same SPI, each end its own reqid.
        let on = |t: &Vec<Value>, spi: &str| {
            t.iter().find(|s| s["spi"] == spi).unwrap()["reqid"].clone()
        };
        assert_ne!(on(&tables[0], &spi(0, 0, 1)), on(&tables[1], &spi(0, 0, 1)));
        let f = judge(&lab(tables));
        crate::snapshot::snapshot!("cluster.sa-pairs", f);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(f.evidence["pairs_checked"], 6);
        assert_eq!(f.evidence["sas"].as_array().unwrap().len(), 24);
        assert_eq!(f.findings[0].summary, "2 outbound SA(s), each on n1");
    }

    #[test]
    fn a_rekey_one_side_missed_is_named_with_both_spis() {
        let mut tables: Vec<Vec<Value>> = (0..3).map(healthy).collect();
        // n1 rekeyed the SA of its geneve to n2; n2 still holds the old one.
        let old = spi(1, 1, 2);
        for s in tables[1].iter_mut() {
            if s["spi"] == old.as_str() {
                s["spi"] = json!("0xdeadbeef");
            }
        }
        let f = judge(&lab(tables));
        crate::snapshot::snapshot!("cluster.sa-pairs", f);
        assert_eq!(f.status, Status::Fail);
    }

    #[test]
    fn a_missing_outbound_and_an_algorithm_mismatch() {
        let mut tables: Vec<Vec<Value>> = (0..3).map(healthy).collect();
        tables[0].retain(|s| !(s["src"] == ip(0) && s["dst"] == ip(1)));
        for s in tables[2].iter_mut() {
            if s["src"] == ip(0) {
                s["algorithm"] = json!("cbc(aes)");
            }
        }
        let f = judge(&lab(tables));
        crate::snapshot::snapshot!("cluster.sa-pairs", f);
        assert_eq!(f.status, Status::Fail);
    }

    #[test]
    fn a_pair_that_never_sent_passes_when_both_ends_are_armed() {
        // n0 and n2 never sent each other geneve (auto=route): no SA on
        // either end, each armed for the other.
        let mut tables: Vec<Vec<Value>> = (0..3).map(healthy).collect();
        tables[0].retain(|s| s["src"] != ip(2) && s["dst"] != ip(2));
        tables[2].retain(|s| s["src"] != ip(0) && s["dst"] != ip(0));
        let nodes = |armed: [Value; 3], pending: [Value; 3]| {
            facts(
                tables
                    .iter()
                    .zip(armed.into_iter().zip(pending))
                    .enumerate()
                    .map(|(i, (t, (a, p)))| node_with(i, t.clone(), true, a, p))
                    .collect(),
                &["ipsec.xfrm"],
            )
        };
        let f = judge(&nodes(
            [json!([ip(2)]), json!([]), json!([ip(0)])],
            [json!([]), json!([]), json!([])],
        ));
        crate::snapshot::snapshot!("cluster.sa-pairs", f);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert!(f.findings.iter().any(|s| s.subject == "n0->n2"
            && s.summary == "no SA yet on either end: n0 and n2 are armed for each other (made on the first packet)"));
        // Only one end armed: the other holds nothing that demands ESP.
        let f = judge(&nodes(
            [json!([ip(2)]), json!([]), json!([])],
            [json!([]), json!([]), json!([])],
        ));
        crate::snapshot::snapshot!("cluster.sa-pairs", f);
        assert_eq!(f.status, Status::Fail, "{}", f.summary);
        // n0 waits for keys toward n2 (n2's IKE is gone): named.
        let f = judge(&nodes(
            [json!([]), json!([]), json!([])],
            [json!([ip(2)]), json!([]), json!([])],
        ));
        crate::snapshot::snapshot!("cluster.sa-pairs", f);
        assert_eq!(f.status, Status::Fail);
    }

    #[test]
    fn an_sa_toward_no_node_of_the_cluster_fails_only_when_everyone_answered() {
        let mut tables: Vec<Vec<Value>> = (0..3).map(healthy).collect();
        tables[0].push(sa(0, 0, 0, "0x00000099", ALG, 9, "udp dport 6081"));
        tables[0].last_mut().unwrap()["dst"] = json!("198.18.0.99");
        let f = judge(&lab(tables.clone()));
        crate::snapshot::snapshot!("cluster.sa-pairs", f);
        assert_eq!(f.status, Status::Fail);
        // With a node of the config not selected, it may be that node's.
        let mut facts = lab(tables);
        facts.config_nodes.push("n9".into());
        let f = judge(&facts);
        crate::snapshot::snapshot!("cluster.sa-pairs", f);
        assert_eq!(f.status, Status::Error, "{}", f.summary);
    }

    #[test]
    fn reports_of_doctors_without_reqids_still_pair() {
        let tables: Vec<Vec<Value>> = (0..3)
            .map(|i| {
                healthy(i)
                    .into_iter()
                    .map(|mut s| {
                        let o = s.as_object_mut().unwrap();
                        o.remove("reqid");
                        o.remove("selector");
                        o.remove("bytes");
                        s
                    })
                    .collect()
            })
            .collect();
        let f = judge(&lab(tables));
        crate::snapshot::snapshot!("cluster.sa-pairs", f);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
    }

    #[test]
    fn ipsec_not_wanted_skips_and_disagreement_is_inconclusive() {
        let f = judge(&facts(
            (0..3).map(|i| node(i, vec![], false)).collect(),
            &["ipsec.xfrm"],
        ));
        crate::snapshot::snapshot!("cluster.sa-pairs", f);
        assert_eq!(f.status, Status::Skip);
        let f = judge(&facts(
            vec![node(0, healthy(0), true), node(1, vec![], false)],
            &["ipsec.xfrm"],
        ));
        crate::snapshot::snapshot!("cluster.sa-pairs", f);
        assert_eq!(f.status, Status::Error);
    }
}
