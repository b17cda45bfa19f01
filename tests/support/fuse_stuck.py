#!/usr/bin/python3
"""A process in uninterruptible sleep (state D) that SIGKILL cannot end, made
for real: a FUSE file system whose server reads every request and answers
none (but the handshake). A process that touches it waits interruptibly;
killed, it asks the server to interrupt, and once the server has read the
request the kernel waits for the answer uninterruptibly (fs/fuse/dev.c,
request_wait_answer: "Either request is already in userspace, or it was
forced. Wait it out."), so SIGKILL leaves it in D until the request is
answered.

Run inside a private mount namespace of its own (`unshare -m
--propagation private`), so no other process of the host can see the
mount:

    fuse_stuck.py MOUNT REPORT -- COMMAND...

mounts MOUNT, runs COMMAND (its stdout and stderr are this script's) as a
child, having become the subreaper of what it leaves behind, and when
COMMAND has exited writes REPORT (JSON): the states, at that moment, of the
pids listed in MOUNT's sibling file `pids` (one per line, written by the
stuck process before it touched MOUNT), then answers every held request
with EIO, reaps what was left, and says whether each pid is gone. Exits
with COMMAND's exit code.
"""
import ctypes
import json
import os
import struct
import subprocess
import sys
import threading
import time

FUSE_INIT = 26
FUSE_INTERRUPT = 36
PR_SET_CHILD_SUBREAPER = 36
EIO = 5


def state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def main():
    mount, report = sys.argv[1], sys.argv[2]
    command = sys.argv[sys.argv.index("--") + 1:]
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    fd = os.open("/dev/fuse", os.O_RDWR)
    opts = b"fd=%d,rootmode=40000,user_id=0,group_id=0" % fd
    if libc.mount(b"spx-stuck", mount.encode(), b"fuse", 6, opts) != 0:  # nosuid, nodev
        sys.exit("mount fuse: " + os.strerror(ctypes.get_errno()))
    held = []
    lock = threading.Lock()

    def serve():
        while True:
            try:
                buf = os.read(fd, 1 << 20)
            except OSError:
                return
            _, opcode, unique, _ = struct.unpack_from("<IIQQ", buf)
            if opcode == FUSE_INIT:
                # fuse_init_out of protocol 7.31, no flags.
                out = struct.pack("<IIIIHHIIHHII", 7, 31, 0, 0, 0, 0, 4096, 1, 0, 0, 0, 0)
                out += b"\0" * 24
                os.write(fd, struct.pack("<IiQ", 16 + len(out), 0, unique) + out)
            elif opcode != FUSE_INTERRUPT:
                with lock:
                    held.append(unique)

    threading.Thread(target=serve, daemon=True).start()
    pids_file = os.path.join(os.path.dirname(mount.rstrip("/")), "pids")
    started = time.monotonic()
    code = subprocess.run(command).returncode
    wall_ms = int((time.monotonic() - started) * 1000)
    pids = []
    if os.path.exists(pids_file):
        with open(pids_file) as f:
            pids = [int(l) for l in f.read().split() if l.strip()]
    out = {"at_exit": {str(p): state(p) for p in pids}, "held": len(held), "wall_ms": wall_ms}
    with lock:
        for unique in held:
            try:
                os.write(fd, struct.pack("<IiQ", 16, -EIO, unique))
            except OSError:
                pass
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        if all(state(p) is None for p in pids):
            break
        time.sleep(0.02)
    out["after_release"] = {str(p): state(p) for p in pids}
    libc.umount2(mount.encode(), 2)  # MNT_DETACH
    with open(report, "w") as f:
        json.dump(out, f)
    sys.exit(code)


if __name__ == "__main__":
    main()
