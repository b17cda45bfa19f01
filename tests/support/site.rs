//! A site's own checks for the tests: a config and its `doctor.d` in a
//! folder of their own, with real executables beside them (shell scripts,
//! Debian's monitoring-plugins, the contrib examples), made where the
//! doctor will run them: under the checkout's `target/tmp` when its parents
//! are root's (or the tester's) and not writable by others, else (a checkout
//! under `/tmp`) where `live::site::trusted_scratch` says. (`/tmp` is
//! world-writable, so the doctor refuses anything under it, as it should.)

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use super::{repo_root, spx};

/// Debian's monitoring-plugins-basic, unchanged.
pub const CHECK_LOAD: &str = "/usr/lib/nagios/plugins/check_load";
pub const CHECK_DISK: &str = "/usr/lib/nagios/plugins/check_disk";

/// A config, its doctor.d and a bin/ for the executables.
pub struct SiteLab {
    _dir: tempfile::TempDir,
    root: PathBuf,
    /// A number no other lab of this test run has: plugins put it in the
    /// command lines of what they start, so that /proc tells what is left.
    pub marker: String,
}

impl SiteLab {
    /// A lab whose config names this node `site-lab` and one other node.
    pub fn new() -> SiteLab {
        SiteLab::with_config(
            "node = \"site-lab\"\n[network]\nipsec_enabled = true\nunderlay_mtu = 1500\n\
             [nodes.site-lab]\nhost = \"127.0.0.1\"\n[nodes.other]\nhost = \"127.0.0.2\"\n",
        )
    }

    pub fn with_config(config: &str) -> SiteLab {
        static N: AtomicU32 = AtomicU32::new(0);
        let base = spx_checks::live::site::trusted_scratch(&repo_root().join("target/tmp"))
            .expect("a folder for the lab's plugins");
        let dir = tempfile::Builder::new()
            .prefix("site-lab-")
            .tempdir_in(&base)
            .expect("a lab folder");
        let root = dir.path().to_owned();
        for d in [&root, &root.join("doctor.d"), &root.join("bin")] {
            std::fs::create_dir_all(d).unwrap();
            set_mode(d, 0o755);
        }
        std::fs::write(root.join("spinifex.toml"), config).unwrap();
        set_mode(&root.join("spinifex.toml"), 0o644);
        SiteLab {
            _dir: dir,
            root,
            marker: format!(
                "{}{:03}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn config(&self) -> PathBuf {
        self.root.join("spinifex.toml")
    }

    pub fn doctor_d(&self) -> PathBuf {
        self.root.join("doctor.d")
    }

    /// An executable `bin/NAME` (mode 0755) with this text.
    pub fn plugin(&self, name: &str, text: &str) -> PathBuf {
        let path = self.root.join("bin").join(name);
        std::fs::write(&path, text).unwrap();
        set_mode(&path, 0o755);
        path
    }

    /// A `/bin/sh` script `bin/NAME` whose body is `body`.
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        self.plugin(name, &format!("#!/bin/sh\n{body}\n"))
    }

    /// `doctor.d/NAME.toml` with this text (mode 0644).
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.doctor_d().join(format!("{name}.toml"));
        std::fs::write(&path, text).unwrap();
        set_mode(&path, 0o644);
        path
    }

    /// A check `site.NAME` running `command` under `protocol`.
    pub fn check(&self, name: &str, protocol: &str, command: &[&str], timeout: &str) -> PathBuf {
        self.check_with(name, protocol, command, timeout, "")
    }

    /// The same, with more keys (`profiles = [...]`, `[codes.x]`).
    pub fn check_with(
        &self,
        name: &str,
        protocol: &str,
        command: &[&str],
        timeout: &str,
        more: &str,
    ) -> PathBuf {
        let argv: Vec<String> = command.iter().map(|w| format!("{w:?}")).collect();
        self.file(
            name,
            &format!(
                "id = \"site.{name}\"\ntitle = \"The lab's {name}\"\ncommand = [{}]\n\
                 timeout = \"{timeout}\"\nprotocol = \"{protocol}\"\n\
                 explain = \"A test's site check: {name}.\"\n{more}",
                argv.join(", ")
            ),
        )
    }

    /// The doctor with this lab's config.
    pub fn doctor(&self) -> Command {
        let mut cmd = spx();
        cmd.arg("--config").arg(self.config());
        cmd
    }

    /// The processes whose command line holds this lab's marker and that
    /// are not zombies: what a plugin left running.
    pub fn left_running(&self) -> Vec<(i32, String)> {
        processes_with(&self.marker)
    }
}

/// Running processes (not zombies) whose command line holds `needle`.
pub fn processes_with(needle: &str) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) && state(pid).is_some_and(|s| s != "Z") {
            out.push((pid, cmdline));
        }
    }
    out
}

/// A process's state (`R`, `S`, `D`, `Z`), or none when it is gone.
pub fn state(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().next().map(str::to_owned)
}

pub fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
}
