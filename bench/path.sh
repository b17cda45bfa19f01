#!/usr/bin/env bash
# Benchmark for `spx-doctor path` (issue 33). Not a test: prints a table.
#
# The manual runbook an operator follows today, scripted in
# bench/path_runbook.sh (find the instance's QEMU on every node over ssh, the
# tap's OVS iface-id, ovn-nbctl/ovn-sbctl lookups of the port, its DHCP MTU,
# its binding, chassis and encap IP, `ip link` of the taps and the underlay,
# `ip xfrm state`, a `ping -M do` ladder from each node to the other), against
# `spx-doctor path i-A i-B`, both run as root on spx1 of a real OVN
# (tests/support/ovn_lab.rs: three nodes with their own OVS, ovn-controller
# and sshd, ovn-central, paused QEMU guests), on a healthy jumbo path and with
# spx2's switch port at 1500 (a black hole). Prints, per scenario, the median
# wall time of each (timed in the lab), the doctor's own duration_ms, the
# speedup, and the answer both gave (they must agree).
#
# The lab (SPX_BENCH_LAB):
#   userspace (the default)  this host's kernel, OVS's userspace datapath
#                            (OvnLab::boot_userspace): the host's own speed.
#   kernel                   the kernel lab's guest, OVS's kernel datapath,
#                            under KVM when the lab's kernel boots under it,
#                            else TCG (SPX_VMLAB_ACCEL=tcg|kvm forces one):
#                            every figure is the emulator's.
#
# Needs root and what .ci/run installs. Usage: bench/path.sh [RUNS]
# (default 5; SPX=path uses that doctor instead of target/release/spx-doctor).
# About a minute in the userspace lab; about 6 under TCG, most of it the
# lab's bring-up and the runbook's ssh sessions.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[[ $(id -u) -eq 0 ]] || { echo "bench/path.sh: needs root (the kernel lab)" >&2; exit 2; }
if [[ -z "${SPX:-}" ]]; then
    (cd "$ROOT" && cargo build --release --quiet)
    SPX=$ROOT/target/release/spx-doctor
fi
export SPX_VMLAB_CACHE=${SPX_VMLAB_CACHE:-$ROOT/target/tmp/vmlab}
cd "$ROOT"

# KVM when it is usable here, else TCG (SPX_VMLAB_ACCEL set by the caller
# wins). Usable means more than /dev/kvm opening: the lab's own kernel and
# initramfs must boot under it to the initramfs's init within 30 s (TCG
# takes about 5 s). Measured on 2026-12-04 on this 2-core machine, itself a
# VM: QEMU opens the nested /dev/kvm and SeaBIOS runs on it, but Linux
# (-cpu host) took 65 s through its early boot and then stopped with "KVM
# internal error. Suberror: 1" (emulating a lock cmpxchg16b); with -cpu max
# it printed nothing in 40 s. So the bench ran under TCG.
kvm_boots() {
    [[ -r /dev/kvm && -w /dev/kvm ]] || return 1
    [[ -f $SPX_VMLAB_CACHE/vmlinux && -f $SPX_VMLAB_CACHE/initramfs.cpio ]] || return 1
    # The init finds no 9p share here and says so: that line is the proof
    # that the kernel booted and ran it.
    timeout 30 qemu-system-x86_64 -accel kvm -cpu max -nodefaults -no-user-config \
        -display none -no-reboot -m 512 -smp 1 -kernel "$SPX_VMLAB_CACHE/vmlinux" \
        -initrd "$SPX_VMLAB_CACHE/initramfs.cpio" -append "console=ttyS0 panic=-1 quiet" \
        -serial stdio </dev/null 2>/dev/null | grep -q -m1 'vmlab init:'
}
export SPX_BENCH_LAB=${SPX_BENCH_LAB:-userspace}
case $SPX_BENCH_LAB in
userspace) echo "bench/path.sh: the lab runs on this host (OVS's userspace datapath)" >&2 ;;
kernel)
    if [[ -z ${SPX_VMLAB_ACCEL:-} ]]; then
        if kvm_boots; then SPX_VMLAB_ACCEL=kvm; else SPX_VMLAB_ACCEL=tcg; fi
    fi
    export SPX_VMLAB_ACCEL
    echo "bench/path.sh: the kernel lab runs under ${SPX_VMLAB_ACCEL}" >&2
    ;;
*) echo "bench/path.sh: SPX_BENCH_LAB=$SPX_BENCH_LAB: expected userspace or kernel" >&2; exit 2 ;;
esac
SPX_DOCTOR_BIN=$SPX SPX_BENCH_RUNS=${1:-5} cargo test --quiet --test tests \
    kernel_lab::path_bench::path_benchmark -- --ignored --exact --nocapture 2>&1 |
    grep -v '^vmlab: \|^hostlab: \|^ovn lab: \|^running \|^test \|^$'
