//! A native OVSDB client (RFC 7047 JSON-RPC over `tcp:` and `unix:`).
//!
//! Why not run `ovn-nbctl`/`ovs-vsctl`: they may not be installed where the
//! doctor runs, their text is not an interface, and they cannot be bounded
//! per raft member. Here every member of a raft list is tried in turn, each
//! with its own bound (connect and answer) cut to the global deadline, and
//! the answer says which member gave it. A member that is up but not
//! connected to its cluster is passed over, as `ovn-nbctl` does.
//!
//! Layers: [`wire`] (framing and messages, pure), [`datum`] (OVSDB value
//! encoding, pure), [`conn`] (one bounded session), this module (member
//! failover and the typed queries the checks need); [`raft`] (the facts of
//! `ovn.cluster` and their parsers, pure) and [`raft_read`] (its reads).

pub mod conn;
pub mod datum;
pub mod endpoints;
pub mod raft;
pub mod raft_read;
pub mod wire;

use std::net::IpAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use self::conn::{MemberError, Session};
use self::wire::Select;
use crate::endpoint::{self, Endpoint};
use crate::facts::ProbeError;
use crate::host::HostRef;

pub const NB_DB: &str = "OVN_Northbound";
pub const SB_DB: &str = "OVN_Southbound";
pub const OVS_DB: &str = "Open_vSwitch";
/// The local Open_vSwitch database, unless `--ovs-db` says otherwise.
pub const DEFAULT_OVS_ENDPOINT: &str = "unix:/var/run/openvswitch/db.sock";

pub type Row = Map<String, Value>;

/// How long each member may take, and when everything must be over.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub per_member: Duration,
    pub deadline: Instant,
}

impl Budget {
    /// Each member gets `per_member`; the whole list gets `per_member` × its
    /// length. Checks use [`Budget::within`] with the run's deadline instead.
    pub fn per_member(per_member: Duration, members: usize) -> Budget {
        Budget {
            per_member,
            deadline: Instant::now() + per_member * (members.max(1) as u32),
        }
    }

    pub fn within(per_member: Duration, deadline: Instant) -> Budget {
        Budget {
            per_member,
            deadline,
        }
    }
}

/// A query's answer and the member that gave it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Answer<T> {
    pub value: T,
    pub endpoint: Endpoint,
    /// Members tried before it, with why each did not answer.
    pub passed_over: Vec<(Endpoint, String)>,
}

/// Columns whose values name keys or certificates (`SSL` tables;
/// `Open_vSwitch . other_config` keys of ovs-monitor-ipsec). OVS means them
/// as file paths, and a path is kept (`ipsec.cert` judges the files OVS
/// points at); any other value (PEM text pasted in) is dropped as rows are
/// read, so no fact, and no bundle, holds it.
pub const SECRET_COLUMNS: [&str; 3] = ["private_key", "certificate", "ca_cert"];

/// A value that names a file: absolute, one line of printable text, no PEM
/// armour, no longer than a path may be.
pub fn is_file_path(value: &str) -> bool {
    value.starts_with('/')
        && value.len() < 4096
        && !value.contains("-----")
        && !value.chars().any(char::is_control)
}

/// Drop every secret from `rows`: a value of a column named in
/// [`SECRET_COLUMNS`], or of a map entry so keyed
/// (`other_config:private_key`), that is not a file path.
pub fn drop_secrets(rows: &mut [Row]) {
    let keep = |v: &Value| v.as_str().is_some_and(is_file_path);
    for row in rows {
        row.retain(|column, v| !SECRET_COLUMNS.contains(&column.as_str()) || keep(v));
        for value in row.values_mut() {
            datum::drop_map_keys(value, &SECRET_COLUMNS, keep);
        }
    }
}

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

/// [`select`] on the live servers: every member in turn, each within the
/// budget; secrets dropped from every row ([`drop_secrets`]).
pub fn select_live(
    endpoints: &[Endpoint],
    db: &str,
    selects: &[Select<'_>],
    budget: Budget,
) -> Result<Answer<Vec<Vec<Row>>>, ProbeError> {
    let mut answer = select_members(endpoints, db, selects, budget)?;
    for rows in &mut answer.value {
        drop_secrets(rows);
    }
    Ok(answer)
}

fn select_members(
    endpoints: &[Endpoint],
    db: &str,
    selects: &[Select<'_>],
    budget: Budget,
) -> Result<Answer<Vec<Vec<Row>>>, ProbeError> {
    let mut failures: Vec<(Endpoint, MemberError)> = Vec::new();
    for ep in endpoints {
        let now = Instant::now();
        if now >= budget.deadline {
            failures.push((
                ep.clone(),
                MemberError::Protocol("not tried: the run's deadline had passed".into()),
            ));
            continue;
        }
        let member_deadline = budget.deadline.min(now + budget.per_member);
        match select_one(ep, db, selects, member_deadline) {
            Ok(rows) => {
                return Ok(Answer {
                    value: rows,
                    endpoint: ep.clone(),
                    passed_over: failures
                        .into_iter()
                        .map(|(e, err)| (e, err.to_string()))
                        .collect(),
                })
            }
            Err(err) => failures.push((ep.clone(), err)),
        }
    }
    Err(no_member_answered(endpoints, db, failures))
}

fn no_member_answered(
    endpoints: &[Endpoint],
    db: &str,
    failures: Vec<(Endpoint, MemberError)>,
) -> ProbeError {
    if endpoints.is_empty() {
        return ProbeError::Other(format!("no {db} endpoint is configured"));
    }
    // A lone socket we may not open is a privilege matter, not an outage.
    if let [(ep, MemberError::Io(e))] = failures.as_slice() {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            return ProbeError::PermissionDenied {
                what: ep.to_string(),
                needs: format!("root to connect to {ep}"),
            };
        }
    }
    if let [(ep, e)] = failures.as_slice() {
        return ProbeError::Other(format!("{db} at {ep} did not answer: {e}"));
    }
    let reasons: Vec<String> = failures
        .iter()
        .map(|(ep, e)| format!("{ep}: {e}"))
        .collect();
    ProbeError::Other(format!(
        "no member of {db} at {} answered ({})",
        endpoint::join(endpoints),
        reasons.join("; ")
    ))
}

fn select_one(
    ep: &Endpoint,
    db: &str,
    selects: &[Select<'_>],
    deadline: Instant,
) -> Result<Vec<Vec<Row>>, MemberError> {
    let mut session = Session::connect(ep, deadline)?;
    // `_Server` itself is what the check asks: asked of a member not
    // connected to its cluster, it still answers (ovn.cluster's question).
    if db != raft::SERVER_DB {
        check_database(&mut session, db)?;
    }
    let result = session.call("transact", wire::transact_params(db, selects))?;
    wire::transact_rows(&result, selects.len()).map_err(MemberError::Protocol)
}

/// Is `db` served here, and (for a raft member) connected to its cluster?
/// Asked of the `_Server` database (OVS ≥ 2.9), else of `list_dbs`.
fn check_database(session: &mut Session, db: &str) -> Result<(), MemberError> {
    let server = session.call(
        "transact",
        wire::transact_params(
            "_Server",
            &[Select::all(
                "Database",
                &["name", "model", "connected", "leader"],
            )],
        ),
    );
    let rows = match server {
        Ok(result) => wire::transact_rows(&result, 1)
            .map_err(MemberError::Protocol)?
            .remove(0),
        Err(MemberError::Rpc(e)) if e.contains("unknown database") => {
            let dbs = session.call("list_dbs", json!([]))?;
            let names: Vec<&str> = dbs
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if names.contains(&db) {
                return Ok(());
            }
            return Err(not_served(db, &names));
        }
        Err(e) => return Err(e),
    };
    let names: Vec<String> = rows
        .iter()
        .filter_map(|r| datum::string(r, "name").ok().flatten())
        .collect();
    let Some(row) = rows
        .iter()
        .find(|r| datum::string(r, "name").ok().flatten().as_deref() == Some(db))
    else {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        return Err(not_served(db, &names));
    };
    let clustered = datum::string(row, "model").ok().flatten().as_deref() == Some("clustered");
    if clustered && datum::boolean(row, "connected").ok().flatten() == Some(false) {
        return Err(MemberError::Database(format!(
            "this raft member of {db} is not connected to its cluster"
        )));
    }
    Ok(())
}

fn not_served(db: &str, names: &[&str]) -> MemberError {
    let names: Vec<&str> = names.iter().copied().filter(|n| *n != "_Server").collect();
    MemberError::Database(format!(
        "serves {} but not {db} (wrong endpoint for this database?)",
        if names.is_empty() {
            "no database".to_owned()
        } else {
            names.join(", ")
        }
    ))
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
    Ok(Answer {
        value,
        endpoint: ans.endpoint,
        passed_over: ans.passed_over,
    })
}

/// The local `Open_vSwitch` row's map columns we need.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OvsRow {
    /// `other_config:ipsec_encapsulation`, as written (`"true"`, absent…).
    pub ipsec_encapsulation: Option<String>,
    /// `external_ids:ovn-encap-ip`, as written (may be comma-separated).
    pub ovn_encap_ip: Option<String>,
    /// `other_config:certificate`, `private_key`, `ca_cert`: the files
    /// ovs-monitor-ipsec gives the IKE daemon (paths; other values never
    /// leave the probe, [`drop_secrets`]).
    pub certificate: Option<String>,
    pub private_key: Option<String>,
    pub ca_cert: Option<String>,
    /// `external_ids:system-id`: the chassis name, this node's IKE identity.
    pub system_id: Option<String>,
}

/// Read the local Open_vSwitch row.
pub fn ovs_row(
    host: HostRef<'_>,
    endpoint: &Endpoint,
    budget: Budget,
) -> Result<Answer<OvsRow>, ProbeError> {
    let mut ans = select(
        host,
        std::slice::from_ref(endpoint),
        OVS_DB,
        &[Select::all(
            "Open_vSwitch",
            &["other_config", "external_ids"],
        )],
        budget,
    )?;
    let rows = ans.value.remove(0);
    let row = rows.first().ok_or_else(|| {
        ProbeError::Other(format!("{endpoint}: the Open_vSwitch table has no row"))
    })?;
    let get = |col: &str, key: &str| {
        datum::map_get(row, col, key).map_err(|e| bad_row(OVS_DB, "Open_vSwitch", e))
    };
    Ok(Answer {
        value: OvsRow {
            ipsec_encapsulation: get("other_config", "ipsec_encapsulation")?,
            ovn_encap_ip: get("external_ids", "ovn-encap-ip")?,
            certificate: get("other_config", "certificate")?,
            private_key: get("other_config", "private_key")?,
            ca_cert: get("other_config", "ca_cert")?,
            system_id: get("external_ids", "system-id")?,
        },
        endpoint: ans.endpoint,
        passed_over: ans.passed_over,
    })
}

/// One NB `DHCP_Options` row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DhcpOptions {
    pub uuid: String,
    pub cidr: String,
    /// `options:mtu` as written, if set.
    pub mtu: Option<String>,
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
    Ok(Answer {
        value: dhcp_rows(&rows)?,
        endpoint: ans.endpoint,
        passed_over: ans.passed_over,
    })
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

/// One NB `Logical_Router_Port` that sends IPv6 router advertisements (or
/// names an RA MTU): IPv6 guests learn their MTU from the RA's MTU option,
/// `ipv6_ra_configs:mtu`, since DHCPv6 has none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouterPortRa {
    pub uuid: String,
    pub name: String,
    /// `ipv6_ra_configs:address_mode` (`slaac`, `dhcpv6_stateful`, …).
    pub address_mode: Option<String>,
    /// `ipv6_ra_configs:mtu` as written, if set.
    pub mtu: Option<String>,
}

/// Where the NB tells guests their MTU: every `DHCP_Options` row and every
/// router port with `ipv6_ra_configs`, read in one transaction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NbGuestMtus {
    pub dhcp: Vec<DhcpOptions>,
    pub router_ports: Vec<RouterPortRa>,
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
    Ok(Answer {
        value: NbGuestMtus { dhcp, router_ports },
        endpoint: ans.endpoint,
        passed_over: ans.passed_over,
    })
}

/// Parse a comma-separated `ovn-encap-ip` (OVN accepts several).
pub fn parse_ip_list(text: &str) -> Result<Vec<IpAddr>, ProbeError> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<IpAddr>().map_err(|_| {
                ProbeError::parse("ovn-encap-ip", format!("{s:?} is not an IP address"))
            })
        })
        .collect()
}

/// One tunnel address of the SB `Encap` table and the chassis it belongs
/// to (`chassis_name`: the OVS system-id, which Spinifex's install pins to
/// the node's name).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EncapIp {
    pub ip: IpAddr,
    pub chassis: Option<String>,
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
    Ok(Answer {
        value: out,
        endpoint: ans.endpoint,
        passed_over: ans.passed_over,
    })
}

/// Every SB `Encap` row's `ip`, sorted and without duplicates, with the
/// member that answered ([`sb_encaps_within`] without the chassis).
pub fn sb_encap_ips_within(
    host: HostRef<'_>,
    endpoints: &[Endpoint],
    budget: Budget,
) -> Result<Answer<Vec<IpAddr>>, ProbeError> {
    let ans = sb_encaps_within(host, endpoints, budget)?;
    let mut ips: Vec<IpAddr> = ans.value.into_iter().map(|e| e.ip).collect();
    ips.sort();
    ips.dedup();
    Ok(Answer {
        value: ips,
        endpoint: ans.endpoint,
        passed_over: ans.passed_over,
    })
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
