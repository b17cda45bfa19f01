//! The driver: one event loop over (at most) two sockets. It sends what
//! the [`Engine`] asks for, reads replies and the error queue, checks that
//! a reply is ours (identifier, nonce, pattern), and feeds the engine the
//! events and the time. Every judgement is the engine's.

use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::error_queue::QueuedError;
use super::socket::{wait_writable, IcmpSocket};
use crate::facts::icmp::engine::{self, Engine, Send, Sent};
use crate::facts::icmp::packet::{payload_matches, random_bytes, NONCE_LEN};
use crate::facts::icmp::plan::overhead;
use crate::facts::icmp::Dest;
use crate::facts::icmp::{PathProbe, Settings, SocketKind, Target};
use crate::facts::ProbeError;

pub(crate) struct Driver {
    engine: Engine,
    settings: Settings,
    v4: Option<IcmpSocket>,
    v6: Option<IcmpSocket>,
    nonce: [u8; NONCE_LEN],
    buf: Vec<u8>,
}

impl Driver {
    pub(crate) fn new(targets: &[Target], settings: &Settings) -> Result<Driver, ProbeError> {
        let ident = u16::from_be_bytes(random_bytes::<2>());
        let needs_v4 = targets.iter().any(|t| t.addr.is_ipv4());
        let needs_v6 = targets.iter().any(|t| t.addr.is_ipv6());
        // No privilege ends the run (a skip); a family that cannot be used
        // (no IPv6 stack) only makes its peers unreachable, with the reason.
        let open =
            |needed: bool, v6: bool| -> Result<(Option<IcmpSocket>, Option<String>), ProbeError> {
                if !needed {
                    return Ok((None, None));
                }
                match IcmpSocket::open(v6, ident) {
                    Ok(s) => Ok((Some(s), None)),
                    Err(e @ ProbeError::PermissionDenied { .. }) => Err(e),
                    Err(e) => Ok((None, Some(e.to_string()))),
                }
            };
        let (v4, v4_err) = open(needs_v4, false)?;
        let (v6, v6_err) = open(needs_v6, true)?;
        let engine = Engine::new(targets, settings, |a| {
            if a.is_ipv4() {
                v4_err.clone()
            } else {
                v6_err.clone()
            }
        });
        Ok(Driver {
            engine,
            settings: *settings,
            v4,
            v6,
            nonce: random_bytes::<NONCE_LEN>(),
            buf: vec![0u8; 65536 + 1],
        })
    }

    pub(crate) fn socket_kind(&self) -> SocketKind {
        self.v4
            .as_ref()
            .or(self.v6.as_ref())
            .map_or(SocketKind::Raw, |s| s.kind)
    }

    pub(crate) fn run(&mut self) {
        for round in 1..=self.settings.max_rounds.max(1) {
            let Some(sends) = self.engine.begin_round(round, Instant::now()) else {
                break;
            };
            self.send_all(sends);
            let intended = Instant::now() + self.settings.round_timeout;
            let end = intended.min(self.settings.deadline);
            self.wait_round(end);
            self.engine.close_round(end < intended);
        }
    }

    pub(crate) fn results(mut self) -> Vec<PathProbe> {
        // Late replies still count: read what arrived after the last round.
        self.engine.finish();
        self.drain();
        self.engine.results()
    }

    fn socket(&self, v6: bool) -> Option<&IcmpSocket> {
        if v6 {
            self.v6.as_ref()
        } else {
            self.v4.as_ref()
        }
    }

    /// Send each probe, reading what came back after each one; a send
    /// whose error names the reported MTU adds that size's probes.
    fn send_all(&mut self, sends: Vec<Send>) {
        let mut queue: VecDeque<Send> = sends.into();
        while let Some((peer, size)) = queue.pop_front() {
            queue.extend(self.send(peer, size));
            self.drain();
        }
    }

    fn send(&mut self, peer: usize, size: u32) -> Vec<Send> {
        let v6 = self.engine.addr(peer).is_ipv6();
        if self.socket(v6).is_none() {
            return Vec::new();
        }
        let Some((to, seq, size)) = self.engine.next_probe(peer, size) else {
            return Vec::new(); // this destination's sequence space is used up
        };
        let sock = self.socket(v6).expect("checked above");
        let mut result = sock.send(to, seq, size, &self.nonce);
        // A pending asynchronous error (an earlier ICMP error) is reported by
        // the next call on the socket, once: retry so that it is not taken
        // for this probe's fate. A full send buffer is waited out briefly.
        for _ in 0..2 {
            match &result {
                Ok(()) => break,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::ENOBUFS)) => {
                    wait_writable(sock.fd.as_raw_fd(), Duration::from_millis(20));
                }
                Err(_) => {}
            }
            result = sock.send(to, seq, size, &self.nonce);
        }
        let mut more = Vec::new();
        let how = match result {
            Ok(()) => Sent::Ok,
            // Refused locally: larger than the egress device's MTU.
            Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => Sent::TooLarge {
                local_limit: self.local_limit(v6, to, &mut more),
            },
            // The device dropped it after all retries (a veth whose other
            // end, a switch port, is below the size; a full queue).
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => Sent::Dropped,
            // No neighbour entry could be made for the next hop (a full
            // table), on kernels that say EINVAL for it (6.1 says ENOBUFS).
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Sent::NoNeighbour(e.to_string()),
            Err(e) => Sent::Failed(e.to_string()),
        };
        self.engine.sent(peer, to, seq, size, how, Instant::now());
        more
    }

    /// The egress MTU towards `to`, read from the error queue's local
    /// entry (IPv4 queues one with the device MTU on EMSGSIZE); the other
    /// entries go to the engine, and what it asks to send is added to
    /// `more`.
    fn local_limit(&mut self, v6: bool, to: Dest, more: &mut Vec<Send>) -> Option<u32> {
        let mut queued = Vec::new();
        if let Some(sock) = self.socket(v6) {
            while let Ok(Some(e)) = sock.recv_error() {
                queued.push(e);
                if queued.len() > 1024 {
                    break;
                }
            }
        }
        let mut limit = None;
        for e in queued {
            if e.origin == libc::SO_EE_ORIGIN_LOCAL && e.info > 0 && e.dst.is_none_or(|d| d == to) {
                limit = Some(e.info);
            } else {
                more.extend(self.handle_error(v6, e));
            }
        }
        limit
    }

    fn wait_round(&mut self, end: Instant) {
        loop {
            let now = Instant::now();
            // Round 1: send each ladder whose time has come.
            while let Some(sends) = self.engine.due_ladder(now) {
                self.send_all(sends);
            }
            if now >= end || self.engine.round_settled() {
                return;
            }
            let until = self.engine.next_ladder().map_or(end, |t| t.min(end));
            self.poll(until.saturating_duration_since(now));
            self.drain();
        }
    }

    fn poll(&self, timeout: Duration) {
        let mut fds: Vec<libc::pollfd> = [self.v4.as_ref(), self.v6.as_ref()]
            .into_iter()
            .flatten()
            .map(|s| libc::pollfd {
                fd: s.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        let ms = if ms == 0 && !timeout.is_zero() { 1 } else { ms };
        // SAFETY: fds is a live array of the length passed.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    }

    /// Read everything queued on both sockets: replies and errors. The
    /// sizes an error asks for go out at once.
    fn drain(&mut self) {
        let mut more = Vec::new();
        for v6 in [false, true] {
            for _ in 0..100_000 {
                let Some(sock) = self.socket(v6) else { break };
                let mut progressed = false;
                if let Ok(Some(e)) = sock.recv_error() {
                    more.extend(self.handle_error(v6, e));
                    progressed = true;
                }
                let mut buf = std::mem::take(&mut self.buf);
                let Some(sock) = self.socket(v6) else { break };
                match sock.recv(&mut buf) {
                    Ok(Some((src, msg))) => {
                        self.handle_reply(v6, src, msg);
                        progressed = true;
                    }
                    Ok(None) => {}
                    // An asynchronous error reported once by recv; its
                    // details are in the error queue.
                    Err(_) => progressed = true,
                }
                self.buf = buf;
                if !progressed {
                    break;
                }
            }
        }
        while let Some((peer, size)) = more.pop() {
            more.extend(self.send(peer, size));
        }
    }

    /// An echo reply: ours (identifier on a raw socket, nonce and pattern)
    /// and its size on the wire, to the engine.
    fn handle_reply(&mut self, v6: bool, src: Dest, msg: &[u8]) {
        let reply_type = if v6 { 129 } else { 0 };
        if msg.len() < 8 || msg[0] != reply_type || msg[1] != 0 {
            return;
        }
        let Some(sock) = self.socket(v6) else { return };
        let ident = u16::from_be_bytes([msg[4], msg[5]]);
        if sock.kind == SocketKind::Raw && ident != sock.ident {
            return; // someone else's ping
        }
        let seq = u16::from_be_bytes([msg[6], msg[7]]);
        let data = &msg[8..];
        if !payload_matches(&self.nonce, seq, data) {
            return;
        }
        let size = data.len() as u32 + overhead(src.0);
        self.engine.reply(src, seq, size, Instant::now());
    }

    fn handle_error(&mut self, v6: bool, e: QueuedError) -> Vec<Send> {
        let Some(seq) = e.seq else {
            return Vec::new();
        };
        let Some(sock) = self.socket(v6) else {
            return Vec::new();
        };
        if sock.kind == SocketKind::Raw && e.ident != Some(sock.ident) {
            return Vec::new();
        }
        let Some(dst) = e.dst else {
            return Vec::new();
        };
        self.engine.error(
            dst,
            seq,
            engine::IcmpError {
                too_big_mtu: e.too_big_mtu(),
                offender: e.offender,
                local: e.origin == libc::SO_EE_ORIGIN_LOCAL,
                description: e.describe(),
            },
        )
    }
}
