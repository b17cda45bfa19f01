//! What a check returns: a verdict, one line that says why, the evidence an
//! operator can re-measure, and the commands that fix it.
//!
//! Checks never print and never decide exit codes; they build a [`Finding`]
//! of a declared kind ([`crate::kind`]) and the binary renders it and
//! applies policy (`--strict`, `--allow`/`--deny`, profiles) in one place.

pub use compact_str::CompactString;
use serde_json::{Map, Value};

pub use crate::status::Status;

use crate::evidence::{self, Evidence};
use crate::facts::ProbeError;
use crate::kind::{Common, KindDoc, Kinds};

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
    /// Replaying a bundle that lacks what the check reads (taken by
    /// another version of the doctor, or by a run without this check).
    NotRecorded(String),
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipReason::NeedsPrivilege(what) => write!(f, "needs {what}"),
            SkipReason::NotApplicable(why) => write!(f, "not applicable here: {why}"),
            SkipReason::NoConfig(why) => write!(f, "no config: {why}"),
            SkipReason::NothingToMeasure(why) => f.write_str(why),
            SkipReason::NotRecorded(why) => write!(f, "not in the bundle: {why}"),
        }
    }
}

/// One check's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub status: Status,
    /// What kind of outcome this is: with the check's id, its code. Its
    /// status is [`Finding::status`].
    pub kind: &'static KindDoc,
    pub summary: String,
    pub evidence: Map<String, Value>,
    pub remediation: Vec<String>,
    /// Per-subject outcomes (per peer, interface, instance), each with its
    /// own kind. The headline [`Finding::kind`] is the most severe of them.
    pub findings: Vec<Subject>,
    /// For a skip that needs a privilege: which one.
    pub needs: Option<String>,
    /// Remarks this check shares with others (how a target was chosen),
    /// kept out of [`Finding::summary`] so that a reader of several
    /// checks is told once.
    pub notes: Vec<Note>,
}

/// A remark several checks make alike about how they chose what they
/// judged. It is typed and coded, not glued to a summary: the first
/// screen says it once under the checks it concerns, and a script
/// matches its code, never its English.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Note {
    /// In JSON v1, `code`: [`NoteKind::code`].
    #[serde(rename = "code")]
    pub kind: NoteKind,
    pub text: String,
}

/// The kinds of [`Note`]; [`NoteKind::code`] is the code JSON v1 carries.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum NoteKind {
    /// Nothing named the underlay (no `--interface`, underlay bridge or
    /// peer route), so the NIC checks judged the default route's
    /// interface.
    UnderlayNicFromDefaultRoute,
}

impl NoteKind {
    /// Every kind, in the order the schema lists their codes.
    pub const ALL: [NoteKind; 1] = [NoteKind::UnderlayNicFromDefaultRoute];

    pub fn code(self) -> &'static str {
        match self {
            NoteKind::UnderlayNicFromDefaultRoute => "underlay-nic-from-default-route",
        }
    }
}

/// One subject's outcome within a check's answer. Its words are held inline
/// when short (up to 24 bytes, as most subjects and many summaries are): a
/// check with a million subjects (the path matrix at 1,024 nodes) makes no
/// heap allocation for `n12->n345` or `ok at 9000`.
#[derive(Clone, Debug, PartialEq)]
pub struct Subject {
    pub kind: &'static KindDoc,
    /// The peer, interface or instance, as an operator names it.
    pub subject: CompactString,
    pub summary: CompactString,
    /// For a skip that needs a privilege: which one.
    pub needs: Option<String>,
}

impl Subject {
    pub fn new(
        kind: impl Kinds,
        subject: impl Into<CompactString>,
        summary: impl Into<CompactString>,
    ) -> Subject {
        Subject {
            kind: kind.doc(),
            subject: subject.into(),
            summary: summary.into(),
            needs: None,
        }
    }

    /// A subject that could not be judged, of the common kind that names
    /// the reason (as [`Finding::skip`]).
    pub fn skipped(subject: impl Into<CompactString>, reason: SkipReason) -> Subject {
        let (kind, needs) = skip_kind(&reason);
        Subject {
            kind: kind.doc(),
            subject: subject.into(),
            summary: reason.to_string().into(),
            needs,
        }
    }

    pub fn status(&self) -> Status {
        self.kind.status
    }
}

impl Finding {
    fn of_doc(kind: &'static KindDoc, summary: impl Into<String>) -> Finding {
        Finding {
            status: kind.status,
            kind,
            summary: summary.into(),
            evidence: Map::new(),
            remediation: Vec::new(),
            findings: Vec::new(),
            needs: None,
            notes: Vec::new(),
        }
    }

    /// A finding of a kind known only when the run began (a site check's,
    /// from its doctor.d file); its status is the kind's.
    pub fn of_kind(kind: &'static KindDoc, summary: impl Into<String>) -> Finding {
        Finding::of_doc(kind, summary)
    }

    /// A finding of a declared kind; its status is the kind's.
    pub fn new(kind: impl Kinds, summary: impl Into<String>) -> Finding {
        Finding::of_doc(kind.doc(), summary)
    }

    /// A finding of a kind every check shares.
    pub fn common(kind: Common, summary: impl Into<String>) -> Finding {
        Finding::of_doc(kind.doc(), summary)
    }

    /// A skip, of the common kind that names its reason.
    pub fn skip(reason: SkipReason) -> Finding {
        let (kind, needs) = skip_kind(&reason);
        let mut f = Finding::common(kind, reason.to_string());
        f.needs = needs;
        f
    }

    /// Reading the host failed: the check could not conclude.
    pub fn probe_failed(summary: impl Into<String>) -> Finding {
        Finding::common(Common::ProbeFailed, summary)
    }

    /// Attach the typed evidence (replacing any there was).
    pub fn evidence<E: Evidence>(mut self, evidence: &E) -> Finding {
        self.evidence = evidence::to_map(evidence);
        self
    }

    /// The typed evidence, read back (`None` if the result carries none).
    pub fn evidence_as<E: Evidence>(&self) -> Option<E> {
        evidence::read(&self.evidence)
    }

    /// Add one subject's outcome.
    pub fn subject(
        mut self,
        kind: impl Kinds,
        subject: impl Into<CompactString>,
        summary: impl Into<CompactString>,
    ) -> Finding {
        self.findings.push(Subject::new(kind, subject, summary));
        self
    }

    /// Add subjects' outcomes, in order.
    pub fn subjects(mut self, subjects: impl IntoIterator<Item = Subject>) -> Finding {
        self.findings.extend(subjects);
        self
    }

    /// Add a remark this check shares with others ([`Note`]).
    pub fn note(mut self, kind: NoteKind, text: impl Into<String>) -> Finding {
        self.notes.push(Note {
            kind,
            text: text.into(),
        });
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

/// The common kind of a reason to skip, and the privilege it names.
fn skip_kind(reason: &SkipReason) -> (Common, Option<String>) {
    match reason {
        SkipReason::NeedsPrivilege(what) => (Common::NeedsPrivilege, Some(what.clone())),
        SkipReason::NotApplicable(_) => (Common::NotApplicable, None),
        SkipReason::NoConfig(_) => (Common::NoConfig, None),
        SkipReason::NothingToMeasure(_) => (Common::NothingToMeasure, None),
        SkipReason::NotRecorded(_) => (Common::NotRecorded, None),
    }
}

/// The verdict a probe failure implies on its own.
impl From<ProbeError> for Finding {
    fn from(err: ProbeError) -> Finding {
        match err {
            ProbeError::PermissionDenied { needs, .. } => {
                Finding::skip(SkipReason::NeedsPrivilege(needs))
            }
            ProbeError::NotFound(what) => {
                Finding::skip(SkipReason::NotApplicable(format!("{what} not found")))
            }
            ProbeError::NotRecorded(why) => Finding::skip(SkipReason::NotRecorded(why)),
            other => Finding::probe_failed(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::kinds! {
        enum DemoKind for "demo.check" {
            /// Fine.
            Ok = pass("ok"),
            /// Too small.
            Small = warn("small"),
        }
    }

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct DemoEvidence {
        size: u32,
    }

    impl Evidence for DemoEvidence {}

    #[test]
    fn a_kind_fixes_the_status_and_evidence_reads_back_typed() {
        let f = Finding::new(DemoKind::Small, "small")
            .evidence(&DemoEvidence { size: 3 })
            .subject(DemoKind::Small, "eth0", "3 < 4");
        assert_eq!(f.status, Status::Warn);
        assert_eq!(f.kind.code("demo.check"), "demo.check/small");
        assert_eq!(f.evidence["size"], 3);
        assert_eq!(
            f.evidence_as::<DemoEvidence>(),
            Some(DemoEvidence { size: 3 })
        );
        assert_eq!(f.findings[0].status(), Status::Warn);
        assert_eq!(
            Finding::new(DemoKind::Ok, "x").evidence_as::<DemoEvidence>(),
            None
        );
        assert_eq!(Finding::new(DemoKind::Ok, "fine").status, Status::Pass);
    }

    #[test]
    fn skips_carry_their_reason_and_the_privilege() {
        let f = Finding::skip(SkipReason::NeedsPrivilege("root to read /x".into()));
        assert_eq!(f.kind.name, "needs-privilege");
        assert_eq!(f.needs.as_deref(), Some("root to read /x"));
        assert_eq!(f.summary, "needs root to read /x");
        let f = Finding::skip(SkipReason::NothingToMeasure("idle".into()));
        assert_eq!(
            f.kind.skip,
            Some(crate::kind::SkipCategory::NothingToMeasure)
        );
        assert_eq!(f.needs, None);
    }
}
