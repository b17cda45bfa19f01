//! Peers as facts: a `--peer` as the operator gave it ([`FlagPeer`]), and
//! the parser of Spinifex's nft peer defines ([`parse_nft_define`]).
use serde::{Deserialize, Serialize, Serializer};
use std::net::IpAddr;

/// A `--peer` as the binary resolved it, once: an address, and for a
/// link-local IPv6 one the interface it is on (by name). A name was
/// resolved to its addresses before the run. Written, in bundles too, as
/// the operator writes it: `198.18.0.2`, `fe80::2%eth0`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FlagPeer {
    pub address: IpAddr,
    pub interface: Option<String>,
}

impl std::fmt::Display for FlagPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.interface {
            Some(i) => write!(f, "{}%{i}", self.address),
            None => write!(f, "{}", self.address),
        }
    }
}

impl std::str::FromStr for FlagPeer {
    type Err = String;

    /// An address as [`FlagPeer`] writes it (never a name: names are
    /// resolved before a run).
    fn from_str(text: &str) -> Result<FlagPeer, String> {
        if let Some(scoped) = crate::validate::scoped_ipv6(text) {
            let (addr, interface) = scoped?;
            return Ok(FlagPeer {
                address: IpAddr::V6(addr),
                interface: Some(interface.to_owned()),
            });
        }
        let address: IpAddr = text
            .parse()
            .map_err(|_| format!("{text:?} is not an IP address"))?;
        Ok(FlagPeer {
            address,
            interface: None,
        })
    }
}

impl Serialize for FlagPeer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FlagPeer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<FlagPeer, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// The interface a link-local IPv6 peer is reached on (the `%eth0` of
/// `fe80::2%eth0`), resolved to its index. Serialized as the name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Scope {
    pub interface: String,
    pub index: u32,
}

impl Serialize for Scope {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.interface)
    }
}

/// Read back from a report: the name only. The index is this host's and
/// means nothing elsewhere, so it is 0 (never used to probe).
impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Scope, D::Error> {
        Ok(Scope {
            interface: String::deserialize(d)?,
            index: 0,
        })
    }
}

/// `198.18.0.2`, or `fe80::2%eth0` for a scoped link-local address.
pub fn display(address: IpAddr, scope: Option<&Scope>) -> String {
    match scope {
        Some(s) => format!("{address}%{}", s.interface),
        None => address.to_string(),
    }
}

/// True for an address that can only be reached through a named interface.
pub fn needs_scope(address: IpAddr) -> bool {
    matches!(address, IpAddr::V6(a) if a.is_unicast_link_local())
}
/// The addresses of `define NAME = { a, b }` (or `define NAME = a`) in nft
/// text; None when the file does not define NAME. `#` comments are
/// ignored, elements may span lines, a host prefix (`/32`, `/128`) is
/// accepted, anything else (a wider prefix, a `$variable`, a range, an
/// address with a scope id, which nft cannot carry) is an error naming it,
/// because silently dropping a peer would hide it from every check.
pub fn parse_nft_define(text: &str, name: &str) -> Result<Option<Vec<IpAddr>>, String> {
    let clean: String = text
        .lines()
        .map(|l| l.split_once('#').map_or(l, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n");
    let mut rest = clean.as_str();
    let value = loop {
        let Some(at) = find_word(rest, "define") else {
            return Ok(None);
        };
        let after = rest[at + "define".len()..].trim_start();
        let ident_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let (ident, tail) = after.split_at(ident_len);
        rest = tail;
        if ident != name {
            continue;
        }
        let tail = tail.trim_start();
        let Some(tail) = tail.strip_prefix('=') else {
            return Err(format!("`define {name}` has no `=`"));
        };
        let tail = tail.trim_start();
        if let Some(body) = tail.strip_prefix('{') {
            let end = body
                .find('}')
                .ok_or_else(|| format!("`define {name}`: unclosed `{{`"))?;
            break &body[..end];
        }
        let end = tail.find(['\n', ';']).unwrap_or(tail.len());
        break &tail[..end];
    };
    let mut ips = Vec::new();
    for item in value
        .split([',', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        if item.contains('%') {
            return Err(format!(
                "`define {name}`: {item:?} has a scope id, which an nft set cannot hold (name a link-local peer with --peer ADDR%IF)"
            ));
        }
        let (addr, prefix) = match item.split_once('/') {
            Some((a, p)) => (a.trim(), Some(p.trim())),
            None => (item, None),
        };
        let ip: IpAddr = addr
            .parse()
            .map_err(|_| format!("`define {name}`: {item:?} is not an address"))?;
        if let Some(p) = prefix {
            let host = if ip.is_ipv4() { "32" } else { "128" };
            if p != host {
                return Err(format!(
                    "`define {name}`: {item:?} is a network, not a peer"
                ));
            }
        }
        if !ips.contains(&ip) {
            ips.push(ip);
        }
    }
    Ok(Some(ips))
}

/// Byte offset of `word` standing alone (not inside a longer identifier).
pub(crate) fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(word) {
        let at = from + i;
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        if boundary(before) && boundary(after) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}
