//! What a check is given: the config (or why there is none), what the config
//! implies, the operator's flags, and the clock (the shared sample window and
//! the global deadline).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::endpoint::Endpoint;
use crate::expect::Expectations;
use crate::facts::ProbeError;
use crate::finding::{Finding, SkipReason};
use crate::host::{Host, HostRef, RUN_SCOPE};
use crate::live::LiveHost;

/// Settings from the command line that checks read. Parsed and validated by
/// the binary; checks trust them. A bundle keeps them, and a replay runs
/// with the recorded ones.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Options {
    /// `--peer`, in the order given.
    pub peers: Vec<crate::probe::peers::FlagPeer>,
    /// `--mtu`: the target underlay MTU, overriding the config.
    pub mtu: Option<u32>,
    /// `--probe-timeout`: one probe round's bound.
    pub probe_timeout: Duration,
    /// `--interface`: interfaces to inspect, overriding discovery.
    pub interfaces: Vec<String>,
    /// `--ovs-db`, `--nb-db`, `--sb-db`: OVSDB endpoints overriding the config.
    /// Parsed once, by the binary; kept as the text an operator writes.
    #[serde(with = "crate::endpoint::opt_list", default)]
    pub ovs_db: Option<Vec<Endpoint>>,
    #[serde(with = "crate::endpoint::opt_list", default)]
    pub nb_db: Option<Vec<Endpoint>>,
    #[serde(with = "crate::endpoint::opt_list", default)]
    pub sb_db: Option<Vec<Endpoint>>,
    /// `--sample`: the length of the shared sample window.
    pub sample: Duration,
    /// `--timeout`: the global deadline, from the start of the run.
    pub timeout: Duration,
    /// `--for`: the preflight profile, if any.
    pub profile: Option<crate::profile::Preflight>,
    /// In a cluster run, the node that reads OVN NB and SB for the whole
    /// cluster; set on every other node, which then leaves them alone
    /// ([`crate::probe::ovsdb::endpoints`]).
    pub ovn_read_by: Option<String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            peers: Vec::new(),
            mtu: None,
            probe_timeout: Duration::from_secs(1),
            interfaces: Vec::new(),
            ovs_db: None,
            nb_db: None,
            sb_db: None,
            sample: Duration::from_secs(1),
            timeout: Duration::from_secs(10),
            profile: None,
            ovn_read_by: None,
        }
    }
}

/// Where the config came from, or why there is none. A missing or unreadable
/// default config is not an error of the run: checks that need it skip.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfigState {
    Loaded { path: PathBuf, config: Box<Config> },
    Missing { looked_at: Vec<PathBuf> },
    Unreadable { path: PathBuf, reason: String },
}

/// What [`Ctx::across_window`] measured.
pub struct Sampled<T, D> {
    pub start: T,
    pub end: T,
    pub window: Duration,
    /// What the work done inside the window gave.
    pub during: D,
}

#[derive(Clone)]
pub struct Ctx {
    pub config: ConfigState,
    pub expect: Option<Expectations>,
    pub opts: Options,
    started: Instant,
    window_end: Instant,
    deadline: Instant,
    /// Where every fact comes from ([`crate::host`]).
    host: Arc<dyn Host>,
    /// Who is asking: the check's id, or [`RUN_SCOPE`].
    scope: &'static str,
}

impl Ctx {
    /// A run on this machine.
    pub fn new(config: ConfigState, opts: Options) -> Ctx {
        Ctx::with_host(config, opts, Arc::new(LiveHost::new()))
    }

    /// A run whose facts come from `host`: live, recording, or a replay.
    pub fn with_host(config: ConfigState, opts: Options, host: Arc<dyn Host>) -> Ctx {
        let started = Instant::now();
        let expect = match &config {
            ConfigState::Loaded { config, .. } => Some(Expectations::from_config(config)),
            _ => None,
        };
        Ctx {
            config,
            expect,
            window_end: started + opts.sample,
            deadline: started + opts.timeout,
            started,
            opts,
            host,
            scope: RUN_SCOPE,
        }
    }

    /// The same run, its deadline counted from `begun` (`--timeout` after
    /// it): for a run whose command line already did bounded work against
    /// the host before the checks started (a `--peer fe80::2%eth0`'s
    /// interface looked up), so that one `--timeout` bounds all of it.
    /// The sample window is left where it is.
    pub fn deadline_from(self, begun: Instant) -> Ctx {
        Ctx {
            deadline: begun + self.opts.timeout,
            ..self
        }
    }

    /// The same run, as the check `id` sees it: its questions are asked in
    /// its own scope, so that a replay answers them in its own order.
    pub fn for_check(&self, id: &'static str) -> Ctx {
        Ctx {
            scope: id,
            ..self.clone()
        }
    }

    /// The same run, for a check whose thread began at `now`. On a loaded
    /// machine a thread can begin after most of the shared window has
    /// passed; its window then ends half a sample after it began (never
    /// past the deadline), so that a sampling check never judges a window
    /// too short to hold a single clock tick. A thread that begins on time
    /// keeps the shared end.
    pub fn begun(self, now: Instant) -> Ctx {
        Ctx {
            window_end: self.window_end.max(now + self.opts.sample / 2),
            ..self
        }
    }

    /// The host, as this check (or the run) asks it, bounded by the run's
    /// deadline where the source allows ([`HostRef::until`]).
    pub fn host(&self) -> HostRef<'_> {
        HostRef::new(self.host.as_ref(), self.scope).until(self.deadline)
    }

    /// The host itself, to ask in another scope.
    pub fn host_arc(&self) -> &Arc<dyn Host> {
        &self.host
    }

    /// The config, or the skip finding a check that needs it should return.
    pub fn config(&self) -> Result<&Config, Finding> {
        match &self.config {
            ConfigState::Loaded { config, .. } => Ok(config),
            ConfigState::Missing { looked_at } => {
                let paths: Vec<String> =
                    looked_at.iter().map(|p| p.display().to_string()).collect();
                Err(Finding::skip(SkipReason::NoConfig(format!(
                    "none found at {} (pass --config PATH)",
                    paths.join(" or ")
                ))))
            }
            ConfigState::Unreadable { path, reason } => {
                Err(Finding::skip(SkipReason::NeedsPrivilege(format!(
                    "root or group spinifex to read {} ({reason})",
                    path.display()
                ))))
            }
        }
    }

    /// What the config implies, or the skip finding when there is no config.
    pub fn expectations(&self) -> Result<&Expectations, Finding> {
        self.config()?;
        Ok(self
            .expect
            .as_ref()
            .expect("expectations follow a loaded config"))
    }

    /// When the run started; the sample window starts here too.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Sleep until the end of the shared sample window (or the deadline,
    /// whichever is first). Sampling checks take their first reading as
    /// soon as they start, call this, and take the second.
    pub fn wait_for_window_end(&self) {
        self.host().sleep_until(self.window_end.min(self.deadline));
    }

    /// A sampling check's two readings: `read` now and again at the end of
    /// the shared window. `during` runs inside the window, beside the wait,
    /// so that it costs no extra time. The window is the host clock's time
    /// between the two readings (a replay's recorded clock).
    pub fn across_window<T, D: Send>(
        &self,
        read: impl Fn(HostRef<'_>) -> Result<T, ProbeError>,
        during: impl FnOnce() -> D + Send,
    ) -> Result<Sampled<T, D>, ProbeError> {
        let host = self.host();
        let start = read(host)?;
        let t0 = host.clock();
        let (during, end) = std::thread::scope(|s| {
            let during = s.spawn(during);
            self.wait_for_window_end();
            let end = read(host);
            (during.join(), end)
        });
        let end = end?;
        let window = host.clock().saturating_sub(t0);
        let during = during.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        Ok(Sampled {
            start,
            end,
            window,
            during,
        })
    }

    /// Time left before the global deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// `bound`, cut to what is left before the deadline.
    pub fn bounded(&self, bound: Duration) -> Duration {
        bound.min(self.remaining())
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(sample: Duration, timeout: Duration) -> Ctx {
        let opts = Options {
            sample,
            timeout,
            ..Options::default()
        };
        Ctx::new(ConfigState::Missing { looked_at: vec![] }, opts)
    }

    #[test]
    fn a_thread_that_begins_on_time_keeps_the_shared_window() {
        let c = ctx(Duration::from_secs(1), Duration::from_secs(10));
        let (end, on_time) = (c.window_end, c.started + Duration::from_millis(5));
        let c = c.begun(on_time);
        assert_eq!(c.window_end, end);
    }

    #[test]
    fn a_late_thread_still_measures_half_a_sample() {
        // Begun 900 ms into a 1 s window: 100 ms left would be 10 ticks of
        // USER_HZ at best; it measures 500 ms instead.
        let c = ctx(Duration::from_secs(1), Duration::from_secs(10));
        let late = c.started + Duration::from_millis(900);
        let c = c.begun(late);
        assert_eq!(c.window_end, late + Duration::from_millis(500));
        assert!(c.window_end < c.deadline);
    }
}
