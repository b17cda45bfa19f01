//! `--record`: a host that answers from another (the live one) and writes
//! down every question and answer, with the time and the asking check, in
//! call order.

use std::sync::Mutex;
use std::time::Instant;

use super::bundle::{Bundle, Header, Record};
use super::request::{Fact, Request};
use super::{Host, Limit};
use crate::facts::ProbeError;

pub struct Recorder<H> {
    inner: H,
    started: Instant,
    records: Mutex<Vec<Record>>,
}

impl<H: Host> Recorder<H> {
    pub fn new(inner: H) -> Recorder<H> {
        Recorder {
            inner,
            started: Instant::now(),
            records: Mutex::new(Vec::new()),
        }
    }

    /// The bundle of everything asked so far, under `header`. A check still
    /// running (past the deadline) may add more; the bundle does not wait
    /// for it, and its outcome in `header` says it timed out.
    pub fn bundle(&self, header: Header) -> Bundle {
        let records = self
            .records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        Bundle { header, records }
    }
}

impl<H: Host> Host for Recorder<H> {
    fn read(&self, scope: &str, request: &Request, limit: Limit) -> Result<Fact, ProbeError> {
        let at = self.started.elapsed().as_secs_f64() * 1000.0;
        let answer = self.inner.read(scope, request, limit);
        let record = Record::new(at, scope, request, &answer);
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(record);
        answer
    }

    fn sleep_until(&self, until: Instant) {
        self.inner.sleep_until(until)
    }
}
