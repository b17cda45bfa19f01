//! `ipsec.xfrm`: does the kernel hold the ESP security associations the
//! config implies: one per peer per direction with `rfc4106(gcm(aes))` when
//! IPsec is wanted, none at all when it is not?
//!
//! The SA table is the ground truth of encryption. A node missing SAs to a
//! peer drops or sends in clear what the control plane believes encrypted;
//! SAs left after turning IPsec off mean charon is still running and the
//! guest path still pays ESP's 34 bytes. Neither shows anywhere else. The
//! SAs are dumped over netlink (`XFRM_MSG_GETSA`), not read from `ip xfrm`.

use std::collections::BTreeSet;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::finding::{Finding, Subject};
use crate::kind::most_severe;
use crate::metrics::{MetricDef, MetricType, Series};
use crate::probe::peers;
use crate::probe::xfrm::SecurityAssociation;

pub struct IpsecXfrm;

crate::kinds! {
    /// What `ipsec.xfrm` can say, per peer or SA pair and for the check.
    pub enum IpsecXfrmKind for "ipsec.xfrm" {
        /// IPsec wanted: rfc4106(gcm(aes)) ESP SAs in both directions for every peer; not wanted: no ESP SA at all.
        Ok = pass("ok"),
        /// ESP SAs remain although IPsec is not wanted: charon is still running and the guest path still pays ESP's 34 bytes.
        LeftoverSas = fail("leftover-sas"),
        /// IPsec is wanted but SAs are missing: fewer than 2x(N-1), or a peer without an SA in one direction (that traffic is dropped or sent in clear).
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
    pub sa_count: usize,
    /// 2x(N-1) when IPsec is wanted, else 0.
    pub expected_min: usize,
    pub algorithms: BTreeSet<String>,
    /// Every ESP SA (never the keys).
    pub sas: Vec<SaEntry>,
    /// `src->dst` pairs without an SA.
    pub missing_pairs: Vec<String>,
    /// SA pairs that involve an address that is not a current peer.
    #[serde(default)]
    pub stale_pairs: Vec<String>,
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
    help: "ESP security associations this node holds.",
    kind: MetricType::Gauge,
    labels: &[],
};

impl Evidence for IpsecXfrmEvidence {
    const METRICS: &'static [&'static MetricDef] = &[&ESP_SAS];
    fn series(&self) -> Vec<Series> {
        vec![Series::of(&ESP_SAS, self.sa_count as f64)]
    }
}

/// The AEAD OVN's IPsec negotiates (IKE `aes_gcm128`).
pub const OVN_ALGORITHM: &str = "rfc4106(gcm(aes))";

/// Who this node should have SAs with.
#[derive(Clone, Debug, PartialEq)]
pub enum PeerView {
    /// From OVN: SB `Encap.ip` minus the local `ovn-encap-ip`.
    Known {
        local: Vec<IpAddr>,
        peers: Vec<IpAddr>,
        source: String,
    },
    /// OVN could not be asked; pairs are judged from the SAs themselves.
    Unknown { why: String },
}

#[derive(Clone, Debug, PartialEq)]
pub struct XfrmFacts {
    pub ipsec_wanted: bool,
    pub node_count: usize,
    /// 2×(N−1) when wanted, else 0 (`expect::expected_sa_count`).
    pub expected_min: usize,
    /// Every SA the kernel holds (ESP and other protocols).
    pub states: Vec<SecurityAssociation>,
    pub peers: PeerView,
    /// This host's own addresses: an SA from one is outbound, to one
    /// inbound (the `direction` of each entry in the `sas` evidence).
    pub local_addresses: Vec<IpAddr>,
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

/// The ESP SAs of `states`, each with its direction seen from this host.
pub fn sa_entries(states: &[SecurityAssociation], local: &[IpAddr]) -> Vec<SaEntry> {
    states
        .iter()
        .filter(|s| s.is_esp())
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
        })
        .collect()
}

impl Check for IpsecXfrm {
    fn id(&self) -> &'static str {
        "ipsec.xfrm"
    }

    fn title(&self) -> &'static str {
        "ESP SAs to every peer when IPsec is wanted, none when it is not"
    }

    fn explain(&self) -> &'static str {
        "Dumps the kernel's IPsec security associations over netlink (XFRM_MSG_GETSA, \
         the request behind `ip xfrm state`; needs CAP_NET_ADMIN, else the check skips) \
         and counts the ESP ones.\n\
         \n\
         IPsec wanted (ipsec_enabled and more than one node): at least 2x(N-1) ESP SAs \
         for N nodes, one per peer per direction, each `rfc4106(gcm(aes))`. The peers are \
         OVN's southbound Encap IPs minus this node's ovn-encap-ip; when OVN cannot be \
         asked, every SA must have its reverse and the SAs must reach N-1 peers. Missing \
         pairs are named. An SA to an address that is no longer a peer is a warning.\n\
         IPsec not wanted: exactly 0 ESP SAs.\n\
         \n\
         Why: the SA table is what actually encrypts. A node without SAs to a peer \
         cannot reach it over the encrypted overlay (or talks to it in clear), and SAs \
         left after turning IPsec off mean charon is still running: the control plane \
         says one thing and the kernel does another, and nothing else shows it.\n\
         \n\
         Fix: missing SAs: `systemctl restart openvswitch-ipsec` and check UDP 500/4500 \
         and ESP between the nodes. Leftover SAs: stop openvswitch-ipsec and charon, \
         then `ip xfrm state flush proto esp`."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let expect = match ctx.expectations() {
            Ok(e) => e.clone(),
            Err(f) => return f,
        };
        let states = match ctx.host().xfrm_states(
            ctx.bounded(
                ctx.opts
                    .probe_timeout
                    .max(std::time::Duration::from_secs(1)),
            ),
        ) {
            Ok(s) => s,
            Err(e) => return e.into(),
        };
        let peers = if expect.ipsec_wanted {
            gather_peers(ctx)
        } else {
            PeerView::Unknown {
                why: "not needed: IPsec is not wanted".into(),
            }
        };
        judge(&XfrmFacts {
            ipsec_wanted: expect.ipsec_wanted,
            node_count: expect.node_count,
            expected_min: expect.esp_sa_min,
            states,
            peers,
            // Unreadable addresses leave every SA's direction `other`:
            // cluster.sa-pairs then cannot attribute them, and says so.
            local_addresses: ctx.host().addresses().unwrap_or_default(),
        })
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

fn arrow(a: impl std::fmt::Display, b: impl std::fmt::Display) -> String {
    format!("{a}->{b}")
}

pub fn judge(facts: &XfrmFacts) -> Finding {
    let esp: Vec<&SecurityAssociation> = facts.states.iter().filter(|s| s.is_esp()).collect();
    let count = esp.len();
    let algorithms: BTreeSet<String> = esp
        .iter()
        .map(|s| s.algorithm.clone().unwrap_or_else(|| "none".into()))
        .collect();
    let evidence =
        |missing_pairs: Vec<String>, stale_pairs, peers, peer_source| IpsecXfrmEvidence {
            sa_count: count,
            expected_min: facts.expected_min,
            algorithms: algorithms.clone(),
            sas: sa_entries(&facts.states, &facts.local_addresses),
            missing_pairs,
            stale_pairs,
            peers,
            peer_source,
        };

    if !facts.ipsec_wanted {
        let pairs: BTreeSet<String> = esp.iter().map(|s| arrow(s.src, s.dst)).collect();
        let f = if count == 0 {
            Finding::new(
                IpsecXfrmKind::Ok,
                "no ESP SAs, as expected with IPsec not wanted",
            )
        } else {
            Finding::new(
                IpsecXfrmKind::LeftoverSas,
                format!(
                    "{count} ESP SAs remain although IPsec is not wanted (charon still running?): {}",
                    pairs.iter().cloned().collect::<Vec<_>>().join(", ")
                ),
            )
            .fixes([
                "on this node: `systemctl stop openvswitch-ipsec` and stop charon (`systemctl stop strongswan-starter`, or `strongswan` where charon-systemd runs)",
                "`ip xfrm state flush proto esp` and `ip xfrm policy flush` (removes every ESP SA and IPsec policy on this node: only when nothing else here uses IPsec)",
                "then `spx doctor --check ipsec.xfrm,ipsec.flags` must pass: while NB_Global.ipsec or ipsec_encapsulation still read true, the IPsec daemons set the SAs up again",
            ])
        };
        let subjects = pairs.iter().map(|p| {
            Subject::new(
                IpsecXfrmKind::LeftoverSas,
                p,
                "an ESP SA with IPsec not wanted",
            )
        });
        let why = match &facts.peers {
            PeerView::Unknown { why } => why.clone(),
            PeerView::Known { source, .. } => source.clone(),
        };
        return f
            .evidence(&evidence(Vec::new(), Vec::new(), None, why))
            .subjects(subjects);
    }

    let present: BTreeSet<(IpAddr, IpAddr)> = esp.iter().map(|s| (s.src, s.dst)).collect();
    let mut missing = Vec::new();
    let mut stale = Vec::new();
    let mut problems = Vec::new();
    let mut problem_kinds = Vec::new();
    let mut subjects = Vec::new();
    let (peer_source, peer_list) = match &facts.peers {
        PeerView::Known {
            local,
            peers,
            source,
        } => {
            for p in peers {
                let same_family: Vec<&IpAddr> = local
                    .iter()
                    .filter(|l| l.is_ipv4() == p.is_ipv4())
                    .collect();
                let out = present.iter().any(|(s, d)| d == p && local.contains(s));
                let inb = present.iter().any(|(s, d)| s == p && local.contains(d));
                let me = same_family
                    .first()
                    .map_or("this-node".to_owned(), |l| l.to_string());
                let gone: Vec<&str> = [(out, "outbound"), (inb, "inbound")]
                    .into_iter()
                    .filter(|(held, _)| !held)
                    .map(|(_, dir)| dir)
                    .collect();
                if !out {
                    missing.push(arrow(&me, p));
                }
                if !inb {
                    missing.push(arrow(p, &me));
                }
                subjects.push(if gone.is_empty() {
                    Subject::new(IpsecXfrmKind::Ok, p.to_string(), "an SA in both directions")
                } else {
                    Subject::new(
                        IpsecXfrmKind::MissingSas,
                        p.to_string(),
                        format!("no {} SA", gone.join(" and no ")),
                    )
                });
            }
            for (s, d) in &present {
                let remote = if local.contains(s) {
                    Some(d)
                } else if local.contains(d) {
                    Some(s)
                } else {
                    None
                };
                if remote.is_none_or(|r| !peers.contains(r)) {
                    stale.push(arrow(s, d));
                }
            }
            (source.clone(), Some(peers.clone()))
        }
        PeerView::Unknown { why } => {
            for (s, d) in &present {
                if !present.contains(&(*d, *s)) {
                    missing.push(arrow(d, s));
                    subjects.push(Subject::new(
                        IpsecXfrmKind::MissingSas,
                        arrow(d, s),
                        format!("no SA, though {} has one", arrow(s, d)),
                    ));
                }
            }
            let pairs: BTreeSet<(IpAddr, IpAddr)> = present
                .iter()
                .map(|(s, d)| if s <= d { (*s, *d) } else { (*d, *s) })
                .collect();
            let want = facts.node_count.saturating_sub(1);
            if pairs.len() < want {
                problems.push(format!(
                    "SAs reach {} peer pairs, the config has {} nodes ({want} peers)",
                    pairs.len(),
                    facts.node_count
                ));
            }
            (format!("the SAs themselves (OVN not asked: {why})"), None)
        }
    };
    if count < facts.expected_min {
        problems.insert(
            0,
            format!(
                "{count} ESP SAs, fewer than 2x({}-1) = {}",
                facts.node_count, facts.expected_min
            ),
        );
    }
    if !problems.is_empty() || !missing.is_empty() {
        problem_kinds.push(IpsecXfrmKind::MissingSas);
    }
    if !missing.is_empty() {
        problems.push(format!("missing {}", missing.join(", ")));
    }
    let wrong_alg: BTreeSet<String> = esp
        .iter()
        .filter(|s| s.algorithm.as_deref() != Some(OVN_ALGORITHM))
        .map(|s| {
            format!(
                "{} uses {}",
                arrow(s.src, s.dst),
                s.algorithm.as_deref().unwrap_or("no encryption")
            )
        })
        .collect();
    for s in esp
        .iter()
        .filter(|s| s.algorithm.as_deref() != Some(OVN_ALGORITHM))
    {
        subjects.push(Subject::new(
            IpsecXfrmKind::WrongAlgorithm,
            arrow(s.src, s.dst),
            format!(
                "uses {}, not {OVN_ALGORITHM}",
                s.algorithm.as_deref().unwrap_or("no encryption")
            ),
        ));
    }
    for p in &stale {
        subjects.push(Subject::new(
            IpsecXfrmKind::StaleSas,
            p,
            "not a current peer's SA",
        ));
    }
    if !wrong_alg.is_empty() {
        problem_kinds.push(IpsecXfrmKind::WrongAlgorithm);
        problems.push(format!(
            "not {OVN_ALGORITHM}: {}",
            wrong_alg.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let finding = if let Some(kind) = most_severe(problem_kinds) {
        let mut f = Finding::new(
            kind,
            format!("IPsec is wanted but {}", problems.join("; ")),
        )
        .fixes([
            "on this node: `systemctl restart openvswitch-ipsec` (ovs-monitor-ipsec rewrites the IKE config and re-initiates every tunnel)",
            "`ovs-appctl -t ovs-monitor-ipsec tunnels/show` lists the tunnels it should have; `swanctl --list-sas` (or `ipsec statusall`) shows which came up",
            "on the peers named: run `spx doctor --check ipsec.flags,ipsec.xfrm` there too; IKE (UDP 500, 4500) and ESP (IP protocol 50) must pass between the nodes' underlay addresses",
        ]);
        if !wrong_alg.is_empty() {
            f = f.fix(format!(
                "OVN negotiates {OVN_ALGORITHM} (IKE aes_gcm128): SAs with other algorithms come from an IKE configuration OVN does not own (check /etc/ipsec.conf, /etc/swanctl/)"
            ));
        }
        f
    } else if !stale.is_empty() {
        Finding::new(
            IpsecXfrmKind::StaleSas,
            format!(
                "{count} ESP SAs cover every peer, but {} involve addresses that are not current peers (a removed node?): {}",
                stale.len(),
                stale.join(", ")
            ),
        )
        .fix("if that node is gone for good: `systemctl restart openvswitch-ipsec` on this node drops its SAs")
    } else {
        Finding::new(
            IpsecXfrmKind::Ok,
            format!(
                "{count} ESP SAs ({OVN_ALGORITHM}), both directions for every peer (at least {} expected)",
                facts.expected_min
            ),
        )
    };
    finding
        .evidence(&evidence(missing, stale, peer_list, peer_source))
        .subjects(subjects)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Status;
    use crate::probe::xfrm::parse_dump;

    /// One `XFRM_MSG_NEWSA` as the kernel sends it in a dump, laid out by
    /// hand from include/uapi/linux/xfrm.h (xfrm_usersa_info, 224 bytes, then
    /// XFRMA_ALG_AEAD, XFRMA_LTIME_VAL, XFRMA_REPLAY_VAL, XFRMA_LASTUSED), so
    /// the crate's parser is held to the kernel ABI, not to itself. Built,
    /// not captured: the kernel here (6.18, CONFIG_INET_ESP unset) cannot
    /// hold ESP states.
    pub(crate) fn newsa(src: &str, dst: &str, spi: u32, aead: Option<&str>) -> Vec<u8> {
        let (src, dst): (IpAddr, IpAddr) = (src.parse().unwrap(), dst.parse().unwrap());
        let addr = |ip: IpAddr| -> [u8; 16] {
            let mut a = [0u8; 16];
            match ip {
                IpAddr::V4(v4) => a[..4].copy_from_slice(&v4.octets()),
                IpAddr::V6(v6) => a = v6.octets(),
            }
            a
        };
        let family: u16 = if src.is_ipv4() { 2 } else { 10 };
        let mut info = vec![0u8; 224];
        // selector: daddr, saddr, family (the kernel fills them for transport SAs)
        info[0..16].copy_from_slice(&addr(dst));
        info[16..32].copy_from_slice(&addr(src));
        info[40..42].copy_from_slice(&family.to_ne_bytes());
        // id: daddr, spi (network order), proto ESP
        info[56..72].copy_from_slice(&addr(dst));
        info[72..76].copy_from_slice(&spi.to_be_bytes());
        info[76] = 50;
        info[80..96].copy_from_slice(&addr(src));
        // lifetime_cfg: soft/hard byte and packet limits "infinite"
        for i in 0..4 {
            info[96 + i * 8..104 + i * 8].copy_from_slice(&u64::MAX.to_ne_bytes());
        }
        info[208..212].copy_from_slice(&1u32.to_ne_bytes()); // reqid
        info[212..214].copy_from_slice(&family.to_ne_bytes());
        info[214] = 0; // transport
        info[215] = 32; // replay window
        let mut attrs = Vec::new();
        let mut nla = |kind: u16, payload: &[u8]| {
            let len = 4 + payload.len();
            attrs.extend_from_slice(&(len as u16).to_ne_bytes());
            attrs.extend_from_slice(&kind.to_ne_bytes());
            attrs.extend_from_slice(payload);
            attrs.resize(attrs.len().next_multiple_of(4), 0);
        };
        if let Some(name) = aead {
            let mut p = vec![0u8; 64];
            p[..name.len()].copy_from_slice(name.as_bytes());
            p.extend_from_slice(&160u32.to_ne_bytes()); // key bits: 128 + 32 salt
            p.extend_from_slice(&128u32.to_ne_bytes()); // icv bits
            p.extend_from_slice(&[0x11; 20]);
            nla(18, &p);
        } else {
            let mut p = vec![0u8; 64];
            p[..8].copy_from_slice(b"cbc(aes)");
            p.extend_from_slice(&128u32.to_ne_bytes());
            p.extend_from_slice(&[0x22; 16]);
            nla(2, &p);
        }
        nla(9, &[0u8; 32]); // XFRMA_LTIME_VAL: xfrm_lifetime_cur
        nla(10, &[0u8; 12]); // XFRMA_REPLAY_VAL: xfrm_replay_state
        nla(15, &0u64.to_ne_bytes()); // XFRMA_LASTUSED
        let mut msg = Vec::new();
        let len = 16 + info.len() + attrs.len();
        msg.extend_from_slice(&(len as u32).to_ne_bytes());
        msg.extend_from_slice(&0x10u16.to_ne_bytes()); // XFRM_MSG_NEWSA
        msg.extend_from_slice(&0x2u16.to_ne_bytes()); // NLM_F_MULTI
        msg.extend_from_slice(&1u32.to_ne_bytes());
        msg.extend_from_slice(&0x5d4bu32.to_ne_bytes());
        msg.extend(info);
        msg.extend(attrs);
        msg
    }

    // captured on Debian 12, kernel 6.18: the end of an XFRM_MSG_GETSA dump
    // (NLMSG_DONE), as root.
    pub(crate) const DONE: &str = "1400000003000200010000004b5d000000000000";
    // captured on the same host as uid 65534: the kernel's EPERM answer.
    const EPERM: &str = "240000000200000001000000845d0000ffffffff10000000120001030100000000000000";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// This node 198.18.0.1 in a cluster of `nodes`, full mesh of GCM SAs.
    fn mesh(nodes: usize) -> Vec<u8> {
        let mut bytes = Vec::new();
        for n in 2..=nodes {
            let peer = format!("198.18.0.{n}");
            bytes.extend(newsa(
                "198.18.0.1",
                &peer,
                0x1000 + n as u32,
                Some(OVN_ALGORITHM),
            ));
            bytes.extend(newsa(
                &peer,
                "198.18.0.1",
                0x2000 + n as u32,
                Some(OVN_ALGORITHM),
            ));
        }
        bytes
    }

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    fn known() -> PeerView {
        PeerView::Known {
            local: ips(&["198.18.0.1"]),
            peers: ips(&["198.18.0.2", "198.18.0.3", "198.18.0.4"]),
            source: "OVN_Southbound Encap at tcp:198.18.0.1:6642".into(),
        }
    }

    /// Every verdict these tests see is also checked against the schema.
    fn judge(facts: &XfrmFacts) -> Finding {
        crate::schema_check::valid("ipsec.xfrm", super::judge(facts))
    }

    fn facts(dump: &[u8], wanted: bool, peers: PeerView) -> XfrmFacts {
        let mut bytes = dump.to_vec();
        bytes.extend(hex(DONE));
        let chunk = parse_dump(&bytes).unwrap();
        assert!(chunk.done);
        XfrmFacts {
            ipsec_wanted: wanted,
            node_count: 4,
            expected_min: if wanted { 6 } else { 0 },
            states: chunk.states,
            peers,
            local_addresses: vec!["198.18.0.1".parse().unwrap()],
        }
    }

    #[test]
    fn the_sa_list_has_direction_and_spi_and_never_keys() {
        let mut bytes = newsa("198.18.0.1", "198.18.0.2", 0xc0ffee01, Some(OVN_ALGORITHM));
        bytes.extend(newsa(
            "198.18.0.2",
            "198.18.0.1",
            0x0000_0007,
            Some(OVN_ALGORITHM),
        ));
        bytes.extend(newsa("198.18.0.5", "198.18.0.6", 9, Some(OVN_ALGORITHM)));
        let f = judge(&facts(
            &bytes,
            true,
            PeerView::Unknown { why: "test".into() },
        ));
        let sas = f.evidence["sas"].as_array().unwrap();
        assert_eq!(sas.len(), 3);
        assert_eq!(
            sas[0],
            serde_json::json!({"src": "198.18.0.1", "dst": "198.18.0.2", "spi": "0xc0ffee01",
                               "algorithm": OVN_ALGORITHM, "direction": "out"})
        );
        assert_eq!(sas[1]["direction"], "in");
        assert_eq!(sas[1]["spi"], "0x00000007");
        assert_eq!(sas[2]["direction"], "other");
        let text = f.evidence["sas"].to_string();
        assert!(!text.contains("key"), "{text}");
    }

    #[test]
    fn the_dump_parses_to_the_kernel_fields() {
        let mut bytes = newsa("198.18.0.1", "198.18.0.2", 0xc0ffee01, Some(OVN_ALGORITHM));
        bytes.extend(newsa("fd00::2", "fd00::1", 7, None));
        let chunk = parse_dump(&bytes).unwrap();
        assert!(!chunk.done, "no NLMSG_DONE yet: more recv()s follow");
        let sa = &chunk.states[0];
        assert_eq!(sa.src, "198.18.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(sa.dst, "198.18.0.2".parse::<IpAddr>().unwrap());
        assert_eq!(sa.spi, 0xc0ffee01);
        assert!(sa.is_esp());
        assert_eq!(sa.algorithm.as_deref(), Some(OVN_ALGORITHM));
        assert_eq!(chunk.states[1].algorithm.as_deref(), Some("cbc(aes)"));
        assert_eq!(chunk.states[1].dst, "fd00::1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn eperm_from_the_kernel_skips_naming_the_capability() {
        let err = parse_dump(&hex(EPERM)).unwrap_err();
        let f: Finding = err.into();
        assert_eq!(f.status, Status::Skip);
        assert!(f.summary.contains("CAP_NET_ADMIN"), "{}", f.summary);
    }

    #[test]
    fn truncated_dumps_are_parse_errors_not_panics() {
        let whole = newsa("198.18.0.1", "198.18.0.2", 1, Some(OVN_ALGORITHM));
        for cut in [1, 15, 16, 100, 239, whole.len() - 1] {
            assert!(parse_dump(&whole[..cut]).is_err(), "cut {cut}");
        }
        // A NEWSA whose own length is too short for xfrm_usersa_info (the
        // crate would slice past it).
        let mut short = whole[..100].to_vec();
        short[..4].copy_from_slice(&100u32.to_ne_bytes());
        let err = parse_dump(&short).unwrap_err().to_string();
        assert!(err.contains("shorter than xfrm_usersa_info"), "{err}");
    }

    #[test]
    fn four_node_full_mesh_passes() {
        let f = judge(&facts(&mesh(4), true, known()));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(f.evidence["sa_count"], 6);
        assert_eq!(f.evidence["expected_min"], 6);
        assert_eq!(f.evidence["algorithms"], serde_json::json!([OVN_ALGORITHM]));
        // Without OVN, the SAs' own pairs show the same.
        let f = judge(&facts(
            &mesh(4),
            true,
            PeerView::Unknown { why: "down".into() },
        ));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
    }

    #[test]
    fn a_missing_pair_is_named() {
        let mut dump = mesh(3);
        dump.extend(newsa(
            "198.18.0.1",
            "198.18.0.4",
            0x1004,
            Some(OVN_ALGORITHM),
        ));
        let f = judge(&facts(&dump, true, known()));
        assert_eq!(f.status, Status::Fail);
        assert_eq!(
            f.evidence["missing_pairs"],
            serde_json::json!(["198.18.0.4->198.18.0.1"])
        );
        assert!(
            f.summary.contains("5 ESP SAs, fewer than 2x(4-1) = 6"),
            "{}",
            f.summary
        );
        assert_eq!(f.kind.code("ipsec.xfrm"), "ipsec.xfrm/missing-sas");
        let peers: Vec<String> = f
            .findings
            .iter()
            .map(|s| format!("{} {}: {}", s.subject, s.kind.name, s.summary))
            .collect();
        assert_eq!(
            peers,
            [
                "198.18.0.2 ok: an SA in both directions",
                "198.18.0.3 ok: an SA in both directions",
                "198.18.0.4 missing-sas: no inbound SA"
            ]
        );
        let f = judge(&facts(
            &dump,
            true,
            PeerView::Unknown { why: "down".into() },
        ));
        assert_eq!(f.status, Status::Fail);
        assert_eq!(
            f.evidence["missing_pairs"],
            serde_json::json!(["198.18.0.4->198.18.0.1"])
        );
    }

    #[test]
    fn a_whole_missing_peer_is_named_even_during_rekey() {
        // 3 of 4 nodes, but rekeying doubled the SAs with 198.18.0.2: the
        // count reaches 6 and the missing peer is still found.
        let mut dump = mesh(3);
        dump.extend(newsa(
            "198.18.0.1",
            "198.18.0.2",
            0x3002,
            Some(OVN_ALGORITHM),
        ));
        dump.extend(newsa(
            "198.18.0.2",
            "198.18.0.1",
            0x4002,
            Some(OVN_ALGORITHM),
        ));
        let f = judge(&facts(&dump, true, known()));
        assert_eq!(f.status, Status::Fail);
        assert_eq!(
            f.evidence["missing_pairs"],
            serde_json::json!(["198.18.0.1->198.18.0.4", "198.18.0.4->198.18.0.1"])
        );
        let f = judge(&facts(
            &dump,
            true,
            PeerView::Unknown { why: "down".into() },
        ));
        assert_eq!(f.status, Status::Fail);
        assert!(
            f.summary
                .contains("SAs reach 2 peer pairs, the config has 4 nodes"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn a_stale_sa_when_ipsec_is_off_fails() {
        let dump = newsa("198.18.0.1", "198.18.0.2", 0x1002, Some(OVN_ALGORITHM));
        let f = judge(&facts(
            &dump,
            false,
            PeerView::Unknown {
                why: "not needed".into(),
            },
        ));
        assert_eq!(f.status, Status::Fail);
        assert!(
            f.summary
                .contains("1 ESP SAs remain although IPsec is not wanted (charon still running?)"),
            "{}",
            f.summary
        );
        assert!(f
            .remediation
            .iter()
            .any(|r| r.contains("ip xfrm state flush proto esp")));
        assert_eq!(f.kind.code("ipsec.xfrm"), "ipsec.xfrm/leftover-sas");
        assert_eq!(f.findings[0].subject, "198.18.0.1->198.18.0.2");
        let f = judge(&facts(
            &[],
            false,
            PeerView::Unknown {
                why: "not needed".into(),
            },
        ));
        assert_eq!(f.status, Status::Pass);
        assert_eq!(f.evidence["sa_count"], 0);
    }

    #[test]
    fn an_sa_to_a_removed_node_warns() {
        let mut dump = mesh(4);
        dump.extend(newsa(
            "198.18.0.1",
            "198.18.0.9",
            0x1009,
            Some(OVN_ALGORITHM),
        ));
        let f = judge(&facts(&dump, true, known()));
        assert_eq!(f.status, Status::Warn, "{}", f.summary);
        assert_eq!(
            f.evidence["stale_pairs"],
            serde_json::json!(["198.18.0.1->198.18.0.9"])
        );
        assert_eq!(f.kind.code("ipsec.xfrm"), "ipsec.xfrm/stale-sas");
    }

    #[test]
    fn the_wrong_algorithm_fails() {
        let mut dump = mesh(4);
        dump.extend(newsa("198.18.0.1", "198.18.0.2", 0x5002, None));
        let f = judge(&facts(&dump, true, known()));
        assert_eq!(f.status, Status::Fail);
        assert!(
            f.summary.contains("198.18.0.1->198.18.0.2 uses cbc(aes)"),
            "{}",
            f.summary
        );
        assert_eq!(
            f.evidence["algorithms"],
            serde_json::json!(["cbc(aes)", OVN_ALGORITHM])
        );
        assert_eq!(f.kind.code("ipsec.xfrm"), "ipsec.xfrm/wrong-algorithm");
        let back = f.evidence_as::<IpsecXfrmEvidence>().unwrap();
        assert_eq!(back.sa_count, 7);
        assert!(back.sas.iter().all(|s| s.direction != SaDirection::Other));
    }

    #[test]
    fn mutated_dumps_never_panic() {
        // A poor man's fuzzer (issue 8 adds the real one): flip bytes and
        // cut a valid dump anywhere; every outcome must be Ok or Err.
        let mut valid = mesh(3);
        valid.extend(newsa("fd00::2", "fd00::1", 9, None));
        valid.extend(hex(DONE));
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let mut bytes = valid.clone();
            for _ in 0..(next() % 6 + 1) {
                let i = (next() as usize) % bytes.len();
                bytes[i] = next() as u8;
            }
            let cut = (next() as usize) % (bytes.len() + 1);
            let _ = parse_dump(&bytes[..cut]);
        }
    }
}
