//! Which OVSDB servers a run talks to: `--nb-db`/`--sb-db`/`--ovs-db` when
//! given, else the config's raft lists (`ovn_nb_addr`, `ovn_sb_addr`), else
//! (for the local Open_vSwitch database only) the standard socket.

use std::time::Duration;

use crate::ctx::Ctx;
use crate::endpoint::Endpoint;
use crate::finding::{Finding, SkipReason};

use crate::facts::ovsdb::{Budget, DEFAULT_OVS_ENDPOINT};

/// Stop this long before the run's deadline, so that the check reports
/// which member failed how, rather than the runner a bare time-out.
pub const DEADLINE_MARGIN: Duration = Duration::from_millis(100);

/// Each member gets `--probe-timeout`; everything ends just before the
/// run's deadline.
pub fn budget(ctx: &Ctx) -> Budget {
    let deadline = ctx.deadline();
    let margin = DEADLINE_MARGIN.min(ctx.opts.timeout / 10);
    Budget::within(
        ctx.opts.probe_timeout,
        deadline.checked_sub(margin).unwrap_or(deadline),
    )
}

/// Where a list came from, for evidence and messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Flag,
    Config,
    Default,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Config => "config",
            Source::Default => "default",
        }
    }
}

fn parse(flag: &str, text: &str) -> Result<Vec<Endpoint>, Finding> {
    Endpoint::parse_list(text).map_err(|e| Finding::probe_failed(format!("{flag}: {e}")))
}

/// In a cluster run, OVN NB and SB are read once, by one node: on every
/// other node the checks leave them alone and say who read them.
pub fn read_elsewhere(ctx: &Ctx, db: &str) -> Result<(), Finding> {
    match &ctx.opts.ovn_read_by {
        Some(node) => Err(Finding::skip(SkipReason::NotApplicable(format!(
            "OVN {db} is cluster-wide: read once in this cluster run, by {node}"
        )))),
        None => Ok(()),
    }
}

/// Why a run has no northbound database to read.
pub const NB_UNNAMED: &str = "the config has no [nodes.*.vpcd] ovn_nb_addr (pass --nb-db)";

/// The northbound raft list. Without a flag or a config naming one, the
/// check cannot know the cluster's NB: it skips, saying how to give one
/// ([`NB_UNNAMED`]).
pub fn nb(ctx: &Ctx) -> Result<(Vec<Endpoint>, Source), Finding> {
    read_elsewhere(ctx, "NB")?;
    if let Some(list) = &ctx.opts.nb_db {
        return Ok((list.clone(), Source::Flag));
    }
    let list = ctx.config()?.nb_endpoints();
    if list.is_empty() {
        return Err(Finding::skip(SkipReason::NotApplicable(NB_UNNAMED.into())));
    }
    Ok((list, Source::Config))
}

/// True when neither `--nb-db` nor the config names a northbound database
/// (and a config was read).
pub fn nb_unnamed(ctx: &Ctx) -> bool {
    ctx.opts.nb_db.is_none() && ctx.config().is_ok_and(|c| c.nb_endpoints().is_empty())
}

/// The southbound raft list, as [`nb`].
pub fn sb(ctx: &Ctx) -> Result<(Vec<Endpoint>, Source), Finding> {
    read_elsewhere(ctx, "SB")?;
    if let Some(list) = &ctx.opts.sb_db {
        return Ok((list.clone(), Source::Flag));
    }
    let list = ctx.config()?.sb_endpoints();
    if list.is_empty() {
        return Err(Finding::skip(SkipReason::NotApplicable(
            "the config has no [nodes.*.vpcd] ovn_sb_addr (pass --sb-db)".into(),
        )));
    }
    Ok((list, Source::Config))
}

/// This node's Open_vSwitch database.
pub fn ovs(ctx: &Ctx) -> Result<(Endpoint, Source), Finding> {
    let (mut list, source) = match &ctx.opts.ovs_db {
        Some(list) => (list.clone(), Source::Flag),
        None => (parse("--ovs-db", DEFAULT_OVS_ENDPOINT)?, Source::Default),
    };
    if list.len() != 1 {
        return Err(Finding::probe_failed(format!(
            "--ovs-db: {:?} names {} servers; the local Open_vSwitch database is one",
            crate::endpoint::join(&list),
            list.len()
        )));
    }
    Ok((list.remove(0), source))
}
