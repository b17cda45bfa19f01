//! /proc/net/snmp and /proc/net/snmp6 through procfs's `FromBufRead`
//! parsers, as `udp.rcvbuf-errors` and `tcp.reordering` read them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::read::snmp::parse_udp_rcvbuf_errors;

fuzz_target!(|data: &[u8]| {
    // The same bytes as snmp alone, and as both files.
    let _ = parse_udp_rcvbuf_errors(data, None);
    let _ = parse_udp_rcvbuf_errors(data, Some(data));
});
