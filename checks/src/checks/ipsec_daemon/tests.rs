//! The judgement on recorded `/proc` facts (the real daemons are in
//! tests/ipsec_daemon.rs), every verdict checked against the schema.

use super::{
    analyse, words, Daemon, DaemonFacts, IpsecDaemonEvidence, Mode, PidFile, PidFileState,
    IPSEC_COMMAND,
};
use crate::evidence::Evidence;
use crate::facts::process::{NetNs, ProcessInfo};
use crate::finding::{Finding, Status};

/// The doctor's network namespace in these facts, and another node's.
const HERE: NetNs = NetNs {
    dev: 4,
    ino: 4026531840,
};
const THERE: NetNs = NetNs {
    dev: 4,
    ino: 4026532301,
};

fn process(pid: i32, comm: &str, argv: &[&str], state: char) -> ProcessInfo {
    ProcessInfo {
        pid,
        comm: comm.to_owned(),
        argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        exe: None,
        state,
        net_ns: Some(HERE),
    }
}

fn monitor(pid: i32) -> ProcessInfo {
    // As `ovs-ctl start-ovs-ipsec` runs it (Debian's openvswitch-ipsec 3.1).
    process(
        pid,
        "ovs-monitor-ips",
        &[
            "/usr/bin/python3",
            "/usr/share/openvswitch/scripts/ovs-monitor-ipsec",
            "--pidfile=/var/run/openvswitch/ovs-monitor-ipsec.pid",
            "--ike-daemon=strongswan",
            "--log-file",
            "--detach",
            "unix:/var/run/openvswitch/db.sock",
        ],
        'S',
    )
}

fn charon(pid: i32, state: char) -> ProcessInfo {
    process(pid, "charon", &["/usr/lib/ipsec/charon"], state)
}

fn facts(mode: Mode, processes: Vec<ProcessInfo>) -> DaemonFacts {
    let pid_files = Daemon::ALL
        .iter()
        .map(|d| PidFile {
            daemon: *d,
            path: d.pid_file().into(),
            state: processes
                .iter()
                .find(|p| p.is_named(d.name()))
                .map_or(PidFileState::Absent, |p| PidFileState::Names(p.clone())),
        })
        .collect();
    DaemonFacts {
        mode,
        pid_files,
        processes: Ok(processes),
        installed: Daemon::ALL
            .iter()
            .map(|d| (d.name().to_owned(), Some(d.programs()[0].into())))
            .chain([("ipsec".to_owned(), Some(IPSEC_COMMAND.into()))])
            .collect(),
        net_ns: Some(HERE),
    }
}

fn judge(f: &DaemonFacts) -> Finding {
    crate::schema_check::valid("ipsec.daemon", words::finding(f, &analyse(f)))
}

#[test]
fn both_daemons_running_pass_and_a_zombie_charon_is_not_running() {
    let f = judge(&facts(Mode::Wanted, vec![monitor(100), charon(200, 'S')]));
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    let e: IpsecDaemonEvidence = f.evidence_as().unwrap();
    let running: Vec<f64> = e.series().iter().map(|s| s.value).collect();
    assert_eq!(running, [1.0, 0.0, 1.0]);
    let f = judge(&facts(Mode::Wanted, vec![monitor(100), charon(200, 'Z')]));
    assert_eq!(f.kind.name, "not-running");
    assert!(f.summary.contains("charon is not running"), "{}", f.summary);
    assert!(f.findings.iter().any(|s| s.kind.name == "stale-pid-file"));
}

#[test]
fn an_ike_daemon_with_ipsec_off_fails_whichever_it_is() {
    let f = judge(&facts(
        Mode::NotWanted,
        vec![process(
            300,
            "charon-systemd",
            &["/usr/sbin/charon-systemd"],
            'S',
        )],
    ));
    assert_eq!(f.kind.name, "ike-daemon-running");
    assert!(
        f.remediation
            .iter()
            .any(|r| r.starts_with("systemctl mask --now strongswan")),
        "{:?}",
        f.remediation
    );
    let f = judge(&facts(Mode::NotWanted, vec![monitor(100)]));
    assert_eq!((f.status, f.kind.name), (Status::Warn, "monitor-running"));
    assert_eq!(judge(&facts(Mode::NotWanted, vec![])).status, Status::Pass);
}

#[test]
fn before_enabling_ipsec_a_missing_program_fails_and_running_is_not_judged() {
    let mut x = facts(Mode::EnableIpsec, vec![]);
    assert_eq!(judge(&x).status, Status::Pass);
    x.installed.last_mut().unwrap().1 = None;
    let f = judge(&x);
    assert_eq!(f.kind.name, "not-installed");
    assert!(
        f.summary
            .contains("ipsec is not installed (looked at /usr/sbin/ipsec)"),
        "{}",
        f.summary
    );
    // A listing of /proc that failed is an error, never a pass.
    let mut x = facts(Mode::Wanted, vec![]);
    x.processes = Err("listing /proc: EACCES".into());
    assert_eq!(judge(&x).status, Status::Error);
}

#[test]
fn daemons_in_another_network_namespace_are_another_nodes() {
    // Two namespace nodes on one machine, one /proc: the other node's
    // ovs-monitor-ipsec and charon (and this node's pid files naming
    // them) do not make this node's IPsec run...
    let elsewhere = |mut p: ProcessInfo| {
        p.net_ns = Some(THERE);
        p
    };
    let x = facts(
        Mode::Wanted,
        vec![elsewhere(monitor(100)), elsewhere(charon(200, 'S'))],
    );
    let f = judge(&x);
    assert_eq!(f.kind.name, "not-running", "{}", f.summary);
    assert!(
        f.summary.contains(
            "ovs-monitor-ipsec is not running (pid 100 runs in another network namespace, another node's); \
             charon is not running (pid 200 runs in another network namespace, another node's)"
        ),
        "{}",
        f.summary
    );
    let e: IpsecDaemonEvidence = f.evidence_as().unwrap();
    assert_eq!(e.net_ns.as_deref(), Some("net:[4026531840]"));
    let charon_e = e
        .daemons
        .iter()
        .find(|d| d.daemon == Daemon::Charon)
        .unwrap();
    assert_eq!(charon_e.pid_file_state, "other-net-ns");
    assert_eq!(
        (charon_e.running_pids.len(), &charon_e.other_net_ns_pids[..]),
        (0, &[200][..])
    );
    assert!(e.series().iter().all(|s| s.value == 0.0));
    // ...nor, with IPsec off, is its charon this node's fault.
    let mut off = x.clone();
    off.mode = Mode::NotWanted;
    assert_eq!(judge(&off).status, Status::Pass);
    // The same processes in this node's namespace pass; one whose
    // namespace could not be read (not root) counts as this node's, and so
    // does everything on a kernel without network namespaces.
    assert_eq!(
        judge(&facts(Mode::Wanted, vec![monitor(100), charon(200, 'S')])).status,
        Status::Pass
    );
    let mut unknown = x.clone();
    for p in unknown.processes.as_mut().unwrap() {
        p.net_ns = None;
    }
    let f = judge(&unknown);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    let mut flat = x;
    flat.net_ns = None;
    assert_eq!(judge(&flat).status, Status::Pass);
}

/// Issue 36: with charon running and only ovs-monitor-ipsec gone, the
/// finding names that daemon alone and what follows from it, never
/// "nothing negotiates it".
#[test]
fn each_missing_daemon_is_said_alone_with_what_follows() {
    let f = judge(&facts(Mode::Wanted, vec![charon(200, 'S')]));
    crate::snapshot::snapshot!("ipsec.daemon", f);
    assert_eq!((f.status, f.kind.name), (Status::Fail, "not-running"));
    assert_eq!(
        f.summary,
        "IPsec is wanted and charon runs (pid 200), but ovs-monitor-ipsec does not: charon still negotiates the tunnels it was last configured for, and no tunnel gets configured for a chassis added since: ovs-monitor-ipsec is not running (no /var/run/openvswitch/ovs-monitor-ipsec.pid)"
    );
    assert!(!f.summary.contains("nothing negotiates"), "{}", f.summary);
    let f = judge(&facts(Mode::Wanted, vec![monitor(100)]));
    assert!(
        f.summary.starts_with(
            "IPsec is wanted and ovs-monitor-ipsec runs, but no charon negotiates IKE here"
        ),
        "{}",
        f.summary
    );
    assert!(
        !f.summary.contains("ovs-monitor-ipsec is not running"),
        "{}",
        f.summary
    );
    let f = judge(&facts(Mode::Wanted, vec![]));
    assert!(
        f.summary
            .starts_with("IPsec is wanted, but nothing negotiates it here"),
        "{}",
        f.summary
    );
}
