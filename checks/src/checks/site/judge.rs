//! A site check's verdict from its plugin's run, pure: the run (live, or
//! as a bundle recorded it) and the definition in, a finding of one of the
//! check's kinds out. Nothing that is not an answer passes: an exit outside
//! 0–3, a signal, a timeout, a flood, a JSON answer the schema does not
//! take, each is an error that says which.

use crate::facts::site::answer::{self, AnswerStatus};
use crate::facts::site::nagios::{self, cut};
use crate::facts::site::secure::Problem;
use crate::facts::site::{Ended, SiteRun, TimeoutBy, OUTPUT_LIMIT};
use crate::finding::Finding;
use crate::kind::KindDoc;
use crate::site_definition::{Protocol, SiteDefinition, STANDARD_CODES};
use crate::spinifex::doctor_command;
use crate::status::Status;

use super::evidence::{SiteEvidence, OUTPUT_SHOWN};
use super::kinds::named;

/// How much long text the evidence keeps.
const DETAIL_SHOWN: usize = 8 * 1024;

/// The verdict on `run` of the check `def`, whose kinds are `kinds`.
pub fn judge(def: &SiteDefinition, kinds: &'static [KindDoc], run: &SiteRun) -> Finding {
    let kind = |name: &str| named(kinds, name).expect("every site check has its kinds");
    let mut ev = evidence(def, run);
    let finding = match &run.ended {
        Ended::Exited { code } if (0..=3).contains(code) => match def.protocol {
            Protocol::Nagios => {
                let out = nagios::parse(&run.output);
                let (name, status) = STANDARD_CODES[*code as usize];
                let summary = if out.summary.is_empty() {
                    format!("{} (exit {code}, no output)", name.to_uppercase())
                } else {
                    out.summary
                };
                let mut shown = 0;
                ev.detail = out
                    .detail
                    .into_iter()
                    .take_while(|l| {
                        shown += l.len();
                        shown <= DETAIL_SHOWN
                    })
                    .collect();
                ev.perfdata = out.perfdata;
                ev.perfdata_errors = out.perfdata_errors;
                let f = Finding::of_kind(kind(name), summary);
                with_fixes(def, f, status, &[])
            }
            Protocol::Json => match json_answer(def, kinds, &run.output) {
                Ok((k, a)) => {
                    ev.answer_evidence = Some(a.evidence.clone());
                    let f = Finding::of_kind(k, a.summary.clone());
                    with_fixes(def, f, k.status, &a.fix)
                }
                Err(why) => {
                    ev.output = Some(cut(&run.output, OUTPUT_SHOWN));
                    Finding::of_kind(
                        kind("bad-answer"),
                        format!("its answer is not one: {why}"),
                    )
                    .fix(format!(
                        "make {} print one JSON object as schema/site-check-v1.schema.json describes",
                        def.executable().display()
                    ))
                }
            },
        },
        ended => {
            ev.output = (!run.output.is_empty()).then(|| cut(&run.output, OUTPUT_SHOWN));
            not_an_answer(def, ended, run, &kind)
        }
    };
    finding.evidence(&ev)
}

/// The answer's kind (its code, which must have the answer's status) and
/// the answer; or why it is none.
fn json_answer(
    def: &SiteDefinition,
    kinds: &'static [KindDoc],
    output: &str,
) -> Result<(&'static KindDoc, answer::Answer), String> {
    let a = answer::parse(output)?;
    let declared = |k: &&KindDoc| {
        STANDARD_CODES.iter().any(|(n, _)| *n == k.name)
            || def.codes.iter().any(|c| c.name == k.name)
    };
    let k = named(kinds, &a.code).filter(declared).ok_or_else(|| {
        format!(
            "code {:?} is not one of {}'s (ok, warning, critical, unknown{}; a code of its own is declared under [codes] in {})",
            a.code,
            def.id,
            def.codes.iter().map(|c| format!(", {}", c.name)).collect::<String>(),
            def.file.display()
        )
    })?;
    let status = match a.status {
        AnswerStatus::Pass => Status::Pass,
        AnswerStatus::Warn => Status::Warn,
        AnswerStatus::Fail => Status::Fail,
        AnswerStatus::Error => Status::Error,
    };
    if k.status != status {
        return Err(format!(
            "code {} is a {}, but its status says {status}",
            a.code, k.status
        ));
    }
    Ok((k, a))
}

/// A warning's or a failure's steps: the plugin's own, the file's, and
/// where its runbook is.
fn with_fixes(def: &SiteDefinition, f: Finding, status: Status, own: &[String]) -> Finding {
    if !matches!(status, Status::Warn | Status::Fail) {
        return f;
    }
    f.fixes(own.iter().cloned())
        .fixes(def.fix.iter().cloned())
        .fix(format!(
            "`{} explain {}`: the site's own runbook for it ({})",
            doctor_command(),
            def.id,
            def.file.display()
        ))
}

/// The error of a plugin that gave no answer, with what to do about it.
fn not_an_answer(
    def: &SiteDefinition,
    ended: &Ended,
    run: &SiteRun,
    kind: &dyn Fn(&str) -> &'static KindDoc,
) -> Finding {
    let exe = def.executable().display();
    let said = first_line(&run.output)
        .or_else(|| first_line(&run.stderr))
        .map(|l| format!(": {l}"))
        .unwrap_or_default();
    let timeout = humantime::format_duration(def.timeout);
    match ended {
        Ended::Exited { code } => {
            let why = match code {
                126 => " (a command could not be executed)",
                127 => " (a shell found no such command)",
                _ => "",
            };
            Finding::of_kind(
                kind("bad-exit"),
                format!("exit {code}{why}, which is no Nagios state (0 to 3){said}"),
            )
        }
        Ended::Signaled { signal, name } => Finding::of_kind(
            kind("killed"),
            format!("killed by {name} (signal {signal}){said}"),
        ),
        Ended::TimedOut { after_ms, by } => {
            let whose = match by {
                TimeoutBy::Own => format!("its timeout, {timeout}"),
                TimeoutBy::RunDeadline => "the run's deadline (--timeout)".to_owned(),
            };
            Finding::of_kind(
                kind("timeout"),
                format!(
                    "still running after {} ms ({whose}): its process group and cgroup were killed",
                    after_ms
                ),
            )
            .fix(format!(
                "find what {exe} waits on, or raise `timeout` in {}",
                def.file.display()
            ))
        }
        Ended::OutputCut { limit } => Finding::of_kind(
            kind("output-cut"),
            format!(
                "wrote more than {} KiB on stdout: stopped there and killed",
                limit / 1024
            ),
        )
        .fix(format!(
            "make {exe} print one line (and its detail) under {} KiB",
            OUTPUT_LIMIT / 1024
        )),
        Ended::Stuck {
            pid,
            state,
            killed_after_ms,
            earlier,
        } => {
            let state = match state.as_deref() {
                Some("D") => "state D, uninterruptible sleep".to_owned(),
                Some(s) => format!("state {s}"),
                None => "its state unknown".to_owned(),
            };
            Finding::of_kind(
                kind("stuck"),
                if *earlier {
                    format!("process {pid} of an earlier run of it is still there ({state}): not run again until it goes")
                } else {
                    format!("killed after {killed_after_ms} ms, process {pid} was still there at the run's deadline ({state}): the run did not wait for it")
                },
            )
            .fix(format!(
                "find the mount or device process {pid} waits on (`cat /proc/{pid}/stack`, `cat /proc/{pid}/wchan`)"
            ))
        }
        Ended::Refused { refusal } => {
            let path = refusal.path.display();
            let fix = match &refusal.problem {
                Problem::RelativePath => format!(
                    "give the command's first word from / in {}",
                    def.file.display()
                ),
                Problem::NotOwned { .. } => format!("`chown root {path}` if root trusts it"),
                Problem::GroupWritable { .. } | Problem::WorldWritable { .. } => {
                    format!("`chmod go-w {path}`")
                }
                Problem::NotRegularFile => format!("point the check at a regular file, not {path}"),
                Problem::NotExecutable { .. } => format!("`chmod 0755 {path}`"),
                Problem::TooManyLinks => format!("point the check at {path}'s real file"),
            };
            Finding::of_kind(kind("refused"), format!("refused to run: {refusal}")).fix(fix)
        }
        Ended::CannotRun { error } => {
            Finding::of_kind(kind("cannot-run"), format!("could not run: {error}"))
        }
    }
}

/// The first line that says something, cut to one line's worth.
fn first_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| cut(l, 200))
}

fn evidence(def: &SiteDefinition, run: &SiteRun) -> SiteEvidence {
    SiteEvidence {
        definition: def.file.display().to_string(),
        command: def.command.clone(),
        protocol: def.protocol,
        timeout_ms: def.timeout.as_millis() as u64,
        executable_sha256: def.executable_sha256.clone(),
        ended: run.ended.clone(),
        duration_ms: run.duration_ms,
        isolation: run.isolation.clone(),
        output_bytes: run.output_bytes,
        detail: Vec::new(),
        perfdata: Vec::new(),
        perfdata_errors: Vec::new(),
        answer_evidence: None,
        output: None,
        stderr: cut(&run.stderr, OUTPUT_SHOWN),
    }
}
