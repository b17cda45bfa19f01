//! `/proc/net/xfrm_stat`: the xfrm layer's error counters
//! (`LINUX_MIB_XFRM*`, the kernel's `Documentation/networking/xfrm_proc.rst`),
//! one `Name<TAB>value` line each, per network namespace. Every counter is
//! a packet the IPsec layer dropped, counted since boot. The file exists
//! only on kernels built with `CONFIG_XFRM_STATISTICS` (Debian's are); the
//! set of counters grows with the kernel (6.1 has 28, 6.18 has 32), so
//! they are read by name, never by position.

use crate::facts::ProbeError;

/// Where the counters are.
pub const XFRM_STAT: &str = "/proc/net/xfrm_stat";

/// The counters, in the file's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XfrmStat {
    pub counters: Vec<(String, u64)>,
}

impl XfrmStat {
    /// One counter by name; `None` when this kernel has no such counter.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.counters
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }
}

/// Parse the text of `/proc/net/xfrm_stat`: every non-empty line a name
/// (`Xfrm` and letters) and a decimal count. Anything else is a parse
/// error, never a guess; a name given twice keeps its first value.
pub fn parse_xfrm_stat(text: &str) -> Result<XfrmStat, ProbeError> {
    let bad = |line: usize, why: &str| ProbeError::parse(XFRM_STAT, format!("line {line}: {why}"));
    let mut counters: Vec<(String, u64)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        let Some(name) = words.next() else {
            continue;
        };
        let value = words
            .next()
            .ok_or_else(|| bad(i + 1, "a name without a value"))?;
        if words.next().is_some() {
            return Err(bad(i + 1, "more than a name and a value"));
        }
        if !name.starts_with("Xfrm")
            || name.len() > 64
            || !name.chars().all(|c| c.is_ascii_alphanumeric())
        {
            return Err(bad(i + 1, "not an xfrm counter name"));
        }
        let value: u64 = value
            .parse()
            .map_err(|_| bad(i + 1, "the count is not a decimal number"))?;
        if !counters.iter().any(|(n, _)| n == name) {
            counters.push((name.to_owned(), value));
        }
    }
    if counters.is_empty() {
        return Err(ProbeError::parse(XFRM_STAT, "no counters"));
    }
    Ok(XfrmStat { counters })
}
