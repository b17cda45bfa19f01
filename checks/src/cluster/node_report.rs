//! A node's report as the cluster checks read it: the JSON v1 document the
//! node wrote, deserialized into the same types that wrote it. A check's
//! evidence is read back as its own struct (`PathMtuEvidence`,
//! `IpsecXfrmEvidence`), so a renamed field is a compile error here, not a
//! cluster check that quietly sees nothing.
//!
//! Reading is lenient where a report from another version of the doctor
//! may differ: a `config` or an evidence object that does not read as this
//! version's type is absent (the checks then say what they could not
//! judge), never a report thrown away.

use std::net::IpAddr;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::evidence::{self, Evidence};
use crate::finding::Status;
use crate::settings::ConfigState;
use crate::site_definition::SiteDefinition;

/// What a node ran with (JSON v1 `config`), written by every node run and
/// compared across nodes by `cluster.config-drift`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportedConfig {
    pub path: String,
    pub node: Option<String>,
    /// `[network] ipsec_enabled` (a missing key is true).
    pub ipsec_enabled: bool,
    /// `[network] underlay_mtu` as written (a missing key is 1500).
    pub underlay_mtu: u32,
    /// The `[nodes.*]` names, sorted.
    pub nodes: Vec<String>,
    /// The site's own checks (doctor.d) of this run's catalogue: id and
    /// executable, in catalogue order. Absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub site_checks: Vec<SiteDigest>,
}

/// A site check as nodes compare it: its id and what it runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteDigest {
    pub id: String,
    /// The executable's SHA-256 (none when it could not be read).
    pub sha256: Option<String>,
}

impl ReportedConfig {
    /// The config of this run, when one was read, with the run's site
    /// checks (`site`: the catalogue's, which the caller hands down).
    pub fn of(config: &ConfigState, site: &[SiteDefinition]) -> Option<ReportedConfig> {
        match config {
            ConfigState::Loaded { path, config } => Some(ReportedConfig {
                path: path.display().to_string(),
                node: config.node.clone(),
                ipsec_enabled: config.network.ipsec_enabled,
                underlay_mtu: config.network.underlay_mtu,
                nodes: config.nodes.keys().cloned().collect(),
                site_checks: site
                    .iter()
                    .map(|d| SiteDigest {
                        id: d.id.clone(),
                        sha256: d.executable_sha256.clone(),
                    })
                    .collect(),
            }),
            _ => None,
        }
    }

    /// `ipsec_enabled` on a cluster of more than one node.
    pub fn ipsec_wanted(&self) -> bool {
        self.ipsec_enabled && self.nodes.len() > 1
    }
}

/// `tool` in a report.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct ReportedTool {
    pub version: String,
}

/// One check's result in a report.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct CheckResult {
    pub id: String,
    pub status: Status,
    #[serde(default)]
    pub code: Option<String>,
    pub summary: String,
    #[serde(default)]
    pub evidence: Map<String, Value>,
}

impl CheckResult {
    /// The evidence as the check that wrote it types it; `None` when the
    /// result carries none of that shape (a skip before measuring).
    pub fn evidence_as<E: Evidence>(&self) -> Option<E> {
        evidence::read(&self.evidence)
    }
}

/// A node's report, typed.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct NodeReport {
    pub tool: ReportedTool,
    #[serde(default, deserialize_with = "or_none")]
    pub config: Option<ReportedConfig>,
    #[serde(default, deserialize_with = "addresses")]
    pub addresses: Vec<IpAddr>,
    pub exit_code: i32,
    pub checks: Vec<CheckResult>,
}

impl NodeReport {
    /// Read a JSON v1 node report; `None` when it is not one.
    pub fn read(doc: &Value) -> Option<NodeReport> {
        NodeReport::deserialize(doc).ok()
    }

    /// The result of check `id`, when the report has one.
    pub fn check(&self, id: &str) -> Option<&CheckResult> {
        self.checks.iter().find(|c| c.id == id)
    }
}

/// A value of this version's type, or none (never an error).
fn or_none<'de, D: Deserializer<'de>, T: serde::de::DeserializeOwned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

/// Every entry that is an address.
fn addresses<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<IpAddr>, D::Error> {
    let list = Vec::<Value>::deserialize(d)?;
    Ok(list
        .iter()
        .filter_map(|v| v.as_str()?.parse().ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_report_reads_back_typed_and_leniently() {
        let doc = json!({
            "schema_version": 1,
            "tool": {"name": "spx-doctor", "version": "0.1.0"},
            "exit_code": 0,
            "config": {"path": "/etc/spinifex/spinifex.toml", "node": "a", "ipsec_enabled": true, "underlay_mtu": 1500, "nodes": ["a", "b"]},
            "addresses": ["198.18.0.1", "not an address"],
            "checks": [{"id": "x.y", "status": "pass", "code": "x.y/ok", "summary": "s", "evidence": {"n": 1}}],
        });
        let r = NodeReport::read(&doc).unwrap();
        assert!(r.config.as_ref().unwrap().ipsec_wanted());
        assert_eq!(r.addresses, ["198.18.0.1".parse::<IpAddr>().unwrap()]);
        assert_eq!(r.check("x.y").unwrap().status, Status::Pass);
        // Another version's config shape is no config, not a lost report.
        let mut old = doc.clone();
        old["config"] = json!({"ipsec": "on"});
        assert_eq!(NodeReport::read(&old).unwrap().config, None);
        assert_eq!(NodeReport::read(&json!({"checks": []})), None);
    }
}
