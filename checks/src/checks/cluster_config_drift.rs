//! `cluster.config-drift`: `ipsec_enabled`, `underlay_mtu`, the set of
//! `[nodes.*]` names and the doctor's version are the same on every node.
//!
//! The guest MTU and multiqueue follow `ipsec_enabled` on each node on its
//! own, so one node left behind after a change gives its guests an MTU the
//! rest of the overlay does not carry; a node with a different node list
//! expects SAs to nodes the others never set up. Each node reports the
//! config it ran with (`config` in JSON v1); this check names the odd ones
//! out and their values.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::check::{Check, Declared};
use crate::checks::ipsec_cert::IpsecCertEvidence;
use crate::cluster::{and_list, ClusterFacts, NodeAnswer};
use crate::evidence::Evidence;
use crate::finding::{Finding, Subject};
use crate::kind::{most_severe, Kinds};

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
        "Compares what every node's report says it ran with (JSON v1 `config`: [network] \
         ipsec_enabled and underlay_mtu as the node's spinifex.toml has them, the names of \
         its [nodes.*] tables), the IPsec CA its ipsec.cert read (by subject and public key; \
         nodes where ipsec.cert did not read one are left out) and the doctor's version \
         (`tool.version`). Names the odd node(s) and their values against the rest.\n\
         \n\
         Fails when ipsec_enabled, underlay_mtu, the node list or the IPsec CA differ (IKE \
         between nodes of different CAs fails); a different doctor \
         version alone is a warning. A node that did not answer leaves the check \
         inconclusive unless the others already disagree.\n\
         \n\
         Why: the guest MTU (1408 with IPsec, 1442 without, at 1500) and multiqueue follow \
         ipsec_enabled on each node by itself. Turning IPsec off on three nodes of four \
         gives the fourth's guests 1408 while the others send 1442; raising underlay_mtu on \
         some nodes only gives their guests an MTU the fabric between them and the rest \
         does not carry; a node list that differs means SAs and peers nobody expects.\n\
         \n\
         Fix: make the value the same in /etc/spinifex/spinifex.toml on every node, then \
         `systemctl restart spinifex-daemon` on the nodes changed, and stop and start their \
         guests."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    crate::check::cluster_check!(judge);
}

/// One compared setting, its key in spinifex.toml and the kind of its drift.
struct Setting {
    key: &'static str,
    toml: Option<&'static str>,
    drift: ConfigDriftKind,
    read: fn(&NodeAnswer) -> Option<Value>,
}

const SETTINGS: &[Setting] = &[
    Setting {
        key: "ipsec_enabled",
        toml: Some("ipsec_enabled"),
        drift: ConfigDriftKind::IpsecEnabledDrift,
        read: |n| Some(json!(n.config()?.ipsec_enabled)),
    },
    Setting {
        key: "underlay_mtu",
        toml: Some("underlay_mtu"),
        drift: ConfigDriftKind::UnderlayMtuDrift,
        read: |n| Some(json!(n.config()?.underlay_mtu)),
    },
    Setting {
        key: "nodes",
        toml: None,
        drift: ConfigDriftKind::NodeListDrift,
        read: |n| {
            let mut names = n.config()?.nodes.clone();
            names.sort();
            Some(json!(names))
        },
    },
    Setting {
        key: "version",
        toml: None,
        drift: ConfigDriftKind::VersionDrift,
        read: |n| Some(json!(n.version()?)),
    },
];

/// The `drift` key of the IPsec CA.
const IPSEC_CA: &str = "ipsec_ca";

/// A node's IPsec CA as `ipsec.cert` read it: subject and public key
/// (a CA renewed with its own key is the same CA).
fn ipsec_ca(n: &NodeAnswer) -> Option<Value> {
    let e: IpsecCertEvidence = n.evidence("ipsec.cert")?;
    let ca = e.ca?;
    Some(json!({"subject": ca.subject, "public_key_sha256": ca.public_key_sha256}))
}

fn ca_shown(v: &Value) -> String {
    let key = v["public_key_sha256"].as_str().unwrap_or_default();
    format!(
        "CA \"{}\" (key {})",
        v["subject"].as_str().unwrap_or_default(),
        &key[..16.min(key.len())]
    )
}

/// The drift of the IPsec CA, its sentence, and each odd node with its CA.
type CaDrift = (Drift, String, Vec<(String, String)>);

/// The nodes whose `ipsec.cert` read a CA, grouped by it: the drift, its
/// sentence, and each odd node with what it has. Nodes without that
/// evidence (IPsec not judged there) are left out.
fn ca_drift(facts: &ClusterFacts) -> Option<CaDrift> {
    let mut groups: Vec<(Value, Vec<String>)> = Vec::new();
    for n in facts.answered() {
        let Some(v) = ipsec_ca(n) else { continue };
        match groups.iter_mut().find(|(g, _)| *g == v) {
            Some((_, nodes)) => nodes.push(n.name.clone()),
            None => groups.push((v, vec![n.name.clone()])),
        }
    }
    if groups.len() < 2 {
        return None;
    }
    groups.sort_by_key(|(_, nodes)| std::cmp::Reverse(nodes.len()));
    let clear = groups[0].1.len() > groups[1].1.len();
    let says = |(v, nodes): &(Value, Vec<String>)| {
        format!(
            "{} {} {}",
            and_list(nodes),
            if nodes.len() == 1 { "has" } else { "have" },
            ca_shown(v)
        )
    };
    let text = if clear {
        let odd: Vec<String> = groups[1..].iter().map(says).collect();
        format!(
            "{} (the other {} have {})",
            and_list(&odd),
            groups[0].1.len(),
            ca_shown(&groups[0].0)
        )
    } else {
        groups.iter().map(says).collect::<Vec<_>>().join("; ")
    };
    let odd_groups = if clear { &groups[1..] } else { &groups[..] };
    let odd = odd_groups
        .iter()
        .flat_map(|(v, nodes)| nodes.iter().map(move |n| (n.clone(), ca_shown(v))))
        .collect();
    let drift = Drift {
        key: IPSEC_CA.to_owned(),
        values: groups
            .iter()
            .map(|(v, nodes)| DriftValue {
                value: v.clone(),
                nodes: nodes.clone(),
            })
            .collect(),
    };
    Some((drift, text, odd))
}

/// How the nodes' IPsec CAs differ, from a `cluster.config-drift` result
/// (for the enable-ipsec runbook), when they do.
pub fn ipsec_ca_drift(f: &Finding) -> Option<String> {
    let e: ConfigDriftEvidence = f.evidence_as()?;
    let d = e.drift.iter().find(|d| d.key == IPSEC_CA)?;
    Some(
        d.values
            .iter()
            .map(|v| format!("{}: {}", and_list(&v.nodes), ca_shown(&v.value)))
            .collect::<Vec<_>>()
            .join("; "),
    )
}

fn shown(key: &str, v: &Value) -> String {
    match (key, v) {
        ("nodes", Value::Array(a)) => format!(
            "[nodes.*] {}",
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ("version", Value::String(s)) => format!("spx-doctor {s}"),
        (_, Value::String(s)) => format!("{key} = {s:?}"),
        (_, other) => format!("{key} = {other}"),
    }
}

pub fn judge(facts: &ClusterFacts) -> Finding {
    let mut configs = BTreeMap::new();
    let mut without_config: Vec<&str> = Vec::new();
    for n in facts.answered() {
        if n.config().is_none() {
            without_config.push(&n.name);
        }
        let row = SETTINGS
            .iter()
            .map(|s| (s.key.to_owned(), (s.read)(n).unwrap_or(Value::Null)))
            .collect();
        configs.insert(n.name.clone(), row);
    }
    let unanswered: Vec<&str> = facts.unreached().map(|(n, _)| n.name.as_str()).collect();

    let mut drift = Vec::new();
    let mut kinds = Vec::new();
    let mut subjects = Vec::new();
    let mut fail_parts = Vec::new();
    let mut warn_parts = Vec::new();
    let mut fixes = Vec::new();
    for s in SETTINGS {
        // value -> nodes, in node order within each value
        let mut groups: BTreeMap<String, (Value, Vec<&str>)> = BTreeMap::new();
        for n in facts.answered() {
            if without_config.contains(&n.name.as_str()) && s.key != "version" {
                continue;
            }
            let v = (s.read)(n).unwrap_or(Value::Null);
            groups
                .entry(v.to_string())
                .or_insert_with(|| (v.clone(), Vec::new()))
                .1
                .push(&n.name);
        }
        if groups.len() < 2 {
            continue;
        }
        let mut by_size: Vec<&(Value, Vec<&str>)> = groups.values().collect();
        by_size.sort_by_key(|(_, nodes)| std::cmp::Reverse(nodes.len()));
        let majority_clear = by_size[0].1.len() > by_size[1].1.len();
        let says = |(v, nodes): &&(Value, Vec<&str>)| {
            format!(
                "{} {} {}",
                and_list(nodes),
                if nodes.len() == 1 { "has" } else { "have" },
                shown(s.key, v)
            )
        };
        let text = if majority_clear {
            let (common, most) = by_size[0];
            let odd: Vec<String> = by_size[1..].iter().map(says).collect();
            format!(
                "{} (the other {} have {})",
                and_list(&odd),
                most.len(),
                shown(s.key, common)
            )
        } else {
            by_size.iter().map(says).collect::<Vec<_>>().join("; ")
        };
        drift.push(Drift {
            key: s.key.to_owned(),
            values: by_size
                .iter()
                .map(|(v, nodes)| DriftValue {
                    value: v.clone(),
                    nodes: nodes.iter().map(|n| (*n).to_owned()).collect(),
                })
                .collect(),
        });
        kinds.push(s.drift);
        // The odd ones out, or every group when no value has a majority.
        let odd = if majority_clear {
            &by_size[1..]
        } else {
            &by_size[..]
        };
        for (v, nodes) in odd {
            for n in nodes {
                subjects.push(Subject::new(
                    s.drift,
                    *n,
                    match majority_clear {
                        true => format!(
                            "{}, the others {}",
                            shown(s.key, v),
                            shown(s.key, &by_size[0].0)
                        ),
                        false => shown(s.key, v),
                    },
                ));
            }
        }
        if s.key == "version" {
            warn_parts.push(format!("doctor version: {text}"));
            fixes.push(format!(
                "install the same spx-doctor on every node ({} here)",
                facts.version
            ));
            continue;
        }
        fail_parts.push(format!("{}: {text}", s.key));
        let odd_nodes: Vec<&str> = if majority_clear {
            by_size[1..]
                .iter()
                .flat_map(|(_, n)| n.iter().copied())
                .collect()
        } else {
            by_size
                .iter()
                .flat_map(|(_, n)| n.iter().copied())
                .collect()
        };
        fixes.push(match (s.toml, majority_clear) {
            (Some(key), true) => format!(
                "on {}: set `{key} = {}` under [network] in /etc/spinifex/spinifex.toml (or the others to {its} value, whichever is intended), then `systemctl restart spinifex-daemon` on the nodes changed and stop and start their guests",
                and_list(&odd_nodes),
                by_size[0].0,
                its = if odd_nodes.len() == 1 { "its" } else { "their" }
            ),
            (Some(key), false) => format!(
                "decide on one `{key}` and set it under [network] in /etc/spinifex/spinifex.toml on every node, then `systemctl restart spinifex-daemon` on the nodes changed and stop and start their guests"
            ),
            (None, _) => format!(
                "make the [nodes.*] tables the same on every node (on {}), then `systemctl restart spinifex-daemon` there",
                and_list(&odd_nodes)
            ),
        });
    }

    if let Some((d, text, odd)) = ca_drift(facts) {
        kinds.push(ConfigDriftKind::IpsecCaDrift);
        fail_parts.push(format!("ipsec CA: {text}"));
        for (node, shown) in odd {
            subjects.push(Subject::new(ConfigDriftKind::IpsecCaDrift, node, shown));
        }
        fixes.push(
            "copy one cluster CA (ca.pem and ca.key, beside spinifex.toml) to every node that has another, reissue its peer certificate from it (`spx doctor --check ipsec.cert` there gives the commands) and link it into charon's trust store".to_owned(),
        );
        drift.push(d);
    }

    for n in unanswered.iter().chain(&without_config) {
        subjects.push(Subject::new(
            ConfigDriftKind::ConfigUnknown,
            *n,
            if unanswered.contains(n) {
                "did not answer"
            } else {
                "reported no config"
            },
        ));
    }
    let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let evidence = |f: Finding| {
        f.evidence(&ConfigDriftEvidence {
            configs: configs.clone(),
            drift: drift.clone(),
            unanswered: owned(&unanswered),
            without_config: owned(&without_config),
        })
        .subjects(subjects.clone())
    };
    let worst_fail = most_severe(
        kinds
            .iter()
            .copied()
            .filter(|k| k.doc().status == crate::finding::Status::Fail),
    );
    if let Some(kind) = worst_fail {
        let mut summary = format!("the nodes' configs disagree: {}", fail_parts.join("; "));
        if !warn_parts.is_empty() {
            summary.push_str(&format!("; {}", warn_parts.join("; ")));
        }
        if !unanswered.is_empty() {
            summary.push_str(&format!("; {} did not answer", and_list(&unanswered)));
        }
        return evidence(Finding::new(kind, summary).fixes(fixes));
    }
    if !without_config.is_empty() || !unanswered.is_empty() {
        let mut why = Vec::new();
        if !unanswered.is_empty() {
            why.push(format!("{} did not answer", and_list(&unanswered)));
        }
        if !without_config.is_empty() {
            why.push(format!(
                "{} reported no config (a doctor before JSON v1 `config`?)",
                and_list(&without_config)
            ));
        }
        let answered = facts.answered().count() - without_config.len();
        let mut f = Finding::new(
            ConfigDriftKind::ConfigUnknown,
            format!(
                "{}, so their configs are unknown; the {answered} that did agree",
                why.join("; ")
            ),
        );
        if !warn_parts.is_empty() {
            f.summary.push_str(&format!(" ({})", warn_parts.join("; ")));
        }
        return evidence(f);
    }
    if !warn_parts.is_empty() {
        return evidence(
            Finding::new(
                ConfigDriftKind::VersionDrift,
                format!(
                    "the configs agree, but the doctors differ: {}",
                    warn_parts.join("; ")
                ),
            )
            .fixes(fixes),
        );
    }
    let Some(first) = facts.answered().next() else {
        return evidence(Finding::new(
            ConfigDriftKind::ConfigUnknown,
            "no node answered",
        ));
    };
    let common: Vec<String> = SETTINGS
        .iter()
        .filter_map(|s| (s.read)(first).map(|v| shown(s.key, &v)))
        .collect();
    evidence(Finding::new(
        ConfigDriftKind::Ok,
        format!(
            "all {} nodes run the same config: {}",
            facts.nodes.len(),
            common.join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::testing::*;
    use crate::cluster::UnreachedKind;
    use crate::finding::Status;

    /// Every verdict these tests see is also checked against the schema.
    fn judge(facts: &ClusterFacts) -> Finding {
        crate::schema_check::valid("cluster.config-drift", super::judge(facts))
    }

    const ALL: &[&str] = &["n0", "n1", "n2", "n3"];

    fn node(name: &str, ipsec: bool, mtu: u32, version: &str) -> crate::cluster::NodeAnswer {
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

    /// A node's report with an ipsec.cert result whose CA has `key`.
    fn with_ca(name: &str, key: &str) -> crate::cluster::NodeAnswer {
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
