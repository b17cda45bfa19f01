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
///
/// Every process is looked at (a QEMU is known by its argv\[0\] or its
/// executable, and neither can be told from `comm`, which `-name
/// ...,process=` sets), so the walk is kept lean: the pids from one read of
/// /proc, each command line read into one reused buffer (open, read to
/// end, close: no `stat` for a size /proc does not report), and the
/// executable link read only when argv\[0\] does not already say QEMU.
pub fn discover() -> Result<Discovery, ProbeError> {
    let mut out = Discovery::default();
    let mut cmdline = Vec::with_capacity(4096);
    for pid in super::pids()? {
        let dir = Path::new("/proc").join(pid.to_string());
        match super::read_into(&dir.join("cmdline"), &mut cmdline) {
            Ok(()) => {}
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
        }
        // Kernel threads and zombies have no argv. argv[0] is all that is
        // judged here; the whole argv is split only for a QEMU.
        let words = cmdline.strip_suffix(b"\0").unwrap_or(&cmdline);
        let Some(argv0) = words
            .split(|&b| b == 0)
            .next()
            .filter(|_| !words.is_empty())
        else {
            continue;
        };
        let qemu = is_qemu_program(&String::from_utf8_lossy(argv0))
            || match std::fs::read_link(dir.join("exe")) {
                Ok(exe) => is_qemu_program(&exe.to_string_lossy()),
                // Not ours to read (another user's process when unprivileged):
                // fall back on the command name, which anyone can read.
                Err(_) => comm_is_qemu(&dir),
            };
        if qemu {
            out.found.push(QemuProcess {
                pid,
                argv: redact_secrets(split_cmdline(&cmdline)),
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

    /// Child processes killed and reaped when the test ends, however.
    struct Reaped(Vec<std::process::Child>);

    impl Drop for Reaped {
        fn drop(&mut self) {
            for child in &mut self.0 {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }

    fn sleeper(program: &Path, argv0: &str) -> std::process::Child {
        use std::os::unix::process::CommandExt;
        // A copy just written may still be open for writing in a child
        // another test thread is forking: ETXTBSY, briefly.
        for _ in 0..50 {
            match std::process::Command::new(program)
                .arg0(argv0)
                .args(["--", "60"])
                .spawn()
            {
                Ok(child) => return child,
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                Err(e) => panic!("{}: {e}", program.display()),
            }
        }
        panic!("{} stayed busy", program.display())
    }

    #[test]
    fn qemu_is_known_by_its_executable_or_its_argv0() {
        let sleep = ["/usr/bin/sleep", "/bin/sleep"]
            .into_iter()
            .map(Path::new)
            .find(|p| p.exists())
            .expect("coreutils sleep");
        let dir = tempfile::tempdir().unwrap();
        let renamed = dir.path().join("qemu-system-spxtest");
        std::fs::copy(sleep, &renamed).unwrap();
        let mut children = Reaped(Vec::new());
        // A QEMU executable run under another argv[0] (as a launcher may).
        children.0.push(sleeper(&renamed, "guest-runner"));
        // Another program run as argv[0] qemu-system-*.
        children.0.push(sleeper(sleep, "qemu-system-x86_64"));
        // Neither.
        children.0.push(sleeper(sleep, "sleep"));
        let pids: Vec<i32> = children.0.iter().map(|c| c.id() as i32).collect();
        // Wait until each has exec'd (argv[0] no longer the test's).
        for &pid in &pids {
            for _ in 0..200 {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                if cmdline.ends_with(b"\0--\x0060\0") {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        let d = discover().expect("read /proc");
        let argv = |pid: i32| {
            d.found
                .iter()
                .find(|p| p.pid == pid)
                .map(|p| p.argv.clone())
        };
        assert_eq!(
            argv(pids[0]).as_deref(),
            Some(&["guest-runner", "--", "60"].map(String::from)[..]),
            "{d:?}"
        );
        assert_eq!(
            argv(pids[1]).as_deref(),
            Some(&["qemu-system-x86_64", "--", "60"].map(String::from)[..]),
            "{d:?}"
        );
        assert_eq!(argv(pids[2]), None, "{d:?}");
        assert!(d.found.windows(2).all(|w| w[0].pid < w[1].pid));
        assert!(d.unreadable.iter().all(|u| !pids.contains(&u.pid)));
    }

    #[test]
    fn this_test_process_is_not_qemu() {
        let d = discover().expect("read /proc");
        assert!(d.found.iter().all(|p| p.pid != std::process::id() as i32));
    }
}
