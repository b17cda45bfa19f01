//! Issue 33's benchmark, run by `bench/path.sh` (not a test): the manual
//! runbook an operator follows today without `spx-doctor path`, scripted
//! (`bench/path_runbook.sh`: the QEMU command line found over ssh, the tap's
//! `iface-id`, `ovn-nbctl`/`ovn-sbctl` lookups, `ip link`, `ip xfrm state`,
//! a `ping -M do` ladder from each side), against `spx-doctor path`, both
//! run as root on spx1 of the real-OVN lab ([`crate::support::ovn_lab`]:
//! on this host with OVS's userspace datapath, or the kernel lab's with
//! `SPX_BENCH_LAB=kernel`), on a healthy path and with spx2's switch port
//! at 1500. Each figure is the
//! median of `SPX_BENCH_RUNS` runs (default 5), timed in the lab; the two
//! must give the same largest frame each way, in every run.

use std::time::Instant;

use serde_json::Value;

use crate::support::ovn_lab::{note, OvnLab, A, B, GUEST_BIN, NB, NODES, SB};
use crate::support::vm::quote;

/// The runbook's answer: the largest frame each way.
fn runbook_answer(stdout: &str) -> Vec<(String, u32)> {
    stdout
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                [dir, "largest", n, "limit", ..] => Some(((*dir).to_owned(), n.parse().ok()?)),
                _ => None,
            }
        })
        .collect()
}

/// The doctor's answer, the same way.
fn doctor_answer(doc: &Value) -> Vec<(String, u32)> {
    doc["directions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| {
            Some((
                format!("{}->{}", d["from"].as_str()?, d["to"].as_str()?),
                d["largest"]["bytes"].as_u64()? as u32,
            ))
        })
        .collect()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Run `line` as spx1, timed in the guest: (seconds, stdout).
fn timed(lab: &OvnLab, line: &str) -> (f64, String) {
    // The runbook's black hole takes 65 s on a quiet machine and over
    // 120 s (the lab's usual bound on a command) on a loaded one.
    let out = lab
        .vm
        .sh_within(
            &format!(
                "{} sh -c {}",
                lab.enter("spx1"),
                quote(&format!("t0=$(date +%s%N); {line} >/tmp/bench.out 2>/tmp/bench.err; rc=$?; t1=$(date +%s%N); cat /tmp/bench.out; echo \"BENCH rc=$rc ns=$((t1 - t0))\""))
            ),
            std::time::Duration::from_secs(900),
        )
        .stdout;
    let tail = out
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("BENCH "))
        .expect("timing line");
    let ns: f64 = tail
        .split_whitespace()
        .find_map(|w| w.strip_prefix("ns="))
        .unwrap()
        .parse()
        .unwrap();
    (ns / 1e9, out)
}

#[test]
#[ignore = "a benchmark: bench/path.sh runs it"]
#[allow(clippy::disallowed_macros)] // the table is the benchmark's output
fn path_benchmark() {
    let runs: usize = std::env::var("SPX_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let started = Instant::now();
    // SPX_BENCH_LAB=kernel: the kernel lab's OVN under emulation (the
    // production datapath, every figure the emulator's); else the same
    // lab on this host with OVS's userspace datapath, at the host's speed.
    let kernel = std::env::var("SPX_BENCH_LAB").as_deref() == Ok("kernel");
    let lab = if kernel {
        OvnLab::boot("path_benchmark")
    } else {
        OvnLab::boot_userspace("path_benchmark")
    };
    let Some(lab) = lab else {
        return;
    };
    note(&format!(
        "lab up in {:.1}s",
        started.elapsed().as_secs_f64()
    ));
    let runbook = lab.vm.file(
        "path_runbook.sh",
        include_str!("../../bench/path_runbook.sh"),
    );
    let nodes: Vec<String> = NODES
        .iter()
        .map(|n| format!("{}={}", n.name, n.wan()))
        .collect();
    let runbook_line = format!(
        "NBDB={NB} SBDB={SB} NODES={} SSH_CONFIG={} bash {runbook} {} {}",
        quote(&nodes.join(" ")),
        lab.ssh_config(),
        A.instance,
        B.instance
    );
    // The doctor asks the other nodes over ssh (`--via ssh`: a node
    // without an agent) and, with SPX_BENCH_BUS unset or 1, over
    // Spinifex's bus too (nats-server and an agent on every node: the
    // default where the config names the bus). A deadline that never cuts
    // a run short (the runbook has none): under TCG a run can take longer
    // than the default 10 s, and a run cut short is no answer to time. The
    // probe timeout stays the default 1 s.
    let bus = std::env::var("SPX_BENCH_BUS").as_deref() != Ok("0");
    if bus {
        lab.start_bus();
    }
    let doctor_line = |via: &str| {
        let mut line = format!(
            "PATH={GUEST_BIN}:$PATH spx-doctor path {} {} --format json --timeout 60s --via {via}",
            A.instance, B.instance
        );
        if via == "ssh" {
            line.push_str(&format!(" --ssh-config {}", lab.ssh_config()));
        }
        line
    };
    let vias: Vec<&str> = if bus {
        vec!["ssh", "nats"]
    } else {
        vec!["ssh"]
    };
    let mut rows = Vec::new();
    // SPX_BENCH_SCENARIOS=healthy or =black-hole runs that one alone.
    let only = std::env::var("SPX_BENCH_SCENARIOS").ok();
    for (scenario, port) in [("healthy", 9000), ("black hole (spx2 port 1500)", 1500)] {
        let key = if port == 9000 {
            "healthy"
        } else {
            "black-hole"
        };
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|w| w == key))
        {
            continue;
        }
        lab.set_switch_port(NODES[1], port);
        let mut manual = Vec::new();
        // Per transport: wall times and the doctor's own duration_ms.
        let mut doctor: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); vias.len()];
        // Per transport: the runs whose answer was the runbook's.
        let mut agreed = vec![0usize; vias.len()];
        let mut said = Vec::new();
        for _ in 0..runs {
            let (s, out) = timed(&lab, &runbook_line);
            manual.push(s);
            let manual_answer = runbook_answer(&out);
            note(&format!("runbook ({scenario}, {s:.2}s): {}", out.trim()));
            for (i, via) in vias.iter().enumerate() {
                let (s, out) = timed(&lab, &doctor_line(via));
                let json = out.rsplit_once("BENCH ").map_or(out.as_str(), |(j, _)| j);
                let doc: Value = serde_json::from_str(json)
                    .unwrap_or_else(|e| panic!("spx-doctor path: not JSON ({e}): {out}"));
                doctor[i].0.push(s);
                doctor[i]
                    .1
                    .push(doc["duration_ms"].as_f64().unwrap_or(f64::NAN) / 1000.0);
                let doctor_said = doctor_answer(&doc);
                // Every run is compared, not only the last; a run that
                // disagrees is counted in the table and logged whole.
                if manual_answer == doctor_said {
                    agreed[i] += 1;
                    said = doctor_said;
                } else {
                    println!(
                        "DISAGREE ({scenario}, --via {via}): runbook {manual_answer:?}, doctor {doctor_said:?}: {doc}"
                    );
                }
            }
        }
        let m = median(&mut manual);
        let mut row = format!("{scenario:<28} {m:>10.2}");
        for ((walls, owns), agreed) in doctor.iter_mut().zip(&agreed) {
            let (d, o) = (median(walls), median(owns));
            row.push_str(&format!(
                " {d:>9.3} {o:>9.3} {:>7.1}x {:>6}",
                m / d,
                format!("{agreed}/{runs}")
            ));
        }
        row.push_str(&format!(
            "   {}",
            said.iter()
                .map(|(dir, n)| format!("{dir} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        rows.push(row);
    }
    lab.set_switch_port(NODES[1], 9000);
    println!(
        "\nspx-doctor path vs the manual runbook, on {} (median of {runs}, seconds, timed in the lab)",
        if lab.userspace {
            "the real OVN with OVS's userspace datapath on this host".to_owned()
        } else {
            format!("the kernel lab's real OVN under {}", lab.vm.accel)
        }
    );
    let mut head = format!("{:<28} {:>10}", "scenario", "runbook");
    for via in &vias {
        head.push_str(&format!(
            " {:>9} {:>9} {:>8} {:>6}",
            format!("{via}_wall"),
            format!("{via}_own"),
            "speedup",
            "agree"
        ));
    }
    head.push_str("   answer (the runbook's, and the doctor's where it agreed)");
    println!("{head}");
    for r in rows {
        println!("{r}");
    }
}
