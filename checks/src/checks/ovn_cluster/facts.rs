//! What `ovn.cluster` judges, as plain data: every NB and SB member's
//! `_Server` row at both ends of the sample window, the southbound
//! chassis, this node's own chassis identity, and what the config says the
//! cluster is. Built by [`super::gather`] from the host, or by a test from
//! recorded rows; judged by [`super::analyse`] without I/O.

use std::fmt;
use std::time::Duration;

use crate::endpoint::Endpoint;
use crate::facts::ovsdb::raft::{LocalChassis, SbChassis, ServerDb};
use crate::facts::ovsdb::{NB_DB, SB_DB};
use crate::facts::ProbeError;

/// One of the two OVN databases, with the names Spinifex's install gives
/// its files, units and ports (Debian's `ovn-central`, `ovn-ctl`
/// defaults, `setup-ovn.sh`'s raft ports).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Db {
    Nb,
    Sb,
}

impl Db {
    /// The database name: `OVN_Northbound`, `OVN_Southbound`.
    pub fn name(self) -> &'static str {
        match self {
            Db::Nb => NB_DB,
            Db::Sb => SB_DB,
        }
    }

    /// `NB`, `SB`.
    pub fn short(self) -> &'static str {
        match self {
            Db::Nb => "NB",
            Db::Sb => "SB",
        }
    }

    /// The server's control socket (`ovn-appctl -t`).
    pub fn ctl(self) -> &'static str {
        match self {
            Db::Nb => "/var/run/ovn/ovnnb_db.ctl",
            Db::Sb => "/var/run/ovn/ovnsb_db.ctl",
        }
    }

    /// Its systemd unit (part of `ovn-central`).
    pub fn unit(self) -> &'static str {
        match self {
            Db::Nb => "ovn-ovsdb-server-nb",
            Db::Sb => "ovn-ovsdb-server-sb",
        }
    }

    /// Its database file.
    pub fn file(self) -> &'static str {
        match self {
            Db::Nb => "/var/lib/ovn/ovnnb_db.db",
            Db::Sb => "/var/lib/ovn/ovnsb_db.db",
        }
    }

    /// The raft port between members (`setup-ovn.sh`: NB 6643, SB 6644).
    pub fn raft_port(self) -> u16 {
        match self {
            Db::Nb => 6643,
            Db::Sb => 6644,
        }
    }

    /// The config key and the flag that name its endpoints.
    pub fn named_by(self) -> (&'static str, &'static str) {
        match self {
            Db::Nb => ("ovn_nb_addr", "--nb-db"),
            Db::Sb => ("ovn_sb_addr", "--sb-db"),
        }
    }
}

/// A member as an operator names it: its endpoint, and the config node at
/// its address when there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberRef {
    pub endpoint: Endpoint,
    pub node: Option<String>,
}

impl MemberRef {
    /// The host its raft port is on, as the endpoint names it (none for a
    /// unix socket).
    pub fn host(&self) -> Option<&str> {
        match &self.endpoint {
            Endpoint::Tcp { host, .. } | Endpoint::Ssl { host, .. } => Some(host),
            Endpoint::Unix(_) => None,
        }
    }

    /// Where to run a command on it: `on n3` or `on the host of tcp:…`.
    pub fn on(&self) -> String {
        match &self.node {
            Some(n) => format!("on {n}"),
            None => format!("on the host of {}", self.endpoint),
        }
    }

    /// Its raft address for `ovsdb-tool join-cluster`, when its host is
    /// known.
    pub fn raft_address(&self, db: Db) -> String {
        match self.host() {
            Some(h) if h.contains(':') => format!("tcp:[{h}]:{}", db.raft_port()),
            Some(h) => format!("tcp:{h}:{}", db.raft_port()),
            None => format!("tcp:<its address>:{}", db.raft_port()),
        }
    }
}

impl fmt::Display for MemberRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.node {
            Some(n) => write!(f, "{} ({n})", self.endpoint),
            None => write!(f, "{}", self.endpoint),
        }
    }
}

/// What one member said, at one end of the window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberRead {
    /// Its `_Server` row for the database.
    Row(ServerDb),
    /// It answered, but serves other databases (named), not this one.
    Lacks(Vec<String>),
    /// No answer (refused, timed out, closed): why.
    Silent(String),
    /// Not asked: its socket needs a privilege this run lacks (named).
    Denied(String),
}

impl MemberRead {
    /// The read of database `db` from one member's `_Server` rows.
    pub fn of(db: Db, answer: Result<Vec<ServerDb>, ProbeError>) -> MemberRead {
        match answer {
            Ok(rows) => match rows.iter().find(|r| r.name == db.name()) {
                Some(row) => MemberRead::Row(row.clone()),
                None => MemberRead::Lacks(
                    rows.into_iter()
                        .map(|r| r.name)
                        .filter(|n| n != "_Server")
                        .collect(),
                ),
            },
            Err(ProbeError::PermissionDenied { needs, .. }) => MemberRead::Denied(needs),
            Err(e) => MemberRead::Silent(e.to_string()),
        }
    }

    pub fn row(&self) -> Option<&ServerDb> {
        match self {
            MemberRead::Row(r) => Some(r),
            _ => None,
        }
    }
}

/// One member of a list: who, and what it said at the start and at the end
/// of the window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub who: MemberRef,
    pub start: MemberRead,
    pub end: MemberRead,
}

/// One database's members, in the order the list names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbFacts {
    pub db: Db,
    pub members: Vec<Member>,
}

impl DbFacts {
    /// The list as `--db` takes it.
    pub fn list(&self) -> String {
        self.members
            .iter()
            .map(|m| m.who.endpoint.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Whether this node reads a database, and what it read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DbSide {
    Read(DbFacts),
    /// A cluster run in which another node (named) reads NB and SB.
    Elsewhere(String),
    /// Named nowhere: why (no `ovn_nb_addr` in the config, no `--nb-db`).
    Unnamed(String),
}

impl DbSide {
    pub fn read(&self) -> Option<&DbFacts> {
        match self {
            DbSide::Read(d) => Some(d),
            _ => None,
        }
    }
}

/// A read that either answered (with who answered it) or did not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Read<T> {
    /// Not asked on this node (another reads OVN, or none is named).
    NotAsked,
    Answered {
        value: T,
        from: Endpoint,
    },
    /// Its socket needs a privilege this run lacks (named).
    Denied(String),
    Failed(String),
}

impl<T> Read<T> {
    pub fn of(answer: Result<crate::facts::ovsdb::Answer<T>, ProbeError>) -> Read<T> {
        match answer {
            Ok(a) => Read::Answered {
                value: a.value,
                from: a.endpoint,
            },
            Err(ProbeError::PermissionDenied { needs, .. }) => Read::Denied(needs),
            Err(e) => Read::Failed(e.to_string()),
        }
    }

    pub fn value(&self) -> Option<&T> {
        match self {
            Read::Answered { value, .. } => Some(value),
            _ => None,
        }
    }
}

/// Everything `ovn.cluster` judges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OvnFacts {
    /// This node's name (the config's `node`).
    pub node: Option<String>,
    /// Every `[nodes.*]` name, sorted: one chassis each.
    pub nodes: Vec<String>,
    pub nb: DbSide,
    pub sb: DbSide,
    /// At least this long passed between the last answer of the window's
    /// first reading and the first question of its second: the bound a
    /// lagging member is measured against. `None` when not read here.
    pub lag_bound: Option<Duration>,
    /// The southbound chassis, from the SB leader when one was known.
    pub chassis: Read<Vec<SbChassis>>,
    /// This node's own Open_vSwitch identity.
    pub local: Read<LocalChassis>,
}

impl OvnFacts {
    /// The node reading OVN for the cluster, when it is another.
    pub fn read_by(&self) -> Option<&str> {
        match (&self.nb, &self.sb) {
            (DbSide::Elsewhere(n), _) | (_, DbSide::Elsewhere(n)) => Some(n),
            _ => None,
        }
    }

    /// The SB list as `ovn-sbctl --db` takes it, when SB was read here.
    pub fn sb_list(&self) -> Option<String> {
        self.sb.read().map(DbFacts::list)
    }
}
