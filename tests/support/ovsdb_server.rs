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
