//! A node's side of a path over NATS: one [`PathRequest`] to the node's
//! own subject (`spinifex.doctor.<node>.path`), connected as this node's
//! daemon connects (its `[nodes.<node>.nats]`), answered by that node's
//! agent with its side (a path-facts document) or a typed refusal
//! (`not-here`, `peer-not-listed`, `busy`, …), all by the deadline.

use std::time::{Duration, Instant};

use async_nats::{HeaderMap, StatusCode};
use bytes::Bytes;
use futures_util::StreamExt;
use spx_checks::path::node::{NodeFacts, NodeQuery};

use crate::bus::wire::{
    self, ErrorReply, PathRequest, HEADER_NODE, HEADER_REPLY, HEADER_REQUEST, HEADER_TRACEPARENT,
};
use crate::bus::{one_line, NatsConfig};
use crate::cluster::nats::{random_hex, traceparent};

/// A node's answer is a few KiB; more is not an answer.
const MAX_ANSWER: usize = 4 << 20;
/// Kept back from the deadline for the answer to come back.
const MARGIN: Duration = Duration::from_millis(250);

/// Ask `node`'s agent about `q`, by `deadline`.
pub fn ask(
    nats: &NatsConfig,
    node: &str,
    q: &NodeQuery,
    deadline: Instant,
) -> Result<NodeFacts, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the NATS client: {e}"))?;
    rt.block_on(ask_async(nats, node, q, deadline))
}

async fn ask_async(
    nats: &NatsConfig,
    node: &str,
    q: &NodeQuery,
    deadline: Instant,
) -> Result<NodeFacts, String> {
    let left = deadline.saturating_duration_since(Instant::now());
    let client = nats
        .connect(&format!("spx-doctor path ({})", nats.node), left, |o| o)
        .await
        .map_err(|f| format!("NATS: {}", f.detail))?;
    let request = PathRequest {
        id: random_hex(8),
        query: q.clone(),
        timeout: deadline
            .saturating_duration_since(Instant::now())
            .saturating_sub(MARGIN)
            .max(Duration::from_millis(1))
            .min(wire::MAX_TIMEOUT),
    };
    let inbox = client.new_inbox();
    let mut sub = client
        .subscribe(inbox.clone())
        .await
        .map_err(|e| one_line(&format!("cannot subscribe to a reply inbox: {e}")))?;
    let subject = wire::node_path_subject(node);
    let mut headers = HeaderMap::new();
    headers.insert(HEADER_TRACEPARENT, traceparent().to_string());
    client
        .publish_with_reply_and_headers(
            subject.clone(),
            inbox,
            headers,
            Bytes::from(request.to_json()),
        )
        .await
        .map_err(|e| one_line(&format!("cannot publish on {subject}: {e}")))?;
    let _ = client.flush().await;
    let mut accepted = false;
    loop {
        let msg = tokio::select! {
            m = sub.next() => match m {
                Some(m) => m,
                None => return Err("the NATS connection closed before the node answered".into()),
            },
            _ = tokio::time::sleep_until(deadline.into()) => {
                return Err(if accepted {
                    format!("{node}'s agent accepted the request but did not answer by the deadline (--timeout)")
                } else {
                    format!("no answer from {node}'s agent by the deadline: is spx-doctor agent running on {node}?")
                })
            }
        };
        if msg.status == Some(StatusCode::NO_RESPONDERS) {
            return Err(format!(
                "no agent answers on {subject}: is spx-doctor agent running on {node}?"
            ));
        }
        let header = |name: &str| {
            msg.headers
                .as_ref()
                .and_then(|h| h.get(name))
                .map(|v| v.as_str().to_owned())
        };
        if header(HEADER_REQUEST).as_deref() != Some(request.id.as_str()) {
            continue;
        }
        if header(HEADER_NODE).as_deref() != Some(node) {
            return Err(format!(
                "an answer on {subject} from {} rather than {node}: two agents answer as {node}, or its config names another node",
                one_line(header(HEADER_NODE).as_deref().unwrap_or("no node"))
            ));
        }
        match header(HEADER_REPLY).as_deref() {
            Some(wire::REPLY_ACCEPTED) => accepted = true,
            Some(wire::REPLY_PATH) => return facts(&msg.payload),
            Some(wire::REPLY_ERROR) => {
                return Err(match ErrorReply::parse(&msg.payload) {
                    Some(e) => one_line(&format!("{}: {}", e.error.kind.as_str(), e.error.message)),
                    None => "an error answer that is not one".into(),
                })
            }
            other => {
                return Err(format!(
                    "an answer of an unknown kind ({})",
                    one_line(other.unwrap_or("none"))
                ))
            }
        }
    }
}

/// A node's side, read strictly.
fn facts(body: &[u8]) -> Result<NodeFacts, String> {
    if body.len() > MAX_ANSWER {
        return Err(format!("an answer of more than {} MiB", MAX_ANSWER >> 20));
    }
    serde_json::from_slice(body).map_err(|e| {
        format!(
            "its answer is not a path-facts document ({e}): {}",
            one_line(&String::from_utf8_lossy(&body[..body.len().min(80)]))
        )
    })
}
