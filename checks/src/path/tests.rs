//! The path question on recorded facts: OVN rows as Spinifex's topology
//! writes them (network/topology names.go and dhcp_options.go, policy/acl.go
//! for the security groups), as ovsdb-server 3.1 answers a select of them,
//! and each node's side as `path-facts` answers it. Each verdict is pinned
//! whole (`checks/snapshots/`), so a change of wording or judgement shows.

use std::net::IpAddr;

use serde_json::{json, Value};

use super::judge::{
    judge, End, Fate, HopKind, Limit, Outcome, PathFacts, Place, Precision, SizeSource,
};
use super::node::{GuestFacts, NicFacts, NodeFacts, OvsFacts, TapLink, Toward};
use super::report::PathVerdict;
use super::resolve::{self, Lookup, Routing};
use super::PathKind;
use crate::checks::mtu_path::LocalLink;
use crate::facts::icmp::{PathProbe, TooBig};
use crate::facts::ovsdb::topology::{
    nb_topology, sb_topology, NbTopology, OvsInterface, SbTopology,
};
use crate::facts::ovsdb::Row;
use crate::facts::qemu::instance::TapNic;
use crate::facts::xfrm::{SaLayout, SecurityAssociation};

const VPC: &str = "vpc-0f3a9c2e1b7d45a60";
const S1: &str = "subnet-0a11c0ffee0000001";
const S2: &str = "subnet-0b22c0ffee0000002";
const A: &str = "eni-0aa1f3c9d2b7e4051";
const B: &str = "eni-0bb2e4d0c3a8f5162";
const C: &str = "eni-0cc3a5e1d4b9a6273";
const NB_AT: &str = "tcp:198.19.0.1:6641";
const SB_AT: &str = "tcp:198.19.0.1:6642";

fn row(v: Value) -> Row {
    v.as_object().expect("a row is an object").clone()
}

fn uuid(u: &str) -> Value {
    json!(["uuid", u])
}

/// The port of an ENI as `topology` writes it: `port-<eni>`, addresses and
/// port_security `"<mac> <ip>"`, the spinifex external_ids, the subnet's
/// DHCP row.
fn eni_port(eni: &str, mac: &str, ip: &str, subnet: &str, dhcp: &str) -> Row {
    row(json!({
        "_uuid": uuid(&format!("lsp-{eni}")),
        "name": format!("port-{eni}"),
        "type": "",
        "addresses": format!("{mac} {ip}"),
        "external_ids": ["map", [["spinifex:eni_id", eni], ["spinifex:subnet_id", subnet], ["spinifex:vpc_id", VPC]]],
        "dhcpv4_options": uuid(dhcp),
        "dhcpv6_options": ["set", []],
        "options": ["map", []],
    }))
}

/// The router-type port `rtr-port-<subnet>` peered with `rtr-<subnet>`.
fn router_port_lsp(subnet: &str) -> Row {
    row(json!({
        "_uuid": uuid(&format!("lsp-rtr-{subnet}")),
        "name": format!("rtr-port-{subnet}"),
        "type": "router",
        "addresses": "router",
        "external_ids": ["map", []],
        "dhcpv4_options": ["set", []],
        "dhcpv6_options": ["set", []],
        "options": ["map", [["router-port", format!("rtr-{subnet}")]]],
    }))
}

struct Topo {
    dhcp_mtu: [&'static str; 2],
    gateway_mtu: Option<&'static str>,
    egress: &'static str,
}

impl Default for Topo {
    fn default() -> Topo {
        Topo {
            dhcp_mtu: ["8942", "8942"],
            gateway_mtu: None,
            egress: "allow-related",
        }
    }
}

/// Spinifex's VPC: one router, two subnets; A and B on subnet 1 (on spx1
/// and spx2), C on subnet 2 (spx3); one security group on every ENI.
fn nb(t: &Topo) -> NbTopology {
    let dhcp = |s: &str, cidr: &str, gw: &str, mtu: &str| {
        row(json!({"_uuid": uuid(&format!("dhcp-{s}")), "cidr": cidr,
            "options": ["map", [["server_id", gw], ["server_mac", "02:00:00:00:00:01"],
                ["lease_time", "3600"], ["router", gw], ["dns_server", "198.18.0.2"], ["mtu", mtu]]]}))
    };
    let ls = |s: &str, ports: Vec<&str>| {
        row(
            json!({"_uuid": uuid(&format!("ls-{s}")), "name": format!("subnet-{s}"),
            "ports": ["set", ports.iter().map(|p| json!(["uuid", p])).collect::<Vec<_>>()],
            "acls": ["set", []],
            "external_ids": ["map", [["spinifex:subnet_id", s], ["spinifex:vpc_id", VPC]]]}),
        )
    };
    let lrp = |s: &str, net: &str| {
        let opts: Vec<Value> = t
            .gateway_mtu
            .map(|m| vec![json!(["gateway_mtu", m])])
            .unwrap_or_default();
        row(
            json!({"_uuid": uuid(&format!("lrp-{s}")), "name": format!("rtr-{s}"),
            "networks": net, "mac": "02:00:00:00:00:01",
            "options": ["map", opts], "ipv6_ra_configs": ["map", []]}),
        )
    };
    let pg = "sg_0a5a5c0ffee5a5a50";
    let acl = |id: &str, dir: &str, prio: i64, m: String, action: &str| {
        row(
            json!({"_uuid": uuid(id), "direction": dir, "priority": prio, "match": m,
            "action": action, "name": ["set", []]}),
        )
    };
    nb_topology(&[
        vec![
            eni_port(A, "02:00:0a:00:01:0a", "198.18.1.10", S1, &format!("dhcp-{S1}")),
            eni_port(B, "02:00:0a:00:01:0b", "198.18.1.11", S1, &format!("dhcp-{S1}")),
            eni_port(C, "02:00:0a:00:02:0c", "198.18.2.12", S2, &format!("dhcp-{S2}")),
            router_port_lsp(S1),
            router_port_lsp(S2),
        ],
        vec![
            ls(S1, vec![&format!("lsp-{A}"), &format!("lsp-{B}"), &format!("lsp-rtr-{S1}")]),
            ls(S2, vec![&format!("lsp-{C}"), &format!("lsp-rtr-{S2}")]),
        ],
        vec![
            dhcp(S1, "198.18.1.0/24", "198.18.1.1", t.dhcp_mtu[0]),
            dhcp(S2, "198.18.2.0/24", "198.18.2.1", t.dhcp_mtu[1]),
        ],
        vec![row(json!({"_uuid": uuid("pg"), "name": pg,
            "ports": ["set", [uuid(&format!("lsp-{A}")), uuid(&format!("lsp-{B}")), uuid(&format!("lsp-{C}"))]],
            "acls": ["set", [uuid("a1"), uuid("a2"), uuid("a3"), uuid("a4"), uuid("a5"), uuid("a6")]]}))],
        vec![
            acl("a1", "to-lport", 900, format!("outport == @{pg} && ip4"), "drop"),
            acl("a2", "from-lport", 800, format!("inport == @{pg} && ip4"), "drop"),
            acl("a3", "from-lport", 1050, format!("inport == @{pg} && udp && udp.src == 68 && udp.dst == 67"), "allow"),
            acl("a4", "to-lport", 1050, format!("outport == @{pg} && udp && udp.src == 67 && udp.dst == 68"), "allow"),
            acl("a5", "to-lport", 1000, format!("outport == @{pg} && ip4 && tcp.dst == 22"), "allow-related"),
            acl("a6", "from-lport", 1000, format!("inport == @{pg} && ip4"), t.egress),
        ],
        vec![row(json!({"_uuid": uuid("lr"), "name": format!("vpc-{VPC}"),
            "ports": ["set", [uuid(&format!("lrp-{S1}")), uuid(&format!("lrp-{S2}"))]],
            "external_ids": ["map", [["spinifex:vpc_id", VPC]]]}))],
        vec![lrp(S1, "198.18.1.1/24"), lrp(S2, "198.18.2.1/24")],
    ])
    .expect("the rows parse")
}

/// Three chassis named as their nodes, geneve on 198.18.0.N; A on spx1,
/// B on spx2, C on spx3; one ENI whose port no chassis claimed.
fn sb() -> SbTopology {
    let mut bindings = vec![];
    for (eni, c) in [(A, "c1"), (B, "c2"), (C, "c3")] {
        bindings.push(row(
            json!({"logical_port": format!("port-{eni}"), "type": "", "chassis": uuid(c)}),
        ));
    }
    bindings.push(row(
        json!({"logical_port": "port-eni-0ee5c7a3f6d1b8495", "type": "", "chassis": ["set", []]}),
    ));
    let chassis = (1..=3)
        .map(|i| {
            row(
                json!({"_uuid": uuid(&format!("c{i}")), "name": format!("spx{i}"),
                "hostname": format!("spx{i}"), "encaps": uuid(&format!("e{i}"))}),
            )
        })
        .collect();
    let encaps = (1..=3)
        .map(|i| {
            row(json!({"_uuid": uuid(&format!("e{i}")), "type": "geneve",
                "ip": format!("198.18.0.{i}"), "options": ["map", [["csum", "true"]]]}))
        })
        .collect();
    sb_topology(&[bindings, chassis, encaps]).expect("the rows parse")
}

fn at() -> Lookup {
    Lookup {
        nb_at: NB_AT.into(),
        sb_at: SB_AT.into(),
    }
}

fn nodes() -> Vec<String> {
    vec!["spx1".into(), "spx2".into(), "spx3".into()]
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("an address")
}

/// What a node's side is: its guest NIC (tap MTU, host_mtu), its br-vpc
/// and NIC, the SAs toward the peer, and its probe.
struct Side {
    node: u8,
    eni: &'static str,
    mac: &'static str,
    host_mtu: u32,
    tap_mtu: u32,
    bridge_mtu: u32,
    nic_mtu: u32,
    peer: u8,
    /// The probe: largest size answered, the smallest refused, a hop that
    /// said too big.
    probe: (Option<u32>, Option<u32>, Option<TooBig>),
    outer: u32,
    ipsec: bool,
}

impl Side {
    fn new(node: u8, eni: &'static str, mac: &'static str, peer: u8, outer: u32) -> Side {
        Side {
            node,
            eni,
            mac,
            host_mtu: 8942,
            tap_mtu: 8942,
            bridge_mtu: 9000,
            nic_mtu: 9000,
            peer,
            probe: (Some(outer), None, None),
            outer,
            ipsec: false,
        }
    }

    fn facts(&self) -> NodeFacts {
        let me = ip(&format!("198.18.0.{}", self.node));
        let peer = ip(&format!("198.18.0.{}", self.peer));
        let tap = crate::spinifex::tap_name(self.eni);
        let sa = |src: IpAddr, dst: IpAddr, spi: u32| SecurityAssociation {
            src,
            dst,
            spi,
            proto: 50,
            mode: 0,
            reqid: 1,
            algorithm: Some("rfc4106(gcm(aes))".into()),
            selector: None,
            larval: false,
            bytes: 0,
            packets: 0,
            layout: Some(SaLayout {
                icv_bits: Some(128),
                ..SaLayout::default()
            }),
        };
        let (largest, refused, too_big) = self.probe;
        NodeFacts {
            node: Some(format!("spx{}", self.node)),
            hostname: format!("spx{}", self.node),
            guest: Some(Ok(GuestFacts {
                instance: Some(format!("i-0{}", self.node)),
                pid: 4000 + u32::from(self.node) as i32,
                nics: vec![NicFacts {
                    nic: TapNic {
                        tap: tap.clone(),
                        mac: Some(self.mac.into()),
                        host_mtu: Some(self.host_mtu),
                        queues: 1,
                        driver: Some("virtio-net-pci".into()),
                    },
                    tap: Ok(TapLink {
                        mtu: self.tap_mtu,
                        up: true,
                    }),
                    iface: Some(OvsInterface {
                        name: tap,
                        iface_id: Some(format!("port-{}", self.eni)),
                        attached_mac: Some(self.mac.into()),
                        ..OvsInterface::default()
                    }),
                }],
            })),
            ovs: Ok(OvsFacts {
                endpoint: "unix:/var/run/openvswitch/db.sock".into(),
                encap_ips: vec![me],
                system_id: Some(format!("spx{}", self.node)),
                ipsec_encapsulation: None,
                tunnels: vec![OvsInterface {
                    name: format!("ovn-spx{}-0", self.peer),
                    kind: "geneve".into(),
                    remote_ip: Some(peer.to_string()),
                    ..OvsInterface::default()
                }],
            }),
            toward: Some(Toward {
                peer,
                refused: None,
                local: Some(me),
                egress: Ok(LocalLink {
                    interface: "br-vpc".into(),
                    mtu: self.bridge_mtu,
                    max_mtu: Some(65535),
                    kind: Some("bridge".into()),
                    ports: vec![LocalLink {
                        interface: "eth1".into(),
                        mtu: self.nic_mtu,
                        max_mtu: Some(9216),
                        kind: None,
                        ports: vec![],
                    }],
                }),
                sas: Ok(if self.ipsec {
                    vec![sa(me, peer, 0xc1), sa(peer, me, 0xc2)]
                } else {
                    vec![]
                }),
                outer: Some(self.outer),
                probe: Ok(PathProbe {
                    addr: peer,
                    target_mtu: self.outer,
                    rtt: Some(std::time::Duration::from_micros(300)),
                    largest_answered: largest,
                    smallest_refused: refused,
                    too_big,
                    local_limit: None,
                    other_error: None,
                    rounds: if refused.is_some() { 2 } else { 1 },
                    probes_sent: 4,
                    refused_at_send: 0,
                    cut_short: false,
                }),
                socket: Some("raw".into()),
            }),
        }
    }
}

/// The question between two ENIs, each side's facts as given.
fn facts(
    nb: &NbTopology,
    from: (&str, Result<NodeFacts, String>),
    to: (&str, Result<NodeFacts, String>),
    expected: u32,
) -> PathFacts {
    let sb = sb();
    let end = |(eni, facts): (&str, Result<NodeFacts, String>)| {
        let port = resolve::port_by_eni(nb, eni, &at()).expect("the ENI's port");
        let g = resolve::guest(nb, &sb, port, &nodes(), &at()).expect("bound");
        End {
            label: eni.to_owned(),
            place: Place::Guest(Box::new(g)),
            facts,
            via: "in-process".into(),
        }
    };
    let from = end(from);
    let to = end(to);
    let routing = resolve::routing(
        nb,
        from.place.guest().unwrap(),
        to.place.guest().unwrap(),
        &at(),
    )
    .ok();
    let size = super::judge::offered(&from).map(|(m, _)| m).unwrap_or(1500);
    PathFacts {
        from,
        to,
        routing,
        size,
        size_source: SizeSource::Offered,
        expected_guest_mtu: Some(expected),
        underlay_mtu: Some(9000),
        nb_endpoints: NB_AT.into(),
        config_file: "/etc/spinifex/spinifex.toml".into(),
    }
}

/// The verdict as pinned: the code, the words and each hop, without the
/// ends' full facts (they are the test's own input).
fn pinned(v: &PathVerdict) -> Value {
    json!({
        "code": v.code,
        "summary": v.summary,
        "remediation": v.remediation,
        "directions": v.directions.iter().map(|d| json!({
            "code": d.code,
            "outcome": d.outcome,
            "largest": d.largest,
            "first_drop": d.first_drop,
            "signalled": d.signalled,
            "esp": d.esp,
            "hops": d.hops.iter().map(|h| format!(
                "{:?} {} [{}] bytes={} limit={} fate={:?}{}",
                h.hop.kind, h.hop.node, h.hop.name,
                h.hop.bytes.map_or("?".into(), |b| b.to_string()),
                h.limit_text, h.hop.fate,
                h.learns_text.as_ref().map(|l| format!(" learns: {l}")).unwrap_or_default()
            )).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

macro_rules! pin {
    ($v:expr) => {
        insta::with_settings!({
            snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"),
            omit_expression => true,
        }, {
            insta::assert_json_snapshot!(pinned(&$v));
        })
    };
}

#[test]
fn a_healthy_jumbo_path_carries_what_the_guests_are_told_both_ways() {
    let nb = nb(&Topo::default());
    let a = Side::new(1, A, "02:00:0a:00:01:0a", 2, 9000);
    let b = Side::new(2, B, "02:00:0a:00:01:0b", 1, 9000);
    let f = facts(&nb, (A, Ok(a.facts())), (B, Ok(b.facts())), 8942);
    let j = judge(&f);
    assert_eq!(j.kind, PathKind::Ok);
    for d in [&j.forward, &j.backward] {
        assert_eq!(d.outcome, Outcome::Carried);
        let l = d.largest.unwrap();
        assert_eq!((l.bytes, l.bound), (8942, Precision::Exact));
        assert!(matches!(f.routing, Some(Routing::SameSwitch { .. })));
        let geneve = d.hops.iter().find(|h| h.kind == HopKind::Geneve).unwrap();
        assert_eq!(geneve.bytes, Some(9000));
    }
    let v = PathVerdict::of(&f, None);
    assert_eq!(v.exit_code(), 0);
    pin!(v);
}

#[test]
fn a_switch_port_at_1500_is_a_black_hole_found_at_the_underlay() {
    let nb = nb(&Topo::default());
    let mut a = Side::new(1, A, "02:00:0a:00:01:0a", 2, 9000);
    let mut b = Side::new(2, B, "02:00:0a:00:01:0b", 1, 9000);
    // mtu.path's engine: 1500 answered, 1501 silent: a black hole.
    a.probe = (Some(1500), Some(1501), None);
    b.probe = (Some(1500), Some(1501), None);
    let f = facts(&nb, (A, Ok(a.facts())), (B, Ok(b.facts())), 8942);
    let v = PathVerdict::of(&f, None);
    assert_eq!(v.code, "path/black-hole");
    assert_eq!(v.exit_code(), 1);
    for d in &v.directions {
        let drop = &d.hops[d.first_drop.unwrap()];
        assert_eq!(drop.hop.kind, HopKind::UnderlayPath);
        assert_eq!(d.largest.unwrap().bytes, 1442);
        assert_eq!(d.signalled, Some(false));
    }
    assert!(
        v.remediation
            .iter()
            .any(|r| r.contains("set `underlay_mtu = 1500` under [network]")),
        "{:?}",
        v.remediation
    );
    pin!(v);
}

/// Seen in the userspace-datapath lab's benchmark (bench/path.sh, a black
/// hole at 1500 under load): spx1's probe got 1493 answered and 1500 refused
/// (silent at two moments), the sizes between never concluded, in 3
/// rounds. The packet of 9000 did not cross: dropped silently at the
/// underlay, the largest that crosses known only from below; never "a
/// packet of 8942 crosses".
#[test]
fn a_probe_that_did_not_close_its_gap_still_drops_the_packet_it_refused() {
    let nb = nb(&Topo::default());
    let mut a = Side::new(1, A, "02:00:0a:00:01:0a", 2, 9000);
    let mut b = Side::new(2, B, "02:00:0a:00:01:0b", 1, 9000);
    a.probe = (Some(1493), Some(1500), None);
    b.probe = (Some(1500), Some(1501), None);
    let f = facts(&nb, (A, Ok(a.facts())), (B, Ok(b.facts())), 8942);
    let v = PathVerdict::of(&f, None);
    assert_eq!(v.code, "path/black-hole");
    assert_eq!(v.exit_code(), 1);
    let ab = &v.directions[0];
    let drop = &ab.hops[ab.first_drop.expect("A to B drops")];
    assert_eq!(drop.hop.kind, HopKind::UnderlayPath);
    assert_eq!(drop.hop.fate, Fate::Dropped);
    assert!(
        matches!(drop.hop.limit, Limit::AtLeast { bytes: 1493, .. }),
        "{:?}",
        drop.hop.limit
    );
    let largest = ab.largest.unwrap();
    assert_eq!((largest.bytes, largest.bound), (1435, Precision::AtLeast));
    assert_eq!(ab.signalled, Some(false));
    let ba = &v.directions[1];
    assert_eq!(ba.largest.unwrap().bytes, 1442);
    // And a probe that refused nothing concluded nothing: that hop is
    // unread, the direction never "carried".
    a.probe = (Some(1493), None, None);
    let f = facts(&nb, (A, Ok(a.facts())), (B, Ok(b.facts())), 8942);
    let v = PathVerdict::of(&f, None);
    let ab = &v.directions[0];
    let path = ab
        .hops
        .iter()
        .find(|h| h.hop.kind == HopKind::UnderlayPath)
        .unwrap();
    assert_eq!(path.hop.fate, Fate::Unread, "{:?}", path.hop);
    assert_eq!(ab.outcome, Outcome::Unread);
}

#[test]
fn the_1442_over_1408_incident_is_the_guests_mtu_not_the_fabric() {
    // IPsec on, underlay 1500: the config implies 1408; DHCP still says 1442.
    let nb = nb(&Topo {
        dhcp_mtu: ["1442", "1442"],
        ..Topo::default()
    });
    let side = |node, eni, mac, peer| {
        let mut s = Side::new(node, eni, mac, peer, 1536);
        s.ipsec = true;
        s.host_mtu = 1442;
        s.tap_mtu = 1442;
        s.bridge_mtu = 1500;
        s.nic_mtu = 1500;
        s.probe = (Some(1500), Some(1501), None);
        s
    };
    let a = side(1, A, "02:00:0a:00:01:0a", 2);
    let b = side(2, B, "02:00:0a:00:01:0b", 1);
    let f = facts(&nb, (A, Ok(a.facts())), (B, Ok(b.facts())), 1408);
    let j = judge(&f);
    assert_eq!(j.kind, PathKind::GuestMtuAbovePath);
    let d = &j.forward;
    // 1442 + 58 = 1500 of geneve; ESP over its 1480: 8 + 8 + 2 of padding
    // + 2 + 16 = 36, so 1536 leave for a 1500 br-vpc.
    let esp = d.hops.iter().find(|h| h.kind == HopKind::Esp).unwrap();
    assert_eq!(esp.bytes, Some(1536));
    assert_eq!(d.first_drop().unwrap().kind, HopKind::LocalUnderlay);
    assert_eq!(d.largest.unwrap().bytes, 1408);
    let v = PathVerdict::of(&f, None);
    assert!(
        v.remediation.iter().any(|r| r.contains(&format!(
            "ovn-nbctl --db=\"{NB_AT}\" set DHCP_Options dhcp-{S1} options:mtu=1408"
        ))),
        "{:?}",
        v.remediation
    );
    pin!(v);
}

#[test]
fn a_routed_path_with_gateway_mtu_tells_the_sender_through_spinifexs_security_group() {
    let nb = nb(&Topo {
        gateway_mtu: Some("1400"),
        ..Topo::default()
    });
    let a = Side::new(1, A, "02:00:0a:00:01:0a", 3, 9000);
    let c = Side::new(3, C, "02:00:0a:00:02:0c", 1, 9000);
    let f = facts(&nb, (A, Ok(a.facts())), (C, Ok(c.facts())), 8942);
    assert!(matches!(f.routing, Some(Routing::Routed { .. })));
    let v = PathVerdict::of(&f, None);
    assert_eq!(v.code, "path/ok", "{}", v.summary);
    let d = &v.directions[0];
    assert_eq!(d.outcome, Outcome::Signalled);
    assert_eq!(d.hops[d.first_drop.unwrap()].hop.kind, HopKind::Router);
    assert_eq!(d.largest.unwrap().bytes, 1400);
    pin!(v);
}

#[test]
fn a_stateless_security_group_blocks_the_icmp_back() {
    let nb = nb(&Topo {
        gateway_mtu: Some("1400"),
        egress: "allow-stateless",
        ..Topo::default()
    });
    let a = Side::new(1, A, "02:00:0a:00:01:0a", 3, 9000);
    let c = Side::new(3, C, "02:00:0a:00:02:0c", 1, 9000);
    let f = facts(&nb, (A, Ok(a.facts())), (C, Ok(c.facts())), 8942);
    let v = PathVerdict::of(&f, None);
    assert_eq!(v.code, "path/icmp-blocked", "{}", v.summary);
    assert!(v.remediation.iter().any(|r| r.contains("acl-add sg_0a5a5c0ffee5a5a50 to-lport 1051 'outport == @sg_0a5a5c0ffee5a5a50 && icmp4 && icmp4.type == 3 && icmp4.code == 4' allow")), "{:?}", v.remediation);
    pin!(v);
}

#[test]
fn one_way_into_a_smaller_tap_is_asymmetric() {
    // C's subnet offers 1442 (and its tap is 1442); A is offered 8942.
    let nb = nb(&Topo {
        dhcp_mtu: ["8942", "1442"],
        ..Topo::default()
    });
    let a = Side::new(1, A, "02:00:0a:00:01:0a", 3, 9000);
    let mut c = Side::new(3, C, "02:00:0a:00:02:0c", 1, 9000);
    c.host_mtu = 1442;
    c.tap_mtu = 1442;
    let f = facts(&nb, (A, Ok(a.facts())), (C, Ok(c.facts())), 8942);
    let j = judge(&f);
    assert_eq!(j.kind, PathKind::Asymmetric);
    assert_eq!(j.forward.first_drop().unwrap().kind, HopKind::PeerTap);
    assert_eq!(j.forward.outcome, Outcome::Silent);
    assert_eq!(j.backward.outcome, Outcome::RefusedBySender);
    pin!(PathVerdict::of(&f, None));
}

#[test]
fn a_node_that_did_not_answer_is_unread_never_guessed() {
    let nb = nb(&Topo::default());
    let a = Side::new(1, A, "02:00:0a:00:01:0a", 2, 9000);
    let f = facts(
        &nb,
        (A, Ok(a.facts())),
        (
            B,
            Err("ssh: connect to host 198.19.0.2 port 22: Connection refused".into()),
        ),
        8942,
    );
    let v = PathVerdict::of(&f, None);
    assert_eq!(v.code, "path/unresolved");
    assert_eq!(v.exit_code(), 2);
    // Still, what spx1 read is there: its probe carried 9000.
    let d = &v.directions[0];
    let path = d
        .hops
        .iter()
        .find(|h| h.hop.kind == HopKind::UnderlayPath)
        .unwrap();
    assert_eq!(path.limit_text, "≥ 9000 (the DF probe of this size passed)");
    pin!(v);
}

#[test]
fn an_unreadable_ovs_database_still_gets_a_verdict() {
    let nb = nb(&Topo::default());
    let a = Side::new(1, A, "02:00:0a:00:01:0a", 2, 9000);
    let mut b = Side::new(2, B, "02:00:0a:00:01:0b", 1, 9000).facts();
    b.ovs = Err("unix:/var/run/openvswitch/db.sock: No such file or directory".into());
    if let Some(Ok(g)) = &mut b.guest {
        g.nics[0].iface = None;
    }
    let f = facts(&nb, (A, Ok(a.facts())), (B, Ok(b)), 8942);
    let v = PathVerdict::of(&f, None);
    assert_eq!(v.code, "path/ok", "{}", v.summary);
}

#[test]
fn lookups_that_fail_name_themselves() {
    let nb = nb(&Topo::default());
    let sb = sb();
    let e = resolve::port_by_eni(&nb, "eni-0999", &at()).unwrap_err();
    assert_eq!(
        e.0,
        format!("no Logical_Switch_Port with spinifex:eni_id=eni-0999 (or named port-eni-0999) in NB at {NB_AT}")
    );
    let mut nb2 = nb.clone();
    let mut unbound = nb2.ports[0].clone();
    unbound.name = "port-eni-0ee5c7a3f6d1b8495".into();
    unbound.eni = Some("eni-0ee5c7a3f6d1b8495".into());
    nb2.ports.push(unbound);
    let p = resolve::port_by_eni(&nb2, "eni-0ee5c7a3f6d1b8495", &at()).unwrap();
    let e = resolve::guest(&nb2, &sb, p, &nodes(), &at()).unwrap_err();
    assert!(
        e.0.starts_with(&format!(
            "Port_Binding port-eni-0ee5c7a3f6d1b8495 in SB at {SB_AT} has no chassis"
        )),
        "{e}"
    );
    // Two VPCs with one address: named, and --vpc chooses.
    let mut twin = nb.ports[0].clone();
    twin.name = "port-eni-0f".into();
    twin.vpc = Some("vpc-0ff".into());
    nb2.ports.push(twin);
    let e = resolve::port_by_ip(&nb2, ip("198.18.1.10"), None, &at()).unwrap_err();
    assert!(e.0.contains("name the VPC with --vpc"), "{e}");
    assert_eq!(
        resolve::port_by_ip(&nb2, ip("198.18.1.10"), Some("vpc-0ff"), &at())
            .unwrap()
            .name,
        "port-eni-0f"
    );
    assert!(resolve::node_place(&sb, "spx9", &at())
        .unwrap_err()
        .0
        .contains("no Chassis named spx9"));
}

#[test]
fn an_ovn_string_with_terminal_escapes_stays_data() {
    let mut nb = nb(&Topo::default());
    nb.router_ports[0].name = "rtr-\u{1b}[2Jx".into();
    nb.ports[3].router_port = Some("rtr-\u{1b}[2Jx".into());
    nb.router_ports[0].gateway_mtu = Some("1400".into());
    let a = Side::new(1, A, "02:00:0a:00:01:0a", 3, 9000);
    let c = Side::new(3, C, "02:00:0a:00:02:0c", 1, 9000);
    let f = facts(&nb, (A, Ok(a.facts())), (C, Ok(c.facts())), 8942);
    let v = PathVerdict::of(&f, None);
    // The library keeps the exact text; the renderers make it inert.
    assert!(v.summary.contains('\u{1b}'));
}
