//! The guest half of the real-OVN lab ([`super::ovn_lab`]): one process in
//! the kernel-lab guest, started once (this very test binary, as a
//! `kernel_lab::guest_helper`), that gives each paused QEMU guest a network
//! stack behind its own tap and answers the lab's truth questions.
//!
//! **Why a relay.** A guest is a real QEMU started with Spinifex's command
//! line and paused (`-S`): the doctor must find it as it finds a running
//! instance (its `/proc` command line, its tap, the tap's OVS `iface-id`).
//! A paused VM never reads its tap (virtio-net's `can_receive` is false
//! until the guest runs), so the frames OVS sends to the tap wait in the
//! tap's queue. This daemon duplicates QEMU's own tap descriptor
//! (`pidfd_getfd(2)`) and copies frames between it and a tap of its own in
//! the guest's network namespace (`g<instance>`): that namespace's kernel is
//! the guest's IP stack, QEMU's tap is the first and last hop, exactly the
//! device a running guest's virtio NIC would use. QEMU opened the tap with
//! `IFF_VNET_HDR`, so frames on its descriptor carry the virtio-net header
//! (its size from `TUNGETVNETHDRSZ`): stripped on the way in, a zero header
//! (no offload) prepended on the way out. The descriptor is non-blocking
//! (QEMU's file status flags are shared), so it is polled.
//!
//! **Why probes of our own.** A DF echo request of exactly N bytes is sent
//! from one guest namespace with a raw socket (`IP_PMTUDISC_PROBE`: DF set,
//! the route's learned PMTU ignored, so one probe's "fragmentation needed"
//! does not shrink the next), and the receiving guest's namespace watches
//! for that very request with a raw socket of its own: a direction is judged
//! on its own, by arrival, never by a reply that has to come back the other
//! way (an asymmetric path drops one and not the other). The sender's socket
//! also sees what came back: the echo reply, or ICMP "fragmentation needed"
//! (type 3 code 4) quoting the probe, with its MTU: whether the sender was
//! told.
//!
//! Requests are JSON files the host writes into the shared directory
//! (`DIR/req/N.json`, renamed into place), answered in order into
//! `DIR/out/N.json`: no process is started per question, which under
//! emulation costs a second or more each.

use std::collections::HashMap;
use std::fs::{self, File};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use socket2::{Domain, Protocol, Socket, Type};

/// The daemon ends itself after this long, whatever the test is doing.
const LIFETIME: Duration = Duration::from_secs(1800);

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const TUNGETIFF: libc::c_ulong = 0x8004_54d2;
const TUNGETVNETHDRSZ: libc::c_ulong = 0x8004_54d7;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_VNET_HDR: libc::c_short = 0x4000;

/// Serve requests from `dir` until `dir/stop` appears (or [`LIFETIME`]).
pub fn serve(dir: &str) -> Value {
    let dir = PathBuf::from(dir);
    let (req, out) = (dir.join("req"), dir.join("out"));
    fs::create_dir_all(&req).unwrap();
    fs::create_dir_all(&out).unwrap();
    fs::write(dir.join("started"), "started\n").unwrap();
    let mut relays: HashMap<String, Relay> = HashMap::new();
    let end = Instant::now() + LIFETIME;
    let mut n = 1_u64;
    while Instant::now() < end && !dir.join("stop").exists() {
        let Ok(text) = fs::read_to_string(req.join(format!("{n}.json"))) else {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let answer = match serde_json::from_str::<Value>(&text) {
            Ok(r) => handle(&r, &mut relays).unwrap_or_else(|e| json!({ "error": e })),
            Err(e) => json!({ "error": format!("not JSON: {e}") }),
        };
        let tmp = out.join(format!(".{n}.partial"));
        fs::write(&tmp, answer.to_string()).unwrap();
        fs::rename(&tmp, out.join(format!("{n}.json"))).unwrap();
        n += 1;
    }
    for (_, r) in relays.drain() {
        r.stop();
    }
    json!({ "served": n - 1 })
}

fn handle(r: &Value, relays: &mut HashMap<String, Relay>) -> Result<Value, String> {
    let s = |k: &str| {
        r[k].as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("{k} missing in {r}"))
    };
    match r["op"].as_str() {
        Some("relay") => {
            let instance = s("instance")?;
            if let Some(old) = relays.remove(&instance) {
                old.stop();
            }
            let relay = Relay::start(&instance, &s("tap")?, &s("netns")?, &s("ifname")?)?;
            let info = json!({ "qemu_pid": relay.qemu_pid, "vnet_hdr": relay.vnet_hdr });
            relays.insert(instance, relay);
            Ok(info)
        }
        Some("unrelay") => {
            if let Some(old) = relays.remove(&s("instance")?) {
                old.stop();
            }
            Ok(json!({}))
        }
        Some("probe") => {
            let tries = r["tries"].as_u64().unwrap_or(2).clamp(1, 20) as u32;
            Ok(Probe::from_request(r)?.run_tries(tries).to_json())
        }
        Some("ladder") => ladder(r),
        other => Err(format!("unknown op {other:?}")),
    }
}

/// The global pid of the QEMU whose command line names `instance`'s QMP
/// socket (Spinifex's `-qmp unix:<rundir>/qmp-<instance>.sock,...`).
fn qemu_pid(instance: &str) -> Result<i32, String> {
    let needle = format!("/qmp-{instance}.sock");
    for entry in fs::read_dir("/proc").map_err(|e| e.to_string())? {
        let Ok(entry) = entry else { continue };
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args
            .first()
            .is_some_and(|a| a.ends_with("qemu-system-x86_64"))
            && args.iter().any(|a| a.contains(&needle))
        {
            return Ok(pid);
        }
    }
    Err(format!("no QEMU names {needle}"))
}

/// QEMU's descriptor number for `tap` (its fdinfo's `iff:`).
fn tap_fd(pid: i32, tap: &str) -> Result<RawFd, String> {
    let want = format!("iff:\t{tap}\n");
    for entry in fs::read_dir(format!("/proc/{pid}/fdinfo")).map_err(|e| e.to_string())? {
        let Ok(entry) = entry else { continue };
        if fs::read_to_string(entry.path()).is_ok_and(|i| i.contains(&want)) {
            return entry
                .file_name()
                .to_string_lossy()
                .parse()
                .map_err(|e| format!("{e}"));
        }
    }
    Err(format!("QEMU {pid} holds no descriptor of {tap}"))
}

/// A duplicate of descriptor `fd` of process `pid` (pidfd_getfd(2)).
fn steal_fd(pid: i32, fd: RawFd) -> Result<OwnedFd, String> {
    // SAFETY: plain syscalls; each returned descriptor is owned at once.
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, pid, 0);
        if pidfd < 0 {
            return Err(format!("pidfd_open {pid}: {}", errno()));
        }
        let pidfd = OwnedFd::from_raw_fd(pidfd as RawFd);
        let dup = libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0);
        if dup < 0 {
            return Err(format!("pidfd_getfd {pid}/{fd}: {}", errno()));
        }
        Ok(OwnedFd::from_raw_fd(dup as RawFd))
    }
}

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// `struct ifreq` for the tun ioctls: the name and the flags.
#[repr(C)]
struct IfReq {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// The virtio-net header size of a tap descriptor QEMU opened (0 when it
/// has none).
fn vnet_hdr_len(fd: &OwnedFd) -> Result<usize, String> {
    let mut ifr = IfReq {
        name: [0; 16],
        flags: 0,
        _pad: [0; 22],
    };
    // SAFETY: ioctls on a descriptor we own, with buffers of the sizes the
    // kernel writes.
    unsafe {
        if libc::ioctl(fd.as_raw_fd(), TUNGETIFF, &mut ifr) < 0 {
            return Err(format!("TUNGETIFF: {}", errno()));
        }
        if ifr.flags & IFF_VNET_HDR == 0 {
            return Ok(0);
        }
        let mut len: libc::c_int = 0;
        if libc::ioctl(fd.as_raw_fd(), TUNGETVNETHDRSZ, &mut len) < 0 {
            return Err(format!("TUNGETVNETHDRSZ: {}", errno()));
        }
        Ok(len as usize)
    }
}

/// Run `f` on a thread that has entered network namespace `netns` (ip
/// netns's name): the namespace is the thread's alone.
fn in_netns<T: Send + 'static>(
    netns: &str,
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let path = Path::new("/run/netns").join(netns);
    std::thread::spawn(move || {
        let ns = File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET)
            .map_err(|e| format!("setns {}: {e}", path.display()))?;
        f()
    })
    .join()
    .map_err(|_| "the namespace thread panicked".to_owned())?
}

/// A new tap `ifname` (no packet info, no virtio header) in this thread's
/// network namespace; it goes when the descriptor is closed.
fn open_tap(ifname: &str) -> Result<OwnedFd, String> {
    let tun = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
        .map_err(|e| format!("/dev/net/tun: {e}"))?;
    let mut ifr = IfReq {
        name: [0; 16],
        flags: IFF_TAP | IFF_NO_PI,
        _pad: [0; 22],
    };
    let bytes = ifname.as_bytes();
    if bytes.len() > 15 {
        return Err(format!("{ifname}: longer than IFNAMSIZ"));
    }
    ifr.name[..bytes.len()].copy_from_slice(bytes);
    // SAFETY: TUNSETIFF reads a struct ifreq we own.
    if unsafe { libc::ioctl(tun.as_raw_fd(), TUNSETIFF, &ifr) } < 0 {
        return Err(format!("TUNSETIFF {ifname}: {}", errno()));
    }
    Ok(OwnedFd::from(tun))
}

/// Wait until `fd` is ready for `events` or `ms` pass: true when ready.
fn wait_fd(fd: RawFd, events: libc::c_short, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one pollfd we own.
    unsafe { libc::poll(&mut p, 1, ms) > 0 && p.revents & events != 0 }
}

/// One guest's relay: QEMU's tap <-> the guest namespace's tap.
struct Relay {
    qemu_pid: i32,
    vnet_hdr: usize,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Relay {
    fn start(instance: &str, tap: &str, netns: &str, ifname: &str) -> Result<Relay, String> {
        let qemu_pid = qemu_pid(instance)?;
        let qemu = Arc::new(steal_fd(qemu_pid, tap_fd(qemu_pid, tap)?)?);
        let vnet_hdr = vnet_hdr_len(&qemu)?;
        let name = ifname.to_owned();
        let guest = Arc::new(in_netns(netns, move || open_tap(&name))?);
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        {
            let (q, g, stop) = (Arc::clone(&qemu), Arc::clone(&guest), Arc::clone(&stop));
            threads.push(std::thread::spawn(move || {
                let mut buf = vec![0_u8; 70_000];
                while !stop.load(Ordering::Relaxed) {
                    if !wait_fd(q.as_raw_fd(), libc::POLLIN, 100) {
                        continue;
                    }
                    // SAFETY: reads into our buffer.
                    let n =
                        unsafe { libc::read(q.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                    if n as usize > vnet_hdr {
                        let frame = &buf[vnet_hdr..n as usize];
                        // EIO while the guest's link is down: dropped, as a
                        // NIC without a link drops.
                        // SAFETY: writes from our buffer.
                        let _ = unsafe {
                            libc::write(g.as_raw_fd(), frame.as_ptr().cast(), frame.len())
                        };
                    }
                }
            }));
        }
        {
            let (q, g, stop) = (qemu, guest, Arc::clone(&stop));
            threads.push(std::thread::spawn(move || {
                let mut buf = vec![0_u8; 70_000];
                while !stop.load(Ordering::Relaxed) {
                    if !wait_fd(g.as_raw_fd(), libc::POLLIN, 100) {
                        continue;
                    }
                    // SAFETY: reads into our buffer after the header room.
                    let n = unsafe {
                        libc::read(
                            g.as_raw_fd(),
                            buf[vnet_hdr..].as_mut_ptr().cast(),
                            buf.len() - vnet_hdr,
                        )
                    };
                    if n <= 0 {
                        continue;
                    }
                    buf[..vnet_hdr].fill(0);
                    let frame = &buf[..vnet_hdr + n as usize];
                    for _ in 0..50 {
                        // SAFETY: writes from our buffer.
                        let w = unsafe {
                            libc::write(q.as_raw_fd(), frame.as_ptr().cast(), frame.len())
                        };
                        if w >= 0 || errno().kind() != std::io::ErrorKind::WouldBlock {
                            break;
                        }
                        wait_fd(q.as_raw_fd(), libc::POLLOUT, 10);
                    }
                }
            }));
        }
        Ok(Relay {
            qemu_pid,
            vnet_hdr,
            stop,
            threads,
        })
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// One DF echo request of exactly `size` bytes of IP from one guest
/// namespace to another.
#[derive(Clone)]
struct Probe {
    from: String,
    to: String,
    dst: Ipv4Addr,
    size: u16,
    wait: Duration,
}

/// What one probe showed.
struct Sent {
    size: u16,
    /// The request reached the receiving namespace.
    arrived: bool,
    /// The sender got ICMP "fragmentation needed" quoting it, with this MTU.
    frag_needed: Option<u16>,
    /// How long after the send that came, in ms.
    frag_ms: Option<u64>,
    /// The sender got the echo reply.
    reply: bool,
}

impl Sent {
    fn to_json(&self) -> Value {
        json!({
            "size": self.size,
            "arrived": self.arrived,
            "frag_needed": self.frag_needed,
            "frag_ms": self.frag_ms,
            "reply": self.reply,
        })
    }
}

static SEQ: AtomicU16 = AtomicU16::new(1);

fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn raw_icmp() -> Result<Socket, String> {
    let s = Socket::new(
        Domain::IPV4,
        Type::from(libc::SOCK_RAW),
        Some(Protocol::ICMPV4),
    )
    .map_err(|e| format!("raw ICMP socket: {e}"))?;
    s.set_read_timeout(Some(Duration::from_millis(20)))
        .map_err(|e| e.to_string())?;
    Ok(s)
}

/// DF on every packet, and the route's learned path MTU ignored
/// (`IP_PMTUDISC_PROBE`), so a "fragmentation needed" one probe drew does
/// not shrink the next.
fn dont_fragment_probe(s: &Socket) -> Result<(), String> {
    let v: libc::c_int = libc::IP_PMTUDISC_PROBE;
    // SAFETY: setsockopt with an int option we own.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(format!("IP_MTU_DISCOVER: {}", errno()));
    }
    Ok(())
}

/// An IPv4 packet's ICMP part, by its header length.
fn icmp_of(packet: &[u8]) -> Option<&[u8]> {
    let ihl = usize::from(packet.first()? & 0x0f) * 4;
    packet.get(ihl..).filter(|i| i.len() >= 8)
}

fn recv_packet(s: &Socket, buf: &mut [std::mem::MaybeUninit<u8>]) -> Option<Vec<u8>> {
    let n = s.recv(buf).ok()?;
    // SAFETY: recv initialised the first n bytes.
    Some(
        buf[..n]
            .iter()
            .map(|b| unsafe { b.assume_init() })
            .collect(),
    )
}

impl Probe {
    fn from_request(r: &Value) -> Result<Probe, String> {
        let s = |k: &str| r[k].as_str().ok_or_else(|| format!("{k} missing in {r}"));
        Ok(Probe {
            from: s("from")?.to_owned(),
            to: s("to")?.to_owned(),
            dst: s("dst")?.parse().map_err(|e| format!("dst: {e}"))?,
            size: r["size"]
                .as_u64()
                .and_then(|v| u16::try_from(v).ok())
                .filter(|v| *v >= 28)
                .ok_or("size: 28 to 65535")?,
            wait: Duration::from_millis(r["wait_ms"].as_u64().unwrap_or(400)),
        })
    }

    fn at(&self, size: u16) -> Probe {
        Probe {
            size,
            ..self.clone()
        }
    }

    /// Send it once, watch both ends for `wait`.
    fn once(&self) -> Sent {
        // A new ICMP id per probe: conntrack keys an echo flow by its id,
        // so each probe is a flow of its own, as a new connection is (an
        // id reused within 30 s would find the last probe's entry, and an
        // ICMP error related to it would pass a stateful ACL).
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let id = seq.wrapping_mul(40_503) ^ (std::process::id() as u16);
        let arrived = Arc::new(AtomicBool::new(false));
        // Set when the sender was told: the frame died on the way, so the
        // receiver stops watching for it.
        let told = Arc::new(AtomicBool::new(false));
        let deadline = Instant::now() + self.wait;
        // The receiver first, so it is listening before anything is sent.
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (seen, dst, size) = (Arc::clone(&arrived), self.dst, self.size);
        let stop = Arc::clone(&told);
        let to = self.to.clone();
        let receiver = std::thread::spawn(move || {
            in_netns(&to, move || {
                let s = raw_icmp()?;
                let _ = ready_tx.send(());
                let mut buf = vec![std::mem::MaybeUninit::new(0_u8); 65_536];
                while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
                    let Some(p) = recv_packet(&s, &mut buf) else {
                        continue;
                    };
                    let Some(icmp) = icmp_of(&p) else { continue };
                    if p.len() >= 20
                        && icmp[0] == 8
                        && icmp[4..6] == id.to_be_bytes()
                        && icmp[6..8] == seq.to_be_bytes()
                        && p[16..20] == dst.octets()
                        && p.len() == usize::from(size)
                    {
                        seen.store(true, Ordering::Relaxed);
                        return Ok(());
                    }
                }
                Ok(())
            })
        });
        if ready_rx.recv_timeout(Duration::from_secs(5)).is_err() {
            let _ = receiver.join();
            return self.failed();
        }
        let (seen, probe, tell) = (Arc::clone(&arrived), self.clone(), Arc::clone(&told));
        let sender = in_netns(&self.from, move || {
            let s = raw_icmp()?;
            dont_fragment_probe(&s)?;
            let mut msg = vec![0_u8; usize::from(probe.size) - 20];
            msg[0] = 8;
            msg[4..6].copy_from_slice(&id.to_be_bytes());
            msg[6..8].copy_from_slice(&seq.to_be_bytes());
            for (i, b) in msg[8..].iter_mut().enumerate() {
                *b = i as u8;
            }
            let sum = checksum(&msg);
            msg[2..4].copy_from_slice(&sum.to_be_bytes());
            s.send_to(&msg, &SocketAddrV4::new(probe.dst, 0).into())
                .map_err(|e| format!("send {} bytes: {e}", probe.size))?;
            let sent_at = Instant::now();
            let (mut frag, mut reply) = (None, false);
            let mut buf = vec![std::mem::MaybeUninit::new(0_u8); 65_536];
            // Until the reply, or the request seen arriving (an answer
            // that cannot come back is the other direction's business),
            // or the sender told, or the deadline.
            // A "fragmentation needed" ends the wait too: the frame died
            // at the hop that sent it.
            while Instant::now() < deadline
                && !reply
                && frag.is_none()
                && !seen.load(Ordering::Relaxed)
            {
                let Some(p) = recv_packet(&s, &mut buf) else {
                    continue;
                };
                let Some(icmp) = icmp_of(&p) else { continue };
                match icmp[0] {
                    0 if icmp[4..6] == id.to_be_bytes() && icmp[6..8] == seq.to_be_bytes() => {
                        reply = true;
                    }
                    // Fragmentation needed: the quoted packet is ours when
                    // its ICMP id and sequence are.
                    3 if icmp[1] == 4 => {
                        let quoted = &icmp[8..];
                        let matches = icmp_of(quoted).is_some_and(|q| {
                            q[0] == 8 && q[4..6] == id.to_be_bytes() && q[6..8] == seq.to_be_bytes()
                        });
                        if matches {
                            tell.store(true, Ordering::Relaxed);
                            frag = Some((
                                u16::from_be_bytes([icmp[6], icmp[7]]),
                                sent_at.elapsed().as_millis() as u64,
                            ));
                        }
                    }
                    _ => {}
                }
            }
            Ok((frag, reply))
        });
        let _ = receiver.join();
        match sender {
            Ok((frag, reply)) => Sent {
                size: self.size,
                arrived: arrived.load(Ordering::Relaxed),
                frag_needed: frag.map(|f| f.0),
                frag_ms: frag.map(|f| f.1),
                reply,
            },
            Err(_) => self.failed(),
        }
    }

    fn failed(&self) -> Sent {
        Sent {
            size: self.size,
            arrived: false,
            frag_needed: None,
            frag_ms: None,
            reply: false,
        }
    }

    /// Sent until it arrives, at most `tries` times: one lost frame under
    /// emulation is not a size the path refuses.
    fn run_tries(&self, tries: u32) -> Sent {
        let mut last = self.once();
        for _ in 1..tries {
            if last.arrived {
                break;
            }
            let again = self.once();
            // Told in either try is told (the first try's latency kept).
            last = Sent {
                frag_needed: last.frag_needed.or(again.frag_needed),
                frag_ms: last.frag_ms.or(again.frag_ms),
                ..again
            };
        }
        last
    }

    fn run(&self) -> Sent {
        self.run_tries(2)
    }
}

/// The largest size that arrives, between `lo` (must arrive) and `hi`:
/// the `hint` and one byte more are tried first (the size the lab was
/// built to carry), then a bisection. Every probe is in the answer.
fn ladder(r: &Value) -> Result<Value, String> {
    let probe = Probe::from_request(r)?;
    let num = |k: &str| {
        r[k].as_u64()
            .and_then(|v| u16::try_from(v).ok())
            .ok_or_else(|| format!("{k} missing in {r}"))
    };
    let (mut lo, mut hi) = (num("lo")?, num("hi")?);
    let mut probes: Vec<Sent> = Vec::new();
    let at = |size: u16, probes: &mut Vec<Sent>| {
        let s = probe.at(size).run();
        let ok = s.arrived;
        probes.push(s);
        ok
    };
    // The smallest size, first: it may meet flows not yet in the
    // datapath (an upcall to ovs-vswitchd under emulation takes its time).
    let first = probe.at(lo).run_tries(5);
    let lo_ok = first.arrived;
    probes.push(first);
    if !lo_ok {
        return Ok(
            json!({ "largest": null, "probes": probes.iter().map(Sent::to_json).collect::<Vec<_>>() }),
        );
    }
    if let Some(h) = r["hint"].as_u64().and_then(|v| u16::try_from(v).ok()) {
        if h > lo && h < hi {
            if at(h, &mut probes) {
                lo = h;
                if at(h + 1, &mut probes) {
                    lo = h + 1;
                } else {
                    hi = h + 1;
                }
            } else {
                hi = h;
            }
        }
    }
    if lo + 1 < hi && at(hi, &mut probes) {
        lo = hi;
    }
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if at(mid, &mut probes) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // The first size that did not arrive, as it was seen (told or not).
    let refused = probes
        .iter()
        .rev()
        .find(|p| !p.arrived && p.size == lo + 1)
        .map(Sent::to_json);
    Ok(json!({
        "largest": lo,
        "refused": refused,
        "probes": probes.iter().map(Sent::to_json).collect::<Vec<_>>(),
    }))
}
