// `ethtool -k` as the tests' independent oracle, parsed in this one place
// for both test suites: the integration tests (`support::ethtool_k`) and the
// library's unit tests, which include this file (`checks/src/hw_captures.rs`:
// the hardware captures and the loopback comparison). Only tests read
// ethtool's text; the doctor reads features over SIOCETHTOOL.
//
// No inner doc comment here: the library includes the file inside a module.

use std::collections::BTreeMap;

/// The text of `ethtool -k IF` as the kernel's feature name → the state as
/// printed (`on`, `off [fixed]`, `off [requested on]`). ethtool prints a
/// few single features under legacy names; those are mapped back to the
/// kernel's names. Group lines that stand for several features
/// (`tx-checksumming`, `scatter-gather`, `tcp-segmentation-offload`,
/// `udp-fragmentation-offload`) and the `Features for IF:` header are
/// dropped.
pub fn parse(text: &str) -> BTreeMap<String, String> {
    const LEGACY: [(&str, &str); 8] = [
        ("rx-checksumming", "rx-checksum"),
        ("generic-segmentation-offload", "tx-generic-segmentation"),
        ("generic-receive-offload", "rx-gro"),
        ("large-receive-offload", "rx-lro"),
        ("rx-vlan-offload", "rx-vlan-hw-parse"),
        ("tx-vlan-offload", "tx-vlan-hw-insert"),
        ("ntuple-filters", "rx-ntuple-filter"),
        ("receive-hashing", "rx-hashing"),
    ];
    const GROUPS: [&str; 4] = [
        "tx-checksumming",
        "scatter-gather",
        "tcp-segmentation-offload",
        "udp-fragmentation-offload",
    ];
    text.lines()
        .filter(|l| !l.starts_with("Features for "))
        .filter_map(|l| l.trim().split_once(": "))
        .filter(|(n, _)| !GROUPS.contains(n))
        .map(|(n, v)| {
            let n = LEGACY.iter().find(|(l, _)| *l == n).map_or(n, |(_, k)| k);
            (n.to_owned(), v.trim().to_owned())
        })
        .collect()
}
