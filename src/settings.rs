//! Turn the parsed flags into working objects, in one place: durations
//! parsed and bounded, peers resolved (bounded), endpoints and interface
//! names validated, the config found and loaded, the checks selected.
//! Every refusal here is a one-line message and exit 2.

use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use spx_checks::config::{self, ConfigError};
use spx_checks::endpoint::Endpoint;
use spx_checks::facts::peers::FlagPeer;
use spx_checks::host::{Bundle, HostRef, Policy, RUN_SCOPE};
use spx_checks::live::LiveHost;
use spx_checks::profile::Profile;
use spx_checks::settings::Preflight;
use spx_checks::site_definition::{self, SiteDefinition};
use spx_checks::{catalogue, select, validate, Check, ConfigState, Options, Scope};

use crate::cli::{Change, Format, RunArgs, TermArgs};
use crate::levels::{self, Levels};

/// A refusal of the command line or the config: exit 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

impl From<ConfigError> for UsageError {
    fn from(e: ConfigError) -> UsageError {
        UsageError(format!("config: {e}"))
    }
}

impl From<levels::Refused> for UsageError {
    fn from(r: levels::Refused) -> UsageError {
        match r {
            levels::Refused::Flag(line) => UsageError(line),
            levels::Refused::Config(e) => e.into(),
        }
    }
}

pub struct Settings {
    pub checks: Vec<&'static dyn Check>,
    pub options: Options,
    pub config: ConfigState,
    pub format: Format,
    pub output: Option<PathBuf>,
    pub verbose: bool,
    pub strict: bool,
    /// `--color` and `--width`.
    pub term: TermArgs,
    pub profile: Option<&'static Profile>,
    /// `--allow`/`--deny` and the config's `[doctor]`, resolved.
    pub levels: Levels,
    /// `--record FILE`: where the bundle goes.
    pub record: Option<PathBuf>,
    /// `--strict`, `--allow`, `--deny` as given, for a bundle.
    pub policy: Policy,
    /// When the run began: before anything on the command line was looked
    /// up on the host. Its `--timeout` counts from here.
    pub started: Instant,
}

/// `--record` and `--replay` against each other and `--cluster`: one line
/// each, before anything runs.
pub fn record_and_replay(args: &RunArgs) -> Result<(), UsageError> {
    match (&args.record, &args.replay, args.cluster.cluster) {
        (Some(_), Some(_), _) => Err(UsageError(
            "--record and --replay cannot be used together: a replay reads no host, so there is nothing to record".into(),
        )),
        (_, Some(_), true) => Err(UsageError(
            "--replay judges one node's bundle; --cluster cannot be used with it (replay each node's bundle)".into(),
        )),
        (Some(_), _, true) => Err(UsageError(
            "--record records the node it runs on; --cluster cannot record (run spx-doctor --record FILE on each node)".into(),
        )),
        _ => Ok(()),
    }
}

const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
const PEER_LOOKUP_BOUND: Duration = Duration::from_secs(2);

impl Settings {
    pub fn from_args(args: RunArgs) -> Result<Settings, UsageError> {
        let started = Instant::now();
        let timeout = duration("--timeout", &args.timeout)?;
        let sample = duration("--sample", &args.sample)?;
        let probe_timeout = duration("--probe-timeout", &args.probe_timeout)?;
        if timeout.is_zero() || timeout > MAX_TIMEOUT {
            return Err(UsageError(format!(
                "--timeout {}: must be more than 0 and at most 1h",
                args.timeout
            )));
        }
        if sample >= timeout {
            return Err(UsageError(format!(
                "--sample {} must be shorter than --timeout {}",
                args.sample, args.timeout
            )));
        }
        if probe_timeout.is_zero() || probe_timeout > timeout {
            return Err(UsageError(format!(
                "--probe-timeout {}: must be more than 0 and at most --timeout",
                args.probe_timeout
            )));
        }
        for name in &args.interface {
            validate::interface(name).map_err(|e| UsageError(format!("--interface: {e}")))?;
        }
        let ovs_db = args
            .ovs_db
            .as_deref()
            .map(|e| endpoints("--ovs-db", e))
            .transpose()?;
        let nb_db = args
            .nb_db
            .as_deref()
            .map(|e| endpoints("--nb-db", e))
            .transpose()?;
        let sb_db = args
            .sb_db
            .as_deref()
            .map(|e| endpoints("--sb-db", e))
            .transpose()?;
        let mut peers = Vec::new();
        // Looked up within the run's one --timeout, which counts from
        // `started` (the checks get what is left).
        let deadline = started + timeout;
        for p in &args.peer {
            for ip in resolve_peer(p, deadline)? {
                if !peers.contains(&ip) {
                    peers.push(ip);
                }
            }
        }
        let mut include = args.check.clone();
        include.retain(|s| !s.is_empty());
        let mut exclude = args.skip.clone();
        exclude.retain(|s| !s.is_empty());
        let profile = args.for_change.map(|c| c.preflight().profile());
        let config = load_config(args.config.clone().or_else(config_from_env).as_deref())?;
        // The run's catalogue: the built-in checks and the site's own.
        catalogue::install(&site_checks(&config)?);
        let mut checks = select_checks(&include, &exclude, profile)?;
        // Cluster checks belong to `--cluster`; a node run has them only
        // when asked for (they then skip, saying so).
        if include.is_empty() {
            checks.retain(|c| c.scope() == Scope::Node);
        }
        let ovn_read_by = args
            .cluster
            .ovn_read_by
            .as_deref()
            .map(|n| {
                validate::node_name(n)
                    .map(|()| n.to_owned())
                    .map_err(|e| UsageError(format!("--ovn-read-by: {e}")))
            })
            .transpose()?;
        if let Some(path) = &args.record {
            // Refused before the run, not after it.
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => std::path::Path::new("."),
            };
            if !dir.is_dir() {
                return Err(UsageError(format!(
                    "--record {}: there is no directory {}",
                    path.display(),
                    dir.display()
                )));
            }
        }
        let levels = levels::resolve(&args.allow, &args.deny, &config, profile)?;
        let mtu = args.mtu.or(profile.and_then(|p| p.default_mtu));
        Ok(Settings {
            checks,
            options: Options {
                peers,
                mtu,
                probe_timeout,
                interfaces: args.interface.clone(),
                ovs_db,
                nb_db,
                sb_db,
                sample,
                timeout,
                profile: args.for_change.map(Change::preflight),
                ovn_read_by,
            },
            config,
            format: args.format,
            output: args.output,
            verbose: args.verbose,
            strict: args.strict,
            term: args.term,
            profile,
            levels,
            record: args.record,
            policy: Policy {
                strict: args.strict,
                allow: args.allow.clone(),
                deny: args.deny.clone(),
            },
            started,
        })
    }

    /// A replay's settings: the recorded run's options, config, checks
    /// and policy (or `--check`/`--skip` among every check; `--strict`,
    /// `--allow` and `--deny` add to the recorded ones), this command
    /// line's format.
    pub fn for_replay(args: RunArgs, bundle: &Bundle) -> Result<Settings, UsageError> {
        let started = Instant::now();
        let options = bundle.header.options.clone();
        recorded_options(&options).map_err(|e| {
            UsageError(format!(
                "--replay {}: the bundle's options are not ones spx-doctor takes ({e})",
                args.replay
                    .as_deref()
                    .unwrap_or(std::path::Path::new(""))
                    .display()
            ))
        })?;
        let recorded = &bundle.header.policy;
        let policy = Policy {
            strict: recorded.strict || args.strict,
            allow: recorded.allow.iter().chain(&args.allow).cloned().collect(),
            deny: recorded.deny.iter().chain(&args.deny).cloned().collect(),
        };
        let config = bundle.header.config.clone();
        // The recorded run's site checks, not this machine's.
        catalogue::install(&bundle.header.site_checks);
        let profile = options.profile.map(Preflight::profile);
        let mut include = args.check.clone();
        include.retain(|s| !s.is_empty());
        let mut exclude = args.skip.clone();
        exclude.retain(|s| !s.is_empty());
        // By default the checks the recorded run ran (less --skip); with
        // --check, those asked for: one the bundle lacks is skipped, saying so.
        let all = catalogue::all();
        let checks = if include.is_empty() {
            let skipped = if exclude.is_empty() {
                Vec::new()
            } else {
                select::select(&all, &exclude, &[]).map_err(|e| UsageError(e.to_string()))?
            };
            all.iter()
                .copied()
                .filter(|c| bundle.header.checks.iter().any(|o| o.id == c.id()))
                .filter(|c| !skipped.iter().any(|s| s.id() == c.id()))
                .collect()
        } else {
            select_checks(&include, &exclude, profile)?
        };
        let levels = levels::resolve(&policy.allow, &policy.deny, &config, profile)?;
        Ok(Settings {
            checks,
            options,
            config,
            format: args.format,
            output: args.output,
            verbose: args.verbose,
            strict: policy.strict,
            term: args.term,
            profile,
            levels,
            record: None,
            policy,
            started,
        })
    }
}

/// A bundle's options hold to what the command line allows: a bundle is
/// outside data, and a replay must not trust it more than the flags.
fn recorded_options(o: &Options) -> Result<(), String> {
    if o.timeout.is_zero() || o.timeout > MAX_TIMEOUT {
        return Err(format!("timeout {:?}", o.timeout));
    }
    if o.sample >= o.timeout {
        return Err(format!("sample {:?}", o.sample));
    }
    if o.probe_timeout.is_zero() || o.probe_timeout > o.timeout {
        return Err(format!("probe timeout {:?}", o.probe_timeout));
    }
    if let Some(mtu) = o.mtu.filter(|m| !(576..=65535).contains(m)) {
        return Err(format!("mtu {mtu}"));
    }
    for name in &o.interfaces {
        validate::interface(name)?;
    }
    for (name, list) in [
        ("ovs_db", &o.ovs_db),
        ("nb_db", &o.nb_db),
        ("sb_db", &o.sb_db),
    ] {
        if let Some(ssl) = list
            .iter()
            .flatten()
            .find(|e| matches!(e, Endpoint::Ssl { .. }))
        {
            return Err(format!("{name}: {ssl}: ssl: endpoints are not supported"));
        }
    }
    Ok(())
}

/// Without a profile: `--check` minus `--skip`. With one: its required
/// checks (which cannot be skipped) plus any `--check` asked for.
fn select_checks(
    include: &[String],
    exclude: &[String],
    profile: Option<&'static Profile>,
) -> Result<Vec<&'static dyn Check>, UsageError> {
    let all = catalogue::all();
    let chosen = select::select(&all, include, exclude).map_err(|e| UsageError(e.to_string()))?;
    let Some(profile) = profile else {
        return Ok(chosen);
    };
    let skipped = if exclude.is_empty() {
        Vec::new()
    } else {
        select::select(&all, exclude, &[]).map_err(|e| UsageError(e.to_string()))?
    };
    let required = profile.required_ids();
    if let Some(c) = skipped.iter().find(|c| required.contains(&c.id())) {
        return Err(UsageError(format!(
            "--skip {}: the {} preflight requires it",
            c.id(),
            profile.name
        )));
    }
    Ok(all
        .iter()
        .copied()
        .filter(|c| {
            required.contains(&c.id())
                || (!include.is_empty() && chosen.iter().any(|x| x.id() == c.id()))
        })
        .collect())
}

fn duration(flag: &str, text: &str) -> Result<Duration, UsageError> {
    humantime::parse_duration(text.trim())
        .map_err(|e| UsageError(format!("{flag} {text:?}: {e} (examples: 500ms, 2s, 1m)")))
}

fn endpoints(flag: &str, text: &str) -> Result<Vec<Endpoint>, UsageError> {
    let list = Endpoint::parse_list(text).map_err(|e| UsageError(format!("{flag}: {e}")))?;
    if let Some(ssl) = list.iter().find(|e| matches!(e, Endpoint::Ssl { .. })) {
        return Err(UsageError(format!(
            "{flag}: {ssl}: ssl: endpoints are not supported (use tcp:HOST:PORT or unix:PATH)"
        )));
    }
    Ok(list)
}

/// An address as given (a link-local one with the interface it is on,
/// which must exist here), or a name resolved within a bound. A name that
/// does not resolve is refused: probing nobody is not a pass.
fn resolve_peer(text: &str, deadline: Instant) -> Result<Vec<FlagPeer>, UsageError> {
    validate::host(text).map_err(|e| UsageError(format!("--peer: {e}")))?;
    let live = LiveHost::new();
    if let Some(addr) = spx_checks::targets::peers::flag_address(
        HostRef::new(&live, RUN_SCOPE).until(deadline),
        text,
    )
    .map_err(|e| UsageError(format!("--peer {e}")))?
    {
        return Ok(vec![addr]);
    }
    let name = text.to_owned();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(
            (name.as_str(), 0u16)
                .to_socket_addrs()
                .map(|a| a.map(|s| s.ip()).collect::<Vec<_>>()),
        );
    });
    let bound = PEER_LOOKUP_BOUND.min(deadline.saturating_duration_since(Instant::now()));
    match rx.recv_timeout(bound) {
        Ok(Ok(ips)) if !ips.is_empty() => Ok(ips
            .into_iter()
            .map(|address| FlagPeer {
                address,
                interface: None,
            })
            .collect()),
        Ok(Ok(_)) | Ok(Err(_)) => Err(UsageError(format!(
            "--peer {text:?}: the name does not resolve"
        ))),
        Err(_) if bound < PEER_LOOKUP_BOUND => Err(UsageError(format!(
            "--peer {text:?}: name lookup did not answer by the run's deadline (--timeout)"
        ))),
        Err(_) => Err(UsageError(format!(
            "--peer {text:?}: name lookup did not answer within {}s",
            PEER_LOOKUP_BOUND.as_secs()
        ))),
    }
}

/// The site's own checks: the doctor.d folder beside the config (the one
/// read, or where it would be), each file read and validated, each
/// executable's SHA-256 taken. A file that cannot be used stops the run.
pub fn site_checks(config: &ConfigState) -> Result<Vec<SiteDefinition>, UsageError> {
    let path = match config {
        ConfigState::Loaded { path, .. } | ConfigState::Unreadable { path, .. } => path.clone(),
        ConfigState::Missing { looked_at } => looked_at
            .first()
            .cloned()
            .unwrap_or_else(|| PathBuf::from(spx_checks::spinifex::CONFIG_PATH)),
    };
    let mut defs = site_definition::load_dir(&site_definition::dir_beside(&path))?;
    for d in &mut defs {
        d.executable_sha256 = spx_checks::live::site::file_sha256(d.executable());
    }
    Ok(defs)
}

/// The catalogue of `list`, `explain` and completion: the built-in checks
/// and the site checks beside the config (`--config`, else
/// `SPINIFEX_CONFIG_PATH`, else the default paths).
pub fn install_catalogue(config: Option<PathBuf>) -> Result<(), UsageError> {
    let config = load_config(config.or_else(config_from_env).as_deref())?;
    catalogue::install(&site_checks(&config)?);
    Ok(())
}

/// Spinifex's `spx` reads `SPINIFEX_CONFIG_PATH` when `--config` is not
/// given; so does the doctor. Empty means unset.
fn config_from_env() -> Option<PathBuf> {
    std::env::var_os(CONFIG_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

const CONFIG_ENV: &str = spx_checks::spinifex::CONFIG_PATH_ENV;

/// An explicit `--config` (or `SPINIFEX_CONFIG_PATH`) must be readable and valid. The default paths may
/// be missing (checks that need the config skip) or unreadable to an
/// unprivileged user (they skip, naming the privilege); a default config
/// that is there but malformed is still an error.
fn load_config(explicit: Option<&std::path::Path>) -> Result<ConfigState, UsageError> {
    if let Some(path) = explicit {
        return match config::load(path) {
            Ok(parsed) => Ok(ConfigState::Loaded {
                path: path.to_owned(),
                config: Box::new(parsed?),
            }),
            Err(e) => Err(UsageError(format!(
                "cannot read config {}: {e}",
                path.display()
            ))),
        };
    }
    let looked_at = config::default_paths();
    for path in &looked_at {
        match config::load(path) {
            Ok(parsed) => {
                return Ok(ConfigState::Loaded {
                    path: path.clone(),
                    config: Box::new(parsed?),
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                return Ok(ConfigState::Unreadable {
                    path: path.clone(),
                    reason: e.to_string(),
                })
            }
            Err(e) => {
                return Err(UsageError(format!(
                    "cannot read config {}: {e}",
                    path.display()
                )))
            }
        }
    }
    Ok(ConfigState::Missing { looked_at })
}
