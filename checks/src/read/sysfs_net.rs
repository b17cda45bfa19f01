//! What sysfs (`/sys/class/net/IF/…`) knows of a network device that
//! rtnetlink does not carry, and nothing else.
//!
//! A device's name, existence, MTU, bridge kind, bridge ports and up state
//! are link facts, read over rtnetlink only ([`crate::live::links`]): one source,
//! one dump per check. What stays here is what no `RTM_GETLINK` answer
//! holds:
//!
//! * the driver behind a device, the `device/driver` link (ethtool's
//!   `ETHTOOL_GDRVINFO` is asked first; this is for devices that do not
//!   answer it);
//! * the `lower_<dev>` links of VLANs, bonds, macvlans and team devices,
//!   which name every lower device (rtnetlink gives a VLAN or macvlan one
//!   `IFLA_LINK` and a bond's ports their `IFLA_MASTER`, not one answer for
//!   all of them);
//! * a tap's `queues/` directory (one `rx-N`/`tx-N` per *enabled* queue;
//!   `IFLA_NUM_RX_QUEUES` is the number allocated) and its `tun_flags`
//!   (IFF_MULTI_QUEUE), which only the tun driver's sysfs attribute shows;
//! * `statistics/tx_packets` and `statistics/tx_bytes`, which `nic.tso`
//!   reads at both ends of its window: the same 64-bit counters as
//!   `IFLA_STATS64`, two small files instead of a link fact that would
//!   carry every counter of every device into each bundle.
//!
//! Reads go through the host seam ([`crate::host`]) as file, directory and
//! symbolic-link requests; they answer from memory, so they take no bound.
//! Sysfs is per network namespace (of the process that mounted it; `ip
//! netns exec` remounts it), so a run inside a namespace sees its devices.

use std::path::{Path, PathBuf};

use crate::facts::ProbeError;
use crate::host::HostRef;

const CLASS_NET: &str = "/sys/class/net";

fn dev_path(name: &str) -> PathBuf {
    Path::new(CLASS_NET).join(name)
}

/// A counter under `statistics/` (`tx_packets`, `tx_bytes`).
pub fn statistic(host: HostRef<'_>, name: &str, counter: &str) -> Result<u64, ProbeError> {
    crate::validate::interface(name).map_err(ProbeError::Other)?;
    let path = dev_path(name).join("statistics").join(counter);
    let text = host.read_file(&path)?;
    text.trim()
        .parse()
        .map_err(|_| ProbeError::parse(path.display().to_string(), format!("{:?}", text.trim())))
}

/// The device's driver name (the `device/driver` link), if it has one.
pub fn driver(host: HostRef<'_>, name: &str) -> Option<String> {
    crate::validate::interface(name).ok()?;
    host.read_link(dev_path(name).join("device/driver"))
        .ok()
        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
}

/// Number of enabled rx and tx queues (`queues/rx-*`, `queues/tx-*`).
pub fn queue_counts(host: HostRef<'_>, name: &str) -> Result<(usize, usize), ProbeError> {
    let entries = host.read_dir(dev_path(name).join("queues"))?;
    let rx = entries.iter().filter(|e| e.starts_with("rx-")).count();
    let tx = entries.iter().filter(|e| e.starts_with("tx-")).count();
    Ok((rx, tx))
}

/// The text of a tun/tap's `tun_flags`; `None` when the device has none
/// (it is no tun/tap).
pub fn tun_flags(host: HostRef<'_>, name: &str) -> Result<Option<(PathBuf, String)>, ProbeError> {
    let path = dev_path(name).join("tun_flags");
    match host.read_file(&path) {
        Ok(text) => Ok(Some((path, text))),
        Err(ProbeError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
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
        let host = crate::live::test_host();
        assert!(queue_counts(host, "lo").unwrap().0 >= 1);
        assert!(statistic(host, "lo", "tx_packets").is_ok());
        assert!(matches!(
            statistic(host, "nosuchdev0", "tx_bytes"),
            Err(ProbeError::NotFound(_))
        ));
        assert!(statistic(host, "../../etc", "tx_bytes").is_err());
        assert_eq!(tun_flags(host, "lo").unwrap(), None);
        assert_eq!(driver(host, "lo"), None);
        assert!(lower_devices(host, "lo").is_empty());
    }
}
