//! The run's settings, read before any check runs: the operator's flags
//! ([`Options`]), the config or why there is none ([`ConfigState`]), and the
//! preflight asked for ([`Preflight`]). The seam keeps them in a bundle, so
//! they sit below it; what a preflight runs and its runbook are
//! [`crate::profile`]'s.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::endpoint::Endpoint;

/// Settings from the command line that checks read. Parsed and validated by
/// the binary; checks trust them. A bundle keeps them, and a replay runs
/// with the recorded ones.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Options {
    /// `--peer`, in the order given.
    pub peers: Vec<crate::facts::peers::FlagPeer>,
    /// `--mtu`: the target underlay MTU, overriding the config.
    pub mtu: Option<u32>,
    /// `--probe-timeout`: one probe round's bound.
    pub probe_timeout: Duration,
    /// `--interface`: interfaces to inspect, overriding discovery.
    pub interfaces: Vec<String>,
    /// `--ovs-db`, `--nb-db`, `--sb-db`: OVSDB endpoints overriding the config.
    /// Parsed once, by the binary; kept as the text an operator writes.
    #[serde(with = "crate::endpoint::opt_list", default)]
    pub ovs_db: Option<Vec<Endpoint>>,
    #[serde(with = "crate::endpoint::opt_list", default)]
    pub nb_db: Option<Vec<Endpoint>>,
    #[serde(with = "crate::endpoint::opt_list", default)]
    pub sb_db: Option<Vec<Endpoint>>,
    /// `--sample`: the length of the shared sample window.
    pub sample: Duration,
    /// `--timeout`: the global deadline, from the start of the run.
    pub timeout: Duration,
    /// `--for`: the preflight profile, if any.
    pub profile: Option<Preflight>,
    /// In a cluster run, the node that reads OVN NB and SB for the whole
    /// cluster; set on every other node, which then leaves them alone
    /// ([`crate::targets::ovsdb_endpoints`]).
    pub ovn_read_by: Option<String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            peers: Vec::new(),
            mtu: None,
            probe_timeout: Duration::from_secs(1),
            interfaces: Vec::new(),
            ovs_db: None,
            nb_db: None,
            sb_db: None,
            sample: Duration::from_secs(1),
            timeout: Duration::from_secs(10),
            profile: None,
            ovn_read_by: None,
        }
    }
}

/// Where the config came from, or why there is none. A missing or unreadable
/// default config is not an error of the run: checks that need it skip.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfigState {
    Loaded { path: PathBuf, config: Box<Config> },
    Missing { looked_at: Vec<PathBuf> },
    Unreadable { path: PathBuf, reason: String },
}

/// A preflight change (`--for CHANGE`), typed: compared as a value, never
/// as a string. Its JSON and bundle form is the kebab-case name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preflight {
    /// Before raising `underlay_mtu`.
    EnableJumbo,
    /// Before setting `ipsec_enabled = false`.
    DisableIpsec,
    /// Before setting `ipsec_enabled = true`.
    EnableIpsec,
}

impl Preflight {
    pub const ALL: [Preflight; 3] = [
        Preflight::EnableJumbo,
        Preflight::DisableIpsec,
        Preflight::EnableIpsec,
    ];
}
