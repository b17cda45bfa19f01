//! The one integration-test binary: every test runs the real `spx-doctor` binary.

mod support;

mod cli;
mod cluster;
mod cluster_verdicts;
mod codes;
mod hardening;
mod ipsec;
mod ipsec_cert;
mod ipsec_daemon;
mod junit;
mod kernel_lab;
mod monitoring;
mod mtu_path;
mod nats;
mod neigh;
pub mod nic;
mod overlay;
mod ovn_cluster;
mod ovsdb;
mod path;
mod preflight;
mod qemu;
mod record_replay;
mod root_test;
mod screen;
mod site_checks;
mod spinifex_hook;
mod udp;
