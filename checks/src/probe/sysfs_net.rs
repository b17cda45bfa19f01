//! Network devices as sysfs shows them (/sys/class/net): names, MTUs,
//! bridge ports, and the underlay bridge Spinifex uses for the vpc plane.
//! Sysfs is per network namespace (of the process that mounted it; `ip
//! netns exec` remounts it), so a run inside a namespace sees its devices.

use std::path::{Path, PathBuf};

use super::{read_to_string, ProbeError};

const CLASS_NET: &str = "/sys/class/net";

/// The vpc plane's bridge, best first: planes collapse vpc → lan → wan on
/// nodes with fewer NICs.
pub use crate::spinifex::UNDERLAY_BRIDGES;

fn dev_path(name: &str) -> PathBuf {
    Path::new(CLASS_NET).join(name)
}

pub fn exists(name: &str) -> bool {
    crate::validate::interface(name).is_ok() && dev_path(name).exists()
}

/// All network device names, sorted.
pub fn interfaces() -> Result<Vec<String>, ProbeError> {
    let dir = Path::new(CLASS_NET);
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| ProbeError::from_io(dir, e))?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    Ok(names)
}

/// An unsigned attribute of a device, e.g. `mtu` or `tx_queue_len`.
pub fn attr_u64(name: &str, attr: &str) -> Result<u64, ProbeError> {
    let path = dev_path(name).join(attr);
    let text = read_to_string(&path)?;
    text.trim()
        .parse()
        .map_err(|_| ProbeError::parse(path.display().to_string(), format!("{:?}", text.trim())))
}

pub fn mtu(name: &str) -> Result<u32, ProbeError> {
    attr_u64(name, "mtu").map(|m| m as u32)
}

pub fn is_bridge(name: &str) -> bool {
    dev_path(name).join("bridge").is_dir()
}

/// The ports of a Linux bridge (/sys/class/net/BR/brif/), sorted.
pub fn bridge_ports(bridge: &str) -> Result<Vec<String>, ProbeError> {
    let dir = dev_path(bridge).join("brif");
    let mut ports: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| ProbeError::from_io(&dir, e))?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    ports.sort();
    Ok(ports)
}

/// The first of br-vpc, br-lan, br-wan that exists here.
pub fn underlay_bridge() -> Option<&'static str> {
    UNDERLAY_BRIDGES.into_iter().find(|b| exists(b))
}

/// The device's driver name (the `device/driver` link), if it has one.
pub fn driver(name: &str) -> Option<String> {
    std::fs::read_link(dev_path(name).join("device/driver"))
        .ok()
        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
}

/// Number of rx and tx queues (`queues/rx-*`, `queues/tx-*`).
pub fn queue_counts(name: &str) -> Result<(usize, usize), ProbeError> {
    let dir = dev_path(name).join("queues");
    let entries: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| ProbeError::from_io(&dir, e))?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    let rx = entries.iter().filter(|e| e.starts_with("rx-")).count();
    let tx = entries.iter().filter(|e| e.starts_with("tx-")).count();
    Ok((rx, tx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_always_there() {
        assert!(interfaces().unwrap().contains(&"lo".to_owned()));
        assert!(mtu("lo").unwrap() >= 1500);
        assert!(!is_bridge("lo"));
        assert!(queue_counts("lo").unwrap().0 >= 1);
        assert!(matches!(mtu("nosuchdev0"), Err(ProbeError::NotFound(_))));
        assert!(!exists("../../etc"));
    }
}
