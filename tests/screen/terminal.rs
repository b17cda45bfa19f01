//! How the first screens are run here: the real binary on a stored
//! report, in a real terminal (tmux, the command typed with send-keys, the
//! screen read back with capture-pane) or piped.
//!
//! A node's report comes from a bundle (`--replay`). A cluster's comes
//! from a real `--cluster` run whose `ssh` is a stand-in on PATH that
//! answers each node's stored report (the fixtures' real node reports),
//! and for a node it has none of, says what ssh says when nobody listens:
//! the coordinator, its plan, the cluster checks and the table are the
//! real ones.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::fixtures::ClusterFixture;
use crate::support::tmux::Tmux;
use crate::support::{self, spx};

/// A cluster of stored reports: the config (no `node`: the coordinator
/// is none of them) and the stand-in `ssh`.
pub struct StoredCluster {
    dir: tempfile::TempDir,
}

impl StoredCluster {
    /// `fixture`'s nodes, every one answering but those in `silent`.
    pub fn new(fixture: &ClusterFixture, silent: &[&str]) -> StoredCluster {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("hosts")).unwrap();
        for (name, (host, report)) in &fixture.reports {
            if !silent.contains(&name.as_str()) {
                let hosts = dir.path().join("hosts");
                std::fs::write(hosts.join(format!("{host}.json")), report.to_string()).unwrap();
                // The doctor's exit code is the report's.
                let code = report["exit_code"].as_i64().unwrap();
                std::fs::write(hosts.join(format!("{host}.code")), code.to_string()).unwrap();
            }
        }
        std::fs::write(dir.path().join("spinifex.toml"), &fixture.config).unwrap();
        let ssh = dir.path().join("ssh");
        std::fs::write(
            &ssh,
            "#!/bin/sh\n\
             hosts=\"$(dirname \"$0\")/hosts\"\n\
             for a in \"$@\"; do [ \"$a\" = -G ] && exit 1; done\n\
             for a in \"$@\"; do\n\
             \x20 if [ -f \"$hosts/$a.json\" ]; then\n\
             \x20   cat \"$hosts/$a.json\"; exit \"$(cat \"$hosts/$a.code\")\"\n\
             \x20 fi\n\
             \x20 case \"$a\" in [0-9]*.[0-9]*) host=$a;; esac\n\
             done\n\
             echo \"ssh: connect to host $host port 22: Connection refused\" >&2\n\
             exit 255\n",
        )
        .unwrap();
        std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
        StoredCluster { dir }
    }

    pub fn config(&self) -> PathBuf {
        self.dir.path().join("spinifex.toml")
    }

    /// PATH with the stand-in first.
    pub fn path(&self) -> String {
        format!(
            "{}:{}",
            self.dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// The words after the binary: a cluster run of this config.
    pub fn args(&self) -> Vec<String> {
        vec![
            "--cluster".into(),
            "--config".into(),
            self.config().display().to_string(),
        ]
    }

    /// The binary, piped, with the stand-in `ssh`.
    pub fn spx(&self) -> Command {
        let mut cmd = spx();
        cmd.env("PATH", self.path()).args(self.args());
        cmd
    }
}

/// `--replay BUNDLE` of a fixture, its path relative to the repository's
/// root (where [`in_terminal`] and [`piped`] run).
pub fn replay_args(bundle: &str) -> Vec<String> {
    vec!["--replay".into(), format!("tests/data/screen/{bundle}")]
}

/// The binary, piped, run from the repository's root.
pub fn piped() -> Command {
    let mut cmd = spx();
    cmd.current_dir(support::repo_root());
    cmd
}

/// What a UTF-8 terminal's environment says.
pub const UTF8: (&str, &str) = ("LANG", "C.UTF-8");

/// The binary's output in a tmux terminal of `columns` (and a pane tall
/// enough for all of it): `args` typed at a shell prompt with send-keys,
/// the lines it printed read back with capture-pane, with colour
/// (escape sequences) when `colour`. `env`: the terminal's environment.
pub fn in_terminal(
    args: &[String],
    columns: u16,
    env: &[(&str, &str)],
    path: Option<&str>,
    colour: bool,
) -> String {
    // PATH is set on the command line: an interactive shell may set its
    // own from its startup files.
    let path = path.map(|p| format!("PATH='{p}' ")).unwrap_or_default();
    let tmux = Tmux::start(&["sh".to_owned()], columns, 300, env);
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    // From the repository's root: a fixture named by its relative path
    // draws the same on every machine.
    tmux.send_line(&format!(
        "cd '{}'; clear; echo '<''<start>>'; {path}{} {}; echo '<''<end>>'",
        support::repo_root().display(),
        support::bin(),
        quoted.join(" ")
    ));
    tmux.wait(&["<<end>>"], Duration::from_secs(60), "the run to end");
    let screen = if colour {
        tmux.screen_with_colour()
    } else {
        tmux.history()
    };
    let lines: Vec<&str> = screen.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim_end() == "<<start>>")
        .unwrap_or_else(|| panic!("no start marker:\n{screen}"));
    let end = lines
        .iter()
        .position(|l| l.trim_end() == "<<end>>")
        .unwrap_or_else(|| panic!("no end marker:\n{screen}"));
    lines[start + 1..end]
        .iter()
        .map(|l| format!("{}\n", l.trim_end()))
        .collect()
}

/// Every line within `width` columns (every symbol the screens draw is
/// one column wide).
pub fn assert_fits(text: &str, width: usize, what: &str) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= width,
            "{what}: {} columns > {width}: {line}\n{text}",
            line.chars().count()
        );
    }
}

/// The run's wall time (the only thing a cluster run of stored reports
/// does not draw the same each time: `N results in 0.4 s: …`) as
/// `[time]`.
pub fn without_wall_time(text: &str) -> String {
    text.lines()
        .map(|line| {
            let fixed = match (line.find(" results in "), line.find(": ")) {
                (Some(at), Some(colon)) if colon > at => {
                    format!("{} results in [time]{}", &line[..at], &line[colon..])
                }
                _ => line.to_owned(),
            };
            format!("{fixed}\n")
        })
        .collect()
}
