//! qemu.tuning against real, paused QEMU guests whose taps live in a
//! namespace the test created. The check runs inside that namespace (so
//! sysfs shows the taps) but sees every QEMU on the machine through /proc:
//! other tests may run guests at the same time, so assertions read only the
//! evidence of this test's pid.

use serde_json::{json, Value};

use crate::support::qemu::{vhost_net_available, QemuGuest};
use crate::support::{self, run_json, strings, write_config, Netns};
use spx_test_harness::root_test;

/// One node, IPsec off, underlay 1500: guest MTU 1442, queues min(vCPUs, 8)
/// = 2 for the 2-vCPU guests below.
const CONFIG: &str = "node = \"spx1\"\n[network]\nipsec_enabled = false\nunderlay_mtu = 1500\n[nodes.spx1]\nhost = \"198.18.0.1\"\n";

fn run_check(ns: &Netns, config: &std::path::Path) -> (i32, Value) {
    run_check_with(ns, config, &[])
}

fn run_check_with(ns: &Netns, config: &std::path::Path, extra: &[&str]) -> (i32, Value) {
    run_json(
        ns.spx()
            .args([
                "--check",
                "qemu.tuning",
                "--config",
                config.to_str().unwrap(),
                "--probe-timeout",
                "500ms",
            ])
            .args(extra),
    )
}

/// This guest's entry in the evidence.
pub fn instance(doc: &Value, pid: u32) -> Value {
    let check = support::check(doc, "qemu.tuning");
    check["evidence"]["instances"]
        .as_array()
        .unwrap_or_else(|| panic!("no instances in {check:#}"))
        .iter()
        .find(|i| i["pid"] == pid)
        .unwrap_or_else(|| panic!("pid {pid} not in {check:#}"))
        .clone()
}

#[root_test]
fn an_untuned_guest_fails_on_every_item() {
    let ns = Netns::new();
    // The tap an old daemon made: single queue (QEMU cannot open a
    // multi_queue tap with one queue; the kernel refuses with EINVAL).
    ns.ip(&["tuntap", "add", "dev", "tapeni-old0", "mode", "tap"]);
    let guest = QemuGuest::start(
        &ns,
        &[
            "-name",
            "guest=spx-test-untuned",
            "-smp",
            "2",
            "-drive",
            "driver=null-co,id=os,if=none,size=1048576",
            "-device",
            "virtio-blk-pci,drive=os,bootindex=1",
            "-netdev",
            "tap,id=net0,ifname=tapeni-old0,script=no,downscript=no",
            "-device",
            "virtio-net-pci,netdev=net0,mac=02:00:00:00:00:01",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), CONFIG);
    let (code, doc) = run_check(&ns, &config);
    let check = support::check(&doc, "qemu.tuning");
    assert_eq!(check["status"], "fail", "{check:#}");
    assert_eq!(code, 1);
    let summary = check["summary"].as_str().unwrap();
    assert!(summary.contains(&format!("pid {}", guest.pid)), "{summary}");
    let me = instance(&doc, guest.pid);
    assert_eq!(me["name"], "spx-test-untuned");
    assert_eq!(me["vcpus"], 2);
    let problems = strings(&me["problems"]);
    for (word, expected) in [
        ("vhost", "vhost=off, expected vhost=on"),
        ("iothread", "boot disk os: no iothread"),
        (
            "cache",
            "boot disk os: cache absent (writeback), expected cache=none",
        ),
        (
            "rx_queue_size",
            "rx_queue_size=absent (256), expected rx_queue_size=1024",
        ),
        ("host_mtu", "host_mtu=absent, expected host_mtu=1442"),
        ("queues", "queues=1, expected 2"),
    ] {
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "{word}: no problem containing {expected:?} in {problems:#?}"
        );
        assert!(summary.contains(word), "{word} not in summary: {summary}");
    }
    // num-queues left off: this QEMU (≥ 5.2, version read over QMP) gives
    // the default machine type one queue per vCPU, so it is not a problem.
    let ok = strings(&me["ok"]);
    assert!(
        ok.iter().any(
            |o| o.starts_with("boot disk os: num-queues absent, machine default (QEMU ")
                && o.ends_with("defaults it to the vCPU count (2)")
        ),
        "{ok:#?}"
    );
    // The host side agrees with QEMU: one queue held.
    assert!(
        ok.iter()
            .any(|o| o.contains("QEMU holds 1 queue(s) of tap tapeni-old0")),
        "{ok:#?}"
    );
    let fixes = strings(&check["remediation"]);
    assert!(
        fixes
            .iter()
            .any(|f| f.contains(&format!("stop, then start instance pid {}", guest.pid))),
        "{fixes:#?}"
    );
    // Each problem is a finding of this instance with its own code.
    let mine = |check: &Value| -> Vec<(String, String, Value)> {
        let me = format!("pid {} (spx-test-untuned)", guest.pid);
        check["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["subject"] == me.as_str())
            .map(|f| {
                (
                    f["code"].as_str().unwrap().to_owned(),
                    f["status"].as_str().unwrap().to_owned(),
                    f["status_was"].clone(),
                )
            })
            .collect()
    };
    let codes: Vec<String> = mine(check).into_iter().map(|(c, ..)| c).collect();
    for code in [
        "qemu.tuning/no-vhost",
        "qemu.tuning/wrong-queues",
        "qemu.tuning/small-rx-queue",
        "qemu.tuning/wrong-host-mtu",
        "qemu.tuning/no-iothread",
        "qemu.tuning/wrong-cache",
    ] {
        assert!(codes.iter().any(|c| c == code), "{code} not in {codes:?}");
    }
    // Allowing one kind leaves this guest's other problems failing.
    let (code, doc) = run_check_with(&ns, &config, &["--allow", "qemu.tuning/no-vhost"]);
    let check = support::check(&doc, "qemu.tuning");
    assert_eq!(
        (check["status"].as_str(), code),
        (Some("fail"), 1),
        "{check:#}"
    );
    assert_ne!(check["code"], "qemu.tuning/no-vhost", "{check:#}");
    for (c, status, was) in mine(check) {
        if c == "qemu.tuning/no-vhost" {
            assert_eq!((status.as_str(), was), ("pass", json!("fail")));
        } else {
            assert_eq!(status, "fail", "{c}");
        }
    }
    drop(guest);
}

/// Everything this machine allows. vhost needs /dev/vhost-net: without it
/// QEMU refuses vhost=on, so the guest runs without and the check must name
/// exactly that one problem.
#[root_test]
fn a_tuned_guest_has_no_problem_but_what_the_host_lacks() {
    let vhost = vhost_net_available();
    let ns = Netns::new();
    ns.ip(&[
        "tuntap",
        "add",
        "dev",
        "tapeni-new0",
        "mode",
        "tap",
        "multi_queue",
    ]);
    ns.ip(&["tuntap", "add", "dev", "mgi-test", "mode", "tap"]);
    let netdev = format!(
        "tap,id=net0,ifname=tapeni-new0,script=no,downscript=no,queues=2{}",
        if vhost { ",vhost=on" } else { "" }
    );
    let guest = QemuGuest::start(
        &ns,
        &[
            "-name",
            "guest=spx-test-tuned",
            "-smp",
            "cpus=2,sockets=1,cores=2",
            "-object",
            "iothread,id=ioth-os",
            "-drive",
            "driver=null-co,id=os,if=none,size=1048576,cache=none",
            "-device",
            "virtio-blk-pci,drive=os,iothread=ioth-os,num-queues=2,bootindex=1",
            // A data volume in the JSON form and one in the dotted form.
            "-object",
            "iothread,id=ioth-vol-a",
            "-blockdev",
            r#"{"driver":"null-co","node-name":"nbd-vol-a","size":1048576}"#,
            "-device",
            "virtio-blk-pci,id=vdisk-vol-a,drive=nbd-vol-a,iothread=ioth-vol-a",
            "-object",
            "iothread,id=ioth-vol-b",
            "-blockdev",
            "driver=null-co,node-name=nbd-vol-b,size=1048576",
            "-device",
            "virtio-blk-pci,id=vdisk-vol-b,drive=nbd-vol-b,iothread=ioth-vol-b",
            "-netdev",
            &netdev,
            "-device",
            "virtio-net-pci,netdev=net0,mac=02:00:00:00:00:01,host_mtu=1442,rx_queue_size=1024,mq=on,vectors=6",
            // The management NIC: one queue, no host_mtu; not a problem.
            "-netdev",
            "tap,id=mg0,ifname=mgi-test,script=no,downscript=no",
            "-device",
            "virtio-net-pci,netdev=mg0,mac=02:00:00:00:00:02",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), CONFIG);

    let (_, doc) = run_check(&ns, &config);
    let me = instance(&doc, guest.pid);
    let problems = strings(&me["problems"]);
    if vhost {
        assert!(problems.is_empty(), "{problems:#?}");
    } else {
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(
            problems[0].starts_with("NIC net0 (tapeni-new0): vhost=off, expected vhost=on"),
            "{problems:#?}"
        );
        assert!(problems[0].ends_with("/dev/vhost-net is missing on this host"));
        assert_eq!(
            support::check(&doc, "qemu.tuning")["evidence"]["vhost_net"],
            false
        );
    }
    let ok = strings(&me["ok"]).join("\n");
    for expected in [
        "NIC net0 (tapeni-new0): queues=2",
        "mq=on",
        "vectors=6",
        "rx_queue_size=1024",
        "host_mtu=1442",
        "QEMU holds 2 queue(s) of tap tapeni-new0",
        // Paused: the guest driver has not enabled the second queue.
        "host tap tapeni-new0: 1 of 2 queue(s) enabled by the guest driver, multi_queue",
        "boot disk os: cache=none",
        "boot disk os: iothread=ioth-os",
        "boot disk os: num-queues=2",
        "data volume vdisk-vol-a (nbd-vol-a): iothread=ioth-vol-a",
        "data volume vdisk-vol-b (nbd-vol-b): iothread=ioth-vol-b",
        "iothreads [ioth-os, ioth-vol-a, ioth-vol-b]",
        "NIC mg0 (mgi-test): management NIC, not audited",
    ] {
        assert!(ok.contains(expected), "{expected:?} not in\n{ok}");
    }

    // A monitor held by another client never greets a second one: the
    // check must give up within its probe timeout and say so.
    let held = guest.monitor();
    let (_, doc) = run_check(&ns, &config);
    let me = instance(&doc, guest.pid);
    let not_judged = strings(&me["not_judged"]).join("\n");
    assert!(
        not_judged.contains("hot-attached volumes: QMP") && not_judged.contains("no answer within"),
        "{not_judged}"
    );
    drop(held);

    // A volume hot-attached over QMP without an iothread is out of the
    // command line's reach; the check finds it through QMP.
    {
        let mut q = guest.monitor();
        q.execute(
            "blockdev-add",
            json!({"driver": "null-co", "node-name": "nbd-vol-hot", "size": 1048576}),
        );
        q.execute(
            "device_add",
            json!({"driver": "virtio-blk-pci", "id": "vdisk-vol-hot", "drive": "nbd-vol-hot"}),
        );
    }
    let (code, doc) = run_check(&ns, &config);
    assert_eq!(code, 1);
    let me = instance(&doc, guest.pid);
    let problems = strings(&me["problems"]);
    assert!(
        problems.iter().any(|p| p
            == "hot-attached volume vdisk-vol-hot (nbd-vol-hot): no iothread (QMP qom-get), expected its own iothread"),
        "{problems:#?}"
    );
    assert_eq!(problems.len(), if vhost { 1 } else { 2 }, "{problems:#?}");
    drop(guest);
}

/// host_mtu is the guest MTU, which this node's overlay endpoint family
/// decides: 1442 over IPv4, 1422 over IPv6 (IPsec off, underlay 1500).
#[root_test]
fn host_mtu_follows_the_family_of_this_nodes_encap_ip() {
    use crate::support::ovsdb_server::OvsdbServer;
    let ns = Netns::new();
    ns.ip(&["tuntap", "add", "dev", "tapeni-v6a0", "mode", "tap"]);
    let guest = QemuGuest::start(
        &ns,
        &[
            "-name",
            "guest=spx-test-v6",
            "-netdev",
            "tap,id=net0,ifname=tapeni-v6a0,script=no,downscript=no",
            "-device",
            "virtio-net-pci,netdev=net0,mac=02:00:00:00:00:03,host_mtu=1422,rx_queue_size=1024",
        ],
    );
    let ovs = OvsdbServer::ovs();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), CONFIG);
    let run = || {
        run_json(ns.spx().args([
            "--check",
            "qemu.tuning",
            "--config",
            config.to_str().unwrap(),
            "--ovs-db",
            &ovs.unix(),
            "--probe-timeout",
            "500ms",
        ]))
    };
    ovs.vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        "external_ids:ovn-encap-ip=fd00:198:18::1",
    ]);
    let (_, doc) = run();
    let me = instance(&doc, guest.pid);
    assert!(
        strings(&me["ok"])
            .iter()
            .any(|o| o == "NIC net0 (tapeni-v6a0): host_mtu=1422 (the guest MTU)"),
        "{me:#}"
    );
    assert!(
        !strings(&me["problems"])
            .iter()
            .any(|p| p.contains("host_mtu")),
        "{me:#}"
    );
    let c = support::check(&doc, "qemu.tuning");
    assert_eq!(c["evidence"]["expected_guest_mtu"], 1422);
    assert_eq!(c["evidence"]["underlay_family"]["family"], "ipv6");

    ovs.vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        "external_ids:ovn-encap-ip=198.18.0.1",
    ]);
    let (_, doc) = run();
    let me = instance(&doc, guest.pid);
    assert!(
        strings(&me["problems"]).iter().any(|p| p
            == "NIC net0 (tapeni-v6a0): host_mtu=1422, expected host_mtu=1442 (the guest MTU for underlay 1500 without IPsec); large segments vanish otherwise"),
        "{me:#}"
    );
    drop(guest);
}
