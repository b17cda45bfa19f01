//! The walk behind the site check's `StrictModes`: every directory from `/`
//! down to the file, every symbolic link on the way followed (and the
//! directories its target passes through judged too), each step lstat'ed
//! and judged by [`crate::facts::site::secure::judge`].

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use crate::facts::site::secure::{self, Inode, InodeKind, Problem, Refusal, Role, MAX_LINKS};
use crate::facts::site::Ended;

/// `Ok` when the doctor, running as `euid`, may run (or trust) `path`;
/// else the check's refusal, or why it cannot run (the file is not there).
pub fn verify(path: &Path, role: Role, euid: u32) -> Result<(), Ended> {
    secure::absolute(path, role).map_err(|refusal| Ended::Refused { refusal })?;
    let refused = |at: &Path, problem: Problem, via: bool| Ended::Refused {
        refusal: Refusal {
            role,
            path: at.to_owned(),
            problem,
            via: via.then(|| path.to_owned()),
        },
    };
    let mut todo: VecDeque<OsString> = names(path);
    let mut at = PathBuf::from("/");
    let mut links = 0;
    judge_at(&at, euid).map_err(|p| refused(&at, p, false))?;
    while let Some(name) = todo.pop_front() {
        if name == ".." {
            at.pop();
            continue;
        }
        let next = at.join(&name);
        let last = todo.is_empty().then_some(role);
        let meta = std::fs::symlink_metadata(&next).map_err(|e| Ended::CannotRun {
            error: format!("{}: {e}", next.display()),
        })?;
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return Err(refused(&next, Problem::TooManyLinks, true));
            }
            let target = std::fs::read_link(&next).map_err(|e| Ended::CannotRun {
                error: format!("{}: {e}", next.display()),
            })?;
            if target.is_absolute() {
                at = PathBuf::from("/");
            }
            for n in names(&target).into_iter().rev() {
                todo.push_front(n);
            }
            continue;
        }
        let inode = inode_of(&meta);
        if let Some(problem) = secure::judge(inode, last, euid) {
            return Err(refused(&next, problem, links > 0));
        }
        at = next;
    }
    Ok(())
}

/// The names a path walks through (`.` dropped, `..` kept), root left out.
fn names(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_owned()),
            Component::ParentDir => Some("..".into()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// The root directory, judged as any directory on the way.
fn judge_at(path: &Path, euid: u32) -> Result<(), Problem> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => secure::judge(inode_of(&meta), None, euid).map_or(Ok(()), Err),
        Err(_) => Ok(()),
    }
}

fn inode_of(meta: &std::fs::Metadata) -> Inode {
    let t = meta.file_type();
    Inode {
        uid: meta.uid(),
        mode: meta.mode() & 0o7777,
        kind: if t.is_symlink() {
            InodeKind::Symlink
        } else if t.is_dir() {
            InodeKind::Directory
        } else if t.is_file() {
            InodeKind::Regular
        } else {
            InodeKind::Other
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A folder whose parents the walk accepts: under the build's own
    /// target/, or where [`super::super::trusted_scratch`] says when the
    /// checkout itself lies under a world-writable folder.
    fn safe_dir() -> tempfile::TempDir {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tmp");
        tempfile::tempdir_in(super::super::trusted_scratch(&base).unwrap()).unwrap()
    }

    fn euid() -> u32 {
        nix::unistd::geteuid().as_raw()
    }

    fn refusal(r: Result<(), Ended>) -> Refusal {
        match r {
            Err(Ended::Refused { refusal }) => refusal,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn a_safe_file_passes_and_each_unsafe_step_is_named() {
        let dir = safe_dir();
        let exe = dir.path().join("check");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(verify(&exe, Role::Executable, euid()), Ok(()));

        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o775)).unwrap();
        let r = refusal(verify(&exe, Role::Executable, euid()));
        assert_eq!(r.path, exe);
        assert_eq!(r.problem, Problem::GroupWritable { mode: 0o775 });
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();

        // A world-writable folder above it.
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let inside = open.join("check");
        std::fs::copy(&exe, &inside).unwrap();
        let r = refusal(verify(&inside, Role::Executable, euid()));
        assert_eq!(r.path, open);
        assert_eq!(r.problem, Problem::WorldWritable { mode: 0o777 });

        // A link into /tmp (world-writable, sticky) is refused at /tmp.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/tmp/spx-doctor-no-such-check", &link).unwrap();
        let r = refusal(verify(&link, Role::Executable, euid()));
        assert_eq!(r.path, Path::new("/tmp"));
        assert_eq!(r.via.as_deref(), Some(link.as_path()));
        assert!(matches!(r.problem, Problem::WorldWritable { .. }));

        // A relative link to a safe file is followed and passes.
        let good = dir.path().join("good");
        std::os::unix::fs::symlink("check", &good).unwrap();
        assert_eq!(verify(&good, Role::Executable, euid()), Ok(()));

        // A loop of links.
        std::os::unix::fs::symlink("loop", dir.path().join("loop")).unwrap();
        let r = refusal(verify(&dir.path().join("loop"), Role::Executable, euid()));
        assert_eq!(r.problem, Problem::TooManyLinks);

        assert!(matches!(
            verify(&dir.path().join("missing"), Role::Executable, euid()),
            Err(Ended::CannotRun { .. })
        ));
        let r = refusal(verify(Path::new("check_load"), Role::Executable, euid()));
        assert_eq!(r.problem, Problem::RelativePath);
        // A folder is not an executable.
        let r = refusal(verify(dir.path(), Role::Executable, euid()));
        assert_eq!(r.problem, Problem::NotRegularFile);
    }
}
