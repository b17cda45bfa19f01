//! `qemu.tuning`: every running guest's QEMU command line and host taps
//! against the tuning Spinifex requires.
//!
//! A guest keeps the command line it was started with. After a daemon
//! update a host runs a mix of old and new guests, and only a per-instance
//! audit says which ones need a stop/start: VMs without an iothread, a
//! cache policy and multiqueue measured ~38x fewer IOPS; NICs without vhost
//! burn 60% of a core in QEMU's main loop; multiqueue must follow the IPsec
//! setting; host_mtu must equal the overlay MTU or large segments vanish.

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::expect::Expectations;
use crate::facts::qemu::process::Unreadable;
use crate::finding::{Finding, SkipReason, Subject};
use crate::kind::most_severe;
use crate::targets::peers::UnderlayFamily;

mod disk_audit;
mod facts;
mod machine;
mod nic_audit;
mod qmp_audit;

use self::disk_audit::{audit_boot_disk, audit_data_volumes};
pub use self::facts::{gather, HostFacts, InstanceFacts, QmpFailure, TapError};
use self::machine::machine;
use self::nic_audit::audit_nics;
use self::qmp_audit::audit_qmp;

pub struct QemuTuning;

crate::kinds! {
    /// What `qemu.tuning` can say, per instance and for the check. The
    /// problems are in the order the summary names them.
    pub enum QemuTuningKind for "qemu.tuning" {
        /// The guest was started with the tuning Spinifex requires (what could not be judged is listed in the evidence).
        Ok = pass("ok"),
        /// A VPC NIC runs without vhost=on (or /dev/vhost-net is missing): QEMU's main loop moves every packet, ~60% of a core measured.
        NoVhost = fail("no-vhost"),
        /// A VPC NIC's netdev is not a tap: vhost and host-side multiqueue need one.
        NotTap = fail("not-tap"),
        /// queues= does not follow the IPsec setting: 1 with IPsec on (multiqueue reorders ESP, -12%), min(vCPUs, 8) with it off (+54%).
        WrongQueues = fail("wrong-queues"),
        /// The host tap does not match QEMU's queues: the queues QEMU holds, the multi_queue flag, or another process attached.
        TapQueueMismatch = fail("tap-queue-mismatch"),
        /// A NIC or the boot disk is not virtio (virtio-net-pci, virtio-blk-pci).
        NotVirtio = fail("not-virtio"),
        /// A multiqueue NIC lacks mq=on: the guest uses only the first queue.
        NoMq = fail("no-mq"),
        /// A multiqueue NIC's MSI-X vectors are not 2×queues+2 (as set, or as its machine type defaults them).
        WrongVectors = fail("wrong-vectors"),
        /// rx_queue_size is not 1024: QEMU's default ring of 256 was a measured drop source under burst.
        SmallRxQueue = fail("small-rx-queue"),
        /// host_mtu is not the guest MTU the config implies: large segments vanish.
        WrongHostMtu = fail("wrong-host-mtu"),
        /// A disk (boot, data volume or hot-attached) has no iothread of its own: ~38x fewer IOPS measured.
        NoIothread = fail("no-iothread"),
        /// The boot disk's cache mode is not none (O_DIRECT, guest flushes forwarded).
        WrongCache = fail("wrong-cache"),
        /// The boot disk's num-queues is not the vCPU count.
        WrongNumQueues = fail("wrong-num-queues"),
        /// A QEMU command line could not be parsed: that guest cannot be judged.
        UnparsableCmdline = error("unparsable-cmdline"),
        /// A QMP monitor on the command line did not answer: hot-attached volumes could not be checked.
        QmpSilent = error("qmp-silent"),
    }
}

impl QemuTuningKind {
    /// The short name the summary gives a problem of this kind.
    pub fn tag(self) -> &'static str {
        match self {
            QemuTuningKind::NoVhost => "vhost",
            QemuTuningKind::NotTap => "tap",
            QemuTuningKind::WrongQueues => "queues",
            QemuTuningKind::TapQueueMismatch => "tap queues",
            QemuTuningKind::NotVirtio => "model",
            QemuTuningKind::NoMq => "mq",
            QemuTuningKind::WrongVectors => "vectors",
            QemuTuningKind::SmallRxQueue => "rx_queue_size",
            QemuTuningKind::WrongHostMtu => "host_mtu",
            QemuTuningKind::NoIothread => "iothread",
            QemuTuningKind::WrongCache => "cache",
            QemuTuningKind::WrongNumQueues => "num-queues",
            QemuTuningKind::Ok => "ok",
            QemuTuningKind::UnparsableCmdline => "command line",
            QemuTuningKind::QmpSilent => "QMP",
        }
    }
}

static DECLARED: Declared = Declared::of::<QemuTuningKind, QemuTuningEvidence>();

/// Every audited guest, and what the audit was measured against.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QemuTuningEvidence {
    pub instances: Vec<InstanceAudit>,
    /// /dev/vhost-net exists on this host.
    pub vhost_net: bool,
    /// The guest MTU the config implies; absent without a config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_guest_mtu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipsec_enabled: Option<bool>,
    /// The family host_mtu was judged for; absent without guests or config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub underlay_family: Option<UnderlayFamily>,
    /// QEMU processes whose command line could not be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<Unreadable>,
}

impl Evidence for QemuTuningEvidence {}

/// The receive ring the daemon asks for (QEMU's default is 256).
pub const RX_QUEUE_SIZE: u64 = 1024;
/// Machine types from 6.0 give virtio-net-pci `vectors` = 2×queues+2 when
/// it is left off (3 before); measured with QEMU 7.2 on pc-i440fx-5.2/6.0.
pub const AUTO_NET_VECTORS_SINCE: (u32, u32) = (6, 0);
/// Machine types from 5.2 give virtio-blk-pci `num-queues` = the vCPU count
/// when it is left off (1 before); measured with QEMU 7.2 on pc-i440fx-5.1/5.2.
pub const AUTO_BLK_QUEUES_SINCE: (u32, u32) = (5, 2);
/// Management taps are `mg` + instance id; VPC taps are `tap` + ENI id.
pub use crate::spinifex::MGMT_TAP_PREFIX;

/// The verdict on one instance, as the evidence lists it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct InstanceAudit {
    pub pid: i32,
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub vcpus: u32,
    /// The machine type whose defaults fill properties left off the
    /// command line: `pc-q35-5.2`, or an alias with the QEMU version
    /// (from QMP) it stands for, `q35 (QEMU 7.2)`.
    pub machine: String,
    pub problems: Vec<String>,
    pub ok: Vec<String>,
    /// What could not be judged, and why.
    pub not_judged: Vec<String>,
    /// Short names of the problems (`vhost`, `queues`, `iothread`, …) for
    /// the summary.
    #[serde(skip)]
    pub tags: Vec<&'static str>,
    /// The kind of each of [`InstanceAudit::problems`], in the same order.
    #[serde(skip)]
    pub kinds: Vec<QemuTuningKind>,
    #[serde(skip)]
    pub unparsable: bool,
    /// QMP monitors that were on the command line but did not answer: what
    /// they would have said (hot-attached volumes) is unknown, so the
    /// instance cannot pass.
    #[serde(skip)]
    pub qmp_silent: Vec<String>,
    /// QMP monitors this process may not open.
    #[serde(skip)]
    pub qmp_denied: Vec<String>,
    /// The version of [`InstanceAudit::machine`], when known.
    #[serde(skip)]
    pub machine_version: Option<(u32, u32)>,
}

impl InstanceAudit {
    fn problem(&mut self, kind: QemuTuningKind, text: String) {
        self.problems.push(text);
        self.kinds.push(kind);
        if !self.tags.contains(&kind.tag()) {
            self.tags.push(kind.tag());
        }
    }

    /// This instance's outcomes, one per kind, in the order first found.
    fn subjects(&self, expect_known: bool) -> Vec<Subject> {
        let label = self.label();
        let mut out = Vec::new();
        if self.unparsable {
            out.push(Subject::new(
                QemuTuningKind::UnparsableCmdline,
                &label,
                self.not_judged.join("; "),
            ));
            return out;
        }
        let mut seen = Vec::new();
        for kind in &self.kinds {
            if seen.contains(kind) {
                continue;
            }
            seen.push(*kind);
            let texts: Vec<&str> = self
                .kinds
                .iter()
                .zip(&self.problems)
                .filter(|(k, _)| *k == kind)
                .map(|(_, p)| p.as_str())
                .collect();
            out.push(Subject::new(*kind, &label, texts.join("; ")));
        }
        if !self.qmp_silent.is_empty() {
            out.push(Subject::new(
                QemuTuningKind::QmpSilent,
                &label,
                self.qmp_silent.join("; "),
            ));
        }
        if !self.qmp_denied.is_empty() {
            out.push(Subject::skipped(
                &label,
                SkipReason::NeedsPrivilege(format!(
                    "root to open the QMP monitors {}",
                    self.qmp_denied.join(", ")
                )),
            ));
        }
        if !expect_known {
            out.push(Subject::skipped(
                &label,
                SkipReason::NoConfig(
                    "queues (IPsec setting) and host_mtu (guest MTU) not judged".to_owned(),
                ),
            ));
        }
        if out.is_empty() {
            let text = match self.not_judged.len() {
                0 => "tuned".to_owned(),
                n => format!("tuned ({n} item(s) not judged, see evidence)"),
            };
            out.push(Subject::new(QemuTuningKind::Ok, &label, text));
        }
        out
    }

    /// `pid 4242 (i-0abc)`, naming the instance the way an operator finds it.
    pub fn label(&self) -> String {
        match (&self.name, &self.uuid) {
            (Some(n), _) => format!("pid {} ({n})", self.pid),
            (None, Some(u)) => format!("pid {} (uuid {u})", self.pid),
            (None, None) => format!("pid {}", self.pid),
        }
    }
}

impl Check for QemuTuning {
    fn id(&self) -> &'static str {
        "qemu.tuning"
    }

    fn title(&self) -> &'static str {
        "Every running guest was started with vhost, multiqueue, host_mtu, iothreads and cache=none"
    }

    fn explain(&self) -> &'static str {
        "Reads every qemu-system-* process in /proc, parses its command line the way QEMU \
         does (key=value options with ,, escaping, implied first keys, -blockdev in JSON or \
         dotted form, -smp in any form, -set and -global), and audits each guest:\n\
         - VPC NIC (any tap not named mg*): -netdev tap with vhost=on; queues= equal to \
         min(vCPUs, 8) with IPsec off and 1 with IPsec on; virtio-net-pci with mq=on and \
         vectors=2N+2 when N>1 queues, rx_queue_size=1024, host_mtu= the expected guest MTU \
         (20 less when this node's ovn-encap-ip is IPv6). \
         The management NIC (mg* tap, 1 queue, no host_mtu) is not audited.\n\
         - Boot disk (drive id os, else the lowest bootindex): an -object iothread, cache=none \
         on the drive, virtio-blk-pci with iothread= and num-queues= the vCPU count.\n\
         - Data volumes (every other virtio-blk-pci, e.g. -blockdev nbd nodes): an iothread each.\n\
         - Host side: each VPC tap's queue count in /sys/class/net/TAP/queues/ equals what \
         QEMU was given, the tap has the multi_queue flag when queues>1, and /dev/vhost-net exists.\n\
         \n\
         Why: guests without an iothread, a cache policy and multiqueue measured ~38x fewer \
         IOPS and ~40x the latency of the same disk under Proxmox; a NIC without vhost burns \
         60% of a core in QEMU's main loop; multiqueue is worth +54% without IPsec but reorders \
         ESP and costs 12% with it; a host_mtu other than the overlay MTU makes large segments \
         vanish. A guest keeps the command line it was started with, so after a daemon update \
         a host runs a mix: this check names which instances still run the old one.\n\
         \n\
         Properties left off the command line take QEMU's defaults, which depend on the \
         machine type: vectors is 2×queues+2 from machine types 6.0 on (3 before), \
         num-queues is the vCPU count from 5.2 on (1 before), rx_queue_size is 256 and mq \
         is off everywhere. An alias (q35, pc) is the binary's newest type, whose version \
         the QMP greeting tells; without it those two items are reported as not judged.\n\
         \n\
         Queues and host_mtu depend on the config (IPsec setting, underlay MTU). Without a \
         readable config the check still audits everything else: any problem found is a \
         fail; otherwise it skips and lists what it could not judge.\n\
         \n\
         Volumes hot-attached over QMP are not on the command line. When a QMP unix socket \
         is on the command line (-qmp unix:PATH,server=on or -mon over -chardev socket) and \
         answers, the check asks it (query-iothreads, query-block, and qom-get of each device's \
         iothread) and audits hot-attached volumes too; a monitor held by another client \
         times out within the probe timeout and is reported as not judged. Sockets passed as \
         file descriptors cannot be reached.\n\
         \n\
         Host taps are read from this network namespace's sysfs; run inside the namespace \
         that holds the taps. Reading other users' command lines needs root.\n\
         \n\
         Fix: update the Spinifex daemon, then stop and start each listed instance (a reboot \
         from inside the guest keeps the old QEMU process). No instance needs the whole host \
         restarted."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let mut facts = match gather(ctx) {
            Ok(f) => f,
            Err(e) => return e.into(),
        };
        match ctx.expectations() {
            Ok(expect) if !facts.instances.is_empty() => {
                // host_mtu is the guest MTU, which an IPv6 underlay narrows.
                let family = crate::targets::peers::underlay_family(ctx);
                let expect = expect.for_underlay(family.family);
                facts.underlay_family = Some(family);
                judge(&facts, Some(&expect), None)
            }
            Ok(expect) => judge(&facts, Some(expect), None),
            Err(no_config) => judge(&facts, None, Some(no_config)),
        }
    }
}

/// The verdict on every instance. `expect` is None without a config; then
/// `no_config` is the skip finding that says why.
pub fn judge(
    facts: &HostFacts,
    expect: Option<&Expectations>,
    no_config: Option<Finding>,
) -> Finding {
    let evidence = |instances: Vec<InstanceAudit>| QemuTuningEvidence {
        instances,
        vhost_net: facts.vhost_net,
        expected_guest_mtu: expect.map(|e| e.guest_mtu),
        ipsec_enabled: expect.map(|e| e.ipsec_enabled),
        underlay_family: facts.underlay_family.clone(),
        unreadable: facts.unreadable.clone(),
    };
    if facts.instances.is_empty() {
        let skip = if facts.unreadable.is_empty() {
            Finding::skip(SkipReason::NothingToMeasure(
                "no QEMU guests running".to_owned(),
            ))
        } else {
            let pids: Vec<String> = facts.unreadable.iter().map(|u| u.pid.to_string()).collect();
            Finding::skip(SkipReason::NeedsPrivilege(format!(
                "root to read the command lines of QEMU pids {}",
                pids.join(", ")
            )))
        };
        return skip.evidence(&evidence(Vec::new()));
    }
    let audits: Vec<InstanceAudit> = facts
        .instances
        .iter()
        .map(|i| audit_instance(i, facts.vhost_net, expect))
        .collect();
    let subjects: Vec<Subject> = audits
        .iter()
        .flat_map(|a| a.subjects(expect.is_some()))
        .collect();
    let bad: Vec<&InstanceAudit> = audits.iter().filter(|a| !a.problems.is_empty()).collect();
    let total = audits.len();
    let guests = if total == 1 { "guest" } else { "guests" };
    let worst = most_severe(bad.iter().flat_map(|a| a.kinds.iter().copied()));
    let finding = if let Some(kind) = worst {
        // Past NAMED, the summary counts the others (every one is in the
        // findings and the evidence): 300 guests would be 300 names.
        let mut named: Vec<String> = bad
            .iter()
            .take(NAMED)
            .map(|a| format!("{}: {}", a.label(), a.tags.join(", ")))
            .collect();
        if bad.len() > NAMED {
            named.push(format!("and {} more, in the findings", bad.len() - NAMED));
        }
        let mut summary = format!(
            "{} of {total} {guests} started without the required tuning ({}); each needs a stop/start after the daemon is updated",
            bad.len(),
            named.join("; ")
        );
        if expect.is_none() {
            summary.push_str("; queues and host_mtu not judged: no config");
        }
        Finding::new(kind, summary).fixes(remediation(&bad, facts.vhost_net))
    } else if audits.iter().any(|a| a.unparsable) {
        let pids: Vec<String> = audits
            .iter()
            .filter(|a| a.unparsable)
            .map(|a| a.pid.to_string())
            .collect();
        Finding::new(
            QemuTuningKind::UnparsableCmdline,
            format!(
                "could not parse the QEMU command line of pid {} (see evidence)",
                pids.join(", ")
            ),
        )
    } else if audits.iter().any(|a| !a.qmp_silent.is_empty()) {
        let silent: Vec<String> = audits
            .iter()
            .flat_map(|a| {
                a.qmp_silent
                    .iter()
                    .map(move |q| format!("{} QMP {q}", a.label()))
            })
            .collect();
        Finding::new(
            QemuTuningKind::QmpSilent,
            format!(
                "the command lines are tuned, but hot-attached volumes could not be checked: {}",
                silent.join("; ")
            ),
        )
    } else if audits.iter().any(|a| !a.qmp_denied.is_empty()) {
        let denied: Vec<String> = audits
            .iter()
            .flat_map(|a| a.qmp_denied.iter().cloned())
            .collect();
        Finding::skip(SkipReason::NeedsPrivilege(format!(
            "root to open the QMP monitors {} (hot-attached volumes); the command lines are tuned",
            denied.join(", ")
        )))
    } else if let (None, Some(skip)) = (expect, no_config) {
        Finding {
            summary: format!(
                "{}; the config-independent tuning of {total} {guests} is right, but queues (IPsec setting) and host_mtu (guest MTU) need it",
                skip.summary
            ),
            ..skip
        }
    } else {
        let not_judged: usize = audits.iter().map(|a| a.not_judged.len()).sum();
        let mut summary = format!(
            "{total} {guests} tuned: vhost, queues, host_mtu, rx_queue_size, iothreads, cache=none, num-queues"
        );
        if not_judged > 0 {
            summary.push_str(&format!(" ({not_judged} item(s) not judged, see evidence)"));
        }
        Finding::new(QemuTuningKind::Ok, summary)
    };
    finding.evidence(&evidence(audits)).subjects(subjects)
}

/// Guests the summary names before it counts the rest.
const NAMED: usize = 10;

fn remediation(bad: &[&InstanceAudit], vhost_net: bool) -> Vec<String> {
    let mut steps = Vec::new();
    if !vhost_net && bad.iter().any(|a| a.tags.contains(&"vhost")) {
        steps.push(
            "load vhost-net before restarting guests: `modprobe vhost_net && echo vhost_net > /etc/modules-load.d/vhost_net.conf`"
                .to_owned(),
        );
    }
    steps.push(
        "update the Spinifex daemon on this node to a release that builds the tuned QEMU command line (vhost=on, queues, host_mtu, rx_queue_size=1024, iothreads, cache=none, num-queues) and restart the daemon".to_owned(),
    );
    for a in bad {
        steps.push(format!(
            "stop, then start instance {} (a guest reboot keeps the old QEMU process; the host needs no restart)",
            a.label()
        ));
    }
    steps
}

/// Audit one instance's command line, taps and QMP answers.
pub fn audit_instance(
    facts: &InstanceFacts,
    vhost_net: bool,
    expect: Option<&Expectations>,
) -> InstanceAudit {
    let mut a = InstanceAudit {
        pid: facts.pid,
        ..InstanceAudit::default()
    };
    let cl = match &facts.cmdline {
        Ok(cl) => cl,
        Err(e) => {
            a.unparsable = true;
            a.not_judged.push(format!("command line: {e}"));
            return a;
        }
    };
    a.name = cl.name.clone();
    a.uuid = cl.uuid.clone();
    a.vcpus = cl.vcpus();
    let qemu_version = facts
        .qmp
        .iter()
        .find_map(|(_, r)| r.as_ref().ok().and_then(|f| f.qemu_version));
    (a.machine, a.machine_version) = machine(cl, qemu_version);
    for file in &cl.readconfig {
        a.not_judged.push(format!(
            "-readconfig {file}: options in that file are not read"
        ));
    }
    for (option, value) in cl.args.iter().filter(|(o, _)| o == "nic" || o == "net") {
        a.not_judged.push(format!(
            "-{option} {}: legacy NIC options are not audited (Spinifex uses -netdev and -device)",
            value.as_deref().unwrap_or_default()
        ));
    }
    audit_nics(cl, facts, vhost_net, expect, &mut a);
    let boot = audit_boot_disk(cl, &mut a);
    audit_data_volumes(cl, boot, &mut a);
    audit_qmp(cl, facts, &mut a);
    a
}

#[cfg(test)]
mod tests {
    use super::nic_audit::netdev_queues;
    use super::*;
    use crate::facts::qemu::host::{ProcessFds, TapFacts};
    use crate::facts::qemu::qmp::QmpBlock;
    use crate::facts::qemu::qmp::{self, QmpFacts};
    use crate::facts::qemu::QemuCommandLine;
    use crate::finding::Status;
    use crate::seeds::qemu::{hive_after, hive_before, Guest};
    use std::path::Path;

    /// Every verdict these tests see is also checked against the schema.
    fn judge(
        facts: &HostFacts,
        expect: Option<&Expectations>,
        no_config: Option<Finding>,
    ) -> Finding {
        crate::schema_check::valid("qemu.tuning", super::judge(facts, expect, no_config))
    }

    fn expect(toml: &str) -> Expectations {
        Expectations::from_config(&crate::config::parse(toml, Path::new("spinifex.toml")).unwrap())
    }

    /// One node, IPsec off, underlay 1500: guest MTU 1442, queues min(vCPUs, 8).
    fn ipsec_off() -> Expectations {
        expect("[network]\nipsec_enabled = false\n[nodes.spx1]\n")
    }

    /// Three nodes, IPsec on (the default), underlay 9000: guest MTU 8908, 1 queue.
    fn ipsec_on() -> Expectations {
        expect("[network]\nunderlay_mtu = 9000\n[nodes.a]\n[nodes.b]\n[nodes.c]\n")
    }

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    /// An instance whose process holds exactly the tap queues its command
    /// line asks for.
    fn instance(pid: i32, argv: &[String], taps: &[(&str, TapFacts)]) -> InstanceFacts {
        let cmdline = QemuCommandLine::parse(argv).map_err(|e| e.to_string());
        let mut fds = ProcessFds::default();
        if let Ok(cl) = &cmdline {
            for n in &cl.netdevs {
                if let Some(ifname) = n.get("ifname") {
                    fds.tun_queues
                        .insert(ifname.to_owned(), netdev_queues(n) as usize);
                }
            }
        }
        InstanceFacts {
            pid,
            cmdline,
            taps: taps
                .iter()
                .map(|(n, t)| ((*n).to_owned(), Ok(*t)))
                .collect(),
            fds: Ok(fds),
            qmp: Vec::new(),
        }
    }

    fn host(instances: Vec<InstanceFacts>) -> HostFacts {
        HostFacts {
            vhost_net: true,
            instances,
            unreadable: Vec::new(),
            underlay_family: None,
        }
    }

    /// `enabled` queues in sysfs.
    fn mq_tap(enabled: usize) -> TapFacts {
        // captured on Debian 12, kernel 6.18: a multi_queue tap with QEMU 7.2 attached.
        TapFacts {
            rx_queues: enabled,
            tx_queues: enabled,
            tun_flags: Some(0x7902),
        }
    }

    /// The seed's guest (`crate::seeds::qemu`) as this module's tests name it.
    const GUEST: Guest = Guest {
        id: "0abc",
        volume: "xxx",
        mac: "02:00:00:00:00:01",
    };

    /// nbd-performance's "Hive inner VM" before the fix.
    fn before() -> String {
        hive_before(&GUEST)
    }

    /// After the fix, with the management NIC beside the VPC one.
    fn after() -> String {
        hive_after(
            &GUEST,
            "-netdev tap,id=mg0,ifname=mgi-0abc,script=no,downscript=no,vhost=on \
             -device virtio-net-pci,netdev=mg0,mac=02:00:00:00:00:02",
        )
    }

    #[test]
    fn the_guest_before_the_fix_fails_on_every_item() {
        let facts = host(vec![instance(
            4242,
            &words(&before()),
            &[("tapeni-0abc", mq_tap(1))],
        )]);
        let f = judge(&facts, Some(&ipsec_off()), None);
        assert_eq!(f.status, Status::Fail);
        for tag in [
            "vhost",
            "queues",
            "mq",
            "rx_queue_size",
            "host_mtu",
            "iothread",
            "cache",
        ] {
            assert!(f.summary.contains(tag), "{tag} missing from {}", f.summary);
        }
        assert!(f.summary.contains("pid 4242"), "{}", f.summary);
        let problems = f.evidence["instances"][0]["problems"].as_array().unwrap();
        let all: Vec<&str> = problems.iter().map(|p| p.as_str().unwrap()).collect();
        assert!(
            all.iter().any(|p| p.contains("queues=1, expected 2")),
            "{all:#?}"
        );
        assert!(
            all.iter()
                .any(|p| p.contains("host_mtu=absent, expected host_mtu=1442")),
            "{all:#?}"
        );
        assert!(
            all.iter()
                .any(|p| p.contains("cache absent (writeback), expected cache=none")),
            "{all:#?}"
        );
        // `-M q35` without QMP: the defaults of vectors and num-queues
        // depend on a QEMU version nothing here tells.
        let not_judged = f.evidence["instances"][0]["not_judged"].to_string();
        assert!(
            not_judged.contains("vectors absent: machine types from 6.0"),
            "{not_judged}"
        );
        assert!(
            not_judged.contains("num-queues absent: machine types from 5.2"),
            "{not_judged}"
        );
        assert_eq!(f.evidence["instances"][0]["machine"], "q35");
        assert_eq!(f.evidence["instances"][0]["vcpus"], 2);
        assert!(f
            .remediation
            .iter()
            .any(|r| r.contains("stop, then start instance pid 4242")));
    }

    /// Vectors and num-queues left off: QEMU fills them in on new machine
    /// types (measured with QEMU 7.2: vectors 2×queues+2 from 6.0,
    /// num-queues = vCPUs from 5.2) and not on old ones.
    #[test]
    fn defaults_follow_the_machine_type() {
        let argv = |machine: &str| {
            words(
                &after()
                    .replace(",vectors=6", "")
                    .replace(",num-queues=2", "")
                    .replace("-M q35", machine),
            )
        };
        let audit = |machine: &str| {
            audit_instance(
                &instance(1, &argv(machine), &[("tapeni-0abc", mq_tap(2))]),
                true,
                Some(&ipsec_off()),
            )
        };
        let new = audit("-M pc-q35-6.0");
        assert!(new.problems.is_empty(), "{new:#?}");
        assert!(
            new.ok
                .iter()
                .any(|o| o.ends_with("vectors absent, machine pc-q35-6.0 computes 2×2+2 = 6")),
            "{new:#?}"
        );
        assert!(new.ok.iter().any(|o| o
            .ends_with("num-queues absent, machine pc-q35-6.0 defaults it to the vCPU count (2)")));
        let mid = audit("-machine pc-i440fx-5.2,accel=kvm");
        assert_eq!(mid.tags, ["vectors"], "{mid:#?}");
        assert!(mid.problems[0]
            .ends_with("vectors absent (3 on machine pc-i440fx-5.2), expected vectors=6 (2×2+2)"));
        let old = audit("-M pc-q35-5.1");
        assert_eq!(old.tags, ["vectors", "num-queues"], "{old:#?}");
        assert!(old.problems[1].ends_with(
            "num-queues absent (1 on machine pc-q35-5.1), expected num-queues=2 (vCPUs)"
        ));
        // An alias is the binary's newest type: QEMU's version, from QMP.
        let mut i = instance(1, &argv("-M q35"), &[("tapeni-0abc", mq_tap(2))]);
        i.qmp.push((
            "/run/q.sock".into(),
            Ok(QmpFacts {
                qemu_version: Some((7, 2)),
                ..QmpFacts::default()
            }),
        ));
        let alias = audit_instance(&i, true, Some(&ipsec_off()));
        assert!(alias.problems.is_empty(), "{alias:#?}");
        assert_eq!(alias.machine, "q35 (QEMU 7.2)");
        // Vendor machine types carry no version we can read.
        let vendor = audit("-M pc-q35-rhel9.2.0");
        assert_eq!(vendor.machine_version, None);
        assert_eq!(
            vendor
                .not_judged
                .iter()
                .filter(|n| n.contains("unknown without QMP"))
                .count(),
            2
        );
    }

    #[test]
    fn the_guest_after_the_fix_passes() {
        let facts = host(vec![instance(
            7,
            &words(&after()),
            &[("tapeni-0abc", mq_tap(2))],
        )]);
        let f = judge(&facts, Some(&ipsec_off()), None);
        assert_eq!(f.status, Status::Pass, "{f:#?}");
        let ok = &f.evidence["instances"][0]["ok"];
        assert!(ok.to_string().contains("management NIC"), "{ok}");
        assert_eq!(f.evidence["instances"][0]["name"], "i-0abc");
        assert_eq!(f.evidence["expected_guest_mtu"], 1442);
    }

    #[test]
    fn ipsec_on_wants_one_queue_and_the_ipsec_mtu() {
        let facts = host(vec![instance(
            7,
            &words(&after()),
            &[("tapeni-0abc", mq_tap(2))],
        )]);
        let f = judge(&facts, Some(&ipsec_on()), None);
        assert_eq!(f.status, Status::Fail);
        let p = f.evidence["instances"][0]["problems"].to_string();
        assert!(p.contains("queues=2, expected 1 (1 with IPsec on"), "{p}");
        assert!(p.contains("host_mtu=1442, expected host_mtu=8908"), "{p}");
        // One queue needs neither mq nor vectors.
        assert!(!p.contains("vectors"), "{p}");
    }

    #[test]
    fn host_mtu_follows_an_ipv6_underlay() {
        // after() has host_mtu=1442, right on IPv4; an IPv6 underlay costs 20.
        let facts = host(vec![instance(
            7,
            &words(&after()),
            &[("tapeni-0abc", mq_tap(2))],
        )]);
        let v6 = ipsec_off().for_underlay(crate::expect::Family::Ipv6);
        let f = judge(&facts, Some(&v6), None);
        assert_eq!(f.status, Status::Fail);
        let p = f.evidence["instances"][0]["problems"].to_string();
        assert!(
            p.contains("host_mtu=1442, expected host_mtu=1422 (the guest MTU for underlay 1500 over IPv6 without IPsec)"),
            "{p}"
        );
        assert_eq!(f.evidence["expected_guest_mtu"], 1422);
    }

    #[test]
    fn host_tap_queues_must_match_qemu() {
        let mut single = mq_tap(1);
        single.tun_flags = Some(0x5002);
        let mut i = instance(7, &words(&after()), &[("tapeni-0abc", single)]);
        i.fds
            .as_mut()
            .unwrap()
            .tun_queues
            .insert("tapeni-0abc".into(), 1);
        let f = judge(&host(vec![i]), Some(&ipsec_off()), None);
        assert_eq!(f.status, Status::Fail);
        let p = f.evidence["instances"][0]["problems"].to_string();
        assert!(
            p.contains("QEMU holds 1 queue(s) of tap tapeni-0abc (/proc/7/fdinfo), its command line says queues=2"),
            "{p}"
        );
        assert!(p.contains("lacks the multi_queue flag"), "{p}");
        // More queues enabled than QEMU has: someone else is attached.
        let i = instance(7, &words(&after()), &[("tapeni-0abc", mq_tap(3))]);
        let f = judge(&host(vec![i]), Some(&ipsec_off()), None);
        assert!(f.evidence["instances"][0]["problems"]
            .to_string()
            .contains("another process"));
    }

    #[test]
    fn a_paused_guest_with_one_enabled_queue_is_fine() {
        // -S: the guest driver has not enabled the second queue yet.
        let i = instance(7, &words(&after()), &[("tapeni-0abc", mq_tap(1))]);
        let f = judge(&host(vec![i]), Some(&ipsec_off()), None);
        assert_eq!(f.status, Status::Pass, "{f:#?}");
        assert!(f.evidence["instances"][0]["ok"]
            .to_string()
            .contains("1 of 2 queue(s) enabled by the guest driver, multi_queue"));
    }

    #[test]
    fn a_tap_in_another_namespace_is_not_judged_not_failed() {
        let mut i = instance(7, &words(&after()), &[]);
        i.taps.insert("tapeni-0abc".into(), Err(TapError::NotFound));
        let f = judge(&host(vec![i]), Some(&ipsec_off()), None);
        assert_eq!(f.status, Status::Pass);
        assert!(f.summary.contains("not judged"), "{}", f.summary);
    }

    #[test]
    fn without_config_the_independent_items_still_fail_or_the_check_skips() {
        let no_config = || Some(Finding::skip(SkipReason::NoConfig("none found".into())));
        let bad = judge(
            &host(vec![instance(1, &words(&before()), &[])]),
            None,
            no_config(),
        );
        assert_eq!(bad.status, Status::Fail);
        assert!(
            bad.summary.contains("vhost") && bad.summary.contains("no config"),
            "{}",
            bad.summary
        );
        assert!(!bad.summary.contains("queues,"), "{}", bad.summary);
        let good = judge(
            &host(vec![instance(
                1,
                &words(&after()),
                &[("tapeni-0abc", mq_tap(2))],
            )]),
            None,
            no_config(),
        );
        assert_eq!(good.status, Status::Skip, "{good:#?}");
        assert!(
            good.summary.starts_with("no config: none found"),
            "{}",
            good.summary
        );
        assert!(good.evidence["instances"][0]["not_judged"]
            .to_string()
            .contains("host_mtu=1442"));
    }

    #[test]
    fn data_volumes_need_an_iothread_each() {
        let mut argv = words(&after());
        argv.extend(
            [
                "-blockdev",
                r#"{"node-name":"nbd-vol-a","driver":"nbd","server":{"type":"unix","path":"/run/a.sock"},"export":""}"#,
                "-object",
                "iothread,id=ioth-vol-a",
                "-device",
                "virtio-blk-pci,id=vdisk-vol-a,drive=nbd-vol-a,iothread=ioth-vol-a",
                "-blockdev",
                "node-name=nbd-vol-b,driver=nbd,server.type=unix,server.path=/run/b.sock",
                "-device",
                "virtio-blk-pci,id=vdisk-vol-b,drive=nbd-vol-b",
                // Cloud-init is excluded from tuning (nbd-performance.md).
                "-drive",
                "file=/run/ci.iso,if=virtio,media=cdrom",
            ]
            .map(str::to_owned),
        );
        let f = judge(
            &host(vec![instance(9, &argv, &[("tapeni-0abc", mq_tap(2))])]),
            Some(&ipsec_off()),
            None,
        );
        assert_eq!(f.status, Status::Fail);
        let problems = f.evidence["instances"][0]["problems"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(problems[0]
            .as_str()
            .unwrap()
            .starts_with("data volume vdisk-vol-b (nbd-vol-b): no iothread"));
        assert!(f.evidence["instances"][0]["ok"]
            .to_string()
            .contains("data volume vdisk-vol-a (nbd-vol-a): iothread=ioth-vol-a"));
    }

    #[test]
    fn blockdev_boot_disk_cache_follows_the_node_chain() {
        let argv = words(
            "qemu-system-x86_64 -smp cpus=1 -object iothread,id=ioth-os \
             -blockdev driver=nbd,node-name=proto,server.type=unix,server.path=/s,cache.direct=on \
             -blockdev driver=raw,node-name=fmt,file=proto \
             -device virtio-blk-pci,drive=fmt,iothread=ioth-os,num-queues=1,bootindex=1",
        );
        let a = audit_instance(&instance(3, &argv, &[]), true, Some(&ipsec_off()));
        assert!(a.problems.is_empty(), "{a:#?}");
        assert!(
            a.ok.iter()
                .any(|o| o == "boot disk fmt: cache.direct=on, cache.no-flush=off"),
            "{a:#?}"
        );
        let unsafe_ = words(
            "qemu-system-x86_64 -drive driver=null-co,id=os,if=none,cache=unsafe -device virtio-blk-pci,drive=os",
        );
        let a = audit_instance(&instance(3, &unsafe_, &[]), true, Some(&ipsec_off()));
        assert!(
            a.problems
                .iter()
                .any(|p| p.starts_with("boot disk os: cache=unsafe, expected cache=none")),
            "{a:#?}"
        );
    }

    #[test]
    fn hot_attached_volumes_over_qmp() {
        let mut i = instance(5, &words(&after()), &[("tapeni-0abc", mq_tap(2))]);
        i.cmdline
            .as_mut()
            .unwrap()
            .qmp_args
            .push("unix:/run/q.sock,server=on,wait=off".into());
        let block = |id: &str, ioth: Option<&str>| QmpBlock {
            device: String::new(),
            qdev: Some(format!("/machine/peripheral/{id}/virtio-backend")),
            node_name: Some(format!("nbd-{id}")),
            iothread: ioth.map(str::to_owned),
        };
        i.qmp.push((
            "/run/q.sock".into(),
            Ok(QmpFacts {
                qemu_version: Some((7, 2)),
                iothreads: vec!["ioth-os".into(), "ioth-vol-1".into()],
                block: vec![
                    block("vdisk-vol-1", Some("ioth-vol-1")),
                    block("vdisk-vol-2", None),
                ],
            }),
        ));
        let f = judge(&host(vec![i]), Some(&ipsec_off()), None);
        assert_eq!(f.status, Status::Fail);
        let inst = &f.evidence["instances"][0];
        assert_eq!(
            inst["problems"][0],
            "hot-attached volume vdisk-vol-2 (nbd-vdisk-vol-2): no iothread (QMP qom-get), expected its own iothread"
        );
        assert!(inst["ok"]
            .to_string()
            .contains("hot-attached volume vdisk-vol-1 (nbd-vdisk-vol-1): iothread=ioth-vol-1"));
    }

    #[test]
    fn a_silent_qmp_monitor_is_not_judged() {
        let mut i = instance(5, &words(&after()), &[("tapeni-0abc", mq_tap(2))]);
        i.cmdline
            .as_mut()
            .unwrap()
            .qmp_args
            .push("unix:/run/q.sock,server=on,wait=off".into());
        i.qmp.push((
            "/run/q.sock".into(),
            Err("no answer within 1s (greeting)".into()),
        ));
        let a = audit_instance(&i, true, Some(&ipsec_off()));
        assert!(a.problems.is_empty());
        assert!(
            a.not_judged
                .iter()
                .any(|n| n.contains("QMP /run/q.sock: no answer")),
            "{a:#?}"
        );
        // Never a pass on what could not be asked: the run says error.
        let f = judge(&host(vec![i]), Some(&ipsec_off()), None);
        assert_eq!(f.status, Status::Error, "{}", f.summary);
        assert!(
            f.summary
                .contains("/run/q.sock: no answer within 1s (greeting)"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn a_qmp_monitor_we_may_not_open_skips_naming_the_privilege() {
        let mut i = instance(5, &words(&after()), &[("tapeni-0abc", mq_tap(2))]);
        i.cmdline
            .as_mut()
            .unwrap()
            .qmp_args
            .push("unix:/run/q.sock,server=on,wait=off".into());
        i.qmp.push((
            "/run/q.sock".into(),
            Err(qmp::QmpError::PermissionDenied {
                path: "/run/q.sock".into(),
            }
            .into()),
        ));
        let f = judge(&host(vec![i]), Some(&ipsec_off()), None);
        assert_eq!(f.status, Status::Skip, "{}", f.summary);
        assert!(
            f.summary
                .starts_with("needs root to open the QMP monitors /run/q.sock"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn missing_vhost_net_is_named_with_the_vhost_problem() {
        let mut facts = host(vec![instance(4242, &words(&before()), &[])]);
        facts.vhost_net = false;
        let f = judge(&facts, Some(&ipsec_off()), None);
        assert!(f.evidence["instances"][0]["problems"][0]
            .as_str()
            .unwrap()
            .ends_with("/dev/vhost-net is missing on this host"));
        assert!(
            f.remediation[0].starts_with("load vhost-net"),
            "{:?}",
            f.remediation
        );
        assert_eq!(f.evidence["vhost_net"], false);
    }

    #[test]
    fn nothing_running_skips_and_unreadable_needs_root() {
        let none = judge(&host(vec![]), Some(&ipsec_off()), None);
        assert_eq!(none.status, Status::Skip);
        assert_eq!(none.summary, "no QEMU guests running");
        let mut facts = host(vec![]);
        facts.unreadable.push(Unreadable {
            pid: 77,
            reason: "permission denied".into(),
        });
        let f = judge(&facts, Some(&ipsec_off()), None);
        assert_eq!(f.status, Status::Skip);
        assert!(
            f.summary.contains("needs root") && f.summary.contains("77"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn an_unparsable_command_line_is_an_error() {
        let argv = words("qemu-system-x86_64 -blockdev {\"driver\":");
        let f = judge(
            &host(vec![instance(8, &argv, &[])]),
            Some(&ipsec_off()),
            None,
        );
        assert_eq!(f.status, Status::Error, "{f:#?}");
        assert!(f.summary.contains("pid 8"));
    }

    #[test]
    fn non_tap_and_non_virtio_nics_are_problems() {
        let argv = words(
            "qemu-system-x86_64 -netdev user,id=u0 -device e1000,netdev=u0 \
             -drive driver=null-co,id=os,if=none,cache=none -device virtio-blk-pci,drive=os,num-queues=1 \
             -object iothread,id=t -set device.x.y=z -nic user,model=e1000",
        );
        let a = audit_instance(&instance(1, &argv, &[]), true, Some(&ipsec_off()));
        assert!(
            a.tags.contains(&"tap") && a.tags.contains(&"model") && a.tags.contains(&"iothread"),
            "{a:#?}"
        );
        assert!(
            a.not_judged
                .iter()
                .any(|n| n.starts_with("-nic user,model=e1000: legacy NIC options")),
            "{a:#?}"
        );
    }
}
