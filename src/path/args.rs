//! The flags of `spx-doctor path` and of the hidden `path-facts`, as parsed.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::cluster::args::ViaFlag;
use crate::render::term::TermArgs;

/// `--format` of `path`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum PathFormat {
    /// A hop table per direction, then the verdict and the fix.
    #[default]
    Table,
    /// One document (schema/path-v1.schema.json).
    Json,
}

/// `spx-doctor path FROM TO`.
#[derive(Args, Debug, Default)]
pub struct PathArgs {
    /// Where the packet starts: an instance (i-…), an ENI (eni-…), a guest's private IP, or a node of the config.
    #[arg(value_name = "FROM", required_unless_present = "replay")]
    pub from: Option<String>,

    /// Where it goes: the same forms as FROM.
    #[arg(value_name = "TO", required_unless_present = "replay")]
    pub to: Option<String>,

    /// The guest packet (an IP packet, the size an MTU counts) to follow, 68..65535 [default: the MTU the source guest was offered; between nodes, underlay_mtu].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(68..=65535))]
    pub size: Option<u32>,

    /// The VPC of a guest IP that two VPCs share (vpc-…).
    #[arg(long, value_name = "ID")]
    pub vpc: Option<String>,

    /// How to reach the other nodes: nats (each node's agent) or ssh [default: nats when the config has this node's [nodes.NODE.nats], else ssh].
    #[arg(long, value_enum, value_name = "HOW")]
    pub via: Option<ViaFlag>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = PathFormat::Table)]
    pub format: PathFormat,

    /// The Spinifex config, found as a run finds it: its NB/SB endpoints, its [nodes.*] and this node's name.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// The whole command's deadline, the other nodes' answers included.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub timeout: String,

    /// Bound on one probe round (each node's DF probe takes up to 3).
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub probe_timeout: String,

    /// The local Open_vSwitch database [default: unix:/var/run/openvswitch/db.sock].
    #[arg(long, value_name = "ENDPOINT")]
    pub ovs_db: Option<String>,

    /// OVN northbound endpoints, comma-separated [default: the config's ovn_nb_addr].
    #[arg(long, value_name = "ENDPOINTS")]
    pub nb_db: Option<String>,

    /// OVN southbound endpoints, comma-separated [default: the config's ovn_sb_addr].
    #[arg(long, value_name = "ENDPOINTS")]
    pub sb_db: Option<String>,

    /// With --via ssh: the ssh client configuration (`ssh -F FILE`).
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,

    /// With --via ssh: the user to log in as; any user but root runs the doctor with `sudo -n`.
    #[arg(long, value_name = "USER")]
    pub ssh_user: Option<String>,

    /// With --via ssh: the doctor on the other nodes, a name on their PATH or an absolute path.
    #[arg(long, value_name = "PATH")]
    pub remote_bin: Option<String>,

    #[command(flatten)]
    pub term: TermArgs,

    /// Also write everything this node read, and every other node's answer, to FILE (a bundle for --replay).
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath, help_heading = "Record and replay")]
    pub record: Option<PathBuf>,

    /// Judge a bundle taken with `path --record`, touching nothing: the recorded question, its reads and the nodes' answers.
    #[arg(
        long,
        value_name = "FILE",
        value_hint = clap::ValueHint::FilePath,
        help_heading = "Record and replay",
        conflicts_with_all = ["from", "to", "size", "vpc", "via", "config", "timeout", "probe_timeout", "ovs_db", "nb_db", "sb_db", "ssh_config", "ssh_user", "remote_bin", "record"]
    )]
    pub replay: Option<PathBuf>,
}

/// `spx-doctor path-facts`: one node's side, as JSON on stdout.
#[derive(Args, Debug)]
pub struct PathFactsArgs {
    /// This node's config.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// The guest: an instance this node runs.
    #[arg(long, value_name = "ID", conflicts_with = "eni")]
    pub instance: Option<String>,

    /// The guest: an ENI whose tap is on this node.
    #[arg(long, value_name = "ID")]
    pub eni: Option<String>,

    /// The other end's geneve endpoint, probed when given (it must be in this node's peer list).
    #[arg(long, value_name = "ADDR")]
    pub peer: Option<String>,

    /// The size to probe for.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(68..=65535))]
    pub size: u32,

    /// What the size is: a guest packet (geneve and ESP added here) or an underlay packet.
    #[arg(long, value_enum, default_value_t = SizeKind::Guest)]
    pub size_kind: SizeKind,

    /// This node's deadline.
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    pub timeout: String,

    /// Bound on one probe round.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub probe_timeout: String,

    /// The local Open_vSwitch database.
    #[arg(long, value_name = "ENDPOINT")]
    pub ovs_db: Option<String>,
}

/// `--size-kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SizeKind {
    Guest,
    Underlay,
}
