//! Processes on this machine, read from /proc.
use crate::facts::process::{is_named, NetNs, ProcessInfo, INTERPRETERS};
use crate::facts::qemu::process::split_cmdline;
use crate::facts::ProbeError;
use std::path::Path;

/// The network namespace of the process whose `/proc` directory is `dir`
/// (`stat`, which follows the namespace link).
fn net_ns_at(dir: &Path) -> Result<NetNs, ProbeError> {
    use std::os::unix::fs::MetadataExt;
    let link = dir.join("ns/net");
    let m = std::fs::metadata(&link).map_err(|e| ProbeError::from_io(&link, e))?;
    Ok(NetNs {
        dev: m.dev(),
        ino: m.ino(),
    })
}

/// The doctor's own network namespace: the node it speaks for.
pub fn own_net_ns() -> Result<NetNs, ProbeError> {
    net_ns_at(Path::new("/proc/self"))
}

fn read_process(pid: i32, names: Option<&[String]>) -> Result<ProcessInfo, ProbeError> {
    let dir = Path::new("/proc").join(pid.to_string());
    let io = |e| ProbeError::from_io(&dir, e);
    let comm = std::fs::read_to_string(dir.join("comm"))
        .map_err(io)?
        .trim_end_matches('\n')
        .to_owned();
    let mut argv = split_cmdline(&std::fs::read(dir.join("cmdline")).map_err(io)?);
    let stat = std::fs::read_to_string(dir.join("stat")).map_err(io)?;
    // `pid (comm) S ...`: the state follows the last ')'.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next())
        .unwrap_or('?');
    let exe = std::fs::read_link(dir.join("exe"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned());
    let net_ns = net_ns_at(&dir).ok();
    let asked = names.is_some_and(|names| names.iter().any(|n| is_named(&comm, &argv, n)));
    if !asked {
        argv.truncate(2);
    }
    Ok(ProcessInfo {
        pid,
        comm,
        argv,
        exe,
        state,
        net_ns,
    })
}

/// Process `pid`; `NotFound` when there is none. Its command line is kept
/// whole only when it is known by one of `names`.
pub fn by_pid(pid: i32, names: &[String]) -> Result<ProcessInfo, ProbeError> {
    read_process(pid, Some(names))
}

/// Every process known by one of `names`, by pid. Processes that end while
/// being read are passed over.
pub fn named(names: &[String]) -> Result<Vec<ProcessInfo>, ProbeError> {
    let mut out = Vec::new();
    let mut buf = Vec::with_capacity(64);
    for pid in super::pids()? {
        // The command name first (one small read): only a process of one
        // of the names, or an interpreter that may run one, is read whole.
        if super::read_into(Path::new(&format!("/proc/{pid}/comm")), &mut buf).is_err() {
            buf.clear();
        }
        let comm = std::str::from_utf8(&buf).unwrap_or_default();
        let comm = comm.trim_end_matches('\n');
        let maybe = names.iter().any(|n| comm == &n[..n.len().min(15)])
            || INTERPRETERS
                .iter()
                .any(|i| comm == *i || (comm.starts_with(i) && comm[i.len()..].starts_with('.')));
        if !maybe {
            continue;
        }
        match read_process(pid, Some(names)) {
            Ok(info) if names.iter().any(|n| info.is_named(n)) => out.push(info),
            _ => {}
        }
    }
    out.sort_by_key(|p| p.pid);
    Ok(out)
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::process::parse_pid_file;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn daemons_are_known_by_comm_or_command_line() {
        // ovs-ctl start-ovs-ipsec runs the script through its #! line.
        let monitor = words(&[
            "/usr/bin/python3",
            "/usr/share/openvswitch/scripts/ovs-monitor-ipsec",
            "--pidfile=/var/run/openvswitch/ovs-monitor-ipsec.pid",
        ]);
        assert!(is_named("ovs-monitor-ips", &monitor, "ovs-monitor-ipsec"));
        assert!(is_named("python3", &monitor, "ovs-monitor-ipsec"));
        assert!(is_named(
            "python3.11",
            &words(&["python3.11", "-u", "/x/ovs-monitor-ipsec"]),
            "ovs-monitor-ipsec"
        ));
        assert!(!is_named(
            "python3",
            &words(&["/usr/bin/python3", "/srv/app.py"]),
            "ovs-monitor-ipsec"
        ));
        // charon wherever the distribution put it.
        for path in ["/usr/lib/ipsec/charon", "/usr/libexec/strongswan/charon"] {
            assert!(is_named("charon", &words(&[path]), "charon"));
        }
        assert!(!is_named(
            "charon-systemd",
            &words(&["/usr/sbin/charon-systemd"]),
            "charon"
        ));
        assert!(!is_named(
            "python3",
            &words(&["python3", "-c", "ovs-monitor-ipsec"]),
            "ovs-monitor-ipsec"
        ));
        // A script that mentions the name as an argument is not it.
        assert!(!is_named(
            "vim",
            &words(&["vim", "ovs-monitor-ipsec"]),
            "ovs-monitor-ipsec"
        ));
    }

    #[test]
    fn pid_files_hold_one_number() {
        assert_eq!(parse_pid_file("1234\n"), Ok(1234));
        assert_eq!(parse_pid_file(" 7 "), Ok(7));
        assert!(parse_pid_file("").is_err());
        assert!(parse_pid_file("0").is_err());
        assert!(parse_pid_file("-3").is_err());
        assert!(parse_pid_file("12 34").is_err());
    }

    #[test]
    fn this_process_reads_and_a_missing_one_is_not_found() {
        let me = std::process::id() as i32;
        let p = by_pid(me, &[]).unwrap();
        assert!(p.is_running());
        assert!(p.argv.len() <= 2, "another program's command line is cut");
        // Its namespace is the one /proc/self names, and the link's inode.
        let own = own_net_ns().unwrap();
        assert_eq!(p.net_ns, Some(own));
        let link = std::fs::read_link("/proc/self/ns/net").unwrap();
        assert_eq!(link.to_string_lossy(), own.to_string());
        assert!(matches!(
            by_pid(i32::MAX, &[]),
            Err(ProbeError::NotFound(_))
        ));
    }
}
