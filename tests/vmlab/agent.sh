#!/bin/sh
# Stage 2 of the kernel lab guest: PID 1 after switch_root, running the
# host's dash on the overlay root (tests/vmlab/init); or PID 1 of a host
# lab's namespaces (HOSTLAB=1: tests/support/vm.rs, Vm::on_host). It loads the modules
# the test asked for from the cached kernel package, says it is ready, then
# runs each command the host drops into /run/lab/req/N.sh in turn, writing
# N.out, N.err and finally N.rc (renamed into place, so the host never
# reads a half-written code). The host kills QEMU when it is done.
lab=/run/lab
. "$lab/boot.env"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TMPDIR=/tmp LC_ALL=C.UTF-8
cd /

if [ -z "${HOSTLAB:-}" ]; then
    mount -t devpts devpts /dev/pts 2>/dev/null || { mkdir -p /dev/pts && mount -t devpts devpts /dev/pts; }
    # The kernel's own module requests (crypto templates, netlink families,
    # qdiscs) go to the package's modules too. Not in a host lab
    # (tests/support/vm.rs, Vm::on_host): the path is the host kernel's own.
    echo "$lab/modprobe" >/proc/sys/kernel/modprobe
fi
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm
ip link set lo up
hostname spx-vmlab

for m in $MODULES; do
    "$lab/modprobe" "$m" 2>>"$lab/modules.err" || echo "$m" >>"$lab/modules.failed"
done
cat /proc/uptime >"$lab/ready.tmp" && mv "$lab/ready.tmp" "$lab/ready"

n=1
while :; do
    if [ -f "$lab/req/$n.sh" ]; then
        (exec sh "$lab/req/$n.sh") >"$lab/out/$n.out" 2>"$lab/out/$n.err" </dev/null
        echo $? >"$lab/out/$n.rc.tmp"
        mv "$lab/out/$n.rc.tmp" "$lab/out/$n.rc"
        n=$((n + 1))
    else
        sleep 0.02
    fi
done
