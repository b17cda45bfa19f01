//! A QEMU command line (the argv of `/proc/PID/cmdline`) read the way QEMU
//! reads it: which options take an argument, the `key=value` syntax of each
//! ([`super::opts`]), `-set` and `-global` applied, `-smp` resolved to a vCPU
//! count, and the QMP sockets found among `-qmp`, `-mon` and `-chardev`.
//!
//! Pure functions of the argv; the fuzz target of issue 8 calls
//! [`QemuCommandLine::parse`] on arbitrary input.

use std::path::PathBuf;

use super::opts::{parse_number, Opts, OptsError};

/// QEMU options that take no argument (qemu-options.hx entries without
/// HAS_ARG, QEMU 5–9). Every other `-option` takes exactly one.
const NO_ARGUMENT: &[&str] = &[
    "h",
    "help",
    "version",
    "audio-help",
    "S",
    "s",
    "snapshot",
    "nographic",
    "daemonize",
    "enable-kvm",
    "no-kvm",
    "no-reboot",
    "no-shutdown",
    "nodefaults",
    "nodefconfig",
    "no-user-config",
    "full-screen",
    "no-acpi",
    "no-hpet",
    "no-fd-bootchk",
    "win2k-hack",
    "rtc-td-hack",
    "singlestep",
    "usb",
    "mem-prealloc",
    "portrait",
    "only-migratable",
    "enable-sync-profile",
    "xen-attach",
    "xen-domid-restrict",
    "preconfig",
    "async-teardown",
    "alt-grab",
    "ctrl-grab",
    "no-quit",
    "no-frame",
    "sdl",
    "curses",
    "enable-fips",
    "semihosting",
    "old-param",
    "show-cursor",
    "localtime",
];

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CmdlineError {
    #[error("empty command line")]
    Empty,
    #[error("-{0} needs an argument and is the last word of the command line")]
    MissingArgument(String),
    #[error(transparent)]
    Opts(#[from] OptsError),
}

/// A chardev-backed QMP monitor reachable by path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QmpSocket {
    pub path: PathBuf,
    /// QEMU listens (`server=on`); otherwise QEMU is the client and nothing
    /// can connect to it.
    pub server: bool,
}

/// The `-smp` topology as written; [`Smp::vcpus`] resolves it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Smp {
    pub opts: Opts,
}

impl Smp {
    /// vCPUs at start, as QEMU computes them (hw/core/machine-smp.c):
    /// `cpus` when given; else `maxcpus`; else the product of the topology
    /// given (missing levels count 1); no `-smp` at all is 1.
    pub fn vcpus(&self) -> u32 {
        let n = |k: &str| self.opts.number(k).filter(|&v| v > 0);
        if let Some(cpus) = n("cpus") {
            return clamp_u32(cpus);
        }
        if let Some(max) = n("maxcpus") {
            return clamp_u32(max);
        }
        let product = [
            "drawers", "books", "sockets", "dies", "clusters", "cores", "threads",
        ]
        .iter()
        .map(|k| n(k).unwrap_or(1))
        .fold(1u64, |a, b| a.saturating_mul(b));
        clamp_u32(product)
    }
}

fn clamp_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// One guest's command line, with the options the doctor audits parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QemuCommandLine {
    /// `argv[0]`.
    pub program: String,
    /// `-name guest=…` or `-name NAME`.
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub smp: Smp,
    /// `-machine`/`-M` options merged; the type is `type`.
    pub machine: Opts,
    pub netdevs: Vec<Opts>,
    pub devices: Vec<Opts>,
    pub objects: Vec<Opts>,
    pub drives: Vec<Opts>,
    pub blockdevs: Vec<Opts>,
    pub chardevs: Vec<Opts>,
    /// `-mon` options.
    pub monitors: Vec<Opts>,
    /// `-global` properties: (driver, property, value).
    pub globals: Vec<(String, String, String)>,
    /// `-qmp`/`-qmp-pretty` arguments as written.
    pub qmp_args: Vec<String>,
    /// `-readconfig` files: options in them are not on the command line.
    pub readconfig: Vec<String>,
    /// Every option in order, as (name without dashes, argument).
    pub args: Vec<(String, Option<String>)>,
}

impl QemuCommandLine {
    /// Parse argv. `argv[0]` is the program; `--opt` is `-opt`; a word that
    /// does not start with `-` is a disk image (QEMU's `-hda`).
    pub fn parse<S: AsRef<str>>(argv: &[S]) -> Result<QemuCommandLine, CmdlineError> {
        let (program, rest) = argv.split_first().ok_or(CmdlineError::Empty)?;
        let mut cl = QemuCommandLine {
            program: program.as_ref().to_owned(),
            ..QemuCommandLine::default()
        };
        let mut sets: Vec<String> = Vec::new();
        let mut smp_pairs = Vec::new();
        let mut words = rest.iter().map(AsRef::as_ref);
        while let Some(word) = words.next() {
            let Some(option) = word.strip_prefix("--").or_else(|| word.strip_prefix('-')) else {
                cl.args.push(("hda".to_owned(), Some(word.to_owned())));
                continue;
            };
            if option.is_empty() || NO_ARGUMENT.contains(&option) {
                cl.args.push((option.to_owned(), None));
                continue;
            }
            let value = words
                .next()
                .ok_or_else(|| CmdlineError::MissingArgument(option.to_owned()))?;
            cl.args.push((option.to_owned(), Some(value.to_owned())));
            match option {
                "netdev" => cl.netdevs.push(Opts::parse(option, value)?),
                "device" => cl.devices.push(Opts::parse(option, value)?),
                "object" => cl.objects.push(Opts::parse(option, value)?),
                "drive" => cl.drives.push(Opts::parse(option, value)?),
                "blockdev" => cl.blockdevs.push(Opts::parse(option, value)?),
                "chardev" => cl.chardevs.push(Opts::parse(option, value)?),
                "mon" => cl.monitors.push(Opts::parse(option, value)?),
                "smp" => smp_pairs.extend(Opts::parse(option, value)?.pairs),
                "machine" | "M" => cl.machine.pairs.extend(Opts::parse(option, value)?.pairs),
                "name" => {
                    if let Some(guest) = Opts::parse(option, value)?.get("guest") {
                        cl.name = Some(guest.to_owned());
                    }
                }
                "uuid" => cl.uuid = Some(value.to_owned()),
                "qmp" | "qmp-pretty" => cl.qmp_args.push(value.to_owned()),
                "global" => cl.globals.extend(parse_global(value)),
                "set" => sets.push(value.to_owned()),
                "readconfig" => cl.readconfig.push(value.to_owned()),
                _ => {}
            }
        }
        cl.smp = Smp {
            opts: Opts { pairs: smp_pairs },
        };
        for set in &sets {
            cl.apply_set(set);
        }
        Ok(cl)
    }

    /// `-set group.id.key=value`: change one option of an earlier one.
    fn apply_set(&mut self, text: &str) {
        let Some((path, value)) = text.split_once('=') else {
            return;
        };
        let mut parts = path.splitn(3, '.');
        let (Some(group), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
            return;
        };
        let list = match group {
            "device" => &mut self.devices,
            "netdev" => &mut self.netdevs,
            "drive" => &mut self.drives,
            "object" => &mut self.objects,
            "chardev" => &mut self.chardevs,
            _ => return,
        };
        if let Some(opts) = list.iter_mut().rev().find(|o| o.id() == Some(id)) {
            opts.set(key, value);
        }
    }

    pub fn vcpus(&self) -> u32 {
        self.smp.vcpus()
    }

    /// The machine type as written, None when QEMU's default applies.
    pub fn machine_type(&self) -> Option<&str> {
        self.machine.get("type").filter(|t| !t.is_empty())
    }

    pub fn netdev(&self, id: &str) -> Option<&Opts> {
        self.netdevs.iter().rev().find(|o| o.id() == Some(id))
    }

    pub fn drive(&self, id: &str) -> Option<&Opts> {
        self.drives.iter().rev().find(|o| o.id() == Some(id))
    }

    pub fn blockdev(&self, node_name: &str) -> Option<&Opts> {
        self.blockdevs
            .iter()
            .rev()
            .find(|o| o.get("node-name") == Some(node_name))
    }

    pub fn object(&self, id: &str) -> Option<&Opts> {
        self.objects.iter().rev().find(|o| o.id() == Some(id))
    }

    /// The ids of `-object iothread` objects.
    pub fn iothreads(&self) -> Vec<&str> {
        self.objects
            .iter()
            .filter(|o| o.get("qom-type") == Some("iothread"))
            .filter_map(|o| o.id())
            .collect()
    }

    /// A device property, falling back to `-global DRIVER.PROP=VALUE`.
    pub fn device_prop<'a>(&'a self, device: &'a Opts, key: &str) -> Option<&'a str> {
        device.get(key).or_else(|| {
            let driver = device.get("driver")?;
            self.globals
                .iter()
                .rev()
                .find(|(d, p, _)| d == driver && p == key)
                .map(|(_, _, v)| v.as_str())
        })
    }

    pub fn device_number(&self, device: &Opts, key: &str) -> Option<u64> {
        parse_number(self.device_prop(device, key)?)
    }

    pub fn device_flag(&self, device: &Opts, key: &str) -> Option<bool> {
        super::opts::parse_bool(self.device_prop(device, key)?)
    }

    /// QMP monitors reachable by a unix socket path: `-qmp unix:PATH,…`
    /// and `-mon chardev=ID,mode=control` over `-chardev socket,path=…`.
    /// Sockets passed as file descriptors (`fd=`) or over TCP are left out.
    pub fn qmp_sockets(&self) -> Vec<QmpSocket> {
        let mut out = Vec::new();
        for arg in &self.qmp_args {
            if let Some(rest) = arg.strip_prefix("unix:") {
                let opts = Opts::parse_keyval(rest, Some("path"));
                if let Some(path) = opts.get("path").filter(|p| !p.is_empty()) {
                    out.push(QmpSocket {
                        path: PathBuf::from(path),
                        server: opts.flag("server").unwrap_or(false),
                    });
                }
            }
        }
        for mon in &self.monitors {
            if mon.get("mode") != Some("control") {
                continue;
            }
            let Some(chardev) = mon
                .get("chardev")
                .and_then(|id| self.chardevs.iter().rev().find(|c| c.id() == Some(id)))
            else {
                continue;
            };
            if chardev.get("backend") != Some("socket") {
                continue;
            }
            if let Some(path) = chardev.get("path").filter(|p| !p.is_empty()) {
                out.push(QmpSocket {
                    path: PathBuf::from(path),
                    server: chardev.flag("server").unwrap_or(false),
                });
            }
        }
        out
    }
}

/// The version of a versioned machine type: `pc-q35-5.2` → (5, 2),
/// `pc-i440fx-7.2` → (7, 2). Aliases (`q35`, `pc`, `virt`) and vendor
/// types (`pc-q35-rhel9.2.0`) have none.
pub fn machine_type_version(machine: &str) -> Option<(u32, u32)> {
    let (_, last) = machine.rsplit_once('-')?;
    let (major, minor) = last.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(major) || !digits(minor) {
        return None;
    }
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// `-global DRIVER.PROP=VALUE` or `-global driver=D,property=P,value=V`.
fn parse_global(text: &str) -> Option<(String, String, String)> {
    let opts = Opts::parse_keyval(text, None);
    if let (Some(d), Some(p), Some(v)) =
        (opts.get("driver"), opts.get("property"), opts.get("value"))
    {
        return Some((d.to_owned(), p.to_owned(), v.to_owned()));
    }
    let (path, value) = text.split_once('=')?;
    let (driver, prop) = path.rsplit_once('.')?;
    Some((driver.to_owned(), prop.to_owned(), value.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<&str> {
        s.split_whitespace().collect()
    }

    // nbd-performance.md, "Hive inner VM (before fix)".
    const HIVE_BEFORE: &str = "qemu-system-x86_64 -enable-kvm -cpu host -smp 2 -m 4096 \
        -drive file=nbd:unix:/run/user/1000/nbd-vol-xxx.sock,format=raw,if=none,media=disk,id=os \
        -device virtio-blk-pci,drive=os,bootindex=1 -M q35";

    // nbd-performance.md, "Hive inner VM (after fix)".
    const HIVE_AFTER: &str = "qemu-system-x86_64 -enable-kvm -cpu host -smp 2 -m 4096 \
        -object iothread,id=ioth-os \
        -drive file=nbd:unix:/run/user/1000/nbd-vol-xxx.sock,format=raw,if=none,media=disk,id=os,cache=none \
        -device virtio-blk-pci,drive=os,iothread=ioth-os,num-queues=2,bootindex=1 -M q35";

    // nbd-performance.md, "Proxmox outer VM (relevant flags only)".
    const PROXMOX: &str = "/usr/bin/kvm -object iothread,id=iothread-virtio0 \
        -drive file=/var/lib/vz/images/146/vm-146-disk-0.qcow2,if=none,id=drive-virtio0,cache=none,aio=io_uring,discard=on,format=qcow2,detect-zeroes=unmap \
        -device virtio-blk-pci,drive=drive-virtio0,id=virtio0,iothread=iothread-virtio0,bootindex=100 \
        -smp 4,sockets=1,cores=4,maxcpus=4 -m 8192 -cpu host";

    #[test]
    fn hive_before_fix() {
        let cl = QemuCommandLine::parse(&words(HIVE_BEFORE)).unwrap();
        assert_eq!(cl.vcpus(), 2);
        assert!(cl.iothreads().is_empty());
        let os = cl.drive("os").unwrap();
        assert_eq!(
            os.get("file"),
            Some("nbd:unix:/run/user/1000/nbd-vol-xxx.sock")
        );
        assert_eq!(os.get("cache"), None);
        assert_eq!(cl.devices[0].get("driver"), Some("virtio-blk-pci"));
        assert_eq!(cl.devices[0].get("iothread"), None);
        // -enable-kvm takes no argument: -cpu still reads "host".
        assert!(cl
            .args
            .contains(&("cpu".to_owned(), Some("host".to_owned()))));
        assert!(cl.args.contains(&("M".to_owned(), Some("q35".to_owned()))));
    }

    #[test]
    fn hive_after_fix() {
        let cl = QemuCommandLine::parse(&words(HIVE_AFTER)).unwrap();
        assert_eq!(cl.iothreads(), ["ioth-os"]);
        assert_eq!(cl.drive("os").unwrap().get("cache"), Some("none"));
        let dev = &cl.devices[0];
        assert_eq!(dev.get("iothread"), Some("ioth-os"));
        assert_eq!(cl.device_number(dev, "num-queues"), Some(2));
        assert_eq!(cl.device_number(dev, "bootindex"), Some(1));
    }

    #[test]
    fn proxmox_smp_with_topology() {
        let cl = QemuCommandLine::parse(&words(PROXMOX)).unwrap();
        assert_eq!(cl.program, "/usr/bin/kvm");
        assert_eq!(cl.vcpus(), 4);
        assert_eq!(cl.iothreads(), ["iothread-virtio0"]);
        assert_eq!(
            cl.drive("drive-virtio0").unwrap().get("aio"),
            Some("io_uring")
        );
    }

    #[test]
    fn machine_types() {
        let cl = QemuCommandLine::parse(&words(HIVE_AFTER)).unwrap();
        assert_eq!(cl.machine_type(), Some("q35"));
        assert_eq!(machine_type_version("q35"), None);
        assert_eq!(machine_type_version("pc-q35-5.2"), Some((5, 2)));
        assert_eq!(machine_type_version("pc-i440fx-10.1"), Some((10, 1)));
        assert_eq!(machine_type_version("pc-q35-rhel9.2.0"), None);
        assert_eq!(machine_type_version("virt-"), None);
        let m = QemuCommandLine::parse(&["q", "-machine", "pc-q35-6.0,accel=kvm"]).unwrap();
        assert_eq!(m.machine_type(), Some("pc-q35-6.0"));
        let m = QemuCommandLine::parse(&["q", "-machine", "type=pc,smm=off"]).unwrap();
        assert_eq!(m.machine_type(), Some("pc"));
        assert_eq!(QemuCommandLine::parse(&["q"]).unwrap().machine_type(), None);
    }

    #[test]
    fn smp_forms() {
        let vcpus = |args: &[&str]| {
            let mut argv = vec!["qemu-system-x86_64"];
            argv.extend_from_slice(args);
            QemuCommandLine::parse(&argv).unwrap().vcpus()
        };
        assert_eq!(vcpus(&[]), 1);
        assert_eq!(vcpus(&["-smp", "8"]), 8);
        assert_eq!(vcpus(&["-smp", "cpus=6,sockets=1"]), 6);
        // cpus absent: maxcpus, else the product of the topology.
        assert_eq!(vcpus(&["-smp", "maxcpus=12"]), 12);
        assert_eq!(vcpus(&["-smp", "sockets=2,cores=4,threads=2"]), 16);
        assert_eq!(vcpus(&["-smp", "cores=3"]), 3);
        // cpus=0 means "compute it".
        assert_eq!(vcpus(&["-smp", "0,sockets=2,cores=2"]), 4);
        // Repeated -smp merges; the later key wins.
        assert_eq!(vcpus(&["-smp", "2", "-smp", "cpus=4"]), 4);
        assert_eq!(vcpus(&["--smp", "3"]), 3);
        assert_eq!(vcpus(&["-smp", "99999999999999"]), u32::MAX);
    }

    #[test]
    fn spinifex_nic_and_data_volume() {
        // spinifex-facts.md, "QEMU command line the daemon builds", for a
        // 4-vCPU guest with IPsec off, a mgmt NIC and one NBD data volume.
        let argv = [
            "qemu-system-x86_64",
            "-name",
            "guest=i-0abc,,web,debug-threads=on",
            "-uuid",
            "5f1e2a3b-0000-4000-8000-000000000001",
            "-smp",
            "4",
            "-netdev",
            "tap,id=net0,ifname=tapeni-0abc1234,script=no,downscript=no,vhost=on,queues=4",
            "-device",
            "virtio-net-pci,netdev=net0,mac=02:00:00:00:00:01,host_mtu=8942,rx_queue_size=1024,mq=on,vectors=10",
            "-netdev",
            "tap,id=mgmt0,ifname=mgi-0abc,script=no,downscript=no,vhost=on",
            "-device",
            "virtio-net-pci,netdev=mgmt0,mac=02:00:00:00:00:02",
            "-blockdev",
            r#"{"node-name":"nbd-vol-abc123","driver":"nbd","server":{"type":"unix","path":"/run/user/1000/nbd-vol-abc123.sock"},"export":"","read-only":false}"#,
            "-object",
            "iothread,id=ioth-vol-abc123",
            "-device",
            "virtio-blk-pci,id=vdisk-vol-abc123,drive=nbd-vol-abc123,iothread=ioth-vol-abc123",
            "-qmp",
            "unix:/run/spinifex/i-0abc.qmp,server,nowait",
        ];
        let cl = QemuCommandLine::parse(&argv).unwrap();
        assert_eq!(cl.name.as_deref(), Some("i-0abc,web"));
        assert_eq!(
            cl.uuid.as_deref(),
            Some("5f1e2a3b-0000-4000-8000-000000000001")
        );
        let n = cl.netdev("net0").unwrap();
        assert_eq!(
            (n.get("type"), n.get("ifname")),
            (Some("tap"), Some("tapeni-0abc1234"))
        );
        assert_eq!((n.flag("vhost"), n.number("queues")), (Some(true), Some(4)));
        assert_eq!(cl.device_number(&cl.devices[0], "vectors"), Some(10));
        assert_eq!(cl.netdev("mgmt0").unwrap().number("queues"), None);
        let b = cl.blockdev("nbd-vol-abc123").unwrap();
        assert_eq!(b.get("server.type"), Some("unix"));
        assert_eq!(
            cl.qmp_sockets(),
            [QmpSocket {
                path: PathBuf::from("/run/spinifex/i-0abc.qmp"),
                server: true
            }]
        );
    }

    #[test]
    fn dotted_blockdev_and_chardev_monitor() {
        let argv = [
            "qemu-system-x86_64",
            "-blockdev",
            "node-name=nbd-vol-9,driver=nbd,server.type=inet,server.host=198.18.0.1,server.port=10809,export=vol-9",
            "-chardev",
            "socket,id=qmp0,path=/tmp/q,,1.sock,server=on,wait=off",
            "-mon",
            "chardev=qmp0,mode=control",
            "-chardev",
            "socket,id=hmp,path=/tmp/hmp.sock,server=on,wait=off",
            "-mon",
            "hmp",
            "-chardev",
            "socket,id=fdmon,fd=29,server=on",
            "-mon",
            "chardev=fdmon,mode=control",
            "-qmp",
            "tcp:127.0.0.1:4444,server=on",
            "-qmp-pretty",
            "unix:path=/tmp/p.sock",
        ];
        let cl = QemuCommandLine::parse(&argv).unwrap();
        let b = cl.blockdev("nbd-vol-9").unwrap();
        assert_eq!(b.get("server.host"), Some("198.18.0.1"));
        assert_eq!(b.number("server.port"), Some(10809));
        let socks = cl.qmp_sockets();
        assert_eq!(socks.len(), 2, "{socks:?}");
        assert_eq!(
            socks[0],
            QmpSocket {
                path: "/tmp/p.sock".into(),
                server: false
            }
        );
        assert_eq!(
            socks[1],
            QmpSocket {
                path: "/tmp/q,1.sock".into(),
                server: true
            }
        );
    }

    #[test]
    fn set_global_and_positional() {
        let argv = [
            "qemu-system-x86_64",
            "disk.img",
            "-device",
            "virtio-net-pci,id=nic0,netdev=n0",
            "-set",
            "device.nic0.rx_queue_size=1024",
            "-global",
            "virtio-net-pci.host_mtu=1442",
            "-global",
            "driver=virtio-blk-pci,property=num-queues,value=2",
            "-name",
            "plain",
            "-append",
            "",
            "-S",
        ];
        let cl = QemuCommandLine::parse(&argv).unwrap();
        let nic = &cl.devices[0];
        assert_eq!(cl.device_number(nic, "rx_queue_size"), Some(1024));
        assert_eq!(cl.device_number(nic, "host_mtu"), Some(1442));
        assert_eq!(
            cl.globals[1],
            ("virtio-blk-pci".into(), "num-queues".into(), "2".into())
        );
        assert_eq!(cl.name.as_deref(), Some("plain"));
        assert_eq!(cl.args[0], ("hda".to_owned(), Some("disk.img".to_owned())));
        assert_eq!(cl.args.last().unwrap(), &("S".to_owned(), None));
    }

    #[test]
    fn malformed_command_lines_are_errors_not_panics() {
        let empty: [&str; 0] = [];
        assert_eq!(QemuCommandLine::parse(&empty), Err(CmdlineError::Empty));
        assert_eq!(
            QemuCommandLine::parse(&["qemu-system-x86_64", "-netdev"]),
            Err(CmdlineError::MissingArgument("netdev".into()))
        );
        assert!(matches!(
            QemuCommandLine::parse(&["qemu-system-x86_64", "-blockdev", "{\"driver\""]),
            Err(CmdlineError::Opts(_))
        ));
        for junk in ["-", "--", "-set", "x", "=", "-set=", ",,", "\u{0}"] {
            let _ = QemuCommandLine::parse(&["q", junk, junk]);
        }
        let cl = QemuCommandLine::parse(&[
            "q",
            "-set",
            "nodot=1",
            "-set",
            "device.none.k=v",
            "-global",
            "x",
        ])
        .unwrap();
        assert!(cl.globals.is_empty());
    }
}
