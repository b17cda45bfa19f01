//! The judgement of `cluster.config-drift`, pure: every node's report in,
//! each compared value that differs between nodes (and who has which) out.
//! No words here ([`super::words`] says them).

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{ConfigDriftKind, DriftValue};
use crate::checks::ipsec_cert::IpsecCertEvidence;
use crate::cluster::{ClusterFacts, NodeAnswer};

/// What is compared between the nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compared {
    /// `[network] ipsec_enabled`.
    IpsecEnabled,
    /// `[network] underlay_mtu`.
    UnderlayMtu,
    /// The names of the `[nodes.*]` tables.
    Nodes,
    /// The doctor's `tool.version`.
    Version,
    /// The IPsec CA `ipsec.cert` read: subject and public key (a CA renewed
    /// with its own key is the same CA).
    IpsecCa,
    /// The site checks (doctor.d) in the node's catalogue: each id and its
    /// executable's SHA-256.
    SiteChecks,
}

impl Compared {
    /// Its key in the evidence (`configs`, `drift`).
    pub fn key(self) -> &'static str {
        match self {
            Compared::IpsecEnabled => "ipsec_enabled",
            Compared::UnderlayMtu => "underlay_mtu",
            Compared::Nodes => "nodes",
            Compared::Version => "version",
            Compared::IpsecCa => "ipsec_ca",
            Compared::SiteChecks => "site_checks",
        }
    }

    /// The kind of its drift.
    pub fn kind(self) -> ConfigDriftKind {
        match self {
            Compared::IpsecEnabled => ConfigDriftKind::IpsecEnabledDrift,
            Compared::UnderlayMtu => ConfigDriftKind::UnderlayMtuDrift,
            Compared::Nodes => ConfigDriftKind::NodeListDrift,
            Compared::Version => ConfigDriftKind::VersionDrift,
            Compared::IpsecCa => ConfigDriftKind::IpsecCaDrift,
            Compared::SiteChecks => ConfigDriftKind::SiteChecksDrift,
        }
    }

    /// Its value in a node's report; `None` when the report does not say.
    fn read(self, n: &NodeAnswer) -> Option<Value> {
        match self {
            Compared::IpsecEnabled => Some(json!(n.config()?.ipsec_enabled)),
            Compared::UnderlayMtu => Some(json!(n.config()?.underlay_mtu)),
            Compared::Nodes => {
                let mut names = n.config()?.nodes.to_vec();
                crate::natural::sort(&mut names);
                Some(json!(names))
            }
            Compared::Version => Some(json!(n.version()?)),
            Compared::IpsecCa => {
                let e: IpsecCertEvidence = n.evidence("ipsec.cert")?;
                let ca = e.ca?;
                Some(json!({"subject": ca.subject, "public_key_sha256": ca.public_key_sha256}))
            }
            Compared::SiteChecks => {
                let by_id: BTreeMap<&str, &Option<String>> = n
                    .config()?
                    .site_checks
                    .iter()
                    .map(|s| (s.id.as_str(), &s.sha256))
                    .collect();
                Some(json!(by_id))
            }
        }
    }
}

/// The settings every node reports in its `config` (and `tool.version`),
/// in the order the evidence and the headline give them.
pub const SETTINGS: [Compared; 4] = [
    Compared::IpsecEnabled,
    Compared::UnderlayMtu,
    Compared::Nodes,
    Compared::Version,
];

/// One compared value that differs between the nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub what: Compared,
    /// Which nodes have which value, the largest group first.
    pub groups: Vec<DriftValue>,
    /// The largest group is larger than every other: the rest are the odd
    /// ones out.
    pub clear: bool,
}

impl Problem {
    /// The odd ones out: every group but the largest, or every group when
    /// no value has a majority.
    pub fn odd(&self) -> &[DriftValue] {
        if self.clear {
            &self.groups[1..]
        } else {
            &self.groups[..]
        }
    }

    /// The nodes of [`Self::odd`], in order.
    pub fn odd_nodes(&self) -> Vec<&str> {
        self.odd()
            .iter()
            .flat_map(|g| g.nodes.iter().map(String::as_str))
            .collect()
    }
}

/// Every node's values side by side.
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    /// By node that answered: each setting's value (null when not reported).
    pub configs: BTreeMap<String, BTreeMap<String, Value>>,
    /// What differs: the settings in [`SETTINGS`] order, then the site
    /// checks, then the IPsec CA.
    pub problems: Vec<Problem>,
    pub unanswered: Vec<String>,
    /// Nodes that answered without a `config` (a doctor before JSON v1
    /// `config`?): only their version is compared.
    pub without_config: Vec<String>,
    /// How many nodes were selected, and how many answered.
    pub nodes: usize,
    pub answered: usize,
    /// The first answering node's settings (those it reported), which the
    /// others share when nothing differs; `None` when no node answered.
    pub agreed: Option<Vec<(Compared, Value)>>,
    /// This doctor's version.
    pub version: String,
}

/// Compare every answering node's settings and IPsec CA.
pub fn analyse(facts: &ClusterFacts) -> Analysis {
    // Each answering node's settings, read once: for the evidence's
    // `configs` and for the groups. At 1,024 nodes every report lists the
    // same 1,024 names, held once (`ReportedConfig::nodes`): sorted once
    // too, and the sorted list copied for each node that shares it.
    let mut last_nodes: Option<(Arc<[String]>, Value)> = None;
    let mut read = |s: Compared, n: &NodeAnswer| -> Value {
        let shared = match (s, n.config()) {
            (Compared::Nodes, Some(c)) => Some(&c.nodes),
            _ => None,
        };
        if let (Some(names), Some((last, sorted))) = (shared, &last_nodes) {
            if Arc::ptr_eq(names, last) {
                return sorted.clone();
            }
        }
        let v = s.read(n).unwrap_or(Value::Null);
        if let Some(names) = shared {
            last_nodes = Some((Arc::clone(names), v.clone()));
        }
        v
    };
    let rows: Vec<(&NodeAnswer, BTreeMap<String, Value>)> = facts
        .answered()
        .map(|n| {
            let row = SETTINGS
                .iter()
                .map(|s| (s.key().to_owned(), read(*s, n)))
                .collect();
            (n, row)
        })
        .collect();
    let without_config: Vec<String> = rows
        .iter()
        .filter(|(n, _)| n.config().is_none())
        .map(|(n, _)| n.name.clone())
        .collect();
    let unanswered = facts.unreached().map(|(n, _)| n.name.clone()).collect();

    let mut problems = Vec::new();
    for s in SETTINGS {
        // A node without a config reports only its version.
        let values = rows
            .iter()
            .filter(|(n, _)| s == Compared::Version || n.config().is_some())
            .map(|(n, row)| (&row[s.key()], &n.name));
        let mut groups = grouped(values);
        // Groups of equal size stand in the order of their values.
        groups.sort_by_key(|g| g.value.to_string());
        problems.extend(differs(s, groups));
    }
    // The site checks of every node that reported its config; groups of
    // equal size stand in node order.
    let sites = facts
        .answered()
        .filter(|n| n.config().is_some())
        .filter_map(|n| Some((Compared::SiteChecks.read(n)?, &n.name)));
    let sites: Vec<_> = sites.collect();
    problems.extend(differs(
        Compared::SiteChecks,
        grouped(sites.iter().map(|(v, n)| (v, *n))),
    ));
    // Nodes without that evidence (IPsec not judged there) are left out;
    // groups of equal size stand in node order.
    let cas = facts
        .answered()
        .filter_map(|n| Some((Compared::IpsecCa.read(n)?, &n.name)));
    let cas: Vec<_> = cas.collect();
    problems.extend(differs(
        Compared::IpsecCa,
        grouped(cas.iter().map(|(v, n)| (v, *n))),
    ));

    let agreed = facts.answered().next().map(|first| {
        SETTINGS
            .iter()
            .filter_map(|s| Some((*s, s.read(first)?)))
            .collect()
    });
    Analysis {
        configs: rows
            .into_iter()
            .map(|(n, row)| (n.name.clone(), row))
            .collect(),
        problems,
        unanswered,
        without_config,
        nodes: facts.nodes.len(),
        answered: facts.answered().count(),
        agreed,
        version: facts.version.clone(),
    }
}

/// The nodes grouped by value, in the order each value is first seen.
fn grouped<'a>(values: impl Iterator<Item = (&'a Value, &'a String)>) -> Vec<DriftValue> {
    let mut groups: Vec<DriftValue> = Vec::new();
    for (value, node) in values {
        match groups.iter_mut().find(|g| g.value == *value) {
            Some(g) => g.nodes.push(node.clone()),
            None => groups.push(DriftValue {
                value: value.clone(),
                nodes: vec![node.clone()],
            }),
        }
    }
    groups
}

/// `what` differs when the nodes hold more than one value: the groups,
/// largest first (a stable sort: equal sizes keep their order).
fn differs(what: Compared, mut groups: Vec<DriftValue>) -> Option<Problem> {
    if groups.len() < 2 {
        return None;
    }
    groups.sort_by_key(|g| Reverse(g.nodes.len()));
    let clear = groups[0].nodes.len() > groups[1].nodes.len();
    Some(Problem {
        what,
        groups,
        clear,
    })
}
