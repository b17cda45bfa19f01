//! `nic.offloads`: can the underlay NIC segment and checksum the overlay's
//! packets in hardware?
//!
//! The largest measured cost in the stack: the geneve overlay got no
//! hardware segmentation offload, so the host CPU cut every 64 KB guest
//! super-packet into 1518-byte frames in software — 0 TSO super-packets,
//! 1.0 wire packets per descriptor, 17.6 Gbit/s against 92.6 on the same
//! NIC (5.3x). The features that let a NIC segment UDP tunnels are
//! `tx-udp_tnl-segmentation` and `tx-udp_tnl-csum-segmentation`; this check
//! reads them (and TSO, GSO, GRO, scatter-gather, checksumming) by name, the
//! way `ethtool -k` does, and replaces reading `ethtool -k` by eye.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::facts::ethtool::{Feature, Reported, NOT_REPORTED};
use crate::finding::{Finding, Status};
use crate::host::HostRef;
use crate::kind::Kinds;
use crate::per_interface::{Interfaces, Judged, Problem};
use crate::targets::underlay_nics::{self, Selection};

pub struct NicOffloads;

crate::kinds! {
    /// What `nic.offloads` can say, per interface and for the check.
    pub enum NicOffloadsKind for "nic.offloads" {
        /// Tunnel segmentation, TSO, GSO, GRO, scatter-gather and checksumming are on.
        Ok = pass("ok"),
        /// tx-udp_tnl-segmentation (or its csum variant) is off but can be turned on: geneve is segmented in software by the host CPU (measured 17.6 against 92.6 Gbit/s, 5.3x).
        TunnelOffloadOff = fail("tunnel-offload-off"),
        /// The driver cannot segment UDP tunnels (the feature is off `[fixed]`, or unknown to this kernel): geneve stays segmented in software on this NIC; only another NIC or jumbo frames help.
        TunnelOffloadFixed = fail("tunnel-offload-fixed"),
        /// The tunnel features show on, but the driver segments UDP tunnels through tx-gso-partial, which is off (ixgbe): geneve is segmented in software.
        GsoPartialOff = fail("gso-partial-off"),
        /// GRO, TSO, GSO, scatter-gather or checksumming is off but can be turned on.
        OffloadOff = warn("offload-off"),
        /// GRO, TSO, GSO, scatter-gather or checksumming is off `[fixed]` by the driver (ena: TSO, receive checksumming): no `ethtool -K` helps.
        OffloadFixed = warn("offload-fixed"),
    }
}

static DECLARED: Declared = Declared::of::<NicOffloadsKind, NicOffloadsEvidence>();

/// The offload features per interface, and how the interfaces were chosen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicOffloadsEvidence {
    pub interfaces: Vec<OffloadEvidence>,
    /// "--interface", "ports of br-vpc", "routes to peers", "default route".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_source: Option<String>,
}

/// One interface's features as `ethtool -k` shows them (`on`, `off
/// [fixed]`, …), and those it lacks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffloadEvidence {
    pub name: String,
    pub driver: Option<String>,
    /// By name; empty when the driver reports none.
    pub features: BTreeMap<String, String>,
    pub missing: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Evidence for NicOffloadsEvidence {}

/// Geneve is segmented in hardware only with these.
pub const TUNNEL: [&str; 2] = ["tx-udp_tnl-segmentation", "tx-udp_tnl-csum-segmentation"];
/// Receive coalescing: off means one stack traversal per wire packet.
pub const GRO: &str = "rx-gro";
/// Transmit checksumming: either one serves IPv4.
pub const TX_CSUM: [&str; 2] = ["tx-checksum-ip-generic", "tx-checksum-ipv4"];
/// The other basics, each with the `ethtool -K` word that turns it on.
pub const BASICS: [(&str, &str); 4] = [
    ("tx-scatter-gather", "sg"),
    ("rx-checksum", "rx"),
    ("tx-tcp-segmentation", "tso"),
    ("tx-generic-segmentation", "gso"),
];
/// Reported for the operator, not judged.
pub const INFORMATIONAL: [&str; 3] = ["tx-tcp6-segmentation", "tx-checksum-ipv6", "rx-gro-hw"];
/// The GSO-partial switch: drivers that segment a tunnel through it show
/// the tunnel feature on while the stack still segments in software when
/// it is off.
pub const GSO_PARTIAL: &str = "tx-gso-partial";
/// Drivers that offload UDP tunnel segmentation only as partial GSO (the
/// tunnel features are in the driver's gso_partial_features): ixgbe puts
/// GRE, IPIP and both UDP tunnel kinds there (IXGBE_GSO_PARTIAL_FEATURES),
/// and its `ethtool -k` shows tx-gso-partial beside them
/// (testdata/hw/ixgbe).
pub const TUNNEL_VIA_GSO_PARTIAL: [(&str, &[&str]); 1] = [("ixgbe", &TUNNEL)];

/// The features of one interface, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterfaceFeatures {
    pub name: String,
    pub driver: Option<String>,
    pub features: Reported<Vec<Feature>>,
}

impl Check for NicOffloads {
    fn id(&self) -> &'static str {
        "nic.offloads"
    }

    fn title(&self) -> &'static str {
        "Underlay NIC can segment geneve in hardware"
    }

    fn explain(&self) -> &'static str {
        "Reads the offload features of each underlay interface by name through the \
         SIOCETHTOOL ioctl (what `ethtool -k IF` prints): tx-udp_tnl-segmentation and \
         tx-udp_tnl-csum-segmentation (segmentation of UDP tunnels such as geneve), TSO \
         (tx-tcp-segmentation), GSO, GRO (rx-gro), scatter-gather and checksumming. \
         Interfaces: as every NIC check (--interface IF, else the ports of br-vpc, else \
         br-lan, else br-wan, else the egress interfaces of the routes to the peers, else \
         the default route's interface, which a note then says), judged where the \
         stack hands packets over (a VLAN or macvlan itself, not the devices beneath).\n\
         \n\
         Verdicts: a tunnel segmentation feature off, or off [fixed], fails: geneve is then \
         segmented in software by the host CPU, which is the largest measured cost in the \
         stack (0 TSO super-packets, 1.0 wire packets per descriptor, 17.6 Gbit/s over the \
         overlay against 92.6 Gbit/s on the same NIC: 5.3x). GRO, TSO, GSO, scatter-gather \
         or checksumming off warns; where they are off [fixed] (ena: TSO and receive \
         checksumming) the fix says no `ethtool -K` can help. ixgbe offloads UDP tunnels \
         only as partial GSO: with tx-gso-partial off its tunnel features print on but \
         geneve is segmented in software, which fails. A driver that does not report \
         features is 'not reported by this driver', never a fail.\n\
         \n\
         Fix: `ethtool -K IF tx-udp_tnl-segmentation on` where the feature is not fixed; \
         where it is fixed off the driver or firmware cannot do it, and only a NIC that \
         can (or jumbo frames, which cut the descriptor count about sixfold) helps. \
         See also nic.tso, which measures whether TSO descriptors are actually used."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let sel = match underlay_nics::select(ctx) {
            Ok(s) => s,
            Err(f) => return f,
        };
        match gather(ctx.host(), &sel) {
            Ok(facts) => sel.annotate(judge_from(&facts, Some(&sel.source))),
            Err(f) => f,
        }
    }
}

pub fn gather(host: HostRef<'_>, sel: &Selection) -> Result<Vec<InterfaceFeatures>, Finding> {
    let read = underlay_nics::read_each(host, sel, |h, name| {
        Ok((underlay_nics::driver(h, name), h.ethtool_features(name)?))
    })?;
    Ok(read
        .into_iter()
        .map(|(name, (driver, features))| InterfaceFeatures {
            name,
            driver,
            features,
        })
        .collect())
}

/// What one interface lacks, by severity.
#[derive(Default)]
struct Lacks {
    /// Tunnel features off but toggleable.
    tunnel_fixable: Vec<String>,
    /// Tunnel features off [fixed] or absent from the kernel's set.
    tunnel_fixed: Vec<String>,
    /// (feature, `ethtool -K` word) off but toggleable, warn-level.
    basics_fixable: Vec<(String, &'static str)>,
    /// Warn-level features off [fixed].
    basics_fixed: Vec<String>,
    /// Tunnel features on, but carried by tx-gso-partial, which is off.
    tunnel_partial_off: Vec<String>,
    /// And tx-gso-partial can be turned on.
    partial_fixable: bool,
}

fn lacks(features: &[Feature], driver: Option<&str>) -> Lacks {
    let get = |n: &str| features.iter().find(|f| f.name == n);
    let mut l = Lacks::default();
    let via_partial: &[&str] = TUNNEL_VIA_GSO_PARTIAL
        .iter()
        .find(|(d, _)| Some(*d) == driver)
        .map_or(&[], |(_, f)| f);
    let partial = get(GSO_PARTIAL);
    for name in TUNNEL {
        match get(name) {
            Some(f) if f.active && via_partial.contains(&name) => {
                if let Some(p) = partial.filter(|p| !p.active) {
                    l.tunnel_partial_off.push(name.to_owned());
                    l.partial_fixable = !p.fixed();
                }
            }
            Some(f) if f.active => {}
            Some(f) if !f.fixed() => l.tunnel_fixable.push(name.to_owned()),
            _ => l.tunnel_fixed.push(name.to_owned()),
        }
    }
    let mut warn_level: Vec<(&str, &'static str)> = vec![(GRO, "gro")];
    warn_level.extend(BASICS);
    for (name, word) in warn_level {
        match get(name) {
            Some(f) if f.active => {}
            Some(f) if !f.fixed() => l.basics_fixable.push((name.to_owned(), word)),
            _ => l.basics_fixed.push(name.to_owned()),
        }
    }
    let csum: Vec<&Feature> = TX_CSUM.iter().filter_map(|n| get(n)).collect();
    if !csum.iter().any(|f| f.active) {
        match csum.iter().find(|f| !f.fixed()) {
            Some(f) => l.basics_fixable.push((f.name.clone(), "tx")),
            None => l
                .basics_fixed
                .extend(TX_CSUM.iter().map(|n| (*n).to_owned())),
        }
    }
    l
}

pub fn judge(ifaces: &[InterfaceFeatures]) -> Finding {
    judge_from(ifaces, None)
}

/// One interface's verdicts: every kind of trouble it has, or ok.
fn judge_one(i: &InterfaceFeatures, features: &[Feature]) -> Vec<Judged<NicOffloadsKind>> {
    let driver = i.driver.as_deref().unwrap_or("unknown driver");
    let name = &i.name;
    let l = lacks(features, i.driver.as_deref());
    let state = |n: &str| {
        features
            .iter()
            .find(|f| f.name == n)
            .map_or_else(|| "not known to this kernel".to_owned(), Feature::state)
    };
    let states = |names: &[String]| -> String {
        names
            .iter()
            .map(|n| format!("{n} {}", state(n)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = Vec::new();
    if !l.tunnel_fixable.is_empty() {
        let args: Vec<String> = l.tunnel_fixable.iter().map(|n| format!("{n} on")).collect();
        out.push(
            Judged::new(NicOffloadsKind::TunnelOffloadOff, states(&l.tunnel_fixable))
                .fix(format!("ethtool -K {name} {}", args.join(" "))),
        );
    }
    if !l.tunnel_fixed.is_empty() {
        out.push(
            Judged::new(NicOffloadsKind::TunnelOffloadFixed, states(&l.tunnel_fixed)).fix(format!(
                "{name} ({driver}): the driver cannot turn on {} (fixed): geneve stays segmented in software on this NIC; use a NIC and driver that offer UDP tunnel segmentation, or raise the underlay MTU (jumbo frames cut the descriptor count about sixfold; check first with `spx doctor --for enable-jumbo`)",
                l.tunnel_fixed.join(" and ")
            )),
        );
    }
    if !l.tunnel_partial_off.is_empty() {
        let text: Vec<String> = l
            .tunnel_partial_off
            .iter()
            .map(|n| {
                format!(
                    "{n} on, but {GSO_PARTIAL} {} ({driver} segments UDP tunnels through GSO partial)",
                    state(GSO_PARTIAL)
                )
            })
            .collect();
        out.push(
            Judged::new(NicOffloadsKind::GsoPartialOff, text.join(", ")).fix(
                if l.partial_fixable {
                    format!("ethtool -K {name} {GSO_PARTIAL} on")
                } else {
                    format!(
                        "{name} ({driver}): {GSO_PARTIAL} is fixed off, so the tunnel features cannot take effect"
                    )
                },
            ),
        );
    }
    if !l.basics_fixable.is_empty() {
        let names: Vec<String> = l.basics_fixable.iter().map(|(n, _)| n.clone()).collect();
        let args: Vec<String> = l
            .basics_fixable
            .iter()
            .map(|(_, w)| format!("{w} on"))
            .collect();
        out.push(
            Judged::new(NicOffloadsKind::OffloadOff, states(&names))
                .fix(format!("ethtool -K {name} {}", args.join(" "))),
        );
    }
    if !l.basics_fixed.is_empty() {
        let mut j = Judged::new(NicOffloadsKind::OffloadFixed, states(&l.basics_fixed));
        let fixed_off: Vec<&str> = l
            .basics_fixed
            .iter()
            .filter(|n| features.iter().any(|f| f.name == **n))
            .map(String::as_str)
            .collect();
        if !fixed_off.is_empty() {
            j = j.fix(format!(
                "{name} ({driver}): {} cannot be turned on (fixed by the driver): the host CPU does that work for every packet on this NIC; only another NIC or fewer, larger packets (jumbo frames, `spx doctor --for enable-jumbo`) reduce it",
                fixed_off.join(", ")
            ));
        }
        out.push(j);
    }
    if out.is_empty() {
        out.push(Judged::new(NicOffloadsKind::Ok, "all on"));
    }
    out
}

/// `NAME (driver): what, what; NAME2 …` for the problems of `status`, one
/// entry per interface.
fn per_interface_text(
    problems: &[Problem<NicOffloadsKind>],
    status: Status,
    drivers: &BTreeMap<&str, &str>,
) -> String {
    let mut by_interface: Vec<(&str, Vec<&str>)> = Vec::new();
    for p in problems.iter().filter(|p| p.kind.doc().status == status) {
        match by_interface.iter_mut().find(|(n, _)| *n == p.interface) {
            Some((_, texts)) => texts.push(&p.text),
            None => by_interface.push((&p.interface, vec![&p.text])),
        }
    }
    by_interface
        .iter()
        .map(|(n, texts)| {
            format!(
                "{n} ({}): {}",
                drivers.get(n).copied().unwrap_or("unknown driver"),
                texts.join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The verdict, with `source` saying how the interfaces were chosen.
pub fn judge_from(ifaces: &[InterfaceFeatures], source: Option<&str>) -> Finding {
    let mut all = Interfaces::new("offload features");
    for i in ifaces {
        let features = match &i.features {
            Reported::Yes(f) => f,
            Reported::NotReported => {
                all.not_reported(
                    &i.name,
                    OffloadEvidence {
                        name: i.name.clone(),
                        driver: i.driver.clone(),
                        features: BTreeMap::new(),
                        missing: Vec::new(),
                        note: Some(NOT_REPORTED.to_owned()),
                    },
                );
                continue;
            }
        };
        let wanted = TUNNEL
            .iter()
            .chain(&[GRO])
            .chain(TX_CSUM.iter())
            .chain(BASICS.iter().map(|(n, _)| n))
            .chain(INFORMATIONAL.iter());
        let shown = wanted
            .filter_map(|name| features.iter().find(|f| f.name == *name))
            .map(|f| (f.name.clone(), f.state()))
            .collect();
        let l = lacks(features, i.driver.as_deref());
        let mut missing: Vec<String> = Vec::new();
        missing.extend(l.tunnel_fixable.iter().cloned());
        missing.extend(l.tunnel_fixed.iter().cloned());
        missing.extend(l.tunnel_partial_off.iter().cloned());
        missing.extend(l.basics_fixable.iter().map(|(n, _)| n.clone()));
        missing.extend(l.basics_fixed.iter().cloned());
        all.judged(
            &i.name,
            judge_one(i, features),
            OffloadEvidence {
                name: i.name.clone(),
                driver: i.driver.clone(),
                features: shown,
                missing,
                note: None,
            },
        );
    }
    let drivers: BTreeMap<&str, &str> = ifaces
        .iter()
        .map(|i| {
            (
                i.name.as_str(),
                i.driver.as_deref().unwrap_or("unknown driver"),
            )
        })
        .collect();
    let names: Vec<&str> = ifaces.iter().map(|i| i.name.as_str()).collect();
    let (finding, interfaces) = all.finding(
        |problems| {
            let warns = per_interface_text(problems, Status::Warn, &drivers);
            if problems.iter().any(|p| p.kind.doc().status == Status::Fail) {
                format!(
                    "no hardware segmentation for the geneve overlay on {}: the host CPU segments every guest packet in software (measured: 0 TSO super-packets, 17.6 vs 92.6 Gbit/s, 5.3x){}",
                    per_interface_text(problems, Status::Fail, &drivers),
                    if warns.is_empty() { String::new() } else { format!("; also off: {warns}") }
                )
            } else {
                format!("tunnel segmentation is on, but offloads are off on {warns}")
            }
        },
        |_| {
            format!(
                "tunnel segmentation, TSO, GSO, GRO, scatter-gather and checksumming are on ({})",
                names.join(", ")
            )
        },
    );
    // Only an `ethtool -K` sets something to keep: a feature the driver
    // holds off [fixed] leaves nothing to make persistent.
    let set_something = finding
        .remediation
        .iter()
        .any(|r| r.starts_with("ethtool -K"));
    let finding = if finding.status == Status::Fail && set_something {
        finding.fix("make the setting persistent in the interface's network configuration, then confirm with `spx doctor --check nic.offloads,nic.tso` under load")
    } else {
        finding
    };
    finding.evidence(&NicOffloadsEvidence {
        interfaces,
        interface_source: source.map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Status;
    use crate::hw_captures as hw;

    /// Every verdict these tests see is also checked against the schema.
    fn judge(ifaces: &[InterfaceFeatures]) -> Finding {
        crate::schema_check::valid("nic.offloads", super::judge(ifaces))
    }

    fn feat(name: &str, active: bool, fixed: bool) -> Feature {
        Feature {
            name: name.into(),
            available: !fixed,
            requested: active,
            active,
            never_changed: false,
        }
    }

    /// A capable NIC, as mlx5 on a ConnectX-5 reports the features judged
    /// here (all on, toggleable), with the IPv4 checksum bit fixed off as on
    /// drivers that use ip-generic.
    fn capable() -> Vec<Feature> {
        let mut f: Vec<Feature> = TUNNEL
            .iter()
            .chain(&[GRO, "tx-checksum-ip-generic", "tx-tcp6-segmentation"])
            .chain(BASICS.iter().map(|(n, _)| n))
            .map(|n| feat(n, true, false))
            .collect();
        f.push(feat("tx-checksum-ipv4", false, true));
        f
    }

    fn iface(name: &str, features: Vec<Feature>) -> InterfaceFeatures {
        InterfaceFeatures {
            name: name.into(),
            driver: Some("mlx5_core".into()),
            features: Reported::Yes(features),
        }
    }

    fn set(f: &mut [Feature], name: &str, active: bool, fixed: bool) {
        let x = f.iter_mut().find(|x| x.name == name).unwrap();
        x.active = active;
        x.requested = active;
        x.available = !fixed;
    }

    #[test]
    fn capable_nic_passes() {
        let f = judge(&[iface("enp65s0f0np0", capable())]);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        let ev = &f.evidence["interfaces"][0];
        assert_eq!(ev["features"]["tx-udp_tnl-segmentation"], "on");
        assert_eq!(ev["features"]["tx-checksum-ipv4"], "off [fixed]");
        assert_eq!(ev["missing"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn tunnel_segmentation_off_fails_with_the_exact_command() {
        let mut fs = capable();
        set(&mut fs, "tx-udp_tnl-segmentation", false, false);
        let f = judge(&[iface("enp65s0f0np0", fs)]);
        assert_eq!(f.status, Status::Fail);
        assert!(f.summary.contains("5.3x"), "{}", f.summary);
        assert!(
            f.summary.contains("tx-udp_tnl-segmentation off"),
            "{}",
            f.summary
        );
        assert_eq!(
            f.remediation[0],
            "ethtool -K enp65s0f0np0 tx-udp_tnl-segmentation on"
        );
        assert_eq!(
            f.evidence["interfaces"][0]["missing"][0],
            "tx-udp_tnl-segmentation"
        );
    }

    #[test]
    fn fixed_off_tunnel_segmentation_fails_without_a_useless_command() {
        let mut fs = capable();
        set(&mut fs, "tx-udp_tnl-segmentation", false, true);
        set(&mut fs, "tx-udp_tnl-csum-segmentation", false, true);
        let f = judge(&[iface("eth1", fs)]);
        assert_eq!(f.status, Status::Fail);
        assert!(f.summary.contains("off [fixed]"), "{}", f.summary);
        assert!(
            !f.remediation.iter().any(|r| r.starts_with("ethtool -K")),
            "{:?}",
            f.remediation
        );
        assert!(
            f.remediation[0].contains("cannot turn on"),
            "{:?}",
            f.remediation
        );
    }

    #[test]
    fn gro_off_warns() {
        let mut fs = capable();
        set(&mut fs, GRO, false, false);
        let f = judge(&[iface("eth1", fs)]);
        assert_eq!(f.status, Status::Warn);
        assert_eq!(f.remediation, ["ethtool -K eth1 gro on"]);
        // veth's default: rx-gro off, no tx-checksum-ipv4 (fixed), ip-generic on.
        let mut fs = capable();
        set(&mut fs, "tx-checksum-ip-generic", false, false);
        let f = judge(&[iface("eth1", fs)]);
        assert_eq!(f.status, Status::Warn);
        assert_eq!(f.remediation, ["ethtool -K eth1 tx on"]);
    }

    #[test]
    fn a_kernel_without_the_tunnel_names_fails_as_not_capable() {
        let fs: Vec<Feature> = capable()
            .into_iter()
            .filter(|f| !f.name.starts_with("tx-udp_tnl"))
            .collect();
        let f = judge(&[iface("eth0", fs)]);
        assert_eq!(f.status, Status::Fail);
        assert!(
            f.summary.contains("not known to this kernel"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn not_reported_is_a_skip_never_a_fail() {
        let i = InterfaceFeatures {
            name: "eth9".into(),
            driver: None,
            features: Reported::NotReported,
        };
        let f = judge(std::slice::from_ref(&i));
        assert_eq!(f.status, Status::Skip);
        assert!(f.summary.contains(NOT_REPORTED));
        // Alongside a reporting interface, it is listed with a note.
        let f = judge(&[i, iface("eth1", capable())]);
        assert_eq!(f.status, Status::Pass);
        assert_eq!(f.evidence["interfaces"][0]["note"], NOT_REPORTED);
    }

    fn captured(driver: &str, name: &str, file: &str) -> InterfaceFeatures {
        InterfaceFeatures {
            name: name.into(),
            driver: Some(driver.into()),
            features: Reported::Yes(hw::features(&hw::load(driver, file))),
        }
    }

    #[test]
    fn ixgbe_82599es_capture_passes_and_needs_gso_partial() {
        // ixgbe 5.1.0-k on an 82599ES: tunnel segmentation on through
        // tx-gso-partial, checksumming as ip-generic (ipv4 bit fixed off).
        let i = captured("ixgbe", "em1", "netdev-2020-macsec.ethtool-k.txt");
        let f = judge(std::slice::from_ref(&i));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        let ev = &f.evidence["interfaces"][0];
        assert_eq!(ev["features"]["tx-udp_tnl-segmentation"], "on");
        assert_eq!(ev["features"]["tx-checksum-ipv4"], "off [fixed]");
        assert_eq!(ev["features"]["tx-checksum-ip-generic"], "on");
        // The same NIC with `ethtool -K em1 tx-gso-partial off`: the tunnel
        // features still print "on", but ixgbe only offloads them as partial
        // GSO, so geneve is segmented in software. This used to pass.
        let mut off = i;
        if let Reported::Yes(fs) = &mut off.features {
            set(fs, GSO_PARTIAL, false, false);
        }
        let f = judge(&[off]);
        assert_eq!(f.status, Status::Fail, "{}", f.summary);
        assert!(
            f.summary.contains(
                "tx-udp_tnl-segmentation on, but tx-gso-partial off (ixgbe segments UDP tunnels through GSO partial)"
            ),
            "{}",
            f.summary
        );
        assert_eq!(f.remediation[0], "ethtool -K em1 tx-gso-partial on");
        // Other drivers do not route UDP tunnels through it.
        let mut mlx = captured("ixgbe", "em1", "netdev-2020-macsec.ethtool-k.txt");
        mlx.driver = Some("mlx5_core".into());
        if let Reported::Yes(fs) = &mut mlx.features {
            set(fs, GSO_PARTIAL, false, false);
        }
        assert_eq!(judge(&[mlx]).status, Status::Pass);
    }

    #[test]
    fn mlx5_excerpt_has_tunnel_segmentation_on() {
        // Published as `ethtool -k enp2s0f0np0 | grep udp`: the tunnel
        // features are on; the basics are absent from the excerpt only.
        let i = captured(
            "mlx5_core",
            "enp2s0f0np0",
            "stable-6.12-bond-encap.ethtool-k.txt",
        );
        let f = judge(&[i]);
        assert_ne!(f.status, Status::Fail, "{}", f.summary);
        let ev = &f.evidence["interfaces"][0];
        assert_eq!(ev["features"]["tx-udp_tnl-segmentation"], "on");
        assert_eq!(ev["features"]["tx-udp_tnl-csum-segmentation"], "on");
        let missing: Vec<&str> = ev["missing"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(
            !missing.iter().any(|m| m.starts_with("tx-udp_tnl")),
            "{missing:?}"
        );
    }

    #[test]
    fn ena_fixed_off_tso_and_rx_checksum_get_no_useless_command() {
        // ENA on 6.8.0-1044-aws: TSO and receive checksumming are fixed off.
        // The stored copy stops before the UDP tunnel lines, so here they
        // read as unknown; the verdict would be the same with them (ena
        // does not offer UDP tunnel segmentation).
        let i = captured("ena", "ens1", "amzn-drivers-pr360.ethtool-k.txt");
        let f = judge(&[i]);
        assert_eq!(f.status, Status::Fail, "{}", f.summary);
        let ev = &f.evidence["interfaces"][0];
        assert_eq!(ev["features"]["tx-tcp-segmentation"], "off [fixed]");
        assert_eq!(ev["features"]["rx-checksum"], "off [fixed]");
        assert_eq!(ev["features"]["tx-checksum-ipv4"], "on");
        assert!(
            f.summary.contains("tx-tcp-segmentation off [fixed]"),
            "{}",
            f.summary
        );
        assert!(
            !f.remediation
                .iter()
                .any(|r| r.starts_with("ethtool -K ens1")),
            "{:?}",
            f.remediation
        );
        let fixed = f
            .remediation
            .iter()
            .find(|r| r.contains("cannot be turned on (fixed by the driver)"))
            .unwrap_or_else(|| panic!("{:?}", f.remediation));
        assert!(
            fixed.starts_with("ens1 (ena): rx-checksum, tx-tcp-segmentation"),
            "{fixed}"
        );
        // Two kinds of trouble on one NIC, each with its own code, so that
        // an operator can allow what no command fixes and keep the rest.
        assert_eq!(
            f.kind.code("nic.offloads"),
            "nic.offloads/tunnel-offload-fixed"
        );
        let kinds: Vec<(&str, &str)> = f
            .findings
            .iter()
            .map(|s| (s.subject.as_str(), s.kind.name))
            .collect();
        assert_eq!(
            kinds,
            [("ens1", "tunnel-offload-fixed"), ("ens1", "offload-fixed")]
        );
    }
}
