//! QEMU command lines: the bytes of /proc/PID/cmdline split into argv, then
//! parsed the way QEMU parses them, and every accessor the qemu.tuning
//! check and `spx-doctor path` use driven over the result.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::facts::qemu::instance::{instance_id, tap_nics};
use spx_checks::facts::qemu::process::{is_qemu_program, split_cmdline};
use spx_checks::facts::qemu::QemuCommandLine;

fuzz_target!(|data: &[u8]| {
    let argv = split_cmdline(data);
    if let Some(p) = argv.first() {
        let _ = is_qemu_program(p);
    }
    let Ok(cl) = QemuCommandLine::parse(&argv) else {
        return;
    };
    let _ = cl.vcpus();
    let _ = cl.qmp_sockets();
    // What spx-doctor path reads: the instance and its tap NICs.
    if let Some(id) = instance_id(&cl) {
        assert!(id.starts_with("i-"));
    }
    for nic in tap_nics(&cl) {
        assert!(!nic.tap.is_empty() && nic.queues > 0);
    }
    for id in cl.iothreads() {
        let _ = cl.object(id);
    }
    for dev in &cl.devices {
        for key in [
            "netdev",
            "drive",
            "queues",
            "vectors",
            "mq",
            "iothread",
            "num-queues",
        ] {
            let _ = cl.device_prop(dev, key);
            let _ = cl.device_number(dev, key);
            let _ = cl.device_flag(dev, key);
        }
        if let Some(id) = dev.get("netdev") {
            let _ = cl.netdev(id);
        }
        if let Some(id) = dev.get("drive") {
            let _ = cl.drive(id);
            let _ = cl.blockdev(id);
        }
    }
});
