//! The one seam every fact about the host flows through.
//!
//! Checks never read the host themselves: they ask [`crate::Ctx::host`],
//! which answers typed, parsed facts or a [`ProbeError`] (never a
//! `Finding`). Behind it is a [`Host`]:
//!
//! * [`crate::live::LiveHost`]: today's probe layer, talking to the kernel (procfs,
//!   sysfs, rtnetlink, xfrm netlink, SIOCETHTOOL, ICMP sockets), to OVSDB,
//!   to QMP monitors and to journalctl;
//! * [`Recorder`]: a live host that also writes down every question and
//!   its answer, with the time, in call order (`spx-doctor --record`);
//! * [`Replay`]: answers from such a record, on any machine, without
//!   touching it (`spx-doctor --replay`), and in tests.
//!
//! Every question is a [`Request`] and every answer a [`Fact`]: one list of
//! sources, so recording and replaying are written once, not once per
//! source. Each check asks within its own scope (its id), and a replay
//! answers each scope's questions in the order that check asked them: the
//! checks run concurrently, so only per-check order is reproducible.
//! Sampling checks ask the same source twice, at the start and the end of
//! the window, and the clock too ([`HostRef::clock`]), so a replay judges
//! the window that was measured, and never sleeps through one.
//!
//! Secrets never reach a fact, so they never reach a bundle: xfrm keys are
//! not parsed into [`crate::facts::xfrm::SecurityAssociation`], OVSDB
//! values of key and certificate columns are dropped as they are read
//! unless they are file paths ([`crate::facts::ovsdb::drop_secrets`]), a
//! private key file becomes the fingerprint of its public key
//! ([`crate::facts::credential`]), and of a process that is not one the
//! check asked about only its program is kept ([`crate::facts::process`]).

mod bundle;
mod record;
mod replay;
mod request;

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use bundle::{Bundle, BundleError, Header, Outcome, Policy, Record, BUNDLE_FORMAT};
pub use record::Recorder;
pub use replay::{Replay, ANY_SCOPE};
pub use request::{EthtoolGet, Fact, Request, SelectOp};

use crate::endpoint::Endpoint;
use crate::facts::credential::CredentialFile;
use crate::facts::ethtool::{Channels, DrvInfo, Feature, Reported, Rings};
use crate::facts::icmp::{PathProbe, Settings, SocketKind, Target};
use crate::facts::journal::JournalLookup;
use crate::facts::links::{Link, Route};
use crate::facts::neighbours::{Neighbour, NeighbourTable};
use crate::facts::ovsdb::{Answer, Budget, Row};
use crate::facts::process::{NetNs, ProcessInfo};
use crate::facts::qemu::host::ProcessFds;
use crate::facts::qemu::process::Discovery;
use crate::facts::qemu::qmp::{QmpError, QmpFacts};
use crate::facts::site::SiteRun;
use crate::facts::xfrm::{SecurityAssociation, XfrmPolicy};
use crate::facts::ProbeError;

/// The scope of questions asked outside any check: the report's host name
/// and addresses.
pub const RUN_SCOPE: &str = "run";
/// The scope of a preflight's runbook.
pub const RUNBOOK_SCOPE: &str = "runbook";

/// How long the live host may take over one request. Never part of the
/// request: a replay answers at once.
#[derive(Clone, Copy, Debug, Default)]
pub struct Limit {
    /// The bound on the whole request (OVSDB: on each member).
    pub bound: Option<Duration>,
    /// Nothing may run past this.
    pub deadline: Option<Instant>,
}

impl Limit {
    /// No bound: reads of kernel files, which answer from memory.
    pub const NONE: Limit = Limit {
        bound: None,
        deadline: None,
    };

    pub fn bound(bound: Duration) -> Limit {
        Limit {
            bound: Some(bound),
            deadline: Instant::now().checked_add(bound),
        }
    }
}

/// Where facts come from. See the module documentation.
pub trait Host: Send + Sync {
    /// Answer `request`, asked by the check `scope` (or [`RUN_SCOPE`]).
    fn read(&self, scope: &str, request: &Request, limit: Limit) -> Result<Fact, ProbeError>;

    /// Wait until `until` (the end of the sample window). A replay does not
    /// wait: its window was measured when it was recorded.
    fn sleep_until(&self, until: Instant) {
        let now = Instant::now();
        if until > now {
            std::thread::sleep(until - now);
        }
    }

    /// After a check ran: why its verdict cannot stand, when a replay
    /// lacked something it asked for. A verdict on part of the facts would
    /// be a guess, so the check is skipped with this reason.
    fn unanswered(&self, _scope: &str) -> Option<String> {
        None
    }
}

/// A host as one check (or the run) sees it: every accessor asks within
/// that scope and returns a typed fact. A check's `HostRef`
/// ([`crate::Ctx::host`]) carries the run's deadline too: the rtnetlink
/// reads (routes, links, addresses) are given it, so none of them waits past
/// it ([`crate::facts::links`] says how the bound works).
#[derive(Clone, Copy)]
pub struct HostRef<'a> {
    host: &'a dyn Host,
    scope: &'a str,
    deadline: Option<Instant>,
}

/// The answer of the wrong shape: a bundle whose facts this version reads
/// differently. Treated as not recorded.
fn mismatch(request: &Request, fact: &Fact) -> ProbeError {
    ProbeError::NotRecorded(format!(
        "the bundle answers {} with {}, which this version does not expect",
        request.describe(),
        fact.shape()
    ))
}

/// Ask, and take the one variant of [`Fact`] that answers this request.
macro_rules! ask {
    ($self:ident, $request:expr, $limit:expr, $variant:ident) => {
        $self.ask($request, $limit, |fact| match fact {
            Fact::$variant(v) => Ok(v),
            other => Err(other),
        })
    };
}

impl<'a> HostRef<'a> {
    /// Asking in `scope`, with no deadline but each source's own bound.
    pub fn new(host: &'a dyn Host, scope: &'a str) -> HostRef<'a> {
        HostRef {
            host,
            scope,
            deadline: None,
        }
    }

    /// The same, with nothing bounded by a deadline waiting past `deadline`.
    pub fn until(self, deadline: Instant) -> HostRef<'a> {
        HostRef {
            deadline: Some(deadline),
            ..self
        }
    }

    /// How long an rtnetlink read may take: its own bound
    /// ([`crate::facts::links::NETLINK_TIMEOUT`]), cut to the deadline.
    fn netlink(&self) -> Limit {
        Limit {
            bound: Some(crate::facts::links::NETLINK_TIMEOUT),
            deadline: self.deadline,
        }
    }

    /// The scope questions are asked in.
    pub fn scope(&self) -> &'a str {
        self.scope
    }

    fn ask<T>(
        &self,
        request: Request,
        limit: Limit,
        pick: impl FnOnce(Fact) -> Result<T, Fact>,
    ) -> Result<T, ProbeError> {
        let fact = self.host.read(self.scope, &request, limit)?;
        pick(fact).map_err(|other| mismatch(&request, &other))
    }

    /// The text of a procfs, sysfs or config file.
    pub fn read_file(&self, path: impl AsRef<Path>) -> Result<String, ProbeError> {
        let path = path.as_ref().to_owned();
        ask!(self, Request::File { path }, Limit::NONE, Text)
    }

    /// A directory's entry names, sorted.
    pub fn read_dir(&self, path: impl AsRef<Path>) -> Result<Vec<String>, ProbeError> {
        let path = path.as_ref().to_owned();
        ask!(self, Request::Dir { path }, Limit::NONE, Names)
    }

    /// Where a symbolic link points.
    pub fn read_link(&self, path: impl AsRef<Path>) -> Result<PathBuf, ProbeError> {
        let path = path.as_ref().to_owned();
        ask!(self, Request::Readlink { path }, Limit::NONE, Text).map(PathBuf::from)
    }

    /// Whether `path` exists. A replay without the answer says no (and the
    /// check is skipped: see [`Host::unanswered`]).
    pub fn exists(&self, path: impl AsRef<Path>) -> bool {
        let path = path.as_ref().to_owned();
        let answer: Result<bool, ProbeError> =
            ask!(self, Request::Exists { path }, Limit::NONE, Bool);
        answer.unwrap_or(false)
    }

    /// This boot's journal lines of `unit` containing `needle`.
    pub fn journal(
        &self,
        unit: &str,
        needle: &str,
        bound: Duration,
    ) -> Result<JournalLookup, ProbeError> {
        ask!(
            self,
            Request::Journal {
                unit: unit.to_owned(),
                needle: needle.to_owned()
            },
            Limit::bound(bound),
            Journal
        )
    }

    /// The route the kernel would use to `destination` (out of `oif`).
    pub fn route(&self, destination: IpAddr, oif: Option<u32>) -> Result<Route, ProbeError> {
        ask!(
            self,
            Request::Route { destination, oif },
            self.netlink(),
            Route
        )
    }

    /// One device's link facts, by name ([`crate::facts::links`]: where
    /// one device is enough). A missing device is `NotFound`.
    pub fn link_by_name(&self, name: &str) -> Result<Link, ProbeError> {
        ask!(
            self,
            Request::LinkByName {
                name: name.to_owned()
            },
            self.netlink(),
            Link
        )
    }

    /// One device's link facts, by index.
    pub fn link_by_index(&self, index: u32) -> Result<Link, ProbeError> {
        ask!(self, Request::LinkByIndex { index }, self.netlink(), Link)
    }

    /// Every link, in index order: one dump, where a check needs several
    /// devices or a bridge's ports ([`crate::facts::links`]).
    pub fn links(&self) -> Result<Vec<Link>, ProbeError> {
        ask!(self, Request::Links, self.netlink(), Links)
    }

    /// Every address configured on this host (loopback included).
    pub fn addresses(&self) -> Result<Vec<IpAddr>, ProbeError> {
        ask!(self, Request::Addresses, self.netlink(), Addresses)
    }

    /// The kernel's neighbour tables ([`crate::facts::neighbours`]): one
    /// for the whole kernel whatever the namespace asking.
    pub fn neighbour_tables(&self) -> Result<Vec<NeighbourTable>, ProbeError> {
        ask!(
            self,
            Request::NeighbourTables,
            self.netlink(),
            NeighbourTables
        )
    }

    /// Every neighbour entry of this network namespace.
    pub fn neighbours(&self) -> Result<Vec<Neighbour>, ProbeError> {
        ask!(self, Request::Neighbours, self.netlink(), Neighbours)
    }

    /// Every IPsec security association (no keys), larval ACQUIRE states
    /// included.
    pub fn xfrm_states(&self, bound: Duration) -> Result<Vec<SecurityAssociation>, ProbeError> {
        ask!(self, Request::XfrmStates, Limit::bound(bound), Xfrm)
    }

    /// Every IPsec policy, sockets' own included.
    pub fn xfrm_policies(&self, bound: Duration) -> Result<Vec<XfrmPolicy>, ProbeError> {
        ask!(
            self,
            Request::XfrmPolicies,
            Limit::bound(bound),
            XfrmPolicies
        )
    }

    pub fn ethtool_drvinfo(&self, interface: &str) -> Result<Reported<DrvInfo>, ProbeError> {
        ask!(
            self,
            ethtool(EthtoolGet::Drvinfo, interface),
            Limit::NONE,
            Drvinfo
        )
    }

    pub fn ethtool_channels(&self, interface: &str) -> Result<Reported<Channels>, ProbeError> {
        ask!(
            self,
            ethtool(EthtoolGet::Channels, interface),
            Limit::NONE,
            Channels
        )
    }

    pub fn ethtool_rings(&self, interface: &str) -> Result<Reported<Rings>, ProbeError> {
        ask!(
            self,
            ethtool(EthtoolGet::Rings, interface),
            Limit::NONE,
            Rings
        )
    }

    pub fn ethtool_features(&self, interface: &str) -> Result<Reported<Vec<Feature>>, ProbeError> {
        ask!(
            self,
            ethtool(EthtoolGet::Features, interface),
            Limit::NONE,
            Features
        )
    }

    pub fn ethtool_stats(
        &self,
        interface: &str,
    ) -> Result<Reported<Vec<(String, u64)>>, ProbeError> {
        ask!(
            self,
            ethtool(EthtoolGet::Stats, interface),
            Limit::NONE,
            Stats
        )
    }

    /// Rows of `selects` on `db`, from the first member of `endpoints` that
    /// answers within `budget`.
    pub fn ovsdb_select(
        &self,
        endpoints: &[Endpoint],
        db: &str,
        selects: &[crate::facts::ovsdb::wire::Select<'_>],
        budget: Budget,
    ) -> Result<Answer<Vec<Vec<Row>>>, ProbeError> {
        let request = Request::Ovsdb {
            endpoints: endpoints.to_vec(),
            db: db.to_owned(),
            selects: selects
                .iter()
                .map(|s| SelectOp {
                    table: s.table.to_owned(),
                    columns: s.columns.iter().map(|c| (*c).to_owned()).collect(),
                    conditions: s.conditions.clone(),
                })
                .collect(),
        };
        let limit = Limit {
            bound: Some(budget.per_member),
            deadline: Some(budget.deadline),
        };
        ask!(self, request, limit, Ovsdb)
    }

    /// The running QEMU processes.
    pub fn qemu_processes(&self) -> Result<Discovery, ProbeError> {
        ask!(self, Request::QemuProcesses, Limit::NONE, QemuProcesses)
    }

    /// The tap queues and vhost-net descriptors `pid` holds.
    pub fn process_fds(&self, pid: i32) -> Result<ProcessFds, ProbeError> {
        ask!(self, Request::ProcessFds { pid }, Limit::NONE, ProcessFds)
    }

    /// What the QMP monitor at `socket` says, within `bound`.
    pub fn qmp(&self, socket: &Path, bound: Duration) -> Result<QmpFacts, QmpError> {
        let request = Request::Qmp {
            socket: socket.to_owned(),
        };
        let answer: Result<Result<QmpFacts, QmpError>, ProbeError> =
            ask!(self, request, Limit::bound(bound), Qmp);
        answer.unwrap_or_else(|e| Err(QmpError::Protocol(e.to_string())))
    }

    /// Probe every target's path MTU ([`crate::facts::icmp`]).
    pub fn icmp(
        &self,
        targets: &[Target],
        settings: &Settings,
    ) -> Result<(Vec<PathProbe>, SocketKind), ProbeError> {
        let request = Request::Icmp {
            targets: targets.to_vec(),
            round_timeout: settings.round_timeout,
            max_rounds: settings.max_rounds,
        };
        let limit = Limit {
            bound: Some(settings.round_timeout),
            deadline: Some(settings.deadline),
        };
        self.ask(request, limit, |fact| match fact {
            Fact::Icmp { probes, socket } => Ok((probes, socket)),
            other => Err(other),
        })
    }

    /// Resolve host names, each within `bound` overall; a name that did not
    /// answer in time is absent.
    pub fn resolve(
        &self,
        names: &[String],
        bound: Duration,
    ) -> HashMap<String, Result<Vec<IpAddr>, String>> {
        if names.is_empty() {
            return HashMap::new();
        }
        let request = Request::Resolve {
            names: names.to_vec(),
        };
        let answer: Result<BTreeMap<String, Result<Vec<IpAddr>, String>>, ProbeError> =
            ask!(self, request, Limit::bound(bound), Resolved);
        answer.unwrap_or_default().into_iter().collect()
    }

    /// This host's name.
    pub fn hostname(&self) -> String {
        let answer: Result<String, ProbeError> = ask!(self, Request::Hostname, Limit::NONE, Text);
        answer.unwrap_or_else(|_| "unknown".to_owned())
    }

    /// The number of online CPUs, when known.
    pub fn online_cpus(&self) -> Option<u32> {
        let answer: Result<u64, ProbeError> = ask!(self, Request::OnlineCpus, Limit::NONE, Count);
        answer
            .ok()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
    }

    /// Time since the run started, as the live host measured it.
    pub fn clock(&self) -> Duration {
        let answer: Result<Duration, ProbeError> = ask!(self, Request::Clock, Limit::NONE, Elapsed);
        answer.unwrap_or_default()
    }

    /// A credential file: its certificates, and of a private key only the
    /// facts derived from it ([`crate::facts::credential`]).
    pub fn credential(&self, path: impl AsRef<Path>) -> Result<CredentialFile, ProbeError> {
        let path = path.as_ref().to_owned();
        ask!(self, Request::Credential { path }, Limit::NONE, Credential)
    }

    /// Process `pid` (`NotFound` when there is none), its command line
    /// whole only when it is known by one of `names`.
    pub fn process(&self, pid: i32, names: &[&str]) -> Result<ProcessInfo, ProbeError> {
        let names = names.iter().map(|n| (*n).to_owned()).collect();
        ask!(self, Request::Process { pid, names }, Limit::NONE, Process)
    }

    /// Every process known by one of `names` ([`crate::facts::process`]).
    pub fn processes_named(&self, names: &[&str]) -> Result<Vec<ProcessInfo>, ProbeError> {
        let names = names.iter().map(|n| (*n).to_owned()).collect();
        ask!(
            self,
            Request::ProcessesNamed { names },
            Limit::NONE,
            Processes
        )
    }

    /// Run a site check's executable ([`Request::Site`]): bounded by its
    /// own timeout and, where this view has one, the run's deadline.
    pub fn site_run(&self, request: Request) -> Result<SiteRun, ProbeError> {
        let bound = match &request {
            Request::Site { timeout, .. } => Some(*timeout),
            _ => None,
        };
        let limit = Limit {
            bound,
            deadline: self.deadline,
        };
        ask!(self, request, limit, Site)
    }

    /// The doctor's own network namespace ([`crate::facts::process::NetNs`]).
    pub fn net_ns(&self) -> Result<NetNs, ProbeError> {
        ask!(self, Request::NetNamespace, Limit::NONE, NetNs)
    }

    /// The wall clock, seconds since the Unix epoch (a replay's: the
    /// recorded one).
    pub fn unix_time(&self) -> Result<i64, ProbeError> {
        let secs: u64 = ask!(self, Request::WallClock, Limit::NONE, Count)?;
        i64::try_from(secs).map_err(|_| ProbeError::Other(format!("the clock reads {secs}")))
    }

    /// Wait until `until` (a replay does not wait).
    pub fn sleep_until(&self, until: Instant) {
        self.host.sleep_until(until)
    }
}

fn ethtool(ioctl: EthtoolGet, interface: &str) -> Request {
    Request::Ethtool {
        ioctl,
        interface: interface.to_owned(),
    }
}
