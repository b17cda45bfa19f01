//! Netlink XFRM_MSG_GETSA dump replies (what the kernel sends for
//! `ip xfrm state`), parsed into security associations.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::facts::xfrm::parse_dump;

fuzz_target!(|data: &[u8]| {
    let _ = parse_dump(data);
});
