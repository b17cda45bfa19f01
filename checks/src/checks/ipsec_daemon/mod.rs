//! `ipsec.daemon`: the IPsec daemons run when IPsec is wanted, and the IKE
//! daemon does not when it is not, read from `/proc` (never from
//! `systemctl`'s text).
//!
//! OVN's IPsec has two: ovs-monitor-ipsec (a python3 script, run by
//! `openvswitch-ipsec.service` through `ovs-ctl start-ovs-ipsec`, its pid
//! file `/var/run/openvswitch/ovs-monitor-ipsec.pid`) writes strongSwan's
//! configuration from OVSDB and restarts strongSwan, whose starter
//! (`/var/run/starter.charon.pid`) runs charon (`/var/run/charon.pid`), the
//! IKE daemon that negotiates the SAs. One distribution of Spinifex's ran
//! with `openvswitch-ipsec` inactive: geneve went out in plaintext while the
//! tests passed. With IPsec off, Spinifex stops them: a charon still
//! running holds UDP 500/4500 and may keep SAs.
//!
//! Each daemon is found by name in `/proc` (charon's path differs between
//! distributions; ovs-monitor-ipsec by its command line), and each pid file
//! is followed to its process: one whose process is gone, or is another
//! program (a pid reused), is named. Only daemons in the doctor's own
//! network namespace are this node's: on a machine running several nodes
//! in namespaces (the kernel lab) or containers, all sharing one `/proc`,
//! another node's charon negotiates nothing for this one, so it is neither
//! counted as running here nor judged as running with IPsec off (the
//! evidence lists it). Before `--for enable-ipsec`, what
//! matters is that the programs are installed where the distribution puts
//! them.
//!
//! [`gather`] reads the facts through the host seam; [`analyse`] judges
//! them (pure); `words` says it.

mod analyse;
#[cfg(test)]
mod tests;
mod words;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::facts::process::{parse_pid_file, NetNs, ProcessInfo};
use crate::facts::ProbeError;
use crate::finding::{Finding, SkipReason};
use crate::host::HostRef;
use crate::metrics::{MetricDef, MetricType, Series};
use crate::settings::Preflight;

pub use analyse::{analyse, Problem};

pub struct IpsecDaemon;

crate::kinds! {
    /// What `ipsec.daemon` can say, per daemon and pid file and for the check.
    pub enum IpsecDaemonKind for "ipsec.daemon" {
        /// IPsec wanted: ovs-monitor-ipsec and charon run; not wanted: no IKE daemon runs; before enable-ipsec: the daemons are installed.
        Ok = pass("ok"),
        /// IPsec is wanted but one of its daemons is not running: without charon nothing negotiates IKE, and geneve goes out in clear or is dropped while the control plane says it is encrypted; charon without ovs-monitor-ipsec still negotiates the tunnels it was last configured for, but no tunnel gets configured for a chassis added since.
        NotRunning = fail("not-running"),
        /// An IKE daemon (charon) runs although IPsec is not wanted: it holds UDP 500/4500 and may keep SAs and policies that encrypt or drop geneve.
        IkeDaemonRunning = fail("ike-daemon-running"),
        /// A program IPsec needs is not installed where this distribution puts it (ovs-monitor-ipsec, the ipsec command, the starter or charon).
        NotInstalled = fail("not-installed"),
        /// ovs-monitor-ipsec runs although IPsec is not wanted (Spinifex masks openvswitch-ipsec then): while ipsec_encapsulation is set it starts charon again.
        MonitorRunning = warn("monitor-running"),
        /// A daemon's pid file names a process that is gone: the daemon crashed or was killed without cleaning up, and its unit's PIDFile= reads a dead pid.
        StalePidFile = warn("stale-pid-file"),
        /// A daemon's pid file names a live process that is another program (its pid was reused): whatever stops the daemon by its pid file signals that program.
        PidFileOtherProgram = warn("pid-file-other-program"),
    }
}

static DECLARED: Declared = Declared::of::<IpsecDaemonKind, IpsecDaemonEvidence>();

/// One of the daemons.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Daemon {
    /// ovs-monitor-ipsec.
    OvsMonitorIpsec,
    /// strongSwan's starter, which runs charon.
    Starter,
    /// charon, the IKE daemon.
    Charon,
}

impl Daemon {
    pub const ALL: [Daemon; 3] = [Daemon::OvsMonitorIpsec, Daemon::Starter, Daemon::Charon];

    /// How `/proc` knows it ([`crate::facts::process`]).
    pub fn name(self) -> &'static str {
        match self {
            Daemon::OvsMonitorIpsec => "ovs-monitor-ipsec",
            Daemon::Starter => "starter",
            Daemon::Charon => "charon",
        }
    }

    /// Its pid file.
    pub fn pid_file(self) -> &'static str {
        match self {
            Daemon::OvsMonitorIpsec => "/var/run/openvswitch/ovs-monitor-ipsec.pid",
            Daemon::Starter => "/var/run/starter.charon.pid",
            Daemon::Charon => "/var/run/charon.pid",
        }
    }

    /// Where distributions install it: Debian and Ubuntu first, then
    /// Fedora, RHEL and SUSE.
    pub fn programs(self) -> &'static [&'static str] {
        match self {
            Daemon::OvsMonitorIpsec => &["/usr/share/openvswitch/scripts/ovs-monitor-ipsec"],
            Daemon::Starter => &[
                "/usr/lib/ipsec/starter",
                "/usr/libexec/ipsec/starter",
                "/usr/libexec/strongswan/starter",
            ],
            Daemon::Charon => &[
                "/usr/lib/ipsec/charon",
                "/usr/libexec/ipsec/charon",
                "/usr/libexec/strongswan/charon",
            ],
        }
    }
}

/// The `ipsec` command ovs-monitor-ipsec runs (`ipsec restart`, `ipsec
/// update`), at the one path it runs it from.
pub const IPSEC_COMMAND: &str = "/usr/sbin/ipsec";

/// The names scanned for in `/proc`: the daemons, and charon-systemd (the
/// IKE daemon of swanctl setups), which must not run either when IPsec is
/// not wanted.
pub const SCANNED: [&str; 3] = ["ovs-monitor-ipsec", "charon", "charon-systemd"];

/// What the check judges against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// IPsec is wanted: the daemons must run.
    Wanted,
    /// IPsec is not wanted: charon must not run.
    NotWanted,
    /// `--for enable-ipsec`: the daemons must be installed.
    EnableIpsec,
}

/// A pid file and what it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PidFileState {
    Absent,
    /// Not ours to read, or another failure.
    Unreadable(String),
    /// Its text is no pid.
    Garbage(String),
    /// No process has that pid.
    Gone(i32),
    /// A process has it (which may be another program, or a zombie).
    Names(ProcessInfo),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PidFile {
    pub daemon: Daemon,
    pub path: PathBuf,
    pub state: PidFileState,
}

/// Everything `ipsec.daemon` judges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonFacts {
    pub mode: Mode,
    pub pid_files: Vec<PidFile>,
    /// The processes known by one of [`SCANNED`] (or why /proc could not
    /// be listed).
    pub processes: Result<Vec<ProcessInfo>, String>,
    /// Where each program was found (None: at none of its paths).
    pub installed: Vec<(String, Option<PathBuf>)>,
    /// The doctor's own network namespace (None: the kernel has no
    /// network namespaces, so every process shares the one there is).
    pub net_ns: Option<NetNs>,
}

impl DaemonFacts {
    /// Is `p` in this node's network namespace? A process whose namespace
    /// could not be read (not root) is taken to be.
    pub fn here(&self, p: &ProcessInfo) -> bool {
        match (self.net_ns, p.net_ns) {
            (Some(own), Some(its)) => own == its,
            _ => true,
        }
    }
}

/// One daemon as the evidence shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonEvidence {
    pub daemon: Daemon,
    pub pid_file: String,
    /// `absent`, `unreadable`, `garbage`, `gone`, `running` (names the
    /// daemon), `other-program`, `zombie`, `other-net-ns` (names the
    /// daemon running in another network namespace: another node's).
    pub pid_file_state: String,
    pub pid_file_pid: Option<i32>,
    /// The program the pid file's process runs, when it is another.
    pub pid_file_program: Option<String>,
    /// The live processes known by its name, in this node's network
    /// namespace.
    pub running_pids: Vec<i32>,
    /// The live processes known by its name in other network namespaces
    /// (other nodes' or containers'): not this node's.
    pub other_net_ns_pids: Vec<i32>,
}

/// What `ipsec.daemon` read and judged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpsecDaemonEvidence {
    pub mode: Mode,
    /// The doctor's network namespace, as `/proc/self/ns/net` reads
    /// (`net:[INODE]`); null on a kernel without network namespaces.
    pub net_ns: Option<String>,
    pub daemons: Vec<DaemonEvidence>,
    /// charon-systemd processes (swanctl's IKE daemon).
    pub charon_systemd_pids: Vec<i32>,
    /// Each program and where it was found (null: not installed).
    pub installed: std::collections::BTreeMap<String, Option<String>>,
}

static RUNNING: MetricDef = MetricDef {
    name: "spx_doctor_ipsec_daemon_running",
    help: "1 when the IPsec daemon runs on this node (daemon=ovs-monitor-ipsec, starter, charon), else 0.",
    kind: MetricType::Gauge,
    labels: &["daemon"],
};

impl Evidence for IpsecDaemonEvidence {
    const METRICS: &'static [&'static MetricDef] = &[&RUNNING];
    fn series(&self) -> Vec<Series> {
        self.daemons
            .iter()
            .map(|d| {
                Series::labelled(
                    &RUNNING,
                    vec![d.daemon.name().to_owned()],
                    if d.running_pids.is_empty() { 0.0 } else { 1.0 },
                )
            })
            .collect()
    }
}

impl Check for IpsecDaemon {
    fn id(&self) -> &'static str {
        "ipsec.daemon"
    }

    fn title(&self) -> &'static str {
        "ovs-monitor-ipsec and charon run when IPsec is wanted, charon does not when it is not"
    }

    fn explain(&self) -> &'static str {
        "Reads /proc, never systemctl's text: every process known as ovs-monitor-ipsec (a \
         python3 script, known by its command line), charon (by name, wherever the \
         distribution installs it) or charon-systemd, and the pid files \
         /var/run/openvswitch/ovs-monitor-ipsec.pid, /var/run/starter.charon.pid and \
         /var/run/charon.pid, each followed to its process. Only processes in the doctor's \
         own network namespace (/proc/PID/ns/net equal to /proc/self/ns/net, by device and \
         inode) count: on a machine running several nodes in network namespaces or \
         containers, another node's charon is not this node's.\n\
         \n\
         IPsec wanted (ipsec_enabled and more than one node): ovs-monitor-ipsec and charon \
         must run, else a fail. Not wanted: charon (or charon-systemd) running is a fail, \
         ovs-monitor-ipsec running a warning. A pid file whose process is gone, or is another \
         program (a reused pid), is named. With --for enable-ipsec: ovs-monitor-ipsec, the \
         ipsec command, the starter and charon must be installed at this distribution's paths \
         (Debian: /usr/share/openvswitch/scripts/ovs-monitor-ipsec, /usr/sbin/ipsec, \
         /usr/lib/ipsec/starter, /usr/lib/ipsec/charon).\n\
         \n\
         Why: ovs-monitor-ipsec turns OVN's tunnels into strongSwan connections and charon \
         negotiates the SAs. One distribution ran with openvswitch-ipsec inactive: geneve \
         went out in plaintext while every test passed. With IPsec off, a charon left \
         running holds UDP 500/4500 and may keep SAs and policies that encrypt or drop \
         geneve.\n\
         \n\
         Fix: `systemctl restart openvswitch-ipsec` (ovs-ctl start-ovs-ipsec, which restarts \
         strongSwan); with IPsec off, `systemctl mask --now openvswitch-ipsec` and `ipsec \
         stop`; install the packages the finding names."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let facts = match gather(ctx) {
            Ok(f) => f,
            Err(f) => return f,
        };
        words::finding(&facts, &analyse(&facts))
    }
}

fn mode(ctx: &Ctx) -> Result<Mode, Finding> {
    let expect = ctx.expectations()?;
    if ctx.opts.profile == Some(Preflight::EnableIpsec) {
        if expect.node_count <= 1 {
            return Err(Finding::skip(SkipReason::NotApplicable(
                "a single-node cluster encrypts no geneve: IPsec is never used".into(),
            )));
        }
        return Ok(Mode::EnableIpsec);
    }
    Ok(if expect.ipsec_wanted {
        Mode::Wanted
    } else {
        Mode::NotWanted
    })
}

fn pid_file(host: HostRef<'_>, daemon: Daemon) -> PidFile {
    let path = Path::new(daemon.pid_file());
    let state = match host.read_file(path) {
        Err(ProbeError::NotFound(_)) => PidFileState::Absent,
        Err(e) => PidFileState::Unreadable(e.to_string()),
        Ok(text) => match parse_pid_file(&text) {
            Err(e) => PidFileState::Garbage(e),
            Ok(pid) => match host.process(pid, &[daemon.name()]) {
                Ok(p) => PidFileState::Names(p),
                Err(ProbeError::NotFound(_)) => PidFileState::Gone(pid),
                Err(e) => PidFileState::Unreadable(format!("process {pid}: {e}")),
            },
        },
    };
    PidFile {
        daemon,
        path: path.to_owned(),
        state,
    }
}

/// Read everything `ipsec.daemon` judges.
pub fn gather(ctx: &Ctx) -> Result<DaemonFacts, Finding> {
    let mode = mode(ctx)?;
    let host = ctx.host();
    let net_ns = match host.net_ns() {
        Ok(ns) => Some(ns),
        Err(ProbeError::NotFound(_)) => None,
        Err(e) => return Err(e.into()),
    };
    let pid_files = Daemon::ALL.iter().map(|d| pid_file(host, *d)).collect();
    let processes = host.processes_named(&SCANNED).map_err(|e| e.to_string());
    let mut installed: Vec<(String, Option<PathBuf>)> = Daemon::ALL
        .iter()
        .map(|d| {
            let found = d
                .programs()
                .iter()
                .map(PathBuf::from)
                .find(|p| host.exists(p));
            (d.name().to_owned(), found)
        })
        .collect();
    let ipsec = PathBuf::from(IPSEC_COMMAND);
    installed.push(("ipsec".to_owned(), host.exists(&ipsec).then_some(ipsec)));
    Ok(DaemonFacts {
        mode,
        pid_files,
        processes,
        installed,
        net_ns,
    })
}
