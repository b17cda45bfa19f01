//! A cluster run, planned before anything touches the network: the nodes
//! (validated, in order), this node's in-process settings, and the exact
//! ssh command line of every other node. Every refusal here is one line
//! and exit 2, and happens before any ssh runs.
//!
//! The remote command is `[sudo -n] REMOTE-BIN --format json --config
//! REMOTE-CONFIG <forwarded flags>`. ssh joins its words with spaces and
//! the remote login shell parses them, so every word is a fixed word of
//! this program or a validated value drawn from a small set of characters
//! that no shell treats specially (sh, bash, zsh, fish, csh alike), and is
//! single-quoted besides.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use spx_checks::config::{Config, NodeEntry};
use spx_checks::live::peers;
use spx_checks::profile::Profile;
use spx_checks::validate::{self, shown};
use spx_checks::{catalogue, select, Check, ConfigState, Scope};

use crate::cli::RunArgs;
use crate::cluster::args::ClusterArgs;
use crate::levels::Source;
use crate::settings::{Settings, UsageError};

/// The doctor's installed name: the remote default.
pub const DEFAULT_REMOTE_BIN: &str = spx_checks::spinifex::BINARY;

/// One selected node.
#[derive(Clone, Debug)]
pub struct PlannedNode {
    pub name: String,
    /// `host`, else `advertise`, from its `[nodes.NAME]` (no port).
    pub host: Option<String>,
    /// How it is reached.
    pub via: Via,
}

#[derive(Clone, Debug)]
pub enum Via {
    /// This node: run in this process.
    InProcess,
    /// ssh, with this command line.
    Ssh(SshCommand),
    /// The config gives no address for it.
    NoAddress,
}

/// One node's ssh command line, in its parts: `ssh OPTIONS HOST --
/// REMOTE…`. `ssh OPTIONS -G HOST` asks ssh what its configuration makes
/// of the node first (see [`super::ssh`]).
#[derive(Clone, Debug)]
pub struct SshCommand {
    /// The options before the host (`-o BatchMode=yes`, `-F`, `-l`…).
    pub options: Vec<OsString>,
    /// The node's `host` (else `advertise`), validated: it cannot start
    /// with '-' or carry a user@ or an option.
    pub host: String,
    /// The remote command's words, each single-quoted.
    pub remote: Vec<OsString>,
}

pub struct Plan {
    /// This node's run: the node checks, with the nodes' --timeout.
    pub settings: Settings,
    pub nodes: Vec<PlannedNode>,
    pub cluster_checks: Vec<&'static dyn Check>,
    /// Ids of the node checks every node runs.
    pub node_checks: Vec<&'static str>,
    /// The node that reads OVN NB/SB for the cluster.
    pub reader: String,
    /// The whole run's --timeout.
    pub timeout: Duration,
    pub parallel: usize,
    /// The remote command starts with `sudo -n`.
    pub sudo: bool,
    pub ssh_user: Option<String>,
    pub remote_bin: String,
    /// `--ssh-config`.
    pub ssh_config: Option<std::path::PathBuf>,
    pub config_nodes: Vec<String>,
    /// Each config node's host/advertise that is an IP address; names are
    /// resolved by [`Plan::resolve_names`].
    pub config_addresses: BTreeMap<String, Vec<IpAddr>>,
    /// Host names of config nodes still to resolve: (node, name).
    pub names_to_resolve: Vec<(String, String)>,
    pub profile: Option<&'static Profile>,
    pub config: Config,
}

/// Time kept back from --timeout for ssh to connect and the answer to come
/// back: a quarter of it, at most 2 s. The nodes get the rest.
pub fn ssh_allowance(timeout: Duration) -> Duration {
    (timeout / 4).min(Duration::from_secs(2))
}

impl Plan {
    /// The plan of a `--cluster` run, every refusal made here: the flags
    /// of its own, the config, the nodes, the checks, the time each node
    /// gets, the words every node is run with, and how each is reached.
    pub fn from_args(args: RunArgs) -> Result<Plan, UsageError> {
        let cl = args.cluster.clone();
        let asked = Asked::of(&args);
        // Flags of our own first: refused before the config is even read.
        let (ssh_user, remote_bin) = own_flags(&cl)?;
        let mut settings = Settings::from_args(args)?;
        let (config_path, config) = loaded(&settings)?;
        let names = node_names(&config, &cl.nodes)?;
        let cluster_checks = split_checks(&mut settings, &asked.exclude)?;
        let node_checks: Vec<&'static str> = settings.checks.iter().map(|c| c.id()).collect();
        let timeout = settings.options.timeout;
        settings.options.timeout = node_timeout(&settings, &asked.timeout_text)?;
        let words = remote_words(&settings, &config_path, &asked, &node_checks)?;

        let local = config.node.clone().filter(|n| names.iter().any(|x| x == n));
        let reader = local.clone().unwrap_or_else(|| names[0].clone());
        let sudo = match &ssh_user {
            Some(u) => u != "root",
            None => !nix::unistd::geteuid().is_root(),
        };
        let reach = Reach {
            local: local.as_deref(),
            reader: &reader,
            sudo,
            ssh_user: ssh_user.as_deref(),
            ssh_config: cl.ssh_config.as_deref(),
            remote_bin: &remote_bin,
            words: &words,
            node_timeout: settings.options.timeout,
        };
        let nodes = names
            .iter()
            .map(|name| reach.node(name, &config.nodes[name]))
            .collect::<Result<Vec<_>, _>>()?;
        let (config_addresses, names_to_resolve) = config_addresses(&config);

        Ok(Plan {
            profile: settings.profile,
            settings,
            nodes,
            cluster_checks,
            node_checks,
            reader,
            timeout,
            parallel: cl.parallel as usize,
            sudo,
            ssh_user,
            remote_bin,
            ssh_config: cl.ssh_config.clone(),
            config_nodes: config.nodes.keys().cloned().collect(),
            config_addresses,
            names_to_resolve,
            config,
        })
    }

    /// Resolve the config's host names (bounded): for telling which node
    /// an address belongs to, never for reaching it (ssh resolves itself).
    pub fn resolve_names(
        names: &[(String, String)],
        bound: Duration,
    ) -> BTreeMap<String, Vec<IpAddr>> {
        let hosts: Vec<String> = names.iter().map(|(_, h)| h.clone()).collect();
        let answers = peers::lookup_names(&hosts, bound);
        let mut out: BTreeMap<String, Vec<IpAddr>> = BTreeMap::new();
        for (node, host) in names {
            if let Some(Ok(ips)) = answers.get(host) {
                out.entry(node.clone()).or_default().extend(ips);
            }
        }
        out
    }
}

/// What the command line asked, kept before [`Settings::from_args`]
/// takes it.
struct Asked {
    include_given: bool,
    exclude: Vec<String>,
    explicit_mtu: Option<u32>,
    timeout_text: String,
}

impl Asked {
    fn of(args: &RunArgs) -> Asked {
        Asked {
            include_given: args.check.iter().any(|s| !s.trim().is_empty()),
            exclude: args
                .skip
                .iter()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect(),
            explicit_mtu: args.mtu,
            timeout_text: args.timeout.trim().to_owned(),
        }
    }
}

/// `--ssh-user`, `--remote-bin` and `--ssh-config`, checked.
fn own_flags(cl: &ClusterArgs) -> Result<(Option<String>, String), UsageError> {
    let ssh_user = cl
        .ssh_user
        .as_deref()
        .map(|u| user_name(u).map(|()| u.to_owned()))
        .transpose()?;
    let remote_bin = cl
        .remote_bin
        .clone()
        .unwrap_or_else(|| DEFAULT_REMOTE_BIN.to_owned());
    remote_bin_ok(&remote_bin)?;
    if let Some(f) = &cl.ssh_config {
        std::fs::File::open(f)
            .map_err(|e| UsageError(format!("--ssh-config {}: {e}", f.display())))?;
    }
    Ok((ssh_user, remote_bin))
}

/// The config a cluster run needs, with its `[nodes.*]`.
fn loaded(settings: &Settings) -> Result<(PathBuf, Config), UsageError> {
    let (config_path, config) = match &settings.config {
        ConfigState::Loaded { path, config } => (path.clone(), (**config).clone()),
        ConfigState::Missing { looked_at } => {
            return Err(UsageError(format!(
                "--cluster needs the config's [nodes.*]: none found at {} (pass --config PATH)",
                looked_at
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" or ")
            )))
        }
        ConfigState::Unreadable { path, reason } => {
            return Err(UsageError(format!(
                "--cluster needs the config: cannot read {} ({reason})",
                path.display()
            )))
        }
    };
    if config.nodes.is_empty() {
        return Err(UsageError(format!(
            "--cluster: {} has no [nodes.*] tables",
            config_path.display()
        )));
    }
    Ok((config_path, config))
}

/// The nodes to run: `--nodes` in its order, else every config node in
/// natural order (c2 before c10), the order every list of the run keeps.
fn node_names(config: &Config, asked: &[String]) -> Result<Vec<String>, UsageError> {
    let mut known: Vec<&str> = config.nodes.keys().map(String::as_str).collect();
    spx_checks::natural::sort(&mut known);
    if asked.iter().all(|n| n.trim().is_empty()) {
        return Ok(known.iter().map(|s| s.to_string()).collect());
    }
    let mut names: Vec<String> = Vec::new();
    for n in asked.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if !config.nodes.contains_key(n) {
            return Err(UsageError(format!(
                "--nodes: unknown node {}; the config's nodes: {}",
                shown(n),
                known.join(", ")
            )));
        }
        if !names.iter().any(|x| x == n) {
            names.push(n.to_owned());
        }
    }
    Ok(names)
}

/// The cluster checks (all but the skipped); `settings` keeps the node
/// checks `--check`/`--skip` chose.
fn split_checks(
    settings: &mut Settings,
    exclude: &[String],
) -> Result<Vec<&'static dyn Check>, UsageError> {
    let not_skipped =
        select::select(&catalogue::all(), &[], exclude).map_err(|e| UsageError(e.to_string()))?;
    settings.checks.retain(|c| c.scope() == Scope::Node);
    Ok(not_skipped
        .into_iter()
        .filter(|c| c.scope() == Scope::Cluster)
        .collect())
}

/// The time each node gets: the run's --timeout less ssh's allowance,
/// which must still hold the sample window and a probe round.
fn node_timeout(settings: &Settings, timeout_text: &str) -> Result<Duration, UsageError> {
    let timeout = settings.options.timeout;
    let allowance = ssh_allowance(timeout);
    let node_timeout = timeout - allowance;
    let fmt = |d: Duration| humantime::format_duration(d).to_string();
    if settings.options.sample >= node_timeout || settings.options.probe_timeout > node_timeout {
        return Err(UsageError(format!(
            "--timeout {timeout_text}: in a cluster run the nodes get {} of it (ssh may take {}), which must be longer than --sample {} and at least --probe-timeout {}",
            fmt(node_timeout),
            fmt(allowance),
            fmt(settings.options.sample),
            fmt(settings.options.probe_timeout)
        )));
    }
    Ok(node_timeout)
}

/// A word for the remote command: the flag whose value it is (empty for
/// a fixed word), and the word.
type Word = (&'static str, String);

/// The words every node's doctor is run with, each single-quoted: the
/// report format, the config, the selection and levels, the options.
fn remote_words(
    settings: &Settings,
    config_path: &Path,
    asked: &Asked,
    node_checks: &[&str],
) -> Result<Vec<String>, UsageError> {
    let mut words: Vec<Word> = vec![
        ("", "--format".into()),
        ("", "json".into()),
        ("", "--config".into()),
        ("--config", remote_config(config_path)?),
    ];
    selection_words(&mut words, settings, asked, node_checks);
    option_words(&mut words, settings, asked);
    words
        .iter()
        .map(|(flag, w)| {
            let what = if flag.is_empty() {
                "a forwarded flag"
            } else {
                flag
            };
            remote_word(what, w)
        })
        .collect()
}

/// The preflight, the node checks, `--strict` and the levels from flags
/// (those of the config's `[doctor]` the nodes read from the same file).
fn selection_words(
    words: &mut Vec<Word>,
    settings: &Settings,
    asked: &Asked,
    node_checks: &[&str],
) {
    if let Some(p) = settings.profile {
        words.push(("", "--for".into()));
        words.push(("", p.name.into()));
    }
    if asked.include_given || !asked.exclude.is_empty() {
        words.push(("", "--check".into()));
        // No node check selected: the nodes still answer with what they
        // ran with (a cluster check id selects nothing on a node).
        words.push((
            "",
            if node_checks.is_empty() {
                "cluster".to_owned()
            } else {
                node_checks.join(",")
            },
        ));
    }
    if settings.strict {
        words.push(("", "--strict".into()));
    }
    for (flag, entries) in [
        ("--allow", &settings.levels.allow),
        ("--deny", &settings.levels.deny),
    ] {
        for e in entries.iter().filter(|e| e.source == Source::Flag) {
            words.push(("", flag.into()));
            words.push(("", e.code.clone()));
        }
    }
}

/// The times (the nodes' own --timeout), the MTU, peers, interfaces and
/// OVSDB endpoints.
fn option_words(words: &mut Vec<Word>, settings: &Settings, asked: &Asked) {
    let ms = |d: Duration| format!("{}ms", d.as_millis());
    for (flag, d) in [
        ("--timeout", settings.options.timeout),
        ("--sample", settings.options.sample),
        ("--probe-timeout", settings.options.probe_timeout),
    ] {
        words.push(("", flag.into()));
        words.push(("", ms(d)));
    }
    if let Some(m) = asked.explicit_mtu {
        words.push(("", "--mtu".into()));
        words.push(("", m.to_string()));
    }
    for p in &settings.options.peers {
        words.push(("", "--peer".into()));
        words.push(("--peer", p.to_string()));
    }
    for i in &settings.options.interfaces {
        words.push(("", "--interface".into()));
        words.push(("--interface", i.clone()));
    }
    for (flag, v) in [
        ("--ovs-db", &settings.options.ovs_db),
        ("--nb-db", &settings.options.nb_db),
        ("--sb-db", &settings.options.sb_db),
    ] {
        if let Some(v) = v {
            words.push(("", flag.into()));
            words.push((flag, spx_checks::endpoint::join(v)));
        }
    }
}

/// The config's path as the other nodes are told it: absolute, UTF-8.
fn remote_config(config_path: &Path) -> Result<String, UsageError> {
    let remote_config = if config_path.is_absolute() {
        config_path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(config_path))
            .unwrap_or_else(|_| config_path.to_path_buf())
    };
    remote_config.to_str().map(str::to_owned).ok_or_else(|| {
        UsageError(format!(
            "--config {}: the path is not UTF-8, so it cannot be passed to the other nodes",
            config_path.display()
        ))
    })
}

/// How every node is reached: what its ssh command line is made of.
struct Reach<'a> {
    /// This node, run in this process.
    local: Option<&'a str>,
    /// The node that reads OVN for the cluster.
    reader: &'a str,
    sudo: bool,
    ssh_user: Option<&'a str>,
    ssh_config: Option<&'a Path>,
    remote_bin: &'a str,
    /// [`remote_words`].
    words: &'a [String],
    node_timeout: Duration,
}

impl Reach<'_> {
    /// Node `name` of the config, planned.
    fn node(&self, name: &str, entry: &NodeEntry) -> Result<PlannedNode, UsageError> {
        let host = entry.host.clone().or_else(|| entry.advertise.clone());
        let via = if self.local == Some(name) {
            Via::InProcess
        } else if let Some(h) = &host {
            // The config validated it as an address or a DNS name: it
            // cannot start with '-' or carry a user@ or an option.
            Via::Ssh(SshCommand {
                options: self.options(),
                host: h.clone(),
                remote: self.remote(name)?,
            })
        } else {
            Via::NoAddress
        };
        Ok(PlannedNode {
            name: name.to_owned(),
            host,
            via,
        })
    }

    /// ssh's options before the host.
    fn options(&self) -> Vec<OsString> {
        let connect_timeout = self.node_timeout.as_secs_f64().div_euclid(2.0).max(1.0) as u64;
        let mut options: Vec<OsString> = vec![
            "-o".into(),
            "BatchMode=yes".into(),
            "-o".into(),
            format!("ConnectTimeout={connect_timeout}").into(),
            "-T".into(),
        ];
        if let Some(f) = self.ssh_config {
            options.push("-F".into());
            options.push(f.as_os_str().to_owned());
        }
        if let Some(u) = self.ssh_user {
            options.push("-l".into());
            options.push(u.into());
        }
        options
    }

    /// The remote command of node `name`.
    fn remote(&self, name: &str) -> Result<Vec<OsString>, UsageError> {
        let mut remote: Vec<OsString> = Vec::new();
        if self.sudo {
            remote.push(quote("sudo").into());
            remote.push(quote("-n").into());
        }
        remote.push(quote(self.remote_bin).into());
        remote.extend(self.words.iter().map(OsString::from));
        if name != self.reader {
            remote.push(quote("--ovn-read-by").into());
            remote.push(remote_word("a node name", self.reader)?.into());
        }
        Ok(remote)
    }
}

/// Node name → its addresses.
type AddressesOf = BTreeMap<String, Vec<IpAddr>>;

/// Each config node's host/advertise that is an IP address, and the host
/// names still to resolve.
fn config_addresses(config: &Config) -> (AddressesOf, Vec<(String, String)>) {
    let mut config_addresses: BTreeMap<String, Vec<IpAddr>> = BTreeMap::new();
    let mut names_to_resolve = Vec::new();
    for (name, entry) in &config.nodes {
        for h in [&entry.host, &entry.advertise].into_iter().flatten() {
            match h.parse::<IpAddr>() {
                Ok(ip) => config_addresses.entry(name.clone()).or_default().push(ip),
                Err(_) => names_to_resolve.push((name.clone(), h.clone())),
            }
        }
    }
    (config_addresses, names_to_resolve)
}

/// Characters a remote word may hold: none that sh, bash, zsh, fish or csh
/// treat specially, even inside single quotes (csh's `!`).
fn safe_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "._/:,+=@%-".contains(c)
}

/// `word`, single-quoted for the remote shell, or a refusal naming `what`.
pub fn remote_word(what: &str, word: &str) -> Result<String, UsageError> {
    if word.is_empty() || word.len() > validate::MAX_LEN {
        return Err(UsageError(format!(
            "{what}: {} cannot be passed to the other nodes (empty or too long)",
            shown(word)
        )));
    }
    if let Some(c) = word.chars().find(|c| !safe_char(*c)) {
        return Err(UsageError(format!(
            "{what}: {} cannot be passed to the other nodes' shells safely (it contains {c:?})",
            shown(word)
        )));
    }
    Ok(quote(word))
}

/// Single-quote for a POSIX shell. Words reaching here hold no `'`; one
/// that did would still be quoted correctly.
pub fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

pub(crate) fn user_name(u: &str) -> Result<(), UsageError> {
    let ok = !u.is_empty()
        && u.len() <= 32
        && !u.starts_with('-')
        && u.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(UsageError(format!(
            "--ssh-user: {} is not a user name (letters, digits, '.', '_', '-'; at most 32)",
            shown(u)
        )))
    }
}

pub(crate) fn remote_bin_ok(bin: &str) -> Result<(), UsageError> {
    if bin.starts_with('-') || bin.ends_with('/') {
        return Err(UsageError(format!(
            "--remote-bin: {} is not a program name or path",
            shown(bin)
        )));
    }
    remote_word("--remote-bin", bin).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_and_hostile_ones_refused() {
        assert_eq!(
            remote_word("x", "mtu.path,ipsec.xfrm").unwrap(),
            "'mtu.path,ipsec.xfrm'"
        );
        assert_eq!(
            remote_word("x", "tcp:198.18.0.1:6641").unwrap(),
            "'tcp:198.18.0.1:6641'"
        );
        assert_eq!(remote_word("x", "fd00::1").unwrap(), "'fd00::1'");
        for bad in [
            "a b", "$(id)", "`id`", "a;b", "a'b", "a\nb", "!1", "a|b", "~", "*", "",
        ] {
            assert!(remote_word("x", bad).is_err(), "{bad:?}");
        }
        assert_eq!(quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn users_and_binaries() {
        assert!(user_name("spinifex").is_ok());
        assert!(user_name("root").is_ok());
        for bad in ["-oProxyCommand=x", "a b", "a;b", "", &"a".repeat(33)] {
            assert!(user_name(bad).is_err(), "{bad:?}");
        }
        assert!(remote_bin_ok("spx-doctor").is_ok());
        assert!(remote_bin_ok("/usr/local/bin/spx-doctor").is_ok());
        for bad in ["-x", "spx doctor", "/usr/bin/", "a;rm", "$HOME/x"] {
            assert!(remote_bin_ok(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_nodes_keep_most_of_the_timeout() {
        assert_eq!(
            ssh_allowance(Duration::from_secs(10)),
            Duration::from_secs(2)
        );
        assert_eq!(
            ssh_allowance(Duration::from_secs(4)),
            Duration::from_secs(1)
        );
    }
}
