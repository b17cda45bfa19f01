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
use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::evidence::Evidence;
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
    /// The `[nodes.*]` names, sorted. Every node of a cluster lists the same
    /// names, so a list read equal to the one read before it is that one,
    /// shared ([`NodeReport::read`]): at 1,024 nodes, 1,024 names once
    /// rather than a million.
    pub nodes: Arc<[String]>,
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
#[derive(Clone, Debug, PartialEq)]
pub struct CheckResult {
    pub id: String,
    pub status: Status,
    pub code: Option<String>,
    pub summary: String,
    /// The evidence object, as the node wrote it: read on demand.
    evidence: RawEvidence,
}

/// A check's evidence object as text: where it lies in the report the node
/// sent, which is held once ([`ReportText`]), so the typed view of a report
/// costs a few strings per check, not a second copy of every peer's result.
#[derive(Clone)]
struct RawEvidence {
    doc: ReportText,
    span: Range<usize>,
}

impl RawEvidence {
    fn text(&self) -> &str {
        &self.doc.as_str()[self.span.clone()]
    }

    /// `{}` or absent: nothing measured.
    fn is_empty(&self) -> bool {
        let t = self.text().trim();
        t.is_empty() || t.trim_start_matches('{').trim_start().starts_with('}')
    }
}

impl PartialEq for RawEvidence {
    fn eq(&self, other: &RawEvidence) -> bool {
        self.text() == other.text()
    }
}

impl std::fmt::Debug for RawEvidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RawEvidence({} bytes)", self.span.len())
    }
}

impl CheckResult {
    /// The evidence as the check that wrote it types it; `None` when the
    /// result carries none of that shape (a skip before measuring).
    pub fn evidence_as<E: Evidence>(&self) -> Option<E> {
        self.evidence_part()
    }

    /// Part of the evidence, read as `T`: the fields `T` does not name are
    /// skipped, never made. For a reader that needs a few fields of every
    /// row of a large evidence (`T` names them as the check's own type
    /// does, and a test of that reader ties the two).
    pub fn evidence_part<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        if self.evidence.is_empty() {
            return None;
        }
        serde_json::from_str(self.evidence.text()).ok()
    }
}

/// A node's report, typed.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeReport {
    pub tool: ReportedTool,
    pub config: Option<ReportedConfig>,
    pub addresses: Vec<IpAddr>,
    pub exit_code: i32,
    pub checks: Vec<CheckResult>,
}

/// A report as it is read: the evidence objects borrowed from the text.
/// It also keeps what [`NodeReport::read_shaped`] looks at (a few small
/// values), so the shape a cluster run requires is checked in the same
/// one pass over the text.
#[derive(Deserialize)]
struct Borrowed<'a> {
    #[serde(default)]
    schema_version: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    kind: bool,
    #[serde(default)]
    node: Option<Value>,
    tool: Object<ToolRead>,
    #[serde(default, deserialize_with = "or_none")]
    config: Option<ReportedConfig>,
    #[serde(default, deserialize_with = "addresses")]
    addresses: Vec<IpAddr>,
    exit_code: i32,
    #[serde(borrow)]
    checks: Vec<Object<BorrowedCheck<'a>>>,
}

#[derive(Deserialize)]
struct ToolRead {
    version: String,
    #[serde(default)]
    name: Option<Value>,
}

#[derive(Deserialize)]
struct BorrowedCheck<'a> {
    id: String,
    status: Status,
    #[serde(default)]
    code: Option<String>,
    summary: String,
    #[serde(default, borrow, deserialize_with = "object")]
    evidence: Option<&'a RawValue>,
    #[serde(default, borrow)]
    remediation: Option<&'a RawValue>,
}

impl Borrowed<'_> {
    /// `node`'s JSON v1 report, of the shape a cluster run takes: the
    /// same rules as the cluster run's own check of a report on a tree
    /// (every check with an id, a status, a summary, an evidence object
    /// and a remediation list).
    fn shaped(&self, node: &str) -> bool {
        self.schema_version.as_ref().and_then(Value::as_u64) == Some(1)
            && !self.kind
            && self.tool.0.name.as_ref().is_some_and(Value::is_string)
            && self.node.as_ref().and_then(Value::as_str) == Some(node)
            && self.checks.iter().all(|c| {
                c.0.evidence.is_some() && c.0.remediation.is_some_and(|r| r.get().starts_with('['))
            })
    }
}

/// A JSON object read as `T`. Serde's derive also reads a struct from an
/// array of its fields in order; no report is written that way, and a
/// check of the report on a tree would not take one.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Fields<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Fields(std::marker::PhantomData))
            .map(Object)
    }
}

/// True for a key that is there, whatever its value (`null` too).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d)?;
    Ok(true)
}

impl<'a> Borrowed<'a> {
    /// The report read from its text: a JSON object, or nothing.
    fn of(doc: &'a ReportText) -> Option<Borrowed<'a>> {
        serde_json::from_str::<Object<Borrowed<'a>>>(doc.as_str())
            .ok()
            .map(|o| o.0)
    }
}

/// A JSON object, kept as text (anything else is not a report).
fn object<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    let raw = <&RawValue>::deserialize(d)?;
    if raw.get().starts_with('{') {
        Ok(Some(raw))
    } else {
        Err(serde::de::Error::custom("evidence is not an object"))
    }
}

impl NodeReport {
    /// Read a JSON v1 node report; `None` when it is not one.
    pub fn read(doc: &ReportText) -> Option<NodeReport> {
        let b = Borrowed::of(doc)?;
        Some(NodeReport::typed(doc, b))
    }

    /// Read `node`'s JSON v1 report, in one pass, only when it has the
    /// shape a cluster run requires of a node's report: schema_version 1,
    /// no `kind`, a tool with a name and a version, `node` itself, and
    /// every check with an id, a status, a summary, an evidence object and
    /// a remediation list. `None` means "look closer": the caller checks it
    /// on a tree, which says exactly what is wrong.
    pub fn read_shaped(doc: &ReportText, node: &str) -> Option<NodeReport> {
        let b = Borrowed::of(doc)?;
        b.shaped(node).then(|| NodeReport::typed(doc, b))
    }

    fn typed(doc: &ReportText, b: Borrowed<'_>) -> NodeReport {
        let mut config = b.config;
        if let Some(c) = config.as_mut() {
            c.nodes = shared_names(&c.nodes);
        }
        let base = doc.as_str().as_ptr() as usize;
        let checks = b
            .checks
            .into_iter()
            .map(|Object(c)| {
                let span = match c.evidence {
                    Some(raw) => {
                        let at = raw.get().as_ptr() as usize - base;
                        at..at + raw.get().len()
                    }
                    None => 0..0,
                };
                CheckResult {
                    id: c.id,
                    status: c.status,
                    code: c.code,
                    summary: c.summary,
                    evidence: RawEvidence {
                        doc: doc.clone(),
                        span,
                    },
                }
            })
            .collect();
        NodeReport {
            tool: ReportedTool {
                version: b.tool.0.version,
            },
            config,
            addresses: b.addresses,
            exit_code: b.exit_code,
            checks,
        }
    }

    /// The result of check `id`, when the report has one.
    pub fn check(&self, id: &str) -> Option<&CheckResult> {
        self.checks.iter().find(|c| c.id == id)
    }
}

thread_local! {
    /// The last `[nodes.*]` list read on this thread.
    static LAST_NAMES: std::cell::RefCell<Option<Arc<[String]>>> =
        const { std::cell::RefCell::new(None) };
}

/// `names`, or the list read before it when that one is equal (shared).
fn shared_names(names: &Arc<[String]>) -> Arc<[String]> {
    LAST_NAMES.with(|last| {
        let mut last = last.borrow_mut();
        match &*last {
            Some(l) if **l == **names => Arc::clone(l),
            _ => {
                *last = Some(Arc::clone(names));
                Arc::clone(names)
            }
        }
    })
}

/// A node's report exactly as it came (JSON text), held once and shared:
/// by the typed view's evidence, and by the cluster report that embeds it.
/// It is checked as JSON once, when it is made, and then written as the
/// text it is, never checked again.
/// (The checked text stays in the allocation it was read into: an `Arc`
/// of the box, not an `Arc` made by copying it.)
#[derive(Clone)]
pub struct ReportText(Arc<Box<RawValue>>);

impl ReportText {
    /// The text, when it is one JSON value (surrounding space dropped).
    pub fn parse(text: String) -> Result<ReportText, serde_json::Error> {
        RawValue::from_string(text).map(ReportText::from)
    }

    /// `value`, written compact.
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Result<ReportText, serde_json::Error> {
        serde_json::value::to_raw_value(value).map(ReportText::from)
    }

    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The report as a JSON tree, made now: for what reads it by key, one
    /// node at a time.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.as_str()).unwrap_or(Value::Null)
    }
}

impl From<Box<RawValue>> for ReportText {
    fn from(raw: Box<RawValue>) -> ReportText {
        ReportText(Arc::new(raw))
    }
}

impl From<Value> for ReportText {
    fn from(v: Value) -> ReportText {
        ReportText::of(&v).expect("a JSON tree always serializes")
    }
}

impl PartialEq for ReportText {
    fn eq(&self, other: &ReportText) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ReportText {}

impl std::fmt::Debug for ReportText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReportText({} bytes)", self.as_str().len())
    }
}

/// Written as the JSON value it holds.
impl Serialize for ReportText {
    /// A compact report (as an agent sends it over the bus) is written as
    /// the text it is, already checked when it was made: at 1,024 nodes
    /// the reports are 465 MiB, and checking them again as they were
    /// written took 0.6 s. An indented one (as `--format json` prints it
    /// over ssh) is read as a tree of this one report and indented again
    /// at its depth, so a pretty writer indents it as it indents the rest.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !self.as_str().contains('\n') {
            return self.0.serialize(s);
        }
        let v: Value = serde_json::from_str(self.as_str()).map_err(serde::ser::Error::custom)?;
        v.serialize(s)
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
    fn a_compact_report_is_written_as_it_came_and_an_indented_one_indented_again() {
        let doc = json!({"schema_version": 1, "node": "n1", "checks": [{"id": "x.y", "summary": "\u{1b}[2J é"}]});
        let compact = ReportText::parse(serde_json::to_string(&doc).unwrap()).unwrap();
        let indented = ReportText::parse(serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        #[derive(Serialize)]
        struct Node<'a> {
            report: &'a ReportText,
        }
        #[derive(Serialize)]
        struct Doc<'a> {
            nodes: [Node<'a>; 1],
        }
        let outer = |r: &ReportText| {
            serde_json::to_string_pretty(&Doc {
                nodes: [Node { report: r }],
            })
            .unwrap()
        };
        let (a, b) = (outer(&compact), outer(&indented));
        // The compact text verbatim, escapes and all.
        assert!(a.contains(compact.as_str()), "{a}");
        assert!(!a.contains('\u{1b}'), "{a}");
        // The indented one at its depth: every line of it indented.
        assert!(b.contains("\n        \"schema_version\": 1"), "{b}");
        let back =
            |t: &str| serde_json::from_str::<Value>(t).unwrap()["nodes"][0]["report"].clone();
        assert_eq!(back(&a), doc);
        assert_eq!(back(&b), doc);
        // Text that is not JSON is never a report's text.
        assert!(ReportText::parse("{\"a\":1".to_owned()).is_err());
        assert!(ReportText::parse("{} {}".to_owned()).is_err());
    }

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
        let read = |doc: &Value| NodeReport::read(&doc.clone().into());
        let r = read(&doc).unwrap();
        assert!(r.config.as_ref().unwrap().ipsec_wanted());
        assert_eq!(r.addresses, ["198.18.0.1".parse::<IpAddr>().unwrap()]);
        assert_eq!(r.check("x.y").unwrap().status, Status::Pass);
        // Another version's config shape is no config, not a lost report.
        let mut old = doc.clone();
        old["config"] = json!({"ipsec": "on"});
        assert_eq!(read(&old).unwrap().config, None);
        assert_eq!(read(&json!({"checks": []})), None);
        // Evidence that is not an object is not a report; an empty one is
        // no evidence.
        let mut bad = doc.clone();
        bad["checks"][0]["evidence"] = json!([1]);
        assert_eq!(read(&bad), None);
        let mut empty = doc.clone();
        empty["checks"][0]["evidence"] = json!({});
        let r = read(&empty).unwrap();
        assert_eq!(r.check("x.y").unwrap().evidence_as::<Counted>(), None);
    }

    /// Reports that list the same `[nodes.*]` names share one list; a
    /// report that lists others keeps its own.
    #[test]
    fn equal_node_lists_are_held_once() {
        let with = |nodes: &[&str]| {
            let doc = json!({
                "tool": {"name": "spx-doctor", "version": "0.1.0"},
                "exit_code": 0,
                "config": {"path": "/etc/spinifex/spinifex.toml", "node": "a", "ipsec_enabled": true, "underlay_mtu": 1500, "nodes": nodes},
                "checks": [],
            });
            NodeReport::read(&doc.into()).unwrap().config.unwrap().nodes
        };
        let (a, b) = (with(&["a", "b"]), with(&["a", "b"]));
        assert!(Arc::ptr_eq(&a, &b));
        let c = with(&["a", "c"]);
        assert_eq!(&*c, ["a".to_owned(), "c".to_owned()]);
        assert!(!Arc::ptr_eq(&a, &c));
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Counted {
        #[serde(default)]
        n: u32,
    }
    impl Evidence for Counted {}

    #[test]
    fn evidence_reads_back_from_the_text_the_node_sent() {
        let text = r#"{"schema_version":1,"tool":{"name":"spx-doctor","version":"0.1.0"},"exit_code":0,
            "checks":[{"id":"a.b","status":"pass","summary":"s","evidence":{ "n" : 7 }},
                      {"id":"c.d","status":"skip","summary":"s"}]}"#;
        let r = NodeReport::read(&ReportText::parse(text.to_owned()).unwrap()).unwrap();
        assert_eq!(
            r.check("a.b").unwrap().evidence_as::<Counted>(),
            Some(Counted { n: 7 })
        );
        assert_eq!(r.check("c.d").unwrap().evidence_as::<Counted>(), None);
        // The report is written back as the JSON it is.
        let doc = ReportText::parse(text.to_owned()).unwrap();
        assert_eq!(
            serde_json::to_value(&doc).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
    }
}
