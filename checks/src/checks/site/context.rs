//! What a site check is told on its stdin, so that no plugin parses
//! `spinifex.toml` itself: this node, the config, the target and underlay
//! MTU, whether IPsec is wanted, the peers (address and node name, found
//! the way every built-in check finds them) and the preflight. The live
//! host adds the run's deadline and the plugin's timeout as it starts it
//! (they are not part of the question a bundle keys on).

use serde_json::{json, Value};

use crate::ctx::Ctx;
use crate::targets::peers;

/// The context's format; a field is only ever added within it.
pub const CONTEXT_VERSION: u32 = 1;

pub fn of(ctx: &Ctx, check: &str) -> Value {
    let node = ctx.config().ok().and_then(|c| c.node.clone());
    let underlay = ctx.expect.as_ref().map(|e| e.underlay_mtu);
    let peers: Vec<Value> = peers::discover(ctx)
        .peers
        .iter()
        .map(|p| {
            json!({
                "address": p.label(),
                "name": p.node,
                "source": p.source.as_str(),
            })
        })
        .collect();
    json!({
        "version": CONTEXT_VERSION,
        "check": check,
        "node": node,
        "config": ctx.config_file(),
        "mtu": {
            "target": ctx.opts.mtu.or(underlay),
            "underlay": underlay,
        },
        "ipsec_wanted": ctx.expect.as_ref().map(|e| e.ipsec_wanted),
        "peers": peers,
        "profile": ctx.opts.profile.map(|p| p.name()),
    })
}
