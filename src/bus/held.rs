//! Reports an agent holds for a [`Fetch`](super::wire::Fetch): those
//! larger than their request's `inline_max_bytes`. A requester of a
//! thousand nodes would otherwise be sent every report at once (half a
//! GiB at 1,024 nodes), past what the server buffers for one client
//! (nats-server's `max_pending`, 64 MiB), and the server cuts it off as a
//! slow consumer; with each report held, the requester asks for them at
//! the pace it reads.
//!
//! An agent holds at most [`MAX_HELD`] reports, each for at most
//! [`HOLD_FOR`] (a request's timeout is at most 60 s, and the requester
//! fetches within it); the oldest goes first. A report is given once.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;

/// How many reports one agent holds at most.
pub const MAX_HELD: usize = 16;
/// How long a report is held at most.
pub const HOLD_FOR: Duration = Duration::from_secs(60);

/// Whether a report of `len` bytes goes in the answer itself.
pub fn inline(len: usize, inline_max: Option<usize>) -> bool {
    inline_max.is_none_or(|max| len <= max)
}

/// One held report: the answer's kind (`report`), its body and how many
/// requests its run answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldReport {
    pub kind: &'static str,
    pub body: Bytes,
    pub shared: usize,
}

#[derive(Default)]
pub struct Held {
    reports: VecDeque<(String, Instant, HeldReport)>,
}

impl Held {
    /// Hold `report` for request `id`, at `now`.
    pub fn hold(&mut self, id: String, report: HeldReport, now: Instant) {
        self.expire(now);
        self.reports.retain(|(i, _, _)| *i != id);
        if self.reports.len() == MAX_HELD {
            self.reports.pop_front();
        }
        self.reports.push_back((id, now + HOLD_FOR, report));
    }

    /// The report held for `id`, given once.
    pub fn take(&mut self, id: &str, now: Instant) -> Option<HeldReport> {
        self.expire(now);
        let at = self.reports.iter().position(|(i, _, _)| i == id)?;
        self.reports.remove(at).map(|(_, _, r)| r)
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.reports.len()
    }

    fn expire(&mut self, now: Instant) {
        self.reports.retain(|(_, until, _)| *until > now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(n: u8) -> HeldReport {
        HeldReport {
            kind: "report",
            body: Bytes::from(vec![n; 4]),
            shared: 1,
        }
    }

    #[test]
    fn a_report_is_given_once_and_only_for_its_id() {
        let t = Instant::now();
        let mut h = Held::default();
        h.hold("a".into(), report(1), t);
        assert_eq!(h.take("b", t), None);
        assert_eq!(h.take("a", t), Some(report(1)));
        assert_eq!(h.take("a", t), None);
    }

    #[test]
    fn held_reports_are_bounded_in_number_and_time() {
        let t = Instant::now();
        let mut h = Held::default();
        for i in 0..=MAX_HELD {
            h.hold(format!("r{i}"), report(i as u8), t);
        }
        assert_eq!(h.len(), MAX_HELD);
        assert_eq!(h.take("r0", t), None, "the oldest went first");
        assert!(h.take("r1", t).is_some());
        assert_eq!(h.take("r2", t + HOLD_FOR), None, "expired");
        assert_eq!(h.len(), 0);
    }

    #[test]
    fn a_report_fits_the_answer_up_to_the_requests_bound() {
        assert!(inline(10_000_000, None));
        assert!(inline(4096, Some(4096)));
        assert!(!inline(4097, Some(4096)));
    }
}
