//! What a check returns: a verdict, one line that says why, the evidence an
//! operator can re-measure, and the commands that fix it.
//!
//! Checks never print and never decide exit codes; they build a [`Finding`]
//! and the binary renders it and applies policy (`--strict`, profiles).

use serde::Serialize;
use serde_json::{Map, Value};

/// The verdict of one check. Ordered from best to worst for sorting and
/// summaries; `Skip` and `Error` are not "better" than `Fail`, they are a
/// different kind of answer (no conclusion), see [`Status::is_conclusive`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Warn,
    Fail,
    Skip,
    Error,
}

impl Status {
    pub const ALL: [Status; 5] = [
        Status::Pass,
        Status::Warn,
        Status::Fail,
        Status::Skip,
        Status::Error,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
            Status::Error => "error",
        }
    }

    /// Did the check reach a verdict about the host (pass, warn or fail)?
    pub fn is_conclusive(self) -> bool {
        matches!(self, Status::Pass | Status::Warn | Status::Fail)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a check did not run. The text is part of the one-line summary so an
/// operator reading a table or a JSON document sees the reason without
/// looking anything up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// The check needs a privilege this process does not have.
    NeedsPrivilege(String),
    /// The thing the check inspects does not exist on this host.
    NotApplicable(String),
    /// The check needs the Spinifex config and none was found.
    NoConfig(String),
    /// Nothing to do: no peers, no guests, an idle link.
    NothingToMeasure(String),
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipReason::NeedsPrivilege(what) => write!(f, "needs {what}"),
            SkipReason::NotApplicable(why) => write!(f, "not applicable here: {why}"),
            SkipReason::NoConfig(why) => write!(f, "no config: {why}"),
            SkipReason::NothingToMeasure(why) => f.write_str(why),
        }
    }
}

/// One check's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub status: Status,
    pub summary: String,
    pub evidence: Map<String, Value>,
    pub remediation: Vec<String>,
}

impl Finding {
    fn new(status: Status, summary: impl Into<String>) -> Finding {
        Finding {
            status,
            summary: summary.into(),
            evidence: Map::new(),
            remediation: Vec::new(),
        }
    }

    pub fn pass(summary: impl Into<String>) -> Finding {
        Finding::new(Status::Pass, summary)
    }

    pub fn warn(summary: impl Into<String>) -> Finding {
        Finding::new(Status::Warn, summary)
    }

    /// A failure. Callers must add remediation with [`Finding::fix`]; the
    /// runner turns a fail without remediation into an error, because a fail
    /// that does not say how to fix it is a bug in the check.
    pub fn fail(summary: impl Into<String>) -> Finding {
        Finding::new(Status::Fail, summary)
    }

    pub fn skip(reason: SkipReason) -> Finding {
        Finding::new(Status::Skip, reason.to_string())
    }

    /// The check could not conclude (timed out, unreachable database, a
    /// parse error). Never a pass.
    pub fn error(summary: impl Into<String>) -> Finding {
        Finding::new(Status::Error, summary)
    }

    /// Attach one evidence field. Values must be plain measurements that an
    /// operator can re-measure; monitoring reads them.
    pub fn with(mut self, key: &str, value: impl Serialize) -> Finding {
        let value = serde_json::to_value(value).unwrap_or(Value::Null);
        self.evidence.insert(key.to_owned(), value);
        self
    }

    /// Attach one remediation step (a command or an instruction).
    pub fn fix(mut self, step: impl Into<String>) -> Finding {
        self.remediation.push(step.into());
        self
    }

    pub fn fixes<I, S>(mut self, steps: I) -> Finding
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.remediation.extend(steps.into_iter().map(Into::into));
        self
    }
}
