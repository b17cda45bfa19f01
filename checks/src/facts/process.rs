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
//! Each process carries its network namespace (the device and inode of
//! `/proc/PID/ns/net`), so a check can tell this node's daemons from those
//! of another node or container sharing the machine's `/proc`.
//!
//! Only the command lines of the processes asked about are kept, and of a
//! process that is none of the names asked about (a pid file naming another
//! program) only the program and its first argument: a command line can
//! carry secrets.

use serde::{Deserialize, Serialize};

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
    /// Its network namespace, when `/proc/PID/ns/net` could be read (root,
    /// or one's own); absent in bundles recorded before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_ns: Option<NetNs>,
}

/// A network namespace as the kernel identifies it: the device and inode
/// of a `/proc/PID/ns/net` link. Two processes share a network namespace
/// exactly when both are equal (namespaces(7)); `ip netns identify` and
/// `lsns` compare the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NetNs {
    pub dev: u64,
    pub ino: u64,
}

impl std::fmt::Display for NetNs {
    /// As the link reads: `net:[4026531840]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "net:[{}]", self.ino)
    }
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
pub const INTERPRETERS: [&str; 6] = ["python3", "python", "perl", "sh", "bash", "dash"];

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
