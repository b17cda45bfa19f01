//! One module per check. Each reads like the runbook it replaces: gather the
//! facts, compare them with what the config implies, and say what was
//! measured and what to type to fix it.

pub mod cluster_config_drift;
pub mod cluster_path_matrix;
pub mod cluster_reachable;
pub mod cluster_sa_pairs;
pub mod cpu_softirq;
pub mod ipsec_flags;
pub mod ipsec_xfrm;
pub mod nic_offloads;
pub mod nic_queues;
pub mod nic_rings;
pub mod nic_tso;
pub mod overlay_mtu;
pub mod path_mtu;
pub mod qemu_tuning;
pub mod rcvbuf_errors;
pub mod tcp_reordering;
pub mod udp_buffers;
pub mod underlay_on_link;
