//! `nic.rings`: is the receive ring deep enough to absorb a burst?
//!
//! The tuning page measured the guest NIC's RX ring at 256 as a drop source
//! under burst and moved it to 1024 (QEMU's `rx_queue_size=1024`). The same
//! holds for any NIC whose maximum allows 1024: a shallow ring overflows
//! while the softirq that drains it is busy elsewhere.

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::facts::ethtool::{Reported, Rings, NOT_REPORTED};
use crate::finding::{Finding, Status};
use crate::host::HostRef;
use crate::per_interface::{self, Interfaces, Judged};
use crate::targets::underlay_nics::{self, Selection};

pub struct NicRings;

/// The RX ring depth below which bursts drop, where the device allows it.
pub const RX_RING_MIN: u32 = 1024;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterfaceRings {
    pub name: String,
    pub driver: Option<String>,
    pub rings: Reported<Rings>,
}

/// The guest NIC's driver: its ring maximum is the virtqueue size the
/// host's QEMU gave the device (`rx_queue_size`, 256 by default), so a
/// maximum below 1024 is the host's to fix, not a property of hardware.
pub const VIRTIO_NET: &str = "virtio_net";

crate::kinds! {
    /// What `nic.rings` can say, per interface and for the check.
    pub enum NicRingsKind for "nic.rings" {
        /// The receive ring holds a burst: at least 1024, or already at the device's maximum.
        Ok = pass("ok"),
        /// The rx ring is below 1024 though the device allows 1024: a measured drop source under burst.
        ShallowRing = warn("shallow-ring"),
        /// A guest's virtio NIC offers fewer than 1024 rx descriptors: its maximum is the queue size the host's QEMU gave it (`rx_queue_size`), so the fix is on the host.
        VirtioQueueSize = warn("virtio-queue-size"),
    }
}

static DECLARED: Declared = Declared::of::<NicRingsKind, NicRingsEvidence>();

/// Ring sizes per interface, and how the interfaces were chosen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicRingsEvidence {
    pub interfaces: Vec<RingEvidence>,
    /// "--interface", "ports of br-vpc", "routes to peers", "default route".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_source: Option<String>,
}

/// One interface's rings (`ethtool -g`); all null when the driver reports none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RingEvidence {
    pub name: String,
    pub rx: Option<u32>,
    pub rx_max: Option<u32>,
    pub tx: Option<u32>,
    pub tx_max: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Evidence for NicRingsEvidence {}

impl Check for NicRings {
    fn id(&self) -> &'static str {
        "nic.rings"
    }

    fn title(&self) -> &'static str {
        "NIC receive ring holds a burst (at least 1024 where the device allows)"
    }

    fn explain(&self) -> &'static str {
        "Reads ring sizes through the SIOCETHTOOL ioctl (what `ethtool -g IF` shows). \
         Interfaces: as every NIC check (--interface, else the underlay NICs, else the \
         default route's interface, which a note then says; VLANs and bonds followed \
         down to the devices beneath).\n\
         \n\
         Verdict: an rx ring below 1024 where the device's maximum allows 1024 warns, with \
         the `ethtool -G` command. A ring already at the device's maximum passes, except on \
         virtio_net (a guest NIC), whose maximum is the queue size the host's QEMU gave it: \
         below 1024 it warns, naming rx_queue_size. A driver without ring parameters \
         (veth, for one) is 'not reported by this driver'.\n\
         \n\
         Why: the tuning page moved the guest NIC's RX ring from 256 to 1024 because the \
         shallow ring was a drop source under burst (Spinifex now passes \
         rx_queue_size=1024 to QEMU). A ring fills while its softirq is busy; every \
         descriptor more is a packet not dropped."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let sel = match underlay_nics::select(ctx) {
            Ok(s) => underlay_nics::hardware(ctx.host(), s),
            Err(f) => return f,
        };
        match gather(ctx.host(), &sel) {
            Ok(facts) => sel.annotate(judge_from(&facts, Some(&sel.source))),
            Err(f) => f,
        }
    }
}

pub fn gather(host: HostRef<'_>, sel: &Selection) -> Result<Vec<InterfaceRings>, Finding> {
    let read = underlay_nics::read_each(host, sel, |h, name| {
        Ok((underlay_nics::driver(h, name), h.ethtool_rings(name)?))
    })?;
    Ok(read
        .into_iter()
        .map(|(name, (driver, rings))| InterfaceRings {
            name,
            driver,
            rings,
        })
        .collect())
}

pub fn judge(ifaces: &[InterfaceRings]) -> Finding {
    judge_from(ifaces, None)
}

/// The verdict, with `source` saying how the interfaces were chosen.
pub fn judge_from(ifaces: &[InterfaceRings], source: Option<&str>) -> Finding {
    let mut all = Interfaces::new("ring sizes");
    for i in ifaces {
        let r = match &i.rings {
            Reported::Yes(r) if r.rx_max > 0 => r,
            _ => {
                all.not_reported(
                    &i.name,
                    RingEvidence {
                        name: i.name.clone(),
                        rx: None,
                        rx_max: None,
                        tx: None,
                        tx_max: None,
                        note: Some(NOT_REPORTED.to_owned()),
                    },
                );
                continue;
            }
        };
        let judged = if r.rx < RX_RING_MIN && r.rx_max >= RX_RING_MIN {
            Judged::new(
                NicRingsKind::ShallowRing,
                format!("rx ring {} (device allows up to {})", r.rx, r.rx_max),
            )
            .fix(format!("ethtool -G {} rx {RX_RING_MIN}", i.name))
        } else if r.rx < RX_RING_MIN && i.driver.as_deref() == Some(VIRTIO_NET) {
            // Measured on Debian's 6.1 under QEMU 7.2: without
            // rx_queue_size the device offers 256 and nothing in the guest
            // can raise it.
            Judged::new(
                NicRingsKind::VirtioQueueSize,
                format!(
                    "rx ring {} is all its virtio device offers (QEMU's default rx_queue_size; Spinifex starts guests with rx_queue_size={RX_RING_MIN})",
                    r.rx
                ),
            )
            .fix(format!(
                "on the host: stop, then start this instance, so that its QEMU gets rx_queue_size={RX_RING_MIN} (`{} --check qemu.tuning` there names the instance)",
                crate::spinifex::doctor_command()
            ))
        } else if r.rx < RX_RING_MIN {
            Judged::new(NicRingsKind::Ok, format!("rx {} (its maximum)", r.rx))
        } else {
            Judged::new(NicRingsKind::Ok, format!("rx {}", r.rx))
        };
        all.judged(
            &i.name,
            vec![judged],
            RingEvidence {
                name: i.name.clone(),
                rx: Some(r.rx),
                rx_max: Some(r.rx_max),
                tx: Some(r.tx),
                tx_max: Some(r.tx_max),
                note: None,
            },
        );
    }
    let (finding, interfaces) = all.finding(
        |shallow| {
            format!(
                "{}: a ring below {RX_RING_MIN} was a measured drop source under burst",
                per_interface::said(shallow)
            )
        },
        |fine| format!("receive rings hold a burst: {}", fine.join(", ")),
    );
    let finding = if finding.status == Status::Warn {
        finding.fix("then, under load, watch its drop counters stay still: `ethtool -S IF | grep -i -e drop -e discard -e missed`")
    } else {
        finding
    };
    finding.evidence(&NicRingsEvidence {
        interfaces,
        interface_source: source.map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Status;

    /// Every verdict these tests see is also checked against the schema.
    fn judge(ifaces: &[InterfaceRings]) -> Finding {
        crate::schema_check::valid("nic.rings", super::judge(ifaces))
    }

    fn iface(name: &str, rx: u32, rx_max: u32) -> InterfaceRings {
        InterfaceRings {
            name: name.into(),
            driver: Some("mlx5_core".into()),
            rings: Reported::Yes(Rings {
                rx,
                rx_max,
                tx: 256,
                tx_max: 4096,
                ..Rings::default()
            }),
        }
    }

    #[test]
    fn the_seed_256_ring_warns_with_the_fix() {
        // performance-tuning: the guest NIC's RX ring at 256 (virtio_net,
        // maximum 1024 once QEMU has rx_queue_size=1024).
        let f = judge(&[iface("enp0s16", 256, 1024)]);
        crate::snapshot::snapshot!("nic.rings", f);
        assert_eq!(f.status, Status::Warn);
        assert_eq!(f.remediation[0], "ethtool -G enp0s16 rx 1024");
        assert_eq!(f.evidence["interfaces"][0]["rx"], 256);
        assert_eq!(f.evidence["interfaces"][0]["rx_max"], 1024);
        assert_eq!(f.evidence["interfaces"][0]["tx_max"], 4096);
    }

    #[test]
    fn a_virtio_nic_capped_at_256_warns_naming_rx_queue_size() {
        // ethtool -g in the kernel lab (Debian 6.1, QEMU 7.2): a
        // virtio-net-pci device without rx_queue_size offers RX 256 at most.
        let mut nic = iface("eth1", 256, 256);
        nic.driver = Some(VIRTIO_NET.into());
        let f = judge(&[nic]);
        assert_eq!(f.status, Status::Warn);
        assert!(f.summary.contains("rx_queue_size=1024"), "{}", f.summary);
        assert!(f.remediation[0].contains("stop, then start this instance"));
        assert_eq!(f.kind.code("nic.rings"), "nic.rings/virtio-queue-size");
        // At 1024 it passes; resized down in the guest, ethtool fixes it.
        let mut nic = iface("eth0", 1024, 1024);
        nic.driver = Some(VIRTIO_NET.into());
        assert_eq!(judge(&[nic]).status, Status::Pass);
    }

    #[test]
    fn deep_or_maxed_rings_pass_and_veth_is_not_reported() {
        assert_eq!(
            judge(&[iface("enp65s0f0np0", 1024, 8192)]).status,
            Status::Pass
        );
        // A device that cannot go to 1024: nothing to do.
        assert_eq!(judge(&[iface("eth0", 256, 256)]).status, Status::Pass);
        let veth = InterfaceRings {
            name: "va".into(),
            driver: Some("veth".into()),
            rings: Reported::NotReported,
        };
        let f = judge(&[veth]);
        assert_eq!(f.status, Status::Skip);
        assert!(f.summary.contains(NOT_REPORTED), "{}", f.summary);
    }
}
