//! Run the selected checks concurrently under one deadline.
//!
//! Every check gets its own thread, all started together, so the sampling
//! checks share one window. The runner waits until every check has answered
//! or the deadline has passed; a check still running then is reported as an
//! error ("timed out after …") and the report is still complete. A check
//! that panics becomes an error for that check alone.

use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use spx_checks::host::Outcome as Recorded;
use spx_checks::kind::Common;
use spx_checks::{codes, Check, Ctx, Finding, SkipReason, Status};

pub struct Outcome {
    pub check: &'static dyn Check,
    pub finding: Finding,
    pub duration: Duration,
    /// Still running at the deadline.
    pub timed_out: bool,
}

const THREAD_PREFIX: &str = "check:";

/// Panic messages of check threads, by thread name, so that a panic becomes
/// the check's error summary instead of noise on stderr.
fn panic_messages() -> &'static Mutex<HashMap<String, String>> {
    static MESSAGES: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    MESSAGES.get_or_init(Default::default)
}

/// Install once, before running checks: panics on check threads are
/// recorded silently; others keep the default hook.
pub fn install_panic_hook() {
    let default = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        let thread = std::thread::current();
        match thread.name() {
            Some(name) if name.starts_with(THREAD_PREFIX) => {
                let msg = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".to_owned());
                let at = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                if let Ok(mut m) = panic_messages().lock() {
                    m.insert(name.to_owned(), format!("{msg}{at}"));
                }
            }
            _ => default(info),
        }
    }));
}

pub fn run(checks: &[&'static dyn Check], ctx: Arc<Ctx>) -> Vec<Outcome> {
    let (tx, rx) = mpsc::channel::<(usize, Finding, Duration)>();
    for (index, check) in checks.iter().copied().enumerate() {
        let thread_tx = tx.clone();
        // Each check asks the host in its own scope (a replay answers
        // each check's questions in the order it asked them).
        let ctx = ctx.for_check(check.id());
        let name = format!("{THREAD_PREFIX}{}", check.id());
        let spawned = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                let t0 = Instant::now();
                let ctx = ctx.begun(t0);
                let result = panic::catch_unwind(AssertUnwindSafe(|| check.run(&ctx)));
                let finding = match result {
                    // A replay that lacked some of the check's facts: a
                    // verdict on part of them would be a guess.
                    Ok(f) => match ctx.host_arc().unanswered(check.id()) {
                        Some(why) => Finding::skip(SkipReason::NotRecorded(why)),
                        None => police(check, f),
                    },
                    Err(_) => {
                        let msg = panic_messages()
                            .lock()
                            .ok()
                            .and_then(|mut m| m.remove(&name))
                            .unwrap_or_else(|| "panic".to_owned());
                        Finding::common(
                            Common::Crashed,
                            format!(
                                "the check crashed (a bug in spx-doctor; please report it): {msg}"
                            ),
                        )
                    }
                };
                let _ = thread_tx.send((index, finding, t0.elapsed()));
            });
        if let Err(e) = spawned {
            let _ = tx.send((
                index,
                Finding::common(Common::NotStarted, format!("could not start: {e}")),
                Duration::ZERO,
            ));
        }
    }
    drop(tx);

    let mut results: Vec<Option<(Finding, Duration)>> = vec![None; checks.len()];
    let deadline = ctx.deadline();
    let mut pending = checks.len();
    while pending > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((i, finding, took)) => {
                if results[i].is_none() {
                    pending -= 1;
                }
                results[i] = Some((finding, took));
            }
            Err(_) => break,
        }
    }
    let timeout = ctx.opts.timeout;
    checks
        .iter()
        .copied()
        .zip(results)
        .map(|(check, r)| match r {
            Some((finding, duration)) => Outcome {
                check,
                finding,
                duration,
                timed_out: false,
            },
            None => timed_out(check, timeout),
        })
        .collect()
}

/// The runner's verdict on a check still running at the deadline.
fn timed_out(check: &'static dyn Check, timeout: Duration) -> Outcome {
    Outcome {
        check,
        finding: Finding::common(
            Common::TimedOut,
            format!(
                "timed out after {} (--timeout)",
                humantime::format_duration(timeout)
            ),
        ),
        duration: timeout,
        timed_out: true,
    }
}

/// Replay `checks` against a bundle whose runner recorded `recorded`: a
/// check that timed out then times out now (its facts stop where it was
/// cut off), a check the recorded run did not run is skipped, saying so,
/// and the others run on the recorded facts. Durations are the recorded
/// ones: the report is the recorded run's.
pub fn replay(checks: &[&'static dyn Check], ctx: Arc<Ctx>, recorded: &[Recorded]) -> Vec<Outcome> {
    let find = |c: &&'static dyn Check| recorded.iter().find(|r| r.id == c.id());
    let runnable: Vec<&'static dyn Check> = checks
        .iter()
        .copied()
        .filter(|c| find(c).is_some_and(|r| !r.timed_out))
        .collect();
    let timeout = ctx.opts.timeout;
    let mut ran = run(&runnable, ctx).into_iter();
    checks
        .iter()
        .map(|c| match find(c) {
            Some(r) if r.timed_out => timed_out(*c, timeout),
            Some(r) => {
                let mut o = ran.next().expect("one outcome per check run");
                o.duration = Duration::from_millis(r.duration_ms);
                o
            }
            None => Outcome {
                check: *c,
                finding: Finding::skip(SkipReason::NotRecorded(format!(
                    "the recorded run did not run {}",
                    c.id()
                ))),
                duration: Duration::ZERO,
                timed_out: false,
            },
        })
        .collect()
}

/// A check keeps its contract or its result is reported as the bug it is:
/// a fail must say how to fix it, and every kind it reports (headline and
/// per subject) must be one it declares, with the status the kind has.
pub fn police(check: &dyn Check, f: Finding) -> Finding {
    let broken = |kind: Common, why: String, f: Finding| {
        let mut e = Finding::common(kind, format!("{} (bug in spx-doctor: {why})", f.summary));
        e.evidence = f.evidence;
        e
    };
    if f.status == Status::Fail && f.remediation.is_empty() {
        return broken(
            Common::FailWithoutRemediation,
            "a fail without remediation".to_owned(),
            f,
        );
    }
    let id = check.id();
    if f.status != f.kind.status {
        let why = format!(
            "{} is a {}, reported as a {}",
            f.kind.code(id),
            f.kind.status,
            f.status
        );
        return broken(Common::UndeclaredCode, why, f);
    }
    let stray = std::iter::once(f.kind)
        .chain(f.findings.iter().map(|s| s.kind))
        .find(|k| !codes::reports(check, k));
    if let Some(kind) = stray {
        let why = format!("{} is not a kind {id} declares", kind.code(id));
        return broken(Common::UndeclaredCode, why, f);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use spx_checks::{ConfigState, Declared, Options};

    spx_checks::kinds! {
        /// The kinds of the runner's test checks (their codes take the
        /// test check's id).
        enum TestKind for "test.runner" {
            /// Fine.
            Ok = pass("ok"),
            /// Broken.
            Broken = fail("broken"),
        }
    }

    static TEST: Declared =
        Declared::of::<TestKind, spx_checks::checks::nic_rings::NicRingsEvidence>();

    struct Sleepy;
    impl Check for Sleepy {
        fn id(&self) -> &'static str {
            "test.sleepy"
        }
        fn title(&self) -> &'static str {
            "sleeps past any deadline"
        }
        fn explain(&self) -> &'static str {
            ""
        }
        fn declared(&self) -> &'static Declared {
            &TEST
        }
        fn run(&self, _: &Ctx) -> Finding {
            std::thread::sleep(Duration::from_secs(30));
            Finding::new(TestKind::Ok, "woke up")
        }
    }

    struct Panicky;
    impl Check for Panicky {
        fn id(&self) -> &'static str {
            "test.panicky"
        }
        fn title(&self) -> &'static str {
            "panics"
        }
        fn explain(&self) -> &'static str {
            ""
        }
        fn declared(&self) -> &'static Declared {
            &TEST
        }
        fn run(&self, _: &Ctx) -> Finding {
            let v: Vec<u8> = Vec::new();
            Finding::new(TestKind::Ok, format!("{}", v[3]))
        }
    }

    struct Unhelpful;
    impl Check for Unhelpful {
        fn id(&self) -> &'static str {
            "test.unhelpful"
        }
        fn title(&self) -> &'static str {
            "fails without saying how to fix it"
        }
        fn explain(&self) -> &'static str {
            ""
        }
        fn declared(&self) -> &'static Declared {
            &TEST
        }
        fn run(&self, _: &Ctx) -> Finding {
            Finding::new(TestKind::Broken, "broken")
        }
    }

    spx_checks::kinds! {
        enum StrictKind for "test.strict" {
            /// Fine.
            Ok = pass("ok"),
        }
    }

    static STRICT: Declared =
        Declared::of::<StrictKind, spx_checks::checks::nic_rings::NicRingsEvidence>();

    /// Declares its kinds, then reports another.
    struct Strict(fn() -> Finding);
    impl Check for Strict {
        fn id(&self) -> &'static str {
            "test.strict"
        }
        fn title(&self) -> &'static str {
            "declares kinds"
        }
        fn explain(&self) -> &'static str {
            ""
        }
        fn declared(&self) -> &'static Declared {
            &STRICT
        }
        fn run(&self, _: &Ctx) -> Finding {
            (self.0)()
        }
    }

    fn ctx(timeout: Duration) -> Arc<Ctx> {
        let opts = Options {
            timeout,
            sample: Duration::ZERO,
            ..Options::default()
        };
        Arc::new(Ctx::new(ConfigState::Missing { looked_at: vec![] }, opts))
    }

    #[test]
    fn a_check_past_the_deadline_is_an_error_and_the_report_is_complete() {
        let t0 = Instant::now();
        let out = run(&[&Sleepy, &Unhelpful], ctx(Duration::from_millis(200)));
        // The 30 s sleeper did not hold the run: well under its sleep.
        assert!(t0.elapsed() < Duration::from_secs(10));
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].finding.status, Status::Error);
        assert_eq!(out[0].finding.summary, "timed out after 200ms (--timeout)");
        assert_eq!(out[0].finding.kind.code("x.y"), "x.y/timed-out");
        assert_eq!(
            out[1].finding.status,
            Status::Error,
            "fail without remediation"
        );
        assert_eq!(out[1].finding.kind.name, "fail-without-remediation");
    }

    #[test]
    fn a_panic_is_an_error_for_that_check_only() {
        install_panic_hook();
        let out = run(&[&Panicky, &Unhelpful], ctx(Duration::from_secs(5)));
        assert_eq!(out[0].finding.status, Status::Error);
        assert!(
            out[0].finding.summary.contains("index out of bounds"),
            "{}",
            out[0].finding.summary
        );
        assert!(
            out[0].finding.summary.contains("runner.rs"),
            "{}",
            out[0].finding.summary
        );
        assert_eq!(out[1].check.id(), "test.unhelpful");
        assert_eq!(out[0].finding.kind.name, "crashed");
    }

    #[test]
    fn a_converted_check_may_report_only_the_kinds_it_declares() {
        static FINE: Strict = Strict(|| Finding::new(StrictKind::Ok, "fine"));
        static OTHERS: Strict = Strict(|| {
            Finding::new(
                spx_checks::checks::nic_rings::NicRingsKind::Ok,
                "another's pass",
            )
        });
        static FOREIGN: Strict = Strict(|| {
            Finding::new(StrictKind::Ok, "fine").subject(
                spx_checks::checks::nic_rings::NicRingsKind::ShallowRing,
                "eth0",
                "256",
            )
        });
        static SKIP: Strict =
            Strict(|| Finding::skip(spx_checks::SkipReason::NotApplicable("x".into())));
        let out = run(
            &[&FINE, &OTHERS, &FOREIGN, &SKIP],
            ctx(Duration::from_secs(5)),
        );
        assert_eq!(out[0].finding.status, Status::Pass);
        assert_eq!(out[1].finding.kind.name, "undeclared-code");
        assert!(
            out[1]
                .finding
                .summary
                .contains("nic.rings/ok is not a kind test.strict declares"),
            "{}",
            out[1].finding.summary
        );
        assert_eq!(out[2].finding.kind.name, "undeclared-code");
        assert!(out[2].finding.summary.contains("nic.rings/shallow-ring"));
        assert_eq!(
            out[3].finding.status,
            Status::Skip,
            "common kinds are every check's"
        );
        // An old-style check may use the status kinds.
        let out = run(&[&Unhelpful], ctx(Duration::from_secs(5)));
        assert_eq!(out[0].finding.kind.name, "fail-without-remediation");
    }
}
