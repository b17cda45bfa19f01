//! A node's side of the path, read through the seam ([`crate::Ctx::host`]):
//! the guest's QEMU and its taps, the node's OVS database, and its way to
//! the peer (the egress device, the SAs, a fresh DF probe at exactly the
//! outer size the guest packet needs there). Every read is a
//! [`crate::host::Request`], so `--record` keeps it and `--replay` answers
//! it; nothing here judges.

use std::net::IpAddr;
use std::time::Duration;

use crate::checks::mtu_path::{LocalLink, MAX_ROUNDS};
use crate::ctx::Ctx;
use crate::expect::{self, EspFormat, Family, OVN_GENEVE_OPTIONS};
use crate::facts::icmp::{Settings, Target};
use crate::facts::links;
use crate::facts::ovsdb::topology::OvsInterface;
use crate::facts::qemu::instance::{instance_id, tap_nics};
use crate::facts::qemu::QemuCommandLine;
use crate::facts::xfrm::SecurityAssociation;
use crate::facts::ProbeError;
use crate::read::{ovsdb, ovsdb_topology};
use crate::targets::{ovsdb_endpoints, peers};

use super::node::{
    GuestFacts, GuestRef, NicFacts, NodeFacts, NodeQuery, OvsFacts, Size, TapLink, Toward,
};

/// Kept back from the deadline to judge and answer.
const MARGIN: Duration = Duration::from_millis(150);

/// This node's answer to `q`.
pub fn node_facts(ctx: &Ctx, q: &NodeQuery) -> NodeFacts {
    let host = ctx.host();
    let ovs = ovs_facts(ctx);
    let interfaces: Vec<OvsInterface> = match &ovs {
        Ok((_, all)) => all.clone(),
        Err(_) => Vec::new(),
    };
    let guest = q.guest.as_ref().map(|g| guest_facts(ctx, g, &interfaces));
    let ovs = ovs.map(|(facts, _)| facts);
    let toward = q
        .peer
        .map(|peer| toward(ctx, peer, q.size, ovs.as_ref().ok()));
    NodeFacts {
        node: ctx.config().ok().and_then(|c| c.node.clone()),
        hostname: host.hostname(),
        guest,
        ovs,
        toward,
    }
}

/// The Open_vSwitch row and every interface, in two reads.
fn ovs_facts(ctx: &Ctx) -> Result<(OvsFacts, Vec<OvsInterface>), String> {
    let (endpoint, _) = ovsdb_endpoints::ovs(ctx).map_err(|f| f.summary)?;
    let budget = ovsdb_endpoints::budget(ctx);
    let row = ovsdb::ovs_row(ctx.host(), &endpoint, budget).map_err(|e| e.to_string())?;
    let interfaces = ovsdb_topology::ovs_interfaces(ctx.host(), &endpoint, budget)
        .map_err(|e| e.to_string())?
        .value;
    let encap_ips = match &row.value.ovn_encap_ip {
        Some(text) => crate::facts::ovsdb::parse_ip_list(text).map_err(|e| e.to_string())?,
        None => Vec::new(),
    };
    let facts = OvsFacts {
        endpoint: row.endpoint.to_string(),
        encap_ips,
        system_id: row.value.system_id.clone(),
        ipsec_encapsulation: row.value.ipsec_encapsulation.clone(),
        tunnels: interfaces
            .iter()
            .filter(|i| i.kind == "geneve")
            .cloned()
            .collect(),
    };
    Ok((facts, interfaces))
}

/// The QEMU that runs the guest, its tap NICs, their taps and OVS rows.
fn guest_facts(
    ctx: &Ctx,
    guest: &GuestRef,
    interfaces: &[OvsInterface],
) -> Result<GuestFacts, String> {
    let host = ctx.host();
    let discovery = host.qemu_processes().map_err(|e| e.to_string())?;
    let want_tap = match guest {
        GuestRef::Eni(eni) => Some(crate::spinifex::tap_name(eni)),
        GuestRef::Instance(_) => None,
    };
    for proc in &discovery.found {
        let Ok(cl) = QemuCommandLine::parse(&proc.argv) else {
            continue;
        };
        let instance = instance_id(&cl);
        let mut nics = tap_nics(&cl);
        match (guest, &want_tap) {
            (GuestRef::Instance(id), _) if instance.as_deref() == Some(id.as_str()) => {}
            (GuestRef::Eni(_), Some(tap)) if nics.iter().any(|n| &n.tap == tap) => {
                nics.retain(|n| &n.tap == tap);
            }
            _ => continue,
        }
        let nics = nics
            .into_iter()
            .map(|nic| {
                let tap = match host.link_by_name(&nic.tap) {
                    Ok(l) => Ok(TapLink {
                        mtu: l.mtu,
                        up: l.up,
                    }),
                    Err(e) => Err(e.to_string()),
                };
                let iface = interfaces
                    .iter()
                    .find(|i| i.name == nic.tap)
                    .or_else(|| {
                        let mac = nic.mac.as_deref()?.to_ascii_lowercase();
                        interfaces.iter().find(|i| {
                            i.attached_mac.as_deref().map(str::to_ascii_lowercase)
                                == Some(mac.clone())
                        })
                    })
                    .cloned();
                NicFacts { nic, tap, iface }
            })
            .collect();
        return Ok(GuestFacts {
            instance,
            pid: proc.pid,
            nics,
        });
    }
    let unreadable = if discovery.unreadable.is_empty() {
        String::new()
    } else {
        format!(
            " ({} QEMU processes could not be read: {})",
            discovery.unreadable.len(),
            discovery
                .unreadable
                .iter()
                .take(3)
                .map(|u| format!("pid {} {}", u.pid, u.reason))
                .collect::<Vec<_>>()
                .join("; ")
        )
    };
    Err(match (guest, want_tap) {
        (GuestRef::Eni(eni), Some(tap)) => format!(
            "no QEMU on this node has tap {tap} (ENI {eni}) among {} QEMU processes{unreadable}",
            discovery.found.len()
        ),
        (g, _) => format!(
            "no QEMU on this node runs {} (its pid file or QMP socket names it) among {} QEMU processes{unreadable}",
            g.label(),
            discovery.found.len()
        ),
    })
}

/// This node's way to `peer`: the egress device and its ports, the SAs,
/// and the probe at the outer size. A peer outside this node's own peer
/// list is not probed.
fn toward(ctx: &Ctx, peer: IpAddr, size: Size, ovs: Option<&OvsFacts>) -> Toward {
    let host = ctx.host();
    let route = host.route(peer, None);
    let egress = match &route {
        Ok(r) => host.links().map_err(|e| e.to_string()).and_then(|dump| {
            let link = links::by_index(&dump, r.oif)
                .ok_or_else(|| format!("network device interface index {} not found", r.oif))?;
            let ports = if link.is_bridge() {
                links::ports_of(&dump, link)
            } else {
                Vec::new()
            };
            Ok(LocalLink::from_link(link, &ports))
        }),
        Err(ProbeError::NotFound(_)) => Err(format!("no route to {peer}")),
        Err(e) => Err(e.to_string()),
    };
    let family = Family::of(peer);
    let local = ovs
        .and_then(|o| {
            o.encap_ips
                .iter()
                .find(|a| a.is_ipv6() == peer.is_ipv6())
                .copied()
        })
        .or_else(|| route.as_ref().ok().and_then(|r| r.preferred_source));
    let sas = host
        .xfrm_states(ctx.bounded(ctx.opts.probe_timeout))
        .map_err(|e| e.to_string())
        .map(|all| between(all, local, peer));
    let outer = match size {
        Size::Underlay(n) => Some(n),
        Size::Guest(n) => match &sas {
            Ok(list) => match outbound_esp(list, local, peer, family) {
                Ok(esp) => Some(expect::outer_size(
                    n,
                    family,
                    OVN_GENEVE_OPTIONS,
                    esp.as_ref(),
                )),
                Err(_) => None,
            },
            Err(_) => None,
        },
    };
    let listed = in_peer_list(ctx, peer);
    let mut out = Toward {
        peer,
        refused: listed.clone().err(),
        local,
        egress,
        sas,
        outer,
        probe: Err(String::new()),
        socket: None,
    };
    out.probe = match (outer, listed) {
        (_, Err(why)) => Err(why),
        (None, _) => Err(
            "the outer size is not known (the SA's ESP layout was not read), so nothing was probed"
                .into(),
        ),
        (Some(outer), Ok(())) => {
            let deadline = ctx
                .deadline()
                .checked_sub(MARGIN)
                .unwrap_or_else(std::time::Instant::now);
            let settings = Settings {
                round_timeout: ctx.opts.probe_timeout,
                deadline,
                max_rounds: MAX_ROUNDS,
            };
            let target = Target {
                addr: peer,
                scope_id: 0,
                target_mtu: outer,
            };
            match host.icmp(&[target], &settings) {
                Ok((mut probes, socket)) => {
                    out.socket = Some(socket.as_str().to_owned());
                    probes
                        .pop()
                        .ok_or_else(|| "the probe answered nothing".to_owned())
                }
                Err(e) => Err(e.to_string()),
            }
        }
    };
    out
}

/// Refuse a peer that is not in this node's own peer list (the SB `Encap`
/// table, peers.nft, the config): a path request names only a node's
/// peers, never a free address.
pub fn in_peer_list(ctx: &Ctx, peer: IpAddr) -> Result<(), String> {
    let set = peers::discover(ctx);
    if set.peers.iter().any(|p| p.address == peer) {
        Ok(())
    } else {
        Err(format!(
            "{peer} is not in this node's peer list ({}), so it was not probed",
            if set.peers.is_empty() {
                set.why_empty()
            } else {
                set.peers
                    .iter()
                    .map(|p| p.label())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ))
    }
}

/// The ESP SAs between `local` (any local address when unknown) and `peer`.
fn between(
    all: Vec<SecurityAssociation>,
    local: Option<IpAddr>,
    peer: IpAddr,
) -> Vec<SecurityAssociation> {
    all.into_iter()
        .filter(|s| s.is_esp_sa())
        .filter(|s| {
            (s.dst == peer && local.is_none_or(|l| s.src == l))
                || (s.src == peer && local.is_none_or(|l| s.dst == l))
        })
        .collect()
}

/// The ESP layout of the outbound SAs toward `peer` (the largest overhead
/// when they differ, as during a rekey); none when there is no SA (the
/// tunnel is plaintext). An SA whose layout cannot be told is an error.
pub fn outbound_esp(
    sas: &[SecurityAssociation],
    local: Option<IpAddr>,
    peer: IpAddr,
    family: Family,
) -> Result<Option<EspFormat>, String> {
    let mut best: Option<EspFormat> = None;
    for sa in sas
        .iter()
        .filter(|s| s.dst == peer && local.is_none_or(|l| s.src == l))
    {
        let layout = sa.layout.clone().unwrap_or_default();
        let algorithm = sa
            .algorithm
            .as_deref()
            .ok_or_else(|| format!("SA {:#010x} toward {peer} names no algorithm", sa.spi))?;
        let esp = EspFormat::of(
            algorithm,
            layout.icv_bits,
            layout.encap.is_some(),
            sa.mode,
            family,
        )
        .map_err(|e| format!("SA {:#010x} toward {peer}: {e}", sa.spi))?;
        // Compared on a full-size payload: the larger overhead wins.
        if best.is_none_or(|b| esp.overhead(1446) > b.overhead(1446)) {
            best = Some(esp);
        }
    }
    Ok(best)
}
