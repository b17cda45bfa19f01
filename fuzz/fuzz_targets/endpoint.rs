//! OVSDB endpoints (`tcp:HOST:PORT`, `unix:PATH`, `ssl:…`, comma lists) and
//! the host/interface validators they and the flags go through. Properties
//! beyond "no panic": whatever is accepted prints back to text that parses
//! to the same endpoint, and an accepted host or interface carries no
//! control character.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::endpoint::{self, Endpoint};
use spx_checks::validate;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(list) = Endpoint::parse_list(text) {
        assert!(!list.is_empty());
        let joined = endpoint::join(&list);
        let again = Endpoint::parse_list(&joined)
            .unwrap_or_else(|e| panic!("{text:?} -> {joined:?} does not parse again: {e}"));
        assert_eq!(again, list, "{text:?} -> {joined:?}");
    }
    let _ = Endpoint::parse(text);
    if validate::host(text).is_ok() {
        assert!(!text.chars().any(char::is_control), "{text:?}");
    }
    if let Ok(host) = validate::host_maybe_port(text) {
        assert!(validate::host(&host).is_ok(), "{text:?} -> {host:?}");
    }
    if validate::interface(text).is_ok() {
        assert!((1..=15).contains(&text.len()), "{text:?}");
        assert!(!text.contains('/'), "{text:?}");
    }
    let _ = validate::node_name(text);
    let _ = validate::plain_text(text);
});
