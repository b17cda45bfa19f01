//! `sysctl.udp-buffers` and `udp.rcvbuf-errors` on recorded /proc files.

use super::{capture, set_counter, Facts};
use crate::checks::sysctl_udp_buffers::UdpBuffers;
use crate::checks::udp_rcvbuf_errors::RcvbufErrors;
use crate::facts::journal::JournalLookup;
use crate::finding::Status;
use crate::host::{Fact, Request};
use crate::seeds::udp;
use crate::snapshot::snapshot;

const RMEM: &str = "/proc/sys/net/core/rmem_max";
const WMEM: &str = "/proc/sys/net/core/wmem_max";

/// The kernel's default ceiling, as /proc/sys prints it.
fn default_ceiling() -> String {
    format!("{}\n", udp::DEFAULT_CEILING)
}

fn journal(lookup: JournalLookup) -> (Request, Fact) {
    (
        Request::Journal {
            unit: "spinifex-predastore".into(),
            needle: "receive buffer size".into(),
        },
        Fact::Journal(lookup),
    )
}

#[test]
fn buffers_at_the_kernel_default_fail_and_setup_sh_values_pass() {
    // The kernel default ceiling, as on the seed's broken cluster.
    let f = Facts::new()
        .file(RMEM, &default_ceiling())
        .file(WMEM, &default_ceiling())
        .run(&UdpBuffers);
    snapshot!("sysctl.udp-buffers", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert_eq!(f.remediation[1], "sysctl --system");
    let f = Facts::new()
        .file(RMEM, "16777216\n")
        .file(WMEM, "33554432\n")
        .run(&UdpBuffers);
    snapshot!("sysctl.udp-buffers", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    // An unreadable sysctl is the probe's verdict, not a guess.
    let f = Facts::new().no_file(RMEM).run(&UdpBuffers);
    snapshot!("sysctl.udp-buffers", f);
    assert_eq!(f.status, Status::Skip, "{}", f.summary);
}

#[test]
fn drops_during_the_window_fail_with_the_recorded_rate() {
    // performance-tuning §1: a node that had shed 80k datagrams, still
    // dropping: 750 more in the 1.5 s window the live run measured.
    let snmp = capture("net_snmp");
    let (j, lookup) = journal(JournalLookup::Unavailable);
    let f = Facts::new()
        .file(
            "/proc/net/snmp",
            &set_counter(&snmp, "Udp", "RcvbufErrors", udp::SHED_SINCE_BOOT),
        )
        .file(
            "/proc/net/snmp",
            &set_counter(
                &snmp,
                "Udp",
                "RcvbufErrors",
                udp::SHED_SINCE_BOOT + udp::SHED_IN_WINDOW,
            ),
        )
        .file("/proc/net/snmp6", &capture("net_snmp6"))
        .window(2, 1502)
        .ok(j, lookup)
        .file(RMEM, &default_ceiling())
        .run(&RcvbufErrors);
    snapshot!("udp.rcvbuf-errors", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert_eq!(f.evidence["window_ms"], 1500);
    assert_eq!(f.remediation[1], "sysctl --system");
}

#[test]
fn quic_warnings_in_the_journal_are_not_a_pass_without_ipv6() {
    // No IPv6 stack: no /proc/net/snmp6, which is not an error.
    let snmp = capture("net_snmp");
    let line = udp::QUIC_WARNING;
    let (j, lookup) = journal(JournalLookup::Lines(vec![line.into()]));
    let f = Facts::new()
        .file(
            "/proc/net/snmp",
            &set_counter(&snmp, "Udp", "RcvbufErrors", 0),
        )
        .no_file("/proc/net/snmp6")
        .window(0, 1000)
        .ok(j, lookup)
        .file(RMEM, &default_ceiling())
        .run(&RcvbufErrors);
    snapshot!("udp.rcvbuf-errors", f);
    assert_eq!(f.status, Status::Warn, "{}", f.summary);
    assert_eq!(f.evidence["predastore_journal"][0], line);
}
