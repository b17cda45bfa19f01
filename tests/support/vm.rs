//! The kernel lab: Debian's stock kernel booted under QEMU (TCG, or KVM
//! with `SPX_VMLAB_ACCEL`: [`Accel`]), for what this machine's own kernel
//! cannot do (ESP SAs, geneve, the openvswitch datapath, vhost-net, netem,
//! `net.core.rmem_max`, virtio_net rings).
//!
//! The image is built once per cache directory and reused
//! (`$SPX_VMLAB_CACHE`, else `target/tmp/vmlab`, which `.ci/run` keeps
//! between its steps); a file lock serialises parallel builders, and the
//! stamp `image.ready` is written last, so a half-built cache is rebuilt:
//!
//! 1. The package `linux-image-amd64` depends on is fetched with `apt-get
//!    download` (under `flock /tmp/apt.lock`) and unpacked with `dpkg-deb
//!    -x`: never installed on the host. `depmod -b` indexes its modules.
//! 2. `vmlinux` is taken out of `vmlinuz` (the bzImage payload, as the
//!    kernel's `extract-vmlinux` does) and booted directly: about half the
//!    boot time of the compressed image through the BIOS.
//! 3. A small initramfs (`tests/vmlab/init`, dash, kmod, mount, mkdir,
//!    switch_root, their libraries, and the 9p and overlayfs modules).
//!
//! A boot shares the host's root read-only over virtio-9p under a tmpfs
//! overlay (so the guest runs the very `spx-doctor` cargo built, and the
//! host's `ip`, `ovs-vswitchd` and `qemu-system-x86_64`) and a per-boot
//! directory read-write, through which `tests/vmlab/agent.sh` takes commands
//! and returns stdout, stderr and the exit code.
//!
//! QEMU never outlives its [`Vm`]: killed and reaped on drop (also when a
//! test panics), by a watchdog at a hard time limit, and by the kernel
//! (`PR_SET_PDEATHSIG`) if the test process itself dies. Only the pid we
//! spawned is ever signalled.

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::qemu::QEMU;

/// The guest's stage 1 (in the initramfs) and stage 2 (the command agent).
const INIT: &str = include_str!("../vmlab/init");
const AGENT: &str = include_str!("../vmlab/agent.sh");

/// What stage 1 loads: the 9p transport, its filesystem and overlayfs.
const INITRAMFS_MODULES: [&str; 4] = ["virtio_pci", "9pnet_virtio", "9p", "overlay"];

/// Host programs copied into the initramfs: (source, path in the image).
const INITRAMFS_PROGRAMS: [(&str, &str); 5] = [
    ("/usr/bin/dash", "bin/sh"),
    ("/usr/bin/kmod", "sbin/insmod"),
    ("/usr/bin/mount", "bin/mount"),
    ("/usr/bin/mkdir", "bin/mkdir"),
    ("/usr/sbin/switch_root", "sbin/switch_root"),
];

/// Where the guest sees [`Vm::files_dir`] (read-write, over 9p).
pub const GUEST_FILES: &str = "/run/lab/files";

/// The metapackage whose dependency is the real kernel package.
const METAPACKAGE: &str = "linux-image-amd64";

/// A built, cached guest image.
#[derive(Debug)]
pub struct Image {
    /// e.g. `6.1.0-57-amd64`.
    pub kernel_release: String,
    /// e.g. `linux-image-6.1.0-57-amd64`.
    pub package: String,
    pub vmlinux: PathBuf,
    pub initramfs: PathBuf,
    /// The unpacked package: `modroot/lib/modules/<release>/…`, indexed.
    pub modroot: PathBuf,
}

pub fn cache_dir() -> PathBuf {
    match std::env::var_os("SPX_VMLAB_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("vmlab"),
    }
}

static IMAGE: OnceLock<Result<Image, String>> = OnceLock::new();

/// The image, built on first use (other callers wait for it).
pub fn image() -> Result<&'static Image, String> {
    IMAGE
        .get_or_init(|| {
            let started = Instant::now();
            let image = build_image(&cache_dir());
            if let Ok(i) = &image {
                note(&format!(
                    "vmlab: image {} ready in {:.1}s ({})",
                    i.kernel_release,
                    started.elapsed().as_secs_f64(),
                    cache_dir().display()
                ));
            }
            image
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Tests that boot the lab call this first: root and the image, or a
/// printed skip reason locally; under `CI=true` a missing prerequisite
/// fails the test.
#[allow(clippy::disallowed_macros)] // the skip reason belongs in the test log
pub fn lab_or_skip(test: &str) -> Option<&'static Image> {
    if !super::root_or_skip(test) {
        return None;
    }
    match image() {
        Ok(i) => Some(i),
        Err(why) => {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("{test}: the kernel lab is required under CI=true: {why}");
            }
            println!("skipping {test}: the kernel lab cannot be built here: {why}");
            None
        }
    }
}

/// A line for the test log (timings, what a kernel did).
#[allow(clippy::disallowed_macros)] // timings belong in the test log
pub fn note(line: &str) {
    eprintln!("{line}");
}

fn build_image(cache: &Path) -> Result<Image, String> {
    for tool in [
        QEMU,
        "/usr/bin/apt-get",
        "/usr/bin/apt-cache",
        "/usr/bin/dpkg-deb",
        "/usr/bin/xz",
        "/usr/bin/ldd",
        "/usr/sbin/depmod",
        "/usr/bin/flock",
    ]
    .into_iter()
    .chain(INITRAMFS_PROGRAMS.iter().map(|(src, _)| *src))
    {
        if !Path::new(tool).exists() {
            return Err(format!(
                "{tool} is missing (bash .ci/run installs what the lab needs)"
            ));
        }
    }
    fs::create_dir_all(cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let lock = File::create(cache.join(".lock")).map_err(|e| format!("lock file: {e}"))?;
    let _lock = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| format!("flock {}: {e}", cache.display()))?;

    let stamp = cache.join("image.ready");
    if let Ok(text) = fs::read_to_string(&stamp) {
        let mut words = text.split_whitespace();
        if let (Some(package), Some(release)) = (words.next(), words.next()) {
            let image = image_at(cache, package, release);
            if image.vmlinux.exists() && image.initramfs.exists() && image.modroot.exists() {
                return Ok(image);
            }
        }
    }
    let _ = fs::remove_file(&stamp);

    let package = real_package()?;
    let deb = download(cache, &package)?;
    let modroot = cache.join("root");
    let unpacking = cache.join("root.partial");
    for dir in [&modroot, &unpacking] {
        if dir.exists() {
            fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
    }
    run_tool(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&unpacking))?;
    fs::rename(&unpacking, &modroot).map_err(|e| format!("rename: {e}"))?;
    let _ = fs::remove_dir_all(cache.join("download"));
    let releases: Vec<String> = fs::read_dir(modroot.join("lib/modules"))
        .map_err(|e| format!("{package} has no lib/modules: {e}"))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    let [release] = releases.as_slice() else {
        return Err(format!(
            "{package}: expected one module tree, found {releases:?}"
        ));
    };
    run_tool(Command::new("depmod").arg("-b").arg(&modroot).arg(release))?;
    let image = image_at(cache, &package, release);
    let vmlinuz = fs::read(modroot.join(format!("boot/vmlinuz-{release}")))
        .map_err(|e| format!("vmlinuz-{release}: {e}"))?;
    write_atomic(&image.vmlinux, &extract_vmlinux(&vmlinuz)?)?;
    write_atomic(&image.initramfs, &initramfs(&modroot, release)?)?;
    write_atomic(&stamp, format!("{package} {release}\n").as_bytes())?;
    Ok(image)
}

fn image_at(cache: &Path, package: &str, release: &str) -> Image {
    Image {
        kernel_release: release.to_owned(),
        package: package.to_owned(),
        vmlinux: cache.join("vmlinux"),
        initramfs: cache.join("initramfs.cpio"),
        modroot: cache.join("root"),
    }
}

/// Run a host tool to the end: its stdout, or a one-line error with its
/// stderr.
pub fn run_tool(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// apt, always under the machine's apt lock (other helpers install too).
fn apt(args: &[&str], cwd: &Path) -> Result<String, String> {
    run_tool(
        Command::new("flock")
            .arg("/tmp/apt.lock")
            .args(args)
            .current_dir(cwd)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

/// `linux-image-amd64`'s dependency: the real kernel package.
fn real_package() -> Result<String, String> {
    let depends = |out: &str| {
        out.lines()
            .filter_map(|l| l.trim().strip_prefix("Depends: "))
            .find(|p| p.starts_with("linux-image-") && !p.contains('<'))
            .map(str::to_owned)
    };
    let tmp = std::env::temp_dir();
    let out = apt(&["apt-cache", "depends", METAPACKAGE], &tmp).unwrap_or_default();
    if let Some(p) = depends(&out) {
        return Ok(p);
    }
    apt(&["apt-get", "update", "-qq"], &tmp)?;
    let out = apt(&["apt-cache", "depends", METAPACKAGE], &tmp)?;
    depends(&out).ok_or_else(|| format!("apt-cache depends {METAPACKAGE} names no kernel: {out}"))
}

fn download(cache: &Path, package: &str) -> Result<PathBuf, String> {
    let dir = cache.join("download");
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // Writable by apt's sandbox user (_apt), so apt does not warn.
    let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(0o777));
    if apt(&["apt-get", "download", "-qq", package], &dir).is_err() {
        // Stale package lists name a version the mirror dropped.
        apt(&["apt-get", "update", "-qq"], &dir)?;
        apt(&["apt-get", "download", "-qq", package], &dir)?;
    }
    fs::read_dir(&dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .ok_or_else(|| format!("apt-get download {package} left no .deb"))
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = path.with_extension("partial");
    fs::write(&tmp, bytes).map_err(|e| format!("{}: {e}", tmp.display()))?;
    fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The ELF kernel inside a bzImage: the payload the boot protocol (2.08+)
/// locates at `payload_offset` past the setup sectors, decompressed with
/// the tool its magic names. The kernel's build appends the uncompressed
/// size as 4 little-endian bytes: they are cut off and checked.
pub fn extract_vmlinux(bzimage: &[u8]) -> Result<Vec<u8>, String> {
    let u32_at = |at: usize| -> Result<u32, String> {
        bzimage
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
            .ok_or_else(|| "bzImage too short".to_owned())
    };
    if bzimage.get(0x202..0x206) != Some(b"HdrS") {
        return Err("not a bzImage (no HdrS)".into());
    }
    let version = u32_at(0x206)? & 0xffff;
    if version < 0x208 {
        return Err(format!("boot protocol {version:#x} has no payload fields"));
    }
    let setup_sects = match bzimage[0x1f1] {
        0 => 4,
        n => usize::from(n),
    };
    let start = (setup_sects + 1) * 512 + u32_at(0x248)? as usize;
    let len = u32_at(0x24c)? as usize;
    let payload = bzimage
        .get(start..start + len)
        .filter(|p| p.len() > 4)
        .ok_or("payload outside the image")?;
    let (data, size) = payload.split_at(len - 4);
    let size = u32::from_le_bytes(size.try_into().unwrap()) as usize;
    let tool = if data.starts_with(b"\xfd7zXZ\x00") {
        "xz"
    } else if data.starts_with(b"\x28\xb5\x2f\xfd") {
        "zstd"
    } else {
        return Err(format!(
            "payload compression not handled (magic {:02x?})",
            &data[..6.min(data.len())]
        ));
    };
    let mut child = Command::new(tool)
        .args(["-dc"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{tool}: {e}"))?;
    let mut stdin = child.stdin.take().unwrap();
    let data = data.to_vec();
    let feeder = std::thread::spawn(move || stdin.write_all(&data));
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = feeder.join();
    if !out.status.success() {
        return Err(format!(
            "{tool} -dc: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    if !out.stdout.starts_with(b"\x7fELF") || out.stdout.len() != size {
        return Err(format!(
            "decompressed payload is not the {size}-byte ELF the image announces"
        ));
    }
    Ok(out.stdout)
}

/// The modules `wanted` need, dependencies first, from `modules.dep`.
fn module_closure(modules_dir: &Path, wanted: &[&str]) -> Result<Vec<String>, String> {
    let dep = fs::read_to_string(modules_dir.join("modules.dep"))
        .map_err(|e| format!("modules.dep: {e}"))?;
    let deps: Vec<(&str, Vec<&str>)> = dep
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(m, d)| (m, d.split_whitespace().collect()))
        .collect();
    let name = |path: &str| {
        Path::new(path)
            .file_stem()
            .map(|s| s.to_string_lossy().replace('-', "_"))
            .unwrap_or_default()
    };
    fn visit<'a>(
        path: &'a str,
        deps: &[(&'a str, Vec<&'a str>)],
        order: &mut Vec<String>,
    ) -> Result<(), String> {
        if order.iter().any(|p| p == path) {
            return Ok(());
        }
        let (_, ds) = deps
            .iter()
            .find(|(p, _)| *p == path)
            .ok_or_else(|| format!("{path} not in modules.dep"))?;
        // modules.dep lists the nearest dependency first.
        for d in ds.iter().rev() {
            visit(d, deps, order)?;
        }
        order.push(path.to_owned());
        Ok(())
    }
    let mut order = Vec::new();
    for want in wanted {
        let (path, _) = deps
            .iter()
            .find(|(p, _)| name(p) == *want)
            .ok_or_else(|| format!("module {want} not in this kernel"))?;
        visit(path, &deps, &mut order)?;
    }
    Ok(order)
}

/// The shared libraries `ldd` says `program` loads (absolute paths).
fn libraries(program: &str) -> Result<Vec<String>, String> {
    let out = run_tool(Command::new("ldd").arg(program))?;
    Ok(out
        .lines()
        .filter_map(|l| {
            let path = l.rsplit("=>").next()?.split_whitespace().next()?;
            path.starts_with('/').then(|| path.to_owned())
        })
        .collect())
}

/// The initramfs, as a newc cpio archive (what the kernel unpacks).
fn initramfs(modroot: &Path, release: &str) -> Result<Vec<u8>, String> {
    let mut cpio = Cpio::default();
    for dir in [
        "bin", "sbin", "dev", "proc", "sys", "host", "rw", "newroot", "modules",
    ] {
        cpio.dir(dir);
    }
    cpio.node("dev/console", 0o020600, (5, 1));
    cpio.file("init", 0o755, INIT.as_bytes());
    let mut libs: Vec<String> = Vec::new();
    for (src, dst) in INITRAMFS_PROGRAMS {
        let bytes = fs::read(src).map_err(|e| format!("{src}: {e}"))?;
        cpio.file(dst, 0o755, &bytes);
        for lib in libraries(src)? {
            if !libs.contains(&lib) {
                libs.push(lib);
            }
        }
    }
    for lib in &libs {
        let rel = lib.trim_start_matches('/');
        let mut parent = String::new();
        for part in Path::new(rel).parent().into_iter().flat_map(|p| p.iter()) {
            if !parent.is_empty() {
                parent.push('/');
            }
            parent.push_str(&part.to_string_lossy());
            cpio.dir(&parent);
        }
        cpio.file(
            rel,
            0o755,
            &fs::read(lib).map_err(|e| format!("{lib}: {e}"))?,
        );
    }
    let modules_dir = modroot.join("lib/modules").join(release);
    for (i, path) in module_closure(&modules_dir, &INITRAMFS_MODULES)?
        .iter()
        .enumerate()
    {
        let stem = Path::new(path).file_name().unwrap().to_string_lossy();
        let bytes = fs::read(modules_dir.join(path)).map_err(|e| format!("{path}: {e}"))?;
        cpio.file(&format!("modules/{i:02}-{stem}"), 0o644, &bytes);
    }
    Ok(cpio.finish())
}

/// A newc ("070701") cpio writer: the archive format the kernel's
/// initramfs unpacker reads (Documentation/driver-api/early-userspace).
#[derive(Default)]
struct Cpio {
    out: Vec<u8>,
    inode: u32,
    dirs: Vec<String>,
}

impl Cpio {
    fn entry(&mut self, name: &str, mode: u32, rdev: (u32, u32), data: &[u8]) {
        self.inode += 1;
        let fields = [
            self.inode,
            mode,
            0,
            0,
            1,
            0,
            data.len() as u32,
            0,
            0,
            rdev.0,
            rdev.1,
            name.len() as u32 + 1,
            0,
        ];
        self.out.extend_from_slice(b"070701");
        for f in fields {
            self.out.extend_from_slice(format!("{f:08X}").as_bytes());
        }
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        self.pad();
        self.out.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.out.len().is_multiple_of(4) {
            self.out.push(0);
        }
    }

    fn dir(&mut self, name: &str) {
        if !self.dirs.iter().any(|d| d == name) {
            self.dirs.push(name.to_owned());
            self.entry(name, 0o040755, (0, 0), &[]);
        }
    }

    fn file(&mut self, name: &str, perm: u32, data: &[u8]) {
        self.entry(name, 0o100000 | perm, (0, 0), data);
    }

    fn node(&mut self, name: &str, mode: u32, rdev: (u32, u32)) {
        self.entry(name, mode, rdev, &[]);
    }

    fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, (0, 0), &[]);
        self.out
    }
}

/// How to boot one lab guest.
#[derive(Clone, Debug)]
pub struct VmOptions {
    pub memory_mb: u32,
    pub cpus: u32,
    /// Loaded (with dependencies) before the guest says it is ready.
    pub modules: Vec<String>,
    /// More QEMU arguments (devices for the guest).
    pub qemu_args: Vec<String>,
    /// The guest is killed after this long, whatever it is doing.
    pub hard_limit: Duration,
}

impl Default for VmOptions {
    fn default() -> Self {
        VmOptions {
            memory_mb: 1024,
            cpus: 1,
            modules: Vec::new(),
            qemu_args: Vec::new(),
            hard_limit: Duration::from_secs(300),
        }
    }
}

impl VmOptions {
    pub fn modules(mut self, modules: &[&str]) -> Self {
        self.modules = modules.iter().map(|m| (*m).to_owned()).collect();
        self
    }

    pub fn qemu_args(mut self, args: &[&str]) -> Self {
        self.qemu_args = args.iter().map(|a| (*a).to_owned()).collect();
        self
    }
}

/// The accelerator a lab guest runs under: `$SPX_VMLAB_ACCEL`, `tcg`
/// (the default: pure emulation, the same on every machine), `kvm` (the
/// host's KVM, or the boot fails), or `kvm,tcg` (KVM when QEMU can open it,
/// else TCG: QEMU's own fallback, `-accel kvm -accel tcg`). The guest's
/// CPU is `-cpu max` under either (under KVM: the host's, with every
/// feature KVM can give; QEMU accepts it there as it does `-cpu host`).
///
/// TCG stays the default: on the 2-core machine this was written on
/// (itself a VM, 2026-12-04), QEMU opens the nested `/dev/kvm` and SeaBIOS
/// runs on it, but Linux under `-cpu host` took 65 s through its early boot
/// (TCG: the whole boot to the initramfs in 5 s) and then stopped with "KVM
/// internal error. Suberror: 1" (an emulation failure on a `lock
/// cmpxchg16b`); under `-cpu max` it printed nothing in 40 s.
/// `bench/path.sh` uses KVM only where the lab's kernel boots under it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    Tcg,
    Kvm,
    KvmElseTcg,
}

impl Accel {
    pub fn from_env() -> Accel {
        match std::env::var("SPX_VMLAB_ACCEL").as_deref() {
            Err(_) | Ok("" | "tcg") => Accel::Tcg,
            Ok("kvm") => Accel::Kvm,
            Ok("kvm,tcg" | "kvm:tcg") => Accel::KvmElseTcg,
            Ok(other) => panic!("SPX_VMLAB_ACCEL={other}: expected tcg, kvm or kvm,tcg"),
        }
    }

    fn qemu_args(self) -> &'static [&'static str] {
        match self {
            Accel::Tcg => &["-accel", "tcg"],
            Accel::Kvm => &["-accel", "kvm"],
            Accel::KvmElseTcg => &["-accel", "kvm", "-accel", "tcg"],
        }
    }
}

/// What a guest command left behind.
#[derive(Debug)]
pub struct GuestOutput {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// A per-boot directory: the command queue (`req`, `out`) and the agent.
fn lab_dir(prefix: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("tempdir");
    fs::create_dir(dir.path().join("req")).unwrap();
    fs::create_dir(dir.path().join("out")).unwrap();
    fs::write(dir.path().join("agent.sh"), AGENT).unwrap();
    dir
}

/// The directories a host lab ([`Vm::on_host`]) sees through an overlay of
/// its own.
const HOST_OVERLAID: [&str; 5] = ["etc", "var", "opt", "tmp", "root"];

/// One booted lab guest, ready for commands; killed on drop.
pub struct Vm {
    child: Arc<Mutex<Child>>,
    cancel: Option<mpsc::Sender<()>>,
    dir: tempfile::TempDir,
    next: std::cell::Cell<u32>,
    started: Instant,
    /// Seconds from QEMU's start until the agent was ready.
    pub boot_seconds: f64,
    pub kernel_release: String,
    /// The accelerator the guest runs under (`tcg` or `kvm`), as the
    /// guest sees it: KVM's paravirtual clock is there under KVM only.
    pub accel: &'static str,
}

/// `s` quoted for the guest's `sh`.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl Vm {
    pub fn boot(image: &Image, opts: VmOptions) -> Vm {
        let dir = lab_dir("spx-vmlab-");
        let lab = dir.path();
        let modprobe = lab.join("modprobe");
        fs::write(
            &modprobe,
            format!(
                "#!/bin/sh\nexec /sbin/modprobe -d {} \"$@\"\n",
                quote(&image.modroot.to_string_lossy())
            ),
        )
        .unwrap();
        fs::set_permissions(&modprobe, fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(
            lab.join("boot.env"),
            format!("MODULES={}\n", quote(&opts.modules.join(" "))),
        )
        .unwrap();

        let accel = Accel::from_env();
        let mut cmd = Command::new(QEMU);
        cmd.args(accel.qemu_args())
            .args(["-cpu", "max", "-nodefaults", "-no-user-config"])
            .args(["-display", "none", "-no-reboot"])
            .args(["-m", &opts.memory_mb.to_string()])
            .args(["-smp", &opts.cpus.to_string()])
            .arg("-kernel")
            .arg(&image.vmlinux)
            .arg("-initrd")
            .arg(&image.initramfs)
            .args(["-append", "console=ttyS0 panic=-1 quiet"])
            .arg("-serial")
            .arg(format!("file:{}", lab.join("console.log").display()))
            .args([
                "-virtfs",
                "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
            ])
            .arg("-virtfs")
            .arg(format!(
                "local,path={},mount_tag=lab,security_model=none",
                lab.display()
            ))
            .args(&opts.qemu_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(lab.join("qemu.log")).unwrap());
        let started = Instant::now();
        let mut vm = Vm::start(cmd, dir, opts.hard_limit, &image.kernel_release, "tcg");
        vm.wait_ready(Duration::from_secs(120));
        vm.boot_seconds = started.elapsed().as_secs_f64();
        vm.accel = match accel {
            Accel::Tcg => "tcg",
            Accel::Kvm => "kvm",
            Accel::KvmElseTcg => {
                let kvm = vm.sh("grep -qw kvm-clock /sys/devices/system/clocksource/clocksource0/available_clocksource");
                if kvm.code == 0 {
                    "kvm"
                } else {
                    "tcg"
                }
            }
        };
        note(&format!(
            "vmlab: {} ready in {:.1}s under {} (modules: {})",
            vm.kernel_release,
            vm.boot_seconds,
            vm.accel,
            opts.modules.join(" ")
        ));
        let failed = fs::read_to_string(vm.dir.path().join("modules.failed")).unwrap_or_default();
        assert!(
            failed.is_empty(),
            "modules did not load: {failed}{}",
            fs::read_to_string(vm.dir.path().join("modules.err")).unwrap_or_default()
        );
        vm
    }

    /// The same lab on this host's own kernel, no guest: the agent
    /// (`tests/vmlab/agent.sh`) runs as PID 1 of new pid, mount, network,
    /// UTS and IPC namespaces (`unshare --kill-child`: it and everything it
    /// started die with the test, and with the namespaces every interface
    /// and network namespace the lab made). What the VM's overlay root
    /// gives a guest, a private view gives here: a tmpfs on `/run` (the
    /// per-boot directory bound at `/run/lab`, named network namespaces in
    /// `/run/netns`), and an overlay over each of `/etc`, `/var`, `/opt`,
    /// `/tmp` and `/root` whose writes land in that tmpfs, so a lab's
    /// scripts never write this host's files and two labs never meet. Only
    /// what the host's kernel can do is there: no modules are loaded, and
    /// the kernel's modprobe path is left alone (it is not namespaced).
    pub fn on_host(hard_limit: Duration) -> Vm {
        let dir = lab_dir("spx-hostlab-");
        let lab = dir.path();
        fs::write(lab.join("boot.env"), "MODULES=\nHOSTLAB=1\n").unwrap();
        let mut setup = String::from(
            "set -e\nlab=$1\nmount -t tmpfs -o mode=0755 spx-hostlab /run\nmkdir /run/lab /run/.overlay\nmount --bind \"$lab\" /run/lab\nmount -t sysfs sysfs /sys\n",
        );
        for d in HOST_OVERLAID {
            let _ = std::fmt::Write::write_fmt(
                &mut setup,
                format_args!(
                    "mkdir -p /run/.overlay/{d}/u /run/.overlay/{d}/w\nmount -t overlay spx-hostlab -o lowerdir=/{d},upperdir=/run/.overlay/{d}/u,workdir=/run/.overlay/{d}/w /{d}\n"
                ),
            );
        }
        setup.push_str("exec sh /run/lab/agent.sh >/run/lab/console.log 2>&1\n");
        let mut cmd = Command::new("unshare");
        cmd.args([
            "--pid",
            "--fork",
            "--kill-child",
            "--mount-proc",
            "--mount",
            "--net",
            "--uts",
            "--ipc",
            "--propagation",
            "private",
            "sh",
            "-c",
            &setup,
            "spx-hostlab",
        ])
        .arg(lab)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(lab.join("qemu.log")).unwrap());
        let started = Instant::now();
        let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let mut vm = Vm::start(cmd, dir, hard_limit, release.trim(), "host");
        vm.wait_ready(Duration::from_secs(30));
        vm.boot_seconds = started.elapsed().as_secs_f64();
        note(&format!(
            "hostlab: namespaces of {} ready in {:.2}s",
            vm.kernel_release, vm.boot_seconds
        ));
        vm
    }

    /// Spawn the lab's process (QEMU, or `unshare` for a host lab) in
    /// `dir`: killed by the kernel if the thread that spawned it dies
    /// (`PR_SET_PDEATHSIG`), and by a watchdog after `hard_limit`.
    fn start(
        mut cmd: Command,
        dir: tempfile::TempDir,
        hard_limit: Duration,
        kernel_release: &str,
        accel: &'static str,
    ) -> Vm {
        // SAFETY: prctl is async-signal-safe; it only asks the kernel to
        // kill the child when the thread that spawned it dies.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let started = Instant::now();
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {:?}: {e}", cmd.get_program()));
        let child = Arc::new(Mutex::new(child));
        let (cancel, cancelled) = mpsc::channel::<()>();
        let watched = Arc::clone(&child);
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = cancelled.recv_timeout(hard_limit) {
                // Child::kill signals only a child not yet reaped.
                let _ = watched.lock().unwrap().kill();
            }
        });
        Vm {
            child,
            cancel: Some(cancel),
            dir,
            next: std::cell::Cell::new(1),
            started,
            boot_seconds: 0.0,
            kernel_release: kernel_release.to_owned(),
            accel,
        }
    }

    fn wait_ready(&self, bound: Duration) {
        let ready = self.dir.path().join("ready");
        let until = Instant::now() + bound;
        while !ready.exists() {
            self.assert_running("before its agent was ready");
            assert!(
                Instant::now() < until,
                "lab guest not ready in {bound:?}: {}",
                self.console_tail()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn assert_running(&self, when: &str) {
        if let Some(status) = self.child.lock().unwrap().try_wait().expect("try_wait") {
            panic!(
                "lab QEMU exited ({status}) {when}: {}\n{}",
                self.console_tail(),
                fs::read_to_string(self.dir.path().join("qemu.log")).unwrap_or_default()
            );
        }
    }

    /// The last lines the guest kernel and init printed.
    pub fn console_tail(&self) -> String {
        let log = fs::read_to_string(self.dir.path().join("console.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// Run `script` with the guest's `sh` (as root, in the guest's initial
    /// network namespace) and wait at most `bound` for it.
    pub fn sh_within(&self, script: &str, bound: Duration) -> GuestOutput {
        let n = self.next.get();
        self.next.set(n + 1);
        let lab = self.dir.path();
        let tmp = lab.join(format!("req/.{n}.partial"));
        fs::write(&tmp, script).unwrap();
        fs::rename(&tmp, lab.join(format!("req/{n}.sh"))).unwrap();
        let rc = lab.join(format!("out/{n}.rc"));
        let until = Instant::now() + bound;
        while !rc.exists() {
            self.assert_running(&format!("while running: {script}"));
            assert!(
                Instant::now() < until,
                "guest command did not finish in {bound:?}: {script}\n{}",
                self.console_tail()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let read =
            |ext: &str| fs::read_to_string(lab.join(format!("out/{n}.{ext}"))).unwrap_or_default();
        GuestOutput {
            code: read("rc").trim().parse().expect("exit code"),
            stdout: read("out"),
            stderr: read("err"),
        }
    }

    pub fn sh(&self, script: &str) -> GuestOutput {
        self.sh_within(script, Duration::from_secs(120))
    }

    /// Run `script`; panic with its stderr unless it exits 0. Returns stdout.
    pub fn ok(&self, script: &str) -> String {
        let out = self.sh(script);
        assert_eq!(
            out.code, 0,
            "guest: {script}\nexit {}\nstdout: {}\nstderr: {}",
            out.code, out.stdout, out.stderr
        );
        out.stdout
    }

    /// The `spx-doctor` cargo built, in the guest (inside `netns` when
    /// given), with a clean environment and `--format json`: the document
    /// is validated against the schema and its exit code checked. The run
    /// records a bundle into the lab's shared directory, and the host
    /// replays it: the report must be the same ([`super::assert_replays`]).
    pub fn spx(&self, netns: Option<&str>, args: &[&str]) -> (i32, Value) {
        self.spx_in(&netns_prefix(netns), args)
    }

    /// [`Vm::spx`] run behind a guest command `prefix` (a lab node's, such
    /// as `support::strongswan::Mesh::enter`), or none.
    pub fn spx_in(&self, prefix: &str, args: &[&str]) -> (i32, Value) {
        let (code, doc, _) = self.spx_in_recorded(prefix, args);
        (code, doc)
    }

    /// [`Vm::spx_in`], and the path on this host of the bundle the run
    /// recorded (replayed already).
    pub fn spx_in_recorded(&self, prefix: &str, args: &[&str]) -> (i32, Value, PathBuf) {
        let (out, bundle) = self.spx_recording_in(prefix, args);
        let doc = parse_report(&out, super::assert_valid);
        super::assert_replays(&bundle, &doc, None);
        (out.code, doc, bundle)
    }

    /// [`Vm::spx`] for a `--cluster` run: the cluster report's schema (a
    /// cluster run records nothing: each node records its own).
    pub fn spx_cluster(&self, netns: Option<&str>, args: &[&str]) -> (i32, Value) {
        self.spx_cluster_in(&netns_prefix(netns), args)
    }

    /// [`Vm::spx_cluster`] behind a guest command `prefix` (a lab node's).
    pub fn spx_cluster_in(&self, prefix: &str, args: &[&str]) -> (i32, Value) {
        let out = self.sh(&doctor_line(prefix, args, &[]));
        let doc = parse_report(&out, super::assert_valid_cluster);
        (out.code, doc)
    }

    /// Run the doctor in the guest with `--record` into the shared
    /// directory: its output, and the bundle's path on the host.
    pub fn spx_recording(&self, netns: Option<&str>, args: &[&str]) -> (GuestOutput, PathBuf) {
        self.spx_recording_in(&netns_prefix(netns), args)
    }

    /// [`Vm::spx_recording`] behind a guest command `prefix`.
    pub fn spx_recording_in(&self, prefix: &str, args: &[&str]) -> (GuestOutput, PathBuf) {
        static BUNDLES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = BUNDLES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("bundle-{n}.spxb");
        let files = self.files_dir();
        let guest_bundle = format!("{GUEST_FILES}/{name}");
        let line = doctor_line(prefix, args, &["--record", guest_bundle.as_str()]);
        (self.sh(&line), files.join(name))
    }

    /// Wait in the guest until the shell test `condition` holds, at most
    /// `bound`; false if it never did.
    pub fn wait_until(&self, condition: &str, bound: Duration) -> bool {
        self.wait_until_every(condition, bound, "0.05")
    }

    /// [`Vm::wait_until`], testing every `every` seconds: for conditions
    /// that cost several processes to test while the guest's own work
    /// (daemons, IKE) needs its one emulated CPU.
    pub fn wait_until_every(&self, condition: &str, bound: Duration, every: &str) -> bool {
        let secs = bound.as_secs().max(1);
        self.sh_within(
            &format!(
                "end=$(($(date +%s) + {secs})); until {condition}; do [ $(date +%s) -lt $end ] || exit 1; sleep {every}; done"
            ),
            bound + Duration::from_secs(30),
        )
        .code
            == 0
    }

    /// The directory the guest sees at [`GUEST_FILES`], on this host.
    pub fn files_dir(&self) -> PathBuf {
        let dir = self.dir.path().join("files");
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Put `contents` where the guest reads it: returns its guest path
    /// (`/run/lab/files/NAME`).
    pub fn file(&self, name: &str, contents: &str) -> String {
        let dir = self.files_dir();
        let tmp = dir.join(format!(".{name}.partial"));
        fs::write(&tmp, contents).unwrap();
        fs::rename(&tmp, dir.join(name)).unwrap();
        format!("{GUEST_FILES}/{name}")
    }

    /// QEMU's pid on the host.
    pub fn pid(&self) -> u32 {
        self.child.lock().unwrap().id()
    }

    /// Seconds since QEMU started.
    pub fn uptime(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        note(&format!("vmlab: guest stopped after {:.1}s", self.uptime()));
        drop(self.cancel.take());
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// A command line that runs this very test binary in the guest as a
/// traffic helper (see `kernel_lab::guest_helper`): the same Rust socket
/// code as the host tests, no tool the image would otherwise need.
pub fn helper(netns: Option<&str>, args: &[&str]) -> String {
    let exe = std::env::current_exe().expect("current_exe");
    let ns = netns.map_or(String::new(), |n| format!("ip netns exec {} ", quote(n)));
    format!(
        "SPX_VMLAB_HELPER={} {ns}{} --exact kernel_lab::guest_helper --ignored --nocapture --quiet --test-threads=1",
        quote(&args.join(" ")),
        quote(&exe.to_string_lossy())
    )
}

/// The guest command prefix that runs a command inside `netns`, or none.
fn netns_prefix(netns: Option<&str>) -> String {
    netns.map_or(String::new(), |ns| format!("ip netns exec {}", quote(ns)))
}

/// The guest shell line that runs the built `spx-doctor` (behind the
/// command `prefix`, such as `ip netns exec NS`, when not empty) with a
/// clean environment, `args`, `--format json` and `extra`.
fn doctor_line(prefix: &str, args: &[&str], extra: &[&str]) -> String {
    let mut line = String::from("exec ");
    if !prefix.is_empty() {
        line.push_str(prefix);
        line.push(' ');
    }
    line.push_str("env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/nonexistent-spx-test-home ");
    line.push_str(&quote(super::bin()));
    for a in args.iter().chain(&["--format", "json"]).chain(extra) {
        line.push(' ');
        line.push_str(&quote(a));
    }
    line
}

/// A guest run's JSON document, checked by `validate` and against its
/// exit code.
fn parse_report(out: &GuestOutput, validate: fn(&Value)) -> Value {
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "guest spx-doctor: not JSON ({e}); exit {}; stdout: {}; stderr: {}",
            out.code, out.stdout, out.stderr
        )
    });
    validate(&doc);
    assert_eq!(doc["exit_code"], out.code, "stderr: {}", out.stderr);
    doc
}
