//! One judge for the checks that look at each underlay interface in turn
//! (`nic.queues`, `nic.rings`, `nic.offloads`): each interface is either
//! not reported by its driver (a skip for that interface, never a fail) or
//! judged into one or more kinds of its check, and the check's headline is
//! the most severe kind among them. Only the words differ from check to
//! check, so only the words are theirs.

use crate::facts::ethtool::NOT_REPORTED;
use crate::finding::{Finding, SkipReason, Status, Subject};
use crate::kind::{most_severe, Kinds};

/// One kind an interface was judged to be, in words for the summary, with
/// the commands that fix it (none for a pass).
pub struct Judged<K> {
    pub kind: K,
    /// What was found, without the interface's name (`rx ring 256 (device
    /// allows up to 1024)`).
    pub text: String,
    pub fixes: Vec<String>,
}

impl<K> Judged<K> {
    pub fn new(kind: K, text: impl Into<String>) -> Judged<K> {
        Judged {
            kind,
            text: text.into(),
            fixes: Vec::new(),
        }
    }

    pub fn fix(mut self, step: impl Into<String>) -> Judged<K> {
        self.fixes.push(step.into());
        self
    }
}

/// A problem one interface was found to have.
pub struct Problem<K> {
    pub kind: K,
    pub interface: String,
    pub text: String,
}

impl<K> Problem<K> {
    /// `NAME text`, as a summary lists it.
    pub fn said(&self) -> String {
        format!("{} {}", self.interface, self.text)
    }
}

/// The interfaces of one check run, judged one by one; `E` is the row each
/// one leaves in the evidence.
pub struct Interfaces<K, E> {
    /// What the driver may not report, for the skip (`ring sizes`).
    what: &'static str,
    names: Vec<String>,
    rows: Vec<E>,
    subjects: Vec<Subject>,
    /// Every problem, in interface order.
    problems: Vec<Problem<K>>,
    /// Every pass, as `NAME text`.
    fine: Vec<String>,
    fixes: Vec<String>,
    ok: Option<K>,
}

impl<K: Kinds, E> Interfaces<K, E> {
    pub fn new(what: &'static str) -> Interfaces<K, E> {
        Interfaces {
            what,
            names: Vec::new(),
            rows: Vec::new(),
            subjects: Vec::new(),
            problems: Vec::new(),
            fine: Vec::new(),
            fixes: Vec::new(),
            ok: None,
        }
    }

    /// An interface whose driver reports none of it.
    pub fn not_reported(&mut self, name: &str, row: E) {
        self.names.push(name.to_owned());
        self.rows.push(row);
        self.subjects.push(Subject::skipped(
            name,
            SkipReason::NotApplicable(format!("{} {NOT_REPORTED}", self.what)),
        ));
    }

    /// An interface judged into `kinds` (at least one).
    pub fn judged(&mut self, name: &str, kinds: Vec<Judged<K>>, row: E) {
        self.names.push(name.to_owned());
        self.rows.push(row);
        for j in kinds {
            self.subjects
                .push(Subject::new(j.kind, name, j.text.clone()));
            if j.kind.doc().status == Status::Pass {
                self.ok.get_or_insert(j.kind);
                self.fine.push(format!("{name} {}", j.text));
            } else {
                self.problems.push(Problem {
                    kind: j.kind,
                    interface: name.to_owned(),
                    text: j.text,
                });
            }
            self.fixes.extend(j.fixes);
        }
    }

    /// The headline, and the evidence rows in interface order. No
    /// interface reported: a skip naming them. A problem: the most severe
    /// kind, summed up by `problems` from every problem, with every
    /// interface's fixes. Else the pass, summed up by `fine` from every
    /// `NAME text`.
    pub fn finding(
        self,
        problems: impl FnOnce(&[Problem<K>]) -> String,
        fine: impl FnOnce(&[String]) -> String,
    ) -> (Finding, Vec<E>) {
        let headline = match (most_severe(self.problems.iter().map(|p| p.kind)), self.ok) {
            (Some(kind), _) => Finding::new(kind, problems(&self.problems)).fixes(self.fixes),
            (None, Some(ok)) => Finding::new(ok, fine(&self.fine)),
            (None, None) => Finding::skip(SkipReason::NotApplicable(format!(
                "{} {NOT_REPORTED} ({})",
                self.what,
                self.names.join(", ")
            ))),
        };
        (headline.subjects(self.subjects), self.rows)
    }
}

/// Every problem as `NAME text`, joined with `; `.
pub fn said<K>(problems: &[Problem<K>]) -> String {
    problems
        .iter()
        .map(Problem::said)
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::kinds! {
        enum DemoKind for "demo.nic" {
            /// Fine.
            Ok = pass("ok"),
            /// Bad.
            Bad = fail("bad"),
            /// Meh.
            Meh = warn("meh"),
        }
    }

    #[test]
    fn the_worst_kind_heads_and_every_interface_is_a_subject() {
        let mut i: Interfaces<DemoKind, u32> = Interfaces::new("widgets");
        i.not_reported("veth0", 0);
        i.judged("eth0", vec![Judged::new(DemoKind::Meh, "meh").fix("a")], 1);
        i.judged(
            "eth1",
            vec![
                Judged::new(DemoKind::Bad, "bad").fix("b"),
                Judged::new(DemoKind::Meh, "meh too"),
            ],
            2,
        );
        i.judged("eth2", vec![Judged::new(DemoKind::Ok, "fine")], 3);
        let (f, rows) = i.finding(said, |_| unreachable!());
        assert_eq!(rows, [0, 1, 2, 3]);
        assert_eq!(f.kind.name, "bad");
        assert_eq!(f.summary, "eth0 meh; eth1 bad; eth1 meh too");
        assert_eq!(f.remediation, ["a", "b"]);
        let subjects: Vec<(&str, &str)> = f
            .findings
            .iter()
            .map(|s| (s.subject.as_str(), s.kind.name))
            .collect();
        assert_eq!(
            subjects,
            [
                ("veth0", "not-applicable"),
                ("eth0", "meh"),
                ("eth1", "bad"),
                ("eth1", "meh"),
                ("eth2", "ok")
            ]
        );
    }

    #[test]
    fn nothing_reported_skips_and_all_fine_passes() {
        let mut i: Interfaces<DemoKind, ()> = Interfaces::new("widgets");
        i.not_reported("veth0", ());
        let (f, _) = i.finding(|_| unreachable!(), |_| unreachable!());
        assert_eq!(f.status, Status::Skip);
        assert_eq!(
            f.summary,
            "not applicable here: widgets not reported by this driver (veth0)"
        );
        let mut i: Interfaces<DemoKind, ()> = Interfaces::new("widgets");
        i.judged("eth0", vec![Judged::new(DemoKind::Ok, "fine")], ());
        let (f, _) = i.finding(|_| unreachable!(), |fine| fine.join(", "));
        assert_eq!((f.status, f.summary.as_str()), (Status::Pass, "eth0 fine"));
    }
}
