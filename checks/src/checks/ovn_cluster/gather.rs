//! Where `ovn.cluster`'s facts come from: which NB and SB members to ask
//! (the flags, else the config; none when another node reads OVN in a
//! cluster run), and the reads, over the host seam. Every member is asked
//! for its `_Server` row at both ends of the shared sample window, all at
//! once; the SB chassis (from the leader the first reading found) and this
//! node's Open_vSwitch identity are read inside the window, beside the
//! wait, so the check costs the run no time of its own.

use std::cell::Cell;
use std::net::{IpAddr, SocketAddr};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::ctx::Ctx;
use crate::endpoint::Endpoint;
use crate::facts::ovsdb::Budget;
use crate::finding::Finding;
use crate::host::HostRef;
use crate::read::ovsdb_raft as raft_read;
use crate::targets::ovsdb_endpoints as endpoints;

use super::facts::{Db, DbFacts, DbSide, Member, MemberRead, MemberRef, OvnFacts, Read};

/// One reading of every member, with the host clock around it.
struct Reading {
    begun: Duration,
    ended: Duration,
    /// Per list, per member, in list order.
    answers: Vec<Vec<MemberRead>>,
}

/// The facts of this run, or the finding that ends the check before any
/// read (no config, a bad `--ovs-db`).
pub fn gather(ctx: &Ctx) -> Result<OvnFacts, Finding> {
    let config = ctx.config()?;
    let (ovs, _) = endpoints::ovs(ctx)?;
    let budget = endpoints::budget(ctx);
    let nb = side(ctx, config, Db::Nb);
    let sb = side(ctx, config, Db::Sb);
    let lists: Vec<(Db, Vec<MemberRef>)> = [(Db::Nb, &nb), (Db::Sb, &sb)]
        .into_iter()
        .filter_map(|(db, s)| Some((db, s.as_ref().ok()?.clone())))
        .collect();
    let mut facts = OvnFacts {
        node: config.node.clone(),
        nodes: config.nodes.keys().cloned().collect(),
        nb: DbSide::Unnamed(String::new()),
        sb: DbSide::Unnamed(String::new()),
        lag_bound: None,
        chassis: Read::NotAsked,
        local: Read::NotAsked,
    };
    if lists.is_empty() {
        facts.local = Read::of(raft_read::local_chassis(ctx.host(), &ovs, budget));
        facts.nb = nb.err().unwrap_or_else(|| DbSide::Unnamed(String::new()));
        facts.sb = sb.err().unwrap_or_else(|| DbSide::Unnamed(String::new()));
        return Ok(facts);
    }

    // The first reading gets at most a third of the window, so that a
    // member that hangs leaves the lag two thirds of it to be measured
    // over (the second reading gives each member the whole probe timeout).
    let third = ctx.opts.sample / 3;
    let first_budget = Budget::within(
        budget.per_member.min(third),
        budget.deadline.min(Instant::now() + third),
    );
    let first = Cell::new(true);
    let sb_leader_first: OnceLock<Vec<Endpoint>> = OnceLock::new();
    let sampled = ctx.across_window(
        |host| {
            let b = if first.replace(false) {
                first_budget
            } else {
                budget
            };
            let reading = read_members(host, &lists, b);
            if let Some(i) = lists.iter().position(|(db, _)| *db == Db::Sb) {
                let _ = sb_leader_first.set(leader_first(&lists[i].1, &reading.answers[i]));
            }
            Ok(reading)
        },
        || {
            let local = raft_read::local_chassis(ctx.host(), &ovs, budget);
            let chassis = sb_leader_first
                .get()
                .map(|list| raft_read::sb_chassis(ctx.host(), list, budget));
            (local, chassis)
        },
    );
    let sampled = sampled.map_err(Finding::from)?;
    let (start, end) = (sampled.start, sampled.end);
    let (local, chassis) = sampled.during;
    facts.lag_bound = Some(end.begun.saturating_sub(start.ended));
    facts.local = Read::of(local);
    facts.chassis = chassis.map_or(Read::NotAsked, Read::of);
    let mut start_answers = start.answers.into_iter();
    let mut end_answers = end.answers.into_iter();
    for (db, members) in &lists {
        let (s, e) = (
            start_answers.next().unwrap_or_default(),
            end_answers.next().unwrap_or_default(),
        );
        let read = DbSide::Read(DbFacts {
            db: *db,
            members: members
                .iter()
                .zip(s.into_iter().zip(e))
                .map(|(who, (start, end))| Member {
                    who: who.clone(),
                    start,
                    end,
                })
                .collect(),
        });
        match db {
            Db::Nb => facts.nb = read,
            Db::Sb => facts.sb = read,
        }
    }
    if let Err(s) = nb {
        facts.nb = s;
    }
    if let Err(s) = sb {
        facts.sb = s;
    }
    Ok(facts)
}

/// The members of `db` this node asks, or why it asks none.
fn side(ctx: &Ctx, config: &Config, db: Db) -> Result<Vec<MemberRef>, DbSide> {
    if let Some(node) = &ctx.opts.ovn_read_by {
        return Err(DbSide::Elsewhere(node.clone()));
    }
    let (flagged, configured) = match db {
        Db::Nb => (&ctx.opts.nb_db, config.nb_endpoints()),
        Db::Sb => (&ctx.opts.sb_db, config.sb_endpoints()),
    };
    let list = flagged.clone().unwrap_or(configured);
    if list.is_empty() {
        let (key, flag) = db.named_by();
        return Err(DbSide::Unnamed(format!(
            "the config has no [nodes.*.vpcd] {key} (pass {flag})"
        )));
    }
    Ok(list
        .into_iter()
        .map(|endpoint| MemberRef {
            node: node_at(config, &endpoint),
            endpoint,
        })
        .collect())
}

/// The config node whose `host` or `advertise` is the endpoint's host.
fn node_at(config: &Config, endpoint: &Endpoint) -> Option<String> {
    let Endpoint::Tcp { host, .. } = endpoint else {
        return None;
    };
    let bare = |h: &str| -> String {
        h.parse::<SocketAddr>()
            .map(|s| s.ip().to_string())
            .or_else(|_| h.parse::<IpAddr>().map(|ip| ip.to_string()))
            .unwrap_or_else(|_| h.rsplit_once(':').map_or(h, |(name, _)| name).to_owned())
    };
    let wanted = bare(host);
    let mut owners = config.nodes.iter().filter(|(_, n)| {
        [&n.host, &n.advertise]
            .into_iter()
            .flatten()
            .any(|h| bare(h) == wanted)
    });
    match (owners.next(), owners.next()) {
        (Some((name, _)), None) => Some(name.clone()),
        _ => None,
    }
}

/// Every member of every list asked at once, each within `budget`.
fn read_members(host: HostRef<'_>, lists: &[(Db, Vec<MemberRef>)], budget: Budget) -> Reading {
    let begun = host.clock();
    let answers = std::thread::scope(|s| {
        let asked: Vec<Vec<_>> = lists
            .iter()
            .map(|(db, members)| {
                members
                    .iter()
                    .map(|m| {
                        let db = *db;
                        s.spawn(move || {
                            MemberRead::of(
                                db,
                                raft_read::server_databases(host, &m.endpoint, budget),
                            )
                        })
                    })
                    .collect()
            })
            .collect();
        asked
            .into_iter()
            .map(|list| {
                list.into_iter()
                    .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect()
            })
            .collect()
    });
    let ended = host.clock();
    Reading {
        begun,
        ended,
        answers,
    }
}

/// The list with its leader first (a follower may be behind), the rest in
/// list order.
fn leader_first(members: &[MemberRef], answers: &[MemberRead]) -> Vec<Endpoint> {
    let leads = |i: usize| {
        answers
            .get(i)
            .and_then(MemberRead::row)
            .is_some_and(|r| r.leader && r.connected)
    };
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_by_key(|i| !leads(*i));
    order
        .into_iter()
        .map(|i| members[i].endpoint.clone())
        .collect()
}
