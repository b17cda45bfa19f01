//! Who an agent is on the bus: the machine (`/etc/machine-id`), this boot
//! of it (`/proc/sys/kernel/random/boot_id`), when the agent process
//! started, and the host's addresses ([`AgentIdentity`]).
//!
//! A machine re-imaged from a node's disk keeps that node's
//! `/etc/spinifex`, its node name and token, so its agent answers as that
//! node: the node name alone cannot tell two agents apart. Every answer an
//! agent sends carries its identity in headers, every bucket entry in its
//! `identity`, and every agent answers `spinifex.doctor.<node>.identity`
//! with it, so the coordinator, `watch` and the agents themselves see a
//! second agent answering as one node. What comes back is outside data and
//! read strictly.

use std::net::IpAddr;
use std::time::{Duration, SystemTime};

use async_nats::HeaderMap;
use spx_checks::cluster::AgentIdentity;

pub const HEADER_MACHINE_ID: &str = "Spx-Doctor-Machine-Id";
pub const HEADER_BOOT_ID: &str = "Spx-Doctor-Boot-Id";
pub const HEADER_STARTED: &str = "Spx-Doctor-Started";
pub const HEADER_ADDRESSES: &str = "Spx-Doctor-Addresses";

/// At most this many addresses are carried.
const MAX_ADDRESSES: usize = 32;

/// The subject every agent of `node` answers with its identity.
pub fn subject(node: &str) -> String {
    format!("spinifex.doctor.{node}.identity")
}

/// A machine or boot id as it may be carried: 1 to 64 of hex digits and
/// dashes (`/etc/machine-id` is 32 hex digits, a boot id a UUID).
fn id_ok(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

fn read_id(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| id_ok(s))
}

/// This agent: read once when it starts (`started`: the process's start).
pub fn of_this_host(started: SystemTime) -> AgentIdentity {
    let live = spx_checks::live::LiveHost::new();
    let mut addresses: Vec<IpAddr> =
        spx_checks::host::HostRef::new(&live, spx_checks::host::RUN_SCOPE)
            .addresses()
            .unwrap_or_default()
            .into_iter()
            .filter(|a| spx_checks::facts::links::nameable(*a))
            .collect();
    addresses.sort();
    addresses.dedup();
    addresses.truncate(MAX_ADDRESSES);
    AgentIdentity {
        machine_id: read_id("/etc/machine-id"),
        boot_id: read_id("/proc/sys/kernel/random/boot_id"),
        started_at: Some(humantime::format_rfc3339_seconds(started).to_string()),
        addresses,
    }
}

/// `id` in an answer's headers.
pub fn insert(h: &mut HeaderMap, id: &AgentIdentity) {
    if let Some(m) = &id.machine_id {
        h.insert(HEADER_MACHINE_ID, m.as_str());
    }
    if let Some(b) = &id.boot_id {
        h.insert(HEADER_BOOT_ID, b.as_str());
    }
    if let Some(s) = &id.started_at {
        h.insert(HEADER_STARTED, s.as_str());
    }
    let addrs: Vec<String> = id.addresses.iter().map(ToString::to_string).collect();
    h.insert(HEADER_ADDRESSES, addrs.join(","));
}

/// The identity an answer's headers carry (`get` looks one up), strictly:
/// `None` when they carry none (a doctor that did not say), and a value
/// that is not what it should be is left out.
pub fn from_headers(get: impl Fn(&str) -> Option<String>) -> Option<AgentIdentity> {
    let id = |name| {
        get(name)
            .map(|v| v.trim().to_ascii_lowercase())
            .filter(|v| id_ok(v))
    };
    let started_at = get(HEADER_STARTED).filter(|s| humantime::parse_rfc3339(s.trim()).is_ok());
    let addresses: Vec<IpAddr> = get(HEADER_ADDRESSES)
        .unwrap_or_default()
        .split(',')
        .filter_map(|a| a.trim().parse().ok())
        .take(MAX_ADDRESSES)
        .collect();
    let out = AgentIdentity {
        machine_id: id(HEADER_MACHINE_ID),
        boot_id: id(HEADER_BOOT_ID),
        started_at,
        addresses,
    };
    (out.machine_id.is_some() || out.boot_id.is_some() || out.started_at.is_some()).then_some(out)
}

/// An identity read from a bucket entry or an identity answer, held to the
/// same rules as headers.
pub fn checked(id: AgentIdentity) -> Option<AgentIdentity> {
    let addresses: Vec<String> = id.addresses.iter().map(ToString::to_string).collect();
    from_headers(|name| match name {
        HEADER_MACHINE_ID => id.machine_id.clone(),
        HEADER_BOOT_ID => id.boot_id.clone(),
        HEADER_STARTED => id.started_at.clone(),
        HEADER_ADDRESSES => Some(addresses.join(",")),
        _ => None,
    })
}

/// The agents whose bucket revisions of one node alternate: given the
/// node's revisions in order (when the server stored each, and who wrote
/// it), those stored within `window` of `now` are looked at, and an agent
/// that writes again after another wrote is a second agent answering as
/// the node, not a restart (a restarted agent never writes as its old self
/// again). Returns every agent of the window, first heard first, when they
/// alternate; else nothing.
pub fn alternating(
    revisions: &[(SystemTime, Option<AgentIdentity>)],
    now: SystemTime,
    window: Duration,
) -> Vec<AgentIdentity> {
    let recent: Vec<&AgentIdentity> = revisions
        .iter()
        .filter(|(at, _)| now.duration_since(*at).unwrap_or_default() <= window)
        .filter_map(|(_, id)| id.as_ref())
        .collect();
    let mut runs: Vec<&AgentIdentity> = Vec::new();
    for id in recent {
        if runs.last().is_none_or(|last| !last.same_agent(id)) {
            runs.push(id);
        }
    }
    let mut agents: Vec<AgentIdentity> = Vec::new();
    let mut again = false;
    for id in runs {
        if agents.iter().any(|a| a.same_agent(id)) {
            again = true;
        } else {
            agents.push(id.clone());
        }
    }
    if again {
        agents
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(machine: &str, started: &str) -> AgentIdentity {
        AgentIdentity {
            machine_id: Some(machine.into()),
            boot_id: Some("0b9e2c71-6f55-4b4e-9a57-2a0f3b1d7c11".into()),
            started_at: Some(started.into()),
            addresses: vec!["198.19.0.3".parse().unwrap()],
        }
    }

    #[test]
    fn headers_carry_the_identity_and_are_read_strictly() {
        let a = agent("3f1c9a0e5d7b4e21a8c6f0b2d4e6a8c0", "2026-03-02T10:00:01Z");
        let mut h = HeaderMap::new();
        insert(&mut h, &a);
        let get = |name: &str| h.get(name).map(|v| v.as_str().to_owned());
        assert_eq!(from_headers(get), Some(a.clone()));
        assert_eq!(from_headers(|_| None), None, "a doctor that did not say");
        // Hostile values are left out, never carried into a finding.
        let bad = from_headers(|name| match name {
            HEADER_MACHINE_ID => Some("\u{1b}[2J; rm -rf".into()),
            HEADER_STARTED => Some("yesterday".into()),
            HEADER_ADDRESSES => Some("198.19.0.9,$(id),::1".into()),
            HEADER_BOOT_ID => Some("5c4a1e9d-2b7f".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(bad.machine_id, None);
        assert_eq!(bad.started_at, None);
        assert_eq!(bad.addresses.len(), 2);
        assert_eq!(checked(a.clone()), Some(a));
        assert_eq!(subject("n2"), "spinifex.doctor.n2.identity");
    }

    #[test]
    fn revisions_that_alternate_within_the_window_are_two_agents() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let at = |s: u64| t0 + Duration::from_secs(s);
        let (a, b) = (
            agent("aaaa", "2026-03-02T10:00:01Z"),
            agent("bbbb", "2026-03-02T11:00:00Z"),
        );
        let window = Duration::from_secs(6);
        // A clone writing beside the node: A B A B.
        let h = vec![
            (at(0), Some(a.clone())),
            (at(1), Some(b.clone())),
            (at(2), Some(a.clone())),
            (at(3), Some(b.clone())),
        ];
        assert_eq!(alternating(&h, at(4), window), vec![a.clone(), b.clone()]);
        // A restart (A then A') is not; neither is a clone gone long ago.
        let restarted = agent("aaaa", "2026-03-02T12:00:00Z");
        let h = vec![
            (at(0), Some(a.clone())),
            (at(2), Some(a.clone())),
            (at(4), Some(restarted.clone())),
            (at(6), Some(restarted)),
        ];
        assert!(alternating(&h, at(7), window).is_empty());
        let h = vec![
            (at(0), Some(b.clone())),
            (at(1), Some(a.clone())),
            (at(2), Some(b)),
            (at(20), Some(a.clone())),
            (at(22), Some(a)),
        ];
        assert!(alternating(&h, at(23), window).is_empty());
        // Entries of a doctor that did not say who it is are passed over.
        assert!(alternating(&[(at(0), None), (at(1), None)], at(2), window).is_empty());
    }
}
