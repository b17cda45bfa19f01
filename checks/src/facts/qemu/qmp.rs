//! A bounded QMP client: enough of the QEMU Machine Protocol to see what the
//! command line cannot, the volumes hot-attached over QMP and their
//! iothreads. Every step (connect, greeting, each reply) shares one
//! deadline, so a monitor that never answers (QEMU serves one client at a
//! time, and the daemon may be holding it) costs at most that bound.

use std::time::Duration;

use serde_json::Value;

#[derive(Debug, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum QmpError {
    #[error("connect {path}: {detail}")]
    Connect { path: String, detail: String },
    #[error("connect {path}: permission denied (needs root or the socket's group)")]
    PermissionDenied { path: String },
    #[error("no answer within {0:?} ({1}); another client may hold the monitor")]
    Timeout(Duration, String),
    #[error("QMP protocol: {0}")]
    Protocol(String),
    #[error("{command}: {desc}")]
    Command { command: String, desc: String },
}

/// A block device as QMP sees it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QmpBlock {
    /// `device` (the -drive id; empty for -blockdev backends).
    pub device: String,
    /// The guest device's QOM path, e.g. `/machine/peripheral/vdisk-vol-1/virtio-backend`.
    pub qdev: Option<String>,
    /// The top node's name.
    pub node_name: Option<String>,
    /// The iothread the guest device uses (`qom-get … iothread`), None when unset.
    pub iothread: Option<String>,
}

impl QmpBlock {
    /// The guest device's id: `vdisk-vol-1` from
    /// `/machine/peripheral/vdisk-vol-1/virtio-backend`; None for devices
    /// added without an id (`peripheral-anon`).
    pub fn device_id(&self) -> Option<&str> {
        let rest = self.qdev.as_deref()?.strip_prefix("/machine/peripheral/")?;
        Some(rest.split('/').next().unwrap_or(rest))
    }
}

/// `{"QMP": {"version": {"qemu": {"major": 7, "minor": 2, …}}}}` → (7, 2).
pub fn greeting_version(greeting: &Value) -> Option<(u32, u32)> {
    let qemu = &greeting["QMP"]["version"]["qemu"];
    let n = |k: &str| qemu[k].as_u64().and_then(|v| u32::try_from(v).ok());
    Some((n("major")?, n("minor")?))
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QmpFacts {
    /// QEMU's (major, minor), from the greeting.
    pub qemu_version: Option<(u32, u32)>,
    /// `query-iothreads` ids.
    pub iothreads: Vec<String>,
    /// `query-block` entries that have a guest device and media.
    pub block: Vec<QmpBlock>,
}

/// The pure part of [`crate::live::qmp::gather`]: the replies of `query-iothreads` and
/// `query-block`.
pub fn parse_facts(iothreads: &Value, block: &Value) -> QmpFacts {
    let iothreads = iothreads
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let block = block
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|b| b.get("inserted").is_some())
                .map(|b| QmpBlock {
                    device: b["device"].as_str().unwrap_or_default().to_owned(),
                    qdev: b["qdev"]
                        .as_str()
                        .filter(|q| !q.is_empty())
                        .map(str::to_owned),
                    node_name: b["inserted"]["node-name"].as_str().map(str::to_owned),
                    iothread: None,
                })
                .collect()
        })
        .unwrap_or_default();
    QmpFacts {
        qemu_version: None,
        iothreads,
        block,
    }
}
