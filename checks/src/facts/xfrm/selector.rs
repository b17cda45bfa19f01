//! The traffic selector of a state or policy (`struct xfrm_selector`): which
//! packets it applies to, as the kernel matches them (`xfrm_selector_match`):
//! both addresses under their prefixes, the protocol (0 is any), and each
//! port under its mask (a mask of 0 is any port).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

use crate::facts::ProbeError;

/// IP protocol number of UDP.
pub const IPPROTO_UDP: u8 = 17;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selector {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub src_prefix: u8,
    pub dst_prefix: u8,
    /// IP protocol; 0 is any.
    pub proto: u8,
    /// Host byte order, compared under `sport_mask` (0: any port).
    pub sport: u16,
    pub sport_mask: u16,
    pub dport: u16,
    pub dport_mask: u16,
    /// The interface it is bound to; 0 is any (an ACQUIRE state carries the
    /// packet's).
    pub ifindex: i32,
}

/// A port of a flow to match: one port, or any (the source port of geneve,
/// which the sender picks per flow).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Port {
    Is(u16),
    Any,
}

impl Selector {
    /// Whether every packet of the flow `src`->`dst`, protocol `proto`,
    /// ports `sport` and `dport`, is selected. A selector that constrains a
    /// port the flow leaves open ([`Port::Any`]) selects only some of them:
    /// false.
    pub fn selects(&self, src: IpAddr, dst: IpAddr, proto: u8, sport: Port, dport: Port) -> bool {
        let port = |want: Port, port: u16, mask: u16| match want {
            _ if mask == 0 => true,
            Port::Is(p) => p & mask == port & mask,
            Port::Any => false,
        };
        within(src, self.src, self.src_prefix)
            && within(dst, self.dst, self.dst_prefix)
            && (self.proto == 0 || self.proto == proto)
            && port(sport, self.sport, self.sport_mask)
            && port(dport, self.dport, self.dport_mask)
    }

    /// How `ip xfrm` writes the protocol and ports: `udp dport 6081`, or
    /// `any` when it selects every protocol and port.
    pub fn ports_text(&self) -> String {
        let mut words = Vec::new();
        match self.proto {
            0 => {}
            IPPROTO_UDP => words.push("udp".to_owned()),
            6 => words.push("tcp".to_owned()),
            p => words.push(format!("proto {p}")),
        }
        if self.sport_mask != 0 {
            words.push(format!("sport {}", self.sport));
        }
        if self.dport_mask != 0 {
            words.push(format!("dport {}", self.dport));
        }
        if words.is_empty() {
            "any".to_owned()
        } else {
            words.join(" ")
        }
    }

    /// The crate's selector, typed; `None` for one of no address family
    /// (`AF_UNSPEC`: a state added without one, which selects everything).
    pub(crate) fn of(s: &netlink_packet_xfrm::Selector) -> Result<Option<Selector>, ProbeError> {
        if s.family == 0 {
            return Ok(None);
        }
        Ok(Some(Selector {
            src: address(s.family, &s.saddr.addr)?,
            dst: address(s.family, &s.daddr.addr)?,
            src_prefix: s.prefixlen_s,
            dst_prefix: s.prefixlen_d,
            proto: s.proto,
            sport: s.sport,
            sport_mask: s.sport_mask,
            dport: s.dport,
            dport_mask: s.dport_mask,
            ifindex: s.ifindex,
        }))
    }
}

/// `addr` under `net/prefix` (families must agree; a prefix longer than
/// the address counts as the whole address).
fn within(addr: IpAddr, net: IpAddr, prefix: u8) -> bool {
    let bits = |a: IpAddr| -> (u128, u32) {
        match a {
            IpAddr::V4(v4) => (u128::from(u32::from(v4)) << 96, 32),
            IpAddr::V6(v6) => (u128::from(v6), 128),
        }
    };
    let ((a, width), (n, net_width)) = (bits(addr), bits(net));
    if width != net_width {
        return false;
    }
    let prefix = u32::from(prefix).min(width);
    if prefix == 0 {
        return true;
    }
    let mask = u128::MAX << (128 - prefix);
    a & mask == n & mask
}

/// An address of `family` (`AF_INET`, `AF_INET6`) from the kernel's
/// 16-byte `xfrm_address_t`.
pub(crate) fn address(family: u16, addr: &[u8; 16]) -> Result<IpAddr, ProbeError> {
    match family {
        netlink_packet_xfrm::AF_INET => Ok(IpAddr::V4(Ipv4Addr::new(
            addr[0], addr[1], addr[2], addr[3],
        ))),
        netlink_packet_xfrm::AF_INET6 => Ok(IpAddr::V6(Ipv6Addr::from(*addr))),
        other => Err(ProbeError::parse(
            "xfrm address",
            format!("address family {other}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(src: &str, sp: u8, dst: &str, dp: u8, proto: u8, sport: u16, dport: u16) -> Selector {
        Selector {
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            src_prefix: sp,
            dst_prefix: dp,
            proto,
            sport,
            sport_mask: if sport == 0 { 0 } else { 0xffff },
            dport,
            dport_mask: if dport == 0 { 0 } else { 0xffff },
            ifindex: 0,
        }
    }

    #[test]
    fn a_selector_selects_as_the_kernel_matches() {
        let (a, b) = ("198.18.0.1".parse().unwrap(), "198.18.0.2".parse().unwrap());
        let geneve_out = sel("198.18.0.1", 32, "198.18.0.2", 32, IPPROTO_UDP, 0, 6081);
        assert!(geneve_out.selects(a, b, IPPROTO_UDP, Port::Any, Port::Is(6081)));
        assert!(!geneve_out.selects(b, a, IPPROTO_UDP, Port::Any, Port::Is(6081)));
        assert!(!geneve_out.selects(a, b, 6, Port::Any, Port::Is(6081)));
        assert!(!geneve_out.selects(a, b, IPPROTO_UDP, Port::Any, Port::Is(4789)));
        assert_eq!(geneve_out.ports_text(), "udp dport 6081");
        // The reply connection's selector: only packets from port 6081,
        // which geneve (a source port per flow) does not send.
        let reply = sel("198.18.0.1", 32, "198.18.0.2", 32, IPPROTO_UDP, 6081, 0);
        assert!(!reply.selects(a, b, IPPROTO_UDP, Port::Any, Port::Is(6081)));
        assert!(reply.selects(a, b, IPPROTO_UDP, Port::Is(6081), Port::Is(40000)));
        assert_eq!(reply.ports_text(), "udp sport 6081");
        // Everything between two prefixes, any protocol.
        let wide = sel("198.18.0.0", 24, "0.0.0.0", 0, 0, 0, 0);
        assert!(wide.selects(a, b, IPPROTO_UDP, Port::Any, Port::Any));
        assert!(!wide.selects("198.18.1.1".parse().unwrap(), b, 6, Port::Any, Port::Any));
        assert_eq!(wide.ports_text(), "any");
        // Families never mix.
        assert!(!wide.selects("fd00::1".parse().unwrap(), b, 0, Port::Any, Port::Any));
        let v6 = sel("fd00::", 64, "::", 0, 0, 0, 0);
        assert!(v6.selects(
            "fd00::1".parse().unwrap(),
            "fd01::1".parse().unwrap(),
            0,
            Port::Any,
            Port::Any
        ));
    }
}
