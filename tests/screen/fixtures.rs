//! The reports the first screens are drawn from in the golden tests, kept
//! in `tests/data/screen/` so that every machine draws the same screens:
//! real node reports of a real cluster lab (the `--cluster --format json`
//! of [`SshLab`]: one namespace, sshd and config per node, one switch port
//! at 1500), and bundles of real runs for the node views (`--replay`).
//!
//! `SPX_BLESS=1 cargo test --test tests screen::fixtures` records them
//! anew (`SPX_BLESS=64` also the 64-node lab); otherwise the tests here
//! build the 16-node lab and hold the committed reports to what it
//! reports now: the same black hole on the same node, seen the same way.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::sshd::{LabNode, SshLab};
use crate::support::{self, run_cluster_json};
use spx_test_harness::root_test;

/// Where the fixtures are.
pub fn dir() -> PathBuf {
    support::repo_root().join("tests/data/screen")
}

/// A cluster's node reports, as its nodes wrote them, and the config
/// (its `[nodes.*]`) that places them.
pub struct ClusterFixture {
    /// The config without `node =`: a coordinator that is none of them.
    pub config: String,
    /// Each node's report, by name, with its `host` (where ssh goes).
    pub reports: BTreeMap<String, (String, Value)>,
}

impl ClusterFixture {
    /// `cluster-N.json.gz`.
    pub fn read(nodes: usize) -> ClusterFixture {
        let path = dir().join(format!("cluster-{nodes}.json.gz"));
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut text = String::new();
        flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        ClusterFixture {
            config: doc["config"].as_str().unwrap().to_owned(),
            reports: doc["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| {
                    (
                        n["name"].as_str().unwrap().to_owned(),
                        (n["host"].as_str().unwrap().to_owned(), n["report"].clone()),
                    )
                })
                .collect(),
        }
    }

    fn write(&self, nodes: usize) {
        let doc = json!({
            "config": self.config,
            "nodes": self.reports.iter().map(|(name, (host, report))| {
                json!({"name": name, "host": host, "report": report})
            }).collect::<Vec<_>>(),
        });
        let path = dir().join(format!("cluster-{nodes}.json.gz"));
        let file = std::fs::File::create(&path).unwrap();
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::best());
        gz.write_all(serde_json::to_string(&doc).unwrap().as_bytes())
            .unwrap();
        gz.finish().unwrap();
    }
}

/// `nodes` lab nodes, tuned, node n`hole`'s switch port at 1500: every
/// path to and from it black-holes jumbo frames. The default run less
/// what a lab node cannot pass ([`NOT_THE_NODES`]) and qemu.tuning (a lab
/// node's /proc shows every QEMU of this machine, another test's VM
/// among them), from n0.
/// Before the port goes to 1500, and after, n1's own run is recorded into
/// `bundles` (when given): a healthy node and one with three problems.
fn lab_reports(nodes: usize, hole: usize, bundles: Option<&Path>) -> ClusterFixture {
    let lab = SshLab::new(vec![LabNode::jumbo(); nodes]);
    if nodes > 20 {
        permanent_neighbours(&lab);
    }
    if let Some(to) = bundles {
        node_bundles(&lab, hole, to);
    }
    for i in 0..nodes {
        tune(&lab.fabric.node(i).ns);
    }
    lab.fabric
        .switch
        .ip(&["link", "set", &format!("p{hole}"), "mtu", "1500"]);
    let (code, doc) = run_cluster_json(
        lab.coordinator(0)
            .args(["--timeout", "120s", "--parallel", "64", "--skip"])
            .arg(format!("{NOT_THE_NODES},qemu.tuning")),
    );
    assert_eq!(code, 1, "{doc:#}");
    let config: String = lab
        .config_text(0, false, 9000)
        .lines()
        .filter(|l| !l.starts_with("node = "))
        .map(|l| format!("{l}\n"))
        .collect();
    let reports = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, n)| {
            assert_eq!(n["status"], "ok", "{n:#}");
            (
                n["name"].as_str().unwrap().to_owned(),
                (lab.addr(i), n["report"].clone()),
            )
        })
        .collect();
    ClusterFixture { config, reports }
}

/// The checks a node of this lab cannot pass for reasons of the lab, not
/// of the node: the UDP buffers are this machine's (a namespace cannot set
/// them), and there is no OVS or OVN.
const NOT_THE_NODES: &str = "sysctl.udp-buffers,ipsec.flags,ovn.cluster";

/// A lab node's NIC as a tuned node has it: GRO and both queue pairs on.
fn tune(ns: &crate::support::Netns) {
    ns.exec(&["ethtool", "-K", "eth0", "gro", "on"]);
    ns.exec(&["ethtool", "-L", "eth0", "rx", "2", "tx", "2"]);
}

/// n1's own run, recorded: healthy (tuned), then with node `hole` behind
/// a 1500-byte port and one queue pair: three problems (mtu.path,
/// nic.queues, and the UDP buffers this machine leaves at its own value).
fn node_bundles(lab: &SshLab, hole: usize, to: &Path) {
    let n1 = &lab.fabric.node(1).ns;
    tune(n1);
    let healthy = to.join("node-healthy.spxb");
    let (code, out, err) = support::run(
        lab.fabric
            .node(1)
            .spx()
            .args(["--skip", NOT_THE_NODES, "--record"])
            .arg(&healthy),
    );
    assert_eq!(code, 0, "{out}{err}");
    only_guest(&healthy, None);
    lab.fabric
        .switch
        .ip(&["link", "set", &format!("p{hole}"), "mtu", "1500"]);
    n1.exec(&["ethtool", "-L", "eth0", "rx", "1", "tx", "1"]);
    let three = to.join("node-three-problems.spxb");
    let (code, out, err) = support::run(
        lab.fabric
            .node(1)
            .spx()
            .args(["--skip", "ipsec.flags,ovn.cluster", "--record"])
            .arg(&three),
    );
    assert_eq!(code, 1, "{out}{err}");
    only_guest(&three, None);
    lab.fabric
        .switch
        .ip(&["link", "set", &format!("p{hole}"), "mtu", "9000"]);
}

/// Every node's underlay neighbours as permanent entries: the kernel's
/// one neighbour table (every namespace's) holds N² entries for N nodes
/// probing each other, past its default bound of 1024 from 32 nodes on;
/// permanent entries are not counted against it (and nothing of this
/// machine's settings changes).
fn permanent_neighbours(lab: &SshLab) {
    let macs: Vec<String> = (0..lab.names.len())
        .map(|i| {
            let link = lab.fabric.node(i).ns.ip(&["-j", "link", "show", "eth0"]);
            let v: Value = serde_json::from_str(&link).unwrap();
            v[0]["address"].as_str().unwrap().to_owned()
        })
        .collect();
    for i in 0..lab.names.len() {
        let batch: String = (0..lab.names.len())
            .filter(|j| *j != i)
            .map(|j| {
                format!(
                    "neigh replace {} lladdr {} dev eth0 nud permanent\n",
                    lab.underlay(j),
                    macs[j]
                )
            })
            .collect();
        let file = lab.dir.path().join(format!("neigh-{i}"));
        std::fs::write(&file, batch).unwrap();
        lab.fabric
            .node(i)
            .ns
            .ip(&["-batch", file.to_str().unwrap()]);
    }
}

/// Each node's mtu.path code, and the matrix's: what the fixture is of.
fn black_hole(f: &ClusterFixture) -> BTreeMap<String, String> {
    f.reports
        .iter()
        .map(|(name, (_, report))| {
            let code = report["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["id"] == "mtu.path")
                .map(|c| c["code"].as_str().unwrap().to_owned())
                .unwrap_or_default();
            (name.clone(), code)
        })
        .collect()
}

/// A bundle's replay as (check id, code), leaving out the checks whose
/// verdict is this machine's rather than the lab's.
fn replayed_codes(bundle: &Path) -> Vec<(String, String)> {
    // qemu.tuning sees every QEMU of the machine (another test's).
    const MACHINE: [&str; 6] = [
        "sysctl.udp-buffers",
        "udp.rcvbuf-errors",
        "cpu.softirq",
        "tcp.reordering",
        "ipsec.errors",
        "qemu.tuning",
    ];
    let (_, doc) = support::run_json_unrecorded(support::spx().arg("--replay").arg(bundle));
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !MACHINE.contains(&c["id"].as_str().unwrap()))
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[root_test]
fn fixtures_are_what_the_labs_record() {
    let bless = std::env::var("SPX_BLESS").ok();
    let fresh_bundles = tempfile::tempdir().unwrap();
    let to = if bless.is_some() {
        dir()
    } else {
        fresh_bundles.path().to_owned()
    };
    let fresh = lab_reports(16, 12, Some(&to));
    let blackholed = black_hole(&fresh);
    assert!(
        blackholed.values().all(|c| c == "mtu.path/black-hole"),
        "{blackholed:#?}"
    );
    if bless.is_some() {
        fresh.write(16);
        record_without_config();
    }
    if bless.as_deref() == Some("64") {
        lab_reports(64, 40, None).write(64);
    }
    let pid = one_guest(&to);
    only_guest(&to.join("one-guest.spxb"), Some(pid));
    guests(&to.join("one-guest.spxb"), pid, &to);
    std::fs::remove_file(to.join("one-guest.spxb")).unwrap();
    for name in [
        "node-healthy.spxb",
        "node-three-problems.spxb",
        "node-300-guests.spxb",
    ] {
        assert_eq!(
            replayed_codes(&dir().join(name)),
            replayed_codes(&to.join(name)),
            "{name}: the committed bundle and the lab's run now"
        );
    }
    for nodes in [16, 64] {
        let kept = ClusterFixture::read(nodes);
        assert_eq!(kept.reports.len(), nodes);
        let codes = black_hole(&kept);
        assert!(
            codes.values().all(|c| c == "mtu.path/black-hole"),
            "{codes:#?}"
        );
        if nodes == 16 {
            assert_eq!(
                codes, blackholed,
                "the committed 16-node reports and the lab's"
            );
            // The same lab: the same nodes in the same places.
            assert_eq!(kept.config, fresh.config);
        }
    }
}

/// The README's first command on this machine, which has no Spinifex
/// config: its bundle.
fn record_without_config() {
    let bundle = dir().join("node-no-config.spxb");
    let (code, out, err) = support::run(support::spx().arg("--record").arg(&bundle));
    assert!(code < 2, "{out}{err}");
    only_guest(&bundle, None);
}

/// `bundle` rewritten to hold no QEMU of this machine but `keep`'s:
/// qemu.tuning sees every QEMU on the machine, and another test's (a
/// kernel lab's VM) is no guest of the node the fixture stands for.
/// Its process entry and every answer about it (descriptors, taps,
/// monitor) go.
fn only_guest(bundle: &Path, keep: Option<u32>) {
    let text = support::bundle_text(bundle);
    let mut others: Vec<String> = Vec::new();
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let Ok(mut v) = serde_json::from_str::<Value>(line) else {
            out.push(line.to_owned());
            continue;
        };
        if let Some(found) = v["ok"]["qemu-processes"]["found"].as_array_mut() {
            for p in found.iter().filter(|p| keep.is_none_or(|k| p["pid"] != k)) {
                others.push(format!("\"pid\":{}", p["pid"]));
                for a in p["argv"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    others.extend(
                        a.split(',')
                            .filter_map(|w| w.strip_prefix("ifname="))
                            .map(str::to_owned),
                    );
                    if let Some(path) = a.strip_prefix("unix:") {
                        others.push(path.split(',').next().unwrap_or("").to_owned());
                    }
                }
            }
            found.retain(|p| keep.is_some_and(|k| p["pid"] == k));
            out.push(v.to_string());
            continue;
        }
        let about_another = v["scope"] == "qemu.tuning"
            && others
                .iter()
                .any(|o| !o.is_empty() && line.contains(o.as_str()));
        if !about_another {
            out.push(line.to_owned());
        }
    }
    write_bundle(bundle, &out);
}

/// Record a full run (this node's config, no peers) in a namespace of its
/// own beside one real paused QEMU guest started as a tuned Spinifex guest
/// is, but for vhost (`vhost=on` needs /dev/vhost-net, which this machine
/// lacks): the guest of [`guests`].
fn one_guest(to: &Path) -> u32 {
    use crate::support::qemu::QemuGuest;
    let ns = crate::support::Netns::new();
    ns.ip(&[
        "tuntap",
        "add",
        "dev",
        "tapeni-0001",
        "mode",
        "tap",
        "multi_queue",
    ]);
    // As the daemon makes it: at the guest MTU.
    ns.ip(&["link", "set", "dev", "tapeni-0001", "mtu", "1442"]);
    let guest = QemuGuest::start(
        &ns,
        &[
            "-name",
            "guest=i-0001,debug-threads=on",
            "-smp",
            "cpus=2,sockets=1,cores=2",
            "-object",
            "iothread,id=ioth-os",
            "-drive",
            "driver=null-co,id=os,if=none,size=1048576,cache=none",
            "-device",
            "virtio-blk-pci,drive=os,iothread=ioth-os,num-queues=2,bootindex=1",
            "-netdev",
            "tap,id=net0,ifname=tapeni-0001,script=no,downscript=no,queues=2",
            "-device",
            "virtio-net-pci,netdev=net0,mac=02:00:00:00:00:01,host_mtu=1442,rx_queue_size=1024,mq=on,vectors=6",
        ],
    );
    let etc = tempfile::tempdir().unwrap();
    let config = support::write_config(
        etc.path(),
        "node = \"spx1\"\n[network]\nipsec_enabled = false\nunderlay_mtu = 1500\n[nodes.spx1]\nhost = \"198.18.0.1\"\n",
    );
    // mtu.overlay reads every tap of the node from one link dump, which
    // the guests below do not add to: it is left out.
    let (code, out, err) = support::run(
        ns.spx()
            .args(["--skip", "mtu.overlay", "--config"])
            .arg(&config)
            .arg("--record")
            .arg(to.join("one-guest.spxb")),
    );
    assert!(code < 2, "{out}{err}");
    guest.pid
}

/// Guests a node of [`guests`] runs.
pub const GUESTS: usize = 300;

/// A node running [`GUESTS`] guests that all lack one flag: the bundle of
/// [`one_guest`] with that one real guest's facts (its process, command
/// line, tap, descriptors and monitor) answered for each of them, under
/// its own pid, name, tap and monitor socket. Any other QEMU the machine
/// ran at the time (another test's) is left out.
fn guests(one: &Path, pid: u32, to: &Path) {
    let text = support::bundle_text(one);
    let mut lines = text.lines();
    let mut out = vec![lines.next().expect("a header").to_owned()];
    let qmp_dir = lines
        .clone()
        .find_map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            let found = v["ok"]["qemu-processes"]["found"].as_array()?;
            let me = found.iter().find(|p| p["pid"] == pid)?;
            let argv: Vec<&str> = me["argv"]
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let qmp = argv
                .iter()
                .position(|a| *a == "-qmp")
                .map(|i| argv[i + 1])?;
            let path = qmp.strip_prefix("unix:")?.split(',').next()?;
            Some(Path::new(path).parent()?.display().to_string())
        })
        .expect("the guest in the recorded qemu-processes");
    let as_guest = |line: &str, i: usize| -> String {
        line.replace("tapeni-0001", "\u{0}")
            .replace("i-0001", &format!("i-{:04x}", 0x0a00 + i))
            .replace('\u{0}', &format!("tapeni-{:04x}", 0x0a00 + i))
            .replace(
                &qmp_dir,
                &format!("/run/spinifex/guests/{:04x}", 0x0a00 + i),
            )
            .replace(
                &format!("\"pid\":{pid}"),
                &format!("\"pid\":{}", 20_000 + 7 * i),
            )
    };
    let mine = |line: &str| {
        line.contains(&format!("\"pid\":{pid}"))
            || line.contains("tapeni-0001")
            || line.contains(&qmp_dir)
    };
    for line in lines {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["request"]["kind"] == "qemu-processes" && v["ok"].is_object() {
            let mut v = v.clone();
            let found = v["ok"]["qemu-processes"]["found"].as_array().unwrap();
            let me = found.iter().find(|p| p["pid"] == pid).unwrap().to_string();
            let all: Vec<Value> = (0..GUESTS)
                .map(|i| serde_json::from_str(&as_guest(&me, i)).unwrap())
                .collect();
            v["ok"]["qemu-processes"]["found"] = Value::Array(all);
            out.push(v.to_string());
        } else if v["scope"] == "qemu.tuning" && mine(line) {
            out.extend((0..GUESTS).map(|i| as_guest(line, i)));
        } else if v["scope"] != "qemu.tuning" || !line.contains("spx-qemu-") {
            out.push(line.to_owned());
        }
    }
    write_bundle(&to.join("node-300-guests.spxb"), &out);
}

/// A bundle of `lines` (gzip JSON lines, as `--record` writes it).
fn write_bundle(path: &Path, lines: &[String]) {
    let file = std::fs::File::create(path).unwrap();
    let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::best());
    for l in lines {
        gz.write_all(l.as_bytes()).unwrap();
        gz.write_all(b"\n").unwrap();
    }
    gz.finish().unwrap();
}
