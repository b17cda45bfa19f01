//! `mtu.overlay`: the guest MTU the config implies, against the places it
//! reaches a guest from (OVN `DHCP_Options` `options:mtu` for IPv4, a
//! router port's `ipv6_ra_configs:mtu` for IPv6, the host tap, and,
//! underneath, the underlay bridge that must carry it).
//!
//! Turning IPsec on narrows the guest path from 1442 to 1408 at a 1500
//! underlay (8942 to 8908 at 9000); turning it off widens it. Guests keep
//! the old value (QEMU's host_mtu, a DHCP lease of up to an hour) until they
//! are stopped and started, and a guest that believes 1442 on a 1408 path
//! black-holes every full-size segment. This check finds the rows and
//! devices still carrying the old number.
//!
//! Two facts shape it. OVN's DHCPv6 options have no MTU: an IPv6 guest
//! learns it from router advertisements, so `DHCP_Options` rows for an IPv6
//! `cidr` are never asked for `options:mtu`; the RA MTU is judged where a
//! router port sets one. And an IPv6 outer header costs 20 bytes more than
//! IPv4's, so the expected guest MTU follows the family of this node's
//! overlay endpoint ([`peers::underlay_family`]).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::endpoint::Endpoint;
use crate::evidence::Evidence;
use crate::expect;
use crate::facts::links;
use crate::facts::ovsdb::{Answer, NbGuestMtus};
use crate::facts::ProbeError;
use crate::finding::Finding;
use crate::read::ovsdb;
use crate::spinifex;
use crate::targets::ovsdb_endpoints as endpoints;
use crate::targets::peers::{self, UnderlayFamily};

mod analyse;
pub(crate) mod words;

pub struct OverlayMtu;

/// VPC taps are `tap` + ENI id (management taps are `mg…`).
pub use crate::spinifex::VPC_TAP_PREFIX;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    pub name: String,
    pub mtu: u32,
}

crate::kinds! {
    /// What `mtu.overlay` can say, per NB row, tap and bridge, and for the check.
    pub enum OverlayMtuKind for "mtu.overlay" {
        /// Every IPv4 DHCP_Options row, router advertisement MTU and VPC tap carries the guest MTU the config implies, and the underlay bridge carries underlay_mtu.
        Ok = pass("ok"),
        /// The underlay bridge (br-vpc, else br-lan, else br-wan) is below underlay_mtu: every full-size geneve packet is dropped.
        BridgeBelowUnderlay = fail("bridge-below-underlay"),
        /// An IPv4 DHCP_Options row's options:mtu is not the guest MTU (or is unset, so guests take 1500): guests believe a path the overlay does not carry.
        DhcpMtu = fail("dhcp-mtu"),
        /// A logical router port advertises an ipv6_ra_configs:mtu other than the guest MTU.
        RaMtu = fail("ra-mtu"),
        /// A VPC tap's MTU is not the guest MTU: its guest was started before IPsec or the underlay changed.
        TapMtu = fail("tap-mtu"),
        /// The northbound DHCP_Options and router ports could not be read (down, no answer within the probe timeout): never a pass.
        NbUnreachable = error("nb-unreachable"),
    }
}

static DECLARED: Declared = Declared::of::<OverlayMtuKind, OverlayMtuEvidence>();

/// The guest MTU the config implies and every place it was read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverlayMtuEvidence {
    pub expected_guest_mtu: u32,
    pub underlay_mtu: u32,
    pub underlay_family: UnderlayFamily,
    /// Every DHCP_Options row; null when the NB was not read.
    pub dhcp_mtus: Option<Vec<DhcpMtu>>,
    /// Every logical router port's RA settings; null when the NB was not read.
    pub ra_mtus: Option<Vec<RaMtu>>,
    pub taps: Vec<Device>,
    pub underlay_bridge: Option<Device>,
    pub mismatches: Vec<String>,
    /// The NB member that answered.
    pub nb_endpoint: Option<String>,
}

impl Evidence for OverlayMtuEvidence {}

/// How the NB read (`DHCP_Options` and router ports) went.
#[derive(Debug)]
pub enum DhcpFacts {
    Read(Answer<NbGuestMtus>),
    Unreadable(ProbeError),
    /// No NB endpoint is known (no config entry, no flag).
    NotConfigured(String),
}

#[derive(Debug)]
pub struct OverlayFacts {
    pub ipsec_enabled: bool,
    /// The underlay MTU the guest MTU derives from (config, or `--mtu`).
    pub underlay_mtu: u32,
    /// The family of this node's overlay endpoint, and how it is known.
    pub underlay_family: UnderlayFamily,
    pub expected_guest_mtu: u32,
    pub nb_endpoints: Vec<Endpoint>,
    pub dhcp: DhcpFacts,
    pub taps: Vec<Device>,
    /// br-vpc, else br-lan, else br-wan; none on a host without them.
    pub underlay_bridge: Option<Device>,
    pub bridge_ports: Vec<String>,
}

impl Check for OverlayMtu {
    fn id(&self) -> &'static str {
        "mtu.overlay"
    }

    fn title(&self) -> &'static str {
        "DHCP options, VPC taps and the underlay bridge carry the guest MTU the config implies"
    }

    fn explain(&self) -> &'static str {
        // The fix commands are the ones a finding names ([`words`]).
        static EXPLAIN: OnceLock<String> = OnceLock::new();
        EXPLAIN.get_or_init(|| {
            format!(
                "Computes the guest MTU from the config (underlay_mtu - 58, and - 34 more with \
         IPsec: 1442/1408 at 1500, 8942/8908 at 9000; 20 less again when this node's \
         overlay endpoint, its ovn-encap-ip, is IPv6; --mtu overrides the underlay) and \
         compares it with every OVN northbound DHCP_Options row for an IPv4 cidr \
         (options:mtu), every logical router port that sets ipv6_ra_configs:mtu (IPv6 \
         guests learn the MTU from router advertisements: DHCPv6 has no MTU option), read \
         over OVSDB from the ovn_nb_addr raft list or --nb-db, with the MTU of every VPC \
         tap on this host (tap*), and checks that the underlay bridge (br-vpc, else \
         br-lan, else br-wan) is at least underlay_mtu. DHCPv6 rows, and IPv6 subnets \
         whose router port sets no RA MTU, are reported as not judged.\n\
         \n\
         Why: the guest MTU reaches a guest three ways (DHCP or RA, QEMU host_mtu, the \
         tap) and changes when IPsec is turned on or off or the underlay changes. Running \
         guests keep the old value until they are stopped and started (a DHCP lease \
         lasts up to an hour); a guest that believes 1442 on a path that carries 1408 \
         black-holes full-size segments, and a bridge below underlay_mtu drops every \
         full-size geneve packet.\n\
         \n\
         Fix: `{}` (or `{}`) for each row named, raise the bridge (NIC first), then stop \
         and start the guests.",
                words::nbctl("<NB raft endpoints>", &words::set_dhcp_mtu("<uuid>", "N")),
                words::set_ra_mtu("<port>", "N"),
            )
        })
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let expect = match ctx.expectations() {
            Ok(e) => e.clone(),
            Err(f) => return f,
        };
        let underlay_mtu = ctx
            .opts
            .mtu
            .map_or(expect.underlay_mtu, expect::effective_underlay_mtu);
        let underlay_family = peers::underlay_family(ctx);
        let expected_guest_mtu = expect::guest_mtu(
            underlay_mtu,
            expect.ipsec_enabled,
            underlay_family.family.is_ipv6(),
        );
        let (nb_endpoints, dhcp) = match endpoints::nb(ctx) {
            Ok((list, _)) => {
                let budget = endpoints::budget(ctx);
                let dhcp = match ovsdb::nb_guest_mtus(ctx.host(), &list, budget) {
                    Ok(a) => DhcpFacts::Read(a),
                    Err(e) => DhcpFacts::Unreadable(e),
                };
                (list, dhcp)
            }
            Err(f) => (Vec::new(), DhcpFacts::NotConfigured(f.summary)),
        };
        // The taps, the bridge and its ports: one link dump, one moment.
        let dump = match ctx.host().links() {
            Ok(l) => l,
            Err(e) => return e.into(),
        };
        let mut taps: Vec<Device> = dump
            .iter()
            .filter(|l| l.name.starts_with(VPC_TAP_PREFIX))
            .map(|l| Device {
                name: l.name.clone(),
                mtu: l.mtu,
            })
            .collect();
        taps.sort_by(|a, b| a.name.cmp(&b.name));
        let bridge = links::underlay_bridge(&dump);
        let underlay_bridge = bridge.map(|b| Device {
            name: b.name.clone(),
            mtu: b.mtu,
        });
        let bridge_ports = bridge
            .map(|b| links::port_names(&dump, b))
            .unwrap_or_default()
            .into_iter()
            .filter(|p| !spinifex::is_guest_tap(p))
            .collect();
        judge(OverlayFacts {
            ipsec_enabled: expect.ipsec_enabled,
            underlay_mtu,
            underlay_family,
            expected_guest_mtu,
            nb_endpoints,
            dhcp,
            taps,
            underlay_bridge,
            bridge_ports,
        })
    }
}

/// One DHCP_Options row as read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DhcpMtu {
    pub cidr: String,
    pub uuid: String,
    pub mtu: Option<String>,
    /// `ipv4`, or `ipv6` for a DHCPv6 row (no MTU option: not judged).
    pub family: expect::Family,
}

/// One logical router port's router-advertisement settings as read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaMtu {
    pub port: String,
    pub uuid: String,
    pub address_mode: Option<String>,
    pub mtu: Option<String>,
}

/// `mtu.overlay`'s verdict on `facts`.
pub fn judge(facts: OverlayFacts) -> Finding {
    words::finding(&facts, &analyse::analyse(&facts))
}

#[cfg(test)]
mod tests;
