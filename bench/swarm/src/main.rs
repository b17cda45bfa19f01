//! `spx-swarm`: N simulated `spx-doctor agent`s in one process, on a real
//! NATS bus, so that the coordinator (`spx-doctor --cluster --via nats`)
//! and `spx-doctor watch` can be measured at hundreds of nodes on one
//! machine (issue 37; `bench/scale.sh` and the 256-node test).
//!
//! Each simulated node has its own NATS connection and node name, answers
//! the agent's request protocol with the agent's own code (its request
//! parser, refusals, headers and scheduler, compiled here from `src/bus/`
//! and `src/agent/scheduler.rs`), and answers with a report the real
//! doctor judged from a recorded bundle of a real lab node, made that
//! node's ([`rejudge`]): its peers are the swarm's other nodes, and the
//! pairs given as black holes are black holes in it. The doctor judges one
//! node per role (the classes of its peers' paths, in order); every other
//! node's report is that one relabelled ([`relabel`]), which the tests
//! compare with the doctor's own judgement of each node. Each also writes its
//! report into the doctor's bucket and publishes what changed, at an
//! interval, as an agent does. What it measures is the coordinator and the
//! bus: no node probes anyone.
//!
//! It writes the coordinator's config (`DIR/spinifex.toml`, node n0, every
//! node's `[nodes.*]` and NATS table), says `ready` on stdout when every
//! node is connected, and stops on SIGTERM or SIGINT with what it did.

// The swarm is a tool of its own: its lines are its output.
#![allow(clippy::disallowed_macros)]

mod agent;
mod answer;
mod plan;
mod rejudge;
mod relabel;

#[path = "../../../src/bus/mod.rs"]
#[allow(dead_code)]
mod bus;
#[path = "../../../src/agent/scheduler.rs"]
#[allow(dead_code)]
mod scheduler;

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use bytes::Bytes;
use clap::Parser;
use serde_json::Value;

use plan::Swarm;

#[derive(Parser, Debug)]
#[command(
    name = "spx-swarm",
    about = "Simulated spx-doctor agents on a real NATS bus (benchmarks and tests)"
)]
struct Args {
    /// How many nodes (n0 … nN-1).
    #[arg(long)]
    nodes: usize,
    /// The template: a bundle `--record`ed on n0 of a three-node lab (n1
    /// healthy, n2 behind a switch port at 1500).
    #[arg(long)]
    bundle: PathBuf,
    /// The doctor that judges each node's bundle (`--replay`).
    #[arg(long)]
    spx: PathBuf,
    /// Where the swarm keeps its config and the judged reports.
    #[arg(long)]
    dir: PathBuf,
    /// The bus, `ip:port`.
    #[arg(long)]
    bus: String,
    /// The CA the bus's certificate chains to.
    #[arg(long)]
    ca: PathBuf,
    /// A file holding the bus token.
    #[arg(long)]
    token_file: PathBuf,
    /// A node behind a switch port at 1500 (`n7`), or a pair that
    /// black-holes both ways (`n3:n9`). Repeatable.
    #[arg(long)]
    black_hole: Vec<String>,
    /// Between each node's periodic runs (bucket writes); 0: none.
    #[arg(long, default_value = "60s")]
    interval: String,
    /// A node whose path to a peer black-holes every other periodic run
    /// (`n5:n9`), one run every --flap-every: one change per interval.
    #[arg(long)]
    flap: Option<String>,
    #[arg(long, default_value = "1s")]
    flap_every: String,
    /// How long a run takes (default: the template's recorded run), plus
    /// up to --jitter, fixed per node.
    #[arg(long)]
    run_time: Option<String>,
    #[arg(long, default_value = "100ms")]
    jitter: String,
    #[arg(long, default_value_t = 12)]
    runs_per_minute: u32,
    /// Bundles judged at once (default: the CPUs).
    #[arg(long)]
    jobs: Option<usize>,
    /// Connections being made at once.
    #[arg(long, default_value_t = 32)]
    connecting: usize,
    /// Judge the reports and write the config, then stop; every node's
    /// report is then in the reports directory, judged or relabelled.
    #[arg(long)]
    prepare_only: bool,
    /// Have the doctor judge every node's bundle, instead of one node per
    /// role with the others relabelled from it (slow: N bundles of N−1
    /// peers; for the test that compares the two).
    #[arg(long)]
    judge_every_node: bool,
    /// Refuse a request's `inline_max_bytes` by name, as an agent from
    /// before that field does (for the test of a cluster mid-upgrade).
    #[arg(long)]
    before_inline_max: bool,
}

fn duration(flag: &str, text: &str) -> anyhow::Result<Duration> {
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    humantime::parse_duration(text).map_err(|e| anyhow!("{flag} {text}: {e}"))
}

/// A fixed fraction in [0, 1) per node name.
fn fraction(name: &str) -> f64 {
    let mut h = std::hash::DefaultHasher::new();
    name.hash(&mut h);
    (h.finish() % 10_000) as f64 / 10_000.0
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.nodes >= 3, "--nodes: at least 3");
    let mut swarm = Swarm {
        nodes: args.nodes,
        behind_1500: Default::default(),
        pairs: Default::default(),
    };
    for spec in &args.black_hole {
        swarm.fault(spec).map_err(|e| anyhow!("--black-hole {e}"))?;
    }
    let flap = match &args.flap {
        None => None,
        Some(spec) => {
            let mut probe = swarm.clone();
            probe.pairs.clear();
            probe.fault(spec).map_err(|e| anyhow!("--flap {e}"))?;
            let (a, b) = probe
                .pairs
                .iter()
                .next()
                .copied()
                .ok_or_else(|| anyhow!("--flap: NODE:PEER"))?;
            let (from, to) = if spec.starts_with(&format!("{}:", Swarm::name(a))) {
                (a, b)
            } else {
                (b, a)
            };
            Some((from, to))
        }
    };
    let interval = duration("--interval", &args.interval)?;
    let flap_every = duration("--flap-every", &args.flap_every)?;
    let jitter = duration("--jitter", &args.jitter)?;
    let token = std::fs::read_to_string(&args.token_file)
        .with_context(|| format!("--token-file {}", args.token_file.display()))?
        .trim()
        .to_owned();
    std::fs::create_dir_all(&args.dir).with_context(|| args.dir.display().to_string())?;

    let t0 = Instant::now();
    let template = rejudge::Template::read(&args.bundle).map_err(|e| anyhow!("--bundle {e}"))?;
    let recorded = template_duration(&args.bundle)?;
    let run_time = match &args.run_time {
        Some(t) => duration("--run-time", t)?,
        None => recorded,
    };
    let reports_dir = args
        .dir
        .join(format!("reports-{:016x}", cache_key(&args, &swarm)?));
    // Each report to make: node k's, with its paths' classes.
    let flapped =
        |a: usize, c: usize| swarm.black_holed(a, c) || flap.is_some_and(|(f, t)| a == f && c == t);
    let mut wanted: Vec<(String, usize, bool)> = (0..swarm.nodes)
        .map(|k| (Swarm::name(k), k, false))
        .collect();
    if let Some((from, to)) = flap {
        wanted.push((
            format!("{}-flapped-{}", Swarm::name(from), Swarm::name(to)),
            from,
            true,
        ));
    }
    // One node per role is judged; the others are relabelled from it.
    let order = swarm.config_order();
    let mut judged_for: BTreeMap<Vec<bool>, usize> = BTreeMap::new();
    let mut source = Vec::with_capacity(wanted.len());
    for (i, (_, k, flapping)) in wanted.iter().enumerate() {
        let role = if *flapping {
            relabel::role(&order, *k, flapped)
        } else {
            relabel::role(&order, *k, |a, b| swarm.black_holed(a, b))
        };
        source.push(if args.judge_every_node {
            i
        } else {
            *judged_for.entry(role).or_insert(i)
        });
    }
    let mut jobs: Vec<rejudge::Job<'_>> = Vec::new();
    let mut judged_index = Vec::new();
    for (i, (file, k, flapping)) in wanted.iter().enumerate() {
        if source[i] != i {
            continue;
        }
        let (t, s, k, flapping) = (&template, &swarm, *k, *flapping);
        judged_index.push(i);
        jobs.push(rejudge::Job {
            file: file.clone(),
            node: Swarm::name(k),
            make: Box::new(move || {
                if flapping {
                    t.for_node(s, k, flapped)
                } else {
                    t.for_node(s, k, |a, b| s.black_holed(a, b))
                }
            }),
        });
    }
    let jobs_n = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let paths = judge_reports(&args.spx, &reports_dir, jobs, jobs_n)?;
    let mut judged: BTreeMap<usize, Bytes> = BTreeMap::new();
    for (p, i) in paths.iter().zip(&judged_index) {
        let bytes = std::fs::read(p).with_context(|| p.display().to_string())?;
        judged.insert(*i, Bytes::from(bytes));
    }
    // The others, relabelled from their role's, a share per thread.
    let mut docs: BTreeMap<usize, Value> = BTreeMap::new();
    for (i, bytes) in &judged {
        let doc =
            serde_json::from_slice(bytes).with_context(|| format!("{}.json", wanted[*i].0))?;
        docs.insert(*i, doc);
    }
    let mut reports: Vec<Bytes> = vec![Bytes::new(); wanted.len()];
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let shares: Vec<_> = (0..jobs_n.max(1))
            .map(|t| {
                let (wanted, source, docs, order, dir) =
                    (&wanted, &source, &docs, &order, &reports_dir);
                let (judged, n, prepare_only) = (&judged, jobs_n.max(1), args.prepare_only);
                scope.spawn(move || -> anyhow::Result<Vec<(usize, Bytes)>> {
                    let mut out = Vec::new();
                    for (i, (file, k, _)) in wanted.iter().enumerate().skip(t).step_by(n) {
                        let from = source[i];
                        if from == i {
                            out.push((i, judged[&i].clone()));
                            continue;
                        }
                        let r = relabel::Relabel::between(order, wanted[from].1, *k);
                        let bytes = r.to_vec(&docs[&from]);
                        if prepare_only {
                            std::fs::write(dir.join(format!("{file}.json")), &bytes)?;
                        }
                        out.push((i, Bytes::from(bytes)));
                    }
                    Ok(out)
                })
            })
            .collect();
        for share in shares {
            let made = share
                .join()
                .map_err(|_| anyhow!("a relabelling thread panicked"))??;
            for (i, bytes) in made {
                reports[i] = bytes;
            }
        }
        Ok(())
    })?;
    let total: usize = reports[..swarm.nodes].iter().map(Bytes::len).sum();
    let largest = reports.iter().map(Bytes::len).max().unwrap_or(0);
    println!(
        "judged {} reports in {:.1} s: {} bytes in all, {} the largest ({} judged by the doctor, {} relabelled from them; {})",
        reports.len(),
        t0.elapsed().as_secs_f64(),
        total,
        largest,
        judged.len(),
        reports.len() - judged.len(),
        reports_dir.display()
    );

    let config_path = args.dir.join("spinifex.toml");
    let ca = args.ca.display().to_string();
    write_private(&config_path, &swarm.config(0, &args.bus, &ca, &token))?;
    println!("config {}", config_path.display());
    // What the coordinator must name: every ordered pair that black-holes.
    let mut failing = swarm.failing_pairs().join("\n");
    failing.push('\n');
    std::fs::write(args.dir.join("black-holes"), failing)?;
    if args.prepare_only {
        return Ok(());
    }
    let nats = bus::NatsConfig::read(&config_path, "n0")
        .map_err(|e| anyhow!(e))?
        .ok_or_else(|| anyhow!("the config has no [nodes.n0.nats]"))?;

    let mut specs = Vec::with_capacity(swarm.nodes);
    for (k, report) in reports.iter().take(swarm.nodes).enumerate() {
        let name = Swarm::name(k);
        let mut own = vec![report.clone()];
        let (mut every, mut phase) = (interval, interval.mul_f64(k as f64 / swarm.nodes as f64));
        if flap.is_some_and(|(f, _)| f == k) {
            own.push(reports[swarm.nodes].clone());
            every = flap_every;
            phase = flap_every;
        }
        let seen = own.iter().map(|r| seen_of(r)).collect();
        specs.push(agent::NodeSpec {
            run_time: run_time + jitter.mul_f64(fraction(&name)),
            name,
            reports: own,
            seen,
            interval: every,
            phase,
        });
    }
    let common = Arc::new(agent::Common {
        nats,
        limits: scheduler::Limits {
            runs_per_minute: args.runs_per_minute,
            max_waiters: 1024,
            max_waiting_groups: 8,
        },
        counts: agent::Counts::default(),
        before_inline_max: args.before_inline_max,
        nodes: specs.len(),
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(serve(specs, common, args.connecting))
}

async fn serve(
    specs: Vec<agent::NodeSpec>,
    common: Arc<agent::Common>,
    connecting: usize,
) -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let gate = Arc::new(tokio::sync::Semaphore::new(connecting.max(1)));
    let n = specs.len() as u64;
    let t0 = Instant::now();
    let mut tasks = Vec::with_capacity(specs.len());
    for spec in specs {
        tasks.push(tokio::spawn(agent::run(
            spec,
            Arc::clone(&common),
            Arc::clone(&gate),
            stop_rx.clone(),
        )));
    }
    let c = &common.counts;
    let mut said_ready = false;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
        if !said_ready && c.connected.load(Ordering::Relaxed) == n {
            said_ready = true;
            println!(
                "ready: {n} agents connected in {:.1} s",
                t0.elapsed().as_secs_f64()
            );
        }
    }
    let _ = stop_tx.send(true);
    for t in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(3), t).await;
    }
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    println!(
        "stopped: {} requests, {} refused, {} reports ({} bytes), {} bucket writes ({} bytes, {} failed), {} events",
        get(&c.requests),
        get(&c.refused),
        get(&c.reports),
        get(&c.report_bytes),
        get(&c.kv_writes),
        get(&c.kv_bytes),
        get(&c.kv_failed),
        get(&c.events)
    );
    Ok(())
}

fn judge_reports(
    spx: &Path,
    dir: &Path,
    jobs: Vec<rejudge::Job<'_>>,
    n: usize,
) -> anyhow::Result<Vec<PathBuf>> {
    rejudge::judge_all(spx, dir, jobs, n).map_err(|e| anyhow!(e))
}

/// The template run's wall time (its header).
fn template_duration(path: &Path) -> anyhow::Result<Duration> {
    let b = spx_checks::host::Bundle::read(path).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    Ok(Duration::from_millis(b.header.duration_ms))
}

/// What the judged reports depend on: the template, the doctor that
/// judged them, the nodes and their faults (a flapping node's other
/// report is a file of its own).
fn cache_key(args: &Args, swarm: &Swarm) -> anyhow::Result<u64> {
    let mut h = std::hash::DefaultHasher::new();
    std::fs::read(&args.bundle)?.hash(&mut h);
    let spx =
        std::fs::metadata(&args.spx).with_context(|| format!("--spx {}", args.spx.display()))?;
    spx.len().hash(&mut h);
    spx.modified()?.hash(&mut h);
    swarm.nodes.hash(&mut h);
    swarm.behind_1500.hash(&mut h);
    swarm.pairs.hash(&mut h);
    args.judge_every_node.hash(&mut h);
    Ok(h.finish())
}

/// Each check's result in a report, by id.
fn seen_of(report: &[u8]) -> BTreeMap<String, bus::events::Seen> {
    let doc: Value = serde_json::from_slice(report).unwrap_or(Value::Null);
    doc.get("checks")
        .and_then(Value::as_array)
        .map(|c| bus::events::seen(c))
        .unwrap_or_default()
}

/// The config holds the bus token: readable by this user only.
fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| path.display().to_string())?;
    f.write_all(text.as_bytes())?;
    Ok(())
}
