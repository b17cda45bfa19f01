//! The host side of a guest NIC: the tap device as sysfs shows it and the
//! vhost-net device. A tap's `queues/` holds one `rx-N`/`tx-N` per queue
//! QEMU attached (the tun driver sets the real queue count to the number
//! of attached file descriptors), and `tun_flags` carries IFF_MULTI_QUEUE.

use std::path::Path;

use crate::probe::sysfs_net;
use crate::probe::{read_to_string, ProbeError};

/// `IFF_MULTI_QUEUE` in `/sys/class/net/TAP/tun_flags` (linux/if_tun.h).
pub const IFF_MULTI_QUEUE: u32 = 0x100;
pub const VHOST_NET: &str = "/dev/vhost-net";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
pub fn tap(name: &str) -> Result<TapFacts, ProbeError> {
    crate::validate::interface(name).map_err(ProbeError::Other)?;
    let (rx_queues, tx_queues) = sysfs_net::queue_counts(name)?;
    let flags_path = Path::new("/sys/class/net").join(name).join("tun_flags");
    let tun_flags = match read_to_string(&flags_path) {
        Ok(text) => Some(parse_tun_flags(&text).ok_or_else(|| {
            ProbeError::parse(
                flags_path.display().to_string(),
                format!("{:?}", text.trim()),
            )
        })?),
        Err(ProbeError::NotFound(_)) => None,
        Err(e) => return Err(e),
    };
    Ok(TapFacts {
        rx_queues,
        tx_queues,
        tun_flags,
    })
}

/// `0x1102\n` → 0x1102.
pub fn parse_tun_flags(text: &str) -> Option<u32> {
    let t = text.trim();
    u32::from_str_radix(t.strip_prefix("0x").unwrap_or(t), 16).ok()
}

pub fn vhost_net_present() -> bool {
    Path::new(VHOST_NET).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tun_flags_text() {
        // captured on Debian 12, kernel 6.1: `ip tuntap add … mode tap multi_queue`
        let f = parse_tun_flags("0x1102\n").unwrap();
        assert_eq!(f & IFF_MULTI_QUEUE, IFF_MULTI_QUEUE);
        let single = TapFacts {
            rx_queues: 1,
            tx_queues: 1,
            tun_flags: parse_tun_flags("0x1002"),
        };
        assert!(!single.multi_queue());
        assert_eq!(parse_tun_flags("zz"), None);
    }

    #[test]
    fn loopback_is_not_a_tap() {
        let lo = tap("lo").unwrap();
        assert_eq!(lo.tun_flags, None);
        assert!(matches!(tap("nosuchtap0"), Err(ProbeError::NotFound(_))));
        assert!(tap("../x").is_err());
    }
}
