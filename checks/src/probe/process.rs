//! Processes as facts, read from `/proc` (never from `ps` or `systemctl`):
//! one process by pid (a pid file's), or every process known by one of a
//! few names (a daemon with no pid file, or another copy of it).
//!
//! A process is known by a name when its command name (`comm`, the
//! executable's name cut to 15 bytes) is that name, or the program its
//! command line runs is: `argv[0]`, or for an interpreter (`python3`,
//! `perl`, `sh`…) the script it runs, `argv[1]`. So `charon` is found
//! wherever its distribution installs it, and ovs-monitor-ipsec, a python3
//! script whose `comm` is `ovs-monitor-ips`, by its command line.
//!
//! Only the command lines of the processes asked about are kept, and of a
//! process that is none of the names asked about (a pid file naming another
//! program) only the program and its first argument: a command line can
//! carry secrets.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::facts::ProbeError;
use crate::probe::qemu::process::split_cmdline;

/// One process, as `/proc/PID` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    pub pid: i32,
    /// `/proc/PID/comm`.
    pub comm: String,
    /// `/proc/PID/cmdline`, split on NUL (cut to its program and first
    /// argument for a process of another name than those asked about).
    pub argv: Vec<String>,
    /// `/proc/PID/exe`, when it could be read (root, or one's own).
    #[serde(default)]
    pub exe: Option<String>,
    /// The state letter of `/proc/PID/stat`: `Z` is a zombie, which runs
    /// nothing.
    pub state: char,
}

impl ProcessInfo {
    /// The program it runs, for messages: the script of an interpreter,
    /// else `argv[0]`, else its command name.
    pub fn program(&self) -> String {
        program_words(&self.argv)
            .last()
            .map(|w| (*w).to_owned())
            .unwrap_or_else(|| self.comm.clone())
    }

    /// Known by `name` (see the module documentation).
    pub fn is_named(&self, name: &str) -> bool {
        is_named(&self.comm, &self.argv, name)
    }

    /// Alive: anything but a zombie (or a dead task still listed).
    pub fn is_running(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Interpreters whose first argument is the program that runs.
const INTERPRETERS: [&str; 6] = ["python3", "python", "perl", "sh", "bash", "dash"];

fn base(word: &str) -> &str {
    let word = word.strip_suffix(" (deleted)").unwrap_or(word);
    word.rsplit('/').next().unwrap_or(word)
}

/// `argv[0]`, and `argv[1]` too when `argv[0]` is an interpreter
/// (`python3.11` counts as `python3`).
fn program_words(argv: &[String]) -> Vec<&str> {
    let mut words = Vec::new();
    if let Some(first) = argv.first() {
        words.push(first.as_str());
        let b = base(first);
        let interpreter = INTERPRETERS
            .iter()
            .any(|i| b == *i || (b.starts_with(i) && b[i.len()..].starts_with('.')));
        if interpreter {
            // The first word that is not an option, unless the program
            // comes from an option (`python3 -c CODE`, `-m MODULE`).
            for w in argv.iter().skip(1) {
                if matches!(w.as_str(), "-c" | "-m") {
                    break;
                }
                if !w.starts_with('-') {
                    words.push(w.as_str());
                    break;
                }
            }
        }
    }
    words
}

/// Is the process of command name `comm` and command line `argv` known by
/// `name`?
pub fn is_named(comm: &str, argv: &[String], name: &str) -> bool {
    // comm is the name cut to 15 bytes (TASK_COMM_LEN - 1).
    let cut = &name[..name.len().min(15)];
    comm == cut || program_words(argv).iter().any(|w| base(w) == name)
}

/// A pid file's text as the pid it names: one decimal number, whitespace
/// around it allowed.
pub fn parse_pid_file(text: &str) -> Result<i32, String> {
    let t = text.trim();
    match t.parse::<i32>() {
        Ok(pid) if pid > 0 => Ok(pid),
        _ => Err(format!(
            "holds {:?}, not a pid",
            t.chars().take(40).collect::<String>()
        )),
    }
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
    let all = procfs::process::all_processes()
        .map_err(|e| ProbeError::Other(format!("listing /proc: {e}")))?;
    let mut out = Vec::new();
    for p in all.flatten() {
        // The command name first (one small read): only a process of one
        // of the names, or an interpreter that may run one, is read whole.
        let comm = std::fs::read_to_string(format!("/proc/{}/comm", p.pid())).unwrap_or_default();
        let comm = comm.trim_end_matches('\n');
        let maybe = names.iter().any(|n| comm == &n[..n.len().min(15)])
            || INTERPRETERS
                .iter()
                .any(|i| comm == *i || (comm.starts_with(i) && comm[i.len()..].starts_with('.')));
        if !maybe {
            continue;
        }
        match read_process(p.pid(), Some(names)) {
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
        assert!(matches!(
            by_pid(i32::MAX, &[]),
            Err(ProbeError::NotFound(_))
        ));
    }
}
