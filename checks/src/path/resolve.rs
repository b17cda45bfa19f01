//! From a name to a place, through OVN's rows: an ENI or a guest's IP to
//! its logical switch port, the port to its switch, its DHCP options, its
//! security groups and its subnet's router port, its binding to a chassis,
//! the chassis to a node of the config and its geneve endpoint. Pure: the
//! rows come in ([`NbTopology`], [`SbTopology`]), a place or the one lookup
//! that failed comes out, worded as the operator would type it
//! (`no Logical_Switch_Port with spinifex:eni_id=eni-x in NB at …`).

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::facts::ovsdb::topology::{
    Acl, Chassis, NbTopology, RouterPort, SbTopology, SwitchPort, ENI_ID_KEY, VPC_ID_KEY,
};
use crate::facts::ovsdb::DhcpOptions;
use crate::validate::shown;

/// Who answered the lookups, for naming the one that failed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lookup {
    /// The NB member that answered (`tcp:198.19.0.1:6641`).
    pub nb_at: String,
    /// The SB member that answered.
    pub sb_at: String,
}

/// The lookup that failed, as one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unresolved(pub String);

impl std::fmt::Display for Unresolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A subnet's router port: where OVN routes the guest's traffic, and where
/// `gateway_mtu` would make it answer "fragmentation needed".
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gateway {
    /// The `Logical_Router_Port` (`rtr-<subnet>`).
    pub port: String,
    /// The router it is on (`vpc-<vpc>`).
    pub router: Option<String>,
    /// `networks`: its addresses, from which the ICMP error comes.
    pub networks: Vec<String>,
    /// `options:gateway_mtu`, as written.
    pub gateway_mtu: Option<String>,
    /// `ipv6_ra_configs:mtu`, as written.
    pub ra_mtu: Option<String>,
}

impl Gateway {
    fn of(lrp: &RouterPort, router: Option<&str>) -> Gateway {
        Gateway {
            port: lrp.name.clone(),
            router: router.map(str::to_owned),
            networks: lrp.networks.clone(),
            gateway_mtu: lrp.gateway_mtu.clone(),
            ra_mtu: lrp.ra_mtu.clone(),
        }
    }

    /// `gateway_mtu` as a number, when it is one.
    pub fn gateway_mtu(&self) -> Option<u32> {
        self.gateway_mtu.as_deref()?.trim().parse().ok()
    }

    /// Its first address of `ipv6` or not.
    pub fn address(&self, ipv6: bool) -> Option<IpAddr> {
        self.networks
            .iter()
            .filter_map(|n| n.split('/').next()?.parse::<IpAddr>().ok())
            .find(|a| a.is_ipv6() == ipv6)
    }
}

/// Where a logical port is bound: the chassis, its node, its tunnel end.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bound {
    /// `Chassis.name` (the node's OVS system-id).
    pub chassis: String,
    pub hostname: Option<String>,
    /// The `[nodes.*]` this chassis is (by name, else by hostname).
    pub node: Option<String>,
    /// Its geneve endpoint (SB `Encap.ip`).
    pub encap: Option<IpAddr>,
}

/// A guest's port, resolved.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestPort {
    /// The `Logical_Switch_Port` (`port-<eni>`).
    pub lsp: String,
    pub eni: Option<String>,
    pub macs: Vec<String>,
    pub ips: Vec<IpAddr>,
    pub switch: Option<String>,
    pub subnet: Option<String>,
    pub vpc: Option<String>,
    /// The `DHCP_Options` row the port carries (`dhcpv4_options`).
    pub dhcp: Option<DhcpOptions>,
    /// Its subnet's router port.
    pub gateway: Option<Gateway>,
    /// The port groups (security groups) it is in.
    pub port_groups: Vec<String>,
    /// Their ACLs and its switch's.
    pub acls: Vec<Acl>,
    pub bound: Bound,
}

impl GuestPort {
    /// The MTU OVN offers the guest: IPv4's DHCP `options:mtu`, else the
    /// router advertisement's `ipv6_ra_configs:mtu`, as a number.
    pub fn offered_mtu(&self) -> Option<(u32, OfferedBy)> {
        if let Some(m) = self
            .dhcp
            .as_ref()
            .and_then(|d| d.mtu.as_deref()?.trim().parse().ok())
        {
            return Some((m, OfferedBy::Dhcp));
        }
        let ra = self
            .gateway
            .as_ref()?
            .ra_mtu
            .as_deref()?
            .trim()
            .parse()
            .ok()?;
        Some((ra, OfferedBy::RouterAdvertisement))
    }

    /// Whether its own address is IPv6 (and none is IPv4).
    pub fn ipv6(&self) -> bool {
        !self.ips.is_empty() && self.ips.iter().all(IpAddr::is_ipv6)
    }
}

/// Where the guest's MTU comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OfferedBy {
    /// The port's `DHCP_Options` `options:mtu` (IPv4).
    Dhcp,
    /// Its router port's `ipv6_ra_configs:mtu` (IPv6).
    RouterAdvertisement,
    /// QEMU's `host_mtu` (no DHCP or RA MTU).
    HostMtu,
}

/// A node as an endpoint: the underlay path alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodePlace {
    pub node: String,
    pub bound: Bound,
}

/// How the two guests' switches are joined.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Routing {
    /// Both on one logical switch: L2 all the way.
    SameSwitch { switch: String },
    /// Through a logical router: in at one router port, out at the other.
    Routed {
        router: String,
        ingress: Box<Gateway>,
        egress: Box<Gateway>,
    },
}

/// The `Logical_Switch_Port` of an ENI: `spinifex:eni_id`, else its name
/// `port-<eni>`.
pub fn port_by_eni<'a>(
    nb: &'a NbTopology,
    eni: &str,
    at: &Lookup,
) -> Result<&'a SwitchPort, Unresolved> {
    let name = crate::spinifex::eni_port(eni);
    nb.ports
        .iter()
        .find(|p| p.eni.as_deref() == Some(eni))
        .or_else(|| nb.ports.iter().find(|p| p.name == name))
        .ok_or_else(|| {
            Unresolved(format!(
                "no Logical_Switch_Port with {ENI_ID_KEY}={eni} (or named {name}) in NB at {}",
                at.nb_at
            ))
        })
}

/// The `Logical_Switch_Port` named `name` (an OVS `iface-id`).
pub fn port_by_name<'a>(
    nb: &'a NbTopology,
    name: &str,
    at: &Lookup,
) -> Result<&'a SwitchPort, Unresolved> {
    nb.ports.iter().find(|p| p.name == name).ok_or_else(|| {
        Unresolved(format!(
            "no Logical_Switch_Port named {} in NB at {}",
            shown(name),
            at.nb_at
        ))
    })
}

/// The guest port whose `addresses` hold `ip`, in `vpc` when given. Two
/// VPCs may use the same private range: more than one match is refused,
/// naming them, unless `--vpc` chooses.
pub fn port_by_ip<'a>(
    nb: &'a NbTopology,
    ip: IpAddr,
    vpc: Option<&str>,
    at: &Lookup,
) -> Result<&'a SwitchPort, Unresolved> {
    let hits: Vec<&SwitchPort> = nb
        .ports
        .iter()
        .filter(|p| p.kind.is_empty() && p.macs_and_ips().1.contains(&ip))
        .filter(|p| vpc.is_none() || p.vpc.as_deref() == vpc)
        .collect();
    match hits.as_slice() {
        [one] => Ok(one),
        [] => Err(Unresolved(format!(
            "no Logical_Switch_Port with address {ip}{} in NB at {}",
            vpc.map(|v| format!(" and {VPC_ID_KEY}={v}"))
                .unwrap_or_default(),
            at.nb_at
        ))),
        many => Err(Unresolved(format!(
            "{ip} is the address of {} Logical_Switch_Ports in NB at {}: {}; name the VPC with --vpc",
            many.len(),
            at.nb_at,
            many.iter()
                .map(|p| format!(
                    "{} ({})",
                    p.name,
                    p.vpc.as_deref().unwrap_or("no spinifex:vpc_id")
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The `[nodes.*]` a chassis is: its name (Spinifex pins the system-id to
/// the node's name), else its hostname.
pub fn node_of(chassis: &Chassis, nodes: &[String]) -> Option<String> {
    nodes
        .iter()
        .find(|n| **n == chassis.name)
        .or_else(|| {
            let h = chassis.hostname.as_deref()?;
            nodes.iter().find(|n| *n == h)
        })
        .cloned()
}

fn bound_of(chassis: &Chassis, nodes: &[String]) -> Bound {
    Bound {
        chassis: chassis.name.clone(),
        hostname: chassis.hostname.clone(),
        node: node_of(chassis, nodes),
        encap: chassis.geneve_ips().first().copied(),
    }
}

/// A guest port with everything OVN says about its place.
pub fn guest(
    nb: &NbTopology,
    sb: &SbTopology,
    port: &SwitchPort,
    nodes: &[String],
    at: &Lookup,
) -> Result<GuestPort, Unresolved> {
    let binding = sb
        .bindings
        .iter()
        .find(|b| b.logical_port == port.name)
        .ok_or_else(|| {
            Unresolved(format!(
                "no Port_Binding for logical port {} in SB at {} (northd has not bound it yet)",
                port.name, at.sb_at
            ))
        })?;
    let chassis_uuid = binding.chassis.as_deref().ok_or_else(|| {
        Unresolved(format!(
            "Port_Binding {} in SB at {} has no chassis: no node has claimed it (its guest is not running, or its tap is not on br-int with external_ids:iface-id={})",
            port.name, at.sb_at, port.name
        ))
    })?;
    let chassis = sb
        .chassis
        .iter()
        .find(|c| c.uuid == chassis_uuid)
        .ok_or_else(|| {
            Unresolved(format!(
                "Port_Binding {} in SB at {} names Chassis {chassis_uuid}, which is no row",
                port.name, at.sb_at
            ))
        })?;
    let switch = nb.switches.iter().find(|s| s.ports.contains(&port.uuid));
    let groups: Vec<&crate::facts::ovsdb::topology::PortGroup> = nb
        .port_groups
        .iter()
        .filter(|g| g.ports.contains(&port.uuid))
        .collect();
    let mut acl_ids: Vec<&String> = groups.iter().flat_map(|g| g.acls.iter()).collect();
    if let Some(s) = switch {
        acl_ids.extend(s.acls.iter());
    }
    let acls: Vec<Acl> = nb
        .acls
        .iter()
        .filter(|a| acl_ids.contains(&&a.uuid))
        .cloned()
        .collect();
    let (macs, ips) = port.macs_and_ips();
    let dhcp = port
        .dhcpv4_options
        .as_ref()
        .and_then(|u| nb.dhcp.iter().find(|d| &d.uuid == u))
        .cloned();
    let gateways = switch.map(|s| gateways_of(nb, s)).unwrap_or_default();
    Ok(GuestPort {
        lsp: port.name.clone(),
        eni: port.eni.clone(),
        macs,
        ips,
        switch: switch.map(|s| s.name.clone()),
        subnet: port
            .subnet
            .clone()
            .or_else(|| switch.and_then(|s| s.subnet.clone())),
        vpc: port
            .vpc
            .clone()
            .or_else(|| switch.and_then(|s| s.vpc.clone())),
        dhcp,
        gateway: gateways.into_iter().next(),
        port_groups: groups.iter().map(|g| g.name.clone()).collect(),
        acls,
        bound: bound_of(chassis, nodes),
    })
}

/// The router ports a switch reaches through its `router` ports.
fn gateways_of(nb: &NbTopology, switch: &crate::facts::ovsdb::topology::Switch) -> Vec<Gateway> {
    let mut out = Vec::new();
    for lsp in nb
        .ports
        .iter()
        .filter(|p| p.kind == "router" && switch.ports.contains(&p.uuid))
    {
        let Some(lrp_name) = &lsp.router_port else {
            continue;
        };
        let Some(lrp) = nb.router_ports.iter().find(|r| &r.name == lrp_name) else {
            continue;
        };
        let router = nb.routers.iter().find(|r| r.ports.contains(&lrp.uuid));
        out.push(Gateway::of(lrp, router.map(|r| r.name.as_str())));
    }
    out
}

/// A node of the config as an endpoint: its chassis (by name, else by
/// hostname) and geneve endpoint.
pub fn node_place(sb: &SbTopology, node: &str, at: &Lookup) -> Result<NodePlace, Unresolved> {
    let nodes = [node.to_owned()];
    let chassis = sb
        .chassis
        .iter()
        .find(|c| c.name == node)
        .or_else(|| {
            sb.chassis
                .iter()
                .find(|c| c.hostname.as_deref() == Some(node))
        })
        .ok_or_else(|| {
            Unresolved(format!(
                "no Chassis named {node} (or with hostname {node}) in SB at {}",
                at.sb_at
            ))
        })?;
    Ok(NodePlace {
        node: node.to_owned(),
        bound: bound_of(chassis, &nodes),
    })
}

/// How two guests' switches are joined: one switch, or one router between
/// their subnets' router ports.
pub fn routing(
    nb: &NbTopology,
    a: &GuestPort,
    b: &GuestPort,
    at: &Lookup,
) -> Result<Routing, Unresolved> {
    if let (Some(sa), Some(sb)) = (&a.switch, &b.switch) {
        if sa == sb {
            return Ok(Routing::SameSwitch { switch: sa.clone() });
        }
    }
    let switch = |name: &Option<String>| {
        name.as_ref()
            .and_then(|n| nb.switches.iter().find(|s| &s.name == n))
    };
    let (Some(sa), Some(sb)) = (switch(&a.switch), switch(&b.switch)) else {
        return Err(Unresolved(format!(
            "{} or {} is on no Logical_Switch in NB at {}",
            a.lsp, b.lsp, at.nb_at
        )));
    };
    let ga = gateways_of(nb, sa);
    let gb = gateways_of(nb, sb);
    for ingress in &ga {
        if let Some(egress) = gb
            .iter()
            .find(|g| g.router.is_some() && g.router == ingress.router)
        {
            return Ok(Routing::Routed {
                router: ingress.router.clone().unwrap_or_default(),
                ingress: Box::new(ingress.clone()),
                egress: Box::new(egress.clone()),
            });
        }
    }
    Err(Unresolved(format!(
        "no Logical_Router joins {} and {} in NB at {}: the two guests have no path in OVN",
        sa.name, sb.name, at.nb_at
    )))
}
