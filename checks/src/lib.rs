//! The checks behind `spx doctor`.
//!
//! Every check is a unit struct implementing [`Check`], listed once in
//! [`CHECKS`]. A new check is one file under `checks/`, one line in that
//! list, and its tests. Facts come from [`probe`], which reads the live host
//! (procfs, sysfs, netlink, ioctl, sockets, OVSDB); checks compare those
//! facts with what the config implies ([`expect`]) and return a [`Finding`]
//! of a declared kind ([`kind`]), with typed evidence ([`evidence`]) that
//! carries the metrics the check owns ([`metrics`]).

// `Result<_, Finding>` carries the skip or error a check returns as is; it
// is built once per check run, so its size is of no consequence.
#![allow(clippy::result_large_err)]

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
pub mod per_interface;
pub mod probe;
pub mod profile;
#[cfg(test)]
mod replayed_runs;
#[cfg(test)]
mod schema_check;
pub mod select;
#[cfg(test)]
mod snapshot;
pub mod spinifex;
pub mod validate;

pub use check::{Check, Declared, Scope};
pub use ctx::{ConfigState, Ctx, Options};
pub use evidence::Evidence;
pub use finding::{Finding, SkipReason, Status, Subject};
pub use kind::{KindDoc, Kinds};

/// Every check, in the order reports list them: the node checks, then the
/// cluster checks ([`Scope::Cluster`]).
pub static CHECKS: &[&dyn Check] = &[
    &checks::sysctl_udp_buffers::UdpBuffers,
    &checks::udp_rcvbuf_errors::RcvbufErrors,
    &checks::mtu_path::PathMtu,
    &checks::mtu_overlay::OverlayMtu,
    &checks::underlay_on_link::UnderlayOnLink,
    &checks::ipsec_flags::IpsecFlags,
    &checks::ipsec_xfrm::IpsecXfrm,
    &checks::ipsec_cert::IpsecCert,
    &checks::ipsec_daemon::IpsecDaemon,
    &checks::ipsec_policy::IpsecPolicy,
    &checks::ipsec_errors::IpsecErrors,
    &checks::nic_offloads::NicOffloads,
    &checks::nic_tso::NicTso,
    &checks::nic_queues::NicQueues,
    &checks::nic_rings::NicRings,
    &checks::cpu_softirq::CpuSoftirq,
    &checks::tcp_reordering::TcpReordering,
    &checks::qemu_tuning::QemuTuning,
    &checks::ovn_cluster::OvnCluster,
    // Cluster checks (Scope::Cluster): judged by `--cluster` from every
    // node's report; never selected by default in a node run.
    &checks::cluster_reachable::ClusterReachable,
    &checks::cluster_config_drift::ClusterConfigDrift,
    &checks::cluster_path_matrix::ClusterPathMatrix,
    &checks::cluster_sa_pairs::ClusterSaPairs,
    &checks::cluster_chassis::ClusterChassis,
    &checks::cluster_ipsec::ClusterIpsec,
];

/// Look a check up by id.
pub fn find(id: &str) -> Option<&'static dyn Check> {
    CHECKS.iter().copied().find(|c| c.id() == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for c in CHECKS {
            let id = c.id();
            assert!(seen.insert(id), "duplicate id {id}");
            let (cat, name) = id.split_once('.').expect("category.name");
            assert!(!cat.is_empty() && !name.is_empty(), "{id}");
            assert!(
                id.chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ".-".contains(ch)),
                "{id}"
            );
            assert!(
                !c.title().is_empty() && c.explain().len() > 80,
                "{id} needs docs"
            );
        }
    }
}
