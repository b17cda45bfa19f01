//! `cluster.config-drift`: `ipsec_enabled`, `underlay_mtu`, the set of
//! `[nodes.*]` names, the site's own checks (doctor.d) and the doctor's
//! version are the same on every node.
//!
//! The guest MTU and multiqueue follow `ipsec_enabled` on each node on its
//! own, so one node left behind after a change gives its guests an MTU the
//! rest of the overlay does not carry; a node with a different node list
//! expects SAs to nodes the others never set up. Each node reports the
//! config it ran with (`config` in JSON v1); this check names the odd ones
//! out and their values.

mod analyse;
mod words;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::check::{Check, Declared};
use crate::cluster::ClusterFacts;
use crate::evidence::Evidence;
use crate::finding::Finding;
use crate::spinifex;

pub use words::ipsec_ca_drift;

pub struct ClusterConfigDrift;

crate::kinds! {
    /// What `cluster.config-drift` can say, per node and for the check.
    pub enum ConfigDriftKind for "cluster.config-drift" {
        /// ipsec_enabled, underlay_mtu, the [nodes.*] names and the doctor's version are the same on every node.
        Ok = pass("ok"),
        /// ipsec_enabled differs between nodes: their guests get different MTUs and multiqueue, and one side expects SAs the other never sets up.
        IpsecEnabledDrift = fail("ipsec-enabled-drift"),
        /// underlay_mtu differs between nodes: some guests get an MTU the fabric between them and the rest does not carry.
        UnderlayMtuDrift = fail("underlay-mtu-drift"),
        /// The [nodes.*] tables differ between nodes: SAs and peers nobody else expects.
        NodeListDrift = fail("node-list-drift"),
        /// The nodes' IPsec CAs differ (ipsec.cert's CA, by subject and public key): IKE between nodes of different CAs fails with AUTHENTICATION_FAILED.
        IpsecCaDrift = fail("ipsec-ca-drift"),
        /// A node did not answer or reported no config, so whether the configs agree is unknown.
        ConfigUnknown = error("config-unknown"),
        /// The nodes' site checks (doctor.d: each id and its executable's SHA-256) differ: a preflight or a monitor gates on checks some nodes do not run, or run otherwise.
        SiteChecksDrift = warn("site-checks-drift"),
        /// The configs agree, but the nodes run different versions of the doctor.
        VersionDrift = warn("version-drift"),
    }
}

static DECLARED: Declared = Declared::of::<ConfigDriftKind, ConfigDriftEvidence>();

/// Every node's settings, and the ones that differ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigDriftEvidence {
    /// By node: each compared setting's value (null when not reported).
    pub configs: BTreeMap<String, BTreeMap<String, Value>>,
    pub drift: Vec<Drift>,
    pub unanswered: Vec<String>,
    pub without_config: Vec<String>,
}

/// One setting that differs, and which nodes have which value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    pub key: String,
    /// Largest group first.
    pub values: Vec<DriftValue>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DriftValue {
    pub value: Value,
    pub nodes: Vec<String>,
}

impl Evidence for ConfigDriftEvidence {}

impl Check for ClusterConfigDrift {
    fn id(&self) -> &'static str {
        "cluster.config-drift"
    }

    fn title(&self) -> &'static str {
        "Every node runs the same ipsec_enabled, underlay_mtu, node list and doctor"
    }

    fn explain(&self) -> &'static str {
        // The fix's words are the ones a finding names ([`words`]).
        static EXPLAIN: OnceLock<String> = OnceLock::new();
        EXPLAIN.get_or_init(|| {
            format!(
                "Compares what every node's report says it ran with (JSON v1 `config`: [network] \
         ipsec_enabled and underlay_mtu as the node's spinifex.toml has them, the names of \
         its [nodes.*] tables), the IPsec CA its ipsec.cert read (by subject and public key; \
         nodes where ipsec.cert did not read one are left out) and the doctor's version \
         (`tool.version`), and the site checks each node has (doctor.d: each id and its \
         executable's SHA-256). Names the odd node(s) and their values against the rest.\n\
         \n\
         Fails when ipsec_enabled, underlay_mtu, the node list or the IPsec CA differ (IKE \
         between nodes of different CAs fails); a different doctor \
         version or a different set of site checks is a warning. A node that did not answer leaves the check \
         inconclusive unless the others already disagree.\n\
         \n\
         Why: the guest MTU (1408 with IPsec, 1442 without, at 1500) and multiqueue follow \
         ipsec_enabled on each node by itself. Turning IPsec off on three nodes of four \
         gives the fourth's guests 1408 while the others send 1442; raising underlay_mtu on \
         some nodes only gives their guests an MTU the fabric between them and the rest \
         does not carry; a node list that differs means SAs and peers nobody expects.\n\
         \n\
         Fix: make the value the same in {} on every node, {}, and {}.",
                spinifex::CONFIG_PATH,
                words::apply_on_changed(),
                words::RESTART_GUESTS
            )
        })
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    crate::check::cluster_check!(judge);
}

/// Compare every node's settings and IPsec CA: `analyse` finds, `words`
/// says.
pub fn judge(facts: &ClusterFacts) -> Finding {
    words::finding(analyse::analyse(facts))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::ipsec_ca_drift;
    use crate::cluster::testing::{answer, config, facts, report, unreached};
    use crate::cluster::{ClusterFacts, NodeAnswer, UnreachedKind};
    use crate::finding::{Finding, Status};

    /// Every verdict these tests see is also checked against the schema.
    fn judge(facts: &ClusterFacts) -> Finding {
        crate::schema_check::valid("cluster.config-drift", super::judge(facts))
    }

    const ALL: &[&str] = &["n0", "n1", "n2", "n3"];

    fn node(name: &str, ipsec: bool, mtu: u32, version: &str) -> NodeAnswer {
        answer(
            name,
            report(version, config(name, ipsec, mtu, ALL), &[], json!([])),
        )
    }

    #[test]
    fn the_same_everywhere_passes() {
        let f = judge(&facts(
            ALL.iter().map(|n| node(n, true, 9000, "0.1.0")).collect(),
            &[],
        ));
        crate::snapshot::snapshot!("cluster.config-drift", f);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(
            f.summary,
            "all 4 nodes run the same config: ipsec_enabled = true, underlay_mtu = 9000, [nodes.*] n0, n1, n2, n3, spx-doctor 0.1.0"
        );
    }

    #[test]
    fn one_flipped_ipsec_enabled_is_named() {
        let f = judge(&facts(
            vec![
                node("n0", true, 1500, "0.1.0"),
                node("n1", true, 1500, "0.1.0"),
                node("n2", false, 1500, "0.1.0"),
                node("n3", true, 1500, "0.1.0"),
            ],
            &[],
        ));
        crate::snapshot::snapshot!("cluster.config-drift", f);
        assert_eq!(f.status, Status::Fail);
        assert_eq!(
            f.summary,
            "the nodes' configs disagree: ipsec_enabled: n2 has ipsec_enabled = false (the other 3 have ipsec_enabled = true)"
        );
        // Read as English: "its value", never "its's".
        assert_eq!(
            f.remediation[0],
            "on n2: set `ipsec_enabled = true` under [network] in /etc/spinifex/spinifex.toml (or the others to its value, whichever is intended), then `systemctl restart spinifex-daemon` on the nodes changed and stop and start their guests"
        );
        assert_eq!(f.evidence["drift"][0]["values"][1]["nodes"], json!(["n2"]));
    }

    #[test]
    fn the_fix_for_several_odd_nodes_says_their_value() {
        let names = ["n0", "n1", "n2", "n3", "n4"];
        let two = judge(&facts(
            names
                .iter()
                .map(|n| {
                    let mtu = if *n == "n1" || *n == "n3" { 1500 } else { 9000 };
                    answer(
                        n,
                        report("0.1.0", config(n, true, mtu, &names), &[], json!([])),
                    )
                })
                .collect(),
            &[],
        ));
        crate::snapshot::snapshot!("cluster.config-drift", two);
        let text = two.remediation.join("\n");
        assert!(!text.contains("their's"), "{text}");
    }

    #[test]
    fn an_even_split_names_both_sides() {
        let f = judge(&facts(
            vec![
                node("n0", true, 1500, "0.1.0"),
                node("n1", true, 9000, "0.1.0"),
            ],
            &[],
        ));
        crate::snapshot::snapshot!("cluster.config-drift", f);
        assert_eq!(f.status, Status::Fail);
    }

    #[test]
    fn a_different_node_list_and_version() {
        let mut odd = report(
            "0.0.9",
            config("n1", true, 1500, &["n0", "n1"]),
            &[],
            json!([]),
        );
        odd["tool"]["version"] = json!("0.0.9");
        let f = judge(&facts(
            vec![
                node("n0", true, 1500, "0.1.0"),
                answer("n1", odd),
                node("n2", true, 1500, "0.1.0"),
            ],
            &[],
        ));
        crate::snapshot::snapshot!("cluster.config-drift", f);
        assert_eq!(f.status, Status::Fail);
    }

    #[test]
    fn version_alone_warns_and_silence_is_inconclusive() {
        let f = judge(&facts(
            vec![
                node("n0", true, 1500, "0.1.0"),
                node("n1", true, 1500, "0.2.0"),
            ],
            &[],
        ));
        crate::snapshot::snapshot!("cluster.config-drift", f);
        assert_eq!(f.status, Status::Warn, "{}", f.summary);
        let f = judge(&facts(
            vec![
                node("n0", true, 1500, "0.1.0"),
                unreached("n1", UnreachedKind::ConnectionRefused, ""),
            ],
            &[],
        ));
        crate::snapshot::snapshot!("cluster.config-drift", f);
        assert_eq!(f.status, Status::Error, "{}", f.summary);
    }

    /// A node whose doctor.d holds `site` (id, executable SHA-256).
    fn with_site(name: &str, site: &[(&str, &str)]) -> NodeAnswer {
        let mut c = config(name, true, 1500, ALL);
        if !site.is_empty() {
            c["site_checks"] = site
                .iter()
                .map(|(id, sha)| json!({"id": id, "sha256": sha}))
                .collect();
        }
        answer(name, report("0.1.0", c, &[], json!([])))
    }

    #[test]
    fn a_node_whose_site_checks_differ_is_named() {
        let (a, b) = ("aa".repeat(32), "bb".repeat(32));
        let both = [
            ("site.bmc-fans", a.as_str()),
            ("site.storage-mtu", a.as_str()),
        ];
        let f = judge(&facts(
            vec![
                with_site("n0", &both),
                with_site("n1", &both),
                with_site(
                    "n2",
                    &[
                        ("site.storage-mtu", a.as_str()),
                        ("site.bmc-fans", b.as_str()),
                    ],
                ),
                with_site("n3", &[("site.storage-mtu", a.as_str())]),
            ],
            &[],
        ));
        crate::snapshot::snapshot!("cluster.config-drift", f);
        assert_eq!(f.kind.name, "site-checks-drift", "{}", f.summary);
        assert_eq!(f.status, Status::Warn);
        let odd: Vec<&str> = f.findings.iter().map(|s| s.subject.as_str()).collect();
        assert_eq!(odd, ["n2", "n3"]);
        assert!(f.summary.starts_with("the configs agree, but the nodes' site checks (doctor.d) differ: site checks: n2 has site checks site.bmc-fans (bbbbbbbbbbbbbbbb), site.storage-mtu (aaaaaaaaaaaaaaaa)"), "{}", f.summary);
        // The same set in another order is the same set; none anywhere is too.
        let f = judge(&facts(
            vec![with_site("n0", &both), with_site("n1", &[both[1], both[0]])],
            &[],
        ));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        let f = judge(&facts(
            vec![with_site("n0", &[]), with_site("n1", &[])],
            &[],
        ));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        // A failing setting still heads the finding; the site drift is named too.
        let mut odd = config("n1", false, 1500, ALL);
        odd["site_checks"] = json!([{"id": "site.x", "sha256": null}]);
        let f = judge(&facts(
            vec![
                with_site("n0", &[]),
                answer("n1", report("0.1.0", odd, &[], json!([]))),
            ],
            &[],
        ));
        assert_eq!(f.kind.name, "ipsec-enabled-drift");
        assert!(
            f.summary.contains("site.x (executable unreadable)"),
            "{}",
            f.summary
        );
    }

    /// A node's report with an ipsec.cert result whose CA has `key`.
    fn with_ca(name: &str, key: &str) -> NodeAnswer {
        let ca = json!({
            "path": "/etc/spinifex/ca.pem", "resolved": "/etc/spinifex/ca.pem",
            "subject": "O=Spinifex Platform, CN=Spinifex CA", "issuer": "O=Spinifex Platform, CN=Spinifex CA",
            "common_name": "Spinifex CA", "dns_names": [], "ip_addresses": [],
            "not_before": "2026-01-01T00:00:00Z", "not_after": "2036-01-01T00:00:00Z",
            "expires_in_seconds": 1, "extended_key_usages": null, "serial": "01",
            "sha256": key, "public_key_sha256": key,
        });
        let evidence = json!({
            "purpose": "ipsec-wanted", "warn_days": 30, "checked_at": "2026-06-01T00:00:00Z",
            "certificate": null, "key": null, "ca": ca,
            "ovs_certificate": null, "ovs_private_key": null, "ovs_ca_cert": null,
            "system_id": name, "node": name, "trusted_as": [],
        });
        let check = json!([{"id": "ipsec.cert", "status": "pass", "code": "ipsec.cert/ok", "summary": "x", "evidence": evidence}]);
        answer(
            name,
            report("0.1.0", config(name, true, 1500, ALL), &[], check),
        )
    }

    #[test]
    fn a_node_of_another_ipsec_ca_is_named_and_nodes_without_one_are_left_out() {
        let a = "aa".repeat(32);
        let b = "bb".repeat(32);
        let f = judge(&facts(
            vec![
                with_ca("n0", &a),
                with_ca("n1", &a),
                with_ca("n2", &b),
                node("n3", true, 1500, "0.1.0"),
            ],
            &[],
        ));
        crate::snapshot::snapshot!("cluster.config-drift", f);
        assert_eq!(f.kind.name, "ipsec-ca-drift", "{}", f.summary);
        assert_eq!(f.findings[0].subject, "n2");
        assert_eq!(
            ipsec_ca_drift(&f).as_deref(),
            Some("n0 and n1: CA \"O=Spinifex Platform, CN=Spinifex CA\" (key aaaaaaaaaaaaaaaa); n2: CA \"O=Spinifex Platform, CN=Spinifex CA\" (key bbbbbbbbbbbbbbbb)")
        );
        let f = judge(&facts(
            vec![
                with_ca("n0", &a),
                with_ca("n1", &a),
                node("n2", true, 1500, "0.1.0"),
                node("n3", true, 1500, "0.1.0"),
            ],
            &[],
        ));
        crate::snapshot::snapshot!("cluster.config-drift", f);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(ipsec_ca_drift(&f), None);
    }
}
