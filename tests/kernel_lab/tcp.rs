//! `tcp.reordering` against real reordering: `netem reorder` on the
//! sender's veth, a bounded TCP transfer between two namespaces of the
//! guest, and the check sampling the sender's namespace while it runs.

use serde_json::Value;

use crate::support::check;
use crate::support::vm::{self, Vm, VmOptions};

use super::{start_helper, stop_helper};
use spx_test_harness::root_test;

/// The sender's TcpExt counters straight from /proc (the oracle).
fn netstat(vm: &Vm, ns: &str, counter: &str) -> u64 {
    let text = vm.ok(&format!("ip netns exec {ns} cat /proc/net/netstat"));
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("TcpExt:")).collect();
    let names: Vec<&str> = lines[0].split_whitespace().collect();
    let values: Vec<&str> = lines[1].split_whitespace().collect();
    let i = names.iter().position(|n| *n == counter).unwrap();
    values[i].parse().unwrap()
}

/// `tcp.reordering` in namespace `a` while `a` sends to `b` over TCP.
fn sample_transfer(vm: &Vm) -> (i32, Value, u64) {
    start_helper(
        vm,
        Some("b"),
        &["tcp-serve", "198.18.5.2:5001", "/tmp/serve"],
        "/tmp/serve",
    );
    let before = netstat(vm, "a", "TCPSACKReorder");
    start_helper(
        vm,
        Some("a"),
        &["tcp-send", "198.18.5.2:5001", "/tmp/send"],
        "/tmp/send",
    );
    let (code, doc) = vm.spx(Some("a"), &["--check", "tcp.reordering", "--sample", "2s"]);
    let sent = stop_helper(vm, "/tmp/send");
    let served = stop_helper(vm, "/tmp/serve");
    assert_eq!(sent["sent"], served["received"], "{sent} {served}");
    let oracle = netstat(vm, "a", "TCPSACKReorder") - before;
    (code, check(&doc, "tcp.reordering").clone(), oracle)
}

#[root_test]
fn netem_reordering_is_seen_and_a_clean_path_is_not() {
    let test = "netem_reordering_is_seen_and_a_clean_path_is_not";
    let Some(image) = vm::lab_or_skip(test) else {
        return;
    };
    let vm = Vm::boot(image, VmOptions::default().modules(&["veth", "sch_netem"]));
    vm.ok("ip netns add a && ip netns add b \
        && ip -n a link add va type veth peer name vb netns b \
        && ip -n a addr add 198.18.5.1/24 dev va && ip -n b addr add 198.18.5.2/24 dev vb \
        && ip -n a link set lo up && ip -n b link set lo up \
        && ip -n a link set va up && ip -n b link set vb up");

    // A quarter of the sender's segments overtake the rest, which wait
    // 5 ms: the receiver SACKs the gaps, the sender learns they were
    // reordered, not lost.
    vm.ok("ip netns exec a tc qdisc add dev va root netem delay 5ms reorder 25% 50%");
    let (code, c, oracle) = sample_transfer(&vm);
    assert_eq!(c["status"], "warn", "{c:#}");
    assert_eq!(code, 0, "a warning is not a failure");
    let seen = c["evidence"]["sack_reorder"].as_u64().unwrap();
    assert!(seen >= 10, "{c:#}");
    assert!(
        seen <= oracle,
        "the window's {seen} within the transfer's {oracle} (/proc/net/netstat): {c:#}"
    );
    assert!(c["evidence"]["out_segs"].as_u64().unwrap() >= 1000, "{c:#}");
    let summary = c["summary"].as_str().unwrap();
    assert!(summary.contains("reorder detections"), "{summary}");

    // The same transfer without netem: nothing reordered, nothing seen.
    vm.ok("ip netns exec a tc qdisc del dev va root");
    let (code, c, oracle) = sample_transfer(&vm);
    assert_eq!(oracle, 0);
    assert_eq!(c["status"], "pass", "{c:#}");
    assert_eq!(code, 0);
    assert_eq!(c["evidence"]["sack_reorder"], 0, "{c:#}");
    assert!(c["evidence"]["out_segs"].as_u64().unwrap() >= 1000, "{c:#}");
}
