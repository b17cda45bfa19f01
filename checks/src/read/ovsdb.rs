//! OVSDB reads over the host seam: the rows each check needs, typed.
use crate::endpoint::Endpoint;
use crate::facts::ovsdb::wire::Select;
use crate::facts::ovsdb::{
    datum, parse_ip_list, Answer, Budget, DhcpOptions, EncapIp, NbGuestMtus, OvsRow, RouterPortRa,
    Row, NB_DB, OVS_DB, SB_DB,
};
use crate::facts::ProbeError;
use crate::host::HostRef;
use std::net::IpAddr;
use std::time::Duration;

/// Run `selects` on `db`, trying the members of `endpoints` in turn, as the
/// host answers ([`HostRef::ovsdb_select`]).
pub fn select(
    host: HostRef<'_>,
    endpoints: &[Endpoint],
    db: &str,
    selects: &[Select<'_>],
    budget: Budget,
) -> Result<Answer<Vec<Vec<Row>>>, ProbeError> {
    host.ovsdb_select(endpoints, db, selects, budget)
}

fn bad_row(db: &str, table: &str, e: String) -> ProbeError {
    ProbeError::parse(format!("{db} {table}"), e)
}

/// `NB_Global . ipsec`: `None` when the table has no row (nothing has
/// initialised this database; `ovn-northd` reads that as off).
pub fn nb_global_ipsec(
    host: HostRef<'_>,
    endpoints: &[Endpoint],
    budget: Budget,
) -> Result<Answer<Option<bool>>, ProbeError> {
    let mut ans = select(
        host,
        endpoints,
        NB_DB,
        &[Select::all("NB_Global", &["ipsec"])],
        budget,
    )?;
    let rows = ans.value.remove(0);
    let value = match rows.first() {
        None => None,
        Some(row) => Some(
            datum::boolean(row, "ipsec")
                .map_err(|e| bad_row(NB_DB, "NB_Global", e))?
                .unwrap_or(false),
        ),
    };
    Ok(ans.with(value))
}

/// The one `Open_vSwitch` row of the local database at `endpoint` (its
/// `columns`), made a fact by `read`.
pub fn local_ovs_row<T>(
    host: HostRef<'_>,
    endpoint: &Endpoint,
    budget: Budget,
    columns: &[&str],
    read: impl FnOnce(&Row) -> Result<T, ProbeError>,
) -> Result<Answer<T>, ProbeError> {
    let mut ans = select(
        host,
        std::slice::from_ref(endpoint),
        OVS_DB,
        &[Select::all("Open_vSwitch", columns)],
        budget,
    )?;
    let rows = ans.value.remove(0);
    let row = rows.first().ok_or_else(|| {
        ProbeError::Other(format!("{endpoint}: the Open_vSwitch table has no row"))
    })?;
    Ok(ans.with(read(row)?))
}

/// Read the local Open_vSwitch row.
pub fn ovs_row(
    host: HostRef<'_>,
    endpoint: &Endpoint,
    budget: Budget,
) -> Result<Answer<OvsRow>, ProbeError> {
    let columns = ["other_config", "external_ids"];
    local_ovs_row(host, endpoint, budget, &columns, |row| {
        let get = |col: &str, key: &str| {
            datum::map_get(row, col, key).map_err(|e| bad_row(OVS_DB, "Open_vSwitch", e))
        };
        Ok(OvsRow {
            ipsec_encapsulation: get("other_config", "ipsec_encapsulation")?,
            ovn_encap_ip: get("external_ids", "ovn-encap-ip")?,
            certificate: get("other_config", "certificate")?,
            private_key: get("other_config", "private_key")?,
            ca_cert: get("other_config", "ca_cert")?,
            system_id: get("external_ids", "system-id")?,
        })
    })
}

pub fn dhcp_options(
    host: HostRef<'_>,
    endpoints: &[Endpoint],
    budget: Budget,
) -> Result<Answer<Vec<DhcpOptions>>, ProbeError> {
    let mut ans = select(
        host,
        endpoints,
        NB_DB,
        &[Select::all("DHCP_Options", &["_uuid", "cidr", "options"])],
        budget,
    )?;
    let rows = ans.value.remove(0);
    Ok(ans.with(dhcp_rows(&rows)?))
}

fn dhcp_rows(rows: &[Row]) -> Result<Vec<DhcpOptions>, ProbeError> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let bad = |e: String| bad_row(NB_DB, "DHCP_Options", e);
        out.push(DhcpOptions {
            uuid: datum::uuid(row).ok_or_else(|| bad("row without _uuid".into()))?,
            cidr: datum::string(row, "cidr").map_err(bad)?.unwrap_or_default(),
            mtu: datum::map_get(row, "options", "mtu").map_err(bad)?,
        });
    }
    out.sort_by(|a, b| a.cidr.cmp(&b.cidr).then(a.uuid.cmp(&b.uuid)));
    Ok(out)
}

pub fn nb_guest_mtus(
    host: HostRef<'_>,
    endpoints: &[Endpoint],
    budget: Budget,
) -> Result<Answer<NbGuestMtus>, ProbeError> {
    let mut ans = select(
        host,
        endpoints,
        NB_DB,
        &[
            Select::all("DHCP_Options", &["_uuid", "cidr", "options"]),
            Select::all("Logical_Router_Port", &["_uuid", "name", "ipv6_ra_configs"]),
        ],
        budget,
    )?;
    let ports = ans.value.remove(1);
    let dhcp = dhcp_rows(&ans.value.remove(0))?;
    let mut router_ports = Vec::new();
    for row in &ports {
        let bad = |e: String| bad_row(NB_DB, "Logical_Router_Port", e);
        let address_mode = datum::map_get(row, "ipv6_ra_configs", "address_mode").map_err(bad)?;
        let mtu = datum::map_get(row, "ipv6_ra_configs", "mtu").map_err(bad)?;
        if address_mode.is_none() && mtu.is_none() {
            continue;
        }
        router_ports.push(RouterPortRa {
            uuid: datum::uuid(row).ok_or_else(|| bad("row without _uuid".into()))?,
            name: datum::string(row, "name").map_err(bad)?.unwrap_or_default(),
            address_mode,
            mtu,
        });
    }
    router_ports.sort_by(|a, b| a.name.cmp(&b.name).then(a.uuid.cmp(&b.uuid)));
    Ok(ans.with(NbGuestMtus { dhcp, router_ports }))
}

/// Every SB `Encap` row's `ip` (one per chassis and encapsulation type)
/// with its `chassis_name`, sorted and without duplicates, with the member
/// that answered.
pub fn sb_encaps_within(
    host: HostRef<'_>,
    endpoints: &[Endpoint],
    budget: Budget,
) -> Result<Answer<Vec<EncapIp>>, ProbeError> {
    let mut ans = select(
        host,
        endpoints,
        SB_DB,
        &[Select::all("Encap", &["ip", "type", "chassis_name"])],
        budget,
    )?;
    let rows = ans.value.remove(0);
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let bad = |e| bad_row(SB_DB, "Encap", e);
        let ip = datum::string(row, "ip").map_err(bad)?.unwrap_or_default();
        // Asked for, so a server sends it; one that does not (a stand-in,
        // another implementation) only leaves the address unnamed.
        let chassis = match row.get("chassis_name") {
            Some(_) => datum::string(row, "chassis_name")
                .map_err(bad)?
                .filter(|c| !c.is_empty()),
            None => None,
        };
        out.extend(parse_ip_list(&ip)?.into_iter().map(|ip| EncapIp {
            ip,
            chassis: chassis.clone(),
        }));
    }
    out.sort();
    out.dedup();
    Ok(ans.with(out))
}

/// Every SB `Encap` row's `ip`, sorted and without duplicates, with the
/// member that answered ([`sb_encaps_within`] without the chassis).
pub fn sb_encap_ips_within(
    host: HostRef<'_>,
    endpoints: &[Endpoint],
    budget: Budget,
) -> Result<Answer<Vec<IpAddr>>, ProbeError> {
    let ans = sb_encaps_within(host, endpoints, budget)?;
    let mut ips: Vec<IpAddr> = ans.value.iter().map(|e| e.ip).collect();
    ips.sort();
    ips.dedup();
    Ok(ans.with(ips))
}

/// SB `Encap` IPs and the member that answered. Each member is given
/// `bound` (connect and answer); pass `ctx.bounded(..)` so that nothing
/// outlives the run, or use [`sb_encap_ips_within`] with the run's deadline.
pub fn sb_encap_ips(
    host: HostRef<'_>,
    endpoints: &[Endpoint],
    bound: Duration,
) -> Result<(Vec<IpAddr>, Endpoint), ProbeError> {
    let ans = sb_encap_ips_within(host, endpoints, Budget::per_member(bound, endpoints.len()))?;
    Ok((ans.value, ans.endpoint))
}

/// This node's own overlay endpoints: `Open_vSwitch . external_ids:ovn-encap-ip`
/// (empty when the key is not set).
pub fn local_encap_ips(
    host: HostRef<'_>,
    endpoint: &Endpoint,
    bound: Duration,
) -> Result<Vec<IpAddr>, ProbeError> {
    let ans = ovs_row(host, endpoint, Budget::per_member(bound, 1))?;
    match ans.value.ovn_encap_ip {
        Some(text) => parse_ip_list(&text),
        None => Ok(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::ovsdb::drop_secrets;
    use crate::live::ovsdb::select_live;
    use serde_json::{json, Value};

    #[test]
    fn encap_ip_lists_parse() {
        assert_eq!(
            parse_ip_list("198.18.3.181, fd00::1").unwrap(),
            vec![
                "198.18.3.181".parse::<IpAddr>().unwrap(),
                "fd00::1".parse().unwrap()
            ]
        );
        assert!(parse_ip_list("").unwrap().is_empty());
        assert!(parse_ip_list("198.18.3.181,host").is_err());
    }

    #[test]
    fn keys_and_certificates_never_leave_the_probe_but_their_paths_do() {
        // An SSL row and ovs-monitor-ipsec's other_config keys, as
        // ovsdb-server 3.1 encodes them.
        let mut rows: Vec<Row> = vec![
            serde_json::from_value(json!({
                "private_key": "/etc/keys/host-privkey.pem",
                "certificate": "-----BEGIN CERTIFICATE-----",
                "ca_cert": "cacert.pem",
                "bootstrap_ca_cert": false,
            }))
            .unwrap(),
            serde_json::from_value(json!({
                "other_config": ["map", [
                    ["ipsec_encapsulation", "true"],
                    ["private_key", "-----BEGIN PRIVATE KEY----- s3cr3t"],
                    ["certificate", "/etc/spinifex/ipsec/peer.pem"],
                    ["ca_cert", "/etc/x\n-----BEGIN"],
                ]],
                "external_ids": ["map", [["ovn-encap-ip", "198.18.0.1"]]],
            }))
            .unwrap(),
        ];
        drop_secrets(&mut rows);
        assert_eq!(
            Value::Object(rows[0].clone()),
            json!({"private_key": "/etc/keys/host-privkey.pem", "bootstrap_ca_cert": false})
        );
        assert_eq!(
            rows[1]["other_config"],
            json!([
                "map",
                [
                    ["ipsec_encapsulation", "true"],
                    ["certificate", "/etc/spinifex/ipsec/peer.pem"]
                ]
            ])
        );
        assert_eq!(
            rows[1]["external_ids"],
            json!(["map", [["ovn-encap-ip", "198.18.0.1"]]])
        );
    }

    #[test]
    fn ssl_is_refused_clearly_without_connecting() {
        let ep = Endpoint::parse("ssl:127.0.0.1:6641").unwrap();
        let err = select_live(
            &[ep],
            NB_DB,
            &[],
            Budget::per_member(Duration::from_secs(1), 1),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("ssl: endpoints are not supported"),
            "{err}"
        );
    }

    #[test]
    fn an_empty_list_is_an_error() {
        let err = select_live(
            &[],
            NB_DB,
            &[],
            Budget::per_member(Duration::from_secs(1), 1),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("no OVN_Northbound endpoint"),
            "{err}"
        );
    }
}
