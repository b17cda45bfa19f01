//! A site check's codes: the four Nagios states every site check answers
//! with (by the names the JSON protocol uses too), the doctor's own words
//! for a plugin that did not answer, and a JSON check's declared codes.
//! They are made once per check when the catalogue is built, so that
//! `list --codes`, `explain CODE`, `--allow` and `--deny` know them as they
//! know a built-in check's.

use crate::kind::KindDoc;
use crate::site_definition::SiteDefinition;
use crate::status::Status;

/// Every site check's kinds before its own: name, status, what it means.
pub const SITE_KINDS: [(&str, Status, &str); 12] = [
    (
        "ok",
        Status::Pass,
        "The site's check answered OK (Nagios exit 0, or JSON status pass).",
    ),
    (
        "warning",
        Status::Warn,
        "The site's check answered WARNING (Nagios exit 1, or JSON status warn): its summary says what, its file's explain what it means.",
    ),
    (
        "critical",
        Status::Fail,
        "The site's check answered CRITICAL (Nagios exit 2, or JSON status fail): its summary says what, its fix and explain what to do.",
    ),
    (
        "unknown",
        Status::Error,
        "The site's check answered UNKNOWN (Nagios exit 3, or JSON status error): it could not conclude.",
    ),
    (
        "refused",
        Status::Error,
        "Not run: its executable or its doctor.d file, or a directory above either, is not owned by root or is group- or world-writable, the path is relative, or a symbolic link leads to such a file (sshd's StrictModes); the summary names the file and what is wrong.",
    ),
    (
        "cannot-run",
        Status::Error,
        "Not run: the executable is not there, or could not be executed (not an executable format, an interpreter that is not there).",
    ),
    (
        "bad-exit",
        Status::Error,
        "It exited with a code that is no Nagios state (0 to 3): 255, 127 (a shell found no such command), 126 (not executable). Never read as a pass.",
    ),
    (
        "killed",
        Status::Error,
        "A signal it did not get from the doctor ended it (SIGSEGV, SIGABRT): it crashed.",
    ),
    (
        "timeout",
        Status::Error,
        "Still running at its timeout (or at the run's deadline): its whole process group and cgroup were killed, so nothing it started is left.",
    ),
    (
        "stuck",
        Status::Error,
        "Killed at its timeout, it was still there at the run's deadline: in uninterruptible sleep (state D, a hung mount or device). The run did not wait for it; it is reaped whenever it goes, and until then the check is not started again (a later run says stuck too).",
    ),
    (
        "output-cut",
        Status::Error,
        "It wrote more than 64 KiB: the doctor stopped reading there and killed it; the start of what it wrote is in the evidence.",
    ),
    (
        "bad-answer",
        Status::Error,
        "A JSON check's answer is not one object valid against schema/site-check-v1.schema.json, or its code is not one the check has with that status; the summary names the parse failure.",
    ),
];

/// The kinds of the site check `def` (its id already leaked as `id`):
/// [`SITE_KINDS`], then the codes its file declares, made to live as long
/// as the process (a catalogue is built once per run, and the same file
/// gives back the same kinds).
pub fn of(def: &SiteDefinition, id: &'static str) -> &'static [KindDoc] {
    let mut kinds: Vec<KindDoc> = SITE_KINDS
        .iter()
        .map(|(name, status, doc)| KindDoc::declared(id, name, *status, doc))
        .collect();
    for code in &def.codes {
        kinds.push(KindDoc::declared(
            id,
            leak(&code.name),
            code.status,
            leak(&code.means),
        ));
    }
    Vec::leak(kinds)
}

/// The kind of `name` among `kinds`.
pub fn named(kinds: &'static [KindDoc], name: &str) -> Option<&'static KindDoc> {
    kinds.iter().find(|k| k.name == name)
}

pub fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::is_kebab;
    use crate::site_definition::{RUNNER_CODES, STANDARD_CODES};

    #[test]
    fn the_site_kinds_are_the_standard_and_runner_codes() {
        let names: Vec<&str> = SITE_KINDS.iter().map(|(n, _, _)| *n).collect();
        let expected: Vec<&str> = STANDARD_CODES
            .iter()
            .map(|(n, _)| *n)
            .chain(RUNNER_CODES)
            .collect();
        assert_eq!(names, expected);
        for (n, s, _) in &SITE_KINDS[..4] {
            assert_eq!(STANDARD_CODES.iter().find(|(m, _)| m == n).unwrap().1, *s);
        }
        assert!(SITE_KINDS
            .iter()
            .all(|(n, s, d)| is_kebab(n) && !d.is_empty() && (*s != Status::Skip)));
    }
}
