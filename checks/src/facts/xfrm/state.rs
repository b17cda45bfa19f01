//! The security associations (`XFRM_MSG_GETSA` dump), typed: never a key.

use std::net::IpAddr;

use netlink_packet_xfrm::XfrmAttrs;
use netlink_packet_xfrm::XfrmMessage;

use super::netlink::STATES;
use super::selector::{address, Selector};
use crate::facts::ProbeError;

/// IP protocol number of ESP.
pub const IPPROTO_ESP: u8 = 50;

/// One security association, as much of it as the checks judge.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SecurityAssociation {
    pub src: IpAddr,
    pub dst: IpAddr,
    /// Host byte order.
    pub spi: u32,
    /// IP protocol: 50 ESP, 51 AH, 108 IPComp.
    pub proto: u8,
    /// 0 transport, 1 tunnel.
    pub mode: u8,
    pub reqid: u32,
    /// `XFRMA_ALG_AEAD` name (`rfc4106(gcm(aes))`), else `XFRMA_ALG_CRYPT`'s
    /// (`cbc(aes)`), else none (e.g. AH, or null encryption).
    pub algorithm: Option<String>,
    /// The packets it applies to (`sel` in `ip xfrm state`): strongSwan
    /// with `set_proto_port_transport_sa` (ovs-monitor-ipsec sets it) puts
    /// the protocol and port in. `None` when the state has none (no address
    /// family: it selects everything) and in bundles of doctors that did
    /// not read it.
    #[serde(default)]
    pub selector: Option<Selector>,
    /// An ACQUIRE (larval) state, not an SA: the kernel made it for a
    /// packet a policy wants encrypted while no SA exists, asked the IKE
    /// daemon for keys, and drops what it would carry until they come (or
    /// it expires). Known by what the kernel reports for it: SPI 0 and no
    /// algorithm attribute (`XFRMA_ALG_*`), the marks `ip xfrm state` shows.
    #[serde(default)]
    pub larval: bool,
    /// What it carried so far (`ip -s xfrm state`: lifetime current).
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub packets: u64,
    /// What sets its size on the wire beyond the algorithm's name: the ICV,
    /// a separate integrity algorithm, ESN and UDP encapsulation. `None` in
    /// bundles of doctors that did not read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<SaLayout>,
}

/// The parts of an SA that decide how many bytes ESP adds to a packet
/// (what `ip xfrm state` shows after `aead`/`auth-trunc`, `flag esn` and
/// `encap`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SaLayout {
    /// The ICV length in bits: `XFRMA_ALG_AEAD`'s `alg_icv_len`
    /// (`aead rfc4106(gcm(aes)) 0x… 128`), else `XFRMA_ALG_AUTH_TRUNC`'s
    /// `alg_trunc_len` (`auth-trunc hmac(sha256) 0x… 128`).
    #[serde(default)]
    pub icv_bits: Option<u32>,
    /// The separate integrity algorithm (`hmac(sha256)`), when the cipher
    /// is not an AEAD.
    #[serde(default)]
    pub auth: Option<String>,
    /// Extended sequence numbers (`flag esn`): the high 32 bits are never
    /// sent (RFC 4303 §2.2.1), so they cost no byte on the wire.
    #[serde(default)]
    pub esn: bool,
    /// UDP encapsulation (NAT traversal, RFC 3948), `XFRMA_ENCAP`: its
    /// type (2: `espinudp`) and ports.
    #[serde(default)]
    pub encap: Option<UdpEncap>,
}

/// `XFRMA_ENCAP`: ESP inside UDP (RFC 3948), 8 bytes more per packet.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UdpEncap {
    /// 2 `espinudp` (RFC 3948), 1 the older non-IKE marker form.
    pub kind: u16,
    pub sport: u16,
    pub dport: u16,
}

/// `XFRM_STATE_ESN` in `xfrm_usersa_info.flags`.
const XFRM_STATE_ESN: u8 = 128;

impl SecurityAssociation {
    pub fn is_esp(&self) -> bool {
        self.proto == IPPROTO_ESP
    }

    /// An ESP SA with keys: ESP and not larval.
    pub fn is_esp_sa(&self) -> bool {
        self.is_esp() && !self.larval
    }
}

/// What one buffer of a dump held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DumpChunk {
    pub states: Vec<SecurityAssociation>,
    /// `NLMSG_DONE` was seen: the dump is complete.
    pub done: bool,
}

/// Parse the netlink messages in `bytes` (one or more `recv`s of a
/// `XFRM_MSG_GETSA` dump). An error answer becomes the matching probe
/// error: EPERM is [`ProbeError::PermissionDenied`].
pub fn parse_dump(bytes: &[u8]) -> Result<DumpChunk, ProbeError> {
    let mut states = Vec::new();
    let done = STATES.walk(bytes, |msg| {
        let XfrmMessage::AddSa(m) = msg else {
            return Ok(());
        };
        let info = &m.user_sa_info;
        let family = info.family;
        let algorithm = m
            .nlas
            .iter()
            .find_map(|a| match a {
                XfrmAttrs::EncryptionAlgAead(alg) => Some(c_name(&alg.alg_name)),
                _ => None,
            })
            .or_else(|| {
                m.nlas.iter().find_map(|a| match a {
                    XfrmAttrs::EncryptionAlg(alg) => Some(c_name(&alg.alg_name)),
                    _ => None,
                })
            });
        let keyed = m.nlas.iter().any(|a| {
            matches!(
                a,
                XfrmAttrs::EncryptionAlgAead(_)
                    | XfrmAttrs::EncryptionAlg(_)
                    | XfrmAttrs::AuthenticationAlg(_)
                    | XfrmAttrs::AuthenticationAlgTrunc(_)
                    | XfrmAttrs::CompressionAlg(_)
            )
        });
        let layout = layout_of(&m.nlas, info.flags);
        states.push(SecurityAssociation {
            src: address(family, &info.saddr.addr)?,
            dst: address(family, &info.id.daddr.addr)?,
            spi: info.id.spi,
            proto: info.id.proto,
            mode: info.mode,
            reqid: info.reqid,
            algorithm,
            selector: Selector::of(&info.selector)?,
            larval: info.id.spi == 0 && !keyed,
            bytes: info.lifetime_cur.bytes,
            packets: info.lifetime_cur.packets,
            layout: Some(layout),
        });
        Ok(())
    })?;
    Ok(DumpChunk { states, done })
}

/// What decides the SA's size on the wire, from its attributes and flags.
fn layout_of(nlas: &[XfrmAttrs], flags: u8) -> SaLayout {
    let mut layout = SaLayout {
        esn: flags & XFRM_STATE_ESN != 0
            || nlas
                .iter()
                .any(|a| matches!(a, XfrmAttrs::ReplayStateEsn(_))),
        ..SaLayout::default()
    };
    for a in nlas {
        match a {
            XfrmAttrs::EncryptionAlgAead(alg) => layout.icv_bits = Some(alg.alg_icv_len),
            XfrmAttrs::AuthenticationAlgTrunc(alg) => {
                layout.auth = Some(c_name(&alg.alg_name));
                layout.icv_bits.get_or_insert(alg.alg_trunc_len);
            }
            XfrmAttrs::AuthenticationAlg(alg) if layout.auth.is_none() => {
                layout.auth = Some(c_name(&alg.alg_name));
            }
            XfrmAttrs::EncapsulationTemplate(e) => {
                layout.encap = Some(UdpEncap {
                    kind: e.encap_type,
                    sport: e.encap_sport,
                    dport: e.encap_dport,
                })
            }
            _ => {}
        }
    }
    layout
}

fn c_name(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_message(code: i32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&20u32.to_ne_bytes()); // length
        b.extend_from_slice(&2u16.to_ne_bytes()); // NLMSG_ERROR
        b.extend_from_slice(&0u16.to_ne_bytes()); // flags
        b.extend_from_slice(&1u32.to_ne_bytes()); // sequence
        b.extend_from_slice(&0u32.to_ne_bytes()); // port id
        b.extend_from_slice(&code.to_ne_bytes());
        b
    }

    // Found by `fuzz/run.sh xfrm_dump` (issue 8): an NLMSG_ERROR carrying
    // i32::MIN made netlink-packet-core's `to_io` overflow (a panic in
    // debug builds).
    #[test]
    fn an_error_code_of_i32_min_is_an_error_not_a_panic() {
        assert!(matches!(
            parse_dump(&error_message(i32::MIN)),
            Err(ProbeError::Io { .. })
        ));
        assert!(matches!(
            parse_dump(&error_message(-libc::EPERM)),
            Err(ProbeError::PermissionDenied { .. })
        ));
    }
}
