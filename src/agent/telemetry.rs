//! The agent's OTLP export, off the run path: a run hands its encoded
//! request to a bounded queue and goes on; one thread of its own sends
//! them to the collector, one at a time, each within
//! [`crate::otlp::EXPORT_TIMEOUT`].
//!
//! It used to run inside the periodic run, with its 5 s bound: a collector
//! that accepts and never answers (wedged, or a proxy with a dead backend)
//! made every run at `--interval 2s` last 6.1 s, so the node's entry went
//! stale (4 revisions in 30 s instead of 15) and `--cluster` found the
//! agent busy. Now a mute collector costs the exporter thread only: what
//! does not fit the queue is dropped and counted, said once in the log,
//! and said again with the count when the collector takes an export again
//! (no restart). Memory stays bounded by the queue ([`QUEUE`] requests).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use crate::render::journal::{log, Priority};

/// Requests waiting for the exporter at most; one more is being sent.
pub const QUEUE: usize = 2;

/// What an export reports back to the log, pure so it is unit-tested.
#[derive(Debug, Default)]
pub struct Tally {
    /// Exports dropped (the queue was full) since the last one logged.
    dropped: u64,
    /// Exports that failed since the last one that worked.
    failed: u64,
    /// The dropping was said.
    said_dropping: bool,
    /// The failure was said.
    said_failing: bool,
    /// An export ever worked.
    worked: bool,
}

impl Tally {
    /// An export could not be queued: the line to log, the first time
    /// since the collector last took one.
    pub fn dropped(&mut self, url: &str) -> Option<String> {
        self.dropped += 1;
        if self.said_dropping {
            return None;
        }
        self.said_dropping = true;
        Some(format!(
            "the OTLP collector at {url} is not taking exports as fast as the runs make them: dropping what does not fit the queue of {QUEUE} (counted; runs go on; said once until it takes one)"
        ))
    }

    /// An export failed: the line to log, the first time.
    pub fn failed(&mut self, error: &str) -> Option<String> {
        self.failed += 1;
        if self.said_failing {
            return None;
        }
        self.said_failing = true;
        Some(format!("{error} (said once until an export works)"))
    }

    /// An export worked: the line to log, the first time ever and after a
    /// failure or drops, with what was lost meanwhile.
    pub fn worked(&mut self, url: &str) -> Option<String> {
        let lost = (self.failed, self.dropped);
        let first = !self.worked;
        let was_bad = self.said_failing || self.said_dropping;
        *self = Tally {
            worked: true,
            ..Tally::default()
        };
        if first && !was_bad {
            return Some(format!("exported this run's metrics to {url}"));
        }
        if !was_bad {
            return None;
        }
        Some(format!(
            "exporting to {url} again: {} export(s) failed and {} dropped meanwhile",
            lost.0, lost.1
        ))
    }
}

/// The queue and its exporter thread.
#[derive(Clone)]
pub struct Exporter {
    url: String,
    tx: SyncSender<Vec<u8>>,
    tally: Arc<Mutex<Tally>>,
    /// Exports dropped since the agent started.
    pub dropped_total: Arc<AtomicU64>,
}

impl Exporter {
    /// Start the exporter thread for `url`; `None` when no thread can be
    /// started (said in the log; nothing is exported then).
    pub fn start(url: String) -> Option<Exporter> {
        let (tx, rx) = sync_channel::<Vec<u8>>(QUEUE);
        let tally = Arc::new(Mutex::new(Tally::default()));
        let (u, t) = (url.clone(), Arc::clone(&tally));
        let spawned = std::thread::Builder::new()
            .name("otlp".into())
            .spawn(move || send_all(&u, &rx, &t));
        match spawned {
            Ok(_) => Some(Exporter {
                url,
                tx,
                tally,
                dropped_total: Arc::new(AtomicU64::new(0)),
            }),
            Err(e) => {
                log(
                    Priority::Warning,
                    &format!("cannot start the OTLP exporter thread: {e}; not exporting metrics"),
                );
                None
            }
        }
    }

    /// Hand one encoded request over; never waits.
    pub fn offer(&self, body: Vec<u8>) {
        match self.tx.try_send(body) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.dropped_total.fetch_add(1, Ordering::Relaxed);
                let line = self
                    .tally
                    .lock()
                    .ok()
                    .and_then(|mut t| t.dropped(&self.url));
                if let Some(l) = line {
                    log(Priority::Warning, &l);
                }
            }
        }
    }
}

fn send_all(url: &str, rx: &Receiver<Vec<u8>>, tally: &Mutex<Tally>) {
    while let Ok(body) = rx.recv() {
        let outcome = crate::otlp::export(url, body);
        let line = tally.lock().ok().and_then(|mut t| match &outcome {
            Ok(()) => t.worked(url),
            Err(e) => t.failed(e),
        });
        if let Some(l) = line {
            let p = if outcome.is_ok() {
                Priority::Info
            } else {
                Priority::Warning
            };
            log(p, &l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mute_collector_is_said_once_and_its_return_with_the_count() {
        let url = "http://198.19.0.9:4318/v1/metrics";
        let mut t = Tally::default();
        assert_eq!(
            t.worked(url).as_deref(),
            Some("exported this run's metrics to http://198.19.0.9:4318/v1/metrics")
        );
        assert_eq!(t.worked(url), None, "said once");
        let first = t.failed("OTLP export to …: timeout").unwrap();
        assert!(
            first.ends_with("(said once until an export works)"),
            "{first}"
        );
        assert_eq!(t.failed("again"), None);
        assert!(t
            .dropped(url)
            .unwrap()
            .contains("dropping what does not fit the queue of 2"));
        for _ in 0..9 {
            assert_eq!(t.dropped(url), None);
        }
        assert_eq!(
            t.worked(url).as_deref(),
            Some("exporting to http://198.19.0.9:4318/v1/metrics again: 2 export(s) failed and 10 dropped meanwhile")
        );
        assert_eq!(t.worked(url), None);
    }

    #[test]
    fn the_queue_never_waits_and_holds_at_most_its_bound() {
        // Nothing listens at the collector's address: the exporter thread
        // fails its exports one after another; offers never block on it.
        let e = Exporter::start("http://127.0.0.1:9/v1/metrics".into()).unwrap();
        let t0 = std::time::Instant::now();
        for _ in 0..50 {
            e.offer(vec![0u8; 1024]);
        }
        assert!(t0.elapsed() < std::time::Duration::from_millis(500));
        assert!(e.dropped_total.load(Ordering::Relaxed) <= 50);
    }
}
