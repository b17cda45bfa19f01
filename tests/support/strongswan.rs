//! A strongSwan mesh in the kernel lab: N namespaces of one guest as N
//! Spinifex nodes (`n1`.., underlay 198.18.0.N on one bridge, geneve between
//! every pair), each running Debian's strongSwan (charon with the starter,
//! the way `openvswitch-ipsec` runs it) with its own configuration, trust
//! store, certificates, run directory and OVS database, configured the way
//! a Spinifex node is:
//!
//! - **Certificates** are made at test time on the host, as Spinifex's
//!   `admin/ipsec.go` issues them: an RSA cluster CA, and per node an RSA
//!   key (PKCS#8) and a certificate with CN and dNSName the chassis name, O
//!   `Spinifex Platform`, the node's IP, key usage digitalSignature and
//!   keyEncipherment, EKUs clientAuth, serverAuth and ipsecIKE. They sit at
//!   `/etc/spinifex/ipsec/peer.pem`, `peer.key` (0600) and `/etc/spinifex/ca.pem`
//!   with `ipsec/ca.pem` linking to it, and the CA is linked into charon's
//!   trust store as `/etc/ipsec.d/cacerts/spinifex-ca.pem`.
//! - **The IKE configuration** (`/etc/ipsec.conf`, `/etc/ipsec.secrets`,
//!   `/etc/strongswan.d/ovs.conf`) is written by ovs-monitor-ipsec's own
//!   code, from Debian's `openvswitch-ipsec` (3.1.0; its geneve template is
//!   the one in OVS's main branch): its `IPsecMonitor` reads an
//!   `Open_vSwitch` row (certificate, private_key, ca_cert) and one geneve
//!   `Interface` per peer (`remote_ip`, `remote_name`), as OVN sets them, and
//!   runs its config writer; only its `ipsec update` is left out, and the
//!   certificate's CN is read from the host's copy of the file.
//! - **Private directories**: `ip netns exec` binds `/etc/netns/nN/*` over
//!   `/etc` (ipsec.conf, ipsec.secrets, ipsec.d, strongswan.d, spinifex), and
//!   every command run as the node ([`Mesh::enter`]) also gets
//!   `/run/spx-nodes/nN` bound over `/var/run` (the guest's `/var/run` is
//!   made a directory of its own, not the link to `/run`): the starter's and
//!   charon's pid files and sockets, and the node's OVS database at
//!   `/var/run/openvswitch/db.sock`, where a node's doctor looks by default.
//!   From the guest's own namespace they are under [`Mesh::run_dir`].
//! - **charon logs** to `/var/run/charon.log` of its node (a lab file in
//!   strongswan.d, `zz-spx-lab.conf`: a node logs to syslog, the guest has
//!   none).
//!
//! The facts it was built to show (measured; see `tests/kernel_lab/strongswan.rs`):
//! until the first geneve packet a node holds only its 4 trap policies per
//! peer; a packet makes IKE bring up two CHILD_SAs per peer (4 ESP SAs);
//! a stopped starter takes its SAs and policies with it; a packet toward a
//! peer whose IKE is gone leaves an ACQUIRE state.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::vm::{quote, run_tool, Vm, GUEST_FILES};

/// What a guest with this mesh loads.
pub const MODULES: [&str; 7] = [
    "veth",
    "bridge",
    "geneve",
    "xfrm_user",
    "esp4",
    // ESP's IV generator needs the DRBG, which needs jitter entropy.
    "jitterentropy_rng",
    "drbg",
];

/// ovs-monitor-ipsec, from Debian's openvswitch-ipsec.
pub const OVS_MONITOR_IPSEC: &str = "/usr/share/openvswitch/scripts/ovs-monitor-ipsec";
/// The interpreter it runs under (python3-openvswitch is Debian's).
const PYTHON: &str = "/usr/bin/python3";
const OPENSSL: &str = "/usr/bin/openssl";
const OVSDB_TOOL: &str = "/usr/bin/ovsdb-tool";
const VSWITCH_SCHEMA: &str = "/usr/share/openvswitch/vswitch.ovsschema";
const SB_SCHEMA: &str = "/usr/share/ovn/ovn-sb.ovsschema";
const NB_SCHEMA: &str = "/usr/share/ovn/ovn-nb.ovsschema";
/// strongSwan's starter and charon (strongswan-starter, strongswan-charon).
const STARTER: &str = "/usr/lib/ipsec/starter";
const CHARON: &str = "/usr/lib/ipsec/charon";

/// strongSwan's `/etc/ipsec.d` (as Debian ships it): made empty per node.
const IPSEC_D: [&str; 9] = [
    "aacerts",
    "acerts",
    "cacerts",
    "certs",
    "crls",
    "ocspcerts",
    "policies",
    "private",
    "reqs",
];

/// The geneve destination port.
pub const GENEVE_PORT: u16 = 6081;

/// Runs ovs-monitor-ipsec's own config writer for every node: its
/// `IPsecMonitor` (strongSwan) reads the `Open_vSwitch` and `Interface`
/// rows given, as its OVSDB loop would, and `run()` writes ipsec.conf and
/// ipsec.secrets under the node's root; `restart_ike_daemon()` writes
/// ovs.conf the same way, without its `ipsec restart`. Its `ipsec update`
/// (`refresh`) is replaced: nothing runs on the host.
const WRITER: &str = r#"
import importlib.machinery, importlib.util, json, os, sys, types
spec = json.load(sys.stdin)
loader = importlib.machinery.SourceFileLoader("ovs_monitor_ipsec", spec["script"])
mod = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
loader.exec_module(mod)
for node in spec["nodes"]:
    root = node["root"]
    os.makedirs(root + "/etc/strongswan.d", exist_ok=True)
    monitor = mod.IPsecMonitor(root, "strongswan", False, None)
    mod.monitor = monitor
    monitor.ike_helper.refresh = lambda monitor: None
    # The certificate is read (for its CN) where the host holds it.
    read_cn = monitor._get_cn_from_cert
    monitor._get_cn_from_cert = lambda cert: read_cn(root + cert)
    ovs = types.SimpleNamespace(other_config=node["other_config"])
    ifaces = [types.SimpleNamespace(name=t["name"], type="geneve", options=t["options"],
                                    cfm_fault=[], ofport=[]) for t in node["tunnels"]]
    monitor.read_ovsdb({
        "Open_vSwitch": types.SimpleNamespace(rows={0: ovs}),
        "Interface": types.SimpleNamespace(rows=dict(enumerate(ifaces))),
    })
    monitor.run()
    helper = monitor.ike_helper
    with open(helper.CHARON_CONF, "w") as f:
        f.write(helper.STRONGSWAN_CONF)
"#;

/// The lab's own addition to each node's strongswan.d: charon logs to a
/// file in its run directory (a node logs to syslog; the guest has none).
const LAB_LOG: &str = "charon {\n  filelog {\n    lab {\n      path = /var/run/charon.log\n      time_format = %s\n      default = 1\n      ike = 2\n      knl = 2\n      cfg = 2\n    }\n  }\n}\n";

/// Runs a command as node `$1`: in its namespace, with its `/etc` (ip netns
/// exec binds /etc/netns/$1) and its `/var/run`.
const ENTER: &str = r#"#!/bin/sh
# Run a command as lab node $1 (tests/support/strongswan.rs): its network
# namespace, its /etc (ip netns exec binds /etc/netns/$1/* over /etc) and
# its own /var/run (the starter's, charon's and OVS's pid files and sockets).
node=$1
shift
exec ip netns exec "$node" /bin/sh -c 'mount --bind "/run/spx-nodes/$0" /var/run && exec "$@"' "$node" "$@"
"#;

/// One node of the mesh.
#[derive(Clone, Debug)]
pub struct Node {
    /// 1-based.
    pub index: u32,
    /// The network namespace: `n1`.
    pub ns: String,
    /// The OVS chassis id and host name, the certificate's CN: `spx1`.
    pub chassis: String,
    /// Its underlay address: `198.18.0.1`.
    pub addr: String,
}

/// A prepared (then set up) strongSwan mesh; see the module documentation.
pub struct Mesh {
    pub nodes: Vec<Node>,
    /// The host side: certificates and configs, one tree per node
    /// (`nN/etc/...`), before [`Mesh::place`] copies them into the guest's
    /// shared directory.
    prepared: tempfile::TempDir,
    /// Where the guest sees them, once placed.
    placed: Option<PathBuf>,
}

/// Boot the kernel lab for a test group on a mesh of `count` nodes: the
/// certificates and configs made on the host while the guest boots, then
/// placed where it sees them. `None` (the skip said why) without strongSwan,
/// openvswitch-ipsec or the lab.
pub fn boot(test: &str, count: u32) -> Option<(Vm, Mesh)> {
    let missing = missing_tools();
    if !super::tool_or_skip(test, "strongSwan and openvswitch-ipsec", missing.is_none()) {
        return None;
    }
    let image = super::vm::lab_or_skip(test)?;
    let prepared = std::thread::spawn(move || Mesh::prepare(count));
    let mut opts = super::vm::VmOptions::default().modules(&MODULES);
    // IKE under emulation on a shared machine: generous, never endless.
    opts.hard_limit = Duration::from_secs(600);
    let vm = Vm::boot(image, opts);
    let mut mesh = prepared
        .join()
        .unwrap()
        .expect("prepare the strongSwan mesh");
    mesh.place(&vm);
    Some((vm, mesh))
}

/// The underlay address of node `n`.
pub fn addr(n: u32) -> String {
    format!("198.18.0.{n}")
}

/// The geneve tunnel of the pair (`a`, `b`): node `a`'s device toward `b`
/// and `b`'s overlay address on it (`10.ab.0.b`, a < b in the subnet).
pub fn overlay(a: u32, b: u32) -> (String, String) {
    let (lo, hi) = (a.min(b), a.max(b));
    (format!("gnv{b}"), format!("10.{lo}{hi}.0.{b}"))
}

/// Why this machine cannot run the mesh, if it cannot.
pub fn missing_tools() -> Option<String> {
    let missing: Vec<&str> = [
        OVS_MONITOR_IPSEC,
        PYTHON,
        OPENSSL,
        STARTER,
        CHARON,
        "/usr/sbin/ipsec",
        OVSDB_TOOL,
        VSWITCH_SCHEMA,
        SB_SCHEMA,
        NB_SCHEMA,
    ]
    .into_iter()
    .filter(|p| !Path::new(p).exists())
    .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "{} missing (bash .ci/run installs strongswan-starter, strongswan-charon, libstrongswan-standard-plugins, openvswitch-ipsec, openssl)",
            missing.join(", ")
        )
    })
}

fn openssl(args: &[&str], cwd: &Path) -> Result<String, String> {
    run_tool(Command::new(OPENSSL).args(args).current_dir(cwd))
}

/// A database file of `schema` at `path` holding what `ops` insert (an
/// OVSDB transaction's operations), made with `ovsdb-tool` on the host:
/// the guest only serves it.
fn database(path: &Path, schema: &str, ops: serde_json::Value) -> Result<(), String> {
    run_tool(Command::new(OVSDB_TOOL).arg("create").arg(path).arg(schema))?;
    let name: serde_json::Value = serde_json::from_str::<serde_json::Value>(
        &fs::read_to_string(schema).map_err(|e| format!("{schema}: {e}"))?,
    )
    .map_err(|e| format!("{schema}: {e}"))?["name"]
        .clone();
    let mut txn = vec![name];
    txn.extend(ops.as_array().cloned().unwrap_or_default());
    let out = run_tool(
        Command::new(OVSDB_TOOL)
            .arg("transact")
            .arg(path)
            .arg(serde_json::Value::Array(txn).to_string()),
    )?;
    if out.contains("\"error\"") {
        return Err(format!("ovsdb-tool transact {}: {out}", path.display()));
    }
    Ok(())
}

fn map(pairs: &[(&str, &str)]) -> serde_json::Value {
    serde_json::json!(["map", pairs.iter().map(|(k, v)| [k, v]).collect::<Vec<_>>()])
}

impl Mesh {
    /// The host side of a mesh of `count` nodes (at most 9): the cluster
    /// CA, every node's key and certificate, and its IKE configuration
    /// written by ovs-monitor-ipsec. Runs on the host while the guest
    /// boots (a second or two of key generation).
    pub fn prepare(count: u32) -> Result<Mesh, String> {
        assert!((2..=9).contains(&count), "2 to 9 nodes");
        if let Some(why) = missing_tools() {
            return Err(why);
        }
        let prepared = tempfile::Builder::new()
            .prefix("spx-strongswan-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let dir = prepared.path();
        let nodes: Vec<Node> = (1..=count)
            .map(|n| Node {
                index: n,
                ns: format!("n{n}"),
                chassis: format!("spx{n}"),
                addr: addr(n),
            })
            .collect();
        let rsa = ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"];
        openssl(&[&["genpkey", "-out", "ca.key"], &rsa[..]].concat(), dir)?;
        openssl(
            &[
                "req",
                "-x509",
                "-new",
                "-key",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "30",
                "-subj",
                "/O=Spinifex Platform/CN=Spinifex lab cluster CA",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
            dir,
        )?;
        let mut spec = Vec::new();
        for node in &nodes {
            let etc = dir.join(&node.ns).join("etc");
            let ipsec = etc.join("spinifex/ipsec");
            fs::create_dir_all(&ipsec).map_err(|e| e.to_string())?;
            let key = ipsec.join("peer.key");
            let key_s = key.to_string_lossy();
            openssl(&[&["genpkey", "-out", &key_s], &rsa[..]].concat(), dir)?;
            let ext = dir.join(format!("{}.ext", node.ns));
            fs::write(
                &ext,
                format!(
                    "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n\
                     extendedKeyUsage=clientAuth,serverAuth,1.3.6.1.5.5.7.3.17\n\
                     subjectAltName=DNS:{},IP:{}\n",
                    node.chassis, node.addr
                ),
            )
            .map_err(|e| e.to_string())?;
            let csr = dir.join(format!("{}.csr", node.ns));
            let subj = format!("/O=Spinifex Platform/CN={}", node.chassis);
            openssl(
                &[
                    "req",
                    "-new",
                    "-key",
                    &key_s,
                    "-subj",
                    &subj,
                    "-out",
                    &csr.to_string_lossy(),
                ],
                dir,
            )?;
            openssl(
                &[
                    "x509",
                    "-req",
                    "-in",
                    &csr.to_string_lossy(),
                    "-CA",
                    "ca.pem",
                    "-CAkey",
                    "ca.key",
                    "-CAcreateserial",
                    "-days",
                    "30",
                    "-extfile",
                    &ext.to_string_lossy(),
                    "-out",
                    &ipsec.join("peer.pem").to_string_lossy(),
                ],
                dir,
            )?;
            fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .map_err(|e| e.to_string())?;
            fs::copy(dir.join("ca.pem"), etc.join("spinifex/ca.pem")).map_err(|e| e.to_string())?;
            spec.push(serde_json::json!({
                "root": dir.join(&node.ns).to_string_lossy(),
                "other_config": {
                    "certificate": "/etc/spinifex/ipsec/peer.pem",
                    "private_key": "/etc/spinifex/ipsec/peer.key",
                    "ca_cert": "/etc/spinifex/ipsec/ca.pem",
                },
                "tunnels": nodes.iter().filter(|p| p.index != node.index).map(|p| serde_json::json!({
                    "name": format!("ovn-{}-0", p.chassis),
                    "options": {"remote_ip": p.addr, "remote_name": p.chassis},
                })).collect::<Vec<_>>(),
            }));
        }
        // ovs-monitor-ipsec reads the CN the way it runs: with openssl.
        let mut child = Command::new(PYTHON)
            .args(["-c", WRITER])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{PYTHON}: {e}"))?;
        let input = serde_json::json!({"script": OVS_MONITOR_IPSEC, "nodes": spec}).to_string();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .map_err(|e| e.to_string())?;
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "ovs-monitor-ipsec's config writer failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        // Each node's Open_vSwitch row as a Spinifex node's reads, and
        // OVN's southbound with one geneve chassis per node.
        let mut sb = Vec::new();
        for node in &nodes {
            database(
                &dir.join(&node.ns).join("conf.db"),
                VSWITCH_SCHEMA,
                serde_json::json!([{"op": "insert", "table": "Open_vSwitch", "row": {
                    "external_ids": map(&[
                        ("system-id", &node.chassis),
                        ("ovn-encap-ip", &node.addr),
                        ("ovn-encap-type", "geneve"),
                    ]),
                    "other_config": map(&[
                        ("certificate", "/etc/spinifex/ipsec/peer.pem"),
                        ("private_key", "/etc/spinifex/ipsec/peer.key"),
                        ("ca_cert", "/etc/spinifex/ipsec/ca.pem"),
                        ("ipsec_encapsulation", "true"),
                    ]),
                }}]),
            )?;
            let encap = format!("encap{}", node.index);
            sb.push(
                serde_json::json!({"op": "insert", "table": "Encap", "uuid-name": encap,
                "row": {"type": "geneve", "ip": node.addr, "chassis_name": node.chassis,
                        "options": map(&[("csum", "true")])}}),
            );
            sb.push(serde_json::json!({"op": "insert", "table": "Chassis",
                "row": {"name": node.chassis, "hostname": node.chassis,
                        "encaps": ["named-uuid", encap]}}));
        }
        database(&dir.join("sb.db"), SB_SCHEMA, serde_json::Value::Array(sb))?;
        // OVN's northbound, IPsec on (`NB_Global ipsec=true`, as the
        // daemon sets it when IPsec is wanted), served beside the SB.
        database(
            &dir.join("nb.db"),
            NB_SCHEMA,
            serde_json::json!([{"op": "insert", "table": "NB_Global", "row": {"ipsec": true}}]),
        )?;
        // What the guest copies in one go: every node's /etc/netns/nN and
        // its run directory.
        for node in &nodes {
            lay_out(dir, node).map_err(|e| format!("{}: {e}", node.ns))?;
        }
        let mesh = Mesh {
            nodes,
            prepared,
            placed: None,
        };
        for node in &mesh.nodes {
            let conf = mesh.ipsec_conf(node.index);
            if !conf.contains("conn ovn-") {
                return Err(format!(
                    "ovs-monitor-ipsec wrote no tunnel for {}: {conf}",
                    node.ns
                ));
            }
        }
        Ok(mesh)
    }

    /// The ipsec.conf ovs-monitor-ipsec wrote for node `n` (host side).
    pub fn ipsec_conf(&self, n: u32) -> String {
        fs::read_to_string(self.prepared.path().join(format!("n{n}/etc/ipsec.conf")))
            .unwrap_or_default()
    }

    /// The cluster CA's certificate (PEM), as the host holds it.
    pub fn ca_pem(&self) -> PathBuf {
        self.prepared.path().join("ca.pem")
    }

    /// The CA's key, for a test that issues more certificates.
    pub fn ca_key(&self) -> PathBuf {
        self.prepared.path().join("ca.key")
    }

    /// Copy the prepared trees and the `enter` script where the guest sees
    /// them (the VM's shared directory, `strongswan/`).
    pub fn place(&mut self, vm: &Vm) {
        let to = vm.files_dir().join("strongswan");
        copy_tree(self.prepared.path(), &to).expect("copy the prepared mesh");
        vm.file("spx-node", ENTER);
        self.placed = Some(PathBuf::from(GUEST_FILES).join("strongswan"));
    }

    fn guest_dir(&self) -> &Path {
        self.placed.as_deref().expect("Mesh::place first")
    }

    /// The guest command prefix that runs a command as node `n`.
    pub fn enter(&self, n: u32) -> String {
        format!("sh {GUEST_FILES}/spx-node n{n}")
    }

    /// Node `n`'s run directory (its `/var/run`) from the guest's own
    /// namespace.
    pub fn run_dir(n: u32) -> String {
        format!("/run/spx-nodes/n{n}")
    }

    /// Node `n`'s OVS database, from the guest's own namespace.
    pub fn ovs_db(n: u32) -> String {
        format!("unix:{}/openvswitch/db.sock", Mesh::run_dir(n))
    }

    /// The guest script that builds the fabric and every node: namespaces,
    /// the underlay bridge, geneve to every peer (no IPv6 address on the
    /// tunnels, so that nothing but the tests' own traffic crosses one: an
    /// idle node stays idle), each node's /etc and /var/run, and its OVS
    /// database served with the rows a Spinifex node's has (system-id,
    /// ovn-encap-ip, the IPsec certificate paths, ipsec_encapsulation), then
    /// OVN's southbound with one geneve chassis per node and its northbound
    /// with `NB_Global ipsec=true`, both at `unix:/tmp/sb.sock`. The trees and database files were made on the
    /// host ([`Mesh::prepare`]): every process the emulated CPU need not
    /// start is time saved. strongSwan is not started ([`Mesh::start`]).
    pub fn setup_script(&self) -> String {
        let files = self.guest_dir().display().to_string();
        let mut s = String::from("set -e\n");
        // /var/run is a link to /run in Debian; each node gets its own.
        s.push_str("[ -L /var/run ] && rm /var/run && mkdir /var/run\n");
        let _ = writeln!(
            s,
            "mkdir -p /run/spx-nodes /etc/spinifex\n\
             cp -a /etc/strongswan.d {STRONGSWAN_D}\n\
             cp -a {files}/netns /etc/\n\
             cp -a {files}/run/. /run/spx-nodes/"
        );
        let count = self.nodes.len() as u32;
        let mut top = vec!["netns add sw".to_owned()];
        top.extend(self.nodes.iter().map(|n| format!("netns add {}", n.ns)));
        let _ = writeln!(s, "ip -b - <<'EOF'\n{}\nEOF", top.join("\n"));
        let mut sw = vec![
            "link add br0 type bridge".to_owned(),
            "link set br0 up".to_owned(),
        ];
        for node in &self.nodes {
            let n = node.index;
            let mut batch = vec![
                "link set lo up".to_owned(),
                format!("link add eth0 type veth peer name p{n} netns sw"),
                format!("addr add {}/24 dev eth0", node.addr),
                "link set eth0 up".to_owned(),
            ];
            for p in (1..=count).filter(|p| *p != n) {
                let (lo, hi) = (n.min(p), n.max(p));
                batch.extend([
                    format!(
                        "link add gnv{p} type geneve id 1{lo}{hi} remote {}",
                        addr(p)
                    ),
                    // No IPv6 address, so no IPv6 chatter (DAD, router
                    // solicitations) through the tunnel: an idle node
                    // stays idle.
                    format!("link set gnv{p} addrgenmode none"),
                    format!("addr add 10.{lo}{hi}.0.{n}/24 dev gnv{p}"),
                    format!("link set gnv{p} up"),
                ]);
            }
            let _ = writeln!(
                s,
                "ip -n {} -b - <<'EOF'\n{}\nEOF",
                node.ns,
                batch.join("\n")
            );
            sw.push(format!("link set p{n} master br0 up"));
        }
        let _ = writeln!(s, "ip -n sw -b - <<'EOF'\n{}\nEOF", sw.join("\n"));
        for node in &self.nodes {
            let _ = writeln!(
                s,
                "{enter} ovsdb-server --detach --no-chdir --pidfile=/var/run/openvswitch/ovsdb-server.pid \
                 --unixctl=/var/run/openvswitch/ovsdb-server.ctl --remote=punix:/var/run/openvswitch/db.sock \
                 /var/run/openvswitch/conf.db",
                enter = self.enter(node.index),
            );
        }
        let _ = writeln!(
            s,
            "cp {files}/sb.db {files}/nb.db /tmp/\n\
             ovsdb-server --detach --no-chdir --pidfile=/tmp/sb.pid --unixctl=/tmp/sb.ctl --remote=punix:/tmp/sb.sock /tmp/sb.db /tmp/nb.db"
        );
        s
    }

    /// Permanent neighbour entries on every geneve device, so that a ping
    /// over geneve goes out at its own rate even while nothing comes back
    /// (without them a node whose peer drops its geneve sends only the
    /// kernel's ARP probes, about one a second).
    pub fn static_neighbours(&self, vm: &Vm) {
        let mut script = String::from("set -e\n");
        for a in &self.nodes {
            for b in self.nodes.iter().filter(|b| b.index != a.index) {
                let (dev, to) = overlay(a.index, b.index);
                let _ = writeln!(
                    script,
                    "mac=$(ip -n {bns} -br link show gnv{ai} | awk '{{print $3}}')\n\
                     ip -n {ans} neigh replace {to} lladdr \"$mac\" dev {dev} nud permanent",
                    bns = b.ns,
                    ai = a.index,
                    ans = a.ns
                );
            }
        }
        vm.ok(&script);
    }

    /// How many IPsec policies (sockets' own aside) node `n` holds, from
    /// `ip xfrm policy` (the oracle).
    pub fn policy_count(vm: &Vm, n: u32) -> usize {
        vm.ok(&format!("ip -n n{n} xfrm policy"))
            .lines()
            .filter(|l| l.trim_start().starts_with("dir "))
            .count()
    }

    /// Start strongSwan (`ipsec start`, as the starter's service does) on
    /// `nodes` at once, and wait until each has armed its tunnels: its
    /// trap policies, 4 per peer. Returns how long that took.
    pub fn start(&self, vm: &Vm, nodes: &[u32]) -> Duration {
        let started = Instant::now();
        let mut script = String::new();
        for n in nodes {
            let _ = writeln!(
                script,
                "rm -f {run}/charon.log; ({enter} ipsec start >{run}/start.log 2>&1 &)",
                run = Mesh::run_dir(*n),
                enter = self.enter(*n)
            );
        }
        vm.ok(&script);
        let want = 4 * (self.nodes.len() - 1);
        let armed: Vec<String> = nodes
            .iter()
            .map(|n| {
                format!(
                    "[ \"$(ip -n n{n} xfrm policy | grep -cE '^\\s+dir (in|out) ')\" -ge {want} ]"
                )
            })
            .collect();
        assert!(
            vm.wait_until_every(&armed.join(" && "), Duration::from_secs(180), "0.5"),
            "strongSwan did not arm its tunnels on {nodes:?}: {}",
            nodes
                .iter()
                .map(|n| self.charon_log(vm, *n))
                .collect::<Vec<_>>()
                .join("\n")
        );
        started.elapsed()
    }

    /// Stop node `n`'s strongSwan as its service does: SIGTERM to the
    /// starter's recorded pid; wait until the starter and charon are gone.
    /// Returns how long that took.
    pub fn stop(&self, vm: &Vm, n: u32) -> Duration {
        let run = Mesh::run_dir(n);
        let started = Instant::now();
        vm.ok(&format!(
            "pid=$(cat {run}/starter.charon.pid) && kill -TERM \"$pid\" && \
             while kill -0 \"$pid\" 2>/dev/null || [ -e {run}/charon.pid ]; do sleep 0.05; done"
        ));
        started.elapsed()
    }

    /// The pids of node `n`'s starter and charon, from their pid files.
    pub fn pids(vm: &Vm, n: u32) -> (u32, u32) {
        let run = Mesh::run_dir(n);
        let out = vm.ok(&format!("cat {run}/starter.charon.pid {run}/charon.pid"));
        let mut pids = out.split_whitespace().map(|p| p.parse().unwrap());
        (pids.next().unwrap(), pids.next().unwrap())
    }

    /// Take the cluster CA out of node `n`'s trust store (charon reads it
    /// when it starts, or on `ipsec rereadcacerts`).
    pub fn drop_ca(&self, vm: &Vm, n: u32) {
        vm.ok(&format!(
            "rm /etc/netns/n{n}/ipsec.d/cacerts/spinifex-ca.pem"
        ));
    }

    /// Node `n`'s charon log so far.
    pub fn charon_log(&self, vm: &Vm, n: u32) -> String {
        vm.sh(&format!("cat {}/charon.log", Mesh::run_dir(n)))
            .stdout
    }

    /// A doctor config for node `n`: every node of the mesh, IPsec as
    /// given, OVN's northbound and southbound in the guest. Returns its
    /// guest path.
    pub fn doctor_config(&self, vm: &Vm, n: u32, ipsec: bool) -> String {
        vm.file(
            &format!("strongswan-spx{n}-{ipsec}.toml"),
            &self.doctor_config_text(n, ipsec),
        )
    }

    /// The text of [`Mesh::doctor_config`].
    pub fn doctor_config_text(&self, n: u32, ipsec: bool) -> String {
        let mut text =
            format!("node = \"spx{n}\"\n[network]\nipsec_enabled = {ipsec}\nunderlay_mtu = 1500\n");
        for node in &self.nodes {
            let _ = write!(
                text,
                "[nodes.{c}]\nhost = \"{a}\"\n[nodes.{c}.vpcd]\novn_nb_addr = \"unix:/tmp/sb.sock\"\novn_sb_addr = \"unix:/tmp/sb.sock\"\n",
                c = node.chassis,
                a = node.addr
            );
        }
        text
    }
}

/// Node `node`'s `/etc/netns/nN` (under `netns/nN`) and run directory
/// (under `run/nN`), from what was prepared under `nN/`: its ipsec.conf and
/// ipsec.secrets, strongswan.d (Debian's files, linked to the guest's one
/// copy, with ovs-monitor-ipsec's ovs.conf and the lab's log file),
/// ipsec.d with the CA linked into cacerts, the Spinifex credentials
/// (`ipsec/ca.pem` a link to the cluster CA, as Spinifex makes it), and
/// its OVS database.
fn lay_out(dir: &Path, node: &Node) -> std::io::Result<()> {
    use std::os::unix::fs::symlink;
    let from = dir.join(&node.ns).join("etc");
    let etc = dir.join("netns").join(&node.ns);
    fs::create_dir_all(&etc)?;
    for f in ["ipsec.conf", "ipsec.secrets"] {
        fs::copy(from.join(f), etc.join(f))?;
    }
    copy_tree(&from.join("spinifex"), &etc.join("spinifex"))?;
    symlink("/etc/spinifex/ca.pem", etc.join("spinifex/ipsec/ca.pem"))?;
    for d in IPSEC_D {
        fs::create_dir_all(etc.join("ipsec.d").join(d))?;
    }
    symlink(
        "/etc/spinifex/ca.pem",
        etc.join("ipsec.d/cacerts/spinifex-ca.pem"),
    )?;
    link_tree(
        Path::new("/etc/strongswan.d"),
        Path::new(STRONGSWAN_D),
        &etc.join("strongswan.d"),
    )?;
    fs::copy(
        from.join("strongswan.d/ovs.conf"),
        etc.join("strongswan.d/ovs.conf"),
    )?;
    fs::write(etc.join("strongswan.d/zz-spx-lab.conf"), LAB_LOG)?;
    let run = dir.join("run").join(&node.ns).join("openvswitch");
    fs::create_dir_all(&run)?;
    fs::copy(dir.join(&node.ns).join("conf.db"), run.join("conf.db"))?;
    Ok(())
}

/// Where the guest keeps its one copy of `/etc/strongswan.d` (every
/// node's own strongswan.d links to it: inside a node, `/etc/strongswan.d`
/// is the node's).
const STRONGSWAN_D: &str = "/run/spx-nodes/strongswan.d";

/// `to` made like `tree`: its directories, and for each file a link to the
/// same path under `target`.
fn link_tree(tree: &Path, target: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(tree)? {
        let entry = entry?;
        let name = entry.file_name();
        if entry.file_type()?.is_dir() {
            link_tree(&entry.path(), &target.join(&name), &to.join(&name))?;
        } else {
            std::os::unix::fs::symlink(target.join(&name), to.join(&name))?;
        }
    }
    Ok(())
}

/// Copy a tree: files (with their modes), directories and links.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&src)?, &dst)?;
        } else if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// `/proc/net/xfrm_stat` of namespace `ns` (the oracle of what xfrm
/// dropped), by counter name.
pub fn xfrm_stat(vm: &Vm, ns: &str) -> std::collections::BTreeMap<String, u64> {
    vm.ok(&format!(
        "ip netns exec {} cat /proc/net/xfrm_stat",
        quote(ns)
    ))
    .lines()
    .filter_map(|l| {
        let mut w = l.split_whitespace();
        Some((w.next()?.to_owned(), w.next()?.parse().ok()?))
    })
    .collect()
}

/// The counters that moved from `before` to `after`, with how much.
pub fn moved(
    before: &std::collections::BTreeMap<String, u64>,
    after: &std::collections::BTreeMap<String, u64>,
) -> std::collections::BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(k, v)| {
            let was = before.get(k).copied().unwrap_or(0);
            (*v > was).then(|| (k.clone(), v - was))
        })
        .collect()
}

/// One state as `ip -s xfrm state` prints it (the oracle), keys aside
/// except `key`, which a test uses to look for it where it must not be.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OracleState {
    pub src: String,
    pub dst: String,
    /// `0x` and 8 hex digits.
    pub spi: String,
    pub reqid: u32,
    /// `aead`/`enc` algorithm; empty for a larval state.
    pub algorithm: String,
    /// The key as `ip` prints it (`0x...`); empty for a larval state.
    pub key: String,
    /// `sel` past the addresses: `proto udp dport 6081`.
    pub sel: String,
    pub bytes: u64,
}

impl OracleState {
    /// ovs-monitor-ipsec's layout: carries geneve (`dport 6081`), as the
    /// selector says.
    pub fn is_geneve(&self) -> bool {
        self.sel.contains("dport 6081") && !self.sel.contains("sport")
    }

    pub fn is_larval(&self) -> bool {
        self.spi == "0x00000000" && self.algorithm.is_empty()
    }
}

/// Every state of namespace `ns` (`ip -s xfrm state`).
pub fn oracle_states(vm: &Vm, ns: &str) -> Vec<OracleState> {
    let text = vm.ok(&format!("ip -s -n {} xfrm state", quote(ns)));
    let mut out: Vec<OracleState> = Vec::new();
    let mut in_current = false;
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["src", s, "dst", d, ..] if !line.starts_with(char::is_whitespace) => {
                out.push(OracleState {
                    src: (*s).to_owned(),
                    dst: (*d).to_owned(),
                    ..OracleState::default()
                });
                in_current = false;
            }
            ["proto", "esp", "spi", x, "reqid", r, ..] => {
                let st = out.last_mut().unwrap();
                // `ip -s` adds the decimal in parentheses: 0x1234(4660).
                st.spi = x.split('(').next().unwrap().to_owned();
                st.reqid = r.split('(').next().unwrap().parse().unwrap();
            }
            ["aead" | "enc", alg, key, ..] => {
                let st = out.last_mut().unwrap();
                st.algorithm = (*alg).to_owned();
                st.key = (*key).to_owned();
            }
            ["sel", "src", _, "dst", _, rest @ ..] => {
                out.last_mut().unwrap().sel = rest
                    .iter()
                    .take_while(|w| **w != "dev" && **w != "uid")
                    .copied()
                    .collect::<Vec<_>>()
                    .join(" ");
            }
            ["lifetime", "current:"] => in_current = true,
            [bytes, _packets] if in_current && bytes.ends_with("(bytes),") => {
                out.last_mut().unwrap().bytes = bytes.trim_end_matches("(bytes),").parse().unwrap();
                in_current = false;
            }
            _ => {}
        }
    }
    out
}

/// Start pings over geneve from `a` to `b` (one every `interval`, for at
/// most two minutes) in the background; [`stop_pings`] ends them.
pub fn start_pings(vm: &Vm, flows: &[(u32, u32)], interval: &str) {
    let mut script = String::new();
    for (a, b) in flows {
        let (_, to) = overlay(*a, *b);
        let _ = writeln!(
            script,
            "(ip netns exec n{a} ping -q -i {interval} -w 120 {to} >/dev/null 2>&1 & echo $! >/tmp/ping-{a}-{b}.pid)"
        );
    }
    vm.ok(&script);
}

/// Stop the pings [`start_pings`] started for `flows`.
pub fn stop_pings(vm: &Vm, flows: &[(u32, u32)]) {
    let mut script = String::new();
    for (a, b) in flows {
        let _ = writeln!(
            script,
            "[ -e /tmp/ping-{a}-{b}.pid ] && kill $(cat /tmp/ping-{a}-{b}.pid) 2>/dev/null; rm -f /tmp/ping-{a}-{b}.pid"
        );
    }
    let _ = vm.sh(&script);
}

/// One ping over geneve per `(a, b)`, all at once: whether each was
/// answered within `wait` seconds.
pub fn pings(vm: &Vm, flows: &[(u32, u32)], wait: u32) -> Vec<bool> {
    let mut script = String::new();
    for (i, (a, b)) in flows.iter().enumerate() {
        let (_, to) = overlay(*a, *b);
        let _ = writeln!(
            script,
            "(ip netns exec n{a} ping -c 1 -W {wait} {to} >/dev/null 2>&1 && echo {i}) &"
        );
    }
    script.push_str("wait\n");
    let answered: Vec<String> = vm.ok(&script).lines().map(str::to_owned).collect();
    (0..flows.len())
        .map(|i| answered.contains(&i.to_string()))
        .collect()
}
