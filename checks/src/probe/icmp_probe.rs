//! Path MTU measurement with don't-fragment ICMP echo, to many peers at once.
//!
//! Why not `ping -M do` in a loop: the manual proof took 29 s for 4 peers and
//! only answered yes/no, and tracepath reports 9000 on a path an L2 switch
//! black-holes above 1500 (no "fragmentation needed" ever comes back). Here
//! every probe is an echo request that exactly fills M bytes (payload M−28
//! on IPv4, M−48 on IPv6) sent with `IP_PMTUDISC_PROBE`/`IPV6_PMTUDISC_PROBE`
//! (DF set, the cached path MTU ignored, so a probe larger than an earlier
//! "fragmentation needed" still leaves), to all peers concurrently:
//!
//! * round 1: a minimal probe (twice) and the target size; as soon as the
//!   minimal probe answers and the target does not, a ladder of sizes
//!   (common MTU boundaries and an even spread) goes out in the same round;
//!   a "fragmentation needed"/"packet too big" names the hop's MTU at once
//!   (`IP_RECVERR` error queue, `ee_info`) and that exact size is probed
//!   immediately;
//! * rounds 2 and 3 refine the gap between the largest size that answered
//!   and the smallest that did not, re-probing a silent upper bound once so
//!   that one lost packet cannot pass for a black hole.
//!
//! A 9000-byte target is exact to the byte after round 2 at the latest
//! (≈95 sizes per ladder), so a black hole costs two probe timeouts and a
//! healthy path one round trip. Every round is bounded by the probe timeout
//! and the run's deadline.
//!
//! surge-ping was evaluated and not used: it cannot read the socket error
//! queue (its receive task would spin on POLLERR) and it receives into a
//! 2048-byte buffer, truncating the jumbo replies this module must verify.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::ProbeError;

/// IPv4 header 20 + ICMP header 8: a probe of M bytes has payload M − 28.
pub const IPV4_OVERHEAD: u32 = 28;
/// IPv6 header 40 + ICMPv6 header 8: payload M − 48.
pub const IPV6_OVERHEAD: u32 = 48;
/// The minimal probe (the size `ping` sends by default): proves the peer
/// answers echo at all.
pub const MIN_PROBE_V4: u32 = 84;
pub const MIN_PROBE_V6: u32 = 104;
/// At most this many sizes per peer per round.
pub const MAX_LADDER: u32 = 128;
/// MTUs fabrics are commonly configured to; each is probed with its
/// successor so that a path stuck at one of them is exact in round 1.
pub const COMMON_MTUS: [u32; 12] = [
    576, 1280, 1400, 1450, 1480, 1492, 1500, 2000, 4000, 4470, 8000, 9000,
];
/// Every size past round 1's minimal and target probes goes out this many
/// times, so that one lost packet cannot pass for a black hole; a size
/// counts as not passing when every copy was silent.
const COPIES: u32 = 2;
/// Bytes at the start of every payload that identify this run.
const NONCE_LEN: usize = 8;

/// One destination to measure.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Target {
    pub addr: IpAddr,
    /// The interface index a link-local IPv6 address is reached on
    /// (`sin6_scope_id`); 0 for every other address.
    pub scope_id: u32,
    /// The size that must pass (the target underlay MTU).
    pub target_mtu: u32,
}

#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// One round's bound (`--probe-timeout`).
    pub round_timeout: Duration,
    /// Nothing runs past this (the run's global deadline).
    pub deadline: Instant,
    /// At most this many rounds (3).
    pub max_rounds: u32,
}

/// Which kind of ICMP socket carried the probes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SocketKind {
    /// `SOCK_DGRAM` ICMP ("ping socket"): no privilege needed when
    /// `net.ipv4.ping_group_range` includes our group.
    Datagram,
    /// `SOCK_RAW`: needs CAP_NET_RAW.
    Raw,
}

impl SocketKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SocketKind::Datagram => "icmp-datagram",
            SocketKind::Raw => "raw",
        }
    }
}

/// A hop that answered "fragmentation needed" (IPv4) or "packet too big"
/// (IPv6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TooBig {
    /// The router (or host) that sent the error.
    pub from: Option<IpAddr>,
    /// The next-hop MTU it reported.
    pub mtu: u32,
}

/// What was measured towards one target.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PathProbe {
    pub addr: IpAddr,
    pub target_mtu: u32,
    /// Round trip of the first minimal probe that answered.
    pub rtt: Option<Duration>,
    /// Largest size that came back as a verified echo reply.
    pub largest_answered: Option<u32>,
    /// Smallest size above `largest_answered` known not to pass: no reply
    /// within its round, an ICMP error, or refused locally.
    pub smallest_refused: Option<u32>,
    /// The smallest MTU a hop reported, if any did.
    pub too_big: Option<TooBig>,
    /// The largest size this host could send (EMSGSIZE: the egress
    /// device's MTU), when a probe was refused locally.
    pub local_limit: Option<u32>,
    /// Another ICMP error (host/net unreachable, administratively
    /// prohibited, time exceeded), described.
    pub other_error: Option<String>,
    /// Rounds this target took part in.
    pub rounds: u32,
    pub probes_sent: u32,
    /// The run's deadline ended a round early (or prevented one) while
    /// probes to this target were unanswered: silence proves nothing then.
    pub cut_short: bool,
}

impl PathProbe {
    /// The peer answered an echo request at all.
    pub fn reachable(&self) -> bool {
        self.largest_answered.is_some()
    }

    pub fn target_answered(&self) -> bool {
        self.largest_answered.is_some_and(|l| l >= self.target_mtu)
    }

    /// The path MTU, exact to the byte: the largest size that answered,
    /// when the next size up is known not to pass (or it is the target).
    pub fn exact_path_mtu(&self) -> Option<u32> {
        let lo = self.largest_answered?;
        if lo >= self.target_mtu || self.smallest_refused == Some(lo + 1) {
            Some(lo)
        } else {
            None
        }
    }
}

/// Measure every target concurrently. Fails only when no ICMP socket can
/// be opened at all (no privilege: [`ProbeError::PermissionDenied`]).
pub fn measure(
    targets: &[Target],
    settings: &Settings,
) -> Result<(Vec<PathProbe>, SocketKind), ProbeError> {
    let mut engine = Engine::new(targets, settings)?;
    engine.run();
    let kind = engine.socket_kind();
    Ok((engine.results(), kind))
}

// ---------------------------------------------------------------------------
// Planning: which sizes to send, pure and unit-tested.

/// Sizes strictly between `lo` (answered) and `hi` (refused) to probe in
/// one round, when `rounds_left` rounds (this one included) remain to close
/// the gap. All of them when they fit in one round; otherwise an even
/// spread of k sizes with (k+1)^rounds_left ≥ gap, so the last round can
/// finish it.
pub fn refinement(lo: u32, hi: u32, rounds_left: u32) -> Vec<u32> {
    if hi <= lo + 1 {
        return Vec::new();
    }
    let candidates = hi - lo - 1;
    if candidates <= MAX_LADDER {
        return (lo + 1..hi).collect();
    }
    let rounds = rounds_left.max(1) as f64;
    let k = (((candidates + 1) as f64).powf(1.0 / rounds).ceil() as u32).saturating_sub(1);
    let k = k.clamp(1, MAX_LADDER);
    let span = (hi - lo) as u64;
    let mut sizes: Vec<u32> = (1..=k as u64)
        .map(|i| lo + ((i * span) / (k as u64 + 1)) as u32)
        .filter(|s| *s > lo && *s < hi)
        .collect();
    sizes.dedup();
    sizes
}

/// The round-1 ladder: common MTU boundaries (each with its successor) and
/// an even spread planned to finish in round 2.
pub fn ladder(lo: u32, hi: u32) -> Vec<u32> {
    let mut sizes: BTreeSet<u32> = refinement(lo, hi, 2).into_iter().collect();
    for m in COMMON_MTUS {
        for s in [m, m + 1] {
            if s > lo && s < hi {
                sizes.insert(s);
            }
        }
    }
    sizes.into_iter().collect()
}

/// The payload of probe `seq` of `len` bytes: the run's nonce, then a
/// pattern that depends on the sequence number and the offset, so a
/// truncated, corrupted or foreign reply is recognised.
pub fn payload(nonce: &[u8; NONCE_LEN], seq: u16, len: usize) -> Vec<u8> {
    let mut p = Vec::with_capacity(len);
    p.extend_from_slice(&nonce[..len.min(NONCE_LEN)]);
    for i in p.len()..len {
        p.push(pattern_byte(seq, i));
    }
    p
}

fn pattern_byte(seq: u16, i: usize) -> u8 {
    (i as u32)
        .wrapping_mul(131)
        .wrapping_add(u32::from(seq).wrapping_mul(7)) as u8
}

fn payload_matches(nonce: &[u8; NONCE_LEN], seq: u16, data: &[u8]) -> bool {
    data.len() >= NONCE_LEN
        && data[..NONCE_LEN] == nonce[..]
        && data[NONCE_LEN..]
            .iter()
            .enumerate()
            .all(|(i, b)| *b == pattern_byte(seq, i + NONCE_LEN))
}

/// RFC 1071 checksum.
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

pub fn overhead(addr: IpAddr) -> u32 {
    if addr.is_ipv4() {
        IPV4_OVERHEAD
    } else {
        IPV6_OVERHEAD
    }
}

pub fn min_probe(addr: IpAddr) -> u32 {
    if addr.is_ipv4() {
        MIN_PROBE_V4
    } else {
        MIN_PROBE_V6
    }
}

// ---------------------------------------------------------------------------
// Sockets.

struct IcmpSocket {
    fd: OwnedFd,
    v6: bool,
    kind: SocketKind,
    /// Echo identifier (raw sockets; the kernel picks it for datagram ones).
    ident: u16,
}

const SOL_RAW: libc::c_int = 255;
const ICMP_FILTER: libc::c_int = 1;
const ICMP6_FILTER: libc::c_int = 1;

fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
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
    fn open(v6: bool, ident: u16) -> Result<IcmpSocket, ProbeError> {
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

    fn configure(&self) -> io::Result<()> {
        let fd = self.fd.as_raw_fd();
        let on: libc::c_int = 1;
        if self.v6 {
            setsockopt(
                fd,
                libc::IPPROTO_IPV6,
                libc::IPV6_MTU_DISCOVER,
                &libc::IPV6_PMTUDISC_PROBE,
            )?;
            // Without DONTFRAG the kernel would fragment an IPv6 probe
            // locally instead of refusing it.
            setsockopt(fd, libc::IPPROTO_IPV6, libc::IPV6_DONTFRAG, &on)?;
            setsockopt(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVERR, &on)?;
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
            setsockopt(fd, libc::IPPROTO_IP, libc::IP_RECVERR, &on)?;
            if self.kind == SocketKind::Raw {
                // Pass only echo replies (type 0) to the receive queue.
                let mask: u32 = !1u32;
                setsockopt(fd, SOL_RAW, ICMP_FILTER, &mask)?;
            }
        }
        // Room for a whole ladder of jumbo replies. FORCE works as root and
        // does not touch the host's limits; otherwise rmem_max caps it.
        let want: libc::c_int = 8 << 20;
        if setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &want).is_err() {
            let _ = setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &want);
        }
        if setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &want).is_err() {
            let _ = setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &want);
        }
        Ok(())
    }

    fn send(&self, dst: Dest, seq: u16, size: u32, nonce: &[u8; NONCE_LEN]) -> io::Result<()> {
        let (dst, scope) = dst;
        let data_len = (size - overhead(dst)) as usize;
        let mut pkt = Vec::with_capacity(8 + data_len);
        pkt.push(if self.v6 { 128 } else { 8 });
        pkt.push(0);
        pkt.extend_from_slice(&[0, 0]);
        pkt.extend_from_slice(&self.ident.to_be_bytes());
        pkt.extend_from_slice(&seq.to_be_bytes());
        pkt.extend_from_slice(&payload(nonce, seq, data_len));
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
    fn recv<'b>(&self, buf: &'b mut [u8]) -> io::Result<Option<(Dest, &'b [u8])>> {
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

    /// One entry from the socket error queue (IP_RECVERR). Ok(None) when
    /// it is empty.
    fn recv_error(&self) -> io::Result<Option<QueuedError>> {
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

#[derive(Debug)]
struct QueuedError {
    /// The original destination.
    dst: Option<Dest>,
    origin: u8,
    icmp_type: u8,
    icmp_code: u8,
    info: u32,
    errno: u32,
    offender: Option<IpAddr>,
    ident: Option<u16>,
    seq: Option<u16>,
}

impl QueuedError {
    /// The next-hop MTU when this is "fragmentation needed" (IPv4 type 3
    /// code 4) or "packet too big" (ICMPv6 type 2).
    fn too_big_mtu(&self) -> Option<u32> {
        let is = match self.origin {
            libc::SO_EE_ORIGIN_ICMP => self.icmp_type == 3 && self.icmp_code == 4,
            libc::SO_EE_ORIGIN_ICMP6 => self.icmp_type == 2,
            _ => false,
        };
        is.then_some(self.info)
    }

    fn describe(&self) -> String {
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

/// A destination: the address and, for a link-local IPv6 address only, the
/// interface index it is reached on (0 otherwise), so that two link-local
/// peers with the same address on different links stay apart.
type Dest = (IpAddr, u32);

fn dest(addr: IpAddr, scope: u32) -> Dest {
    let link_local = matches!(addr, IpAddr::V6(a) if a.is_unicast_link_local());
    (addr, if link_local { scope } else { 0 })
}

fn sockaddr(addr: IpAddr, scope: u32) -> (libc::sockaddr_storage, libc::socklen_t) {
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

fn from_sockaddr(ss: &libc::sockaddr_storage) -> Option<Dest> {
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

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    // SAFETY: out is a live buffer of N bytes.
    let n = unsafe { libc::getrandom(out.as_mut_ptr() as *mut libc::c_void, N, 0) };
    if n != N as isize {
        // Fall back to the clock and pid: uniqueness, not secrecy, is needed.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
            ^ u128::from(std::process::id()) << 64;
        for (i, b) in out.iter_mut().enumerate() {
            *b = (t >> ((i % 16) * 8)) as u8;
        }
    }
    out
}

// ---------------------------------------------------------------------------
// The engine: one event loop over (at most) two sockets.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Pending,
    Answered,
    Refused,
    /// Dropped on the way out, as silently as on the wire: counted silent.
    Dropped,
}

struct Probe {
    peer: usize,
    size: u32,
    sent: Instant,
    round: u32,
    outcome: Outcome,
}

#[derive(Default)]
struct PeerState {
    answered: BTreeSet<u32>,
    /// Sizes refused by an ICMP error or locally, or implied refused by a
    /// reported next-hop MTU.
    refused: BTreeSet<u32>,
    /// Sizes that got no answer within their round, with how often.
    silent: HashMap<u32, u32>,
    sent_this_round: BTreeSet<u32>,
    rtt: Option<Duration>,
    too_big: Option<TooBig>,
    local_limit: Option<u32>,
    other_error: Option<String>,
    rounds: u32,
    probes_sent: u32,
    /// Round 1: when to send the ladder (after the minimal probe answered).
    ladder_at: Option<Instant>,
    ladder_sent: bool,
    cut_short: bool,
}

struct Engine<'a> {
    targets: &'a [Target],
    settings: Settings,
    v4: Option<IcmpSocket>,
    v6: Option<IcmpSocket>,
    nonce: [u8; NONCE_LEN],
    peers: Vec<PeerState>,
    probes: Vec<Probe>,
    /// (is v6, seq) → index in `probes`.
    by_seq: HashMap<(Dest, u16), usize>,
    /// Next sequence number per destination: each has its own 16-bit space.
    next_seq: HashMap<Dest, u32>,
    round: u32,
    /// Set when the last round closed: nothing more is sent.
    finished: bool,
    buf: Vec<u8>,
}

impl<'a> Engine<'a> {
    fn new(targets: &'a [Target], settings: &Settings) -> Result<Engine<'a>, ProbeError> {
        let ident = u16::from_be_bytes(random_bytes::<2>());
        let needs_v4 = targets.iter().any(|t| t.addr.is_ipv4());
        let needs_v6 = targets.iter().any(|t| t.addr.is_ipv6());
        // No privilege ends the run (a skip); a family that cannot be used
        // (no IPv6 stack) only makes its peers unreachable, with the reason.
        let open =
            |needed: bool, v6: bool| -> Result<(Option<IcmpSocket>, Option<String>), ProbeError> {
                if !needed {
                    return Ok((None, None));
                }
                match IcmpSocket::open(v6, ident) {
                    Ok(s) => Ok((Some(s), None)),
                    Err(e @ ProbeError::PermissionDenied { .. }) => Err(e),
                    Err(e) => Ok((None, Some(e.to_string()))),
                }
            };
        let (v4, v4_err) = open(needs_v4, false)?;
        let (v6, v6_err) = open(needs_v6, true)?;
        let peers = targets
            .iter()
            .map(|t| PeerState {
                other_error: if t.addr.is_ipv4() {
                    v4_err.clone()
                } else {
                    v6_err.clone()
                },
                ..PeerState::default()
            })
            .collect();
        Ok(Engine {
            targets,
            settings: *settings,
            v4,
            v6,
            nonce: random_bytes::<NONCE_LEN>(),
            peers,
            probes: Vec::new(),
            by_seq: HashMap::new(),
            next_seq: HashMap::new(),
            round: 0,
            finished: false,
            buf: vec![0u8; 65536 + 1],
        })
    }

    fn socket_kind(&self) -> SocketKind {
        self.v4
            .as_ref()
            .or(self.v6.as_ref())
            .map_or(SocketKind::Raw, |s| s.kind)
    }

    fn run(&mut self) {
        for round in 1..=self.settings.max_rounds.max(1) {
            let plan = self.plan(round);
            if plan.iter().all(Vec::is_empty) {
                break;
            }
            if Instant::now() >= self.settings.deadline {
                // Out of time with work left: what is unknown stays unknown.
                for (peer, sizes) in plan.iter().enumerate() {
                    if !sizes.is_empty() {
                        self.peers[peer].cut_short = true;
                    }
                }
                break;
            }
            self.round = round;
            for p in &mut self.peers {
                p.sent_this_round.clear();
            }
            for (peer, sizes) in plan.into_iter().enumerate() {
                if !sizes.is_empty() {
                    self.peers[peer].rounds += 1;
                }
                for size in sizes {
                    let copies = if round == 1 { 1 } else { COPIES };
                    for _ in 0..copies {
                        self.send(peer, size);
                        self.drain();
                    }
                }
            }
            let intended = Instant::now() + self.settings.round_timeout;
            let end = intended.min(self.settings.deadline);
            self.wait_round(end);
            self.close_round(end < intended);
        }
    }

    /// Sizes to send to each peer at the start of `round`.
    fn plan(&self, round: u32) -> Vec<Vec<u32>> {
        self.targets
            .iter()
            .zip(&self.peers)
            .map(|(t, p)| {
                let min = min_probe(t.addr).min(t.target_mtu);
                if round == 1 {
                    let mut v = vec![min, min];
                    if t.target_mtu > min {
                        v.extend([t.target_mtu, t.target_mtu]);
                    }
                    return v;
                }
                let Some(lo) = p.answered.last().copied() else {
                    return Vec::new(); // never answered: unreachable
                };
                if lo >= t.target_mtu {
                    return Vec::new();
                }
                let (hi, hi_silent_once) = self.upper_bound(p, lo, t.target_mtu);
                let rounds_left = self.settings.max_rounds.saturating_sub(round) + 1;
                let mut sizes: BTreeSet<u32> =
                    refinement(lo, hi, rounds_left).into_iter().collect();
                if hi_silent_once {
                    sizes.insert(hi);
                }
                sizes.into_iter().collect()
            })
            .collect()
    }

    /// The smallest size above `lo` known not to pass, and whether that
    /// knowledge rests on a single silent probe (worth one more try).
    fn upper_bound(&self, p: &PeerState, lo: u32, target: u32) -> (u32, bool) {
        let refused = p.refused.iter().copied().find(|s| *s > lo);
        let silent = p.silent.keys().copied().filter(|s| *s > lo).min();
        match (refused, silent) {
            (Some(r), Some(s)) if s < r => (s, p.silent[&s] < COPIES),
            (Some(r), _) => (r, false),
            (None, Some(s)) => (s, p.silent[&s] < COPIES),
            (None, None) => (target + 1, false),
        }
    }

    /// Where probes to `peer` go (its address and scope).
    fn dest(&self, peer: usize) -> Dest {
        let t = &self.targets[peer];
        dest(t.addr, t.scope_id)
    }

    fn socket(&self, addr: IpAddr) -> Option<&IcmpSocket> {
        if addr.is_ipv4() {
            self.v4.as_ref()
        } else {
            self.v6.as_ref()
        }
    }

    fn send(&mut self, peer: usize, size: u32) {
        let addr = self.targets[peer].addr;
        let to = self.dest(peer);
        let size = size.max(min_probe(addr).min(self.targets[peer].target_mtu));
        let counter = self.next_seq.entry(to).or_insert(0);
        if *counter > u32::from(u16::MAX) {
            return; // this destination's sequence space is used up
        }
        let seq = *counter as u16;
        *counter += 1;
        let Some(sock) = self.socket(addr) else {
            return;
        };
        let mut result = sock.send(to, seq, size, &self.nonce);
        // A pending asynchronous error (an earlier ICMP error) is reported by
        // the next call on the socket, once: retry so that it is not taken
        // for this probe's fate. A full send buffer is waited out briefly.
        for _ in 0..2 {
            match &result {
                Ok(()) => break,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::ENOBUFS)) => {
                    wait_writable(sock.fd.as_raw_fd(), Duration::from_millis(20));
                }
                Err(_) => {}
            }
            result = sock.send(to, seq, size, &self.nonce);
        }
        let local = match &result {
            Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {
                Some(self.local_limit(peer).unwrap_or(size - 1))
            }
            _ => None,
        };
        let state = &mut self.peers[peer];
        state.probes_sent += 1;
        state.sent_this_round.insert(size);
        let idx = self.probes.len();
        let mut probe = Probe {
            peer,
            size,
            sent: Instant::now(),
            round: self.round,
            outcome: Outcome::Pending,
        };
        match result {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {
                // Refused locally: larger than the egress device's MTU.
                probe.outcome = Outcome::Refused;
                state.refused.insert(size);
                let limit = local.unwrap_or(size - 1);
                state.local_limit = Some(state.local_limit.map_or(limit, |l| l.min(limit)));
                if limit + 1 < size {
                    state.refused.insert(limit + 1);
                }
            }
            // The device dropped it after all retries (a veth whose other
            // end, a switch port, is below the size; a full queue): for
            // the path this is a frame that did not arrive, like silence
            // on the wire, and it is judged as such.
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                probe.outcome = Outcome::Dropped;
                *state.silent.entry(size).or_insert(0) += 1;
            }
            Err(e) => {
                probe.outcome = Outcome::Refused;
                if state.other_error.is_none() {
                    state.other_error = Some(format!("sending a {size}-byte probe: {e}"));
                }
            }
        }
        self.probes.push(probe);
        self.by_seq.insert((to, seq), idx);
    }

    /// The egress MTU towards a peer, read from the error queue's local
    /// entry (IPv4 queues one with the device MTU on EMSGSIZE).
    fn local_limit(&mut self, peer: usize) -> Option<u32> {
        let addr = self.targets[peer].addr;
        let mut queued = Vec::new();
        if let Some(sock) = self.socket(addr) {
            while let Ok(Some(e)) = sock.recv_error() {
                queued.push(e);
                if queued.len() > 1024 {
                    break;
                }
            }
        }
        let mut limit = None;
        for e in queued {
            if e.origin == libc::SO_EE_ORIGIN_LOCAL
                && e.info > 0
                && e.dst.is_none_or(|d| d == self.dest(peer))
            {
                limit = Some(e.info);
            } else {
                self.handle_error(addr.is_ipv6(), e);
            }
        }
        limit
    }

    fn wait_round(&mut self, end: Instant) {
        loop {
            let now = Instant::now();
            // Round 1: send each ladder whose time has come.
            let due: Vec<usize> = self
                .peers
                .iter()
                .enumerate()
                .filter(|(_, p)| !p.ladder_sent && p.ladder_at.is_some_and(|t| t <= now))
                .map(|(i, _)| i)
                .collect();
            for peer in due {
                self.send_ladder(peer);
            }
            if now >= end || self.round_settled() {
                return;
            }
            let next_ladder = self
                .peers
                .iter()
                .filter(|p| !p.ladder_sent)
                .filter_map(|p| p.ladder_at)
                .min();
            let until = next_ladder.map_or(end, |t| t.min(end));
            self.poll(until.saturating_duration_since(now));
            self.drain();
        }
    }

    fn send_ladder(&mut self, peer: usize) {
        let p = &mut self.peers[peer];
        p.ladder_sent = true;
        let target = self.targets[peer].target_mtu;
        let Some(lo) = p.answered.last().copied() else {
            return;
        };
        if lo >= target || p.too_big.is_some() {
            // Answered, or a hop named its MTU: that size is already out.
            return;
        }
        let hi = p
            .refused
            .iter()
            .copied()
            .find(|s| *s > lo)
            .unwrap_or(target + 1);
        let already: BTreeSet<u32> = p.sent_this_round.clone();
        for size in ladder(lo, hi) {
            if !already.contains(&size) {
                for _ in 0..COPIES {
                    self.send(peer, size);
                    self.drain();
                }
            }
        }
    }

    /// Every probe of this round has an outcome and no ladder is waiting.
    fn round_settled(&self) -> bool {
        let ladders_waiting = self
            .peers
            .iter()
            .any(|p| !p.ladder_sent && p.ladder_at.is_some());
        !ladders_waiting
            && self
                .probes
                .iter()
                .filter(|p| p.round == self.round)
                .all(|p| p.outcome != Outcome::Pending)
    }

    fn poll(&self, timeout: Duration) {
        let mut fds: Vec<libc::pollfd> = [self.v4.as_ref(), self.v6.as_ref()]
            .into_iter()
            .flatten()
            .map(|s| libc::pollfd {
                fd: s.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        let ms = if ms == 0 && !timeout.is_zero() { 1 } else { ms };
        // SAFETY: fds is a live array of the length passed.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    }

    /// Read everything queued on both sockets: replies and errors.
    fn drain(&mut self) {
        for v6 in [false, true] {
            for _ in 0..100_000 {
                let mut progressed = false;
                let sock = if v6 {
                    self.v6.as_ref()
                } else {
                    self.v4.as_ref()
                };
                let Some(sock) = sock else { break };
                if let Ok(Some(e)) = sock.recv_error() {
                    self.handle_error(v6, e);
                    progressed = true;
                }
                let sock = if v6 {
                    self.v6.as_ref()
                } else {
                    self.v4.as_ref()
                };
                let Some(sock) = sock else { break };
                let mut buf = std::mem::take(&mut self.buf);
                match sock.recv(&mut buf) {
                    Ok(Some((src, msg))) => {
                        let msg = msg.to_vec();
                        self.handle_reply(v6, src, &msg);
                        progressed = true;
                    }
                    Ok(None) => {}
                    // An asynchronous error reported once by recv; its
                    // details are in the error queue.
                    Err(_) => progressed = true,
                }
                self.buf = buf;
                if !progressed {
                    break;
                }
            }
        }
    }

    fn handle_reply(&mut self, v6: bool, src: Dest, msg: &[u8]) {
        let now = Instant::now();
        let reply_type = if v6 { 129 } else { 0 };
        if msg.len() < 8 || msg[0] != reply_type || msg[1] != 0 {
            return;
        }
        let sock = if v6 {
            self.v6.as_ref()
        } else {
            self.v4.as_ref()
        };
        let Some(sock) = sock else { return };
        let ident = u16::from_be_bytes([msg[4], msg[5]]);
        if sock.kind == SocketKind::Raw && ident != sock.ident {
            return; // someone else's ping
        }
        let seq = u16::from_be_bytes([msg[6], msg[7]]);
        let Some(&idx) = self.by_seq.get(&(src, seq)) else {
            return;
        };
        let probe = &self.probes[idx];
        let addr = self.targets[probe.peer].addr;
        // Exactly the size sent, and the pattern intact.
        let data = &msg[8..];
        if data.len() as u32 + overhead(addr) != probe.size
            || !payload_matches(&self.nonce, seq, data)
        {
            return;
        }
        let (peer, size, sent, round) = (probe.peer, probe.size, probe.sent, probe.round);
        self.probes[idx].outcome = Outcome::Answered;
        let target = self.targets[peer].target_mtu;
        let min = min_probe(addr).min(target);
        let p = &mut self.peers[peer];
        p.answered.insert(size);
        if size == min && p.rtt.is_none() {
            let rtt = now - sent;
            p.rtt = Some(rtt);
            if round == 1 && !p.answered.iter().any(|s| *s >= target) && !p.ladder_sent {
                // The neighbour is resolved now, so a ladder will not
                // overflow its queue. Give the target's reply a moment first:
                // a healthy path needs no ladder.
                let grace =
                    (rtt * 3 + Duration::from_millis(1)).min(self.settings.round_timeout / 4);
                p.ladder_at = Some(now + grace);
            }
        }
        if size >= target {
            p.ladder_at = None;
            p.ladder_sent = true;
        }
    }

    fn handle_error(&mut self, v6: bool, e: QueuedError) {
        let Some(seq) = e.seq else { return };
        let sock = if v6 {
            self.v6.as_ref()
        } else {
            self.v4.as_ref()
        };
        let Some(sock) = sock else { return };
        if sock.kind == SocketKind::Raw && e.ident != Some(sock.ident) {
            return;
        }
        let Some(dst) = e.dst else { return };
        let Some(&idx) = self.by_seq.get(&(dst, seq)) else {
            return;
        };
        let (peer, size) = (self.probes[idx].peer, self.probes[idx].size);
        if self.probes[idx].outcome == Outcome::Pending {
            self.probes[idx].outcome = Outcome::Refused;
        }
        let mtu = e.too_big_mtu();
        let p = &mut self.peers[peer];
        p.refused.insert(size);
        match mtu {
            Some(mtu) if mtu >= 68 && mtu < size => {
                p.refused.insert(mtu + 1);
                if p.too_big.is_none_or(|t| mtu < t.mtu) {
                    p.too_big = Some(TooBig {
                        from: e.offender,
                        mtu,
                    });
                }
                // Probe the reported size at once: one round trip confirms it.
                let lo = p.answered.last().copied().unwrap_or(0);
                if mtu > lo && !p.sent_this_round.contains(&mtu) && !self.finished {
                    for _ in 0..COPIES {
                        self.send(peer, mtu);
                    }
                }
            }
            Some(_) => {
                if p.too_big.is_none() {
                    p.too_big = Some(TooBig {
                        from: e.offender,
                        mtu: size.saturating_sub(1),
                    });
                }
            }
            None => {
                if e.origin == libc::SO_EE_ORIGIN_LOCAL {
                    return;
                }
                if p.other_error.is_none() {
                    p.other_error = Some(e.describe());
                }
            }
        }
    }

    /// Probes of this round still pending are silent.
    fn close_round(&mut self, cut_by_deadline: bool) {
        for probe in self.probes.iter_mut().filter(|p| p.round == self.round) {
            if probe.outcome == Outcome::Pending {
                let peer = &mut self.peers[probe.peer];
                *peer.silent.entry(probe.size).or_insert(0) += 1;
                peer.cut_short |= cut_by_deadline;
            }
        }
        for p in &mut self.peers {
            // A ladder that never went out (no minimal reply) is dropped.
            p.ladder_at = None;
            p.ladder_sent = true;
        }
    }

    fn results(mut self) -> Vec<PathProbe> {
        // Late replies still count: read what arrived after the last round.
        self.finished = true;
        self.drain();
        self.targets
            .iter()
            .zip(&self.peers)
            .map(|(t, p)| {
                let lo = p.answered.last().copied();
                let (hi, _) = self.upper_bound(p, lo.unwrap_or(0), t.target_mtu);
                PathProbe {
                    addr: t.addr,
                    target_mtu: t.target_mtu,
                    rtt: p.rtt,
                    largest_answered: lo,
                    smallest_refused: (hi <= t.target_mtu).then_some(hi),
                    too_big: p.too_big,
                    local_limit: p.local_limit,
                    other_error: p.other_error.clone(),
                    rounds: p.rounds,
                    probes_sent: p.probes_sent,
                    cut_short: p.cut_short,
                }
            })
            .collect()
    }
}

fn wait_writable(fd: RawFd, timeout: Duration) {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one live pollfd.
    unsafe { libc::poll(&mut pfd, 1, timeout.as_millis() as i32) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refinement_closes_a_jumbo_gap_in_two_rounds() {
        // Black hole at 1500 behind a 9000 target, minimal probe answered.
        let r2 = ladder(MIN_PROBE_V4, 9001);
        assert!(r2.len() as u32 <= MAX_LADDER + 2 * COMMON_MTUS.len() as u32);
        assert!(r2.contains(&1500) && r2.contains(&1501));
        // Worst case: the path MTU falls in the widest gap of the ladder.
        let widest = r2
            .windows(2)
            .map(|w| w[1] - w[0] - 1)
            .chain([r2[0] - MIN_PROBE_V4 - 1, 9001 - r2[r2.len() - 1] - 1])
            .max()
            .unwrap();
        assert!(widest <= MAX_LADDER, "widest gap {widest}");
        // …which round 2 probes whole.
        assert_eq!(refinement(5000, 5000 + widest + 1, 2).len() as u32, widest);
    }

    #[test]
    fn refinement_reaches_any_size_within_three_rounds() {
        // Simulate the planner against every path MTU in a range: at most 3
        // rounds, exact to the byte.
        for (min, target) in [
            (MIN_PROBE_V4, 9000u32),
            (MIN_PROBE_V6, 9000),
            (MIN_PROBE_V4, 65535),
        ] {
            for pmtu in (min..=target)
                .step_by(97)
                .chain([1500, 1280, 4000, target - 1, min + 1])
            {
                let mut lo = min;
                let mut hi = target + 1;
                let mut rounds = 1;
                let mut sizes = ladder(lo, hi);
                sizes.push(target);
                loop {
                    for s in &sizes {
                        if *s <= pmtu {
                            lo = lo.max(*s);
                        } else {
                            hi = hi.min(*s);
                        }
                    }
                    if hi == lo + 1 || lo == target {
                        break;
                    }
                    rounds += 1;
                    assert!(
                        rounds <= 3,
                        "pmtu {pmtu} target {target}: gap {lo}..{hi} after 3 rounds"
                    );
                    sizes = refinement(lo, hi, 3 - rounds + 1);
                }
                assert_eq!(lo, pmtu.min(target), "pmtu {pmtu}");
            }
        }
    }

    #[test]
    fn small_gaps_are_probed_whole() {
        assert_eq!(refinement(1500, 1503, 2), vec![1501, 1502]);
        assert!(refinement(1500, 1501, 3).is_empty());
        assert!(refinement(1500, 1500, 3).is_empty());
    }

    #[test]
    fn payload_pattern_detects_corruption_and_foreign_replies() {
        let nonce = *b"spxnonce";
        let p = payload(&nonce, 7, 1472);
        assert_eq!(p.len(), 1472);
        assert!(payload_matches(&nonce, 7, &p));
        assert!(!payload_matches(&nonce, 8, &p), "other sequence");
        assert!(!payload_matches(b"othernon", 7, &p), "other run");
        let mut bad = p.clone();
        bad[900] ^= 1;
        assert!(!payload_matches(&nonce, 7, &bad));
    }

    #[test]
    fn checksum_matches_rfc1071_example() {
        // RFC 1071 §3 example bytes; the one's complement sum is 0xddf2.
        assert_eq!(
            checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            !0xddf2
        );
        // A packet with its checksum filled sums to zero.
        let mut pkt = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1, 1, 2, 3];
        let c = checksum(&pkt);
        pkt[2..4].copy_from_slice(&c.to_be_bytes());
        assert_eq!(checksum(&pkt), 0);
    }

    #[test]
    fn exact_path_mtu_needs_both_bounds() {
        let mut p = PathProbe {
            addr: "198.18.0.2".parse().unwrap(),
            target_mtu: 9000,
            rtt: None,
            largest_answered: Some(1500),
            smallest_refused: Some(1501),
            too_big: None,
            local_limit: None,
            other_error: None,
            rounds: 1,
            probes_sent: 3,
            cut_short: false,
        };
        assert_eq!(p.exact_path_mtu(), Some(1500));
        p.smallest_refused = Some(1600);
        assert_eq!(p.exact_path_mtu(), None);
        p.largest_answered = Some(9000);
        assert!(p.target_answered());
        assert_eq!(p.exact_path_mtu(), Some(9000));
    }

    #[test]
    fn loopback_answers_a_jumbo_probe() {
        // Loopback only (MTU 65536): the engine end to end, when allowed.
        let target = Target {
            addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
            scope_id: 0,
            target_mtu: 9000,
        };
        let settings = Settings {
            round_timeout: Duration::from_secs(1),
            deadline: Instant::now() + Duration::from_secs(5),
            max_rounds: 3,
        };
        match measure(&[target], &settings) {
            Ok((r, _)) => {
                assert!(r[0].target_answered(), "{r:?}");
                assert_eq!(r[0].exact_path_mtu(), Some(9000));
                assert!(r[0].rtt.is_some());
                assert_eq!(r[0].rounds, 1);
            }
            Err(ProbeError::PermissionDenied { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
}
