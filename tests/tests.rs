//! The one integration-test binary: every test runs the real `spx` binary.

mod support;

mod cli;
mod hardening;
mod monitoring;
mod ipsec;
mod ovsdb;
mod preflight;
mod qemu;
mod udp;
mod nic;
mod mtu_path;
