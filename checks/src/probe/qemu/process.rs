//! Finding running QEMU guests in /proc: a process is QEMU when `argv[0]` or
//! its executable is `qemu-system-*`. `/proc/PID/cmdline` is read as bytes
//! and split on NUL ourselves, because empty arguments (`-append ""`) must
//! stay in place or every later option shifts by one.

use std::path::Path;

use crate::facts::ProbeError;

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
            out.found.push(QemuProcess {
                pid,
                argv: redact_secrets(argv),
            });
        }
    }
    out.found.sort_by_key(|p| p.pid);
    Ok(out)
}

/// `/proc/PID/comm` is the executable's name cut to 15 bytes:
/// `qemu-system-x86` for qemu-system-x86_64.
/// Stands for a secret taken off a command line.
pub const REDACTED: &str = "(redacted)";

/// `argv` with the secrets a command line can carry replaced by
/// [`REDACTED`], so that no fact (and no bundle) holds them: `password=`
/// and `passwd=` of any option (VNC, SPICE, iSCSI, block drivers), the
/// `data=` of a `-object secret` (the secret itself; `file=` is a path),
/// and the `key=` of a Ceph `rbd:` file name. Nothing the checks judge is
/// among them.
pub fn redact_secrets(mut argv: Vec<String>) -> Vec<String> {
    for i in 0..argv.len() {
        let secret_object = i > 0 && argv[i - 1] == "-object";
        let word = &argv[i];
        let redacted = if word.starts_with('{') {
            redact_json(word, secret_object)
        } else if word.contains('=') {
            redact_keyval(word, secret_object)
        } else {
            None
        };
        if let Some(r) = redacted {
            argv[i] = r;
        }
    }
    argv
}

/// QEMU's `key=value,key=value` (a literal comma doubled), secrets out;
/// None when there were none.
fn redact_keyval(word: &str, secret_object: bool) -> Option<String> {
    let is_secret_object = secret_object
        && (word.starts_with("secret,") || word.split(',').any(|p| p == "qom-type=secret"));
    let mut parts: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut chars = word.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ',' {
            if chars.peek() == Some(&',') {
                chars.next();
                cur.push_str(",,");
            } else {
                parts.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(c);
        }
    }
    parts.push(cur);
    let mut changed = false;
    for part in &mut parts {
        let Some((key, value)) = part.split_once('=') else {
            continue;
        };
        let secret = matches!(key, "password" | "passwd") || (is_secret_object && key == "data");
        if secret && value != REDACTED {
            *part = format!("{key}={REDACTED}");
            changed = true;
        } else if value.starts_with("rbd:") {
            let fields: Vec<String> = value
                .split(':')
                .map(|f| match f.split_once('=') {
                    Some(("key", _)) => format!("key={REDACTED}"),
                    _ => f.to_owned(),
                })
                .collect();
            let joined = fields.join(":");
            if joined != value {
                *part = format!("{key}={joined}");
                changed = true;
            }
        }
    }
    changed.then(|| parts.join(","))
}

/// The JSON form of an option (`-object '{"qom-type":"secret",…}'`).
fn redact_json(word: &str, secret_object: bool) -> Option<String> {
    let mut v: serde_json::Value = serde_json::from_str(word).ok()?;
    let obj = v.as_object_mut()?;
    let is_secret_object =
        secret_object && obj.get("qom-type").and_then(|t| t.as_str()) == Some("secret");
    let mut changed = false;
    for (key, value) in obj.iter_mut() {
        let secret =
            matches!(key.as_str(), "password" | "passwd") || (is_secret_object && key == "data");
        if secret {
            *value = serde_json::Value::String(REDACTED.to_owned());
            changed = true;
        }
    }
    changed.then(|| v.to_string())
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
        let cl = crate::probe::qemu::QemuCommandLine::parse(&out).unwrap();
        assert_eq!(cl.drive("vol").and_then(|d| d.get("cache")), Some("none"));
    }

    #[test]
    fn this_test_process_is_not_qemu() {
        let d = discover().expect("read /proc");
        assert!(d.found.iter().all(|p| p.pid != std::process::id() as i32));
    }
}
