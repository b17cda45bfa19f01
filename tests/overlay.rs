//! mtu.overlay on a dual-stack NB and on an IPv6 underlay: the real binary
//! against real `ovsdb-server` processes (NB with Debian's OVN schema, SB,
//! Open_vSwitch) and an empty namespace (so this host's devices do not
//! count). The rows are written with `ovn-nbctl`, the oracle.

use std::path::PathBuf;

use serde_json::Value;

use crate::support::ovsdb_server::OvsdbServer;
use crate::support::{self, check, run_json, run_remediation, Netns};
use spx_test_harness::root_test;

/// IPsec off, two nodes, underlay 1500: guests get 1442 (1422 over IPv6).
fn config(dir: &std::path::Path, nb: &OvsdbServer, extra: &str) -> PathBuf {
    support::write_config(
        dir,
        &format!(
            "node = \"spx1\"\n[network]\nipsec_enabled = false\nunderlay_mtu = 1500\n\
             [nodes.spx1]\nhost = \"198.18.0.1\"\n[nodes.spx2]\nhost = \"198.18.0.2\"\n\
             [nodes.spx1.vpcd]\novn_nb_addr = \"{}\"\n{extra}",
            nb.unix()
        ),
    )
}

fn overlay(ns: &Netns, config: &std::path::Path, args: &[&str]) -> (i32, Value) {
    let mut cmd = ns.spx();
    cmd.args(["--check", "mtu.overlay", "--config"])
        .arg(config)
        .args(args);
    let (code, doc) = run_json(&mut cmd);
    (code, check(&doc, "mtu.overlay").clone())
}

/// A DHCP_Options row for `cidr` with `options` set; its uuid.
fn dhcp_row(nb: &OvsdbServer, cidr: &str, options: &[&str]) -> String {
    nb.nbctl(&["dhcp-options-create", cidr]);
    let uuid = nb
        .nbctl(&[
            "--bare",
            "--columns=_uuid",
            "find",
            "DHCP_Options",
            &format!("cidr=\"{cidr}\""),
        ])
        .trim()
        .to_owned();
    let mut argv = vec!["dhcp-options-set-options", uuid.as_str()];
    argv.extend_from_slice(options);
    nb.nbctl(&argv);
    uuid
}

fn a_missing_ovs(dir: &std::path::Path) -> String {
    format!("unix:{}", dir.join("no-ovs.sock").display())
}

#[root_test]
fn a_dual_stack_nb_judges_ipv4_dhcp_and_ipv6_router_advertisements() {
    let nb = OvsdbServer::nb();
    let dir = tempfile::tempdir().unwrap();
    let v4 = dhcp_row(&nb, "198.18.10.0/24", &["mtu=1442", "router=198.18.10.1"]);
    // OVN's DHCPv6 options have no MTU: this row has none, rightly.
    let v6 = dhcp_row(&nb, "fd00:aa::/64", &["server_id=02:00:00:00:00:01"]);
    let cfg = config(dir.path(), &nb, "");
    let ns = Netns::new();
    let no_ovs = a_missing_ovs(dir.path());

    // Correct IPv4 rows and a DHCPv6 row: a dual-stack cluster passes.
    let (code, c) = overlay(&ns, &cfg, &["--ovs-db", &no_ovs]);
    assert_eq!(c["status"], "pass", "{c:#}");
    assert_eq!(code, 0);
    let summary = c["summary"].as_str().unwrap();
    assert!(summary.contains("in 1 DHCP_Options row"), "{summary}");
    assert!(
        summary.contains("IPv6: 1 DHCPv6 row not judged (DHCPv6 carries no MTU"),
        "{summary}"
    );
    assert!(!summary.contains(&v6), "{summary}");
    let rows = c["evidence"]["dhcp_mtus"].as_array().unwrap();
    let row6 = rows.iter().find(|r| r["uuid"] == v6.as_str()).unwrap();
    assert_eq!(row6["family"], "ipv6");
    assert!(row6["mtu"].is_null());
    assert!(c["remediation"].as_array().unwrap().is_empty());

    // IPv6 guests learn the MTU from router advertisements: a router port
    // that advertises a stale MTU fails, one that advertises none is named.
    nb.nbctl(&["lr-add", "spx-vpc-r1"]);
    for (port, mac, net) in [
        ("lrp-v6-stale", "02:00:00:00:01:01", "fd00:aa::1/64"),
        ("lrp-v6-quiet", "02:00:00:00:01:02", "fd00:bb::1/64"),
        ("lrp-v4", "02:00:00:00:01:03", "198.18.10.1/24"),
    ] {
        nb.nbctl(&["lrp-add", "spx-vpc-r1", port, mac, net]);
    }
    nb.nbctl(&[
        "set",
        "Logical_Router_Port",
        "lrp-v6-stale",
        "ipv6_ra_configs:address_mode=slaac",
        "ipv6_ra_configs:mtu=1408",
    ]);
    nb.nbctl(&[
        "set",
        "Logical_Router_Port",
        "lrp-v6-quiet",
        "ipv6_ra_configs:address_mode=dhcpv6_stateless",
    ]);
    let (code, c) = overlay(&ns, &cfg, &["--ovs-db", &no_ovs]);
    assert_eq!(c["status"], "fail", "{c:#}");
    assert_eq!(code, 1);
    assert_eq!(
        c["evidence"]["mismatches"],
        serde_json::json!(["Logical_Router_Port lrp-v6-stale advertises ipv6_ra_configs:mtu=1408"])
    );
    let fix = format!(
        "ovn-nbctl --db=\"{}\" set Logical_Router_Port lrp-v6-stale ipv6_ra_configs:mtu=1442",
        nb.unix()
    );
    assert_eq!(c["remediation"][0], fix.as_str(), "{c:#}");
    assert_eq!(c["evidence"]["ra_mtus"].as_array().unwrap().len(), 2);

    // The printed fix, run as printed, makes it pass; the other RA
    // settings stay.
    run_remediation(&fix);
    assert_eq!(
        nb.nbctl(&[
            "get",
            "Logical_Router_Port",
            "lrp-v6-stale",
            "ipv6_ra_configs:address_mode"
        ])
        .trim(),
        "slaac"
    );
    let (code, c) = overlay(&ns, &cfg, &["--ovs-db", &no_ovs]);
    assert_eq!(c["status"], "pass", "{c:#}");
    assert_eq!(code, 0);
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains("in the router advertisements of 1 router port"),
        "{summary}"
    );
    assert!(
        summary.contains("1 router port sends router advertisements without ipv6_ra_configs:mtu"),
        "{summary}"
    );
    let _ = v4;
}

#[root_test]
fn an_ipv6_underlay_expects_the_guest_mtu_20_bytes_smaller() {
    let nb = OvsdbServer::nb();
    let ovs = OvsdbServer::ovs();
    let dir = tempfile::tempdir().unwrap();
    let uuid = dhcp_row(&nb, "198.18.10.0/24", &["mtu=1442"]);
    let cfg = config(dir.path(), &nb, "");
    let ns = Netns::new();
    // This node's overlay endpoint is IPv6.
    ovs.vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        "external_ids:ovn-encap-ip=fd00:198:18::1",
    ]);
    let (code, c) = overlay(&ns, &cfg, &["--ovs-db", &ovs.unix()]);
    assert_eq!(c["status"], "fail", "{c:#}");
    assert_eq!(code, 1);
    assert_eq!(c["evidence"]["expected_guest_mtu"], 1422);
    assert_eq!(c["evidence"]["underlay_family"]["family"], "ipv6");
    assert!(
        c["evidence"]["underlay_family"]["source"]
            .as_str()
            .unwrap()
            .starts_with("ovn-encap-ip fd00:198:18::1 at unix:"),
        "{c:#}"
    );
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .starts_with("expected guest MTU 1422 (underlay 1500, IPv6 underlay, IPsec off)"),
        "{c:#}"
    );
    let fix = format!(
        "ovn-nbctl --db=\"{}\" set DHCP_Options {uuid} options:mtu=1422",
        nb.unix()
    );
    assert_eq!(c["remediation"][0], fix.as_str());
    run_remediation(&fix);
    let (code, c) = overlay(&ns, &cfg, &["--ovs-db", &ovs.unix()]);
    assert_eq!(c["status"], "pass", "{c:#}");
    assert_eq!(code, 0);

    // An IPv4 endpoint: the IPv4 figure, and the row at 1422 is now wrong.
    ovs.vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        "external_ids:ovn-encap-ip=198.18.0.1",
    ]);
    let (_, c) = overlay(&ns, &cfg, &["--ovs-db", &ovs.unix()]);
    assert_eq!(c["evidence"]["expected_guest_mtu"], 1442, "{c:#}");
    assert_eq!(c["evidence"]["underlay_family"]["family"], "ipv4");

    // Without a local OVS database the SB Encap rows tell, when they agree.
    let sb = OvsdbServer::sb();
    for (name, ip) in [("spx1", "fd00:198:18::1"), ("spx2", "fd00:198:18::2")] {
        sb.sbctl(&["chassis-add", name, "geneve", ip]);
    }
    let cfg = config(
        dir.path(),
        &nb,
        &format!("ovn_sb_addr = \"{}\"\n", sb.unix()),
    );
    let no_ovs = a_missing_ovs(dir.path());
    let (_, c) = overlay(&ns, &cfg, &["--ovs-db", &no_ovs]);
    assert_eq!(c["evidence"]["expected_guest_mtu"], 1422, "{c:#}");
    assert_eq!(c["evidence"]["underlay_family"]["known"], true);
    assert_eq!(c["status"], "pass", "{c:#}");
}
