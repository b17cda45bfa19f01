//! Each swarm node's report, judged by the real doctor from a recorded
//! bundle of a real lab node, made that node's.
//!
//! The template is a bundle `--record`ed on node n0 of a three-node
//! namespace lab: n1 behind a jumbo switch port (its probes pass at the
//! target), n2 behind a port at 1500 (its probes black-hole above 1500).
//! For swarm node k, every record is made k's: k's name and addresses
//! where the template has n0's, and the swarm's other nodes where it has
//! its peers. A record that asks about one peer (a route, a probe) is
//! repeated once per swarm peer, from n1's record for a peer whose path
//! carries the target and from n2's for one whose path black-holes; a
//! record that lists every peer (the probe plan and its outcomes) lists
//! the swarm's peers in the order the config names them, each from its
//! class's entry. The config in the header names all N nodes.
//!
//! The bundle is then replayed by the real binary (`spx-doctor --replay
//! FILE --format json`): the checks judge the node's facts as they judge a
//! live run's, so its report is what node k would write, with N−1 peers
//! in its mtu.path and the swarm's black holes among them. The only
//! difference from a live report is `replayed_from`, which is removed.
//!
//! Replaying all N bundles of N−1 peers is quadratic (256 nodes took 106 s
//! of debug builds); the swarm replays one node per role and relabels the
//! rest ([`crate::relabel`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value};
use spx_checks::host::{Bundle, Record};

use crate::plan::Swarm;

/// A template node: its name and the address strings it is known by.
#[derive(Clone, Debug)]
struct Known {
    name: String,
    addrs: Vec<String>,
}

/// The template bundle and the roles of its three nodes.
pub struct Template {
    bundle: Bundle,
    own: Known,
    /// The peer whose path carries the target.
    ok: Known,
    /// The peer whose path black-holes.
    hole: Known,
}

/// Who one swarm peer is, and whose records stand for it.
struct Peer<'a> {
    name: String,
    addrs: Vec<String>,
    class: &'a Known,
}

impl Template {
    pub fn read(path: &Path) -> Result<Template, String> {
        let bundle = Bundle::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Template::of(bundle)
    }

    pub fn of(bundle: Bundle) -> Result<Template, String> {
        let header = serde_json::to_value(&bundle.header.config).map_err(|e| e.to_string())?;
        let config = &header["loaded"]["config"];
        let own = config["node"]
            .as_str()
            .ok_or("the template's config names no node")?
            .to_owned();
        let known = |name: &str| -> Known {
            let entry = &config["nodes"][name];
            Known {
                name: name.to_owned(),
                addrs: ["advertise", "host"]
                    .iter()
                    .filter_map(|k| entry[*k].as_str().map(str::to_owned))
                    .collect(),
            }
        };
        // The peers' classes, by what the recorded probes found.
        let probes = bundle
            .records
            .iter()
            .find(|r| r.request["kind"] == "icmp")
            .and_then(|r| r.ok.as_ref())
            .and_then(|ok| ok["icmp"]["probes"].as_array())
            .ok_or("the template holds no mtu.path probes (record a run with mtu.path)")?;
        let of_class = |passes: bool| -> Option<String> {
            probes
                .iter()
                .find(|p| (p["largest_answered"] == p["target_mtu"]) == passes)
                .and_then(|p| p["addr"].as_str())
                .map(str::to_owned)
        };
        let by_addr = |addr: &str| -> Option<Known> {
            config["nodes"]
                .as_object()?
                .keys()
                .map(|n| known(n))
                .find(|k| k.addrs.iter().any(|a| a == addr))
        };
        let ok = of_class(true)
            .and_then(|a| by_addr(&a))
            .ok_or("the template has no peer whose path carries the target")?;
        let hole = of_class(false)
            .and_then(|a| by_addr(&a))
            .ok_or("the template has no peer whose path black-holes")?;
        Ok(Template {
            own: known(&own),
            ok,
            hole,
            bundle,
        })
    }

    /// Node `k`'s bundle in a swarm where `holed(k, j)` says whether the
    /// path from k to j black-holes.
    pub fn for_node(
        &self,
        swarm: &Swarm,
        k: usize,
        holed: impl Fn(usize, usize) -> bool,
    ) -> Bundle {
        let me = Known {
            name: Swarm::name(k),
            addrs: vec![Swarm::underlay(k).to_string(), Swarm::wan(k).to_string()],
        };
        let own = subst_map(&self.own, &me);
        // The config's order: by name.
        let mut names: Vec<(String, usize)> =
            (0..swarm.nodes).map(|j| (Swarm::name(j), j)).collect();
        names.sort();
        let peers: Vec<Peer> = names
            .iter()
            .filter(|(_, j)| *j != k)
            .map(|(name, j)| Peer {
                name: name.clone(),
                addrs: vec![Swarm::underlay(*j).to_string(), Swarm::wan(*j).to_string()],
                class: if holed(k, *j) { &self.hole } else { &self.ok },
            })
            .collect();
        let ctx = Ctx {
            own: &own,
            peers: &peers,
            template: [&self.ok, &self.hole],
        };
        let mut header = self.bundle.header.clone();
        header.config = {
            let mut c = serde_json::to_value(&header.config).expect("a config serializes");
            let cfg = &mut c["loaded"]["config"];
            let entry = cfg["nodes"][&self.own.name].clone();
            let mut nodes = Map::new();
            for (name, j) in &names {
                let who = Known {
                    name: name.clone(),
                    addrs: vec![Swarm::underlay(*j).to_string(), Swarm::wan(*j).to_string()],
                };
                nodes.insert(name.clone(), subst(&entry, &subst_map(&self.own, &who)));
            }
            cfg["nodes"] = Value::Object(nodes);
            cfg["node"] = Value::from(me.name.clone());
            serde_json::from_value(c).expect("the template's config, renamed, reads back")
        };
        let mut records = Vec::with_capacity(self.bundle.records.len() + 16 * peers.len());
        for r in &self.bundle.records {
            ctx.records(r, &mut records);
        }
        Bundle { header, records }
    }
}

/// Template strings → swarm strings, for one node.
type Map1 = Vec<(String, String)>;

fn subst_map(from: &Known, to: &Known) -> Map1 {
    let mut m = vec![(from.name.clone(), to.name.clone())];
    m.extend(from.addrs.iter().cloned().zip(to.addrs.iter().cloned()));
    m
}

struct Ctx<'a> {
    own: &'a Map1,
    peers: &'a [Peer<'a>],
    template: [&'a Known; 2],
}

impl Ctx<'_> {
    /// Which template peers `v` mentions.
    fn mentions(&self, v: &Value) -> [bool; 2] {
        let mut out = [false; 2];
        for (i, t) in self.template.iter().enumerate() {
            out[i] = mentions(v, t);
        }
        out
    }

    /// `r` made this node's: once, once per peer, or with its lists of
    /// peers made the swarm's.
    fn records(&self, r: &Record, out: &mut Vec<Record>) {
        let whole = Value::Array(vec![
            r.request.clone(),
            r.ok.clone().unwrap_or(Value::Null),
            r.err.clone().unwrap_or(Value::Null),
        ]);
        let m = self.mentions(&whole);
        let one = |map: &Map1| Record {
            t_ms: r.t_ms,
            scope: r.scope.clone(),
            request: subst(&r.request, map),
            ok: r.ok.as_ref().map(|v| subst(v, map)),
            err: r.err.as_ref().map(|v| subst(v, map)),
        };
        match m {
            [false, false] => out.push(one(self.own)),
            [true, true] => out.push(Record {
                t_ms: r.t_ms,
                scope: r.scope.clone(),
                request: self.expand(&r.request),
                ok: r.ok.as_ref().map(|v| self.expand(v)),
                err: r.err.as_ref().map(|v| self.expand(v)),
            }),
            [a, _] => {
                let t = if a {
                    self.template[0]
                } else {
                    self.template[1]
                };
                for p in self.peers.iter().filter(|p| std::ptr::eq(p.class, t)) {
                    out.push(one(&self.peer_map(p)));
                }
            }
        }
    }

    fn peer_map(&self, p: &Peer) -> Map1 {
        let mut m = subst_map(
            p.class,
            &Known {
                name: p.name.clone(),
                addrs: p.addrs.clone(),
            },
        );
        m.extend(self.own.iter().cloned());
        m
    }

    /// A value listing both template peers: each list of per-peer entries
    /// becomes the swarm's peers, in order, each from its class's entry.
    fn expand(&self, v: &Value) -> Value {
        match v {
            Value::Array(items) if items.iter().any(|i| self.mentions(i) != [false, false]) => {
                let mut out = Vec::new();
                let mut done = false;
                for item in items {
                    if self.mentions(item) == [false, false] {
                        out.push(self.expand(item));
                    } else if !done {
                        done = true;
                        for p in self.peers {
                            if let Some(e) = items.iter().find(|i| mentions(i, p.class)) {
                                out.push(subst(e, &self.peer_map(p)));
                            }
                        }
                    }
                }
                Value::Array(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(|i| self.expand(i)).collect()),
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| (replace(k, self.own), self.expand(v)))
                    .collect(),
            ),
            other => subst(other, self.own),
        }
    }
}

/// Whether `v` names template node `t` (its name as a whole string, an
/// address anywhere in a string).
fn mentions(v: &Value, t: &Known) -> bool {
    match v {
        Value::String(s) => s == &t.name || t.addrs.iter().any(|a| contains_addr(s, a)),
        Value::Array(items) => items.iter().any(|i| mentions(i, t)),
        Value::Object(m) => m.iter().any(|(k, v)| {
            k == &t.name || t.addrs.iter().any(|a| contains_addr(k, a)) || mentions(v, t)
        }),
        _ => false,
    }
}

/// `addr` in `s`, not as part of a longer address (198.18.0.1 is not in
/// 198.18.0.10).
fn contains_addr(s: &str, addr: &str) -> bool {
    s.match_indices(addr)
        .any(|(i, _)| bounded(s, i, addr.len()))
}

fn bounded(s: &str, at: usize, len: usize) -> bool {
    let b = s.as_bytes();
    let before = at == 0 || !(b[at - 1].is_ascii_digit() || b[at - 1] == b'.');
    let after = match b.get(at + len) {
        None => true,
        Some(c) if c.is_ascii_digit() => false,
        Some(b'.') => !b.get(at + len + 1).is_some_and(u8::is_ascii_digit),
        Some(_) => true,
    };
    before && after
}

/// Every string of `v` with `map` applied.
fn subst(v: &Value, map: &Map1) -> Value {
    match v {
        Value::String(s) => Value::String(replace(s, map)),
        Value::Array(items) => Value::Array(items.iter().map(|i| subst(i, map)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (replace(k, map), subst(v, map)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A whole-string name, or every bounded address, replaced.
fn replace(s: &str, map: &Map1) -> String {
    if let Some((_, to)) = map.iter().find(|(from, _)| from == s) {
        return to.clone();
    }
    let mut out = s.to_owned();
    for (from, to) in map {
        if !from.contains('.') && !from.contains(':') {
            continue;
        }
        if out.contains(from.as_str()) {
            let mut next = String::with_capacity(out.len());
            let mut last = 0;
            for (i, _) in out.match_indices(from.as_str()) {
                if bounded(&out, i, from.len()) {
                    next.push_str(&out[last..i]);
                    next.push_str(to);
                    last = i + from.len();
                }
            }
            next.push_str(&out[last..]);
            out = next;
        }
    }
    out
}

/// One node's bundle to judge: the report lands in `FILE.json`, and must
/// be node `node`'s.
pub struct Job<'a> {
    pub file: String,
    pub node: String,
    pub make: Box<dyn Fn() -> Bundle + Send + Sync + 'a>,
}

/// The real doctor's judgement of node bundles, `jobs` at a time; each
/// report lands in `dir`, compact, without `replayed_from`. Bundles
/// already judged there are not judged again.
pub fn judge_all(
    spx: &Path,
    dir: &Path,
    work: Vec<Job<'_>>,
    jobs: usize,
) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(BTreeSet::new());
    let paths: Vec<PathBuf> = work
        .iter()
        .map(|j| dir.join(format!("{}.json", j.file)))
        .collect();
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(job) = work.get(i) else {
                    return;
                };
                if paths[i].exists() {
                    continue;
                }
                if let Err(e) = judge_one(spx, dir, job, &paths[i]) {
                    failed
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(format!("{}: {e}", job.file));
                }
            });
        }
    });
    let failed = failed.into_inner().unwrap_or_else(|p| p.into_inner());
    if let Some(first) = failed.iter().next() {
        return Err(format!("{} node(s) not judged; {first}", failed.len()));
    }
    Ok(paths)
}

fn judge_one(spx: &Path, dir: &Path, job: &Job, out: &Path) -> Result<(), String> {
    let name = job.node.as_str();
    let file = dir.join(format!(".{}.bundle", job.file));
    std::fs::write(&file, (job.make)().to_bytes()).map_err(|e| e.to_string())?;
    let run = Command::new(spx)
        .args(["--replay"])
        .arg(&file)
        .args(["--format", "json"])
        .env("HOME", "/nonexistent-spx-swarm-home")
        .output()
        .map_err(|e| format!("{}: {e}", spx.display()))?;
    let _ = std::fs::remove_file(&file);
    let mut doc: Map<String, Value> = serde_json::from_slice(&run.stdout).map_err(|e| {
        format!(
            "the replay said no report ({e}): {}",
            String::from_utf8_lossy(&run.stderr).trim()
        )
    })?;
    if doc.get("node").and_then(Value::as_str) != Some(name) {
        return Err(format!("the report is not {name}'s"));
    }
    doc.remove("replayed_from");
    let tmp = dir.join(format!(".{}.json", job.file));
    std::fs::write(&tmp, serde_json::to_vec(&doc).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, out).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> Template {
        Template::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/n0.bundle")).unwrap()
    }

    fn swarm(n: usize) -> Swarm {
        Swarm {
            nodes: n,
            behind_1500: [n - 1].into(),
            pairs: BTreeSet::new(),
        }
    }

    #[test]
    fn addresses_are_replaced_whole() {
        let m: Map1 = vec![
            ("198.18.0.1".into(), "198.18.4.7".into()),
            ("n0".into(), "n9".into()),
        ];
        assert_eq!(replace("198.18.0.1", &m), "198.18.4.7");
        assert_eq!(replace("via 198.18.0.1: ok", &m), "via 198.18.4.7: ok");
        assert_eq!(replace("198.18.0.10", &m), "198.18.0.10");
        assert_eq!(replace("198.18.0.1.5", &m), "198.18.0.1.5");
        assert_eq!(replace("10.198.18.0.1", &m), "10.198.18.0.1");
        assert_eq!(replace("n0", &m), "n9");
        assert_eq!(replace("n0 and n1", &m), "n0 and n1");
        assert!(contains_addr("to 198.18.0.1.", "198.18.0.1"));
    }

    #[test]
    fn the_template_knows_its_roles() {
        let t = template();
        assert_eq!(t.own.name, "n0");
        assert_eq!(t.ok.name, "n1");
        assert_eq!(t.hole.name, "n2");
        assert_eq!(t.ok.addrs, ["198.18.0.2", "198.19.0.2"]);
    }

    /// Node n3 of 6 (n5 behind 1500): every record is n3's, each peer's
    /// route is asked once, and the probe plan lists the five peers in the
    /// config's order, n5's outcome a black hole.
    #[test]
    fn a_nodes_bundle_is_that_nodes() {
        let t = template();
        let s = swarm(6);
        let b = t.for_node(&s, 3, |a, b| s.black_holed(a, b));
        let cfg = serde_json::to_value(&b.header.config).unwrap();
        assert_eq!(cfg["loaded"]["config"]["node"], "n3");
        assert_eq!(
            cfg["loaded"]["config"]["nodes"].as_object().unwrap().len(),
            6
        );
        assert_eq!(
            cfg["loaded"]["config"]["nodes"]["n4"]["advertise"],
            "198.18.0.5"
        );
        let routes: Vec<&Record> = b
            .records
            .iter()
            .filter(|r| r.scope == "mtu.path" && r.request["kind"] == "route")
            .collect();
        let dests: Vec<&str> = routes
            .iter()
            .map(|r| r.request["destination"].as_str().unwrap())
            .collect();
        assert_eq!(dests.len(), 5);
        for d in [
            "198.18.0.1",
            "198.18.0.2",
            "198.18.0.3",
            "198.18.0.5",
            "198.18.0.6",
        ] {
            assert!(dests.contains(&d), "{dests:?}");
        }
        assert!(routes
            .iter()
            .all(|r| r.ok.as_ref().unwrap()["route"]["preferred_source"] == "198.18.0.4"));
        let icmp = b
            .records
            .iter()
            .find(|r| r.request["kind"] == "icmp")
            .unwrap();
        let targets: Vec<&str> = icmp.request["targets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["addr"].as_str().unwrap())
            .collect();
        assert_eq!(
            targets,
            [
                "198.18.0.1",
                "198.18.0.2",
                "198.18.0.3",
                "198.18.0.5",
                "198.18.0.6"
            ]
        );
        let probes = icmp.ok.as_ref().unwrap()["icmp"]["probes"]
            .as_array()
            .unwrap();
        let largest: Vec<u64> = probes
            .iter()
            .map(|p| p["largest_answered"].as_u64().unwrap())
            .collect();
        assert_eq!(largest, [9000, 9000, 9000, 9000, 1500]);
        let addrs = b
            .records
            .iter()
            .find(|r| r.request["kind"] == "addresses")
            .unwrap();
        let own = addrs.ok.as_ref().unwrap()["addresses"].to_string();
        assert!(
            own.contains("198.18.0.4") && own.contains("198.19.0.4"),
            "{own}"
        );
        assert!(!own.contains("198.18.0.1\""), "{own}");
        // The node behind 1500 sees every peer black-hole.
        let b5 = t.for_node(&s, 5, |a, b| s.black_holed(a, b));
        let icmp = b5
            .records
            .iter()
            .find(|r| r.request["kind"] == "icmp")
            .unwrap();
        assert!(icmp.ok.as_ref().unwrap()["icmp"]["probes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["largest_answered"] == 1500));
    }
}
