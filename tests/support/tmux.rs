//! A tmux server of a test's own: a real terminal of a given size for the
//! real binary, read back with `capture-pane`. Its socket name is unique
//! (the process and the time), so tests running at once never share one,
//! and Drop stops it (`kill-server` on that socket only).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::run;

pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// True when tmux is installed (`.ci/run` installs it).
    pub fn available() -> bool {
        Path::new("/usr/bin/tmux").exists()
    }

    /// A session `w` of `columns` × `rows` running `command` (one shell
    /// line), with `env` set for it, `HOME` a directory that does not
    /// exist, and `NO_COLOR` unset unless `env` sets it. The pane stays
    /// after the command exits, so its last screen can be read.
    pub fn start(command: &[String], columns: u16, rows: u16, env: &[(&str, &str)]) -> Tmux {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let socket = format!("spx-tmux-{}-{nanos}", std::process::id());
        let t = Tmux { socket };
        let mut cmd = Command::new("tmux");
        cmd.args([
            "-L",
            &t.socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "w",
        ])
        .args(["-x", &columns.to_string(), "-y", &rows.to_string()])
        .env("HOME", "/nonexistent-spx-test-home")
        .env_remove("NO_COLOR")
        .env_remove("COLUMNS")
        .env_remove("LINES");
        for (k, v) in env {
            cmd.args(["-e", &format!("{k}={v}")]);
        }
        cmd.arg(command.join(" "));
        let (code, _, err) = run(&mut cmd);
        assert_eq!(code, 0, "tmux: {err}");
        let (code, _, err) = run(Command::new("tmux").args([
            "-L",
            &t.socket,
            "set-option",
            "-t",
            "w",
            "remain-on-exit",
            "on",
        ]));
        assert_eq!(code, 0, "tmux: {err}");
        t
    }

    /// The pane as shown, without colour.
    pub fn screen(&self) -> String {
        run(Command::new("tmux").args(["-L", &self.socket, "capture-pane", "-p", "-t", "w"])).1
    }

    /// The pane as shown, with its colours as escape sequences (`-e`).
    pub fn screen_with_colour(&self) -> String {
        run(Command::new("tmux").args(["-L", &self.socket, "capture-pane", "-p", "-e", "-t", "w"]))
            .1
    }

    /// The pane with its history (`-S -`), without colour.
    pub fn history(&self) -> String {
        run(Command::new("tmux").args([
            "-L",
            &self.socket,
            "capture-pane",
            "-p",
            "-J",
            "-S",
            "-",
            "-t",
            "w",
        ]))
        .1
    }

    /// Type `keys` into the pane (tmux's send-keys), then Enter.
    pub fn send_line(&self, keys: &str) {
        let (code, _, err) = run(Command::new("tmux").args([
            "-L",
            &self.socket,
            "send-keys",
            "-t",
            "w",
            "-l",
            keys,
        ]));
        assert_eq!(code, 0, "tmux: {err}");
        run(Command::new("tmux").args(["-L", &self.socket, "send-keys", "-t", "w", "Enter"]));
    }

    /// Wait until the screen shows every one of `needles`.
    pub fn wait(&self, needles: &[&str], within: Duration, what: &str) -> String {
        let t0 = Instant::now();
        loop {
            let s = self.screen();
            if needles.iter().all(|n| s.contains(n)) {
                return s;
            }
            assert!(
                t0.elapsed() < within,
                "{what}: the screen never showed {needles:?}:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}
