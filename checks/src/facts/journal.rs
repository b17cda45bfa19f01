//! The one external program the doctor may run: `journalctl`, to find the
//! warning quic-go logs when it is refused the receive buffer it asked for.
//! Run with an argv (never a shell), bounded in time, output capped.

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum JournalLookup {
    /// No journalctl on this host.
    Unavailable,
    /// The matching lines of this boot (at most the last few).
    Lines(Vec<String>),
}
