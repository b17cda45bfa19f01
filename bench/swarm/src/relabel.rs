//! One judged report made another node's, without judging again.
//!
//! A node's report depends on its bundle, and its bundle
//! ([`crate::rejudge::Template::for_node`]) on the node's name and
//! addresses and, for each of its peers in the config's order, on that
//! peer's name, addresses and class (its path carries the target, or
//! black-holes). Two nodes whose peers have the same classes in the same
//! order (the same [`role`]) have bundles that differ only in names and
//! addresses, by the bijection [`Relabel::between`]: the node becomes the
//! other, and its i-th peer the other's i-th peer. So the real doctor
//! judges one node per role, and every other node's report is the judged
//! one with that bijection applied to its JSON: each string and key, token
//! by token (a node name as a whole word, a swarm address as a whole
//! address), in one pass, so no replacement is ever replaced again and
//! `n1` is never found inside `n12` or `198.18.0.1` inside `198.18.0.10`.
//!
//! That this gives what the doctor itself would say is not assumed: the
//! test `the_relabelled_reports_are_what_the_doctor_judges` (tests/nats/
//! swarm.rs) judges every node of a small swarm with faults and compares.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::plan::Swarm;

/// Node `k`'s peers' classes in the config's order (`order`, every node
/// by name): true where the path from `k` black-holes.
pub fn role(order: &[usize], k: usize, holed: impl Fn(usize, usize) -> bool) -> Vec<bool> {
    order
        .iter()
        .filter(|&&j| j != k)
        .map(|&j| holed(k, j))
        .collect()
}

/// Names and addresses of one node's report → another's.
#[derive(Debug, Default)]
pub struct Relabel {
    names: HashMap<String, String>,
    addrs: HashMap<String, String>,
    /// The swarm's size.
    nodes: usize,
}

impl Relabel {
    /// From node `from`'s report to node `to`'s (of the same role): `from`
    /// becomes `to`, and `from`'s i-th peer in the config's order (`order`)
    /// becomes `to`'s i-th peer. Nodes that stay themselves are left out.
    pub fn between(order: &[usize], from: usize, to: usize) -> Relabel {
        let mut r = Relabel {
            nodes: order.len(),
            ..Relabel::default()
        };
        r.add(from, to);
        let theirs = order.iter().copied().filter(|&j| j != to);
        for (a, b) in order.iter().copied().filter(|&j| j != from).zip(theirs) {
            if a != b {
                r.add(a, b);
            }
        }
        r
    }

    fn add(&mut self, a: usize, b: usize) {
        self.names.insert(Swarm::name(a), Swarm::name(b));
        for addr in [Swarm::underlay, Swarm::wan] {
            self.addrs.insert(addr(a).to_string(), addr(b).to_string());
        }
    }

    /// `v` with every string and key relabelled. A list of every node's
    /// name (the config's nodes, in its order) is every node's alike: it
    /// stays as it is.
    #[cfg(test)]
    pub fn value(&self, v: &Value) -> Value {
        serde_json::to_value(self.of(v)).expect("JSON relabelled is JSON")
    }

    /// `v` relabelled as it is written: compact JSON, as the judged
    /// reports are kept, without a relabelled copy of the tree.
    pub fn to_vec(&self, v: &Value) -> Vec<u8> {
        serde_json::to_vec(&self.of(v)).expect("JSON relabelled is JSON")
    }

    fn of<'a>(&'a self, v: &'a Value) -> Relabelled<'a> {
        Relabelled { v, by: self }
    }

    /// `items` names each of the swarm's nodes once, and nothing else.
    fn every_node(&self, items: &[Value]) -> bool {
        if items.len() != self.nodes {
            return false;
        }
        let mut seen = vec![false; self.nodes];
        items.iter().all(|i| {
            let k = i
                .as_str()
                .and_then(|s| s.strip_prefix('n'))
                .filter(|d| !d.starts_with('0') || *d == "0")
                .and_then(|d| d.parse::<usize>().ok())
                .filter(|&k| k < self.nodes);
            k.is_some_and(|k| !std::mem::replace(&mut seen[k], true))
        })
    }

    /// `s` with each whole node name and whole swarm address relabelled.
    /// A token is a longest run of letters, digits, `_` and `.`: a whole
    /// address (dots around it aside, as at the end of a sentence), or else
    /// words between its dots, each a node name or not.
    pub fn text<'s>(&self, s: &'s str) -> Cow<'s, str> {
        if !s.bytes().any(|b| b.is_ascii_digit()) {
            return Cow::Borrowed(s);
        }
        let token = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'.';
        let bytes = s.as_bytes();
        let mut out = String::with_capacity(s.len());
        let mut changed = false;
        let mut i = 0;
        while i < bytes.len() {
            if !token(bytes[i]) {
                // Up to the next token byte (ASCII, so a char boundary).
                let end = bytes[i..]
                    .iter()
                    .position(|&b| token(b))
                    .map_or(bytes.len(), |p| i + p);
                out.push_str(&s[i..end]);
                i = end;
                continue;
            }
            let end = bytes[i..]
                .iter()
                .position(|&b| !token(b))
                .map_or(bytes.len(), |p| i + p);
            let t = &s[i..end];
            let core = t.trim_matches('.');
            if let Some(to) = self.addrs.get(core) {
                let lead = t.len() - t.trim_start_matches('.').len();
                out.push_str(&t[..lead]);
                out.push_str(to);
                out.push_str(&t[lead + core.len()..]);
                changed = true;
            } else {
                for (n, word) in t.split('.').enumerate() {
                    if n > 0 {
                        out.push('.');
                    }
                    match self.names.get(word) {
                        Some(to) => {
                            out.push_str(to);
                            changed = true;
                        }
                        None => out.push_str(word),
                    }
                }
            }
            i = end;
        }
        if changed {
            Cow::Owned(out)
        } else {
            Cow::Borrowed(s)
        }
    }
}

/// A value seen through a [`Relabel`], serialized as relabelled.
struct Relabelled<'a> {
    v: &'a Value,
    by: &'a Relabel,
}

impl Serialize for Relabelled<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.v {
            Value::String(t) => s.serialize_str(&self.by.text(t)),
            Value::Array(items) if !self.by.every_node(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(&self.by.of(i))?;
                }
                seq.end()
            }
            Value::Object(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, v) in m {
                    map.serialize_entry(&self.by.text(k), &self.by.of(v))?;
                }
                map.end()
            }
            other => other.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(n: usize) -> Vec<usize> {
        Swarm {
            nodes: n,
            behind_1500: Default::default(),
            pairs: Default::default(),
        }
        .config_order()
    }

    /// The i-th peer becomes the i-th peer, and only whole names and
    /// addresses are relabelled, each once.
    #[test]
    fn the_ith_peer_becomes_the_ith_peer_by_whole_names_once() {
        // By name: n0 n1 n10 n11 n2 … n9. n0's peers: n1 n10 n11 n2 …;
        // n2's: n0 n1 n10 n11 n3 ….
        let o = order(12);
        let r = Relabel::between(&o, 0, 2);
        for (from, to) in [
            ("n0", "n2"),
            ("n1", "n0"),
            ("n10", "n1"),
            ("n11", "n10"),
            ("n2", "n11"),
            ("n3", "n3"),
            ("198.18.0.1", "198.18.0.3"),
            ("198.19.0.3", "198.19.0.12"),
            // n0→n2 and n2→n11: never n0→n2→n11.
            ("n0->n2", "n2->n11"),
            ("n0 and n1's path", "n2 and n0's path"),
            ("en1 n1x xn1 n1_a", "en1 n1x xn1 n1_a"),
            (
                "via 198.18.0.1: to 198.18.0.10, 198.18.0.1.",
                "via 198.18.0.3: to 198.18.0.10, 198.18.0.3.",
            ),
            (
                "198.18.0.1/24 198.18.0.1:4222",
                "198.18.0.3/24 198.18.0.3:4222",
            ),
            ("10.198.18.0.1 198.18.0.1.5", "10.198.18.0.1 198.18.0.1.5"),
            ("n1.n10", "n0.n1"),
            ("é n1 → n10", "é n0 → n1"),
        ] {
            assert_eq!(r.text(from), to, "{from}");
        }
        assert!(matches!(r.text("no digits"), Cow::Borrowed(_)));
        let every: Vec<String> = o.iter().map(|&i| Swarm::name(i)).collect();
        let v = serde_json::json!({"n0": ["n1", 3, {"to": "198.18.0.2"}], "all": every});
        assert_eq!(
            r.value(&v),
            serde_json::json!({"n2": ["n0", 3, {"to": "198.18.0.1"}], "all": every}),
            "the list of every node stays in the config's order"
        );
        let mut most = every.clone();
        most.pop();
        assert_ne!(r.value(&serde_json::json!(most)), serde_json::json!(most));
    }

    #[test]
    fn a_role_is_the_peers_classes_in_order() {
        let o = order(12);
        let holed = |a: usize, b: usize| a == 11 || b == 11;
        // n11 sorts fourth (n0 n1 n10 n11 n2 …): third among the peers of
        // a node that sorts before it, fourth for one after it.
        assert_eq!(role(&o, 0, holed)[..4], [false, false, true, false]);
        assert_eq!(role(&o, 1, holed), role(&o, 0, holed));
        assert_eq!(role(&o, 10, holed), role(&o, 0, holed));
        assert_eq!(role(&o, 2, holed)[..4], [false, false, false, true]);
        assert_eq!(role(&o, 5, holed), role(&o, 2, holed));
        assert_ne!(role(&o, 5, holed), role(&o, 0, holed));
        assert!(role(&o, 11, holed).iter().all(|&h| h));
    }
}
