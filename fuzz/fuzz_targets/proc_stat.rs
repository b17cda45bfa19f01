//! /proc/stat per-CPU times (procfs's `KernelStats` plus spx's cpuN
//! labels), alone and joined with /proc/softirqs: the input is split at the
//! first NUL byte into (stat, softirqs).
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::read::proc_stats::{parse_cpu_counters, parse_stat_cpus};

fuzz_target!(|data: &[u8]| {
    let (stat, softirqs) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let (Ok(stat), Ok(softirqs)) = (std::str::from_utf8(stat), std::str::from_utf8(softirqs))
    else {
        return;
    };
    let _ = parse_stat_cpus(stat);
    let _ = parse_cpu_counters(softirqs, stat);
});
