//! Running a site check's executable: the one place the doctor runs a
//! program someone else wrote, so the place every failure of the Nagios
//! runners before it is closed.
//!
//! - Its files are judged first (sshd's StrictModes, `secure_path`);
//!   a refusal is the check's answer and nothing runs.
//! - It runs with an argv, no shell; stdin holds the run's context as JSON;
//!   its environment is `PATH`, `LANG=C` and `SPX_DOCTOR_*`, nothing
//!   inherited; its working directory is `/`; it gets no terminal.
//! - It is a session and process group of its own, inside a cgroup of its
//!   own where cgroup v2 is writable (`cgroup`): at its timeout the whole
//!   group, or cgroup, is killed, so no child survives it (Icinga 2 killed
//!   only the plugin, #2672). When it exits, whatever it left behind is
//!   killed too.
//! - Its output is read up to [`OUTPUT_LIMIT`]; one that writes more is
//!   stopped there, and the check says so.
//! - A plugin that does not die when killed (uninterruptible sleep on a
//!   hung mount) is given up on just before the run's deadline, reported
//!   stuck, and left to a thread that reaps it whenever it goes: the run
//!   never waits for it (node-problem-detector #1050).

mod cgroup;
mod secure_path;

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use self::cgroup::Cgroup;
use crate::facts::site::secure::Role;
use crate::facts::site::{
    signal_name, Ended, Isolation, SiteRun, TimeoutBy, OUTPUT_LIMIT, STDERR_LIMIT,
};
use crate::facts::ProbeError;

/// The one `PATH` a site check gets.
pub const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// A plugin still running this long before the run's deadline is killed…
const KILL_BEFORE_DEADLINE: Duration = Duration::from_millis(300);
/// …and one still there this long before it is given up on (stuck).
const GIVE_UP_BEFORE_DEADLINE: Duration = Duration::from_millis(100);
/// Without a run deadline: how long a killed plugin may take to go.
const REAP_GRACE: Duration = Duration::from_secs(2);

/// What to run: a site check's definition as the request carries it.
pub struct Plugin<'a> {
    pub check: &'a str,
    pub definition: &'a Path,
    pub command: &'a [String],
    pub timeout: Duration,
    pub requires_root: bool,
    /// The run's context (the plugin's stdin), without the deadline.
    pub context: &'a Value,
}

/// Run it, within its timeout and before `deadline` (the run's).
pub fn run(p: &Plugin<'_>, deadline: Option<Instant>) -> Result<SiteRun, ProbeError> {
    let exe = Path::new(p.command.first().map_or("", String::as_str));
    let euid = nix::unistd::geteuid().as_raw();
    if p.requires_root && euid != 0 {
        return Err(ProbeError::PermissionDenied {
            what: exe.display().to_string(),
            needs: format!(
                "root to run {} (requires_root in {})",
                exe.display(),
                p.definition.display()
            ),
        });
    }
    for (path, role) in [(p.definition, Role::Definition), (exe, Role::Executable)] {
        if let Err(ended) = secure_path::verify(path, role, euid) {
            return Ok(SiteRun::not_started(ended));
        }
    }
    if let Some(pid) = still_stuck(p.check) {
        return Ok(SiteRun::not_started(Ended::Stuck {
            pid,
            state: process_state(pid),
            killed_after_ms: 0,
            earlier: true,
        }));
    }
    let start = Instant::now();
    let own_end = start + p.timeout;
    let (kill_at, by) = match deadline.map(|d| d.checked_sub(KILL_BEFORE_DEADLINE).unwrap_or(d)) {
        Some(cut) if cut < own_end => (cut.max(start), TimeoutBy::RunDeadline),
        _ => (own_end, TimeoutBy::Own),
    };
    let give_up = match deadline {
        Some(d) => d
            .checked_sub(GIVE_UP_BEFORE_DEADLINE)
            .unwrap_or(d)
            .max(kill_at),
        None => kill_at + REAP_GRACE,
    };
    let input = stdin_of(p, deadline);
    let env = environment(p);

    let (mut cgroup, mut why) = match Cgroup::create(p.check) {
        Ok(c) => (Some(c), String::new()),
        Err(e) => (None, e),
    };
    let child = match spawn(p.command, &env, cgroup.as_ref().map(Cgroup::procs_fd)) {
        Ok(c) => c,
        Err(first) => {
            if let Some(c) = cgroup.take() {
                why = format!("could not join {}: {first}", c.path().display());
                let _ = c.remove();
            }
            match spawn(p.command, &env, None) {
                Ok(c) => c,
                Err(e) => {
                    return Ok(SiteRun::not_started(Ended::CannotRun {
                        error: format!("{}: {e}", exe.display()),
                    }))
                }
            }
        }
    };
    let isolation = match &cgroup {
        Some(c) => Isolation::Cgroup {
            path: c.path().display().to_string(),
        },
        None => Isolation::ProcessGroup { why },
    };
    let mut running = Running::new(child, cgroup);
    let mut io = Pipes::new(&mut running.child, input);
    let fate = io.pump(&running, kill_at);
    let elapsed = |since: Instant| Instant::now().duration_since(since).as_millis() as u64;
    let ended = match fate {
        Fate::Exited => {
            running.kill_all();
            let status = running.reap();
            running.clean_up(give_up);
            from_status(status)
        }
        Fate::KillAt | Fate::Flood => {
            let killed_after_ms = elapsed(start);
            running.kill_all();
            if running.wait_exit(give_up) {
                running.reap();
                running.clean_up(give_up);
                match fate {
                    Fate::Flood => Ended::OutputCut {
                        limit: OUTPUT_LIMIT as u64,
                    },
                    _ => Ended::TimedOut {
                        after_ms: killed_after_ms,
                        by,
                    },
                }
            } else {
                let pid = running.child.id() as i32;
                let state = process_state(pid);
                running.leave(p.check);
                Ended::Stuck {
                    pid,
                    state,
                    killed_after_ms,
                    earlier: false,
                }
            }
        }
    };
    Ok(SiteRun {
        ended,
        output: String::from_utf8_lossy(&io.out[..io.out.len().min(OUTPUT_LIMIT)]).into_owned(),
        output_bytes: io.out_total,
        stderr: String::from_utf8_lossy(&io.err).into_owned(),
        duration_ms: elapsed(start),
        isolation,
    })
}

/// A folder for executables made at run time (the tests' plugins, a
/// benchmark's) that the StrictModes walk accepts: `preferred` (made when
/// missing) when no folder from it up to `/` is writable by group or
/// others; otherwise, as root, `/run/spx-doctor-scratch` (root's, 0755),
/// since a checkout under `/tmp` has a world-writable parent. The doctor
/// itself never calls this: it only ever judges the files it is given.
pub fn trusted_scratch(preferred: &Path) -> io::Result<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(preferred)?;
    let preferred = std::fs::canonicalize(preferred)?;
    let open = preferred
        .ancestors()
        .any(|d| std::fs::metadata(d).map_or(true, |m| m.permissions().mode() & 0o022 != 0));
    if !open || !nix::unistd::geteuid().is_root() {
        return Ok(preferred);
    }
    let run = Path::new("/run/spx-doctor-scratch");
    std::fs::create_dir_all(run)?;
    std::fs::set_permissions(run, std::fs::Permissions::from_mode(0o755))?;
    Ok(run.to_owned())
}

/// The SHA-256 of a file (lowercase hex), or none when it cannot be read:
/// a site check's executable, as `cluster.config-drift` compares it.
pub fn file_sha256(path: &Path) -> Option<String> {
    const MAX: u64 = 1 << 30;
    let mut f = std::fs::File::open(path).ok()?;
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = f.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX {
            return None;
        }
        ctx.update(&buf[..n]);
    }
    Some(
        ctx.finish()
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

/// The context, with the run's deadline (wall clock, ms since the epoch)
/// and the plugin's own timeout, as one line of JSON.
fn stdin_of(p: &Plugin<'_>, deadline: Option<Instant>) -> Vec<u8> {
    let mut context = p.context.clone();
    if let Value::Object(m) = &mut context {
        m.insert("timeout_ms".into(), (p.timeout.as_millis() as u64).into());
        let wall = deadline.map(|d| {
            let left = d.saturating_duration_since(Instant::now());
            (SystemTime::now() + left)
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |t| t.as_millis() as u64)
        });
        m.insert("deadline_unix_ms".into(), wall.into());
    }
    let mut bytes = serde_json::to_vec(&context).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// `PATH`, `LANG=C` and the `SPX_DOCTOR_*` a plugin may read instead of
/// its stdin.
fn environment(p: &Plugin<'_>) -> Vec<(String, String)> {
    let mut env = vec![
        ("PATH".to_owned(), PATH.to_owned()),
        ("LANG".to_owned(), "C".to_owned()),
        ("SPX_DOCTOR_CHECK".to_owned(), p.check.to_owned()),
        (
            "SPX_DOCTOR_TIMEOUT_MS".to_owned(),
            p.timeout.as_millis().to_string(),
        ),
    ];
    for (var, key) in [("SPX_DOCTOR_NODE", "node"), ("SPX_DOCTOR_CONFIG", "config")] {
        if let Some(v) = p.context.get(key).and_then(Value::as_str) {
            env.push((var.to_owned(), v.to_owned()));
        }
    }
    env
}

/// Fork and exec with the plugin's session, cgroup and limits set in the
/// child before it execs.
fn spawn(
    command: &[String],
    env: &[(String, String)],
    cgroup_procs: Option<RawFd>,
) -> io::Result<Child> {
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            // Its own session: its own process group, and no terminal.
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            // Into its cgroup before it can fork.
            if let Some(fd) = cgroup_procs {
                if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(io::Error::last_os_error());
                }
            }
            // Killed if the thread that started it goes (the doctor exits).
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // A crash leaves no core of a root process behind.
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            // No descriptor of the doctor's crosses the exec.
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            Ok(())
        });
    }
    cmd.spawn()
}

/// Why the reading stopped.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// The plugin (its first process) exited.
    Exited,
    /// Its time was up.
    KillAt,
    /// It wrote more than the limit.
    Flood,
}

/// The plugin's process, how to know it exited, and its cgroup.
struct Running {
    child: Child,
    pidfd: Option<OwnedFd>,
    cgroup: Option<Cgroup>,
}

impl Running {
    fn new(child: Child, cgroup: Option<Cgroup>) -> Running {
        // SAFETY: pidfd_open(2) on our own child's pid, which cannot be
        // reused before we reap it.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id() as libc::pid_t, 0) };
        let pidfd = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
        Running {
            child,
            pidfd,
            cgroup,
        }
    }

    /// Has it exited (without reaping it)?
    fn exited(&self) -> bool {
        // SAFETY: waitid(2) with WNOWAIT on our own child.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                self.child.id(),
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            ) == 0
                && info.si_pid() != 0
        }
    }

    /// Wait until it exits or `until`; true when it did.
    fn wait_exit(&self, until: Instant) -> bool {
        loop {
            if self.exited() {
                return true;
            }
            let now = Instant::now();
            if now >= until {
                return false;
            }
            let left = until - now;
            match &self.pidfd {
                Some(fd) => {
                    let mut pfd = libc::pollfd {
                        fd: fd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
                    // SAFETY: one pollfd we own.
                    unsafe { libc::poll(&mut pfd, 1, ms) };
                }
                None => std::thread::sleep(left.min(Duration::from_millis(5))),
            }
        }
    }

    /// SIGKILL to everything it started: its cgroup, and its process group
    /// (whose id its unreaped pid still holds).
    fn kill_all(&self) {
        if let Some(c) = &self.cgroup {
            c.kill();
        }
        // SAFETY: kill(2) of the process group our unreaped child leads.
        unsafe { libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL) };
    }

    fn reap(&mut self) -> Option<ExitStatus> {
        self.child.wait().ok()
    }

    /// Remove its cgroup once empty; a thread waits for what lingers.
    fn clean_up(&mut self, until: Instant) {
        if let Some(c) = self.cgroup.take() {
            if c.wait_empty(until) {
                let _ = c.remove();
            } else {
                std::thread::spawn(move || {
                    c.kill();
                    while !c.wait_empty(Instant::now() + Duration::from_secs(1)) {}
                    let _ = c.remove();
                });
            }
        }
    }

    /// Give up on it: a thread reaps it whenever it goes, then removes its
    /// cgroup. The run does not wait. Until it goes, `check` is not run
    /// again ([`still_stuck`]).
    fn leave(self, check: &str) {
        let Running {
            mut child, cgroup, ..
        } = self;
        let check = check.to_owned();
        stuck().insert(check.clone(), child.id() as i32);
        std::thread::spawn(move || {
            let _ = child.wait();
            stuck().remove(&check);
            if let Some(c) = cgroup {
                c.kill();
                while !c.wait_empty(Instant::now() + Duration::from_secs(1)) {}
                let _ = c.remove();
            }
        });
    }
}

/// The site checks whose plugin was given up on and has not gone yet, by
/// id: their pid.
fn stuck() -> std::sync::MutexGuard<'static, HashMap<String, i32>> {
    static STUCK: LazyLock<Mutex<HashMap<String, i32>>> = LazyLock::new(Default::default);
    STUCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// The pid of `check`'s plugin of an earlier run, still stuck.
fn still_stuck(check: &str) -> Option<i32> {
    stuck().get(check).copied()
}

/// How an exit status reads.
fn from_status(status: Option<ExitStatus>) -> Ended {
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => Ended::Exited { code },
            (None, Some(signal)) => Ended::Signaled {
                signal,
                name: signal_name(signal),
            },
            (None, None) => Ended::CannotRun {
                error: format!("ended as {s}"),
            },
        },
        None => Ended::CannotRun {
            error: "its exit status could not be read".into(),
        },
    }
}

/// `D`, `S`, `Z`: a process's state in /proc.
fn process_state(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().next().map(str::to_owned)
}

/// The plugin's three pipes, and what was read.
struct Pipes {
    stdin: Option<std::process::ChildStdin>,
    input: Vec<u8>,
    written: usize,
    stdout: Option<std::process::ChildStdout>,
    stderr: Option<std::process::ChildStderr>,
    out: Vec<u8>,
    out_total: u64,
    err: Vec<u8>,
}

impl Pipes {
    fn new(child: &mut Child, input: Vec<u8>) -> Pipes {
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        for fd in [
            stdin.as_ref().map(AsRawFd::as_raw_fd),
            stdout.as_ref().map(AsRawFd::as_raw_fd),
            stderr.as_ref().map(AsRawFd::as_raw_fd),
        ]
        .into_iter()
        .flatten()
        {
            set_nonblocking(fd);
        }
        Pipes {
            stdin,
            input,
            written: 0,
            stdout,
            stderr,
            out: Vec::new(),
            out_total: 0,
            err: Vec::new(),
        }
    }

    /// Feed stdin and read both outputs until the plugin exits, its time
    /// is up, or it writes too much.
    fn pump(&mut self, running: &Running, kill_at: Instant) -> Fate {
        loop {
            let now = Instant::now();
            if now >= kill_at {
                return Fate::KillAt;
            }
            let mut fds: Vec<libc::pollfd> = Vec::with_capacity(4);
            let mut watch = |fd: RawFd, events: i16| {
                fds.push(libc::pollfd {
                    fd,
                    events,
                    revents: 0,
                })
            };
            if let Some(s) = &self.stdin {
                watch(s.as_raw_fd(), libc::POLLOUT);
            }
            if let Some(s) = &self.stdout {
                watch(s.as_raw_fd(), libc::POLLIN);
            }
            if let Some(s) = &self.stderr {
                watch(s.as_raw_fd(), libc::POLLIN);
            }
            if let Some(fd) = &running.pidfd {
                watch(fd.as_raw_fd(), libc::POLLIN);
            }
            let mut wait = kill_at - now;
            if running.pidfd.is_none() {
                wait = wait.min(Duration::from_millis(5));
            }
            let ms = wait.as_millis().clamp(1, i32::MAX as u128) as i32;
            // SAFETY: pollfds of descriptors we own, for the call.
            unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            self.feed();
            if self.read_out() {
                return Fate::Flood;
            }
            self.read_err();
            if running.exited() {
                // What it wrote before it went; whatever it left behind
                // that still holds the pipes is killed next.
                if self.read_out() {
                    return Fate::Flood;
                }
                self.read_err();
                return Fate::Exited;
            }
        }
    }

    /// Write what stdin takes now; close it when all is written or the
    /// plugin closed its end.
    fn feed(&mut self) {
        let Some(stdin) = &mut self.stdin else {
            return;
        };
        while self.written < self.input.len() {
            match stdin.write(&self.input[self.written..]) {
                Ok(0) => break,
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        self.stdin = None;
    }

    /// Read what stdout has now; true when it passed the limit.
    fn read_out(&mut self) -> bool {
        let Some(out) = &mut self.stdout else {
            return false;
        };
        let mut buf = [0u8; 16 * 1024];
        loop {
            match out.read(&mut buf) {
                Ok(0) => {
                    self.stdout = None;
                    return false;
                }
                Ok(n) => {
                    self.out_total += n as u64;
                    let room = (OUTPUT_LIMIT + 1).saturating_sub(self.out.len());
                    self.out.extend_from_slice(&buf[..n.min(room)]);
                    if self.out_total > OUTPUT_LIMIT as u64 {
                        return true;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return false,
            }
        }
    }

    /// Read what stderr has now, keeping the first [`STDERR_LIMIT`] bytes.
    fn read_err(&mut self) {
        let Some(err) = &mut self.stderr else {
            return;
        };
        let mut buf = [0u8; 16 * 1024];
        loop {
            match err.read(&mut buf) {
                Ok(0) => {
                    self.stderr = None;
                    return;
                }
                Ok(n) => {
                    let room = STDERR_LIMIT.saturating_sub(self.err.len());
                    self.err.extend_from_slice(&buf[..n.min(room)]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return,
            }
        }
    }
}

fn set_nonblocking(fd: RawFd) {
    // SAFETY: fcntl(2) on a pipe end we own.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// Scratch under a world-writable folder is moved, as root, to one the
    /// walk accepts; a safe one is kept.
    #[test]
    fn scratch_under_tmp_moves_to_a_folder_the_walk_accepts() {
        let open = std::env::temp_dir().join(format!("spx-scratch-{}", std::process::id()));
        let got = super::trusted_scratch(&open).unwrap();
        if nix::unistd::geteuid().is_root() {
            assert_eq!(got, Path::new("/run/spx-doctor-scratch"));
            let exe = got.join(format!("probe-{}", std::process::id()));
            std::fs::write(&exe, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
            let walked = super::secure_path::verify(&exe, Role::Executable, 0);
            std::fs::remove_file(&exe).unwrap();
            assert!(walked.is_ok(), "{walked:?}");
        } else {
            assert_eq!(got, std::fs::canonicalize(&open).unwrap());
        }
        std::fs::remove_dir(&open).unwrap();
        let safe = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tmp");
        let kept = super::trusted_scratch(&safe).unwrap();
        if !kept.starts_with("/run") {
            assert_eq!(kept, std::fs::canonicalize(&safe).unwrap());
        }
    }

    /// An agent runs the same check again and again: while an earlier
    /// run's plugin is still stuck, the check is not started again (each
    /// run would leave one more unkillable process behind).
    #[test]
    fn a_check_whose_earlier_plugin_is_stuck_is_not_started_again() {
        let base =
            super::trusted_scratch(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tmp"))
                .unwrap();
        let dir = tempfile::tempdir_in(base).unwrap();
        let canary = dir.path().join("ran");
        let exe = dir.path().join("plugin");
        std::fs::write(
            &exe,
            format!("#!/bin/sh\ntouch {}\necho OK\n", canary.display()),
        )
        .unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let def = dir.path().join("plugin.toml");
        std::fs::write(&def, "").unwrap();
        let command = vec![exe.display().to_string()];
        let context = serde_json::json!({});
        let plugin = |check| Plugin {
            check,
            definition: &def,
            command: &command,
            timeout: Duration::from_secs(5),
            requires_root: false,
            context: &context,
        };
        stuck().insert("site.test-stuck".into(), 1);
        let r = run(&plugin("site.test-stuck"), None).unwrap();
        assert!(
            matches!(
                r.ended,
                Ended::Stuck {
                    pid: 1,
                    earlier: true,
                    ..
                }
            ),
            "{r:?}"
        );
        assert!(!canary.exists(), "started again");
        stuck().remove("site.test-stuck");
        let r = run(&plugin("site.test-stuck"), None).unwrap();
        assert_eq!(r.ended, Ended::Exited { code: 0 }, "{r:?}");
        assert_eq!(r.output, "OK\n");
        assert!(canary.exists());
    }
}
