//! Spinifex's bus in a lab: a real `nats-server` (Debian's, 2.9.10)
//! configured as Spinifex's `nats.conf` template configures it (TLS with
//! a server certificate from a CA generated here, token authorization,
//! JetStream on, `max_payload: 1MB`, monitoring on the namespace's own
//! loopback), listening only on an address inside a namespace the test
//! made; and `spx-doctor agent` on the nodes of an sshd cluster lab
//! ([`super::sshd::SshLab`]), each reading its own node's
//! `[nodes.<node>.nats]`. Every process here is ours and stopped by pid on
//! Drop; the namespaces and files go with the labs.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::netns::{sh, Netns};
use super::sshd::{LabNode, SshLab, WAN_PREFIX};

/// The bus's address on the lab's wan plane.
pub const BUS_ADDR: &str = "198.19.0.254";
pub const TOKEN: &str = "spx-lab-token-7f3c";

/// True when Debian's nats-server is installed (.ci/run installs it).
pub fn available() -> bool {
    Path::new("/usr/sbin/nats-server").exists() || Path::new("/usr/bin/nats-server").exists()
}

/// A CA and a server certificate for `ip`, made with openssl: `ca.pem`,
/// `server.pem`, `server.key` in `dir` (and a CA key nobody else has).
pub fn pki(dir: &Path, ip: &str) {
    let p = |f: &str| dir.join(f).display().to_string();
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut ca = vec!["openssl", "req", "-x509"];
    ca.extend(ec);
    let (ca_key, ca_pem) = (p("ca.key"), p("ca.pem"));
    ca.extend([
        "-keyout",
        &ca_key,
        "-out",
        &ca_pem,
        "-days",
        "2",
        "-subj",
        "/CN=spx lab CA",
    ]);
    sh(&ca);
    let (key, csr) = (p("server.key"), p("server.csr"));
    let mut req = vec!["openssl", "req"];
    req.extend(ec);
    req.extend(["-keyout", &key, "-out", &csr, "-subj", "/CN=spinifex-nats"]);
    sh(&req);
    let ext = p("server.ext");
    std::fs::write(&ext, format!("subjectAltName=IP:{ip}\n")).unwrap();
    let pem = p("server.pem");
    sh(&[
        "openssl",
        "x509",
        "-req",
        "-in",
        &csr,
        "-CA",
        &ca_pem,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-out",
        &pem,
        "-days",
        "2",
        "-extfile",
        &ext,
    ]);
}

/// A process of ours whose stderr is kept.
pub struct Logged {
    pub child: Child,
    log: Arc<Mutex<String>>,
}

impl Logged {
    pub fn spawn(mut cmd: Command) -> Logged {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
        let log = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&log);
        each_line(child.stderr.take().unwrap(), move |line| {
            if let Ok(mut l) = sink.lock() {
                l.push_str(&line);
                l.push('\n');
            }
        });
        Logged { child, log }
    }

    pub fn text(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Wait until the log holds `needle` `n` times (panics after `within`).
    pub fn wait_for(&self, needle: &str, n: usize, within: Duration, what: &str) {
        let t0 = Instant::now();
        while self.text().matches(needle).count() < n {
            assert!(
                t0.elapsed() < within,
                "{what}: no {needle:?} within {within:?}:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A process of ours whose stdout lines are kept, each with when it came.
/// Hand every line `from` gives to `take`, on a thread of its own, until
/// it ends.
fn each_line(
    from: impl std::io::Read + Send + 'static,
    mut take: impl FnMut(String) + Send + 'static,
) {
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            take(line);
        }
    });
}

pub struct Tail {
    pub child: Child,
    lines: Arc<Mutex<Vec<(Instant, String)>>>,
    /// What it wrote on stderr, for a failure to show.
    errors: Arc<Mutex<Vec<String>>>,
}

impl Tail {
    pub fn spawn(mut cmd: Command) -> Tail {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        each_line(child.stdout.take().unwrap(), move |line| {
            if let Ok(mut l) = sink.lock() {
                l.push((Instant::now(), line));
            }
        });
        let errors = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&errors);
        each_line(child.stderr.take().unwrap(), move |line| {
            if let Ok(mut l) = sink.lock() {
                l.push(line);
            }
        });
        Tail {
            child,
            lines,
            errors,
        }
    }

    pub fn lines(&self) -> Vec<(Instant, String)> {
        self.lines.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// What it has written on stderr so far.
    pub fn errors(&self) -> Vec<String> {
        self.errors.lock().map(|e| e.clone()).unwrap_or_default()
    }

    /// The first line after `after` that `want` accepts, waiting up to
    /// `within` (panics then, with every line).
    pub fn wait(
        &self,
        after: Instant,
        within: Duration,
        what: &str,
        want: impl Fn(&str) -> bool,
    ) -> (Instant, String) {
        let t0 = Instant::now();
        loop {
            if let Some(hit) = self
                .lines()
                .into_iter()
                .find(|(t, l)| *t >= after && want(l))
            {
                return hit;
            }
            if t0.elapsed() >= within {
                let errors = self.errors.lock().map(|e| e.join("\n")).unwrap_or_default();
                panic!(
                    "{what}: nothing within {within:?}; lines:\n{}\nstderr:\n{errors}",
                    self.lines()
                        .iter()
                        .map(|(_, l)| l.as_str())
                        .collect::<Vec<_>>()
                        .join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Tail {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Debian's nats-server, as Spinifex's template configures it.
pub struct NatsServer {
    ns: String,
    conf: PathBuf,
    proc: Option<Logged>,
    /// `ip:4222`.
    pub addr: String,
    pub ca: PathBuf,
}

impl NatsServer {
    /// Certificates for `ip` and a server on `ip:4222` in `ns`, with its
    /// files in `dir`; `max_payload` as nats.conf writes it (`1MB`).
    pub fn start(ns: &Netns, dir: &Path, ip: &str, max_payload: &str) -> NatsServer {
        pki(dir, ip);
        let d = dir.display();
        let conf = dir.join("nats.conf");
        std::fs::create_dir_all(dir.join("js")).unwrap();
        std::fs::write(
            &conf,
            format!(
                "listen: {ip}:4222\n\
                 tls {{\n  cert_file: \"{d}/server.pem\"\n  key_file:  \"{d}/server.key\"\n  ca_file:   \"{d}/ca.pem\"\n}}\n\
                 server_name: spinifex-nats-lab\n\
                 authorization {{\n  token: \"{TOKEN}\"\n}}\n\
                 jetstream {{\n  store_dir: \"{d}/js/\"\n  max_memory_store: 64MB\n  max_file_store: 256MB\n}}\n\
                 debug: false\ntrace: false\nlogtime: true\n\
                 max_connections: 1000\nmax_payload: {max_payload}\nmax_pending: 64MB\n\
                 http: 127.0.0.1:8222\n"
            ),
        )
        .unwrap();
        let mut s = NatsServer {
            ns: ns.name.clone(),
            conf,
            proc: None,
            addr: format!("{ip}:4222"),
            ca: dir.join("ca.pem"),
        };
        s.restart();
        s
    }

    /// (Re)start it, ready to accept clients when this returns.
    pub fn restart(&mut self) {
        self.stop();
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns, "nats-server", "-c"])
            .arg(&self.conf);
        let p = Logged::spawn(cmd);
        p.wait_for("Server is ready", 1, Duration::from_secs(15), "nats-server");
        self.proc = Some(p);
    }

    /// Rewrite nats.conf's `max_payload` and restart with it.
    pub fn set_max_payload(&mut self, max_payload: &str) {
        let text = std::fs::read_to_string(&self.conf).unwrap();
        let text: String = text
            .lines()
            .map(|l| {
                if l.starts_with("max_payload:") {
                    format!("max_payload: {max_payload}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        std::fs::write(&self.conf, text).unwrap();
        self.restart();
    }

    pub fn stop(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.stop();
        }
    }

    pub fn log(&self) -> String {
        self.proc.as_ref().map(Logged::text).unwrap_or_default()
    }
}

/// `[nodes.NAME.nats]` for every node: the same bus, CA and token.
pub fn nats_tables(names: &[String], server: &str, ca: &str, token: &str) -> String {
    names
        .iter()
        .map(|n| {
            format!(
                "[nodes.{n}.nats]\nhost = \"{server}\"\ncacert = \"{ca}\"\n[nodes.{n}.nats.acl]\ntoken = \"{token}\"\n"
            )
        })
        .collect()
}

/// An sshd cluster lab with a bus and an agent on every node.
pub struct NatsLab {
    pub ssh: SshLab,
    pub bus: Netns,
    pub server: NatsServer,
    agents: Vec<Option<Logged>>,
    pub dir: tempfile::TempDir,
    /// Every agent's arguments after `agent --config PATH`.
    agent_args: Vec<String>,
    /// Every agent's environment beyond the test's.
    pub agent_env: Vec<(usize, String, String)>,
    /// The end of every node's config.
    extra_config: String,
}

impl NatsLab {
    /// Agents that answer requests only (`--interval 0`): the request
    /// tests count runs.
    pub fn new(nodes: Vec<LabNode>) -> NatsLab {
        NatsLab::with_agents(nodes, &["--interval", "0"], &[], "")
    }

    /// Agents started with `args`, and `env` for the agent of node `i`
    /// (`(i, name, value)`); every node's config ends with `extra`.
    pub fn with_agents(
        nodes: Vec<LabNode>,
        args: &[&str],
        env: &[(usize, &str, &str)],
        extra: &str,
    ) -> NatsLab {
        let ssh = SshLab::new(nodes);
        let bus = Netns::new();
        bus.veth("eth0", &ssh.wan, "wbus");
        ssh.wan.ip(&["link", "set", "wbus", "master", "sw"]);
        bus.ip(&["addr", "add", &format!("{BUS_ADDR}/24"), "dev", "eth0"]);
        let dir = tempfile::Builder::new()
            .prefix("spx-bus-")
            .tempdir()
            .unwrap();
        let server = NatsServer::start(&bus, dir.path(), BUS_ADDR, "1MB");
        let mut lab = NatsLab {
            agents: (0..ssh.names.len()).map(|_| None).collect(),
            ssh,
            bus,
            server,
            dir,
            agent_args: args.iter().map(|a| a.to_string()).collect(),
            agent_env: env
                .iter()
                .map(|(i, k, v)| (*i, k.to_string(), v.to_string()))
                .collect(),
            extra_config: extra.to_owned(),
        };
        let ca = lab.server.ca.display().to_string();
        for i in 0..lab.ssh.names.len() {
            lab.write_config(i, TOKEN, &ca);
            // Each node its own machine, as real nodes are: `ip netns exec`
            // binds /etc/netns/NS/machine-id over /etc/machine-id.
            std::fs::write(
                lab.etc(i).with_file_name("machine-id"),
                format!("{}\n", machine_id(&lab.ssh.fabric.node(i).ns.name)),
            )
            .unwrap();
        }
        for i in 0..lab.ssh.names.len() {
            lab.start_agent(i, &[]);
        }
        for i in 0..lab.ssh.names.len() {
            lab.wait_connected(i, 1);
        }
        lab
    }

    /// Node `i`'s config: the lab's, plus every node's NATS table with
    /// this token and CA path.
    pub fn write_config(&self, i: usize, token: &str, ca: &str) {
        let text = self.ssh.config_text(i, false, 9000)
            + &nats_tables(&self.ssh.names, &self.server.addr, ca, token)
            + &self.extra_config;
        self.ssh.write_config(i, &text);
    }

    /// /etc/netns/NS/spinifex of node `i`.
    pub fn etc(&self, i: usize) -> PathBuf {
        PathBuf::from("/etc/netns")
            .join(&self.ssh.fabric.node(i).ns.name)
            .join("spinifex")
    }

    /// Start node `i`'s agent in its namespace, with `args` after `agent`.
    /// Its config is named by its path on this host: a long-lived agent
    /// must not depend on the /etc/spinifex mount point that `ip netns
    /// exec` binds over, which another test process may remove when it is
    /// done with it.
    pub fn start_agent(&mut self, i: usize, args: &[&str]) {
        self.kill_agent(i);
        let mut cmd = self.ssh.fabric.node(i).ns.command(super::bin());
        cmd.arg("agent")
            .arg("--config")
            .arg(self.etc(i).join("spinifex.toml"))
            .args(&self.agent_args)
            .args(args)
            .env_remove("SPINIFEX_CONFIG_PATH")
            .env_remove("JOURNAL_STREAM")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
            .env("HOME", "/nonexistent-spx-test-home");
        for (_, k, v) in self.agent_env.iter().filter(|(j, _, _)| *j == i) {
            cmd.env(k, v);
        }
        self.agents[i] = Some(Logged::spawn(cmd));
    }

    /// Stop node `i`'s agent (SIGKILL, our child).
    pub fn kill_agent(&mut self, i: usize) {
        if let Some(mut a) = self.agents[i].take() {
            a.stop();
        }
    }

    pub fn agent_log(&self, i: usize) -> String {
        self.agents[i]
            .as_ref()
            .map(Logged::text)
            .unwrap_or_default()
    }

    pub fn agent_pid(&self, i: usize) -> Option<u32> {
        self.agents[i].as_ref().map(|a| a.child.id())
    }

    /// Wait until node `i`'s agent has said `needle` `n` times.
    pub fn wait_log(&self, i: usize, needle: &str, n: usize, within: Duration) {
        let a = self.agents[i].as_ref().expect("an agent");
        a.wait_for(needle, n, within, &self.ssh.names[i]);
    }

    /// Wait until node `i`'s agent is connected for the `n`-th time.
    pub fn wait_connected(&self, i: usize, n: usize) {
        self.wait_log(i, "connected to NATS at", n, Duration::from_secs(15));
    }

    /// The coordinator on node `i`: `spx-doctor --cluster` and its
    /// config (by its path on this host, as the agents' are), which
    /// decides the transport.
    pub fn coordinator(&self, i: usize) -> Command {
        let mut cmd = self.ssh.fabric.node(i).spx();
        cmd.env_remove("SPX_DOCTOR_VIA")
            .env_remove("SPINIFEX_CONFIG_PATH")
            .env_remove("NO_COLOR")
            .env_remove("TRACEPARENT")
            .arg("--cluster")
            .arg("--config")
            .arg(self.etc(i).join("spinifex.toml"));
        cmd
    }
}

/// A machine id of 32 hex digits for the namespace `name` (a lab node's,
/// a clone's): distinct for every name, as /etc/machine-id is per machine.
pub fn machine_id(name: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut out = String::new();
    for salt in 0..2u8 {
        let mut h = std::hash::DefaultHasher::new();
        (name, salt).hash(&mut h);
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out
}

/// RSS of a process, in KiB (VmRSS).
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// The wan address of node `i` (where its sshd is; the bus is beside).
pub fn wan(i: usize) -> String {
    format!("{WAN_PREFIX}.{}", i + 1)
}
