#!/usr/bin/env bash
# Benchmark for `spx-doctor path` (issue 33). Not a test: prints a table.
#
# The manual runbook an operator follows today, scripted in
# bench/path_runbook.sh (find the instance's QEMU on every node over ssh, the
# tap's OVS iface-id, ovn-nbctl/ovn-sbctl lookups of the port, its DHCP MTU,
# its binding, chassis and encap IP, `ip link` of the taps and the underlay,
# `ip xfrm state`, a `ping -M do` ladder from each node to the other), against
# `spx-doctor path i-A i-B`, both run as root on spx1 of the kernel lab's
# real OVN (tests/support/ovn_lab.rs: three nodes, ovn-central, paused QEMU
# guests), on a healthy jumbo path and with spx2's switch port at 1500 (a
# black hole). Prints, per scenario, the median wall time of each (timed in
# the guest, under TCG emulation: both pay it), the doctor's own
# duration_ms, the speedup, and the answer both gave (they must agree).
#
# Needs root and what .ci/run installs. Usage: bench/path.sh [RUNS]
# (default 5; SPX=path uses that doctor instead of target/release/spx-doctor).
# About 6 minutes on a quiet machine, most of it the lab's bring-up and the
# runbook's ssh sessions.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[[ $(id -u) -eq 0 ]] || { echo "bench/path.sh: needs root (the kernel lab)" >&2; exit 2; }
if [[ -z "${SPX:-}" ]]; then
    (cd "$ROOT" && cargo build --release --quiet)
    SPX=$ROOT/target/release/spx-doctor
fi
export SPX_VMLAB_CACHE=${SPX_VMLAB_CACHE:-$ROOT/target/tmp/vmlab}
cd "$ROOT"
SPX_DOCTOR_BIN=$SPX SPX_BENCH_RUNS=${1:-5} cargo test --quiet --test tests \
    kernel_lab::path_bench::path_benchmark -- --ignored --exact --nocapture 2>&1 |
    grep -v '^vmlab: \|^ovn lab: \|^running \|^test \|^$'
