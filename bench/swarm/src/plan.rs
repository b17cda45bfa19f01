//! The swarm's cluster: N nodes named `n0`…, each with an underlay and a
//! wan address laid out as the bench labs lay them out (node `i` at
//! 198.18.x.y and 198.19.x.y, `x.y` from `i`, so the first 250 nodes are
//! 198.18.0.1…), the pairs that black-hole, and the config every node and
//! the coordinator read: the `[nodes.*]` of all N, and each node's NATS
//! table pointing at the one bus.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::net::Ipv4Addr;

/// The swarm's nodes and their faults.
#[derive(Clone, Debug)]
pub struct Swarm {
    pub nodes: usize,
    /// Nodes behind a switch port at 1500: every path to and from them
    /// black-holes.
    pub behind_1500: BTreeSet<usize>,
    /// Pairs that black-hole both ways, lower index first.
    pub pairs: BTreeSet<(usize, usize)>,
}

impl Swarm {
    pub fn name(i: usize) -> String {
        format!("n{i}")
    }

    /// Node `i`'s address on the plane whose first octets are `a.b`.
    fn addr(a: u8, b: u8, i: usize) -> Ipv4Addr {
        Ipv4Addr::new(a, b, (i / 250) as u8, (i % 250) as u8 + 1)
    }

    /// Where node `i`'s peers reach it (`advertise`).
    pub fn underlay(i: usize) -> Ipv4Addr {
        Self::addr(198, 18, i)
    }

    /// Where node `i`'s sshd would be (`host`).
    pub fn wan(i: usize) -> Ipv4Addr {
        Self::addr(198, 19, i)
    }

    /// Every node in the config's order (by name: n0, n1, n10, …), the
    /// order a node's report lists its peers in.
    pub fn config_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.nodes).collect();
        order.sort_by_key(|&i| Self::name(i));
        order
    }

    /// Whether the path from `a` to `b` black-holes large frames.
    pub fn black_holed(&self, a: usize, b: usize) -> bool {
        self.behind_1500.contains(&a)
            || self.behind_1500.contains(&b)
            || self.pairs.contains(&(a.min(b), a.max(b)))
    }

    /// `NAME` or `NAME:NAME` (a node behind 1500, or a pair), by name.
    pub fn fault(&mut self, spec: &str) -> Result<(), String> {
        let index = |name: &str| -> Result<usize, String> {
            name.strip_prefix('n')
                .and_then(|i| i.parse::<usize>().ok())
                .filter(|i| *i < self.nodes)
                .ok_or_else(|| {
                    format!(
                        "{name:?} is not a node of this swarm (n0 to n{})",
                        self.nodes - 1
                    )
                })
        };
        match spec.split_once(':') {
            None => {
                self.behind_1500.insert(index(spec)?);
            }
            Some((a, b)) => {
                let (a, b) = (index(a)?, index(b)?);
                if a == b {
                    return Err(format!("{spec}: a pair is two nodes"));
                }
                self.pairs.insert((a.min(b), a.max(b)));
            }
        }
        Ok(())
    }

    /// Every ordered pair that black-holes, as the coordinator names them
    /// (`a->b`).
    pub fn failing_pairs(&self) -> Vec<String> {
        let mut out = Vec::new();
        for a in 0..self.nodes {
            for b in 0..self.nodes {
                if a != b && self.black_holed(a, b) {
                    out.push(format!("{}->{}", Self::name(a), Self::name(b)));
                }
            }
        }
        out
    }

    /// The config of node `me`: Spinifex's keys the doctor reads, every
    /// node's `[nodes.*]` and each node's NATS table (`bus` is `ip:port`,
    /// `ca` the CA's path, `token` the bus token).
    pub fn config(&self, me: usize, bus: &str, ca: &str, token: &str) -> String {
        let mut out = format!(
            "node = \"{}\"\n[network]\nipsec_enabled = false\nunderlay_mtu = 9000\n",
            Self::name(me)
        );
        for i in 0..self.nodes {
            let n = Self::name(i);
            let _ = write!(
                out,
                "[nodes.{n}]\nhost = \"{}\"\nadvertise = \"{}\"\n[nodes.{n}.nats]\nhost = \"{bus}\"\ncacert = \"{ca}\"\n[nodes.{n}.nats.acl]\ntoken = \"{token}\"\n",
                Self::wan(i),
                Self::underlay(i)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_follow_the_bench_labs_and_stay_distinct() {
        assert_eq!(Swarm::underlay(0).to_string(), "198.18.0.1");
        assert_eq!(Swarm::wan(3).to_string(), "198.19.0.4");
        assert_eq!(Swarm::underlay(249).to_string(), "198.18.0.250");
        assert_eq!(Swarm::underlay(250).to_string(), "198.18.1.1");
        let all: BTreeSet<Ipv4Addr> = (0..2048).map(Swarm::underlay).collect();
        assert_eq!(all.len(), 2048);
    }

    #[test]
    fn faults_name_nodes_and_pairs() {
        let mut s = Swarm {
            nodes: 4,
            behind_1500: BTreeSet::new(),
            pairs: BTreeSet::new(),
        };
        s.fault("n3").unwrap();
        s.fault("n1:n0").unwrap();
        assert!(s.fault("n4").is_err() && s.fault("x").is_err() && s.fault("n1:n1").is_err());
        assert!(s.black_holed(0, 1) && s.black_holed(1, 0) && s.black_holed(2, 3));
        assert!(!s.black_holed(0, 2));
        assert_eq!(
            s.failing_pairs(),
            ["n0->n1", "n0->n3", "n1->n0", "n1->n3", "n2->n3", "n3->n0", "n3->n1", "n3->n2"]
        );
        let cfg = s.config(2, "127.0.0.1:4222", "/ca.pem", "t");
        assert!(cfg.starts_with("node = \"n2\"\n"));
        assert_eq!(cfg.matches("[nodes.n").count(), 4 * 3);
    }
}
