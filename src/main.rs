//! `spx`: the Spinifex command line. This build carries `spx doctor`.
//!
//! `anyhow` lives only here; the library reports typed errors. Exit codes
//! follow Spinifex's `spx admin node js-probe`: 0 ok, 1 a failure observed,
//! 2 inconclusive (usage, config, or no conclusion).

mod cli;
mod render;
mod report;
mod runner;
mod settings;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use clap::{CommandFactory, Parser};
use spx_checks::{Ctx, CHECKS};

use crate::cli::{Cli, ColorChoice, Command, DoctorAction, Format, Shell};
use crate::render::Style;
use crate::settings::{Settings, UsageError};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            render::error_line(&format!("{e:#}"));
            ExitCode::from(2)
        }
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Completions { shell } => {
            render::to_stdout(&completions(shell))?;
            Ok(0)
        }
        Command::Man => {
            render::to_stdout(&man_page()?)?;
            Ok(0)
        }
        Command::Doctor(args) => match args.action {
            Some(DoctorAction::List) => {
                render::to_stdout(&render::catalog::list(CHECKS, terminal_width()))?;
                Ok(0)
            }
            Some(DoctorAction::Explain { id }) => {
                let check = spx_checks::select::select(CHECKS, std::slice::from_ref(&id), &[])
                    .map_err(|e| UsageError(e.to_string()))?;
                match check.as_slice() {
                    [one] if one.id() == id => {
                        render::to_stdout(&render::catalog::explain(*one))?;
                        Ok(0)
                    }
                    _ => Err(UsageError(format!(
                        "{id:?} is a category; explain takes a check id: {}",
                        check.iter().map(|c| c.id()).collect::<Vec<_>>().join(", ")
                    ))
                    .into()),
                }
            }
            None => doctor(Settings::from_args(args.run)?),
        },
    }
}

fn doctor(settings: Settings) -> anyhow::Result<u8> {
    runner::install_panic_hook();
    let started_at = SystemTime::now();
    let t0 = Instant::now();
    let ctx = Arc::new(Ctx::new(settings.config.clone(), settings.options.clone()));
    let outcomes = runner::run(&settings.checks, Arc::clone(&ctx));
    let runbook = settings.profile.map(|p| {
        let results: Vec<(&str, &spx_checks::Finding)> = outcomes
            .iter()
            .map(|o| (o.check.id(), &o.finding))
            .collect();
        (p.runbook)(&ctx, &results)
    });
    let policy = report::Policy {
        strict: settings.strict,
        required: settings
            .profile
            .map(|p| p.required.to_vec())
            .unwrap_or_default(),
    };
    let mut report = report::build(
        outcomes,
        &settings.config,
        settings.profile.map(|p| p.name),
        started_at,
        t0.elapsed(),
        &policy,
    );
    report.runbook = runbook;
    let to_file = settings.output.is_some();
    let color = match settings.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            !to_file
                && std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    };
    let style = Style {
        verbose: settings.verbose,
        color,
        width: if settings.format == Format::Table {
            terminal_width()
        } else {
            None
        },
    };
    let text = render::render(&report, settings.format, &style);
    match &settings.output {
        Some(path) => render::write_atomically(path, text.as_bytes())
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?,
        None => render::to_stdout(&text)?,
    }
    Ok(report.exit_code as u8)
}

/// The terminal's width when stdout is one, else `COLUMNS`, else none.
fn terminal_width() -> Option<u16> {
    if std::io::stdout().is_terminal() {
        if let Some((w, _)) = terminal_size::terminal_size() {
            return Some(w.0);
        }
    }
    std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok())
}

pub fn completions(shell: Shell) -> String {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, &mut cmd, "spx", &mut buf);
    String::from_utf8(buf).expect("completion scripts are UTF-8")
}

/// spx(1) with every subcommand's flags in one page.
pub fn man_page() -> anyhow::Result<String> {
    let cmd = Cli::command();
    let mut buf = Vec::new();
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(&mut buf)?;
    man.render_name_section(&mut buf)?;
    man.render_synopsis_section(&mut buf)?;
    man.render_description_section(&mut buf)?;
    man.render_subcommands_section(&mut buf)?;
    let doctor = cmd
        .find_subcommand("doctor")
        .cloned()
        .expect("doctor subcommand")
        .name("spx doctor");
    let dman = clap_mangen::Man::new(doctor);
    buf.extend_from_slice(b".SH \"SPX DOCTOR\"\n");
    dman.render_synopsis_section(&mut buf)?;
    dman.render_description_section(&mut buf)?;
    dman.render_options_section(&mut buf)?;
    dman.render_subcommands_section(&mut buf)?;
    buf.extend_from_slice(b".SH CHECKS\n");
    for c in CHECKS {
        buf.extend_from_slice(format!(".TP\n\\fB{}\\fR\n{}\n", c.id(), c.title()).as_bytes());
    }
    buf.extend_from_slice(
        b".SH \"EXIT STATUS\"\n0: no check failed. 1: at least one check failed (or warned, with \\-\\-strict). 2: inconclusive: usage or config error, or a check errored and none failed; in a \\-\\-for profile, a required check could not run.\n",
    );
    man.render_version_section(&mut buf)?;
    Ok(String::from_utf8(buf)?)
}
