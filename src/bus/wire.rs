//! What the doctor says on Spinifex's NATS bus: a run request, the
//! headers every answer carries, and the typed refusal an agent sends
//! instead of a report.
//!
//! The request is the whole of what a remote node can ask of an agent, so
//! it is a fixed vocabulary read strictly: which checks (ids or
//! categories, as `--check`/`--skip` take them), the preflight profile,
//! the run's timeout and sample window, which node reads OVN for the
//! cluster, and an id. Nothing in it names a file, a command, an address
//! or a config: a field outside the vocabulary is refused by name, a check
//! that is not in the catalog is refused, and every duration is bounded.
//! An agent therefore never reads a file it would not read anyway, never
//! runs anything, and never probes anyone a plain run would not.
//!
//! This file depends on nothing of the binary (only serde, serde_json and
//! spx_checks), so the fuzz target `bus_request` builds it as it is.

use std::net::IpAddr;
use std::time::Duration;

use serde_json::{Map, Value};
use spx_checks::facts::qemu::instance::is_instance_id;
use spx_checks::path::endpoint::is_eni_id;
use spx_checks::path::node::{GuestRef, NodeQuery, Size, MAX_SIZE, MIN_SIZE};
use spx_checks::settings::Preflight;
use spx_checks::validate::{self, shown};

/// Every agent answers this (no queue group): the whole cluster in one
/// request, as `spx get nodes` asks `spinifex.node.status`.
pub const SUBJECT_ALL: &str = "spinifex.doctor.run";

/// The subject only `node`'s agent answers.
pub fn node_subject(node: &str) -> String {
    format!("spinifex.doctor.{node}.run")
}

/// The subject only `node`'s agent answers a path request on: its side
/// of a guest's path ([`PathRequest`]).
pub fn node_path_subject(node: &str) -> String {
    format!("spinifex.doctor.{node}.path")
}

/// `path`: the reply is this node's side of a path (a path-facts document).
pub const REPLY_PATH: &str = "path";

/// The subject only `node`'s agent answers a [`Fetch`] on: a report it
/// holds for a request whose `inline_max_bytes` it did not fit.
pub fn node_fetch_subject(node: &str) -> String {
    format!("spinifex.doctor.{node}.fetch")
}

/// The least and most a request's `inline_max_bytes` may say.
pub const MIN_INLINE: usize = 1024;
pub const MAX_INLINE: usize = 16 << 20;

/// A request is a few hundred bytes; more is refused unread.
pub const MAX_REQUEST_BYTES: usize = 4096;
/// The longest run a request may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// At most this many entries in `checks` or `skips`.
const MAX_SELECTORS: usize = 64;
/// A request id: 1 to 64 of `[A-Za-z0-9._-]`.
const MAX_ID: usize = 64;

/// Headers of every answer (and `traceparent` on requests).
pub const HEADER_NODE: &str = "Spx-Doctor-Node";
pub const HEADER_REQUEST: &str = "Spx-Doctor-Request";
/// `accepted` (an empty acknowledgement, sent at once), `report` (the
/// body is the node's JSON v1 report), `held` (the report is larger than
/// the request's `inline_max_bytes`: the agent holds it for a [`Fetch`],
/// and [`HEADER_REPORT_BYTES`] says its size) or `error` (an
/// [`ErrorReply`]).
pub const HEADER_REPLY: &str = "Spx-Doctor-Reply";
/// A `held` answer's report size, in bytes.
pub const HEADER_REPORT_BYTES: &str = "Spx-Doctor-Report-Bytes";
/// The agent's bound on runs per minute.
pub const HEADER_RUNS_PER_MINUTE: &str = "Spx-Doctor-Runs-Per-Minute";
/// How many requests the run that made this report answered.
pub const HEADER_SHARED_BY: &str = "Spx-Doctor-Shared-By";
/// W3C trace context, as Spinifex's `Gather` carries it.
pub const HEADER_TRACEPARENT: &str = "traceparent";

pub const REPLY_ACCEPTED: &str = "accepted";
pub const REPLY_REPORT: &str = "report";
pub const REPLY_HELD: &str = "held";
pub const REPLY_ERROR: &str = "error";

/// One run request, as read and validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Echoed in every answer's [`HEADER_REQUEST`].
    pub id: String,
    /// `--check`: ids or categories (empty: the default set).
    pub checks: Vec<String>,
    /// `--skip`.
    pub skips: Vec<String>,
    /// `--for`.
    pub profile: Option<Preflight>,
    /// `--timeout` of the node's run, and how long the requester waits.
    pub timeout: Duration,
    /// `--sample`.
    pub sample: Duration,
    /// The node that reads OVN NB/SB for the cluster (absent: the agent
    /// reads them itself).
    pub ovn_read_by: Option<String>,
    /// The largest report the requester takes in the answer itself
    /// (absent: any). A larger one is held for a [`Fetch`], so a
    /// requester of many nodes paces the bytes it is sent instead of
    /// every node sending at once ([`MIN_INLINE`]..=[`MAX_INLINE`]).
    pub inline_max: Option<usize>,
}

/// What two requests must share to share one run: everything that
/// changes what is measured (not the id, not the timeout).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RunKey {
    pub checks: Vec<String>,
    pub skips: Vec<String>,
    pub profile: Option<Preflight>,
    pub sample: Duration,
    pub ovn_read_by: Option<String>,
    /// A path request's question: this node's side of a guest's path
    /// instead of a run of the checks. It shares only with the same
    /// question.
    pub path: Option<NodeQuery>,
}

impl RunKey {
    /// The same checks, profile and sample window, whoever reads OVN (a
    /// path request measures like nothing but itself).
    pub fn measures_like(&self, other: &RunKey) -> bool {
        self.checks == other.checks
            && self.skips == other.skips
            && self.profile == other.profile
            && self.sample == other.sample
            && self.path.is_none()
            && other.path.is_none()
    }
}

/// Why an agent did not run a request: the `kind` a requester acts on,
/// and one line for the operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub kind: RefusalKind,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefusalKind {
    /// More than [`MAX_REQUEST_BYTES`].
    Oversize,
    /// Not a JSON object (or not UTF-8).
    NotJson,
    /// A field outside the vocabulary (a path, a config, `record`, …).
    UnknownField,
    /// A field of the vocabulary with a value it cannot take.
    BadValue,
    /// A check id or category that is not in the catalog.
    UnknownCheck,
    /// A timeout over [`MAX_TIMEOUT`].
    TimeoutTooLong,
    /// Another run kept the agent busy past this request's deadline.
    Busy,
    /// The agent's runs-per-minute bound was reached.
    RateLimited,
    /// The report does not fit the server's max_payload.
    TooLarge,
    /// The run itself failed (a bug: the report could not be made).
    Internal,
    /// A path request for a guest this node does not run.
    NotHere,
    /// A path request to probe an address outside this node's peer list.
    PeerNotListed,
}

impl RefusalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalKind::Oversize => "oversize",
            RefusalKind::NotJson => "not-json",
            RefusalKind::UnknownField => "unknown-field",
            RefusalKind::BadValue => "bad-value",
            RefusalKind::UnknownCheck => "unknown-check",
            RefusalKind::TimeoutTooLong => "timeout-too-long",
            RefusalKind::Busy => "busy",
            RefusalKind::RateLimited => "rate-limited",
            RefusalKind::TooLarge => "too-large",
            RefusalKind::Internal => "internal",
            RefusalKind::NotHere => "not-here",
            RefusalKind::PeerNotListed => "peer-not-listed",
        }
    }
}

impl Refusal {
    fn new(kind: RefusalKind, message: impl Into<String>) -> Refusal {
        Refusal {
            kind,
            message: message.into(),
        }
    }
}

/// The body of an `error` answer: `{"error": {...}}`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ErrorReply {
    pub error: ErrorBody,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ErrorBody {
    pub kind: RefusalKind,
    pub message: String,
    /// The agent's node.
    pub node: String,
    /// The request's id, when it had a readable one.
    pub request: Option<String>,
    /// The agent's bound (rate-limited and busy say it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_per_minute: Option<u32>,
    /// When a run could start again (rate-limited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl ErrorReply {
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("an error reply always serializes")
    }

    /// Read an agent's error answer (outside data: strictly).
    pub fn parse(bytes: &[u8]) -> Option<ErrorReply> {
        if bytes.len() > MAX_REQUEST_BYTES * 4 {
            return None;
        }
        serde_json::from_slice(bytes).ok()
    }
}

const FIELDS: [&str; 8] = [
    "id",
    "checks",
    "skips",
    "profile",
    "timeout_ms",
    "sample_ms",
    "ovn_read_by",
    "inline_max_bytes",
];

impl Request {
    /// The request as sent: compact JSON, absent fields left out.
    pub fn to_json(&self) -> Vec<u8> {
        let mut m = Map::new();
        m.insert("id".into(), Value::from(self.id.clone()));
        if !self.checks.is_empty() {
            m.insert("checks".into(), Value::from(self.checks.clone()));
        }
        if !self.skips.is_empty() {
            m.insert("skips".into(), Value::from(self.skips.clone()));
        }
        if let Some(p) = self.profile {
            m.insert("profile".into(), Value::from(p.name()));
        }
        m.insert(
            "timeout_ms".into(),
            Value::from(self.timeout.as_millis() as u64),
        );
        m.insert(
            "sample_ms".into(),
            Value::from(self.sample.as_millis() as u64),
        );
        if let Some(n) = &self.ovn_read_by {
            m.insert("ovn_read_by".into(), Value::from(n.clone()));
        }
        if let Some(n) = self.inline_max {
            m.insert("inline_max_bytes".into(), Value::from(n as u64));
        }
        serde_json::to_vec(&Value::Object(m)).expect("a request always serializes")
    }

    /// What a shared run must agree on.
    pub fn key(&self) -> RunKey {
        let sorted = |v: &[String]| {
            let mut v = v.to_vec();
            v.sort();
            v.dedup();
            v
        };
        RunKey {
            checks: sorted(&self.checks),
            skips: sorted(&self.skips),
            profile: self.profile,
            sample: self.sample,
            ovn_read_by: self.ovn_read_by.clone(),
            path: None,
        }
    }

    /// Read a request from the bus, refusing anything outside the
    /// vocabulary. Also returns the id when one could be read, so even a
    /// refusal names the request it answers.
    pub fn parse(bytes: &[u8]) -> Result<Request, (Option<String>, Refusal)> {
        let (id, map) = object_with_id(bytes)?;
        let fail = |kind, message: String| Err((Some(id.clone()), Refusal::new(kind, message)));
        if let Some(k) = map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return fail(
                RefusalKind::UnknownField,
                format!(
                    "field {} is not part of a request (it takes only {}): an agent reads only its own config and runs only its own checks",
                    shown(k),
                    FIELDS.join(", ")
                ),
            );
        }
        let selectors = |name: &str| -> Result<Vec<String>, Refusal> {
            let Some(v) = map.get(name) else {
                return Ok(Vec::new());
            };
            let Some(list) = v.as_array() else {
                return Err(Refusal::new(
                    RefusalKind::BadValue,
                    format!("{name}: a list of check ids or categories"),
                ));
            };
            if list.len() > MAX_SELECTORS {
                return Err(Refusal::new(
                    RefusalKind::BadValue,
                    format!(
                        "{name}: at most {MAX_SELECTORS} entries, not {}",
                        list.len()
                    ),
                ));
            }
            let mut out = Vec::with_capacity(list.len());
            for item in list {
                let Some(word) = item.as_str() else {
                    return Err(Refusal::new(
                        RefusalKind::BadValue,
                        format!("{name}: {} is not a string", shown(&item.to_string())),
                    ));
                };
                // Validated against the catalog (which names no file): the
                // agent's, its own site checks among them.
                spx_checks::select::select(&spx_checks::catalogue::all(), &[word.to_owned()], &[])
                    .map_err(|_| {
                        Refusal::new(
                            RefusalKind::UnknownCheck,
                            format!(
                                "{name}: unknown check {} (see `spx-doctor list`)",
                                shown(word)
                            ),
                        )
                    })?;
                out.push(word.to_owned());
            }
            Ok(out)
        };
        let checks = match selectors("checks") {
            Ok(c) => c,
            Err(r) => return Err((Some(id), r)),
        };
        let skips = match selectors("skips") {
            Ok(c) => c,
            Err(r) => return Err((Some(id), r)),
        };
        let profile = match map.get("profile") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => match Preflight::ALL.iter().find(|p| p.name() == s) {
                Some(p) => Some(*p),
                None => {
                    return fail(
                        RefusalKind::BadValue,
                        format!(
                            "profile: {} is not a preflight ({})",
                            shown(s),
                            Preflight::ALL.map(Preflight::name).join(", ")
                        ),
                    )
                }
            },
            Some(other) => {
                return fail(
                    RefusalKind::BadValue,
                    format!("profile: {} is not a string", shown(&other.to_string())),
                )
            }
        };
        let millis = |name: &str| -> Result<Option<Duration>, Refusal> {
            match map.get(name) {
                None => Ok(None),
                Some(v) => match v.as_u64() {
                    Some(ms) if ms > 0 => Ok(Some(Duration::from_millis(ms))),
                    _ => Err(Refusal::new(
                        RefusalKind::BadValue,
                        format!(
                            "{name}: {} is not a positive number of milliseconds",
                            shown(&v.to_string())
                        ),
                    )),
                },
            }
        };
        let timeout = match millis("timeout_ms") {
            Ok(Some(t)) => t,
            Ok(None) => {
                return fail(
                    RefusalKind::BadValue,
                    "timeout_ms: missing (the requester's deadline)".into(),
                )
            }
            Err(r) => return Err((Some(id), r)),
        };
        if timeout > MAX_TIMEOUT {
            return fail(
                RefusalKind::TimeoutTooLong,
                format!(
                    "timeout_ms {}: an agent runs at most {} s per request",
                    timeout.as_millis(),
                    MAX_TIMEOUT.as_secs()
                ),
            );
        }
        let sample = match millis("sample_ms") {
            Ok(s) => s.unwrap_or(Duration::from_secs(1)),
            Err(r) => return Err((Some(id), r)),
        };
        if sample >= timeout {
            return fail(
                RefusalKind::BadValue,
                format!(
                    "sample_ms {} must be shorter than timeout_ms {}",
                    sample.as_millis(),
                    timeout.as_millis()
                ),
            );
        }
        let ovn_read_by = match map.get("ovn_read_by") {
            None | Some(Value::Null) => None,
            Some(Value::String(n)) if validate::node_name(n).is_ok() => Some(n.clone()),
            Some(other) => {
                return fail(
                    RefusalKind::BadValue,
                    format!(
                        "ovn_read_by: {} is not a node name",
                        shown(&other.to_string())
                    ),
                )
            }
        };
        let inline_max = match map.get("inline_max_bytes") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64() {
                Some(n) if (MIN_INLINE as u64..=MAX_INLINE as u64).contains(&n) => {
                    Some(n as usize)
                }
                _ => {
                    return fail(
                        RefusalKind::BadValue,
                        format!(
                            "inline_max_bytes: {} is not a number of bytes from {MIN_INLINE} to {MAX_INLINE}",
                            shown(&v.to_string())
                        ),
                    )
                }
            },
        };
        Ok(Request {
            id,
            checks,
            skips,
            profile,
            timeout,
            sample,
            ovn_read_by,
            inline_max,
        })
    }
}

/// The refusal an agent from before `inline_max_bytes` gives a request
/// that carries it (its words then, for the swarm to say them alike).
#[allow(dead_code)] // The swarm's (bench/swarm), and the tests'.
pub fn before_inline_max_refusal() -> Refusal {
    Refusal::new(
        RefusalKind::UnknownField,
        format!(
            "field \"inline_max_bytes\" is not part of a request (it takes only {}): an agent reads only its own config and runs only its own checks",
            FIELDS[..7].join(", ")
        ),
    )
}

/// Whether `refusal` is an agent from before `inline_max_bytes` refusing
/// it: the requester asks that node again without it.
pub fn refuses_inline_max(kind: RefusalKind, message: &str) -> bool {
    kind == RefusalKind::UnknownField && message.contains("\"inline_max_bytes\"")
}

/// A fetch: "the report you hold for request `id`", sent on
/// [`node_fetch_subject`] after a `held` answer. It names nothing but the
/// id the agent itself said it holds; an agent that holds no report for
/// that id says nothing (another agent answering as the same node may
/// hold it), and a fetch outside the vocabulary is refused like a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetch {
    pub id: String,
}

impl Fetch {
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({ "id": self.id }))
            .expect("a fetch always serializes")
    }

    pub fn parse(bytes: &[u8]) -> Result<Fetch, Refused> {
        let (id, map) = object_with_id(bytes)?;
        if let Some(k) = map.keys().find(|k| k.as_str() != "id") {
            return Err((
                Some(id),
                Refusal::new(
                    RefusalKind::UnknownField,
                    format!(
                        "field {} is not part of a fetch (it takes only id)",
                        shown(k)
                    ),
                ),
            ));
        }
        Ok(Fetch { id })
    }
}

const PATH_FIELDS: [&str; 7] = [
    "id",
    "instance",
    "eni",
    "peer",
    "size",
    "size_kind",
    "timeout_ms",
];

/// One path request: "your side of a guest's path: the guest (an instance
/// or an ENI this node runs), the peer to probe (an address of this node's
/// own peer list) and the size", as read and validated. Like a run
/// request, it names no file, command or free address: the agent reads
/// its own config, finds the guest among its own QEMUs, and probes only
/// what its own peer list holds ([`RefusalKind::NotHere`],
/// [`RefusalKind::PeerNotListed`]); the size and the timeout are bounded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathRequest {
    pub id: String,
    pub query: NodeQuery,
    /// How long the requester waits; the node's own deadline.
    pub timeout: Duration,
}

impl PathRequest {
    /// The request as sent: compact JSON, absent fields left out.
    pub fn to_json(&self) -> Vec<u8> {
        let mut m = Map::new();
        m.insert("id".into(), Value::from(self.id.clone()));
        match &self.query.guest {
            Some(GuestRef::Instance(i)) => {
                m.insert("instance".into(), Value::from(i.clone()));
            }
            Some(GuestRef::Eni(e)) => {
                m.insert("eni".into(), Value::from(e.clone()));
            }
            None => {}
        }
        if let Some(p) = self.query.peer {
            m.insert("peer".into(), Value::from(p.to_string()));
        }
        let (kind, n) = match self.query.size {
            Size::Guest(n) => ("guest", n),
            Size::Underlay(n) => ("underlay", n),
        };
        m.insert("size".into(), Value::from(n));
        m.insert("size_kind".into(), Value::from(kind));
        m.insert(
            "timeout_ms".into(),
            Value::from(self.timeout.as_millis() as u64),
        );
        serde_json::to_vec(&Value::Object(m)).expect("a path request always serializes")
    }

    /// Read a path request, refusing anything outside its vocabulary (the
    /// id named when it could be read).
    pub fn parse(bytes: &[u8]) -> Result<PathRequest, Refused> {
        let (id, map) = object_with_id(bytes)?;
        let fail = |kind, message: String| Err((Some(id.clone()), Refusal::new(kind, message)));
        if let Some(k) = map.keys().find(|k| !PATH_FIELDS.contains(&k.as_str())) {
            return fail(
                RefusalKind::UnknownField,
                format!(
                    "field {} is not part of a path request (it takes only {}): an agent reads only its own config and probes only its own peers",
                    shown(k),
                    PATH_FIELDS.join(", ")
                ),
            );
        }
        let text = |name: &str| -> Result<Option<String>, Refusal> {
            match map.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(Refusal::new(
                    RefusalKind::BadValue,
                    format!("{name}: {} is not a string", shown(&other.to_string())),
                )),
            }
        };
        let (instance, eni) = match (text("instance"), text("eni")) {
            (Ok(i), Ok(e)) => (i, e),
            (Err(r), _) | (_, Err(r)) => return Err((Some(id), r)),
        };
        let guest = match (instance, eni) {
            (Some(_), Some(_)) => {
                return fail(
                    RefusalKind::BadValue,
                    "instance and eni: a path request names one guest".into(),
                )
            }
            (Some(i), None) if is_instance_id(&i) => Some(GuestRef::Instance(i)),
            (Some(i), None) => {
                return fail(
                    RefusalKind::BadValue,
                    format!("instance: {} is not an instance id", shown(&i)),
                )
            }
            (None, Some(e)) if is_eni_id(&e) => Some(GuestRef::Eni(e)),
            (None, Some(e)) => {
                return fail(
                    RefusalKind::BadValue,
                    format!("eni: {} is not an ENI id", shown(&e)),
                )
            }
            (None, None) => None,
        };
        let peer = match text("peer") {
            Ok(None) => None,
            Ok(Some(p)) => match p.parse::<IpAddr>() {
                Ok(ip) => Some(ip),
                Err(_) => {
                    return fail(
                        RefusalKind::BadValue,
                        format!("peer: {} is not an IP address", shown(&p)),
                    )
                }
            },
            Err(r) => return Err((Some(id), r)),
        };
        let size = match map.get("size").and_then(Value::as_u64) {
            Some(n) if (u64::from(MIN_SIZE)..=u64::from(MAX_SIZE)).contains(&n) => n as u32,
            _ => {
                return fail(
                    RefusalKind::BadValue,
                    format!(
                        "size: {} is not a packet size ({MIN_SIZE} to {MAX_SIZE} bytes)",
                        shown(&map.get("size").map_or("missing".into(), Value::to_string))
                    ),
                )
            }
        };
        let size = match map.get("size_kind").and_then(Value::as_str) {
            None | Some("guest") => Size::Guest(size),
            Some("underlay") => Size::Underlay(size),
            Some(other) => {
                return fail(
                    RefusalKind::BadValue,
                    format!("size_kind: {} is not guest or underlay", shown(other)),
                )
            }
        };
        let timeout = match map.get("timeout_ms").map(|v| (v, v.as_u64())) {
            Some((_, Some(ms))) if ms > 0 => Duration::from_millis(ms),
            Some((v, _)) => {
                return fail(
                    RefusalKind::BadValue,
                    format!(
                        "timeout_ms: {} is not a positive number of milliseconds",
                        shown(&v.to_string())
                    ),
                )
            }
            None => {
                return fail(
                    RefusalKind::BadValue,
                    "timeout_ms: missing (the requester's deadline)".into(),
                )
            }
        };
        if timeout > MAX_TIMEOUT {
            return fail(
                RefusalKind::TimeoutTooLong,
                format!(
                    "timeout_ms {}: an agent runs at most {} s per request",
                    timeout.as_millis(),
                    MAX_TIMEOUT.as_secs()
                ),
            );
        }
        Ok(PathRequest {
            id,
            query: NodeQuery { guest, peer, size },
            timeout,
        })
    }

    /// What a shared run must agree on: the question itself.
    pub fn key(&self) -> RunKey {
        RunKey {
            checks: Vec::new(),
            skips: Vec::new(),
            profile: None,
            sample: Duration::ZERO,
            ovn_read_by: None,
            path: Some(self.query.clone()),
        }
    }
}

/// A refusal, with the request's id when one could be read.
pub type Refused = (Option<String>, Refusal);

/// A request's bytes as a JSON object with a readable id, or the refusal.
fn object_with_id(bytes: &[u8]) -> Result<(String, Map<String, Value>), Refused> {
    if bytes.len() > MAX_REQUEST_BYTES {
        return Err((
            None,
            Refusal::new(
                RefusalKind::Oversize,
                format!(
                    "a request is at most {MAX_REQUEST_BYTES} bytes; this one is {}",
                    bytes.len()
                ),
            ),
        ));
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        (
            None,
            Refusal::new(RefusalKind::NotJson, format!("not a JSON request: {e}")),
        )
    })?;
    let Value::Object(map) = value else {
        return Err((
            None,
            Refusal::new(RefusalKind::NotJson, "a request is a JSON object"),
        ));
    };
    match map.get("id") {
        Some(Value::String(s)) if id_ok(s) => Ok((s.clone(), map)),
        Some(other) => Err((
            None,
            Refusal::new(
                RefusalKind::BadValue,
                format!(
                    "id: {} is not a request id (1 to {MAX_ID} of A-Z a-z 0-9 . _ -)",
                    shown(&other.to_string())
                ),
            ),
        )),
        None => Err((
            None,
            Refusal::new(RefusalKind::BadValue, "id: missing (every request has one)"),
        )),
    }
}

fn id_ok(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A W3C `traceparent` (version 00): `00-TRACE_ID-PARENT_ID-FLAGS`, lower
/// hex, neither id all zeros. Anything else is not a trace context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    pub parent_id: [u8; 8],
    pub flags: u8,
}

impl TraceParent {
    pub fn parse(text: &str) -> Option<TraceParent> {
        let parts: Vec<&str> = text.trim().split('-').collect();
        let [version, trace, parent, flags] = parts.as_slice() else {
            return None;
        };
        if *version != "00" {
            return None;
        }
        let trace_id: [u8; 16] = hex(trace)?.try_into().ok()?;
        let parent_id: [u8; 8] = hex(parent)?.try_into().ok()?;
        let flags = *hex(flags)?.first()?;
        if trace_id != [0; 16] && parent_id != [0; 8] {
            Some(TraceParent {
                trace_id,
                parent_id,
                flags,
            })
        } else {
            None
        }
    }

    /// The same trace with another span as the parent.
    pub fn child(self, span: [u8; 8]) -> TraceParent {
        TraceParent {
            parent_id: span,
            ..self
        }
    }

    pub fn trace_id_hex(&self) -> String {
        to_hex(&self.trace_id)
    }
}

impl std::fmt::Display for TraceParent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "00-{}-{}-{:02x}",
            to_hex(&self.trace_id),
            to_hex(&self.parent_id),
            self.flags
        )
    }
}

fn hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2)
        || !text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Fetches the agent must refuse, with the kind and words of each: the
/// agent's and the swarm's alike.
#[cfg(test)]
pub const FETCH_VECTORS: &[(&str, RefusalKind, &str)] = &[
    (
        r#"{"id":"a","node":"n2"}"#,
        RefusalKind::UnknownField,
        "field \"node\" is not part of a fetch",
    ),
    (
        r#"{"id":"a","timeout_ms":2000}"#,
        RefusalKind::UnknownField,
        "\"timeout_ms\"",
    ),
    (r#"{"id":"../../etc"}"#, RefusalKind::BadValue, "id"),
    (r#"["a"]"#, RefusalKind::NotJson, "a JSON object"),
    ("\u{1b}[2J", RefusalKind::NotJson, "not a JSON request"),
];

/// Requests the agent must refuse, with the kind and words of each
/// refusal: the agent's test vectors, shared with the swarm's
/// (bench/swarm), which must refuse them alike.
#[cfg(test)]
pub const REQUEST_VECTORS: &[(&str, RefusalKind, &str)] = &[
    (
        r#"{"id":"a","timeout_ms":2000,"config":"/etc/shadow"}"#,
        RefusalKind::UnknownField,
        "field \"config\"",
    ),
    (
        r#"{"id":"a","timeout_ms":2000,"record":"/tmp/x"}"#,
        RefusalKind::UnknownField,
        "\"record\"",
    ),
    (
        r#"{"id":"a","timeout_ms":2000,"peer":["198.18.0.9"]}"#,
        RefusalKind::UnknownField,
        "\"peer\"",
    ),
    (
        r#"{"id":"a","timeout_ms":2000,"checks":["/etc/shadow"]}"#,
        RefusalKind::UnknownCheck,
        "unknown check \"/etc/shadow\"",
    ),
    (
        r#"{"id":"a","timeout_ms":2000,"checks":["mtu.pth"]}"#,
        RefusalKind::UnknownCheck,
        "mtu.pth",
    ),
    (
        r#"{"id":"a","timeout_ms":2000,"checks":"mtu.path"}"#,
        RefusalKind::BadValue,
        "checks: a list",
    ),
    (
        r#"{"id":"a","timeout_ms":2000,"skips":[1]}"#,
        RefusalKind::BadValue,
        "not a string",
    ),
    (
        r#"{"id":"a","timeout_ms":86400000}"#,
        RefusalKind::TimeoutTooLong,
        "at most 60 s",
    ),
    (
        r#"{"id":"a","timeout_ms":18446744073709551615}"#,
        RefusalKind::TimeoutTooLong,
        "at most 60 s",
    ),
    (
        r#"{"id":"a","timeout_ms":-1}"#,
        RefusalKind::BadValue,
        "positive",
    ),
    (
        r#"{"id":"a","timeout_ms":0}"#,
        RefusalKind::BadValue,
        "positive",
    ),
    (
        r#"{"id":"a","timeout_ms":1.5}"#,
        RefusalKind::BadValue,
        "positive",
    ),
    (
        r#"{"id":"a"}"#,
        RefusalKind::BadValue,
        "timeout_ms: missing",
    ),
    (
        r#"{"id":"a","timeout_ms":2000,"sample_ms":2000}"#,
        RefusalKind::BadValue,
        "shorter",
    ),
    (
        r#"{"id":"a","timeout_ms":2000,"profile":"yolo"}"#,
        RefusalKind::BadValue,
        "not a preflight",
    ),
    (
        r#"{"id":"a","timeout_ms":2000,"ovn_read_by":"n0;id"}"#,
        RefusalKind::BadValue,
        "not a node name",
    ),
    (
        r#"{"id":"a b","timeout_ms":2000}"#,
        RefusalKind::BadValue,
        "not a request id",
    ),
    (
        r#"{"timeout_ms":2000}"#,
        RefusalKind::BadValue,
        "id: missing",
    ),
    (r#"[1,2]"#, RefusalKind::NotJson, "JSON object"),
    (
        "\u{1b}[2J garbage",
        RefusalKind::NotJson,
        "not a JSON request",
    ),
    (
        r#"{"id":"a","timeout_ms":2000,"inline_max_bytes":1023}"#,
        RefusalKind::BadValue,
        "inline_max_bytes: \"1023\" is not a number of bytes from 1024",
    ),
    (
        r#"{"id":"a","timeout_ms":2000,"inline_max_bytes":"64k"}"#,
        RefusalKind::BadValue,
        "inline_max_bytes",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> Request {
        Request {
            id: "r1".into(),
            checks: vec!["mtu.path".into(), "ipsec".into()],
            skips: vec![],
            profile: Some(Preflight::EnableJumbo),
            timeout: Duration::from_millis(8000),
            sample: Duration::from_millis(1000),
            ovn_read_by: Some("n0".into()),
            inline_max: Some(65536),
        }
    }

    fn refused(text: &str) -> (Option<String>, RefusalKind, String) {
        let (id, r) = Request::parse(text.as_bytes()).unwrap_err();
        (id, r.kind, r.message)
    }

    #[test]
    fn a_request_reads_back_as_sent() {
        let r = req();
        assert_eq!(Request::parse(&r.to_json()).unwrap(), r);
        let bare = Request::parse(br#"{"id":"x","timeout_ms":2000}"#).unwrap();
        assert_eq!(bare.sample, Duration::from_secs(1));
        assert!(bare.checks.is_empty() && bare.profile.is_none() && bare.ovn_read_by.is_none());
        // What is measured decides sharing, not the id or the timeout.
        let mut other = req();
        other.id = "r2".into();
        other.timeout = Duration::from_secs(9);
        other.checks.reverse();
        assert_eq!(other.key(), req().key());
        other.sample = Duration::from_millis(500);
        assert_ne!(other.key(), req().key());
    }

    #[test]
    fn an_agent_from_before_inline_max_is_told_apart() {
        let r = before_inline_max_refusal();
        assert!(refuses_inline_max(r.kind, &r.message));
        // Its words are what this parser says of any field it does not
        // know, with the vocabulary it had.
        let other = refused(r#"{"id":"a","timeout_ms":2000,"inline_max":5}"#);
        assert_eq!(other.1, RefusalKind::UnknownField);
        assert!(!refuses_inline_max(other.1, &other.2));
        assert_eq!(
            r.message,
            other
                .2
                .replace("\"inline_max\"", "\"inline_max_bytes\"")
                .replace(", inline_max_bytes)", ")")
        );
    }

    #[test]
    fn a_fetch_names_an_id_and_nothing_else() {
        let f = Fetch { id: "r1".into() };
        assert_eq!(Fetch::parse(&f.to_json()).unwrap(), f);
        for (text, kind, says) in FETCH_VECTORS {
            let (_, r) = Fetch::parse(text.as_bytes()).unwrap_err();
            assert_eq!(r.kind, *kind, "{text}: {}", r.message);
            assert!(r.message.contains(says), "{text}: {}", r.message);
            assert!(!r.message.contains('\u{1b}'), "{:?}", r.message);
        }
        let big = format!(r#"{{"id":"{}"}}"#, "a".repeat(5000));
        assert_eq!(
            Fetch::parse(big.as_bytes()).unwrap_err().1.kind,
            RefusalKind::Oversize
        );
        // A request's bound on its answer reads back, and is absent by
        // default (any size in the answer, as before).
        let bare = Request::parse(br#"{"id":"x","timeout_ms":2000}"#).unwrap();
        assert_eq!(bare.inline_max, None);
        let r = Request::parse(br#"{"id":"x","timeout_ms":2000,"inline_max_bytes":16777216}"#);
        assert_eq!(r.unwrap().inline_max, Some(MAX_INLINE));
    }

    #[test]
    fn anything_outside_the_vocabulary_is_refused_by_kind() {
        for (text, kind, says) in REQUEST_VECTORS {
            let (_, k, m) = refused(text);
            assert_eq!(k, *kind, "{text}: {m}");
            assert!(m.contains(says), "{text}: {m}");
            assert!(
                !m.contains('\n') && !m.contains('\u{1b}'),
                "one clean line: {m:?}"
            );
        }
        // The id is named in a refusal when it could be read.
        assert_eq!(
            refused(r#"{"id":"x1","timeout_ms":1,"output":"/x"}"#)
                .0
                .as_deref(),
            Some("x1")
        );
        let big = format!(
            r#"{{"id":"a","timeout_ms":2000,"pad":"{}"}}"#,
            "x".repeat(5000)
        );
        assert_eq!(refused(&big).1, RefusalKind::Oversize);
        assert_eq!(
            Request::parse(&[0xff, 0xfe]).unwrap_err().1.kind,
            RefusalKind::NotJson
        );
        let many = format!(
            r#"{{"id":"a","timeout_ms":2000,"checks":[{}]}}"#,
            vec!["\"mtu\""; 65].join(",")
        );
        assert_eq!(refused(&many).1, RefusalKind::BadValue);
    }

    #[test]
    fn a_path_request_reads_back_as_sent_and_refuses_what_it_does_not_take() {
        let r = PathRequest {
            id: "p1".into(),
            query: NodeQuery {
                guest: Some(GuestRef::Eni("eni-0aa1f3c9d2b7e4051".into())),
                peer: Some("198.18.0.2".parse().unwrap()),
                size: Size::Guest(8942),
            },
            timeout: Duration::from_millis(4000),
        };
        assert_eq!(PathRequest::parse(&r.to_json()).unwrap(), r);
        let bare = PathRequest::parse(br#"{"id":"x","size":1500,"timeout_ms":2000}"#).unwrap();
        assert_eq!(bare.query.guest, None);
        assert_eq!(bare.query.size, Size::Guest(1500));
        for (text, kind, says) in [
            (
                r#"{"id":"a","size":1500,"timeout_ms":2000,"command":"id"}"#,
                RefusalKind::UnknownField,
                "field \"command\"",
            ),
            (
                r#"{"id":"a","size":1500,"timeout_ms":2000,"file":"/etc/shadow"}"#,
                RefusalKind::UnknownField,
                "\"file\"",
            ),
            (
                r#"{"id":"a","size":1500,"timeout_ms":2000,"instance":"i-1","eni":"eni-2"}"#,
                RefusalKind::BadValue,
                "one guest",
            ),
            (
                r#"{"id":"a","size":1500,"timeout_ms":2000,"instance":"/etc/passwd"}"#,
                RefusalKind::BadValue,
                "not an instance id",
            ),
            (
                r#"{"id":"a","size":1500,"timeout_ms":2000,"eni":"eni-$(id)"}"#,
                RefusalKind::BadValue,
                "not an ENI id",
            ),
            (
                r#"{"id":"a","size":1500,"timeout_ms":2000,"peer":"example.com"}"#,
                RefusalKind::BadValue,
                "not an IP address",
            ),
            (
                r#"{"id":"a","size":67,"timeout_ms":2000}"#,
                RefusalKind::BadValue,
                "not a packet size",
            ),
            (
                r#"{"id":"a","size":65536,"timeout_ms":2000}"#,
                RefusalKind::BadValue,
                "not a packet size",
            ),
            (
                r#"{"id":"a","timeout_ms":2000}"#,
                RefusalKind::BadValue,
                "size: \"missing\"",
            ),
            (
                r#"{"id":"a","size":1500,"size_kind":"jumbo","timeout_ms":2000}"#,
                RefusalKind::BadValue,
                "size_kind",
            ),
            (
                r#"{"id":"a","size":1500,"timeout_ms":86400000}"#,
                RefusalKind::TimeoutTooLong,
                "at most 60 s",
            ),
            (
                r#"{"id":"a","size":1500}"#,
                RefusalKind::BadValue,
                "timeout_ms: missing",
            ),
            (
                r#"{"id":"a","size":1500,"timeout_ms":0}"#,
                RefusalKind::BadValue,
                "positive",
            ),
            (
                r#"{"size":1500,"timeout_ms":2000}"#,
                RefusalKind::BadValue,
                "id: missing",
            ),
            (
                "\u{1b}]0;x\u{7}",
                RefusalKind::NotJson,
                "not a JSON request",
            ),
        ] {
            let (_, r) = PathRequest::parse(text.as_bytes()).unwrap_err();
            assert_eq!(r.kind, kind, "{text}: {}", r.message);
            assert!(r.message.contains(says), "{text}: {}", r.message);
            assert!(
                !r.message.contains('\n') && !r.message.contains('\u{1b}'),
                "{:?}",
                r.message
            );
        }
        assert_eq!(RefusalKind::NotHere.as_str(), "not-here");
        assert_eq!(
            serde_json::to_value(RefusalKind::PeerNotListed).unwrap(),
            "peer-not-listed"
        );
    }

    #[test]
    fn error_replies_round_trip() {
        let e = ErrorReply {
            error: ErrorBody {
                kind: RefusalKind::RateLimited,
                message: "m".into(),
                node: "n1".into(),
                request: Some("r".into()),
                runs_per_minute: Some(12),
                retry_after_ms: Some(1500),
            },
        };
        assert_eq!(ErrorReply::parse(&e.to_json()), Some(e));
        let json = String::from_utf8(
            ErrorReply {
                error: ErrorBody {
                    kind: RefusalKind::TimeoutTooLong,
                    message: "m".into(),
                    node: "n1".into(),
                    request: None,
                    runs_per_minute: None,
                    retry_after_ms: None,
                },
            }
            .to_json(),
        )
        .unwrap();
        assert_eq!(
            json,
            r#"{"error":{"kind":"timeout-too-long","message":"m","node":"n1","request":null}}"#
        );
        assert_eq!(ErrorReply::parse(b"{\"schema_version\":1}"), None);
    }

    #[test]
    fn traceparent_is_read_strictly() {
        let t = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let tp = TraceParent::parse(t).unwrap();
        assert_eq!(tp.to_string(), t);
        assert_eq!(tp.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        let child = tp.child([1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(
            child.to_string(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0102030405060708-01"
        );
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-\u{1b}[",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad:?}");
        }
    }
}
