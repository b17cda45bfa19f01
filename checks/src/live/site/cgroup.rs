//! A site check's own cgroup (v2), where the doctor may make one: a child
//! of the doctor's own cgroup. Every process the plugin starts stays in it
//! whatever it does with sessions and process groups, so one write to
//! `cgroup.kill` (Linux 5.14; before it, each pid in `cgroup.procs`) ends
//! all of them, and `cgroup.events` says when none is left.

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One plugin's cgroup, removed when it is empty.
pub struct Cgroup {
    dir: PathBuf,
    /// `cgroup.procs`, opened before the fork: the child writes `0` to it
    /// (itself) before it execs, so it is inside before it can fork.
    procs: File,
}

impl Cgroup {
    /// A new cgroup for `check` beside nothing else, under the doctor's own;
    /// or why there is none (no cgroup v2 mounted, not writable).
    pub fn create(check: &str) -> Result<Cgroup, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
        let root = cgroup2_mount(&mountinfo).ok_or("no cgroup v2 is mounted")?;
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| format!("/proc/self/cgroup: {e}"))?;
        let own = own_cgroup(&own).ok_or("this process is in no cgroup v2")?;
        let name: String = check
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let parent = root.join(own.trim_start_matches('/'));
        sweep(&parent);
        let dir = parent.join(format!(
            "spx-doctor.{name}.{}.{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        match std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
        {
            Ok(procs) => Ok(Cgroup { dir, procs }),
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                Err(format!("cannot open {}/cgroup.procs: {e}", dir.display()))
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The descriptor the child writes itself into.
    pub fn procs_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    /// SIGKILL to every process in it.
    pub fn kill(&self) {
        if std::fs::write(self.dir.join("cgroup.kill"), "1").is_ok() {
            return;
        }
        // Before Linux 5.14: each member (one that forks meanwhile is
        // caught by the next round).
        for _ in 0..8 {
            let pids = self.pids();
            if pids.is_empty() {
                return;
            }
            for pid in pids {
                // SAFETY: kill(2) with a pid read from our own cgroup.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }

    fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// No process is left in it.
    pub fn is_empty(&self) -> bool {
        match std::fs::read_to_string(self.dir.join("cgroup.events")) {
            Ok(events) => events.lines().any(|l| l.trim() == "populated 0"),
            Err(_) => self.pids().is_empty(),
        }
    }

    /// Wait (polling) until it is empty or `until`; true when it is.
    pub fn wait_empty(&self, until: Instant) -> bool {
        loop {
            if self.is_empty() {
                return true;
            }
            let now = Instant::now();
            if now >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2).min(until - now));
        }
    }

    /// Remove it (it must be empty).
    pub fn remove(self) -> Result<(), String> {
        std::fs::remove_dir(&self.dir).map_err(|e| format!("{}: {e}", self.dir.display()))
    }
}

/// Remove the empty cgroups of doctors that are gone: a plugin stuck past
/// its run keeps its cgroup until it dies, after the doctor that made it
/// has exited. One that still holds a process stays (rmdir refuses it).
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = doctor_pid(&name.to_string_lossy()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

/// The doctor's pid in a cgroup name it made, `spx-doctor.CHECK.PID.N`.
fn doctor_pid(name: &str) -> Option<u32> {
    let mut parts = name.split('.');
    if parts.next()? != "spx-doctor" {
        return None;
    }
    let _check = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    parts.next()?.parse::<u64>().ok()?;
    parts.next().is_none().then_some(pid)
}

/// Where the cgroup v2 hierarchy is mounted (the first one), from
/// `/proc/self/mountinfo`.
pub fn cgroup2_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let mount_point = left.split_whitespace().nth(4)?;
        Some(PathBuf::from(unescape(mount_point)))
    })
}

/// This process's cgroup v2 path, from `/proc/self/cgroup` (`0::/path`).
pub fn own_cgroup(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|p| p.trim().to_owned())
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let digit = |c: u8| u32::from(c - b'0');
            let v = digit(b[i + 1]) * 64 + digit(b[i + 2]) * 8 + digit(b[i + 3]);
            out.push((v & 0xff) as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured on a Debian 12 host in hybrid mode (v1 controllers, v2 at
    // /sys/fs/cgroup/unified), and on a unified host.
    #[test]
    fn the_v2_mount_and_own_cgroup() {
        let hybrid = "35 25 0:30 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n\
                      36 35 0:31 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(
            cgroup2_mount(hybrid),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let unified = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n";
        assert_eq!(
            cgroup2_mount(unified),
            Some(PathBuf::from("/sys/fs/cgroup"))
        );
        assert_eq!(cgroup2_mount("1 2 0:1 / / rw - ext4 /dev/vda rw\n"), None);
        assert_eq!(unescape("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(
            own_cgroup("12:pids:/\n0::/system.slice/spx-doctor-agent.service\n").as_deref(),
            Some("/system.slice/spx-doctor-agent.service")
        );
        assert_eq!(own_cgroup("4:memory:/x\n"), None);
        assert_eq!(doctor_pid("spx-doctor.site_load.6479.0"), Some(6479));
        assert_eq!(doctor_pid("spx-doctor.site_load.6479"), None);
        assert_eq!(doctor_pid("system.slice"), None);
    }
}
