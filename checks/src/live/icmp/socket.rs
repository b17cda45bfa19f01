//! The ICMP sockets (datagram when `ping_group_range` allows it, else
//! raw): opening, options, sending a probe, receiving replies.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use crate::facts::icmp::packet::{append_payload, checksum, NONCE_LEN};
use crate::facts::icmp::plan::overhead;
use crate::facts::icmp::{dest, Dest, SocketKind};
use crate::facts::ProbeError;

pub(crate) struct IcmpSocket {
    pub(crate) fd: OwnedFd,
    pub(crate) v6: bool,
    pub(crate) kind: SocketKind,
    /// Echo identifier (raw sockets; the kernel picks it for datagram ones).
    pub(crate) ident: u16,
}

pub(crate) const SOL_RAW: libc::c_int = 255;

pub(crate) const ICMP_FILTER: libc::c_int = 1;

pub(crate) const ICMP6_FILTER: libc::c_int = 1;

pub(crate) fn setsockopt<T>(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: `value` points to a live T of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            value as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

impl IcmpSocket {
    /// A datagram ICMP socket when `ping_group_range` allows it, else raw.
    pub(crate) fn open(v6: bool, ident: u16) -> Result<IcmpSocket, ProbeError> {
        let (domain, proto) = if v6 {
            (libc::AF_INET6, libc::IPPROTO_ICMPV6)
        } else {
            (libc::AF_INET, libc::IPPROTO_ICMP)
        };
        let mut last = None;
        for (ty, kind) in [
            (libc::SOCK_DGRAM, SocketKind::Datagram),
            (libc::SOCK_RAW, SocketKind::Raw),
        ] {
            // SAFETY: plain socket(2) call.
            let fd = unsafe {
                libc::socket(domain, ty | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, proto)
            };
            if fd < 0 {
                last = Some(io::Error::last_os_error());
                continue;
            }
            // SAFETY: fd was just returned by socket(2) and is owned here.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            let sock = IcmpSocket {
                fd,
                v6,
                kind,
                ident,
            };
            sock.configure().map_err(|e| ProbeError::Io {
                what: "ICMP socket options".into(),
                source: e,
            })?;
            return Ok(sock);
        }
        let err = last.unwrap_or_else(|| io::Error::from(io::ErrorKind::PermissionDenied));
        let family = if v6 { "ICMPv6" } else { "ICMP" };
        match err.raw_os_error() {
            Some(libc::EACCES | libc::EPERM) => Err(ProbeError::PermissionDenied {
                what: format!("an {family} socket"),
                needs: "root (CAP_NET_RAW) or net.ipv4.ping_group_range including this group to send ICMP probes"
                    .into(),
            }),
            Some(libc::EAFNOSUPPORT) => Err(ProbeError::NotFound(format!("{family} support (no IPv6 stack?)"))),
            _ => Err(ProbeError::Io {
                what: format!("opening an {family} socket"),
                source: err,
            }),
        }
    }

    /// The options nix names are set through nix; `IP(V6)_MTU_DISCOVER`
    /// and the ICMP type filters, which it does not, through [`setsockopt`].
    pub(crate) fn configure(&self) -> io::Result<()> {
        use nix::sys::socket::{setsockopt as set, sockopt};
        let fd = self.fd.as_raw_fd();
        if self.v6 {
            setsockopt(
                fd,
                libc::IPPROTO_IPV6,
                libc::IPV6_MTU_DISCOVER,
                &libc::IPV6_PMTUDISC_PROBE,
            )?;
            // Without DONTFRAG the kernel would fragment an IPv6 probe
            // locally instead of refusing it.
            set(&self.fd, sockopt::Ipv6DontFrag, &true)?;
            set(&self.fd, sockopt::Ipv6RecvErr, &true)?;
            if self.kind == SocketKind::Raw {
                // Pass only echo replies (type 129) to the receive queue.
                let mut filter = [u32::MAX; 8];
                filter[129 >> 5] &= !(1u32 << (129 & 31));
                setsockopt(fd, libc::IPPROTO_ICMPV6, ICMP6_FILTER, &filter)?;
            }
        } else {
            setsockopt(
                fd,
                libc::IPPROTO_IP,
                libc::IP_MTU_DISCOVER,
                &libc::IP_PMTUDISC_PROBE,
            )?;
            set(&self.fd, sockopt::Ipv4RecvErr, &true)?;
            if self.kind == SocketKind::Raw {
                // Pass only echo replies (type 0) to the receive queue.
                let mask: u32 = !1u32;
                setsockopt(fd, SOL_RAW, ICMP_FILTER, &mask)?;
            }
        }
        // Room for a whole ladder of jumbo replies. FORCE works as root and
        // does not touch the host's limits; otherwise rmem_max caps it.
        let want: usize = 8 << 20;
        if set(&self.fd, sockopt::RcvBufForce, &want).is_err() {
            let _ = set(&self.fd, sockopt::RcvBuf, &want);
        }
        if set(&self.fd, sockopt::SndBufForce, &want).is_err() {
            let _ = set(&self.fd, sockopt::SndBuf, &want);
        }
        Ok(())
    }

    pub(crate) fn send(
        &self,
        dst: Dest,
        seq: u16,
        size: u32,
        nonce: &[u8; NONCE_LEN],
    ) -> io::Result<()> {
        let (dst, scope) = dst;
        let data_len = (size - overhead(dst)) as usize;
        let mut pkt = Vec::with_capacity(8 + data_len);
        pkt.push(if self.v6 { 128 } else { 8 });
        pkt.push(0);
        pkt.extend_from_slice(&[0, 0]);
        pkt.extend_from_slice(&self.ident.to_be_bytes());
        pkt.extend_from_slice(&seq.to_be_bytes());
        append_payload(&mut pkt, nonce, seq, data_len);
        if !self.v6 && self.kind == SocketKind::Raw {
            // The kernel fills the checksum for ICMPv6 and for ping sockets.
            let c = checksum(&pkt);
            pkt[2..4].copy_from_slice(&c.to_be_bytes());
        }
        let (storage, len) = sockaddr(dst, scope);
        // SAFETY: pkt and storage are live for the call; len is storage's size.
        let rc = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                pkt.as_ptr() as *const libc::c_void,
                pkt.len(),
                0,
                &storage as *const libc::sockaddr_storage as *const libc::sockaddr,
                len,
            )
        };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// One datagram from the receive queue: (source, ICMP message).
    /// Ok(None) when the queue is empty.
    pub(crate) fn recv<'b>(&self, buf: &'b mut [u8]) -> io::Result<Option<(Dest, &'b [u8])>> {
        // SAFETY: zeroed sockaddr_storage is a valid out-parameter.
        let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // SAFETY: buf and storage are live and their sizes are passed.
        let n = unsafe {
            libc::recvfrom(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                libc::MSG_TRUNC,
                &mut storage as *mut libc::sockaddr_storage as *mut libc::sockaddr,
                &mut len,
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
        let Some(src) = from_sockaddr(&storage) else {
            return Ok(Some(((IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0), &buf[..0])));
        };
        if n > buf.len() {
            // Truncated: never counts.
            return Ok(Some((src, &buf[..0])));
        }
        let msg = &buf[..n];
        // Raw IPv4 sockets deliver the IP header too.
        if !self.v6 && self.kind == SocketKind::Raw {
            if msg.len() < 20 {
                return Ok(Some((src, &buf[..0])));
            }
            let ihl = usize::from(msg[0] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([msg[2], msg[3]]));
            if ihl < 20 || msg.len() < ihl || total != msg.len() {
                return Ok(Some((src, &buf[..0])));
            }
            return Ok(Some((src, &buf[ihl..n])));
        }
        Ok(Some((src, msg)))
    }
}

pub(crate) fn sockaddr(addr: IpAddr, scope: u32) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: an all-zero sockaddr_storage is valid; the family-specific
    // view written below fits inside it.
    unsafe {
        let mut ss: libc::sockaddr_storage = std::mem::zeroed();
        match addr {
            IpAddr::V4(a) => {
                let sin = &mut ss as *mut libc::sockaddr_storage as *mut libc::sockaddr_in;
                (*sin).sin_family = libc::AF_INET as libc::sa_family_t;
                (*sin).sin_addr.s_addr = u32::from_ne_bytes(a.octets());
                (
                    ss,
                    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                )
            }
            IpAddr::V6(a) => {
                let sin6 = &mut ss as *mut libc::sockaddr_storage as *mut libc::sockaddr_in6;
                (*sin6).sin6_family = libc::AF_INET6 as libc::sa_family_t;
                (*sin6).sin6_addr.s6_addr = a.octets();
                (*sin6).sin6_scope_id = scope;
                (
                    ss,
                    std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
                )
            }
        }
    }
}

pub(crate) fn from_sockaddr(ss: &libc::sockaddr_storage) -> Option<Dest> {
    // SAFETY: the family field says which view is valid.
    unsafe {
        match i32::from(ss.ss_family) {
            libc::AF_INET => {
                let sin = &*(ss as *const libc::sockaddr_storage as *const libc::sockaddr_in);
                Some(dest(
                    IpAddr::V4(Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes())),
                    0,
                ))
            }
            libc::AF_INET6 => {
                let sin6 = &*(ss as *const libc::sockaddr_storage as *const libc::sockaddr_in6);
                Some(dest(
                    IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)),
                    sin6.sin6_scope_id,
                ))
            }
            _ => None,
        }
    }
}

pub(crate) fn wait_writable(fd: RawFd, timeout: Duration) {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one live pollfd.
    unsafe { libc::poll(&mut pfd, 1, timeout.as_millis() as i32) };
}
