//! /proc/softirqs (NET_RX per CPU), parsed by spx's own parser.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::read::proc_stats::parse_softirqs_net_rx;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_softirqs_net_rx(text);
});
