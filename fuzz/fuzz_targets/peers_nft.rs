//! /etc/spinifex/firewall/peers.nft, the daemon's firewall peer sets: the
//! `define spinifex_encap_peers = { … }` (and `spinifex_peers`) reader. Property beyond "no
//! panic": every address returned is named in the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::facts::peers::parse_nft_define;
use spx_checks::spinifex::{ENCAP_PEERS_DEFINE, WAN_PEERS_DEFINE};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(Some(ips)) = parse_nft_define(text, ENCAP_PEERS_DEFINE) {
        let mut seen = Vec::new();
        for ip in ips {
            assert!(!seen.contains(&ip), "{ip} twice");
            seen.push(ip);
        }
    }
    let _ = parse_nft_define(text, WAN_PEERS_DEFINE);
});
