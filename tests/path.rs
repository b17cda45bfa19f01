//! `spx-doctor path` against real components: OVN NB and SB in real
//! `ovsdb-server`s with the rows Spinifex's topology writes (made by
//! `ovn-nbctl`/`ovn-sbctl`), a node's Open_vSwitch database, and, in a
//! network namespace of the test's own, two paused QEMUs started with
//! Spinifex's command line whose taps the doctor reads. Every way an
//! endpoint can fail to resolve exits 2 naming the lookup; an OVN string
//! of terminal escapes is shown inert; a recorded run replays to the same
//! verdict. The full verdicts over a real geneve underlay are the OVN
//! lab's (tests/kernel_lab/path*).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::ovsdb_server::{refused_port, OvsdbServer};
use crate::support::qemu::QemuGuest;
use crate::support::{run, run_path_json, spx, write_config, Netns};
use spx_test_harness::root_test;

const VPC: &str = "vpc-0f3a9c2e1b7d45a60";
const SUBNET: &str = "subnet-0a11c0ffee0000001";
const A: (&str, &str, &str) = ("eni-0aa1f3c9d2b7e4051", "02:00:0a:00:01:0a", "198.18.1.10");
const B: (&str, &str, &str) = ("eni-0bb2e4d0c3a8f5162", "02:00:0a:00:01:0b", "198.18.1.11");
/// A port OVN has, bound to no chassis (its guest is not running).
const UNBOUND: (&str, &str, &str) = ("eni-0ee5c7a3f6d1b8495", "02:00:0a:00:01:0e", "198.18.1.14");
const INSTANCE_A: &str = "i-0a1b2c3d4e5f60718";
const INSTANCE_B: &str = "i-0b2c3d4e5f6071829";

/// OVN's two databases with one VPC subnet as Spinifex writes it, the
/// ENIs' ports and their bindings (`chassis`: the chassis each ENI is
/// bound to, none for an unbound one).
struct Ovn {
    nb: OvsdbServer,
    sb: OvsdbServer,
}

impl Ovn {
    fn new(dhcp_mtu: &str, lsp_name_of_a: Option<&str>) -> Ovn {
        let nb = OvsdbServer::nb();
        let sb = OvsdbServer::sb();
        nb.nbctl(&[
            "ls-add",
            &format!("subnet-{SUBNET}"),
            "--",
            "set",
            "Logical_Switch",
            &format!("subnet-{SUBNET}"),
            &format!("external_ids:spinifex\\:subnet_id={SUBNET}"),
            &format!("external_ids:spinifex\\:vpc_id={VPC}"),
        ]);
        let dhcp = nb
            .nbctl(&[
                "create",
                "DHCP_Options",
                "cidr=198.18.1.0/24",
                &format!(
                    "options={{\"server_id\"=\"198.18.1.1\", \"server_mac\"=\"02:00:00:00:00:01\", \"lease_time\"=\"3600\", \"router\"=\"198.18.1.1\", \"dns_server\"=\"198.18.0.2\", \"mtu\"=\"{dhcp_mtu}\"}}"
                ),
                &format!("external_ids:spinifex\\:subnet_id={SUBNET}"),
            ])
            .trim()
            .to_owned();
        for (i, (eni, mac, ip)) in [A, B, UNBOUND].into_iter().enumerate() {
            let name = match (i, lsp_name_of_a) {
                (0, Some(n)) => n.to_owned(),
                _ => format!("port-{eni}"),
            };
            nb.nbctl(&[
                "lsp-add",
                &format!("subnet-{SUBNET}"),
                &name,
                "--",
                "lsp-set-addresses",
                &name,
                &format!("{mac} {ip}"),
                "--",
                "lsp-set-port-security",
                &name,
                &format!("{mac} {ip}"),
                "--",
                "set",
                "Logical_Switch_Port",
                &name,
                &format!("external_ids:spinifex\\:eni_id={eni}"),
                &format!("external_ids:spinifex\\:subnet_id={SUBNET}"),
                &format!("external_ids:spinifex\\:vpc_id={VPC}"),
                &format!("dhcpv4_options={dhcp}"),
            ]);
        }
        for (name, ip) in [("spx1", "127.0.0.1"), ("spx2", "127.0.0.2")] {
            sb.sbctl(&["chassis-add", name, "geneve", ip]);
        }
        Ovn { nb, sb }
    }

    /// Bind `lsp` to chassis `chassis` (none: a binding no chassis claimed).
    fn bind(&self, lsp: &str, chassis: Option<&str>, key: u32) {
        let dp = self
            .sb
            .sbctl(&["create", "Datapath_Binding", &format!("tunnel_key={key}")])
            .trim()
            .to_owned();
        let mut args = vec![
            "create".to_owned(),
            "Port_Binding".to_owned(),
            format!("logical_port={lsp}"),
            format!("datapath={dp}"),
            "tunnel_key=1".to_owned(),
        ];
        if let Some(c) = chassis {
            let uuid = self
                .sb
                .sbctl(&[
                    "--bare",
                    "--columns=_uuid",
                    "find",
                    "Chassis",
                    &format!("name={c}"),
                ])
                .trim()
                .to_owned();
            args.push(format!("chassis={uuid}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.sb.sbctl(&args);
    }

    /// A config for node `node` of spx1 and spx2, reading this OVN.
    fn config(&self, dir: &Path, node: &str, nb: Option<&str>) -> PathBuf {
        let nb = nb.map_or_else(|| self.nb.unix(), str::to_owned);
        write_config(
            dir,
            &format!(
                "node = \"{node}\"\n[network]\nipsec_enabled = false\nunderlay_mtu = 1500\n\
                 [nodes.spx1]\nhost = \"127.0.0.1\"\n[nodes.spx1.vpcd]\novn_nb_addr = \"{nb}\"\n\
                 ovn_sb_addr = \"{}\"\n[nodes.spx2]\nhost = \"127.0.0.2\"\n",
                self.sb.unix()
            ),
        )
    }
}

fn path(config: &Path, args: &[&str]) -> std::process::Command {
    let mut cmd = spx();
    cmd.arg("path")
        .args(args)
        .arg("--config")
        .arg(config)
        .args([
            "--timeout",
            "5s",
            "--ovs-db",
            "unix:/nonexistent/spx-test-ovs.sock",
        ]);
    cmd
}

/// Run `path … --format json`, schema-checked; the exit code and document.
fn json(cmd: &mut std::process::Command) -> (i32, Value) {
    run_path_json(cmd)
}

#[test]
fn every_endpoint_form_resolves_through_ovn() {
    let ovn = Ovn::new("1442", None);
    ovn.bind(&format!("port-{}", A.0), Some("spx1"), 1);
    ovn.bind(&format!("port-{}", B.0), Some("spx2"), 2);
    let dir = tempfile::tempdir().unwrap();
    let cfg = ovn.config(dir.path(), "spx1", None);
    for (from, to) in [(A.0, B.0), (A.2, B.2), (A.0, "spx2"), ("spx1", "spx2")] {
        let (code, doc) = json(&mut path(
            &cfg,
            &[from, to, "--via", "ssh", "--ssh-config", "/dev/null"],
        ));
        // spx2 is not reachable (127.0.0.2 runs no sshd): its side is
        // unread and nothing is concluded, but both ends resolved.
        assert_eq!(code, 2, "{doc:#}");
        let ends = doc["ends"].as_array().unwrap();
        assert_eq!(ends.len(), 2, "{from} {to}: {doc:#}");
        assert_eq!(ends[0]["place"]["bound"]["chassis"], "spx1", "{doc:#}");
        assert_eq!(ends[0]["place"]["bound"]["encap"], "127.0.0.1");
        assert_eq!(ends[0]["via"], "in-process");
        assert_eq!(ends[1]["place"]["bound"]["node"], "spx2");
        assert_eq!(ends[1]["via"], "ssh");
        assert!(ends[1]["facts"]["Err"].is_string(), "{doc:#}");
        if !to.starts_with("spx") {
            assert_eq!(ends[1]["place"]["lsp"], format!("port-{}", B.0));
            assert_eq!(ends[1]["place"]["dhcp"]["mtu"], "1442");
            // N defaults to what the source guest was offered.
            assert_eq!(doc["question"]["size"], 1442);
            assert_eq!(doc["question"]["size_source"], "offered");
        } else {
            assert_eq!(ends[1]["place"]["kind"], "node");
            assert_eq!(doc["question"]["size"], 1500);
            assert_eq!(doc["question"]["size_source"], "underlay-mtu");
        }
    }
}

#[test]
fn what_does_not_resolve_exits_2_naming_the_lookup() {
    let ovn = Ovn::new("1442", None);
    ovn.bind(&format!("port-{}", A.0), Some("spx1"), 1);
    ovn.bind(&format!("port-{}", UNBOUND.0), None, 3);
    let dir = tempfile::tempdir().unwrap();
    let cfg = ovn.config(dir.path(), "spx1", None);
    let dead = format!("tcp:127.0.0.1:{}", refused_port());
    let cfg_dead = {
        let d = dir.path().join("dead");
        std::fs::create_dir_all(&d).unwrap();
        ovn.config(&d, "spx1", Some(&dead))
    };
    for (cfg, from, to, says) in [
        (&cfg, "eni-0999", A.0, format!("no Logical_Switch_Port with spinifex:eni_id=eni-0999 (or named port-eni-0999) in NB at {}", ovn.nb.unix())),
        (&cfg, A.0, UNBOUND.0, format!("Port_Binding port-{} in SB at {} has no chassis", UNBOUND.0, ovn.sb.unix())),
        (&cfg, B.0, A.0, format!("no Port_Binding for logical port port-{} in SB at {}", B.0, ovn.sb.unix())),
        (&cfg, "i-0000000000000dead", A.0, "no node runs instance i-0000000000000dead".to_owned()),
        (&cfg, "198.19.9.9", A.0, format!("no Logical_Switch_Port with address 198.19.9.9 in NB at {}", ovn.nb.unix())),
        (&cfg_dead, A.0, B.0, format!("NB at {dead} could not be read")),
    ] {
        let (code, doc) = json(&mut path(cfg, &[from, to, "--via", "ssh"]));
        assert_eq!(code, 2, "{from} {to}: {doc:#}");
        assert_eq!(doc["code"], "path/unresolved");
        assert_eq!(doc["status"], "error");
        let summary = doc["summary"].as_str().unwrap();
        assert!(summary.contains(&says), "{from} {to}: {summary}");
        assert!(doc["directions"].as_array().unwrap().is_empty(), "never a partial verdict: {doc:#}");
        // The table says the same, on one verdict line.
        let (code, out, _) = run(path(cfg, &[from, to, "--via", "ssh"]).env("COLUMNS", "400"));
        assert_eq!(code, 2);
        assert!(out.contains("path/unresolved error"), "{out}");
    }
}

#[test]
fn bad_words_are_refused_before_anything_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), "node = \"spx1\"\n[nodes.spx1]\n[nodes.spx2]\n");
    for (args, says) in [
        (vec!["i-XYZ", "spx2"], "\"i-XYZ\" is not an instance id"),
        (vec!["eni-$(id)", "spx2"], "is not an ENI id"),
        (vec!["spx9", "spx2"], "the config's nodes: spx1, spx2"),
        (
            vec!["spx1", "spx2", "--vpc", "vpc-../x"],
            "--vpc \"vpc-../x\": not a VPC id",
        ),
        (
            vec!["spx1", "spx2", "--size", "67"],
            "67 is not in 68..=65535",
        ),
        (
            vec!["spx1", "spx2", "--via", "nats"],
            "has no [nodes.spx1.nats]",
        ),
    ] {
        let (code, out, err) = run(spx().arg("path").args(&args).arg("--config").arg(&cfg));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{out}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn an_ovn_string_of_terminal_escapes_is_shown_inert() {
    let hostile = "port-\u{1b}]0;pwned\u{7}\u{1b}[2J";
    let ovn = Ovn::new("1442", Some(hostile));
    let dir = tempfile::tempdir().unwrap();
    let cfg = ovn.config(dir.path(), "spx1", None);
    // The port is found by its eni_id; it has no binding, and the lookup
    // that failed names it.
    for color in ["never", "always"] {
        let (code, out, err) = run(path(&cfg, &[A.0, B.0, "--color", color]).env("COLUMNS", "300"));
        assert_eq!(code, 2, "{err}");
        assert!(!out.contains('\u{1b}') || color == "always", "{out:?}");
        assert!(out.contains("port-\\x1b]0;pwned\\x07\\x1b[2J"), "{out}");
        let raw_escapes = out.matches('\u{1b}').count();
        let ours = out.matches("\u{1b}[").count();
        assert_eq!(
            raw_escapes, ours,
            "only the renderer's own colour codes: {out:?}"
        );
        assert!(!out.contains('\u{7}'), "{out:?}");
    }
    // JSON keeps the exact text.
    let (_, doc) = json(&mut path(&cfg, &[A.0, B.0]));
    assert!(doc["summary"].as_str().unwrap().contains(hostile));
}

/// Two paused QEMUs on one node, started as Spinifex starts them, their
/// taps on br-int in the node's OVS database: the doctor finds each
/// instance by its pid file, each ENI by its tap, and judges the whole
/// path in-process (no underlay: both on spx1).
#[root_test]
fn both_guests_on_one_node_are_judged_in_process() {
    let ns = Netns::new();
    let ovn = Ovn::new("1442", None);
    ovn.bind(&format!("port-{}", A.0), Some("spx1"), 1);
    ovn.bind(&format!("port-{}", B.0), Some("spx1"), 2);
    let ovs = OvsdbServer::ovs();
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    let guest = |eni: &str, mac: &str, instance: &str| {
        let tap = spx_checks::spinifex::tap_name(eni);
        let pidfile = run_dir.join(format!("{instance}.pid"));
        let q = QemuGuest::start(
            &ns,
            &[
                "-pidfile",
                pidfile.to_str().unwrap(),
                "-netdev",
                &format!("tap,id=net0,ifname={tap},script=no,downscript=no"),
                "-device",
                &format!("virtio-net-pci,netdev=net0,mac={mac},host_mtu=1442,rx_queue_size=1024"),
            ],
        );
        ns.ip(&["link", "set", &tap, "mtu", "1442", "up"]);
        ovs.vsctl(&[
            "--may-exist",
            "add-br",
            "br-int",
            "--",
            "add-port",
            "br-int",
            &tap,
            "--",
            "set",
            "Interface",
            &tap,
            &format!("external_ids:iface-id=port-{eni}"),
            &format!("external_ids:attached-mac={mac}"),
        ]);
        (q, tap)
    };
    let (_qa, _tap_a) = guest(A.0, A.1, INSTANCE_A);
    let (_qb, tap_b) = guest(B.0, B.1, INSTANCE_B);
    let cfg = ovn.config(dir.path(), "spx1", None);
    let ask = |from: &str, to: &str| {
        let mut cmd = ns.spx();
        cmd.env_remove("SPINIFEX_CONFIG_PATH")
            .args([
                "path",
                from,
                to,
                "--timeout",
                "10s",
                "--ovs-db",
                &ovs.unix(),
                "--config",
            ])
            .arg(&cfg);
        json(&mut cmd)
    };

    // By instance (found by its pid file), by ENI and by IP: one verdict.
    for (from, to) in [(INSTANCE_A, INSTANCE_B), (A.0, B.0), (A.2, B.2)] {
        let (code, doc) = ask(from, to);
        assert_eq!(code, 0, "{from} {to}: {doc:#}");
        assert_eq!(doc["code"], "path/ok");
        for d in doc["directions"].as_array().unwrap() {
            assert_eq!(d["outcome"], "carried", "{d:#}");
            assert_eq!(d["largest"]["bytes"], 1442);
            assert_eq!(d["largest"]["bound"], "exact");
            let kinds: Vec<&str> = d["hops"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["kind"].as_str().unwrap())
                .collect();
            assert_eq!(
                kinds,
                [
                    "guest-nic",
                    "host-mtu",
                    "tap",
                    "br-int",
                    "peer-tap",
                    "peer-guest"
                ]
            );
        }
        for e in doc["ends"].as_array().unwrap() {
            assert_eq!(e["via"], "in-process");
            let nic = &e["facts"]["Ok"]["guest"]["Ok"]["nics"][0];
            assert_eq!(nic["nic"]["host_mtu"], 1442, "{e:#}");
            assert_eq!(nic["tap"]["Ok"]["mtu"], 1442);
            assert!(nic["iface"]["iface_id"]
                .as_str()
                .unwrap()
                .starts_with("port-eni-"));
        }
    }
    let (_, doc) = ask(INSTANCE_A, INSTANCE_B);
    assert_eq!(
        doc["ends"][0]["facts"]["Ok"]["guest"]["Ok"]["instance"],
        INSTANCE_A
    );

    // B's tap below what A is told: A's packets die there, and nobody says
    // so; B's own packets of 1442 still reach A. The tap's MTU is the
    // kernel's word for it.
    ns.ip(&["link", "set", &tap_b, "mtu", "1400"]);
    assert!(ns.ip(&["link", "show", &tap_b]).contains("mtu 1400"));
    let (code, doc) = ask(A.0, B.0);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["code"], "path/asymmetric", "{doc:#}");
    let fwd = &doc["directions"][0];
    assert_eq!(fwd["outcome"], "silent");
    let drop = &fwd["hops"][fwd["first_drop"].as_u64().unwrap() as usize];
    assert_eq!(drop["kind"], "peer-tap");
    assert_eq!(drop["name"], tap_b.as_str());
    assert_eq!(drop["learns"]["who"], "nobody");
    assert_eq!(fwd["largest"]["bytes"], 1400);
    assert_eq!(doc["directions"][1]["outcome"], "carried");
    let fixes = doc["remediation"].to_string();
    assert!(
        fixes.contains(&format!("ip link set dev {tap_b} mtu")),
        "{fixes}"
    );

    // Recorded, then replayed on the bundle alone: the same verdict.
    let bundle = dir.path().join("path.bundle");
    let mut cmd = ns.spx();
    cmd.args([
        "path",
        A.0,
        B.0,
        "--timeout",
        "10s",
        "--ovs-db",
        &ovs.unix(),
        "--config",
    ])
    .arg(&cfg)
    .arg("--record")
    .arg(&bundle);
    let (code, live) = json(&mut cmd);
    assert_eq!(code, 1);
    let (code, replayed) = json(spx().args(["path", "--replay"]).arg(&bundle));
    assert_eq!(code, 1, "{replayed:#}");
    for key in [
        "code",
        "summary",
        "remediation",
        "directions",
        "ends",
        "question",
    ] {
        assert_eq!(replayed[key], live[key], "{key}");
    }
    assert_eq!(replayed["replayed_from"], bundle.display().to_string());
}
