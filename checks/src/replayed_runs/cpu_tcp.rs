//! `cpu.softirq` and `tcp.reordering`: the sample window's two readings of
//! /proc, recorded, with the seed's measured figures written into captures
//! of the real files.

use super::{capture, link, lo, set_counter, Facts};
use crate::checks::cpu_softirq::CpuSoftirq;
use crate::checks::tcp_reordering::TcpReordering;
use crate::facts::ethtool::{Channels, Reported};
use crate::finding::Status;
use crate::host::{EthtoolGet, Fact, Request};
use crate::seeds;
use crate::snapshot::snapshot;

const NIC: &str = "enp65s0f0np0";

/// A config that wants IPsec (two nodes).
const IPSEC_ON: &str = "node = \"spx1\"\n[network]\nipsec_enabled = true\n\
                        [nodes.spx1]\nhost = \"198.18.3.181\"\n[nodes.spx2]\nhost = \"198.18.3.182\"\n";

/// One CPU's counters since boot: (NET_RX softirqs, busy ticks, of which
/// softirq, all ticks), the shape of the seed's ([`seeds::cpu::Ticks`]).
type Cpu = seeds::cpu::Ticks;

/// /proc/stat and /proc/softirqs of a machine with these CPUs: the
/// captured files, their per-CPU rows replaced.
fn proc_files(cpus: &[Cpu]) -> (String, String) {
    let stat = capture("stat");
    let mut out = String::new();
    let (mut user, mut softirq, mut idle) = (0, 0, 0);
    for &(_, busy, si, total) in cpus {
        user += busy - si;
        softirq += si;
        idle += total - busy;
    }
    for line in stat.lines() {
        if line.starts_with("cpu ") {
            out.push_str(&format!("cpu  {user} 0 0 {idle} 0 0 {softirq} 0 0 0\n"));
            for (n, &(_, busy, si, total)) in cpus.iter().enumerate() {
                out.push_str(&format!(
                    "cpu{n} {} 0 0 {} 0 0 {si} 0 0 0\n",
                    busy - si,
                    total - busy
                ));
            }
        } else if !line.starts_with("cpu") {
            out.push_str(line);
            out.push('\n');
        }
    }
    let names = capture("softirqs");
    let mut softirqs = String::new();
    for (i, line) in names.lines().enumerate() {
        if i == 0 {
            let header: Vec<String> = (0..cpus.len()).map(|n| format!("CPU{n}")).collect();
            softirqs.push_str(&format!("{}\n", header.join(" ")));
            continue;
        }
        let name = line.split(':').next().unwrap_or_default();
        let values: Vec<String> = cpus
            .iter()
            .map(|&(net_rx, ..)| {
                if name.trim() == "NET_RX" {
                    net_rx.to_string()
                } else {
                    "0".to_owned()
                }
            })
            .collect();
        softirqs.push_str(&format!("{name}: {}\n", values.join(" ")));
    }
    (softirqs, out)
}

fn channels(combined: u32) -> (Request, Fact) {
    (
        Request::Ethtool {
            ioctl: EthtoolGet::Channels,
            interface: NIC.into(),
        },
        Fact::Channels(Reported::Yes(Channels {
            max_combined: 63,
            combined,
            ..Channels::default()
        })),
    )
}

fn on_the_nic(facts: Facts) -> Facts {
    facts
        .opts(|o| o.interfaces = vec![NIC.into()])
        .links(&[lo(), link(2, NIC, 1500)])
        .dir(
            &format!("/sys/class/net/{NIC}"),
            &["address", "device", "mtu"],
        )
}

#[test]
fn the_seed_esp_funnel_fails_on_a_128_thread_box() {
    // performance-tuning §2, IPsec on: the busiest core 97.4% busy, 71.8%
    // softirq, the only core above 15% of 128 threads, over one second of
    // 1000 ticks.
    let idle: Vec<Cpu> = vec![(0, 0, 0, 0); seeds::cpu::THREADS];
    let busy: Vec<Cpu> = seeds::cpu::esp_funnel();
    let (softirqs0, stat0) = proc_files(&idle);
    let (softirqs1, stat1) = proc_files(&busy);
    let run = |config: &str| {
        on_the_nic(Facts::new().config(config))
            .file("/proc/softirqs", &softirqs0)
            .file("/proc/stat", &stat0)
            .file("/proc/softirqs", &softirqs1)
            .file("/proc/stat", &stat1)
            .window(0, 1_000)
            .run(&CpuSoftirq)
    };
    let f = run(IPSEC_ON);
    snapshot!("cpu.softirq", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert_eq!(f.evidence["busiest_cpu"], seeds::cpu::BUSIEST);
    assert_eq!(f.evidence["window_ms"], 1_000);
    assert!(
        f.remediation[0].contains("ESP (IP protocol 50)"),
        "{:?}",
        f.remediation
    );
    // The same funnel with IPsec off is the NIC's queues, on the NIC the
    // run chose.
    let f = run("[network]\nipsec_enabled = false\n");
    snapshot!("cpu.softirq", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert_eq!(
        f.remediation[1],
        format!("use as many RSS queues as cores that should share the work: `ethtool -l {NIC}`, then `ethtool -L {NIC} combined N`")
    );
}

#[test]
fn reordering_with_ipsec_on_and_multiqueue_warns_naming_the_queues() {
    // The seed's multiqueue-with-IPsec measurement, as counters: 189
    // reorder detections and 116 D-SACKs over 100k segments sent.
    let netstat = capture("net_netstat");
    let snmp = capture("net_snmp");
    let counters = |reorder, dsack, out, retrans| {
        let n = set_counter(&netstat, "TcpExt", "TCPSACKReorder", reorder);
        let n = set_counter(&n, "TcpExt", "TCPTSReorder", 0);
        let n = set_counter(&n, "TcpExt", "TCPRenoReorder", 0);
        let n = set_counter(&n, "TcpExt", "TCPDSACKRecv", dsack);
        let s = set_counter(&snmp, "Tcp", "OutSegs", out);
        (n, set_counter(&s, "Tcp", "RetransSegs", retrans))
    };
    let (netstat0, snmp0) = counters(1_000, 500, 5_000_000, 2_000);
    let (netstat1, snmp1) = counters(
        1_000 + seeds::tcp::REORDERING,
        500 + seeds::tcp::DSACK_DUPS,
        5_100_000,
        2_050,
    );
    let (req, fact) = channels(4);
    let f = on_the_nic(Facts::new().config(IPSEC_ON))
        .file("/proc/net/netstat", &netstat0)
        .file("/proc/net/snmp", &snmp0)
        .file("/proc/net/netstat", &netstat1)
        .file("/proc/net/snmp", &snmp1)
        .window(0, 1_000)
        .ok(req, fact)
        .run(&TcpReordering);
    snapshot!("tcp.reordering", f);
    assert_eq!(f.status, Status::Warn, "{}", f.summary);
    assert_eq!(f.remediation[0], "ethtool -L enp65s0f0np0 combined 1");
    assert_eq!(f.evidence["out_segs"], 100_000);
}
