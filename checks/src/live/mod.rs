//! The live host: every request answered by the machine the doctor runs on,
//! through the syscalls in this folder (netlink, xfrm, the ethtool ioctl,
//! the ICMP driver, OVSDB connections, QMP, /proc reads). Nothing below it
//! imports it: the seam ([`crate::host`]) knows only the trait.

pub mod credential;
pub mod ethtool;
pub mod icmp;
pub mod journal;
pub mod links;
pub mod neighbours;
pub mod ovsdb;
pub mod peers;
pub mod process;
pub mod qemu;
pub mod qmp;
pub mod site;
pub mod xfrm;

use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use self::ethtool::Ethtool;
use crate::facts::icmp::Settings;
use crate::facts::ovsdb::{wire::Select, Budget};
use crate::facts::ProbeError;
#[cfg(test)]
use crate::host::HostRef;
use crate::host::{EthtoolGet, Fact, Host, Limit, Request};

/// Bounds for live reads a caller gave none for.
const DEFAULT_BOUND: Duration = Duration::from_secs(2);

/// This machine, read as the probe layer reads it.
pub struct LiveHost {
    started: Instant,
}

impl LiveHost {
    /// A live host whose clock starts now (with the run).
    pub fn new() -> LiveHost {
        LiveHost {
            started: Instant::now(),
        }
    }
}

impl Default for LiveHost {
    fn default() -> LiveHost {
        LiveHost::new()
    }
}

impl Host for LiveHost {
    fn read(&self, _scope: &str, request: &Request, limit: Limit) -> Result<Fact, ProbeError> {
        let bound = limit.bound.unwrap_or(DEFAULT_BOUND);
        let deadline = limit.deadline.unwrap_or_else(|| Instant::now() + bound);
        Ok(match request {
            Request::File { path } => Fact::Text(read_to_string(path)?),
            Request::Dir { path } => Fact::Names(read_dir(path)?),
            Request::Readlink { path } => Fact::Text(
                std::fs::read_link(path)
                    .map_err(|e| ProbeError::from_io(path, e))?
                    .to_string_lossy()
                    .into_owned(),
            ),
            Request::Exists { path } => Fact::Bool(path.exists()),
            Request::IsDir { path } => Fact::Bool(path.is_dir()),
            Request::Journal { unit, needle } => {
                Fact::Journal(journal::grep_unit(unit, needle, bound)?)
            }
            // rtnetlink: each request within its own bound, and never past
            // the deadline it was given (`limit.deadline`, the run's).
            Request::Route { destination, oif } => {
                Fact::Route(links::route_via(*destination, *oif, limit.deadline)?)
            }
            Request::LinkByName { name } => Fact::Link(links::link_by_name(name, limit.deadline)?),
            Request::LinkByIndex { index } => {
                Fact::Link(links::link_by_index(*index, limit.deadline)?)
            }
            Request::Links => Fact::Links(links::links(limit.deadline)?),
            Request::Addresses => Fact::Addresses(links::local_addresses(limit.deadline)?),
            Request::NeighbourTables => Fact::NeighbourTables(neighbours::tables(limit.deadline)?),
            Request::Neighbours => Fact::Neighbours(neighbours::entries(limit.deadline)?),
            Request::XfrmStates => Fact::Xfrm(xfrm::states(bound)?),
            Request::XfrmPolicies => Fact::XfrmPolicies(xfrm::policies(bound)?),
            Request::Ethtool { ioctl, interface } => {
                let e = Ethtool::open()?;
                match ioctl {
                    EthtoolGet::Drvinfo => Fact::Drvinfo(e.drvinfo(interface)?),
                    EthtoolGet::Channels => Fact::Channels(e.channels(interface)?),
                    EthtoolGet::Rings => Fact::Rings(e.rings(interface)?),
                    EthtoolGet::Features => Fact::Features(e.features(interface)?),
                    EthtoolGet::Stats => Fact::Stats(e.stats(interface)?),
                }
            }
            Request::Ovsdb {
                endpoints,
                db,
                selects,
            } => {
                let columns: Vec<Vec<&str>> = selects
                    .iter()
                    .map(|s| s.columns.iter().map(String::as_str).collect())
                    .collect();
                let selects: Vec<Select<'_>> = selects
                    .iter()
                    .zip(&columns)
                    .map(|(s, columns)| Select {
                        table: &s.table,
                        columns,
                        conditions: s.conditions.clone(),
                    })
                    .collect();
                Fact::Ovsdb(ovsdb::select_live(
                    endpoints,
                    db,
                    &selects,
                    Budget::within(bound, deadline),
                )?)
            }
            Request::QemuProcesses => Fact::QemuProcesses(qemu::discover()?),
            Request::ProcessFds { pid } => Fact::ProcessFds(qemu::process_fds(*pid)?),
            Request::Qmp { socket } => Fact::Qmp(qmp::gather(socket, bound)),
            Request::Icmp {
                targets,
                round_timeout,
                max_rounds,
            } => {
                let (probes, socket) = icmp::measure(
                    targets,
                    &Settings {
                        round_timeout: *round_timeout,
                        deadline,
                        max_rounds: *max_rounds,
                    },
                )?;
                Fact::Icmp { probes, socket }
            }
            Request::Resolve { names } => {
                Fact::Resolved(peers::lookup_names(names, bound).into_iter().collect())
            }
            Request::Hostname => Fact::Text(
                nix::unistd::gethostname()
                    .map_err(|e| ProbeError::Other(format!("gethostname: {e}")))?
                    .into_string()
                    .map_err(|_| ProbeError::Other("the host name is not UTF-8".into()))?,
            ),
            Request::OnlineCpus => {
                // SAFETY: sysconf has no preconditions.
                let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
                Fact::Count(
                    u64::try_from(n)
                        .map_err(|_| ProbeError::Other("sysconf(_SC_NPROCESSORS_ONLN)".into()))?,
                )
            }
            Request::Clock => Fact::Elapsed(self.started.elapsed()),
            Request::Credential { path } => Fact::Credential(credential::read(path)?),
            Request::Process { pid, names } => Fact::Process(process::by_pid(*pid, names)?),
            Request::ProcessesNamed { names } => Fact::Processes(process::named(names)?),
            Request::NetNamespace => Fact::NetNs(process::own_net_ns()?),
            Request::Site {
                check,
                definition,
                command,
                timeout,
                requires_root,
                context,
            } => Fact::Site(site::run(
                &site::Plugin {
                    check,
                    definition,
                    command,
                    timeout: *timeout,
                    requires_root: *requires_root,
                    context,
                },
                limit.deadline,
            )?),
            Request::WallClock => Fact::Count(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_err(|e| ProbeError::Other(format!("the clock is before 1970: {e}")))?
                    .as_secs(),
            ),
        })
    }
}

/// A directory's entry names, sorted (names that are not UTF-8 skipped).
fn read_dir(path: &Path) -> Result<Vec<String>, ProbeError> {
    let mut names: Vec<String> = std::fs::read_dir(path)
        .map_err(|e| ProbeError::from_io(path, e))?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    Ok(names)
}
/// The live host as a test outside any check sees it.
#[cfg(test)]
pub(crate) fn test_host() -> HostRef<'static> {
    static LIVE: std::sync::OnceLock<LiveHost> = std::sync::OnceLock::new();
    HostRef::new(LIVE.get_or_init(LiveHost::new), "test")
}

/// Read a whole kernel file (procfs or sysfs) into a string, classifying the
/// error by kind.
pub fn read_to_string(path: impl AsRef<Path>) -> Result<String, ProbeError> {
    let path = path.as_ref();
    std::fs::read_to_string(path).map_err(|e| ProbeError::from_io(path, e))
}

/// The pids in /proc, from one read of the directory (no open per
/// process): what a walk of every process starts from.
pub(crate) fn pids() -> Result<impl Iterator<Item = i32>, ProbeError> {
    let entries =
        std::fs::read_dir("/proc").map_err(|e| ProbeError::Other(format!("listing /proc: {e}")))?;
    Ok(entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok())))
}

/// The whole of `path` into `buf` (cleared first), read to its end
/// without asking its size: a /proc file's is 0. One open, the reads, one
/// close, into a buffer a walk of /proc reuses.
pub(crate) fn read_into(path: &Path, buf: &mut Vec<u8>) -> io::Result<()> {
    use std::io::Read;
    buf.clear();
    let file = std::fs::File::open(path)?;
    // `Take` reads to the end without File's size hint (an fstat and an
    // lseek per file).
    file.take(u64::MAX).read_to_end(buf)?;
    Ok(())
}

/// Bound every receive on a netlink socket (`SO_RCVTIMEO`), so that a
/// kernel that does not finish a dump cannot hold the run past its
/// deadline. Never zero: a zero timeout means none at all.
pub(crate) fn set_receive_timeout(
    socket: &impl std::os::fd::AsFd,
    timeout: std::time::Duration,
) -> io::Result<()> {
    use nix::sys::socket::{setsockopt, sockopt::ReceiveTimeout};
    use nix::sys::time::TimeVal;
    let tv = TimeVal::new(
        timeout.as_secs() as libc::time_t,
        timeout.subsec_micros().max(1) as libc::suseconds_t,
    );
    Ok(setsockopt(socket, ReceiveTimeout, &tv)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_are_read_whole_into_the_buffer() {
        let mut buf = b"left over".to_vec();
        read_into(Path::new("/proc/self/cmdline"), &mut buf).unwrap();
        assert_eq!(buf, std::fs::read("/proc/self/cmdline").unwrap());
        // Longer than the buffer's first capacity.
        let smaps = Path::new("/proc/self/smaps");
        read_into(smaps, &mut buf).unwrap();
        assert!(buf.len() > 4096 && buf.ends_with(b"\n"), "{}", buf.len());
        assert_eq!(
            read_into(Path::new("/proc/0/cmdline"), &mut buf)
                .unwrap_err()
                .kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn pids_are_the_numeric_entries_of_proc() {
        let pids: Vec<i32> = pids().unwrap().collect();
        assert!(pids.contains(&(std::process::id() as i32)));
        assert!(pids.contains(&1));
        assert!(pids.iter().all(|&p| p > 0));
    }
}
