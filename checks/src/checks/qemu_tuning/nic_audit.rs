//! The NIC audit: vhost-net, multiqueue and vectors, the tap's MTU and
//! queues, and each virtio-net device's properties.

use super::facts::{InstanceFacts, TapError};
use super::{InstanceAudit, QemuTuningKind, AUTO_NET_VECTORS_SINCE, RX_QUEUE_SIZE};
use crate::expect::{Expectations, MAX_NIC_QUEUES};
use crate::facts::qemu::host::ProcessFds;
use crate::facts::qemu::opts::Opts;
use crate::facts::qemu::QemuCommandLine;
use crate::spinifex::MGMT_TAP_PREFIX;

pub(super) fn is_virtio_net(driver: &str) -> bool {
    driver.starts_with("virtio-net")
}

pub(super) fn audit_nics(
    cl: &QemuCommandLine,
    facts: &InstanceFacts,
    vhost_net: bool,
    expect: Option<&Expectations>,
    a: &mut InstanceAudit,
) {
    for netdev in &cl.netdevs {
        let id = netdev.id().unwrap_or("?");
        let kind = netdev.get("type").unwrap_or("?");
        let ifname = netdev.get("ifname");
        if ifname.is_some_and(|n| n.starts_with(MGMT_TAP_PREFIX)) {
            a.ok.push(format!(
                "NIC {id} ({}): management NIC, not audited",
                ifname.unwrap_or_default()
            ));
            continue;
        }
        let subject = match ifname {
            Some(n) => format!("NIC {id} ({n})"),
            None => format!("NIC {id}"),
        };
        let device = cl
            .devices
            .iter()
            .rev()
            .find(|d| d.get("netdev") == Some(id));
        if kind != "tap" {
            a.problem(
                QemuTuningKind::NotTap,
                format!("{subject}: netdev type {kind}, expected tap (vhost and host-side multiqueue need a tap)"),
            );
        } else {
            audit_vhost(netdev, &subject, vhost_net, &facts.fds, a);
        }
        let queues = netdev_queues(netdev);
        // The queue count the device must be built for: what the config
        // implies, or without a config what QEMU was given.
        let target = match expect {
            Some(e) => {
                let want = e.nic_queues(a.vcpus);
                let why = if e.ipsec_enabled {
                    "1 with IPsec on: multiqueue reorders ESP".to_owned()
                } else {
                    format!("min(vCPUs {}, {MAX_NIC_QUEUES}) with IPsec off", a.vcpus)
                };
                if queues == want {
                    a.ok.push(format!("{subject}: queues={queues} ({why})"));
                } else {
                    a.problem(
                        QemuTuningKind::WrongQueues,
                        format!("{subject}: queues={queues}, expected {want} ({why})"),
                    );
                }
                want
            }
            None => {
                a.not_judged.push(format!(
                    "{subject}: queues={queues} against the IPsec setting: no config"
                ));
                queues
            }
        };
        if let Some(ifname) = ifname.filter(|_| kind == "tap") {
            audit_tap(&subject, ifname, queues, facts, a);
        }
        let Some(device) = device else {
            a.not_judged.push(format!(
                "{subject}: no -device uses this netdev (hot-plugged or unused)"
            ));
            continue;
        };
        let driver = device.get("driver").unwrap_or("?");
        if !is_virtio_net(driver) {
            a.problem(
                QemuTuningKind::NotVirtio,
                format!("{subject}: device {driver}, expected virtio-net-pci"),
            );
            continue;
        }
        audit_nic_device(cl, device, &subject, queues, target, expect, a);
    }
}

/// Queue pairs QEMU was given: `queues=`, else the number of `fds=`, else 1.
pub(super) fn netdev_queues(netdev: &Opts) -> u32 {
    if let Some(q) = netdev.number("queues") {
        return u32::try_from(q).unwrap_or(u32::MAX);
    }
    if let Some(fds) = netdev.get("fds") {
        return u32::try_from(fds.split(':').count()).unwrap_or(u32::MAX);
    }
    1
}

pub(super) fn audit_vhost(
    netdev: &Opts,
    subject: &str,
    vhost_net: bool,
    fds: &Result<ProcessFds, String>,
    a: &mut InstanceAudit,
) {
    let on = netdev.flag("vhost") == Some(true)
        || netdev.flag("vhostforce") == Some(true)
        || netdev.has("vhostfd")
        || netdev.has("vhostfds");
    if on {
        match fds {
            Ok(f) => a.ok.push(format!(
                "{subject}: vhost=on (the process holds {} /dev/vhost-net descriptor(s))",
                f.vhost_net
            )),
            Err(_) => a.ok.push(format!("{subject}: vhost=on")),
        }
    } else {
        let mut text = format!(
            "{subject}: vhost={}, expected vhost=on (without it QEMU's main loop moves every packet, ~60% of a core)",
            netdev.get("vhost").unwrap_or("off")
        );
        if !vhost_net {
            text.push_str("; /dev/vhost-net is missing on this host");
        }
        a.problem(QemuTuningKind::NoVhost, text);
    }
}

pub(super) fn audit_tap(
    subject: &str,
    ifname: &str,
    queues: u32,
    facts: &InstanceFacts,
    a: &mut InstanceAudit,
) {
    // The queues QEMU opened: its tun descriptors attached to this tap.
    match &facts.fds {
        Ok(fds) => {
            let held = fds.tun_queues.get(ifname).copied().unwrap_or(0);
            if held as u64 == u64::from(queues) {
                a.ok.push(format!(
                    "{subject}: QEMU holds {held} queue(s) of tap {ifname}"
                ));
            } else {
                a.problem(
                    QemuTuningKind::TapQueueMismatch,
                    format!(
                        "{subject}: QEMU holds {held} queue(s) of tap {ifname} (/proc/{}/fdinfo), its command line says queues={queues}",
                        facts.pid
                    ),
                );
            }
        }
        Err(e) => a
            .not_judged
            .push(format!("{subject}: queues QEMU holds on tap {ifname}: {e}")),
    }
    // The tap itself: the multi_queue flag, and the queues the guest enabled.
    match facts.taps.get(ifname) {
        Some(Ok(t)) => {
            if t.tun_flags.is_none() {
                a.not_judged.push(format!(
                    "{subject}: {ifname} in sysfs is not a tun/tap device"
                ));
                return;
            }
            if queues > 1 && !t.multi_queue() {
                a.problem(
                    QemuTuningKind::TapQueueMismatch,
                    format!("{subject}: host tap {ifname} lacks the multi_queue flag, expected `ip tuntap add … multi_queue` for queues={queues}"),
                );
            }
            let enabled = t.tx_queues.max(t.rx_queues);
            if enabled as u64 > u64::from(queues) {
                a.problem(
                    QemuTuningKind::TapQueueMismatch,
                    format!(
                        "{subject}: host tap {ifname} has {enabled} queues enabled in /sys/class/net/{ifname}/queues, more than QEMU's queues={queues}: another process is attached to it"
                    ),
                );
            } else {
                a.ok.push(format!(
                    "{subject}: host tap {ifname}: {enabled} of {queues} queue(s) enabled by the guest driver{}",
                    if t.multi_queue() { ", multi_queue" } else { "" }
                ));
            }
        }
        Some(Err(TapError::NotFound)) => a.not_judged.push(format!(
            "{subject}: tap {ifname} not in this network namespace's /sys/class/net"
        )),
        Some(Err(TapError::Other(e))) => a.not_judged.push(format!("{subject}: tap {ifname}: {e}")),
        None => a
            .not_judged
            .push(format!("{subject}: tap {ifname} not read")),
    }
}

pub(super) fn audit_nic_device(
    cl: &QemuCommandLine,
    device: &Opts,
    subject: &str,
    queues: u32,
    target: u32,
    expect: Option<&Expectations>,
    a: &mut InstanceAudit,
) {
    if target > 1 {
        if cl.device_flag(device, "mq") == Some(true) {
            a.ok.push(format!("{subject}: mq=on"));
        } else {
            a.problem(
                QemuTuningKind::NoMq,
                format!(
                    "{subject}: mq={}, expected mq=on for {target} queues (the guest uses only the first without it)",
                    cl.device_prop(device, "mq").unwrap_or("absent")
                ),
            );
        }
        let want = 2 * u64::from(target) + 2;
        match cl.device_number(device, "vectors") {
            Some(v) if v == want => a.ok.push(format!("{subject}: vectors={v}")),
            Some(v) => a.problem(
                QemuTuningKind::WrongVectors,
                format!("{subject}: vectors={v}, expected vectors={want} (2×{target}+2)"),
            ),
            None => match a.machine_version {
                Some(m) if m >= AUTO_NET_VECTORS_SINCE => {
                    let auto = 2 * u64::from(queues) + 2;
                    let text = format!(
                        "{subject}: vectors absent, machine {} computes 2×{queues}+2 = {auto}",
                        a.machine
                    );
                    if auto == want {
                        a.ok.push(text);
                    } else {
                        a.problem(QemuTuningKind::WrongVectors, format!("{text}, expected vectors={want} (2×{target}+2)"));
                    }
                }
                Some(_) => a.problem(
                    QemuTuningKind::WrongVectors,
                    format!(
                        "{subject}: vectors absent (3 on machine {}), expected vectors={want} (2×{target}+2)",
                        a.machine
                    ),
                ),
                None => a.not_judged.push(format!(
                    "{subject}: vectors absent: machine types from 6.0 compute 2×queues+2, older ones use 3, and the version of machine {} is unknown without QMP",
                    a.machine
                )),
            },
        }
    }
    match cl.device_number(device, "rx_queue_size") {
        Some(RX_QUEUE_SIZE) => {
            a.ok.push(format!("{subject}: rx_queue_size={RX_QUEUE_SIZE}"))
        }
        other => a.problem(
            QemuTuningKind::SmallRxQueue,
            format!(
                "{subject}: rx_queue_size={}, expected rx_queue_size={RX_QUEUE_SIZE}",
                other.map_or("absent (256)".to_owned(), |v| v.to_string())
            ),
        ),
    }
    let host_mtu = cl.device_number(device, "host_mtu");
    match (host_mtu, expect) {
        (Some(m), Some(e)) if m == u64::from(e.guest_mtu) => {
            a.ok.push(format!("{subject}: host_mtu={m} (the guest MTU)"))
        }
        (m, Some(e)) => a.problem(
            QemuTuningKind::WrongHostMtu,
            format!(
                "{subject}: host_mtu={}, expected host_mtu={} (the guest MTU for underlay {}{}{}); large segments vanish otherwise",
                m.map_or("absent".to_owned(), |v| v.to_string()),
                e.guest_mtu,
                e.underlay_mtu,
                if e.underlay_family.is_ipv6() { " over IPv6" } else { "" },
                if e.ipsec_enabled { " with IPsec" } else { " without IPsec" }
            ),
        ),
        (None, None) => a.problem(
            QemuTuningKind::WrongHostMtu,
            format!("{subject}: host_mtu absent, expected host_mtu= the overlay guest MTU (the guest falls back to 1500)"),
        ),
        (Some(m), None) => a
            .not_judged
            .push(format!("{subject}: host_mtu={m} against the guest MTU: no config")),
    }
}
