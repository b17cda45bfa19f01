//! The checks behind `spx doctor`.
//!
//! Every check is a unit struct implementing [`Check`], listed once in
//! [`CHECKS`]. A new check is one file under `checks/`, one line in that
//! list, and its tests. A site's own checks (doctor.d) join them when the
//! run's catalogue is built ([`catalogue::install`]). Facts come from [`facts`] through the seam ([`host`]; live from [`live`], typed by [`read`]), which reads the live host
//! (procfs, sysfs, netlink, ioctl, sockets, OVSDB); checks compare those
//! facts with what the config implies ([`expect`]) and return a [`Finding`]
//! of a declared kind ([`kind`]), with typed evidence ([`evidence`]) that
//! carries the metrics the check owns ([`metrics`]).

// `Result<_, Finding>` carries the skip or error a check returns as is; it
// is built once per check run, so its size is of no consequence.
#![allow(clippy::result_large_err)]

pub mod catalogue;
pub mod check;
pub mod checks;
pub mod cluster;
pub mod codes;
pub mod config;
pub mod ctx;
pub mod endpoint;
pub mod evidence;
pub mod expect;
pub mod facts;
pub mod finding;
pub mod host;
#[cfg(test)]
pub(crate) mod hw_captures;
pub mod kind;
pub mod live;
pub mod metrics;
pub mod natural;
pub mod path;
pub mod per_interface;
pub mod profile;
pub mod read;
#[cfg(test)]
mod replayed_runs;
#[cfg(test)]
mod schema_check;
#[cfg(test)]
mod seeds;
pub mod select;
pub mod settings;
pub mod site_definition;
#[cfg(test)]
mod snapshot;
pub mod spinifex;
pub mod status;
pub mod targets;
pub mod validate;

pub use catalogue::{find, CHECKS};
pub use check::{Check, ClusterJudge, Declared, Scope};
pub use ctx::Ctx;
pub use evidence::Evidence;
pub use finding::{Finding, SkipReason, Status, Subject};
pub use kind::{KindDoc, Kinds};
pub use settings::{ConfigState, Options};
