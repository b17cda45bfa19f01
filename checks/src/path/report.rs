//! The path's verdict as a document: the code, the summary and fix, the
//! question, both ends as resolved (with each node's answer, so the
//! document is also what a replay judges again), and both directions with
//! every hop, typed and worded. `--format json` prints it inside the
//! binary's envelope (schema/path-v1.schema.json); the table is drawn from
//! it.

use serde::{Deserialize, Serialize};

use crate::finding::Status;
use crate::kind::Kinds;

use super::judge::{
    judge, Direction, End, Fate, Hop, HopKind, Largest, Learns, Limit, Outcome, PathFacts,
    SizeSource,
};
use super::resolve::Routing;
use super::{words, PathKind, ID};

/// What was asked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    pub from: String,
    pub to: String,
    /// N, when it is known (it is the source guest's MTU by default).
    pub size: Option<u32>,
    pub size_source: Option<SizeSource>,
    pub vpc: Option<String>,
}

/// One hop, typed and worded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HopReport {
    #[serde(flatten)]
    pub hop: Hop,
    /// The limit as the table says it.
    pub limit_text: String,
    /// Who tells the sender, as the table says it (drops only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learns_text: Option<String>,
}

/// One direction, typed and worded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectionReport {
    pub from: String,
    pub to: String,
    pub size: u32,
    /// This direction's own code.
    pub code: String,
    pub outcome: Outcome,
    /// The largest guest packet (or underlay packet between nodes) that
    /// crosses, and how it is known.
    pub largest: Option<Largest>,
    /// The first hop that drops a packet of N (an index into `hops`).
    pub first_drop: Option<usize>,
    /// For a drop: whether the sender is told (null: not known).
    pub signalled: Option<bool>,
    pub summary: String,
    /// The ESP layout of the sender's SA, when one is installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub esp: Option<crate::expect::EspFormat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<crate::expect::Family>,
    pub hops: Vec<HopReport>,
}

/// The verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathVerdict {
    /// `path/<kind>`.
    pub code: String,
    pub status: Status,
    pub summary: String,
    pub remediation: Vec<String>,
    pub question: Question,
    /// Both ends as resolved, with each node's answer (none when the
    /// question did not resolve).
    pub ends: Vec<End>,
    /// How the two guests' switches are joined.
    #[serde(default)]
    pub routing: Option<Routing>,
    /// Forward, then back (none when the question did not resolve).
    pub directions: Vec<DirectionReport>,
}

impl PathVerdict {
    /// The verdict on `facts`.
    pub fn of(facts: &PathFacts, vpc: Option<String>) -> PathVerdict {
        let j = judge(facts);
        let ipv6 = facts.from.place.guest().is_some_and(|g| g.ipv6());
        let directions = [(&j.forward, j.kinds[0]), (&j.backward, j.kinds[1])]
            .into_iter()
            .map(|(d, k)| direction(d, k, ipv6))
            .collect();
        PathVerdict {
            code: j.kind.doc().code(ID),
            status: j.kind.doc().status,
            summary: words::summary(facts, &j),
            remediation: words::fixes(facts, &j),
            question: Question {
                from: facts.from.label.clone(),
                to: facts.to.label.clone(),
                size: Some(facts.size),
                size_source: Some(facts.size_source),
                vpc,
            },
            ends: vec![facts.from.clone(), facts.to.clone()],
            routing: facts.routing.clone(),
            directions,
        }
    }

    /// A question that did not resolve: the lookup that failed, and
    /// nothing concluded.
    pub fn unresolved(question: Question, lookup: String, ends: Vec<End>) -> PathVerdict {
        PathVerdict {
            code: PathKind::Unresolved.doc().code(ID),
            status: PathKind::Unresolved.doc().status,
            summary: lookup,
            remediation: Vec::new(),
            question,
            ends,
            routing: None,
            directions: Vec::new(),
        }
    }

    /// 0 pass, 1 fail, 2 unresolved.
    pub fn exit_code(&self) -> i32 {
        match self.status {
            Status::Fail => 1,
            Status::Pass => 0,
            _ => 2,
        }
    }
}

fn direction(d: &Direction, kind: PathKind, ipv6: bool) -> DirectionReport {
    let signalled = d.first_drop().and_then(|h| match &h.learns {
        Some(Learns::OwnKernel) => Some(true),
        Some(Learns::Ovn { icmp, .. }) => icmp.reaches(),
        Some(Learns::Nobody { .. }) => Some(false),
        None => None,
    });
    DirectionReport {
        from: d.from.clone(),
        to: d.to.clone(),
        size: d.size,
        code: kind.doc().code(ID),
        outcome: d.outcome,
        largest: d.largest,
        first_drop: d.first_drop,
        signalled,
        summary: words::direction(d, ipv6),
        esp: d.esp,
        family: d.family,
        hops: d
            .hops
            .iter()
            .map(|h| HopReport {
                hop: h.clone(),
                limit_text: words::limit(&h.limit),
                learns_text: h.learns.as_ref().map(|l| words::learns(l, ipv6)),
            })
            .collect(),
    }
}

/// For tests and the table: the hop of a kind in a direction.
pub fn hop_of(d: &DirectionReport, kind: HopKind) -> Option<&HopReport> {
    d.hops.iter().find(|h| h.hop.kind == kind)
}

/// Whether a direction's hop was read.
pub fn read(h: &HopReport) -> bool {
    !matches!(h.hop.limit, Limit::Unread { .. }) && h.hop.fate != Fate::Unread
}
