//! Spinifex's own names, in one place: what the doctor is called on the
//! command line, so every message an operator copies works as typed.
//!
//! The doctor ships as `spx-doctor`. Spinifex's Go CLI `spx` runs it as
//! `spx doctor` (contrib/spinifex/doctor.go), exec'ing the binary with
//! `SPX_DOCTOR_VIA=spx` in the environment; help, usage, errors, runbooks and
//! remediation then name `spx doctor`, and `spx-doctor` otherwise.

/// The environment variable Spinifex's `spx doctor` hook sets.
pub const VIA_ENV: &str = "SPX_DOCTOR_VIA";

/// The installed binary's name.
pub const BINARY: &str = "spx-doctor";

/// How the operator started the doctor: `spx doctor` through Spinifex's
/// `spx`, else `spx-doctor`.
pub fn doctor_command() -> &'static str {
    if via_spx() {
        "spx doctor"
    } else {
        BINARY
    }
}

/// True when Spinifex's `spx` started this process (`SPX_DOCTOR_VIA=spx`).
pub fn via_spx() -> bool {
    std::env::var_os(VIA_ENV).is_some_and(|v| v == "spx")
}

/// Text written for `spx doctor` (the `explain` pages, which are static),
/// with the command as this process was started.
pub fn as_invoked(text: &str) -> String {
    if via_spx() {
        text.to_owned()
    } else {
        text.replace("`spx doctor", &format!("`{BINARY}"))
    }
}
