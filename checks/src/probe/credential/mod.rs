//! Credential files (PEM certificates and private keys) as facts.
//!
//! Certificates are public: a fact keeps each one's DER, so that the
//! judgement ([`x509`]) runs on a replay exactly as it ran live. A private
//! key never becomes a fact: the live read derives what the judgement needs
//! from it, the SHA-256 of the public key it belongs to, its algorithm and
//! size ([`pem`]), and forgets the rest. A bundle can then replay "the key
//! matches the certificate" without holding the key.
//!
//! Layers: [`pem`] and [`x509`] are pure (bytes in, facts out); [`read`] is
//! the one function here that touches the file system.

pub mod pem;
pub mod x509;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use pem::{KeyFacts, PemBlock};

use crate::facts::ProbeError;

/// A credential file as read: where it is, who may read it, and what it
/// holds (never a private key).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialFile {
    /// The path asked about.
    pub path: PathBuf,
    /// Where a symbolic link at `path` points, as written, when it is one.
    #[serde(default)]
    pub link: Option<PathBuf>,
    /// The file `path` resolves to, links followed.
    pub resolved: PathBuf,
    /// The permission bits of the file (links followed): `0o600`.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    /// Its PEM blocks, in order.
    pub blocks: Vec<PemBlock>,
}

impl CredentialFile {
    /// The DER of every certificate it holds, in order.
    pub fn certificates(&self) -> Vec<Vec<u8>> {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                PemBlock::Certificate { der } => pem::decode_der(der).ok(),
                _ => None,
            })
            .collect()
    }

    /// The first private key it holds, as derived.
    pub fn key(&self) -> Option<&KeyFacts> {
        self.blocks.iter().find_map(|b| match b {
            PemBlock::PrivateKey(k) => Some(k),
            _ => None,
        })
    }

    /// Anyone on the host may read it (`o+r`).
    pub fn world_readable(&self) -> bool {
        self.mode & 0o004 != 0
    }

    /// `0600`, as `ls -l` and `chmod` write modes.
    pub fn mode_text(&self) -> String {
        format!("{:04o}", self.mode & 0o7777)
    }
}

/// Read the credential file at `path`: metadata, link, and its PEM blocks,
/// private keys reduced to [`KeyFacts`] before anything is returned.
pub fn read(path: &Path) -> Result<CredentialFile, ProbeError> {
    let io = |e| ProbeError::from_io(path, e);
    let lstat = std::fs::symlink_metadata(path).map_err(io)?;
    let link = if lstat.file_type().is_symlink() {
        Some(std::fs::read_link(path).map_err(io)?)
    } else {
        None
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(ProbeError::Other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    // A credential is a few kilobytes: refuse to read something else whole.
    if meta.len() > pem::MAX_FILE {
        return Err(ProbeError::Other(format!(
            "{} is {} bytes, more than a credential file holds ({} at most)",
            path.display(),
            meta.len(),
            pem::MAX_FILE
        )));
    }
    let resolved = std::fs::canonicalize(path).map_err(io)?;
    let mut bytes = std::fs::read(path).map_err(io)?;
    let blocks = pem::blocks(&bytes);
    // The key's bytes are not kept past this read.
    bytes.fill(0);
    Ok(CredentialFile {
        path: path.to_owned(),
        link,
        resolved,
        mode: meta.mode() & 0o7777,
        uid: meta.uid(),
        gid: meta.gid(),
        blocks,
    })
}
