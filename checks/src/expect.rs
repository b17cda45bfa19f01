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

/// The headers of a geneve packet as OVN sends it, apart from the outer IP
/// header: UDP 8 (RFC 768), the Geneve base header 8 (RFC 8926 §3.4) and
/// the inner Ethernet header 14 that carries the guest's packet.
pub const UDP_HEADER: u32 = 8;
pub const GENEVE_BASE_HEADER: u32 = 8;
pub const INNER_ETHERNET: u32 = 14;
/// The outer IP header: IPv4 20 (RFC 791, no options), IPv6 40 (RFC 8200).
pub const IPV4_HEADER: u32 = 20;
pub const IPV6_HEADER: u32 = 40;
/// OVN's one Geneve option (controller/physical.h: class 0x0102, type 0x80,
/// 4 bytes of data carrying the logical ingress and egress ports): its
/// 4-byte option header and the 4 bytes (RFC 8926 §3.5).
pub const OVN_GENEVE_OPTIONS: u32 = 8;

impl Family {
    /// The IP header of this family, with no options or extension headers.
    pub fn ip_header(self) -> u32 {
        match self {
            Family::Ipv4 => IPV4_HEADER,
            Family::Ipv6 => IPV6_HEADER,
        }
    }
}

/// What geneve adds to a guest packet (an IP packet, the size an MTU
/// counts) on an underlay of `family`, with `options` bytes of Geneve
/// options: 58 on IPv4 and 78 on IPv6 with OVN's one option.
pub fn geneve_overhead(family: Family, options: u32) -> u32 {
    family.ip_header() + UDP_HEADER + GENEVE_BASE_HEADER + options + INNER_ETHERNET
}

/// The ESP header: SPI 4 and sequence number 4 (RFC 4303 §2). With
/// extended sequence numbers the high 32 bits are never sent (§2.2.1).
pub const ESP_HEADER: u32 = 8;
/// The ESP trailer's pad length and next header fields (RFC 4303 §2.4).
pub const ESP_TRAILER: u32 = 2;

/// How ESP lays out a packet with one SA, as far as its size goes: the IV,
/// what the padded payload must be a multiple of, the ICV, and UDP
/// encapsulation. Built from the SA actually installed
/// ([`EspFormat::of`]), never assumed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EspFormat {
    /// Bytes of IV sent in each packet.
    pub iv: u32,
    /// Payload + padding + the trailer's 2 bytes are a multiple of this:
    /// the cipher's block size, and at least 4 (RFC 4303 §2.4).
    pub align: u32,
    /// Integrity check value bytes.
    pub icv: u32,
    /// NAT traversal: ESP inside UDP, 8 bytes more (RFC 3948 §2.1).
    pub udp_encap: bool,
    /// Tunnel mode wraps the packet in another IP header; OVS's IPsec is
    /// transport mode (none).
    pub tunnel_header: u32,
}

impl EspFormat {
    /// The layout of an SA with cipher `algorithm` (`XFRMA_ALG_AEAD`, else
    /// `XFRMA_ALG_CRYPT`), an ICV of `icv_bits` (the AEAD's `icv_len`, or
    /// the integrity algorithm's truncation), UDP encapsulation, and `mode`
    /// (0 transport, 1 tunnel) on an underlay of `family`.
    ///
    /// - `rfc4106(gcm(aes))`: IV 8 (RFC 4106 §3.1), no block to fill
    ///   (align 4), ICV 8, 12 or 16 (§3.2; strongSwan installs 16).
    /// - `rfc4309(ccm(aes))`: IV 8, align 4 (RFC 4309 §3).
    /// - `rfc4543(gcm(aes))` (GMAC): IV 8, align 4 (RFC 4543 §3).
    /// - `rfc7539esp(chacha20,poly1305)`: IV 8, align 4 (RFC 7634 §2).
    /// - `rfc3686(ctr(aes))`: IV 8, align 4 (RFC 3686 §3).
    /// - `cbc(aes)`: IV 16, block 16 (RFC 3602 §2); `cbc(des3_ede)`: IV 8,
    ///   block 8 (RFC 2451); both with the integrity algorithm's ICV.
    /// - `ecb(cipher_null)`: no IV, align 4 (RFC 2410).
    pub fn of(
        algorithm: &str,
        icv_bits: Option<u32>,
        udp_encap: bool,
        mode: u8,
        family: Family,
    ) -> Result<EspFormat, String> {
        let (iv, align) = match algorithm {
            "rfc4106(gcm(aes))"
            | "rfc4309(ccm(aes))"
            | "rfc4543(gcm(aes))"
            | "rfc7539esp(chacha20,poly1305)"
            | "rfc3686(ctr(aes))" => (8, 4),
            "cbc(aes)" => (16, 16),
            "cbc(des3_ede)" => (8, 8),
            "ecb(cipher_null)" => (0, 4),
            other => {
                return Err(format!(
                    "the ESP layout of {other} is not known to the doctor"
                ))
            }
        };
        let icv = match icv_bits {
            Some(bits) if bits % 8 == 0 && bits <= 512 => bits / 8,
            Some(bits) => return Err(format!("an ICV of {bits} bits is not whole bytes")),
            None => return Err(format!("the SA's ICV length ({algorithm}) was not read")),
        };
        Ok(EspFormat {
            iv,
            align,
            icv,
            udp_encap,
            tunnel_header: if mode == 1 { family.ip_header() } else { 0 },
        })
    }

    /// The bytes ESP adds to a payload of `payload` bytes (in transport
    /// mode, what follows the IP header: here UDP and the geneve packet):
    /// header 8 + IV + padding + trailer 2 + ICV (+ UDP 8 with NAT-T, + an
    /// IP header in tunnel mode). The padding brings payload + 2 to a
    /// multiple of `align`. With rfc4106(gcm(aes)) and a 16-byte ICV that is
    /// 34 whenever payload + 2 is a multiple of 4, as for every guest MTU
    /// Spinifex computes (1408 at 1500, 8908 at 9000).
    pub fn overhead(&self, payload: u32) -> u32 {
        let align = self.align.max(4);
        let body = self.tunnel_header + payload + ESP_TRAILER;
        let pad = (align - body % align) % align;
        ESP_HEADER
            + self.iv
            + self.tunnel_header
            + pad
            + ESP_TRAILER
            + self.icv
            + if self.udp_encap { UDP_HEADER } else { 0 }
    }
}

/// The outer packet a guest packet of `inner` bytes becomes on the
/// underlay: geneve, then ESP (transport mode: what follows the outer IP
/// header is its payload) when `esp` is given.
pub fn outer_size(inner: u32, family: Family, options: u32, esp: Option<&EspFormat>) -> u32 {
    let geneve = inner + geneve_overhead(family, options);
    match esp {
        None => geneve,
        Some(esp) => {
            let payload = geneve - family.ip_header();
            family.ip_header() + payload + esp.overhead(payload)
        }
    }
}

/// The largest guest packet whose outer packet fits in `limit` bytes
/// (`outer_size` only grows with the guest packet), or `None` when not
/// even one byte fits.
pub fn largest_inner(
    limit: u32,
    family: Family,
    options: u32,
    esp: Option<&EspFormat>,
) -> Option<u32> {
    let fits = |n: u32| outer_size(n, family, options, esp) <= limit;
    if !fits(1) {
        return None;
    }
    let (mut lo, mut hi) = (1u32, limit);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
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
    fn geneve_is_58_on_ipv4_and_78_on_ipv6_with_ovns_option() {
        assert_eq!(
            geneve_overhead(Family::Ipv4, OVN_GENEVE_OPTIONS),
            GENEVE_OVERHEAD
        );
        assert_eq!(geneve_overhead(Family::Ipv6, OVN_GENEVE_OPTIONS), 78);
        assert_eq!(geneve_overhead(Family::Ipv4, 0), 50);
        assert_eq!(outer_size(1442, Family::Ipv4, 8, None), 1500);
    }

    #[test]
    fn esp_with_gcm_is_the_projects_34_bytes_at_every_guest_mtu() {
        let gcm = EspFormat::of("rfc4106(gcm(aes))", Some(128), false, 0, Family::Ipv4).unwrap();
        // What follows the outer IPv4 header of a guest packet of 1408:
        // UDP 8 + geneve 8 + option 8 + Ethernet 14 + 1408 = 1446; 1446 + 2
        // is a multiple of 4, so no padding: 8 + 8 + 0 + 2 + 16 = 34.
        for (underlay, guest) in [(1500, 1408), (9000, 8908)] {
            let payload = guest + geneve_overhead(Family::Ipv4, 8) - IPV4_HEADER;
            assert_eq!(gcm.overhead(payload), ESP_OVERHEAD);
            assert_eq!(outer_size(guest, Family::Ipv4, 8, Some(&gcm)), underlay);
            assert_eq!(
                largest_inner(underlay, Family::Ipv4, 8, Some(&gcm)),
                Some(guest)
            );
            assert_eq!(guest, guest_mtu(underlay, true, false));
        }
        // One byte more needs 3 of padding: 1409 is 1504 on the wire.
        assert_eq!(outer_size(1409, Family::Ipv4, 8, Some(&gcm)), 1504);
        // NAT-T adds its UDP header; an ICV of 8 bytes saves 8.
        let natt = EspFormat::of("rfc4106(gcm(aes))", Some(128), true, 0, Family::Ipv4).unwrap();
        assert_eq!(outer_size(1408, Family::Ipv4, 8, Some(&natt)), 1508);
        let short = EspFormat::of("rfc4106(gcm(aes))", Some(64), false, 0, Family::Ipv4).unwrap();
        assert_eq!(outer_size(1408, Family::Ipv4, 8, Some(&short)), 1492);
        // CBC pads to its 16-byte block, with HMAC-SHA-256's 16-byte ICV.
        let cbc = EspFormat::of("cbc(aes)", Some(128), false, 0, Family::Ipv4).unwrap();
        assert_eq!(cbc.overhead(1454), 8 + 16 + 2 + 16);
        assert_eq!(cbc.overhead(1455), 8 + 16 + 15 + 2 + 16);
        assert_eq!(cbc.overhead(1446), 8 + 16 + 8 + 2 + 16);
        // Unknown or unread: an error, never a default.
        assert!(EspFormat::of("rfc4106(gcm(aes))", None, false, 0, Family::Ipv4).is_err());
        assert!(EspFormat::of("cbc(twofish)", Some(96), false, 0, Family::Ipv4).is_err());
        // IPv6 underlay: 20 more, as expect's guest MTU has it.
        let v6 = EspFormat::of("rfc4106(gcm(aes))", Some(128), false, 0, Family::Ipv6).unwrap();
        assert_eq!(
            largest_inner(1500, Family::Ipv6, 8, Some(&v6)),
            Some(guest_mtu(1500, true, true))
        );
        assert_eq!(largest_inner(60, Family::Ipv4, 8, None), Some(2));
        assert_eq!(largest_inner(58, Family::Ipv4, 8, None), None);
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
