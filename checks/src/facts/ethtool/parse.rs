//! The SIOCETHTOOL answers, parsed: every length and offset checked, a
//! short or inconsistent answer an error naming the interface.

use nix::errno::Errno;

use super::{
    Channels, DrvInfo, Feature, Rings, DRVINFO_LEN, ETH_GSTRING_LEN, FEATURE_BLOCK_LEN,
    GFEATURES_HDR, GSTRINGS_HDR, MAX_SET_ENTRIES, SSET_INFO_HDR, STATS_HDR,
};
use crate::facts::ProbeError;

/// What a failed SIOCETHTOOL means for the verdict.
pub fn errno_error(e: Errno, ifname: &str, what: &str) -> ProbeError {
    match e {
        Errno::EPERM | Errno::EACCES => ProbeError::PermissionDenied {
            what: format!("{what} of {ifname} (SIOCETHTOOL)"),
            needs: format!("CAP_NET_ADMIN to read {what} of {ifname}"),
        },
        Errno::ENODEV | Errno::ENXIO => ProbeError::NotFound(format!("interface {ifname}")),
        Errno::EINVAL if crate::validate::interface(ifname).is_err() => {
            ProbeError::Other(format!("{ifname:?} is not a valid interface name"))
        }
        e => ProbeError::Other(format!("SIOCETHTOOL {what} on {ifname}: {}", e.desc())),
    }
}

pub(crate) fn bad(what: &str, ifname: &str, detail: String) -> ProbeError {
    ProbeError::parse(format!("{what} of {ifname}"), detail)
}

pub(crate) fn u32_at(b: &[u8], off: usize) -> Result<u32, String> {
    b.get(off..off + 4)
        .map(|s| u32::from_ne_bytes(s.try_into().expect("4 bytes")))
        .ok_or_else(|| format!("truncated at byte {off} of {}", b.len()))
}

pub(crate) fn u64_at(b: &[u8], off: usize) -> Result<u64, String> {
    b.get(off..off + 8)
        .map(|s| u64::from_ne_bytes(s.try_into().expect("8 bytes")))
        .ok_or_else(|| format!("truncated at byte {off} of {}", b.len()))
}

/// A fixed-width, NUL-padded C string (not necessarily NUL-terminated when
/// it fills the field).
pub fn c_string(field: &[u8]) -> String {
    let end = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// struct ethtool_drvinfo.
pub fn parse_drvinfo(b: &[u8]) -> Result<DrvInfo, String> {
    if b.len() < DRVINFO_LEN {
        return Err(format!("{} bytes, expected {DRVINFO_LEN}", b.len()));
    }
    Ok(DrvInfo {
        driver: c_string(&b[4..36]),
        version: c_string(&b[36..68]),
        fw_version: c_string(&b[68..100]),
        bus_info: c_string(&b[100..132]),
        // erom_version 132..164, reserved2 164..176, n_priv_flags 176..180
        n_stats: u32_at(b, 180)?,
    })
}

pub(crate) fn nine_u32(b: &[u8]) -> Result<[u32; 8], String> {
    let mut v = [0u32; 8];
    for (i, slot) in v.iter_mut().enumerate() {
        *slot = u32_at(b, 4 + 4 * i)?;
    }
    Ok(v)
}

/// struct ethtool_channels.
pub fn parse_channels(b: &[u8]) -> Result<Channels, String> {
    let [max_rx, max_tx, max_other, max_combined, rx, tx, other, combined] = nine_u32(b)?;
    Ok(Channels {
        max_rx,
        max_tx,
        max_other,
        max_combined,
        rx,
        tx,
        other,
        combined,
    })
}

/// struct ethtool_ringparam.
pub fn parse_rings(b: &[u8]) -> Result<Rings, String> {
    let [rx_max, rx_mini_max, rx_jumbo_max, tx_max, rx, rx_mini, rx_jumbo, tx] = nine_u32(b)?;
    Ok(Rings {
        rx_max,
        rx_mini_max,
        rx_jumbo_max,
        tx_max,
        rx,
        rx_mini,
        rx_jumbo,
        tx,
    })
}

/// struct ethtool_sset_info answered for a mask holding only `set`: its
/// string count, or `None` when the kernel cleared the bit (the driver has
/// no such set).
pub fn parse_sset_info(b: &[u8], set: u32) -> Result<Option<usize>, String> {
    if set >= 64 {
        return Err(format!("string set {set} out of range"));
    }
    let mask = u64_at(b, 8)?;
    if mask & (1u64 << set) == 0 {
        return Ok(None);
    }
    // data[] holds one u32 per set bit, in bit order; ours is the only one
    // asked for, but count the lower bits in case the kernel kept others.
    let index = (mask & ((1u64 << set) - 1)).count_ones() as usize;
    let n = u32_at(b, SSET_INFO_HDR + 4 * index)? as usize;
    if n > MAX_SET_ENTRIES {
        return Err(format!("{n} strings is more than any driver has"));
    }
    Ok(Some(n))
}

/// The `data` of struct ethtool_gstrings: `count` names of 32 bytes each.
pub fn parse_strings(data: &[u8], count: usize) -> Result<Vec<String>, String> {
    if count > MAX_SET_ENTRIES {
        return Err(format!("{count} strings is more than any driver has"));
    }
    let need = count
        .checked_mul(ETH_GSTRING_LEN)
        .ok_or_else(|| "string count overflows".to_owned())?;
    if data.len() < need {
        return Err(format!(
            "{count} strings need {need} bytes, have {}",
            data.len()
        ));
    }
    Ok(data[..need]
        .chunks_exact(ETH_GSTRING_LEN)
        .map(c_string)
        .collect())
}

/// A whole struct ethtool_gstrings as the kernel returned it.
pub fn parse_gstrings(b: &[u8]) -> Result<Vec<String>, String> {
    let len = u32_at(b, 8)? as usize;
    parse_strings(&b[GSTRINGS_HDR.min(b.len())..], len)
}

/// A whole struct ethtool_stats: `n_stats` native-endian u64 values.
pub fn parse_stats(b: &[u8]) -> Result<Vec<u64>, String> {
    let n = u32_at(b, 4)? as usize;
    if n > MAX_SET_ENTRIES {
        return Err(format!("{n} statistics is more than any driver has"));
    }
    (0..n).map(|i| u64_at(b, STATS_HDR + 8 * i)).collect()
}

/// The blocks of struct ethtool_gfeatures (without its header) paired with
/// the feature names of ETH_SS_FEATURES: feature `i` is bit `i % 32` of
/// block `i / 32`. Names that are empty (unused bits) are left out.
pub fn parse_features(blocks: &[u8], names: &[String]) -> Result<Vec<Feature>, String> {
    let need = names.len().div_ceil(32) * FEATURE_BLOCK_LEN;
    if blocks.len() < need {
        return Err(format!(
            "{} features need {need} bytes, have {}",
            names.len(),
            blocks.len()
        ));
    }
    let mut out = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() {
            continue;
        }
        let block = (i / 32) * FEATURE_BLOCK_LEN;
        let bit = 1u32 << (i % 32);
        let word = |k: usize| u32_at(blocks, block + 4 * k).map(|w| w & bit != 0);
        out.push(Feature {
            name: name.clone(),
            available: word(0)?,
            requested: word(1)?,
            active: word(2)?,
            never_changed: word(3)?,
        });
    }
    Ok(out)
}

/// A whole struct ethtool_gfeatures.
pub fn parse_gfeatures(b: &[u8], names: &[String]) -> Result<Vec<Feature>, String> {
    let size = u32_at(b, 4)? as usize;
    let blocks = &b[GFEATURES_HDR.min(b.len())..];
    let have = size.saturating_mul(FEATURE_BLOCK_LEN).min(blocks.len());
    parse_features(&blocks[..have], names)
}
