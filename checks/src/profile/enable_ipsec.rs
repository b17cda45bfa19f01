//! The `enable-ipsec` preflight's runbook: the switch itself, the check
//! that no node is left behind (a partial enable black-holed cross-chassis
//! traffic for 5.5 minutes while every health signal stayed green), and the
//! running guests that will drop large packets once the overlay narrows by
//! ESP's 34 bytes: QEMU fixed their `host_mtu` when it started them, so
//! they keep it until they are stopped and started.
//!
//! The guests are read as `qemu.tuning` reads them (the QEMU command lines
//! in `/proc`, through the host seam); [`over_ipsec_mtu`] judges them
//! (pure).

use serde::{Deserialize, Serialize};

use super::{finding, Results};
use crate::ctx::Ctx;
use crate::expect;
use crate::facts::qemu::cmdline::QemuCommandLine;
use crate::finding::Status;
use crate::spinifex;
use crate::targets::peers;

/// One virtio-net NIC of a running guest with a `host_mtu`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestNic {
    pub pid: i32,
    /// `-name guest=…`.
    pub guest: Option<String>,
    /// The tap its netdev names (`ifname=`).
    pub tap: Option<String>,
    pub host_mtu: u64,
}

impl std::fmt::Display for GuestNic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pid {}", self.pid)?;
        if let Some(g) = &self.guest {
            write!(f, " ({g})")?;
        }
        if let Some(t) = &self.tap {
            write!(f, " tap {t}")?;
        }
        write!(f, " host_mtu={}", self.host_mtu)
    }
}

/// Every virtio-net NIC with a `host_mtu` on these command lines (`(pid,
/// argv)`); a command line that does not parse is passed over.
pub fn guest_nics(processes: &[(i32, Vec<String>)]) -> Vec<GuestNic> {
    let mut out = Vec::new();
    for (pid, argv) in processes {
        let Ok(cl) = QemuCommandLine::parse(argv) else {
            continue;
        };
        for device in &cl.devices {
            let driver = device.get("driver").unwrap_or_default();
            if !driver.starts_with("virtio-net") {
                continue;
            }
            let Some(host_mtu) = cl.device_number(device, "host_mtu") else {
                continue;
            };
            let tap = device
                .get("netdev")
                .and_then(|id| cl.netdev(id))
                .and_then(|n| n.get("ifname"))
                .map(str::to_owned);
            out.push(GuestNic {
                pid: *pid,
                guest: cl.name.clone(),
                tap,
                host_mtu,
            });
        }
    }
    out
}

/// The NICs whose `host_mtu` is above `ipsec_mtu`, the guest MTU with
/// IPsec on: they will drop what is larger until stopped and started.
pub fn over_ipsec_mtu(nics: &[GuestNic], ipsec_mtu: u32) -> Vec<GuestNic> {
    nics.iter()
        .filter(|n| n.host_mtu > u64::from(ipsec_mtu))
        .cloned()
        .collect()
}

pub fn runbook(ctx: &Ctx, results: &Results) -> Vec<String> {
    let config = ctx.config_file();
    let underlay = ctx
        .expect
        .as_ref()
        .map_or(expect::DEFAULT_UNDERLAY_MTU, |e| e.underlay_mtu);
    let v6 = peers::underlay_family(ctx).family.is_ipv6();
    let ipsec_mtu = expect::guest_mtu(underlay, true, v6);
    let plain_mtu = expect::guest_mtu(underlay, false, v6);
    let mut steps = Vec::new();
    for id in ["ipsec.cert", "ipsec.daemon"] {
        if let Some(f) = finding(results, id) {
            if matches!(f.status, Status::Fail | Status::Error) {
                steps.push(format!(
                    "STOP: {id}: {} — fix it (its remediation above) on this node and on every node where it fails before anything else: a node that cannot negotiate IKE black-holes cross-chassis traffic once NB_Global ipsec=true",
                    f.summary
                ));
            }
        }
    }
    steps.extend([
        format!("on every node: `{} --for enable-ipsec` must exit 0 (credentials valid and from the same CA, the daemons installed); `{} --cluster --for enable-ipsec` checks them all and compares the CAs", spinifex::doctor_command(), spinifex::doctor_command()),
        format!(
            "on every node, the node that holds the NB database (/run/ovn/ovnnb_db.sock) last: {} and `{}`: the daemon starts openvswitch-ipsec, points OVS at the credentials and sets ipsec_encapsulation=true; on the NB node it also sets NB_Global ipsec=true, which makes every tunnel encrypt",
            spinifex::set_network_key("ipsec_enabled", true, &config),
            spinifex::restart_daemon()
        ),
        format!(
            "at once after the last node: `{} --cluster --check ipsec` must pass on every node (SAs to every peer, flags set, daemons up): a partial enable once black-holed cross-chassis traffic for 5.5 minutes while every health signal stayed green",
            spinifex::doctor_command()
        ),
    ]);
    let processes: Vec<(i32, Vec<String>)> = ctx
        .host()
        .qemu_processes()
        .map(|d| d.found.into_iter().map(|p| (p.pid, p.argv)).collect())
        .unwrap_or_default();
    let over = over_ipsec_mtu(&guest_nics(&processes), ipsec_mtu);
    let family = if v6 { ", IPv6 underlay" } else { "" };
    if over.is_empty() {
        steps.push(format!(
            "no running guest on this node has a host_mtu above {ipsec_mtu}, the guest MTU with IPsec on (underlay {underlay}{family}): none needs a restart for its MTU"
        ));
    } else {
        steps.push(format!(
            "then stop and start these running guests (not a reboot from inside): their host_mtu is above {ipsec_mtu}, the guest MTU with IPsec on (underlay {underlay}{family}), so they drop packets larger than {ipsec_mtu} until then: {}",
            over.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        ));
    }
    steps.push(format!(
        "guests started afterwards get MTU {ipsec_mtu} (was {plain_mtu}) and one queue pair; expect launches to fail for a minute or two while ovn-controller reprograms the tunnels (RunInstances ServerInternal, vpc.add-nat timing out: not a capacity problem)"
    ));
    steps.push(format!(
        "afterwards a plain `{}` verifies the end state: ipsec.flags set, ipsec.xfrm 4 SAs per peer, ipsec.daemon running, DHCP and tap MTU {ipsec_mtu} (mtu.overlay)",
        spinifex::doctor_command()
    ));
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &str) -> Vec<String> {
        words.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn guests_above_the_ipsec_mtu_are_named_with_their_tap() {
        // The command line Spinifex builds (spinifex-facts.md), IPsec off at 1500.
        let old = argv("qemu-system-x86_64 -name guest=i-0a1,debug-threads=on -netdev tap,id=net0,ifname=tapeni-0a1,script=no,downscript=no,vhost=on,queues=2 -device virtio-net-pci,netdev=net0,mac=02:00:00:00:00:01,host_mtu=1442,rx_queue_size=1024,mq=on,vectors=6 -netdev tap,id=mg0,ifname=mgi-0a1 -device virtio-net-pci,netdev=mg0");
        let new = argv("qemu-system-x86_64 -netdev tap,id=net0,ifname=tapeni-0b2 -device virtio-net-pci,netdev=net0,host_mtu=1408");
        let nics = guest_nics(&[
            (10, old),
            (11, new),
            (12, argv("qemu-system-x86_64 -device")),
        ]);
        assert_eq!(nics.len(), 2, "{nics:?}");
        let over = over_ipsec_mtu(&nics, 1408);
        assert_eq!(
            over,
            [GuestNic {
                pid: 10,
                guest: Some("i-0a1".into()),
                tap: Some("tapeni-0a1".into()),
                host_mtu: 1442
            }]
        );
        assert_eq!(
            over[0].to_string(),
            "pid 10 (i-0a1) tap tapeni-0a1 host_mtu=1442"
        );
        // An IPv6 underlay narrows it by 20 more: 1388.
        assert_eq!(over_ipsec_mtu(&nics, 1388).len(), 2);
    }
}
