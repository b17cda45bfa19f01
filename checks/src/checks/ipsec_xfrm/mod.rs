//! `ipsec.xfrm`: does the kernel hold the ESP security associations the
//! config implies: geneve encrypted with `rfc4106(gcm(aes))` both ways with
//! every peer (or armed to be, on first traffic) when IPsec is wanted, no
//! ESP state at all when it is not?
//!
//! The SA table is the ground truth of encryption. A node missing SAs to a
//! peer drops or sends in clear what the control plane believes encrypted;
//! SAs left after turning IPsec off mean charon is still running and the
//! guest path still pays ESP's 34 bytes. Neither shows anywhere else. The
//! SAs and policies are dumped over netlink (`XFRM_MSG_GETSA`,
//! `XFRM_MSG_GETPOLICY`), not read from `ip xfrm`.
//!
//! How strongSwan really holds them, configured by ovs-monitor-ipsec
//! (measured on Debian's 5.9.8 with openvswitch-ipsec 3.1.0, the kernel lab
//! in `tests/kernel_lab/strongswan.rs`): per peer two connections, `-in-`
//! (this node's UDP 6081) and `-out-` (the peer's), `auto=route`. Until the
//! first geneve packet a node holds only their trap policies; then one IKE
//! SA carries two CHILD_SAs, 4 ESP SAs per peer, each with a port in its
//! selector: this node's geneve leaves on `dport 6081` out, the peer's
//! arrives on `dport 6081` in, and the two `sport 6081` SAs stay idle. A
//! packet a policy wants encrypted while no SA exists leaves an ACQUIRE
//! (larval) state: SPI 0, no algorithm, the packet dropped.
//!
//! [`analyse`] judges the facts (pure); `words` says it.

pub(crate) mod analyse;
mod words;

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::facts::xfrm::{SecurityAssociation, XfrmPolicy};
use crate::finding::Finding;
use crate::metrics::{MetricDef, MetricType, Series};
use crate::targets::peers;

pub use analyse::{analyse, Analysis, Leg, PeerState, Problem};

pub struct IpsecXfrm;

crate::kinds! {
    /// What `ipsec.xfrm` can say, per peer or SA pair and for the check.
    pub enum IpsecXfrmKind for "ipsec.xfrm" {
        /// IPsec wanted: geneve to and from every peer carried by rfc4106(gcm(aes)) ESP SAs (ovs-monitor-ipsec's layout: 4 per peer); not wanted: no ESP state at all.
        Ok = pass("ok"),
        /// IPsec wanted and armed: for peers without SAs yet, policies demand ESP for their geneve and IKE makes the SAs on the first packet (ovs-monitor-ipsec's auto=route); nothing was sent to them yet, so nothing was lost.
        Armed = pass("armed"),
        /// ESP SAs remain although IPsec is not wanted (charon is still running and the guest path still pays ESP's 34 bytes), or a policy still demands ESP and the kernel drops what it sends waiting for keys.
        LeftoverSas = fail("leftover-sas"),
        /// IKE pending or failing toward a peer: the kernel holds an ACQUIRE (larval) state for it, SPI 0 and no keys, waits for the IKE daemon and drops what it sends (the peer's IPsec daemons are down, or one end does not trust the other's certificate).
        IkePending = fail("ike-pending"),
        /// IPsec is wanted but a peer's geneve, in one direction, has no SA: nothing demands one (sent in clear, or the policies could not be read), or it was removed behind the IKE daemon's back (the rest of its CHILD_SA is here: dropped); or SAs fall short of 2x(N-1) with peers unaccounted for.
        MissingSas = fail("missing-sas"),
        /// An ESP SA uses another algorithm than the rfc4106(gcm(aes)) OVN negotiates: an IKE configuration OVN does not own.
        WrongAlgorithm = fail("wrong-algorithm"),
        /// Every peer is covered, but an SA involves an address that is not a current peer (a removed node?).
        StaleSas = warn("stale-sas"),
    }
}

static DECLARED: Declared = Declared::of::<IpsecXfrmKind, IpsecXfrmEvidence>();

/// The SA table as judged: how many ESP SAs, which, and what is missing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpsecXfrmEvidence {
    /// ESP SAs with keys (larval ACQUIRE states are not SAs).
    pub sa_count: usize,
    /// 2x(N-1) when IPsec is wanted, else 0: the floor with every peer up.
    pub expected_min: usize,
    /// 4x(N-1) when IPsec is wanted, else 0: ovs-monitor-ipsec's layout
    /// with every peer up.
    #[serde(default)]
    pub expected: usize,
    pub algorithms: BTreeSet<String>,
    /// Every ESP SA (never the keys).
    pub sas: Vec<SaEntry>,
    /// `src->dst` directions of geneve without an SA that are not armed
    /// (nothing demands one, or IKE is pending).
    pub missing_pairs: Vec<String>,
    /// SA pairs that involve an address that is not a current peer.
    #[serde(default)]
    pub stale_pairs: Vec<String>,
    /// The ACQUIRE (larval) states: packets waiting for keys.
    #[serde(default)]
    pub pending: Vec<PendingEntry>,
    /// Peers toward which IKE is pending or failing.
    #[serde(default)]
    pub pending_peers: Vec<IpAddr>,
    /// Peers with a direction of geneve armed (a policy demands ESP) but
    /// no SA yet.
    #[serde(default)]
    pub armed_peers: Vec<IpAddr>,
    /// IPsec policies read (sockets' own, such as charon's IKE sockets, not
    /// counted); null when they could not be read.
    #[serde(default)]
    pub policy_count: Option<usize>,
    /// Why the policies could not be read.
    #[serde(default)]
    pub policy_error: Option<String>,
    /// The peers SAs are expected with; null when OVN could not be asked.
    #[serde(default)]
    pub peers: Option<Vec<IpAddr>>,
    /// Where the peers came from, or why the SAs alone were judged.
    #[serde(default)]
    pub peer_source: String,
}

// Was `spx_doctor_esp_sa_count`, which promtool refuses (a `_count`
// suffix belongs to histograms and summaries).
static ESP_SAS: MetricDef = MetricDef {
    name: "spx_doctor_esp_security_associations",
    help: "ESP security associations this node holds (larval ACQUIRE states not counted).",
    kind: MetricType::Gauge,
    labels: &[],
};

static PENDING: MetricDef = MetricDef {
    name: "spx_doctor_ipsec_ike_pending_peers",
    help: "Peers toward which the kernel holds an ACQUIRE state: IKE pending or failing, packets dropped.",
    kind: MetricType::Gauge,
    labels: &[],
};

impl Evidence for IpsecXfrmEvidence {
    const METRICS: &'static [&'static MetricDef] = &[&ESP_SAS, &PENDING];
    fn series(&self) -> Vec<Series> {
        vec![
            Series::of(&ESP_SAS, self.sa_count as f64),
            Series::of(&PENDING, self.pending_peers.len() as f64),
        ]
    }
}

/// The AEAD OVN's IPsec negotiates (IKE `aes_gcm128`; ovs-monitor-ipsec's
/// `esp=aes256gcm16` is the same transform with a longer key).
pub const OVN_ALGORITHM: &str = "rfc4106(gcm(aes))";

/// The port geneve is sent to.
pub const GENEVE_PORT: u16 = 6081;

/// Who this node should have SAs with.
#[derive(Clone, Debug, PartialEq)]
pub enum PeerView {
    /// From OVN: SB `Encap.ip` minus the local `ovn-encap-ip`.
    Known {
        local: Vec<IpAddr>,
        peers: Vec<IpAddr>,
        source: String,
    },
    /// OVN could not be asked; the peers are the other ends of the SAs and
    /// policies themselves.
    Unknown { why: String },
}

#[derive(Clone, Debug, PartialEq)]
pub struct XfrmFacts {
    pub ipsec_wanted: bool,
    pub node_count: usize,
    /// 2×(N−1) when wanted, else 0 (`expect::expected_sa_count`).
    pub expected_min: usize,
    /// Every state the kernel holds (ESP and other protocols, larval ones
    /// included).
    pub states: Vec<SecurityAssociation>,
    /// Every policy, or why they could not be read.
    pub policies: Result<Vec<XfrmPolicy>, String>,
    pub peers: PeerView,
    /// This host's own addresses: an SA from one is outbound, to one
    /// inbound (the `direction` of each entry in the `sas` evidence).
    pub local_addresses: Vec<IpAddr>,
    /// The preferred source of the route to a peer (`RTM_GETROUTE`), asked
    /// only for the peers no state, policy or ovn-encap-ip places this
    /// node's end of (`analyse::local_toward`).
    pub route_sources: BTreeMap<IpAddr, IpAddr>,
}

/// One ESP SA as the evidence lists it, for `cluster.sa-pairs`: never the
/// keys.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SaEntry {
    pub src: IpAddr,
    pub dst: IpAddr,
    /// `0x` and 8 hex digits, as `ip xfrm state` writes it.
    pub spi: String,
    pub algorithm: Option<String>,
    pub direction: SaDirection,
    /// This node's id of the CHILD_SA (its connection's): the two ends of
    /// one CHILD_SA share its SPIs, each with its own reqid. 0 in reports
    /// of doctors that did not say.
    #[serde(default)]
    pub reqid: u32,
    /// The traffic it carries, as `ip xfrm state`'s `sel` names protocol
    /// and ports (`udp dport 6081`, or `any`); null when not reported.
    #[serde(default)]
    pub selector: Option<String>,
    /// Bytes it carried so far (`ip -s xfrm state`); the `sport 6081` SAs
    /// of ovs-monitor-ipsec's layout stay at 0.
    #[serde(default)]
    pub bytes: Option<u64>,
}

/// One ACQUIRE (larval) state: the kernel waits for keys for this packet's
/// flow and drops what it would carry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingEntry {
    pub src: IpAddr,
    pub dst: IpAddr,
    /// The connection's reqid (the policy's template).
    pub reqid: u32,
    /// The packet's protocol and ports (`udp sport 24300 dport 6081`).
    pub selector: Option<String>,
}

/// Which way an SA points, seen from the host that holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SaDirection {
    /// From this host.
    Out,
    /// To this host.
    In,
    /// Neither end is this host's.
    Other,
}

/// The ESP SAs of `states` (larval states left out), each with its
/// direction seen from this host.
pub fn sa_entries(states: &[SecurityAssociation], local: &[IpAddr]) -> Vec<SaEntry> {
    states
        .iter()
        .filter(|s| s.is_esp_sa())
        .map(|s| SaEntry {
            src: s.src,
            dst: s.dst,
            spi: format!("0x{:08x}", s.spi),
            algorithm: s.algorithm.clone(),
            direction: if local.contains(&s.src) {
                SaDirection::Out
            } else if local.contains(&s.dst) {
                SaDirection::In
            } else {
                SaDirection::Other
            },
            reqid: s.reqid,
            selector: Some(
                s.selector
                    .as_ref()
                    .map_or_else(|| "any".to_owned(), |sel| sel.ports_text()),
            ),
            bytes: Some(s.bytes),
        })
        .collect()
}

/// The larval states of `states`, as the evidence lists them.
pub fn pending_entries(states: &[SecurityAssociation]) -> Vec<PendingEntry> {
    states
        .iter()
        .filter(|s| s.is_esp() && s.larval)
        .map(|s| PendingEntry {
            src: s.src,
            dst: s.dst,
            reqid: s.reqid,
            selector: s.selector.as_ref().map(|sel| sel.ports_text()),
        })
        .collect()
}

impl Check for IpsecXfrm {
    fn id(&self) -> &'static str {
        "ipsec.xfrm"
    }

    fn title(&self) -> &'static str {
        "ESP SAs (or their armed policies) for every peer when IPsec is wanted, none when it is not"
    }

    fn explain(&self) -> &'static str {
        // What it reads and why, then the fixes the findings give, quoted.
        static EXPLAIN: LazyLock<String> = LazyLock::new(|| {
            format!(
                "{}\n\n{}",
                "Dumps the kernel's IPsec security associations and policies over netlink \
                 (XFRM_MSG_GETSA and XFRM_MSG_GETPOLICY, the requests behind `ip xfrm state` and \
                 `ip xfrm policy`; needs CAP_NET_ADMIN, else the check skips).\n\
                 \n\
                 IPsec wanted (ipsec_enabled and more than one node): for every peer, geneve (UDP \
                 6081) in both directions must be carried by an ESP SA with `rfc4106(gcm(aes))`, or \
                 be armed: a policy demands ESP for it and IKE makes the SA on the first packet \
                 (ovs-monitor-ipsec writes `auto=route`, so an idle pair holds no SA; armed peers \
                 are named and pass). ovs-monitor-ipsec's layout is 4 SAs per peer, 4x(N-1): two \
                 connections (`-in-`, `-out-`), each a CHILD_SA of two SAs, whose `sport 6081` SAs \
                 stay idle; 2x(N-1) is the floor. An ACQUIRE (larval) state (SPI 0, no algorithm) \
                 is no SA: the kernel waits for keys toward that peer and drops what it sends, so \
                 IKE is pending or failing and the peer is named. The peers are OVN's southbound \
                 Encap IPs minus this node's ovn-encap-ip; when OVN cannot be asked, the other \
                 ends of the SAs and policies, which must reach N-1 peers. An SA to an address \
                 that is no longer a peer is a warning.\n\
                 IPsec not wanted: no ESP state at all.\n\
                 \n\
                 Why: the SA table is what actually encrypts. A node without SAs to a peer \
                 cannot reach it over the encrypted overlay (or talks to it in clear), and SAs \
                 left after turning IPsec off mean charon is still running: the control plane \
                 says one thing and the kernel does another, and nothing else shows it.",
                words::explain_fixes()
            )
        });
        &EXPLAIN
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let expect = match ctx.expectations() {
            Ok(e) => e.clone(),
            Err(f) => return f,
        };
        let bound = dump_bound(ctx);
        let states = match ctx.host().xfrm_states(bound) {
            Ok(s) => s,
            Err(e) => return e.into(),
        };
        let policies = ctx.host().xfrm_policies(bound).map_err(|e| e.to_string());
        let peers = peers_to_judge(ctx, expect.ipsec_wanted);
        let mut facts = XfrmFacts {
            ipsec_wanted: expect.ipsec_wanted,
            node_count: expect.node_count,
            expected_min: expect.esp_sa_min,
            states,
            policies,
            peers,
            // Unreadable addresses leave every SA's direction `other`:
            // cluster.sa-pairs then cannot attribute them, and says so.
            local_addresses: ctx.host().addresses().unwrap_or_default(),
            route_sources: BTreeMap::new(),
        };
        // This node's end toward a peer the tables do not place: the
        // route's preferred source, as the kernel would pick it.
        for p in analyse(&facts).peers.iter().filter(|p| p.local.is_none()) {
            if let Ok(Some(src)) = ctx.host().route(p.peer, None).map(|r| r.preferred_source) {
                facts.route_sources.insert(p.peer, src);
            }
        }
        judge(&facts)
    }
}

/// How long one xfrm dump may take: the probe timeout, at least a second,
/// never past the deadline.
pub(crate) fn dump_bound(ctx: &Ctx) -> std::time::Duration {
    ctx.bounded(
        ctx.opts
            .probe_timeout
            .max(std::time::Duration::from_secs(1)),
    )
}

/// The peers to judge: OVN's ([`gather_peers`]) when IPsec is wanted, none
/// asked when it is not. `ipsec.policy` judges the same ones.
pub(crate) fn peers_to_judge(ctx: &Ctx, ipsec_wanted: bool) -> PeerView {
    if ipsec_wanted {
        gather_peers(ctx)
    } else {
        PeerView::Unknown {
            why: "not needed: IPsec is not wanted".into(),
        }
    }
}

/// The peers IPsec must cover: the other chassis' tunnel addresses, read
/// by peer discovery's own SB source ([`peers::sb_encap_ips`]), less this
/// node's ovn-encap-ip.
fn gather_peers(ctx: &Ctx) -> PeerView {
    let unknown = |why: String| PeerView::Unknown { why };
    let local = match peers::local_encap(ctx) {
        Ok((ips, _)) if !ips.is_empty() => ips,
        Ok((_, ovs)) => return unknown(format!("{ovs} has no external_ids:ovn-encap-ip")),
        Err(e) => return unknown(e),
    };
    match peers::sb_encap_ips(ctx) {
        Ok((ips, endpoint)) => PeerView::Known {
            peers: ips.into_iter().filter(|ip| !local.contains(ip)).collect(),
            local,
            source: format!("OVN_Southbound Encap at {endpoint}"),
        },
        Err(e) => unknown(e),
    }
}

/// The verdict on `facts`: [`analyse`]d, then said (`words::finding`).
pub fn judge(facts: &XfrmFacts) -> Finding {
    words::finding(facts, &analyse(facts))
}

#[cfg(test)]
pub(crate) mod tests;
