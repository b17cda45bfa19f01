//! A private view of fixed system paths for one process: the doctor reads
//! `/var/run/charon.pid` and `/etc/ipsec.d/cacerts` where every node has
//! them, so a test gives the process (the doctor, or a daemon it starts)
//! its own mount namespace in which a temp dir is bind-mounted over such a
//! path. The doctor then runs exactly as on a node, reading the real paths
//! with no test-only switch, while the machine's own /run and /etc are
//! never touched: mounts made in a private namespace (propagation made
//! private first) are invisible outside it and vanish with its last
//! process. `/proc` is the machine's (same pid namespace), so the processes
//! a test starts are seen as the doctor would see them. A daemon may also
//! get its own network namespace, so that its sockets and the xfrm
//! policies it installs stay out of the machine's, or join a test's named
//! one ([`isolate_in`]): a node's daemons and its doctor share it, as on a
//! node (ipsec.daemon counts only daemons in its own network namespace).

use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::mount::{mount, MsFlags};
use nix::sched::{setns, unshare, CloneFlags};

use super::netns::Netns;

/// Run `cmd` in a mount namespace of its own where each `(dir, over)` of
/// `binds` is bind-mounted over `over`; with `net`, in a network namespace
/// of its own too (only loopback, down).
pub fn isolate(cmd: &mut Command, binds: &[(&Path, &str)], net: bool) {
    private(cmd, binds, net, None);
}

/// [`isolate`], in the test's network namespace `ns` (joined before the
/// mounts: its handle is opened here, before any bind hides `/run/netns`).
pub fn isolate_in(cmd: &mut Command, binds: &[(&Path, &str)], ns: &Netns) {
    let path = format!("/run/netns/{}", ns.name);
    let fd: OwnedFd = std::fs::File::open(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .into();
    private(cmd, binds, false, Some(fd));
}

fn private(cmd: &mut Command, binds: &[(&Path, &str)], net: bool, join: Option<OwnedFd>) {
    let binds: Vec<(PathBuf, PathBuf)> = binds
        .iter()
        .map(|(from, over)| {
            assert!(
                Path::new(over).exists(),
                "{over} missing: bash .ci/run installs what makes it (strongswan-starter for /etc/ipsec.d)"
            );
            (from.to_path_buf(), PathBuf::from(over))
        })
        .collect();
    let mut flags = CloneFlags::CLONE_NEWNS;
    if net {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    // SAFETY: between fork and exec the closure only makes syscalls
    // (unshare, mount) on data prepared before the fork; it allocates
    // nothing.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(fd) = &join {
                setns(fd, CloneFlags::CLONE_NEWNET)?;
            }
            unshare(flags)?;
            mount(
                None::<&str>,
                "/",
                None::<&str>,
                MsFlags::MS_REC | MsFlags::MS_PRIVATE,
                None::<&str>,
            )?;
            for (from, over) in &binds {
                mount(
                    Some(from.as_path()),
                    over.as_path(),
                    None::<&str>,
                    MsFlags::MS_BIND,
                    None::<&str>,
                )?;
            }
            Ok(())
        });
    }
}
