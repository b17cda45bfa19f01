//! `sysctl.udp-buffers` and `udp.rcvbuf-errors` where `net.core.rmem_max`
//! really is set: the guest's initial network namespace (on 6.1 a child
//! namespace cannot set it). The seed's before and after: at the kernel
//! default quic-go's 7 MiB request is cut to 416 KiB and bursts drop; at
//! 16777216 the same bursts fit, and nothing is dropped.

use serde_json::Value;

use crate::support::check;
use crate::support::vm::{self, Vm, VmOptions};

use super::{start_helper, stop_helper};
use spx_test_harness::root_test;

/// 2000 datagrams of 1200 bytes: about 4.6 MB of receive-buffer charge on
/// loopback, over ten times the 416 KiB a default kernel grants, well
/// inside the 14 MiB it grants once rmem_max is 16 MiB.
const BURST: &str = "2000";

/// `udp.rcvbuf-errors` sampled while the bursts run; the helper's own
/// count of what it sent and received.
fn sample_during_bursts(vm: &Vm) -> (i32, Value, Value) {
    start_helper(
        vm,
        None,
        &["udp-bursts", BURST, "/tmp/bursts"],
        "/tmp/bursts",
    );
    let (code, doc) = vm.spx(None, &["--check", "udp.rcvbuf-errors", "--sample", "2s"]);
    let traffic = stop_helper(vm, "/tmp/bursts");
    (code, check(&doc, "udp.rcvbuf-errors").clone(), traffic)
}

fn rmem_max(vm: &Vm) -> u64 {
    vm.ok("cat /proc/sys/net/core/rmem_max")
        .trim()
        .parse()
        .unwrap()
}

#[root_test]
fn udp_buffers_fail_at_the_default_and_pass_at_16_mib_under_real_bursts() {
    let test = "udp_buffers_fail_at_the_default_and_pass_at_16_mib_under_real_bursts";
    let Some(image) = vm::lab_or_skip(test) else {
        return;
    };
    let vm = Vm::boot(image, VmOptions::default());

    // The kernel default, read by the check and by /proc (the oracle).
    let default = rmem_max(&vm);
    assert_eq!(default, 212_992, "Debian 6.1's default");
    let (code, doc) = vm.spx(None, &["--check", "sysctl.udp-buffers"]);
    let c = check(&doc, "sysctl.udp-buffers");
    assert_eq!(c["status"], "fail", "{c:#}");
    assert_eq!(code, 1);
    assert_eq!(c["evidence"]["rmem_max"], default);

    // Bursts at the default: quic-go's request is cut to 2 x 212992 and
    // the check sees the drops advance within its window.
    let (code, c, traffic) = sample_during_bursts(&vm);
    assert_eq!(traffic["rcvbuf"], 2 * default, "{traffic}");
    let dropped = traffic["sent"].as_u64().unwrap() - traffic["received"].as_u64().unwrap();
    assert_eq!(c["status"], "fail", "{c:#}\n{traffic}");
    assert_eq!(code, 1);
    let delta = c["evidence"]["rcvbuf_errors_delta"].as_u64().unwrap();
    assert!(
        delta > 0 && delta <= dropped,
        "delta {delta} within the helper's {dropped} drops: {c:#}"
    );
    let window = c["evidence"]["window_ms"].as_u64().unwrap();
    assert!((1000..=2500).contains(&window), "{c:#}");

    // The remediation, exactly as printed: the sysctl.d file and
    // `sysctl --system`.
    let (_, doc) = vm.spx(None, &["--check", "sysctl.udp-buffers"]);
    let fixes = check(&doc, "sysctl.udp-buffers")["remediation"].clone();
    let file = fixes[0].as_str().unwrap();
    assert!(
        file.contains("/etc/sysctl.d/99-spinifex-net.conf")
            && file.contains("`net.core.rmem_max = 16777216`")
            && file.contains("`net.core.wmem_max = 16777216`"),
        "{fixes:#}"
    );
    assert_eq!(fixes[1], "sysctl --system");
    vm.ok("printf 'net.core.rmem_max = 16777216\\nnet.core.wmem_max = 16777216\\n' >/etc/sysctl.d/99-spinifex-net.conf && sysctl --system >/dev/null");
    assert_eq!(rmem_max(&vm), 16_777_216);
    let (code, doc) = vm.spx(None, &["--check", "sysctl.udp-buffers"]);
    let c = check(&doc, "sysctl.udp-buffers");
    assert_eq!(c["status"], "pass", "{c:#}");
    assert_eq!(code, 0);
    assert_eq!(c["evidence"]["rmem_max"], 16_777_216);
    assert_eq!(c["evidence"]["wmem_max"], 16_777_216);

    // The same bursts with the fix: the full 7 MiB (doubled), nothing
    // dropped, a delta of 0. The drops from before the fix stay in the
    // since-boot total, which is a warning (not a failure) that says so.
    let (code, c, traffic) = sample_during_bursts(&vm);
    assert_eq!(traffic["rcvbuf"], 2 * 7 * 1024 * 1024, "{traffic}");
    assert_eq!(traffic["sent"], traffic["received"], "{traffic}");
    assert!(traffic["sent"].as_u64().unwrap() > 2000, "{traffic}");
    assert_eq!(c["evidence"]["rcvbuf_errors_delta"], 0, "{c:#}\n{traffic}");
    assert_eq!(c["status"], "warn", "{c:#}");
    assert_eq!(code, 0);
    assert!(
        c["summary"].as_str().unwrap().contains("none during the"),
        "{c:#}"
    );
    assert!(
        c["evidence"]["rcvbuf_errors_total"].as_u64().unwrap() >= delta,
        "{c:#}"
    );
}
