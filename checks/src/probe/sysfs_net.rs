//! Network devices as sysfs shows them (/sys/class/net): names, MTUs,
//! bridge ports, and the underlay bridge Spinifex uses for the vpc plane.
//! Sysfs is per network namespace (of the process that mounted it; `ip
//! netns exec` remounts it), so a run inside a namespace sees its devices.

use std::path::{Path, PathBuf};

use super::ProbeError;
use crate::host::HostRef;

const CLASS_NET: &str = "/sys/class/net";

/// The vpc plane's bridge, best first: planes collapse vpc → lan → wan on
/// nodes with fewer NICs.
pub use crate::spinifex::UNDERLAY_BRIDGES;

fn dev_path(name: &str) -> PathBuf {
    Path::new(CLASS_NET).join(name)
}

pub fn exists(host: HostRef<'_>, name: &str) -> bool {
    crate::validate::interface(name).is_ok() && host.exists(dev_path(name))
}

/// All network device names, sorted.
pub fn interfaces(host: HostRef<'_>) -> Result<Vec<String>, ProbeError> {
    host.read_dir(CLASS_NET)
}

/// An unsigned attribute of a device, e.g. `mtu` or `tx_queue_len`.
pub fn attr_u64(host: HostRef<'_>, name: &str, attr: &str) -> Result<u64, ProbeError> {
    let path = dev_path(name).join(attr);
    let text = host.read_file(&path)?;
    text.trim()
        .parse()
        .map_err(|_| ProbeError::parse(path.display().to_string(), format!("{:?}", text.trim())))
}

pub fn mtu(host: HostRef<'_>, name: &str) -> Result<u32, ProbeError> {
    attr_u64(host, name, "mtu").map(|m| m as u32)
}

pub fn is_bridge(host: HostRef<'_>, name: &str) -> bool {
    host.is_dir(dev_path(name).join("bridge"))
}

/// The ports of a Linux bridge (/sys/class/net/BR/brif/), sorted.
pub fn bridge_ports(host: HostRef<'_>, bridge: &str) -> Result<Vec<String>, ProbeError> {
    host.read_dir(dev_path(bridge).join("brif"))
}

/// The first of br-vpc, br-lan, br-wan that exists here.
pub fn underlay_bridge(host: HostRef<'_>) -> Option<&'static str> {
    UNDERLAY_BRIDGES.into_iter().find(|b| exists(host, b))
}

/// The device's driver name (the `device/driver` link), if it has one.
pub fn driver(host: HostRef<'_>, name: &str) -> Option<String> {
    host.read_link(dev_path(name).join("device/driver"))
        .ok()
        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
}

/// Number of rx and tx queues (`queues/rx-*`, `queues/tx-*`).
pub fn queue_counts(host: HostRef<'_>, name: &str) -> Result<(usize, usize), ProbeError> {
    let entries = host.read_dir(dev_path(name).join("queues"))?;
    let rx = entries.iter().filter(|e| e.starts_with("rx-")).count();
    let tx = entries.iter().filter(|e| e.starts_with("tx-")).count();
    Ok((rx, tx))
}

/// The direct lower devices of `name`: the `lower_<dev>` links sysfs keeps
/// for VLANs, bonds, macvlans and team devices. Sorted.
pub fn lower_devices(host: HostRef<'_>, name: &str) -> Vec<String> {
    if crate::validate::interface(name).is_err() {
        return Vec::new();
    }
    host.read_dir(dev_path(name))
        .map(|entries| {
            entries
                .into_iter()
                .filter_map(|f| f.strip_prefix("lower_").map(str::to_owned))
                .filter(|l| crate::validate::interface(l).is_ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_always_there() {
        let host = crate::host::live();
        assert!(interfaces(host).unwrap().contains(&"lo".to_owned()));
        assert!(mtu(host, "lo").unwrap() >= 1500);
        assert!(!is_bridge(host, "lo"));
        assert!(queue_counts(host, "lo").unwrap().0 >= 1);
        assert!(matches!(
            mtu(host, "nosuchdev0"),
            Err(ProbeError::NotFound(_))
        ));
        assert!(!exists(host, "../../etc"));
    }
}
