//! `spx-doctor --cluster`: one command checks every node of the cluster.
//!
//! The plan ([`plan`]) is made and validated before anything runs. Then,
//! all at once: this node's checks run in this process, and every other
//! node runs the doctor itself over the system `ssh` ([`ssh`]), at most
//! `--parallel` at a time, all within the one `--timeout`. Every node
//! probes all its peers at once, so the path matrix costs one probe round.
//! OVN NB and SB are cluster-wide: one node reads them (this one when it
//! is selected), the others are told to leave them alone. The cluster
//! checks then judge the reports side by side, and the report
//! ([`crate::report::cluster`]) carries every node's own report unchanged.

pub mod args;
pub(crate) mod nats;
pub mod plan;
pub(crate) mod ssh;
pub mod watch;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use spx_checks::checks::{cluster_config_drift, cluster_path_matrix};
use spx_checks::cluster::{
    ClusterFacts, NodeAnswer, Received, ReportText, Transport, Unreached, UnreachedKind,
};
use spx_checks::{endpoint, expect, spinifex::as_invoked, Finding, Status};

use crate::cli::RunArgs;
use crate::report::{check_report, cluster_exit_code, CheckReport, Tool, SCHEMA_VERSION};
use crate::runner::Outcome;
use crate::{levels, render, runner};

use crate::report::cluster::{ClusterReport, ClusterSummary, NodeEntry};
use plan::{Plan, Via};

/// Kept back from the deadline to judge, render and write.
fn margin(timeout: Duration) -> Duration {
    (timeout / 20).min(Duration::from_millis(200))
}

pub fn run(args: RunArgs) -> anyhow::Result<u8> {
    runner::install_panic_hook();
    let started_at = SystemTime::now();
    let t0 = Instant::now();
    let carried = nats::Carried::of(&args);
    let plan = Plan::from_args(args)?;
    let bus = nats::choose(&plan, &carried)?;
    let transport = match bus {
        Some(_) => Transport::Nats,
        None => Transport::Ssh,
    };
    let deadline = t0 + plan.timeout - margin(plan.timeout);

    let names = plan.names_to_resolve.clone();
    let bound = plan::ssh_allowance(plan.timeout);
    let resolver = std::thread::spawn(move || Plan::resolve_names(&names, bound));

    let jobs: Vec<ssh::Job> = plan
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(index, n)| match &n.via {
            Via::Ssh(command) => Some(ssh::Job {
                index,
                ssh: command.clone(),
                sudo: plan.sudo,
            }),
            _ => None,
        })
        .collect();
    let parallel = plan.parallel;
    let remote = match bus {
        // Over NATS every node's agent answers, this node's included.
        Some(config) => {
            let g = nats::Gather {
                config,
                request: nats::request(&plan, &carried),
                nodes: plan.nodes.iter().map(|n| n.name.clone()).collect(),
                deadline,
                traceparent: nats::traceparent(),
            };
            std::thread::spawn(move || {
                nats::gather(g)
                    .into_iter()
                    .enumerate()
                    .map(|(index, got)| Remote {
                        index,
                        report: got.report,
                        target: None,
                        agents: got.agents,
                    })
                    .collect::<Vec<_>>()
            })
        }
        None => std::thread::spawn(move || {
            ssh::run_all(jobs, parallel, deadline)
                .into_iter()
                .map(|a| Remote {
                    index: a.index,
                    report: a.report.map(ReportText::from).map(Received::from),
                    target: a.target,
                    agents: Vec::new(),
                })
                .collect()
        }),
    };

    let local = plan
        .nodes
        .iter()
        .position(|n| transport == Transport::Ssh && matches!(n.via, Via::InProcess))
        .map(|i| {
            let r = crate::node_report(&plan.settings, &crate::Facts::Live);
            (
                i,
                Received::from(ReportText::of(&r).expect("a report always serializes")),
            )
        });
    let mut answers: Vec<Option<Result<Received, Unreached>>> = vec![None; plan.nodes.len()];
    let mut targets = vec![None; plan.nodes.len()];
    let mut agents = vec![Vec::new(); plan.nodes.len()];
    if let Some((i, r)) = local {
        answers[i] = Some(Ok(r));
    }
    for a in remote.join().unwrap_or_default() {
        answers[a.index] = Some(a.report);
        targets[a.index] = a.target;
        agents[a.index] = a.agents;
    }
    let mut config_addresses = plan.config_addresses.clone();
    if let Ok(resolved) = resolver.join() {
        for (node, ips) in resolved {
            config_addresses.entry(node).or_default().extend(ips);
        }
    }

    let nodes: Vec<NodeAnswer> = plan
        .nodes
        .iter()
        .zip(answers)
        .zip(targets)
        .zip(agents)
        .map(|(((n, a), target), heard)| {
            let host = match n.via {
                Via::InProcess => None,
                _ if transport == Transport::Nats => None,
                _ => n.host.clone(),
            };
            let report = a.unwrap_or_else(|| {
                Err(match n.via {
                    Via::NoAddress => Unreached::new(
                        UnreachedKind::NoAddress,
                        format!("[nodes.{}] has no host or advertise", n.name),
                    ),
                    _ => Unreached::new(UnreachedKind::Deadline, ""),
                })
            });
            let mut answer = NodeAnswer::received(n.name.clone(), host, report);
            answer.ssh = target;
            answer.agents = heard;
            answer
        })
        .collect();
    let vias: Vec<&'static str> = plan
        .nodes
        .iter()
        .map(|p| match transport {
            Transport::Ssh if matches!(p.via, Via::InProcess) => "in-process",
            t => t.as_str(),
        })
        .collect();
    let report = judge(
        &plan,
        Gathered {
            nodes,
            vias,
            config_addresses,
            transport,
            started_at,
            t0,
        },
    );
    if plan.settings.format == crate::cli::Format::Json {
        // Streamed: at hundreds of nodes the document is hundreds of MiB.
        crate::emit_with(&plan.settings, |w| render::json::write_cluster(&report, w))?;
        return Ok(report.exit_code as u8);
    }
    let style = crate::style(&plan.settings);
    let out = render::render_cluster(
        &report,
        plan.settings.format,
        &style,
        plan.config.node.as_deref(),
    );
    crate::emit(&plan.settings, &out)?;
    Ok(report.exit_code as u8)
}

/// One node's answer from another machine (ssh or its agent).
struct Remote {
    index: usize,
    report: Result<Received, Unreached>,
    target: Option<spx_checks::cluster::SshTarget>,
    agents: Vec<spx_checks::cluster::AgentIdentity>,
}

/// The nodes' answers, however they were gathered.
pub struct Gathered {
    /// One per planned node, in order.
    pub nodes: Vec<NodeAnswer>,
    /// How each node's report came (`in-process`, `ssh`, `nats`,
    /// `jetstream`).
    pub vias: Vec<&'static str>,
    pub config_addresses: std::collections::BTreeMap<String, Vec<std::net::IpAddr>>,
    pub transport: Transport,
    pub started_at: SystemTime,
    pub t0: Instant,
}

/// The cluster checks over the nodes' answers, and the cluster report:
/// the same judgement for `--cluster` and `watch`.
pub fn judge(plan: &Plan, g: Gathered) -> ClusterReport {
    let Gathered {
        nodes,
        vias,
        config_addresses,
        transport,
        started_at,
        t0,
    } = g;
    let cluster = ClusterFacts {
        nodes,
        config_nodes: plan.config_nodes.clone(),
        config_addresses,
        node_checks: plan.node_checks.iter().map(|s| s.to_string()).collect(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        ssh_user: plan.ssh_user.clone(),
        remote_bin: plan.remote_bin.clone(),
        ssh_config: plan.ssh_config.as_ref().map(|p| p.display().to_string()),
        sudo: plan.sudo,
        parallel: plan.parallel,
        transport,
    };

    // The matrix, made once: cluster.path-matrix's evidence and the
    // report's `path_matrix` are this one list. It is judged on a thread of
    // its own while the other checks are judged here: at 1,024 nodes it
    // takes as long as all of them.
    let is_matrix =
        |c: &&&dyn spx_checks::Check| c.id() == "cluster.path-matrix" && c.cluster().is_some();
    let (matrix_judged, others) = std::thread::scope(|s| {
        let matrix = plan.cluster_checks.iter().find(is_matrix).map(|_| {
            let cluster = &cluster;
            s.spawn(move || {
                let t = Instant::now();
                (cluster_path_matrix::judged(cluster), t.elapsed())
            })
        });
        let others: Vec<_> = plan
            .cluster_checks
            .iter()
            .filter(|c| !is_matrix(c))
            .map(|check| {
                let t = Instant::now();
                let f = match check.cluster() {
                    Some(judge) => judge(&cluster),
                    None => Finding::probe_failed(format!("{} is not a cluster check", check.id())),
                };
                (*check, runner::police(*check, f), t.elapsed())
            })
            .collect();
        let matrix = matrix.map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        (matrix, others)
    });
    // Back in the order of the checks.
    let (mut matrix_judged, mut others) = (matrix_judged, others.into_iter());
    let mut path_matrix: Option<Arc<Vec<cluster_path_matrix::Cell>>> = None;
    let mut findings = Vec::with_capacity(plan.cluster_checks.len());
    for check in &plan.cluster_checks {
        if !is_matrix(&check) {
            findings.extend(others.next());
        } else if let Some((judged, took)) = matrix_judged.take() {
            path_matrix = Some(judged.matrix);
            findings.push((*check, runner::police(*check, judged.finding), took));
        }
    }
    let path_matrix = match path_matrix {
        Some(m) if cluster.selected("mtu.path") => m,
        _ if cluster.selected("mtu.path") => Arc::new(cluster_path_matrix::matrix(&cluster)),
        _ => Arc::default(),
    };
    let runbook = plan.profile.map(|p| {
        let matrix = findings
            .iter()
            .find(|(c, _, _)| c.id() == "cluster.path-matrix")
            .map(|(_, f, _)| f);
        let routed = cluster
            .answered()
            .filter_map(|n| {
                let c = n.check("underlay.on-link")?;
                matches!(c.status, Status::Warn | Status::Fail)
                    .then(|| (n.name.clone(), c.summary.clone()))
            })
            .collect();
        let ipsec_not_ready = cluster
            .answered()
            .flat_map(|n| {
                ["ipsec.cert", "ipsec.daemon"]
                    .into_iter()
                    .filter_map(move |id| {
                        let c = n.check(id)?;
                        matches!(c.status, Status::Fail | Status::Error)
                            .then(|| (n.name.clone(), id.to_owned(), c.summary.clone()))
                    })
            })
            .collect();
        let ca_drift = findings
            .iter()
            .find(|(c, _, _)| c.id() == "cluster.config-drift")
            .and_then(|(_, f, _)| cluster_config_drift::ipsec_ca_drift(f));
        let opts = &plan.settings.options;
        let expectations = expect::Expectations::from_config(&plan.config);
        let rb = spx_checks::cluster::runbook::RunbookFacts {
            nodes: cluster.names().iter().map(|s| s.to_string()).collect(),
            target_mtu: opts
                .mtu
                .or(p.default_mtu)
                .unwrap_or(expectations.underlay_mtu),
            ipsec_enabled: Some(expectations.ipsec_enabled),
            underlay_mtu: expectations.underlay_mtu,
            nb: opts
                .nb_db
                .as_deref()
                .map(endpoint::join)
                .or_else(|| {
                    Some(endpoint::join(&plan.config.nb_endpoints())).filter(|s| !s.is_empty())
                })
                .unwrap_or_else(|| "<ovn_nb_addr from spinifex.toml>".to_owned()),
            path_matrix: matrix,
            routed,
            ipsec_not_ready,
            ca_drift,
        };
        spx_checks::cluster::runbook::runbook(p.preflight, &rb)
            .iter()
            .map(|s| as_invoked(s))
            .collect::<Vec<_>>()
    });

    let mut checks: Vec<CheckReport> = findings
        .into_iter()
        .map(|(check, finding, duration)| {
            let mut report = check_report(Outcome {
                check,
                finding,
                duration,
                timed_out: false,
            });
            if report.id == "cluster.path-matrix" && report.evidence.map.contains_key("matrix") {
                report.evidence.matrix = Some(Arc::clone(&path_matrix));
            }
            report
        })
        .collect();
    // The same levels as every node's report (the flags are forwarded,
    // the config is the same file).
    let notes = levels::apply(&mut checks, &plan.settings.levels).notes;
    let entries: Vec<NodeEntry> = cluster
        .nodes
        .iter()
        .zip(vias)
        .map(|(n, via)| NodeEntry::of(n, via))
        .collect();
    let mut summary = ClusterSummary {
        nodes: entries.len(),
        unreachable: entries.iter().filter(|e| e.report.is_none()).count(),
        ..ClusterSummary::default()
    };
    for e in &entries {
        for (_, status) in &e.statuses {
            summary.count(*status);
        }
    }
    for c in &checks {
        summary.count(c.status);
    }
    let node_codes: Vec<Option<i32>> = entries.iter().map(NodeEntry::exit_code).collect();
    let exit_code = cluster_exit_code(&node_codes, &checks, plan.settings.strict);
    ClusterReport {
        schema_version: SCHEMA_VERSION,
        kind: "cluster",
        tool: Tool {
            name: spx_checks::spinifex::BINARY,
            version: env!("CARGO_PKG_VERSION"),
        },
        profile: spx_checks::profile::RunProfile(plan.profile.map(|p| p.preflight)),
        started_at: humantime::format_rfc3339_millis(started_at).to_string(),
        duration_ms: t0.elapsed().as_millis() as u64,
        exit_code,
        summary,
        ovn_read_by: (transport != Transport::Jetstream).then(|| plan.reader.clone()),
        via: transport.as_str(),
        nodes: entries,
        checks,
        path_matrix,
        runbook,
        notes,
    }
}
