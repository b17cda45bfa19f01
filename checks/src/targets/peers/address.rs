//! Peer addresses as operators write them: `198.18.0.2`, `fd00::2`, and a
//! link-local IPv6 address with the interface it is on, `fe80::2%eth0`;
//! the interface looked up on this host.

use std::net::IpAddr;

use super::Candidate;
use crate::facts::peers::{needs_scope, FlagPeer, Scope};
use crate::facts::ProbeError;
use crate::host::HostRef;

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
