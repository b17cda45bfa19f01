//! Netlink XFRM_MSG_GETPOLICY dump replies (what the kernel sends for
//! `ip xfrm policy`), parsed into policies, and each policy's selector
//! matched against a flow (the arithmetic `ipsec.xfrm` judges with).
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::probe::xfrm::{parse_policy_dump, Port, IPPROTO_UDP};

fuzz_target!(|data: &[u8]| {
    if let Ok(chunk) = parse_policy_dump(data) {
        for p in &chunk.policies {
            let s = &p.selector;
            let _ = s.selects(s.src, s.dst, IPPROTO_UDP, Port::Any, Port::Is(6081));
            let _ = s.ports_text();
            let _ = p.requires(50);
        }
    }
});
