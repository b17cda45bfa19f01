//! `nic.queues`: does the NIC use the queue pairs it is offered?
//!
//! QEMU can offer a guest NIC several queue pairs that the guest never
//! negotiates (the tuning page's `ethtool -l enp0s16`, in the guest), and a
//! host NIC can run fewer RSS channels than it has. Either way receive work
//! lands on fewer cores than it could. Queue pairs are counted as combined
//! channels, plus the smaller of rx and tx where a driver reports them
//! apart (veth, bnxt_en without shared rings). A device's rx, tx and
//! combined maxima are alternatives (ice reports 16 of each for 16 pairs),
//! and pairs beyond the number of online CPUs add no core: ixgbe offers 63
//! whatever the host has.

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::facts::ethtool::{Channels, Reported, NOT_REPORTED};
use crate::finding::{Finding, Status};
use crate::host::HostRef;
use crate::per_interface::{self, Interfaces, Judged};
use crate::targets::underlay_nics::{self, Selection};

pub struct NicQueues;

crate::kinds! {
    /// What `nic.queues` can say, per interface and for the check.
    pub enum NicQueuesKind for "nic.queues" {
        /// Every queue pair that can add a core is in use (all the device offers, or one per online CPU).
        Ok = pass("ok"),
        /// Fewer queue pairs are in use than the device offers (up to one per online CPU): receive work lands on fewer cores than it could.
        UnusedQueues = warn("unused-queues"),
    }
}

static DECLARED: Declared = Declared::of::<NicQueuesKind, NicQueuesEvidence>();

/// Queue pairs per interface, the CPUs they can spread over, and how the
/// interfaces were chosen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicQueuesEvidence {
    pub interfaces: Vec<QueueEvidence>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub online_cpus: Option<u32>,
    /// "--interface", "ports of br-vpc", "routes to peers", "default route".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_source: Option<String>,
}

/// One interface's queue pairs (`ethtool -l`); null when the driver
/// reports none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueEvidence {
    pub name: String,
    pub driver: Option<String>,
    pub current: Option<u32>,
    pub max: Option<u32>,
    /// The pairs worth using: the maximum, or the online CPUs if fewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usable: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Evidence for NicQueuesEvidence {}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterfaceChannels {
    pub name: String,
    pub driver: Option<String>,
    pub channels: Reported<Channels>,
}

impl Check for NicQueues {
    fn id(&self) -> &'static str {
        "nic.queues"
    }

    fn title(&self) -> &'static str {
        "NIC uses the queue pairs it is offered"
    }

    fn explain(&self) -> &'static str {
        "Reads channel counts through the SIOCETHTOOL ioctl (what `ethtool -l IF` shows): \
         the pre-set maximum and the current number of queue pairs, counting combined \
         channels, or the smaller of rx and tx where a driver reports them apart (the \
         rx, tx and combined maxima are alternatives: ice reports 16 of each for 16 pairs). \
         Interfaces, chosen the same way by all four NIC checks: --interface IF, else the \
         underlay NICs (ports of br-vpc, else br-lan, else br-wan, else the egress of the \
         routes to the peers), else (no config yet, or inside a guest) the interface of \
         the default route, which a note then says. A VLAN, bond or macvlan is \
         followed down to the devices beneath it (sysfs lower_*), which own the queues.\n\
         \n\
         Verdict: fewer in use than offered warns, with the `ethtool -L` command that uses \
         them all; offered pairs beyond the online CPUs are not counted (ixgbe offers 63 on \
         any host), since a pair per CPU already spreads receive work over every core. A \
         driver without channel support is 'not reported by this driver'.\n\
         \n\
         Why: QEMU offers a guest as many queue pairs as Spinifex decided (1 with IPsec \
         on, min(vCPUs, 8) with it off, worth +54% when the sending host's vhost thread \
         is the bottleneck), but only the guest's driver can take them: confirm in the \
         guest with `ethtool -l IF`. On a Spinifex host, the VPC taps are qemu.tuning's \
         business; this check looks at the physical NIC's RSS channels."
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
            Ok(facts) => sel.annotate(judge_from(
                &facts,
                ctx.host().online_cpus(),
                Some(&sel.source),
            )),
            Err(f) => f,
        }
    }
}

/// Each interface's driver and channels. The CPUs online come from
/// [`crate::host::HostRef::online_cpus`] (sysconf(_SC_NPROCESSORS_ONLN),
/// what `nproc --all` counts less the offline ones).
pub fn gather(host: HostRef<'_>, sel: &Selection) -> Result<Vec<InterfaceChannels>, Finding> {
    let read = underlay_nics::read_each(host, sel, |h, name| {
        Ok((underlay_nics::driver(h, name), h.ethtool_channels(name)?))
    })?;
    Ok(read
        .into_iter()
        .map(|(name, (driver, channels))| InterfaceChannels {
            name,
            driver,
            channels,
        })
        .collect())
}

/// The `ethtool -L` command that sets `pairs` queue pairs: combined
/// channels where the driver has them, else separate rx and tx. `ethtool
/// -L` keeps every count it is not given, and drivers refuse combined
/// channels beside separate ones (bnxt_en: EINVAL), so a switch to combined
/// zeroes rx and tx in the same command.
pub fn use_command(name: &str, c: &Channels, pairs: u32) -> String {
    if c.max_combined >= c.max_rx.min(c.max_tx) && c.max_combined > 0 {
        if c.rx > 0 || c.tx > 0 {
            format!("ethtool -L {name} rx 0 tx 0 combined {pairs}")
        } else {
            format!("ethtool -L {name} combined {pairs}")
        }
    } else if c.combined > 0 {
        format!("ethtool -L {name} combined 0 rx {pairs} tx {pairs}")
    } else {
        format!("ethtool -L {name} rx {pairs} tx {pairs}")
    }
}

/// `cpus`: CPUs online on the host (None: not known, every offered pair
/// counts).
pub fn judge(ifaces: &[InterfaceChannels], cpus: Option<u32>) -> Finding {
    judge_from(ifaces, cpus, None)
}

/// The verdict, with `source` saying how the interfaces were chosen.
pub fn judge_from(
    ifaces: &[InterfaceChannels],
    cpus: Option<u32>,
    source: Option<&str>,
) -> Finding {
    let mut all = Interfaces::new("channels");
    for i in ifaces {
        let c = match &i.channels {
            Reported::Yes(c) if c.max_pairs() > 0 => c,
            _ => {
                all.not_reported(
                    &i.name,
                    QueueEvidence {
                        name: i.name.clone(),
                        driver: i.driver.clone(),
                        current: None,
                        max: None,
                        usable: None,
                        note: Some(NOT_REPORTED.to_owned()),
                    },
                );
                continue;
            }
        };
        let (current, max) = (c.current_pairs(), c.max_pairs());
        let usable = cpus.map_or(max, |n| max.min(n));
        let driver = i.driver.as_deref().unwrap_or("unknown driver");
        let cpu_note = match cpus {
            Some(n) if n < max => format!(", {n} CPUs online"),
            _ => String::new(),
        };
        let judged = if current < usable {
            Judged::new(
                NicQueuesKind::UnusedQueues,
                format!("({driver}) uses {current} of {max} queue pairs{cpu_note}"),
            )
            .fix(use_command(&i.name, c, usable))
        } else if current < max {
            Judged::new(
                NicQueuesKind::Ok,
                format!("{current}/{max}, one per online CPU (more would add no core)"),
            )
        } else {
            Judged::new(NicQueuesKind::Ok, format!("{current}/{max}"))
        };
        all.judged(
            &i.name,
            vec![judged],
            QueueEvidence {
                name: i.name.clone(),
                driver: i.driver.clone(),
                current: Some(current),
                max: Some(max),
                usable: Some(usable),
                note: None,
            },
        );
    }
    let (finding, interfaces) = all.finding(
        |short| {
            format!(
                "{}: receive work can land on fewer cores than the device offers",
                per_interface::said(short)
            )
        },
        |full| {
            format!(
                "every queue pair that can add a core is in use ({})",
                full.join("; ")
            )
        },
    );
    let finding = if finding.status == Status::Warn {
        finding.fix("in a guest the queue count follows ipsec_enabled (1 pair with IPsec on): if the offered count is intended, run the command in the guest; it lasts until reboot unless the distro's network config sets it")
    } else {
        finding
    };
    finding.evidence(&NicQueuesEvidence {
        interfaces,
        online_cpus: cpus,
        interface_source: source.map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Status;
    use crate::hw_captures as hw;

    /// Every verdict these tests see is also checked against the schema.
    fn judge(ifaces: &[InterfaceChannels], cpus: Option<u32>) -> Finding {
        crate::schema_check::valid("nic.queues", super::judge(ifaces, cpus))
    }

    fn iface(name: &str, c: Channels) -> InterfaceChannels {
        InterfaceChannels {
            name: name.into(),
            driver: Some("virtio_net".into()),
            channels: Reported::Yes(c),
        }
    }

    #[test]
    fn guest_offered_four_using_one_warns() {
        // The tuning page's guest: QEMU offered 4 queue pairs (IPsec off,
        // t3.xlarge, 4 vCPU); virtio_net reports combined channels.
        let c = Channels {
            max_combined: 4,
            combined: 1,
            ..Channels::default()
        };
        let f = judge(&[iface("enp0s16", c)], Some(4));
        assert_eq!(f.status, Status::Warn);
        assert_eq!(f.remediation[0], "ethtool -L enp0s16 combined 4");
        assert_eq!(f.evidence["interfaces"][0]["current"], 1);
        assert_eq!(f.evidence["interfaces"][0]["max"], 4);
    }

    #[test]
    fn separate_rx_tx_channels_count_as_pairs() {
        // captured on Debian 12, kernel 6.18: veth with 4 queues, reduced
        // with `ethtool -L va rx 1 tx 1`.
        let c = Channels {
            max_rx: 4,
            max_tx: 4,
            rx: 1,
            tx: 1,
            ..Channels::default()
        };
        let f = judge(&[iface("va", c)], None);
        assert_eq!(f.status, Status::Warn);
        assert_eq!(f.remediation[0], "ethtool -L va rx 4 tx 4");
    }

    #[test]
    fn all_in_use_passes_and_unsupported_is_noted() {
        let c = Channels {
            max_combined: 63,
            combined: 63,
            ..Channels::default()
        };
        let none = InterfaceChannels {
            name: "eth9".into(),
            driver: None,
            channels: Reported::NotReported,
        };
        let f = judge(&[iface("enp65s0f0np0", c), none.clone()], Some(128));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(f.evidence["interfaces"][1]["note"], NOT_REPORTED);
        assert_eq!(judge(&[none], None).status, Status::Skip);
        // A driver answering all zeroes says nothing either.
        assert_eq!(
            judge(&[iface("x", Channels::default())], None).status,
            Status::Skip
        );
    }

    fn captured(driver: &str, name: &str, file: &str) -> InterfaceChannels {
        InterfaceChannels {
            name: name.into(),
            driver: Some(driver.into()),
            channels: Reported::Yes(hw::channels(&hw::load(driver, file))),
        }
    }

    #[test]
    fn ice_e810_counts_16_pairs_not_32() {
        // E810-XXV on 6.1, 16 cores: rx 16, tx 16, combined 16 maxima,
        // 4 combined in use. Adding the maxima said "4 of 32".
        let i = captured("ice", "ice0", "xdp-newbies-2022-12.ethtool-l.txt");
        let f = judge(&[i], Some(16));
        assert_eq!(f.status, Status::Warn, "{}", f.summary);
        assert!(
            f.summary
                .starts_with("ice0 (ice) uses 4 of 16 queue pairs:"),
            "{}",
            f.summary
        );
        assert_eq!(f.remediation[0], "ethtool -L ice0 combined 16");
        assert_eq!(f.kind.code("nic.queues"), "nic.queues/unused-queues");
        assert_eq!(f.findings[0].summary, "(ice) uses 4 of 16 queue pairs");
        assert_eq!(f.evidence["interfaces"][0]["max"], 16);
        assert_eq!(f.evidence["online_cpus"], 16);
    }

    #[test]
    fn ena_before_and_after_ethtool_l_combined_1() {
        // ena 2.2.3: both queue pairs in use as the instance came up…
        let before = captured("ena", "eth0", "amzn-drivers-issue123-before.ethtool-l.txt");
        let f = judge(&[before], None);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert!(f.summary.contains("eth0 2/2"), "{}", f.summary);
        // …and one of two after `ethtool -L eth0 combined 1`.
        let after = captured("ena", "eth0", "amzn-drivers-issue123-after.ethtool-l.txt");
        let f = judge(&[after], None);
        assert_eq!(f.status, Status::Warn, "{}", f.summary);
        assert!(
            f.summary.contains("eth0 (ena) uses 1 of 2 queue pairs"),
            "{}",
            f.summary
        );
        assert_eq!(f.remediation[0], "ethtool -L eth0 combined 2");
    }

    #[test]
    fn ixgbe_one_pair_per_cpu_passes_though_63_are_offered() {
        // The 82599ES host of testdata/hw/ixgbe: 32 CPUs and 32
        // eth2-TxRx-N vectors (one per combined channel). ixgbe offers 63
        // combined channels with flow director whatever the CPU count
        // (ixgbe_max_channels); the maximum is the driver's, the rest the
        // capture's.
        let irq = hw::interrupts(&hw::load("ixgbe", "netutils-82599es.proc-interrupts.txt"));
        let in_use = irq.named(|n| n.starts_with("eth2-TxRx-")).len() as u32;
        let cpus = irq.cpus as u32;
        assert_eq!((in_use, cpus), (32, 32));
        let c = Channels {
            max_combined: 63,
            max_other: 1,
            combined: in_use,
            other: 1,
            ..Channels::default()
        };
        let i = InterfaceChannels {
            name: "eth2".into(),
            driver: Some("ixgbe".into()),
            channels: Reported::Yes(c),
        };
        let f = judge(std::slice::from_ref(&i), Some(cpus));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert!(
            f.summary.contains("eth2 32/63, one per online CPU"),
            "{}",
            f.summary
        );
        assert_eq!(f.evidence["interfaces"][0]["usable"], 32);
        // With 16 in use the fix asks for 32, not 63.
        let mut fewer = i;
        if let Reported::Yes(c) = &mut fewer.channels {
            c.combined = 16;
        }
        let f = judge(&[fewer], Some(cpus));
        assert_eq!(f.status, Status::Warn);
        assert!(
            f.summary
                .contains("uses 16 of 63 queue pairs, 32 CPUs online"),
            "{}",
            f.summary
        );
        assert_eq!(f.remediation[0], "ethtool -L eth2 combined 32");
    }

    #[test]
    fn bnxt_separate_rings_switch_to_combined_in_one_command() {
        // bnxt_get_channels reports the shared-ring maximum as combined and
        // the separate-ring maxima as rx/tx; without shared rings the
        // current counts are rx/tx. `ethtool -L IF combined N` alone keeps
        // rx and tx, which bnxt_set_channels refuses beside combined.
        let c = Channels {
            max_rx: 9,
            max_tx: 9,
            max_combined: 18,
            rx: 4,
            tx: 4,
            ..Channels::default()
        };
        assert_eq!(c.max_pairs(), 18);
        assert_eq!(
            use_command("eno1np0", &c, 18),
            "ethtool -L eno1np0 rx 0 tx 0 combined 18"
        );
        let veth = Channels {
            max_rx: 4,
            max_tx: 4,
            combined: 0,
            rx: 1,
            tx: 1,
            ..Channels::default()
        };
        assert_eq!(use_command("va", &veth, 4), "ethtool -L va rx 4 tx 4");
    }
}
