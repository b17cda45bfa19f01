//! The flags of a cluster run, as parsed (flattened into the run flags).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// `--via`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ViaFlag {
    /// Every node's agent, over Spinifex's NATS.
    Nats,
    /// This node in-process, the others over OpenSSH.
    Ssh,
}

#[derive(Args, Debug, Default, Clone)]
#[command(next_help_heading = "Cluster (every node, over NATS or OpenSSH)")]
pub struct ClusterArgs {
    /// Check every node of the config's [nodes.*] (their agents over NATS, or this node in-process and the others over ssh), plus the cross-node checks (cluster.*).
    #[arg(long)]
    pub cluster: bool,

    /// How to reach the nodes: nats (each node's agent, on Spinifex's bus) or ssh [default: nats when the config has this node's [nodes.NODE.nats], else ssh].
    #[arg(long, value_enum, value_name = "HOW", requires = "cluster")]
    pub via: Option<ViaFlag>,

    /// Only these nodes, in this order: comma-separated [nodes.*] names [default: every node, by name].
    #[arg(
        long,
        value_name = "NAMES",
        value_delimiter = ',',
        requires = "cluster"
    )]
    pub nodes: Vec<String>,

    /// The ssh client configuration (`ssh -F FILE`) [default: ssh's own: ~/.ssh/config, /etc/ssh/ssh_config].
    #[arg(long, value_name = "FILE", requires = "cluster")]
    pub ssh_config: Option<PathBuf>,

    /// The user to log in as (`ssh -l USER`); any user but root runs the doctor with `sudo -n` [default: ssh's].
    #[arg(long, value_name = "USER", requires = "cluster")]
    pub ssh_user: Option<String>,

    /// The doctor on the other nodes: a name on their PATH or an absolute path [default: the doctor's installed name].
    #[arg(long, value_name = "PATH", requires = "cluster")]
    pub remote_bin: Option<String>,

    /// At most N ssh sessions at once.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=1024), requires = "cluster")]
    pub parallel: u32,

    /// Set by --cluster on the other nodes: the node that reads OVN NB and SB for the whole cluster.
    #[arg(long, value_name = "NODE", hide = true, conflicts_with = "cluster")]
    pub ovn_read_by: Option<String>,
}
