//! Whether another agent answers as this agent's node: a machine re-imaged
//! from this one's disk keeps its `/etc/spinifex` (node name and token),
//! so its agent subscribes to the same subjects and answers as this node.
//!
//! Every agent answers `spinifex.doctor.<node>.identity` with its identity
//! ([`identity`]). When it starts and at every interval, an agent asks
//! there itself, with its own identity in the request: every other agent
//! that answers is a twin, and a twin that asks is one too. Each twin is
//! logged as an error when first seen (on both machines at once), again
//! every [`REPEAT`] while it stays, and its going is said.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use async_nats::{Client, HeaderMap};
use bytes::Bytes;
use futures_util::StreamExt;
use spx_checks::cluster::AgentIdentity;

use crate::bus::identity;
use crate::render::journal::{log, Priority};

/// How long a probe waits for answers.
pub const PROBE_WINDOW: Duration = Duration::from_secs(1);
/// A twin that stays is said again this often.
pub const REPEAT: Duration = Duration::from_secs(600);

/// One agent process: its machine, boot and start.
type AgentKey = (Option<String>, Option<String>, Option<String>);

/// The twins seen, and when each was last said (pure: unit-tested).
#[derive(Default)]
pub struct Twins {
    seen: BTreeMap<AgentKey, (AgentIdentity, Instant)>,
}

fn key(a: &AgentIdentity) -> AgentKey {
    (
        a.machine_id.clone(),
        a.boot_id.clone(),
        a.started_at.clone(),
    )
}

fn short(id: Option<&str>) -> String {
    id.map_or("unknown".to_owned(), |i| i.chars().take(8).collect())
}

fn said_of(a: &AgentIdentity) -> String {
    format!(
        "at {} (machine-id {}…, boot {}…, started {})",
        a.addresses_said(),
        short(a.machine_id.as_deref()),
        short(a.boot_id.as_deref()),
        a.started_at.as_deref().unwrap_or("unknown")
    )
}

impl Twins {
    /// `other` answered or asked as `node`: the error to log, when it is
    /// new or was last said [`REPEAT`] ago.
    pub fn saw(
        &mut self,
        node: &str,
        me: &AgentIdentity,
        other: &AgentIdentity,
        now: Instant,
    ) -> Option<String> {
        if other.same_agent(me) {
            return None;
        }
        let k = key(other);
        if let Some((_, said)) = self.seen.get(&k) {
            if now.duration_since(*said) < REPEAT {
                return None;
            }
        }
        self.seen.insert(k, (other.clone(), now));
        Some(format!(
            "another spx-doctor agent answers as node {node}: {} (this one is {}). A machine re-imaged from {node}'s disk keeps its /etc/spinifex (node name and token): give that machine its own node name and token, or stop its spx-doctor-agent; until then `--cluster` and `watch` show {node} as duplicate and judge neither report",
            said_of(other),
            said_of(me)
        ))
    }

    /// A probe heard `answered`: the twins seen before and no longer
    /// answering, each said as gone once.
    pub fn gone(&mut self, node: &str, answered: &[AgentIdentity]) -> Vec<String> {
        let now: Vec<_> = answered.iter().map(key).collect();
        let left: Vec<_> = self
            .seen
            .keys()
            .filter(|k| !now.contains(k))
            .cloned()
            .collect();
        left.into_iter()
            .filter_map(|k| self.seen.remove(&k))
            .map(|(a, _)| {
                format!(
                    "the other agent that answered as node {node} ({}) answers no more",
                    said_of(&a)
                )
            })
            .collect()
    }
}

/// Ask who answers as `node`, now and every `every`, logging twins;
/// `twins` is shared with the answers to other agents' questions.
pub async fn watch(
    client: Client,
    node: String,
    me: AgentIdentity,
    every: Duration,
    twins: std::sync::Arc<std::sync::Mutex<Twins>>,
) {
    let body = Bytes::from(serde_json::to_vec(&me).expect("an identity serializes"));
    loop {
        if let Some(answered) = probe(&client, &node, body.clone()).await {
            let others: Vec<AgentIdentity> = answered
                .into_iter()
                .filter(|a| !a.same_agent(&me))
                .collect();
            let lines: Vec<(Priority, String)> = match twins.lock() {
                Ok(mut t) => {
                    let now = Instant::now();
                    let mut out: Vec<(Priority, String)> = others
                        .iter()
                        .filter_map(|o| t.saw(&node, &me, o, now))
                        .map(|l| (Priority::Error, l))
                        .collect();
                    out.extend(
                        t.gone(&node, &others)
                            .into_iter()
                            .map(|l| (Priority::Notice, l)),
                    );
                    out
                }
                Err(_) => Vec::new(),
            };
            for (p, l) in lines {
                log(p, &l);
            }
        }
        tokio::time::sleep(every).await;
    }
}

/// One question on the identity subject: every identity that answered
/// within [`PROBE_WINDOW`]; `None` when the question could not be asked.
async fn probe(client: &Client, node: &str, body: Bytes) -> Option<Vec<AgentIdentity>> {
    let inbox = client.new_inbox();
    let mut sub = client.subscribe(inbox.clone()).await.ok()?;
    client
        .publish_with_reply(identity::subject(node), inbox, body)
        .await
        .ok()?;
    let _ = tokio::time::timeout(PROBE_WINDOW, client.flush()).await;
    let until = Instant::now() + PROBE_WINDOW;
    let mut out: Vec<AgentIdentity> = Vec::new();
    while let Ok(Some(m)) =
        tokio::time::timeout(until.saturating_duration_since(Instant::now()), sub.next()).await
    {
        if m.payload.len() > 4096 {
            continue;
        }
        if let Some(a) = serde_json::from_slice::<AgentIdentity>(&m.payload)
            .ok()
            .and_then(identity::checked)
        {
            if !out.iter().any(|o| o.same_agent(&a)) {
                out.push(a);
            }
        }
    }
    let _ = sub.unsubscribe().await;
    Some(out)
}

/// Another agent asked who answers as this node: answer with this one's
/// identity, and if the asker is another agent, it is a twin.
pub async fn answer(
    client: &Client,
    node: &str,
    me: &AgentIdentity,
    twins: &std::sync::Mutex<Twins>,
    msg: async_nats::Message,
) {
    if msg.payload.len() <= 4096 {
        let asker = serde_json::from_slice::<AgentIdentity>(&msg.payload)
            .ok()
            .and_then(identity::checked);
        if let Some(a) = asker {
            let line = twins
                .lock()
                .ok()
                .and_then(|mut t| t.saw(node, me, &a, Instant::now()));
            if let Some(l) = line {
                log(Priority::Error, &l);
            }
        }
    }
    if let Some(reply) = msg.reply {
        let mut h = HeaderMap::new();
        identity::insert(&mut h, me);
        let body = serde_json::to_vec(me).expect("an identity serializes");
        let _ = client
            .publish_with_headers(reply, h, Bytes::from(body))
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(machine: &str, addr: &str) -> AgentIdentity {
        AgentIdentity {
            machine_id: Some(machine.into()),
            boot_id: Some("0b9e2c716f554b4e".into()),
            started_at: Some("2026-03-02T10:00:01Z".into()),
            addresses: vec![addr.parse().unwrap()],
        }
    }

    #[test]
    fn a_twin_is_said_when_first_seen_again_every_ten_minutes_and_when_gone() {
        let me = agent("3f1c9a0e5d7b", "198.19.0.3");
        let clone = agent("9d2e7b41c0a3", "198.19.0.9");
        let mut t = Twins::default();
        let t0 = Instant::now();
        assert_eq!(t.saw("n2", &me, &me, t0), None, "itself");
        let said = t.saw("n2", &me, &clone, t0).unwrap();
        assert!(
            said.starts_with(
                "another spx-doctor agent answers as node n2: at 198.19.0.9 (machine-id 9d2e7b41…"
            ) && said.contains("(this one is at 198.19.0.3 (machine-id 3f1c9a0e…")
                && said.contains("give that machine its own node name and token"),
            "{said}"
        );
        assert_eq!(t.saw("n2", &me, &clone, t0 + Duration::from_secs(2)), None);
        assert!(t.saw("n2", &me, &clone, t0 + REPEAT).is_some());
        assert!(t.gone("n2", std::slice::from_ref(&clone)).is_empty());
        let gone = t.gone("n2", &[]);
        assert_eq!(gone.len(), 1);
        assert!(gone[0].contains("at 198.19.0.9") && gone[0].ends_with("answers no more"));
        assert!(t.gone("n2", &[]).is_empty());
    }
}
