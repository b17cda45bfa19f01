//! A bounded QMP client on a QEMU monitor socket.
use crate::facts::qemu::qmp::{greeting_version, parse_facts, QmpError, QmpFacts};
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{connect, socket, AddressFamily, SockFlag, SockType, UnixAddr};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// Replies longer than this are not a QMP monitor talking.
const MAX_LINE: usize = 4 << 20;

pub struct QmpClient {
    /// QEMU's (major, minor) from the greeting.
    pub version: Option<(u32, u32)>,
    stream: UnixStream,
    started: Instant,
    deadline: Instant,
    buf: Vec<u8>,
}

impl QmpClient {
    /// Connect, read the greeting and negotiate capabilities, all before
    /// `started + bound`.
    pub fn connect(path: &Path, bound: Duration) -> Result<QmpClient, QmpError> {
        let started = Instant::now();
        let deadline = started + bound;
        let cerr = |detail: String| QmpError::Connect {
            path: path.display().to_string(),
            detail,
        };
        let addr = UnixAddr::new(path).map_err(|e| cerr(e.to_string()))?;
        let fd = socket(
            AddressFamily::Unix,
            SockType::Stream,
            SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
            None,
        )
        .map_err(|e| cerr(e.to_string()))?;
        match connect(std::os::fd::AsRawFd::as_raw_fd(&fd), &addr) {
            Ok(()) => {}
            Err(Errno::EINPROGRESS) => wait_ready(&fd, PollFlags::POLLOUT, deadline)
                .map_err(|_| QmpError::Timeout(bound, "connect".into()))?,
            // A full accept backlog: the monitor is not accepting.
            Err(Errno::EAGAIN) => return Err(cerr("listen backlog full".to_owned())),
            Err(Errno::EACCES | Errno::EPERM) => {
                return Err(QmpError::PermissionDenied {
                    path: path.display().to_string(),
                })
            }
            Err(e) => return Err(cerr(e.desc().to_owned())),
        }
        let stream = UnixStream::from(fd);
        stream
            .set_nonblocking(false)
            .map_err(|e| cerr(e.to_string()))?;
        let mut client = QmpClient {
            version: None,
            stream,
            started,
            deadline,
            buf: Vec::new(),
        };
        let greeting = client.read_message("greeting")?;
        if greeting.get("QMP").is_none() {
            return Err(QmpError::Protocol(format!(
                "expected a greeting, got {greeting}"
            )));
        }
        client.version = greeting_version(&greeting);
        client.execute("qmp_capabilities", None)?;
        Ok(client)
    }

    /// Run one command and return its `return` value.
    pub fn execute(&mut self, command: &str, arguments: Option<Value>) -> Result<Value, QmpError> {
        let mut msg = json!({ "execute": command });
        if let Some(args) = arguments {
            msg["arguments"] = args;
        }
        let mut line = msg.to_string();
        line.push('\n');
        self.set_timeouts("send")?;
        self.stream
            .write_all(line.as_bytes())
            .map_err(|e| self.io_error(e, "send"))?;
        loop {
            let reply = self.read_message("reply")?;
            if reply.get("event").is_some() {
                continue;
            }
            if let Some(ret) = reply.get("return") {
                return Ok(ret.clone());
            }
            if let Some(err) = reply.get("error") {
                return Err(QmpError::Command {
                    command: command.to_owned(),
                    desc: err["desc"].as_str().unwrap_or("error").to_owned(),
                });
            }
            return Err(QmpError::Protocol(format!("unexpected message {reply}")));
        }
    }

    fn bound(&self) -> Duration {
        self.deadline.saturating_duration_since(self.started)
    }

    fn set_timeouts(&self, phase: &'static str) -> Result<(), QmpError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(QmpError::Timeout(self.bound(), phase.into()));
        }
        let _ = self.stream.set_read_timeout(Some(left));
        let _ = self.stream.set_write_timeout(Some(left));
        Ok(())
    }

    fn io_error(&self, e: std::io::Error, phase: &'static str) -> QmpError {
        match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                QmpError::Timeout(self.bound(), phase.into())
            }
            _ => QmpError::Protocol(format!("{phase}: {e}")),
        }
    }

    /// One newline-terminated JSON message.
    fn read_message(&mut self, phase: &'static str) -> Result<Value, QmpError> {
        loop {
            if let Some(nl) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=nl).collect();
                let text = String::from_utf8_lossy(&line);
                if text.trim().is_empty() {
                    continue;
                }
                return serde_json::from_str(text.trim())
                    .map_err(|e| QmpError::Protocol(format!("{phase}: not JSON ({e})")));
            }
            if self.buf.len() > MAX_LINE {
                return Err(QmpError::Protocol(format!(
                    "{phase}: line over {MAX_LINE} bytes"
                )));
            }
            self.set_timeouts(phase)?;
            let mut chunk = [0u8; 8192];
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    return Err(QmpError::Protocol(format!(
                        "{phase}: monitor closed the connection"
                    )))
                }
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_error(e, phase)),
            }
        }
    }
}

fn wait_ready(fd: &impl AsFd, events: PollFlags, deadline: Instant) -> Result<(), ()> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(());
        }
        let ms = i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX);
        let mut fds = [PollFd::new(fd.as_fd(), events)];
        match poll(
            &mut fds,
            PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX),
        ) {
            Ok(0) => return Err(()),
            Ok(_) => return Ok(()),
            Err(Errno::EINTR) => continue,
            Err(_) => return Err(()),
        }
    }
}

/// Ask one monitor for its iothreads and block devices, within `bound`.
pub fn gather(path: &Path, bound: Duration) -> Result<QmpFacts, QmpError> {
    let mut qmp = QmpClient::connect(path, bound)?;
    let iothreads = qmp.execute("query-iothreads", None)?;
    let block = qmp.execute("query-block", None)?;
    let mut facts = parse_facts(&iothreads, &block);
    facts.qemu_version = qmp.version;
    for b in &mut facts.block {
        let Some(qdev) = b.qdev.clone() else { continue };
        // Only virtio devices have the property; others answer an error.
        match qmp.execute(
            "qom-get",
            Some(json!({ "path": qdev, "property": "iothread" })),
        ) {
            Ok(Value::String(p)) if !p.is_empty() => {
                b.iothread = Some(p.rsplit('/').next().unwrap_or(&p).to_owned());
            }
            Ok(_) | Err(QmpError::Command { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(facts)
}
#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    #[test]
    fn a_monitor_that_never_answers_times_out_within_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("qmp.sock");
        // Accepts (the kernel does, into the backlog) but never writes.
        let _listener = UnixListener::bind(&path).unwrap();
        let start = Instant::now();
        let err = QmpClient::connect(&path, Duration::from_millis(300))
            .err()
            .unwrap();
        assert!(
            matches!(&err, QmpError::Timeout(_, p) if p == "greeting"),
            "{err}"
        );
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn a_missing_socket_is_a_connect_error() {
        let err = QmpClient::connect(
            Path::new("/nonexistent/qmp.sock"),
            Duration::from_millis(100),
        )
        .err()
        .unwrap();
        assert!(matches!(err, QmpError::Connect { .. }), "{err}");
    }

    #[test]
    fn speaks_the_handshake_and_skips_events() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("qmp.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut r = std::io::BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            s.write_all(b"{\"QMP\": {\"version\": {}, \"capabilities\": []}}\r\n")
                .unwrap();
            std::io::BufRead::read_line(&mut r, &mut line).unwrap();
            assert!(line.contains("qmp_capabilities"), "{line}");
            s.write_all(b"{\"return\": {}}\r\n").unwrap();
            line.clear();
            std::io::BufRead::read_line(&mut r, &mut line).unwrap();
            assert!(line.contains("query-iothreads"), "{line}");
            s.write_all(b"{\"event\": \"RESUME\"}\r\n{\"return\": [{\"id\": \"ioth-os\", \"thread-id\": 7}]}\r\n")
                .unwrap();
        });
        let mut c = QmpClient::connect(&path, Duration::from_secs(5)).unwrap();
        assert_eq!(c.version, None);
        let r = c.execute("query-iothreads", None).unwrap();
        assert_eq!(r[0]["id"], "ioth-os");
        server.join().unwrap();
    }

    #[test]
    fn greeting_version_reads_major_minor() {
        // QEMU 7.2's greeting (Debian 12), abridged.
        let g = json!({"QMP": {"version": {"qemu": {"micro": 22, "minor": 2, "major": 7},
                       "package": "Debian 1:7.2+dfsg-7+deb12u18+b3"}, "capabilities": ["oob"]}});
        assert_eq!(greeting_version(&g), Some((7, 2)));
        assert_eq!(greeting_version(&json!({"QMP": {}})), None);
    }

    #[test]
    fn block_replies_parse() {
        // Shape of QEMU 7.2's query-block for a -blockdev + virtio-blk-pci and an empty cdrom.
        let block = json!([
            {"device": "", "qdev": "/machine/peripheral/vdisk-vol-1/virtio-backend",
             "inserted": {"node-name": "nbd-vol-1", "drv": "nbd"}},
            {"device": "ide1-cd0", "qdev": "/machine/unattached/device[20]"}
        ]);
        let f = parse_facts(&json!([{"id": "ioth-os"}]), &block);
        assert_eq!(f.iothreads, ["ioth-os"]);
        assert_eq!(f.block.len(), 1);
        assert_eq!(f.block[0].device_id(), Some("vdisk-vol-1"));
        assert_eq!(f.block[0].node_name.as_deref(), Some("nbd-vol-1"));
    }
}
