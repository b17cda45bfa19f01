//! Facts: what the host is, as types and the pure parsers that build them
//! from kernel, OVSDB, QEMU and file formats. Nothing here does I/O: the
//! syscalls that fetch the bytes are [`crate::live`]'s, the seam that
//! carries them is [`crate::host`], and the typed reads over it are
//! [`crate::read`]'s.
//!
//! [`ProbeError`] says what kind of failure a read met, because that decides
//! the verdict: permission denied is a *skip* (needs privilege), a missing file
//! or device is *not applicable*, anything else is an *error*. None is a fail.

pub mod credential;
pub mod ethtool;
pub mod icmp;
pub mod journal;
pub mod links;
pub mod neighbours;
pub mod ovsdb;
pub mod peers;
pub mod process;
pub mod qemu;
pub mod site;
pub mod xfrm;

use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("permission denied reading {what}")]
    PermissionDenied { what: String, needs: String },
    #[error("{0} not found")]
    NotFound(String),
    #[error("could not parse {what}: {detail}")]
    Parse { what: String, detail: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("{0}")]
    Other(String),
    /// Replaying a bundle that holds no answer to the request (taken by
    /// another version of the doctor, or by a run that did not ask it).
    #[error("{0}")]
    NotRecorded(String),
}

impl ProbeError {
    /// Classify an I/O error on a path into the kind that decides the verdict.
    pub fn from_io(path: &Path, err: io::Error) -> ProbeError {
        let what = path.display().to_string();
        match err.kind() {
            io::ErrorKind::PermissionDenied => ProbeError::PermissionDenied {
                needs: format!("root to read {what}"),
                what,
            },
            io::ErrorKind::NotFound => ProbeError::NotFound(what),
            _ => ProbeError::Io { what, source: err },
        }
    }

    pub fn parse(what: impl Into<String>, detail: impl Into<String>) -> ProbeError {
        ProbeError::Parse {
            what: what.into(),
            detail: detail.into(),
        }
    }
}

/// How a probe failure is kept in a bundle: its kind and its words, so a
/// replay says exactly what the live run said (an I/O error keeps its
/// errno, and is rebuilt from it).
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ProbeErrorRecord {
    PermissionDenied {
        what: String,
        needs: String,
    },
    NotFound {
        what: String,
    },
    Parse {
        what: String,
        detail: String,
    },
    Io {
        what: String,
        message: String,
        errno: Option<i32>,
    },
    Other {
        message: String,
    },
    NotRecorded {
        why: String,
    },
}

impl serde::Serialize for ProbeError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let record = match self {
            ProbeError::PermissionDenied { what, needs } => ProbeErrorRecord::PermissionDenied {
                what: what.clone(),
                needs: needs.clone(),
            },
            ProbeError::NotFound(what) => ProbeErrorRecord::NotFound { what: what.clone() },
            ProbeError::Parse { what, detail } => ProbeErrorRecord::Parse {
                what: what.clone(),
                detail: detail.clone(),
            },
            ProbeError::Io { what, source } => ProbeErrorRecord::Io {
                what: what.clone(),
                message: source.to_string(),
                errno: source.raw_os_error(),
            },
            ProbeError::Other(message) => ProbeErrorRecord::Other {
                message: message.clone(),
            },
            ProbeError::NotRecorded(why) => ProbeErrorRecord::NotRecorded { why: why.clone() },
        };
        record.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for ProbeError {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ProbeError, D::Error> {
        Ok(match ProbeErrorRecord::deserialize(d)? {
            ProbeErrorRecord::PermissionDenied { what, needs } => {
                ProbeError::PermissionDenied { what, needs }
            }
            ProbeErrorRecord::NotFound { what } => ProbeError::NotFound(what),
            ProbeErrorRecord::Parse { what, detail } => ProbeError::Parse { what, detail },
            ProbeErrorRecord::Io {
                what,
                message,
                errno,
            } => ProbeError::Io {
                what,
                source: match errno {
                    Some(n) => io::Error::from_raw_os_error(n),
                    None => io::Error::other(message),
                },
            },
            ProbeErrorRecord::Other { message } => ProbeError::Other(message),
            ProbeErrorRecord::NotRecorded { why } => ProbeError::NotRecorded(why),
        })
    }
}

/// `/proc/sys/net/core/rmem_max` for `net.core.rmem_max`.
pub fn sysctl_path(name: &str) -> PathBuf {
    let mut path = PathBuf::from("/proc/sys");
    path.extend(name.split('.'));
    path
}

/// Hex text as bytes (test captures of netlink dumps).
#[cfg(test)]
pub(crate) fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// A netlink capture in `checks/testdata/DIR/NAME`: every `recv()` of the
/// dump as a line of hex, joined; `#` lines are its provenance.
#[cfg(test)]
pub(crate) fn hex_capture(dir: &str, name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(dir)
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("capture {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .flat_map(|l| hex(l.trim()))
        .collect()
}
