//! ethtool string sets: ETHTOOL_GSSET_INFO answers, ETHTOOL_GSTRINGS
//! buffers, and the feature blocks of ETHTOOL_GFEATURES paired with the
//! feature names. The first byte picks the string set; the rest is split at
//! the first 0xff 0xff pair into (gstrings, gfeatures).
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::facts::ethtool::{
    parse_features, parse_gfeatures, parse_gstrings, parse_sset_info, parse_strings,
};

fuzz_target!(|data: &[u8]| {
    let Some((&set, rest)) = data.split_first() else {
        return;
    };
    let _ = parse_sset_info(rest, u32::from(set));
    let (strings, features) = match rest.windows(2).position(|w| w == [0xff, 0xff]) {
        Some(i) => (&rest[..i], &rest[i + 2..]),
        None => (rest, &b""[..]),
    };
    let names = parse_gstrings(strings).unwrap_or_default();
    let _ = parse_strings(strings, usize::from(set));
    let _ = parse_gfeatures(features, &names);
    let _ = parse_features(features, &names);
});
