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
//!   and the smallest that did not. A size is silent only when its copies
//!   left at two moments (round 1 sends the smallest size still without an
//!   answer again half a round after its ladder; later rounds re-probe an
//!   upper bound silent at one moment), so that one lost packet, or one
//!   burst of loss, cannot pass for a black hole.
//!
//! A 9000-byte target is exact to the byte after round 2 at the latest
//! (≈95 sizes per ladder), so a black hole costs two probe timeouts and a
//! healthy path one round trip. Every round is bounded by the probe timeout
//! and the run's deadline.
//!
//! surge-ping was evaluated and not used: it cannot read the socket error
//! queue (its receive task would spin on POLLERR) and it receives into a
//! 2048-byte buffer, truncating the jumbo replies this module must verify.

use std::net::IpAddr;
use std::time::{Duration, Instant};

pub mod engine;
pub mod packet;
pub mod plan;

pub use self::packet::{checksum, payload};
pub use self::plan::{
    ladder, min_probe, overhead, refinement, COMMON_MTUS, IPV4_OVERHEAD, IPV6_OVERHEAD, MAX_LADDER,
    MIN_PROBE_V4, MIN_PROBE_V6,
};

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
    /// Probes the kernel would not send, with ENOBUFS or EINVAL: a device
    /// queue that stayed full, or no room in the neighbour table for the
    /// next hop (Debian's 6.1 says ENOBUFS then, to a socket with
    /// IP_RECVERR as the probes' are; other kernels EINVAL).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refused_at_send: u32,
    /// The run's deadline ended a round early (or prevented one) while
    /// probes to this target were unanswered: silence proves nothing then.
    pub cut_short: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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

/// A destination: the address and, for a link-local IPv6 address only, the
/// interface index it is reached on (0 otherwise), so that two link-local
/// peers with the same address on different links stay apart.
pub(crate) type Dest = (IpAddr, u32);

pub(crate) fn dest(addr: IpAddr, scope: u32) -> Dest {
    let link_local = matches!(addr, IpAddr::V6(a) if a.is_unicast_link_local());
    (addr, if link_local { scope } else { 0 })
}
