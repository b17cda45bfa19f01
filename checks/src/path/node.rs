//! One node's side of a path: what a node is asked ([`NodeQuery`]) and what
//! it answers ([`NodeFacts`]). The same document whether the node is this
//! one (in-process), another over ssh (the hidden `path-facts` command
//! prints it) or over NATS (the agent's `path` request answers it), so the
//! judgement never knows how the facts came, and a recorded run replays
//! with every node's answer.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::checks::mtu_path::LocalLink;
use crate::facts::icmp::PathProbe;
use crate::facts::ovsdb::topology::OvsInterface;
use crate::facts::qemu::instance::TapNic;
use crate::facts::xfrm::SecurityAssociation;

/// The largest packet a node is asked to probe for: 64 KiB, an IP
/// packet's limit.
pub const MAX_SIZE: u32 = 65535;
/// The smallest: IPv4's minimum MTU (RFC 791).
pub const MIN_SIZE: u32 = 68;

/// Which guest a node is asked about.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "id", rename_all = "kebab-case")]
pub enum GuestRef {
    /// Every tap NIC of this instance's QEMU.
    Instance(String),
    /// The NIC whose tap is this ENI's (`tap` + the id, cut to 15).
    Eni(String),
}

impl GuestRef {
    pub fn label(&self) -> &str {
        match self {
            GuestRef::Instance(id) | GuestRef::Eni(id) => id,
        }
    }
}

/// What is probed toward the peer: a guest packet of N bytes (the node adds
/// geneve and the ESP of its own SA to it), or an underlay packet of N.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "bytes", rename_all = "kebab-case")]
pub enum Size {
    Guest(u32),
    Underlay(u32),
}

impl Size {
    pub fn bytes(self) -> u32 {
        match self {
            Size::Guest(n) | Size::Underlay(n) => n,
        }
    }
}

/// What one node is asked about its side of the path.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NodeQuery {
    /// The guest at this end; none for the underlay alone.
    #[serde(default)]
    pub guest: Option<GuestRef>,
    /// The other end's geneve endpoint, probed from here when given. A
    /// node probes only an address of its own peer list.
    #[serde(default)]
    pub peer: Option<IpAddr>,
    pub size: Size,
}

/// What a node answers about its side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeFacts {
    /// The config's `node`.
    pub node: Option<String>,
    pub hostname: String,
    /// The guest asked about (none when none was).
    #[serde(default)]
    pub guest: Option<Result<GuestFacts, String>>,
    /// Its Open_vSwitch database.
    pub ovs: Result<OvsFacts, String>,
    /// Its way to the peer (none when no peer was given).
    #[serde(default)]
    pub toward: Option<Toward>,
}

/// A guest's QEMU and its tap NICs on this node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestFacts {
    /// The instance its QEMU runs (from its pid file and sockets).
    pub instance: Option<String>,
    pub pid: i32,
    /// Its tap NICs: every one for an instance, the ENI's for an ENI.
    pub nics: Vec<NicFacts>,
}

/// One tap NIC: QEMU's side, the tap's link, the tap's OVS interface.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicFacts {
    pub nic: TapNic,
    /// The tap device (its MTU), or why it was not read.
    pub tap: Result<TapLink, String>,
    /// The OVS interface of the tap (by name), else the one carrying its
    /// MAC as `attached-mac` (Spinifex's IMDS patch port); none when the
    /// OVS database was not read or holds neither.
    #[serde(default)]
    pub iface: Option<OvsInterface>,
}

/// A tap device as rtnetlink reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TapLink {
    pub mtu: u32,
    pub up: bool,
}

/// A node's Open_vSwitch database, as far as the path goes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OvsFacts {
    /// The member that answered (`unix:/var/run/openvswitch/db.sock`).
    pub endpoint: String,
    /// `external_ids:ovn-encap-ip`.
    pub encap_ips: Vec<IpAddr>,
    /// `external_ids:system-id`.
    pub system_id: Option<String>,
    /// `other_config:ipsec_encapsulation`, as written.
    pub ipsec_encapsulation: Option<String>,
    /// Its geneve tunnel interfaces (`options:df_default` among them).
    pub tunnels: Vec<OvsInterface>,
}

/// A node's way to the peer's geneve endpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Toward {
    pub peer: IpAddr,
    /// Why the peer was not probed when it is not in this node's own peer
    /// list (the SB `Encap` table, peers.nft, the config): a node probes
    /// no free address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// This node's geneve endpoint the SAs and the probe leave from (its
    /// `ovn-encap-ip`, else the route's source).
    pub local: Option<IpAddr>,
    /// The egress device (and, for a bridge, its ports).
    pub egress: Result<LocalLink, String>,
    /// ESP SAs between the two endpoints, both ways (none: plaintext).
    pub sas: Result<Vec<SecurityAssociation>, String>,
    /// The outer packet probed: the guest packet with geneve and this
    /// node's outbound ESP, or the underlay size asked.
    pub outer: Option<u32>,
    /// The DF probe at `outer` (and the exact path MTU when it fails), or
    /// why there was none.
    pub probe: Result<PathProbe, String>,
    /// The ICMP socket kind the probe used.
    #[serde(default)]
    pub socket: Option<String>,
}
