//! The catalog of codes, generated from the run's catalogue
//! ([`crate::catalogue::all`], the site's checks among them): every check's
//! declared kinds, then the kinds common to every check. `spx-doctor list
//! --codes`, `explain CODE`, the code table in docs/codes.md and the validation of
//! `--allow`/`--deny` (flags and the config's `[doctor]` table) read it.

use crate::catalogue;
use crate::check::Check;
use crate::finding::Status;
use crate::kind::{KindDoc, Origin, COMMON};

/// One code: a kind as one check reports it.
#[derive(Clone, Copy, Debug)]
pub struct Code {
    pub check: &'static dyn Check,
    pub kind: &'static KindDoc,
}

impl Code {
    /// `<check-id>/<kind>`.
    pub fn code(&self) -> String {
        self.kind.code(self.check.id())
    }
}

/// The kinds a check reports itself: those it declares.
pub fn own_kinds(check: &dyn Check) -> &'static [KindDoc] {
    check.declared().kinds
}

/// Every code of one check: its own kinds, then the common ones.
pub fn of_check(check: &'static dyn Check) -> impl Iterator<Item = Code> {
    own_kinds(check)
        .iter()
        .chain(COMMON.iter())
        .map(move |kind| Code { check, kind })
}

/// Every code of every check, in the catalogue's order.
pub fn all() -> impl Iterator<Item = Code> {
    let checks = catalogue::all();
    (0..checks.len()).flat_map(move |i| of_check(checks[i]))
}

/// May `check` report a finding of `kind`? Its own declared kinds and the
/// common ones.
pub fn reports(check: &dyn Check, kind: &KindDoc) -> bool {
    match kind.origin {
        Origin::Common => true,
        Origin::Check => check.declared().kinds.iter().any(|k| k.same_kind(kind)),
    }
}

/// Look a code up.
pub fn find(code: &str) -> Option<Code> {
    let (id, name) = code.split_once('/')?;
    let check = crate::find(id)?;
    of_check(check).find(|c| c.kind.name == name)
}

/// Which level an operator gives a code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// `--allow`: a known problem of this kind becomes a pass with a note.
    Allow,
    /// `--deny`: a warning of this kind fails the run.
    Deny,
}

impl Level {
    pub fn flag(self) -> &'static str {
        match self {
            Level::Allow => "--allow",
            Level::Deny => "--deny",
        }
    }

    /// Can this level be given to a kind? Only a check's own kinds, and
    /// only where it changes something: problems can be allowed,
    /// warnings denied.
    pub fn applies_to(self, kind: &KindDoc) -> bool {
        kind.origin == Origin::Check
            && match self {
                Level::Allow => matches!(kind.status, Status::Warn | Status::Fail | Status::Error),
                Level::Deny => kind.status == Status::Warn,
            }
    }
}

/// A code that cannot be given a level; its Display is one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeError(pub String);

impl std::fmt::Display for CodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CodeError {}

/// Look a code up, or say in one line that there is none (with the
/// nearest, for a typo).
pub fn lookup(text: &str) -> Result<Code, CodeError> {
    find(text).ok_or_else(|| unknown(text, |_| true))
}

/// Resolve a code an operator gave a level to, or say in one line why it
/// cannot have one.
pub fn for_level(text: &str, level: Level) -> Result<Code, CodeError> {
    let Some(code) = find(text) else {
        return Err(unknown(text, |k| level.applies_to(k)));
    };
    if level.applies_to(code.kind) {
        return Ok(code);
    }
    let id = code.check.id();
    let why = match code.kind.origin {
        Origin::Common => format!(
            "common to every check (the doctor's own {}), not a finding about the host; to not run {id}, --skip it",
            code.kind.status
        ),
        Origin::Check => match level {
            Level::Allow => format!(
                "a {}: only warnings, failures and errors can be allowed",
                code.kind.status
            ),
            Level::Deny => format!(
                "a {}: only warnings can be denied (a denied warning fails)",
                code.kind.status
            ),
        },
    };
    Err(CodeError(format!("{text} is {why}")))
}

/// "unknown code", with the nearest code among those `eligible` accepts.
fn unknown(text: &str, eligible: impl Fn(&KindDoc) -> bool) -> CodeError {
    let list = format!(
        "`{} list --codes` lists every code",
        crate::spinifex::doctor_command()
    );
    let hint = if text.contains('/') {
        ""
    } else {
        " (a code is CHECK-ID/KIND, e.g. nic.rings/shallow-ring)"
    };
    let nearest = all()
        .filter(|c| eligible(c.kind))
        .map(|c| c.code())
        .map(|c| (strsim::jaro_winkler(text, &c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c);
    CodeError(match nearest {
        Some(n) => format!("unknown code {text:?}{hint} (did you mean {n:?}?); {list}"),
        None => format!("unknown code {text:?}{hint}; {list}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::is_kebab;

    #[test]
    fn codes_are_unique_well_formed_and_documented() {
        let mut seen = std::collections::HashSet::new();
        for c in all() {
            let code = c.code();
            assert!(seen.insert(code.clone()), "duplicate code {code}");
            assert!(is_kebab(c.kind.name), "{code}: kind is not kebab-case");
            assert!(!c.kind.text().is_empty(), "{code} is undocumented");
            if let Some(owner) = c.kind.check {
                assert_eq!(owner, c.check.id(), "{code} declared by another check");
            }
            assert_eq!(find(&code).map(|f| f.code()), Some(code.clone()));
        }
        // Every converted check has an `ok` and at least one problem kind.
        for check in crate::CHECKS {
            let kinds = own_kinds(*check);
            assert!(
                kinds
                    .iter()
                    .any(|k| k.name == "ok" && k.status == Status::Pass),
                "{} has no ok",
                check.id()
            );
            assert!(
                kinds.iter().any(|k| k.status != Status::Pass),
                "{}",
                check.id()
            );
        }
    }

    // Found running the release build: every converted check reported
    // undeclared-code, because kinds were compared by address and an
    // associated const may be a different copy in each place it is used.
    #[test]
    fn a_kind_is_known_by_its_name_not_its_address() {
        let copy = KindDoc::declared("nic.rings", "shallow-ring", Status::Warn, "a copy");
        let check = crate::find("nic.rings").unwrap();
        assert!(reports(check, &copy));
        let other = KindDoc::declared("nic.rings", "deep-ring", Status::Warn, "");
        assert!(!reports(check, &other));
        assert!(reports(
            check,
            crate::kind::Kinds::doc(crate::kind::Common::TimedOut)
        ));
    }

    #[test]
    fn levels_take_only_codes_they_change() {
        let ok = |t: &str, l| for_level(t, l).map(|c| c.code());
        assert_eq!(
            ok("nic.rings/shallow-ring", Level::Allow).as_deref(),
            Ok("nic.rings/shallow-ring")
        );
        assert!(ok("nic.rings/shallow-ring", Level::Deny).is_ok());
        let e = for_level("nic.rings/shalow-ring", Level::Allow).unwrap_err();
        assert!(
            e.0.contains("did you mean \"nic.rings/shallow-ring\"?"),
            "{e}"
        );
        let e = for_level("shallow-ring", Level::Allow).unwrap_err();
        assert!(e.0.contains("CHECK-ID/KIND"), "{e}");
        let e = for_level("nic.rings/ok", Level::Allow).unwrap_err();
        assert!(e.0.contains("a pass: only warnings"), "{e}");
        let e = for_level("cluster.reachable/fail", Level::Allow).unwrap_err();
        assert!(e.0.contains("unknown code"), "{e}");
        let e = for_level("nic.rings/timed-out", Level::Allow).unwrap_err();
        assert!(e.0.contains("--skip it"), "{e}");
        let e = for_level("qemu.tuning/no-vhost", Level::Deny).unwrap_err();
        assert!(e.0.contains("only warnings can be denied"), "{e}");
        for e in [
            for_level("nic.rings/shalow-ring", Level::Allow).unwrap_err(),
            for_level("qemu.tuning/no-vhost", Level::Deny).unwrap_err(),
        ] {
            assert_eq!(e.to_string().lines().count(), 1);
        }
    }
}
