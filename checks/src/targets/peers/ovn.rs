//! The OVN sources: the Southbound `Encap` table (every chassis' tunnel
//! address), this node's `ovn-encap-ip`, and the underlay family they
//! imply.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{Candidate, SourceAnswer};
use crate::ctx::Ctx;
use crate::endpoint::Endpoint;
use crate::expect::Family;

/// The SB `Encap` rows as candidates: a row whose `chassis_name` is a
/// `[nodes.NAME]` of this config (Spinifex pins the OVS system-id, the
/// chassis name, to the node name) says which node the address is.
pub(super) fn sb_encaps(ctx: &Ctx) -> SourceAnswer {
    let (rows, endpoint) = sb_encap_rows(ctx)?;
    let n = rows.len();
    let names: Vec<String> = ctx
        .config()
        .map(|c| c.nodes.keys().cloned().collect())
        .unwrap_or_default();
    Ok((
        rows.into_iter()
            .map(|r| Candidate {
                address: r.ip,
                scope: None,
                node: r.chassis.filter(|c| names.contains(c)),
            })
            .collect(),
        format!("{n} Encap rows at {endpoint}"),
    ))
}

/// Every chassis' tunnel address in the OVN_Southbound `Encap` table, and
/// the member that answered: the peer source of discovery and of
/// ipsec.xfrm's expected SA pairs alike. Err says why not (OVN read by
/// another node in a cluster run, no SB endpoint, no answer).
pub fn sb_encap_ips(ctx: &Ctx) -> Result<(Vec<IpAddr>, Endpoint), String> {
    let (rows, endpoint) = sb_encap_rows(ctx)?;
    let mut ips: Vec<IpAddr> = rows.into_iter().map(|r| r.ip).collect();
    ips.dedup();
    Ok((ips, endpoint))
}

/// [`sb_encap_ips`] with each address's chassis.
fn sb_encap_rows(ctx: &Ctx) -> Result<(Vec<crate::facts::ovsdb::EncapIp>, Endpoint), String> {
    crate::targets::ovsdb_endpoints::read_elsewhere(ctx, "SB").map_err(|f| f.summary)?;
    let endpoints = match &ctx.opts.sb_db {
        Some(list) => list.clone(),
        None => match ctx.config() {
            Ok(config) => config.sb_endpoints(),
            Err(_) => return Err("no config, so no ovn_sb_addr (pass --sb-db)".into()),
        },
    };
    if endpoints.is_empty() {
        return Err("no ovn_sb_addr in the config".into());
    }
    let per_member = ctx.bounded(ctx.opts.probe_timeout.max(Duration::from_secs(1)));
    let deadline = (Instant::now() + per_member * 2).min(ctx.deadline());
    let budget = crate::facts::ovsdb::Budget::within(per_member, deadline);
    match crate::read::ovsdb::sb_encaps_within(ctx.host(), &endpoints, budget) {
        Ok(ans) => Ok((ans.value, ans.endpoint)),
        Err(e) => Err(format!("{} ({e})", crate::endpoint::join(&endpoints))),
    }
}

/// This node's `ovn-encap-ip` (empty when the key is unset) and the
/// endpoint that said so; Err when the local OVS database is absent or did
/// not answer.
pub fn local_encap(ctx: &Ctx) -> Result<(Vec<IpAddr>, Endpoint), String> {
    let (endpoint, _) = crate::targets::ovsdb_endpoints::ovs(ctx).map_err(|f| f.summary)?;
    if let Endpoint::Unix(path) = &endpoint {
        if !ctx.host().exists(path) {
            return Err(format!("no local OVS database at {endpoint}"));
        }
    }
    crate::read::ovsdb::local_encap_ips(ctx.host(), &endpoint, ctx.bounded(Duration::from_secs(1)))
        .map(|ips| (ips, endpoint))
        .map_err(|e| e.to_string())
}

/// The address family of this node's overlay endpoint, and how it is known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnderlayFamily {
    pub family: Family,
    /// Where it was read, or why IPv4 is assumed.
    pub source: String,
    /// False when nothing said: IPv4, Spinifex's default, is assumed.
    pub known: bool,
}

/// The family of the outer header the overlay uses (IPv6 costs 20 bytes of
/// guest MTU): this node's `ovn-encap-ip` in the local Open_vSwitch row,
/// else the SB `Encap` rows when they agree on one family, else IPv4
/// (Spinifex's default) with `known: false`. With both families among this
/// node's encap IPs the IPv6 overhead applies, because the guest MTU must
/// fit every tunnel.
pub fn underlay_family(ctx: &Ctx) -> UnderlayFamily {
    let mut why = Vec::new();
    match local_encap(ctx) {
        Ok((ips, endpoint)) if !ips.is_empty() => {
            let family = if ips.iter().any(IpAddr::is_ipv6) {
                Family::Ipv6
            } else {
                Family::Ipv4
            };
            let list: Vec<String> = ips.iter().map(IpAddr::to_string).collect();
            return UnderlayFamily {
                family,
                source: format!("ovn-encap-ip {} at {endpoint}", list.join(",")),
                known: true,
            };
        }
        Ok((_, endpoint)) => why.push(format!("no ovn-encap-ip at {endpoint}")),
        Err(e) => why.push(e),
    }
    match sb_encaps(ctx) {
        Ok((cands, note)) if !cands.is_empty() => {
            let v6 = cands.iter().filter(|c| c.address.is_ipv6()).count();
            if v6 == 0 || v6 == cands.len() {
                let family = if v6 == 0 { Family::Ipv4 } else { Family::Ipv6 };
                return UnderlayFamily {
                    family,
                    source: format!("OVN SB: all {note} are {family}"),
                    known: true,
                };
            }
            why.push(format!("OVN SB: {note} mix IPv4 and IPv6"));
        }
        Ok((_, note)) => why.push(format!("OVN SB: {note}")),
        Err(e) => why.push(format!("OVN SB: {e}")),
    }
    UnderlayFamily {
        family: Family::Ipv4,
        source: format!("IPv4 assumed ({})", why.join("; ")),
        known: false,
    }
}
