//! /proc/net/xfrm_stat, read over the host seam.
use crate::facts::xfrm::stat::{parse_xfrm_stat, XfrmStat, XFRM_STAT};
use crate::facts::ProbeError;
use crate::host::HostRef;

/// Read this network namespace's counters. A kernel without
/// `CONFIG_XFRM_STATISTICS` has no file: [`ProbeError::NotFound`].
pub fn read_xfrm_stat(host: HostRef<'_>) -> Result<XfrmStat, ProbeError> {
    parse_xfrm_stat(&host.read_file(XFRM_STAT)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernel_format_by_name() {
        let s = parse_xfrm_stat("XfrmInError             \t0\nXfrmOutNoStates         \t42\n\n")
            .unwrap();
        assert_eq!(s.get("XfrmOutNoStates"), Some(42));
        assert_eq!(s.get("XfrmInError"), Some(0));
        assert_eq!(s.get("XfrmInIptfsError"), None);
        assert_eq!(s.counters.len(), 2);
    }

    #[test]
    fn anything_else_is_a_parse_error() {
        for text in [
            "",
            "\n\n",
            "XfrmInError",
            "XfrmInError 1 2",
            "XfrmInError -1",
            "XfrmInError 0x10",
            "IpInReceives 3",
            "Xfrm-In 3",
            "XfrmInError 18446744073709551616",
        ] {
            assert!(parse_xfrm_stat(text).is_err(), "{text:?}");
        }
        let big = parse_xfrm_stat("XfrmInError 18446744073709551615\nXfrmInError 1").unwrap();
        assert_eq!(big.counters, [("XfrmInError".to_owned(), u64::MAX)]);
    }

    #[test]
    #[allow(clippy::disallowed_macros)] // the skip reason belongs in the test log
    fn reads_the_live_namespace_when_the_kernel_counts() {
        match read_xfrm_stat(crate::live::test_host()) {
            Ok(s) => assert!(s.get("XfrmOutNoStates").is_some(), "{s:?}"),
            Err(ProbeError::NotFound(_)) => {
                eprintln!(
                    "skipped: no /proc/net/xfrm_stat (a kernel without CONFIG_XFRM_STATISTICS)"
                )
            }
            Err(e) => panic!("{e}"),
        }
    }
}
