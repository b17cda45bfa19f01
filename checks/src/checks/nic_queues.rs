//! `nic.queues`: does the NIC use the queue pairs it is offered?
//!
//! QEMU can offer a guest NIC several queue pairs that the guest never
//! negotiates (the tuning page's `ethtool -l enp0s16`, in the guest), and a
//! host NIC can run fewer RSS channels than it has. Either way receive work
//! lands on fewer cores than it could. Queue pairs are counted as combined
//! channels, plus the smaller of rx and tx where a driver reports them
//! apart (veth, some virtio versions).

use serde::Serialize;

use crate::check::Check;
use crate::ctx::Ctx;
use crate::finding::{Finding, SkipReason};
use crate::probe::ethtool::{Channels, Reported, NOT_REPORTED};
use crate::probe::underlay_nics::{self, Selection};

pub struct NicQueues;

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
         channels, or the smaller of rx and tx where a driver reports them apart. \
         Interfaces: --interface IF, else the underlay NICs (ports of br-vpc, else br-lan, \
         else br-wan, else the egress of the routes to --peer addresses), else, inside a \
         guest, the interface of the default route. A VLAN, bond or macvlan is followed \
         down to the devices beneath it (sysfs lower_*), which own the queues.\n\
         \n\
         Verdict: fewer in use than offered warns, with the `ethtool -L` command that uses \
         them all. A driver without channel support is 'not reported by this driver'.\n\
         \n\
         Why: QEMU offers a guest as many queue pairs as Spinifex decided (1 with IPsec \
         on, min(vCPUs, 8) with it off, worth +54% when the sending host's vhost thread \
         is the bottleneck), but only the guest's driver can take them: confirm in the \
         guest with `ethtool -l IF`. On a Spinifex host, the VPC taps are qemu.tuning's \
         business; this check looks at the physical NIC's RSS channels."
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let sel = match underlay_nics::underlay_or_default_route(ctx) {
            Ok(s) => underlay_nics::hardware(s),
            Err(f) => return f,
        };
        match gather(&sel) {
            Ok(facts) => judge(&facts).with("interface_source", &sel.source),
            Err(f) => f,
        }
    }
}

pub fn gather(sel: &Selection) -> Result<Vec<InterfaceChannels>, Finding> {
    let read = underlay_nics::read_each(sel, |e, name| {
        Ok((underlay_nics::driver(e, name), e.channels(name)?))
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

#[derive(Serialize)]
struct Evidence {
    name: String,
    driver: Option<String>,
    current: Option<u32>,
    max: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<&'static str>,
}

/// The `ethtool -L` command that uses every offered queue pair.
pub fn use_all_command(name: &str, c: &Channels) -> String {
    if c.max_combined > 0 {
        format!("ethtool -L {name} combined {}", c.max_combined)
    } else {
        format!("ethtool -L {name} rx {} tx {}", c.max_rx, c.max_tx)
    }
}

pub fn judge(ifaces: &[InterfaceChannels]) -> Finding {
    let mut evidence = Vec::new();
    let mut short: Vec<String> = Vec::new();
    let mut fixes: Vec<String> = Vec::new();
    let mut full: Vec<String> = Vec::new();
    for i in ifaces {
        let c = match &i.channels {
            Reported::Yes(c) if c.max_pairs() > 0 => c,
            _ => {
                evidence.push(Evidence {
                    name: i.name.clone(),
                    driver: i.driver.clone(),
                    current: None,
                    max: None,
                    note: Some(NOT_REPORTED),
                });
                continue;
            }
        };
        let (current, max) = (c.current_pairs(), c.max_pairs());
        if current < max {
            short.push(format!("{} uses {current} of {max} queue pairs", i.name));
            fixes.push(use_all_command(&i.name, c));
        } else {
            full.push(format!("{} {current}/{max}", i.name));
        }
        evidence.push(Evidence {
            name: i.name.clone(),
            driver: i.driver.clone(),
            current: Some(current),
            max: Some(max),
            note: None,
        });
    }
    let finding = if short.is_empty() && full.is_empty() {
        let names: Vec<&str> = ifaces.iter().map(|i| i.name.as_str()).collect();
        Finding::skip(SkipReason::NotApplicable(format!(
            "channels {NOT_REPORTED} ({})",
            names.join(", ")
        )))
    } else if !short.is_empty() {
        Finding::warn(format!(
            "{}: receive work can land on fewer cores than the device offers",
            short.join("; ")
        ))
        .fixes(fixes)
        .fix("in a guest the queue count follows ipsec_enabled (1 pair with IPsec on): if the offered count is intended, run the command in the guest; it lasts until reboot unless the distro's network config sets it")
    } else {
        Finding::pass(format!(
            "every offered queue pair is in use ({})",
            full.join(", ")
        ))
    };
    finding.with("interfaces", evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Status;

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
        let f = judge(&[iface("enp0s16", c)]);
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
        let f = judge(&[iface("va", c)]);
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
        let f = judge(&[iface("enp65s0f0np0", c), none.clone()]);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(f.evidence["interfaces"][1]["note"], NOT_REPORTED);
        assert_eq!(judge(&[none]).status, Status::Skip);
        // A driver answering all zeroes says nothing either.
        assert_eq!(
            judge(&[iface("x", Channels::default())]).status,
            Status::Skip
        );
    }
}
