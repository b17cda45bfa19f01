//! `underlay.on-link`: does every peer sit on this node's own L2 segment?
//!
//! Turning IPsec off is only for a physically trusted underlay: one rack, a
//! private VLAN. A peer reached through a router is, by definition, across
//! a hop the operator may not control, and once ESP is gone every guest's
//! east-west traffic crosses it in clear. The route table says which peers
//! those are: a route with a gateway is not on-link.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::facts::links::Route;
use crate::facts::peers::{display, Scope};
use crate::facts::ProbeError;
use crate::finding::{Finding, SkipReason, Subject};
use crate::targets::peers::{discover, PeerSource};

pub struct UnderlayOnLink;

crate::kinds! {
    /// What `underlay.on-link` can say, per peer and for the check.
    pub enum UnderlayOnLinkKind for "underlay.on-link" {
        /// Every peer is on this node's L2 segment: the route to it has no gateway.
        Ok = pass("ok"),
        /// A peer is behind a router hop, but IPsec is on, so its traffic crosses the hop encrypted.
        RoutedEncrypted = pass("routed-encrypted"),
        /// A peer is behind a router hop while IPsec is off (or a disable-ipsec preflight asks): its east-west traffic would cross that hop in clear.
        Routed = warn("routed"),
        /// The kernel gave no route to a peer (or the route could not be read): nothing is concluded for it.
        NoRoute = error("no-route"),
    }
}

static DECLARED: Declared = Declared::of::<UnderlayOnLinkKind, UnderlayOnLinkEvidence>();

/// The route to every peer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnderlayOnLinkEvidence {
    pub peers: Vec<PeerRoute>,
}

impl Evidence for UnderlayOnLinkEvidence {}

/// What the route table says about one peer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeerRoute {
    pub address: IpAddr,
    /// For a link-local IPv6 peer: the interface it is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    pub source: PeerSource,
    pub on_link: Option<bool>,
    /// The router hop, when there is one.
    pub via: Option<IpAddr>,
    pub interface: Option<String>,
    /// Why the route could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Whether traffic to routed peers would be unencrypted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encryption {
    /// The config has IPsec on and no preflight asks otherwise.
    On,
    /// IPsec is off in the config, or a disable-ipsec preflight asks.
    OffOrGoingOff,
}

impl Check for UnderlayOnLink {
    fn id(&self) -> &'static str {
        "underlay.on-link"
    }

    fn title(&self) -> &'static str {
        "Every peer is on this node's L2 segment, with no router hop"
    }

    fn explain(&self) -> &'static str {
        "Asks the kernel for the route to every underlay peer (RTM_GETROUTE, the \
         question `ip route get PEER` asks). A route with a gateway means the peer is \
         reached through a router hop, not on this node's L2 segment.\n\
         \n\
         Why: disabling IPsec is only for a physically trusted underlay (a single rack, \
         a private VLAN, no untrusted tenant on the fabric). Without ESP, all east-west \
         guest traffic goes on the wire unencrypted, and to a routed peer it crosses a \
         hop outside that segment. It is worth 2.5x-4.9x throughput on trusted links \
         (3.58 -> 17.6 Gbit/s into one guest), and nothing is worth that trade across \
         an untrusted hop.\n\
         \n\
         Verdicts: with IPsec off in the config, or under `--for disable-ipsec`, a \
         routed peer is a warning naming the peer and the hop; with IPsec on, routed \
         peers are encrypted and pass. Peers come from --peer, the OVN SB Encap table, \
         /etc/spinifex/firewall/peers.nft (spinifex_encap_peers, else spinifex_peers for \
         the wan plane), or the config's nodes. A link-local IPv6 peer (--peer \
         fe80::2%eth0) is on-link on the interface it names.\n\
         \n\
         Fix: keep IPsec on for a cluster whose peers are routed, or move the underlay \
         onto one L2 segment (a VLAN spanning the nodes) first."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let encryption = if ctx.opts.profile == Some(crate::settings::Preflight::DisableIpsec) {
            Encryption::OffOrGoingOff
        } else {
            match ctx.expectations() {
                Ok(e) if e.ipsec_enabled => Encryption::On,
                Ok(_) => Encryption::OffOrGoingOff,
                Err(skip) => return skip,
            }
        };
        let peers = discover(ctx);
        if peers.is_empty() {
            return Finding::skip(SkipReason::NothingToMeasure(format!(
                "no peers to check ({})",
                peers.why_empty()
            )));
        }
        let routes: Vec<PeerRoute> = peers
            .peers
            .iter()
            .map(|p| {
                let route = ctx
                    .host()
                    .route(p.address, p.scope.as_ref().map(|s| s.index));
                PeerRoute {
                    scope: p.scope.clone(),
                    ..peer_route(p.address, p.source, route)
                }
            })
            .collect();
        judge(&routes, encryption)
    }
}

fn peer_route(address: IpAddr, source: PeerSource, route: Result<Route, ProbeError>) -> PeerRoute {
    match route {
        Ok(r) => PeerRoute {
            address,
            scope: None,
            source,
            on_link: Some(r.on_link()),
            via: r.gateway,
            interface: Some(r.interface),
            error: None,
        },
        Err(e) => PeerRoute {
            address,
            scope: None,
            source,
            on_link: None,
            via: None,
            interface: None,
            error: Some(e.to_string()),
        },
    }
}

pub fn judge(peers: &[PeerRoute], encryption: Encryption) -> Finding {
    let label = |p: &PeerRoute| display(p.address, p.scope.as_ref());
    let routed: Vec<String> = peers
        .iter()
        .filter(|p| p.on_link == Some(false))
        .map(|p| match (&p.via, &p.interface) {
            (Some(via), Some(dev)) => format!("{} via {via} dev {dev}", label(p)),
            (Some(via), None) => format!("{} via {via}", label(p)),
            _ => label(p),
        })
        .collect();
    let unknown: Vec<String> = peers
        .iter()
        .filter(|p| p.on_link.is_none())
        .map(|p| {
            format!(
                "{} ({})",
                label(p),
                p.error.as_deref().unwrap_or("no route")
            )
        })
        .collect();
    let on_link = peers.iter().filter(|p| p.on_link == Some(true)).count();
    let subjects = peers.iter().map(|p| {
        let (kind, text) = match (p.on_link, encryption) {
            (Some(true), _) => (UnderlayOnLinkKind::Ok, "on-link".to_owned()),
            (Some(false), e) => {
                let hop = p
                    .via
                    .map_or("a router hop".to_owned(), |v| format!("router hop {v}"));
                match e {
                    Encryption::On => (
                        UnderlayOnLinkKind::RoutedEncrypted,
                        format!("behind {hop}, encrypted by IPsec"),
                    ),
                    Encryption::OffOrGoingOff => (
                        UnderlayOnLinkKind::Routed,
                        format!("behind {hop}: without IPsec its traffic crosses it in clear"),
                    ),
                }
            }
            (None, _) => (
                UnderlayOnLinkKind::NoRoute,
                p.error.clone().unwrap_or_else(|| "no route".to_owned()),
            ),
        };
        Subject::new(kind, label(p), text)
    });
    let subjects: Vec<Subject> = subjects.collect();
    let finding = if !routed.is_empty() && encryption == Encryption::OffOrGoingOff {
        Finding::new(
            UnderlayOnLinkKind::Routed,
            format!(
                "{} of {} peers are behind a router hop: {}; without IPsec their east-west traffic crosses it in clear",
                routed.len(),
                peers.len(),
                routed.join(", ")
            ),
        )
        .fix("keep ipsec_enabled = true for this cluster, or put the underlay on one L2 segment first")
    } else if !unknown.is_empty() {
        Finding::new(
            UnderlayOnLinkKind::NoRoute,
            format!("could not read the route to {}", unknown.join(", ")),
        )
    } else if routed.is_empty() {
        Finding::new(
            UnderlayOnLinkKind::Ok,
            format!("all {on_link} peers are on-link (no router hop)"),
        )
    } else {
        Finding::new(
            UnderlayOnLinkKind::RoutedEncrypted,
            format!(
                "{on_link} peers on-link; {} routed ({}) but encrypted by IPsec",
                routed.len(),
                routed.join(", ")
            ),
        )
    };
    finding
        .evidence(&UnderlayOnLinkEvidence {
            peers: peers.to_vec(),
        })
        .subjects(subjects)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Status;

    /// Every verdict these tests see is also checked against the schema.
    fn judge(peers: &[PeerRoute], encryption: Encryption) -> Finding {
        crate::schema_check::valid("underlay.on-link", super::judge(peers, encryption))
    }

    fn peer(addr: &str, via: Option<&str>) -> PeerRoute {
        PeerRoute {
            address: addr.parse().unwrap(),
            scope: None,
            source: PeerSource::Flag,
            on_link: Some(via.is_none()),
            via: via.map(|v| v.parse().unwrap()),
            interface: Some("br-vpc".into()),
            error: None,
        }
    }

    #[test]
    fn a_routed_peer_warns_when_ipsec_goes_off() {
        let peers = [
            peer("198.18.0.2", None),
            peer("198.19.1.2", Some("198.18.0.254")),
        ];
        let f = judge(&peers, Encryption::OffOrGoingOff);
        assert_eq!(f.status, Status::Warn);
        assert!(
            f.summary.contains("198.19.1.2 via 198.18.0.254 dev br-vpc"),
            "{}",
            f.summary
        );
        assert_eq!(f.evidence["peers"][1]["on_link"], false);
        assert_eq!(f.evidence["peers"][1]["via"], "198.18.0.254");
        assert_eq!(f.evidence["peers"][0]["via"], serde_json::Value::Null);
        assert_eq!(f.kind.code("underlay.on-link"), "underlay.on-link/routed");
        assert_eq!(f.findings[0].kind.name, "ok");
        assert_eq!(f.findings[1].subject, "198.19.1.2");
        assert_eq!(f.findings[1].kind.name, "routed");
        let f = judge(&peers, Encryption::On);
        assert_eq!(f.kind.name, "routed-encrypted");
        assert_eq!(f.findings[1].kind.name, "routed-encrypted");
    }

    #[test]
    fn routed_peers_pass_while_encrypted_and_all_on_link_passes() {
        let peers = [peer("198.19.1.2", Some("198.18.0.254"))];
        assert_eq!(judge(&peers, Encryption::On).status, Status::Pass);
        let peers = [peer("198.18.0.2", None), peer("198.18.0.3", None)];
        let f = judge(&peers, Encryption::OffOrGoingOff);
        assert_eq!(f.status, Status::Pass);
        assert_eq!(f.summary, "all 2 peers are on-link (no router hop)");
    }

    #[test]
    fn an_unroutable_peer_is_an_error_not_a_pass() {
        let p = peer_route(
            "198.18.9.9".parse().unwrap(),
            PeerSource::Flag,
            Err(ProbeError::NotFound("route to 198.18.9.9".into())),
        );
        let f = judge(&[p], Encryption::OffOrGoingOff);
        assert_eq!(f.status, Status::Error);
        assert!(f.summary.contains("198.18.9.9"));
    }
}
