//! The file and config sources: `peers.nft`'s defines and the config's
//! `[nodes.*]` (names looked up within a bound).

use std::collections::HashMap;
use std::net::{IpAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::address::{parse_address, ParsedAddress};
use super::{Candidate, SourceAnswer, NAME_LOOKUP_BOUND};
use crate::ctx::Ctx;
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

/// Resolve host names on this machine, concurrently, each within `bound`
/// overall. A name that does not answer in time is absent from the map.
/// Checks ask [`HostRef::resolve`], whose live answer this is.
pub fn lookup_names(
    names: &[String],
    bound: Duration,
) -> HashMap<String, Result<Vec<IpAddr>, String>> {
    let (tx, rx) = mpsc::channel();
    for name in names {
        if crate::validate::host(name).is_err() {
            let _ = tx.send((name.clone(), Err("not a host name".to_owned())));
            continue;
        }
        let tx = tx.clone();
        let name = name.clone();
        // The lookup thread may outlive the bound; it is detached and the
        // process does not wait for it.
        std::thread::spawn(move || {
            let answer = (name.as_str(), 0u16)
                .to_socket_addrs()
                .map(|a| {
                    let mut ips: Vec<IpAddr> = Vec::new();
                    for ip in a.map(|s| s.ip()) {
                        if !ips.contains(&ip) {
                            ips.push(ip);
                        }
                    }
                    ips
                })
                .map_err(|e| format!("does not resolve ({e})"))
                .and_then(|ips| {
                    if ips.is_empty() {
                        Err("does not resolve".to_owned())
                    } else {
                        Ok(ips)
                    }
                });
            let _ = tx.send((name, answer));
        });
    }
    drop(tx);
    let deadline = Instant::now() + bound;
    let mut out = HashMap::new();
    while out.len() < names.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((name, answer)) => {
                out.insert(name, answer);
            }
            Err(_) => break,
        }
    }
    out
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
pub(super) fn find_word(text: &str, word: &str) -> Option<usize> {
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
