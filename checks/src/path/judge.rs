//! The walk itself: the hops from one guest to the other, in order, what a
//! guest packet of N bytes becomes at each (geneve adds 58 on IPv4 and 78
//! on IPv6, ESP what the installed SA adds), each hop's limit, what
//! happens to the packet there, and whether the sender learns of a drop.
//! Then, per direction, the first drop and the largest packet that
//! crosses, and the verdict. Pure and typed: the words are in
//! [`super::words`].
//!
//! Who tells the sender, as measured and as the code says:
//! - its own kernel, for its own NIC (the MTU it was offered, QEMU's
//!   `host_mtu`): the packet never leaves, and the socket is told;
//! - OVN, only at a router port with `gateway_mtu` (northd's
//!   `check_pkt_larger`, answering ICMP type 3 code 4 or ICMPv6 type 2),
//!   and only when the guest's security group lets that ICMP back in
//!   ([`super::acl`]);
//! - nobody otherwise: an L2 switch sends nothing; OVS's datapath drops a
//!   packet above an output port's MTU (the peer's tap) without a word;
//!   and for the node's own underlay link, the kernel's bridged PMTU
//!   discovery (`skb_tunnel_check_pmtu`) injects its ICMP back into the
//!   tunnel with the original packet's metadata, where OVN does not deliver
//!   it to the guest (measured in the kernel lab: OVS kernel datapath, OVN
//!   23.03, a guest frame too big for br-vpc disappeared without an ICMP
//!   reaching the guest). A router on the underlay that answers "fragmentation
//!   needed" tells the node, not the guest.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::checks::mtu_path::{usable_mtu, LocalLink};
use crate::expect::{self, EspFormat, Family, OVN_GENEVE_OPTIONS};
use crate::facts::icmp::PathProbe;
use crate::facts::ovsdb::topology::Acl;
use crate::spinifex;

use super::acl::{icmp_back, IcmpBack, IcmpError};
use super::gather::outbound_esp;
use super::node::{NicFacts, NodeFacts};
use super::resolve::{Bound, GuestPort, NodePlace, OfferedBy, Routing};
use super::PathKind;

/// One end of the path, resolved, with its node's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct End {
    /// As the operator named it.
    pub label: String,
    pub place: Place,
    /// Its node's answer, or why there is none.
    pub facts: Result<NodeFacts, String>,
    /// How the answer came: `in-process`, `nats`, `ssh`.
    pub via: String,
}

/// What an end is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Place {
    Guest(Box<GuestPort>),
    Node(NodePlace),
}

impl Place {
    pub fn bound(&self) -> &Bound {
        match self {
            Place::Guest(g) => &g.bound,
            Place::Node(n) => &n.bound,
        }
    }

    pub fn guest(&self) -> Option<&GuestPort> {
        match self {
            Place::Guest(g) => Some(g),
            Place::Node(_) => None,
        }
    }

    /// The node this end is on (its config name, else its chassis).
    pub fn node(&self) -> String {
        let b = self.bound();
        b.node.clone().unwrap_or_else(|| b.chassis.clone())
    }
}

impl End {
    /// The guest's NIC on its node: by the ENI's tap name, else by the
    /// OVS iface-id that is its logical switch port.
    pub fn nic(&self) -> Option<&NicFacts> {
        let g = self.place.guest()?;
        let nics = &self
            .facts
            .as_ref()
            .ok()?
            .guest
            .as_ref()?
            .as_ref()
            .ok()?
            .nics;
        let tap = g.eni.as_deref().map(spinifex::tap_name);
        nics.iter()
            .find(|n| tap.as_deref() == Some(n.nic.tap.as_str()))
            .or_else(|| {
                nics.iter().find(|n| {
                    n.iface.as_ref().and_then(|i| i.iface_id.as_deref()) == Some(g.lsp.as_str())
                })
            })
            .or_else(|| {
                nics.iter().find(|n| {
                    n.nic
                        .mac
                        .as_deref()
                        .is_some_and(|m| g.macs.contains(&m.to_ascii_lowercase()))
                })
            })
    }
}

/// Where the size asked about came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SizeSource {
    /// `--size N`.
    Flag,
    /// The MTU the source guest was offered (DHCP, RA, else host_mtu).
    Offered,
    /// Between nodes: the config's `underlay_mtu`.
    UnderlayMtu,
}

/// Everything the verdict is judged from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathFacts {
    pub from: End,
    pub to: End,
    /// How the guests' switches are joined (none between nodes).
    pub routing: Option<Routing>,
    /// N: a guest packet, or an underlay packet between nodes.
    pub size: u32,
    pub size_source: SizeSource,
    /// The guest MTU the config implies (underlay_mtu − 58 − ESP), on the
    /// family of the path's underlay; none without a config.
    pub expected_guest_mtu: Option<u32>,
    pub underlay_mtu: Option<u32>,
    /// The NB raft endpoints, as fixes name them.
    pub nb_endpoints: String,
    pub config_file: String,
}

impl PathFacts {
    /// The path is the underlay between two nodes alone.
    pub fn underlay_only(&self) -> bool {
        matches!(self.from.place, Place::Node(_)) || matches!(self.to.place, Place::Node(_))
    }

    /// Both ends are on one node: the path never leaves br-int.
    pub fn same_node(&self) -> bool {
        let (a, b) = (self.from.place.bound(), self.to.place.bound());
        a.chassis == b.chassis
    }
}

/// A hop of the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HopKind {
    /// The sending guest's NIC: the MTU it was offered (DHCP or RA).
    GuestNic,
    /// QEMU's virtio `host_mtu`: the most the guest's NIC can be set to.
    HostMtu,
    /// The sending guest's tap.
    Tap,
    /// The integration bridge.
    BrInt,
    /// The logical router between two subnets.
    Router,
    /// Geneve encapsulation.
    Geneve,
    /// ESP of the SA toward the peer.
    Esp,
    /// This node's underlay device (br-vpc) and its ports (the NIC).
    LocalUnderlay,
    /// Between the two geneve endpoints: the DF probe's answer.
    UnderlayPath,
    /// The peer's underlay device and its ports.
    PeerUnderlay,
    /// The receiving guest's tap (an OVS output port).
    PeerTap,
    /// The receiving guest.
    PeerGuest,
}

/// A hop's limit: the largest packet it carries, at its own layer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Limit {
    /// Exactly this many bytes.
    Mtu { bytes: u32, source: LimitSource },
    /// At least this many (a probe of this size passed).
    AtLeast { bytes: u32, source: LimitSource },
    /// This hop limits nothing.
    None { why: NoLimit },
    /// Not read: the reason, as the reader said it.
    Unread { why: String },
}

impl Limit {
    fn bytes(&self) -> Option<u32> {
        match self {
            Limit::Mtu { bytes, .. } | Limit::AtLeast { bytes, .. } => Some(*bytes),
            _ => None,
        }
    }
}

/// Where a limit was read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "kebab-case")]
pub enum LimitSource {
    /// The port's `DHCP_Options` `options:mtu` (its uuid).
    Dhcp { row: String },
    /// The router port's `ipv6_ra_configs:mtu`.
    RouterAdvertisement { port: String },
    /// No DHCP or RA MTU: the NIC keeps QEMU's `host_mtu` (else 1500).
    Default,
    /// QEMU's `-device …,host_mtu=N`.
    HostMtu,
    /// A device's MTU (rtnetlink).
    Device { name: String },
    /// `options:gateway_mtu` of a router port.
    GatewayMtu { port: String },
    /// The DF probe between the geneve endpoints.
    Probe,
}

/// Why a hop limits nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoLimit {
    /// OVS takes what the guest sends on its tap: a tap's MTU limits what
    /// goes out to its guest, not what comes in.
    TapIngress,
    /// A bridge's own MTU never limits what the datapath forwards: only
    /// output ports do.
    OutputPortsOnly,
    /// No router port on the way sets `gateway_mtu`: OVN routes any size.
    NoGatewayMtu,
    /// Encapsulation adds bytes; the next hop judges them.
    Encapsulation,
    /// No ESP SA between the endpoints: geneve goes in clear.
    NoSa,
    /// The receiving guest's own MTU limits what it sends, not what its
    /// NIC takes: not judged.
    ReceiverNic,
}

/// What happens to the packet at a hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fate {
    Carried,
    Dropped,
    /// The node fragments the outer packet (its tunnel has
    /// `df_default=false`); the peer reassembles it.
    Fragmented,
    /// An earlier hop dropped it.
    NotReached,
    /// The hop was not read: nothing is known of it.
    Unread,
}

/// Who tells the sender of a drop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "who", rename_all = "kebab-case")]
pub enum Learns {
    /// The guest's own kernel: the packet never leaves (EMSGSIZE, or
    /// "fragmentation needed" from its own stack).
    OwnKernel,
    /// OVN's router port with `gateway_mtu`, if the security group lets
    /// the ICMP back in.
    Ovn { port: String, icmp: IcmpBack },
    /// Nobody.
    Nobody { why: Silence },
}

/// Why a drop is silent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Silence {
    /// A switch (or the peer's own device) drops it: L2 sends nothing.
    Fabric,
    /// A router on the underlay answered "fragmentation needed" to the
    /// node; OVS's tunnel does not pass that on to the guest.
    UnderlayRouter { from: Option<IpAddr>, mtu: u32 },
    /// OVS's datapath drops a packet above an output port's MTU.
    OvsOutput,
    /// The node's own underlay link: the kernel's tunnel PMTU answer
    /// never reaches an OVN guest.
    TunnelPmtud,
}

/// One hop, judged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hop {
    pub kind: HopKind,
    /// The node it is on.
    pub node: String,
    /// What it is (a device, a port, the two endpoints).
    pub name: String,
    /// The bytes the packet occupies here (the guest packet, or the outer
    /// packet from geneve on).
    pub bytes: Option<u32>,
    pub limit: Limit,
    pub fate: Fate,
    /// For a drop: who tells the sender.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learns: Option<Learns>,
    /// For the underlay path: the peer's own device, which the probe
    /// crosses too (its name and MTU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_device: Option<(String, u32)>,
}

/// How one direction ends for a packet of N.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// It crosses.
    Carried,
    /// The sender's own NIC refuses it, and its kernel says so.
    RefusedBySender,
    /// A router port drops it and tells the sender, which hears it.
    Signalled,
    /// A router port drops it and tells the sender, but its security group
    /// drops the ICMP.
    IcmpBlocked,
    /// Dropped where nobody tells the sender: a black hole.
    Silent,
    /// A hop before any drop was not read: nothing is concluded.
    Unread,
}

/// How the largest packet that crosses is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Precision {
    Exact,
    /// A probe proved this much and no more was asked.
    AtLeast,
    /// A hop was not read: it may carry less.
    AtMost,
}

/// The largest guest packet that crosses in one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Largest {
    pub bytes: u32,
    pub bound: Precision,
    /// The hop whose limit it is.
    pub at: usize,
}

/// One direction, judged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Direction {
    pub from: String,
    pub to: String,
    pub size: u32,
    pub hops: Vec<Hop>,
    pub first_drop: Option<usize>,
    pub largest: Option<Largest>,
    pub outcome: Outcome,
    /// The ESP layout of the sender's SA toward the receiver, when one is
    /// installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub esp: Option<EspFormat>,
    /// The underlay family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<Family>,
}

impl Direction {
    pub fn first_drop(&self) -> Option<&Hop> {
        self.first_drop.map(|i| &self.hops[i])
    }
}

/// Both directions and the verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgement {
    pub kind: PathKind,
    pub forward: Direction,
    pub backward: Direction,
    /// Each direction's own kind.
    pub kinds: [PathKind; 2],
}

/// Judge both directions.
pub fn judge(f: &PathFacts) -> Judgement {
    let forward = direction(f, &f.from, &f.to);
    let backward = direction(f, &f.to, &f.from);
    let kf = direction_kind(f, &f.from, &forward);
    let kb = direction_kind(f, &f.to, &backward);
    let fails = |k: PathKind| {
        matches!(
            k,
            PathKind::BlackHole | PathKind::GuestMtuAbovePath | PathKind::IcmpBlocked
        )
    };
    let kind = match (kf, kb) {
        (PathKind::Ok, PathKind::Ok) => PathKind::Ok,
        (a, PathKind::Ok) if fails(a) => PathKind::Asymmetric,
        (PathKind::Ok, b) if fails(b) => PathKind::Asymmetric,
        (a, _) if fails(a) => a,
        (_, b) if fails(b) => b,
        _ => PathKind::Unresolved,
    };
    Judgement {
        kind,
        forward,
        backward,
        kinds: [kf, kb],
    }
}

/// One direction's own verdict.
fn direction_kind(f: &PathFacts, sender: &End, d: &Direction) -> PathKind {
    match d.outcome {
        Outcome::Carried | Outcome::RefusedBySender | Outcome::Signalled => PathKind::Ok,
        Outcome::IcmpBlocked => PathKind::IcmpBlocked,
        Outcome::Unread => PathKind::Unresolved,
        Outcome::Silent => {
            // The path carries what the config implies, and the guest is
            // told more: the guest's MTU is the fault, not the fabric.
            let offered = offered(sender).map(|(m, _)| m);
            match (f.expected_guest_mtu, d.largest, offered) {
                (Some(expected), Some(l), Some(offered))
                    if l.bytes >= expected && offered > expected && !f.underlay_only() =>
                {
                    PathKind::GuestMtuAbovePath
                }
                _ => PathKind::BlackHole,
            }
        }
    }
}

/// The MTU the sending guest was offered, and by what.
pub fn offered(end: &End) -> Option<(u32, OfferedBy)> {
    let g = end.place.guest()?;
    g.offered_mtu()
        .or_else(|| Some((end.nic()?.nic.host_mtu?, OfferedBy::HostMtu)))
}

/// The underlay family between the two ends: that of the receiver's
/// geneve endpoint.
fn family(to: &End) -> Family {
    to.place.bound().encap.map(Family::of).unwrap_or_default()
}

/// A step of the walk: the packet's size at the hop, its limit, and what
/// telling the sender would take.
struct Step {
    hop: Hop,
    /// The hop counts in outer bytes (after geneve).
    outer: bool,
    /// A probe of this hop's very size went unanswered (by the probe's own
    /// standard: silent at two moments, or refused) though its limit is
    /// known only as "at least": the packet is dropped here, its exact
    /// limit unknown.
    refused: bool,
}

fn hop(
    kind: HopKind,
    node: &str,
    name: impl Into<String>,
    bytes: Option<u32>,
    limit: Limit,
) -> Hop {
    Hop {
        kind,
        node: node.to_owned(),
        name: name.into(),
        bytes,
        limit,
        fate: Fate::Carried,
        learns: None,
        peer_device: None,
    }
}

fn unread(why: impl Into<String>) -> Limit {
    Limit::Unread { why: why.into() }
}

fn no_limit(why: NoLimit) -> Limit {
    Limit::None { why }
}

fn facts_of(end: &End) -> Result<&NodeFacts, String> {
    end.facts.as_ref().map_err(Clone::clone)
}

/// The walk from `a` to `b`.
fn direction(f: &PathFacts, a: &End, b: &End) -> Direction {
    let n = f.size;
    let (node_a, node_b) = (a.place.node(), b.place.node());
    let fam = family(b);
    let mut steps: Vec<Step> = Vec::new();
    if let Some(g) = a.place.guest() {
        sender_guest(&mut steps, a, g, &node_a, n);
    }
    if let Some(Routing::Routed {
        ingress, egress, ..
    }) = &f.routing
    {
        // The routing is read from FROM's side: the way back enters at TO's
        // router port.
        let sender_port = a
            .place
            .guest()
            .and_then(|g| g.gateway.as_ref())
            .map(|g| &g.port);
        let (ingress, egress) = if sender_port == Some(&egress.port) {
            (egress, ingress)
        } else {
            (ingress, egress)
        };
        let mtus: Vec<(u32, &str)> = [ingress, egress]
            .iter()
            .filter_map(|p| Some((p.gateway_mtu()?, p.port.as_str())))
            .collect();
        let router = ingress.router.clone().unwrap_or_default();
        let limit = match mtus.iter().min() {
            Some((m, port)) => Limit::Mtu {
                bytes: *m,
                source: LimitSource::GatewayMtu {
                    port: (*port).to_owned(),
                },
            },
            None => no_limit(NoLimit::NoGatewayMtu),
        };
        let name = format!("{router} ({} → {})", ingress.port, egress.port);
        steps.push(Step {
            hop: hop(HopKind::Router, &node_a, name, Some(n), limit),
            outer: false,
            refused: false,
        });
    }
    let mut esp: Option<EspFormat> = None;
    let mut fam_used = None;
    if !f.same_node() {
        fam_used = Some(fam);
        esp = underlay(&mut steps, f, a, b, &node_a, &node_b, fam);
    }
    if let Some(g) = b.place.guest() {
        receiver_guest(&mut steps, b, g, &node_b, n, f.same_node());
    }
    let mut hops: Vec<Hop> = Vec::with_capacity(steps.len());
    let mut first_drop = None;
    let mut unread_before = false;
    let acls = a
        .place
        .guest()
        .map(|g| g.acls.iter().collect::<Vec<&Acl>>())
        .unwrap_or_default();
    for (i, step) in steps.iter().enumerate() {
        let mut h = step.hop.clone();
        if first_drop.is_some() {
            h.fate = Fate::NotReached;
        } else if let Limit::Unread { .. } = h.limit {
            h.fate = Fate::Unread;
            unread_before = true;
        } else if let (Some(bytes), Some(limit)) = (h.bytes, h.limit.bytes()) {
            let exact = matches!(h.limit, Limit::Mtu { .. });
            if (exact || step.refused) && bytes > limit {
                if h.kind == HopKind::LocalUnderlay && fragments(a) {
                    h.fate = Fate::Fragmented;
                } else {
                    h.fate = Fate::Dropped;
                    h.learns = Some(learns(&h, a, &acls, fam));
                    first_drop = Some(i);
                }
            }
        }
        hops.push(h);
    }
    let outcome = match first_drop.map(|i| &hops[i]) {
        _ if unread_before => Outcome::Unread,
        None => Outcome::Carried,
        Some(h) => match &h.learns {
            Some(Learns::OwnKernel) => Outcome::RefusedBySender,
            Some(Learns::Ovn { icmp, .. }) => match icmp.reaches() {
                Some(true) => Outcome::Signalled,
                Some(false) => Outcome::IcmpBlocked,
                None => Outcome::Unread,
            },
            _ => Outcome::Silent,
        },
    };
    let largest = largest(&steps, &hops, fam, esp.as_ref(), unread_before);
    Direction {
        from: a.label.clone(),
        to: b.label.clone(),
        size: n,
        hops,
        first_drop,
        largest,
        outcome,
        esp,
        family: fam_used,
    }
}

/// The sending guest's NIC, QEMU's host_mtu, its tap and br-int.
fn sender_guest(steps: &mut Vec<Step>, a: &End, g: &GuestPort, node: &str, n: u32) {
    let nic = a.nic();
    let offered_limit = match g.offered_mtu() {
        Some((m, OfferedBy::Dhcp)) => Limit::Mtu {
            bytes: m,
            source: LimitSource::Dhcp {
                row: g.dhcp.as_ref().map(|d| d.uuid.clone()).unwrap_or_default(),
            },
        },
        Some((m, _)) => Limit::Mtu {
            bytes: m,
            source: LimitSource::RouterAdvertisement {
                port: g
                    .gateway
                    .as_ref()
                    .map(|p| p.port.clone())
                    .unwrap_or_default(),
            },
        },
        None => match nic.and_then(|x| x.nic.host_mtu) {
            Some(h) => Limit::Mtu {
                bytes: h,
                source: LimitSource::Default,
            },
            None => Limit::Mtu {
                bytes: 1500,
                source: LimitSource::Default,
            },
        },
    };
    let who = g.eni.clone().unwrap_or_else(|| g.lsp.clone());
    steps.push(Step {
        hop: hop(
            HopKind::GuestNic,
            node,
            format!("{who}'s NIC"),
            Some(n),
            offered_limit,
        ),
        outer: false,
        refused: false,
    });
    let qemu = a
        .facts
        .as_ref()
        .ok()
        .and_then(|f| f.guest.as_ref()?.as_ref().ok())
        .map_or_else(|| "QEMU".to_owned(), |g| format!("QEMU pid {}", g.pid));
    let (host_mtu, tap_name) = match (nic, &a.facts) {
        (Some(x), _) => (
            match x.nic.host_mtu {
                Some(m) => Limit::Mtu {
                    bytes: m,
                    source: LimitSource::HostMtu,
                },
                None => Limit::Mtu {
                    bytes: 1500,
                    source: LimitSource::Default,
                },
            },
            x.nic.tap.clone(),
        ),
        (None, Err(e)) => (unread(e.clone()), expected_tap(g)),
        (None, Ok(facts)) => (unread(guest_unread(facts)), expected_tap(g)),
    };
    steps.push(Step {
        hop: hop(HopKind::HostMtu, node, qemu, Some(n), host_mtu),
        outer: false,
        refused: false,
    });
    steps.push(Step {
        hop: hop(
            HopKind::Tap,
            node,
            tap_name,
            Some(n),
            no_limit(NoLimit::TapIngress),
        ),
        outer: false,
        refused: false,
    });
    steps.push(Step {
        hop: hop(
            HopKind::BrInt,
            node,
            spinifex::INTEGRATION_BRIDGE,
            Some(n),
            no_limit(NoLimit::OutputPortsOnly),
        ),
        outer: false,
        refused: false,
    });
}

fn expected_tap(g: &GuestPort) -> String {
    g.eni
        .as_deref()
        .map(spinifex::tap_name)
        .unwrap_or_else(|| format!("the tap of {}", g.lsp))
}

/// Why the guest's NIC was not found in its node's answer.
fn guest_unread(facts: &NodeFacts) -> String {
    match &facts.guest {
        Some(Err(e)) => e.clone(),
        Some(Ok(g)) => format!(
            "its QEMU (pid {}) has no tap NIC for this port ({})",
            g.pid,
            g.nics
                .iter()
                .map(|n| n.nic.tap.clone())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => "its node was not asked about the guest".to_owned(),
    }
}

/// Geneve, ESP, the node's underlay, the path, the peer's underlay.
/// Returns the sender's ESP layout.
fn underlay(
    steps: &mut Vec<Step>,
    f: &PathFacts,
    a: &End,
    b: &End,
    node_a: &str,
    node_b: &str,
    fam: Family,
) -> Option<EspFormat> {
    let n = f.size;
    let peer = b.place.bound().encap;
    let toward = facts_of(a).ok().and_then(|x| x.toward.as_ref());
    let guest = !f.underlay_only();
    // ESP of the sender's own SA toward the peer.
    let esp: Result<Option<EspFormat>, String> = match (toward, peer) {
        (Some(t), Some(p)) => t
            .sas
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|sas| outbound_esp(sas, t.local, p, fam)),
        (None, _) => Err(match facts_of(a) {
            Err(e) => e,
            Ok(_) => "its node was not asked about the way to the peer".to_owned(),
        }),
        (_, None) => Err(format!("{} has no geneve endpoint in SB", b.place.node())),
    };
    let geneve = if guest {
        n + expect::geneve_overhead(fam, OVN_GENEVE_OPTIONS)
    } else {
        n
    };
    let outer = match &esp {
        Ok(e) if guest => Some(expect::outer_size(n, fam, OVN_GENEVE_OPTIONS, e.as_ref())),
        Ok(_) => Some(n),
        Err(_) => None,
    };
    let ends = format!(
        "{} → {}",
        a.place
            .bound()
            .encap
            .map_or_else(|| "?".to_owned(), |i| i.to_string()),
        peer.map_or_else(|| "?".to_owned(), |i| i.to_string())
    );
    if guest {
        steps.push(Step {
            hop: hop(
                HopKind::Geneve,
                node_a,
                format!("geneve {ends}"),
                Some(geneve),
                no_limit(NoLimit::Encapsulation),
            ),
            outer: true,
            refused: false,
        });
        let (name, limit) = match &esp {
            Ok(Some(_)) => ("ESP".to_owned(), no_limit(NoLimit::Encapsulation)),
            Ok(None) => ("ESP".to_owned(), no_limit(NoLimit::NoSa)),
            Err(e) => ("ESP".to_owned(), unread(e.clone())),
        };
        steps.push(Step {
            hop: hop(HopKind::Esp, node_a, name, outer, limit),
            outer: true,
            refused: false,
        });
    }
    // The node's own underlay device and its ports.
    let (local_name, local_limit) = match toward.map(|t| &t.egress) {
        Some(Ok(l)) => device_limit(l),
        Some(Err(e)) => ("underlay".to_owned(), unread(e.clone())),
        None => (
            "underlay".to_owned(),
            unread(esp.clone().err().unwrap_or_default()),
        ),
    };
    steps.push(Step {
        hop: hop(
            HopKind::LocalUnderlay,
            node_a,
            local_name,
            outer,
            local_limit.clone(),
        ),
        outer: true,
        refused: false,
    });
    // The path between the endpoints: the probe.
    let peer_device = facts_of(b)
        .ok()
        .and_then(|x| x.toward.as_ref())
        .and_then(|t| t.egress.as_ref().ok())
        .map(device_limit);
    let path_limit = match toward.map(|t| (&t.probe, t.outer)) {
        Some((Ok(p), Some(probed))) => probe_limit(p, probed),
        Some((Err(e), _)) => unread(e.clone()),
        Some((Ok(_), None)) | None => unread("no probe was made"),
    };
    // The probe's own size went unanswered, with only a lower bound on the
    // limit (the sizes between the largest answer and the smallest refusal
    // never concluded): the packet does not cross, whatever the exact limit.
    let refused = match toward.map(|t| (&t.probe, t.outer)) {
        Some((Ok(p), Some(probed))) => {
            matches!(path_limit, Limit::AtLeast { .. })
                && !p.target_answered()
                && p.smallest_refused.is_some_and(|r| r <= probed)
        }
        _ => false,
    };
    let mut path = hop(HopKind::UnderlayPath, node_a, ends, outer, path_limit);
    if let Some((name, Limit::Mtu { bytes, .. })) = &peer_device {
        path.peer_device = Some((format!("{node_b} {name}"), *bytes));
    }
    // A fragmented outer packet crosses as fragments of the local MTU.
    if fragments(a) {
        if let (Some(o), Some(l)) = (outer, local_limit.bytes()) {
            path.bytes = Some(o.min(l));
        }
    }
    steps.push(Step {
        hop: path,
        outer: true,
        refused,
    });
    // The peer's own device: the probe crossed it; judged here only when
    // there was no probe.
    let (peer_name, peer_limit) = match &peer_device {
        Some((name, limit)) => (name.clone(), limit.clone()),
        None => (
            "underlay".to_owned(),
            unread(match facts_of(b) {
                Err(e) => e,
                Ok(_) => "its node was not asked about its way back".to_owned(),
            }),
        ),
    };
    // What the probe proved the peer's device took.
    let proven = steps.last().and_then(|s| s.hop.limit.bytes());
    let peer_limit = match (proven, peer_limit) {
        (Some(p), Limit::Mtu { source, .. }) => Limit::AtLeast { bytes: p, source },
        (_, other) => other,
    };
    steps.push(Step {
        hop: hop(HopKind::PeerUnderlay, node_b, peer_name, outer, peer_limit),
        outer: true,
        refused: false,
    });
    esp.ok().flatten()
}

/// A device and its ports as one hop: the narrowest of them.
fn device_limit(l: &LocalLink) -> (String, Limit) {
    let mut name = l.interface.clone();
    let ports: Vec<&LocalLink> = l
        .ports
        .iter()
        .filter(|p| !spinifex::is_guest_tap(&p.interface))
        .collect();
    if !ports.is_empty() {
        name = format!(
            "{} ({})",
            l.interface,
            ports
                .iter()
                .map(|p| p.interface.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let narrowest = std::iter::once(l)
        .chain(ports.iter().copied())
        .min_by_key(|d| d.mtu)
        .unwrap_or(l);
    (
        name,
        Limit::Mtu {
            bytes: narrowest.mtu,
            source: LimitSource::Device {
                name: narrowest.interface.clone(),
            },
        },
    )
}

/// What the probe says of the path: it carried `probed` bytes, or exactly
/// its path MTU.
fn probe_limit(p: &PathProbe, probed: u32) -> Limit {
    if p.cut_short && p.largest_answered.is_none_or(|l| l < probed) && p.exact_path_mtu().is_none()
    {
        return unread(format!(
            "the run's --timeout ended the probe of {probed} bytes before it concluded"
        ));
    }
    if !p.reachable() {
        return unread(match &p.other_error {
            Some(e) => format!("no echo reply from {} ({e})", p.addr),
            None => format!(
                "no echo reply from {} at all, not even a minimal one (its firewall must accept echo-request and destination-unreachable)",
                p.addr
            ),
        });
    }
    if p.target_answered() {
        return Limit::AtLeast {
            bytes: probed,
            source: LimitSource::Probe,
        };
    }
    match p.exact_path_mtu() {
        Some(m) => Limit::Mtu {
            bytes: m,
            source: LimitSource::Probe,
        },
        // Neither the probe's size nor any size below it was refused: the
        // probe concluded nothing about this packet, and says so.
        None if p.smallest_refused.is_none_or(|r| r > probed) => unread(format!(
            "the DF probe of {probed} bytes to {} concluded nothing: {} answered, nothing larger did, and nothing was refused",
            p.addr,
            p.largest_answered.unwrap_or(0)
        )),
        // A size up to the probe's was refused, the sizes between it and
        // the largest answer never concluded: the packet is dropped
        // (`Step::refused`), its limit known only from below.
        None => Limit::AtLeast {
            bytes: p.largest_answered.unwrap_or(0),
            source: LimitSource::Probe,
        },
    }
}

/// The receiving guest's tap (an OVS output port) and the guest.
fn receiver_guest(
    steps: &mut Vec<Step>,
    b: &End,
    g: &GuestPort,
    node: &str,
    n: u32,
    _same_node: bool,
) {
    let (tap, limit) = match (b.nic(), &b.facts) {
        (Some(x), _) => (
            x.nic.tap.clone(),
            match &x.tap {
                Ok(link) => Limit::Mtu {
                    bytes: link.mtu,
                    source: LimitSource::Device {
                        name: x.nic.tap.clone(),
                    },
                },
                Err(e) => unread(e.clone()),
            },
        ),
        (None, Err(e)) => (expected_tap(g), unread(e.clone())),
        (None, Ok(facts)) => (expected_tap(g), unread(guest_unread(facts))),
    };
    steps.push(Step {
        hop: hop(HopKind::PeerTap, node, tap, Some(n), limit),
        outer: false,
        refused: false,
    });
    let who = g.eni.clone().unwrap_or_else(|| g.lsp.clone());
    steps.push(Step {
        hop: hop(
            HopKind::PeerGuest,
            node,
            format!("{who}'s NIC"),
            Some(n),
            no_limit(NoLimit::ReceiverNic),
        ),
        outer: false,
        refused: false,
    });
}

/// The sender's tunnel fragments rather than drops (`df_default=false`).
fn fragments(a: &End) -> bool {
    facts_of(a)
        .ok()
        .and_then(|x| x.ovs.as_ref().ok())
        .is_some_and(|o| {
            !o.tunnels.is_empty()
                && o.tunnels
                    .iter()
                    .all(|t| t.df_default.as_deref() == Some("false"))
        })
}

/// Who tells the sender of a drop at `h`.
fn learns(h: &Hop, a: &End, acls: &[&Acl], fam: Family) -> Learns {
    match h.kind {
        HopKind::GuestNic | HopKind::HostMtu => Learns::OwnKernel,
        HopKind::Router => {
            let port = match &h.limit {
                Limit::Mtu {
                    source: LimitSource::GatewayMtu { port },
                    ..
                } => port.clone(),
                _ => String::new(),
            };
            let g = a.place.guest();
            let ipv6 = g.is_some_and(GuestPort::ipv6);
            let src = g
                .and_then(|g| g.gateway.as_ref())
                .and_then(|p| p.address(ipv6));
            let dst = g.and_then(|g| g.ips.iter().find(|i| i.is_ipv6() == ipv6).copied());
            let _ = fam;
            Learns::Ovn {
                port,
                icmp: icmp_back(acls, IcmpError { ipv6, src, dst }),
            }
        }
        HopKind::LocalUnderlay => Learns::Nobody {
            why: Silence::TunnelPmtud,
        },
        HopKind::UnderlayPath => {
            let why = match facts_of(a)
                .ok()
                .and_then(|x| x.toward.as_ref())
                .and_then(|t| t.probe.as_ref().ok())
                .and_then(|p| p.too_big)
            {
                Some(t) => Silence::UnderlayRouter {
                    from: t.from,
                    mtu: t.mtu,
                },
                None => Silence::Fabric,
            };
            Learns::Nobody { why }
        }
        HopKind::PeerUnderlay => Learns::Nobody {
            why: Silence::Fabric,
        },
        _ => Learns::Nobody {
            why: Silence::OvsOutput,
        },
    }
}

/// The largest guest packet that crosses: the smallest of the hops'
/// limits, each in guest bytes (an outer limit less geneve and ESP).
fn largest(
    steps: &[Step],
    hops: &[Hop],
    fam: Family,
    esp: Option<&EspFormat>,
    unread: bool,
) -> Option<Largest> {
    let mut exact: Option<(u32, usize)> = None;
    let mut at_least: Option<(u32, usize)> = None;
    for (i, (step, h)) in steps.iter().zip(hops).enumerate() {
        if h.fate == Fate::Fragmented {
            continue;
        }
        let inner = |bytes: u32| -> Option<u32> {
            if step.outer && !matches!(h.kind, HopKind::Geneve | HopKind::Esp) {
                expect::largest_inner(bytes, fam, OVN_GENEVE_OPTIONS, esp)
            } else {
                Some(bytes)
            }
        };
        match &h.limit {
            Limit::Mtu { bytes, .. } => {
                let v = inner(*bytes).unwrap_or(0);
                if exact.is_none_or(|(e, _)| v < e) {
                    exact = Some((v, i));
                }
            }
            Limit::AtLeast { bytes, .. } => {
                let v = inner(*bytes).unwrap_or(0);
                if at_least.is_none_or(|(e, _)| v < e) {
                    at_least = Some((v, i));
                }
            }
            _ => {}
        }
    }
    let (bytes, at, bound) = match (exact, at_least) {
        (Some((e, i)), Some((l, _))) if e <= l => (e, i, Precision::Exact),
        (Some((e, i)), None) => (e, i, Precision::Exact),
        (_, Some((l, i))) => (l, i, Precision::AtLeast),
        (None, None) => return None,
    };
    let bound = if unread && bound == Precision::Exact {
        Precision::AtMost
    } else {
        bound
    };
    Some(Largest { bytes, bound, at })
}

/// The underlay_mtu a measured path allows, as a setting (mtu.path's
/// reading of a silent drop measured a VLAN tag above a common MTU).
pub fn usable_underlay(measured: u32, reported: bool) -> u32 {
    usable_mtu(measured, reported)
}
