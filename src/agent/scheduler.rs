//! One run at a time, shared by everyone who asks the same thing, and
//! never more runs than the agent's bound per minute: a pure state
//! machine over the clock, so every rule is unit-tested without a bus.
//!
//! - A request that measures the same as the run in progress (same
//!   [`RunKey`]) joins it, when the run ends before the request's deadline.
//! - Any other request waits, one group per key (identical ones waiting
//!   together share the next run), until a run can start while its
//!   deadline still leaves it the sample window: then it runs with the
//!   time left; else it is refused `busy`.
//! - Runs start at most `runs_per_minute` times in any 60 s: a request
//!   that cannot start in time because of it is refused `rate-limited`,
//!   saying when a run could start again.
//! - Waiters and waiting groups are bounded, so a flood of requests costs
//!   bounded memory and at most the bounded number of probe runs.
//! - One requester (the client a reply inbox belongs to, [`requester`])
//!   starts at most half the runs of a minute and holds at most half the
//!   waiting groups: a runaway client with the token is refused, by name,
//!   while an operator's request still runs. (A shared token names no one:
//!   the server tells a subscriber nothing of who published.)
//!
//! - With an interval, the agent also runs by itself, start to start
//!   (due at t0, t0 + interval, …; a slot missed while a run overran is
//!   skipped, never run late in a burst). A periodic run is not bounded by
//!   runs-per-minute (its interval bounds it). It shares the sample window
//!   with requests both ways: when it falls due during a run of the same
//!   checks, that run is the periodic run; and a request that arrives
//!   during a periodic run and measures no more than it joins it (a
//!   request naming another node as OVN's reader shares a periodic run in
//!   which this node read OVN itself: its report is a superset).
//!
//! The waiter type `W` is whatever answers a request (a reply subject on
//! the bus); the agent's own periodic run is a flag on the run.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use crate::bus::wire::RunKey;

/// The window the runs-per-minute bound counts over.
const MINUTE: Duration = Duration::from_secs(60);
/// A run needs its sample window plus this to conclude anything.
pub const MIN_OVER_SAMPLE: Duration = Duration::from_millis(100);
/// Kept back from a deadline to send the answer.
pub const REPLY_MARGIN: Duration = Duration::from_millis(50);

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub runs_per_minute: u32,
    /// Requests sharing one run (or one waiting group).
    pub max_waiters: usize,
    /// Distinct requests waiting for the run in progress.
    pub max_waiting_groups: usize,
}

/// The agent's own runs.
#[derive(Clone, Debug)]
pub struct Periodic {
    /// What a periodic run measures: the default set, as a plain run.
    pub key: RunKey,
    /// From one start to the next.
    pub every: Duration,
    /// Each periodic run's own timeout.
    pub timeout: Duration,
    /// How long after the first run the second falls due (at most
    /// `every`; zero: one interval): where in each interval this node's
    /// runs fall, so agents started together do not all run in the same
    /// instant. No gap is ever longer than `every`, so a phase never makes
    /// a report look stale.
    pub phase: Duration,
}

/// One request, as the scheduler sees it.
pub struct Job<W> {
    pub key: RunKey,
    /// When the requester stops waiting.
    pub deadline: Instant,
    pub waiter: W,
    /// Who asked ([`requester`]); `None`: not counted per requester.
    pub from: Option<String>,
}

/// The client a request's reply inbox belongs to: the reply subject
/// without its last token (`_INBOX.<client>.<request>`, as NATS clients
/// multiplex their replies), or the whole subject when it has only two
/// (`_INBOX.<id>`). A client that connects anew for every request is a
/// new requester each time; the agent's own bound still holds for all.
pub fn requester(reply: &str) -> String {
    match reply.rsplit_once('.') {
        Some((client, _)) if client.contains('.') => client.to_owned(),
        _ => reply.to_owned(),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    Busy,
    RateLimited,
}

/// A request that will not be run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    pub why: Why,
    pub message: String,
    /// When a run could start again (rate-limited).
    pub retry_after: Option<Duration>,
}

pub enum Offered<W> {
    /// Shares the run in progress.
    Joined,
    /// Waits for a run of its own (or of its group).
    Queued,
    Refused(W, Refused),
}

/// A run to start now.
#[derive(Debug, PartialEq, Eq)]
pub struct Start {
    pub key: RunKey,
    /// This run is (also) the agent's periodic run.
    pub periodic: bool,
    /// The run's own timeout: the time left to its earliest waiter,
    /// less [`REPLY_MARGIN`].
    pub timeout: Duration,
}

/// What to do after [`Scheduler::tick`].
pub struct Tick<W> {
    pub start: Option<Start>,
    pub refused: Vec<(W, Refused)>,
    /// Call `tick` again then (or when a run ends or a request comes).
    pub wake: Option<Instant>,
    /// Periodic runs that fell due and could not run (the run in progress
    /// overran their slot, or kept them waiting past their timeout).
    pub missed: u64,
}

struct Group<W> {
    key: RunKey,
    /// The earliest deadline among its waiters.
    deadline: Instant,
    waiters: Vec<W>,
    /// The agent's periodic run waits in this group too.
    periodic: bool,
    /// The requester whose request made the group (its run counts against
    /// that requester's share).
    opened_by: Option<String>,
}

impl<W> Group<W> {
    /// The last moment this group's run may start and still take its
    /// sample window before the earliest deadline.
    fn latest_start(&self) -> Option<Instant> {
        self.deadline
            .checked_sub(self.key.sample + MIN_OVER_SAMPLE + REPLY_MARGIN)
    }
}

struct Running<W> {
    key: RunKey,
    ends_by: Instant,
    waiters: Vec<W>,
    periodic: bool,
}

impl<W> Running<W> {
    /// Whether a request for `key` can take this run's report.
    fn serves(&self, key: &RunKey) -> bool {
        self.key == *key || (self.periodic && self.key.measures_like(key))
    }
}

pub struct Scheduler<W> {
    limits: Limits,
    running: Option<Running<W>>,
    waiting: VecDeque<Group<W>>,
    /// When the runs of the last minute started.
    starts: VecDeque<Instant>,
    /// Runs started since the agent started.
    pub runs: u64,
    /// The periodic runs, and when the next falls due.
    periodic: Option<(Periodic, Instant)>,
    /// When each requester's runs of the last minute started (only
    /// requesters with a run in the last minute: bounded by the bound).
    by_requester: BTreeMap<String, VecDeque<Instant>>,
}

impl<W> Scheduler<W> {
    pub fn new(limits: Limits) -> Scheduler<W> {
        Scheduler {
            limits,
            running: None,
            waiting: VecDeque::new(),
            starts: VecDeque::new(),
            runs: 0,
            periodic: None,
            by_requester: BTreeMap::new(),
        }
    }

    /// Runs one requester may start in any minute: half the bound.
    fn requester_share(&self) -> usize {
        (self.limits.runs_per_minute as usize / 2).max(1)
    }

    /// Waiting groups one requester may hold: half of them.
    fn requester_waiting_share(&self) -> usize {
        (self.limits.max_waiting_groups / 2).max(1)
    }

    /// Why `from` may not open another group now, if it may not.
    fn requester_refusal(&mut self, from: &str, now: Instant) -> Option<Refused> {
        let waiting = self
            .waiting
            .iter()
            .filter(|g| g.opened_by.as_deref() == Some(from))
            .count();
        if waiting >= self.requester_waiting_share() {
            return Some(Self::busy(format!(
                "{waiting} requests of requester {from} already wait, its share of the {} that may (half, so that one client cannot take them all)",
                self.limits.max_waiting_groups
            )));
        }
        let started = self.by_requester.get_mut(from).map_or(0, |starts| {
            while starts
                .front()
                .is_some_and(|s| now.saturating_duration_since(*s) >= MINUTE)
            {
                starts.pop_front();
            }
            starts.len()
        });
        self.by_requester.retain(|_, s| !s.is_empty());
        let share = self.requester_share();
        if started + waiting < share {
            return None;
        }
        let after = self
            .by_requester
            .get(from)
            .and_then(|s| s.front())
            .map_or(MINUTE, |first| {
                (*first + MINUTE).saturating_duration_since(now)
            });
        Some(Refused {
            why: Why::RateLimited,
            message: format!(
                "requester {from} has started {started} run(s) in the last minute{}, its share of this agent's {} a minute (half, so that one client cannot take them all); its next could start in {:.1} s",
                if waiting > 0 {
                    format!(" and has {waiting} waiting")
                } else {
                    String::new()
                },
                self.limits.runs_per_minute,
                after.as_secs_f64()
            ),
            retry_after: Some(after),
        })
    }

    /// Run `p` by itself, the first at `first`.
    pub fn with_periodic(mut self, p: Periodic, first: Instant) -> Scheduler<W> {
        if !p.every.is_zero() {
            self.periodic = Some((p, first));
        }
        self
    }

    /// When the next periodic run falls due.
    pub fn next_periodic(&self) -> Option<Instant> {
        self.periodic.as_ref().map(|(_, due)| *due)
    }

    /// A periodic run falls due at `now`: it shares the run in progress
    /// when that measures the same, else joins (or starts) a group of its
    /// own. The next falls due one interval after this one's slot; slots
    /// already past are missed. Returns how many were.
    fn periodic_due(&mut self, now: Instant) -> u64 {
        let Some((p, due)) = &mut self.periodic else {
            return 0;
        };
        if now < *due {
            return 0;
        }
        let every = p.every;
        let behind = now.duration_since(*due);
        let slots = (behind.as_nanos() / every.as_nanos()) as u32;
        let gap = match std::mem::take(&mut p.phase) {
            g if g.is_zero() || g > every => every,
            g => g,
        };
        *due += every * slots + gap;
        let (key, timeout) = (p.key.clone(), p.timeout);
        if let Some(r) = self.running.as_mut().filter(|r| r.key == key) {
            r.periodic = true;
        } else if let Some(g) = self.waiting.iter_mut().find(|g| g.key == key) {
            g.periodic = true;
        } else {
            self.waiting.push_back(Group {
                key,
                deadline: now + timeout + REPLY_MARGIN,
                waiters: Vec::new(),
                periodic: true,
                opened_by: None,
            });
        }
        u64::from(slots)
    }

    /// When the `n`-th run from now (0: the next) may start under the
    /// bound.
    fn slot(&mut self, now: Instant, n: usize) -> Instant {
        while self
            .starts
            .front()
            .is_some_and(|s| now.saturating_duration_since(*s) >= MINUTE)
        {
            self.starts.pop_front();
        }
        let bound = self.limits.runs_per_minute.max(1) as usize;
        // Each start frees its place a minute later; the runs ahead of
        // this one are assumed to start as soon as they are allowed.
        let mut at: Vec<Instant> = self.starts.iter().copied().collect();
        for _ in 0..=n {
            let i = at.len();
            let next = if i < bound {
                now
            } else {
                (at[i - bound] + MINUTE).max(now)
            };
            at.push(next);
        }
        at.last().copied().unwrap_or(now)
    }

    fn rate_refusal(&self, slot: Instant, now: Instant) -> Refused {
        let after = slot.saturating_duration_since(now);
        Refused {
            why: Why::RateLimited,
            message: format!(
                "this agent runs at most {} times a minute; the next run could start in {:.1} s",
                self.limits.runs_per_minute,
                after.as_secs_f64()
            ),
            retry_after: Some(after),
        }
    }

    fn busy(message: String) -> Refused {
        Refused {
            why: Why::Busy,
            message,
            retry_after: None,
        }
    }

    /// A request arrives.
    pub fn offer(&mut self, job: Job<W>, now: Instant) -> Offered<W> {
        let max_waiters = self.limits.max_waiters;
        if let Some(r) = &mut self.running {
            if r.serves(&job.key) && r.ends_by <= job.deadline {
                if r.waiters.len() >= max_waiters {
                    return Offered::Refused(
                        job.waiter,
                        Self::busy(format!(
                            "{max_waiters} requests already share the run in progress"
                        )),
                    );
                }
                r.waiters.push(job.waiter);
                return Offered::Joined;
            }
        }
        if let Some(g) = self.waiting.iter_mut().find(|g| g.key == job.key) {
            if g.waiters.len() >= max_waiters {
                return Offered::Refused(
                    job.waiter,
                    Self::busy(format!(
                        "{max_waiters} requests already wait for the same run"
                    )),
                );
            }
            g.deadline = g.deadline.min(job.deadline);
            g.waiters.push(job.waiter);
            return Offered::Queued;
        }
        if let Some(from) = &job.from {
            if let Some(r) = self.requester_refusal(from, now) {
                return Offered::Refused(job.waiter, r);
            }
        }
        if self.waiting.len() >= self.limits.max_waiting_groups {
            return Offered::Refused(
                job.waiter,
                Self::busy(format!(
                    "{} different requests already wait for the run in progress",
                    self.waiting.len()
                )),
            );
        }
        let group = Group {
            key: job.key,
            deadline: job.deadline,
            waiters: Vec::new(),
            periodic: false,
            opened_by: job.from,
        };
        let Some(latest) = group.latest_start() else {
            return Offered::Refused(
                job.waiter,
                Self::busy("its deadline leaves no time for a run".into()),
            );
        };
        let ahead = self.waiting.len();
        let slot = self.slot(now, ahead);
        if slot > latest {
            let refusal = self.rate_refusal(slot, now);
            return Offered::Refused(job.waiter, refusal);
        }
        let mut group = group;
        group.waiters.push(job.waiter);
        self.waiting.push_back(group);
        Offered::Queued
    }

    /// Start what can start, refuse what can no longer run in time.
    pub fn tick(&mut self, now: Instant) -> Tick<W> {
        let mut missed = self.periodic_due(now);
        let mut refused = Vec::new();
        // Expired: their deadline leaves no time for a run any more.
        let mut kept = VecDeque::with_capacity(self.waiting.len());
        while let Some(g) = self.waiting.pop_front() {
            let latest = g.latest_start();
            if latest.is_some_and(|l| l >= now) {
                kept.push_back(g);
                continue;
            }
            let slot = self.slot(now, 0);
            missed += u64::from(g.periodic);
            let why = if slot > now {
                self.rate_refusal(slot, now)
            } else {
                Self::busy(
                    "another run kept the agent busy until this request's deadline left no time for its own"
                        .into(),
                )
            };
            refused.extend(g.waiters.into_iter().map(|w| (w, why.clone())));
        }
        self.waiting = kept;
        let mut start = None;
        if self.running.is_none() && !self.waiting.is_empty() {
            // The first group the bound lets start; a periodic run is
            // bounded by its interval instead.
            let next = if self.slot(now, 0) <= now {
                Some(0)
            } else {
                self.waiting.iter().position(|g| g.periodic)
            };
            if let Some(i) = next {
                let g = self.waiting.remove(i).expect("in range");
                let ends_by = g.deadline.checked_sub(REPLY_MARGIN).unwrap_or(now);
                if !g.periodic {
                    self.starts.push_back(now);
                }
                if let Some(from) = &g.opened_by {
                    self.by_requester
                        .entry(from.clone())
                        .or_default()
                        .push_back(now);
                }
                self.runs += 1;
                start = Some(Start {
                    key: g.key.clone(),
                    periodic: g.periodic,
                    timeout: ends_by.saturating_duration_since(now),
                });
                self.running = Some(Running {
                    key: g.key,
                    ends_by,
                    waiters: g.waiters,
                    periodic: g.periodic,
                });
            }
        }
        let mut wake = self
            .waiting
            .iter()
            .filter_map(|g| g.latest_start())
            .min()
            .map(|l| l + Duration::from_millis(1));
        if self.running.is_none() && !self.waiting.is_empty() {
            let slot = self.slot(now, 0);
            wake = Some(wake.map_or(slot, |w| w.min(slot)));
        }
        if let Some(due) = self.next_periodic() {
            wake = Some(wake.map_or(due, |w| w.min(due)));
        }
        Tick {
            start,
            refused,
            wake,
            missed,
        }
    }

    /// The run in progress ended: everyone who shared it.
    #[cfg(test)]
    pub fn finish(&mut self) -> Vec<W> {
        self.finish_run().0
    }

    /// The run in progress ended: everyone who shared it, and whether it
    /// was the agent's periodic run.
    pub fn finish_run(&mut self) -> (Vec<W>, bool) {
        self.running
            .take()
            .map(|r| (r.waiters, r.periodic))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(sample_ms: u64, checks: &[&str]) -> RunKey {
        RunKey {
            checks: checks.iter().map(|s| s.to_string()).collect(),
            skips: vec![],
            profile: None,
            sample: Duration::from_millis(sample_ms),
            ovn_read_by: None,
            path: None,
        }
    }

    fn limits(rpm: u32) -> Limits {
        Limits {
            runs_per_minute: rpm,
            max_waiters: 3,
            max_waiting_groups: 2,
        }
    }

    fn job(k: &RunKey, deadline: Instant, w: u32) -> Job<u32> {
        Job {
            key: k.clone(),
            deadline,
            waiter: w,
            from: None,
        }
    }

    fn from(k: &RunKey, deadline: Instant, w: u32, who: &str) -> Job<u32> {
        Job {
            from: Some(who.into()),
            ..job(k, deadline, w)
        }
    }

    #[test]
    fn a_requester_is_the_client_of_its_reply_inbox() {
        assert_eq!(requester("_INBOX.x7Yk2.17"), "_INBOX.x7Yk2");
        assert_eq!(requester("_INBOX.x7Yk2.all"), "_INBOX.x7Yk2");
        assert_eq!(requester("_INBOX.x7Yk2"), "_INBOX.x7Yk2");
        assert_eq!(requester("reply"), "reply");
    }

    /// Issue 36: one client flooding with the token kept operators out for
    /// a minute. Its share is half the bound; an operator's request runs.
    #[test]
    fn one_runaway_requester_takes_at_most_half_and_is_named() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(Limits {
            runs_per_minute: 12,
            max_waiters: 1024,
            max_waiting_groups: 8,
        });
        let mut started = 0;
        let mut refusals = Vec::new();
        for i in 0..1000u32 {
            let now = t0 + Duration::from_millis(u64::from(i) * 20);
            let k = key(100 + u64::from(i % 50), &["sysctl"]);
            if let Offered::Refused(_, r) = s.offer(
                from(&k, now + Duration::from_secs(3), i, "_INBOX.flood"),
                now,
            ) {
                refusals.push(r);
            }
            if s.tick(now).start.is_some() {
                started += 1;
                s.finish();
            }
        }
        assert_eq!(started, 6, "half of 12");
        let r = refusals
            .iter()
            .find(|r| r.why == Why::RateLimited)
            .expect("rate-limited");
        assert!(
            r.message.starts_with("requester _INBOX.flood has started 6 run(s) in the last minute, its share of this agent's 12 a minute"),
            "{}",
            r.message
        );
        // The operator, another client, still gets a run at once.
        let now = t0 + Duration::from_secs(21);
        let op = key(1000, &[]);
        assert!(matches!(
            s.offer(
                from(&op, now + Duration::from_secs(8), 9999, "_INBOX.operator"),
                now
            ),
            Offered::Queued
        ));
        assert!(s.tick(now).start.is_some());
        assert_eq!(s.finish(), vec![9999]);
        // A minute after its first run, the runaway's share is back.
        let later = t0 + Duration::from_secs(61);
        assert!(matches!(
            s.offer(
                from(
                    &key(777, &[]),
                    later + Duration::from_secs(3),
                    1,
                    "_INBOX.flood"
                ),
                later
            ),
            Offered::Queued
        ));
    }

    fn refused(o: Offered<u32>) -> Refused {
        match o {
            Offered::Refused(_, r) => r,
            Offered::Joined => panic!("joined"),
            Offered::Queued => panic!("queued"),
        }
    }

    #[test]
    fn identical_requests_share_one_run() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(limits(10));
        let k = key(1000, &["mtu.path"]);
        let d = t0 + Duration::from_secs(8);
        assert!(matches!(s.offer(job(&k, d, 1), t0), Offered::Queued));
        let tick = s.tick(t0);
        let start = tick.start.unwrap();
        assert_eq!(start.timeout, Duration::from_millis(7950));
        // During the run: the same key with a later deadline joins.
        let t1 = t0 + Duration::from_millis(300);
        assert!(matches!(
            s.offer(job(&k, t1 + Duration::from_secs(8), 2), t1),
            Offered::Joined
        ));
        assert!(matches!(
            s.offer(job(&k, t1 + Duration::from_secs(8), 3), t1),
            Offered::Joined
        ));
        // The waiter bound holds.
        let r = refused(s.offer(job(&k, t1 + Duration::from_secs(8), 4), t1));
        assert_eq!(r.why, Why::Busy);
        // One whose deadline comes before the run's end cannot share it.
        assert!(matches!(
            s.offer(job(&k, t1 + Duration::from_secs(2), 5), t1),
            Offered::Queued
        ));
        assert_eq!(s.finish(), vec![1, 2, 3]);
        assert_eq!(s.runs, 1);
    }

    #[test]
    fn a_different_request_waits_within_its_deadline_or_is_busy() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(limits(10));
        let a = key(1000, &["mtu"]);
        let b = key(1000, &["nic"]);
        s.offer(job(&a, t0 + Duration::from_secs(8), 1), t0);
        assert!(s.tick(t0).start.is_some());
        // b waits; another b joins its group; a third kind waits too; a
        // fourth finds the waiting room full.
        let t1 = t0 + Duration::from_millis(100);
        assert!(matches!(
            s.offer(job(&b, t1 + Duration::from_secs(3), 2), t1),
            Offered::Queued
        ));
        assert!(matches!(
            s.offer(job(&b, t1 + Duration::from_secs(8), 3), t1),
            Offered::Queued
        ));
        let c = key(500, &["cpu"]);
        assert!(matches!(
            s.offer(job(&c, t1 + Duration::from_millis(1200), 4), t1),
            Offered::Queued
        ));
        let r = refused(s.offer(
            job(&key(1000, &["qemu"]), t1 + Duration::from_secs(8), 5),
            t1,
        ));
        assert_eq!(r.why, Why::Busy);
        // While a runs, c's deadline leaves it no room: refused busy at
        // its latest start, not silently dropped.
        let tick = s.tick(t1);
        assert!(tick.start.is_none());
        let wake = tick.wake.unwrap();
        assert!(wake <= t1 + Duration::from_millis(1200), "{:?}", wake - t1);
        let tick = s.tick(t1 + Duration::from_millis(600));
        assert_eq!(tick.refused.len(), 1);
        assert_eq!(tick.refused[0].0, 4);
        assert_eq!(tick.refused[0].1.why, Why::Busy);
        // a ends at 1.2 s: b starts with the time its earliest waiter has.
        let t2 = t0 + Duration::from_millis(1200);
        assert_eq!(s.finish(), vec![1]);
        let tick = s.tick(t2);
        let start = tick.start.unwrap();
        assert_eq!(start.key, b);
        assert_eq!(start.timeout, Duration::from_millis(3100 - 1200 - 50));
        assert_eq!(s.finish(), vec![2, 3]);
    }

    #[test]
    fn runs_per_minute_are_bounded_and_said() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(limits(2));
        let k = key(100, &["sysctl"]);
        for i in 0..2u32 {
            let t = t0 + Duration::from_secs(i as u64);
            assert!(matches!(
                s.offer(job(&k, t + Duration::from_secs(5), i), t),
                Offered::Queued
            ));
            assert!(s.tick(t).start.is_some());
            s.finish();
        }
        // A third within the minute cannot start before its deadline.
        let t = t0 + Duration::from_secs(2);
        let r = refused(s.offer(job(&k, t + Duration::from_secs(5), 9), t));
        assert_eq!(r.why, Why::RateLimited);
        assert_eq!(r.retry_after, Some(Duration::from_secs(58)));
        assert!(
            r.message.contains("at most 2 times a minute"),
            "{}",
            r.message
        );
        // One whose deadline reaches past the freed slot waits for it.
        let far = t + Duration::from_secs(59);
        assert!(matches!(s.offer(job(&k, far, 10), t), Offered::Queued));
        let tick = s.tick(t);
        assert!(tick.start.is_none());
        assert_eq!(tick.wake, Some(t0 + MINUTE));
        assert!(s.tick(t0 + MINUTE).start.is_some());
        assert_eq!(s.runs, 3);
    }

    #[test]
    fn a_flood_is_a_bounded_number_of_runs() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(Limits {
            runs_per_minute: 4,
            max_waiters: 1024,
            max_waiting_groups: 8,
        });
        let keys: Vec<RunKey> = (0..20).map(|i| key(100 + i, &["sysctl"])).collect();
        let mut outcomes = (0, 0);
        for i in 0..10_000u32 {
            let now = t0 + Duration::from_micros(u64::from(i) * 100);
            let k = &keys[i as usize % keys.len()];
            match s.offer(job(k, now + Duration::from_secs(10), i), now) {
                Offered::Refused(..) => outcomes.1 += 1,
                _ => outcomes.0 += 1,
            }
            let tick = s.tick(now);
            if tick.start.is_some() {
                s.finish();
            }
        }
        assert!(s.runs <= 4, "{} runs", s.runs);
        assert!(outcomes.1 > 9000, "{outcomes:?}");
    }

    fn periodic(every_s: u64) -> Periodic {
        Periodic {
            key: key(1000, &[]),
            every: Duration::from_secs(every_s),
            timeout: Duration::from_secs(8),
            phase: Duration::ZERO,
        }
    }

    #[test]
    fn the_phase_places_the_second_run_and_no_gap_exceeds_the_interval() {
        let t0 = Instant::now();
        let p = Periodic {
            phase: Duration::from_secs(3),
            ..periodic(10)
        };
        let mut s: Scheduler<u32> = Scheduler::new(limits(2)).with_periodic(p, t0);
        // The first run starts at once, so a new agent's report is in the
        // bucket without waiting for its phase.
        assert!(s.tick(t0).start.unwrap().periodic);
        s.finish();
        assert_eq!(s.next_periodic(), Some(t0 + Duration::from_secs(3)));
        assert!(s.tick(t0 + Duration::from_secs(2)).start.is_none());
        assert!(s.tick(t0 + Duration::from_secs(3)).start.unwrap().periodic);
        s.finish();
        // From then on, start to start, one interval apart.
        assert_eq!(s.next_periodic(), Some(t0 + Duration::from_secs(13)));
    }

    #[test]
    fn periodic_runs_go_start_to_start_and_skip_missed_slots() {
        let t0 = Instant::now();
        let mut s: Scheduler<u32> = Scheduler::new(limits(2)).with_periodic(periodic(10), t0);
        let tick = s.tick(t0);
        let start = tick.start.expect("due at once");
        assert!(start.periodic);
        assert_eq!(start.timeout, Duration::from_secs(8));
        assert_eq!(tick.wake, Some(t0 + Duration::from_secs(10)));
        // The run takes 1.5 s: the next still starts at t0 + 10 s, not
        // 10 s after this one ended.
        assert_eq!(s.finish_run(), (vec![], true));
        assert!(s.tick(t0 + Duration::from_millis(1500)).start.is_none());
        let t10 = t0 + Duration::from_secs(10);
        assert!(s.tick(t10).start.unwrap().periodic);
        // This one overruns two slots (it ends at 31 s): those are missed,
        // the next is due at 40 s.
        s.finish();
        let tick = s.tick(t0 + Duration::from_secs(31));
        assert_eq!(tick.missed, 1, "the 20 s slot; 30 s is run now");
        assert!(tick.start.unwrap().periodic);
        s.finish();
        assert_eq!(s.next_periodic(), Some(t0 + Duration::from_secs(40)));
        // Periodic runs do not count against runs-per-minute: 2 requests
        // still start in this minute.
        for i in 0..2u32 {
            let t = t0 + Duration::from_secs(32 + u64::from(i));
            let k = key(100, &["sysctl"]);
            assert!(matches!(
                s.offer(job(&k, t + Duration::from_secs(5), i), t),
                Offered::Queued
            ));
            assert!(!s.tick(t).start.unwrap().periodic);
            s.finish();
        }
        assert_eq!(s.runs, 5);
    }

    #[test]
    fn requests_share_the_periodic_sample_window_both_ways() {
        let t0 = Instant::now();
        let mut s: Scheduler<u32> = Scheduler::new(limits(10)).with_periodic(periodic(60), t0);
        assert!(s.tick(t0).start.unwrap().periodic);
        // A cluster request for the default set, OVN read by another
        // node, arriving 300 ms into the periodic run, shares it.
        let mut cluster = key(1000, &[]);
        cluster.ovn_read_by = Some("n0".into());
        let t = t0 + Duration::from_millis(300);
        assert!(matches!(
            s.offer(job(&cluster, t + Duration::from_secs(8), 1), t),
            Offered::Joined
        ));
        // One asking for something else waits.
        assert!(matches!(
            s.offer(job(&key(500, &[]), t + Duration::from_secs(8), 2), t),
            Offered::Queued
        ));
        assert_eq!(s.finish_run(), (vec![1], true));
        let t = t0 + Duration::from_millis(1300);
        assert!(!s.tick(t).start.unwrap().periodic);
        s.finish();
        // The other way: a request's run of the default set is in progress
        // when the periodic run falls due: that run is the periodic run.
        let t60 = t0 + Duration::from_secs(60);
        let plain = key(1000, &[]);
        let t = t60 - Duration::from_millis(200);
        assert!(matches!(
            s.offer(job(&plain, t + Duration::from_secs(8), 3), t),
            Offered::Queued
        ));
        assert!(!s.tick(t).start.unwrap().periodic);
        let tick = s.tick(t60);
        assert!(tick.start.is_none(), "no second run");
        assert_eq!(s.finish_run(), (vec![3], true));
        // A periodic run that cannot start before its timeout leaves room
        // for it is missed, not run late.
        let t120 = t0 + Duration::from_secs(120);
        let t = t120 - Duration::from_millis(100);
        assert!(matches!(
            s.offer(job(&key(1000, &["mtu"]), t + Duration::from_secs(20), 4), t),
            Offered::Queued
        ));
        assert!(s.tick(t).start.is_some());
        assert!(
            s.tick(t120).start.is_none(),
            "waits behind the request's run"
        );
        let tick = s.tick(t120 + Duration::from_secs(7));
        assert_eq!(tick.missed, 1);
        assert_eq!(s.finish(), vec![4]);
        assert!(s.tick(t120 + Duration::from_secs(8)).start.is_none());
    }
}
