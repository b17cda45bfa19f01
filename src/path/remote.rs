//! Asking another node for its side of the path, and remembering what it
//! said: over ssh or NATS live (every answer kept when recording), or from
//! a bundle's answers in a replay (nothing is asked).

use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use spx_checks::config::Config;
use spx_checks::path::node::{NodeFacts, NodeQuery};

use super::ssh::SshPlan;
use crate::bus::NatsConfig;

/// One node's answer to one query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub node: String,
    pub query: NodeQuery,
    /// How it came: `ssh` or `nats`.
    pub via: String,
    pub answer: Result<NodeFacts, String>,
}

/// How the other nodes are reached.
pub enum Via {
    Ssh(SshPlan),
    Nats(Box<NatsConfig>),
    /// No way to ask: why.
    Unavailable(String),
}

impl Via {
    pub fn name(&self) -> &'static str {
        match self {
            Via::Ssh(_) => "ssh",
            Via::Nats(_) => "nats",
            Via::Unavailable(_) => "none",
        }
    }
}

pub enum Remote {
    Live {
        via: Via,
        config: Box<Config>,
        /// Every answer, when recording.
        kept: Option<Mutex<Vec<Answer>>>,
    },
    Replay(Vec<Answer>),
}

impl Remote {
    /// Ask `node` about `q`, by `deadline`.
    pub fn ask(
        &self,
        node: &str,
        q: &NodeQuery,
        deadline: Instant,
    ) -> (String, Result<NodeFacts, String>) {
        match self {
            Remote::Replay(answers) => {
                match answers.iter().find(|a| a.node == node && &a.query == q) {
                    Some(a) => (a.via.clone(), a.answer.clone()),
                    None => (
                        "replay".into(),
                        Err(format!(
                            "the bundle holds no answer of {node} to this question"
                        )),
                    ),
                }
            }
            Remote::Live { via, config, kept } => {
                let answer = match via {
                    Via::Ssh(plan) => super::ssh::ask(plan, config, node, q, deadline),
                    Via::Nats(nats) => super::nats::ask(nats, node, q, deadline),
                    Via::Unavailable(why) => Err(why.clone()),
                };
                if let Some(kept) = kept {
                    if let Ok(mut k) = kept.lock() {
                        k.push(Answer {
                            node: node.to_owned(),
                            query: q.clone(),
                            via: via.name().to_owned(),
                            answer: answer.clone(),
                        });
                    }
                }
                (via.name().to_owned(), answer)
            }
        }
    }

    /// Start the connections to `nodes` (over ssh: each node's master;
    /// nothing for NATS or a replay), returning once they are under way.
    pub fn connect(&self, nodes: &[String], deadline: Instant) {
        if let Remote::Live {
            via: Via::Ssh(plan),
            config,
            ..
        } = self
        {
            plan.connect_all(config, nodes, deadline);
        }
    }

    /// What was kept.
    pub fn kept(&self) -> Vec<Answer> {
        match self {
            Remote::Live { kept: Some(k), .. } => k.lock().map(|k| k.clone()).unwrap_or_default(),
            Remote::Replay(a) => a.clone(),
            Remote::Live { kept: None, .. } => Vec::new(),
        }
    }
}
