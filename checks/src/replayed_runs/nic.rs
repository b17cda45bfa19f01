//! The NIC checks on real hardware this machine will never have: each
//! driver's captures in `checks/testdata/hw/` (ethtool -i/-k/-l/-g/-S from
//! bug reports and mailing lists; provenance in each file and the README
//! there) answered through the seam, as a bundle recorded on that host
//! would answer them, and each check's real `run()` judging them.

use super::{link, lo, Facts};
use crate::checks::nic_offloads::NicOffloads;
use crate::checks::nic_queues::NicQueues;
use crate::checks::nic_rings::NicRings;
use crate::checks::nic_tso::NicTso;
use crate::facts::ethtool::{DrvInfo, Reported};
use crate::finding::{Finding, Status};
use crate::host::{EthtoolGet, Fact, Request};
use crate::hw_captures as hw;
use crate::snapshot::snapshot;

/// One interface of a captured host: what its driver's files answer.
struct Nic {
    driver: &'static str,
    name: &'static str,
    /// `ethtool -i`; where none was published, only the driver's name
    /// (which is all the checks read of it).
    drvinfo: Option<&'static str>,
}

impl Nic {
    fn new(driver: &'static str, name: &'static str) -> Nic {
        Nic {
            driver,
            name,
            drvinfo: None,
        }
    }

    fn drvinfo(mut self, file: &'static str) -> Nic {
        self.drvinfo = Some(file);
        self
    }

    fn ethtool(&self, ioctl: EthtoolGet) -> Request {
        Request::Ethtool {
            ioctl,
            interface: self.name.into(),
        }
    }

    /// `--interface NAME`, present, a plain device (no lower devices),
    /// with its driver info.
    fn facts(&self) -> Facts {
        let dev = format!("/sys/class/net/{}", self.name);
        let info = match self.drvinfo {
            Some(file) => {
                let d = hw::drvinfo(&hw::load(self.driver, file));
                assert_eq!(d.driver, self.driver, "{file}");
                d
            }
            None => DrvInfo {
                driver: self.driver.into(),
                version: String::new(),
                fw_version: String::new(),
                bus_info: String::new(),
                n_stats: 0,
            },
        };
        Facts::new()
            .opts(|o| o.interfaces = vec![self.name.into()])
            .links(&[lo(), link(2, self.name, 1500)])
            .dir(&dev, &["address", "device", "mtu", "queues", "statistics"])
            .ok(
                self.ethtool(EthtoolGet::Drvinfo),
                Fact::Drvinfo(Reported::Yes(info)),
            )
    }

    fn features(&self, file: &str) -> Finding {
        let features = hw::features(&hw::load(self.driver, file));
        self.facts()
            .ok(
                self.ethtool(EthtoolGet::Features),
                Fact::Features(Reported::Yes(features)),
            )
            .run(&NicOffloads)
    }

    fn channels(&self, file: &str, cpus: u64) -> Finding {
        let channels = hw::channels(&hw::load(self.driver, file));
        self.facts()
            .ok(
                self.ethtool(EthtoolGet::Channels),
                Fact::Channels(Reported::Yes(channels)),
            )
            .ok(Request::OnlineCpus, Fact::Count(cpus))
            .run(&NicQueues)
    }

    fn rings(&self, file: &str) -> Finding {
        let rings = hw::rings(&hw::load(self.driver, file));
        self.facts()
            .ok(
                self.ethtool(EthtoolGet::Rings),
                Fact::Rings(Reported::Yes(rings)),
            )
            .run(&NicRings)
    }

    /// `ethtool -S` as one sample window: every counter zero at its start
    /// (the driver just loaded), the capture at its end, one second later;
    /// the kernel's tx_packets and tx_bytes (sysfs) are `packets` and
    /// `bytes`. The rate is an artefact of that window; the ratio is the
    /// capture's.
    fn tso(&self, file: &str, packets: u64, bytes: u64) -> Finding {
        let stats = hw::stats(&hw::load(self.driver, file));
        let zero: Vec<(String, u64)> = stats.iter().map(|(n, _)| (n.clone(), 0)).collect();
        let sysfs = |attr: &str| format!("/sys/class/net/{}/statistics/{attr}", self.name);
        self.facts()
            .ok(
                self.ethtool(EthtoolGet::Stats),
                Fact::Stats(Reported::Yes(zero)),
            )
            .ok(
                self.ethtool(EthtoolGet::Stats),
                Fact::Stats(Reported::Yes(stats)),
            )
            .file(&sysfs("tx_packets"), "0\n")
            .file(&sysfs("tx_packets"), &format!("{packets}\n"))
            .file(&sysfs("tx_bytes"), "0\n")
            .file(&sysfs("tx_bytes"), &format!("{bytes}\n"))
            .window(0, 1_000)
            .run(&NicTso)
    }
}

#[test]
fn offloads_of_ixgbe_mlx5_and_ena() {
    // ixgbe 5.1.0-k on an 82599ES: tunnel segmentation on through
    // tx-gso-partial.
    let f = Nic::new("ixgbe", "em1")
        .drvinfo("netutils-82599es.ethtool-i.txt")
        .features("netdev-2020-macsec.ethtool-k.txt");
    snapshot!("nic.offloads", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert_eq!(f.evidence["interfaces"][0]["driver"], "ixgbe");
    assert_eq!(f.evidence["interface_source"], "--interface");
    // mlx5_core: the published excerpt has the tunnel features on.
    let f = Nic::new("mlx5_core", "enp2s0f0np0")
        .drvinfo("ethq-issue8.ethtool-i.txt")
        .features("stable-6.12-bond-encap.ethtool-k.txt");
    snapshot!("nic.offloads", f);
    assert_ne!(f.status, Status::Fail, "{}", f.summary);
    assert_eq!(
        f.evidence["interfaces"][0]["features"]["tx-udp_tnl-segmentation"],
        "on"
    );
    // ENA on 6.8.0-1044-aws: TSO fixed off; no `ethtool -K` can help.
    let f = Nic::new("ena", "ens1")
        .drvinfo("amzn-drivers-pr360.ethtool-i.txt")
        .features("amzn-drivers-pr360.ethtool-k.txt");
    snapshot!("nic.offloads", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    assert!(!f
        .remediation
        .iter()
        .any(|r| r.starts_with("ethtool -K ens1")));
}

#[test]
fn queues_of_ice_and_ena() {
    // E810-XXV on 6.1, 16 cores: 4 of 16 pairs in use.
    let f = Nic::new("ice", "ice0")
        .drvinfo("xdp-newbies-2022-12.ethtool-i.txt")
        .channels("xdp-newbies-2022-12.ethtool-l.txt", 16);
    snapshot!("nic.queues", f);
    assert_eq!(f.status, Status::Warn, "{}", f.summary);
    assert_eq!(f.remediation[0], "ethtool -L ice0 combined 16");
    assert_eq!(f.evidence["online_cpus"], 16);
    // ena 2.2.3 before and after `ethtool -L eth0 combined 1`, on a
    // 2-vCPU instance (its `ethtool -i` was not published).
    let ena = Nic::new("ena", "eth0");
    let f = ena.channels("amzn-drivers-issue123-before.ethtool-l.txt", 2);
    snapshot!("nic.queues", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    let f = ena.channels("amzn-drivers-issue123-after.ethtool-l.txt", 2);
    snapshot!("nic.queues", f);
    assert_eq!(f.status, Status::Warn, "{}", f.summary);
    assert_eq!(f.remediation[0], "ethtool -L eth0 combined 2");
}

#[test]
fn rings_of_ice_i40e_ixgbe_and_virtio_net() {
    // Hardware rings at 4096 and 2048: deep enough.
    for (nic, file) in [
        (
            Nic::new("ice", "ice0").drvinfo("xdp-newbies-2022-12.ethtool-i.txt"),
            "xdp-newbies-2022-12.ethtool-g.txt",
        ),
        (
            Nic::new("i40e", "eth0").drvinfo("netutils-x710.ethtool-i.txt"),
            "netutils-x710.ethtool-g.txt",
        ),
        (
            Nic::new("ixgbe", "eth2").drvinfo("netutils-82599es.ethtool-i.txt"),
            "netutils-82599es.ethtool-g.txt",
        ),
    ] {
        let f = nic.rings(file);
        snapshot!("nic.rings", f, format!("rings_of_{}", nic.driver));
        assert_eq!(f.status, Status::Pass, "{}: {}", nic.driver, f.summary);
    }
    // A virtio_net guest NIC whose ring QEMU capped at 256: the warning
    // names rx_queue_size, not `ethtool -G`.
    let f = Nic::new("virtio_net", "eth0")
        .drvinfo("netutils-vscale-vm.ethtool-i.txt")
        .rings("netutils-vscale-vm.ethtool-g.txt");
    snapshot!("nic.rings", f);
    assert_eq!(f.status, Status::Warn, "{}", f.summary);
}

#[test]
fn tso_of_mlx5_and_sfc_counts_descriptors() {
    // mlx5_core, Ubuntu 18.04 (4.15): 896,117,891 packets in 56,041,559
    // TSO descriptors: 16.0 per descriptor.
    let stats = hw::stats(&hw::load("mlx5_core", "ethq-issue8.ethtool-S.txt"));
    let f = Nic::new("mlx5_core", "enp65s0f0np0")
        .drvinfo("ethq-issue8.ethtool-i.txt")
        .tso(
            "ethq-issue8.ethtool-S.txt",
            hw::stat(&stats, "tx_packets"),
            hw::stat(&stats, "tx_bytes"),
        );
    snapshot!("nic.tso", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert_eq!(
        f.evidence["interfaces"][0]["wire_packets_per_descriptor"],
        16.0
    );
    assert_eq!(f.evidence["interfaces"][0]["tso_descriptors"], 56_041_559);
    // sfc counts its descriptors as tx_tso_bursts.
    let stats = hw::stats(&hw::load("sfc", "ethq-tests.ethtool-S.txt"));
    let f = Nic::new("sfc", "eth0").tso(
        "ethq-tests.ethtool-S.txt",
        hw::stat(&stats, "port_tx_packets"),
        hw::stat(&stats, "port_tx_bytes"),
    );
    snapshot!("nic.tso", f);
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert_eq!(f.evidence["interfaces"][0]["tso_descriptors"], 82);
}

#[test]
fn tso_of_drivers_without_descriptor_counters_names_what_they_count() {
    for (driver, file, queue0, named) in hw::WITHOUT_TSO_COUNTERS {
        let stats = hw::stats(&hw::load(driver, file));
        let packets = hw::stat(&stats, queue0);
        assert!(packets > 0, "{driver}: {queue0} is in the capture");
        let f = Nic::new(driver, "eth0").tso(file, packets, packets * 1514);
        snapshot!(
            "nic.tso",
            f,
            format!(
                "tso_without_counters_of_{driver}_{}",
                file.trim_end_matches(".ethtool-S.txt")
            )
        );
        assert_eq!(f.status, Status::Skip, "{driver}: {}", f.summary);
        // The capture's own counter name, from the table beside it.
        assert!(f.summary.contains(named), "{driver}: {}", f.summary);
    }
    // e1000e counts TSO (tx_tcp_seg_good), but a desktop's 114-byte
    // average frame is no bulk traffic.
    let stats = hw::stats(&hw::load("e1000e", "ethq-tests.ethtool-S.txt"));
    let f = Nic::new("e1000e", "eth0").tso(
        "ethq-tests.ethtool-S.txt",
        hw::stat(&stats, "tx_packets"),
        hw::stat(&stats, "tx_bytes"),
    );
    snapshot!("nic.tso", f);
    assert_eq!(f.status, Status::Skip, "{}", f.summary);
}
