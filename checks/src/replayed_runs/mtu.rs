//! `mtu.path`, `mtu.overlay` and `underlay.on-link` on recorded routes,
//! links, OVSDB rows and probe outcomes: the seed's jumbo cluster behind a
//! switch that carried 1500.

use std::net::IpAddr;
use std::time::Duration;

use serde_json::{json, Value};

use super::{link, lo, Facts};
use crate::checks::mtu_overlay::OverlayMtu;
use crate::checks::mtu_path::PathMtu;
use crate::checks::underlay_on_link::UnderlayOnLink;
use crate::endpoint::Endpoint;
use crate::facts::icmp::{PathProbe, SocketKind, Target};
use crate::facts::links::{Link, Route};
use crate::facts::ovsdb::{Answer, Row};
use crate::finding::Status;
use crate::host::{Fact, Request, SelectOp};
use crate::snapshot::snapshot;

const OVS_SOCKET: &str = "/var/run/openvswitch/db.sock";
const NB: &str = "tcp:198.18.3.181:6641";
const SB: &str = "tcp:198.18.3.181:6642";

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn route(to: &str, gateway: Option<&str>) -> (Request, Fact) {
    (
        Request::Route {
            destination: ip(to),
            oif: None,
        },
        Fact::Route(Route {
            destination: ip(to),
            oif: 2,
            interface: "enp65s0f0np0".into(),
            gateway: gateway.map(ip),
            preferred_source: Some(ip("198.18.3.181")),
            local: false,
        }),
    )
}

/// What this host's peers and addresses are: `--peer` each of `peers`, no
/// local OVS database.
fn peers(facts: Facts, peers: &[&str]) -> Facts {
    let list = peers.iter().map(|p| p.parse().unwrap()).collect();
    facts
        .opts(|o| o.peers = list)
        .ok(
            Request::Addresses,
            Fact::Addresses(vec![ip("127.0.0.1"), ip("198.18.3.181")]),
        )
        .exists(OVS_SOCKET, false)
}

fn probe(addr: &str, largest: u32, refused: Option<u32>, rounds: u32) -> PathProbe {
    PathProbe {
        addr: ip(addr),
        target_mtu: 9000,
        rtt: Some(Duration::from_micros(180)),
        largest_answered: Some(largest),
        smallest_refused: refused,
        too_big: None,
        local_limit: None,
        other_error: None,
        rounds,
        probes_sent: 200,
        refused_at_send: 0,
        cut_short: false,
    }
}

#[test]
fn a_switch_port_at_1500_is_a_black_hole_measured_to_the_byte() {
    // performance-tuning §4: NICs and br-vpc at 9000 on every node, the
    // switch at 1500; probes up to 1500 answered, larger ones vanished.
    let targets: Vec<Target> = ["198.18.3.182", "198.18.3.183"]
        .iter()
        .map(|a| Target {
            addr: ip(a),
            scope_id: 0,
            target_mtu: 9000,
        })
        .collect();
    let (r1, f1) = route("198.18.3.182", None);
    let (r2, f2) = route("198.18.3.183", None);
    let f = peers(
        Facts::new().opts(|o| o.mtu = Some(9000)),
        &["198.18.3.182", "198.18.3.183"],
    )
    .ok(r1, f1)
    .ok(r2, f2)
    .links(&[
        lo(),
        Link {
            min_mtu: Some(68),
            max_mtu: Some(9978),
            ..link(2, "enp65s0f0np0", 9000)
        },
    ])
    // The neighbour tables before and after the probes: no overflow.
    .ok(Request::NeighbourTables, Fact::NeighbourTables(Vec::new()))
    .ok(
        Request::Icmp {
            targets,
            round_timeout: Duration::from_secs(1),
            max_rounds: 3,
        },
        Fact::Icmp {
            probes: vec![
                probe("198.18.3.182", 9000, None, 1),
                probe("198.18.3.183", 1500, Some(1501), 2),
            ],
            socket: SocketKind::Raw,
        },
    )
    .run(&PathMtu);
    snapshot!("mtu.path", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    let peers = f.evidence["peers"].as_array().unwrap();
    assert_eq!(peers[0]["verdict"], "ok");
    assert_eq!(peers[1]["verdict"], "blackhole");
    assert_eq!(peers[1]["path_mtu"], 1500);
    assert_eq!(peers[1]["interface"], "enp65s0f0np0");
    assert_eq!(peers[1]["rtt_ms"], 0.18);
}

fn rows(value: Value) -> Vec<Row> {
    serde_json::from_value(value).unwrap()
}

fn ovsdb(
    endpoint: &str,
    db: &str,
    selects: &[(&str, &[&str])],
    answer: Vec<Vec<Row>>,
) -> (Request, Fact) {
    let endpoint = Endpoint::parse(endpoint).unwrap();
    (
        Request::Ovsdb {
            endpoints: vec![endpoint.clone()],
            db: db.into(),
            selects: selects
                .iter()
                .map(|(table, columns)| SelectOp {
                    table: (*table).into(),
                    columns: columns.iter().map(|c| (*c).to_owned()).collect(),
                    conditions: json!([]),
                })
                .collect(),
        },
        Fact::Ovsdb(Answer {
            value: answer,
            endpoint,
            passed_over: Vec::new(),
        }),
    )
}

/// The cluster raised underlay_mtu to 9000 (IPsec off: guests get 8942);
/// the NB's DHCP row still says 1442. The config, the SB and the NB rows.
fn raised_to_9000() -> Facts {
    let config = format!(
        "node = \"spx1\"\n[network]\nipsec_enabled = false\nunderlay_mtu = 9000\n\
         [nodes.spx1]\nhost = \"198.18.3.181\"\n[nodes.spx1.vpcd]\n\
         ovn_nb_addr = \"{NB}\"\novn_sb_addr = \"{SB}\"\n"
    );
    let (sb, sb_rows) = ovsdb(
        SB,
        "OVN_Southbound",
        &[("Encap", &["ip", "type", "chassis_name"])],
        vec![rows(json!([
            {"ip": "198.18.3.181", "type": "geneve"},
            {"ip": "198.18.3.182", "type": "geneve"},
        ]))],
    );
    let (nb, nb_rows) = ovsdb(
        NB,
        "OVN_Northbound",
        &[
            ("DHCP_Options", &["_uuid", "cidr", "options"]),
            ("Logical_Router_Port", &["_uuid", "name", "ipv6_ra_configs"]),
        ],
        vec![
            rows(json!([{
                "_uuid": ["uuid", "1d7ffd6a-0d6c-4c1c-8f5e-3c0b3ad1f5a1"],
                "cidr": "10.0.1.0/24",
                "options": ["map", [["mtu", "1442"], ["router", "10.0.1.1"]]],
            }])),
            Vec::new(),
        ],
    );
    Facts::new()
        .config(&config)
        .exists(OVS_SOCKET, false)
        .ok(sb, sb_rows)
        .ok(nb, nb_rows)
}

#[test]
fn dhcp_and_taps_left_at_1442_after_raising_the_underlay_to_9000() {
    // ... and a running guest's tap still says 1442.
    let f = raised_to_9000()
        .links(&[
            lo(),
            Link {
                master: Some(4),
                ..link(2, "enp65s0f0np0", 9000)
            },
            Link {
                master: Some(4),
                kind: Some("tun".into()),
                ..link(3, "tapeni-7b3c1f", 1442)
            },
            Link {
                kind: Some("bridge".into()),
                ..link(4, "br-vpc", 9000)
            },
        ])
        .run(&OverlayMtu);
    snapshot!("mtu.overlay", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert_eq!(f.evidence["underlay_family"]["family"], "ipv4");
}

#[test]
fn a_bundle_that_holds_link_facts_as_sysfs_files_is_not_recorded() {
    // What a doctor that read link facts from sysfs recorded of the same
    // host: no link dump, so nothing is judged on part of the facts.
    let missing = raised_to_9000()
        .dir(
            "/sys/class/net",
            &["br-vpc", "enp65s0f0np0", "lo", "tapeni-7b3c1f"],
        )
        .file("/sys/class/net/tapeni-7b3c1f/mtu", "1442\n")
        .exists("/sys/class/net/br-vpc", true)
        .file("/sys/class/net/br-vpc/mtu", "9000\n")
        .unanswered(&OverlayMtu)
        .expect("the link dump is not in the bundle");
    assert!(missing.starts_with("no answer to link dump"), "{missing}");
}

#[test]
fn a_routed_peer_warns_before_ipsec_is_turned_off() {
    let (r1, f1) = route("198.18.3.182", None);
    let (r2, f2) = route("198.18.9.7", Some("198.18.3.1"));
    let f = peers(
        Facts::new()
            .config("[network]\nipsec_enabled = true\n")
            .opts(|o| o.profile = Some(crate::settings::Preflight::DisableIpsec)),
        &["198.18.3.182", "198.18.9.7"],
    )
    .ok(r1, f1)
    .ok(r2, f2)
    .run(&UnderlayOnLink);
    snapshot!("underlay.on-link", f);
    assert_eq!(f.status, Status::Warn, "{}", f.summary);
}
