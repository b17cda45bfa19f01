//! The judgement of `cluster.config-drift`, pure: every node's report in,
//! each compared value that differs between nodes (and who has which) out.
//! No words here ([`super::words`] says them).

use std::cmp::Reverse;
use std::collections::BTreeMap;

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
    let mut configs = BTreeMap::new();
    let mut without_config = Vec::new();
    for n in facts.answered() {
        if n.config().is_none() {
            without_config.push(n.name.clone());
        }
        let row = SETTINGS
            .iter()
            .map(|s| (s.key().to_owned(), s.read(n).unwrap_or(Value::Null)))
            .collect();
        configs.insert(n.name.clone(), row);
    }
    let unanswered = facts.unreached().map(|(n, _)| n.name.clone()).collect();

    let mut problems = Vec::new();
    for s in SETTINGS {
        // A node without a config reports only its version.
        let values = facts
            .answered()
            .filter(|n| s == Compared::Version || !without_config.contains(&n.name))
            .map(|n| (s.read(n).unwrap_or(Value::Null), &n.name));
        let mut groups = grouped(values);
        // Groups of equal size stand in the order of their values.
        groups.sort_by_key(|g| g.value.to_string());
        problems.extend(differs(s, groups));
    }
    // The site checks of every node that reported its config; groups of
    // equal size stand in node order.
    let sites = facts
        .answered()
        .filter(|n| !without_config.contains(&n.name))
        .filter_map(|n| Some((Compared::SiteChecks.read(n)?, &n.name)));
    problems.extend(differs(Compared::SiteChecks, grouped(sites)));
    // Nodes without that evidence (IPsec not judged there) are left out;
    // groups of equal size stand in node order.
    let cas = facts
        .answered()
        .filter_map(|n| Some((Compared::IpsecCa.read(n)?, &n.name)));
    problems.extend(differs(Compared::IpsecCa, grouped(cas)));

    let agreed = facts.answered().next().map(|first| {
        SETTINGS
            .iter()
            .filter_map(|s| Some((*s, s.read(first)?)))
            .collect()
    });
    Analysis {
        configs,
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
fn grouped<'a>(values: impl Iterator<Item = (Value, &'a String)>) -> Vec<DriftValue> {
    let mut groups: Vec<DriftValue> = Vec::new();
    for (value, node) in values {
        match groups.iter_mut().find(|g| g.value == value) {
            Some(g) => g.nodes.push(node.clone()),
            None => groups.push(DriftValue {
                value,
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
