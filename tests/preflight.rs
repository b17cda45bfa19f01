//! Preflight profiles on a real netns fabric: `--for enable-jumbo` gives go
//! only when every peer carries the target, and `--for disable-ipsec` names
//! a peer behind a router hop.

use crate::support::fabric::{Fabric, NodeSpec, FAR_V4, ROUTER_V4};
use crate::support::{self, check, run, run_json};
use spx_test_harness::root_test;

fn runbook(doc: &serde_json::Value) -> Vec<String> {
    doc["runbook"]
        .as_array()
        .expect("a preflight carries a runbook")
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

#[root_test]
fn enable_jumbo_stops_on_a_black_hole_and_goes_on_a_jumbo_path() {
    let mut fabric = Fabric::new();
    let src = fabric.add_node(NodeSpec::jumbo());
    let healthy = fabric.add_node(NodeSpec::jumbo());
    let hole = fabric.add_node(NodeSpec::BLACK_HOLE);
    let (s, h, b) = (fabric.node(src), fabric.node(healthy), fabric.node(hole));

    let (code, doc) =
        run_json(
            s.spx()
                .args(["--for", "enable-jumbo", "--peer", &b.v4, "--peer", &h.v4]),
        );
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["profile"], "enable-jumbo");
    assert_eq!(check(&doc, "mtu.path")["status"], "fail");
    assert_eq!(
        doc["checks"].as_array().unwrap().len(),
        1,
        "only the profile's checks"
    );
    let steps = runbook(&doc);
    let stop = steps
        .iter()
        .find(|s| s.starts_with("STOP"))
        .expect("a STOP step");
    assert!(
        stop.contains(&format!("{} (blackhole, carries 1500)", b.v4)),
        "{stop}"
    );
    assert!(
        !stop.contains(&h.v4),
        "the healthy peer is not named: {stop}"
    );
    assert!(steps.iter().any(|s| s.contains("underlay_mtu = 9000")));

    // The table prints the runbook after the checks.
    let (code, out, _) =
        support::run_replayed(s.spx().args(["--for", "enable-jumbo", "--peer", &b.v4]));
    assert_eq!(code, 1);
    let table_end = out.find("(preflight enable-jumbo)").expect("summary line");
    let runbook_at = out.find("Runbook:").expect("runbook printed");
    assert!(runbook_at > table_end, "{out}");

    let (code, doc) = run_json(s.spx().args(["--for", "enable-jumbo", "--peer", &h.v4]));
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(check(&doc, "mtu.path")["status"], "pass");
    assert!(!runbook(&doc).iter().any(|s| s.starts_with("STOP")));
}

#[root_test]
fn enable_jumbo_without_peers_is_inconclusive() {
    let fabric = {
        let mut f = Fabric::new();
        f.add_node(NodeSpec::jumbo());
        f
    };
    let (code, doc) = run_json(fabric.node(0).spx().args(["--for", "enable-jumbo"]));
    assert_eq!(
        code, 2,
        "a preflight never passes on missing evidence: {doc:#}"
    );
    assert_eq!(check(&doc, "mtu.path")["status"], "skip");
    assert!(!runbook(&doc).is_empty());
}

#[root_test]
fn disable_ipsec_names_a_peer_behind_a_router() {
    let mut fabric = Fabric::new();
    let src = fabric.add_node(NodeSpec::jumbo());
    let lan = fabric.add_node(NodeSpec::jumbo());
    fabric.add_router(9000);
    let (s, l) = (fabric.node(src), fabric.node(lan));
    let (code, doc) =
        run_json(
            s.spx()
                .args(["--for", "disable-ipsec", "--peer", &l.v4, "--peer", FAR_V4]),
        );
    let c = check(&doc, "underlay.on-link");
    assert_eq!(c["status"], "warn", "{c:#}");
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains(&format!("{FAR_V4} via {ROUTER_V4} dev eth0")),
        "{c:#}"
    );
    let peers = c["evidence"]["peers"].as_array().unwrap();
    let far = peers.iter().find(|p| p["address"] == FAR_V4).unwrap();
    assert_eq!(far["on_link"], false);
    assert_eq!(far["via"], ROUTER_V4);
    let near = peers
        .iter()
        .find(|p| p["address"] == l.v4.as_str())
        .unwrap();
    assert_eq!(near["on_link"], true);
    assert!(near["via"].is_null());
    // No config, so no NB to read: the preflight cannot conclude.
    assert_eq!(code, 2, "{doc:#}");
    assert_eq!(doc["profile"], "disable-ipsec");
    assert!(
        runbook(&doc)[0].starts_with("STOP and decide"),
        "{:?}",
        runbook(&doc)
    );
}

#[test]
fn a_preflight_refuses_to_skip_what_it_requires() {
    let (code, _, err) = run(support::spx().args(["--for", "enable-jumbo", "--skip", "mtu"]));
    assert_eq!(code, 2);
    assert!(
        err.contains("--skip mtu.path: the enable-jumbo preflight requires it"),
        "{err}"
    );
    // Skipping something else is fine, and --check adds to the profile.
    let (code, doc) = run_json(support::spx().args([
        "--for",
        "enable-jumbo",
        "--check",
        "udp",
        "--skip",
        "sysctl",
        "--sample",
        "100ms",
    ]));
    assert_eq!(code, 2, "no peers: inconclusive");
    let ids: Vec<&str> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["udp.rcvbuf-errors", "mtu.path"]);
}

/// The runbooks name the config this run read, revert to its underlay_mtu
/// (not a hard-coded 1500), and give the guest MTU of this node's underlay
/// family (IPv6: 20 bytes less).
#[root_test]
fn runbooks_name_the_loaded_config_its_underlay_mtu_and_the_ipv6_guest_mtu() {
    use crate::support::ovsdb_server::OvsdbServer;
    let mut fabric = Fabric::new();
    let src = fabric.add_node(NodeSpec::jumbo());
    let healthy = fabric.add_node(NodeSpec::jumbo());
    let (s, h) = (fabric.node(src), fabric.node(healthy));
    let ovs = OvsdbServer::ovs();
    ovs.vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        "external_ids:ovn-encap-ip=fd00:198:18::1",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let config = support::write_config(
        dir.path(),
        &format!(
            "node = \"src\"\n[network]\nipsec_enabled = false\nunderlay_mtu = 4000\n\
             [nodes.src]\nhost = \"{}\"\n[nodes.h]\nhost = \"{}\"\n",
            s.v4, h.v4
        ),
    );
    let cfg = config.display().to_string();
    let (code, doc) = run_json(
        s.spx()
            .args(["--for", "enable-jumbo", "--ovs-db", &ovs.unix(), "--config"])
            .arg(&config),
    );
    assert_eq!(code, 0, "{doc:#}");
    let steps = runbook(&doc).join("\n");
    assert!(
        steps.contains(&format!(
            "set `underlay_mtu = 9000` under [network] in {cfg} and `systemctl restart spinifex-daemon`"
        )),
        "{steps}"
    );
    assert!(
        steps.contains("revert at once on both ends to the configured underlay_mtu 4000: `ip link set dev <nic> mtu 4000`, `ip link set dev br-vpc mtu 4000`"),
        "{steps}"
    );
    // 9000 - 58 - 20 (an IPv6 outer header).
    assert!(
        steps.contains("guests will be given MTU 8922 (IPsec off, IPv6 underlay)"),
        "{steps}"
    );
    assert!(!steps.contains("/etc/spinifex"), "{steps}");

    let (_, doc) = run_json(
        s.spx()
            .args([
                "--for",
                "disable-ipsec",
                "--ovs-db",
                &ovs.unix(),
                "--config",
            ])
            .arg(&config),
    );
    let steps = runbook(&doc).join("\n");
    assert!(
        steps.contains(&format!(
            "set `ipsec_enabled = false` under [network] in {cfg}"
        )),
        "{steps}"
    );
    // 4000 - 58 - 20, with and without ESP's 34.
    assert!(
        steps.contains("the guest MTU moves 3888 -> 3922 (IPv6 underlay)"),
        "{steps}"
    );
    assert!(
        steps.contains("DHCP and tap MTU 3922 (mtu.overlay)"),
        "{steps}"
    );
}

/// A paused QEMU in `ns` with one VPC NIC of `host_mtu` on tap `tap`.
fn guest(
    ns: &support::Netns,
    name: &str,
    tap: &str,
    host_mtu: u32,
) -> crate::support::qemu::QemuGuest {
    ns.ip(&["tuntap", "add", "dev", tap, "mode", "tap"]);
    crate::support::qemu::QemuGuest::start(
        ns,
        &[
            "-name",
            &format!("guest={name}"),
            "-netdev",
            &format!("tap,id=net0,ifname={tap},script=no,downscript=no"),
            "-device",
            &format!("virtio-net-pci,netdev=net0,mac=02:00:00:00:00:01,host_mtu={host_mtu}"),
        ],
    )
}

#[root_test]
fn enable_ipsec_goes_on_valid_credentials_and_names_the_guests_to_restart() {
    // A node with IPsec off, its credentials as Spinifex issues them, the
    // daemons installed (Debian's packages, which bash .ci/run installs).
    let lab = crate::ipsec_cert::Lab::spinifex();
    let text = std::fs::read_to_string(&lab.node.config)
        .unwrap()
        .replace("ipsec_enabled = true", "ipsec_enabled = false");
    std::fs::write(&lab.node.config, text).unwrap();
    // Two running guests: one started with IPsec off (host_mtu 1442, above
    // the 1408 IPsec implies at 1500), one already at 1408.
    let ns = support::Netns::new();
    let old = guest(&ns, "spx-test-old", "tapeni-ipold", 1442);
    let new = guest(&ns, "spx-test-new", "tapeni-ipnew", 1408);
    let (code, doc) = run_json(&mut lab.command(&["--for", "enable-ipsec"]));
    assert_eq!(doc["profile"], "enable-ipsec");
    for id in ["ipsec.cert", "ipsec.daemon"] {
        assert_eq!(check(&doc, id)["status"], "pass", "{:#}", check(&doc, id));
    }
    assert_eq!(code, 0);
    let steps = runbook(&doc);
    let all = steps.join("\n");
    assert!(!all.contains("STOP"), "{all}");
    let guests = steps
        .iter()
        .find(|s| s.starts_with("then stop and start these running guests"))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(
        guests.contains(&format!(
            "pid {} (spx-test-old) tap tapeni-ipold host_mtu=1442",
            old.pid
        )),
        "{guests}"
    );
    assert!(
        guests.contains("above 1408, the guest MTU with IPsec on (underlay 1500)"),
        "{guests}"
    );
    assert!(!guests.contains(&format!("pid {} ", new.pid)), "{guests}");
    assert!(
        all.contains("set `ipsec_enabled = true` under [network] in"),
        "{all}"
    );

    // An expired certificate: the preflight fails and the runbook stops.
    let ca = &lab.ca;
    let key = crate::support::pki::rsa_key(2048);
    let expired = crate::support::pki::Peer {
        not_before_days: -400,
        not_after_days: -1,
        ..crate::support::pki::Peer::spinifex("spx1")
    };
    lab.node.write_peer(&expired.issue(ca, &key), &key);
    let (code, doc) = run_json(&mut lab.command(&["--for", "enable-ipsec"]));
    assert_eq!(code, 1);
    let steps = runbook(&doc);
    assert!(
        steps[0].starts_with(
            "STOP: ipsec.cert: before enabling IPsec: the peer certificate expired on "
        ),
        "{steps:#?}"
    );
}
