//! The cluster report: what every renderer of a cluster run draws. Its JSON
//! form is version 1 of a public contract
//! (schema/cluster-report-v1.schema.json); each node's own report inside it
//! is a JSON v1 node report, exactly as the node wrote it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use spx_checks::checks::cluster_path_matrix::Cell;
use std::sync::{Arc, OnceLock};

use spx_checks::cluster::{NodeAnswer, ReportText, UnreachedKind};
use spx_checks::Status;

use super::{CheckReport, Tool};

#[derive(Serialize, Debug)]
pub struct ClusterReport {
    pub schema_version: u32,
    pub kind: &'static str,
    pub tool: Tool,
    pub profile: spx_checks::profile::RunProfile,
    pub started_at: String,
    pub duration_ms: u64,
    pub exit_code: i32,
    pub summary: ClusterSummary,
    /// The node that read OVN NB and SB for the whole cluster, once;
    /// `None` from the bucket (`watch`), where each agent read them itself.
    pub ovn_read_by: Option<String>,
    /// How the nodes' reports were gathered: `ssh` or `nats`.
    pub via: &'static str,
    pub nodes: Vec<NodeEntry>,
    /// The cluster checks' findings (same shape as a node report's).
    pub checks: Vec<CheckReport>,
    /// Every ordered pair of nodes, rows in node order (empty when
    /// mtu.path was not selected).
    pub path_matrix: Arc<Vec<Cell>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runbook: Option<Vec<String>>,
    /// What the operator should know about the levels as the cluster
    /// checks met them (an allow that matched nothing); each node's report
    /// has its own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Results over every node's checks and the cluster checks, and nodes.
#[derive(Serialize, Debug, Default)]
pub struct ClusterSummary {
    pub pass: usize,
    pub warn: usize,
    pub fail: usize,
    pub skip: usize,
    pub error: usize,
    pub nodes: usize,
    pub unreachable: usize,
}

impl ClusterSummary {
    pub fn count(&mut self, status: Status) {
        match status {
            Status::Pass => self.pass += 1,
            Status::Warn => self.warn += 1,
            Status::Fail => self.fail += 1,
            Status::Skip => self.skip += 1,
            Status::Error => self.error += 1,
        }
    }
}

#[derive(Serialize, Debug)]
pub struct NodeEntry {
    pub name: String,
    pub host: Option<String>,
    /// `in-process` (this node) or `ssh`; `nats` (its agent); `jetstream`
    /// (its agent's latest periodic report, from the doctor's bucket).
    pub via: &'static str,
    /// `ok` (a valid report), `unreachable`, or `duplicate` (two agents
    /// answer as it: neither report is taken); from the doctor's bucket
    /// (`watch`), `stale` (its latest report is older than two of its
    /// agent's intervals) or `unknown` (it never wrote one).
    pub status: &'static str,
    /// Why there is no report, in one line.
    pub error: Option<String>,
    pub reason: Option<UnreachedKind>,
    /// The node's report, the text it sent (shared with the gather, not
    /// copied), written as the JSON it is.
    pub report: Option<ReportText>,
    /// Each check's status in the report, in its order, from the typed
    /// report: what the table marks and the summary counts.
    #[serde(skip)]
    pub statuses: Vec<(String, Status)>,
    /// The report's `exit_code`.
    #[serde(skip)]
    exit_code: Option<i32>,
    /// The report as a tree, made the first time a renderer reads it by
    /// key (Prometheus, JUnit); never for JSON, which writes the text.
    #[serde(skip)]
    doc: OnceLock<Option<Value>>,
    /// Its checks without their evidence, made the first time a table or
    /// `watch` reads them: at 1,024 nodes a report's evidence is nearly
    /// all of its 0.5 MB, and a tree of it ten times that.
    #[serde(skip)]
    told: OnceLock<Told>,
}

/// What a node's report tells a table: when it ran, and its checks, each
/// without its evidence.
#[derive(Debug, Default)]
struct Told {
    started_at: Option<String>,
    checks: Vec<Value>,
}

/// A check's findings as a table reads them: each one's subject alone
/// (`mtu.path` has one per peer: a million at 1,024 nodes). A finding
/// without one is left out.
struct Subjects(Vec<Value>);

impl<'de> Deserialize<'de> for Subjects {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Subjects, D::Error> {
        struct Each;
        impl<'de> serde::de::Visitor<'de> for Each {
            type Value = Subjects;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of findings")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut findings: A,
            ) -> Result<Subjects, A::Error> {
                let mut out = Vec::new();
                // One finding made at a time, and let go.
                while let Some(f) = findings.next_element::<Value>()? {
                    if let Some(Value::String(s)) = f.get("subject") {
                        out.push(Value::String(s.clone()));
                    }
                }
                Ok(Subjects(out))
            }
            // Anything else (a hostile node's report) holds no subjects;
            // the check's other members are still read.
            fn visit_unit<E: serde::de::Error>(self) -> Result<Subjects, E> {
                Ok(Subjects(Vec::new()))
            }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Subjects, E> {
                self.visit_unit()
            }
            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Subjects, E> {
                self.visit_unit()
            }
            fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Subjects, E> {
                self.visit_unit()
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Subjects, E> {
                self.visit_unit()
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Subjects, E> {
                self.visit_unit()
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Subjects, A::Error> {
                while m
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Subjects(Vec::new()))
            }
        }
        d.deserialize_any(Each)
    }
}

/// A check as a table reads it: every member but `evidence`, which is
/// skipped, never made, and its findings' subjects. (Not serde's `flatten`: that buffers the whole
/// object, evidence and all, before it picks the members out: 2.5 GB at
/// a time at 1,024 nodes, whose `mtu.path` evidence lists 1,023 peers.)
struct ToldCheck {
    rest: serde_json::Map<String, Value>,
}

impl<'de> Deserialize<'de> for ToldCheck {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ToldCheck, D::Error> {
        struct Members;
        impl<'de> serde::de::Visitor<'de> for Members {
            type Value = ToldCheck;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a check object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut members: A,
            ) -> Result<ToldCheck, A::Error> {
                let mut rest = serde_json::Map::new();
                while let Some(key) = members.next_key::<String>()? {
                    if key == "evidence" {
                        members.next_value::<serde::de::IgnoredAny>()?;
                    } else if key == "findings" {
                        let Subjects(subjects) = members.next_value()?;
                        rest.insert(key, Value::Array(subjects));
                    } else {
                        let value = members.next_value()?;
                        rest.insert(key, value);
                    }
                }
                Ok(ToldCheck { rest })
            }
        }
        d.deserialize_map(Members)
    }
}

impl Told {
    fn of(report: &ReportText) -> Told {
        #[derive(Deserialize)]
        struct Read {
            #[serde(default)]
            started_at: Option<String>,
            #[serde(default)]
            checks: Vec<ToldCheck>,
        }
        let Ok(r) = serde_json::from_str::<Read>(report.as_str()) else {
            return Told::default();
        };
        Told {
            started_at: r.started_at,
            checks: r
                .checks
                .into_iter()
                .map(|c| Value::Object(c.rest))
                .collect(),
        }
    }
}

impl NodeEntry {
    pub fn of(n: &NodeAnswer, via: &'static str) -> NodeEntry {
        let (statuses, exit_code) = statuses(n);
        NodeEntry {
            name: n.name.clone(),
            host: n.host.clone(),
            via,
            status: match &n.report {
                Ok(_) => "ok",
                Err(e) if e.kind == UnreachedKind::Stale => "stale",
                Err(e) if e.kind == UnreachedKind::NoReport => "unknown",
                Err(e) if e.kind == UnreachedKind::DuplicateNode => "duplicate",
                Err(_) => "unreachable",
            },
            error: n.report.as_ref().err().map(|e| e.to_string()),
            reason: n.report.as_ref().err().map(|e| e.kind),
            report: n.report.as_ref().ok().cloned(),
            statuses,
            exit_code,
            doc: OnceLock::new(),
            told: OnceLock::new(),
        }
    }

    /// The node's report as a JSON tree, when there is a report (made once,
    /// on first use).
    pub fn doc(&self) -> Option<&Value> {
        self.doc
            .get_or_init(|| self.report.as_ref().map(ReportText::to_value))
            .as_ref()
    }

    /// Check `id`'s status in the node's report, when it has that check.
    pub fn status_of(&self, id: &str) -> Option<Status> {
        self.statuses.iter().find(|(c, _)| c == id).map(|(_, s)| *s)
    }

    /// The node report's checks without their evidence (what a table
    /// shows of them), when there is a report.
    pub fn checks(&self) -> &[Value] {
        &self.told().checks
    }

    /// When the node's run began (its report's `started_at`).
    pub fn started_at(&self) -> Option<&str> {
        self.told().started_at.as_deref()
    }

    fn told(&self) -> &Told {
        self.told
            .get_or_init(|| self.report.as_ref().map(Told::of).unwrap_or_default())
    }

    pub fn exit_code(&self) -> Option<i32> {
        self.exit_code
    }
}

/// Every check's status in `n`'s report, and its exit code: from the typed
/// report; a report that does not read typed (an entry from the bucket is
/// not held to the JSON v1 shape) has each read alone, a status not known
/// an error.
fn statuses(n: &NodeAnswer) -> (Vec<(String, Status)>, Option<i32>) {
    if let Some(r) = n.typed() {
        let each = r.checks.iter().map(|c| (c.id.clone(), c.status)).collect();
        return (each, Some(r.exit_code));
    }
    let Ok(text) = &n.report else {
        return (Vec::new(), None);
    };
    let doc = text.to_value();
    let each = doc
        .get("checks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let id = c.get("id").and_then(Value::as_str).unwrap_or("");
            let status = c
                .get("status")
                .and_then(|s| Status::deserialize(s).ok())
                .unwrap_or(Status::Error);
            (id.to_owned(), status)
        })
        .collect();
    let code = doc
        .get("exit_code")
        .and_then(Value::as_i64)
        .map(|c| c as i32);
    (each, code)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table's read of a report keeps every member of each check but its
    /// evidence, whatever the evidence holds, and the run's start.
    #[test]
    fn a_told_check_is_every_member_but_its_evidence() {
        let text = ReportText::parse(
            r#"{"started_at":"2026-12-05T06:00:00Z","checks":[
                {"id":"mtu.path","status":"fail","evidence":{"peers":[{"address":"198.18.0.2","path_mtu":1500}]},"code":"mtu.path/black-hole","summary":"s",
                 "findings":[{"subject":"198.18.0.2","status":"fail","detail":"d"},{"status":"pass"}]},
                {"evidence":[1,2,{"deep":[[[]]]}],"id":"sysctl","status":"pass"},
                {"id":"x","status":"skip"}
            ]}"#
            .to_owned(),
        )
        .unwrap();
        let told = Told::of(&text);
        assert_eq!(told.started_at.as_deref(), Some("2026-12-05T06:00:00Z"));
        let want = [
            serde_json::json!({"id":"mtu.path","status":"fail","code":"mtu.path/black-hole","summary":"s","findings":["198.18.0.2"]}),
            serde_json::json!({"id":"sysctl","status":"pass"}),
            serde_json::json!({"id":"x","status":"skip"}),
        ];
        assert_eq!(told.checks, want);
        // A check that is not an object is no check: the report reads as none.
        let bad = ReportText::parse(r#"{"checks":[["mtu.path","fail"]]}"#.to_owned()).unwrap();
        assert!(Told::of(&bad).checks.is_empty());
        // Findings that are not a list hold no subjects; the check is read.
        for findings in ["null", "\"x\"", "{\"subject\":\"y\"}", "7", "true"] {
            let odd = ReportText::parse(format!(
                r#"{{"checks":[{{"id":"x","status":"skip","findings":{findings}}}]}}"#
            ))
            .unwrap();
            assert_eq!(
                Told::of(&odd).checks,
                [serde_json::json!({"id":"x","status":"skip","findings":[]})],
                "{findings}"
            );
        }
    }
}
