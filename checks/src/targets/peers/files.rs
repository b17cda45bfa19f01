//! The file and config sources: `peers.nft`'s defines and the config's
//! `[nodes.*]` (names looked up within a bound).

use std::net::IpAddr;
use std::path::Path;

use super::address::{parse_address, ParsedAddress};
use super::{Candidate, SourceAnswer, NAME_LOOKUP_BOUND};
use crate::ctx::Ctx;
use crate::facts::peers::parse_nft_define;
use crate::facts::ProbeError;
use crate::host::HostRef;
use crate::spinifex::ENCAP_PEERS_DEFINE;

pub(super) fn config_nodes(ctx: &Ctx) -> SourceAnswer {
    let config = ctx.config().map_err(|f| f.summary)?;
    let this = config.node.as_deref();
    let mut wanted: Vec<(String, String)> = Vec::new(); // (node, host text)
    for (name, node) in &config.nodes {
        if Some(name.as_str()) == this {
            continue;
        }
        if let Some(h) = node.advertise.as_ref().or(node.host.as_ref()) {
            wanted.push((name.clone(), h.clone()));
        }
    }
    let mut out = Vec::new();
    let mut problems = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut addresses: Vec<(String, ParsedAddress)> = Vec::new();
    for (node, host) in &wanted {
        let parsed = parse_address(ctx.host(), host);
        if matches!(parsed, Ok(None)) {
            names.push(host.clone());
        }
        addresses.push((node.clone(), parsed));
    }
    let mut resolved = ctx.host().resolve(&names, ctx.bounded(NAME_LOOKUP_BOUND));
    for ((node, host), (_, parsed)) in wanted.into_iter().zip(addresses) {
        match parsed {
            Ok(Some((address, scope))) => {
                out.push(Candidate {
                    address,
                    scope,
                    node: Some(node),
                });
                continue;
            }
            Err(e) => {
                problems.push(format!("[nodes.{node}] {e}"));
                continue;
            }
            Ok(None) => {}
        }
        match resolved.remove(&host) {
            Some(Ok(ips)) => out.extend(ips.into_iter().map(|address| Candidate {
                address,
                scope: None,
                node: Some(node.clone()),
            })),
            Some(Err(e)) => problems.push(format!("[nodes.{node}] {host:?}: {e}")),
            None => problems.push(format!(
                "[nodes.{node}] {host:?}: name lookup did not answer"
            )),
        }
    }
    let mut note = format!(
        "{} addresses from [nodes.*] advertise/host (wan plane)",
        out.len()
    );
    if !problems.is_empty() {
        note.push_str(&format!(" ({})", problems.join("; ")));
    }
    Ok((out, note))
}

/// Read `define spinifex_encap_peers` from a peers.nft file. A file
/// without the define names no peer; a malformed define is a parse error.
pub fn read_peers_nft(host: HostRef<'_>, path: &Path) -> Result<Vec<IpAddr>, ProbeError> {
    read_peers_nft_define(host, path, ENCAP_PEERS_DEFINE)
        .map(|c| c.into_iter().map(|c| c.address).collect())
}

/// Read `define NAME` from a peers.nft file, as candidates.
pub(super) fn read_peers_nft_define(
    host: HostRef<'_>,
    path: &Path,
    define: &str,
) -> Result<Vec<Candidate>, ProbeError> {
    let text = host.read_file(path)?;
    match parse_nft_define(&text, define) {
        Ok(Some(ips)) => Ok(ips.into_iter().map(Candidate::from).collect()),
        Ok(None) => Ok(Vec::new()),
        Err(e) => Err(ProbeError::parse(path.display().to_string(), e)),
    }
}
