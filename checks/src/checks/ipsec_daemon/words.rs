//! How `ipsec.daemon` says what [`super::analyse`] found.

use std::collections::BTreeMap;

use super::analyse::{Analysis, Problem};
use super::{
    Daemon, DaemonEvidence, DaemonFacts, IpsecDaemonEvidence, IpsecDaemonKind, Mode, PidFileState,
};
use crate::finding::{Finding, Subject};
use crate::kind::most_severe;
use crate::spinifex;

fn kind(p: &Problem) -> IpsecDaemonKind {
    match p {
        Problem::NotRunning { .. } => IpsecDaemonKind::NotRunning,
        Problem::IkeDaemonRunning { .. } => IpsecDaemonKind::IkeDaemonRunning,
        Problem::MonitorRunning { .. } => IpsecDaemonKind::MonitorRunning,
        Problem::NotInstalled { .. } => IpsecDaemonKind::NotInstalled,
        Problem::StalePidFile { .. } => IpsecDaemonKind::StalePidFile,
        Problem::PidFileOtherProgram { .. } => IpsecDaemonKind::PidFileOtherProgram,
    }
}

fn pids(p: &[i32]) -> String {
    p.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn subject(p: &Problem) -> String {
    match p {
        Problem::NotRunning { daemon } => daemon.name().to_owned(),
        Problem::IkeDaemonRunning { .. } => "charon".to_owned(),
        Problem::MonitorRunning { .. } => Daemon::OvsMonitorIpsec.name().to_owned(),
        Problem::NotInstalled { program, .. } => program.clone(),
        Problem::StalePidFile { path, .. } | Problem::PidFileOtherProgram { path, .. } => {
            path.display().to_string()
        }
    }
}

/// Why `d` is not running here, in brackets: no pid file, or the copies
/// running in other network namespaces (other nodes').
fn not_running_said(facts: &DaemonFacts, a: &Analysis, d: Daemon) -> String {
    let mut why = Vec::new();
    // A pid file naming a dead or another process has its own sentence.
    if let Some(f) = facts.pid_files.iter().find(|f| f.daemon == d) {
        if f.state == PidFileState::Absent {
            why.push(format!("no {}", f.path.display()));
        }
    }
    let away = a.elsewhere.get(&d).map(Vec::as_slice).unwrap_or_default();
    match away {
        [] => {}
        [one] => why.push(format!(
            "pid {one} runs in another network namespace, another node's"
        )),
        _ => why.push(format!(
            "pids {} run in other network namespaces, other nodes'",
            pids(away)
        )),
    }
    if why.is_empty() {
        String::new()
    } else {
        format!(" ({})", why.join("; "))
    }
}

fn said(p: &Problem, facts: &DaemonFacts, a: &Analysis) -> String {
    match p {
        Problem::NotRunning { daemon } => format!(
            "{} is not running{}",
            daemon.name(),
            not_running_said(facts, a, *daemon)
        ),
        Problem::IkeDaemonRunning { processes } => format!(
            "an IKE daemon runs although IPsec is not wanted: {}",
            processes
                .iter()
                .map(|(pid, prog)| format!("{prog} (pid {pid})"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Problem::MonitorRunning { pids: p } => format!(
            "ovs-monitor-ipsec runs (pid {}) although IPsec is not wanted",
            pids(p)
        ),
        Problem::NotInstalled { program, looked } => {
            format!(
                "{program} is not installed (looked at {})",
                looked.join(", ")
            )
        }
        Problem::StalePidFile { path, pid, .. } => {
            format!("{} names pid {pid}, which is gone", path.display())
        }
        Problem::PidFileOtherProgram {
            path, pid, program, ..
        } => format!(
            "{} names pid {pid}, which is {program}, not {}",
            path.display(),
            p_daemon(p)
        ),
    }
}

fn p_daemon(p: &Problem) -> &'static str {
    match p {
        Problem::PidFileOtherProgram { daemon, .. } | Problem::StalePidFile { daemon, .. } => {
            daemon.name()
        }
        _ => "",
    }
}

fn restart() -> String {
    format!(
        "systemctl restart {}   # ovs-ctl start-ovs-ipsec: ovs-monitor-ipsec, which restarts strongSwan (the starter and charon)",
        spinifex::OVS_IPSEC_UNIT
    )
}

fn fixes(a: &Analysis) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: String| {
        if !out.contains(&s) {
            out.push(s);
        }
    };
    if a.problems
        .iter()
        .any(|p| matches!(p, Problem::NotInstalled { .. }))
    {
        push("apt-get install --no-install-recommends openvswitch-ipsec strongswan-starter strongswan-charon libstrongswan-standard-plugins   # Debian and Ubuntu (Fedora and RHEL: dnf install openvswitch-ipsec strongswan)".to_owned());
    }
    for p in &a.problems {
        match p {
            Problem::StalePidFile { path, .. } | Problem::PidFileOtherProgram { path, .. } => {
                push(format!(
                    "rm {}   # it names no {} (its unit would read or signal a wrong pid)",
                    path.display(),
                    p_daemon(p)
                ))
            }
            Problem::NotRunning { .. } => {
                push(restart());
                push(format!(
                    "if it does not stay up: `journalctl -b -u {}` and /var/log/openvswitch/ovs-monitor-ipsec.log say why",
                    spinifex::OVS_IPSEC_UNIT
                ));
            }
            Problem::IkeDaemonRunning { processes } => {
                push(format!(
                    "systemctl mask --now {}   # what Spinifex does with IPsec off",
                    spinifex::OVS_IPSEC_UNIT
                ));
                push("ipsec stop   # the starter stops charon".to_owned());
                if processes.iter().any(|(_, p)| p.ends_with("charon-systemd")) {
                    push("systemctl mask --now strongswan   # charon-systemd".to_owned());
                }
            }
            Problem::MonitorRunning { .. } => push(format!(
                "systemctl mask --now {}   # what Spinifex does with IPsec off",
                spinifex::OVS_IPSEC_UNIT
            )),
            Problem::NotInstalled { .. } => {}
        }
    }
    if !out.is_empty() {
        out.push(format!(
            "then `{} --check ipsec.daemon` must pass",
            spinifex::doctor_command()
        ));
    }
    out
}

fn evidence(facts: &DaemonFacts, a: &Analysis) -> IpsecDaemonEvidence {
    let daemons = Daemon::ALL
        .iter()
        .map(|d| {
            let f = facts.pid_files.iter().find(|f| f.daemon == *d);
            let (state, pid, program) = match f.map(|f| &f.state) {
                None | Some(PidFileState::Absent) => ("absent", None, None),
                Some(PidFileState::Unreadable(_)) => ("unreadable", None, None),
                Some(PidFileState::Garbage(_)) => ("garbage", None, None),
                Some(PidFileState::Gone(pid)) => ("gone", Some(*pid), None),
                Some(PidFileState::Names(p)) if !p.is_named(d.name()) => {
                    ("other-program", Some(p.pid), Some(p.program()))
                }
                Some(PidFileState::Names(p)) if !p.is_running() => ("zombie", Some(p.pid), None),
                Some(PidFileState::Names(p)) if !facts.here(p) => {
                    ("other-net-ns", Some(p.pid), None)
                }
                Some(PidFileState::Names(p)) => ("running", Some(p.pid), None),
            };
            DaemonEvidence {
                daemon: *d,
                pid_file: d.pid_file().to_owned(),
                pid_file_state: state.to_owned(),
                pid_file_pid: pid,
                pid_file_program: program,
                running_pids: a.running.get(d).cloned().unwrap_or_default(),
                other_net_ns_pids: a.elsewhere.get(d).cloned().unwrap_or_default(),
            }
        })
        .collect();
    IpsecDaemonEvidence {
        mode: facts.mode,
        net_ns: facts.net_ns.map(|ns| ns.to_string()),
        daemons,
        charon_systemd_pids: a.charon_systemd.clone(),
        installed: facts
            .installed
            .iter()
            .map(|(p, at)| (p.clone(), at.as_ref().map(|a| a.display().to_string())))
            .collect::<BTreeMap<_, _>>(),
    }
}

fn running_said(a: &Analysis) -> String {
    let parts: Vec<String> = [Daemon::OvsMonitorIpsec, Daemon::Starter, Daemon::Charon]
        .iter()
        .map(|d| {
            let p = &a.running[d];
            if p.is_empty() {
                format!("{} not running", d.name())
            } else {
                format!("{} (pid {})", d.name(), pids(p))
            }
        })
        .collect();
    parts.join(", ")
}

/// What follows, with IPsec wanted, from the daemons that are not running,
/// as the summary's lead: only what the one missing says. Without charon
/// nothing negotiates IKE; charon without ovs-monitor-ipsec still
/// negotiates the tunnels it was last configured for, but nothing writes
/// its configuration any more.
fn down_said(a: &Analysis) -> String {
    let down = |d: Daemon| a.problems.contains(&Problem::NotRunning { daemon: d });
    match (down(Daemon::OvsMonitorIpsec), down(Daemon::Charon)) {
        (true, false) => format!(
            "IPsec is wanted and charon runs (pid {}), but ovs-monitor-ipsec does not: charon still negotiates the tunnels it was last configured for, and no tunnel gets configured for a chassis added since: ",
            pids(&a.running[&Daemon::Charon])
        ),
        (false, true) => "IPsec is wanted and ovs-monitor-ipsec runs, but no charon negotiates IKE here (no SA is made or rekeyed: geneve goes out in clear or is dropped): ".to_owned(),
        _ => "IPsec is wanted, but nothing negotiates it here (geneve goes out in clear or is dropped): ".to_owned(),
    }
}

/// The finding for `facts`, as `a` judged them.
pub fn finding(facts: &DaemonFacts, a: &Analysis) -> Finding {
    if let Err(e) = &facts.processes {
        return Finding::probe_failed(format!("the processes could not be listed: {e}"));
    }
    let evidence = evidence(facts, a);
    let subjects: Vec<Subject> = a
        .problems
        .iter()
        .map(|p| Subject::new(kind(p), subject(p), said(p, facts, a)))
        .collect();
    let finding = match most_severe(a.problems.iter().map(kind)) {
        Some(k) => {
            let text: Vec<String> = a.problems.iter().map(|p| said(p, facts, a)).collect();
            let lead = match facts.mode {
                Mode::Wanted if k == IpsecDaemonKind::NotRunning => down_said(a),
                Mode::EnableIpsec => "before enabling IPsec: ".to_owned(),
                _ => String::new(),
            };
            Finding::new(k, format!("{lead}{}", text.join("; "))).fixes(fixes(a))
        }
        None => {
            let installed: Vec<String> = facts
                .installed
                .iter()
                .filter_map(|(_, at)| at.as_ref().map(|p| p.display().to_string()))
                .collect();
            let summary = match facts.mode {
                Mode::Wanted => format!("IPsec is wanted and its daemons run: {}", running_said(a)),
                Mode::NotWanted => format!(
                    "IPsec is not wanted and no IKE daemon runs ({})",
                    running_said(a)
                ),
                Mode::EnableIpsec => format!(
                    "the IPsec daemons are installed ({}); {}",
                    installed.join(", "),
                    running_said(a)
                ),
            };
            Finding::new(IpsecDaemonKind::Ok, summary)
        }
    };
    finding.evidence(&evidence).subjects(subjects)
}
