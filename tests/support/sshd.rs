//! A cluster lab: nodes on a [`Fabric`] (the underlay, where jumbo frames
//! and black holes are), each also plugged into a second switch at 1500
//! (the wan plane, `198.19.0.0/24`), and running Debian's real `sshd`
//! bound only to its own wan address, with its own host key and its own
//! `/etc/spinifex/spinifex.toml` (`host` = wan address, `advertise` =
//! underlay address, as on a node with one NIC per plane); a client key
//! and known_hosts made by the test; an ssh_config the coordinator is
//! pointed at with `--ssh-config`. ssh runs over the wan plane, as
//! install-node.sh does, so a black hole on the underlay does not cut the
//! doctor off from the node it is about.
//!
//! Per-node files reach the node the way `ip netns exec` provides: it
//! bind-mounts every entry of `/etc/netns/NS/` over `/etc/` for what it
//! starts, so sshd (and every session it opens, and so the remote doctor)
//! sees `/etc/netns/NS/spinifex/` as `/etc/spinifex/`. Only `spinifex/` and
//! `passwd` are bound (root's home there is an empty lab directory, so no
//! profile of this machine's root runs on login), plus `group`, `shadow`
//! and `sudoers` on nodes with a login user, so sshd still finds the rest
//! of `/etc`. The bind needs
//! `/etc/spinifex` to exist as a mount point: it is created when absent
//! (empty) and removed when the last lab in this process goes (only if
//! still empty).
//!
//! Everything is removed on Drop: the sshd processes (ours, by pid), the
//! `/etc/netns/NS` directories, the namespaces (the fabric).
//!
//! The files themselves (keys, known_hosts, ssh_config, sshd_config, the
//! passwd, a node's spinifex.toml) come from [`SshFiles`] and
//! [`node_config`], which the kernel lab's cluster group
//! (`tests/kernel_lab/cluster.rs`) uses for sshd inside its guest.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use super::fabric::{Fabric, NodeSpec};
use super::netns::{sh, Netns};

/// The wan plane's prefix: node `i` is `198.19.0.{i+1}`.
pub const WAN_PREFIX: &str = "198.19.0";

/// How a node answers for the doctor binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binary {
    /// `spx-doctor` on its PATH: the binary under test.
    Real,
    /// No `spx-doctor` on its PATH.
    Missing,
    /// A `spx-doctor` that never answers (sleeps a minute).
    Hangs,
    /// A `spx-doctor` that prints the lab's `forged.json` (written by the
    /// test: a node report of its own making) and exits 1.
    Forged,
}

/// A login user `spinifex` with sudo, on nodes that have one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sudo {
    NoPassword,
    Password,
}

#[derive(Clone, Debug)]
pub struct LabNode {
    pub spec: NodeSpec,
    pub ipsec_enabled: bool,
    pub underlay_mtu: u32,
    pub binary: Binary,
    pub user: Option<Sudo>,
}

impl LabNode {
    pub fn jumbo() -> LabNode {
        LabNode {
            spec: NodeSpec {
                mtu: 9000,
                port_mtu: 9000,
                ipv6: false,
            },
            ipsec_enabled: false,
            underlay_mtu: 9000,
            binary: Binary::Real,
            user: None,
        }
    }
}

pub struct SshLab {
    pub fabric: Fabric,
    /// The wan switch (bridge `sw`, every port at 1500).
    pub wan: Netns,
    pub dir: tempfile::TempDir,
    pub names: Vec<String>,
    pub ssh_config: PathBuf,
    pub known_hosts: PathBuf,
    files: SshFiles,
    nodes: Vec<LabNode>,
    sshd: Vec<Option<Child>>,
    logs: Vec<Arc<Mutex<String>>>,
    etc: Vec<PathBuf>,
    _etc_guard: EtcGuard,
}

/// Paths under /etc a lab needs to exist, created (empty) when absent and
/// removed when the last lab of this process is dropped.
struct EtcGuard;

static ETC_USERS: Mutex<(usize, Vec<PathBuf>)> = Mutex::new((0, Vec::new()));
const ETC_NEEDED: [&str; 3] = ["/etc/spinifex", "/etc/netns", "/run/sshd"];
/// Left in place when created: iproute2's and sshd's own directories.
const ETC_KEPT: [&str; 2] = ["/etc/netns", "/run/sshd"];

impl EtcGuard {
    fn take() -> EtcGuard {
        let mut g = ETC_USERS.lock().unwrap_or_else(|e| e.into_inner());
        if g.0 == 0 {
            for p in ETC_NEEDED {
                let p = Path::new(p);
                if !p.exists() {
                    std::fs::create_dir(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                    // /etc/netns is ip netns' own, /run/sshd sshd's
                    // privilege-separation directory (the package's service
                    // would create it): other users may need them; they stay.
                    if !ETC_KEPT.iter().any(|k| Path::new(k) == p) {
                        g.1.push(p.to_owned());
                    }
                }
            }
        }
        g.0 += 1;
        EtcGuard
    }
}

impl Drop for EtcGuard {
    fn drop(&mut self) {
        let mut g = ETC_USERS.lock().unwrap_or_else(|e| e.into_inner());
        g.0 -= 1;
        if g.0 == 0 {
            for p in g.1.drain(..) {
                // Only if still empty: never anything that is not ours.
                let _ = std::fs::remove_dir(&p);
            }
        }
    }
}

fn keygen(path: &Path) -> String {
    sh(&[
        "ssh-keygen",
        "-q",
        "-t",
        "ed25519",
        "-N",
        "",
        "-C",
        "spx-lab",
        "-f",
        path.to_str().unwrap(),
    ]);
    let public = std::fs::read_to_string(path.with_extension("pub")).unwrap();
    // "ssh-ed25519 AAAA… comment" -> "ssh-ed25519 AAAA…"
    public
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

fn write(path: &Path, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The ssh side of a lab as files in one directory: a test-generated client
/// key and its authorized_keys, a host key per node with the known_hosts
/// that names them, the ssh_config a coordinator is pointed at with
/// `--ssh-config`, each node's sshd_config, and a passwd whose root logs in
/// to an empty home (no profile of this machine's root runs). `seen_at` is
/// where the nodes see the directory: itself for namespaces on this host,
/// [`super::vm::GUEST_FILES`] in a kernel-lab guest, which shares it over
/// 9p (modes and owners pass through: the keys stay root's and 0600).
pub struct SshFiles {
    pub dir: PathBuf,
    pub seen_at: PathBuf,
}

impl SshFiles {
    /// The client key and authorized_keys, and the empty root home.
    pub fn new(dir: &Path, seen_at: &Path) -> SshFiles {
        let client = keygen(&dir.join("client"));
        write(&dir.join("authorized_keys"), &format!("{client}\n"), 0o644);
        std::fs::create_dir_all(dir.join("roothome")).unwrap();
        SshFiles {
            dir: dir.to_owned(),
            seen_at: seen_at.to_owned(),
        }
    }

    /// `name` in the directory, as the nodes see it.
    pub fn seen(&self, name: &str) -> String {
        self.seen_at.join(name).display().to_string()
    }

    pub fn ssh_config(&self) -> PathBuf {
        self.dir.join("ssh_config")
    }

    pub fn known_hosts(&self) -> PathBuf {
        self.dir.join("known_hosts")
    }

    /// A host key for the node at each of `addrs` (`host_I`), known_hosts
    /// naming them, and the ssh_config: only the lab's key and
    /// known_hosts, host keys strictly checked, no password ever asked,
    /// and the `options` given (more ssh_config lines).
    pub fn hosts(&self, addrs: &[String], options: &[&str]) {
        let known: String = addrs
            .iter()
            .enumerate()
            .map(|(i, a)| format!("{a} {}\n", keygen(&self.dir.join(format!("host_{i}")))))
            .collect();
        write(&self.known_hosts(), &known, 0o644);
        write(
            &self.ssh_config(),
            &format!(
                "Host *\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  PasswordAuthentication no\n  KbdInteractiveAuthentication no\n{}",
                self.seen("client"),
                self.seen("known_hosts"),
                options.iter().map(|o| format!("  {o}\n")).collect::<String>()
            ),
            0o644,
        );
    }

    /// Node `i`'s sshd_config (`sshd_I`, returned): listening on `addr`
    /// only, with its own host key and the lab's client key, `path` first
    /// on every session's PATH (where its `spx-doctor` is, or is not).
    pub fn sshd_config(&self, i: usize, addr: &str, path: &str) -> PathBuf {
        let cfg = self.dir.join(format!("sshd_{i}"));
        write(
            &cfg,
            &format!(
                "ListenAddress {addr}:22\nHostKey {}\nAuthorizedKeysFile {}\nStrictModes no\nUsePAM no\nPidFile none\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nSetEnv PATH={path}:/usr/sbin:/usr/bin:/sbin:/bin\n",
                self.seen(&format!("host_{i}")),
                self.seen("authorized_keys"),
            ),
            0o644,
        );
        cfg
    }

    /// This machine's /etc/passwd with root's home the lab's empty
    /// `roothome`.
    pub fn passwd(&self) -> String {
        let home = self.seen("roothome");
        std::fs::read_to_string("/etc/passwd")
            .unwrap()
            .lines()
            .map(|l| match l.split(':').collect::<Vec<_>>().as_slice() {
                ["root", pw, uid, gid, gecos, _, shell] => {
                    format!("root:{pw}:{uid}:{gid}:{gecos}:{home}:{shell}\n")
                }
                _ => format!("{l}\n"),
            })
            .collect()
    }
}

/// A node's spinifex.toml: `me` among `nodes` (name, host, advertise).
pub fn node_config(
    me: &str,
    ipsec: bool,
    mtu: u32,
    nodes: &[(&str, &str, Option<&str>)],
) -> String {
    let mut t = format!(
        "version = \"lab\"\nnode = \"{me}\"\n[network]\nipsec_enabled = {ipsec}\nunderlay_mtu = {mtu}\n"
    );
    for (name, host, advertise) in nodes {
        t.push_str(&format!("[nodes.{name}]\nhost = \"{host}\"\n"));
        if let Some(a) = advertise {
            t.push_str(&format!("advertise = \"{a}\"\n"));
        }
    }
    t
}

impl SshLab {
    /// Build the fabric and start one sshd per node; node `i` is `n{i}`.
    pub fn new(nodes: Vec<LabNode>) -> SshLab {
        use std::os::unix::fs::PermissionsExt;
        let guard = EtcGuard::take();
        let mut fabric = Fabric::new();
        for n in &nodes {
            fabric.add_node(n.spec);
        }
        let wan = Netns::new();
        wan.ip(&["link", "add", "sw", "type", "bridge"]);
        wan.ip(&["link", "set", "sw", "up"]);
        for i in 0..nodes.len() {
            let ns = &fabric.node(i).ns;
            let port = format!("w{i}");
            ns.veth("wan0", &wan, &port);
            wan.ip(&["link", "set", &port, "master", "sw"]);
            ns.ip(&[
                "addr",
                "add",
                &format!("{WAN_PREFIX}.{}/24", i + 1),
                "dev",
                "wan0",
            ]);
        }
        let dir = tempfile::Builder::new()
            .prefix("spx-lab-")
            .tempdir()
            .unwrap();
        // Readable by the login user: its authorized_keys, the binaries.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let d = dir.path().to_owned();
        let files = SshFiles::new(&d, &d);
        // The stand-in that never answers leaves its pid for Drop: sshd
        // does not end a session's command when ssh goes away.
        let hang = format!(
            "#!/bin/sh\necho $$ >> {}/hang.pids\nexec sleep 60\n",
            d.display()
        );
        let forged = format!("#!/bin/sh\ncat {}/forged.json\nexit 1\n", d.display());
        for (sub, script) in [
            ("bin", None),
            ("hang", Some(hang)),
            ("forged", Some(forged)),
        ] {
            std::fs::create_dir(d.join(sub)).unwrap();
            let target = d.join(sub).join("spx-doctor");
            match script {
                None => std::os::unix::fs::symlink(super::bin(), &target).unwrap(),
                Some(text) => write(&target, &text, 0o755),
            }
        }
        std::fs::create_dir(d.join("nobin")).unwrap();
        let names: Vec<String> = (0..nodes.len()).map(|i| format!("n{i}")).collect();
        let mut lab = SshLab {
            ssh_config: files.ssh_config(),
            known_hosts: files.known_hosts(),
            files,
            fabric,
            wan,
            dir,
            names,
            nodes: nodes.clone(),
            sshd: Vec::new(),
            logs: Vec::new(),
            etc: Vec::new(),
            _etc_guard: guard,
        };
        let addrs: Vec<String> = (0..nodes.len()).map(|i| lab.addr(i)).collect();
        lab.files.hosts(&addrs, &[]);
        for (i, node) in nodes.iter().enumerate() {
            let etc = PathBuf::from("/etc/netns").join(&lab.fabric.node(i).ns.name);
            std::fs::create_dir_all(etc.join("spinifex")).unwrap();
            lab.etc.push(etc.clone());
            lab.write_config(
                i,
                &lab.config_text(i, node.ipsec_enabled, node.underlay_mtu),
            );
            lab.write_passwd(&etc, node.user);
        }
        for i in 0..nodes.len() {
            let child = lab.start_sshd(i);
            lab.sshd.push(Some(child));
        }
        lab
    }

    /// The config every node gets by default: every node by its wan
    /// address (`host`, where ssh goes) and its underlay address
    /// (`advertise`, the peers mtu.path probes).
    pub fn config_text(&self, i: usize, ipsec: bool, mtu: u32) -> String {
        let addrs: Vec<String> = (0..self.names.len()).map(|j| self.addr(j)).collect();
        let nodes: Vec<(&str, &str, Option<&str>)> = self
            .names
            .iter()
            .enumerate()
            .map(|(j, n)| (n.as_str(), addrs[j].as_str(), Some(self.underlay(j))))
            .collect();
        node_config(&self.names[i], ipsec, mtu, &nodes)
    }

    /// Node `i`'s /etc/spinifex/spinifex.toml (seen by its next process).
    pub fn write_config(&self, i: usize, text: &str) {
        write(&self.etc[i].join("spinifex/spinifex.toml"), text, 0o644);
    }

    /// The node's /etc/passwd: root's home is an empty lab directory (so a
    /// login runs no profile of this machine's root: the remote shell
    /// costs what it costs on a plain node), plus the login user and its
    /// sudoers on nodes that have one.
    fn write_passwd(&self, etc: &Path, user: Option<Sudo>) {
        let read = |f: &str| std::fs::read_to_string(Path::new("/etc").join(f)).unwrap();
        let mut passwd = self.files.passwd();
        let Some(sudo) = user else {
            write(&etc.join("passwd"), &passwd, 0o644);
            return;
        };
        passwd.push_str(&format!(
            "spinifex:x:4242:4242:spx lab:{}:/bin/sh\n",
            self.dir.path().display()
        ));
        write(&etc.join("passwd"), &passwd, 0o644);
        write(
            &etc.join("group"),
            &format!("{}spinifex:x:4242:\n", read("group")),
            0o644,
        );
        write(
            &etc.join("shadow"),
            &format!("{}spinifex:*:19000:0:99999:7:::\n", read("shadow")),
            0o640,
        );
        let rule = match sudo {
            Sudo::NoPassword => "spinifex ALL=(root) NOPASSWD: ALL",
            Sudo::Password => "spinifex ALL=(root) ALL",
        };
        write(
            &etc.join("sudoers"),
            &format!(
                "Defaults secure_path=\"{}/bin:/usr/sbin:/usr/bin:/sbin:/bin\"\nroot ALL=(ALL:ALL) ALL\n{rule}\n",
                self.dir.path().display()
            ),
            0o440,
        );
    }

    fn start_sshd(&mut self, i: usize) -> Child {
        let d = self.dir.path().to_owned();
        let path_dir = match self.nodes[i].binary {
            Binary::Real => d.join("bin"),
            Binary::Missing => d.join("nobin"),
            Binary::Hangs => d.join("hang"),
            Binary::Forged => d.join("forged"),
        };
        let cfg = self
            .files
            .sshd_config(i, &self.addr(i), &path_dir.to_string_lossy());
        let mut child = self
            .fabric
            .node(i)
            .ns
            .command("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(&cfg)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sshd (openssh-server) is installed by .ci/run");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("Server listening on") {
                    let _ = tx.send(());
                }
                if let Ok(mut l) = sink.lock() {
                    l.push_str(&line);
                    l.push('\n');
                }
            }
        });
        if rx.recv_timeout(Duration::from_secs(10)).is_err() {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "sshd on {} did not start: {}",
                self.names[i],
                log.lock().unwrap()
            );
        }
        if self.logs.len() > i {
            self.logs[i] = log;
        } else {
            self.logs.push(log);
        }
        child
    }

    /// Stop node `i`'s sshd (our child, by pid): ssh then meets "connection
    /// refused".
    pub fn stop_sshd(&mut self, i: usize) {
        if let Some(mut c) = self.sshd[i].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// What node `i`'s sshd logged.
    pub fn sshd_log(&self, i: usize) -> String {
        self.logs[i].lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Put a different key for node `i` in known_hosts: as if the node had
    /// been reinstalled (or impersonated).
    pub fn change_known_host_key(&self, i: usize) {
        let other = keygen(&self.dir.path().join(format!("other_{i}")));
        let addr = self.addr(i);
        let text = std::fs::read_to_string(&self.known_hosts).unwrap();
        let text: String = text
            .lines()
            .map(|l| {
                if l.split_whitespace().next() == Some(addr.as_str()) {
                    format!("{addr} {other}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        write(&self.known_hosts, &text, 0o644);
    }

    /// Remove node `i`'s key from known_hosts: as if it had never been
    /// met.
    pub fn forget_known_host(&self, i: usize) {
        let addr = self.addr(i);
        let text: String = std::fs::read_to_string(&self.known_hosts)
            .unwrap()
            .lines()
            .filter(|l| l.split_whitespace().next() != Some(addr.as_str()))
            .map(|l| format!("{l}\n"))
            .collect();
        write(&self.known_hosts, &text, 0o644);
    }

    /// Another ssh_config, `name` in the lab's directory: the lab's, with
    /// `options` (ssh_config lines) ahead of its own, so they win (ssh
    /// takes the first value it meets), as an operator's own settings.
    pub fn ssh_config_with(&self, name: &str, options: &[&str]) -> PathBuf {
        let lab = std::fs::read_to_string(&self.ssh_config).unwrap();
        let body = lab
            .strip_prefix("Host *\n")
            .expect("the lab's Host * block");
        let path = self.dir.path().join(name);
        write(
            &path,
            &format!(
                "Host *\n{}{body}",
                options
                    .iter()
                    .map(|o| format!("  {o}\n"))
                    .collect::<String>()
            ),
            0o644,
        );
        path
    }

    /// Where node `i` sees `/etc/spinifex/REL` (its own, bound by `ip
    /// netns exec`), on this host.
    pub fn node_spinifex(&self, i: usize, rel: &str) -> PathBuf {
        self.etc[i].join("spinifex").join(rel)
    }

    /// The coordinator: the real binary run from node `i`'s namespace
    /// (which sees node `i`'s /etc/spinifex), pointed at the lab's
    /// ssh_config.
    pub fn coordinator(&self, i: usize) -> Command {
        self.coordinator_with(i, &self.ssh_config)
    }

    /// [`SshLab::coordinator`] pointed at another ssh_config.
    pub fn coordinator_with(&self, i: usize, ssh_config: &Path) -> Command {
        let mut cmd = self.fabric.node(i).spx();
        cmd.env_remove("SPX_DOCTOR_VIA")
            .env_remove("SPINIFEX_CONFIG_PATH")
            .env_remove("NO_COLOR")
            .arg("--cluster")
            .arg("--ssh-config")
            .arg(ssh_config);
        cmd
    }

    /// Node `i`'s wan address: where its sshd listens.
    pub fn addr(&self, i: usize) -> String {
        format!("{WAN_PREFIX}.{}", i + 1)
    }

    /// Node `i`'s underlay address.
    pub fn underlay(&self, i: usize) -> &str {
        &self.fabric.node(i).v4
    }
}

impl Drop for SshLab {
    fn drop(&mut self) {
        for c in self.sshd.iter_mut().flatten() {
            let _ = c.kill();
            let _ = c.wait();
        }
        // The hanging stand-ins this lab's sessions started, by pid, when
        // that pid is still a process in one of this lab's namespaces.
        use std::os::unix::fs::MetadataExt;
        let ours: Vec<String> = (0..self.names.len())
            .filter_map(|i| {
                let ns = format!("/var/run/netns/{}", self.fabric.node(i).ns.name);
                std::fs::metadata(ns)
                    .ok()
                    .map(|m| format!("net:[{}]", m.ino()))
            })
            .collect();
        let pids = std::fs::read_to_string(self.dir.path().join("hang.pids")).unwrap_or_default();
        for pid in pids.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            let in_lab = std::fs::read_link(format!("/proc/{pid}/ns/net"))
                .is_ok_and(|l| ours.iter().any(|o| l.as_os_str() == o.as_str()));
            if !in_lab {
                continue;
            }
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        for e in &self.etc {
            let _ = std::fs::remove_dir_all(e);
        }
    }
}

/// Run `nft -f -` with `rules` inside node `i`'s namespace.
pub fn nft(lab: &SshLab, i: usize, rules: &str) {
    let out = super::run_with_stdin(
        lab.fabric.node(i).ns.command("nft").args(["-f", "-"]),
        rules,
    );
    assert!(
        out.status.success(),
        "nft (nftables, installed by .ci/run): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
