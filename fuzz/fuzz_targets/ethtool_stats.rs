//! ethtool statistics and fixed structs: ETHTOOL_GSTATS buffers,
//! struct ethtool_drvinfo, ethtool_channels, ethtool_ringparam.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::facts::ethtool::{parse_channels, parse_drvinfo, parse_rings, parse_stats};

fuzz_target!(|data: &[u8]| {
    let _ = parse_stats(data);
    let _ = parse_drvinfo(data);
    if let Ok(c) = parse_channels(data) {
        let _ = (c.current_pairs(), c.max_pairs());
    }
    let _ = parse_rings(data);
});
