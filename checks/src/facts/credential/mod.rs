//! Credential files (PEM certificates and private keys) as facts.
//!
//! Certificates are public: a fact keeps each one's DER, so that the
//! judgement ([`x509`]) runs on a replay exactly as it ran live. A private
//! key never becomes a fact: the live read derives what the judgement needs
//! from it, the SHA-256 of the public key it belongs to, its algorithm and
//! size ([`pem`]), and forgets the rest. A bundle can then replay "the key
//! matches the certificate" without holding the key.
//!
//! Layers: [`pem`] and [`x509`] are pure (bytes in, facts out); [`crate::live::credential::read`] is
//! the one function here that touches the file system.

pub mod pem;
pub mod x509;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use pem::{KeyFacts, PemBlock};

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
