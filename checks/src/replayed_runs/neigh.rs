//! `sysctl.neigh` and `mtu.path`'s neighbour readings through the seam, on
//! this machine's captured `RTM_GETNEIGHTBL` dump (checks/testdata/neigh/)
//! and on the kernel lab's overflow written down: a config of 1,024 nodes
//! on two planes against the default 1024 entries, and probes the kernel
//! dropped for want of an entry.

use std::net::IpAddr;
use std::time::Duration;

use super::{link, lo, Facts};
use crate::checks::mtu_path::PathMtu;
use crate::checks::sysctl_neigh::SysctlNeigh;
use crate::facts::icmp::{PathProbe, SocketKind, Target};
use crate::facts::links::{Link, Route};
use crate::facts::neighbours::tests::capture;
use crate::facts::neighbours::{parse_table_dump, Neighbour, NeighbourTable, NUD_REACHABLE};
use crate::finding::Status;
use crate::host::{Fact, Request};
use crate::snapshot::snapshot;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn host_tables() -> Vec<NeighbourTable> {
    parse_table_dump(&capture("host-6.18.ntables"))
        .unwrap()
        .items
}

fn bridge(index: u32, name: &str) -> Link {
    Link {
        kind: Some("bridge".into()),
        ..link(index, name, 9000)
    }
}

/// `[nodes.n0]` … `[nodes.n{count-1}]`, this node n0.
fn cluster(count: usize) -> String {
    let mut text = String::from("node = \"n0\"\n[network]\nunderlay_mtu = 9000\n");
    for i in 0..count {
        text.push_str(&format!(
            "[nodes.n{i}]\nhost = \"198.18.{}.{}\"\n",
            3 + i / 250,
            1 + i % 250
        ));
    }
    text
}

#[test]
fn a_thousand_nodes_against_the_default_table_warn_through_the_seam() {
    let f = Facts::new()
        .config(&cluster(1024))
        .ok(
            Request::NeighbourTables,
            Fact::NeighbourTables(host_tables()),
        )
        .links(&[lo(), bridge(2, "br-vpc"), bridge(3, "br-wan")])
        // No local OVS database: the vpc plane's family is assumed IPv4.
        .exists("/var/run/openvswitch/db.sock", false)
        .run(&SysctlNeigh);
    snapshot!("sysctl.neigh", f);
    assert_eq!(f.status, Status::Warn, "{}", f.summary);
    assert_eq!(f.evidence["tables"][0]["needed"], 2048);
    assert_eq!(f.evidence["tables"][0]["gc_thresh3"], 1024);
    assert!(
        f.evidence["vpc_family_source"]
            .as_str()
            .unwrap()
            .starts_with("IPv4 assumed"),
        "{:?}",
        f.evidence
    );
}

fn route(to: &str) -> (Request, Fact) {
    (
        Request::Route {
            destination: ip(to),
            oif: None,
        },
        Fact::Route(Route {
            destination: ip(to),
            oif: 2,
            interface: "eth0".into(),
            gateway: None,
            preferred_source: Some(ip("198.18.0.1")),
            local: false,
        }),
    )
}

fn probe(addr: &str, largest: Option<u32>, refused: Option<u32>) -> PathProbe {
    PathProbe {
        addr: ip(addr),
        target_mtu: 9000,
        rtt: largest.map(|_| Duration::from_micros(300)),
        largest_answered: largest,
        smallest_refused: refused,
        too_big: None,
        local_limit: None,
        other_error: None,
        rounds: 1,
        probes_sent: 4,
        refused_at_send: 0,
        cut_short: false,
    }
}

fn arp(entries: u32, table_fulls: u64) -> Vec<NeighbourTable> {
    host_tables()
        .into_iter()
        .map(|mut t| {
            if t.name == "arp_cache" {
                (t.gc_thresh1, t.gc_thresh2, t.gc_thresh3) = (4, 8, 16);
                t.entries = Some(entries);
                t.table_fulls = Some(table_fulls);
            }
            t
        })
        .collect()
}

#[test]
fn probes_the_full_table_dropped_are_named_through_the_seam() {
    // The kernel lab's overflow, written down: one peer answered, one was
    // dropped (no entry for it), the tables read before and after.
    let peers = ["198.18.1.1", "198.18.1.30"];
    let targets: Vec<Target> = peers
        .iter()
        .map(|a| Target {
            addr: ip(a),
            scope_id: 0,
            target_mtu: 9000,
        })
        .collect();
    let mut f = Facts::new().opts(|o| {
        o.mtu = Some(9000);
        o.peers = peers.iter().map(|p| p.parse().unwrap()).collect();
    });
    f = f
        .ok(
            Request::Addresses,
            Fact::Addresses(vec![ip("127.0.0.1"), ip("198.18.0.1")]),
        )
        .exists("/var/run/openvswitch/db.sock", false);
    for p in peers {
        let (r, a) = route(p);
        f = f.ok(r, a);
    }
    let f = f
        .links(&[lo(), link(2, "eth0", 9000)])
        .ok(Request::NeighbourTables, Fact::NeighbourTables(arp(15, 0)))
        .ok(
            Request::Icmp {
                targets,
                round_timeout: Duration::from_secs(1),
                max_rounds: 3,
            },
            Fact::Icmp {
                probes: vec![
                    probe("198.18.1.1", Some(9000), None),
                    probe("198.18.1.30", None, Some(84)),
                ],
                socket: SocketKind::Raw,
            },
        )
        .ok(Request::NeighbourTables, Fact::NeighbourTables(arp(16, 26)))
        .ok(
            Request::Neighbours,
            Fact::Neighbours(vec![Neighbour {
                ifindex: 2,
                address: ip("198.18.1.1"),
                state: NUD_REACHABLE,
            }]),
        )
        .run(&PathMtu);
    snapshot!("mtu.path", f);
    assert_eq!(f.status, Status::Error, "{}", f.summary);
    assert_eq!(f.kind.code("mtu.path"), "mtu.path/neighbour-table-full");
    let peers = f.evidence["peers"].as_array().unwrap();
    assert_eq!(peers[0]["verdict"], "ok");
    assert_eq!(peers[1]["verdict"], "neighbour-table-full");
    assert_eq!(
        peers[1]["detail"],
        "the kernel dropped the probes: its neighbour table is full (net.ipv4.neigh.default.gc_thresh3 = 16, 2 peers on this segment)"
    );
    let table = &f.evidence["neighbour_tables"][0];
    assert_eq!(table["table_fulls_before"], 0);
    assert_eq!(table["table_fulls_after"], 26);
}
