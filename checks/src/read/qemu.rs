//! A guest tap's facts and /dev/vhost-net, read over the host seam.
use crate::facts::qemu::host::{parse_tun_flags, TapFacts, VHOST_NET};
use crate::facts::ProbeError;
use crate::host::HostRef;
use crate::read::sysfs_net;

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

pub fn vhost_net_present(host: HostRef<'_>) -> bool {
    host.exists(VHOST_NET)
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::qemu::host::{tun_fdinfo_iff, IFF_MULTI_QUEUE};
    use crate::live::qemu::process_fds;

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
