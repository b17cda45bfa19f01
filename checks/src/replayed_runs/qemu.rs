//! `qemu.tuning` on recorded QEMU processes, taps, descriptors and a QMP
//! monitor's answer: a host running a guest from before the tuning page
//! beside one the updated daemon started.

use std::collections::BTreeMap;

use super::Facts;
use crate::checks::qemu_tuning::QemuTuning;
use crate::facts::qemu::host::ProcessFds;
use crate::facts::qemu::process::{Discovery, QemuProcess};
use crate::facts::qemu::qmp::{QmpBlock, QmpFacts};
use crate::finding::Status;
use crate::host::{Fact, Request};
use crate::seeds::qemu::{hive_after, hive_before, Guest};
use crate::snapshot::snapshot;

/// The guest from before the tuning page (`crate::seeds::qemu`).
fn before() -> String {
    hive_before(&Guest {
        id: "0aaa",
        volume: "aaa",
        mac: "02:00:00:00:00:01",
    })
}

/// The guest the updated daemon started, with its QMP monitor.
fn after() -> String {
    hive_after(
        &Guest {
            id: "0bbb",
            volume: "bbb",
            mac: "02:00:00:00:00:02",
        },
        "-qmp unix:/run/spinifex/i-0bbb.qmp,server=on,wait=off",
    )
}

fn argv(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

/// A tap's sysfs: `queues` pairs, and its tun flags (0x7902: multi_queue,
/// as captured on Debian 12, kernel 6.18, with QEMU 7.2 attached).
fn tap(facts: Facts, name: &str, queues: usize, flags: &str) -> Facts {
    let mut entries: Vec<String> = Vec::new();
    for q in 0..queues {
        entries.push(format!("rx-{q}"));
        entries.push(format!("tx-{q}"));
    }
    entries.sort();
    let names: Vec<&str> = entries.iter().map(String::as_str).collect();
    facts
        .dir(&format!("/sys/class/net/{name}/queues"), &names)
        .file(&format!("/sys/class/net/{name}/tun_flags"), flags)
}

fn fds(pid: i32, tap: &str, queues: usize, vhost: usize) -> (Request, Fact) {
    (
        Request::ProcessFds { pid },
        Fact::ProcessFds(ProcessFds {
            tun_queues: BTreeMap::from([(tap.to_owned(), queues)]),
            vhost_net: vhost,
        }),
    )
}

#[test]
fn the_guest_from_before_the_fix_is_named_beside_one_that_passes() {
    let (f1, fds1) = fds(4242, "tapeni-0aaa", 1, 0);
    let (f2, fds2) = fds(4343, "tapeni-0bbb", 2, 2);
    let facts = Facts::new()
        .config("[network]\nipsec_enabled = false\nunderlay_mtu = 1500\n")
        .ok(
            Request::QemuProcesses,
            Fact::QemuProcesses(Discovery {
                found: vec![
                    QemuProcess {
                        pid: 4242,
                        argv: argv(&before()),
                    },
                    QemuProcess {
                        pid: 4343,
                        argv: argv(&after()),
                    },
                ],
                unreadable: Vec::new(),
            }),
        )
        .ok(f1, fds1)
        .ok(f2, fds2)
        .exists("/dev/vhost-net", true)
        .exists("/var/run/openvswitch/db.sock", false)
        .ok(
            Request::Qmp {
                socket: "/run/spinifex/i-0bbb.qmp".into(),
            },
            Fact::Qmp(Ok(QmpFacts {
                qemu_version: Some((7, 2)),
                iothreads: vec!["ioth-os".into()],
                block: vec![QmpBlock {
                    device: "os".into(),
                    qdev: Some("/machine/peripheral-anon/device[1]/virtio-backend".into()),
                    node_name: Some("#block123".into()),
                    iothread: Some("ioth-os".into()),
                }],
            })),
        );
    let facts = tap(facts, "tapeni-0aaa", 1, "0x1002\n");
    let f = tap(facts, "tapeni-0bbb", 2, "0x7902\n").run(&QemuTuning);
    snapshot!("qemu.tuning", f);
    assert_eq!(f.status, Status::Fail, "{}", f.summary);
    let instances = f.evidence["instances"].as_array().unwrap();
    let after = instances.iter().find(|i| i["pid"] == 4343).unwrap();
    assert_eq!(after["problems"], serde_json::json!([]), "{after:#}");
    assert_eq!(after["name"], "i-0bbb");
    assert!(f
        .remediation
        .iter()
        .any(|r| r.contains("stop, then start instance pid 4242")));
}
