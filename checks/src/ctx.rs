//! What a check is given: the config (or why there is none), what the config
//! implies, the operator's flags, and the clock (the shared sample window and
//! the global deadline).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::expect::Expectations;
use crate::facts::ProbeError;
use crate::finding::{Finding, SkipReason};
use crate::host::{Host, HostRef, RUN_SCOPE};
use crate::live::LiveHost;
use crate::settings::{ConfigState, Options};

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
    /// The config file remediation should name: the one this run loaded (from
    /// `--config`, `$SPINIFEX_CONFIG_PATH` or a default path), the one it could
    /// not read, else where Spinifex looks first.
    pub fn config_file(&self) -> String {
        match &self.config {
            ConfigState::Loaded { path, .. } | ConfigState::Unreadable { path, .. } => {
                path.display().to_string()
            }
            ConfigState::Missing { .. } => crate::spinifex::CONFIG_PATH.to_owned(),
        }
    }

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
    fn remediation_names_the_config_that_was_loaded() {
        let loaded = Ctx::new(
            ConfigState::Loaded {
                path: "/srv/spx/node.toml".into(),
                config: Box::new(crate::config::parse("", std::path::Path::new("x")).unwrap()),
            },
            Options::default(),
        );
        assert_eq!(loaded.config_file(), "/srv/spx/node.toml");
        let missing = Ctx::new(
            ConfigState::Missing { looked_at: vec![] },
            Options::default(),
        );
        assert_eq!(missing.config_file(), crate::spinifex::CONFIG_PATH);
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
