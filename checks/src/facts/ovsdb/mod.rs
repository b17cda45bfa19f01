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
//! encoding, pure), [`crate::live::ovsdb::conn`] (one bounded session), this module (member
//! failover and the typed queries the checks need); [`raft`] (the facts of
//! `ovn.cluster` and their parsers, pure) and [`crate::read::ovsdb_raft`] (its reads).

pub mod datum;
pub mod raft;
pub mod topology;
pub mod wire;

use std::net::IpAddr;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::endpoint::Endpoint;
use crate::facts::ProbeError;

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

impl<T> Answer<T> {
    /// The same member's answer, carrying `value` (what was read from it).
    pub fn with<U>(self, value: U) -> Answer<U> {
        Answer {
            value,
            endpoint: self.endpoint,
            passed_over: self.passed_over,
        }
    }
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

/// One NB `DHCP_Options` row.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DhcpOptions {
    pub uuid: String,
    pub cidr: String,
    /// `options:mtu` as written, if set.
    pub mtu: Option<String>,
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
