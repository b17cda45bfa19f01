//! `ipsec.policy`: when IPsec is wanted, is every peer's geneve (UDP 6081)
//! covered by IPsec policies in both directions, each with an ESP template
//! an installed SA can satisfy? When it is not wanted, is no geneve policy
//! left?
//!
//! The SA table alone (`ipsec.xfrm`) does not say whether traffic uses it:
//! the policies decide. An SA without a policy carries nothing, and geneve
//! leaves in plaintext beside it; a policy without an SA drops what it
//! selects. The policies are dumped over netlink (`XFRM_MSG_GETPOLICY`,
//! beside the SA dump), never read from `ip xfrm policy`.
//!
//! The layout judged, from ovs-monitor-ipsec's geneve template (Debian's
//! openvswitch-ipsec 3.1.0, the same in OVS's main branch) and measured in
//! the kernel lab on strongSwan 5.9.8: per peer two connections, `-in-`
//! (`leftprotoport=udp/6081`) and `-out-` (`rightprotoport=udp/6081`), so
//! 4 policies per peer: out `src L dst R proto udp dport 6081` and in `src
//! R dst L proto udp dport 6081` carry geneve, plus the matching pair on
//! `sport 6081`. No fwd policy in transport mode; templates carry 0.0.0.0
//! addresses and a reqid, outbound ones the SPI of their SA once it exists.
//! charon's own IKE sockets hold socket policies at priority 0, which are
//! not the system's and are left out.
//!
//! [`analyse`] judges the facts (pure); `words` says it.

mod analyse;
mod words;

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::checks::ipsec_xfrm;
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::finding::Finding;
use crate::metrics::{MetricDef, MetricType, Series};

pub use analyse::{analyse, effective, satisfies, Analysis, Cover, PeerCover, PolicyFacts};
pub use words::describe;

pub struct IpsecPolicy;

crate::kinds! {
    /// What `ipsec.policy` can say, per peer (or leftover policy) and for the check.
    pub enum IpsecPolicyKind for "ipsec.policy" {
        /// IPsec wanted: every peer's geneve, both ways, covered by a policy whose ESP template an installed SA satisfies; not wanted: no policy takes geneve.
        Ok = pass("ok"),
        /// IPsec wanted: policies demand ESP for every peer's geneve both ways, and for some no SA exists yet and nothing waits for one: IKE makes it on the first packet (auto=route).
        Armed = pass("armed"),
        /// IPsec wanted but a peer's geneve, in a direction, is covered by no policy demanding ESP: it is sent (or accepted) in plaintext, beside any SA that would carry it (an SA without a policy), or on a node where IPsec was never set up.
        Plaintext = fail("plaintext"),
        /// A policy demands ESP for a peer's geneve and no SA exists while the kernel waits for one (an ACQUIRE state): IKE pending or failing, every packet dropped.
        NoSa = fail("no-sa"),
        /// A policy demands ESP for a peer's geneve but no installed SA satisfies its template (its SPI is gone, or the SAs are of another reqid or mode): dropped.
        TemplateMismatch = fail("template-mismatch"),
        /// A block policy takes a peer's geneve: dropped.
        Blocked = fail("blocked"),
        /// IPsec is not wanted, yet policies still demand ESP for geneve (or block it): dropped while no IKE daemon answers.
        LeftoverPolicies = fail("leftover-policies"),
    }
}

static DECLARED: Declared = Declared::of::<IpsecPolicyKind, IpsecPolicyEvidence>();

/// The policies as judged, per peer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpsecPolicyEvidence {
    pub ipsec_wanted: bool,
    /// System policies read (sockets' own not counted).
    pub policy_count: usize,
    /// System policies that demand ESP for UDP 6081 traffic (either port):
    /// ovs-monitor-ipsec's layout holds 4 per peer.
    pub geneve_policies: usize,
    /// ESP SAs (larval ACQUIRE states not counted).
    pub sa_count: usize,
    /// Every peer, each direction's cover.
    pub peers: Vec<PeerEntry>,
    /// Where the peers came from, or why the policies and SAs alone were
    /// judged.
    pub peer_source: String,
    /// IPsec not wanted: the policies that still take geneve.
    pub leftover: Vec<String>,
    /// `src->dst` directions of geneve in plaintext.
    pub plaintext: Vec<String>,
    /// `src->dst` directions of geneve a policy drops (no SA, a template no
    /// SA satisfies, a block policy).
    pub dropped: Vec<String>,
}

/// One peer as judged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerEntry {
    pub peer: IpAddr,
    /// This node's geneve to the peer.
    pub out: Cover,
    /// The peer's geneve to this node.
    pub inbound: Cover,
    /// System policies with an end at the peer (host to host, UDP).
    pub policies: usize,
    /// ESP SAs with the peer, either way.
    pub sas: usize,
}

impl PeerEntry {
    /// This node holds IPsec for the peer: a policy or an SA.
    pub fn holds_any(&self) -> bool {
        self.policies > 0 || self.sas > 0
    }
}

static GENEVE_POLICIES: MetricDef = MetricDef {
    name: "spx_doctor_ipsec_geneve_policies",
    help: "IPsec policies that demand ESP for geneve (UDP 6081) on this node; ovs-monitor-ipsec writes 4 per peer.",
    kind: MetricType::Gauge,
    labels: &[],
};
static PLAINTEXT_PEERS: MetricDef = MetricDef {
    name: "spx_doctor_ipsec_plaintext_peers",
    help: "Peers whose geneve this node sends or accepts in plaintext while IPsec is wanted (no policy demands ESP).",
    kind: MetricType::Gauge,
    labels: &[],
};

impl Evidence for IpsecPolicyEvidence {
    const METRICS: &'static [&'static MetricDef] = &[&GENEVE_POLICIES, &PLAINTEXT_PEERS];
    fn series(&self) -> Vec<Series> {
        let plaintext = self
            .peers
            .iter()
            .filter(|p| p.out == Cover::Plaintext || p.inbound == Cover::Plaintext)
            .count();
        vec![
            Series::of(&GENEVE_POLICIES, self.geneve_policies as f64),
            Series::of(&PLAINTEXT_PEERS, plaintext as f64),
        ]
    }
}

impl Check for IpsecPolicy {
    fn id(&self) -> &'static str {
        "ipsec.policy"
    }

    fn title(&self) -> &'static str {
        "Geneve to and from every peer covered by IPsec policies both ways, with SAs that satisfy them"
    }

    fn explain(&self) -> &'static str {
        "Dumps the kernel's IPsec policies and SAs over netlink (XFRM_MSG_GETPOLICY and \
         XFRM_MSG_GETSA, the requests behind `ip xfrm policy` and `ip xfrm state`; needs \
         CAP_NET_ADMIN, else the check skips).\n\
         \n\
         IPsec wanted (ipsec_enabled and more than one node): for every peer, geneve (UDP to \
         port 6081) in both directions must be taken by a policy that demands ESP, and an \
         installed SA must satisfy its template, judged as the kernel does for an unmarked \
         packet (the lowest priority value among the system policies that select it; the \
         SA's ends, mode and reqid, the template's SPI when it names one, the SA's own \
         selector). ovs-monitor-ipsec's layout is 4 policies per peer (`-in-` and `-out-`: \
         out and in on dport 6081, which carry geneve, and the pair on sport 6081), no fwd \
         policy, templates of 0.0.0.0 and a reqid; charon's IKE sockets hold socket \
         policies, left out. No policy demanding ESP: plaintext, a fail naming the peer, \
         whether or not an SA would carry it (an SA without a policy carries nothing). A \
         policy without an SA that can satisfy it: dropped, a fail (no-sa while an ACQUIRE \
         state waits for IKE, template-mismatch when the SA it names is gone or the SAs \
         are of another reqid), except armed: no SA yet and nothing waiting, made on the \
         first packet (a pass). The peers are OVN's southbound Encap IPs minus this node's \
         ovn-encap-ip; when OVN cannot be asked, the other ends of the SAs and policies, \
         which must reach N-1 peers.\n\
         IPsec not wanted: no policy may still demand ESP for geneve (or block it); each \
         one left is named.\n\
         \n\
         Why: in a partial enable (NB_Global ipsec=true while two of three chassis had \
         failed their local setup) one node held policies without SAs and the others held \
         nothing: each node's geneve to the others was dropped or sent in clear, and \
         cross-chassis guest traffic was black-holed for 5.5 minutes while every health \
         signal stayed green. With openvswitch-ipsec not running, geneve went out in \
         plaintext while the tests passed.\n\
         \n\
         Fix: plaintext: `systemctl restart openvswitch-ipsec` (ipsec.daemon says whether \
         it and charon run), then `ip xfrm policy` lists 4 per peer. no-sa: the peer's \
         daemons and the CA in charon's trust store (ipsec.xfrm's ike-pending). \
         template-mismatch: restart openvswitch-ipsec on both nodes of the pair. \
         Leftover: stop openvswitch-ipsec and charon, then `ip xfrm policy flush`."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let expect = match ctx.expectations() {
            Ok(e) => e.clone(),
            Err(f) => return f,
        };
        let bound = ipsec_xfrm::dump_bound(ctx);
        let policies = match ctx.host().xfrm_policies(bound) {
            Ok(p) => p,
            Err(e) => return e.into(),
        };
        let states = match ctx.host().xfrm_states(bound) {
            Ok(s) => s,
            Err(e) => return e.into(),
        };
        let peers = ipsec_xfrm::peers_to_judge(ctx, expect.ipsec_wanted);
        judge(&PolicyFacts {
            ipsec_wanted: expect.ipsec_wanted,
            node_count: expect.node_count,
            states,
            policies,
            peers,
            local_addresses: ctx.host().addresses().unwrap_or_default(),
        })
    }
}

/// The verdict on `facts`: [`analyse`]d, then said (`words::finding`).
pub fn judge(facts: &PolicyFacts) -> Finding {
    words::finding(facts, &analyse(facts))
}

#[cfg(test)]
mod tests;
