//! Which Spinifex instance a QEMU process is, and its tap NICs, from the
//! command line the daemon builds (spinifex/vm/lifecycle.go).
//!
//! Instance ids are not in OVN: OVN knows ENIs (a logical switch port per
//! ENI), the node knows which QEMU runs which instance. The daemon names
//! QEMU's files after the instance: `-pidfile <runtime>/<i-…>.pid`, `-qmp
//! unix:<runtime>/qmp-<i-…>.sock`, the telemetry monitor
//! `qmp-telemetry-<i-…>.sock`, the serial socket `serial-<i-…>.sock`, the
//! console log `console-<i-…>.log` (and older builds `-name <i-…>`). Each
//! VPC NIC is `-netdev tap,id=…,ifname=tap<ENI without "eni-">` cut to 15
//! characters, with a `virtio-net-pci,netdev=…,mac=…,host_mtu=N` device:
//! the tap name leads to the OVS interface whose `external_ids:iface-id`
//! is the ENI's logical switch port.

use std::path::Path;

use super::QemuCommandLine;

/// A Spinifex instance id: `i-` and 1 to 32 lower-case hex digits (EC2's
/// form, which Spinifex keeps).
pub fn is_instance_id(text: &str) -> bool {
    text.strip_prefix("i-").is_some_and(|hex| {
        !hex.is_empty()
            && hex.len() <= 32
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The instance a Spinifex QEMU runs, from the names of its files (the
/// pid file first, then the QMP sockets, then `-name`), or `None` for a
/// QEMU Spinifex did not start.
pub fn instance_id(cl: &QemuCommandLine) -> Option<String> {
    let from_file = |path: &str, prefix: &str, suffix: &str| -> Option<String> {
        let name = Path::new(path).file_name()?.to_str()?;
        let id = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
        is_instance_id(id).then(|| id.to_owned())
    };
    let pidfile = cl
        .args
        .iter()
        .filter(|(o, _)| o == "pidfile")
        .filter_map(|(_, v)| v.as_deref())
        .find_map(|p| from_file(p, "", ".pid"));
    if pidfile.is_some() {
        return pidfile;
    }
    for socket in cl.qmp_sockets() {
        let path = socket.path.to_string_lossy();
        for prefix in ["qmp-telemetry-", "qmp-"] {
            if let Some(id) = from_file(&path, prefix, ".sock") {
                return Some(id);
            }
        }
    }
    cl.name.clone().filter(|n| is_instance_id(n))
}

/// One tap NIC of a guest: the netdev and the device that uses it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TapNic {
    /// `-netdev tap,ifname=…`.
    pub tap: String,
    /// The device's `mac=`, as written.
    #[serde(default)]
    pub mac: Option<String>,
    /// The device's `host_mtu=`: the MTU QEMU tells the guest its NIC has.
    #[serde(default)]
    pub host_mtu: Option<u32>,
    /// The netdev's `queues=` (1 when absent).
    pub queues: u32,
    /// The device's driver (`virtio-net-pci`).
    #[serde(default)]
    pub driver: Option<String>,
}

/// Every tap NIC on the command line, in order: each `-netdev tap` with an
/// `ifname`, with the device whose `netdev=` names it.
pub fn tap_nics(cl: &QemuCommandLine) -> Vec<TapNic> {
    let mut out = Vec::new();
    for netdev in &cl.netdevs {
        if netdev.get("type") != Some("tap") {
            continue;
        }
        let Some(tap) = netdev.get("ifname").filter(|t| !t.is_empty()) else {
            continue;
        };
        let device = netdev.id().and_then(|id| {
            cl.devices
                .iter()
                .rev()
                .find(|d| d.get("netdev") == Some(id))
        });
        out.push(TapNic {
            tap: tap.to_owned(),
            mac: device
                .and_then(|d| cl.device_prop(d, "mac"))
                .map(str::to_owned),
            host_mtu: device
                .and_then(|d| cl.device_number(d, "host_mtu"))
                .and_then(|m| u32::try_from(m).ok()),
            queues: netdev
                .number("queues")
                .and_then(|q| u32::try_from(q).ok())
                .unwrap_or(1),
            driver: device.and_then(|d| d.get("driver")).map(str::to_owned),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command line spinifex/vm/lifecycle.go builds (v1.17.0; no
    /// `-name`), as the kernel lab's guests run it, with a second ENI.
    fn spinifex_argv() -> Vec<&'static str> {
        vec![
            "/usr/bin/qemu-system-x86_64",
            "-pidfile",
            "/run/spinifex/i-0a1b2c3d4e5f60718.pid",
            "-M",
            "q35",
            "-qmp",
            "unix:/run/spinifex/qmp-i-0a1b2c3d4e5f60718.sock,server,nowait",
            "-qmp",
            "unix:/run/spinifex/qmp-telemetry-i-0a1b2c3d4e5f60718.sock,server,nowait",
            "-netdev",
            "tap,id=net0,ifname=tap0a11c0ffee000,script=no,downscript=no,vhost=on,queues=4",
            "-device",
            "virtio-net-pci,netdev=net0,mac=02:00:0a:00:01:0b,host_mtu=8942,rx_queue_size=1024,mq=on,vectors=10",
            "-netdev",
            "tap,id=net1,ifname=tap0b22c0ffee000,script=no,downscript=no,vhost=on",
            "-device",
            "virtio-net-pci,netdev=net1,mac=02:00:0a:00:02:0c,host_mtu=1408",
            "-netdev",
            "user,id=slirp0",
        ]
    }

    #[test]
    fn the_instance_is_known_by_its_files() {
        let cl = QemuCommandLine::parse(&spinifex_argv()).unwrap();
        assert_eq!(instance_id(&cl).as_deref(), Some("i-0a1b2c3d4e5f60718"));
        // Without the pid file, by the QMP socket; then by -name.
        let argv: Vec<&str> = spinifex_argv()
            .into_iter()
            .filter(|w| *w != "-pidfile" && !w.ends_with(".pid"))
            .collect();
        let cl = QemuCommandLine::parse(&argv).unwrap();
        assert_eq!(instance_id(&cl).as_deref(), Some("i-0a1b2c3d4e5f60718"));
        let cl = QemuCommandLine::parse(&["qemu", "-name", "i-00ff"]).unwrap();
        assert_eq!(instance_id(&cl).as_deref(), Some("i-00ff"));
        // Not Spinifex's: no instance.
        for argv in [
            vec!["qemu", "-name", "guest=web1", "-pidfile", "/run/web1.pid"],
            vec!["qemu", "-pidfile", "/run/i-XYZ.pid"],
            vec!["qemu"],
        ] {
            let cl = QemuCommandLine::parse(&argv).unwrap();
            assert_eq!(instance_id(&cl), None, "{argv:?}");
        }
    }

    #[test]
    fn tap_nics_carry_their_device() {
        let cl = QemuCommandLine::parse(&spinifex_argv()).unwrap();
        let nics = tap_nics(&cl);
        assert_eq!(
            nics,
            vec![
                TapNic {
                    tap: "tap0a11c0ffee000".into(),
                    mac: Some("02:00:0a:00:01:0b".into()),
                    host_mtu: Some(8942),
                    queues: 4,
                    driver: Some("virtio-net-pci".into()),
                },
                TapNic {
                    tap: "tap0b22c0ffee000".into(),
                    mac: Some("02:00:0a:00:02:0c".into()),
                    host_mtu: Some(1408),
                    queues: 1,
                    driver: Some("virtio-net-pci".into()),
                },
            ]
        );
    }

    #[test]
    fn instance_ids() {
        assert!(is_instance_id("i-0123456789abcdef0"));
        for bad in [
            "i-",
            "i-0A",
            "eni-01",
            "i-01 ",
            "i-../x",
            &format!("i-{}", "a".repeat(33)),
        ] {
            assert!(!is_instance_id(bad), "{bad:?}");
        }
    }
}
