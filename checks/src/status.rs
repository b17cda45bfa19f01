//! The verdict of one check, the one status type every layer above shares.

use serde::{Deserialize, Serialize};

/// The verdict of one check. Ordered from best to worst for sorting and
/// summaries; `Skip` and `Error` are not "better" than `Fail`, they are a
/// different kind of answer (no conclusion), see [`Status::is_conclusive`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
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
