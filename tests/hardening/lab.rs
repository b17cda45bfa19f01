//! A full run in a lab node changes nothing: links, MTUs, features,
//! channels, rings, sysctls, xfrm, OVSDB contents, the config file.

use super::*;
use spx_test_harness::root_test;

/// The lab node: a namespace with a bridge, veths, a tap, sysctls set, xfrm
/// policies (and states where the kernel has ESP), and real NB, SB and
/// Open_vSwitch databases with rows.
pub(super) struct Lab {
    pub(super) node: Netns,
    _peer: Netns,
    nb: OvsdbServer,
    sb: OvsdbServer,
    ovs: OvsdbServer,
    pub(super) dir: tempfile::TempDir,
    config: PathBuf,
    /// `ip xfrm state add` worked (the kernel has ESP).
    has_esp: bool,
}

impl Lab {
    pub(super) fn new() -> Lab {
        let node = Netns::new();
        let peer = Netns::new();
        // No duplicate address detection: addresses are final at once
        // instead of turning from tentative during the test.
        for ns in [&node, &peer] {
            ns.sysctl("net.ipv6.conf.all.accept_dad=0");
            ns.sysctl("net.ipv6.conf.default.accept_dad=0");
        }
        node.ip(&[
            "link",
            "add",
            "br-wan",
            "type",
            "bridge",
            "stp_state",
            "0",
            "forward_delay",
            "0",
        ]);
        node.veth("eth1", &peer, "eth1p");
        node.ip(&["link", "set", "eth1", "master", "br-wan"]);
        node.ip(&["link", "set", "br-wan", "up"]);
        node.ip(&["addr", "add", "198.18.10.1/24", "dev", "br-wan"]);
        peer.ip(&["addr", "add", "198.18.10.2/24", "dev", "eth1p"]);
        // A second, unbridged underlay-looking link with jumbo MTU.
        node.veth("eth2", &peer, "eth2p");
        node.ip(&["link", "set", "eth2", "mtu", "9000"]);
        node.ip(&["tuntap", "add", "dev", "tapeni-lab0", "mode", "tap"]);
        node.ip(&["link", "set", "tapeni-lab0", "mtu", "1408"]);
        for kv in [
            "net.core.somaxconn=1024",
            "net.ipv4.tcp_reordering=5",
            "net.ipv4.ip_forward=1",
            "net.ipv4.conf.all.rp_filter=2",
        ] {
            node.sysctl(kv);
        }
        let has_esp = node.try_exec(&[
            "ip",
            "xfrm",
            "state",
            "add",
            "src",
            "198.18.10.1",
            "dst",
            "198.18.10.2",
            "proto",
            "esp",
            "spi",
            "0x1001",
            "reqid",
            "1",
            "mode",
            "transport",
            "aead",
            "rfc4106(gcm(aes))",
            "0x0102030405060708090a0b0c0d0e0f1011121314",
            "128",
        ]);
        for (dir, src, dst) in [
            ("out", "198.18.10.1", "198.18.10.2"),
            ("in", "198.18.10.2", "198.18.10.1"),
        ] {
            node.exec(&[
                "ip",
                "xfrm",
                "policy",
                "add",
                "src",
                src,
                "dst",
                dst,
                "dir",
                dir,
                "tmpl",
                "src",
                src,
                "dst",
                dst,
                "proto",
                "esp",
                "reqid",
                "1",
                "mode",
                "transport",
            ]);
        }

        let nb = OvsdbServer::nb();
        nb.nbctl(&["set", "NB_Global", ".", "ipsec=true"]);
        nb.nbctl(&["ls-add", "vpc-lab"]);
        let dhcp = nb.nbctl(&["dhcp-options-create", "198.18.64.0/24"]);
        let dhcp = if dhcp.trim().is_empty() {
            nb.nbctl(&["--bare", "--columns=_uuid", "list", "DHCP_Options"])
        } else {
            dhcp
        };
        nb.nbctl(&[
            "dhcp-options-set-options",
            dhcp.trim(),
            "mtu=1408",
            "lease_time=3600",
            "router=198.18.64.1",
            "server_id=198.18.64.1",
            "server_mac=02:00:00:00:00:01",
        ]);
        let sb = OvsdbServer::sb();
        sb.sbctl(&["chassis-add", "spx1", "geneve", "198.18.10.1"]);
        sb.sbctl(&["chassis-add", "spx2", "geneve", "198.18.10.2"]);
        let ovs = OvsdbServer::ovs();
        ovs.vsctl(&[
            "set",
            "Open_vSwitch",
            ".",
            "external_ids:ovn-encap-ip=198.18.10.1",
            "external_ids:system-id=spx1",
            "other_config:ipsec_encapsulation=true",
        ]);

        let dir = world_readable_tempdir();
        let config = dir.path().join("spinifex.toml");
        write_file(
            &config,
            &format!(
                "node = \"spx1\"\n[network]\nipsec_enabled = true\nunderlay_mtu = 1500\n\
                 [nodes.spx1]\nhost = \"198.18.10.1\"\n\
                 [nodes.spx1.vpcd]\novn_nb_addr = \"{}\"\novn_sb_addr = \"{}\"\n\
                 external_interface = \"br-wan\"\n\
                 [nodes.spx2]\nhost = \"198.18.10.2\"\n",
                nb.unix(),
                sb.unix()
            ),
            0o644,
        );
        Lab {
            node,
            _peer: peer,
            nb,
            sb,
            ovs,
            dir,
            config,
            has_esp,
        }
    }

    pub(super) fn doctor_args(&self) -> Vec<String> {
        vec![
            "--config".into(),
            self.config.display().to_string(),
            "--ovs-db".into(),
            self.ovs.unix(),
            "--sample".into(),
            "300ms".into(),
            "--probe-timeout".into(),
            "500ms".into(),
            "--timeout".into(),
            "8s".into(),
        ]
    }

    /// Everything a run could conceivably change, as text per aspect.
    fn snapshot(&self) -> BTreeMap<String, String> {
        let mut snap = BTreeMap::new();
        let mut links_json = self.json(&["ip", "-d", "-j", "link", "show"]);
        strip_timers(&mut links_json);
        let names: Vec<String> = links_json
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l["ifname"].as_str().map(str::to_owned))
            .collect();
        snap.insert("links".into(), format!("{links_json:#}"));
        for (key, argv) in [
            ("addresses", &["ip", "-j", "addr", "show"][..]),
            ("routes", &["ip", "-j", "route", "show", "table", "all"]),
            (
                "routes6",
                &["ip", "-6", "-j", "route", "show", "table", "all"],
            ),
            ("rules", &["ip", "-j", "rule", "show"]),
            ("bridge ports", &["bridge", "-j", "link", "show"]),
        ] {
            snap.insert(key.into(), format!("{:#}", self.json(argv)));
        }
        for (key, argv) in [
            ("qdiscs", &["tc", "qdisc", "show"][..]),
            ("xfrm states", &["ip", "xfrm", "state", "list"]),
            ("xfrm policies", &["ip", "xfrm", "policy", "list"]),
        ] {
            snap.insert(key.into(), self.output(argv));
        }
        for name in &names {
            for flag in ["-k", "-l", "-g", "-c"] {
                snap.insert(
                    format!("ethtool {flag} {name}"),
                    self.output(&["ethtool", flag, name]),
                );
            }
        }
        let sysctls: String = self
            .output(&["sysctl", "-a"])
            .lines()
            .filter(|l| l.starts_with("net."))
            .filter(|l| !l.contains("nf_conntrack_count"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(sysctls.lines().count() > 100, "sysctl -a: {sysctls}");
        snap.insert("sysctls".into(), sysctls);
        for (db, server) in [
            ("OVN_Northbound", &self.nb),
            ("OVN_Southbound", &self.sb),
            ("Open_vSwitch", &self.ovs),
        ] {
            let out = Command::new("ovsdb-client")
                .args(["dump", &server.unix(), db])
                .output()
                .expect("ovsdb-client dump");
            assert!(out.status.success(), "ovsdb-client dump {db}");
            snap.insert(
                format!("ovsdb {db}"),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            );
        }
        snap.insert(
            "config file".into(),
            std::fs::read_to_string(&self.config).unwrap(),
        );
        let mut files: Vec<String> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        snap.insert("config dir".into(), files.join("\n"));
        snap
    }

    /// Snapshots until two in a row agree (links settle after `up`).
    fn settled_snapshot(&self) -> BTreeMap<String, String> {
        let mut last = self.snapshot();
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(250));
            let now = self.snapshot();
            if now == last {
                return now;
            }
            last = now;
        }
        panic!("the lab never settled: {}", diff(&last, &self.snapshot()));
    }

    /// The JSON a tool prints inside the node (`ip -j …`).
    fn json(&self, argv: &[&str]) -> Value {
        let out = self.node.exec(argv);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{argv:?}: {e}: {out}"))
    }

    /// stdout, stderr and exit status of argv inside the node: a failing
    /// tool (`ethtool -g` on a veth) is part of the state too.
    fn output(&self, argv: &[&str]) -> String {
        let out = self
            .node
            .command(argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        format!(
            "{}{}[{}]",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            out.status
        )
    }
}

/// Bridge timers count down on their own; they are not state a run could
/// set.
fn strip_timers(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| !k.contains("timer"));
            map.values_mut().for_each(strip_timers);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_timers),
        _ => {}
    }
}

fn diff(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for key in before.keys().chain(after.keys()) {
        let (b, a) = (before.get(key), after.get(key));
        if b == a || out.contains(&format!("== {key}\n")) {
            continue;
        }
        out.push_str(&format!("== {key}\n"));
        let (b, a) = (b.map_or("", String::as_str), a.map_or("", String::as_str));
        for (lb, la) in b.lines().zip(a.lines()).filter(|(x, y)| x != y).take(5) {
            out.push_str(&format!("- {lb}\n+ {la}\n"));
        }
        if b.lines().count() != a.lines().count() {
            out.push_str(&format!(
                "({} lines before, {} after)\n",
                b.lines().count(),
                a.lines().count()
            ));
        }
    }
    out
}

#[root_test]
#[allow(clippy::disallowed_macros)] // says what part of xfrm this kernel can hold
fn a_full_run_in_a_lab_node_changes_nothing() {
    let lab = Lab::new();
    if !lab.has_esp {
        println!(
            "note: this kernel cannot hold ESP states (CONFIG_INET_ESP); xfrm is compared through policies and the (empty) state list"
        );
    }
    let before = lab.settled_snapshot();
    let mut runs = Vec::new();
    for extra in [
        &[][..],
        &["--for", "enable-jumbo"],
        &["--for", "disable-ipsec"],
    ] {
        let mut cmd = lab.node.spx();
        cmd.args(lab.doctor_args()).args(extra);
        let (code, doc) = run_json(&mut cmd);
        if extra.is_empty() {
            assert_complete(&doc);
            // The run really read the lab: the databases answered.
            assert_ne!(status(&doc, "ipsec.flags"), "error", "{doc:#}");
        }
        runs.push((extra, code));
    }
    let after = lab.snapshot();
    assert!(
        before == after,
        "a doctor run changed the node ({runs:?}):\n{}",
        diff(&before, &after)
    );
}
