//! Reading a credential file (its mode, owner and contents) on this machine.
use crate::facts::credential::{pem, CredentialFile};
use crate::facts::ProbeError;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Read the credential file at `path`: metadata, link, and its PEM blocks,
/// private keys reduced to [`crate::facts::credential::KeyFacts`] before anything is returned.
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
