//! Peer addresses as operators write them: `198.18.0.2`, `fd00::2`, and a
//! link-local IPv6 address with the interface it is on, `fe80::2%eth0`;
//! the interface looked up on this host.

use std::net::IpAddr;

use serde::{Deserialize, Serialize, Serializer};

use super::Candidate;
use crate::facts::ProbeError;
use crate::host::HostRef;

/// A `--peer` as the binary resolved it, once: an address, and for a
/// link-local IPv6 one the interface it is on (by name). A name was
/// resolved to its addresses before the run. Written, in bundles too, as
/// the operator writes it: `198.18.0.2`, `fe80::2%eth0`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FlagPeer {
    pub address: IpAddr,
    pub interface: Option<String>,
}

impl FlagPeer {
    /// This peer on this host: its interface (if any) looked up.
    pub(super) fn candidate(&self, host: HostRef<'_>) -> Result<Candidate, String> {
        let scope = match &self.interface {
            Some(name) => Some(
                resolve_scope(host, name).map_err(|e| format!("{:?}: {e}", self.to_string()))?,
            ),
            None => None,
        };
        Ok(Candidate {
            address: self.address,
            scope,
            node: None,
        })
    }
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

/// The interface `scope` (a name or an index) names on this host.
pub fn resolve_scope(host: HostRef<'_>, scope: &str) -> Result<Scope, String> {
    let link = match scope.parse::<u32>() {
        Ok(index) => host.link_by_index(index),
        Err(_) => host.link_by_name(scope),
    };
    match link {
        Ok(l) => Ok(Scope {
            interface: l.name,
            index: l.index,
        }),
        Err(ProbeError::NotFound(_)) => Err(format!("no interface {scope} on this host")),
        Err(e) => Err(format!("interface {scope}: {e}")),
    }
}

/// A peer address: Ok(None) when the text is not an address (a name).
pub type ParsedAddress = Result<Option<(IpAddr, Option<Scope>)>, String>;

/// A peer address as written: `198.18.0.2`, `fd00::2`, or a link-local
/// IPv6 address with the interface it is on, `fe80::2%eth0` (or `%3`),
/// whose interface is looked up here. Ok(None): not an address (a name).
pub fn parse_address(host: HostRef<'_>, text: &str) -> ParsedAddress {
    if let Some(scoped) = crate::validate::scoped_ipv6(text) {
        let (addr, scope) = scoped?;
        let scope = resolve_scope(host, scope).map_err(|e| format!("{text:?}: {e}"))?;
        return Ok(Some((IpAddr::V6(addr), Some(scope))));
    }
    Ok(text.parse::<IpAddr>().ok().map(|ip| (ip, None)))
}

/// True for an address that can only be reached through a named interface.
pub fn needs_scope(address: IpAddr) -> bool {
    matches!(address, IpAddr::V6(a) if a.is_unicast_link_local())
}

/// A `--peer` value that is an address, checked as the flag parser must:
/// Ok(Some(the address as the run will use it, its interface looked up
/// here)), Ok(None) for a host name, or why it cannot be probed (a
/// link-local address without its interface, a scope naming no interface
/// here).
pub fn flag_address(host: HostRef<'_>, text: &str) -> Result<Option<FlagPeer>, String> {
    match parse_address(host, text)? {
        Some((ip, None)) if needs_scope(ip) => Err(format!(
            "{text:?} is link-local: name the interface it is on, e.g. {ip}%eth0"
        )),
        Some((address, scope)) => Ok(Some(FlagPeer {
            address,
            interface: scope.map(|s| s.interface),
        })),
        None => Ok(None),
    }
}
