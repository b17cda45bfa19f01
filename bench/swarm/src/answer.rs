//! What one simulated agent says on the bus, built from the agent's own
//! wire types (`src/bus/wire.rs`, compiled here as it is): the headers of
//! every answer, the typed refusal, and the report a request gets.
//!
//! A request is read by the agent's own parser, so a request the agent
//! refuses is refused here with the same kind and the same words. A
//! request it accepts gets the node's report: the swarm's one report per
//! node is a default run's, so a request that selects checks (`--check`,
//! `--skip`) gets that report cut to the checks the selection resolves
//! to, with its summary and exit code counted again.

use bytes::Bytes;
use serde_json::{Map, Value};
use spx_checks::cluster::AgentIdentity;
use spx_checks::Status;

use crate::bus::identity;

use crate::bus::wire::{
    ErrorBody, ErrorReply, RefusalKind, RunKey, TraceParent, HEADER_NODE, HEADER_REPLY,
    HEADER_REQUEST, HEADER_RUNS_PER_MINUTE, HEADER_SHARED_BY, HEADER_TRACEPARENT,
};

/// One answer: its headers and body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub headers: Vec<(&'static str, String)>,
    pub body: Bytes,
}

/// Who answers, and its bound on runs a minute.
#[derive(Clone, Debug)]
pub struct Speaker {
    pub node: String,
    pub runs_per_minute: u32,
    /// Who this simulated agent says it is (its own machine id, the
    /// swarm's boot, its start), as an agent says in every answer.
    pub identity: AgentIdentity,
}

/// A simulated node's identity: a machine id of its own (from its name),
/// the swarm process's boot and start, no addresses (it has none of its
/// own).
pub fn identity_of(node: &str, started: std::time::SystemTime) -> AgentIdentity {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    node.hash(&mut h);
    let a = h.finish();
    "spx-swarm".hash(&mut h);
    let b = h.finish();
    AgentIdentity {
        machine_id: Some(format!("{a:016x}{b:016x}")),
        boot_id: std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()
            .map(|s| s.trim().to_ascii_lowercase()),
        started_at: Some(humantime::format_rfc3339_seconds(started).to_string()),
        addresses: Vec::new(),
    }
}

impl Speaker {
    /// The headers every answer carries, as the agent writes them: the
    /// kind, the node, the request, the bound and, when the request came
    /// in a trace, a child span of it.
    pub fn headers(
        &self,
        kind: &str,
        request: Option<&str>,
        trace: Option<TraceParent>,
        span: [u8; 8],
    ) -> Vec<(&'static str, String)> {
        let mut h = vec![
            (HEADER_REPLY, kind.to_owned()),
            (HEADER_NODE, self.node.clone()),
        ];
        if let Some(r) = request {
            h.push((HEADER_REQUEST, r.to_owned()));
        }
        h.push((HEADER_RUNS_PER_MINUTE, self.runs_per_minute.to_string()));
        if let Some(t) = trace {
            h.push((HEADER_TRACEPARENT, t.child(span).to_string()));
        }
        let id = &self.identity;
        for (name, value) in [
            (identity::HEADER_MACHINE_ID, id.machine_id.clone()),
            (identity::HEADER_BOOT_ID, id.boot_id.clone()),
            (identity::HEADER_STARTED, id.started_at.clone()),
        ] {
            if let Some(v) = value {
                h.push((name, v));
            }
        }
        let addrs: Vec<String> = id.addresses.iter().map(ToString::to_string).collect();
        h.push((identity::HEADER_ADDRESSES, addrs.join(",")));
        h
    }

    /// The acknowledgement, sent at once: no body.
    pub fn accepted(&self, request: &str, trace: Option<TraceParent>, span: [u8; 8]) -> Answer {
        Answer {
            headers: self.headers(crate::bus::wire::REPLY_ACCEPTED, Some(request), trace, span),
            body: Bytes::new(),
        }
    }

    /// A typed refusal, `{"error": {...}}`.
    pub fn refusal(
        &self,
        request: Option<String>,
        trace: Option<TraceParent>,
        span: [u8; 8],
        kind: RefusalKind,
        message: String,
        retry_after_ms: Option<u64>,
    ) -> Answer {
        let headers = self.headers(
            crate::bus::wire::REPLY_ERROR,
            request.as_deref(),
            trace,
            span,
        );
        let body = ErrorReply {
            error: ErrorBody {
                kind,
                message,
                node: self.node.clone(),
                request,
                runs_per_minute: matches!(kind, RefusalKind::Busy | RefusalKind::RateLimited)
                    .then_some(self.runs_per_minute),
                retry_after_ms,
            },
        }
        .to_json();
        Answer {
            headers,
            body: Bytes::from(body),
        }
    }

    /// The report is held for a fetch: its size, no body.
    pub fn held(
        &self,
        request: &str,
        trace: Option<TraceParent>,
        span: [u8; 8],
        bytes: usize,
    ) -> Answer {
        let mut headers = self.headers(crate::bus::wire::REPLY_HELD, Some(request), trace, span);
        headers.push((crate::bus::wire::HEADER_REPORT_BYTES, bytes.to_string()));
        Answer {
            headers,
            body: Bytes::new(),
        }
    }

    /// The report, shared by `shared` requests.
    pub fn report(
        &self,
        request: &str,
        trace: Option<TraceParent>,
        span: [u8; 8],
        shared: usize,
        body: Bytes,
    ) -> Answer {
        let mut headers = self.headers(crate::bus::wire::REPLY_REPORT, Some(request), trace, span);
        headers.push((HEADER_SHARED_BY, shared.to_string()));
        Answer { headers, body }
    }
}

/// The report a run of `key` makes, from the node's default-run report
/// (compact JSON): the same bytes when `key` selects the default set,
/// else the checks it selects, counted again.
pub fn report_for(default: &Bytes, key: &RunKey) -> Bytes {
    if key.checks.is_empty() && key.skips.is_empty() {
        return default.clone();
    }
    let Ok(chosen) = spx_checks::select::select(spx_checks::CHECKS, &key.checks, &key.skips) else {
        return default.clone();
    };
    let ids: Vec<&str> = chosen.iter().map(|c| c.id()).collect();
    let Ok(Value::Object(mut doc)) = serde_json::from_slice::<Value>(default) else {
        return default.clone();
    };
    let checks: Vec<Value> = doc
        .get("checks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| {
            c.get("id")
                .and_then(Value::as_str)
                .is_some_and(|id| ids.contains(&id))
        })
        .cloned()
        .collect();
    recount(&mut doc, &checks);
    doc.insert("checks".into(), Value::Array(checks));
    Bytes::from(serde_json::to_vec(&doc).expect("a report always serializes"))
}

/// The summary and exit code of a report holding `checks`: the counts by
/// status, and 1 when one failed, else 2 when one errored, else 0 (a
/// request carries no `--strict`).
fn recount(doc: &mut Map<String, Value>, checks: &[Value]) {
    let mut counts = [0u64; 5];
    let mut failed = false;
    let mut errored = false;
    for c in checks {
        let status = c
            .get("status")
            .and_then(|s| serde_json::from_value::<Status>(s.clone()).ok())
            .unwrap_or(Status::Error);
        let i = match status {
            Status::Pass => 0,
            Status::Warn => 1,
            Status::Fail => 2,
            Status::Skip => 3,
            Status::Error => 4,
        };
        counts[i] += 1;
        failed |= status == Status::Fail;
        errored |= status == Status::Error;
    }
    let mut summary = Map::new();
    for (name, n) in ["pass", "warn", "fail", "skip", "error"].iter().zip(counts) {
        summary.insert((*name).into(), Value::from(n));
    }
    doc.insert("summary".into(), Value::Object(summary));
    let code = if failed {
        1
    } else if errored {
        2
    } else {
        0
    };
    doc.insert("exit_code".into(), Value::from(code));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bus::wire::{Request, REQUEST_VECTORS};

    fn speaker() -> Speaker {
        Speaker {
            node: "s1".into(),
            runs_per_minute: 12,
            identity: identity_of("s1", std::time::SystemTime::now()),
        }
    }

    /// The agent's own request vectors (src/bus/wire.rs): every request
    /// it refuses, the swarm refuses with the same kind and words, in an
    /// error answer of the agent's shape.
    #[test]
    fn the_agents_refusals_are_the_swarms() {
        assert!(REQUEST_VECTORS.len() >= 20);
        for (text, kind, says) in REQUEST_VECTORS {
            let (id, r) = Request::parse(text.as_bytes()).expect_err(text);
            assert_eq!(r.kind, *kind, "{text}");
            let a = speaker().refusal(id.clone(), None, [1; 8], r.kind, r.message, None);
            assert_eq!(a.headers[0], (HEADER_REPLY, "error".to_owned()));
            assert_eq!(a.headers[1], (HEADER_NODE, "s1".to_owned()));
            let back = ErrorReply::parse(&a.body).expect("an agent's error reply");
            assert_eq!(back.error.kind, *kind, "{text}");
            assert!(
                back.error.message.contains(says),
                "{text}: {}",
                back.error.message
            );
            assert_eq!(back.error.request, id);
            assert_eq!(back.error.node, "s1");
        }
    }

    #[test]
    fn answers_carry_the_agents_headers() {
        let t = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        let a = speaker().accepted("r1", t, [2; 8]);
        assert!(a.body.is_empty());
        let names: Vec<&str> = a.headers.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            names,
            [
                HEADER_REPLY,
                HEADER_NODE,
                HEADER_REQUEST,
                HEADER_RUNS_PER_MINUTE,
                HEADER_TRACEPARENT,
                identity::HEADER_MACHINE_ID,
                identity::HEADER_BOOT_ID,
                identity::HEADER_STARTED,
                identity::HEADER_ADDRESSES,
            ]
        );
        assert_eq!(
            a.headers[4].1,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0202020202020202-01"
        );
        let r = speaker().report("r1", None, [2; 8], 3, Bytes::from_static(b"{}"));
        assert_eq!(
            r.headers.last().unwrap(),
            &(HEADER_SHARED_BY, "3".to_owned())
        );
        let busy = speaker().refusal(
            Some("r2".into()),
            None,
            [2; 8],
            RefusalKind::RateLimited,
            "m".into(),
            Some(1500),
        );
        let e = ErrorReply::parse(&busy.body).unwrap().error;
        assert_eq!(
            (e.runs_per_minute, e.retry_after_ms),
            (Some(12), Some(1500))
        );
    }

    #[test]
    fn a_selection_cuts_the_default_report_and_counts_it_again() {
        let doc = serde_json::json!({
            "schema_version": 1, "node": "s1", "exit_code": 1,
            "summary": {"pass": 1, "warn": 0, "fail": 1, "skip": 0, "error": 0},
            "checks": [
                {"id": "mtu.path", "status": "fail"},
                {"id": "sysctl.udp-buffers", "status": "pass"},
            ]
        });
        let default = Bytes::from(serde_json::to_vec(&doc).unwrap());
        let key = |checks: &[&str]| RunKey {
            checks: checks.iter().map(|s| s.to_string()).collect(),
            skips: vec![],
            profile: None,
            sample: std::time::Duration::from_secs(1),
            ovn_read_by: None,
            path: None,
        };
        assert_eq!(report_for(&default, &key(&[])), default);
        let cut: Value = serde_json::from_slice(&report_for(&default, &key(&["sysctl"]))).unwrap();
        assert_eq!(cut["checks"].as_array().unwrap().len(), 1);
        assert_eq!(cut["exit_code"], 0);
        assert_eq!(cut["summary"]["pass"], 1);
        assert_eq!(cut["summary"]["fail"], 0);
        let path: Value = serde_json::from_slice(&report_for(&default, &key(&["mtu"]))).unwrap();
        assert_eq!(path["exit_code"], 1);
    }
}
