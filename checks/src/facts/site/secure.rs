//! Is a file safe for the doctor to run as root? The rule sshd's
//! `StrictModes` applies to `authorized_keys`, applied to a site check's
//! executable and its doctor.d file: the file and every directory above it
//! belong to root (or to the user the doctor runs as) and are neither
//! group- nor world-writable, the path is absolute, and a symbolic link
//! leads only to such a file. Anyone who can write any of them could
//! otherwise make root run what they like (nagioscore #424).
//!
//! The walk along the path (lstat, readlink) is `live::site::secure_path`;
//! the judgement of each step is here, pure.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Which file of the site check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// `command[0]`.
    Executable,
    /// The doctor.d file that names it (it decides what runs as root).
    Definition,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Executable => "executable",
            Role::Definition => "definition",
        }
    }
}

/// What is wrong, exactly.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "problem", rename_all = "kebab-case")]
pub enum Problem {
    /// The command's first word is not an absolute path.
    RelativePath,
    /// Owned by another user than root (or the doctor's own user).
    NotOwned { uid: u32 },
    /// Writable by its group.
    GroupWritable { mode: u32 },
    /// Writable by everyone.
    WorldWritable { mode: u32 },
    /// The file is not a regular file (a directory, a device, a FIFO).
    NotRegularFile,
    /// No execute bit is set.
    NotExecutable { mode: u32 },
    /// More than [`MAX_LINKS`] symbolic links on the way.
    TooManyLinks,
}

/// At most this many symbolic links are followed (as the kernel's 40).
pub const MAX_LINKS: usize = 40;

/// A refusal: which file of the check, the path at fault, and the path as
/// the check names it when a symbolic link led there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub role: Role,
    /// The file or directory at fault.
    pub path: PathBuf,
    #[serde(flatten)]
    pub problem: Problem,
    /// The path as the check gives it, when links were followed to `path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<PathBuf>,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display();
        let what = match &self.problem {
            Problem::RelativePath => format!(
                "the {} {path} is a relative path: give it from /",
                self.role.as_str()
            ),
            Problem::NotOwned { uid } => {
                format!("{path} is owned by uid {uid}, not root")
            }
            Problem::GroupWritable { mode } => {
                format!("{path} is group-writable (mode {mode:04o})")
            }
            Problem::WorldWritable { mode } => {
                format!("{path} is world-writable (mode {mode:04o})")
            }
            Problem::NotRegularFile => format!("{path} is not a regular file"),
            Problem::NotExecutable { mode } => {
                format!("{path} is not executable (mode {mode:04o})")
            }
            Problem::TooManyLinks => {
                format!("more than {MAX_LINKS} symbolic links on the way to {path}")
            }
        };
        match &self.via {
            Some(via) => write!(
                f,
                "{what} (the {} {} is a symbolic link that leads there)",
                self.role.as_str(),
                via.display()
            ),
            None => f.write_str(&what),
        }
    }
}

/// What an lstat said of one step of the walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inode {
    pub uid: u32,
    /// `st_mode & 0o7777`.
    pub mode: u32,
    pub kind: InodeKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InodeKind {
    Directory,
    Regular,
    Symlink,
    Other,
}

/// The problem with a directory on the way (`last` is `None`), or with the
/// file at the end (the role it plays), for a doctor running as `euid`;
/// `None` when it is fine. A symbolic link itself is not judged (its mode
/// means nothing): where it leads is, and the directory that holds it.
pub fn judge(inode: Inode, last: Option<Role>, euid: u32) -> Option<Problem> {
    if inode.kind == InodeKind::Symlink {
        return None;
    }
    if inode.uid != 0 && inode.uid != euid {
        return Some(Problem::NotOwned { uid: inode.uid });
    }
    if inode.mode & 0o002 != 0 {
        return Some(Problem::WorldWritable { mode: inode.mode });
    }
    if inode.mode & 0o020 != 0 {
        return Some(Problem::GroupWritable { mode: inode.mode });
    }
    if let Some(role) = last {
        if inode.kind != InodeKind::Regular {
            return Some(Problem::NotRegularFile);
        }
        if role == Role::Executable && inode.mode & 0o111 == 0 {
            return Some(Problem::NotExecutable { mode: inode.mode });
        }
    }
    None
}

/// `path` is absolute, or the refusal of a relative one.
pub fn absolute(path: &Path, role: Role) -> Result<(), Refusal> {
    if path.is_absolute() {
        Ok(())
    } else {
        Err(Refusal {
            role,
            path: path.to_owned(),
            problem: Problem::RelativePath,
            via: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inode(uid: u32, mode: u32, kind: InodeKind) -> Inode {
        Inode { uid, mode, kind }
    }

    #[test]
    fn strict_modes() {
        let exe = Some(Role::Executable);
        let dir = |uid, mode| judge(inode(uid, mode, InodeKind::Directory), None, 0);
        let file = |uid, mode| judge(inode(uid, mode, InodeKind::Regular), exe, 0);
        assert_eq!(dir(0, 0o755), None);
        assert_eq!(file(0, 0o755), None);
        assert_eq!(
            dir(0, 0o1777),
            Some(Problem::WorldWritable { mode: 0o1777 })
        );
        assert_eq!(file(0, 0o775), Some(Problem::GroupWritable { mode: 0o775 }));
        assert_eq!(file(1000, 0o755), Some(Problem::NotOwned { uid: 1000 }));
        assert_eq!(file(0, 0o644), Some(Problem::NotExecutable { mode: 0o644 }));
        // The doctor's own user may own what it runs, as in sshd.
        assert_eq!(
            judge(inode(1000, 0o755, InodeKind::Regular), exe, 1000),
            None
        );
        assert_eq!(
            judge(inode(0, 0o755, InodeKind::Directory), exe, 0),
            Some(Problem::NotRegularFile)
        );
        assert_eq!(judge(inode(1000, 0o777, InodeKind::Symlink), None, 0), None);
        // A definition need not be executable, but it must be a file.
        let def = Some(Role::Definition);
        assert_eq!(judge(inode(0, 0o644, InodeKind::Regular), def, 0), None);
        assert_eq!(
            judge(inode(0, 0o666, InodeKind::Regular), def, 0),
            Some(Problem::WorldWritable { mode: 0o666 })
        );
    }

    #[test]
    fn a_refusal_says_exactly_what_is_wrong() {
        let r = Refusal {
            role: Role::Executable,
            path: "/tmp".into(),
            problem: Problem::WorldWritable { mode: 0o1777 },
            via: Some("/etc/spinifex/doctor.d/bin/check".into()),
        };
        assert_eq!(
            r.to_string(),
            "/tmp is world-writable (mode 1777) (the executable /etc/spinifex/doctor.d/bin/check is a symbolic link that leads there)"
        );
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["problem"], "world-writable");
        assert_eq!(serde_json::from_value::<Refusal>(v).unwrap(), r);
        assert!(absolute(Path::new("check_load"), Role::Executable)
            .unwrap_err()
            .to_string()
            .contains("relative path"));
    }
}
