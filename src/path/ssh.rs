//! A node's side of a path over ssh: `ssh … NODE -- [sudo -n] spx-doctor
//! path-facts --config CONFIG --eni ENI --peer ADDR --size N …`, exactly as
//! `--cluster --via ssh` reaches a node (the same argv, host-key checking
//! and deadline, [`crate::cluster::ssh`]). Every remote word is a fixed word
//! of this program or a validated value, single-quoted
//! ([`crate::cluster::plan::remote_word`]); the answer is a
//! [`NodeFacts`] document, read strictly.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use spx_checks::config::Config;
use spx_checks::path::node::{GuestRef, NodeFacts, NodeQuery, Size};

use crate::cluster::plan::{
    quote, remote_bin_ok, remote_word, user_name, SshCommand, DEFAULT_REMOTE_BIN,
};
use crate::cluster::ssh::{argv, classify, effective, spawn_ssh, wait_until};
use crate::settings::UsageError;

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
        })
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
    let left = deadline.saturating_duration_since(Instant::now());
    let command = plan.command(config, node, q, left)?;
    let target = effective(&command, deadline).map_err(|u| u.to_string())?;
    let child = spawn_ssh(&argv(&command, target.as_ref())).map_err(|u| u.to_string())?;
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
