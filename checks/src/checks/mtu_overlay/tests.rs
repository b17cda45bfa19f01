//! `mtu.overlay`'s verdicts on facts built in memory, each snapshotted.

use super::{Device, DhcpFacts, OverlayFacts, OverlayMtuEvidence};
use crate::endpoint::Endpoint;
use crate::expect::{self, Family};
use crate::facts::ovsdb::{Answer, DhcpOptions, NbGuestMtus, RouterPortRa};
use crate::facts::ProbeError;
use crate::finding::{Finding, Status};
use crate::targets::peers::UnderlayFamily;

/// Every verdict these tests see is also checked against the schema.
fn judge(facts: OverlayFacts) -> Finding {
    crate::schema_check::valid("mtu.overlay", super::judge(facts))
}

fn ipv4_known() -> UnderlayFamily {
    UnderlayFamily {
        family: Family::Ipv4,
        source: "ovn-encap-ip 198.18.3.181 at unix:/var/run/openvswitch/db.sock".into(),
        known: true,
    }
}

fn ra(name: &str, mode: Option<&str>, mtu: Option<&str>) -> RouterPortRa {
    RouterPortRa {
        uuid: format!("uuid-{name}"),
        name: name.into(),
        address_mode: mode.map(str::to_owned),
        mtu: mtu.map(str::to_owned),
    }
}

fn row(cidr: &str, uuid: &str, mtu: Option<&str>) -> DhcpOptions {
    DhcpOptions {
        uuid: uuid.into(),
        cidr: cidr.into(),
        mtu: mtu.map(str::to_owned),
    }
}

fn facts(
    ipsec: bool,
    rows: Vec<DhcpOptions>,
    taps: &[(&str, u32)],
    bridge: Option<(&str, u32)>,
) -> OverlayFacts {
    OverlayFacts {
        ipsec_enabled: ipsec,
        underlay_mtu: 1500,
        underlay_family: ipv4_known(),
        expected_guest_mtu: expect::guest_mtu(1500, ipsec, false),
        nb_endpoints: Endpoint::parse_list("tcp:198.18.3.181:6641,tcp:198.18.3.182:6641").unwrap(),
        dhcp: DhcpFacts::Read(Answer {
            value: NbGuestMtus {
                dhcp: rows,
                router_ports: vec![],
            },
            endpoint: Endpoint::parse("tcp:198.18.3.181:6641").unwrap(),
            passed_over: vec![],
        }),
        taps: taps
            .iter()
            .map(|(n, m)| Device {
                name: (*n).into(),
                mtu: *m,
            })
            .collect(),
        underlay_bridge: bridge.map(|(n, m)| Device {
            name: n.into(),
            mtu: m,
        }),
        bridge_ports: vec!["enp1s0f0".into()],
    }
}

#[test]
fn dhcp_left_at_1408_after_disabling_ipsec_fails_expecting_1442() {
    let f = judge(facts(
        false,
        vec![row(
            "198.19.0.0/24",
            "5d3c2b1a-0000-4000-8000-000000000001",
            Some("1408"),
        )],
        &[("tapeni0a1b2c3d4", 1442)],
        Some(("br-vpc", 1500)),
    ));
    crate::snapshot::snapshot!("mtu.overlay", f);
    assert_eq!(f.status, Status::Fail);
    assert_eq!(
        f.remediation[0],
        "ovn-nbctl --db=\"tcp:198.18.3.181:6641,tcp:198.18.3.182:6641\" set DHCP_Options 5d3c2b1a-0000-4000-8000-000000000001 options:mtu=1442"
    );
    assert!(f.remediation.last().unwrap().contains("stop/start"));
    assert_eq!(f.evidence["expected_guest_mtu"], 1442);
    assert_eq!(f.evidence["dhcp_mtus"][0]["mtu"], "1408");
    assert_eq!(f.kind.code("mtu.overlay"), "mtu.overlay/dhcp-mtu");
    let codes: Vec<String> = f
        .findings
        .iter()
        .map(|s| format!("{} {}", s.subject, s.kind.code("mtu.overlay")))
        .collect();
    assert_eq!(
        codes,
        [
            "DHCP_Options 198.19.0.0/24 (5d3c2b1a-0000-4000-8000-000000000001) mtu.overlay/dhcp-mtu",
            "tapeni0a1b2c3d4 mtu.overlay/ok",
            "br-vpc mtu.overlay/ok"
        ]
    );
    let back = f.evidence_as::<OverlayMtuEvidence>().unwrap();
    assert_eq!(back.dhcp_mtus.unwrap()[0].family, Family::Ipv4);
}

#[test]
fn wrong_taps_and_a_low_bridge_are_named() {
    let f = judge(facts(
        true,
        vec![row("198.19.0.0/24", "u1", Some("1408"))],
        &[("tapa", 1408), ("tapb", 1442)],
        Some(("br-lan", 1400)),
    ));
    crate::snapshot::snapshot!("mtu.overlay", f);
    assert_eq!(f.status, Status::Fail);
    assert_eq!(
        f.evidence["mismatches"],
        serde_json::json!([
            "tap tapb has MTU 1442",
            "underlay bridge br-lan has MTU 1400, below underlay_mtu 1500"
        ])
    );
    assert!(f.remediation.iter().any(|r| r
        .contains("`ip link set dev enp1s0f0 mtu 1500`, then `ip link set dev br-lan mtu 1500`")));
}

#[test]
fn consistent_host_passes() {
    let f = judge(facts(
        true,
        vec![row("198.19.0.0/24", "u1", Some("1408"))],
        &[("tapa", 1408)],
        Some(("br-vpc", 1500)),
    ));
    crate::snapshot::snapshot!("mtu.overlay", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
}

#[test]
fn an_nb_socket_we_may_not_open_skips_naming_the_privilege() {
    let denied = || {
        DhcpFacts::Unreadable(ProbeError::PermissionDenied {
            what: "unix:/run/ovn/ovnnb_db.sock".into(),
            needs: "root to connect to unix:/run/ovn/ovnnb_db.sock".into(),
        })
    };
    let mut x = facts(false, vec![], &[("tapa", 1442)], None);
    x.dhcp = denied();
    let f = judge(x);
    crate::snapshot::snapshot!("mtu.overlay", f);
    assert_eq!(f.status, Status::Skip);
    assert_eq!(
        f.summary,
        "needs root to connect to unix:/run/ovn/ovnnb_db.sock (to read DHCP_Options)"
    );
    // A wrong tap is still a fail: what was read is judged.
    let mut x = facts(false, vec![], &[("tapa", 1408)], None);
    x.dhcp = denied();
    let f = judge(x);
    crate::snapshot::snapshot!("mtu.overlay", f);
    assert_eq!(f.status, Status::Fail);
}

#[test]
fn unreadable_nb_is_an_error_unless_something_local_is_already_wrong() {
    let mut x = facts(false, vec![], &[("tapa", 1442)], None);
    x.dhcp = DhcpFacts::Unreadable(ProbeError::Other("no member answered".into()));
    let f = judge(x);
    crate::snapshot::snapshot!("mtu.overlay", f);
    assert_eq!(f.status, Status::Error);
    let mut x = facts(false, vec![], &[("tapa", 1408)], None);
    x.dhcp = DhcpFacts::Unreadable(ProbeError::Other("no member answered".into()));
    let f = judge(x);
    crate::snapshot::snapshot!("mtu.overlay", f);
    assert_eq!(f.status, Status::Fail);
}

#[test]
fn a_row_without_mtu_is_a_mismatch() {
    let f = judge(facts(
        false,
        vec![row("198.19.1.0/24", "u2", None)],
        &[],
        None,
    ));
    crate::snapshot::snapshot!("mtu.overlay", f);
    assert_eq!(f.status, Status::Fail);
}

#[test]
fn a_dhcpv6_row_is_not_judged_and_a_dual_stack_cluster_passes() {
    let f = judge(with_nb(
        false,
        vec![
            row("198.19.0.0/24", "v4", Some("1442")),
            row("fd00:aa::/64", "v6", None),
        ],
        vec![],
    ));
    crate::snapshot::snapshot!("mtu.overlay", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert!(f.remediation.is_empty());
    assert_eq!(f.evidence["dhcp_mtus"][1]["family"], "ipv6");
    assert_eq!(f.evidence["dhcp_mtus"][0]["family"], "ipv4");
}

#[test]
fn a_router_port_ra_mtu_is_judged_for_ipv6() {
    let ports = vec![
        ra("lrp-good", Some("slaac"), Some("1442")),
        ra("lrp-stale", Some("slaac"), Some("1408")),
        ra("lrp-quiet", Some("dhcpv6_stateful"), None),
    ];
    let f = judge(with_nb(
        false,
        vec![
            row("198.19.0.0/24", "v4", Some("1442")),
            row("fd00:aa::/64", "v6", None),
        ],
        ports,
    ));
    crate::snapshot::snapshot!("mtu.overlay", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert_eq!(
        f.remediation[0],
        "ovn-nbctl --db=\"tcp:198.18.3.181:6641,tcp:198.18.3.182:6641\" set Logical_Router_Port lrp-stale ipv6_ra_configs:mtu=1442"
    );
    assert!(!f.summary.contains("fd00:aa::/64"), "{}", f.summary);
    assert_eq!(f.evidence["ra_mtus"][1]["port"], "lrp-stale");
    // Fixed: it passes, naming the RA ports judged and the quiet one.
    let ports = vec![
        ra("lrp-good", Some("slaac"), Some("1442")),
        ra("lrp-quiet", Some("dhcpv6_stateful"), None),
    ];
    let f = judge(with_nb(false, vec![], ports));
    crate::snapshot::snapshot!("mtu.overlay", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
}

#[test]
fn an_ipv6_underlay_expects_20_bytes_less() {
    let mut x = with_nb(
        false,
        vec![row("198.19.0.0/24", "v4", Some("1442"))],
        vec![],
    );
    x.underlay_family = UnderlayFamily {
        family: Family::Ipv6,
        source: "ovn-encap-ip fd00::1 at unix:/x".into(),
        known: true,
    };
    x.expected_guest_mtu = expect::guest_mtu(1500, false, true);
    let f = judge(x);
    crate::snapshot::snapshot!("mtu.overlay", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert!(f.remediation[0].ends_with("options:mtu=1422"));
    assert_eq!(f.evidence["underlay_family"]["family"], "ipv6");
}

fn with_nb(ipsec: bool, rows: Vec<DhcpOptions>, ports: Vec<RouterPortRa>) -> OverlayFacts {
    let mut x = facts(ipsec, rows, &[], None);
    if let DhcpFacts::Read(a) = &mut x.dhcp {
        a.value.router_ports = ports;
    }
    x
}
