#!/usr/bin/env python3
"""Capture one rtnetlink dump as the kernel sends it, for checks/testdata/neigh/.

Usage: capture.py ntables|neighbours [COMMENT...]
Sends RTM_GETNEIGHTBL (ntables) or RTM_GETNEIGH (neighbours) with NLM_F_DUMP
and family AF_UNSPEC in the network namespace it runs in, and prints every
recv() of the answer as one line of hex, up to and including NLMSG_DONE,
after '#' lines of provenance (the kernel release and the comment given).
Read-only: a dump changes nothing.
"""
import os
import socket
import struct
import sys

RTM_GETNEIGH, RTM_GETNEIGHTBL = 30, 66
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_DONE, NLMSG_ERROR = 3, 2

what = sys.argv[1]
kind, body = {
    "ntables": (RTM_GETNEIGHTBL, struct.pack("=B3x", 0)),  # struct ndtmsg
    "neighbours": (RTM_GETNEIGH, struct.pack("=B3xiHBB", 0, 0, 0, 0, 0)),  # struct ndmsg
}[what]
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
s.bind((0, 0))
msg = struct.pack("=IHHII", 16 + len(body), kind, NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + body
s.send(msg)
print(f"# {what} dump (RTM_{'GETNEIGHTBL' if what == 'ntables' else 'GETNEIGH'}, AF_UNSPEC) "
      f"captured with checks/testdata/neigh/capture.py on {os.uname().release}")
for line in sys.argv[2:]:
    print(f"# {line}")
done = False
while not done:
    data = s.recv(1 << 16)
    print(data.hex())
    off = 0
    while off < len(data):
        length, mtype = struct.unpack_from("=IH", data, off)
        if mtype in (NLMSG_DONE, NLMSG_ERROR):
            done = True
        off += (length + 3) & ~3
