//! A node's side of a path over ssh: `ssh … NODE -- [sudo -n] spx-doctor
//! path-facts --config CONFIG --eni ENI --peer ADDR --size N …`, exactly as
//! `--cluster --via ssh` reaches a node (the same argv, host-key checking
//! and deadline, [`crate::cluster::ssh`]). Every remote word is a fixed word
//! of this program or a validated value, single-quoted
//! ([`crate::cluster::plan::remote_word`]); the answer is a
//! [`NodeFacts`] document, read strictly.
//!
//! A node is often asked twice (where does the instance run, then its side
//! with the probe), so each node gets one ssh connection for the whole
//! run: a master (`ControlMaster`, its socket in a private directory of
//! this run) started on first use, or for every node at once when an
//! instance has to be looked for ([`SshPlan::connect_all`]), while this
//! node reads OVN. Every question rides it as a session of its own (ssh
//! connects on its own if the master is gone), and the masters are ended
//! with the plan.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use spx_checks::config::Config;
use spx_checks::path::node::{GuestRef, NodeFacts, NodeQuery, Size};

use crate::cluster::plan::{
    quote, remote_bin_ok, remote_word, user_name, SshCommand, DEFAULT_REMOTE_BIN,
};
use crate::cluster::ssh::{argv, classify, effective, spawn_ssh, wait_until};
use crate::settings::UsageError;
use spx_checks::cluster::SshTarget;
use std::os::unix::process::CommandExt;

/// A node's answer is a few KiB; more is not an answer.
const MAX_ANSWER: u64 = 4 << 20;

/// How this node reaches the others over ssh, checked before anything runs.
#[derive(Clone, Debug)]
pub struct SshPlan {
    pub config_path: String,
    pub ssh_config: Option<PathBuf>,
    pub ssh_user: Option<String>,
    pub remote_bin: String,
    pub sudo: bool,
    pub probe_timeout: Duration,
    /// Each node's connection, shared by every question of the run.
    masters: Arc<Masters>,
}

impl SshPlan {
    pub fn new(
        config_path: &std::path::Path,
        ssh_config: Option<PathBuf>,
        ssh_user: Option<String>,
        remote_bin: Option<String>,
        probe_timeout: Duration,
    ) -> Result<SshPlan, UsageError> {
        if let Some(u) = &ssh_user {
            user_name(u)?;
        }
        let remote_bin = remote_bin.unwrap_or_else(|| DEFAULT_REMOTE_BIN.to_owned());
        remote_bin_ok(&remote_bin)?;
        if let Some(f) = &ssh_config {
            std::fs::File::open(f)
                .map_err(|e| UsageError(format!("--ssh-config {}: {e}", f.display())))?;
        }
        let absolute = if config_path.is_absolute() {
            config_path.to_owned()
        } else {
            std::env::current_dir()
                .map(|d| d.join(config_path))
                .unwrap_or_else(|_| config_path.to_owned())
        };
        let config_path = absolute.to_str().map(str::to_owned).ok_or_else(|| {
            UsageError(format!(
                "--config {}: the path is not UTF-8, so it cannot be passed to the other nodes",
                config_path.display()
            ))
        })?;
        remote_word("--config", &config_path)?;
        let sudo = match &ssh_user {
            Some(u) => u != "root",
            None => !nix::unistd::geteuid().is_root(),
        };
        Ok(SshPlan {
            config_path,
            ssh_config,
            ssh_user,
            remote_bin,
            sudo,
            probe_timeout,
            masters: Arc::new(Masters::default()),
        })
    }

    /// Open the connection to each of `nodes` at once (in the background:
    /// nothing waits for them here).
    pub fn connect_all(&self, config: &Config, nodes: &[String], deadline: Instant) {
        std::thread::scope(|s| {
            for n in nodes {
                s.spawn(move || {
                    let _ = self.master(config, n, deadline);
                });
            }
        });
    }

    /// The connection to `node`: its ssh options (with the master's
    /// socket), what `ssh -G` made of them, started if it was not.
    fn master(
        &self,
        config: &Config,
        node: &str,
        deadline: Instant,
    ) -> Result<Arc<Master>, String> {
        let slot = {
            let mut all = self.masters.nodes.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(all.entry(node.to_owned()).or_default())
        };
        let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = &*slot {
            return Ok(Arc::clone(m));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let q = NodeQuery {
            guest: None,
            peer: None,
            size: Size::Guest(spx_checks::path::node::MIN_SIZE),
        };
        let command = self.command(config, node, &q, left)?;
        let target = effective(&command, deadline).map_err(|u| u.to_string())?;
        let socket = self.masters.socket()?;
        let mut args = command.options.clone();
        for o in [
            "ControlMaster=yes".to_owned(),
            format!("ControlPath={}", socket.display()),
            "ControlPersist=no".to_owned(),
        ] {
            args.push("-o".into());
            args.push(o.into());
        }
        if target
            .as_ref()
            .is_none_or(|t| t.strict_host_key_checking != "accept-new")
        {
            args.push("-o".into());
            args.push("StrictHostKeyChecking=yes".into());
        }
        args.push("-N".into());
        args.push(command.host.clone().into());
        // Its own process group, as every ssh of a run: ended with it.
        let child = Command::new("ssh")
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .ok();
        let m = Arc::new(Master {
            socket,
            target,
            child: Mutex::new(child),
        });
        *slot = Some(Arc::clone(&m));
        Ok(m)
    }

    /// The ssh command for `node` (its `host`, else `advertise`) asking
    /// `q` within `left`.
    pub fn command(
        &self,
        config: &Config,
        node: &str,
        q: &NodeQuery,
        left: Duration,
    ) -> Result<SshCommand, String> {
        let entry = config
            .nodes
            .get(node)
            .ok_or_else(|| format!("{node} is not in the config's [nodes.*]"))?;
        let host = entry
            .host
            .clone()
            .or_else(|| entry.advertise.clone())
            .ok_or_else(|| format!("[nodes.{node}] has no host or advertise to reach it by ssh"))?;
        let connect = (left.as_secs_f64() / 2.0).max(1.0) as u64;
        let mut options: Vec<OsString> = vec![
            "-o".into(),
            "BatchMode=yes".into(),
            "-o".into(),
            format!("ConnectTimeout={connect}").into(),
            "-T".into(),
        ];
        if let Some(f) = &self.ssh_config {
            options.push("-F".into());
            options.push(f.clone().into_os_string());
        }
        if let Some(u) = &self.ssh_user {
            options.push("-l".into());
            options.push(u.into());
        }
        let ms = |d: Duration| format!("{}ms", d.as_millis().max(1));
        // The node keeps back a quarter of what is left (at most 2 s) for
        // ssh to connect and the answer to come back, as --cluster does.
        let node_timeout = left.saturating_sub(crate::cluster::plan::ssh_allowance(left));
        let mut words: Vec<(&str, String)> = vec![
            ("", "path-facts".into()),
            ("", "--config".into()),
            ("--config", self.config_path.clone()),
            ("", "--timeout".into()),
            ("", ms(node_timeout)),
            ("", "--probe-timeout".into()),
            ("", ms(self.probe_timeout.min(node_timeout))),
        ];
        match &q.guest {
            Some(GuestRef::Instance(id)) => {
                words.push(("", "--instance".into()));
                words.push(("an instance id", id.clone()));
            }
            Some(GuestRef::Eni(id)) => {
                words.push(("", "--eni".into()));
                words.push(("an ENI id", id.clone()));
            }
            None => {}
        }
        if let Some(p) = q.peer {
            words.push(("", "--peer".into()));
            words.push(("a peer address", p.to_string()));
        }
        let (kind, n) = match q.size {
            Size::Guest(n) => ("guest", n),
            Size::Underlay(n) => ("underlay", n),
        };
        words.extend([
            ("", "--size".into()),
            ("", n.to_string()),
            ("", "--size-kind".into()),
            ("", kind.into()),
        ]);
        let mut remote: Vec<OsString> = Vec::new();
        if self.sudo {
            remote.push(quote("sudo").into());
            remote.push(quote("-n").into());
        }
        remote.push(quote(&self.remote_bin).into());
        for (what, w) in &words {
            let what = if what.is_empty() {
                "a path-facts word"
            } else {
                what
            };
            remote.push(remote_word(what, w).map_err(|e| e.0)?.into());
        }
        Ok(SshCommand {
            options,
            host,
            remote,
        })
    }
}

/// Ask `node` over ssh, by `deadline`.
pub fn ask(
    plan: &SshPlan,
    config: &Config,
    node: &str,
    q: &NodeQuery,
    deadline: Instant,
) -> Result<NodeFacts, String> {
    let master = plan.master(config, node, deadline)?;
    master.wait_ready(deadline);
    let left = deadline.saturating_duration_since(Instant::now());
    let mut command = plan.command(config, node, q, left)?;
    for o in [
        "ControlMaster=no".to_owned(),
        format!("ControlPath={}", master.socket.display()),
    ] {
        command.options.push("-o".into());
        command.options.push(o.into());
    }
    let child = spawn_ssh(&argv(&command, master.target.as_ref())).map_err(|u| u.to_string())?;
    let ended = wait_until(child, deadline, MAX_ANSWER);
    let Some(status) = ended.status else {
        return Err("ssh stopped at the deadline (--timeout) before the node answered".into());
    };
    let stdout = ended.stdout.unwrap_or_default();
    if status.code() == Some(0) && !stdout.iter().all(u8::is_ascii_whitespace) {
        return serde_json::from_slice::<NodeFacts>(&stdout).map_err(|e| {
            format!(
                "its answer is not a path-facts document ({e}): {}",
                crate::cluster::ssh::one_line(&String::from_utf8_lossy(
                    &stdout[..stdout.len().min(80)]
                ))
            )
        });
    }
    match classify(status.code(), None, &ended.stderr, plan.sudo) {
        Err(u) => Err(u.to_string()),
        Ok(_) => Err(format!("exit {:?} and no answer", status.code())),
    }
}

/// One node's master, once started.
type Slot = Arc<Mutex<Option<Arc<Master>>>>;

/// The run's ssh masters: a private directory for their sockets and one
/// slot per node (filled once, by whichever question comes first).
#[derive(Default)]
struct Masters {
    dir: Mutex<Option<tempfile::TempDir>>,
    nodes: Mutex<HashMap<String, Slot>>,
    /// Sockets named so far.
    made: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for Masters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Masters")
    }
}

impl Masters {
    /// A new socket path: `m<N>` in the run's own directory
    /// (mode 0700, made on first use), short enough for a unix socket.
    fn socket(&self) -> Result<PathBuf, String> {
        let mut dir = self.dir.lock().unwrap_or_else(|p| p.into_inner());
        if dir.is_none() {
            *dir = Some(
                tempfile::Builder::new()
                    .prefix("spx-path-ssh-")
                    .tempdir()
                    .map_err(|e| format!("a directory for the ssh connections: {e}"))?,
            );
        }
        let n = self.made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(dir
            .as_ref()
            .expect("made above")
            .path()
            .join(format!("m{n}")))
    }
}

impl Drop for Masters {
    fn drop(&mut self) {
        let nodes = std::mem::take(self.nodes.get_mut().unwrap_or_else(|p| p.into_inner()));
        for slot in nodes.into_values() {
            let m = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(m) = m {
                m.end();
            }
        }
    }
}

/// One node's master connection.
struct Master {
    socket: PathBuf,
    /// What `ssh -G` made of the node's options.
    target: Option<SshTarget>,
    /// The master (none when it could not be started: every question
    /// then connects on its own).
    child: Mutex<Option<Child>>,
}

impl Master {
    /// Wait until the master is up (its socket is there), has given up
    /// (then a question connects on its own, and says why it failed), or
    /// the deadline.
    fn wait_ready(&self, deadline: Instant) {
        loop {
            if self.socket.exists() || Instant::now() >= deadline {
                return;
            }
            {
                let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
                match child.as_mut().map(Child::try_wait) {
                    None | Some(Ok(Some(_)) | Err(_)) => return,
                    Some(Ok(None)) => {}
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// End the master: its process group (ssh made it the leader), then
    /// reap it. Only the pid this run spawned is signalled.
    fn end(&self) {
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(mut c) = child.take() {
            if let Ok(None) = c.try_wait() {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(c.id() as i32),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
            let _ = c.wait();
        }
    }
}
