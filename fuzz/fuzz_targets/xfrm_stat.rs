//! /proc/net/xfrm_stat (the xfrm layer's drop counters) by spx's own
//! parser, and `ipsec.errors`' comparison of two readings of it (the input
//! split in two at its first NUL byte: the start and the end of a window).
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::checks::ipsec_errors::{analyse, meaning};
use spx_checks::facts::xfrm::parse_xfrm_stat;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (start, end) = text.split_once('\0').unwrap_or((text, text));
    let (Ok(start), Ok(end)) = (parse_xfrm_stat(start), parse_xfrm_stat(end)) else {
        return;
    };
    let a = analyse(&start, &end);
    for m in &a.advanced {
        assert!(m.delta > 0 && m.total >= m.delta, "{m:?}");
        let _ = meaning(&m.name, None);
    }
    assert!(a.history.iter().all(|(_, v)| *v > 0));
});
