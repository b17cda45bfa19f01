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

/// The tap a tun descriptor is attached to: the `iff:` line of its fdinfo.
pub fn tun_fdinfo_iff(fdinfo: &str) -> Option<&str> {
    fdinfo
        .lines()
        .find_map(|l| l.strip_prefix("iff:"))
        .map(str::trim)
        .filter(|n| !n.is_empty())
}
