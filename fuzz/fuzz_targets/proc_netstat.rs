//! /proc/net/netstat (TcpExt) by spx's own parser, and the join with
//! /proc/net/snmp (procfs) that `tcp.reordering` reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::read::proc_stats::{parse_proc_net_counters, parse_tcp_counters};

fuzz_target!(|data: &[u8]| {
    let _ = parse_proc_net_counters(data);
    let _ = parse_tcp_counters(data, data);
});
