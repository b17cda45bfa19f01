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
use crate::snapshot::snapshot;

// nbd-performance.md "Hive inner VM (before fix)" plus the NIC as it was
// before the tuning page: no vhost, no queues, no host_mtu.
const BEFORE: &str = "qemu-system-x86_64 -enable-kvm -cpu host -smp 2 -m 4096 \
    -netdev tap,id=net0,ifname=tapeni-0aaa,script=no,downscript=no \
    -device virtio-net-pci,netdev=net0,mac=02:00:00:00:00:01 \
    -drive file=nbd:unix:/run/user/1000/nbd-vol-aaa.sock,format=raw,if=none,media=disk,id=os \
    -device virtio-blk-pci,drive=os,bootindex=1 -M q35";

// nbd-performance.md "Hive inner VM (after fix)" plus the NIC the daemon
// builds (spinifex-facts.md) for 2 vCPUs with IPsec off at 1500, and its
// QMP monitor.
const AFTER: &str = "qemu-system-x86_64 -name guest=i-0bbb -enable-kvm -cpu host -smp 2 -m 4096 \
    -object iothread,id=ioth-os \
    -drive file=nbd:unix:/run/user/1000/nbd-vol-bbb.sock,format=raw,if=none,media=disk,id=os,cache=none \
    -device virtio-blk-pci,drive=os,iothread=ioth-os,num-queues=2,bootindex=1 \
    -netdev tap,id=net0,ifname=tapeni-0bbb,script=no,downscript=no,vhost=on,queues=2 \
    -device virtio-net-pci,netdev=net0,mac=02:00:00:00:00:02,host_mtu=1442,rx_queue_size=1024,mq=on,vectors=6 \
    -qmp unix:/run/spinifex/i-0bbb.qmp,server=on,wait=off -M q35";

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
                        argv: argv(BEFORE),
                    },
                    QemuProcess {
                        pid: 4343,
                        argv: argv(AFTER),
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
