//! Typed reads over the host seam ([`crate::host::HostRef`]): each asks the
//! host a question and parses the answer into facts ([`crate::facts`]), so
//! that the same read serves a live run, a recording and a replay.

pub mod kernel_files;
pub mod ovsdb;
pub mod ovsdb_raft;
pub mod ovsdb_topology;
pub mod proc_stats;
pub mod qemu;
pub mod snmp;
pub mod sysfs_net;
pub mod xfrm;
