//! Running QEMU guests: found in /proc ([`process`]), their command lines
//! parsed the way QEMU parses them ([`cmdline`], [`opts`]), the host side of
//! their NICs ([`host`]), and what their QMP monitor says ([`qmp`]).
//!
//! Parsing is pure and kept apart from reading the host, so recorded
//! command lines test it and the fuzzer can drive it.

pub mod cmdline;
pub mod host;
pub mod instance;
pub mod opts;
pub mod process;
pub mod qmp;

pub use cmdline::{QemuCommandLine, QmpSocket, Smp};
pub use opts::Opts;
