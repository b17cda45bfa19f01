//! Finding running QEMU guests in /proc: a process is QEMU when `argv[0]` or
//! its executable is `qemu-system-*`. `/proc/PID/cmdline` is read as bytes
//! and split on NUL ourselves, because empty arguments (`-append ""`) must
//! stay in place or every later option shifts by one.

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
