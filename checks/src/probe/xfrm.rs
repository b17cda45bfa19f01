//! The kernel's IPsec security associations, dumped over netlink
//! (`XFRM_MSG_GETSA` with `NLM_F_DUMP` on a `NETLINK_XFRM` socket), the
//! same request `ip xfrm state` makes, without its text.
//!
//! Why netlink: the SA count is the ground truth of whether a node is
//! encrypting (charon and ovs-monitor-ipsec can both claim otherwise), and
//! `ip xfrm state` output is not an interface. The dump needs
//! CAP_NET_ADMIN; without it the kernel answers EPERM, which becomes a
//! permission-denied probe error (the check skips, naming the capability).
//!
//! Parsing ([`parse_dump`]) is a pure function over the bytes the kernel
//! sent, so recorded dumps can be judged in unit tests and fuzzed.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_xfrm::state::GetDumpMessage;
use netlink_packet_xfrm::{
    XfrmAttrs, XfrmMessage, AF_INET, AF_INET6, XFRM_MSG_NEWSA, XFRM_USER_SA_INFO_LEN,
};
use netlink_sys::{protocols::NETLINK_XFRM, Socket, SocketAddr};

use super::ProbeError;

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;

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
}

impl SecurityAssociation {
    pub fn is_esp(&self) -> bool {
        self.proto == IPPROTO_ESP
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
    let mut chunk = DumpChunk::default();
    let mut offset = 0;
    while offset < bytes.len() {
        let rest = &bytes[offset..];
        if rest.len() < 16 {
            return Err(ProbeError::parse(
                "xfrm netlink dump",
                format!("{} trailing bytes", rest.len()),
            ));
        }
        let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        if len < 16 || len > rest.len() {
            return Err(ProbeError::parse(
                "xfrm netlink dump",
                format!("message length {len} with {} bytes left", rest.len()),
            ));
        }
        let kind = u16::from_ne_bytes([rest[4], rest[5]]);
        offset += (len + 3) & !3;
        match kind {
            NLMSG_ERROR | NLMSG_DONE | XFRM_MSG_NEWSA => {}
            // Not part of a state dump (and the crate need not see it).
            _ => continue,
        }
        // The crate slices the fixed header without checking its length.
        if kind == XFRM_MSG_NEWSA && len < 16 + XFRM_USER_SA_INFO_LEN {
            return Err(ProbeError::parse(
                "xfrm netlink message",
                format!("XFRM_MSG_NEWSA of {len} bytes, shorter than xfrm_usersa_info"),
            ));
        }
        let bytes = &rest[..len];
        let msg = NetlinkMessage::<XfrmMessage>::deserialize(bytes)
            .map_err(|e| ProbeError::parse("xfrm netlink message", e.to_string()))?;
        match msg.payload {
            NetlinkPayload::Done(_) => {
                chunk.done = true;
                break;
            }
            NetlinkPayload::Error(e) => match e.code {
                None => {
                    chunk.done = true;
                    break;
                }
                Some(code) => {
                    // -errno; not `e.to_io()`, whose `abs()` overflows on
                    // i32::MIN (found by the xfrm_dump fuzz target).
                    let errno = i32::try_from(code.get().unsigned_abs()).unwrap_or(i32::MAX);
                    let err = io::Error::from_raw_os_error(errno);
                    return Err(match err.kind() {
                        io::ErrorKind::PermissionDenied => permission_denied(),
                        _ => ProbeError::Io {
                            what: "netlink XFRM_MSG_GETSA dump".into(),
                            source: err,
                        },
                    });
                }
            },
            NetlinkPayload::InnerMessage(XfrmMessage::AddSa(m)) => {
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
                chunk.states.push(SecurityAssociation {
                    src: address(family, &info.saddr.addr)?,
                    dst: address(family, &info.id.daddr.addr)?,
                    spi: info.id.spi,
                    proto: info.id.proto,
                    mode: info.mode,
                    reqid: info.reqid,
                    algorithm,
                });
            }
            // Anything else (overrun notices, other message types) is not
            // part of a state dump.
            _ => {}
        }
    }
    Ok(chunk)
}

fn permission_denied() -> ProbeError {
    ProbeError::PermissionDenied {
        what: "the kernel's IPsec states (netlink XFRM_MSG_GETSA)".into(),
        needs: "CAP_NET_ADMIN (root) to dump IPsec states over netlink".into(),
    }
}

fn c_name(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

fn address(family: u16, addr: &[u8; 16]) -> Result<IpAddr, ProbeError> {
    match family {
        AF_INET => Ok(IpAddr::V4(Ipv4Addr::new(
            addr[0], addr[1], addr[2], addr[3],
        ))),
        AF_INET6 => Ok(IpAddr::V6(Ipv6Addr::from(*addr))),
        other => Err(ProbeError::parse(
            "xfrm state",
            format!("address family {other}"),
        )),
    }
}

/// Every SA in this network namespace, from the live kernel. `bound` caps
/// the whole dump.
pub fn states(bound: Duration) -> Result<Vec<SecurityAssociation>, ProbeError> {
    let io_err = |source: io::Error| match source.kind() {
        io::ErrorKind::PermissionDenied => permission_denied(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => ProbeError::Other(format!(
            "the kernel did not finish the XFRM state dump within {bound:?}"
        )),
        _ => ProbeError::Io {
            what: "netlink XFRM_MSG_GETSA dump".into(),
            source,
        },
    };
    let deadline = Instant::now() + bound;
    let mut socket = Socket::new(NETLINK_XFRM).map_err(io_err)?;
    socket.bind_auto().map_err(io_err)?;
    socket.connect(&SocketAddr::new(0, 0)).map_err(io_err)?;

    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_DUMP;
    header.sequence_number = 1;
    let mut msg = NetlinkMessage::new(
        header,
        NetlinkPayload::from(XfrmMessage::GetDumpSa(GetDumpMessage::default())),
    );
    msg.finalize();
    let mut buf = vec![0u8; msg.buffer_len()];
    msg.serialize(&mut buf);
    socket.send(&buf, 0).map_err(io_err)?;

    let mut out = Vec::new();
    // Large enough for any one message the kernel sends in a dump.
    let mut rx = vec![0u8; 1 << 16];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io_err(io::ErrorKind::TimedOut.into()));
        }
        super::set_receive_timeout(&socket, left).map_err(io_err)?;
        let n = socket.recv(&mut &mut rx[..], 0).map_err(io_err)?;
        if n == 0 {
            return Err(ProbeError::Other(
                "netlink XFRM socket closed during the dump".into(),
            ));
        }
        let chunk = parse_dump(&rx[..n])?;
        out.extend(chunk.states);
        if chunk.done {
            return Ok(out);
        }
    }
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
