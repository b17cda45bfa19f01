//! QEMU processes on this machine: discovery in /proc, and their open files.
use crate::facts::qemu::host::{tun_fdinfo_iff, ProcessFds, VHOST_NET};
use crate::facts::qemu::process::{
    is_qemu_program, redact_secrets, split_cmdline, Discovery, QemuProcess, Unreadable,
};
use crate::facts::ProbeError;
use std::path::Path;

/// Read `/proc/PID/fd` and the `iff:` line of each tun descriptor's fdinfo.
/// Needs the right to inspect the process (root for other users' guests).
pub fn process_fds(pid: i32) -> Result<ProcessFds, ProbeError> {
    let dir = Path::new("/proc").join(pid.to_string()).join("fd");
    let entries = std::fs::read_dir(&dir).map_err(|e| ProbeError::from_io(&dir, e))?;
    let mut out = ProcessFds::default();
    for entry in entries.flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        if target == Path::new(VHOST_NET) {
            out.vhost_net += 1;
        } else if target == Path::new("/dev/net/tun") {
            let info = Path::new("/proc")
                .join(pid.to_string())
                .join("fdinfo")
                .join(entry.file_name());
            if let Some(name) = std::fs::read_to_string(&info)
                .ok()
                .as_deref()
                .and_then(tun_fdinfo_iff)
            {
                *out.tun_queues.entry(name.to_owned()).or_default() += 1;
            }
        }
    }
    Ok(out)
}
/// Every QEMU process visible in /proc. Processes that vanish while being
/// read are ignored; ones that look like QEMU (by `comm`) but cannot be
/// read are listed with the reason.
pub fn discover() -> Result<Discovery, ProbeError> {
    let procs = procfs::process::all_processes()
        .map_err(|e| ProbeError::Other(format!("listing /proc: {e}")))?;
    let mut out = Discovery::default();
    for proc in procs.flatten() {
        let pid = proc.pid();
        let dir = Path::new("/proc").join(pid.to_string());
        let argv = match std::fs::read(dir.join("cmdline")) {
            Ok(bytes) => split_cmdline(&bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                if comm_is_qemu(&dir) {
                    out.unreadable.push(Unreadable {
                        pid,
                        reason: format!("reading {}/cmdline: {e}", dir.display()),
                    });
                }
                continue;
            }
        };
        // Kernel threads and zombies have no argv.
        let Some(argv0) = argv.first() else { continue };
        let qemu = is_qemu_program(argv0)
            || match proc.exe() {
                Ok(exe) => is_qemu_program(&exe.to_string_lossy()),
                // Not ours to read (another user's process when unprivileged):
                // fall back on the command name, which anyone can read.
                Err(_) => comm_is_qemu(&dir),
            };
        if qemu {
            out.found.push(QemuProcess {
                pid,
                argv: redact_secrets(argv),
            });
        }
    }
    out.found.sort_by_key(|p| p.pid);
    Ok(out)
}

fn comm_is_qemu(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("comm"))
        .is_ok_and(|c| c.trim_end().starts_with("qemu-system-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_names() {
        assert!(is_qemu_program("qemu-system-x86_64"));
        assert!(is_qemu_program("/usr/bin/qemu-system-aarch64"));
        assert!(is_qemu_program("/usr/bin/qemu-system-x86_64 (deleted)"));
        assert!(!is_qemu_program("/usr/bin/qemu-img"));
        assert!(!is_qemu_program("/usr/bin/kvm"));
        assert!(!is_qemu_program(""));
    }

    #[test]
    fn cmdline_bytes_keep_empty_words() {
        let argv = split_cmdline(b"qemu-system-x86_64\0-append\0\0-S\0");
        assert_eq!(argv, ["qemu-system-x86_64", "-append", "", "-S"]);
        assert!(split_cmdline(b"").is_empty());
        assert_eq!(split_cmdline(b"a\xff\0"), ["a\u{fffd}"]);
    }

    #[test]
    fn secrets_are_taken_off_command_lines() {
        let argv: Vec<String> = [
            "qemu-system-x86_64",
            "-object",
            "secret,id=sec0,data=letmein,format=raw",
            "-object",
            "secret,id=sec1,file=/run/spinifex/sec1",
            "-object",
            r#"{"qom-type":"secret","id":"sec2","data":"hunter2"}"#,
            "-vnc",
            ":0,password=on",
            "-drive",
            "file=iscsi://t/iqn.x/0,password=s3cr3t,,x,id=vol,cache=none",
            "-drive",
            "file=rbd:pool/img:id=admin:key=AQBsecretkey==:conf=/etc/ceph.conf,format=raw",
            "-name",
            "guest=data=1",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let out = redact_secrets(argv.clone());
        assert_eq!(out[2], "secret,id=sec0,data=(redacted),format=raw");
        assert_eq!(out[4], argv[4], "a file path is no secret");
        assert_eq!(
            out[6],
            r#"{"qom-type":"secret","id":"sec2","data":"(redacted)"}"#
        );
        assert_eq!(out[8], ":0,password=(redacted)");
        assert_eq!(
            out[10],
            "file=iscsi://t/iqn.x/0,password=(redacted),id=vol,cache=none"
        );
        assert_eq!(
            out[12],
            "file=rbd:pool/img:id=admin:key=(redacted):conf=/etc/ceph.conf,format=raw"
        );
        assert_eq!(out[14], argv[14], "data= outside a secret object is kept");
        for secret in ["letmein", "hunter2", "s3cr3t", "AQBsecretkey"] {
            assert!(!out.iter().any(|w| w.contains(secret)), "{secret}");
        }
        // What the checks judge still parses.
        let cl = crate::facts::qemu::QemuCommandLine::parse(&out).unwrap();
        assert_eq!(cl.drive("vol").and_then(|d| d.get("cache")), Some("none"));
    }

    #[test]
    fn this_test_process_is_not_qemu() {
        let d = discover().expect("read /proc");
        assert!(d.found.iter().all(|p| p.pid != std::process::id() as i32));
    }
}
