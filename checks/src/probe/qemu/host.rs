//! The host side of a guest NIC: the tap device as sysfs shows it, the tap
//! queues QEMU holds open, and the vhost-net device.
//!
//! A tap's `queues/` holds one `rx-N`/`tx-N` per *enabled* queue: the tun
//! driver sets the real queue count to the attached file descriptors, and
//! virtio-net detaches (IFF_DETACH_QUEUE) the queues the guest has not
//! enabled, so a paused guest or one before its driver loads shows 1. The
//! queues QEMU opened are its `/dev/net/tun` descriptors, each naming the
//! tap in `/proc/PID/fdinfo/N` (`iff:`), enabled or not. `tun_flags`
//! carries IFF_MULTI_QUEUE.

use std::collections::BTreeMap;
use std::path::Path;

use crate::facts::ProbeError;
use crate::host::HostRef;
use crate::probe::sysfs_net;

/// `IFF_MULTI_QUEUE` in `/sys/class/net/TAP/tun_flags` (linux/if_tun.h).
pub const IFF_MULTI_QUEUE: u32 = 0x100;
pub const VHOST_NET: &str = "/dev/vhost-net";

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TapFacts {
    pub rx_queues: usize,
    pub tx_queues: usize,
    /// The tun flags, when the device is a tun/tap.
    pub tun_flags: Option<u32>,
}

impl TapFacts {
    pub fn multi_queue(&self) -> bool {
        self.tun_flags.is_some_and(|f| f & IFF_MULTI_QUEUE != 0)
    }
}

/// Read a tap's queue counts and flags from sysfs (this network namespace).
pub fn tap(host: HostRef<'_>, name: &str) -> Result<TapFacts, ProbeError> {
    crate::validate::interface(name).map_err(ProbeError::Other)?;
    let (rx_queues, tx_queues) = sysfs_net::queue_counts(host, name)?;
    let tun_flags = match sysfs_net::tun_flags(host, name)? {
        Some((path, text)) => Some(parse_tun_flags(&text).ok_or_else(|| {
            ProbeError::parse(path.display().to_string(), format!("{:?}", text.trim()))
        })?),
        None => None,
    };
    Ok(TapFacts {
        rx_queues,
        tx_queues,
        tun_flags,
    })
}

/// `0x1902\n` → 0x1902.
pub fn parse_tun_flags(text: &str) -> Option<u32> {
    let t = text.trim();
    u32::from_str_radix(t.strip_prefix("0x").unwrap_or(t), 16).ok()
}

/// The tun and vhost-net descriptors a process holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessFds {
    /// Tap name → number of `/dev/net/tun` descriptors attached to it.
    pub tun_queues: BTreeMap<String, usize>,
    /// Descriptors open on `/dev/vhost-net` (one per vhost queue pair).
    pub vhost_net: usize,
}

/// Read `/proc/PID/fd` and the `iff:` line of each tun descriptor's fdinfo.
/// Needs the right to inspect the process (root for other users' guests).
pub fn process_fds(pid: i32) -> Result<ProcessFds, ProbeError> {
    let dir = Path::new("/proc").join(pid.to_string()).join("fd");
    let entries = std::fs::read_dir(&dir).map_err(|e| ProbeError::from_io(&dir, e))?;
    let mut out = ProcessFds::default();
    for entry in entries.flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        if target == Path::new(VHOST_NET) {
            out.vhost_net += 1;
        } else if target == Path::new("/dev/net/tun") {
            let info = Path::new("/proc")
                .join(pid.to_string())
                .join("fdinfo")
                .join(entry.file_name());
            if let Some(name) = std::fs::read_to_string(&info)
                .ok()
                .as_deref()
                .and_then(tun_fdinfo_iff)
            {
                *out.tun_queues.entry(name.to_owned()).or_default() += 1;
            }
        }
    }
    Ok(out)
}

/// The tap a tun descriptor is attached to: the `iff:` line of its fdinfo.
pub fn tun_fdinfo_iff(fdinfo: &str) -> Option<&str> {
    fdinfo
        .lines()
        .find_map(|l| l.strip_prefix("iff:"))
        .map(str::trim)
        .filter(|n| !n.is_empty())
}

pub fn vhost_net_present(host: HostRef<'_>) -> bool {
    host.exists(VHOST_NET)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tun_flags_text() {
        // captured on Debian 12, kernel 6.18: `ip tuntap add … mode tap multi_queue`
        // reads 0x1902; with qemu-system-x86_64 7.2 attached (vnet_hdr) 0x7902.
        for text in ["0x1902\n", "0x7902\n"] {
            let f = parse_tun_flags(text).unwrap();
            assert_eq!(f & IFF_MULTI_QUEUE, IFF_MULTI_QUEUE);
        }
        let single = TapFacts {
            rx_queues: 1,
            tx_queues: 1,
            tun_flags: parse_tun_flags("0x1002"),
        };
        assert!(!single.multi_queue());
        assert_eq!(parse_tun_flags("zz"), None);
    }

    #[test]
    fn tun_fdinfo() {
        // captured on Debian 12, kernel 6.18: /proc/PID/fdinfo/13 of qemu-system-x86_64 7.2.
        let info = "pos:\t100\nflags:\t0104002\nmnt_id:\t62\nino:\t105\niff:\ttapeni-t1\n";
        assert_eq!(tun_fdinfo_iff(info), Some("tapeni-t1"));
        assert_eq!(tun_fdinfo_iff("pos:\t0\niff:\t\n"), None);
        assert_eq!(tun_fdinfo_iff("pos:\t0\n"), None);
    }

    #[test]
    fn own_process_has_no_tun_queues() {
        let fds = process_fds(std::process::id() as i32).unwrap();
        assert!(fds.tun_queues.is_empty());
    }

    #[test]
    fn loopback_is_not_a_tap() {
        let host = crate::live::test_host();
        let lo = tap(host, "lo").unwrap();
        assert_eq!(lo.tun_flags, None);
        assert!(matches!(
            tap(host, "nosuchtap0"),
            Err(ProbeError::NotFound(_))
        ));
        assert!(tap(host, "../x").is_err());
    }
}
