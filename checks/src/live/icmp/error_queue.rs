//! The socket error queue (`IP_RECVERR`/`IPV6_RECVERR`): ICMP errors
//! about our probes, and the local MTU on EMSGSIZE.

use std::io;
use std::net::IpAddr;
use std::os::fd::AsRawFd;

use super::socket::{from_sockaddr, IcmpSocket};
use crate::facts::icmp::Dest;

#[derive(Debug)]
pub(crate) struct QueuedError {
    /// The original destination.
    pub(crate) dst: Option<Dest>,
    pub(crate) origin: u8,
    pub(crate) icmp_type: u8,
    pub(crate) icmp_code: u8,
    pub(crate) info: u32,
    pub(crate) errno: u32,
    pub(crate) offender: Option<IpAddr>,
    pub(crate) ident: Option<u16>,
    pub(crate) seq: Option<u16>,
}

impl QueuedError {
    /// The next-hop MTU when this is "fragmentation needed" (IPv4 type 3
    /// code 4) or "packet too big" (ICMPv6 type 2).
    pub(crate) fn too_big_mtu(&self) -> Option<u32> {
        let is = match self.origin {
            libc::SO_EE_ORIGIN_ICMP => self.icmp_type == 3 && self.icmp_code == 4,
            libc::SO_EE_ORIGIN_ICMP6 => self.icmp_type == 2,
            _ => false,
        };
        is.then_some(self.info)
    }

    pub(crate) fn describe(&self) -> String {
        let from = self
            .offender
            .map(|a| format!(" from {a}"))
            .unwrap_or_default();
        let what = match (self.origin, self.icmp_type, self.icmp_code) {
            (libc::SO_EE_ORIGIN_ICMP, 3, 0) => "network unreachable".to_owned(),
            (libc::SO_EE_ORIGIN_ICMP, 3, 1) => "host unreachable".to_owned(),
            (libc::SO_EE_ORIGIN_ICMP, 3, 3) => "port unreachable".to_owned(),
            (libc::SO_EE_ORIGIN_ICMP, 3, 9 | 10 | 13) => "administratively prohibited".to_owned(),
            (libc::SO_EE_ORIGIN_ICMP, 11, _) => "time exceeded".to_owned(),
            (libc::SO_EE_ORIGIN_ICMP6, 1, 0) => "no route".to_owned(),
            (libc::SO_EE_ORIGIN_ICMP6, 1, 1) => "administratively prohibited".to_owned(),
            (libc::SO_EE_ORIGIN_ICMP6, 1, 3) => "address unreachable".to_owned(),
            (libc::SO_EE_ORIGIN_ICMP6, 3, _) => "time exceeded".to_owned(),
            (o, t, c) => format!(
                "ICMP error (origin {o}, type {t}, code {c}, errno {})",
                self.errno
            ),
        };
        format!("{what}{from}")
    }
}

impl IcmpSocket {
    /// One entry from the socket error queue (IP_RECVERR). Ok(None) when
    /// it is empty.
    pub(crate) fn recv_error(&self) -> io::Result<Option<QueuedError>> {
        let mut data = [0u8; 576];
        let mut control = [0u64; 64];
        // SAFETY: zeroed sockaddr_storage is a valid out-parameter.
        let mut name: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr() as *mut libc::c_void,
            iov_len: data.len(),
        };
        // SAFETY: zeroed msghdr then every pointer set to a live buffer.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = &mut name as *mut libc::sockaddr_storage as *mut libc::c_void;
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: msg describes live buffers.
        let n = unsafe {
            libc::recvmsg(
                self.fd.as_raw_fd(),
                &mut msg,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock {
                Ok(None)
            } else {
                Err(e)
            };
        }
        let n = n as usize;
        let (level, ty) = if self.v6 {
            (libc::SOL_IPV6, libc::IPV6_RECVERR)
        } else {
            (libc::SOL_IP, libc::IP_RECVERR)
        };
        let mut out = QueuedError {
            dst: from_sockaddr(&name),
            origin: 0,
            icmp_type: 0,
            icmp_code: 0,
            info: 0,
            errno: 0,
            offender: None,
            ident: None,
            seq: None,
        };
        // SAFETY: CMSG_* walk the control buffer the kernel filled, bounded
        // by msg_controllen.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == level && (*cmsg).cmsg_type == ty {
                    let ee = libc::CMSG_DATA(cmsg) as *const libc::sock_extended_err;
                    let ee = std::ptr::read_unaligned(ee);
                    out.origin = ee.ee_origin;
                    out.icmp_type = ee.ee_type;
                    out.icmp_code = ee.ee_code;
                    out.info = ee.ee_info;
                    out.errno = ee.ee_errno;
                    let off = (libc::CMSG_DATA(cmsg) as *const libc::sock_extended_err).add(1)
                        as *const libc::sockaddr_storage;
                    let room = (*cmsg).cmsg_len as usize
                        - (libc::CMSG_LEN(std::mem::size_of::<libc::sock_extended_err>() as u32)
                            as usize);
                    if room >= std::mem::size_of::<libc::sockaddr_in>() {
                        let mut ss: libc::sockaddr_storage = std::mem::zeroed();
                        std::ptr::copy_nonoverlapping(
                            off as *const u8,
                            &mut ss as *mut libc::sockaddr_storage as *mut u8,
                            room.min(std::mem::size_of::<libc::sockaddr_storage>()),
                        );
                        out.offender = from_sockaddr(&ss)
                            .map(|(a, _)| a)
                            .filter(|a| !a.is_unspecified());
                    }
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
        }
        // The data is the original ICMP header and what followed it.
        let echo_request = if self.v6 { 128 } else { 8 };
        if n >= 8 && data[0] == echo_request {
            out.ident = Some(u16::from_be_bytes([data[4], data[5]]));
            out.seq = Some(u16::from_be_bytes([data[6], data[7]]));
        }
        Ok(Some(out))
    }
}
