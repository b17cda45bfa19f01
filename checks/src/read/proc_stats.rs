//! Where the kernel's receive work lands and what TCP makes of it:
//! /proc/softirqs (NET_RX per CPU), /proc/stat (per-CPU time, through
//! procfs's `KernelStats`), /proc/net/netstat (TcpExt) and /proc/net/snmp
//! (Tcp, through procfs's `Snmp`).
//!
//! procfs has no parser for /proc/softirqs or /proc/net/netstat, so those two
//! are parsed here, as pure functions over text. /proc/softirqs and
//! /proc/stat are host-wide; the two net files belong to this process's
//! network namespace.

use std::collections::BTreeMap;
use std::io::BufRead;

use procfs::{FromBufRead, FromBufReadSI};

use crate::facts::ProbeError;
use crate::host::HostRef;

const SOFTIRQS: &str = "/proc/softirqs";
const STAT: &str = "/proc/stat";
const NETSTAT: &str = "/proc/net/netstat";

/// One CPU's cumulative counters at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuCounters {
    pub cpu: u32,
    /// NET_RX softirqs raised on this CPU since boot.
    pub net_rx: u64,
    /// Ticks (USER_HZ) spent in user, nice, system, irq and softirq.
    pub busy: u64,
    /// Ticks spent servicing softirqs.
    pub softirq: u64,
    /// All ticks: busy + idle + iowait + steal.
    pub total: u64,
}

/// NET_RX per CPU from /proc/softirqs: CPU number → count. The header names
/// the CPUs (`CPU0 CPU1 …`, possible CPUs, offline ones included).
pub fn parse_softirqs_net_rx(text: &str) -> Result<BTreeMap<u32, u64>, String> {
    let mut lines = text.lines();
    let header = lines.next().ok_or("empty /proc/softirqs")?;
    let cpus: Vec<u32> = header
        .split_whitespace()
        .map(|c| {
            c.strip_prefix("CPU")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("header field {c:?} is not CPUn"))
        })
        .collect::<Result<_, _>>()?;
    let row = lines
        .map(str::trim_start)
        .find(|l| l.starts_with("NET_RX:"))
        .ok_or("no NET_RX row")?;
    let values: Vec<u64> = row["NET_RX:".len()..]
        .split_whitespace()
        .map(|v| v.parse().map_err(|_| format!("NET_RX value {v:?}")))
        .collect::<Result<_, _>>()?;
    if values.len() != cpus.len() {
        return Err(format!(
            "{} CPUs in the header, {} NET_RX values",
            cpus.len(),
            values.len()
        ));
    }
    Ok(cpus.into_iter().zip(values).collect())
}

/// Per-CPU times from /proc/stat (online CPUs only), parsed by procfs's
/// `KernelStats`; the CPU numbers come from the `cpuN` labels because
/// `KernelStats` keeps only the order and offline CPUs leave gaps.
pub fn parse_stat_cpus(text: &str) -> Result<Vec<(u32, u64, u64, u64)>, String> {
    // Ticks per second cancel out of every share computed from these.
    let si = procfs::ExplicitSystemInfo {
        boot_time_secs: 0,
        ticks_per_second: 100,
        page_size: 4096,
        is_little_endian: cfg!(target_endian = "little"),
    };
    let stats =
        procfs::KernelStats::from_buf_read(text.as_bytes(), &si).map_err(|e| e.to_string())?;
    let labels: Vec<u32> = text
        .lines()
        .filter_map(|l| l.strip_prefix("cpu"))
        .filter(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        .map(|rest| {
            let n = rest.split_whitespace().next().unwrap_or("");
            n.parse().map_err(|_| format!("cpu label cpu{n}"))
        })
        .collect::<Result<_, _>>()?;
    if labels.len() != stats.cpu_time.len() {
        return Err(format!(
            "{} cpu labels, {} cpu rows",
            labels.len(),
            stats.cpu_time.len()
        ));
    }
    Ok(labels
        .into_iter()
        .zip(stats.cpu_time)
        .map(|(cpu, t)| {
            let softirq = t.softirq.unwrap_or(0);
            let busy = t.user + t.nice + t.system + t.irq.unwrap_or(0) + softirq;
            let total = busy + t.idle + t.iowait.unwrap_or(0) + t.steal.unwrap_or(0);
            (cpu, busy, softirq, total)
        })
        .collect())
}

/// Join the two files: CPUs online in /proc/stat, with their NET_RX count.
pub fn parse_cpu_counters(softirqs: &str, stat: &str) -> Result<Vec<CpuCounters>, ProbeError> {
    let net_rx = parse_softirqs_net_rx(softirqs).map_err(|e| ProbeError::parse(SOFTIRQS, e))?;
    let times = parse_stat_cpus(stat).map_err(|e| ProbeError::parse(STAT, e))?;
    Ok(times
        .into_iter()
        .map(|(cpu, busy, softirq, total)| CpuCounters {
            cpu,
            net_rx: net_rx.get(&cpu).copied().unwrap_or(0),
            busy,
            softirq,
            total,
        })
        .collect())
}

/// Read both files of the host.
pub fn read_cpu_counters(host: HostRef<'_>) -> Result<Vec<CpuCounters>, ProbeError> {
    let softirqs = host.read_file(SOFTIRQS)?;
    let stat = host.read_file(STAT)?;
    parse_cpu_counters(&softirqs, &stat)
}

/// The counters of /proc/net/netstat (or /proc/net/snmp): pairs of lines,
/// `Prefix: Name Name…` then `Prefix: value value…`, keyed `Prefix:Name`.
/// Values are signed in the kernel's printout for a few fields (MaxConn);
/// those are skipped, counters are unsigned.
pub fn parse_proc_net_counters<R: BufRead>(r: R) -> Result<BTreeMap<String, u64>, String> {
    let mut out = BTreeMap::new();
    let mut lines = r.lines();
    while let Some(header) = lines.next() {
        let header = header.map_err(|e| e.to_string())?;
        if header.trim().is_empty() {
            continue;
        }
        let values = lines
            .next()
            .ok_or_else(|| format!("header {:?} has no value line", first_word(&header)))?
            .map_err(|e| e.to_string())?;
        let (hp, names) = header.split_once(':').ok_or("header without ':'")?;
        let (vp, vals) = values.split_once(':').ok_or("value line without ':'")?;
        if hp != vp {
            return Err(format!("header {hp:?} followed by values for {vp:?}"));
        }
        let names: Vec<&str> = names.split_whitespace().collect();
        let vals: Vec<&str> = vals.split_whitespace().collect();
        if names.len() != vals.len() {
            return Err(format!(
                "{hp}: {} names, {} values",
                names.len(),
                vals.len()
            ));
        }
        for (n, v) in names.into_iter().zip(vals) {
            if let Ok(v) = v.parse::<u64>() {
                out.insert(format!("{hp}:{n}"), v);
            }
        }
    }
    Ok(out)
}

fn first_word(s: &str) -> &str {
    s.split_whitespace().next().unwrap_or("")
}

/// TCP's view of reordering and loss since boot (this namespace).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpCounters {
    /// TcpExt TCPSACKReorder: reordering detected from SACKs.
    pub sack_reorder: u64,
    /// TcpExt TCPTSReorder: reordering detected from timestamps.
    pub ts_reorder: u64,
    /// TcpExt TCPRenoReorder: reordering detected without SACK.
    pub reno_reorder: u64,
    /// TcpExt TCPDSACKRecv: D-SACKs received, i.e. segments retransmitted
    /// although they had arrived (reordering mistaken for loss).
    pub dsack_recv: u64,
    /// Tcp RetransSegs.
    pub retrans_segs: u64,
    /// Tcp OutSegs.
    pub out_segs: u64,
}

impl TcpCounters {
    pub fn reorder_events(&self) -> u64 {
        self.sack_reorder + self.ts_reorder + self.reno_reorder
    }

    /// Counter growth from `start` to `self` (counters only grow; a wrap
    /// or reset reads as 0).
    pub fn since(&self, start: &TcpCounters) -> TcpCounters {
        TcpCounters {
            sack_reorder: self.sack_reorder.saturating_sub(start.sack_reorder),
            ts_reorder: self.ts_reorder.saturating_sub(start.ts_reorder),
            reno_reorder: self.reno_reorder.saturating_sub(start.reno_reorder),
            dsack_recv: self.dsack_recv.saturating_sub(start.dsack_recv),
            retrans_segs: self.retrans_segs.saturating_sub(start.retrans_segs),
            out_segs: self.out_segs.saturating_sub(start.out_segs),
        }
    }
}

/// Build [`TcpCounters`] from recorded /proc/net/netstat and /proc/net/snmp.
pub fn parse_tcp_counters<R: BufRead>(netstat: R, snmp: R) -> Result<TcpCounters, ProbeError> {
    let ext = parse_proc_net_counters(netstat).map_err(|e| ProbeError::parse(NETSTAT, e))?;
    let snmp = procfs::net::Snmp::from_buf_read(snmp)
        .map_err(|e| ProbeError::parse("/proc/net/snmp", e.to_string()))?;
    tcp_counters(&ext, &snmp)
}

fn tcp_counters(
    ext: &BTreeMap<String, u64>,
    snmp: &procfs::net::Snmp,
) -> Result<TcpCounters, ProbeError> {
    let get = |name: &str| ext.get(&format!("TcpExt:{name}")).copied();
    let sack_reorder = get("TCPSACKReorder")
        .ok_or_else(|| ProbeError::parse(NETSTAT, "no TcpExt TCPSACKReorder"))?;
    Ok(TcpCounters {
        sack_reorder,
        // Present since Linux 2.6.x; tolerate kernels that drop them.
        ts_reorder: get("TCPTSReorder").unwrap_or(0),
        reno_reorder: get("TCPRenoReorder").unwrap_or(0),
        dsack_recv: get("TCPDSACKRecv").unwrap_or(0),
        retrans_segs: snmp.tcp_retrans_segs,
        out_segs: snmp.tcp_out_segs,
    })
}

/// Read the counters of this network namespace.
pub fn read_tcp_counters(host: HostRef<'_>) -> Result<TcpCounters, ProbeError> {
    let text = host.read_file(NETSTAT)?;
    let snmp = host.read_file(super::snmp::SNMP)?;
    parse_tcp_counters(text.as_bytes(), snmp.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    // captured on Debian 12, kernel 6.18 (this project's 2-CPU CI machine)
    const SOFTIRQS_2CPU: &str = "                    CPU0       CPU1       
          HI:          0          0
       TIMER:      10136      12414
      NET_TX:          5          0
      NET_RX:      10523      11817
       BLOCK:          0      38845
    IRQ_POLL:          0          0
     TASKLET:        298         13
       SCHED:      23878      23707
     HRTIMER:          0          0
         RCU:      25081      25691
";
    const STAT_2CPU: &str = "cpu  26906 0 4717 107694 417 0 114 22 0 0
cpu0 12938 0 2353 54372 233 0 39 10 0 0
cpu1 13968 0 2363 53321 184 0 74 11 0 0
intr 421424 0 0
ctxt 465796
btime 1764400000
processes 2000
procs_running 1
procs_blocked 0
softirq 0 0 0 0 0 0 0 0 0 0 0
";

    #[test]
    fn softirqs_and_stat_join_by_cpu_number() {
        let c = parse_cpu_counters(SOFTIRQS_2CPU, STAT_2CPU).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(
            c[0],
            CpuCounters {
                cpu: 0,
                net_rx: 10523,
                busy: 12938 + 2353 + 39,
                softirq: 39,
                total: 12938 + 2353 + 39 + 54372 + 233 + 10
            }
        );
        assert_eq!(c[1].net_rx, 11817);
    }

    #[test]
    fn offline_cpus_leave_gaps_not_shifts() {
        let softirqs = "  CPU0 CPU1 CPU2\n NET_RX: 1 2 3\n";
        let stat = "cpu 3 0 3 3 0 0 0 0 0 0\ncpu0 1 0 1 1 0 0 0 0 0 0\ncpu2 2 0 2 2 0 0 5 0 0 0\nctxt 1\nbtime 1\nprocesses 1\n";
        let c = parse_cpu_counters(softirqs, stat).unwrap();
        assert_eq!(
            c.iter().map(|c| (c.cpu, c.net_rx)).collect::<Vec<_>>(),
            [(0, 1), (2, 3)]
        );
        assert_eq!(c[1].softirq, 5);
    }

    #[test]
    fn broken_softirqs_are_parse_errors() {
        assert!(parse_softirqs_net_rx("").is_err());
        assert!(parse_softirqs_net_rx(" CPU0\n TIMER: 1\n").is_err());
        assert!(parse_softirqs_net_rx(" CPU0 CPU1\n NET_RX: 1\n").is_err());
        assert!(parse_softirqs_net_rx(" CPU0\n NET_RX: x\n").is_err());
        assert!(parse_softirqs_net_rx(" eth0\n NET_RX: 1\n").is_err());
        assert!(parse_cpu_counters(SOFTIRQS_2CPU, "garbage").is_err());
    }

    #[test]
    fn netstat_pairs_become_prefixed_counters() {
        let text = "TcpExt: SyncookiesSent TCPSACKReorder TCPTSReorder TCPRenoReorder TCPDSACKRecv\nTcpExt: 0 11424 3 0 116\nIpExt: InNoRoutes\nIpExt: 1\n";
        let m = parse_proc_net_counters(text.as_bytes()).unwrap();
        assert_eq!(m["TcpExt:TCPSACKReorder"], 11424);
        assert_eq!(m["IpExt:InNoRoutes"], 1);
        assert!(parse_proc_net_counters("TcpExt: A B\nTcpExt: 1\n".as_bytes()).is_err());
        assert!(parse_proc_net_counters("TcpExt: A\nIpExt: 1\n".as_bytes()).is_err());
        assert!(parse_proc_net_counters("TcpExt: A\n".as_bytes()).is_err());
    }

    #[test]
    fn reads_the_live_host() {
        let c = read_cpu_counters(crate::live::test_host())
            .expect("/proc/softirqs and /proc/stat are world-readable");
        assert!(!c.is_empty());
        assert!(c.iter().all(|c| c.total >= c.busy && c.busy >= c.softirq));
        let t = read_tcp_counters(crate::live::test_host())
            .expect("/proc/net/netstat is world-readable");
        assert!(t.out_segs >= t.retrans_segs);
    }
}
