//! The rows a guest's path is resolved from, typed: the northbound logical
//! topology (switch ports, switches, DHCP options, port groups and their
//! ACLs, routers and router ports), the southbound bindings (port bindings,
//! chassis and their encaps), and a node's own OVS interfaces.
//!
//! Spinifex writes the northbound rows (spinifex/network/topology,
//! names.go): an ENI is the switch port `port-<eni>` with
//! `external_ids:spinifex:eni_id`, `addresses` `"<mac> <ip>"` and
//! `dhcpv4_options` its subnet's row; a subnet is the switch
//! `subnet-<subnet>`, its gateway the router port `rtr-<subnet>` on
//! `vpc-<vpc>`; a security group is a port group of its ACLs. The parsers
//! here only type what the rows say; joining them is the path's business.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::{datum, parse_ip_list, DhcpOptions, Row};

pub const LSP_TABLE: &str = "Logical_Switch_Port";
pub const LSP_COLUMNS: [&str; 8] = [
    "_uuid",
    "name",
    "type",
    "addresses",
    "external_ids",
    "dhcpv4_options",
    "dhcpv6_options",
    "options",
];
pub const LS_TABLE: &str = "Logical_Switch";
pub const LS_COLUMNS: [&str; 5] = ["_uuid", "name", "ports", "acls", "external_ids"];
pub const DHCP_TABLE: &str = "DHCP_Options";
pub const DHCP_COLUMNS: [&str; 3] = ["_uuid", "cidr", "options"];
pub const PORT_GROUP_TABLE: &str = "Port_Group";
pub const PORT_GROUP_COLUMNS: [&str; 4] = ["_uuid", "name", "ports", "acls"];
pub const ACL_TABLE: &str = "ACL";
pub const ACL_COLUMNS: [&str; 6] = ["_uuid", "direction", "priority", "match", "action", "name"];
pub const LR_TABLE: &str = "Logical_Router";
pub const LR_COLUMNS: [&str; 4] = ["_uuid", "name", "ports", "external_ids"];
pub const LRP_TABLE: &str = "Logical_Router_Port";
pub const LRP_COLUMNS: [&str; 6] = [
    "_uuid",
    "name",
    "networks",
    "mac",
    "options",
    "ipv6_ra_configs",
];

pub const PORT_BINDING_TABLE: &str = "Port_Binding";
pub const PORT_BINDING_COLUMNS: [&str; 3] = ["logical_port", "type", "chassis"];
pub const CHASSIS_COLUMNS: [&str; 4] = ["_uuid", "name", "hostname", "encaps"];
pub const ENCAP_COLUMNS: [&str; 4] = ["_uuid", "type", "ip", "options"];

pub const INTERFACE_TABLE: &str = "Interface";
pub const INTERFACE_COLUMNS: [&str; 5] = ["name", "type", "mtu", "external_ids", "options"];

/// Spinifex's `external_ids` keys on its northbound rows.
pub const ENI_ID_KEY: &str = "spinifex:eni_id";
pub const SUBNET_ID_KEY: &str = "spinifex:subnet_id";
pub const VPC_ID_KEY: &str = "spinifex:vpc_id";

/// One `Logical_Switch_Port`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchPort {
    pub uuid: String,
    pub name: String,
    /// `type`: empty for a VIF (a guest's port), `router`, `localnet`, …
    #[serde(default)]
    pub kind: String,
    /// `addresses`, each entry as written (`"02:00:c6:12:01:0b 198.18.1.11"`).
    pub addresses: Vec<String>,
    /// `external_ids:spinifex:eni_id`.
    pub eni: Option<String>,
    pub subnet: Option<String>,
    pub vpc: Option<String>,
    pub dhcpv4_options: Option<String>,
    pub dhcpv6_options: Option<String>,
    /// For a `router` port: `options:router-port`, the router port it is
    /// peered with.
    pub router_port: Option<String>,
}

impl SwitchPort {
    /// The MAC and IP addresses of `addresses` (`dynamic`, `router` and
    /// `unknown` entries name none).
    pub fn macs_and_ips(&self) -> (Vec<String>, Vec<IpAddr>) {
        let mut macs = Vec::new();
        let mut ips = Vec::new();
        for entry in &self.addresses {
            for word in entry.split_whitespace() {
                if let Ok(ip) = word.parse::<IpAddr>() {
                    ips.push(ip);
                } else if let Some(ip) = word.split('/').next().and_then(|w| w.parse().ok()) {
                    ips.push(ip);
                } else if is_mac(word) {
                    macs.push(word.to_ascii_lowercase());
                }
            }
        }
        (macs, ips)
    }
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn is_mac(word: &str) -> bool {
    let parts: Vec<&str> = word.split(':').collect();
    parts.len() == 6
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// One `Logical_Switch`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Switch {
    pub uuid: String,
    pub name: String,
    /// Its ports' uuids.
    pub ports: Vec<String>,
    /// ACLs on the switch itself (Spinifex puts them on port groups).
    pub acls: Vec<String>,
    pub subnet: Option<String>,
    pub vpc: Option<String>,
}

/// One `Port_Group`: a security group, its member ports and ACLs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortGroup {
    pub name: String,
    pub ports: Vec<String>,
    pub acls: Vec<String>,
}

/// One `ACL`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acl {
    pub uuid: String,
    /// `from-lport` (what a port sends) or `to-lport` (what it is sent).
    pub direction: String,
    pub priority: i64,
    /// The match expression, as written.
    #[serde(rename = "match")]
    pub matches: String,
    /// `allow`, `allow-related`, `allow-stateless`, `drop`, `reject`, `pass`.
    pub action: String,
    pub name: Option<String>,
}

/// One `Logical_Router`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Router {
    pub uuid: String,
    pub name: String,
    pub ports: Vec<String>,
    pub vpc: Option<String>,
}

/// One `Logical_Router_Port`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouterPort {
    pub uuid: String,
    pub name: String,
    /// `networks` (`198.18.1.1/24`).
    pub networks: Vec<String>,
    pub mac: String,
    /// `options:gateway_mtu`, as written: where OVN answers "fragmentation
    /// needed" (IPv4) or "packet too big" (IPv6) itself.
    pub gateway_mtu: Option<String>,
    /// `ipv6_ra_configs:mtu`, as written: the MTU IPv6 guests learn.
    pub ra_mtu: Option<String>,
}

/// The northbound rows a path is resolved from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NbTopology {
    pub ports: Vec<SwitchPort>,
    pub switches: Vec<Switch>,
    pub dhcp: Vec<DhcpOptions>,
    pub port_groups: Vec<PortGroup>,
    pub acls: Vec<Acl>,
    pub routers: Vec<Router>,
    pub router_ports: Vec<RouterPort>,
}

fn ids(row: &Row, key: &str) -> Result<Option<String>, String> {
    Ok(datum::map_get(row, "external_ids", key)?.filter(|v| !v.is_empty()))
}

fn strings(row: &Row, column: &str) -> Result<Vec<String>, String> {
    let v = row
        .get(column)
        .ok_or_else(|| format!("row has no column {column:?}"))?;
    datum::set_atoms(v)
        .map_err(|e| format!("{column}: {e}"))?
        .into_iter()
        .map(|a| match a {
            serde_json::Value::String(s) => Ok(s),
            other => Err(format!("{column} holds a non-string: {other}")),
        })
        .collect()
}

fn uuid_of(row: &Row, table: &str) -> Result<String, String> {
    datum::uuid(row).ok_or_else(|| format!("a {table} row without _uuid"))
}

fn name_of(row: &Row) -> Result<String, String> {
    Ok(datum::string(row, "name")?.unwrap_or_default())
}

/// The rows of one northbound transaction, in the order of
/// `NB_SELECTS`: switch ports, switches, DHCP options, port groups,
/// ACLs, routers, router ports. A row of the wrong shape is an error naming
/// its table.
pub fn nb_topology(tables: &[Vec<Row>]) -> Result<NbTopology, String> {
    let [lsp, ls, dhcp, pg, acl, lr, lrp] = tables else {
        return Err(format!(
            "expected the rows of 7 tables, got {}",
            tables.len()
        ));
    };
    let mut t = NbTopology::default();
    for row in lsp {
        let bad = |e: String| format!("{LSP_TABLE}: {e}");
        t.ports.push(SwitchPort {
            uuid: uuid_of(row, LSP_TABLE)?,
            name: name_of(row).map_err(bad)?,
            kind: datum::string(row, "type").map_err(bad)?.unwrap_or_default(),
            addresses: strings(row, "addresses").map_err(bad)?,
            eni: ids(row, ENI_ID_KEY).map_err(bad)?,
            subnet: ids(row, SUBNET_ID_KEY).map_err(bad)?,
            vpc: ids(row, VPC_ID_KEY).map_err(bad)?,
            dhcpv4_options: datum::uuid_column(row, "dhcpv4_options").map_err(bad)?,
            dhcpv6_options: datum::uuid_column(row, "dhcpv6_options").map_err(bad)?,
            router_port: datum::map_get(row, "options", "router-port").map_err(bad)?,
        });
    }
    for row in ls {
        let bad = |e: String| format!("{LS_TABLE}: {e}");
        t.switches.push(Switch {
            uuid: uuid_of(row, LS_TABLE)?,
            name: name_of(row).map_err(bad)?,
            ports: datum::uuid_set(row, "ports").map_err(bad)?,
            acls: datum::uuid_set(row, "acls").map_err(bad)?,
            subnet: ids(row, SUBNET_ID_KEY).map_err(bad)?,
            vpc: ids(row, VPC_ID_KEY).map_err(bad)?,
        });
    }
    for row in dhcp {
        let bad = |e: String| format!("{DHCP_TABLE}: {e}");
        t.dhcp.push(DhcpOptions {
            uuid: uuid_of(row, DHCP_TABLE)?,
            cidr: datum::string(row, "cidr").map_err(bad)?.unwrap_or_default(),
            mtu: datum::map_get(row, "options", "mtu").map_err(bad)?,
        });
    }
    for row in pg {
        let bad = |e: String| format!("{PORT_GROUP_TABLE}: {e}");
        t.port_groups.push(PortGroup {
            name: name_of(row).map_err(bad)?,
            ports: datum::uuid_set(row, "ports").map_err(bad)?,
            acls: datum::uuid_set(row, "acls").map_err(bad)?,
        });
    }
    for row in acl {
        let bad = |e: String| format!("{ACL_TABLE}: {e}");
        t.acls.push(Acl {
            uuid: uuid_of(row, ACL_TABLE)?,
            direction: datum::string(row, "direction")
                .map_err(bad)?
                .unwrap_or_default(),
            priority: datum::integer(row, "priority").map_err(bad)?.unwrap_or(0),
            matches: datum::string(row, "match")
                .map_err(bad)?
                .unwrap_or_default(),
            action: datum::string(row, "action")
                .map_err(bad)?
                .unwrap_or_default(),
            name: datum::string(row, "name")
                .map_err(bad)?
                .filter(|n| !n.is_empty()),
        });
    }
    for row in lr {
        let bad = |e: String| format!("{LR_TABLE}: {e}");
        t.routers.push(Router {
            uuid: uuid_of(row, LR_TABLE)?,
            name: name_of(row).map_err(bad)?,
            ports: datum::uuid_set(row, "ports").map_err(bad)?,
            vpc: ids(row, VPC_ID_KEY).map_err(bad)?,
        });
    }
    for row in lrp {
        let bad = |e: String| format!("{LRP_TABLE}: {e}");
        t.router_ports.push(RouterPort {
            uuid: uuid_of(row, LRP_TABLE)?,
            name: name_of(row).map_err(bad)?,
            networks: strings(row, "networks").map_err(bad)?,
            mac: datum::string(row, "mac").map_err(bad)?.unwrap_or_default(),
            gateway_mtu: datum::map_get(row, "options", "gateway_mtu").map_err(bad)?,
            ra_mtu: datum::map_get(row, "ipv6_ra_configs", "mtu").map_err(bad)?,
        });
    }
    // Rows in a stable order: a replay, a snapshot and a second run agree.
    t.ports
        .sort_by(|a, b| a.name.cmp(&b.name).then(a.uuid.cmp(&b.uuid)));
    t.switches
        .sort_by(|a, b| a.name.cmp(&b.name).then(a.uuid.cmp(&b.uuid)));
    t.dhcp
        .sort_by(|a, b| a.cidr.cmp(&b.cidr).then(a.uuid.cmp(&b.uuid)));
    t.port_groups.sort_by(|a, b| a.name.cmp(&b.name));
    t.acls.sort_by(|a, b| a.uuid.cmp(&b.uuid));
    t.routers
        .sort_by(|a, b| a.name.cmp(&b.name).then(a.uuid.cmp(&b.uuid)));
    t.router_ports
        .sort_by(|a, b| a.name.cmp(&b.name).then(a.uuid.cmp(&b.uuid)));
    Ok(t)
}

/// One `Port_Binding`: where a logical port is bound.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    pub logical_port: String,
    #[serde(default)]
    pub kind: String,
    /// The `Chassis` row's uuid, when bound.
    pub chassis: Option<String>,
}

/// One tunnel endpoint of a chassis (`Encap`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Encap {
    /// `geneve`, `vxlan`, `stt`.
    pub kind: String,
    pub ip: IpAddr,
    /// `options:csum`, as written.
    #[serde(default)]
    pub csum: Option<String>,
}

/// One `Chassis` with its encaps.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chassis {
    pub uuid: String,
    /// The chassis id: the node's OVS `external_ids:system-id`, which
    /// Spinifex pins to the node's name.
    pub name: String,
    pub hostname: Option<String>,
    pub encaps: Vec<Encap>,
}

impl Chassis {
    /// Its geneve endpoints (every encap when none says geneve).
    pub fn geneve_ips(&self) -> Vec<IpAddr> {
        let geneve: Vec<IpAddr> = self
            .encaps
            .iter()
            .filter(|e| e.kind == "geneve")
            .map(|e| e.ip)
            .collect();
        if geneve.is_empty() {
            self.encaps.iter().map(|e| e.ip).collect()
        } else {
            geneve
        }
    }
}

/// The southbound rows a path is resolved from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SbTopology {
    pub bindings: Vec<Binding>,
    pub chassis: Vec<Chassis>,
}

/// The rows of one southbound transaction: port bindings, chassis, encaps.
pub fn sb_topology(tables: &[Vec<Row>]) -> Result<SbTopology, String> {
    let [pb, chassis, encaps] = tables else {
        return Err(format!(
            "expected the rows of 3 tables, got {}",
            tables.len()
        ));
    };
    let mut by_uuid: BTreeMap<String, Vec<Encap>> = BTreeMap::new();
    for row in encaps {
        let uuid = uuid_of(row, "Encap")?;
        let kind = datum::string(row, "type")?.unwrap_or_default();
        let ip = datum::string(row, "ip")?.unwrap_or_default();
        let csum = datum::map_get(row, "options", "csum")?;
        let ips = parse_ip_list(&ip).map_err(|e| format!("Encap {uuid}: {e}"))?;
        by_uuid
            .entry(uuid)
            .or_default()
            .extend(ips.into_iter().map(|ip| Encap {
                kind: kind.clone(),
                ip,
                csum: csum.clone(),
            }));
    }
    let mut t = SbTopology::default();
    for row in chassis {
        let name = datum::string(row, "name")?.ok_or("a Chassis row without name")?;
        let mut list = Vec::new();
        for reference in datum::uuid_set(row, "encaps")? {
            let e = by_uuid.get(&reference).ok_or_else(|| {
                format!("chassis {name:?} references Encap {reference}, which is no row")
            })?;
            list.extend(e.iter().cloned());
        }
        list.sort_by(|a, b| a.kind.cmp(&b.kind).then(a.ip.cmp(&b.ip)));
        list.dedup();
        t.chassis.push(Chassis {
            uuid: uuid_of(row, "Chassis")?,
            hostname: datum::string(row, "hostname")?.filter(|h| !h.is_empty()),
            name,
            encaps: list,
        });
    }
    for row in pb {
        let bad = |e: String| format!("{PORT_BINDING_TABLE}: {e}");
        t.bindings.push(Binding {
            logical_port: datum::string(row, "logical_port")
                .map_err(bad)?
                .unwrap_or_default(),
            kind: datum::string(row, "type").map_err(bad)?.unwrap_or_default(),
            chassis: datum::uuid_column(row, "chassis").map_err(bad)?,
        });
    }
    t.bindings
        .sort_by(|a, b| a.logical_port.cmp(&b.logical_port));
    t.chassis.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(t)
}

/// One OVS `Interface` of this node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OvsInterface {
    pub name: String,
    /// `type`: empty for a system device (a tap), `geneve`, `internal`,
    /// `patch`, …
    #[serde(default)]
    pub kind: String,
    /// `mtu`, as OVS reads it from the device.
    pub mtu: Option<i64>,
    /// `external_ids:iface-id`: the logical switch port OVN binds here.
    pub iface_id: Option<String>,
    /// `external_ids:attached-mac`.
    pub attached_mac: Option<String>,
    /// `options:remote_ip` of a tunnel.
    pub remote_ip: Option<String>,
    /// `options:df_default` of a tunnel, as written: unset means OVS's
    /// default, true (DF set on the outer header).
    pub df_default: Option<String>,
}

/// The `Interface` rows of a node's Open_vSwitch database.
pub fn ovs_interfaces(rows: &[Row]) -> Result<Vec<OvsInterface>, String> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let bad = |e: String| format!("{INTERFACE_TABLE}: {e}");
        out.push(OvsInterface {
            name: name_of(row).map_err(bad)?,
            kind: datum::string(row, "type").map_err(bad)?.unwrap_or_default(),
            mtu: datum::integer(row, "mtu").map_err(bad)?,
            iface_id: datum::map_get(row, "external_ids", "iface-id").map_err(bad)?,
            attached_mac: datum::map_get(row, "external_ids", "attached-mac").map_err(bad)?,
            remote_ip: datum::map_get(row, "options", "remote_ip").map_err(bad)?,
            df_default: datum::map_get(row, "options", "df_default").map_err(bad)?,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(v: serde_json::Value) -> Row {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_spinifex_eni_port_reads_as_written() {
        // As ovsdb-server 3.1 answers a select of ovn-nbctl's rows for
        // `lsp-add subnet-… port-eni-…` with Spinifex's external_ids.
        let lsp = row(json!({
            "_uuid": ["uuid", "5f2d2a0e-0000-4000-8000-000000000001"],
            "name": "port-eni-0a11c0ffee0000011",
            "type": "",
            "addresses": "02:00:c6:12:01:0b 198.18.1.11",
            "external_ids": ["map", [
                ["spinifex:eni_id", "eni-0a11c0ffee0000011"],
                ["spinifex:subnet_id", "subnet-0a11c0ffee0000001"],
                ["spinifex:vpc_id", "vpc-0f3a9c2e1b7d45a60"]]],
            "dhcpv4_options": ["uuid", "9e0b6b39-0000-4000-8000-000000000002"],
            "dhcpv6_options": ["set", []],
            "options": ["map", []],
        }));
        let t = nb_topology(&[vec![lsp], vec![], vec![], vec![], vec![], vec![], vec![]]).unwrap();
        let p = &t.ports[0];
        assert_eq!(p.eni.as_deref(), Some("eni-0a11c0ffee0000011"));
        assert_eq!(p.vpc.as_deref(), Some("vpc-0f3a9c2e1b7d45a60"));
        assert_eq!(
            p.dhcpv4_options.as_deref(),
            Some("9e0b6b39-0000-4000-8000-000000000002")
        );
        let (macs, ips) = p.macs_and_ips();
        assert_eq!(macs, ["02:00:c6:12:01:0b"]);
        assert_eq!(ips, ["198.18.1.11".parse::<IpAddr>().unwrap()]);
        assert!(nb_topology(&[vec![]]).is_err());
    }

    #[test]
    fn a_binding_joins_its_chassis_encaps() {
        let sb = sb_topology(&[
            vec![row(json!({"logical_port": "port-eni-1", "type": "",
                "chassis": ["uuid", "c1"]}))],
            vec![row(
                json!({"_uuid": ["uuid", "c1"], "name": "spx1", "hostname": "spx1",
                "encaps": ["uuid", "e1"]}),
            )],
            vec![row(
                json!({"_uuid": ["uuid", "e1"], "type": "geneve", "ip": "198.18.0.1",
                "options": ["map", [["csum", "true"]]]}),
            )],
        ])
        .unwrap();
        assert_eq!(sb.bindings[0].chassis.as_deref(), Some("c1"));
        assert_eq!(
            sb.chassis[0].geneve_ips(),
            ["198.18.0.1".parse::<IpAddr>().unwrap()]
        );
        let dangling = sb_topology(&[
            vec![],
            vec![row(
                json!({"_uuid": ["uuid", "c1"], "name": "spx1", "hostname": "",
                "encaps": ["uuid", "e9"]}),
            )],
            vec![],
        ]);
        assert!(dangling.unwrap_err().contains("which is no row"));
    }

    #[test]
    fn macs() {
        assert!(is_mac("02:00:0a:00:01:0B"));
        assert!(!is_mac("02:00:0a:00:01"));
        assert!(!is_mac("router"));
    }
}
