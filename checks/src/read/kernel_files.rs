//! Single-value kernel files: sysctls under /proc/sys. (A network device's
//! facts are rtnetlink's, [`crate::live::links`]; the few sysfs keeps are in
//! [`super::sysfs_net`].)

use crate::facts::{sysctl_path, ProbeError};
use crate::host::HostRef;

/// Read an unsigned integer sysctl, e.g. `net.core.rmem_max`.
pub fn sysctl_u64(host: HostRef<'_>, name: &str) -> Result<u64, ProbeError> {
    let path = sysctl_path(name);
    let text = host.read_file(&path)?;
    parse_u64(&text).ok_or_else(|| {
        ProbeError::parse(
            path.display().to_string(),
            format!("expected an integer, read {:?}", text.trim()),
        )
    })
}

fn parse_u64(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sysctl_text_with_newline() {
        assert_eq!(parse_u64("212992\n"), Some(212_992));
        assert_eq!(parse_u64("abc\n"), None);
    }

    #[test]
    fn reads_a_live_sysctl() {
        // Every Linux kernel has this file and it is world-readable.
        let v =
            sysctl_u64(crate::live::test_host(), "net.core.rmem_max").expect("rmem_max readable");
        assert!(v > 0);
    }

    #[test]
    fn missing_sysctl_is_not_found() {
        let err = sysctl_u64(crate::live::test_host(), "net.core.no_such_knob").unwrap_err();
        assert!(matches!(err, ProbeError::NotFound(_)), "{err:?}");
    }
}
