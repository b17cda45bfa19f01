//! Every check's `run()`, unprivileged, on recorded facts: the facts a run
//! would read, written down here (or parsed from a real capture) and
//! answered through the seam by a [`Replay`] host. The root tests in
//! `tests/` prove the live side reads the real kernel, OVSDB and QEMU the
//! same way (each of them replays its own recording too); these prove the
//! checks' gathering and judging on hosts this machine will never be: the
//! seed's broken cluster, real NICs from bug reports.
//!
//! [`Facts::run`] fails the test when the check asked something the facts
//! do not answer, so every test states everything its check reads.

mod cpu_tcp;
mod ipsec;
mod mtu;
mod neigh;
mod nic;
mod ovn;
mod qemu;
mod udp;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::check::Check;
use crate::ctx::Ctx;
use crate::facts::links::Link;
use crate::facts::ProbeError;
use crate::finding::Finding;
use crate::host::{Bundle, Fact, Header, Host, Replay, Request, ANY_SCOPE};
use crate::settings::{ConfigState, Options};

/// A capture in `checks/testdata/proc/` (`net_snmp` for /proc/net/snmp)
/// without its `#` provenance lines.
pub fn capture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/proc")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("capture {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// `text` (/proc/net/snmp or /proc/net/netstat: a line of names, then a
/// line of values, per prefix) with counter `prefix` `name` set to `value`.
pub fn set_counter(text: &str, prefix: &str, name: &str, value: u64) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    let head = format!("{prefix}: ");
    let at = lines
        .iter()
        .position(|l| l.starts_with(&head) && l.split_whitespace().any(|w| w == name))
        .unwrap_or_else(|| panic!("no {prefix} {name}"));
    let column = lines[at]
        .split_whitespace()
        .position(|w| w == name)
        .expect("named");
    let mut values: Vec<String> = lines[at + 1]
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    values[column] = value.to_string();
    out[at + 1] = values.join(" ");
    out.iter().map(|l| format!("{l}\n")).collect()
}

/// A device as a link dump lists it: up, a physical NIC (no kind), no
/// master, no MTU bounds.
pub fn link(index: u32, name: &str, mtu: u32) -> Link {
    Link {
        index,
        name: name.into(),
        mtu,
        min_mtu: None,
        max_mtu: None,
        master: None,
        kind: None,
        up: true,
    }
}

/// Loopback, as every link dump starts.
pub fn lo() -> Link {
    link(1, "lo", 65536)
}

/// The facts of one imagined (or captured) host, and the run's settings.
pub struct Facts {
    bundle: Bundle,
    config: ConfigState,
    opts: Options,
}

impl Facts {
    pub fn new() -> Facts {
        let opts = Options::default();
        Facts {
            bundle: Bundle {
                header: Header::new(
                    "2026-11-30T00:00:00.000Z".into(),
                    1000,
                    opts.clone(),
                    ConfigState::Missing { looked_at: vec![] },
                    Vec::new(),
                ),
                records: Vec::new(),
            },
            config: ConfigState::Missing {
                looked_at: vec!["/etc/spinifex/spinifex.toml".into()],
            },
            opts,
        }
    }

    /// The Spinifex config the run read.
    pub fn config(mut self, toml: &str) -> Facts {
        let path = Path::new("/etc/spinifex/spinifex.toml");
        let config = crate::config::parse(toml, path).expect("a valid test config");
        self.config = ConfigState::Loaded {
            path: path.to_owned(),
            config: Box::new(config),
        };
        self
    }

    /// The run's flags.
    pub fn opts(mut self, set: impl FnOnce(&mut Options)) -> Facts {
        set(&mut self.opts);
        self
    }

    /// `request` is answered `answer`. Answered twice (a sampling check's
    /// start and end), the first answer comes first and the last repeats.
    pub fn answer(mut self, request: Request, answer: Result<Fact, ProbeError>) -> Facts {
        self.bundle
            .records
            .push(crate::host::Record::new(0.0, ANY_SCOPE, &request, &answer));
        self
    }

    pub fn ok(self, request: Request, fact: Fact) -> Facts {
        self.answer(request, Ok(fact))
    }

    pub fn file(self, path: &str, text: &str) -> Facts {
        self.ok(
            Request::File { path: path.into() },
            Fact::Text(text.to_owned()),
        )
    }

    pub fn no_file(self, path: &str) -> Facts {
        self.answer(
            Request::File { path: path.into() },
            Err(ProbeError::NotFound(path.to_owned())),
        )
    }

    pub fn dir(self, path: &str, names: &[&str]) -> Facts {
        self.ok(
            Request::Dir { path: path.into() },
            Fact::Names(names.iter().map(|n| (*n).to_owned()).collect()),
        )
    }

    pub fn exists(self, path: &str, exists: bool) -> Facts {
        self.ok(Request::Exists { path: path.into() }, Fact::Bool(exists))
    }

    /// The link dump (`RTM_GETLINK`): every device, in index order.
    pub fn links(self, links: &[Link]) -> Facts {
        self.ok(Request::Links, Fact::Links(links.to_vec()))
    }

    /// The clock at the start and the end of the sample window.
    pub fn window(self, start_ms: u64, end_ms: u64) -> Facts {
        self.ok(
            Request::Clock,
            Fact::Elapsed(Duration::from_millis(start_ms)),
        )
        .ok(Request::Clock, Fact::Elapsed(Duration::from_millis(end_ms)))
    }

    /// Run `check` on these facts. Fails the test if the check asked
    /// anything they do not answer.
    pub fn run(self, check: &dyn Check) -> Finding {
        let id = check.id();
        let (finding, missing) = self.replay(check);
        if let Some(missing) = missing {
            panic!("{id} asked what the test's facts do not answer: {missing}");
        }
        finding
    }

    /// What `check` asked that these facts do not answer (what makes a
    /// replay of them a `not-recorded` skip), if anything.
    pub fn unanswered(self, check: &dyn Check) -> Option<String> {
        self.replay(check).1
    }

    fn replay(self, check: &dyn Check) -> (Finding, Option<String>) {
        let replay = Arc::new(Replay::new(&self.bundle, |id| crate::find(id).is_some()));
        let ctx = Ctx::with_host(self.config, self.opts, Arc::clone(&replay) as Arc<dyn Host>);
        let id: &'static str = check.id();
        let finding = check.run(&ctx.for_check(id));
        (finding, replay.unanswered(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Status;

    #[test]
    fn cluster_checks_read_nothing_of_the_host_in_a_node_run() {
        for check in crate::CHECKS
            .iter()
            .filter(|c| c.scope() == crate::Scope::Cluster)
        {
            let f = Facts::new().run(*check);
            assert_eq!(f.status, Status::Skip, "{}: {}", check.id(), f.summary);
            assert!(f.summary.contains("--cluster"), "{}", f.summary);
        }
    }

    #[test]
    fn a_question_the_facts_do_not_answer_fails_the_test() {
        let run = std::panic::catch_unwind(|| {
            Facts::new().run(&crate::checks::sysctl_udp_buffers::UdpBuffers)
        });
        let message = run.expect_err("unanswered");
        let message = message
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(
            message.contains("no answer to file /proc/sys/net/core/rmem_max"),
            "{message}"
        );
    }
}
