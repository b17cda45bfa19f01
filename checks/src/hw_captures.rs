//! Test support: the real-hardware captures in `checks/testdata/hw/` read
//! back into the facts the NIC checks judge.
//!
//! Only tests parse `ethtool` text. The product reads the same facts from
//! the kernel through SIOCETHTOOL ([`crate::facts::ethtool`]); these parsers
//! turn what an operator pasted into a bug report into those structs, so
//! the judges can be run on NICs this machine will never have. Every
//! capture opens with `#` provenance lines, which are skipped.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::facts::ethtool::{Channels, DrvInfo, Feature, Rings};

/// The text of `testdata/hw/<driver>/<file>` without its `#` header.
pub fn load(driver: &str, file: &str) -> String {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "testdata", "hw", driver, file]
        .iter()
        .collect();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("capture {}: {e}", path.display()));
    text.lines()
        .skip_while(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `key: value` lines, split at the first ": " (or a trailing ':').
fn key_values(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines().filter_map(|l| {
        let l = l.trim();
        l.split_once(": ")
            .map(|(k, v)| (k.trim(), v.trim()))
            .or_else(|| l.strip_suffix(':').map(|k| (k.trim(), "")))
    })
}

/// The `ethtool -S` captures of drivers that count no TSO descriptors:
/// (driver, file, a per-queue counter the capture holds, how `nic.tso`
/// names that driver's counters).
pub const WITHOUT_TSO_COUNTERS: [(&str, &str, &str, &str); 6] = [
    (
        "ice",
        "ethq-tests.ethtool-S.txt",
        "tx_queue_0_packets",
        "tx_queue_N_packets",
    ),
    (
        "i40e",
        "ethq-tests-v2.3.2k.ethtool-S.txt",
        "tx-0.packets",
        "tx-N.packets",
    ),
    (
        "i40e",
        "ethq-tests.ethtool-S.txt",
        "tx-0.tx_packets",
        "tx-N.tx_packets before 2.3.2-k",
    ),
    (
        "bnxt_en",
        "ethq-tests.ethtool-S.txt",
        "[0]: tx_ucast_packets",
        "[N]: tx_ucast_packets",
    ),
    (
        "ena",
        "ethq-issue15.ethtool-S.txt",
        "queue_0_tx_cnt",
        "queue_N_tx_cnt",
    ),
    (
        "virtio_net",
        "ethq-tests.ethtool-S.txt",
        "tx_queue_0_packets",
        "tx_queue_N_packets",
    ),
];

/// `ethtool -i`.
pub fn drvinfo(text: &str) -> DrvInfo {
    let kv: BTreeMap<&str, &str> = key_values(text).collect();
    let get = |k: &str| kv.get(k).copied().unwrap_or_default().to_owned();
    DrvInfo {
        driver: get("driver"),
        version: get("version"),
        fw_version: get("firmware-version"),
        bus_info: get("bus-info"),
        n_stats: 0,
    }
}

/// The one parser of `ethtool -k`'s text, shared with the integration
/// tests: `tests/support/ethtool_k.rs`.
mod ethtool_k_text {
    include!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/support/ethtool_k.rs"
    ));
}

/// `ethtool -k IF` as the kernel's feature name → printed state.
pub use ethtool_k_text::parse as ethtool_k;

/// `ethtool -k` as the probe's [`Feature`]s. "[fixed]" means the device
/// cannot toggle it; "[requested on]" means wanted but not in effect.
pub fn features(text: &str) -> Vec<Feature> {
    ethtool_k(text)
        .into_iter()
        .map(|(name, state)| {
            let active = state.starts_with("on");
            let fixed = state.contains("[fixed]");
            let requested = if state.contains("[requested on]") {
                true
            } else if state.contains("[requested off]") {
                false
            } else {
                active
            };
            Feature {
                name,
                available: !fixed,
                requested,
                active,
                never_changed: false,
            }
        })
        .collect()
}

/// The two blocks of `ethtool -l` / `ethtool -g`: "Pre-set maximums" and
/// "Current hardware settings", each label → number ("n/a" is 0, as the
/// ioctl reports it).
fn max_and_current(text: &str) -> (BTreeMap<String, u32>, BTreeMap<String, u32>) {
    let (mut max, mut cur) = (BTreeMap::new(), BTreeMap::new());
    let mut in_current = false;
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with("Current hardware settings") {
            in_current = true;
            continue;
        }
        let Some((k, v)) = l.split_once(':') else {
            continue;
        };
        let v = v.trim();
        let n = if v == "n/a" { Some(0) } else { v.parse().ok() };
        if let Some(n) = n {
            let block = if in_current { &mut cur } else { &mut max };
            block.insert(k.trim().to_owned(), n);
        }
    }
    (max, cur)
}

/// `ethtool -l`.
pub fn channels(text: &str) -> Channels {
    let (max, cur) = max_and_current(text);
    let g = |m: &BTreeMap<String, u32>, k: &str| m.get(k).copied().unwrap_or(0);
    Channels {
        max_rx: g(&max, "RX"),
        max_tx: g(&max, "TX"),
        max_other: g(&max, "Other"),
        max_combined: g(&max, "Combined"),
        rx: g(&cur, "RX"),
        tx: g(&cur, "TX"),
        other: g(&cur, "Other"),
        combined: g(&cur, "Combined"),
    }
}

/// `ethtool -g`.
pub fn rings(text: &str) -> Rings {
    let (max, cur) = max_and_current(text);
    let g = |m: &BTreeMap<String, u32>, k: &str| m.get(k).copied().unwrap_or(0);
    Rings {
        rx_max: g(&max, "RX"),
        rx_mini_max: g(&max, "RX Mini"),
        rx_jumbo_max: g(&max, "RX Jumbo"),
        tx_max: g(&max, "TX"),
        rx: g(&cur, "RX"),
        rx_mini: g(&cur, "RX Mini"),
        rx_jumbo: g(&cur, "RX Jumbo"),
        tx: g(&cur, "TX"),
    }
}

/// `ethtool -S` as (name, value) in driver order, the way
/// [`crate::facts::ethtool::Ethtool::stats`] returns them. Names may
/// themselves contain ": " (bnxt_en's `[0]: rx_ucast_packets`), so the
/// value is what follows the last one. Names repeat where the driver
/// repeats them (vmxnet3 per queue).
pub fn stats(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter(|l| l.trim() != "NIC statistics:")
        .filter_map(|l| {
            let (name, value) = l.trim().rsplit_once(": ")?;
            Some((name.trim().to_owned(), value.trim().parse().ok()?))
        })
        .collect()
}

/// One named counter of an `ethtool -S` capture.
pub fn stat(stats: &[(String, u64)], name: &str) -> u64 {
    stats
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no counter {name:?} in the capture"))
        .1
}

/// `/proc/interrupts`: the CPU count of the header and, per numbered IRQ,
/// its action name (the last column) and per-CPU counts.
#[derive(Debug)]
pub struct Interrupts {
    pub cpus: usize,
    pub irqs: Vec<(String, Vec<u64>)>,
}

pub fn interrupts(text: &str) -> Interrupts {
    let mut lines = text.lines();
    let cpus = lines
        .next()
        .map(|h| {
            h.split_whitespace()
                .filter(|w| w.starts_with("CPU"))
                .count()
        })
        .unwrap_or(0);
    let irqs = lines
        .filter_map(|l| {
            let (irq, rest) = l.trim_start().split_once(':')?;
            irq.parse::<u32>().ok()?;
            let words: Vec<&str> = rest.split_whitespace().collect();
            let counts: Vec<u64> = words
                .iter()
                .take(cpus)
                .map_while(|w| w.parse().ok())
                .collect();
            let name = words.last()?.to_string();
            Some((name, counts))
        })
        .collect();
    Interrupts { cpus, irqs }
}

impl Interrupts {
    /// The vectors whose name matches, in IRQ order.
    pub fn named(&self, pred: impl Fn(&str) -> bool) -> Vec<&str> {
        self.irqs
            .iter()
            .filter(|(n, _)| pred(n))
            .map(|(n, _)| n.as_str())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_capture_has_a_provenance_header_and_a_body() {
        let root: PathBuf = [env!("CARGO_MANIFEST_DIR"), "testdata", "hw"]
            .iter()
            .collect();
        let mut n = 0;
        for dir in std::fs::read_dir(&root).unwrap() {
            let dir = dir.unwrap().path();
            if !dir.is_dir() {
                continue;
            }
            for f in std::fs::read_dir(&dir).unwrap() {
                let f = f.unwrap().path();
                let text = std::fs::read_to_string(&f).unwrap();
                let name = f.file_name().unwrap().to_string_lossy().into_owned();
                assert!(
                    text.starts_with("# source: "),
                    "{name}: no `# source:` line"
                );
                for field in ["driver:", "kernel:", "command:"] {
                    assert!(
                        text.lines()
                            .take_while(|l| l.starts_with('#'))
                            .any(|l| l.contains(field)),
                        "{name}: no {field} in the header"
                    );
                }
                let driver = dir.file_name().unwrap().to_string_lossy().into_owned();
                assert!(!load(&driver, &name).trim().is_empty(), "{name}: empty");
                let kind = [
                    ".ethtool-i.txt",
                    ".ethtool-k.txt",
                    ".ethtool-l.txt",
                    ".ethtool-g.txt",
                    ".ethtool-S.txt",
                    ".proc-interrupts.txt",
                ];
                assert!(
                    kind.iter().any(|k| name.ends_with(k)),
                    "{name}: unknown kind"
                );
                let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
                let stem = name.split('.').next().unwrap();
                assert!(readme.contains(stem), "{name} is not in README.md");
                n += 1;
            }
        }
        assert!(n >= 25, "only {n} captures");
    }

    #[test]
    fn drvinfo_of_each_driver_names_it() {
        for (driver, file) in [
            ("mlx5_core", "ethq-issue8.ethtool-i.txt"),
            ("ice", "xdp-newbies-2022-12.ethtool-i.txt"),
            ("ice", "ethq-issue27.ethtool-i.txt"),
            ("i40e", "netutils-x710.ethtool-i.txt"),
            ("ixgbe", "netutils-82599es.ethtool-i.txt"),
            ("virtio_net", "netutils-vscale-vm.ethtool-i.txt"),
            ("ena", "ethq-issue15.ethtool-i.txt"),
            ("ena", "amzn-drivers-pr360.ethtool-i.txt"),
        ] {
            let d = drvinfo(&load(driver, file));
            assert_eq!(d.driver, driver, "{file}");
            assert!(!d.bus_info.is_empty(), "{file}");
        }
    }

    #[test]
    fn rings_parse_tab_and_space_separated() {
        let r = rings(&load("ice", "xdp-newbies-2022-12.ethtool-g.txt"));
        assert_eq!((r.rx_max, r.rx, r.tx_max, r.tx), (8160, 4096, 8160, 4096));
        let r = rings(&load("ixgbe", "netutils-82599es.ethtool-g.txt"));
        assert_eq!((r.rx_max, r.rx, r.tx_max, r.tx), (4096, 4096, 4096, 512));
        let r = rings(&load("virtio_net", "netutils-vscale-vm.ethtool-g.txt"));
        assert_eq!((r.rx_max, r.rx), (256, 256));
    }

    #[test]
    fn queue_vectors_are_named_per_driver() {
        // i40e: "i40e-<if>-TxRx-N", one per combined channel, plus misc
        // and flow-director vectors named by PCI address.
        let i = interrupts(&load("i40e", "netutils-x710.proc-interrupts.txt"));
        assert_eq!(i.cpus, 4);
        assert_eq!(i.named(|n| n.starts_with("i40e-eth0-TxRx-")).len(), 4);
        // ixgbe: "<if>-TxRx-N", one per CPU on this 32-CPU host.
        let i = interrupts(&load("ixgbe", "netutils-82599es.proc-interrupts.txt"));
        assert_eq!(i.cpus, 32);
        assert_eq!(i.named(|n| n.starts_with("eth2-TxRx-")).len(), 32);
        // mlx5: completion vectors by bus-info, not by interface name.
        let i = interrupts(&load("mlx5_core", "netutils-q6700.proc-interrupts.txt"));
        assert_eq!(i.cpus, 4);
        let comp = i.named(|n| n.starts_with("mlx5_comp") && n.ends_with("@pci:0000:01:00.0"));
        assert_eq!(comp.len(), 4);
        // virtio_net: "virtio<N>-input.<q>" / "virtio<N>-output.<q>".
        let i = interrupts(&load(
            "virtio_net",
            "netutils-vscale-vm.proc-interrupts.txt",
        ));
        assert_eq!(i.cpus, 1);
        assert_eq!(
            i.named(|n| n.starts_with("virtio0-input.")),
            ["virtio0-input.0"]
        );
    }
}
