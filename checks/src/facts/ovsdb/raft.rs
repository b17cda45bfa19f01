//! What `ovn.cluster` reads from OVSDB, as typed facts, and the pure
//! parsers that make them from rows: no I/O here (rows in, facts out; the
//! reads over the host seam are [`crate::read::ovsdb_raft`]).
//!
//! * A server's `_Server` database, `Database` table (ovsdb-server(5)):
//!   one row per database it serves, with the storage model, whether a
//!   raft member is connected to its cluster (in contact with a majority),
//!   whether it is the leader, the cluster and server ids, and the index
//!   of the last log entry it applied. ovsdb-server rewrites these rows on
//!   every pass of its main loop, so they are current when read.
//! * The southbound `Chassis` rows and their `Encap` rows: one chassis per
//!   ovn-controller, named with the OVS `external_ids:system-id`.
//! * This node's own Open_vSwitch identity: `external_ids:system-id` and
//!   `ovn-encap-ip`, the values ovn-controller registers its chassis with.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::datum;
use super::{parse_ip_list, Row};

/// The database every ovsdb-server (OVS ≥ 2.9) serves about itself.
pub const SERVER_DB: &str = "_Server";
/// Its table of databases.
pub const DATABASE_TABLE: &str = "Database";
/// The columns read (not `schema`: kilobytes per row, of no use here).
pub const SERVER_COLUMNS: [&str; 7] = [
    "name",
    "model",
    "connected",
    "leader",
    "index",
    "cid",
    "sid",
];

/// The southbound tables read, and their columns.
pub const CHASSIS_TABLE: &str = "Chassis";
pub const CHASSIS_COLUMNS: [&str; 4] = ["_uuid", "name", "hostname", "encaps"];
pub const ENCAP_TABLE: &str = "Encap";
pub const ENCAP_COLUMNS: [&str; 3] = ["_uuid", "type", "ip"];

/// The Open_vSwitch column read for this node's chassis identity.
pub const OVS_IDENTITY_COLUMNS: [&str; 1] = ["external_ids"];

/// One `_Server` `Database` row: how one server holds one database.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerDb {
    pub name: String,
    /// `clustered` (a raft member), `standalone`, or `relay`.
    pub model: String,
    /// A raft member in contact with a majority of its cluster (always
    /// true for a standalone database).
    pub connected: bool,
    /// The raft leader (always true for a standalone database, false for
    /// a relay).
    pub leader: bool,
    /// The index of the last raft log entry this server applied; absent
    /// when none was (a standalone database, a member still joining).
    pub index: Option<u64>,
    /// The cluster's id, the same on every member of one cluster.
    pub cid: Option<String>,
    /// This server's id within its cluster.
    pub sid: Option<String>,
}

impl ServerDb {
    pub fn clustered(&self) -> bool {
        self.model == "clustered"
    }
}

/// The `_Server` `Database` rows of one server, typed.
pub fn server_rows(rows: &[Row]) -> Result<Vec<ServerDb>, String> {
    rows.iter().map(server_row).collect()
}

fn server_row(row: &Row) -> Result<ServerDb, String> {
    let required = |column: &str, v: Option<String>| {
        v.ok_or_else(|| format!("{DATABASE_TABLE} row without {column}"))
    };
    let flag = |column: &str| {
        datum::boolean(row, column)?.ok_or_else(|| format!("{DATABASE_TABLE} row without {column}"))
    };
    let index = match datum::integer(row, "index")? {
        Some(i) => Some(u64::try_from(i).map_err(|_| format!("index {i} is negative"))?),
        None => None,
    };
    Ok(ServerDb {
        name: required("name", datum::string(row, "name")?)?,
        model: required("model", datum::string(row, "model")?)?,
        connected: flag("connected")?,
        leader: flag("leader")?,
        index,
        cid: datum::uuid_column(row, "cid")?,
        sid: datum::uuid_column(row, "sid")?,
    })
}

/// One southbound chassis and the tunnel addresses it registered.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SbChassis {
    /// `Chassis.name`: the chassis id, ovn-controller's OVS
    /// `external_ids:system-id`.
    pub name: String,
    /// `Chassis.hostname`, as ovn-controller wrote it.
    pub hostname: Option<String>,
    /// Every `Encap.ip` of its encaps (one per type and address), sorted,
    /// without duplicates.
    pub encap_ips: Vec<IpAddr>,
}

/// The `Chassis` rows joined with the `Encap` rows they reference, sorted
/// by name. An `Encap` whose `ip` is no address is an error (a database
/// no ovn-controller wrote), as is a reference to no row.
pub fn chassis_rows(chassis: &[Row], encaps: &[Row]) -> Result<Vec<SbChassis>, String> {
    let mut by_uuid: BTreeMap<String, Vec<IpAddr>> = BTreeMap::new();
    for row in encaps {
        let uuid = datum::uuid(row).ok_or("an Encap row without _uuid")?;
        let ip = datum::string(row, "ip")?.unwrap_or_default();
        let ips = parse_ip_list(&ip).map_err(|e| format!("Encap {uuid}: {e}"))?;
        by_uuid.insert(uuid, ips);
    }
    let mut out = Vec::with_capacity(chassis.len());
    for row in chassis {
        let name = datum::string(row, "name")?.ok_or("a Chassis row without name")?;
        let mut encap_ips = Vec::new();
        for reference in datum::uuid_set(row, "encaps")? {
            let ips = by_uuid.get(&reference).ok_or_else(|| {
                format!("chassis {name:?} references Encap {reference}, which is no row")
            })?;
            encap_ips.extend(ips.iter().copied());
        }
        encap_ips.sort();
        encap_ips.dedup();
        out.push(SbChassis {
            hostname: datum::string(row, "hostname")?.filter(|h| !h.is_empty()),
            name,
            encap_ips,
        });
    }
    out.sort();
    Ok(out)
}

/// This node's chassis identity, from its own Open_vSwitch row.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalChassis {
    /// `external_ids:system-id`: the chassis id ovn-controller registers.
    pub system_id: Option<String>,
    /// `external_ids:ovn-encap-ip`, parsed (OVN takes a comma-separated
    /// list); empty when unset.
    pub encap_ips: Vec<IpAddr>,
}

/// The `Open_vSwitch` row's chassis identity.
pub fn local_chassis(row: &Row) -> Result<LocalChassis, String> {
    let system_id = datum::map_get(row, "external_ids", "system-id")?.filter(|s| !s.is_empty());
    let encap = datum::map_get(row, "external_ids", "ovn-encap-ip")?;
    let mut encap_ips = match encap {
        Some(text) => parse_ip_list(&text).map_err(|e| e.to_string())?,
        None => Vec::new(),
    };
    encap_ips.sort();
    encap_ips.dedup();
    Ok(LocalChassis {
        system_id,
        encap_ips,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn rows(v: Value) -> Vec<Row> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn server_rows_as_ovsdb_server_3_1_writes_them() {
        // Captured from ovsdb-server 3.1.0 (Debian 12), a follower of a
        // three-member OVN_Northbound raft on 127.0.0.1, and a standalone
        // OVN_Southbound: `ovsdb-client transact tcp:… '["_Server",
        // {"op":"select","table":"Database","where":[],"columns":[…]}]'`.
        let got = server_rows(&rows(json!([
            {"cid":["set",[]],"connected":true,"index":["set",[]],"leader":true,
             "model":"standalone","name":"_Server","sid":["set",[]]},
            {"cid":["uuid","f9807868-6c97-45a1-838e-cf3dc6fca988"],"connected":true,
             "index":4,"leader":false,"model":"clustered","name":"OVN_Northbound",
             "sid":["uuid","3c0acdde-1b14-4f25-b9d8-2a6010ca5886"]},
        ])))
        .unwrap();
        assert_eq!(got[0].name, "_Server");
        assert_eq!((got[0].index, got[0].cid.as_deref()), (None, None));
        let nb = &got[1];
        assert!(nb.clustered() && nb.connected && !nb.leader);
        assert_eq!(nb.index, Some(4));
        assert_eq!(
            nb.cid.as_deref(),
            Some("f9807868-6c97-45a1-838e-cf3dc6fca988")
        );
        assert_eq!(
            nb.sid.as_deref(),
            Some("3c0acdde-1b14-4f25-b9d8-2a6010ca5886")
        );
    }

    #[test]
    fn a_row_missing_what_every_server_writes_is_an_error() {
        for bad in [
            json!([{"model":"clustered","connected":true,"leader":true,"index":1,"cid":["set",[]],"sid":["set",[]]}]),
            json!([{"name":"x","model":"clustered","connected":["set",[]],"leader":true,"index":1,"cid":["set",[]],"sid":["set",[]]}]),
            json!([{"name":"x","model":"clustered","connected":true,"leader":true,"index":-1,"cid":["set",[]],"sid":["set",[]]}]),
            json!([{"name":"x","model":"clustered","connected":true,"leader":true,"index":1,"cid":"f98","sid":["set",[]]}]),
        ] {
            assert!(server_rows(&rows(bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn chassis_are_joined_with_their_encaps() {
        // The shape ovn-sbctl chassis-add writes (ovn 23.03): one Encap per
        // chassis, referenced from Chassis.encaps.
        let chassis = rows(json!([
            {"_uuid":["uuid","c2"],"name":"spx2","hostname":"","encaps":["uuid","e2"]},
            {"_uuid":["uuid","c1"],"name":"spx1","hostname":"spx1.lab",
             "encaps":["set",[["uuid","e1"],["uuid","e1b"]]]},
        ]));
        let encaps = rows(json!([
            {"_uuid":["uuid","e1"],"type":"geneve","ip":"198.18.0.1"},
            {"_uuid":["uuid","e1b"],"type":"vxlan","ip":"198.18.0.1"},
            {"_uuid":["uuid","e2"],"type":"geneve","ip":"198.18.0.2"},
        ]));
        let got = chassis_rows(&chassis, &encaps).unwrap();
        assert_eq!(
            got,
            [
                SbChassis {
                    name: "spx1".into(),
                    hostname: Some("spx1.lab".into()),
                    encap_ips: vec!["198.18.0.1".parse().unwrap()],
                },
                SbChassis {
                    name: "spx2".into(),
                    hostname: None,
                    encap_ips: vec!["198.18.0.2".parse().unwrap()],
                },
            ]
        );
        let dangling =
            rows(json!([{"_uuid":["uuid","c"],"name":"x","hostname":"","encaps":["uuid","nope"]}]));
        assert!(chassis_rows(&dangling, &encaps).is_err());
        let bad_ip = rows(json!([{"_uuid":["uuid","e"],"type":"geneve","ip":"not-an-ip"}]));
        assert!(chassis_rows(&[], &bad_ip).is_err());
    }

    #[test]
    fn the_local_identity_is_system_id_and_encap_ips() {
        let row = &rows(json!([{"external_ids":["map",[
            ["hostname","n1"],["ovn-encap-ip","198.18.0.1,fd00::1"],["system-id","n1"]]]}]))[0];
        let got = local_chassis(row).unwrap();
        assert_eq!(got.system_id.as_deref(), Some("n1"));
        assert_eq!(
            got.encap_ips,
            vec![
                "198.18.0.1".parse::<IpAddr>().unwrap(),
                "fd00::1".parse().unwrap()
            ]
        );
        let bare = &rows(json!([{"external_ids":["map",[]]}]))[0];
        assert_eq!(local_chassis(bare).unwrap(), LocalChassis::default());
    }
}
