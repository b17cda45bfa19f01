//! `spx-doctor path FROM TO`: the question, asked. This node reads OVN's
//! NB and SB once and resolves both ends; each end's node reads its own
//! side ([`spx_checks::path::gather`]): this node in-process, the others
//! over the cluster transport (`--via nats|ssh`, the same default as
//! `--cluster`); then the library judges both directions and this module
//! prints the verdict. `path-facts` is the ssh side of it.
//!
//! A run is recorded like a node run: every read of this node (the
//! recorder around the live host) and every other node's answer (in the
//! bundle's header), so `path --replay FILE` judges it again touching
//! nothing.

pub mod args;
pub mod nats;
mod remote;
mod ssh;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde::{Deserialize, Serialize};
use spx_checks::config::Config;
use spx_checks::expect::Family;
use spx_checks::facts::ovsdb::topology::{NbTopology, SbTopology};
use spx_checks::host::{Bundle, Header, Host, Recorder, Replay};
use spx_checks::live::LiveHost;
use spx_checks::path::endpoint::{is_vpc_id, EndpointArg};
use spx_checks::path::gather::node_facts;
use spx_checks::path::judge::{End, PathFacts, Place, SizeSource};
use spx_checks::path::node::{GuestRef, NodeFacts, NodeQuery, Size};
use spx_checks::path::report::{PathVerdict, Question};
use spx_checks::path::resolve::{self, GuestPort, Lookup, Unresolved};
use spx_checks::read::ovsdb_topology;
use spx_checks::targets::ovsdb_endpoints;
use spx_checks::{endpoint, ConfigState, Ctx};

use crate::cli::RunArgs;
use crate::cluster::args::ViaFlag;
use crate::render;
use crate::settings::{Settings, UsageError};
use args::{PathArgs, PathFactsArgs, PathFormat, SizeKind};
use remote::{Remote, Via};

/// The scope a path run's reads are recorded under.
pub const SCOPE: &str = "path";
/// The document's schema version.
pub const SCHEMA_VERSION: u32 = 1;

/// What was asked, as a bundle keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asked {
    pub from: String,
    pub to: String,
    pub size: Option<u32>,
    pub vpc: Option<String>,
}

/// What a bundle of a path run holds beside the reads.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Recorded {
    asked: Asked,
    answers: Vec<remote::Answer>,
}

/// The document `--format json` prints (schema/path-v1.schema.json).
#[derive(Serialize)]
struct Document<'a> {
    schema_version: u32,
    kind: &'static str,
    tool: crate::report::Tool,
    started_at: String,
    duration_ms: u64,
    exit_code: i32,
    #[serde(flatten)]
    verdict: &'a PathVerdict,
    #[serde(skip_serializing_if = "Option::is_none")]
    replayed_from: Option<String>,
}

/// The flags a node run takes from `path`, so that the config, the
/// endpoints and the durations are found and checked exactly as a run
/// does.
fn run_args(a: &PathArgs) -> RunArgs {
    RunArgs {
        config: a.config.clone(),
        timeout: a.timeout.clone(),
        sample: "1ms".into(),
        probe_timeout: a.probe_timeout.clone(),
        ovs_db: a.ovs_db.clone(),
        nb_db: a.nb_db.clone(),
        sb_db: a.sb_db.clone(),
        term: a.term,
        ..RunArgs::default()
    }
}

pub fn run(args: PathArgs) -> anyhow::Result<u8> {
    crate::runner::install_panic_hook();
    if args.replay.is_some() {
        return replay(args);
    }
    let started_at = SystemTime::now();
    let t0 = Instant::now();
    let settings = Settings::from_args(run_args(&args))?;
    let asked = Asked {
        from: args.from.clone().unwrap_or_default(),
        to: args.to.clone().unwrap_or_default(),
        size: args.size,
        vpc: args.vpc.clone(),
    };
    if let Some(v) = &asked.vpc {
        if !is_vpc_id(v) {
            return Err(UsageError(format!(
                "--vpc {}: not a VPC id (vpc- and 1 to 32 lower-case hex digits)",
                spx_checks::validate::shown(v)
            ))
            .into());
        }
    }
    let config = match &settings.config {
        ConfigState::Loaded { config, .. } => Some((**config).clone()),
        _ => None,
    };
    let nodes = node_names(config.as_ref());
    for word in [&asked.from, &asked.to] {
        EndpointArg::parse(word, &nodes).map_err(UsageError)?;
    }
    let recorder = args
        .record
        .as_ref()
        .map(|_| Arc::new(Recorder::new(LiveHost::new())));
    let host: Arc<dyn Host> = match &recorder {
        Some(r) => Arc::clone(r) as Arc<dyn Host>,
        None => Arc::new(LiveHost::new()),
    };
    let ctx = Ctx::with_host(settings.config.clone(), settings.options.clone(), host)
        .deadline_from(settings.started)
        .for_check(SCOPE);
    let via = choose_via(&args, &settings)?;
    let remote = Remote::Live {
        via,
        config: Box::new(config.clone().unwrap_or_else(empty_config)),
        kept: args.record.as_ref().map(|_| Default::default()),
    };
    let verdict = ask(&ctx, &asked, &remote);
    let duration_ms = t0.elapsed().as_millis() as u64;
    let started = humantime::format_rfc3339_millis(started_at).to_string();
    if let (Some(path), Some(recorder)) = (&args.record, &recorder) {
        let mut header = Header::new(
            started.clone(),
            duration_ms,
            settings.options.clone(),
            settings.config.clone(),
            Vec::new(),
        );
        header.path = Some(
            serde_json::to_value(Recorded {
                asked: asked.clone(),
                answers: remote.kept(),
            })
            .expect("a path record serializes"),
        );
        let bundle = recorder.bundle(header);
        render::write_atomically(path, &bundle.to_bytes())
            .map_err(|e| UsageError(format!("--record {}: {e}", path.display())))?;
    }
    emit(&args, &verdict, started, duration_ms, None)
}

/// `path --replay FILE`: the recorded question, judged again from the
/// bundle's reads and the nodes' recorded answers.
fn replay(args: PathArgs) -> anyhow::Result<u8> {
    let path = args.replay.clone().expect("called for --replay");
    let bundle =
        Bundle::read(&path).map_err(|e| UsageError(format!("--replay {}: {e}", path.display())))?;
    let recorded: Recorded = bundle
        .header
        .path
        .clone()
        .and_then(|v| serde_json::from_value(v).ok())
        .ok_or_else(|| {
            UsageError(format!(
                "--replay {}: not a bundle of `path` (replay a node run's bundle with `spx-doctor --replay`)",
                path.display()
            ))
        })?;
    let host = Arc::new(Replay::new(&bundle, |id| id == SCOPE));
    let ctx = Ctx::with_host(
        bundle.header.config.clone(),
        bundle.header.options.clone(),
        host,
    )
    .for_check(SCOPE);
    let remote = Remote::Replay(recorded.answers);
    let verdict = ask(&ctx, &recorded.asked, &remote);
    emit(
        &args,
        &verdict,
        bundle.header.started_at.clone(),
        bundle.header.duration_ms,
        Some(path.display().to_string()),
    )
}

fn emit(
    args: &PathArgs,
    verdict: &PathVerdict,
    started_at: String,
    duration_ms: u64,
    replayed_from: Option<String>,
) -> anyhow::Result<u8> {
    let exit_code = verdict.exit_code();
    let out = match args.format {
        PathFormat::Json => {
            let doc = Document {
                schema_version: SCHEMA_VERSION,
                kind: "path",
                tool: crate::report::Tool {
                    name: spx_checks::spinifex::BINARY,
                    version: env!("CARGO_PKG_VERSION"),
                },
                started_at,
                duration_ms,
                exit_code,
                verdict,
                replayed_from,
            };
            let mut s = serde_json::to_string_pretty(&doc).expect("a path document serializes");
            s.push('\n');
            s
        }
        PathFormat::Table => {
            let style = render::Style {
                verbose: false,
                strict: false,
                term: crate::render::term::Term::detect(
                    args.term,
                    crate::render::term::Term::stdout_is_terminal(),
                ),
            };
            render::path::table(verdict, &style, replayed_from.as_deref())
        }
    };
    render::to_stdout(&out)?;
    Ok(exit_code as u8)
}

/// The transport to the other nodes, by `--via` or the default rule of
/// `--cluster` (NATS when the config has this node's `[nodes.NODE.nats]`).
fn choose_via(args: &PathArgs, settings: &Settings) -> Result<Via, UsageError> {
    let ConfigState::Loaded { path, config } = &settings.config else {
        return Ok(Via::Unavailable(
            "no config was read, so the other nodes are not known".into(),
        ));
    };
    let me = config.node.as_deref();
    let section = match me {
        Some(me) => {
            crate::bus::NatsConfig::read(path, me).map_err(|e| UsageError(format!("path: {e}")))?
        }
        None => None,
    };
    let via = args.via.unwrap_or(if section.is_some() {
        ViaFlag::Nats
    } else {
        ViaFlag::Ssh
    });
    match via {
        ViaFlag::Ssh => Ok(Via::Ssh(ssh::SshPlan::new(
            path,
            args.ssh_config.clone(),
            args.ssh_user.clone(),
            args.remote_bin.clone(),
            settings.options.probe_timeout,
        )?)),
        ViaFlag::Nats => match (me, section) {
            (Some(_), Some(section)) => {
                for (flag, given) in [
                    ("--ssh-config", args.ssh_config.is_some()),
                    ("--ssh-user", args.ssh_user.is_some()),
                    ("--remote-bin", args.remote_bin.is_some()),
                ] {
                    if given {
                        return Err(UsageError(format!(
                            "{flag}: the other nodes are asked over NATS; run with --via ssh to pass {flag}"
                        )));
                    }
                }
                Ok(Via::Nats(Box::new(section)))
            }
            (None, _) => Err(UsageError(format!(
                "--via nats: {} names no `node`, so there is no [nodes.NODE.nats] to reach NATS by (use --via ssh)",
                path.display()
            ))),
            (Some(me), None) => Err(UsageError(format!(
                "--via nats: {} has no [nodes.{me}.nats] (host, cacert, acl.token) to reach NATS by (use --via ssh)",
                path.display()
            ))),
        },
    }
}

fn empty_config() -> Config {
    spx_checks::config::parse("", std::path::Path::new("(none)")).expect("an empty config parses")
}

fn node_names(config: Option<&Config>) -> Vec<String> {
    config
        .map(|c| c.nodes.keys().cloned().collect())
        .unwrap_or_default()
}

/// The question asked of `ctx` (this node: live, recording, or a replay)
/// and the other nodes (`remote`): the verdict, or the lookup that failed.
pub fn ask(ctx: &Ctx, asked: &Asked, remote: &Remote) -> PathVerdict {
    let question = Question {
        from: asked.from.clone(),
        to: asked.to.clone(),
        size: asked.size,
        size_source: asked.size.map(|_| SizeSource::Flag),
        vpc: asked.vpc.clone(),
    };
    match walk(ctx, asked, remote) {
        Ok(facts) => PathVerdict::of(&facts, asked.vpc.clone()),
        Err((Unresolved(lookup), ends)) => PathVerdict::unresolved(question, lookup, ends),
    }
}

type Failed = (Unresolved, Vec<End>);

fn fail(text: impl Into<String>) -> Failed {
    (Unresolved(text.into()), Vec::new())
}

/// The OVN rows, both ends resolved and their facts gathered.
fn walk(ctx: &Ctx, asked: &Asked, remote: &Remote) -> Result<PathFacts, Failed> {
    let config = ctx.config().ok().cloned();
    let nodes = node_names(config.as_ref());
    let me = config.as_ref().and_then(|c| c.node.clone());
    let from = EndpointArg::parse(&asked.from, &nodes).map_err(fail)?;
    let to = EndpointArg::parse(&asked.to, &nodes).map_err(fail)?;
    let deadline = ctx.deadline();

    let (sb_list, _) = ovsdb_endpoints::sb(ctx).map_err(|f| fail(format!("SB: {}", f.summary)))?;
    let budget = ovsdb_endpoints::budget(ctx);
    let needs_nb = !(from.is_node() && to.is_node());
    let nb_list = needs_nb.then(|| ovsdb_endpoints::nb(ctx).map_err(|f| f.summary));
    // NB and SB at once; an instance is looked for on the other nodes,
    // so their connections open meanwhile. The failures are named in the
    // same order as ever: SB's first.
    let (sb, nb) = std::thread::scope(|s| {
        if matches!(from, EndpointArg::Instance(_)) || matches!(to, EndpointArg::Instance(_)) {
            let others: Vec<String> = nodes
                .iter()
                .filter(|n| Some(n.as_str()) != me.as_deref())
                .cloned()
                .collect();
            s.spawn(move || remote.connect(&others, deadline));
        }
        let nb = match &nb_list {
            Some(Ok((list, _))) => {
                Some(s.spawn(move || ovsdb_topology::nb_topology(ctx.host(), list, budget)))
            }
            _ => None,
        };
        let sb = ovsdb_topology::sb_topology(ctx.host(), &sb_list, budget);
        (sb, nb.map(|h| h.join()))
    });
    let sb = sb.map_err(|e| {
        fail(format!(
            "SB at {} could not be read: {e}",
            endpoint::join(&sb_list)
        ))
    })?;
    let (nb, nb_list) = match nb_list {
        Some(list) => {
            let (nb_list, _) = list.map_err(|summary| fail(format!("NB: {summary}")))?;
            let nb = nb
                .expect("read when its endpoints are known")
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
                .map_err(|e| {
                    fail(format!(
                        "NB at {} could not be read: {e}",
                        endpoint::join(&nb_list)
                    ))
                })?;
            (Some(nb), nb_list)
        }
        None => (None, Vec::new()),
    };
    let at = Lookup {
        nb_at: nb
            .as_ref()
            .map(|a| a.endpoint.to_string())
            .unwrap_or_default(),
        sb_at: sb.endpoint.to_string(),
    };
    let empty = NbTopology::default();
    let nbt = nb.as_ref().map(|a| &a.value).unwrap_or(&empty);
    let sbt = &sb.value;

    // Each end to a place; an instance is found on the node that runs it.
    let place = |arg: &EndpointArg,
                 other: &EndpointArg|
     -> Result<(Place, Option<NodeFacts>), Failed> {
        match arg {
            EndpointArg::Eni(eni) => {
                let port = resolve::port_by_eni(nbt, eni, &at).map_err(|u| (u, Vec::new()))?;
                let g = resolve::guest(nbt, sbt, port, &nodes, &at).map_err(|u| (u, Vec::new()))?;
                Ok((Place::Guest(Box::new(g)), None))
            }
            EndpointArg::Ip(ip) => {
                let port = resolve::port_by_ip(nbt, *ip, asked.vpc.as_deref(), &at)
                    .map_err(|u| (u, Vec::new()))?;
                let g = resolve::guest(nbt, sbt, port, &nodes, &at).map_err(|u| (u, Vec::new()))?;
                Ok((Place::Guest(Box::new(g)), None))
            }
            EndpointArg::Node(n) => {
                let p = resolve::node_place(sbt, n, &at).map_err(|u| (u, Vec::new()))?;
                Ok((Place::Node(p), None))
            }
            EndpointArg::Instance(id) => {
                let (node, facts) = locate(ctx, remote, id, &nodes, me.as_deref(), deadline)?;
                let g = instance_port(nbt, sbt, &facts, id, &node, other, asked, &nodes, &at)?;
                Ok((Place::Guest(Box::new(g)), Some(facts)))
            }
        }
    };
    // Both ends at once (an instance at each may be looked for on every
    // node); a failure is named for FROM first, as ever.
    let (a, b) = std::thread::scope(|s| {
        let b = s.spawn(|| place(&to, &from));
        let a = place(&from, &to);
        (a, b.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
    });
    let (mut place_a, first_a) = a?;
    let (mut place_b, _) = b?;
    // A node at either end makes it the underlay between the two nodes
    // alone: a guest at the other end stands for its node.
    let underlay_only = from.is_node() || to.is_node();
    if underlay_only {
        for p in [&mut place_a, &mut place_b] {
            if let Place::Guest(g) = p {
                let bound = g.bound.clone();
                *p = Place::Node(resolve::NodePlace {
                    node: bound.node.clone().unwrap_or_else(|| bound.chassis.clone()),
                    bound,
                });
            }
        }
    }
    let routing = match (place_a.guest(), place_b.guest()) {
        (Some(a), Some(b)) => Some(resolve::routing(nbt, a, b, &at).map_err(|u| (u, Vec::new()))?),
        _ => None,
    };

    // N: the flag, else what the source guest was offered, else (between
    // nodes) underlay_mtu.
    let underlay_mtu = ctx.expectations().ok().map(|e| e.underlay_mtu);
    let (size, size_source) = match (asked.size, &place_a) {
        (Some(n), _) => (n, SizeSource::Flag),
        (None, _) if underlay_only => (
            underlay_mtu.unwrap_or(spx_checks::expect::DEFAULT_UNDERLAY_MTU),
            SizeSource::UnderlayMtu,
        ),
        (None, Place::Guest(g)) => match g.offered_mtu() {
            Some((m, _)) => (m, SizeSource::Offered),
            None => {
                let host_mtu = first_a
                    .as_ref()
                    .and_then(|f| f.guest.as_ref()?.as_ref().ok())
                    .and_then(|g| g.nics.first()?.nic.host_mtu);
                (host_mtu.unwrap_or(1500), SizeSource::Offered)
            }
        },
        (None, Place::Node(_)) => (1500, SizeSource::UnderlayMtu),
    };
    let size_q = if underlay_only {
        Size::Underlay(size)
    } else {
        Size::Guest(size)
    };

    // Each end's side, both at once.
    let query = |own: &Place, arg: &EndpointArg, other: &Place| -> NodeQuery {
        let guest = match (own.guest(), arg) {
            (Some(g), _) => match &g.eni {
                Some(eni) => Some(GuestRef::Eni(eni.clone())),
                None => match arg {
                    EndpointArg::Instance(i) => Some(GuestRef::Instance(i.clone())),
                    _ => None,
                },
            },
            (None, _) => None,
        };
        let same = own.bound().chassis == other.bound().chassis;
        NodeQuery {
            guest,
            peer: if same { None } else { other.bound().encap },
            size: size_q,
        }
    };
    let qa = query(&place_a, &from, &place_b);
    let qb = query(&place_b, &to, &place_a);
    let (na, nb_) = (place_a.bound().node.clone(), place_b.bound().node.clone());
    let me_ref = me.as_ref();
    let (ra, rb) = std::thread::scope(|s| {
        let side = |node: Option<String>, q: NodeQuery, chassis: String| {
            move || -> (String, Result<NodeFacts, String>) {
                match node {
                    None => (
                        "none".into(),
                        Err(format!(
                            "chassis {chassis} is no node of the config ([nodes.*] by name or hostname), so its side was not read"
                        )),
                    ),
                    Some(n) if Some(&n) == me_ref => ("in-process".into(), Ok(node_facts(ctx, &q))),
                    Some(n) => remote.ask(&n, &q, deadline),
                }
            }
        };
        let a = s.spawn(side(
            na.clone(),
            qa.clone(),
            place_a.bound().chassis.clone(),
        ));
        let b = s.spawn(side(
            nb_.clone(),
            qb.clone(),
            place_b.bound().chassis.clone(),
        ));
        (
            a.join()
                .unwrap_or_else(|_| ("none".into(), Err("gathering panicked".into()))),
            b.join()
                .unwrap_or_else(|_| ("none".into(), Err("gathering panicked".into()))),
        )
    });
    let family = place_b.bound().encap.map(Family::of).unwrap_or_default();
    let expected = ctx
        .expectations()
        .ok()
        .map(|e| e.for_underlay(family).guest_mtu);
    Ok(PathFacts {
        from: End {
            label: asked.from.clone(),
            place: place_a,
            facts: ra.1,
            via: ra.0,
        },
        to: End {
            label: asked.to.clone(),
            place: place_b,
            facts: rb.1,
            via: rb.0,
        },
        routing,
        size,
        size_source,
        expected_guest_mtu: expected,
        underlay_mtu,
        nb_endpoints: endpoint::join(&nb_list),
        config_file: ctx.config_file(),
    })
}

/// The node whose QEMU runs instance `id`: this node first, then every
/// other node of the config at once.
fn locate(
    ctx: &Ctx,
    remote: &Remote,
    id: &str,
    nodes: &[String],
    me: Option<&str>,
    deadline: Instant,
) -> Result<(String, NodeFacts), Failed> {
    let q = NodeQuery {
        guest: Some(GuestRef::Instance(id.to_owned())),
        peer: None,
        size: Size::Guest(spx_checks::path::node::MIN_SIZE),
    };
    let mut why: Vec<String> = Vec::new();
    if let Some(me) = me {
        let facts = node_facts(ctx, &q);
        match &facts.guest {
            Some(Ok(_)) => return Ok((me.to_owned(), facts)),
            Some(Err(e)) => why.push(format!("{me}: {e}")),
            None => {}
        }
    }
    let others: Vec<&String> = nodes.iter().filter(|n| Some(n.as_str()) != me).collect();
    let answers: Vec<(String, Result<NodeFacts, String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = others
            .iter()
            .map(|n| {
                let q = q.clone();
                s.spawn(move || ((*n).clone(), remote.ask(n, &q, deadline).1))
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    for (node, answer) in answers {
        match answer {
            Ok(facts) => match &facts.guest {
                Some(Ok(_)) => return Ok((node, facts)),
                Some(Err(e)) => why.push(format!("{node}: {e}")),
                None => why.push(format!("{node}: answered nothing about the guest")),
            },
            Err(e) => why.push(format!("{node}: {e}")),
        }
    }
    Err(fail(format!(
        "no node runs instance {id} (instance ids are not in OVN: each node's QEMU processes were asked){}",
        if why.is_empty() {
            " and there is no node to ask".to_owned()
        } else {
            format!(": {}", why.join("; "))
        }
    )))
}

/// The logical switch port of an instance's NIC: by each tap's OVS
/// `iface-id`, else its MAC in NB; with several VPC NICs, the one in the
/// other end's VPC (or `--vpc`).
#[allow(clippy::too_many_arguments)]
fn instance_port(
    nb: &NbTopology,
    sb: &SbTopology,
    facts: &NodeFacts,
    id: &str,
    node: &str,
    other: &EndpointArg,
    asked: &Asked,
    nodes: &[String],
    at: &Lookup,
) -> Result<GuestPort, Failed> {
    let Some(Ok(guest)) = &facts.guest else {
        return Err(fail(format!("{node} answered nothing about {id}'s QEMU")));
    };
    let mut ports: Vec<GuestPort> = Vec::new();
    let mut why: Vec<String> = Vec::new();
    for nic in &guest.nics {
        let by_iface = nic
            .iface
            .as_ref()
            .and_then(|i| i.iface_id.as_deref())
            .and_then(|name| nb.ports.iter().find(|p| p.name == name));
        let by_mac = nic.nic.mac.as_deref().and_then(|mac| {
            let mac = mac.to_ascii_lowercase();
            nb.ports
                .iter()
                .find(|p| p.kind.is_empty() && p.macs_and_ips().0.contains(&mac))
        });
        match by_iface.or(by_mac) {
            Some(p) => match resolve::guest(nb, sb, p, nodes, at) {
                Ok(g) => ports.push(g),
                Err(u) => why.push(u.0),
            },
            None => why.push(format!(
                "tap {} of {id} has no OVS iface-id and its MAC {} is on no Logical_Switch_Port in NB at {}",
                nic.nic.tap,
                nic.nic.mac.as_deref().unwrap_or("(none)"),
                at.nb_at
            )),
        }
    }
    let other_vpc: Option<String> = asked.vpc.clone().or_else(|| match other {
        EndpointArg::Eni(e) => resolve::port_by_eni(nb, e, at)
            .ok()
            .and_then(|p| p.vpc.clone()),
        EndpointArg::Ip(ip) => resolve::port_by_ip(nb, *ip, asked.vpc.as_deref(), at)
            .ok()
            .and_then(|p| p.vpc.clone()),
        _ => None,
    });
    if ports.len() > 1 {
        if let Some(v) = &other_vpc {
            ports.retain(|p| p.vpc.as_deref() == Some(v.as_str()));
        }
    }
    match ports.len() {
        1 => Ok(ports.remove(0)),
        0 => Err(fail(format!(
            "instance {id} on {node} has no VPC NIC on a bound Logical_Switch_Port: {}",
            if why.is_empty() {
                "its QEMU has no tap NIC".to_owned()
            } else {
                why.join("; ")
            }
        ))),
        _ => Err(fail(format!(
            "instance {id} has {} VPC NICs ({}); name the ENI instead of the instance",
            ports.len(),
            ports
                .iter()
                .map(|p| p.eni.clone().unwrap_or_else(|| p.lsp.clone()))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// `spx-doctor path-facts`: this node's side, as JSON, for a `path` on
/// another node (over ssh).
pub fn facts(args: PathFactsArgs) -> anyhow::Result<u8> {
    crate::runner::install_panic_hook();
    let settings = Settings::from_args(RunArgs {
        config: args.config.clone(),
        timeout: args.timeout.clone(),
        sample: "1ms".into(),
        probe_timeout: args.probe_timeout.clone(),
        ovs_db: args.ovs_db.clone(),
        ..RunArgs::default()
    })?;
    let guest = match (&args.instance, &args.eni) {
        (Some(i), _) => {
            if !spx_checks::facts::qemu::instance::is_instance_id(i) {
                return Err(UsageError(format!(
                    "--instance {}: not an instance id",
                    spx_checks::validate::shown(i)
                ))
                .into());
            }
            Some(GuestRef::Instance(i.clone()))
        }
        (None, Some(e)) => {
            if !spx_checks::path::endpoint::is_eni_id(e) {
                return Err(UsageError(format!(
                    "--eni {}: not an ENI id",
                    spx_checks::validate::shown(e)
                ))
                .into());
            }
            Some(GuestRef::Eni(e.clone()))
        }
        (None, None) => None,
    };
    let peer = args
        .peer
        .as_deref()
        .map(|p| {
            p.parse::<IpAddr>().map_err(|_| {
                UsageError(format!(
                    "--peer {}: not an IP address",
                    spx_checks::validate::shown(p)
                ))
            })
        })
        .transpose()?;
    let q = NodeQuery {
        guest,
        peer,
        size: match args.size_kind {
            SizeKind::Guest => Size::Guest(args.size),
            SizeKind::Underlay => Size::Underlay(args.size),
        },
    };
    let ctx = Ctx::with_host(
        settings.config.clone(),
        settings.options.clone(),
        Arc::new(LiveHost::new()),
    )
    .deadline_from(settings.started)
    .for_check(SCOPE);
    let facts = node_facts(&ctx, &q);
    let mut out = serde_json::to_string(&facts).expect("node facts serialize");
    out.push('\n');
    render::to_stdout(&out)?;
    Ok(0)
}
