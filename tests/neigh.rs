//! `sysctl.neigh` and mtu.path's neighbour-table readings against this
//! machine's real kernel, read-only: a namespace of our own sees the
//! kernel's one ARP table (its thresholds, entries and `table_fulls` are
//! the whole kernel's), and nothing here changes them: the host's table is
//! every engineer's labs' at once. The overflow itself is proven in the
//! kernel lab (`kernel_lab::neigh`), where the guest's thresholds can be
//! lowered.

use serde_json::Value;

use crate::support::fabric::{Fabric, NodeSpec};
use crate::support::{self, check, run_json, Netns};
use spx_test_harness::root_test;

/// The oracle: the kernel's ARP thresholds as `ip -s ntable` prints them,
/// from the initial namespace (where the sysctls live).
fn host_arp() -> (u64, u64, u64) {
    let out = std::process::Command::new("ip")
        .args(["-s", "ntable", "show", "name", "arp_cache"])
        .output()
        .expect("ip ntable");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let word = |w: &str| -> u64 {
        text.split_whitespace()
            .skip_while(|x| *x != w)
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {w} in {text}"))
    };
    (word("thresh1"), word("thresh3"), word("table_fulls"))
}

/// A config of `n` nodes (`n0` this one) in a temp dir.
fn config(n: usize) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("node = \"n0\"\n[network]\nunderlay_mtu = 1500\n");
    for i in 0..n {
        text.push_str(&format!(
            "[nodes.n{i}]\nhost = \"198.18.{}.{}\"\n",
            10 + i / 250,
            1 + i % 250
        ));
    }
    let path = support::write_config(dir.path(), &text);
    (dir, path)
}

fn neigh(ns: &Netns, nodes: usize) -> (i32, Value) {
    let (_dir, cfg) = config(nodes);
    let (code, doc) = run_json(
        ns.spx()
            .args(["--check", "sysctl.neigh", "--config"])
            .arg(&cfg),
    );
    (code, check(&doc, "sysctl.neigh").clone())
}

#[root_test]
fn sysctl_neigh_reads_the_kernels_one_table_from_any_namespace() {
    let ns = Netns::new();
    // The planes' bridges, as a Spinifex node with a NIC per plane has them.
    for br in ["br-vpc", "br-wan"] {
        ns.ip(&["link", "add", br, "type", "bridge"]);
    }
    // A child namespace has no gc_thresh files of its own: the table is
    // the kernel's, and netlink answers for it from here.
    assert!(!ns.try_exec(&["test", "-e", "/proc/sys/net/ipv4/neigh/default/gc_thresh3"]));
    let (t1, t3, _) = host_arp();

    let (code, c) = neigh(&ns, 3);
    assert_eq!(c["status"], "pass", "{c:#}");
    assert_eq!(code, 0);
    let table = &c["evidence"]["tables"][0];
    assert_eq!(table["table"], "arp_cache");
    assert_eq!(table["gc_thresh1"], t1);
    assert_eq!(table["gc_thresh3"], t3);
    assert_eq!(table["planes"], 2, "{c:#}");
    assert_eq!(table["needed"], 6);
    assert!(table["entries"].as_u64().is_some(), "{table}");
    let planes = &c["evidence"]["planes"];
    assert_eq!(planes[0]["bridge"], "br-vpc");
    assert_eq!(planes[1]["bridge"], "br-wan");

    // One node more than the table holds on two planes: the warning, and
    // the fix raises all three thresholds above the need.
    let nodes = (t3 / 2 + 1) as usize;
    let (code, c) = neigh(&ns, nodes);
    assert_eq!(c["status"], "warn", "{c:#}");
    assert_eq!(c["code"], "sysctl.neigh/too-small");
    assert_eq!(code, 0, "a warning does not fail the run");
    assert_eq!(c["evidence"]["tables"][0]["needed"], 2 * nodes as u64);
    let fix = c["remediation"][0].as_str().unwrap();
    assert!(
        fix.contains("/etc/sysctl.d/99-spinifex-net.conf")
            && fix.contains("net.ipv4.neigh.default.gc_thresh1 = ")
            && fix.contains("net.ipv4.neigh.default.gc_thresh3 = "),
        "{fix}"
    );
    assert_eq!(c["remediation"][1], "sysctl --system");
    // Without br-vpc the vpc plane collapses onto br-wan: one plane, and
    // the same cluster fits again.
    ns.ip(&["link", "del", "br-vpc"]);
    let (_, c) = neigh(&ns, nodes);
    assert_eq!(c["evidence"]["tables"][0]["planes"], 1, "{c:#}");
    assert_eq!(c["status"], "pass", "{c:#}");
}

#[root_test]
fn mtu_path_reads_the_table_around_its_probes_and_blames_it_for_nothing_here() {
    let mut fabric = Fabric::new();
    let src = fabric.add_node(NodeSpec::jumbo());
    let healthy = fabric.add_node(NodeSpec::jumbo());
    let (s, h) = (fabric.node(src), fabric.node(healthy));
    // On the segment, but no one holds it: ARP goes unanswered (an entry
    // is made, incomplete), so its silence is its own, never the table's,
    // even if another lab overflows the host's table meanwhile.
    let nobody = "198.18.0.199";
    let (_, _, fulls_before) = host_arp();
    let (code, doc) = run_json(s.spx().args([
        "--check", "mtu.path", "--mtu", "9000", "--peer", &h.v4, "--peer", nobody,
    ]));
    let (_, t3, fulls_after) = host_arp();
    let c = check(&doc, "mtu.path");
    assert_eq!(code, 2, "an error and no failure is inconclusive: {c:#}");
    let peers = c["evidence"]["peers"].as_array().unwrap();
    assert_eq!(peers[0]["verdict"], "ok");
    assert_eq!(peers[1]["verdict"], "unreachable", "{c:#}");
    assert!(
        peers[1]["detail"]
            .as_str()
            .unwrap()
            .contains("no echo reply"),
        "{c:#}"
    );
    assert!(peers[1].get("refused_at_send").is_none(), "{c:#}");
    let entry = s.ns.ip(&["neigh", "show", nobody]);
    assert!(
        !entry.trim().is_empty(),
        "ARP was asked: an entry exists ({entry:?})"
    );
    let table = &c["evidence"]["neighbour_tables"][0];
    assert_eq!(table["table"], "arp_cache");
    assert_eq!(table["sysctl"], "net.ipv4.neigh.default");
    assert_eq!(table["gc_thresh3"], t3);
    let (b, a) = (
        table["table_fulls_before"].as_u64().unwrap(),
        table["table_fulls_after"].as_u64().unwrap(),
    );
    assert!(fulls_before <= b && b <= a && a <= fulls_after, "{table}");
}
