//! One module per check. Each reads like the runbook it replaces: gather the
//! facts, compare them with what the config implies, and say what was
//! measured and what to type to fix it.

pub mod cluster_bus;
pub mod cluster_chassis;
pub mod cluster_config_drift;
pub mod cluster_ipsec;
pub mod cluster_path_matrix;
pub mod cluster_reachable;
pub mod cluster_sa_pairs;
pub mod cpu_softirq;
pub mod ipsec_cert;
pub mod ipsec_daemon;
pub mod ipsec_errors;
pub mod ipsec_flags;
pub mod ipsec_policy;
pub mod ipsec_xfrm;
pub mod mtu_overlay;
pub mod mtu_path;
pub mod nic_offloads;
pub mod nic_queues;
pub mod nic_rings;
pub mod nic_tso;
pub mod ovn_cluster;
pub mod qemu_tuning;
pub mod site;
pub mod sysctl_neigh;
pub mod sysctl_udp_buffers;
pub mod tcp_reordering;
pub mod udp_rcvbuf_errors;
pub mod underlay_on_link;

#[cfg(test)]
mod tests {
    /// Each check lives in the file (or folder) its id names: `mtu.path`
    /// in `mtu_path.rs`, `qemu.tuning` in `qemu_tuning/`.
    #[test]
    fn file_names_follow_check_ids() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/checks");
        for check in crate::CHECKS {
            let stem = check.id().replace(['.', '-'], "_");
            assert!(
                dir.join(format!("{stem}.rs")).is_file()
                    || dir.join(&stem).join("mod.rs").is_file(),
                "{} is not in src/checks/{stem}.rs or src/checks/{stem}/",
                check.id()
            );
        }
        let files = std::fs::read_dir(&dir).unwrap().count();
        // mod.rs, site/ (the site's own checks, from doctor.d) and one file
        // or folder per built-in check.
        assert_eq!(files, crate::CHECKS.len() + 2);
    }
}
