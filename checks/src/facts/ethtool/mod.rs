//! What `ethtool -i/-k/-l/-g/-S` show, read from the kernel directly through
//! the SIOCETHTOOL ioctl on an AF_INET datagram socket.
//!
//! Why the ioctl and not ethtool netlink (the `ethtool` crate): driver
//! statistics by name (ETH_SS_STATS + ETHTOOL_GSTATS, what `ethtool -S`
//! prints, where mlx5 keeps `tx_tso_packets`) exist only as an ioctl; the
//! netlink family has no message for them. The ioctl is synchronous (no
//! async runtime inside a check), works on every kernel since 2.6.39 for
//! everything read here, and none of the GET commands used needs a
//! capability. One interface for all five reads keeps one error mapping.
//!
//! One hazard of the ioctl is handled explicitly: for ETHTOOL_GSTRINGS and
//! ETHTOOL_GSTATS the kernel writes as many entries as the driver has *now*,
//! not as many as the caller sized its buffer for (the count can grow
//! between ETHTOOL_GSSET_INFO and the read when channels change). Every
//! buffer handed to the kernel therefore ends exactly at a PROT_NONE guard
//! page (`GuardedBuf`): an overrun becomes EFAULT, which is retried once,
//! never a write past the allocation.
//!
//! The byte layouts are parsed by pure functions over `&[u8]`
//! ([`parse_strings`], [`parse_stats`], [`parse_features`], …) so that they
//! can be tested on recorded bytes and fuzzed.

mod counters;
pub mod parse;

pub use self::counters::{driver_counters, DriverCounters, DRIVER_COUNTERS, GENERIC_TSO_COUNTERS};
pub use self::parse::{
    c_string, errno_error, parse_channels, parse_drvinfo, parse_features, parse_gfeatures,
    parse_gstrings, parse_rings, parse_sset_info, parse_stats, parse_strings,
};

// include/uapi/linux/ethtool.h
pub const ETH_SS_STATS: u32 = 1;
pub const ETH_SS_FEATURES: u32 = 4;
pub const ETH_GSTRING_LEN: usize = 32;

/// sizeof(struct ethtool_drvinfo).
pub const DRVINFO_LEN: usize = 196;
/// sizeof(struct ethtool_channels) and sizeof(struct ethtool_ringparam):
/// nine u32 each.
pub const CHANNELS_LEN: usize = 36;
pub const RINGS_LEN: usize = 36;
/// Headers of the variable-length structs: gstrings {cmd, string_set, len},
/// stats {cmd, n_stats}, gfeatures {cmd, size}, sset_info {cmd, reserved,
/// u64 sset_mask}.
pub const GSTRINGS_HDR: usize = 12;
pub const STATS_HDR: usize = 8;
pub const GFEATURES_HDR: usize = 8;
pub const SSET_INFO_HDR: usize = 16;
/// One ethtool_get_features_block: available, requested, active, never_changed.
pub const FEATURE_BLOCK_LEN: usize = 16;

/// More entries than any driver has ever reported; anything above is a
/// corrupt answer, not a NIC.
pub const MAX_SET_ENTRIES: usize = 1 << 16;

/// Said wherever a driver does not implement an ethtool operation.
pub const NOT_REPORTED: &str = "not reported by this driver";

/// `ethtool -i`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DrvInfo {
    pub driver: String,
    pub version: String,
    pub fw_version: String,
    pub bus_info: String,
    pub n_stats: u32,
}

/// `ethtool -l`: pre-set maximums and current counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Channels {
    pub max_rx: u32,
    pub max_tx: u32,
    pub max_other: u32,
    pub max_combined: u32,
    pub rx: u32,
    pub tx: u32,
    pub other: u32,
    pub combined: u32,
}

impl Channels {
    /// Queue pairs in use: combined channels plus the pairs that separate rx
    /// and tx channels can form.
    pub fn current_pairs(&self) -> u32 {
        self.combined.saturating_add(self.rx.min(self.tx))
    }

    /// Queue pairs the device offers at most.
    ///
    /// The maxima are alternatives, not a sum: ice reports rx 16, tx 16 and
    /// combined 16 for a device with 16 queue pairs (E810, 6.1; see
    /// testdata/hw/ice), and bnxt_en reports its shared-ring (combined) and
    /// separate-ring (rx/tx) limits side by side. A device offers as many
    /// pairs as the larger of its combined maximum and the pairs its
    /// separate rx and tx maxima can form.
    pub fn max_pairs(&self) -> u32 {
        self.max_combined.max(self.max_rx.min(self.max_tx))
    }
}

/// `ethtool -g`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rings {
    pub rx_max: u32,
    pub rx_mini_max: u32,
    pub rx_jumbo_max: u32,
    pub tx_max: u32,
    pub rx: u32,
    pub rx_mini: u32,
    pub rx_jumbo: u32,
    pub tx: u32,
}

/// One line of `ethtool -k`, by the kernel's feature name.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Feature {
    pub name: String,
    /// The device can toggle it (`hw_features`).
    pub available: bool,
    /// What was asked for (`wanted_features`).
    pub requested: bool,
    /// What is in effect (`features`).
    pub active: bool,
    /// Never changeable on any device (NETIF_F_NEVER_CHANGE).
    pub never_changed: bool,
}

impl Feature {
    /// Cannot be toggled with `ethtool -K`.
    pub fn fixed(&self) -> bool {
        !self.available || self.never_changed
    }

    /// The value exactly as `ethtool -k` prints it: "on", "off",
    /// `off [fixed]`, `on [fixed]`, `off [requested on]`…
    pub fn state(&self) -> String {
        let value = if self.active { "on" } else { "off" };
        if self.fixed() {
            format!("{value} [fixed]")
        } else if self.requested != self.active {
            let wanted = if self.requested { "on" } else { "off" };
            format!("{value} [requested {wanted}]")
        } else {
            value.to_owned()
        }
    }
}

/// An ethtool operation's outcome: the answer, or the driver does not
/// implement it (EOPNOTSUPP), which is never a failure of the host.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Reported<T> {
    Yes(T),
    NotReported,
}

impl<T> Reported<T> {
    pub fn ok(self) -> Option<T> {
        match self {
            Reported::Yes(v) => Some(v),
            Reported::NotReported => None,
        }
    }
}
