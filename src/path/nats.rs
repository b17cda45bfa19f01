//! A node's side of a path over NATS: filled in below.
use std::time::Instant;

use spx_checks::path::node::{NodeFacts, NodeQuery};

use crate::bus::NatsConfig;

pub fn ask(
    _nats: &NatsConfig,
    node: &str,
    _q: &NodeQuery,
    _deadline: Instant,
) -> Result<NodeFacts, String> {
    Err(format!("{node}: NATS is not wired yet"))
}
