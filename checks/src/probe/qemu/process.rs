//! Finding running QEMU guests in /proc: a process is QEMU when `argv[0]` or
//! its executable is `qemu-system-*`. `/proc/PID/cmdline` is read as bytes
//! and split on NUL ourselves, because empty arguments (`-append ""`) must
//! stay in place or every later option shifts by one.

use std::path::Path;

use crate::probe::ProbeError;

/// A QEMU process and its argv.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QemuProcess {
    pub pid: i32,
    pub argv: Vec<String>,
}

/// A process that looked like QEMU but could not be read, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Unreadable {
    pub pid: i32,
    pub reason: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Discovery {
    pub found: Vec<QemuProcess>,
    pub unreadable: Vec<Unreadable>,
}

/// True for `qemu-system-x86_64`, `/usr/bin/qemu-system-aarch64`, and an
/// executable link that ends in ` (deleted)` after a package upgrade.
pub fn is_qemu_program(path: &str) -> bool {
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    let base = path.rsplit('/').next().unwrap_or(path);
    base.starts_with("qemu-system-")
}

/// Split the bytes of `/proc/PID/cmdline` into argv: NUL-terminated words,
/// empty words kept, invalid UTF-8 replaced.
pub fn split_cmdline(bytes: &[u8]) -> Vec<String> {
    let bytes = bytes.strip_suffix(b"\0").unwrap_or(bytes);
    if bytes.is_empty() {
        return Vec::new();
    }
    bytes
        .split(|&b| b == 0)
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect()
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
            out.found.push(QemuProcess { pid, argv });
        }
    }
    out.found.sort_by_key(|p| p.pid);
    Ok(out)
}

/// `/proc/PID/comm` is the executable's name cut to 15 bytes:
/// `qemu-system-x86` for qemu-system-x86_64.
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
    fn this_test_process_is_not_qemu() {
        let d = discover().expect("read /proc");
        assert!(d.found.iter().all(|p| p.pid != std::process::id() as i32));
    }
}
