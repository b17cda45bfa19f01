//! One JSON-RPC session with one OVSDB server, every step bounded by a
//! deadline: name resolution, connect, each write and each read. A server
//! that accepts and never answers costs exactly the bound, never more.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use serde_json::Value;
use socket2::{Domain, SockAddr, Socket, Type};

use crate::endpoint::Endpoint;
use crate::facts::ovsdb::wire::{self, Framer, Message};

/// Why one member did not answer.
#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    #[error("ssl: endpoints are not supported by spx doctor (give the tcp: or unix: endpoint of the same server with --nb-db/--sb-db/--ovs-db)")]
    SslUnsupported,
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("no answer within {}ms", round_ms(*.0))]
    Timeout(Duration),
    #[error("{0}")]
    Protocol(String),
    #[error("server error: {0}")]
    Rpc(String),
    #[error("{0}")]
    Database(String),
}

/// A bound for messages: whole milliseconds (the deadline is computed a few
/// microseconds after the bound was chosen).
fn round_ms(d: Duration) -> u128 {
    (d.as_micros() + 500) / 1000
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn set_timeouts(&self, t: Duration) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => {
                s.set_read_timeout(Some(t))?;
                s.set_write_timeout(Some(t))
            }
            Stream::Unix(s) => {
                s.set_read_timeout(Some(t))?;
                s.set_write_timeout(Some(t))
            }
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf),
            Stream::Unix(s) => s.write_all(buf),
        }
    }
}

pub struct Session {
    stream: Stream,
    framer: Framer,
    next_id: u64,
    started: Instant,
    deadline: Instant,
}

impl Session {
    /// Connect to `endpoint`, giving up at `deadline`.
    pub fn connect(endpoint: &Endpoint, deadline: Instant) -> Result<Session, MemberError> {
        let started = Instant::now();
        let stream = match endpoint {
            Endpoint::Ssl { .. } => return Err(MemberError::SslUnsupported),
            Endpoint::Tcp { host, port } => {
                Stream::Tcp(connect_tcp(host, *port, started, deadline)?)
            }
            Endpoint::Unix(path) => {
                let addr = SockAddr::unix(path)?;
                let sock = Socket::new(Domain::UNIX, Type::STREAM, None)?;
                match sock.connect_timeout(&addr, left(started, deadline)?) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        return Err(MemberError::Protocol(format!(
                            "no socket at {} (is ovsdb-server running on this host?)",
                            path.display()
                        )))
                    }
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                        return Err(MemberError::Protocol(format!(
                            "nothing listens on {} (a stale socket: is ovsdb-server running?)",
                            path.display()
                        )))
                    }
                    Err(e) => return Err(e.into()),
                }
                Stream::Unix(UnixStream::from(sock))
            }
        };
        Ok(Session {
            stream,
            framer: Framer::new(),
            next_id: 1,
            started,
            deadline,
        })
    }

    /// Send one request and wait for its reply, answering the server's
    /// `echo` keepalives and ignoring notifications meanwhile. Returns the
    /// `result`, or the server's `error` as [`MemberError::Rpc`].
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, MemberError> {
        let id = self.next_id;
        self.next_id += 1;
        self.stream
            .set_timeouts(left(self.started, self.deadline)?)?;
        self.stream
            .write_all(&wire::request(method, params, id))
            .map_err(|e| self.timeout_or(e))?;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            while let Some(msg) = self
                .framer
                .next_message()
                .map_err(|e| MemberError::Protocol(e.to_string()))?
            {
                match msg {
                    Message::Reply {
                        id: rid,
                        result,
                        error,
                    } if rid.as_u64() == Some(id) => {
                        if !error.is_null() {
                            return Err(MemberError::Rpc(wire::error_text(&error)));
                        }
                        return Ok(result);
                    }
                    // A stale reply (an earlier request gave up) or a
                    // notification: not ours.
                    Message::Reply { .. } | Message::Notification { .. } => {}
                    Message::Request {
                        id: rid,
                        method,
                        params,
                    } => {
                        if method == "echo" {
                            self.stream
                                .write_all(&wire::echo_reply(&rid, &params))
                                .map_err(|e| self.timeout_or(e))?;
                        }
                    }
                }
            }
            self.stream
                .set_timeouts(left(self.started, self.deadline)?)?;
            let n = self.stream.read(&mut buf).map_err(|e| self.timeout_or(e))?;
            if n == 0 {
                return Err(MemberError::Protocol(
                    "the server closed the connection before answering".into(),
                ));
            }
            self.framer.push(&buf[..n]);
        }
    }

    fn timeout_or(&self, e: io::Error) -> MemberError {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                MemberError::Timeout(self.deadline.saturating_duration_since(self.started))
            }
            _ => MemberError::Io(e),
        }
    }
}

/// Time left before `deadline`, or the timeout error when none is.
fn left(started: Instant, deadline: Instant) -> Result<Duration, MemberError> {
    let d = deadline.saturating_duration_since(Instant::now());
    if d < Duration::from_millis(1) {
        return Err(MemberError::Timeout(
            deadline.saturating_duration_since(started),
        ));
    }
    Ok(d)
}

fn connect_tcp(
    host: &str,
    port: u16,
    started: Instant,
    deadline: Instant,
) -> Result<TcpStream, MemberError> {
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => resolve(host, port, started, deadline)?,
    };
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, left(started, deadline)?) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
                ) =>
            {
                last = Some(MemberError::Timeout(
                    deadline.saturating_duration_since(started),
                ));
            }
            Err(e) => last = Some(MemberError::Io(e)),
        }
    }
    Err(last.unwrap_or_else(|| MemberError::Protocol(format!("{host} resolved to no address"))))
}

/// getaddrinfo has no timeout; run it on a thread and stop waiting at the
/// deadline (the thread finishes on its own, the process does not wait).
fn resolve(
    host: &str,
    port: u16,
    started: Instant,
    deadline: Instant,
) -> Result<Vec<SocketAddr>, MemberError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let name = host.to_owned();
    std::thread::Builder::new()
        .name("ovsdb-resolve".into())
        .spawn(move || {
            let _ = tx.send(
                (name.as_str(), port)
                    .to_socket_addrs()
                    .map(Iterator::collect::<Vec<_>>),
            );
        })?;
    match rx.recv_timeout(left(started, deadline)?) {
        Ok(Ok(addrs)) => Ok(addrs),
        Ok(Err(e)) => Err(MemberError::Protocol(format!("cannot resolve {host}: {e}"))),
        Err(_) => Err(MemberError::Timeout(
            deadline.saturating_duration_since(started),
        )),
    }
}
