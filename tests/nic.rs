//! The NIC and CPU checks against the real kernel: veth pairs in namespaces
//! of our own, shaped with `ethtool -K/-L` (fixtures only; the binary talks
//! SIOCETHTOOL itself), with `ethtool -k` as the independent oracle for the
//! features the binary reports. Traffic stays between the test's own
//! namespaces on 198.18.0.0/15.

use std::collections::BTreeMap;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{self, run_json, Netns};
use spx_test_harness::root_test;

/// `ethtool -k IF` inside `ns` as kernel feature name → state.
fn ethtool_k(ns: &Netns, ifname: &str) -> BTreeMap<String, String> {
    support::ethtool_k::parse(&ns.exec(&["ethtool", "-k", ifname]))
}

/// Every feature the binary reported for `ifname` must read the same in
/// `ethtool -k`. Returns how many were compared.
fn assert_features_match_ethtool(ns: &Netns, check: &Value, ifname: &str) -> usize {
    let oracle = ethtool_k(ns, ifname);
    let iface = check["evidence"]["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == ifname)
        .unwrap_or_else(|| panic!("{ifname} not in {check}"));
    let features = iface["features"].as_object().unwrap();
    for (name, state) in features {
        assert_eq!(
            Some(state.as_str().unwrap()),
            oracle.get(name).map(String::as_str),
            "{ifname} {name}: spx vs ethtool -k"
        );
    }
    features.len()
}

fn missing(check: &Value) -> Vec<String> {
    check["evidence"]["interfaces"][0]["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_owned())
        .collect()
}

#[root_test]
fn tunnel_segmentation_off_fails_then_on_passes_as_ethtool_k_says() {
    let a = Netns::new();
    let b = Netns::new();
    a.veth("nicva", &b, "nicvb");
    a.exec(&["ethtool", "-K", "nicva", "tx-udp_tnl-segmentation", "off"]);

    let (code, doc) = run_json(
        a.spx()
            .args(["--check", "nic.offloads", "--interface", "nicva"]),
    );
    let c = support::check(&doc, "nic.offloads");
    assert_eq!(c["status"], "fail", "{c:#}");
    assert_eq!(code, 1);
    assert!(
        missing(c).contains(&"tx-udp_tnl-segmentation".to_owned()),
        "{c:#}"
    );
    let fix = c["remediation"][0].as_str().unwrap();
    assert!(
        fix.starts_with("ethtool -K nicva tx-udp_tnl-segmentation on"),
        "{fix}"
    );
    assert_eq!(c["evidence"]["interfaces"][0]["driver"], "veth");
    assert_eq!(c["evidence"]["interface_source"], "--interface");
    let compared = assert_features_match_ethtool(&a, c, "nicva");
    assert!(compared >= 10, "only {compared} features reported");

    // The remediation, applied (with GRO, which veth leaves off): pass.
    a.exec(&[
        "ethtool",
        "-K",
        "nicva",
        "tx-udp_tnl-segmentation",
        "on",
        "tx-udp_tnl-csum-segmentation",
        "on",
        "gro",
        "on",
    ]);
    let (code, doc) = run_json(
        a.spx()
            .args(["--check", "nic.offloads", "--interface", "nicva"]),
    );
    let c = support::check(&doc, "nic.offloads");
    assert_eq!(c["status"], "pass", "{c:#}");
    assert_eq!(code, 0);
    assert!(missing(c).is_empty(), "{c:#}");
    assert_eq!(
        c["evidence"]["interfaces"][0]["features"]["tx-udp_tnl-segmentation"],
        "on"
    );
    assert_features_match_ethtool(&a, c, "nicva");

    // GRO alone off: a warning with its own command.
    a.exec(&["ethtool", "-K", "nicva", "gro", "off"]);
    let (_, doc) = run_json(
        a.spx()
            .args(["--check", "nic.offloads", "--interface", "nicva"]),
    );
    let c = support::check(&doc, "nic.offloads");
    assert_eq!(c["status"], "warn", "{c:#}");
    assert_eq!(c["remediation"][0], "ethtool -K nicva gro on");
    assert_eq!(missing(c), ["rx-gro"]);
}

#[root_test]
fn underlay_is_found_as_the_port_of_br_vpc() {
    let a = Netns::new();
    let b = Netns::new();
    a.veth("nicport", &b, "nicpeer");
    a.ip(&["link", "add", "br-vpc", "type", "bridge"]);
    a.ip(&["link", "set", "nicport", "master", "br-vpc"]);
    a.ip(&["link", "set", "br-vpc", "up"]);
    let (_, doc) = run_json(a.spx().args(["--check", "nic.offloads,nic.queues"]));
    for id in ["nic.offloads", "nic.queues"] {
        let c = support::check(&doc, id);
        assert_eq!(
            c["evidence"]["interface_source"], "ports of br-vpc",
            "{c:#}"
        );
        assert_eq!(c["evidence"]["interfaces"][0]["name"], "nicport", "{c:#}");
    }

    // No bridge: the egress interface of the route to a --peer.
    let c = Netns::new();
    let d = Netns::new();
    c.veth("nicroute", &d, "nicroutep");
    c.ip(&["addr", "add", "198.18.9.1/24", "dev", "nicroute"]);
    let (_, doc) = run_json(
        c.spx()
            .args(["--check", "nic.offloads", "--peer", "198.18.9.2"]),
    );
    let check = support::check(&doc, "nic.offloads");
    assert_eq!(
        check["evidence"]["interface_source"], "routes to peers",
        "{check:#}"
    );
    assert_eq!(
        check["evidence"]["interfaces"][0]["name"], "nicroute",
        "{check:#}"
    );

    // No bridge, no peers, no --interface: nothing to inspect, and it says how.
    let empty = Netns::new();
    let (code, doc) = run_json(empty.spx().args(["--check", "nic.offloads"]));
    let c = support::check(&doc, "nic.offloads");
    assert_eq!(c["status"], "skip");
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("no underlay interface found (pass --interface IF)"),
        "{c:#}"
    );
    assert_eq!(code, 0);
}

/// With no config, no --interface, no underlay bridge and no peer, all four
/// NIC checks take the same interface: the default route's (`ip -j route
/// show default` as the oracle), and each says so in its summary and
/// evidence. Before, nic.queues and nic.rings took it while nic.offloads
/// and nic.tso skipped.
#[root_test]
fn every_nic_check_chooses_the_default_routes_interface_alike() {
    let a = Netns::new();
    let b = Netns::new();
    a.veth("nicdr", &b, "nicdrp");
    a.ip(&["addr", "add", "198.18.12.1/24", "dev", "nicdr"]);
    b.ip(&["addr", "add", "198.18.12.2/24", "dev", "nicdrp"]);
    a.ip(&[
        "route",
        "add",
        "default",
        "via",
        "198.18.12.2",
        "dev",
        "nicdr",
    ]);
    let routes: Vec<Value> =
        serde_json::from_str(&a.ip(&["-j", "route", "show", "default"])).unwrap();
    assert_eq!(routes[0]["dev"], "nicdr", "the oracle: {routes:?}");

    const FOUR: [&str; 4] = ["nic.queues", "nic.rings", "nic.offloads", "nic.tso"];
    let (_, doc) = run_json(
        a.spx()
            .args(["--check", &FOUR.join(","), "--sample", "200ms"]),
    );
    for id in FOUR {
        let c = support::check(&doc, id);
        let summary = c["summary"].as_str().unwrap();
        // How it chose is a note of its own (JSON v1 `notes`), shared by
        // the four and never repeated in the summary.
        assert_eq!(
            c["notes"],
            serde_json::json!([{
                "code": "underlay-nic-from-default-route",
                "text": "nicdr is the default route's interface: nothing named the underlay; pass --interface IF to judge another"
            }]),
            "{id} names how it chose: {c:#}"
        );
        assert!(!summary.contains("default route"), "{c:#}");
        assert!(!summary.contains("no underlay interface found"), "{c:#}");
        if let Some(source) = c["evidence"].get("interface_source") {
            assert_eq!(source, "default route", "{c:#}");
        }
    }
    // What each read is nicdr's, as ethtool reads it.
    let o = support::check(&doc, "nic.offloads");
    assert_eq!(o["evidence"]["interfaces"][0]["name"], "nicdr", "{o:#}");
    assert_features_match_ethtool(&a, o, "nicdr");
    let q = support::check(&doc, "nic.queues");
    assert_eq!(q["evidence"]["interfaces"][0]["name"], "nicdr", "{q:#}");
    assert!(
        support::check(&doc, "nic.tso")["summary"]
            .as_str()
            .unwrap()
            .contains("nicdr (veth): the driver has no TSO counters"),
        "{doc:#}"
    );

    // Without a default route, all four skip alike, saying how to name one.
    a.ip(&["route", "del", "default"]);
    let (_, doc) = run_json(
        a.spx()
            .args(["--check", &FOUR.join(","), "--sample", "200ms"]),
    );
    for id in FOUR {
        let c = support::check(&doc, id);
        assert_eq!(c["status"], "skip", "{c:#}");
        assert!(
            c["summary"]
                .as_str()
                .unwrap()
                .contains("no underlay interface found (pass --interface IF)"),
            "{c:#}"
        );
    }
}

/// The ports of bridge `bridge` in `ns` as `ip -j link show master`
/// lists them (the oracle), sorted by name.
fn ports_by_ip(ns: &Netns, bridge: &str) -> Vec<String> {
    let text = ns.ip(&["-j", "link", "show", "master", bridge]);
    let links: Vec<Value> = serde_json::from_str(&text).unwrap();
    let mut names: Vec<String> = links
        .iter()
        .map(|l| l["ifname"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// Bridge facts are rtnetlink's: a device is a bridge by its
/// `IFLA_INFO_KIND` and a port by its `IFLA_MASTER`, all from one link
/// dump. A route through a bridge that is not a Spinifex plane's is judged
/// on its ports, listed by name whatever order they were enslaved in; a
/// device named br-vpc that is no Linux bridge (as an Open vSwitch bridge
/// is not) is passed over for the routes; and `mtu.path` finds the port
/// narrower than its bridge as this host's own limit.
#[root_test]
fn a_route_through_a_bridge_is_judged_on_the_ports_its_links_name() {
    let a = Netns::new();
    let b = Netns::new();
    a.veth("nicbz", &b, "nicbzp");
    a.veth("nicba", &b, "nicbap");
    // A device named br-vpc that is no Linux bridge (the kernel here has
    // no dummy driver; a veth end will do).
    a.veth("br-vpc", &b, "nicbvp");
    a.ip(&["link", "add", "nicbr", "type", "bridge"]);
    // z first: index order and name order differ.
    a.ip(&["link", "set", "nicbz", "master", "nicbr"]);
    a.ip(&["link", "set", "nicba", "master", "nicbr", "mtu", "1400"]);
    a.ip(&["link", "set", "nicbr", "mtu", "1500", "up"]);
    a.ip(&["addr", "add", "198.18.11.1/24", "dev", "nicbr"]);
    // The peer answers behind nicba only.
    b.ip(&["addr", "add", "198.18.11.2/24", "dev", "nicbap"]);
    let ports = ports_by_ip(&a, "nicbr");
    assert_eq!(ports, ["nicba", "nicbz"]);

    let (_, doc) = run_json(a.spx().args([
        "--check",
        "nic.offloads,nic.queues",
        "--peer",
        "198.18.11.2",
    ]));
    for id in ["nic.offloads", "nic.queues"] {
        let c = support::check(&doc, id);
        assert_eq!(
            c["evidence"]["interface_source"], "routes to peers",
            "{c:#}"
        );
        let names: Vec<&str> = c["evidence"]["interfaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ports, "{c:#}");
    }

    let (code, doc) = run_json(a.spx().args([
        "--check",
        "mtu.path",
        "--mtu",
        "1500",
        "--peer",
        "198.18.11.2",
    ]));
    let c = support::check(&doc, "mtu.path");
    assert_eq!(code, 1, "{c:#}");
    let local = &c["evidence"]["local"][0];
    assert_eq!(local["interface"], "nicbr", "{c:#}");
    assert_eq!(local["kind"], "bridge", "{c:#}");
    let mut seen: Vec<(String, u64)> = local["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["interface"].as_str().unwrap().to_owned(),
                p["mtu"].as_u64().unwrap(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [("nicba".to_owned(), 1400), ("nicbz".to_owned(), 1500)]
    );
    let peer = &c["evidence"]["peers"][0];
    assert_eq!(peer["verdict"], "local-mtu", "{c:#}");
    assert_eq!(peer["local_mtu"], 1400, "{c:#}");
}

#[root_test]
fn a_four_queue_veth_reduced_to_one_warns_current_1_max_4() {
    let a = Netns::new();
    let b = Netns::new();
    a.veth_queues("nicq", &b, "nicqp", 4);
    let (code, doc) = run_json(
        a.spx()
            .args(["--check", "nic.queues", "--interface", "nicq"]),
    );
    let c = support::check(&doc, "nic.queues");
    assert_eq!(c["status"], "pass", "{c:#}");
    assert_eq!(code, 0);
    assert_eq!(c["evidence"]["interfaces"][0]["current"], 4);

    a.exec(&["ethtool", "-L", "nicq", "rx", "1", "tx", "1"]);
    let (code, doc) = run_json(
        a.spx()
            .args(["--check", "nic.queues", "--interface", "nicq"]),
    );
    let c = support::check(&doc, "nic.queues");
    assert_eq!(code, 0);
    assert_eq!(c["evidence"]["interfaces"][0]["current"], 1);
    assert_eq!(c["evidence"]["interfaces"][0]["max"], 4);
    // Pairs beyond the online CPUs add no core: the fix asks for
    // min(4, CPUs). `getconf` is the oracle for the CPU count.
    let cpus: u32 = String::from_utf8(
        std::process::Command::new("getconf")
            .arg("_NPROCESSORS_ONLN")
            .output()
            .expect("getconf")
            .stdout,
    )
    .unwrap()
    .trim()
    .parse()
    .unwrap();
    let usable = 4.min(cpus);
    assert_eq!(c["evidence"]["online_cpus"], cpus, "{c:#}");
    assert_eq!(c["evidence"]["interfaces"][0]["usable"], usable, "{c:#}");
    if usable > 1 {
        assert_eq!(c["status"], "warn", "{c:#}");
        assert_eq!(
            c["remediation"][0],
            format!("ethtool -L nicq rx {usable} tx {usable}")
        );
    } else {
        assert_eq!(c["status"], "pass", "{c:#}");
    }
    // The oracle: ethtool -l shows the same current count.
    let l = a.exec(&["ethtool", "-l", "nicq"]);
    let current = l.split("Current hardware settings:").nth(1).unwrap();
    assert!(
        current
            .lines()
            .any(|x| x.split_whitespace().collect::<Vec<_>>() == ["RX:", "1"]),
        "{l}"
    );
}

#[root_test]
fn veth_rings_are_not_reported_never_a_fail() {
    let a = Netns::new();
    let b = Netns::new();
    a.veth("nicr", &b, "nicrp");
    // The oracle: ethtool -g on veth fails with "Operation not supported"
    // (kernel 6.18); should a kernel start reporting rings, the check must
    // report the same numbers instead.
    let g = a.command("ethtool").args(["-g", "nicr"]).output().unwrap();
    let (_, doc) = run_json(
        a.spx()
            .args(["--check", "nic.rings", "--interface", "nicr"]),
    );
    let c = support::check(&doc, "nic.rings");
    if g.status.success() {
        let text = String::from_utf8_lossy(&g.stdout);
        let rx = c["evidence"]["interfaces"][0]["rx"]
            .as_u64()
            .expect("rx reported");
        assert!(text.contains(&format!("RX:\t\t{rx}")), "{text}\n{c:#}");
    } else {
        assert_eq!(c["status"], "skip", "{c:#}");
        assert!(
            c["summary"]
                .as_str()
                .unwrap()
                .contains("not reported by this driver"),
            "{c:#}"
        );
        assert_eq!(
            c["evidence"]["interfaces"][0]["note"],
            "not reported by this driver"
        );
    }
}

#[root_test]
fn a_udp_flood_between_namespaces_shows_in_net_rx() {
    let a = Netns::new();
    let b = Netns::new();
    a.veth("nicfa", &b, "nicfb");
    a.ip(&["addr", "add", "198.18.7.1/24", "dev", "nicfa"]);
    b.ip(&["addr", "add", "198.18.7.2/24", "dev", "nicfb"]);
    let rx_before: u64 = b
        .exec(&["cat", "/sys/class/net/nicfb/statistics/rx_packets"])
        .trim()
        .parse()
        .unwrap();

    // A bounded flood from a to b's own address (at most 4 s), from a
    // thread inside namespace a.
    let stop = Arc::new(AtomicBool::new(false));
    let stop_flood = Arc::clone(&stop);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let flood = a.in_thread(move || {
        let tx = UdpSocket::bind("198.18.7.1:0").unwrap();
        let payload = [0xa5_u8; 1400];
        let end = Instant::now() + Duration::from_secs(4);
        let mut sent = 0u64;
        while Instant::now() < end && !stop_flood.load(Ordering::Relaxed) {
            if tx.send_to(&payload, "198.18.7.2:9").is_ok() {
                sent += 1;
            }
            if sent == 1000 {
                let _ = ready_tx.send(());
            }
        }
        sent
    });
    ready_rx
        .recv_timeout(Duration::from_secs(3))
        .expect("flood started");
    let (_, doc) = run_json(b.spx().args(["--check", "cpu.softirq", "--sample", "1s"]));
    stop.store(true, Ordering::Relaxed);
    let sent = flood.join().unwrap();
    let rx_after: u64 = b
        .exec(&["cat", "/sys/class/net/nicfb/statistics/rx_packets"])
        .trim()
        .parse()
        .unwrap();

    let c = support::check(&doc, "cpu.softirq");
    assert!(
        ["pass", "warn", "fail"].contains(&c["status"].as_str().unwrap()),
        "{c:#}"
    );
    let cpus = c["evidence"]["cpus"].as_array().unwrap();
    assert!(!cpus.is_empty());
    let net_rx: f64 = cpus
        .iter()
        .map(|c| c["net_rx_per_sec"].as_f64().unwrap())
        .sum();
    assert!(
        net_rx >= 1000.0,
        "the flood ({sent} sent, {} received by nicfb) must show in NET_RX: {c:#}",
        rx_after - rx_before
    );
    assert_eq!(c["evidence"]["net_rx_per_sec"].as_f64().unwrap(), net_rx);
    for cpu in cpus {
        let busy = cpu["busy_share"].as_f64().unwrap();
        let softirq = cpu["softirq_share"].as_f64().unwrap();
        assert!(
            (0.0..=1.0).contains(&busy) && softirq <= busy + 0.001,
            "{cpu}"
        );
    }
    assert!(rx_after - rx_before > 1000, "the flood reached nicfb");
}

#[root_test]
fn tcp_reordering_reads_the_namespace_counters() {
    // A fresh namespace has sent no TCP: idle is a skip that says so, never
    // a pass.
    let a = Netns::new();
    let (code, doc) =
        run_json(
            a.spx()
                .args(["--check", "tcp.reordering,nic.tso", "--sample", "200ms"]),
        );
    let c = support::check(&doc, "tcp.reordering");
    assert_eq!(c["status"], "skip", "{c:#}");
    assert!(
        c["summary"].as_str().unwrap().contains("TCP was idle"),
        "{c:#}"
    );
    assert_eq!(c["evidence"]["out_segs"], 0);
    assert_eq!(code, 0);
}

#[root_test]
fn nic_tso_on_veth_skips_for_want_of_counters() {
    let a = Netns::new();
    let b = Netns::new();
    a.veth("nict", &b, "nictp");
    // The oracle: veth's `ethtool -S` has no TSO counter.
    let s = a.exec(&["ethtool", "-S", "nict"]);
    assert!(!s.contains("tso"), "{s}");
    let (_, doc) = run_json(a.spx().args([
        "--check",
        "nic.tso",
        "--interface",
        "nict",
        "--sample",
        "200ms",
    ]));
    let c = support::check(&doc, "nic.tso");
    assert_eq!(c["status"], "skip", "{c:#}");
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("nict (veth): the driver has no TSO counters"),
        "{c:#}"
    );
}

#[root_test]
fn a_stacked_port_is_followed_down_to_the_device_that_owns_the_queues() {
    // A macvlan stands in for a VLAN or bond port (sysfs lower_* links
    // alike; this CI kernel has no 8021q or bonding module).
    let a = Netns::new();
    let b = Netns::new();
    a.ip(&[
        "link",
        "add",
        "nicphys",
        "numtxqueues",
        "2",
        "numrxqueues",
        "2",
        "type",
        "veth",
        "peer",
        "name",
        "nicphysp",
        "netns",
        &b.name,
    ]);
    a.ip(&[
        "link", "add", "link", "nicphys", "name", "nicstack", "type", "macvlan", "mode", "bridge",
    ]);
    a.ip(&["link", "add", "br-vpc", "type", "bridge"]);
    a.ip(&["link", "set", "nicstack", "master", "br-vpc"]);
    let (_, doc) = run_json(a.spx().args(["--check", "nic.queues,nic.offloads"]));
    let q = support::check(&doc, "nic.queues");
    assert_eq!(
        q["evidence"]["interface_source"], "ports of br-vpc, lower devices",
        "{q:#}"
    );
    assert_eq!(q["evidence"]["interfaces"][0]["name"], "nicphys", "{q:#}");
    assert_eq!(q["evidence"]["interfaces"][0]["max"], 2, "{q:#}");
    // Offloads are judged where the stack hands packets over: the port.
    let o = support::check(&doc, "nic.offloads");
    assert_eq!(o["evidence"]["interfaces"][0]["name"], "nicstack", "{o:#}");
    assert_features_match_ethtool(&a, o, "nicstack");
}

#[test]
fn bad_or_absent_interface_names_are_inconclusive_exit_2() {
    for bad in ["a/b", "this-is-too-long0", "eth 0"] {
        let (code, _, stderr) =
            support::run(support::spx().args(["--check", "nic.offloads", "--interface", bad]));
        assert_eq!(code, 2, "{bad:?}: {stderr}");
    }
    let (code, doc) =
        run_json(support::spx().args(["--check", "nic.offloads", "--interface", "nosuchnic0"]));
    let c = support::check(&doc, "nic.offloads");
    assert_eq!(c["status"], "error", "{c:#}");
    assert!(
        c["summary"].as_str().unwrap().contains("no such interface"),
        "{c:#}"
    );
    assert_eq!(code, 2);
}
