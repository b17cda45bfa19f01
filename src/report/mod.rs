//! The report: what every renderer draws and what monitoring reads. Its JSON
//! form is version 1 of a public contract (schema/report-v1.schema.json).
//! The exit code is computed here and nowhere else. The levels
//! (`--allow`, `--deny`, `[doctor]`) are applied to the checks' results by
//! [`crate::levels`] before a report is built from them.

pub mod cluster;

use std::time::{Duration, SystemTime};

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};
use spx_checks::checks::cluster_path_matrix::Cell;
use spx_checks::finding::CompactString;
use spx_checks::host::HostRef;
use spx_checks::kind::SkipCategory;
use spx_checks::profile::RunProfile;
use spx_checks::spinifex::as_invoked;
use spx_checks::{ConfigState, Status};

use crate::runner::Outcome;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize, Debug)]
pub struct Report {
    pub schema_version: u32,
    pub tool: Tool,
    pub host: String,
    pub node: Option<String>,
    pub profile: RunProfile,
    pub started_at: String,
    pub duration_ms: u64,
    pub exit_code: i32,
    pub summary: Summary,
    pub checks: Vec<CheckReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runbook: Option<Vec<String>>,
    /// The config this run used, as the cross-node checks compare it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<spx_checks::cluster::ReportedConfig>,
    /// This host's own unicast addresses (no loopback, no link-local): how
    /// a cluster run tells which node an address belongs to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<std::net::IpAddr>,
    /// The codes allowed in this run (flags and config), as given a level.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// The codes denied in this run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// What the operator should know about the levels: an allow that
    /// matched nothing (stale), one a preflight set aside.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// A replay (`--replay FILE`): the bundle this report was judged from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed_from: Option<ReplayedFrom>,
    /// How each check's run ended (time-outs included), for a bundle's
    /// header; not part of the JSON.
    #[serde(skip)]
    pub recorded: Vec<spx_checks::host::Outcome>,
}

/// Where a replayed report's facts came from.
#[derive(Serialize, Debug)]
pub struct ReplayedFrom {
    /// The bundle, as named on the command line.
    pub bundle: String,
    /// The doctor that recorded it.
    pub recorded_by: String,
    /// What the replay passed over (another version's records).
    pub notes: Vec<String>,
}

/// This host's addresses a peer could name it by.
fn own_addresses(host: HostRef<'_>) -> Vec<std::net::IpAddr> {
    let mut addrs = host.addresses().unwrap_or_default();
    addrs.retain(|a| spx_checks::facts::links::nameable(*a));
    addrs
}

#[derive(Serialize, Debug)]
pub struct Tool {
    pub name: &'static str,
    pub version: &'static str,
}

#[derive(Serialize, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub pass: usize,
    pub warn: usize,
    pub fail: usize,
    pub skip: usize,
    pub error: usize,
    /// Of the passes, how many are problems an operator allowed.
    #[serde(skip_serializing_if = "is_zero")]
    pub allowed: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Summary {
    fn add(&mut self, s: Status) {
        match s {
            Status::Pass => self.pass += 1,
            Status::Warn => self.warn += 1,
            Status::Fail => self.fail += 1,
            Status::Skip => self.skip += 1,
            Status::Error => self.error += 1,
        }
    }
}

#[derive(Serialize, Debug)]
pub struct CheckReport {
    pub id: &'static str,
    pub title: &'static str,
    pub status: Status,
    /// `<id>/<kind>`: what kind of outcome this is (the most severe, when
    /// there are several).
    pub code: String,
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<SkipCategory>,
    /// For a skip that needs a privilege: which one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs: Option<String>,
    /// Remarks this check shares with others (how it chose what it
    /// judged), each with its code; never repeated in `summary`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<spx_checks::finding::Note>,
    pub evidence: CheckEvidence,
    pub remediation: Vec<String>,
    /// Per-subject outcomes (per peer, interface, instance).
    pub findings: Vec<FindingReport>,
    /// Codes an `--allow` (or the config) turned into passes here.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<String>,
    /// Codes a `--deny` turned from warnings into failures here.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub denied: Vec<String>,
    /// The status before levels were applied, when they changed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_was: Option<Status>,
    pub duration_ms: u64,
}

/// One subject's outcome within a check.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct FindingReport {
    /// Short words are held inline ([`CompactString`]): the path matrix at
    /// 1,024 nodes has a million subjects.
    pub code: CompactString,
    pub status: Status,
    pub subject: CompactString,
    pub summary: CompactString,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_was: Option<Status>,
}

/// The policy that turns verdicts into an exit code.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// `--strict`: a warning fails the run.
    pub strict: bool,
    /// In a preflight profile: the checks that must conclude. One that
    /// skipped or errored makes the run inconclusive (a fail elsewhere still
    /// wins: a known problem is the more useful answer).
    pub required: Vec<&'static str>,
}

/// What the levels did to a run's results ([`crate::levels::apply`]):
/// the codes given a level, and what the operator should know about them.
#[derive(Debug, Clone, Default)]
pub struct Levelled {
    /// The codes allowed in this run (flags and config).
    pub allow: Vec<String>,
    /// The codes denied in this run.
    pub deny: Vec<String>,
    /// An allow that matched nothing (stale), one a preflight set aside.
    pub notes: Vec<String>,
}

/// 0: nothing failed. 1: something failed (or warned, with --strict).
/// 2: inconclusive: a check errored and none failed, or, in a profile, a
/// required check could not run.
pub fn exit_code(checks: &[CheckReport], policy: &Policy) -> i32 {
    let failed = checks
        .iter()
        .any(|c| c.status == Status::Fail || (policy.strict && c.status == Status::Warn));
    if failed {
        return 1;
    }
    let errored = checks.iter().any(|c| c.status == Status::Error);
    let required_missing = policy.required.iter().any(|id| {
        checks
            .iter()
            .find(|c| c.id == *id)
            .is_none_or(|c| !c.status.is_conclusive())
    });
    if errored || required_missing {
        return 2;
    }
    0
}

/// A cluster run (`--cluster`): 1 when anything failed on any node (its own
/// report's exit code, computed there with the same --strict and --for) or
/// in a cluster check; else 2 when a node did not answer (`None`) or was
/// inconclusive, or a cluster check errored; else 0. A cluster preflight
/// therefore never passes on a node it could not see.
pub fn cluster_exit_code(
    nodes: &[Option<i32>],
    cluster_checks: &[CheckReport],
    strict: bool,
) -> i32 {
    let cluster = exit_code(
        cluster_checks,
        &Policy {
            strict,
            ..Policy::default()
        },
    );
    if cluster == 1 || nodes.contains(&Some(1)) {
        return 1;
    }
    if cluster == 2 || nodes.iter().any(|c| *c != Some(0)) {
        return 2;
    }
    0
}

/// The report of `checks`, each already levelled (`levelled` says how); the
/// host's name and addresses are asked of `host` (in the run's scope, so a
/// replay answers with the recorded ones).
#[allow(clippy::too_many_arguments)]
pub fn build(
    checks: Vec<CheckReport>,
    levelled: Levelled,
    config: &ConfigState,
    profile: RunProfile,
    started: SystemTime,
    took: Duration,
    policy: &Policy,
    host: HostRef<'_>,
) -> Report {
    let mut summary = Summary::default();
    for c in &checks {
        summary.add(c.status);
        if c.status == Status::Pass && c.status_was.is_some() {
            summary.allowed += 1;
        }
    }
    let node = match config {
        ConfigState::Loaded { config, .. } => config.node.clone(),
        _ => None,
    };
    Report {
        schema_version: SCHEMA_VERSION,
        tool: Tool {
            name: spx_checks::spinifex::BINARY,
            version: env!("CARGO_PKG_VERSION"),
        },
        host: host.hostname(),
        node,
        profile,
        started_at: humantime::format_rfc3339_millis(started).to_string(),
        duration_ms: took.as_millis() as u64,
        exit_code: exit_code(&checks, policy),
        summary,
        checks,
        runbook: None,
        config: spx_checks::cluster::ReportedConfig::of(
            config,
            &spx_checks::catalogue::site_definitions(),
        ),
        addresses: own_addresses(host),
        allow: levelled.allow,
        deny: levelled.deny,
        notes: levelled.notes,
        replayed_from: None,
        recorded: Vec::new(),
    }
}

/// A check's evidence as the report writes it: the finding's object, and
/// for `cluster.path-matrix` in a cluster report the matrix's cells, held
/// once (the report's `path_matrix` is the same list) and written as
/// `matrix` in the place the object keeps for them. The same JSON as the
/// object with the cells in it, without a JSON tree of N(N−1) cells.
#[derive(Debug, Default)]
pub struct CheckEvidence {
    pub map: Map<String, Value>,
    /// Written as `matrix`, in its place in `map`.
    pub matrix: Option<Arc<Vec<Cell>>>,
}

impl From<Map<String, Value>> for CheckEvidence {
    fn from(map: Map<String, Value>) -> CheckEvidence {
        CheckEvidence { map, matrix: None }
    }
}

impl CheckEvidence {
    /// Each key and its value as JSON text (the matrix's cells written
    /// from the cells).
    pub fn texts(&self) -> impl Iterator<Item = (&str, String)> {
        self.map.iter().map(|(k, v)| {
            let text = match (&self.matrix, k.as_str()) {
                (Some(cells), "matrix") => {
                    serde_json::to_string(&**cells).expect("cells always serialize")
                }
                _ => v.to_string(),
            };
            (k.as_str(), text)
        })
    }
}

impl Serialize for CheckEvidence {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.map.len()))?;
        for (k, v) in &self.map {
            match (&self.matrix, k.as_str()) {
                (Some(cells), "matrix") => m.serialize_entry(k, &**cells)?,
                _ => m.serialize_entry(k, v)?,
            }
        }
        m.end()
    }
}

pub fn check_report(o: Outcome) -> CheckReport {
    let id = o.check.id();
    let f = o.finding;
    CheckReport {
        id,
        title: o.check.title(),
        status: f.status,
        code: f.kind.code(id),
        summary: as_invoked(&f.summary),
        skip_reason: f.kind.skip,
        needs: f.needs,
        notes: f.notes,
        evidence: CheckEvidence::from(f.evidence),
        remediation: f.remediation.iter().map(|s| as_invoked(s)).collect(),
        findings: converted(f.findings, |s| FindingReport {
            code: s.kind.compact_code(id),
            status: s.status(),
            subject: s.subject,
            summary: invoked(s.summary),
            needs: s.needs,
            status_was: None,
        }),
        allowed: Vec::new(),
        denied: Vec::new(),
        status_was: None,
        duration_ms: o.duration.as_millis() as u64,
    }
}

/// [`as_invoked`] that keeps text it cannot change (no `` `spx doctor``)
/// as it is, copying nothing.
fn invoked(text: CompactString) -> CompactString {
    if text.contains("`spx doctor") {
        as_invoked(&text).into()
    } else {
        text
    }
}

/// Each item of `from` converted, in order, while `from` gives back its
/// memory as it empties: a million subjects (the path matrix at 1,024
/// nodes: 84 MB, and 109 MB once converted) are never whole twice at once.
fn converted<T, U>(mut from: Vec<T>, f: impl Fn(T) -> U) -> Vec<U> {
    let mut out = Vec::with_capacity(from.len());
    from.reverse();
    while let Some(x) = from.pop() {
        out.push(f(x));
        if from.capacity() > 4096 && from.len() < from.capacity() / 2 {
            from.shrink_to_fit();
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn a_list_is_converted_in_order_whatever_its_length() {
        for n in [0, 1, 4096, 10_000] {
            let v: Vec<u32> = (0..n).collect();
            let out = converted(v, |x| u64::from(x) * 2);
            assert_eq!(out, (0..n).map(|x| u64::from(x) * 2).collect::<Vec<_>>());
        }
    }

    pub(crate) fn c(id: &'static str, status: Status) -> CheckReport {
        CheckReport {
            id,
            title: "",
            status,
            code: format!("{id}/{status}"),
            summary: String::new(),
            skip_reason: None,
            needs: None,
            notes: vec![],
            evidence: CheckEvidence::default(),
            remediation: vec![],
            findings: vec![],
            allowed: vec![],
            denied: vec![],
            status_was: None,
            duration_ms: 0,
        }
    }

    #[test]
    fn exit_codes_follow_js_probe() {
        let p = Policy::default();
        assert_eq!(
            exit_code(&[c("a.a", Status::Pass), c("b.b", Status::Skip)], &p),
            0
        );
        assert_eq!(exit_code(&[c("a.a", Status::Warn)], &p), 0);
        assert_eq!(
            exit_code(&[c("a.a", Status::Fail), c("b.b", Status::Error)], &p),
            1
        );
        assert_eq!(
            exit_code(&[c("a.a", Status::Pass), c("b.b", Status::Error)], &p),
            2
        );
        assert_eq!(exit_code(&[], &p), 0);
    }

    #[test]
    fn a_cluster_fails_on_any_node_and_never_passes_on_a_silent_one() {
        let ok = [c("cluster.reachable", Status::Pass)];
        assert_eq!(cluster_exit_code(&[Some(0), Some(0)], &ok, false), 0);
        assert_eq!(cluster_exit_code(&[Some(0), Some(1)], &ok, false), 1);
        assert_eq!(cluster_exit_code(&[Some(0), None], &ok, false), 2);
        assert_eq!(cluster_exit_code(&[Some(2), Some(0)], &ok, false), 2);
        assert_eq!(
            cluster_exit_code(&[Some(1), None], &ok, false),
            1,
            "a failure wins"
        );
        let bad = [c("cluster.path-matrix", Status::Fail)];
        assert_eq!(cluster_exit_code(&[Some(0), None], &bad, false), 1);
        let warn = [c("cluster.config-drift", Status::Warn)];
        assert_eq!(cluster_exit_code(&[Some(0)], &warn, false), 0);
        assert_eq!(cluster_exit_code(&[Some(0)], &warn, true), 1);
    }

    #[test]
    fn strict_makes_warnings_fail() {
        let p = Policy {
            strict: true,
            ..Policy::default()
        };
        assert_eq!(exit_code(&[c("a.a", Status::Warn)], &p), 1);
    }

    #[test]
    fn a_profile_never_passes_on_missing_evidence() {
        let p = Policy {
            strict: false,
            required: vec!["mtu.path"],
        };
        assert_eq!(exit_code(&[c("mtu.path", Status::Skip)], &p), 2);
        assert_eq!(
            exit_code(&[c("mtu.path", Status::Pass), c("x.y", Status::Skip)], &p),
            0
        );
        assert_eq!(
            exit_code(&[c("mtu.path", Status::Skip), c("x.y", Status::Fail)], &p),
            1
        );
        assert_eq!(
            exit_code(&[c("x.y", Status::Pass)], &p),
            2,
            "a required check that did not run"
        );
    }
}

#[cfg(test)]
mod evidence_tests {
    use std::sync::Arc;

    use serde_json::{json, Map, Value};
    use spx_checks::checks::cluster_path_matrix::{Cell, CellVerdict};

    use super::CheckEvidence;

    /// The matrix written from its cells, in the place the evidence keeps
    /// for it, is the same JSON (pretty, as the report is) as the object
    /// with the cells in it.
    #[test]
    fn the_matrix_is_written_in_its_place_as_the_object_would_write_it() {
        let (a, b): (Arc<str>, Arc<str>) = ("n0".into(), "n1".into());
        let cells = vec![
            Cell {
                from: a.clone(),
                to: b.clone(),
                verdict: CellVerdict::Ok,
                path_mtu: Some(9000),
                path_mtu_inexact: false,
                target: Some(9000),
                detail: None,
            },
            Cell {
                from: b,
                to: a,
                verdict: CellVerdict::BlackHole,
                path_mtu: Some(1500),
                path_mtu_inexact: true,
                target: Some(9000),
                detail: Some("n1 did not probe n0".into()),
            },
        ];
        let object = |matrix: Value| -> Map<String, Value> {
            let Value::Object(m) = json!({
                "nodes": ["n0", "n1"],
                "matrix": matrix,
                "failing": ["n1->n0"],
            }) else {
                unreachable!()
            };
            m
        };
        let whole = object(serde_json::to_value(&cells).unwrap());
        let evidence = CheckEvidence {
            map: object(json!([])),
            matrix: Some(Arc::new(cells)),
        };
        assert_eq!(
            serde_json::to_string_pretty(&evidence).unwrap(),
            serde_json::to_string_pretty(&whole).unwrap()
        );
        let texts: Vec<(&str, String)> = evidence.texts().collect();
        assert_eq!(texts[1].1, whole["matrix"].to_string());
        // Without cells, the object as it is.
        let plain = CheckEvidence::from(object(json!([])));
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            r#"{"nodes":["n0","n1"],"matrix":[],"failing":["n1->n0"]}"#
        );
    }
}
