//! Site checks: an operator's own checks, each a `doctor.d` file and an
//! executable (a Nagios plugin, or one that answers JSON), made into checks
//! like the built-in ones when the run's catalogue is built
//! ([`crate::catalogue::install`]). So `list`, `explain`, `--check` and
//! `--skip`, `--allow` and `--deny` on their codes, the preflights their
//! `profiles` name, every output format, record and replay, the agent and
//! `--cluster` take them with no case of their own.
//!
//! A site check asks the host one question, [`Request::Site`]: the live
//! host runs the executable (`live::site`: its files judged first, its own
//! process group and cgroup, its timeout, a bounded read) and a replay
//! answers with what the recorded plugin answered. [`judge`] reads the
//! answer (the Nagios states and perfdata, or the JSON object) into a
//! finding of the check's kinds (`kinds`).

mod context;
mod evidence;
mod judge;
mod kinds;

use std::sync::Mutex;

pub use evidence::{series, SiteEvidence, SITE_VALUE};
pub use judge::judge;
pub use kinds::SITE_KINDS;

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::finding::Finding;
use crate::host::Request;
use crate::kind::KindDoc;
use crate::settings::Preflight;
use crate::site_definition::SiteDefinition;

/// One site check: its definition, and what it declares (made when the
/// catalogue was built, to live as long as the process).
pub struct SiteCheck {
    def: SiteDefinition,
    id: &'static str,
    title: &'static str,
    explain: &'static str,
    declared: &'static Declared,
}

impl SiteCheck {
    fn new(def: SiteDefinition) -> SiteCheck {
        let id = kinds::leak(&def.id);
        let kinds: &'static [KindDoc] = kinds::of(&def, id);
        let declared = Box::leak(Box::new(Declared {
            kinds,
            metrics: <SiteEvidence as crate::evidence::Evidence>::METRICS,
            series,
        }));
        let explain = format!(
            "{}\n\nA site check, from {}: runs {} ({} protocol, timeout {}{}){}.",
            def.explain,
            def.file.display(),
            shell_words(&def.command),
            def.protocol.as_str(),
            humantime::format_duration(def.timeout),
            if def.requires_root {
                ", needs root"
            } else {
                ""
            },
            if def.profiles.is_empty() {
                String::new()
            } else {
                format!(
                    "; part of the preflight{} {}",
                    if def.profiles.len() > 1 { "s" } else { "" },
                    def.profiles
                        .iter()
                        .map(|p| p.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        );
        SiteCheck {
            id,
            title: kinds::leak(&def.title),
            explain: kinds::leak(&explain),
            declared,
            def,
        }
    }

    /// What the host is asked.
    fn request(&self, ctx: &Ctx) -> Request {
        Request::Site {
            check: self.def.id.clone(),
            definition: self.def.file.clone(),
            command: self.def.command.clone(),
            timeout: self.def.timeout,
            requires_root: self.def.requires_root,
            context: context::of(ctx, self.id),
        }
    }
}

impl Check for SiteCheck {
    fn id(&self) -> &'static str {
        self.id
    }

    fn title(&self) -> &'static str {
        self.title
    }

    fn explain(&self) -> &'static str {
        self.explain
    }

    fn declared(&self) -> &'static Declared {
        self.declared
    }

    fn profiles(&self) -> &[Preflight] {
        &self.def.profiles
    }

    fn site(&self) -> Option<&SiteDefinition> {
        Some(&self.def)
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        match ctx.host().site_run(self.request(ctx)) {
            Ok(run) => judge(&self.def, self.declared.kinds, &run),
            Err(e) => e.into(),
        }
    }
}

/// The checks of these definitions, in their order. A definition seen
/// before (the agent builds a catalogue per run) gives back the same
/// check, so what is made to live as long as the process stays bounded by
/// the different files ever read.
pub fn checks_of(defs: &[SiteDefinition]) -> Vec<&'static dyn Check> {
    static MADE: Mutex<Vec<&'static SiteCheck>> = Mutex::new(Vec::new());
    let mut made = MADE.lock().unwrap_or_else(|p| p.into_inner());
    defs.iter()
        .map(|def| {
            let check: &'static SiteCheck = match made.iter().find(|c| c.def == *def) {
                Some(c) => c,
                None => {
                    let c: &'static SiteCheck = Box::leak(Box::new(SiteCheck::new(def.clone())));
                    made.push(c);
                    c
                }
            };
            check as &'static dyn Check
        })
        .collect()
}

/// An argv as an operator would type it (for `explain`).
fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "/._-=,:%@+".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
