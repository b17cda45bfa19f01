//! The probe layer: everything that reads the live host lives here, apart
//! from the judgement in the check modules, so that judgement can be tested
//! on recorded facts and reading can be tested on the real kernel.
//!
//! Errors say what kind of failure happened, because that decides the
//! verdict: permission denied is a *skip* (needs privilege), a missing file
//! or device is *not applicable*, anything else is an *error*. None is a fail.

pub mod credential;
pub mod ethtool;
pub mod icmp_probe;
pub mod journal;
pub mod kernel_files;
pub mod links;
pub mod ovsdb;
pub mod peers;
pub mod proc_stats;
pub mod process;
pub mod qemu;
pub mod snmp;
pub mod sysfs_net;
pub mod underlay_nics;
pub mod xfrm;
