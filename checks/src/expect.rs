//! What the config implies about the host, derived in one place so that
//! every check agrees on it. The arithmetic is Spinifex's own
//! (spinifex-facts.md, "MTU arithmetic" and "IPsec").

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::config::Config;

/// Outer IPv4 20 + UDP 8 + geneve 8 + TLV 8 + inner Ethernet 14.
pub const GENEVE_OVERHEAD: u32 = 58;
/// ESP transport mode with rfc4106(gcm(aes)) 128.
pub const ESP_OVERHEAD: u32 = 34;
/// An IPv6 outer header is 20 bytes larger than IPv4's.
pub const IPV6_EXTRA: u32 = 20;
/// Below this the daemon treats `underlay_mtu` as unset (1500).
pub const UNDERLAY_MTU_FLOOR: u32 = 668;
pub const DEFAULT_UNDERLAY_MTU: u32 = 1500;
/// QEMU is given at most this many queue pairs.
pub const MAX_NIC_QUEUES: u32 = 8;

/// The address family of the overlay's outer header: the family of this
/// node's geneve endpoint (`ovn-encap-ip`). An IPv6 outer header costs
/// [`IPV6_EXTRA`] bytes more than IPv4's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    #[default]
    Ipv4,
    Ipv6,
}

impl Family {
    pub fn of(addr: IpAddr) -> Family {
        if addr.is_ipv4() {
            Family::Ipv4
        } else {
            Family::Ipv6
        }
    }

    pub fn is_ipv6(self) -> bool {
        self == Family::Ipv6
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Family::Ipv4 => "IPv4",
            Family::Ipv6 => "IPv6",
        }
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expectations {
    /// `[network] ipsec_enabled`. The guest MTU and multiqueue follow it.
    pub ipsec_enabled: bool,
    /// Enabled and more than one node: the daemon requests encryption.
    pub ipsec_wanted: bool,
    /// Number of `[nodes.*]` tables.
    pub node_count: usize,
    /// `underlay_mtu` after the 668 floor.
    pub underlay_mtu: u32,
    /// The family of the overlay endpoints the guest MTU was derived for:
    /// IPv4 from the config alone; see [`Expectations::for_underlay`].
    pub underlay_family: Family,
    /// The MTU guests are given on an underlay of `underlay_family`.
    pub guest_mtu: u32,
    /// ESP SAs this node holds at least when IPsec is up with every peer
    /// (2×(N−1)), else exactly 0.
    pub esp_sa_min: usize,
}

impl Expectations {
    pub fn from_config(config: &Config) -> Expectations {
        let node_count = config.nodes.len();
        let ipsec_enabled = config.network.ipsec_enabled;
        let ipsec_wanted = ipsec_wanted(ipsec_enabled, node_count);
        let underlay_mtu = effective_underlay_mtu(config.network.underlay_mtu);
        Expectations {
            ipsec_enabled,
            ipsec_wanted,
            node_count,
            underlay_mtu,
            underlay_family: Family::Ipv4,
            guest_mtu: guest_mtu(underlay_mtu, ipsec_enabled, false),
            esp_sa_min: if ipsec_wanted {
                expected_sa_count(node_count)
            } else {
                0
            },
        }
    }

    /// The same expectations on an underlay of `family` (the family of this
    /// node's `ovn-encap-ip`): the guest MTU is 20 bytes smaller on IPv6.
    pub fn for_underlay(&self, family: Family) -> Expectations {
        Expectations {
            underlay_family: family,
            guest_mtu: guest_mtu(self.underlay_mtu, self.ipsec_enabled, family.is_ipv6()),
            ..self.clone()
        }
    }

    /// The guest MTU with IPsec on or off, on this underlay.
    pub fn guest_mtu_with(&self, ipsec: bool) -> u32 {
        guest_mtu(self.underlay_mtu, ipsec, self.underlay_family.is_ipv6())
    }

    /// Queue pairs a guest NIC with `vcpus` should have.
    pub fn nic_queues(&self, vcpus: u32) -> u32 {
        nic_queues(self.ipsec_enabled, vcpus)
    }
}

pub fn ipsec_wanted(enabled: bool, node_count: usize) -> bool {
    enabled && node_count > 1
}

pub fn effective_underlay_mtu(configured: u32) -> u32 {
    if configured < UNDERLAY_MTU_FLOOR {
        DEFAULT_UNDERLAY_MTU
    } else {
        configured
    }
}

/// `underlay − 58 − (ipsec ? 34 : 0)`, 20 more on an IPv6 underlay.
pub fn guest_mtu(underlay_mtu: u32, ipsec: bool, ipv6_underlay: bool) -> u32 {
    let underlay = effective_underlay_mtu(underlay_mtu);
    let mut overhead = GENEVE_OVERHEAD;
    if ipsec {
        overhead += ESP_OVERHEAD;
    }
    if ipv6_underlay {
        overhead += IPV6_EXTRA;
    }
    underlay - overhead
}

/// The kernel's own neighbour table thresholds (`gc_thresh1/2/3`), what a
/// table with fewer needs is never lowered below.
pub const DEFAULT_NEIGHBOUR_THRESHOLDS: [u32; 3] = [128, 512, 1024];

/// `gc_thresh1`, `gc_thresh2` and `gc_thresh3` for a neighbour table that
/// must hold `needed` entries: all three above it, so that the garbage
/// collector leaves them alone (`gc_thresh1`, the next power of two above
/// the need) and twice and four times that for the gateways, the guests'
/// neighbours and a node that joins (the kernel's defaults keep 1:4:8);
/// never below the kernel's defaults nor `current`.
pub fn neighbour_thresholds(needed: u64, current: [u32; 3]) -> [u32; 3] {
    let t1 = u32::try_from(needed.saturating_add(1).next_power_of_two()).unwrap_or(u32::MAX);
    let want = [t1, t1.saturating_mul(2), t1.saturating_mul(4)];
    let mut out = [0; 3];
    for i in 0..3 {
        out[i] = want[i].max(DEFAULT_NEIGHBOUR_THRESHOLDS[i]).max(current[i]);
    }
    out
}

/// The floor of ESP SAs a node holds when IPsec is up with every peer: one
/// per peer per direction, 2×(N−1). ovs-monitor-ipsec's layout holds
/// twice that ([`ovs_sa_layout`]).
pub fn expected_sa_count(node_count: usize) -> usize {
    2 * node_count.saturating_sub(1)
}

/// The ESP SAs a node holds with every peer's tunnels up, as
/// ovs-monitor-ipsec lays them out: per peer two strongSwan connections
/// (`-in-` with this node's UDP 6081, `-out-` with the peer's), each one
/// CHILD_SA of two SAs, so 4×(N−1). Rekeying adds more for a while.
pub fn ovs_sa_layout(node_count: usize) -> usize {
    4 * node_count.saturating_sub(1)
}

/// 1 queue pair with IPsec (multiqueue reorders ESP and costs 12%),
/// min(vCPUs, 8) without (worth +54%).
pub fn nic_queues(ipsec_enabled: bool, vcpus: u32) -> u32 {
    if ipsec_enabled {
        1
    } else {
        vcpus.clamp(1, MAX_NIC_QUEUES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn guest_mtu_matches_the_tuning_page() {
        // performance-tuning §4: 1408/1442 at 1500, 8908/8942 at 9000.
        assert_eq!(guest_mtu(1500, true, false), 1408);
        assert_eq!(guest_mtu(1500, false, false), 1442);
        assert_eq!(guest_mtu(9000, true, false), 8908);
        assert_eq!(guest_mtu(9000, false, false), 8942);
        assert_eq!(guest_mtu(1500, false, true), 1422);
    }

    #[test]
    fn underlay_below_the_floor_is_1500() {
        assert_eq!(effective_underlay_mtu(667), 1500);
        assert_eq!(effective_underlay_mtu(668), 668);
        assert_eq!(guest_mtu(500, false, false), 1442);
    }

    #[test]
    fn sa_count_and_queues() {
        assert_eq!(expected_sa_count(4), 6);
        assert_eq!(expected_sa_count(1), 0);
        assert_eq!(ovs_sa_layout(3), 8);
        assert_eq!(ovs_sa_layout(1), 0);
        assert_eq!(nic_queues(true, 4), 1);
        assert_eq!(nic_queues(false, 4), 4);
        assert_eq!(nic_queues(false, 32), 8);
        assert_eq!(nic_queues(false, 0), 1);
    }

    #[test]
    fn ipsec_is_wanted_only_on_a_cluster() {
        let one = crate::config::parse("[nodes.a]\n", Path::new("x")).unwrap();
        let e = Expectations::from_config(&one);
        assert!(e.ipsec_enabled && !e.ipsec_wanted);
        assert_eq!(e.esp_sa_min, 0);
        let four = crate::config::parse(
            "[network]\nunderlay_mtu = 9000\n[nodes.a]\n[nodes.b]\n[nodes.c]\n[nodes.d]\n",
            Path::new("x"),
        )
        .unwrap();
        let e = Expectations::from_config(&four);
        assert!(e.ipsec_wanted);
        assert_eq!(e.esp_sa_min, 6);
        assert_eq!(e.guest_mtu, 8908);
        assert_eq!(e.nic_queues(4), 1);
        assert_eq!(e.underlay_family, Family::Ipv4);
    }

    #[test]
    fn an_ipv6_underlay_costs_20_bytes_more() {
        let c = crate::config::parse(
            "[network]\nipsec_enabled = false\n[nodes.a]\n[nodes.b]\n",
            Path::new("x"),
        )
        .unwrap();
        let e = Expectations::from_config(&c);
        assert_eq!(e.guest_mtu, 1442);
        let v6 = e.for_underlay(Family::of("fd00::1".parse().unwrap()));
        assert_eq!(v6.underlay_family, Family::Ipv6);
        assert_eq!(v6.guest_mtu, 1422);
        assert_eq!(v6.guest_mtu_with(true), 1388);
        assert_eq!(v6.for_underlay(Family::Ipv4), e);
        assert_eq!(serde_json::to_value(Family::Ipv6).unwrap(), "ipv6");
    }
}
