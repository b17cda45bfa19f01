//! The disk audit: the boot disk's cache policy, iothread and queues, and
//! the data volumes.

use super::{InstanceAudit, QemuTuningKind, AUTO_BLK_QUEUES_SINCE};
use crate::facts::qemu::opts::Opts;
use crate::facts::qemu::QemuCommandLine;

pub(super) fn is_virtio_blk(driver: &str) -> bool {
    driver.starts_with("virtio-blk")
}

/// The boot disk's guest device and backend, as found on the command line.
pub(super) struct BootDisk<'a> {
    /// The virtio-blk device, if the disk has one.
    device: Option<&'a Opts>,
    /// The -drive id or -blockdev node-name.
    backend: String,
}

pub(super) fn block_devices(cl: &QemuCommandLine) -> impl Iterator<Item = &Opts> {
    cl.devices.iter().filter(|d| {
        let drv = d.get("driver").unwrap_or_default();
        is_virtio_blk(drv) || matches!(drv, "scsi-hd" | "ide-hd" | "nvme")
    })
}

pub(super) fn find_boot_disk(cl: &QemuCommandLine) -> Option<BootDisk<'_>> {
    let by_drive = |drive: &str| block_devices(cl).find(|d| d.get("drive") == Some(drive));
    if cl.drive("os").is_some() {
        return Some(BootDisk {
            device: by_drive("os"),
            backend: "os".to_owned(),
        });
    }
    if let Some(dev) = block_devices(cl)
        .filter(|d| cl.device_number(d, "bootindex").is_some())
        .min_by_key(|d| cl.device_number(d, "bootindex"))
    {
        return Some(BootDisk {
            device: Some(dev),
            backend: dev.get("drive").unwrap_or_default().to_owned(),
        });
    }
    cl.drives
        .iter()
        .find(|d| d.get("media") != Some("cdrom") && d.get("if") == Some("virtio"))
        .map(|d| BootDisk {
            device: None,
            backend: d.id().unwrap_or("(no id)").to_owned(),
        })
}

/// Is the cache mode of this backend `none` (O_DIRECT, flushes forwarded)?
/// Returns the measured spelling for the message.
pub(super) fn cache_mode(cl: &QemuCommandLine, backend: &str) -> (bool, String) {
    if let Some(drive) = cl.drive(backend) {
        if let Some(c) = drive.get("cache") {
            return (c == "none", format!("cache={c}"));
        }
        return direct_no_flush(drive).unwrap_or((false, "cache absent (writeback)".to_owned()));
    }
    // A -blockdev node: its own cache.* or that of the node it sits on.
    let mut node = backend.to_owned();
    for _ in 0..8 {
        let Some(b) = cl.blockdev(&node) else { break };
        if let Some(found) = direct_no_flush(b) {
            return found;
        }
        match b.get("file") {
            Some(child) if !child.is_empty() => node = child.to_owned(),
            _ => break,
        }
    }
    (false, "cache.direct absent (writeback)".to_owned())
}

pub(super) fn direct_no_flush(o: &Opts) -> Option<(bool, String)> {
    let direct = o.flag("cache.direct")?;
    let no_flush = o.flag("cache.no-flush").unwrap_or(false);
    Some((
        direct && !no_flush,
        format!(
            "cache.direct={}, cache.no-flush={}",
            on_off(direct),
            on_off(no_flush)
        ),
    ))
}

pub(super) fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

pub(super) fn audit_iothread(
    cl: &QemuCommandLine,
    device: &Opts,
    subject: &str,
    a: &mut InstanceAudit,
) {
    match cl.device_prop(device, "iothread") {
        Some(t) if cl.iothreads().contains(&t) => a.ok.push(format!("{subject}: iothread={t}")),
        Some(t) => a.problem(
            QemuTuningKind::NoIothread,
            format!("{subject}: iothread={t} names no -object iothread, expected an existing iothread"),
        ),
        None => a.problem(
            QemuTuningKind::NoIothread,
            format!(
                "{subject}: no iothread, expected iothread=<its own -object iothread> (block I/O runs in QEMU's main loop: ~38x fewer IOPS measured)"
            ),
        ),
    }
}

/// Audit the boot disk; returns the device it judged, so data volumes skip it.
pub(super) fn audit_boot_disk<'a>(
    cl: &'a QemuCommandLine,
    a: &mut InstanceAudit,
) -> Option<&'a Opts> {
    let Some(boot) = find_boot_disk(cl) else {
        a.not_judged
            .push("boot disk: none found on the command line (no drive id=os, no bootindex, no if=virtio disk)".to_owned());
        return None;
    };
    let subject = format!("boot disk {}", boot.backend);
    let (none, measured) = cache_mode(cl, &boot.backend);
    if none {
        a.ok.push(format!("{subject}: {measured}"));
    } else {
        a.problem(
            QemuTuningKind::WrongCache,
            format!("{subject}: {measured}, expected cache=none (guest flushes forwarded to the NBD server)"),
        );
    }
    let Some(device) = boot.device else {
        a.problem(
            QemuTuningKind::NoIothread,
            format!("{subject}: no -device virtio-blk-pci for it, so no iothread or num-queues can be set; expected -device virtio-blk-pci,drive={},iothread=…,num-queues={}", boot.backend, a.vcpus),
        );
        return None;
    };
    let driver = device.get("driver").unwrap_or("?");
    if !is_virtio_blk(driver) {
        a.problem(
            QemuTuningKind::NotVirtio,
            format!("{subject}: device {driver}, expected virtio-blk-pci"),
        );
        return Some(device);
    }
    audit_iothread(cl, device, &subject, a);
    let vcpus = a.vcpus;
    match cl.device_number(device, "num-queues") {
        Some(n) if n == u64::from(vcpus) => a.ok.push(format!("{subject}: num-queues={n} (vCPUs)")),
        Some(n) => a.problem(
            QemuTuningKind::WrongNumQueues,
            format!("{subject}: num-queues={n}, expected num-queues={vcpus} (vCPUs)"),
        ),
        None if vcpus <= 1 => a.ok.push(format!("{subject}: num-queues absent, 1 = vCPUs")),
        None => match a.machine_version {
            Some(m) if m >= AUTO_BLK_QUEUES_SINCE => a.ok.push(format!(
                "{subject}: num-queues absent, machine {} defaults it to the vCPU count ({vcpus})",
                a.machine
            )),
            Some(_) => a.problem(
                QemuTuningKind::WrongNumQueues,
                format!(
                    "{subject}: num-queues absent (1 on machine {}), expected num-queues={vcpus} (vCPUs)",
                    a.machine
                ),
            ),
            None => a.not_judged.push(format!(
                "{subject}: num-queues absent: machine types from 5.2 default it to the vCPU count, older ones to 1, and the version of machine {} is unknown without QMP",
                a.machine
            )),
        },
    }
    Some(device)
}

pub(super) fn audit_data_volumes(cl: &QemuCommandLine, boot: Option<&Opts>, a: &mut InstanceAudit) {
    for device in cl
        .devices
        .iter()
        .filter(|d| is_virtio_blk(d.get("driver").unwrap_or_default()))
    {
        if boot.is_some_and(|b| std::ptr::eq(b, device)) {
            continue;
        }
        let drive = device.get("drive").unwrap_or_default();
        if cl
            .drive(drive)
            .is_some_and(|d| d.get("media") == Some("cdrom"))
        {
            continue;
        }
        let subject = match device.id() {
            Some(id) => format!("data volume {id} ({drive})"),
            None => format!("data volume {drive}"),
        };
        audit_iothread(cl, device, &subject, a);
    }
}
