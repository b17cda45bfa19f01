//! `spx-doctor`: the binary behind Spinifex's `spx doctor`.
//!
//! `anyhow` lives only here; the library reports typed errors. Exit codes
//! follow Spinifex's `spx admin node js-probe`: 0 ok, 1 a failure observed,
//! 2 inconclusive (usage, config, or no conclusion).

mod agent;
mod bus;
mod cli;
mod cluster;
mod heap;
mod levels;
mod otlp;
mod path;
mod render;
mod report;
mod runner;
mod settings;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use clap::CommandFactory;
use spx_checks::host::{Bundle, Header, Host, HostRef, Recorder, Replay, RUNBOOK_SCOPE, RUN_SCOPE};
use spx_checks::live::LiveHost;
use spx_checks::{catalogue, Ctx, CHECKS};

use crate::cli::{Action, Cli, Format, Shell};
use crate::render::term::Term;
use crate::render::Style;
use crate::settings::{Settings, UsageError};

fn main() -> ExitCode {
    let cli = cli::parse();
    match dispatch(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            render::error_line(&format!("{e:#}"));
            ExitCode::from(2)
        }
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<u8> {
    match cli.action {
        Some(Action::Completions { shell }) => {
            render::to_stdout(&completions(shell))?;
            Ok(0)
        }
        Some(Action::Agent(args)) => agent::run(args),
        Some(Action::Man) => {
            render::to_stdout(&man_page()?)?;
            Ok(0)
        }
        Some(Action::Complete { words }) => {
            // The site's checks complete too, when their files read.
            let _ = settings::install_catalogue(None);
            render::to_stdout(&complete(words)?)?;
            Ok(0)
        }
        Some(Action::List {
            codes,
            config,
            term,
        }) => {
            settings::install_catalogue(config)?;
            let term = Term::detect(term, Term::stdout_is_terminal());
            render::to_stdout(&if codes {
                render::catalog::list_codes(&term)
            } else {
                render::catalog::list(&catalogue::all(), &term)
            })?;
            Ok(0)
        }
        Some(Action::Explain { id, .. }) if id == spx_checks::path::ID => {
            render::to_stdout(&render::catalog::explain_path())?;
            Ok(0)
        }
        Some(Action::Explain { id, .. }) if spx_checks::path::find_code(&id).is_some() => {
            let kind = spx_checks::path::find_code(&id).expect("guarded");
            render::to_stdout(&render::catalog::explain_path_code(kind))?;
            Ok(0)
        }
        Some(Action::Explain { id, config, term }) if id.contains('/') => {
            settings::install_catalogue(config)?;
            let code = spx_checks::codes::lookup(&id).map_err(|e| UsageError(e.to_string()))?;
            let term = Term::detect(term, Term::stdout_is_terminal());
            render::to_stdout(&render::catalog::explain_code(&code, &term))?;
            Ok(0)
        }
        Some(Action::Explain { id, config, term }) => {
            settings::install_catalogue(config)?;
            let check =
                spx_checks::select::select(&catalogue::all(), std::slice::from_ref(&id), &[])
                    .map_err(|e| UsageError(e.to_string()))?;
            match check.as_slice() {
                [one] if one.id() == id => {
                    let term = Term::detect(term, Term::stdout_is_terminal());
                    render::to_stdout(&render::catalog::explain(*one, &term))?;
                    Ok(0)
                }
                _ => Err(UsageError(format!(
                    "{id:?} is a category; explain takes a check id: {}",
                    check.iter().map(|c| c.id()).collect::<Vec<_>>().join(", ")
                ))
                .into()),
            }
        }
        Some(Action::Watch(args)) => cluster::watch::run(args),
        Some(Action::Path(args)) => path::run(*args),
        Some(Action::PathFacts(args)) => path::facts(args),
        None => {
            binary_not_to_a_terminal(&cli.run)?;
            settings::record_and_replay(&cli.run)?;
            if cli.run.replay.is_some() {
                replay(cli.run)
            } else if cli.run.cluster.cluster {
                cluster::run(cli.run)
            } else {
                doctor(Settings::from_args(cli.run)?)
            }
        }
    }
}

fn doctor(settings: Settings) -> anyhow::Result<u8> {
    runner::install_panic_hook();
    let (report, bundle) = match &settings.record {
        None => (node_report(&settings, &Facts::Live), None),
        Some(path) => {
            let recorder = Arc::new(Recorder::new(LiveHost::new()));
            let facts = Facts::Record(Arc::clone(&recorder));
            let report = node_report(&settings, &facts);
            let mut header = Header::new(
                report.started_at.clone(),
                report.duration_ms,
                settings.options.clone(),
                settings.config.clone(),
                report.recorded.clone(),
            );
            header.policy = settings.policy.clone();
            header.site_checks = catalogue::site_definitions();
            (report, Some((path, recorder.bundle(header))))
        }
    };
    // The bundle first: a run asked to record that cannot is refused
    // (exit 2), as an --output that cannot be written is.
    if let Some((path, bundle)) = bundle {
        render::write_atomically(path, &bundle.to_bytes())
            .map_err(|e| UsageError(format!("--record {}: {e}", path.display())))?;
    }
    let out = render::render(&report, settings.format, &style(&settings));
    emit(&settings, &out)?;
    Ok(report.exit_code as u8)
}

/// `--replay FILE`: the recorded run's report, judged from its bundle.
fn replay(args: cli::RunArgs) -> anyhow::Result<u8> {
    runner::install_panic_hook();
    let path = args.replay.clone().expect("called for --replay");
    let bundle =
        Bundle::read(&path).map_err(|e| UsageError(format!("--replay {}: {e}", path.display())))?;
    let settings = Settings::for_replay(args, &bundle)?;
    let host = Arc::new(Replay::new(&bundle, |id| spx_checks::find(id).is_some()));
    let facts = Facts::Replay {
        path,
        bundle: Box::new(bundle),
        host,
    };
    let report = node_report(&settings, &facts);
    let out = render::render(&report, settings.format, &style(&settings));
    emit(&settings, &out)?;
    Ok(report.exit_code as u8)
}

/// Where a node run's facts come from.
pub enum Facts {
    /// This machine.
    Live,
    /// This machine, every read written down (`--record`).
    Record(Arc<Recorder<LiveHost>>),
    /// A bundle (`--replay`).
    Replay {
        path: PathBuf,
        bundle: Box<Bundle>,
        host: Arc<Replay>,
    },
}

/// Run the selected checks and build the report (with the runbook of a
/// preflight), the same in a node run, for this node in a cluster run, and
/// in a replay (which judges the recorded facts and reports the recorded
/// run: its start, durations and time-outs).
pub fn node_report(settings: &Settings, facts: &Facts) -> report::Report {
    let started_at = SystemTime::now();
    let t0 = Instant::now();
    let host: Arc<dyn Host> = match facts {
        Facts::Live => Arc::new(LiveHost::new()),
        Facts::Record(r) => Arc::clone(r) as Arc<dyn Host>,
        Facts::Replay { host, .. } => Arc::clone(host) as Arc<dyn Host>,
    };
    // One --timeout from when the command line began to be read: the
    // --peer interface lookups before the checks count against it.
    let ctx = Arc::new(
        Ctx::with_host(
            settings.config.clone(),
            settings.options.clone(),
            Arc::clone(&host),
        )
        .deadline_from(settings.started),
    );
    let outcomes = match facts {
        Facts::Replay { bundle, .. } => {
            runner::replay(&settings.checks, Arc::clone(&ctx), &bundle.header.checks)
        }
        _ => runner::run(&settings.checks, Arc::clone(&ctx)),
    };
    let recorded: Vec<spx_checks::host::Outcome> = outcomes
        .iter()
        .map(|o| spx_checks::host::Outcome {
            id: o.check.id().to_owned(),
            duration_ms: o.duration.as_millis() as u64,
            timed_out: o.timed_out,
        })
        .collect();
    let runbook = settings.profile.map(|p| {
        let results: Vec<(&str, &spx_checks::Finding)> = outcomes
            .iter()
            .map(|o| (o.check.id(), &o.finding))
            .collect();
        (p.runbook)(&ctx.for_check(RUNBOOK_SCOPE), &results)
    });
    let policy = report::Policy {
        strict: settings.strict,
        required: settings
            .profile
            .map(|p| p.required_ids())
            .unwrap_or_default(),
    };
    let mut checks: Vec<report::CheckReport> =
        outcomes.into_iter().map(report::check_report).collect();
    let levelled = levels::apply(&mut checks, &settings.levels);
    let mut report = report::build(
        checks,
        levelled,
        &settings.config,
        spx_checks::profile::RunProfile(settings.profile.map(|p| p.preflight)),
        started_at,
        t0.elapsed(),
        &policy,
        HostRef::new(host.as_ref(), RUN_SCOPE),
    );
    report.recorded = recorded;
    if let Facts::Replay { path, bundle, host } = facts {
        report.started_at = bundle.header.started_at.clone();
        report.duration_ms = bundle.header.duration_ms;
        report.replayed_from = Some(report::ReplayedFrom {
            bundle: path.display().to_string(),
            recorded_by: bundle.header.doctor_version.clone(),
            notes: host.notes().to_vec(),
        });
    }
    report.runbook = runbook.map(|steps| {
        steps
            .iter()
            .map(|s| spx_checks::spinifex::as_invoked(s))
            .collect()
    });
    report
}

/// How the table is drawn: the screen (colour, width, symbols), and
/// evidence or not.
pub fn style(settings: &Settings) -> Style {
    let to_terminal = settings.output.is_none() && Term::stdout_is_terminal();
    Style {
        verbose: settings.verbose,
        strict: settings.strict,
        term: Term::detect(settings.term, to_terminal),
    }
}

/// Write the rendered report to --output (atomically) or stdout.
pub fn emit(settings: &Settings, out: &[u8]) -> anyhow::Result<()> {
    emit_with(settings, |w| w.write_all(out))
}

/// [`emit`] of what `write` writes, as it is made (a large report is never
/// whole in memory).
pub fn emit_with(
    settings: &Settings,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    match &settings.output {
        Some(path) => render::write_atomically_with(path, write)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?,
        None => render::to_stdout_with(write)?,
    }
    Ok(())
}

/// `--format otlp` is protobuf: refused (before anything runs) when it
/// would go to a terminal.
fn binary_not_to_a_terminal(args: &cli::RunArgs) -> Result<(), UsageError> {
    if args.format == Format::Otlp && args.output.is_none() && std::io::stdout().is_terminal() {
        return Err(UsageError(
            "--format otlp writes a binary ExportMetricsServiceRequest: send it to a file (--output FILE) or a pipe".into(),
        ));
    }
    Ok(())
}

/// The completion script for the installed binary, `spx-doctor`. Through
/// Spinifex's `spx`, `spx doctor` completes by cobra's own scripts, which
/// ask `spx-doctor __complete` (see [`complete`]).
pub fn completions(shell: Shell) -> String {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, &mut cmd, spx_checks::spinifex::BINARY, &mut buf);
    String::from_utf8(buf).expect("completion scripts are UTF-8")
}

/// Candidates for the last of `words` (the words after `spx doctor`), one
/// per line as `value<TAB>help`, then a last line `:N`: the output of cobra's
/// own `__complete`, which the Spinifex hook passes on. N is cobra's
/// directive: 4 (no file completion) for flags, subcommands, check ids and
/// other values; 0 (the shell completes file names) with no candidates when
/// the word is the value of a path option (`--config`, `--output`).
fn complete(words: Vec<std::ffi::OsString>) -> anyhow::Result<String> {
    const NO_FILE_COMP: u8 = 4;
    const DEFAULT: u8 = 0;
    let mut cmd = cli::command();
    if completing_a_path(&cmd, &words) {
        return Ok(format!(":{DEFAULT}\n"));
    }
    let mut args = vec![std::ffi::OsString::from(spx_checks::spinifex::BINARY)];
    args.extend(words);
    if args.len() == 1 {
        args.push(std::ffi::OsString::new());
    }
    let index = args.len() - 1;
    let typed_a_code = args[index].to_string_lossy().contains('/');
    let candidates = clap_complete::engine::complete(&mut cmd, args, index, None)?;
    // `explain` takes a check id or a code: the codes follow once a check
    // id and its slash are typed, so `explain ipsec.` offers the checks.
    let is_code = |c: &clap_complete::engine::CompletionCandidate| {
        c.get_value().to_string_lossy().contains('/')
    };
    let ids_offered = candidates.iter().any(|c| !is_code(c));
    let mut out = String::new();
    for c in candidates
        .iter()
        .filter(|c| !c.is_hide_set() && (typed_a_code || !ids_offered || !is_code(c)))
    {
        out.push_str(&c.get_value().to_string_lossy());
        if let Some(help) = c.get_help() {
            let help = help.to_string();
            let first = help.lines().next().unwrap_or_default();
            if !first.is_empty() {
                out.push('\t');
                out.push_str(first);
            }
        }
        out.push('\n');
    }
    out.push_str(&format!(":{NO_FILE_COMP}\n"));
    Ok(out)
}

/// True when the last word is the value of an option that takes a path
/// (`--config PATH`, `--output=FILE`): the shell's own file completion
/// knows `~`, quoting and directories better than we do.
fn completing_a_path(cmd: &clap::Command, words: &[std::ffi::OsString]) -> bool {
    let word = |w: &std::ffi::OsString| w.to_str().map(str::to_owned);
    let option = match words.last().and_then(word) {
        Some(last) if last.starts_with("--") && last.contains('=') => {
            last.split_once('=').map(|(o, _)| o.to_owned())
        }
        _ if words.len() >= 2 => word(&words[words.len() - 2]),
        _ => None,
    };
    let Some(option) = option else {
        return false;
    };
    cmd.get_arguments().any(|a| {
        let named = match option.strip_prefix("--") {
            Some(long) => a.get_long() == Some(long),
            None => {
                option.len() == 2
                    && option.starts_with('-')
                    && a.get_short().is_some_and(|s| option.ends_with(s))
            }
        };
        named
            && a.get_action().takes_values()
            && matches!(
                a.get_value_hint(),
                clap::ValueHint::AnyPath | clap::ValueHint::FilePath | clap::ValueHint::DirPath
            )
    })
}

/// Text for a roff paragraph: backslashes and hyphens escaped, no line
/// starting with a control character.
fn roff_escape(text: &str) -> String {
    let t = text.replace('\\', "\\\\").replace('-', "\\-");
    match t.chars().next() {
        Some('.') | Some('\'') => format!("\\&{t}"),
        _ => t,
    }
}

/// spx-doctor(1): the flags, the subcommands, the checks, the exit status.
pub fn man_page() -> anyhow::Result<String> {
    let cmd = cli::command();
    let mut buf = Vec::new();
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(&mut buf)?;
    man.render_name_section(&mut buf)?;
    man.render_synopsis_section(&mut buf)?;
    man.render_description_section(&mut buf)?;
    man.render_options_section(&mut buf)?;
    man.render_subcommands_section(&mut buf)?;
    buf.extend_from_slice(b".SH CHECKS\n");
    for c in CHECKS {
        buf.extend_from_slice(format!(".TP\n\\fB{}\\fR\n{}\n", c.id(), c.title()).as_bytes());
    }
    buf.extend_from_slice(b".SH CODES\nEvery outcome has a code, CHECK\\-ID/KIND; \\-\\-allow and \\-\\-deny take them.\n");
    for c in spx_checks::codes::all().filter(|c| c.kind.check.is_some()) {
        buf.extend_from_slice(
            format!(
                ".TP\n\\fB{}\\fR ({})\n{}\n",
                c.code(),
                c.kind.status,
                roff_escape(&c.kind.text())
            )
            .as_bytes(),
        );
    }
    for k in spx_checks::path::codes() {
        buf.extend_from_slice(
            format!(
                ".TP\n\\fB{}\\fR ({})\n{}\n",
                k.code(spx_checks::path::ID),
                k.status,
                roff_escape(&k.text())
            )
            .as_bytes(),
        );
    }
    buf.extend_from_slice(
        b".PP\nEvery check can also report these, with its own id before the slash:\n",
    );
    for k in &spx_checks::kind::COMMON {
        buf.extend_from_slice(
            format!(
                ".TP\n\\fBCHECK\\-ID/{}\\fR ({})\n{}\n",
                k.name,
                k.status,
                roff_escape(&k.text())
            )
            .as_bytes(),
        );
    }
    buf.extend_from_slice(
        b".SH \"EXIT STATUS\"\n0: no check failed. 1: at least one check failed (or warned, with \\-\\-strict, or a \\-\\-deny code warned). 2: inconclusive: usage or config error, or a check errored and none failed; in a \\-\\-for profile, a required check could not run. An \\-\\-allow code counts as a pass. With \\-\\-cluster: 0 every node answered and nothing failed on any node or in any cluster check; 1 anything failed; 2 a node did not answer or was inconclusive, and nothing failed.\n",
    );
    man.render_version_section(&mut buf)?;
    Ok(String::from_utf8(buf)?)
}
