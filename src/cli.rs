//! The command line, as close to the flags as possible. Turning these into
//! working objects (durations checked, peers resolved, config loaded) happens
//! in one place: `settings.rs`.
//!
//! `spx-doctor` takes exactly the words that follow `spx doctor`: Spinifex's
//! `spx` execs it (contrib/spinifex/doctor.go) with `SPX_DOCTOR_VIA=spx`, and
//! help, usage and errors then name `spx doctor` (see [`command`]).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use spx_checks::codes::Level;
use spx_checks::kind::Origin;

/// Check this node against what Spinifex needs: buffers, MTU, IPsec, NICs, guests.
///
/// Exit status: 0 no check failed; 1 at least one check failed (or warned,
/// with --strict); 2 inconclusive (bad usage or config, or a check could
/// not conclude and none failed).
#[derive(Parser, Debug)]
#[command(
    name = "spx-doctor",
    version,
    propagate_version = true,
    disable_help_subcommand = true,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub action: Option<Action>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Subcommand, Debug)]
pub enum Action {
    /// List every check: id, category, title (with --codes: every code); the site's own checks (doctor.d beside the config) among them.
    List {
        /// List every code (CHECK-ID/KIND) instead: its status and what it means.
        #[arg(long)]
        codes: bool,
        /// The Spinifex config, found as a run finds it: its folder's doctor.d holds the site's own checks.
        #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::FilePath)]
        config: Option<PathBuf>,
        #[command(flatten)]
        term: TermArgs,
    },
    /// Explain one check (what it measures, why it matters, how to fix it) or one code.
    Explain {
        #[arg(value_name = "ID|CODE", value_parser = CheckIdParser { categories: false })]
        id: String,
        /// The Spinifex config, found as a run finds it: its folder's doctor.d holds the site's own checks.
        #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::FilePath)]
        config: Option<PathBuf>,
        #[command(flatten)]
        term: TermArgs,
    },
    /// Print a shell completion script.
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Run as a service on this node: answer cluster run requests on Spinifex's NATS (`--cluster --via nats`), run the checks every --interval into the doctor's JetStream bucket, export OTLP metrics.
    Agent(AgentArgs),
    /// The whole cluster, live, from the agents' reports in the doctor's JetStream bucket: nodes × checks, the cluster checks, the path-MTU matrix.
    Watch(WatchArgs),
    /// Where a guest's packet of N bytes dies between two guests, hop by hop, both ways (FROM and TO: i-…, eni-…, a guest's IP, or a node).
    Path(Box<crate::path::args::PathArgs>),
    /// One node's side of a path, as JSON: what `path` asks each node over ssh.
    #[command(name = "path-facts", hide = true)]
    PathFacts(crate::path::args::PathFactsArgs),
    /// Print the man page (roff).
    #[command(hide = true)]
    Man,
    /// Complete a partial command line, one candidate per line, for the
    /// shell completion of Spinifex's `spx doctor` (cobra's __complete).
    #[command(
        name = "__complete",
        hide = true,
        disable_help_flag = true,
        disable_version_flag = true
    )]
    Complete {
        /// The words after `spx doctor`, the last being the one to complete.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        words: Vec<OsString>,
    },
}

/// `spx-doctor agent`.
#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// The Spinifex config, found as a run finds it; its `node` and that node's [nodes.NODE.nats] say where the bus is.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// At most N probe runs start in any minute, however many requests come; a request past the bound is answered "rate-limited".
    #[arg(long, value_name = "N", default_value_t = 12, value_parser = clap::value_parser!(u32).range(1..=600))]
    pub runs_per_minute: u32,

    /// Run the default checks by itself this often, start to start, into the doctor's JetStream bucket (0: never) [default: the config's `[doctor] interval`, else 60s].
    #[arg(long, value_name = "DURATION")]
    pub interval: Option<String>,
}

/// `spx-doctor watch`.
#[derive(clap::Args, Debug)]
pub struct WatchArgs {
    /// The Spinifex config, found as a run finds it: its [nodes.*] are the cluster, its `node`'s [nodes.NODE.nats] says where the bus is.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// table: a live view redrawn on a terminal; json: one JSON object per line (check transitions and node states), never redrawn.
    #[arg(long, value_enum, default_value_t = WatchFormat::Table)]
    pub format: WatchFormat,

    /// One cluster report from what the bucket holds now, then exit: 0 ok, 1 a failure, 2 inconclusive (a node stale or unknown), as --cluster.
    #[arg(long)]
    pub once: bool,

    /// Every node check of every node and the whole path matrix, with the evidence, instead of the problems first.
    #[arg(long, short = 'v')]
    pub verbose: bool,

    #[command(flatten)]
    pub term: TermArgs,

    /// With --once: how long to wait for NATS and the bucket.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub timeout: String,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum, PartialEq, Eq)]
pub enum WatchFormat {
    Table,
    Json,
}

impl From<WatchFormat> for Format {
    fn from(f: WatchFormat) -> Format {
        match f {
            WatchFormat::Table => Format::Table,
            WatchFormat::Json => Format::Json,
        }
    }
}

/// The command as clap builds it, named the way the operator started it:
/// `spx doctor` through Spinifex's `spx`, else `spx-doctor`.
pub fn command() -> clap::Command {
    let name = spx_checks::spinifex::doctor_command();
    Cli::command().bin_name(name).display_name(name)
}

/// Parse the process's arguments (clap prints help, version and usage
/// errors itself, with exit 2 for errors).
pub fn parse() -> Cli {
    let matches = command().get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Args, Debug, Default)]
pub struct RunArgs {
    /// Run only these checks: comma-separated ids or categories (nic, ipsec, mtu, …).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = CheckIdParser { categories: true }, hide_possible_values = true)]
    pub check: Vec<String>,

    /// Do not run these checks: comma-separated ids or categories.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = CheckIdParser { categories: true }, hide_possible_values = true)]
    pub skip: Vec<String>,

    /// The Spinifex config, found as Spinifex's `spx` finds it: this flag, else $SPINIFEX_CONFIG_PATH [default: /etc/spinifex/spinifex.toml, else ~/spinifex/config/spinifex.toml].
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,

    /// Write the report to FILE (atomically: a temporary file in the same directory, then rename).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Every check in catalogue order, with its code, findings and evidence, instead of the problems first.
    #[arg(long, short = 'v')]
    pub verbose: bool,

    /// Warnings fail the run (exit 1).
    #[arg(long)]
    pub strict: bool,

    #[command(flatten)]
    pub term: TermArgs,

    /// Global deadline: a check still running then is reported as an error.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "10s",
        allow_hyphen_values = true
    )]
    pub timeout: String,

    /// The one sample window every sampling check shares.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "1s",
        allow_hyphen_values = true
    )]
    pub sample: String,

    /// A peer to probe (address or name); repeatable. Overrides discovery.
    #[arg(long, value_name = "ADDR")]
    pub peer: Vec<String>,

    /// Target underlay MTU (576..65535) [default: the config's underlay_mtu].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(576..=65535))]
    pub mtu: Option<u32>,

    /// Bound on one probe round.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "1s",
        allow_hyphen_values = true
    )]
    pub probe_timeout: String,

    /// An interface to inspect; repeatable. Overrides discovery.
    #[arg(long, value_name = "IF")]
    pub interface: Vec<String>,

    /// The local Open_vSwitch database [default: unix:/var/run/openvswitch/db.sock].
    #[arg(long, value_name = "ENDPOINT")]
    pub ovs_db: Option<String>,

    /// OVN northbound endpoints, comma-separated [default: the config's ovn_nb_addr].
    #[arg(long, value_name = "ENDPOINTS")]
    pub nb_db: Option<String>,

    /// OVN southbound endpoints, comma-separated [default: the config's ovn_sb_addr].
    #[arg(long, value_name = "ENDPOINTS")]
    pub sb_db: Option<String>,

    /// Run a preflight profile before a change: every required check must conclude.
    #[arg(long = "for", value_enum, value_name = "CHANGE")]
    pub for_change: Option<Change>,

    /// Run as usual and also write everything read from the host (with the time and the source) to FILE: a bundle for --replay and for support (gzip JSON lines; keys are never recorded; written atomically).
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath, help_heading = "Record and replay")]
    pub record: Option<PathBuf>,

    /// Judge a bundle taken with --record, on any machine, without touching it: the report of the recorded run (its host, node, config and settings); only --check, --skip, --format, --output, -v, --strict, --color and --width apply.
    #[arg(
        long,
        value_name = "FILE",
        value_hint = clap::ValueHint::FilePath,
        help_heading = "Record and replay",
        conflicts_with_all = ["config", "peer", "mtu", "timeout", "sample", "probe_timeout", "interface", "ovs_db", "nb_db", "sb_db", "for_change"]
    )]
    pub replay: Option<PathBuf>,

    #[command(flatten)]
    pub cluster: crate::cluster::args::ClusterArgs,

    /// A known problem of this kind passes, reported as allowed; repeatable (config: doctor.allow).
    #[arg(long, value_name = "CODE", value_delimiter = ',', value_parser = CodeParser { level: Level::Allow }, hide_possible_values = true)]
    pub allow: Vec<String>,

    /// A warning of this kind fails the run; repeatable (config: doctor.deny).
    #[arg(long, value_name = "CODE", value_delimiter = ',', value_parser = CodeParser { level: Level::Deny }, hide_possible_values = true)]
    pub deny: Vec<String>,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Table,
    Json,
    Prometheus,
    // JUnit XML for CI gates: a testsuite per node, a testcase per check.
    Junit,
    // OTLP metrics: the series of prometheus as one binary ExportMetricsServiceRequest (protobuf).
    Otlp,
}

/// `--color` and `--width`, flattened into every command that prints
/// text, are the screen's own ([`crate::render::term`]).
pub use crate::render::term::TermArgs;

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Change {
    /// Before raising underlay_mtu (default target 9000).
    EnableJumbo,
    /// Before setting ipsec_enabled = false.
    DisableIpsec,
    /// Before setting ipsec_enabled = true.
    EnableIpsec,
}

impl Change {
    /// The library's preflight this flag value names.
    pub fn preflight(self) -> spx_checks::settings::Preflight {
        use spx_checks::settings::Preflight;
        match self {
            Change::EnableJumbo => Preflight::EnableJumbo,
            Change::DisableIpsec => Preflight::DisableIpsec,
            Change::EnableIpsec => Preflight::EnableIpsec,
        }
    }
}

/// Accepts any word (validation, with the nearest suggestion, happens in
/// `spx_checks::select`, so the error is one line) but tells completion
/// scripts the check ids and categories, all taken from the catalogue (the
/// built-in checks; with `__complete`, the site's too).
#[derive(Clone, Debug)]
pub struct CheckIdParser {
    categories: bool,
}

impl TypedValueParser for CheckIdParser {
    type Value = String;

    fn parse_ref(
        &self,
        _cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        value
            .to_str()
            .map(|s| s.trim().to_owned())
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidUtf8))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let checks = spx_checks::catalogue::all();
        let words: Vec<String> = if self.categories {
            spx_checks::select::selectors(&checks)
                .into_iter()
                .map(str::to_owned)
                .collect()
        } else {
            // `explain` takes an id or a check's own code.
            let ids = checks.iter().map(|c| c.id().to_owned());
            let codes = spx_checks::codes::all()
                .filter(|c| c.kind.origin == Origin::Check)
                .map(|c| c.code());
            // And the path question with its codes.
            let path = std::iter::once(spx_checks::path::ID.to_owned())
                .chain(spx_checks::path::codes().map(|k| k.code(spx_checks::path::ID)));
            ids.chain(codes).chain(path).collect()
        };
        // A check id completes with its title, a code with what it means,
        // a category with its checks.
        let help = move |w: &str| match checks.iter().find(|c| c.id() == w) {
            Some(c) => c.title().to_owned(),
            None if w == spx_checks::path::ID => spx_checks::path::TITLE.to_owned(),
            None if w.contains('/') => code_help(w),
            None => {
                let ids: Vec<&str> = checks
                    .iter()
                    .map(|c| c.id())
                    .filter(|id| spx_checks::check::category(id) == w)
                    .collect();
                format!("every {w} check: {}", ids.join(", "))
            }
        };
        Some(Box::new(words.into_iter().map(move |w| {
            let text = help(&w);
            PossibleValue::new(w).help(text)
        })))
    }
}

/// A code's meaning, for completion: the status and the first sentence of
/// its doc line.
fn code_help(code: &str) -> String {
    let kind = spx_checks::codes::find(code)
        .map(|c| c.kind)
        .or_else(|| spx_checks::path::find_code(code));
    kind.map_or_else(String::new, |kind| {
        let text = kind.text();
        let first = text
            .split(". ")
            .next()
            .unwrap_or(&text)
            .trim_end_matches('.');
        format!("{}: {first}", kind.status)
    })
}

/// Accepts any word (validation, with the nearest code, happens in
/// `settings.rs`, so the error is one line) but tells completion scripts
/// the codes that can take this level, from the catalog.
#[derive(Clone, Debug)]
pub struct CodeParser {
    level: Level,
}

impl TypedValueParser for CodeParser {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        CheckIdParser { categories: false }.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let level = self.level;
        Some(Box::new(
            spx_checks::codes::all()
                .filter(move |c| level.applies_to(c.kind))
                .map(|c| {
                    let code = c.code();
                    let text = code_help(&code);
                    PossibleValue::new(code).help(text)
                }),
        ))
    }
}
