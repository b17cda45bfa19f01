//! Run the doctor on the other nodes with the system `ssh` (an argv, never
//! a local shell), at most `--parallel` at once, all bounded by the run's
//! deadline: an ssh still running then is killed (its process group: ssh
//! and anything it started, such as a ProxyCommand) and the node is named
//! as not having answered in time.
//!
//! What ssh, sudo and the remote shell say on failure is their only
//! interface for it, so the failure is named from their exit status and
//! the words they print (kept verbatim in the detail); the facts themselves
//! only ever come from the node's JSON report, which is checked for the
//! shape of JSON v1 before it is trusted.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use spx_checks::cluster::{SshTarget, Unreached, UnreachedKind};
use wait_timeout::ChildExt;

use super::plan::SshCommand;

/// A node's report is a few tens of KiB; more than this is not a report.
const MAX_STDOUT: u64 = 16 << 20;
const MAX_STDERR: u64 = 64 << 10;
/// Each ssh worker thread's stack: they only wait and copy pipes.
const STACK: usize = 128 << 10;

/// One node to ask.
pub struct Job {
    pub index: usize,
    pub ssh: SshCommand,
    /// The remote command starts with `sudo -n`.
    pub sudo: bool,
}

/// What one node answered, and what ssh made of its configuration for it.
pub struct Answer {
    pub index: usize,
    pub report: Result<Value, Unreached>,
    pub target: Option<SshTarget>,
}

impl Answer {
    fn unreached(index: usize, why: Unreached) -> Answer {
        Answer {
            index,
            report: Err(why),
            target: None,
        }
    }
}

/// `d` for a person: `2.9s`.
fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// A node still in the queue at the deadline: never started.
fn queued(waited: Duration, parallel: usize) -> Unreached {
    Unreached {
        queued: Some(waited),
        ..Unreached::new(
            UnreachedKind::Queued,
            format!(
                "waited {} for one of --parallel {parallel} ssh sessions; the deadline came before it started",
                secs(waited)
            ),
        )
    }
}

/// Run every job, at most `parallel` at once, until `deadline`. Returns one
/// answer per job.
pub fn run_all(jobs: Vec<Job>, parallel: usize, deadline: Instant) -> Vec<Answer> {
    let start = Instant::now();
    let total = jobs.len();
    let indices: Vec<usize> = jobs.iter().map(|j| j.index).collect();
    // Each job with its place in the queue: the first `parallel` start at
    // once, the others wait for a session to end.
    let queue = Arc::new(Mutex::new(
        jobs.into_iter().enumerate().collect::<VecDeque<_>>(),
    ));
    let (tx, rx) = mpsc::channel();
    for _ in 0..parallel.min(total) {
        let queue = Arc::clone(&queue);
        let tx = tx.clone();
        let spawned = std::thread::Builder::new()
            .name("ssh".into())
            .stack_size(STACK)
            .spawn(move || loop {
                let job = match queue.lock() {
                    Ok(mut q) => q.pop_front(),
                    Err(_) => None,
                };
                let Some((place, job)) = job else { break };
                let now = Instant::now();
                let waited = (place >= parallel).then(|| now - start);
                let answer = if now >= deadline {
                    Answer::unreached(job.index, queued(now - start, parallel))
                } else {
                    let mut a = run_one(&job, deadline);
                    if let Err(why) = &mut a.report {
                        if why.kind == UnreachedKind::Deadline {
                            why.queued = waited;
                            if let Some(w) = waited {
                                why.detail = format!(
                                    "{} (it had waited {} for one of --parallel {parallel} ssh sessions)",
                                    why.detail,
                                    secs(w)
                                );
                            }
                        }
                    }
                    a
                };
                if tx.send(answer).is_err() {
                    break;
                }
            });
        if spawned.is_err() {
            break;
        }
    }
    drop(tx);
    let mut out: Vec<Answer> = Vec::with_capacity(total);
    // Workers kill ssh at the deadline; a little grace for them to report.
    let until = deadline + Duration::from_millis(200);
    while out.len() < total {
        match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok(answer) => out.push(answer),
            Err(_) => break,
        }
    }
    // What no worker took is still queued; what one took and did not
    // answer for ran out of time.
    let never_started: Vec<usize> = match queue.lock() {
        Ok(mut q) => q.drain(..).map(|(_, j)| j.index).collect(),
        Err(_) => Vec::new(),
    };
    let waited = deadline.saturating_duration_since(start);
    for i in indices {
        if out.iter().any(|a| a.index == i) {
            continue;
        }
        out.push(Answer::unreached(
            i,
            if never_started.contains(&i) {
                queued(waited, parallel)
            } else {
                Unreached::new(UnreachedKind::Deadline, "no answer by the deadline")
            },
        ));
    }
    out
}

fn read_capped(
    mut r: impl Read + Send + 'static,
    cap: u64,
) -> mpsc::Receiver<std::io::Result<Vec<u8>>> {
    let (tx, rx) = mpsc::channel();
    let _ = std::thread::Builder::new()
        .name("ssh-pipe".into())
        .stack_size(STACK)
        .spawn(move || {
            let mut buf = Vec::new();
            let res = (&mut r).take(cap + 1).read_to_end(&mut buf).map(|_| buf);
            // Drain whatever is beyond the cap so ssh never blocks on us.
            let _ = std::io::copy(&mut r, &mut std::io::sink());
            let _ = tx.send(res);
        });
    rx
}

/// `ssh ARGS` started in a process group of its own (so the deadline ends
/// it and anything it started), its stdin empty.
pub(crate) fn spawn_ssh(args: &[OsString]) -> Result<Child, Unreached> {
    let mut cmd = Command::new("ssh");
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    match cmd.spawn() {
        Ok(c) => Ok(c),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Unreached::new(
            UnreachedKind::SshMissing,
            "no `ssh` on this node's PATH",
        )),
        Err(e) => Err(Unreached::new(
            UnreachedKind::Ssh,
            format!("cannot start ssh: {e}"),
        )),
    }
}

/// How an ssh run ended: its exit status (`None`: stopped at the
/// deadline), its stdout (capped at `cap`) and its stderr.
pub(crate) struct Ended {
    pub(crate) status: Option<ExitStatus>,
    pub(crate) stdout: Option<Vec<u8>>,
    pub(crate) stderr: String,
}

pub(crate) fn wait_until(mut child: Child, deadline: Instant, cap: u64) -> Ended {
    let out = read_capped(child.stdout.take().expect("piped"), cap);
    let err = read_capped(child.stderr.take().expect("piped"), MAX_STDERR);
    let left = deadline.saturating_duration_since(Instant::now());
    let status = match child.wait_timeout(left) {
        Ok(Some(status)) => Some(status),
        Ok(None) | Err(_) => {
            // Our own child's process group (ssh made it its leader).
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    };
    // ssh has ended: its pipes close as soon as the readers drain them,
    // which on a loaded machine can take longer than a moment; a process it
    // left behind may hold them open, so never past the deadline. Stopped
    // at the deadline: what was read by then, after a moment.
    let grace = Duration::from_millis(100);
    let until = match status {
        Some(_) => Instant::now().max(deadline) + grace,
        None => Instant::now() + grace,
    };
    let left = || until.saturating_duration_since(Instant::now());
    let stdout = out.recv_timeout(left()).ok().and_then(Result::ok);
    let stderr = err
        .recv_timeout(left())
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    Ended {
        status,
        stdout,
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// What the ssh_config makes of this node (`ssh OPTIONS -G HOST`: ssh's own
/// reading, nothing is connected), by the deadline. `Ok(None)` when ssh
/// could not say (it will say why when it runs).
pub(crate) fn effective(
    job: &SshCommand,
    deadline: Instant,
) -> Result<Option<SshTarget>, Unreached> {
    let mut args = job.options.clone();
    args.push("-G".into());
    args.push(job.host.clone().into());
    let ended = wait_until(spawn_ssh(&args)?, deadline, MAX_STDERR);
    match ended.status {
        None => Err(Unreached::new(
            UnreachedKind::Deadline,
            "ssh -G (reading the ssh_config) stopped at the deadline (--timeout)",
        )),
        Some(s) if s.success() => Ok(ended
            .stdout
            .as_deref()
            .map(|o| parse_effective(&String::from_utf8_lossy(o)))),
        Some(_) => Ok(None),
    }
}

/// `ssh -G`'s lines (`keyword value…`, keywords in lower case).
pub fn parse_effective(text: &str) -> SshTarget {
    let mut t = SshTarget {
        port: 22,
        ..SshTarget::default()
    };
    for line in text.lines() {
        let Some((key, value)) = line.split_once(' ') else {
            continue;
        };
        let value = value.trim();
        match key.to_ascii_lowercase().as_str() {
            "user" => t.user = value.to_owned(),
            "hostname" => t.hostname = value.to_owned(),
            "port" => t.port = value.parse().unwrap_or(22),
            "hostkeyalias" => t.host_key_alias = Some(value.to_owned()),
            "userknownhostsfile" => {
                t.known_hosts = value.split_whitespace().map(str::to_owned).collect()
            }
            "stricthostkeychecking" => t.strict_host_key_checking = value.to_owned(),
            _ => {}
        }
    }
    t
}

/// The command line of the run itself: the options, host-key checking
/// made strict unless the ssh_config says `accept-new` (which refuses a
/// changed key too, and adds an unknown one), the host, the remote command.
/// A changed host key never yields a report, whatever the ssh_config says.
pub fn argv(job: &SshCommand, target: Option<&SshTarget>) -> Vec<OsString> {
    let mut argv = job.options.clone();
    if target.is_none_or(|t| t.strict_host_key_checking != "accept-new") {
        argv.push("-o".into());
        argv.push("StrictHostKeyChecking=yes".into());
    }
    argv.push(job.host.clone().into());
    argv.push("--".into());
    argv.extend(job.remote.iter().cloned());
    argv
}

fn run_one(job: &Job, deadline: Instant) -> Answer {
    let target = match effective(&job.ssh, deadline) {
        Ok(t) => t,
        Err(why) => return Answer::unreached(job.index, why),
    };
    let child = match spawn_ssh(&argv(&job.ssh, target.as_ref())) {
        Ok(c) => c,
        Err(why) => {
            return Answer {
                index: job.index,
                report: Err(why),
                target,
            }
        }
    };
    let ended = wait_until(child, deadline, MAX_STDOUT);
    let report = match ended.status {
        None => Err(Unreached::new(
            UnreachedKind::Deadline,
            match last_line(&ended.stderr) {
                Some(l) => format!("ssh stopped at the deadline (--timeout); it said: {l}"),
                None => "ssh stopped at the deadline (--timeout) before the node answered".into(),
            },
        )),
        Some(status) => classify(
            status.code(),
            ended.stdout.as_deref(),
            &ended.stderr,
            job.sudo,
        ),
    };
    Answer {
        index: job.index,
        report,
        target,
    }
}

/// Name what happened from ssh's exit status, its words and the remote's
/// answer. Pure, so every case is unit-tested.
pub fn classify(
    code: Option<i32>,
    stdout: Option<&[u8]>,
    stderr: &str,
    sudo: bool,
) -> Result<Value, Unreached> {
    let fail = |kind, detail: String| Err(Unreached::new(kind, detail));
    let Some(code) = code else {
        return fail(UnreachedKind::Ssh, "ssh was ended by a signal".into());
    };
    // Whatever the exit status and stdout: a session that got past a
    // changed host key (an ssh_config that turned checking off, which this
    // run overrides) is never trusted with a report.
    if let Some(line) = line_with(stderr, "REMOTE HOST IDENTIFICATION HAS CHANGED") {
        return fail(
            UnreachedKind::HostKeyChanged,
            line_with(stderr, "Host key for").unwrap_or(line),
        );
    }
    let stdout = stdout.unwrap_or_default();
    if stdout.len() as u64 > MAX_STDOUT {
        return fail(
            UnreachedKind::InvalidAnswer,
            format!("more than {} MiB on stdout", MAX_STDOUT >> 20),
        );
    }
    let said = |needle: &str| line_with(stderr, needle);
    if (0..=2).contains(&code) && !stdout.iter().all(u8::is_ascii_whitespace) {
        return match serde_json::from_slice::<Value>(stdout) {
            Ok(doc) => match shape(&doc, code) {
                Ok(()) => Ok(doc),
                Err(why) => fail(UnreachedKind::InvalidAnswer, why),
            },
            Err(e) => fail(
                UnreachedKind::InvalidAnswer,
                format!(
                    "not JSON ({e}): {}",
                    one_line(&String::from_utf8_lossy(&stdout[..stdout.len().min(80)]))
                ),
            ),
        };
    }
    if code == 255 {
        for (needle, kind) in [
            ("Host key for", UnreachedKind::HostKeyChanged),
            (
                "REMOTE HOST IDENTIFICATION HAS CHANGED",
                UnreachedKind::HostKeyChanged,
            ),
            ("host key is known for", UnreachedKind::HostKeyUnknown),
            (
                "Host key verification failed",
                UnreachedKind::HostKeyUnknown,
            ),
            ("Connection refused", UnreachedKind::ConnectionRefused),
            ("timed out", UnreachedKind::TimedOut),
            ("No route to host", UnreachedKind::NoRoute),
            ("Network is unreachable", UnreachedKind::NoRoute),
            ("Could not resolve hostname", UnreachedKind::NameUnresolved),
            ("Permission denied", UnreachedKind::PermissionDenied),
        ] {
            if let Some(line) = said(needle) {
                return fail(kind, line);
            }
        }
        return fail(
            UnreachedKind::Ssh,
            last_line(stderr).unwrap_or_else(|| "ssh exited 255 without a word".into()),
        );
    }
    if sudo {
        if let Some(line) =
            said("a password is required").or_else(|| said("a terminal is required"))
        {
            return fail(UnreachedKind::SudoPassword, line);
        }
        if let Some(line) = said("sudo:").filter(|l| l.contains("command not found")) {
            return fail(UnreachedKind::BinaryNotFound, line);
        }
        if let Some(line) = said("sudo:") {
            return fail(UnreachedKind::SudoRefused, line);
        }
    }
    let words = last_line(stderr).unwrap_or_default();
    match code {
        127 => fail(UnreachedKind::BinaryNotFound, words),
        126 => fail(UnreachedKind::NotExecutable, words),
        2 if ["unexpected argument", "unrecognized", "invalid value"]
            .iter()
            .any(|w| stderr.contains(w)) =>
        {
            fail(UnreachedKind::OtherVersion, said("error").unwrap_or(words))
        }
        2 => fail(UnreachedKind::RemoteRefused, said("error").unwrap_or(words)),
        _ => fail(
            UnreachedKind::InvalidAnswer,
            if words.is_empty() {
                format!("exit {code} and no report")
            } else {
                format!("exit {code} and no report: {words}")
            },
        ),
    }
}

/// The shape of a JSON v1 report, as far as the cluster relies on it.
pub(super) fn shape(doc: &Value, code: i32) -> Result<(), String> {
    let str_at = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    if doc.get("schema_version").and_then(Value::as_u64) != Some(1) {
        return Err("not a JSON v1 report (schema_version is not 1)".into());
    }
    if doc.get("kind").is_some() {
        return Err("a cluster report, not a node's".into());
    }
    let tool = doc.get("tool").ok_or("no `tool`")?;
    if str_at(tool, "version").is_none() || str_at(tool, "name").is_none() {
        return Err("`tool` lacks name or version".into());
    }
    match doc.get("exit_code").and_then(Value::as_i64) {
        Some(c) if c == i64::from(code) => {}
        Some(c) => {
            return Err(format!(
                "the report says exit {c} but the doctor exited {code}"
            ))
        }
        None => return Err("no `exit_code`".into()),
    }
    let checks = doc
        .get("checks")
        .and_then(Value::as_array)
        .ok_or("no `checks` array")?;
    for c in checks {
        let id = str_at(c, "id").ok_or("a check without an id")?;
        let status = str_at(c, "status").unwrap_or_default();
        if !["pass", "warn", "fail", "skip", "error"].contains(&status.as_str()) {
            return Err(format!("{id}: status {status:?}"));
        }
        if str_at(c, "summary").is_none()
            || !c.get("evidence").is_some_and(Value::is_object)
            || !c.get("remediation").is_some_and(Value::is_array)
        {
            return Err(format!("{id}: lacks summary, evidence or remediation"));
        }
    }
    Ok(())
}

/// The first stderr line containing `needle`, cleaned.
fn line_with(text: &str, needle: &str) -> Option<String> {
    text.lines().find(|l| l.contains(needle)).map(one_line)
}

pub(crate) fn last_line(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(one_line)
}

/// One printable line, at most 200 characters.
pub(crate) fn one_line(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let clean = clean.trim();
    if clean.chars().count() > 200 {
        format!("{}…", clean.chars().take(200).collect::<String>())
    } else {
        clean.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(r: Result<Value, Unreached>) -> (UnreachedKind, String) {
        let e = r.unwrap_err();
        (e.kind, e.detail)
    }

    // What OpenSSH 9.2 (Debian 12) and sudo 1.9.13 print, as seen in the
    // sshd lab (tests/cluster.rs).
    const CHANGED: &str = "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n\
        @    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n\
        @@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n\
        IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!\n\
        Host key for 198.18.0.3 has changed and you have requested strict checking.\n\
        Host key verification failed.\n";

    #[test]
    fn ssh_failures_are_named() {
        let (k, d) = kind(classify(Some(255), None, CHANGED, false));
        assert_eq!(k, UnreachedKind::HostKeyChanged);
        assert_eq!(
            d,
            "Host key for 198.18.0.3 has changed and you have requested strict checking."
        );
        let (k, _) = kind(classify(
            Some(255),
            None,
            "No ED25519 host key is known for 198.18.0.3 and you have requested strict checking.\nHost key verification failed.\n",
            false,
        ));
        assert_eq!(k, UnreachedKind::HostKeyUnknown);
        for (text, want) in [
            (
                "ssh: connect to host 198.18.0.4 port 22: Connection refused",
                UnreachedKind::ConnectionRefused,
            ),
            (
                "ssh: connect to host 198.18.0.4 port 22: Connection timed out",
                UnreachedKind::TimedOut,
            ),
            (
                "ssh: connect to host 198.18.0.4 port 22: No route to host",
                UnreachedKind::NoRoute,
            ),
            (
                "ssh: Could not resolve hostname spx9: Name or service not known",
                UnreachedKind::NameUnresolved,
            ),
            (
                "root@198.18.0.4: Permission denied (publickey).",
                UnreachedKind::PermissionDenied,
            ),
            (
                "kex_exchange_identification: read: Connection reset by peer",
                UnreachedKind::Ssh,
            ),
        ] {
            assert_eq!(
                kind(classify(Some(255), None, text, false)).0,
                want,
                "{text}"
            );
        }
    }

    #[test]
    fn remote_failures_are_named() {
        let (k, d) = kind(classify(
            Some(127),
            None,
            "bash: line 1: spx-doctor: command not found\n",
            false,
        ));
        assert_eq!(
            (k, d.as_str()),
            (
                UnreachedKind::BinaryNotFound,
                "bash: line 1: spx-doctor: command not found"
            )
        );
        let (k, _) = kind(classify(
            Some(1),
            None,
            "Could not chdir to home directory /x\nsudo: a password is required\n",
            true,
        ));
        assert_eq!(k, UnreachedKind::SudoPassword);
        let (k, _) = kind(classify(
            Some(1),
            None,
            "sudo: spx-doctor: command not found\n",
            true,
        ));
        assert_eq!(k, UnreachedKind::BinaryNotFound);
        let (k, _) = kind(classify(
            Some(1),
            None,
            "spinifex is not in the sudoers file.\nsudo: ...\n",
            true,
        ));
        assert_eq!(k, UnreachedKind::SudoRefused);
        let (k, d) = kind(classify(
            Some(2),
            None,
            "error: unexpected argument '--ovn-read-by' found\n\nUsage: spx-doctor\n",
            false,
        ));
        assert_eq!(k, UnreachedKind::OtherVersion);
        assert_eq!(d, "error: unexpected argument '--ovn-read-by' found");
        let (k, d) = kind(classify(Some(2), None, "spx-doctor: error: cannot read config /etc/spinifex/spinifex.toml: No such file or directory (os error 2)\n", false));
        assert_eq!(k, UnreachedKind::RemoteRefused);
        assert!(d.starts_with("spx-doctor: error: cannot read config"));
        let (k, _) = kind(classify(None, None, "", false));
        assert_eq!(k, UnreachedKind::Ssh);
    }

    fn report(code: i32) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "schema_version": 1, "tool": {"name": "spx-doctor", "version": "0.1.0"},
            "exit_code": code, "checks": [{"id": "mtu.path", "status": "pass", "summary": "s",
            "evidence": {}, "remediation": [], "duration_ms": 1}]
        }))
        .unwrap()
    }

    #[test]
    fn a_report_is_checked_before_it_is_trusted() {
        assert!(classify(Some(1), Some(&report(1)), "", false).is_ok());
        let (k, d) = kind(classify(Some(0), Some(&report(1)), "", false));
        assert_eq!(k, UnreachedKind::InvalidAnswer);
        assert_eq!(d, "the report says exit 1 but the doctor exited 0");
        let (k, d) = kind(classify(Some(0), Some(b"Welcome to spx3!\n{"), "", false));
        assert_eq!(k, UnreachedKind::InvalidAnswer);
        assert!(d.starts_with("not JSON"), "{d}");
        let (k, _) = kind(classify(
            Some(0),
            Some(br#"{"schema_version": 2}"#),
            "",
            false,
        ));
        assert_eq!(k, UnreachedKind::InvalidAnswer);
        let (k, d) = kind(classify(Some(3), None, "", false));
        assert_eq!(
            (k, d.as_str()),
            (UnreachedKind::InvalidAnswer, "exit 3 and no report")
        );
    }

    // `ssh -G -F FILE -l spx h1` (OpenSSH_9.2p1 Debian-2+deb12u10), the
    // lines the run reads, from an ssh_config with `StrictHostKeyChecking
    // no`, `Port 2222`, `HostKeyAlias foo`, `UserKnownHostsFile ~/kh /tmp/x`.
    const EFFECTIVE: &str = "user spx\nhostname h1\nport 2222\nbatchmode yes\n\
        stricthostkeychecking false\nhostkeyalias foo\n\
        globalknownhostsfile /etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2\n\
        userknownhostsfile /root/kh /tmp/x\n";

    fn command() -> SshCommand {
        SshCommand {
            options: vec!["-o".into(), "BatchMode=yes".into(), "-T".into()],
            host: "h1".into(),
            remote: vec!["'spx-doctor'".into()],
        }
    }

    #[test]
    fn what_ssh_makes_of_its_config_is_read() {
        let t = parse_effective(EFFECTIVE);
        assert_eq!(
            t,
            SshTarget {
                user: "spx".into(),
                hostname: "h1".into(),
                port: 2222,
                host_key_alias: Some("foo".into()),
                known_hosts: vec!["/root/kh".into(), "/tmp/x".into()],
                strict_host_key_checking: "false".into(),
            }
        );
        assert_eq!(t.known_hosts_name(), "foo");
        let plain = parse_effective("user root\nhostname 198.19.0.4\nport 2222\n");
        assert_eq!(plain.known_hosts_name(), "[198.19.0.4]:2222");
        assert_eq!(
            parse_effective("port 22\nhostname a\n").known_hosts_name(),
            "a"
        );
    }

    #[test]
    fn host_keys_are_checked_strictly_unless_the_config_says_accept_new() {
        let strict = |t: Option<&SshTarget>| {
            let argv = argv(&command(), t);
            let words: Vec<&str> = argv.iter().map(|w| w.to_str().unwrap()).collect();
            assert_eq!(words[words.len() - 3..], ["h1", "--", "'spx-doctor'"]);
            words.contains(&"StrictHostKeyChecking=yes")
        };
        for said in ["false", "true", "ask", ""] {
            let t = SshTarget {
                strict_host_key_checking: said.into(),
                ..parse_effective(EFFECTIVE)
            };
            assert!(strict(Some(&t)), "{said}");
        }
        assert!(strict(None), "ssh -G said nothing");
        let t = SshTarget {
            strict_host_key_checking: "accept-new".into(),
            ..SshTarget::default()
        };
        assert!(!strict(Some(&t)));
    }

    #[test]
    fn a_session_past_a_changed_key_is_never_a_report() {
        let warned = "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n\
            @    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n\
            @@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n\
            Password authentication is disabled to avoid man-in-the-middle attacks.\n";
        let (k, d) = kind(classify(Some(0), Some(&report(0)), warned, false));
        assert_eq!(k, UnreachedKind::HostKeyChanged);
        assert_eq!(
            d,
            "@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @"
        );
    }
}
