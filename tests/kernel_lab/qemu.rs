//! `qemu.tuning` where `/dev/vhost-net` exists: QEMU started inside the lab
//! guest the way the Spinifex daemon starts it (a multiqueue tap with
//! vhost=on, host_mtu, rx_queue_size=1024, an iothread and cache=none for
//! the boot disk, num-queues, a management NIC), paused with -S. The
//! check must find nothing wrong with it, and name vhost on the same guest
//! started with vhost=off.

use crate::qemu::instance;
use crate::support::qemu::PAUSED;
use crate::support::vm::{self, quote, Vm, VmOptions};
use crate::support::{check, strings};
use spx_test_harness::root_test;

/// One node, IPsec off, underlay 1500: guests get 1442 and min(vCPUs, 8)
/// = 2 queue pairs for the 2-vCPU guests below.
const CONFIG: &str = "node = \"spx1\"\n[network]\nipsec_enabled = false\nunderlay_mtu = 1500\n[nodes.spx1]\nhost = \"198.18.0.1\"\n";

/// Start a paused QEMU in the guest as the daemon would (vhost as given)
/// on taps `tap` and `mg`; returns its pid once QMP answers.
fn start_guest(vm: &Vm, name: &str, tap: &str, mg: &str, vhost: &str) -> u32 {
    vm.ok(&format!(
        "ip tuntap add dev {tap} mode tap multi_queue && ip tuntap add dev {mg} mode tap"
    ));
    let qmp = format!("/tmp/{name}.qmp");
    let args = [
        "-name",
        &format!("guest={name}"),
        "-smp",
        "cpus=2,sockets=1,cores=2",
        "-qmp",
        &format!("unix:{qmp},server=on,wait=off"),
        "-object",
        "iothread,id=ioth-os",
        "-drive",
        "driver=null-co,id=os,if=none,size=1048576,cache=none",
        "-device",
        "virtio-blk-pci,drive=os,iothread=ioth-os,num-queues=2,bootindex=1",
        "-netdev",
        &format!("tap,id=net0,ifname={tap},script=no,downscript=no,vhost={vhost},queues=2"),
        "-device",
        "virtio-net-pci,netdev=net0,mac=02:00:00:00:00:01,host_mtu=1442,rx_queue_size=1024,mq=on,vectors=6",
        "-netdev",
        &format!("tap,id=mg0,ifname={mg},script=no,downscript=no"),
        "-device",
        "virtio-net-pci,netdev=mg0,mac=02:00:00:00:00:02",
    ];
    let line: Vec<String> = PAUSED.iter().chain(&args).map(|a| quote(a)).collect();
    let pid: u32 = vm
        .ok(&format!(
            "/usr/bin/qemu-system-x86_64 {} </dev/null >/tmp/{name}.log 2>&1 & echo $!",
            line.join(" ")
        ))
        .trim()
        .parse()
        .unwrap();
    let status = vm.sh_within(
        &vm::helper(None, &["qmp-prelaunch", &qmp]),
        std::time::Duration::from_secs(120),
    );
    assert!(
        status.code == 0 && status.stdout.contains(r#""status":"prelaunch""#),
        "inner QEMU {name} not ready: {status:?}\n{}",
        vm.sh(&format!("cat /tmp/{name}.log")).stdout
    );
    pid
}

#[root_test]
fn a_daemon_started_guest_with_vhost_net_passes_and_vhost_off_is_named() {
    let test = "a_daemon_started_guest_with_vhost_net_passes_and_vhost_off_is_named";
    let Some(image) = vm::lab_or_skip(test) else {
        return;
    };
    let vm = Vm::boot(
        image,
        VmOptions {
            memory_mb: 1536,
            ..VmOptions::default()
        }
        .modules(&["tun", "vhost_net"]),
    );
    vm.ok("test -c /dev/vhost-net && test -c /dev/net/tun");
    let config = vm.file("spinifex.toml", CONFIG);
    let run = |vm: &Vm| {
        let (code, doc) = vm.spx(
            None,
            &[
                "--check",
                "qemu.tuning",
                "--config",
                &config,
                "--probe-timeout",
                "5s",
            ],
        );
        (code, check(&doc, "qemu.tuning").clone(), doc)
    };

    let tuned = start_guest(&vm, "spx-tuned", "tapeni-new0", "mgi-new0", "on");
    let (code, c, doc) = run(&vm);
    assert_eq!(c["status"], "pass", "{c:#}");
    assert_eq!(code, 0);
    assert_eq!(c["evidence"]["vhost_net"], true, "{c:#}");
    let me = instance(&doc, tuned);
    assert!(strings(&me["problems"]).is_empty(), "{me:#}");
    let ok = strings(&me["ok"]).join("\n");
    for expected in [
        // The kernel's vhost workers, one per queue pair.
        "NIC net0 (tapeni-new0): vhost=on (the process holds 2 /dev/vhost-net descriptor(s))",
        "NIC net0 (tapeni-new0): queues=2",
        "rx_queue_size=1024",
        "host_mtu=1442",
        "QEMU holds 2 queue(s) of tap tapeni-new0",
        "boot disk os: cache=none",
        "boot disk os: iothread=ioth-os",
        "boot disk os: num-queues=2",
        "NIC mg0 (mgi-new0): management NIC, not audited",
    ] {
        assert!(ok.contains(expected), "{expected:?} not in\n{ok}");
    }
    // The oracle: QEMU really holds vhost-net descriptors.
    let held = vm.ok(&format!("ls -l /proc/{tuned}/fd | grep -c /dev/vhost-net"));
    assert_eq!(held.trim(), "2");

    // The same guest with vhost=off: named, with the fix, and nothing
    // else wrong with either guest.
    let untuned = start_guest(&vm, "spx-novhost", "tapeni-old0", "mgi-old0", "off");
    let (code, c, doc) = run(&vm);
    assert_eq!(c["status"], "fail", "{c:#}");
    assert_eq!(code, 1);
    let problems = strings(&instance(&doc, untuned)["problems"]);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(
        problems[0].starts_with("NIC net0 (tapeni-old0): vhost=off, expected vhost=on"),
        "{problems:#?}"
    );
    assert!(
        !problems[0].contains("/dev/vhost-net is missing"),
        "{problems:#?}"
    );
    assert!(
        strings(&instance(&doc, tuned)["problems"]).is_empty(),
        "{c:#}"
    );
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!("pid {untuned}")) && summary.contains("vhost"),
        "{summary}"
    );
    assert!(!summary.contains(&format!("pid {tuned}")), "{summary}");
    let fixes = strings(&c["remediation"]);
    assert!(
        fixes
            .iter()
            .any(|f| f.contains(&format!("stop, then start instance pid {untuned}"))),
        "{fixes:#?}"
    );
}
