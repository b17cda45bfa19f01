//! A site check's run as facts: how the plugin ended and what it wrote
//! ([`SiteRun`], what the live host answers and a bundle keeps), whether
//! its files were safe to run as root ([`secure`]), and the pure parsers of
//! its answer: a Nagios plugin's output and perfdata ([`nagios`],
//! [`perfdata`]) and the JSON protocol's object ([`answer`]). The spawn,
//! the process group or cgroup, the kill and the bounded read are
//! `live::site`'s.

pub mod answer;
pub mod nagios;
pub mod perfdata;
pub mod secure;

use serde::{Deserialize, Serialize};

pub use secure::Refusal;

/// The plugin's standard output is read up to this many bytes; one that
/// writes more is stopped, and the check says so.
pub const OUTPUT_LIMIT: usize = 64 * 1024;
/// Of its standard error, this much is kept (the rest is read and dropped).
pub const STDERR_LIMIT: usize = 4 * 1024;

/// One run of a site check's executable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SiteRun {
    pub ended: Ended,
    /// Standard output, at most [`OUTPUT_LIMIT`] bytes, as UTF-8 (a byte
    /// that is not is replaced).
    pub output: String,
    /// How many bytes of standard output were read in all.
    pub output_bytes: u64,
    /// Standard error, at most [`STDERR_LIMIT`] bytes.
    pub stderr: String,
    /// From the spawn to the end (or to giving up on it).
    pub duration_ms: u64,
    /// How the plugin was held: its own cgroup, or its process group.
    pub isolation: Isolation,
}

impl SiteRun {
    /// A run that never started (refused, or the spawn failed).
    pub fn not_started(ended: Ended) -> SiteRun {
        SiteRun {
            ended,
            output: String::new(),
            output_bytes: 0,
            stderr: String::new(),
            duration_ms: 0,
            isolation: Isolation::None,
        }
    }
}

/// How the plugin's run ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "kebab-case")]
pub enum Ended {
    /// It exited with this code.
    Exited { code: i32 },
    /// A signal it did not get from the doctor ended it (SIGSEGV, SIGABRT).
    Signaled { signal: i32, name: String },
    /// The doctor killed it (its whole process group or cgroup) when its
    /// time was up.
    TimedOut { after_ms: u64, by: TimeoutBy },
    /// It wrote more than [`OUTPUT_LIMIT`] bytes: the doctor stopped it
    /// there and killed it.
    OutputCut { limit: u64 },
    /// Killed, it was still there when the run's deadline came (in
    /// uninterruptible sleep, `D`): the run did not wait for it.
    Stuck {
        pid: i32,
        /// Its state in /proc when the doctor gave up on it (`D`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<String>,
        /// The timeout it was killed at.
        killed_after_ms: u64,
        /// It is an earlier run's, still there: this run did not start
        /// the check again (an agent would otherwise pile them up).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        earlier: bool,
    },
    /// The doctor would not run it as it is: what is wrong with which file.
    Refused { refusal: Refusal },
    /// It could not be started (no such file, not an executable format, an
    /// interpreter that is not there).
    CannotRun { error: String },
}

/// Whose time ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimeoutBy {
    /// Its own `timeout`.
    Own,
    /// The run's `--timeout` came first.
    RunDeadline,
}

/// How the plugin and everything it started were held, so that a kill
/// reaches all of them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "kebab-case")]
pub enum Isolation {
    /// Its own cgroup (v2), killed whole (`cgroup.kill`) and removed.
    Cgroup { path: String },
    /// Its own session and process group, killed whole; why not a cgroup.
    ProcessGroup { why: String },
    /// It never ran.
    None,
}

/// A signal's name: `SIGSEGV`, or `signal 64`.
pub fn signal_name(signal: i32) -> String {
    const NAMES: [(i32, &str); 15] = [
        (1, "SIGHUP"),
        (2, "SIGINT"),
        (3, "SIGQUIT"),
        (4, "SIGILL"),
        (5, "SIGTRAP"),
        (6, "SIGABRT"),
        (7, "SIGBUS"),
        (8, "SIGFPE"),
        (9, "SIGKILL"),
        (11, "SIGSEGV"),
        (13, "SIGPIPE"),
        (14, "SIGALRM"),
        (15, "SIGTERM"),
        (24, "SIGXCPU"),
        (25, "SIGXFSZ"),
    ];
    NAMES
        .iter()
        .find(|(n, _)| *n == signal)
        .map_or_else(|| format!("signal {signal}"), |(_, s)| (*s).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ending_keeps_its_shape_in_a_bundle() {
        let e = Ended::Signaled {
            signal: 11,
            name: signal_name(11),
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"how": "signaled", "signal": 11, "name": "SIGSEGV"})
        );
        assert_eq!(serde_json::from_value::<Ended>(v).unwrap(), e);
        assert_eq!(signal_name(64), "signal 64");
    }
}
