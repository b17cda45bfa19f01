//! The catalogue: every check ([`CHECKS`]), looked up by id ([`find`]), and
//! the metrics they declare ([`metrics`]), read back from a report's
//! evidence ([`series`]). It sits on top: it names every check.

use serde_json::{Map, Value};

use crate::check::Check;
use crate::checks;
use crate::metrics::{MetricDef, Series};

/// Every check, in the order reports list them: the node checks, then the
/// cluster checks ([`crate::Scope::Cluster`]).
pub static CHECKS: &[&dyn Check] = &[
    &checks::sysctl_udp_buffers::UdpBuffers,
    &checks::udp_rcvbuf_errors::RcvbufErrors,
    &checks::sysctl_neigh::SysctlNeigh,
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
    &checks::cluster_bus::ClusterBus,
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

/// Every declared metric, with the check that owns it, in `CHECKS` order.
pub fn metrics() -> Vec<(&'static str, &'static MetricDef)> {
    let mut all = Vec::new();
    for check in CHECKS {
        for m in metrics_of(*check) {
            all.push((check.id(), *m));
        }
    }
    all
}

fn metrics_of(check: &dyn Check) -> &'static [&'static MetricDef] {
    check.declared().metrics
}

/// The series in one check result's evidence (an unknown id has none),
/// read back through the owning check's typed evidence.
pub fn series(check_id: &str, evidence: &Map<String, Value>) -> Vec<Series> {
    find(check_id)
        .map(|c| (c.declared().series)(evidence))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::MetricType;

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

    #[test]
    fn declared_metrics_are_unique_well_named_and_owned_by_real_checks() {
        let all = metrics();
        assert!(all.len() >= 8, "{all:?}");
        let mut names = std::collections::HashSet::new();
        for (id, m) in &all {
            assert!(find(id).is_some(), "{id}");
            assert!(names.insert(m.name), "{} declared twice", m.name);
            assert!(m.name.starts_with("spx_doctor_"), "{}", m.name);
            assert!(
                m.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{}",
                m.name
            );
            assert_eq!(
                m.kind == MetricType::Counter,
                m.name.ends_with("_total"),
                "{}: counters and only counters end in _total",
                m.name
            );
            assert!(!m.help.is_empty() && !m.help.contains('\n'), "{}", m.name);
            for suffix in ["_count", "_sum", "_bucket"] {
                assert!(
                    !m.name.ends_with(suffix),
                    "{}: promtool reserves {suffix}",
                    m.name
                );
            }
            for l in m.labels {
                assert!(l.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{l}");
            }
        }
    }
}
