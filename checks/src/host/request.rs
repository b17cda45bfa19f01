//! What can be asked of a host, and what it answers: one list of every
//! source a check reads. A [`Request`] names the source and its arguments
//! (a path, a netlink request, an ioctl and an interface, an OVSDB
//! transaction, a QMP socket, an ICMP probe plan); a [`Fact`] is the typed,
//! parsed answer. Both are what a bundle keeps, so their serialized forms
//! are a file format: variants and fields are only ever added.
//!
//! How long the live host may take (a bound, a deadline) is never part of a
//! request: it is passed beside it as a [`super::Limit`], so that the same
//! question asked with less time left is still the same question.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::endpoint::Endpoint;
use crate::facts::credential::CredentialFile;
use crate::facts::ethtool::{Channels, DrvInfo, Feature, Reported, Rings};
use crate::facts::icmp::{PathProbe, SocketKind, Target};
use crate::facts::journal::JournalLookup;
use crate::facts::links::{Link, Route};
use crate::facts::neighbours::{Neighbour, NeighbourTable};
use crate::facts::ovsdb::{Answer, Row};
use crate::facts::process::{NetNs, ProcessInfo};
use crate::facts::qemu::host::ProcessFds;
use crate::facts::qemu::process::Discovery;
use crate::facts::qemu::qmp::{QmpError, QmpFacts};
use crate::facts::site::SiteRun;
use crate::facts::xfrm::{SecurityAssociation, XfrmPolicy};

/// One question to the host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Request {
    /// The text of a procfs, sysfs or config file (`/proc/net/snmp`,
    /// `/sys/class/net/eth0/statistics/tx_bytes`, peers.nft).
    File { path: PathBuf },
    /// The entry names of a directory, sorted.
    Dir { path: PathBuf },
    /// Where a symbolic link points.
    Readlink { path: PathBuf },
    /// Whether a path exists (links followed).
    Exists { path: PathBuf },
    /// Whether a path is a directory (links followed). No check asks it
    /// any more (a bridge is known by its link kind); kept so that bundles
    /// holding it still read.
    IsDir { path: PathBuf },
    /// This boot's journal lines of `unit` that contain `needle`.
    Journal { unit: String, needle: String },
    /// `RTM_GETROUTE`: the route the kernel picks to `destination`, out of
    /// interface index `oif` when given (`ip route get`).
    Route {
        destination: IpAddr,
        oif: Option<u32>,
    },
    /// `RTM_GETLINK` for one device by name.
    LinkByName { name: String },
    /// `RTM_GETLINK` for one device by index.
    LinkByIndex { index: u32 },
    /// `RTM_GETLINK` dump: every device.
    Links,
    /// `RTM_GETADDR` dump: every address of this host.
    Addresses,
    /// `RTM_GETNEIGHTBL` dump: the kernel's neighbour tables (ARP, IPv6
    /// ND), whole-kernel: thresholds, entries, statistics.
    NeighbourTables,
    /// `RTM_GETNEIGH` dump: every neighbour entry of this network namespace.
    Neighbours,
    /// `XFRM_MSG_GETSA` dump: every security association (never a key).
    XfrmStates,
    /// `XFRM_MSG_GETPOLICY` dump: every IPsec policy.
    XfrmPolicies,
    /// One `SIOCETHTOOL` read of one interface.
    Ethtool {
        ioctl: EthtoolGet,
        interface: String,
    },
    /// An OVSDB `transact` of `selects` on `db`, asked of the members of
    /// `endpoints` in turn.
    Ovsdb {
        endpoints: Vec<Endpoint>,
        db: String,
        selects: Vec<SelectOp>,
    },
    /// The running QEMU processes and their command lines.
    QemuProcesses,
    /// The tap queues and vhost-net descriptors process `pid` holds.
    ProcessFds { pid: i32 },
    /// A QMP monitor's iothreads and block devices.
    Qmp { socket: PathBuf },
    /// A path MTU probe plan: DF echo to every target, at most
    /// `max_rounds` rounds of `round_timeout` each; the answer is what was
    /// concluded of each target. (When the probe engine becomes a pure
    /// state machine that decides each round, the host will answer one
    /// round at a time, a request kind of its own: the probes to send and
    /// their outcomes. This kind stays, for the bundles that hold it.)
    Icmp {
        targets: Vec<Target>,
        round_timeout: Duration,
        max_rounds: u32,
    },
    /// Host names resolved to addresses.
    Resolve { names: Vec<String> },
    /// This host's name.
    Hostname,
    /// The number of online CPUs.
    OnlineCpus,
    /// Time since the run started: sampling checks measure their window
    /// with it, so a replay judges the window the live run measured.
    Clock,
    /// A credential file (PEM certificates and keys): its mode, owner and
    /// link, its certificates, and of a private key only what was derived
    /// from it (never the key).
    Credential { path: PathBuf },
    /// One process by pid (`/proc/PID`), its command line kept whole only
    /// when it is known by one of `names`.
    Process { pid: i32, names: Vec<String> },
    /// Every process known by one of `names` (its command name or the
    /// program its command line runs).
    ProcessesNamed { names: Vec<String> },
    /// The wall clock, in seconds since the Unix epoch: what a
    /// certificate's validity is judged at (a replay judges at the
    /// recorded time).
    WallClock,
    /// The doctor's own network namespace (`/proc/self/ns/net`): the node
    /// it speaks for, where a daemon must run to be this node's.
    NetNamespace,
    /// Run a site check's executable (`doctor.d`), `context` on its stdin,
    /// within `timeout` (and the run's deadline): how it ended and what it
    /// wrote. Its files are judged before it runs (`definition` too). A
    /// replay answers with what the recorded run's plugin answered and
    /// runs nothing.
    Site {
        check: String,
        definition: PathBuf,
        command: Vec<String>,
        timeout: Duration,
        requires_root: bool,
        context: Value,
    },
}

/// The `SIOCETHTOOL` reads a check makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EthtoolGet {
    /// `ETHTOOL_GDRVINFO` (`ethtool -i`).
    Drvinfo,
    /// `ETHTOOL_GCHANNELS` (`ethtool -l`).
    Channels,
    /// `ETHTOOL_GRINGPARAM` (`ethtool -g`).
    Rings,
    /// `ETHTOOL_GFEATURES` with the feature names (`ethtool -k`).
    Features,
    /// `ETHTOOL_GSTATS` with the stat names (`ethtool -S`).
    Stats,
}

/// One `select` of an OVSDB transaction, owned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelectOp {
    pub table: String,
    pub columns: Vec<String>,
    /// The `where` clause, as OVSDB encodes it (`[]` for every row).
    #[serde(rename = "where")]
    pub conditions: Value,
}

/// A typed, parsed answer. Which variant answers which [`Request`] is fixed
/// by the accessors of [`super::HostRef`].
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fact {
    Text(String),
    Names(Vec<String>),
    Bool(bool),
    Count(u64),
    Elapsed(Duration),
    Journal(JournalLookup),
    Route(Route),
    Link(Link),
    Links(Vec<Link>),
    Addresses(Vec<IpAddr>),
    NeighbourTables(Vec<NeighbourTable>),
    Neighbours(Vec<Neighbour>),
    Xfrm(Vec<SecurityAssociation>),
    XfrmPolicies(Vec<XfrmPolicy>),
    Drvinfo(Reported<DrvInfo>),
    Channels(Reported<Channels>),
    Rings(Reported<Rings>),
    Features(Reported<Vec<Feature>>),
    Stats(Reported<Vec<(String, u64)>>),
    Ovsdb(Answer<Vec<Vec<Row>>>),
    QemuProcesses(Discovery),
    ProcessFds(ProcessFds),
    Qmp(Result<QmpFacts, QmpError>),
    Icmp {
        probes: Vec<PathProbe>,
        socket: SocketKind,
    },
    Resolved(BTreeMap<String, Result<Vec<IpAddr>, String>>),
    Credential(CredentialFile),
    Process(ProcessInfo),
    Processes(Vec<ProcessInfo>),
    NetNs(NetNs),
    Site(SiteRun),
}

impl Fact {
    /// The variant's name, for a message about an answer of the wrong shape.
    pub fn shape(&self) -> &'static str {
        match self {
            Fact::Text(_) => "text",
            Fact::Names(_) => "names",
            Fact::Bool(_) => "bool",
            Fact::Count(_) => "count",
            Fact::Elapsed(_) => "elapsed",
            Fact::Journal(_) => "journal",
            Fact::Route(_) => "route",
            Fact::Link(_) => "link",
            Fact::Links(_) => "links",
            Fact::Addresses(_) => "addresses",
            Fact::NeighbourTables(_) => "neighbour-tables",
            Fact::Neighbours(_) => "neighbours",
            Fact::Xfrm(_) => "xfrm",
            Fact::XfrmPolicies(_) => "xfrm-policies",
            Fact::Drvinfo(_) => "drvinfo",
            Fact::Channels(_) => "channels",
            Fact::Rings(_) => "rings",
            Fact::Features(_) => "features",
            Fact::Stats(_) => "stats",
            Fact::Ovsdb(_) => "ovsdb",
            Fact::QemuProcesses(_) => "qemu-processes",
            Fact::ProcessFds(_) => "process-fds",
            Fact::Qmp(_) => "qmp",
            Fact::Icmp { .. } => "icmp",
            Fact::Resolved(_) => "resolved",
            Fact::Credential(_) => "credential",
            Fact::Process(_) => "process",
            Fact::Processes(_) => "processes",
            Fact::NetNs(_) => "net-ns",
            Fact::Site(_) => "site",
        }
    }
}

impl Request {
    /// The request as a bundle keys it: its JSON, which is canonical (a
    /// struct's fields always serialize in the same order).
    pub fn key(&self) -> String {
        serde_json::to_string(self).expect("a request always serializes")
    }

    /// One line an operator reads: `file /proc/net/snmp`,
    /// `ethtool channels eth0`.
    pub fn describe(&self) -> String {
        match self {
            Request::File { path } => format!("file {}", path.display()),
            Request::Dir { path } => format!("directory {}", path.display()),
            Request::Readlink { path } => format!("link {}", path.display()),
            Request::Exists { path } | Request::IsDir { path } => {
                format!("path {}", path.display())
            }
            Request::Journal { unit, needle } => format!("journal of {unit} for {needle:?}"),
            Request::Route { destination, .. } => format!("route to {destination}"),
            Request::LinkByName { name } => format!("link {name}"),
            Request::LinkByIndex { index } => format!("link index {index}"),
            Request::Links => "link dump".into(),
            Request::Addresses => "address dump".into(),
            Request::NeighbourTables => "neighbour table dump".into(),
            Request::Neighbours => "neighbour dump".into(),
            Request::XfrmStates => "xfrm state dump".into(),
            Request::XfrmPolicies => "xfrm policy dump".into(),
            Request::Ethtool { ioctl, interface } => {
                format!("ethtool {} {interface}", ioctl.name())
            }
            Request::Ovsdb { endpoints, db, .. } => {
                format!("{db} at {}", crate::endpoint::join(endpoints))
            }
            Request::QemuProcesses => "QEMU processes".into(),
            Request::ProcessFds { pid } => format!("descriptors of pid {pid}"),
            Request::Qmp { socket } => format!("QMP {}", socket.display()),
            Request::Icmp { targets, .. } => format!("ICMP probes to {} peers", targets.len()),
            Request::Resolve { names } => format!("name lookup of {}", names.join(", ")),
            Request::Hostname => "host name".into(),
            Request::OnlineCpus => "online CPUs".into(),
            Request::Clock => "clock".into(),
            Request::Credential { path } => format!("credential {}", path.display()),
            Request::Process { pid, .. } => format!("process {pid}"),
            Request::ProcessesNamed { names } => format!("processes named {}", names.join(", ")),
            Request::WallClock => "wall clock".into(),
            Request::NetNamespace => "own network namespace".into(),
            Request::Site { check, command, .. } => format!(
                "site check {check} ({})",
                command.first().map_or("", String::as_str)
            ),
        }
    }
}

impl EthtoolGet {
    pub fn name(self) -> &'static str {
        match self {
            EthtoolGet::Drvinfo => "drvinfo",
            EthtoolGet::Channels => "channels",
            EthtoolGet::Rings => "rings",
            EthtoolGet::Features => "features",
            EthtoolGet::Stats => "stats",
        }
    }
}
