//! The NIC and overlay checks on a node as Spinifex builds one: a virtio
//! NIC (virtio_net, the driver of the guest NIC the tuning page measured)
//! as the port of br-vpc, Open vSwitch's kernel datapath with br-int and a
//! geneve tunnel port (so `genev_sys_6081` exists, at the MTU OVS gives
//! it), VPC and management taps, and OVN's DHCP_Options in a northbound
//! database, all served in the guest. `nic.rings` on virtio_net's real
//! ring parameters, as QEMU sizes them.

use serde_json::{json, Value};

use crate::support::vm::{self, Vm, VmOptions};
use crate::support::{check, ethtool_k, strings};
use spx_test_harness::root_test;

/// IPsec on (the default), two nodes, underlay 1500: guests get 1408.
const CONFIG: &str = "node = \"spx1\"\n[network]\nunderlay_mtu = 1500\n\
    [nodes.spx1]\nhost = \"198.18.0.1\"\n[nodes.spx2]\nhost = \"198.18.0.2\"\n\
    [nodes.spx1.vpcd]\novn_nb_addr = \"unix:/tmp/nb.sock\"\n";

const TAP: &str = "tapeni0a1b2c3d4";

/// The node: OVS (ovsdb-server, ovs-vswitchd on the kernel datapath) with
/// br-int and a geneve port to 198.18.0.2 as ovn-controller makes it,
/// br-vpc over eth0, a VPC tap on br-int, a management tap, and the NB.
const NODE: &str = "set -e
mkdir -p /run/openvswitch
ovsdb-tool create /tmp/conf.db /usr/share/openvswitch/vswitch.ovsschema
ovsdb-server --detach --no-chdir --pidfile=/run/openvswitch/ovsdb-server.pid --remote=punix:/run/openvswitch/db.sock /tmp/conf.db
ovs-vsctl --no-wait init
ovs-vswitchd --detach --no-chdir --pidfile=/run/openvswitch/ovs-vswitchd.pid --log-file=/tmp/ovs-vswitchd.log unix:/run/openvswitch/db.sock
ovs-vsctl set Open_vSwitch . external_ids:ovn-encap-ip=198.18.0.1 external_ids:ovn-encap-type=geneve
ovs-vsctl add-br br-int -- set Bridge br-int fail-mode=secure
ovs-vsctl add-port br-int ovn-spx2-0 -- set Interface ovn-spx2-0 type=geneve options:remote_ip=198.18.0.2 options:key=flow options:csum=true
ip link add br-vpc type bridge
ip link set eth0 master br-vpc
ip link set eth0 up
ip link set br-vpc up
ip addr add 198.18.0.1/24 dev br-vpc
ip tuntap add dev tapeni0a1b2c3d4 mode tap
ip link set tapeni0a1b2c3d4 mtu 1408 up
ovs-vsctl add-port br-int tapeni0a1b2c3d4
ip tuntap add dev mg0a1b2c3d mode tap
ovsdb-tool create /tmp/nb.db /usr/share/ovn/ovn-nb.ovsschema
ovsdb-server --detach --no-chdir --pidfile=/tmp/nb.pid --unixctl=/tmp/nb.ctl --remote=punix:/tmp/nb.sock /tmp/nb.db
ovn-nbctl --db=unix:/tmp/nb.sock init
ovn-nbctl --db=unix:/tmp/nb.sock dhcp-options-create 10.0.0.0/24
ovn-nbctl --db=unix:/tmp/nb.sock dhcp-options-set-options $(ovn-nbctl --db=unix:/tmp/nb.sock --bare --columns=_uuid find DHCP_Options) mtu=1408 router=10.0.0.1
";

fn rings(vm: &Vm, ifname: &str) -> (i32, Value) {
    let (code, doc) = vm.spx(None, &["--check", "nic.rings", "--interface", ifname]);
    (code, check(&doc, "nic.rings").clone())
}

#[root_test]
fn a_node_with_ovs_geneve_and_virtio_nics() {
    let test = "a_node_with_ovs_geneve_and_virtio_nics";
    let Some(image) = vm::lab_or_skip(test) else {
        return;
    };
    // Two virtio NICs on a QEMU hub with nothing else on it: eth0 sized
    // as Spinifex's daemon sizes a guest NIC (rx_queue_size=1024), eth1
    // at QEMU's default.
    let vm = Vm::boot(
        image,
        VmOptions::default()
            .modules(&[
                "virtio_net",
                "bridge",
                "tun",
                // The openvswitch datapath needs crc32c.
                "crc32c_generic",
                "openvswitch",
                "geneve",
            ])
            .qemu_args(&[
                "-netdev",
                "hubport,id=u0,hubid=0",
                "-device",
                "virtio-net-pci,netdev=u0,mac=02:00:00:00:01:01,rx_queue_size=1024",
                "-netdev",
                "hubport,id=u1,hubid=0",
                "-device",
                "virtio-net-pci,netdev=u1,mac=02:00:00:00:01:02",
            ]),
    );
    vm.ok(NODE);
    assert!(
        vm.wait_until(
            "[ -e /sys/class/net/genev_sys_6081 ]",
            std::time::Duration::from_secs(60)
        ),
        "ovs-vswitchd made no tunnel device: {}",
        vm.sh("cat /tmp/ovs-vswitchd.log").stdout
    );
    let config = vm.file("spinifex.toml", CONFIG);

    // The kernel datapath as OVS made it (oracles: sysfs, ovs-dpctl).
    let geneve_mtu = vm.ok("cat /sys/class/net/genev_sys_6081/mtu");
    assert_eq!(geneve_mtu.trim(), "65000", "OVS's tunnel device MTU");
    let dp = vm.ok("ovs-dpctl show");
    assert!(
        dp.contains("genev_sys_6081 (geneve: packet_type=ptap)") && dp.contains(TAP),
        "{dp}"
    );

    let (code, doc) = vm.spx(
        None,
        &["--check", "nic.offloads,mtu.overlay", "--config", &config],
    );
    // nic.offloads judges the underlay port of br-vpc, and only it: not
    // the tunnel device, br-int, the datapath's ovs-system or the taps.
    // virtio_net (6.1) cannot segment UDP tunnels: the seed's "the overlay
    // gets no hardware segmentation offload", for real.
    let o = check(&doc, "nic.offloads");
    assert_eq!(
        o["evidence"]["interface_source"], "ports of br-vpc",
        "{o:#}"
    );
    let ifaces = o["evidence"]["interfaces"].as_array().unwrap();
    assert_eq!(ifaces.len(), 1, "{o:#}");
    assert_eq!(ifaces[0]["name"], "eth0");
    assert_eq!(ifaces[0]["driver"], "virtio_net");
    assert_eq!(o["status"], "fail", "{o:#}");
    let missing = strings(&ifaces[0]["missing"]);
    assert!(
        missing.contains(&"tx-udp_tnl-segmentation".to_owned()),
        "{missing:?}"
    );
    let oracle = ethtool_k::parse(&vm.ok("ethtool -k eth0"));
    let features = ifaces[0]["features"].as_object().unwrap();
    assert!(features.len() >= 10, "{features:?}");
    for (name, state) in features {
        assert_eq!(
            Some(state.as_str().unwrap()),
            oracle.get(name).map(String::as_str),
            "eth0 {name}: spx vs ethtool -k"
        );
    }
    assert_eq!(features["tx-udp_tnl-segmentation"], "off [fixed]");
    let fixes = strings(&o["remediation"]).join("\n");
    assert!(
        !fixes.contains("ethtool -K eth0 tx-udp_tnl-segmentation on"),
        "no command that cannot work: {fixes}"
    );
    assert!(fixes.contains("the driver cannot turn on"), "{fixes}");

    // mtu.overlay: DHCP, the VPC tap and br-vpc agree on 1408; the tunnel
    // device at 65000 and the management tap are not guest paths.
    let m = check(&doc, "mtu.overlay");
    assert_eq!(m["status"], "pass", "{m:#}");
    assert_eq!(m["evidence"]["expected_guest_mtu"], 1408);
    assert_eq!(m["evidence"]["taps"], json!([{"name": TAP, "mtu": 1408}]));
    assert_eq!(
        m["evidence"]["underlay_bridge"],
        json!({"name": "br-vpc", "mtu": 1500})
    );
    assert_eq!(code, 1, "nic.offloads fails");

    // A guest tap left at IPsec-off's 1442 on this encrypted overlay.
    vm.ok(&format!("ip link set {TAP} mtu 1442"));
    let (_, doc) = vm.spx(None, &["--check", "mtu.overlay", "--config", &config]);
    let m = check(&doc, "mtu.overlay");
    assert_eq!(m["status"], "fail", "{m:#}");
    assert_eq!(
        m["evidence"]["mismatches"],
        json!([format!("tap {TAP} has MTU 1442")])
    );
    vm.ok(&format!("ip link set {TAP} mtu 1408"));

    // nic.rings: eth0 at the 1024 QEMU gave it passes; shrunk in the guest
    // to 256 it warns with the command that undoes it, which works.
    let (code, c) = rings(&vm, "eth0");
    assert_eq!(c["status"], "pass", "{c:#}");
    assert_eq!(code, 0);
    assert_eq!(c["evidence"]["interfaces"][0]["rx"], 1024);
    assert_eq!(c["evidence"]["interfaces"][0]["rx_max"], 1024);
    vm.ok("ethtool -G eth0 rx 256");
    let (code, c) = rings(&vm, "eth0");
    assert_eq!(c["status"], "warn", "{c:#}");
    assert_eq!(code, 0);
    assert_eq!(c["evidence"]["interfaces"][0]["rx"], 256);
    assert_eq!(c["remediation"][0], "ethtool -G eth0 rx 1024");
    vm.ok("ethtool -G eth0 rx 1024");
    assert!(vm.ok("ethtool -g eth0").contains("RX:\t\t1024\nRX Mini"));
    assert_eq!(rings(&vm, "eth0").1["status"], "pass");

    // eth1 at QEMU's default: 256 is the most the device offers, and only
    // the host's QEMU (rx_queue_size=1024) can change that: a warning
    // that says so, not a pass.
    let g = vm.ok("ethtool -g eth1");
    assert!(g.matches("RX:\t\t256").count() == 2, "{g}");
    let (code, c) = rings(&vm, "eth1");
    assert_eq!(c["status"], "warn", "{c:#}");
    assert_eq!(code, 0);
    assert_eq!(c["evidence"]["interfaces"][0]["rx_max"], 256);
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("rx_queue_size=1024"),
        "{c:#}"
    );
}
