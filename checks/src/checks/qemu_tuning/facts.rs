//! What `qemu.tuning` reads about the host and each QEMU process: the
//! command line, the taps it names, the descriptors it holds, QMP.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::ctx::Ctx;
use crate::facts::qemu::host::{ProcessFds, TapFacts};
use crate::facts::qemu::process::Unreadable;
use crate::facts::qemu::qmp::{self, QmpFacts};
use crate::facts::qemu::QemuCommandLine;
use crate::facts::ProbeError;
use crate::read::qemu as host;
use crate::targets::peers::UnderlayFamily;

/// What was read about one QEMU process.
#[derive(Clone, Debug)]
pub struct InstanceFacts {
    pub pid: i32,
    pub cmdline: Result<QemuCommandLine, String>,
    /// Host-side facts of each tap named on the command line (`ifname=`).
    pub taps: BTreeMap<String, Result<TapFacts, TapError>>,
    /// The tap queues and vhost-net descriptors the process holds.
    pub fds: Result<ProcessFds, String>,
    /// One entry per QMP unix socket on the command line.
    pub qmp: Vec<(PathBuf, Result<QmpFacts, QmpFailure>)>,
}

/// Why a QMP monitor told us nothing. A monitor we may not open is a
/// privilege matter (skip); one that does not answer is an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QmpFailure {
    pub message: String,
    pub denied: bool,
}

impl std::fmt::Display for QmpFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<&str> for QmpFailure {
    fn from(message: &str) -> QmpFailure {
        QmpFailure {
            message: message.to_owned(),
            denied: false,
        }
    }
}

impl From<qmp::QmpError> for QmpFailure {
    fn from(e: qmp::QmpError) -> QmpFailure {
        QmpFailure {
            denied: matches!(e, qmp::QmpError::PermissionDenied { .. }),
            message: e.to_string(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TapError {
    /// Not in this network namespace's sysfs.
    NotFound,
    Other(String),
}

#[derive(Clone, Debug)]
pub struct HostFacts {
    pub vhost_net: bool,
    pub instances: Vec<InstanceFacts>,
    pub unreadable: Vec<Unreadable>,
    /// The family host_mtu was judged for, and how it is known (read only
    /// when there are guests and a config).
    pub underlay_family: Option<UnderlayFamily>,
}

/// Read every QEMU process, its taps and its QMP monitors. The monitors are
/// asked concurrently, so monitors that never answer cost one probe
/// timeout in all, not one each.
pub fn gather(ctx: &Ctx) -> Result<HostFacts, ProbeError> {
    let probe = ctx.host();
    let discovery = probe.qemu_processes()?;
    let mut instances = Vec::new();
    for proc in discovery.found {
        let cmdline = QemuCommandLine::parse(&proc.argv).map_err(|e| e.to_string());
        let mut taps = BTreeMap::new();
        if let Ok(cl) = &cmdline {
            for netdev in &cl.netdevs {
                let Some(ifname) = netdev.get("ifname") else {
                    continue;
                };
                let facts = match host::tap(probe, ifname) {
                    Ok(t) => Ok(t),
                    Err(ProbeError::NotFound(_)) => Err(TapError::NotFound),
                    Err(e) => Err(TapError::Other(e.to_string())),
                };
                taps.insert(ifname.to_owned(), facts);
            }
        }
        instances.push(InstanceFacts {
            pid: proc.pid,
            cmdline,
            taps,
            fds: probe.process_fds(proc.pid).map_err(|e| e.to_string()),
            qmp: Vec::new(),
        });
    }
    let deadline = std::time::Instant::now() + ctx.bounded(ctx.opts.probe_timeout);
    std::thread::scope(|scope| {
        for instance in &mut instances {
            let Ok(cl) = &instance.cmdline else { continue };
            let sockets: Vec<PathBuf> = cl
                .qmp_sockets()
                .into_iter()
                .filter(|s| s.server)
                .map(|s| s.path)
                .collect();
            let qmp = &mut instance.qmp;
            scope.spawn(move || {
                for path in sockets {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    let answer = probe.qmp(&path, left).map_err(QmpFailure::from);
                    qmp.push((path, answer));
                }
            });
        }
    });
    Ok(HostFacts {
        vhost_net: host::vhost_net_present(probe),
        instances,
        unreadable: discovery.unreadable,
        underlay_family: None,
    })
}
