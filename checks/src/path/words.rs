//! How a path's verdict is said: each hop's limit, fate and who tells the
//! sender, each direction's line, the summary, and the fix. The commands
//! are the project's own wordings: `ip link set dev … mtu N`
//! ([`spinifex::set_mtus`]), `[network]` keys ([`spinifex::set_network_key`]),
//! `ovn-nbctl --db=… set DHCP_Options …` (mtu.overlay's
//! `nbctl` and `set_dhcp_mtu`), and the guests' stop/start
//! (`RESTART_GUESTS`).

use crate::checks::mtu_overlay::words::{nbctl, set_dhcp_mtu, set_ra_mtu, RESTART_GUESTS};
use crate::spinifex;

use super::acl::{AclRef, IcmpBack};
use super::judge::{
    offered, usable_underlay, Direction, End, Fate, Hop, HopKind, Judgement, Learns, Limit,
    LimitSource, NoLimit, Outcome, PathFacts, Precision, Silence,
};
use super::resolve::OfferedBy;
use super::PathKind;

/// A limit, as the table's column says it.
pub fn limit(l: &Limit) -> String {
    match l {
        Limit::Mtu { bytes, source } => format!("{bytes} ({})", source_text(source, false)),
        Limit::AtLeast { bytes, source } => format!("≥ {bytes} ({})", source_text(source, true)),
        Limit::None { why } => format!("— ({})", no_limit(*why)),
        Limit::Unread { why } => format!("unread: {why}"),
    }
}

/// Why a hop was not read (or its limit, when it was).
fn unread_why(l: &Limit) -> String {
    match l {
        Limit::Unread { why } => why.clone(),
        other => limit(other),
    }
}

fn source_text(s: &LimitSource, at_least: bool) -> String {
    match s {
        LimitSource::Dhcp { .. } => "DHCP_Options options:mtu".into(),
        LimitSource::RouterAdvertisement { port } => format!("ipv6_ra_configs:mtu of {port}"),
        LimitSource::Default => "no DHCP or RA MTU: host_mtu, else 1500".into(),
        LimitSource::HostMtu => "QEMU host_mtu".into(),
        LimitSource::Device { name } if at_least => format!("{name}; the probe crossed it"),
        LimitSource::Device { name } => format!("{name} MTU"),
        LimitSource::GatewayMtu { port } => format!("gateway_mtu on {port}"),
        LimitSource::Probe if at_least => "the DF probe of this size passed".into(),
        LimitSource::Probe => "measured: the largest DF probe that passed".into(),
    }
}

fn no_limit(why: NoLimit) -> &'static str {
    match why {
        NoLimit::TapIngress => {
            "OVS takes what the guest sends; a tap limits only what goes out to its guest"
        }
        NoLimit::OutputPortsOnly => "a bridge's own MTU never limits what the datapath forwards",
        NoLimit::NoGatewayMtu => {
            "no gateway_mtu: OVN routes any size and answers no \"fragmentation needed\""
        }
        NoLimit::Encapsulation => "adds bytes; the next hop judges them",
        NoLimit::NoSa => "no ESP SA between the endpoints: geneve goes in clear",
        NoLimit::ReceiverNic => "the guest's own MTU limits what it sends, not judged here",
    }
}

pub fn fate(f: Fate) -> &'static str {
    match f {
        Fate::Carried => "carried",
        Fate::Dropped => "dropped",
        Fate::Fragmented => "fragmented",
        Fate::NotReached => "not reached",
        Fate::Unread => "unread",
    }
}

fn acl_text(a: &AclRef) -> String {
    format!(
        "{} {} {} `{}`{}",
        a.direction,
        a.priority,
        a.action,
        a.matches,
        a.name
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default()
    )
}

/// The security group's answer to the ICMP error.
pub fn icmp_back(i: &IcmpBack) -> String {
    match i {
        IcmpBack::NoAcls => "let in: no ACL applies to the guest's port".into(),
        IcmpBack::Related { stateful } => format!(
            "let in as related: the guest's traffic leaves through stateful ACLs ({}), so conntrack passes its ICMP errors",
            stateful.iter().take(2).map(acl_text).collect::<Vec<_>>().join("; ")
        ),
        IcmpBack::Allowed { by } => format!("let in by ACL {}", acl_text(by)),
        IcmpBack::NoMatch => "let in: no ingress ACL matches it".into(),
        IcmpBack::Blocked { by, stateless } => format!(
            "dropped by ACL {}{}",
            acl_text(by),
            if stateless.is_empty() {
                String::new()
            } else {
                format!(
                    " (the guest's egress is stateless: {}, so the error is not related to anything)",
                    stateless.iter().take(2).map(acl_text).collect::<Vec<_>>().join("; ")
                )
            }
        ),
        IcmpBack::Unknown { acl } => format!(
            "not known: ACL {} is more than the doctor evaluates",
            acl_text(acl)
        ),
    }
}

/// Who tells the sender, as the table's column says it.
pub fn learns(l: &Learns, ipv6: bool) -> String {
    let icmp = if ipv6 {
        "ICMPv6 type 2 (packet too big)"
    } else {
        "ICMP type 3 code 4 (fragmentation needed)"
    };
    match l {
        Learns::OwnKernel => "its own kernel: the packet never leaves the guest".into(),
        Learns::Ovn { port, icmp: back } => {
            format!("OVN at {port} (gateway_mtu) sends {icmp}: {}", icmp_back(back))
        }
        Learns::Nobody { why } => format!(
            "nobody: {}",
            match why {
                Silence::Fabric => "a switch (or the peer's own device) sends no \"fragmentation needed\"".to_owned(),
                Silence::UnderlayRouter { from, mtu } => format!(
                    "{} told the node \"fragmentation needed\" (MTU {mtu}), which OVS's tunnel does not pass on to the guest",
                    from.map_or_else(|| "a router".to_owned(), |f| f.to_string())
                ),
                Silence::OvsOutput => "OVS drops a packet above an output port's MTU without a word".to_owned(),
                Silence::TunnelPmtud => "the kernel's tunnel PMTU answer for the node's own link goes back into the tunnel, and OVN does not deliver it to the guest".to_owned(),
            }
        ),
    }
}

/// A hop's name as the table shows it.
pub fn hop_kind(k: HopKind) -> &'static str {
    match k {
        HopKind::GuestNic => "guest NIC",
        HopKind::HostMtu => "virtio host_mtu",
        HopKind::Tap => "tap",
        HopKind::BrInt => "br-int",
        HopKind::Router => "router",
        HopKind::Geneve => "geneve",
        HopKind::Esp => "ESP",
        HopKind::LocalUnderlay => "underlay out",
        HopKind::UnderlayPath => "underlay path",
        HopKind::PeerUnderlay => "underlay in",
        HopKind::PeerTap => "peer tap",
        HopKind::PeerGuest => "peer guest",
    }
}

fn largest_text(d: &Direction) -> String {
    match d.largest {
        Some(l) => match l.bound {
            Precision::Exact => format!("{} bytes", l.bytes),
            Precision::AtLeast => format!("at least {} bytes", l.bytes),
            Precision::AtMost => format!("at most {} bytes (a hop was not read)", l.bytes),
        },
        None => "not known".into(),
    }
}

fn at(h: &Hop) -> String {
    format!("{} {} on {}", hop_kind(h.kind), h.name, h.node)
}

/// One direction in one sentence.
pub fn direction(d: &Direction, ipv6: bool) -> String {
    let head = format!("{} → {}", d.from, d.to);
    let largest = largest_text(d);
    match (d.outcome, d.first_drop()) {
        (Outcome::Carried, _) => format!(
            "{head}: a packet of {} crosses; the largest that crosses is {largest}",
            d.size
        ),
        (Outcome::RefusedBySender, Some(h)) => format!(
            "{head}: {} bytes is above the sender's own MTU ({}), so its kernel refuses it and says so; the largest that crosses is {largest}",
            d.size,
            limit(&h.limit)
        ),
        (Outcome::Signalled, Some(h)) => format!(
            "{head}: dropped at {} ({} bytes there, limit {}), and the sender is told: path MTU discovery settles at {largest}",
            at(h),
            h.bytes.unwrap_or(d.size),
            limit(&h.limit)
        ),
        (Outcome::IcmpBlocked, Some(h)) => format!(
            "{head}: dropped at {} (limit {}); OVN sends {} back, but the sender's security group {}; the largest that crosses is {largest}",
            at(h),
            limit(&h.limit),
            if ipv6 { "ICMPv6 type 2 (packet too big)" } else { "ICMP type 3 code 4 (fragmentation needed)" },
            match &h.learns {
                Some(Learns::Ovn { icmp, .. }) => icmp_back(icmp).replacen("dropped by", "drops it: ACL", 1),
                _ => "drops it".to_owned(),
            }
        ),
        (Outcome::Silent, Some(h)) => format!(
            "{head}: a packet of {} is dropped silently at {} ({} bytes there, limit {}); the largest that crosses is {largest}",
            d.size,
            at(h),
            h.bytes.unwrap_or(d.size),
            limit(&h.limit)
        ),
        (Outcome::Unread, _) => {
            let h = d.hops.iter().find(|h| h.fate == Fate::Unread);
            format!(
                "{head}: not concluded: {}",
                h.map(|h| format!("{} was not read ({})", at(h), unread_why(&h.limit)))
                    .unwrap_or_else(|| "a hop was not read".into())
            )
        }
        (_, None) => format!("{head}: {largest}"),
    }
}

/// The verdict's summary.
pub fn summary(f: &PathFacts, j: &Judgement) -> String {
    let ipv6 = f.from.place.guest().is_some_and(|g| g.ipv6());
    let both = format!(
        "{}; {}",
        direction(&j.forward, ipv6),
        direction(&j.backward, ipv6)
    );
    match j.kind {
        PathKind::GuestMtuAbovePath => {
            let (d, end) = failing(j, f);
            let told = offered(end)
                .map(|(m, by)| format!("{m} ({})", offered_by(by)))
                .unwrap_or_default();
            format!(
                "{} is told an MTU of {told} but the path carries {}, which is what the config implies ({}): {both}",
                end.label,
                largest_text(d),
                f.expected_guest_mtu.map(|e| format!("guest MTU {e}")).unwrap_or_default()
            )
        }
        PathKind::Asymmetric => {
            let (d, _) = failing(j, f);
            format!("one way only: {} fails; {both}", head(d))
        }
        _ => both,
    }
}

fn head(d: &Direction) -> String {
    format!("{} → {}", d.from, d.to)
}

fn offered_by(by: OfferedBy) -> &'static str {
    match by {
        OfferedBy::Dhcp => "DHCP options:mtu",
        OfferedBy::RouterAdvertisement => "the router advertisement's MTU",
        OfferedBy::HostMtu => "QEMU's host_mtu",
    }
}

/// The first failing direction and its sender.
fn failing<'a>(j: &'a Judgement, f: &'a PathFacts) -> (&'a Direction, &'a End) {
    if j.kinds[0] != PathKind::Ok && j.kinds[0] != PathKind::Unresolved {
        (&j.forward, &f.from)
    } else {
        (&j.backward, &f.to)
    }
}

/// The exact fixes, in order, for every direction that fails.
pub fn fixes(f: &PathFacts, j: &Judgement) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let pairs = [
        (&j.forward, &f.from, &f.to, j.kinds[0]),
        (&j.backward, &f.to, &f.from, j.kinds[1]),
    ];
    for (d, sender, receiver, kind) in pairs {
        for step in direction_fixes(f, d, sender, receiver, kind) {
            if !out.contains(&step) {
                out.push(step);
            }
        }
    }
    if j.kind != PathKind::Ok {
        out.push(format!(
            "re-check: `spx doctor path {} {}`",
            f.from.label, f.to.label
        ));
    }
    out
}

fn direction_fixes(
    f: &PathFacts,
    d: &Direction,
    sender: &End,
    receiver: &End,
    kind: PathKind,
) -> Vec<String> {
    let Some(h) = d
        .first_drop()
        .or_else(|| d.hops.iter().find(|h| h.fate == Fate::Unread))
    else {
        return Vec::new();
    };
    let nb = &f.nb_endpoints;
    let config = &f.config_file;
    let largest = d.largest.map(|l| l.bytes);
    let mut steps = Vec::new();
    match kind {
        PathKind::Ok => {}
        PathKind::Unresolved => steps.push(format!(
            "{} on {} was not read ({}): make {} answer (its QEMU, its OVS database, its agent over NATS or ssh), then re-run",
            hop_kind(h.kind),
            h.node,
            unread_why(&h.limit),
            h.node
        )),
        PathKind::GuestMtuAbovePath => {
            if let (Some(g), Some(l)) = (sender.place.guest(), largest) {
                match (&g.dhcp, g.offered_mtu()) {
                    (Some(row), Some((_, OfferedBy::Dhcp))) => {
                        steps.push(format!("`{}`", nbctl(nb, &set_dhcp_mtu(&row.uuid, l))))
                    }
                    (_, Some((_, OfferedBy::RouterAdvertisement))) => {
                        if let Some(p) = &g.gateway {
                            steps.push(format!("`{}`", nbctl(nb, &set_ra_mtu(&p.port, l))));
                        }
                    }
                    _ => {}
                }
                steps.push(format!(
                    "Spinifex's reconciler writes options:mtu from underlay_mtu and ipsec_enabled in {config}: if it puts back more than {l}, the config does not describe this path (check both keys there)"
                ));
            }
            steps.push(RESTART_GUESTS.to_owned());
        }
        PathKind::IcmpBlocked => {
            let ipv6 = sender.place.guest().is_some_and(|g| g.ipv6());
            let pg = sender
                .place
                .guest()
                .and_then(|g| g.port_groups.first().cloned())
                .unwrap_or_else(|| "<port group>".into());
            let icmp = if ipv6 {
                "icmp6 && icmp6.type == 2"
            } else {
                "icmp4 && icmp4.type == 3 && icmp4.code == 4"
            };
            let prio = sender
                .place
                .guest()
                .map(|g| g.acls.iter().map(|a| a.priority).max().unwrap_or(1000))
                .unwrap_or(1000);
            steps.push(format!(
                "let the error back in: `ovn-nbctl --db=\"{nb}\" acl-add {pg} to-lport {} 'outport == @{pg} && {icmp}' allow` (or make the guest's egress rules allow-related, as Spinifex writes them)",
                prio + 1
            ));
        }
        PathKind::BlackHole | PathKind::Asymmetric => {
            steps.extend(black_hole_fixes(f, d, h, sender, receiver));
        }
    }
    steps
}

fn black_hole_fixes(
    f: &PathFacts,
    d: &Direction,
    h: &Hop,
    sender: &End,
    receiver: &End,
) -> Vec<String> {
    let config = &f.config_file;
    let needed = h.bytes.unwrap_or(d.size);
    let mut steps = Vec::new();
    match h.kind {
        HopKind::LocalUnderlay | HopKind::PeerUnderlay => {
            let end = if h.kind == HopKind::LocalUnderlay {
                sender
            } else {
                receiver
            };
            let devs = device_names(end, h.kind == HopKind::LocalUnderlay);
            if !devs.is_empty() {
                steps.push(format!(
                    "on {}, raise the NIC first, then the bridge: {} (and persist it in the host's network configuration)",
                    h.node,
                    spinifex::set_mtus(&devs, needed.max(f.underlay_mtu.unwrap_or(0)), ", then ")
                ));
            }
            if let Some(Limit::Mtu { bytes, .. }) = Some(&h.limit) {
                steps.push(format!(
                    "or, if {bytes} is what the underlay carries, {} on every node, then {}",
                    spinifex::set_network_key("underlay_mtu", bytes, config),
                    RESTART_GUESTS
                ));
            }
        }
        HopKind::UnderlayPath => {
            let (measured, reported) = match &h.learns {
                Some(Learns::Nobody {
                    why: Silence::UnderlayRouter { mtu, .. },
                }) => (h.limit_bytes(), Some(*mtu)),
                _ => (h.limit_bytes(), None),
            };
            let peer_dev = h
                .peer_device
                .as_ref()
                .filter(|(_, mtu)| {
                    measured.is_some_and(|m| *mtu <= m + crate::checks::mtu_path::VLAN_SLACK)
                })
                .map(|(name, mtu)| format!(" (the peer's own {name} is at {mtu}: most likely it)"))
                .unwrap_or_default();
            steps.push(format!(
                "make the underlay path {} carry {needed} bytes: every switch port, VLAN and router on it{}{peer_dev}",
                h.name,
                match measured {
                    Some(m) => format!(" (it carries {m}, measured)"),
                    None => String::new(),
                }
            ));
            if let Some(m) = measured {
                let usable = usable_underlay(m, reported.is_some());
                steps.push(format!(
                    "or, to live with it: {} on every node (guests are then offered less), then {}",
                    spinifex::set_network_key("underlay_mtu", usable, config),
                    RESTART_GUESTS
                ));
            }
            steps.push(
                "re-check the underlay from every node: `spx doctor --check mtu.path`".into(),
            );
        }
        HopKind::PeerTap => {
            // The receiver's guests are told less than the config implies:
            // its subnet's DHCP row is where the tap's MTU came from.
            let want = f
                .expected_guest_mtu
                .or_else(|| offered(sender).map(|(m, _)| m))
                .unwrap_or(needed);
            if let Some(g) = receiver.place.guest() {
                if let (Some(row), Some((m, OfferedBy::Dhcp))) = (&g.dhcp, g.offered_mtu()) {
                    if m < want {
                        steps.push(format!(
                            "`{}` ({}'s subnet offers {m})",
                            nbctl(&f.nb_endpoints, &set_dhcp_mtu(&row.uuid, want)),
                            receiver.label
                        ));
                    }
                }
            }
            steps.push(format!(
                "stop and start the guest on {} (the daemon recreates the tap and QEMU's host_mtu={want}); meanwhile, for the host side only: {}",
                h.name,
                spinifex::set_mtus(&[h.name.as_str()], want, ", ")
            ));
        }
        _ => steps.push(format!(
            "{} on {} drops {needed} bytes ({}): see `spx doctor --check mtu.overlay` on {}",
            hop_kind(h.kind),
            h.node,
            limit(&h.limit),
            h.node
        )),
    }
    steps
}

/// The underlay device and its NIC ports of an end, NIC first.
fn device_names(end: &End, outbound: bool) -> Vec<String> {
    let _ = outbound;
    let Some(l) = end
        .facts
        .as_ref()
        .ok()
        .and_then(|x| x.toward.as_ref())
        .and_then(|t| t.egress.as_ref().ok())
    else {
        return Vec::new();
    };
    let mut devs: Vec<String> = l
        .ports
        .iter()
        .filter(|p| !spinifex::is_guest_tap(&p.interface))
        .map(|p| p.interface.clone())
        .collect();
    devs.push(l.interface.clone());
    devs
}

impl Hop {
    /// The limit's bytes, exact or not.
    pub fn limit_bytes(&self) -> Option<u32> {
        match &self.limit {
            Limit::Mtu { bytes, .. } | Limit::AtLeast { bytes, .. } => Some(*bytes),
            _ => None,
        }
    }
}
