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

/// A check as a table reads it: every member but `evidence`, which is
/// skipped, never made.
#[derive(Deserialize)]
struct ToldCheck {
    #[serde(default, rename = "evidence")]
    _evidence: serde::de::IgnoredAny,
    #[serde(flatten)]
    rest: serde_json::Map<String, Value>,
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
