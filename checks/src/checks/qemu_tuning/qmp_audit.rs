//! The QMP audit: what the running guest says over its monitor, against
//! its command line.

use super::facts::InstanceFacts;
use super::{InstanceAudit, QemuTuningKind};
use crate::facts::qemu::QemuCommandLine;

pub(super) fn audit_qmp(cl: &QemuCommandLine, facts: &InstanceFacts, a: &mut InstanceAudit) {
    let sockets = cl.qmp_sockets();
    if sockets.is_empty() {
        a.not_judged
            .push("hot-attached volumes: no QMP unix socket on the command line".to_owned());
        return;
    }
    for s in sockets.iter().filter(|s| !s.server) {
        a.not_judged.push(format!(
            "hot-attached volumes: QMP socket {} has QEMU as the client; nothing can connect",
            s.path.display()
        ));
    }
    let on_cmdline: Vec<&str> = cl.devices.iter().filter_map(|d| d.id()).collect();
    for (path, answer) in &facts.qmp {
        let facts = match answer {
            Ok(f) => f,
            Err(e) => {
                a.not_judged
                    .push(format!("hot-attached volumes: QMP {}: {e}", path.display()));
                if e.denied {
                    a.qmp_denied.push(path.display().to_string());
                } else {
                    a.qmp_silent.push(format!("{}: {e}", path.display()));
                }
                continue;
            }
        };
        a.ok.push(format!(
            "QMP {}: iothreads [{}]",
            path.display(),
            facts.iothreads.join(", ")
        ));
        for b in &facts.block {
            let Some(id) = b.device_id() else { continue };
            if on_cmdline.contains(&id) {
                continue;
            }
            let node = b.node_name.as_deref().unwrap_or("?");
            match &b.iothread {
                Some(t) => a.ok.push(format!("hot-attached volume {id} ({node}): iothread={t}")),
                None => a.problem(
                    QemuTuningKind::NoIothread,
                    format!("hot-attached volume {id} ({node}): no iothread (QMP qom-get), expected its own iothread"),
                ),
            }
        }
    }
}
