//! Levels per code, applied in one place after the checks ran, never inside
//! a check (cargo-deny's lint levels; kubeadm's
//! `--ignore-preflight-errors`): `--allow CODE` turns a known problem of
//! that kind into a pass that still says what it was (`allowed`, with
//! `status_was`), `--deny CODE` turns a warning of that kind into a
//! failure. The config's `[doctor] allow`/`deny` say the same; a flag wins
//! over the config for the same code.
//!
//! A check with several findings is re-judged from what is left: allowing
//! one peer's kind leaves the others' verdicts standing, and the check's
//! code becomes the most severe kind still standing.
//!
//! An allow that matched nothing, in a check that reached a verdict, is
//! stale: the report says so in `notes` (and the table below the counts),
//! without changing the exit code: the host is no worse for it, and a
//! monitoring timer should not page for a list that needs tidying.

use std::path::PathBuf;

use spx_checks::codes::{self, Level};
use spx_checks::config::{ConfigError, RawCode};
use spx_checks::kind::severity;
use spx_checks::profile::Profile;
use spx_checks::{ConfigState, Status};

use crate::report::{CheckReport, Levelled};

/// Where a level came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Flag,
    Config(PathBuf),
}

/// One code given a level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub code: String,
    pub source: Source,
}

impl Entry {
    /// `--allow CODE`, or `[doctor] allow CODE (PATH)`.
    pub fn label(&self, level: Level) -> String {
        let word = match level {
            Level::Allow => "allow",
            Level::Deny => "deny",
        };
        match &self.source {
            Source::Flag => format!("{} {}", level.flag(), self.code),
            Source::Config(path) => {
                format!("[doctor] {word} {} ({})", self.code, path.display())
            }
        }
    }
}

/// The levels of one run.
#[derive(Clone, Debug, Default)]
pub struct Levels {
    pub allow: Vec<Entry>,
    pub deny: Vec<Entry>,
    /// Said when the levels were resolved (an allow a preflight set aside).
    pub notes: Vec<String>,
}

/// Why the levels of a run are refused: a flag's code (its one line), or
/// a code in the config's `[doctor]` table (where it is written).
#[derive(Debug)]
pub enum Refused {
    Flag(String),
    Config(ConfigError),
}

/// The levels of a run, resolved once against the catalog: the config's
/// `[doctor]` codes (as written there), then the flags, which win for a
/// code both name. A preflight refuses to allow what it depends on, as it
/// refuses `--skip`; an allow in the config for one of its checks is set
/// aside for the run, with a note, so the standing config need not change
/// for a preflight.
pub fn resolve(
    allow: &[String],
    deny: &[String],
    config: &ConfigState,
    profile: Option<&'static Profile>,
) -> Result<Levels, Refused> {
    let required = |code: &str| {
        let id = code.split_once('/').map_or(code, |(id, _)| id);
        profile.filter(|p| p.requires(id))
    };
    let configured = match config {
        ConfigState::Loaded { path, config } => {
            let doctor = &config.doctor;
            Some((path, configured(&doctor.allow, &doctor.deny, path)?))
        }
        _ => None,
    };
    let mut levels = Levels::default();
    for (words, level) in [(allow, Level::Allow), (deny, Level::Deny)] {
        for word in words.iter().filter(|w| !w.is_empty()) {
            let code = codes::for_level(word, level)
                .map_err(|e| Refused::Flag(format!("{}: {e}", level.flag())))?
                .code();
            if let (Level::Allow, Some(p)) = (level, required(&code)) {
                return Err(Refused::Flag(format!(
                    "--allow {code}: the {} preflight requires {}",
                    p.name,
                    code.split_once('/').map_or("", |(id, _)| id)
                )));
            }
            let (mine, other) = match level {
                Level::Allow => (&mut levels.allow, &levels.deny),
                Level::Deny => (&mut levels.deny, &levels.allow),
            };
            if other.iter().any(|e| e.code == code) {
                return Err(Refused::Flag(format!(
                    "--allow {code} and --deny {code}: a code is allowed or denied, not both"
                )));
            }
            if !mine.iter().any(|e| e.code == code) {
                mine.push(Entry {
                    code,
                    source: Source::Flag,
                });
            }
        }
    }
    let Some((path, (allowed, denied))) = configured else {
        return Ok(levels);
    };
    let named = |levels: &Levels, code: &str| {
        levels
            .allow
            .iter()
            .chain(&levels.deny)
            .any(|e| e.code == code)
    };
    for code in denied {
        if !named(&levels, &code) {
            levels.deny.push(Entry {
                code,
                source: Source::Config(path.clone()),
            });
        }
    }
    for code in allowed {
        if named(&levels, &code) {
            continue;
        }
        let entry = Entry {
            code,
            source: Source::Config(path.clone()),
        };
        match required(&entry.code) {
            Some(p) => levels.notes.push(format!(
                "{} set aside: the {} preflight requires {} and never passes on an allowed problem",
                entry.label(Level::Allow),
                p.name,
                entry.code.split_once('/').map_or("", |(id, _)| id)
            )),
            None => levels.allow.push(entry),
        }
    }
    Ok(levels)
}

/// The config's `[doctor]` codes, resolved: (allowed, denied), each once,
/// in the file's order; a code that cannot take its level, or is in both
/// lists, refused where it is written.
fn configured(
    allow: &[RawCode],
    deny: &[RawCode],
    path: &std::path::Path,
) -> Result<(Vec<String>, Vec<String>), Refused> {
    let (mut allowed, mut denied): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    for (list, level, key) in [
        (allow, Level::Allow, "doctor.allow"),
        (deny, Level::Deny, "doctor.deny"),
    ] {
        for raw in list {
            let refused = |message: String| Refused::Config(raw.refused(path, key, message));
            let code = codes::for_level(&raw.text, level)
                .map_err(|e| refused(e.to_string()))?
                .code();
            let (mine, other) = match level {
                Level::Allow => (&mut allowed, &denied),
                Level::Deny => (&mut denied, &allowed),
            };
            if other.contains(&code) {
                return Err(refused(format!(
                    "{code} is in both doctor.allow and doctor.deny"
                )));
            }
            if !mine.contains(&code) {
                mine.push(code);
            }
        }
    }
    Ok((allowed, denied))
}

/// Apply the levels to every check's result; returns what they did, for
/// the report.
pub fn apply(checks: &mut [CheckReport], levels: &Levels) -> Levelled {
    let mut notes = levels.notes.clone();
    let mut matched = vec![false; levels.allow.len()];
    for c in checks.iter_mut() {
        apply_to(c, levels, &mut matched);
    }
    for (entry, hit) in levels.allow.iter().zip(matched) {
        if hit {
            continue;
        }
        let id = entry.code.split_once('/').map_or("", |(id, _)| id);
        let Some(c) = checks.iter().find(|c| c.id == id) else {
            continue;
        };
        let verdict = c.status_was.unwrap_or(c.status);
        if verdict.is_conclusive() {
            notes.push(format!(
                "{} matched nothing: {id} concluded {verdict} without it (a stale allow hides nothing; remove it)",
                entry.label(Level::Allow)
            ));
        }
    }
    Levelled {
        allow: levels.allow.iter().map(|e| e.code.clone()).collect(),
        deny: levels.deny.iter().map(|e| e.code.clone()).collect(),
        notes,
    }
}

/// The status a level gives one item, if it changes it.
fn leveled(code: &str, status: Status, levels: &Levels, matched: &mut [bool]) -> Option<Status> {
    if let Some(i) = levels.allow.iter().position(|e| e.code == code) {
        matched[i] = true;
        if matches!(status, Status::Warn | Status::Fail | Status::Error) {
            return Some(Status::Pass);
        }
    }
    if status == Status::Warn && levels.deny.iter().any(|e| e.code == code) {
        return Some(Status::Fail);
    }
    None
}

fn note_level(c: &mut CheckReport, code: &str, to: Status) {
    let list = if to == Status::Pass {
        &mut c.allowed
    } else {
        &mut c.denied
    };
    if !list.iter().any(|x| x == code) {
        list.push(code.to_owned());
    }
}

fn apply_to(c: &mut CheckReport, levels: &Levels, matched: &mut [bool]) {
    let mut changed = Vec::new();
    for (i, f) in c.findings.iter_mut().enumerate() {
        if let Some(to) = leveled(&f.code, f.status, levels, matched) {
            f.status_was = Some(f.status);
            f.status = to;
            changed.push(i);
        }
    }
    for i in changed.iter().copied() {
        let (code, to) = (c.findings[i].code.clone(), c.findings[i].status);
        note_level(c, &code, to);
    }
    let headline = leveled(&c.code.clone(), c.status, levels, matched);
    if let Some(to) = headline {
        let code = c.code.clone();
        note_level(c, &code, to);
    }
    if changed.is_empty() && headline.is_none() {
        return;
    }
    // Re-judge from what stands. When the headline sums up the findings
    // (its kind is among theirs), the findings alone decide; otherwise the
    // headline stands beside them.
    let before = c.status;
    let sums_up = c.findings.iter().any(|f| f.code == c.code);
    let mut standing: Vec<(Status, String)> = Vec::new();
    if !sums_up {
        standing.push((headline.unwrap_or(c.status), c.code.clone()));
    }
    standing.extend(c.findings.iter().map(|f| (f.status, f.code.to_string())));
    let worst = standing
        .into_iter()
        .reduce(|a, b| if severity(b.0) > severity(a.0) { b } else { a });
    match worst {
        Some((status, code)) if status != Status::Pass => {
            c.status = status;
            if code != c.code {
                c.skip_reason = codes::find(&code).and_then(|k| k.kind.skip);
                c.needs = c
                    .findings
                    .iter()
                    .find(|f| f.code == code)
                    .and_then(|f| f.needs.clone());
                c.code = code;
            }
        }
        // Everything that was wrong is allowed: a pass that keeps its code.
        _ => c.status = Status::Pass,
    }
    if c.status != before {
        c.status_was = Some(before);
        if c.status != Status::Skip {
            c.skip_reason = None;
            c.needs = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::c;
    use crate::report::FindingReport;

    fn allow(codes: &[&str]) -> Levels {
        Levels {
            allow: codes
                .iter()
                .map(|c| Entry {
                    code: (*c).to_owned(),
                    source: Source::Flag,
                })
                .collect(),
            ..Levels::default()
        }
    }

    fn finding(code: &str, status: Status, subject: &str) -> FindingReport {
        FindingReport {
            code: code.into(),
            status,
            subject: subject.into(),
            summary: Default::default(),
            needs: None,
            status_was: None,
        }
    }

    fn qemu() -> CheckReport {
        let mut q = c("qemu.tuning", Status::Fail);
        q.code = "qemu.tuning/no-vhost".into();
        q.findings = vec![
            finding("qemu.tuning/no-vhost", Status::Fail, "pid 1"),
            finding("qemu.tuning/no-iothread", Status::Fail, "pid 2"),
            finding("qemu.tuning/ok", Status::Pass, "pid 3"),
        ];
        q
    }

    #[test]
    fn allowing_one_kind_leaves_the_others_standing() {
        let mut checks = [qemu()];
        let notes = apply(&mut checks, &allow(&["qemu.tuning/no-vhost"])).notes;
        let q = &checks[0];
        assert_eq!(q.status, Status::Fail);
        assert_eq!(q.code, "qemu.tuning/no-iothread");
        assert_eq!(q.status_was, None, "still a fail");
        assert_eq!(q.allowed, ["qemu.tuning/no-vhost"]);
        assert_eq!(q.findings[0].status, Status::Pass);
        assert_eq!(q.findings[0].status_was, Some(Status::Fail));
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn allowing_every_problem_is_a_pass_that_keeps_its_code() {
        let mut checks = [qemu()];
        apply(
            &mut checks,
            &allow(&["qemu.tuning/no-vhost", "qemu.tuning/no-iothread"]),
        );
        let q = &checks[0];
        assert_eq!(q.status, Status::Pass);
        assert_eq!(q.status_was, Some(Status::Fail));
        assert_eq!(q.code, "qemu.tuning/no-vhost");
    }

    #[test]
    fn what_was_hidden_behind_an_allowed_fail_shows() {
        // A stale flag allowed, the other database unreachable: an error.
        let mut f = c("ipsec.flags", Status::Fail);
        f.code = "ipsec.flags/stale-nb-ipsec".into();
        f.findings = vec![
            finding(
                "ipsec.flags/stale-nb-ipsec",
                Status::Fail,
                "NB_Global.ipsec",
            ),
            finding("ipsec.flags/db-unreachable", Status::Error, "Open_vSwitch"),
        ];
        let mut checks = [f];
        apply(&mut checks, &allow(&["ipsec.flags/stale-nb-ipsec"]));
        assert_eq!(checks[0].status, Status::Error);
        assert_eq!(checks[0].code, "ipsec.flags/db-unreachable");
        assert_eq!(checks[0].status_was, Some(Status::Fail));
        // A headline with no findings behind it is judged alone.
        let mut one = c("sysctl.udp-buffers", Status::Fail);
        one.code = "sysctl.udp-buffers/below-required".into();
        let mut checks = [one];
        apply(&mut checks, &allow(&["sysctl.udp-buffers/below-required"]));
        assert_eq!(checks[0].status, Status::Pass);
        assert_eq!(checks[0].allowed, ["sysctl.udp-buffers/below-required"]);
    }

    #[test]
    fn deny_fails_a_warning_and_nothing_else() {
        let mut w = c("nic.rings", Status::Warn);
        w.code = "nic.rings/shallow-ring".into();
        w.findings = vec![finding("nic.rings/shallow-ring", Status::Warn, "eth0")];
        let levels = Levels {
            deny: vec![Entry {
                code: "nic.rings/shallow-ring".into(),
                source: Source::Flag,
            }],
            ..Levels::default()
        };
        let mut checks = [w, c("nic.tso", Status::Warn)];
        apply(&mut checks, &levels);
        assert_eq!(checks[0].status, Status::Fail);
        assert_eq!(checks[0].status_was, Some(Status::Warn));
        assert_eq!(checks[0].denied, ["nic.rings/shallow-ring"]);
        assert_eq!(checks[1].status, Status::Warn);
    }

    fn loaded(text: &str) -> ConfigState {
        let path = std::path::Path::new("spinifex.toml");
        ConfigState::Loaded {
            path: path.to_owned(),
            config: Box::new(spx_checks::config::parse(text, path).unwrap()),
        }
    }

    fn refusal(r: Result<Levels, Refused>) -> String {
        match r {
            Err(Refused::Config(e)) => e.to_string(),
            Err(Refused::Flag(line)) => format!("flag: {line}"),
            Ok(l) => panic!("resolved: {l:?}"),
        }
    }

    #[test]
    fn the_configs_codes_are_resolved_here_and_refused_where_written() {
        let l = resolve(
            &[],
            &[],
            &loaded("[doctor]\nallow = [\"qemu.tuning/no-vhost\", \"nic.rings/shallow-ring\", \"qemu.tuning/no-vhost\"]\ndeny = [\"tcp.reordering/reordering-or-loss\"]\n"),
            None,
        )
        .unwrap();
        let codes = |l: &[Entry]| l.iter().map(|e| e.code.clone()).collect::<Vec<_>>();
        assert_eq!(
            codes(&l.allow),
            ["qemu.tuning/no-vhost", "nic.rings/shallow-ring"]
        );
        assert_eq!(codes(&l.deny), ["tcp.reordering/reordering-or-loss"]);
        assert_eq!(l.allow[0].source, Source::Config("spinifex.toml".into()));
        let typo = loaded("node = \"a\"\n[doctor]\nallow = [\"nic.rings/shalow-ring\"]\n");
        let e = refusal(resolve(&[], &[], &typo, None));
        assert!(
            e.starts_with(
                "spinifex.toml:3:10: key `doctor.allow`: unknown code \"nic.rings/shalow-ring\""
            ) && e.contains("did you mean \"nic.rings/shallow-ring\"?"),
            "{e}"
        );
        // The config is refused before any flag is looked at.
        let e = refusal(resolve(&["nic.rings/nope".into()], &[], &typo, None));
        assert!(e.starts_with("spinifex.toml:3:10"), "{e}");
        let e = refusal(resolve(
            &[],
            &[],
            &loaded("[doctor]\ndeny = [\"qemu.tuning/no-vhost\"]\n"),
            None,
        ));
        assert!(
            e.contains("key `doctor.deny`") && e.contains("only warnings can be denied"),
            "{e}"
        );
        let e = refusal(resolve(
            &[],
            &[],
            &loaded("[doctor]\nallow = [\"nic.rings/shallow-ring\"]\ndeny = [\"nic.rings/shallow-ring\"]\n"),
            None,
        ));
        assert!(
            e.ends_with("nic.rings/shallow-ring is in both doctor.allow and doctor.deny"),
            "{e}"
        );
        // A flag wins over the config for the same code.
        let l = resolve(
            &[],
            &["nic.rings/shallow-ring".into()],
            &loaded("[doctor]\nallow = [\"nic.rings/shallow-ring\"]\n"),
            None,
        )
        .unwrap();
        assert!(l.allow.is_empty());
        assert_eq!(l.deny[0].source, Source::Flag);
    }

    #[test]
    fn a_stale_allow_is_a_note_only_where_its_check_concluded() {
        let mut ok = c("nic.rings", Status::Pass);
        ok.code = "nic.rings/ok".into();
        let mut skipped = c("qemu.tuning", Status::Skip);
        skipped.code = "qemu.tuning/needs-privilege".into();
        let mut checks = [ok, skipped];
        let mut levels = allow(&[
            "nic.rings/shallow-ring",
            "qemu.tuning/no-vhost",
            "cpu.softirq/esp-funnel",
        ]);
        levels.allow[0].source = Source::Config("/etc/spinifex/spinifex.toml".into());
        let notes = apply(&mut checks, &levels).notes;
        assert_eq!(
            notes,
            ["[doctor] allow nic.rings/shallow-ring (/etc/spinifex/spinifex.toml) matched nothing: nic.rings concluded pass without it (a stale allow hides nothing; remove it)"]
        );
    }
}
