//! Validation of every string that comes from outside (config, flags) before
//! it is used as a name, an address or a path. Nothing the doctor runs goes
//! through a shell, but an interface name or a host is still refused early
//! with the key that carried it, rather than failing strangely later.

use std::net::{IpAddr, Ipv6Addr};

/// The longest value accepted for any single field.
pub const MAX_LEN: usize = 1024;

/// A value as quoted back in an error: cut to 64 characters, so a hostile
/// 10 KB value gives a one-line refusal, not a 10 KB one.
pub fn shown(text: &str) -> String {
    const MAX: usize = 64;
    if text.chars().count() <= MAX {
        format!("{text:?}")
    } else {
        let head: String = text.chars().take(MAX).collect();
        format!("{head:?}… ({} bytes)", text.len())
    }
}

/// No control characters (newline, NUL, escape…) and a sane length.
pub fn plain_text(text: &str) -> Result<(), String> {
    if text.len() > MAX_LEN {
        return Err(format!(
            "value is {} bytes long (at most {MAX_LEN})",
            text.len()
        ));
    }
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(format!("value contains the control character {c:?}"));
    }
    Ok(())
}

/// A network interface name as the kernel accepts it: 1..=15 bytes, no '/',
/// no whitespace, no ':' and no control characters, not "." or "..".
pub fn interface(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 15 {
        return Err(format!(
            "interface name {} must be 1 to 15 bytes",
            shown(name)
        ));
    }
    if name == "." || name == ".." {
        return Err(format!("{} is not an interface name", shown(name)));
    }
    if let Some(c) = name
        .chars()
        .find(|c| *c == '/' || *c == ':' || c.is_whitespace() || c.is_control())
    {
        return Err(format!("interface name {} contains {c:?}", shown(name)));
    }
    Ok(())
}

/// A link-local IPv6 address with the interface it is on, `fe80::1%eth0`
/// (or an interface index, `fe80::1%3`): None when `text` has no `%`,
/// else the address and the scope as written, or why it is not one. Only
/// link-local unicast addresses (fe80::/10) need a scope, so a scope on any
/// other address is refused rather than silently ignored.
pub fn scoped_ipv6(text: &str) -> Option<Result<(Ipv6Addr, &str), String>> {
    let (addr, scope) = text.split_once('%')?;
    Some((|| {
        let ip: IpAddr = addr
            .parse()
            .map_err(|_| format!("{} is not an IP address with a scope id", shown(text)))?;
        let IpAddr::V6(v6) = ip else {
            return Err(format!(
                "{}: a scope id (%{scope}) applies only to link-local IPv6 addresses (fe80::/10)",
                shown(text)
            ));
        };
        if !v6.is_unicast_link_local() {
            return Err(format!(
                "{}: a scope id (%{scope}) applies only to link-local IPv6 addresses (fe80::/10), and {v6} is not one",
                shown(text)
            ));
        }
        if scope.contains('%') {
            return Err(format!("{}: the scope id contains '%'", shown(text)));
        }
        if !scope.bytes().all(|b| b.is_ascii_digit()) || scope.is_empty() {
            interface(scope).map_err(|e| format!("{}: {e}", shown(text)))?;
        }
        Ok((v6, scope))
    })())
}

/// An IP address, a link-local IPv6 address with its scope
/// ([`scoped_ipv6`]), or a DNS host name (RFC 1123 labels).
pub fn host(text: &str) -> Result<(), String> {
    plain_text(text)?;
    if text.parse::<IpAddr>().is_ok() {
        return Ok(());
    }
    if let Some(scoped) = scoped_ipv6(text) {
        return scoped.map(|_| ());
    }
    let ok = !text.is_empty()
        && text.len() <= 253
        && text.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{} is neither an IP address nor a host name",
            shown(text)
        ))
    }
}

/// A host with an optional port, as in `[nodes.X] host`: `198.18.3.181`,
/// `198.18.3.181:8443`, `[fd00::1]:8443`, `fd00::1`, `spx1.lan`. Returns the
/// host part.
pub fn host_maybe_port(text: &str) -> Result<String, String> {
    plain_text(text)?;
    if text.parse::<IpAddr>().is_ok() {
        return Ok(text.to_owned());
    }
    if let Some(scoped) = scoped_ipv6(text).filter(|_| !text.starts_with('[')) {
        return scoped.map(|_| text.to_owned());
    }
    let name = if let Some(rest) = text.strip_prefix('[') {
        let (h, port) = rest
            .split_once(']')
            .ok_or_else(|| format!("{}: unclosed '['", shown(text)))?;
        if !(port.is_empty() || port.strip_prefix(':').is_some_and(is_port)) {
            return Err(format!("{}: bad port", shown(text)));
        }
        h
    } else if let Some((h, port)) = text.rsplit_once(':') {
        if !is_port(port) {
            return Err(format!("{}: bad port {}", shown(text), shown(port)));
        }
        h
    } else {
        text
    };
    host(name)?;
    Ok(name.to_owned())
}

fn is_port(p: &str) -> bool {
    p.parse::<u16>().is_ok_and(|p| p != 0)
}

/// A node name (a `[nodes.NAME]` key, `node = "…"`).
pub fn node_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 {
        return Err(format!("node name {} must be 1 to 64 bytes", shown(name)));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!("node name {} contains {c:?}", shown(name)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names() {
        for good in ["br-vpc", "eth0", "enp0s16", "tapeni-0123456789", "a"] {
            if good.len() <= 15 {
                assert!(interface(good).is_ok(), "{good}");
            }
        }
        for bad in [
            "",
            "this-is-too-long0",
            "a/b",
            "a b",
            "eth0\n",
            "..",
            "a:1",
            "x\0",
        ] {
            assert!(interface(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn hosts_and_ports() {
        assert_eq!(host_maybe_port("198.18.3.181").unwrap(), "198.18.3.181");
        assert_eq!(
            host_maybe_port("198.18.3.181:8443").unwrap(),
            "198.18.3.181"
        );
        assert_eq!(host_maybe_port("[fd00::1]:8443").unwrap(), "fd00::1");
        assert_eq!(host_maybe_port("fd00::1").unwrap(), "fd00::1");
        assert_eq!(host_maybe_port("spx1.lan").unwrap(), "spx1.lan");
        for bad in [
            "$(reboot)",
            "a;b",
            "`id`",
            "x\ny",
            "h:0",
            "h:port",
            "-bad",
            "",
        ] {
            assert!(host_maybe_port(bad).is_err(), "{bad:?}");
        }
        assert!(host_maybe_port(&"a".repeat(10_000)).is_err());
    }

    #[test]
    fn link_local_addresses_carry_their_interface() {
        let (a, s) = scoped_ipv6("fe80::1%eth0").unwrap().unwrap();
        assert_eq!((a.to_string().as_str(), s), ("fe80::1", "eth0"));
        assert_eq!(scoped_ipv6("fe80::1%3").unwrap().unwrap().1, "3");
        assert!(scoped_ipv6("fe80::1").is_none());
        assert_eq!(host_maybe_port("fe80::1%eth0").unwrap(), "fe80::1%eth0");
        assert_eq!(
            host_maybe_port("[fe80::1%eth0]:8443").unwrap(),
            "fe80::1%eth0"
        );
        for (bad, says) in [
            ("198.18.0.1%eth0", "applies only to link-local IPv6"),
            ("fd00::1%eth0", "fd00::1 is not one"),
            ("fe80::1%", "must be 1 to 15 bytes"),
            ("fe80::1%a/b", "contains '/'"),
            ("fe80::1%eth0%eth1", "contains '%'"),
            ("nothing%eth0", "is not an IP address with a scope id"),
        ] {
            let e = host(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn refusals_quote_at_most_64_characters() {
        let long = "x".repeat(10_000);
        let e = node_name(&long).unwrap_err();
        assert!(e.len() < 120, "{e}");
        assert!(e.contains("(10000 bytes)"), "{e}");
        assert_eq!(shown("eth0"), "\"eth0\"");
    }

    #[test]
    fn node_names() {
        assert!(node_name("spx1").is_ok());
        assert!(node_name("node_a.b-c").is_ok());
        assert!(node_name("a;b").is_err());
        assert!(node_name("").is_err());
    }
}
