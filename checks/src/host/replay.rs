//! `--replay`: a host that answers from a bundle and never touches the
//! machine it runs on.
//!
//! Each check's questions are answered in the order that check asked them
//! when it was recorded (per scope and request; see [`super`]). A question
//! the bundle has no answer to (a check added since, another version's
//! requests) gets [`ProbeError::NotRecorded`], and the check that asked it
//! is skipped, naming what was missing: a verdict on part of the facts
//! would be a guess. Request kinds this version does not know are ignored,
//! and [`Replay::notes`] says so.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;

use super::bundle::{Bundle, Record};
use super::request::{Fact, Request};
use super::{Host, Limit};
use crate::facts::ProbeError;

/// The scope whose answers serve every scope, the last one repeating: for
/// facts built in tests, never written by a recording.
pub const ANY_SCOPE: &str = "*";

type Key = (String, String);

/// One recorded answer, parsed when it is asked for.
#[derive(Clone, Debug)]
enum Answer {
    Ok(Value),
    Err(Value),
}

pub struct Replay {
    recorded_by: String,
    answers: Mutex<HashMap<Key, VecDeque<Answer>>>,
    /// Per scope: the questions the bundle had no answer to.
    missing: Mutex<BTreeMap<String, Vec<String>>>,
    notes: Vec<String>,
}

impl Replay {
    /// Replay `bundle`. `knows_check` says whether this version has a check
    /// of a recorded id (the catalogue's lookup, given by the caller: the
    /// seam does not know the checks); the ones it does not are noted.
    pub fn new(bundle: &Bundle, knows_check: impl Fn(&str) -> bool) -> Replay {
        let mut answers: HashMap<Key, VecDeque<Answer>> = HashMap::new();
        let mut unknown: BTreeMap<String, usize> = BTreeMap::new();
        for Record {
            scope,
            request,
            ok,
            err,
            ..
        } in &bundle.records
        {
            let parsed: Option<Request> = serde_json::from_value(request.clone()).ok();
            let answer = match (ok, err) {
                (Some(v), _) => Some(Answer::Ok(v.clone())),
                (None, Some(e)) => Some(Answer::Err(e.clone())),
                (None, None) => None,
            };
            match (parsed, answer) {
                (Some(req), Some(answer)) => answers
                    .entry((scope.clone(), req.key()))
                    .or_default()
                    .push_back(answer),
                _ => {
                    let kind = request
                        .get("kind")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_owned();
                    *unknown.entry(kind).or_default() += 1;
                }
            }
        }
        let mut notes = Vec::new();
        let version = env!("CARGO_PKG_VERSION");
        if bundle.header.doctor_version != version {
            notes.push(format!(
                "recorded by spx-doctor {}, replayed by {version}",
                bundle.header.doctor_version
            ));
        }
        let unknown_checks: Vec<&str> = bundle
            .header
            .checks
            .iter()
            .map(|o| o.id.as_str())
            .filter(|id| !knows_check(id))
            .collect();
        if !unknown_checks.is_empty() {
            notes.push(format!(
                "the recorded run ran checks this version does not know: {}",
                unknown_checks.join(", ")
            ));
        }
        if !unknown.is_empty() {
            let kinds: Vec<String> = unknown.iter().map(|(k, n)| format!("{k} ({n})")).collect();
            notes.push(format!(
                "ignored records of request kinds this version does not know: {}",
                kinds.join(", ")
            ));
        }
        Replay {
            recorded_by: bundle.header.doctor_version.clone(),
            answers: Mutex::new(answers),
            missing: Mutex::new(BTreeMap::new()),
            notes,
        }
    }

    /// What the replay passed over, for the report.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    fn take(&self, scope: &str, key: &str) -> Option<Answer> {
        let mut answers = self.answers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(queue) = answers.get_mut(&(scope.to_owned(), key.to_owned())) {
            if let Some(a) = queue.pop_front() {
                return Some(a);
            }
        }
        let queue = answers.get_mut(&(ANY_SCOPE.to_owned(), key.to_owned()))?;
        if queue.len() > 1 {
            queue.pop_front()
        } else {
            queue.front().cloned()
        }
    }

    fn not_recorded(&self, scope: &str, what: String) -> ProbeError {
        self.missing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(scope.to_owned())
            .or_default()
            .push(what.clone());
        ProbeError::NotRecorded(what)
    }
}

impl Host for Replay {
    fn read(&self, scope: &str, request: &Request, _limit: Limit) -> Result<Fact, ProbeError> {
        match self.take(scope, &request.key()) {
            None => Err(self.not_recorded(scope, format!("no answer to {}", request.describe()))),
            Some(Answer::Ok(v)) => serde_json::from_value(v).map_err(|e| {
                self.not_recorded(
                    scope,
                    format!(
                        "the answer to {} is in a form this version cannot read ({e})",
                        request.describe()
                    ),
                )
            }),
            Some(Answer::Err(v)) => Err(serde_json::from_value(v).unwrap_or_else(|e| {
                self.not_recorded(
                    scope,
                    format!(
                        "the failure of {} is in a form this version cannot read ({e})",
                        request.describe()
                    ),
                )
            })),
        }
    }

    fn sleep_until(&self, _until: Instant) {}

    fn unanswered(&self, scope: &str) -> Option<String> {
        let missing = self.missing.lock().unwrap_or_else(|p| p.into_inner());
        let list = missing.get(scope).filter(|l| !l.is_empty())?;
        let mut shown: Vec<&str> = Vec::new();
        for m in list {
            if !shown.contains(&m.as_str()) {
                shown.push(m);
            }
        }
        let more = shown.len().saturating_sub(3);
        shown.truncate(3);
        Some(format!(
            "{}{} (recorded by spx-doctor {})",
            shown.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            },
            self.recorded_by
        ))
    }
}
