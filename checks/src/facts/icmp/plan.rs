//! The size plan: which probe sizes each round sends (the minimal probe,
//! the target, a ladder of common MTUs and an even spread, then refinement
//! of the gap).

use std::collections::BTreeSet;
use std::net::IpAddr;

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
/// counts as not passing when every copy was silent and the copies left at
/// two moments (the engine's `silence_confirmed`).
pub(crate) const COPIES: u32 = 2;

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
