//! Real `ovsdb-server` processes for tests: a database created from the
//! schema Debian installs (`openvswitch-switch`, `ovn-central`) in a temp
//! dir, served on a unix socket and on a 127.0.0.1 port the kernel picks
//! (read back from the server's log), killed on Drop. Never the system
//! services: only our own children, in our own directories.
//!
//! Rows are written with the stock tools (`ovn-nbctl`, `ovs-vsctl`,
//! `ovsdb-client`), which is fine in tests: they are the independent oracle.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const NB_SCHEMA: &str = "/usr/share/ovn/ovn-nb.ovsschema";
pub const SB_SCHEMA: &str = "/usr/share/ovn/ovn-sb.ovsschema";
pub const OVS_SCHEMA: &str = "/usr/share/openvswitch/vswitch.ovsschema";

pub struct OvsdbServer {
    child: Child,
    dir: tempfile::TempDir,
    pub sock: PathBuf,
    pub port: u16,
}

impl OvsdbServer {
    /// An `OVN_Northbound` server, initialised (`ovn-nbctl init`: one
    /// `NB_Global` row).
    pub fn nb() -> OvsdbServer {
        let s = OvsdbServer::start(NB_SCHEMA);
        s.nbctl(&["init"]);
        s
    }

    /// An `OVN_Southbound` server with no rows.
    pub fn sb() -> OvsdbServer {
        OvsdbServer::start(SB_SCHEMA)
    }

    /// An `Open_vSwitch` server with its one row (`ovs-vsctl init`).
    pub fn ovs() -> OvsdbServer {
        let s = OvsdbServer::start(OVS_SCHEMA);
        s.vsctl(&["init"]);
        s
    }

    pub fn start(schema: &str) -> OvsdbServer {
        OvsdbServer::create(|db| run("ovsdb-tool", &["create", path(db), schema_file(schema)]))
    }

    /// A one-member raft cluster (`ovsdb-tool create-cluster`): the
    /// `_Server` database reports it `clustered` and connected.
    pub fn clustered(schema: &str) -> OvsdbServer {
        let raft = format!("tcp:127.0.0.1:{}", refused_port());
        OvsdbServer::create(|db| {
            run(
                "ovsdb-tool",
                &["create-cluster", path(db), schema_file(schema), &raft],
            )
        })
    }

    /// A raft member still joining a cluster whose only other member is
    /// gone: up, answering `_Server`, but its `db_name` is not available.
    pub fn joining(db_name: &str) -> OvsdbServer {
        let local = format!("tcp:127.0.0.1:{}", refused_port());
        let remote = format!("tcp:127.0.0.1:{}", refused_port());
        OvsdbServer::create(|db| {
            run(
                "ovsdb-tool",
                &["join-cluster", path(db), db_name, &local, &remote],
            )
        })
    }

    fn create(make_db: impl FnOnce(&Path) -> String) -> OvsdbServer {
        let dir = tempfile::Builder::new()
            .prefix("spx-ovsdb-")
            .tempdir()
            .expect("tempdir");
        let db = dir.path().join("db");
        let sock = dir.path().join("db.sock");
        let log = dir.path().join("log");
        make_db(&db);
        let child = Command::new("ovsdb-server")
            .args([
                path(&db),
                &format!("--remote=punix:{}", sock.display()),
                "--remote=ptcp:0:127.0.0.1",
                &format!("--unixctl={}", dir.path().join("ctl").display()),
                &format!("--log-file={}", log.display()),
                "-vfile:info",
                "-vconsole:off",
                "--no-chdir",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ovsdb-server");
        let mut server = OvsdbServer {
            child,
            dir,
            sock,
            port: 0,
        };
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            // The ptcp:0 remote logs `INFO|0:127.0.0.1: listening on port N`;
            // a raft listener logs its own line, with its own port first.
            let port = text
                .lines()
                .filter_map(|l| l.split("|0:127.0.0.1: listening on port ").nth(1))
                .find_map(|p| p.trim().parse::<u16>().ok());
            if let (Some(port), true) = (port, server.sock.exists()) {
                server.port = port;
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("ovsdb-server exited ({status}): {text}");
            }
            assert!(Instant::now() < until, "ovsdb-server did not start: {text}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn unix(&self) -> String {
        format!("unix:{}", self.sock.display())
    }

    pub fn tcp(&self) -> String {
        format!("tcp:127.0.0.1:{}", self.port)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn nbctl(&self, args: &[&str]) -> String {
        let db = format!("--db={}", self.unix());
        let mut argv = vec![db.as_str(), "--no-leader-only"];
        argv.extend_from_slice(args);
        run("ovn-nbctl", &argv)
    }

    pub fn sbctl(&self, args: &[&str]) -> String {
        let db = format!("--db={}", self.unix());
        let mut argv = vec![db.as_str()];
        argv.extend_from_slice(args);
        run("ovn-sbctl", &argv)
    }

    pub fn vsctl(&self, args: &[&str]) -> String {
        let db = format!("--db={}", self.unix());
        let mut argv = vec![db.as_str(), "--no-wait"];
        argv.extend_from_slice(args);
        run("ovs-vsctl", &argv)
    }

    /// `ovsdb-client transact` with a JSON transaction.
    pub fn transact(&self, json: &str) -> String {
        run("ovsdb-client", &["transact", &self.unix(), json])
    }
}

impl Drop for OvsdbServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn schema_file(schema: &str) -> &str {
    assert!(
        Path::new(schema).exists(),
        "{schema} missing: install openvswitch-switch and ovn-central (--no-install-recommends)"
    );
    schema
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A 127.0.0.1 port with nothing listening (bound, then released): connects
/// are refused.
pub fn refused_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// A listener that completes TCP handshakes (the kernel does that for the
/// backlog) and never says a word: a hung raft member. Kept alive by the
/// returned value.
pub fn silent_listener() -> (std::net::TcpListener, String) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let ep = format!("tcp:127.0.0.1:{}", l.local_addr().expect("addr").port());
    (l, ep)
}

/// The election timer of every [`OvsdbCluster`].
pub const ELECTION_TIMER_MS: u64 = 4000;

/// A raft cluster of real `ovsdb-server` processes for one OVN database,
/// made as Spinifex's install makes it (`ovsdb-tool create-cluster` on the
/// first member, `join-cluster` on the others) and laid out like its DB
/// nodes: member `i` listens for clients on `tcp:127.X.Y.i:6641` (NB) or
/// `:6642` (SB) and on a unix socket, and speaks raft on `:6643`/`:6644`.
/// Every cluster gets a loopback /24 of its own (from this process's pid
/// and a counter), so its fixed ports never meet another test's; the unix
/// sockets reach it from any network namespace. Members are killed on
/// Drop, even when a test fails.
pub struct OvsdbCluster {
    pub db_name: &'static str,
    pub members: Vec<RaftMember>,
    dir: tempfile::TempDir,
}

/// One member: its process (None once stopped), addresses and files.
pub struct RaftMember {
    child: Option<Child>,
    pub addr: String,
    pub client_port: u16,
    pub raft_port: u16,
    pub sock: PathBuf,
    pub ctl: PathBuf,
    pub db: PathBuf,
    log: PathBuf,
}

impl RaftMember {
    /// `tcp:ADDR:PORT`, the client endpoint.
    pub fn tcp(&self) -> String {
        format!("tcp:{}:{}", self.addr, self.client_port)
    }

    pub fn unix(&self) -> String {
        format!("unix:{}", self.sock.display())
    }

    /// Its raft address, as `cluster/status` shows it.
    pub fn raft(&self) -> String {
        format!("tcp:{}:{}", self.addr, self.raft_port)
    }

    /// `ovs-appctl -t CTL ARGS…` against this member.
    pub fn appctl(&self, args: &[&str]) -> String {
        let ctl = path(&self.ctl).to_owned();
        let mut argv = vec!["-t", ctl.as_str()];
        argv.extend_from_slice(args);
        run("ovs-appctl", &argv)
    }

    /// Its `_Server` `Database` row for `db`, as `ovsdb-client` (the
    /// oracle) reads it: (connected, leader, index).
    pub fn server_row(&self, db: &str) -> Option<(bool, bool, Option<u64>)> {
        let out = Command::new("ovsdb-client")
            .args([
                "--timeout=2",
                "transact",
                &self.unix(),
                &format!(
                    r#"["_Server",{{"op":"select","table":"Database","where":[["name","==","{db}"]],"columns":["connected","leader","index"]}}]"#
                ),
            ])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        let row = &v[0]["rows"][0];
        Some((
            row["connected"].as_bool()?,
            row["leader"].as_bool()?,
            row["index"].as_u64(),
        ))
    }

    pub fn running(&self) -> bool {
        self.child.is_some()
    }
}

impl OvsdbCluster {
    /// A clustered `OVN_Northbound` of `n` members, initialised
    /// (`ovn-nbctl init`), every member connected and one leading.
    pub fn nb(n: usize) -> OvsdbCluster {
        let c = OvsdbCluster::start("OVN_Northbound", NB_SCHEMA, 6641, 6643, n, &new_net());
        c.nbctl(&["init"]);
        c
    }

    /// A clustered `OVN_Southbound` of `n` members, with no rows.
    pub fn sb(n: usize) -> OvsdbCluster {
        OvsdbCluster::start("OVN_Southbound", SB_SCHEMA, 6642, 6644, n, &new_net())
    }

    /// The `OVN_Southbound` raft beside `nb`'s: member `i` on the same
    /// address as NB's member `i`, as on Spinifex's database nodes.
    pub fn sb_beside(nb: &OvsdbCluster) -> OvsdbCluster {
        let net = nb.members[0]
            .addr
            .rsplit_once('.')
            .expect("v4")
            .0
            .to_owned();
        OvsdbCluster::start(
            "OVN_Southbound",
            SB_SCHEMA,
            6642,
            6644,
            nb.members.len(),
            &net,
        )
    }

    fn start(
        db_name: &'static str,
        schema: &str,
        client_port: u16,
        raft_port: u16,
        n: usize,
        net: &str,
    ) -> OvsdbCluster {
        let dir = tempfile::Builder::new()
            .prefix("spx-raft-")
            .tempdir()
            .expect("tempdir");
        let mut cluster = OvsdbCluster {
            db_name,
            members: Vec::new(),
            dir,
        };
        for i in 0..n {
            let d = cluster.dir.path();
            let m = RaftMember {
                child: None,
                addr: format!("{net}.{}", i + 1),
                client_port,
                raft_port,
                sock: d.join(format!("m{i}.sock")),
                ctl: d.join(format!("m{i}.ctl")),
                db: d.join(format!("m{i}.db")),
                log: d.join(format!("m{i}.log")),
            };
            if i == 0 {
                // An election timer of 4 s, not OVS's 1 s: on a loaded
                // 2-core test machine a member starved for a second would
                // move the leadership under a test's feet.
                run(
                    "ovsdb-tool",
                    &[
                        &format!("--election-timer={ELECTION_TIMER_MS}"),
                        "create-cluster",
                        path(&m.db),
                        schema_file(schema),
                        &m.raft(),
                    ],
                );
            } else {
                let first = cluster.members[0].raft();
                run(
                    "ovsdb-tool",
                    &["join-cluster", path(&m.db), db_name, &m.raft(), &first],
                );
            }
            cluster.members.push(m);
        }
        for i in 0..n {
            cluster.start_member(i);
        }
        cluster.wait_healthy();
        cluster
    }

    /// (Re)start member `i` on its database file.
    pub fn start_member(&mut self, i: usize) {
        let m = &mut self.members[i];
        let child = Command::new("ovsdb-server")
            .args([
                path(&m.db),
                &format!("--remote=punix:{}", m.sock.display()),
                &format!("--remote=ptcp:{}:{}", m.client_port, m.addr),
                &format!("--unixctl={}", m.ctl.display()),
                &format!("--log-file={}", m.log.display()),
                "-vfile:info",
                "-vconsole:off",
                "--no-chdir",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ovsdb-server");
        m.child = Some(child);
        let until = Instant::now() + Duration::from_secs(10);
        while !(m.sock.exists() && m.ctl.exists()) {
            assert!(
                Instant::now() < until,
                "member {i} did not start: {}",
                std::fs::read_to_string(&m.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stop member `i` (SIGKILL, as a crash or a power cut): its peers see
    /// it go, its clients get connection refused.
    pub fn stop_member(&mut self, i: usize) {
        let m = &mut self.members[i];
        if let Some(mut c) = m.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_file(&m.sock);
    }

    /// Freeze member `i` (SIGSTOP): the kernel still completes TCP
    /// handshakes for it, but it never answers. Killed on Drop all the same.
    pub fn pause_member(&self, i: usize) {
        self.signal(i, nix::sys::signal::Signal::SIGSTOP);
    }

    pub fn resume_member(&self, i: usize) {
        self.signal(i, nix::sys::signal::Signal::SIGCONT);
    }

    fn signal(&self, i: usize, signal: nix::sys::signal::Signal) {
        let child = self.members[i].child.as_ref().expect("running");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal)
            .expect("signal our own ovsdb-server");
    }

    /// Wait until every running member answers connected and exactly one
    /// leads (the oracle: `ovsdb-client`'s `_Server` rows).
    pub fn wait_healthy(&self) {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let rows: Vec<_> = self
                .members
                .iter()
                .filter(|m| m.running())
                .map(|m| m.server_row(self.db_name))
                .collect();
            let healthy = rows.iter().all(|r| r.is_some_and(|(c, _, _)| c));
            let leaders = rows.iter().filter(|r| r.is_some_and(|(_, l, _)| l)).count();
            if healthy && leaders == 1 {
                return;
            }
            assert!(
                Instant::now() < until,
                "{}: no healthy raft within 30 s: {rows:?}",
                self.db_name
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The index of the member that leads (the oracle's).
    pub fn leader(&self) -> usize {
        self.members
            .iter()
            .position(|m| m.running() && m.server_row(self.db_name).is_some_and(|(_, l, _)| l))
            .expect("a leader")
    }

    /// Every running member's unix socket, as a `--db` list.
    pub fn unix_list(&self) -> String {
        self.members
            .iter()
            .map(RaftMember::unix)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Every member's tcp endpoint, as a `--db` list.
    pub fn tcp_list(&self) -> String {
        self.members
            .iter()
            .map(RaftMember::tcp)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `ovn-nbctl` against the running members (it finds the leader).
    pub fn nbctl(&self, args: &[&str]) -> String {
        let db = format!("--db={}", self.running_list());
        let mut argv = vec![db.as_str()];
        argv.extend_from_slice(args);
        run("ovn-nbctl", &argv)
    }

    /// `ovn-sbctl` against the running members (it finds the leader).
    pub fn sbctl(&self, args: &[&str]) -> String {
        let db = format!("--db={}", self.running_list());
        let mut argv = vec![db.as_str()];
        argv.extend_from_slice(args);
        run("ovn-sbctl", &argv)
    }

    fn running_list(&self) -> String {
        self.members
            .iter()
            .filter(|m| m.running())
            .map(RaftMember::unix)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Raise the election timer to `ms` (doubling, as OVS allows, each step
    /// committed before the next), so that a member cut off from raft stays
    /// a connected follower for that long.
    pub fn set_election_timer(&self, ms: u64) {
        let mut t = ELECTION_TIMER_MS;
        while t < ms {
            t = (t * 2).min(ms);
            let leader = &self.members[self.leader()];
            leader.appctl(&[
                "cluster/change-election-timer",
                self.db_name,
                &t.to_string(),
            ]);
            let until = Instant::now() + Duration::from_secs(10);
            while !leader
                .appctl(&["cluster/status", self.db_name])
                .contains(&format!("Election timer: {t}\n"))
            {
                assert!(Instant::now() < until, "election timer {t} not committed");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// A loopback /24 of this cluster's own, `127.X.Y`: from this process's id
/// and a counter, so tests running at once (here or in another process)
/// never share one.
fn new_net() -> String {
    static CLUSTERS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let key = std::process::id()
        .wrapping_mul(64)
        .wrapping_add(CLUSTERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    format!("127.{}.{}", 16 + (key / 250) % 234, 1 + key % 250)
}

impl Drop for OvsdbCluster {
    fn drop(&mut self) {
        for m in &mut self.members {
            if let Some(mut c) = m.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}
