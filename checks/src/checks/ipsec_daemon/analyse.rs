//! The judgement of `ipsec.daemon`, pure: the facts in, which daemons run
//! and what is wrong out. No words here ([`super::words`] says it).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{Daemon, DaemonFacts, Mode, PidFileState};
use crate::facts::process::ProcessInfo;

/// What is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// IPsec is wanted and `daemon` does not run.
    NotRunning { daemon: Daemon },
    /// IPsec is not wanted and IKE daemons run: (pid, program).
    IkeDaemonRunning { processes: Vec<(i32, String)> },
    /// IPsec is not wanted and ovs-monitor-ipsec runs.
    MonitorRunning { pids: Vec<i32> },
    /// `program` is at none of `looked`.
    NotInstalled {
        program: String,
        looked: Vec<&'static str>,
    },
    /// `daemon`'s pid file names `pid`, which is gone (or a zombie).
    StalePidFile {
        daemon: Daemon,
        path: PathBuf,
        pid: i32,
    },
    /// `daemon`'s pid file names `pid`, which runs `program`.
    PidFileOtherProgram {
        daemon: Daemon,
        path: PathBuf,
        pid: i32,
        program: String,
    },
}

/// Everything [`analyse`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    /// The live pids of each daemon in this node's network namespace.
    pub running: BTreeMap<Daemon, Vec<i32>>,
    /// The live pids of each daemon in other network namespaces: other
    /// nodes' (or containers'), not judged.
    pub elsewhere: BTreeMap<Daemon, Vec<i32>>,
    /// Live charon-systemd processes.
    pub charon_systemd: Vec<i32>,
    pub problems: Vec<Problem>,
}

/// Judge the daemons. `facts.processes` must have been read (the caller
/// turns a failure to list /proc into an error).
pub fn analyse(facts: &DaemonFacts) -> Analysis {
    let all = facts.processes.as_deref().unwrap_or_default();
    // Only this node's processes are judged: another network namespace's
    // charon negotiates nothing for this node.
    let (processes, others): (Vec<&ProcessInfo>, Vec<&ProcessInfo>) =
        all.iter().partition(|p| facts.here(p));
    let live = |among: &[&ProcessInfo], name: &str| -> Vec<i32> {
        among
            .iter()
            .filter(|p| p.is_named(name) && p.is_running())
            .map(|p| p.pid)
            .collect()
    };
    let mut running = BTreeMap::new();
    let mut elsewhere = BTreeMap::new();
    let mut problems = Vec::new();
    for d in Daemon::ALL {
        let (mut pids, mut away) = if d == Daemon::Starter {
            (Vec::new(), Vec::new())
        } else {
            (live(&processes, d.name()), live(&others, d.name()))
        };
        for f in facts.pid_files.iter().filter(|f| f.daemon == d) {
            match &f.state {
                PidFileState::Gone(pid) => problems.push(Problem::StalePidFile {
                    daemon: d,
                    path: f.path.clone(),
                    pid: *pid,
                }),
                PidFileState::Names(p) if !p.is_named(d.name()) => {
                    problems.push(Problem::PidFileOtherProgram {
                        daemon: d,
                        path: f.path.clone(),
                        pid: p.pid,
                        program: p.program(),
                    })
                }
                PidFileState::Names(p) if !p.is_running() => problems.push(Problem::StalePidFile {
                    daemon: d,
                    path: f.path.clone(),
                    pid: p.pid,
                }),
                // The daemon, but another node's: not this one's.
                PidFileState::Names(p) if !facts.here(p) => away.push(p.pid),
                // The starter is known only by its pid file: its name is
                // too common to look for.
                PidFileState::Names(p) if d == Daemon::Starter => pids.push(p.pid),
                _ => {}
            }
        }
        away.sort_unstable();
        away.dedup();
        running.insert(d, pids);
        elsewhere.insert(d, away);
    }
    let charon_systemd = live(&processes, "charon-systemd");

    match facts.mode {
        Mode::Wanted => {
            let down: Vec<Problem> = [Daemon::OvsMonitorIpsec, Daemon::Charon]
                .into_iter()
                .filter(|d| running[d].is_empty())
                .map(|daemon| Problem::NotRunning { daemon })
                .collect();
            problems.splice(0..0, down);
        }
        Mode::NotWanted => {
            let ike: Vec<(i32, String)> = processes
                .iter()
                .filter(|p| {
                    p.is_running() && (p.is_named("charon") || p.is_named("charon-systemd"))
                })
                .map(|p| (p.pid, p.program()))
                .collect();
            if !ike.is_empty() {
                problems.insert(0, Problem::IkeDaemonRunning { processes: ike });
            }
            let monitor = &running[&Daemon::OvsMonitorIpsec];
            if !monitor.is_empty() {
                problems.push(Problem::MonitorRunning {
                    pids: monitor.clone(),
                });
            }
        }
        Mode::EnableIpsec => {}
    }
    if facts.mode != Mode::NotWanted {
        for (program, found) in &facts.installed {
            if found.is_some() {
                continue;
            }
            let looked = Daemon::ALL
                .iter()
                .find(|d| d.name() == program)
                .map_or(vec![super::IPSEC_COMMAND], |d| d.programs().to_vec());
            problems.push(Problem::NotInstalled {
                program: program.clone(),
                looked,
            });
        }
    }
    Analysis {
        running,
        elsewhere,
        charon_systemd,
        problems,
    }
}
