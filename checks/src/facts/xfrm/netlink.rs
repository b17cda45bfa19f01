//! The framing both dumps share: the netlink messages in the bytes of one
//! or more `recv`s, each `XFRM_MSG_NEW*` message of the dump handed on, the
//! end (`NLMSG_DONE`) seen, an error answer turned into the probe error it
//! means. Pure: no socket, so recorded dumps are parsed and fuzzed alike.

use std::io;

use netlink_packet_core::{NetlinkMessage, NetlinkPayload};
use netlink_packet_xfrm::{
    XfrmMessage, XFRM_MSG_NEWPOLICY, XFRM_MSG_NEWSA, XFRM_USER_POLICY_INFO_LEN,
    XFRM_USER_SA_INFO_LEN,
};

use crate::facts::ProbeError;

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// `struct nlmsghdr`.
const HEADER_LEN: usize = 16;

/// One kind of xfrm dump: what it asks, what each entry of the answer is,
/// and how its failures read.
#[derive(Clone, Copy, Debug)]
pub struct Dump {
    /// The type of each entry of the answer (`XFRM_MSG_NEWSA`, ...).
    pub entry: u16,
    /// The entry's fixed header (`xfrm_usersa_info`, `xfrm_userpolicy_info`),
    /// checked before the crate slices it.
    pub fixed: usize,
    pub fixed_name: &'static str,
    /// What the dump reads, for a message: "IPsec states".
    pub reads: &'static str,
    pub request_name: &'static str,
}

/// `ip xfrm state`'s request.
pub(crate) const STATES: Dump = Dump {
    entry: XFRM_MSG_NEWSA,
    fixed: XFRM_USER_SA_INFO_LEN,
    fixed_name: "xfrm_usersa_info",
    reads: "IPsec states",
    request_name: "XFRM_MSG_GETSA",
};

/// `ip xfrm policy`'s request.
pub(crate) const POLICIES: Dump = Dump {
    entry: XFRM_MSG_NEWPOLICY,
    fixed: XFRM_USER_POLICY_INFO_LEN,
    fixed_name: "xfrm_userpolicy_info",
    reads: "IPsec policies",
    request_name: "XFRM_MSG_GETPOLICY",
};

impl Dump {
    pub fn permission_denied(&self) -> ProbeError {
        ProbeError::PermissionDenied {
            what: format!(
                "the kernel's {} (netlink {})",
                self.reads, self.request_name
            ),
            needs: format!("CAP_NET_ADMIN (root) to dump {} over netlink", self.reads),
        }
    }

    pub fn io(&self, source: io::Error) -> ProbeError {
        match source.kind() {
            io::ErrorKind::PermissionDenied => self.permission_denied(),
            _ => ProbeError::Io {
                what: format!("netlink {} dump", self.request_name),
                source,
            },
        }
    }

    /// Hand every entry message in `bytes` to `each`; true once the dump's
    /// end was seen (more `recv`s follow until then).
    pub fn walk(
        &self,
        bytes: &[u8],
        mut each: impl FnMut(XfrmMessage) -> Result<(), ProbeError>,
    ) -> Result<bool, ProbeError> {
        let mut offset = 0;
        while offset < bytes.len() {
            let rest = &bytes[offset..];
            if rest.len() < HEADER_LEN {
                return Err(ProbeError::parse(
                    "xfrm netlink dump",
                    format!("{} trailing bytes", rest.len()),
                ));
            }
            let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            if len < HEADER_LEN || len > rest.len() {
                return Err(ProbeError::parse(
                    "xfrm netlink dump",
                    format!("message length {len} with {} bytes left", rest.len()),
                ));
            }
            let kind = u16::from_ne_bytes([rest[4], rest[5]]);
            offset += (len + 3) & !3;
            if kind != NLMSG_ERROR && kind != NLMSG_DONE && kind != self.entry {
                // Not part of this dump (and the crate need not see it).
                continue;
            }
            // The crate slices the fixed header without checking its length.
            if kind == self.entry && len < HEADER_LEN + self.fixed {
                return Err(ProbeError::parse(
                    "xfrm netlink message",
                    format!("a message of {len} bytes, shorter than {}", self.fixed_name),
                ));
            }
            let msg = NetlinkMessage::<XfrmMessage>::deserialize(&rest[..len])
                .map_err(|e| ProbeError::parse("xfrm netlink message", e.to_string()))?;
            match msg.payload {
                NetlinkPayload::Done(_) => return Ok(true),
                NetlinkPayload::Error(e) => match e.code {
                    None => return Ok(true),
                    Some(code) => {
                        // -errno; not `e.to_io()`, whose `abs()` overflows on
                        // i32::MIN (found by the xfrm_dump fuzz target).
                        let errno = i32::try_from(code.get().unsigned_abs()).unwrap_or(i32::MAX);
                        return Err(self.io(io::Error::from_raw_os_error(errno)));
                    }
                },
                NetlinkPayload::InnerMessage(m) => each(m)?,
                // Overrun notices and the like are not part of a dump.
                _ => {}
            }
        }
        Ok(false)
    }
}
