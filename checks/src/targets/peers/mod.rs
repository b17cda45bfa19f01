//! Who this node's underlay peers are, and how we know.
//!
//! The overlay endpoints are not in the config, so they are looked for in
//! order of how authoritative the source is (spinifex-facts.md, "Who the
//! peers are"):
//!
//! 1. `--peer` on the command line (the operator said so);
//! 2. the OVN southbound `Encap` table's `ip` column at `ovn_sb_addr`: one
//!    row per chassis, exactly the geneve endpoints the overlay uses;
//! 3. `define spinifex_encap_peers = { … }` in
//!    `/etc/spinifex/firewall/peers.nft`, which the daemon writes for the
//!    node firewall;
//! 4. `define spinifex_peers = { … }` in the same file: the other nodes'
//!    wan-plane addresses;
//! 5. `[nodes.*] advertise` (else `host`) in the config: the wan plane too.
//!
//! Sources 2 and 3 name the vpc plane (the overlay); 4 and 5 name the wan
//! plane, which is what is checked when the vpc plane names nobody (the
//! same plane on single-NIC nodes, where vpc collapses onto wan). The first
//! source that names at least one peer wins; the others are not mixed in,
//! because they can describe different planes (probing wan addresses
//! against a vpc jumbo target would fail a healthy cluster). Every source
//! consulted leaves a note, so an operator can see why a source was passed
//! over. This host's own addresses and its local `ovn-encap-ip` are never
//! peers.
//!
//! A link-local IPv6 peer is reachable only through a named interface, so
//! it is given with its scope, `fe80::2%eth0`; the probe binds that scope.
//! A link-local address without one (the SB or peers.nft cannot carry a
//! scope) is excluded, with the reason.
//!
//! Reused by the NIC checks and `underlay.on-link`: call [`discover`]. The
//! family of this node's overlay endpoint, which the guest MTU depends on,
//! is [`underlay_family`].

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ctx::Ctx;
use crate::facts::ProbeError;
pub use crate::spinifex::{ENCAP_PEERS_DEFINE, PEERS_NFT, WAN_PEERS_DEFINE};

mod address;
mod files;
mod ovn;

pub use self::address::{flag_address, parse_address, resolve_scope, ParsedAddress};
pub use self::files::read_peers_nft;
use self::files::{config_nodes, read_peers_nft_define};
use self::ovn::sb_encaps;
pub use self::ovn::{local_encap, sb_encap_ips, underlay_family, UnderlayFamily};
use crate::facts::peers::{display, needs_scope, Scope};

/// A name lookup (config `host = "spx2.lan"`) may take this long.
pub const NAME_LOOKUP_BOUND: Duration = Duration::from_secs(2);

/// Where a peer address came from, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum PeerSource {
    #[serde(rename = "--peer")]
    Flag,
    #[serde(rename = "ovn-sb")]
    OvnSb,
    /// `spinifex_encap_peers` (the vpc plane).
    #[serde(rename = "peers.nft")]
    PeersNft,
    /// `spinifex_peers` (the wan plane).
    #[serde(rename = "peers.nft:spinifex_peers")]
    PeersNftWan,
    #[serde(rename = "config")]
    Config,
}

impl PeerSource {
    pub fn as_str(self) -> &'static str {
        match self {
            PeerSource::Flag => "--peer",
            PeerSource::OvnSb => "ovn-sb",
            PeerSource::PeersNft => "peers.nft",
            PeerSource::PeersNftWan => "peers.nft:spinifex_peers",
            PeerSource::Config => "config",
        }
    }

    /// The plane this source's addresses are on.
    pub fn plane(self) -> &'static str {
        match self {
            PeerSource::Flag => "as given",
            PeerSource::OvnSb | PeerSource::PeersNft => "vpc",
            PeerSource::PeersNftWan | PeerSource::Config => "wan",
        }
    }
}

impl std::fmt::Display for PeerSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Peer {
    pub address: IpAddr,
    /// For a link-local IPv6 peer: the interface it is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    pub source: PeerSource,
    /// The `[nodes.NAME]` it is, when its source says: the config entry
    /// it came from, or the SB `Encap` row whose chassis is that node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

impl Peer {
    /// The address as an operator writes it (`fe80::2%eth0` when scoped).
    pub fn label(&self) -> String {
        display(self.address, self.scope.as_ref())
    }
}

/// An address a source named that is not a peer, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Excluded {
    pub address: IpAddr,
    pub source: PeerSource,
    pub reason: String,
}

/// What one source said: how many peers, or why none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceNote {
    pub source: PeerSource,
    pub note: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PeerSet {
    /// The peers to probe, in the order the winning source gave them.
    pub peers: Vec<Peer>,
    pub excluded: Vec<Excluded>,
    /// One note per source consulted, in the order consulted.
    pub consulted: Vec<SourceNote>,
}

impl PeerSet {
    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }

    /// Why there is no peer, for a skip summary: each source's note, and
    /// each address that was excluded for a reason other than being this
    /// host's own.
    pub fn why_empty(&self) -> String {
        let mut parts: Vec<String> = self
            .consulted
            .iter()
            .map(|n| format!("{}: {}", n.source, n.note))
            .collect();
        for e in &self.excluded {
            if !e.reason.starts_with("this host's") {
                parts.push(format!("{} excluded: {}", e.address, e.reason));
            }
        }
        parts.join("; ")
    }

    /// The plane the peers are on ("vpc", "wan", or "as given" for --peer).
    pub fn plane(&self) -> Option<&'static str> {
        self.peers.first().map(|p| p.source.plane())
    }
}

/// One candidate address from a source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub address: IpAddr,
    pub scope: Option<Scope>,
    pub node: Option<String>,
}

impl From<IpAddr> for Candidate {
    fn from(address: IpAddr) -> Candidate {
        Candidate {
            address,
            scope: None,
            node: None,
        }
    }
}

/// A source's answer: candidates (possibly none) with a note, or why it
/// could not be read.
pub type SourceAnswer = Result<(Vec<Candidate>, String), String>;

/// Discover the peers for this run: `--peer`, else the SB `Encap` table,
/// else `/etc/spinifex/firewall/peers.nft`, else the config's nodes.
pub fn discover(ctx: &Ctx) -> PeerSet {
    discover_from(ctx, Path::new(PEERS_NFT))
}

/// [`discover`] with the peers.nft path given (tests use a temp file).
pub fn discover_from(ctx: &Ctx, peers_nft: &Path) -> PeerSet {
    let host = ctx.host();
    // Lazily evaluated in order: a source is only consulted when every
    // better one named nobody.
    let flag = || -> SourceAnswer {
        let mut out = Vec::new();
        for peer in &ctx.opts.peers {
            out.push(peer.candidate(host).map_err(|e| format!("--peer {e}"))?);
        }
        let n = out.len();
        Ok((out, format!("{n} given on the command line")))
    };
    let sb = || -> SourceAnswer { sb_encaps(ctx) };
    let nft = |define: &'static str, plane: &'static str| {
        move || -> SourceAnswer {
            match read_peers_nft_define(host, peers_nft, define) {
                Ok(cands) => {
                    let n = cands.len();
                    Ok((
                        cands,
                        format!("{n} in {} `{define}` ({plane} plane)", peers_nft.display()),
                    ))
                }
                Err(ProbeError::NotFound(_)) => Err(format!("{} not found", peers_nft.display())),
                Err(e) => Err(e.to_string()),
            }
        }
    };
    let config = || -> SourceAnswer { config_nodes(ctx) };

    let own = || -> (Vec<IpAddr>, Vec<IpAddr>) {
        let own = host.addresses().unwrap_or_default();
        let encap = local_encap(ctx).map(|(ips, _)| ips).unwrap_or_default();
        (own, encap)
    };
    if ctx.opts.peers.is_empty() {
        assemble(
            [
                (
                    PeerSource::OvnSb,
                    Box::new(sb) as Box<dyn FnOnce() -> SourceAnswer>,
                ),
                (
                    PeerSource::PeersNft,
                    Box::new(nft(ENCAP_PEERS_DEFINE, "vpc")),
                ),
                (
                    PeerSource::PeersNftWan,
                    Box::new(nft(WAN_PEERS_DEFINE, "wan")),
                ),
                (PeerSource::Config, Box::new(config)),
            ],
            own,
        )
    } else {
        // An explicit --peer list is used alone: the operator chose.
        assemble(
            [(
                PeerSource::Flag,
                Box::new(flag) as Box<dyn FnOnce() -> SourceAnswer>,
            )],
            own,
        )
    }
}

/// Consult `sources` in order; the first that names a peer that is not
/// this host wins. `own` gives (this host's addresses, its local
/// ovn-encap-ip), read once, only if some source named anyone.
pub fn assemble<const N: usize>(
    sources: [(PeerSource, Box<dyn FnOnce() -> SourceAnswer + '_>); N],
    own: impl FnOnce() -> (Vec<IpAddr>, Vec<IpAddr>),
) -> PeerSet {
    let mut set = PeerSet::default();
    let mut own = Some(own);
    let mut own_addrs: Option<(Vec<IpAddr>, Vec<IpAddr>)> = None;
    for (source, read) in sources {
        match read() {
            Err(why) => set.consulted.push(SourceNote { source, note: why }),
            Ok((candidates, note)) => {
                set.consulted.push(SourceNote { source, note });
                if candidates.is_empty() {
                    continue;
                }
                let (mine, encap) =
                    own_addrs.get_or_insert_with(|| (own.take().expect("read once"))());
                for c in candidates {
                    let reason = if encap.contains(&c.address) {
                        Some("this host's ovn-encap-ip".to_owned())
                    } else if mine.contains(&c.address) {
                        Some("this host's own address".to_owned())
                    } else if c.address.is_loopback()
                        || c.address.is_unspecified()
                        || c.address.is_multicast()
                    {
                        Some("not a unicast peer address".to_owned())
                    } else if needs_scope(c.address) && c.scope.is_none() {
                        Some(format!(
                            "link-local, and {source} does not say which interface it is on: pass it as --peer {}%IF",
                            c.address
                        ))
                    } else {
                        None
                    };
                    if let Some(reason) = reason {
                        if !set.excluded.iter().any(|e| e.address == c.address) {
                            set.excluded.push(Excluded {
                                address: c.address,
                                source,
                                reason,
                            });
                        }
                    } else if !set
                        .peers
                        .iter()
                        .any(|p| p.address == c.address && p.scope == c.scope)
                    {
                        set.peers.push(Peer {
                            address: c.address,
                            scope: c.scope,
                            source,
                            node: c.node,
                        });
                    }
                }
                if !set.peers.is_empty() {
                    break;
                }
            }
        }
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::Endpoint;
    use crate::facts::peers::parse_nft_define;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn parses_the_define_the_daemon_writes() {
        // The form in spinifex-facts.md ("Who the peers are").
        let text = "define spinifex_peers = { 198.18.3.181, 198.18.3.182 }\n\
                    define spinifex_encap_peers = { 198.18.20.1, 198.18.20.2, 198.18.20.3 }\n";
        assert_eq!(
            parse_nft_define(text, ENCAP_PEERS_DEFINE).unwrap().unwrap(),
            vec![ip("198.18.20.1"), ip("198.18.20.2"), ip("198.18.20.3")]
        );
        assert_eq!(
            parse_nft_define(text, "spinifex_peers").unwrap().unwrap(),
            vec![ip("198.18.3.181"), ip("198.18.3.182")]
        );
    }

    #[test]
    fn tolerates_layout_comments_and_host_prefixes() {
        let text = "# managed by spinifex\n\
                    define spinifex_encap_peers_old = { 192.0.2.9 }\n\
                    define spinifex_encap_peers = {\n\
                        198.18.0.2, # spx2\n\
                        198.18.0.3/32,\n\
                        fd00::4/128,\n\
                        198.18.0.2\n\
                    }\n\
                    table inet spinifex { }\n";
        assert_eq!(
            parse_nft_define(text, ENCAP_PEERS_DEFINE).unwrap().unwrap(),
            vec![ip("198.18.0.2"), ip("198.18.0.3"), ip("fd00::4")]
        );
        assert_eq!(
            parse_nft_define(
                "define spinifex_encap_peers = 198.18.0.7\n",
                ENCAP_PEERS_DEFINE
            )
            .unwrap(),
            Some(vec![ip("198.18.0.7")])
        );
        assert_eq!(
            parse_nft_define("define spinifex_encap_peers = { }\n", ENCAP_PEERS_DEFINE).unwrap(),
            Some(vec![])
        );
        assert_eq!(
            parse_nft_define("table inet x {}\n", ENCAP_PEERS_DEFINE).unwrap(),
            None
        );
    }

    #[test]
    fn refuses_what_is_not_a_peer_list() {
        for bad in [
            "define spinifex_encap_peers = { 198.18.0.2, ",
            "define spinifex_encap_peers = { 198.18.0.0/24 }",
            "define spinifex_encap_peers = { $other }",
            "define spinifex_encap_peers = { 198.18.0.2-198.18.0.9 }",
            "define spinifex_encap_peers { 198.18.0.2 }",
        ] {
            assert!(
                parse_nft_define(bad, ENCAP_PEERS_DEFINE).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn reads_a_file_and_says_when_it_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("peers.nft");
        std::fs::write(&path, "define spinifex_encap_peers = { 198.18.0.2 }\n").unwrap();
        assert_eq!(
            read_peers_nft(crate::live::test_host(), &path).unwrap(),
            vec![ip("198.18.0.2")]
        );
        assert!(matches!(
            read_peers_nft(crate::live::test_host(), &dir.path().join("nope.nft")),
            Err(ProbeError::NotFound(_))
        ));
    }

    fn answer(ips: &[&str]) -> SourceAnswer {
        Ok((
            ips.iter().map(|s| Candidate::from(ip(s))).collect(),
            format!("{} listed", ips.len()),
        ))
    }

    #[test]
    fn the_first_source_naming_a_peer_wins_and_self_is_excluded() {
        let own = || {
            (
                vec![ip("198.18.0.1"), ip("127.0.0.1")],
                vec![ip("198.18.9.1")],
            )
        };
        let set = assemble(
            [
                (
                    PeerSource::OvnSb,
                    Box::new(|| Err("tcp:198.18.0.9:6642 (connection refused)".to_owned()))
                        as Box<dyn FnOnce() -> SourceAnswer>,
                ),
                (
                    PeerSource::PeersNft,
                    Box::new(|| answer(&["198.18.9.1", "198.18.0.1"])),
                ),
                (
                    PeerSource::Config,
                    Box::new(|| answer(&["198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.0.2"])),
                ),
            ],
            own,
        );
        // peers.nft named only this host (its encap IP and an address), so
        // config decides.
        assert_eq!(
            set.peers
                .iter()
                .map(|p| (p.address, p.source))
                .collect::<Vec<_>>(),
            vec![
                (ip("198.18.0.2"), PeerSource::Config),
                (ip("198.18.0.3"), PeerSource::Config)
            ]
        );
        assert_eq!(set.excluded.len(), 2);
        assert_eq!(set.excluded[0].reason, "this host's ovn-encap-ip");
        assert_eq!(set.excluded[1].reason, "this host's own address");
        assert_eq!(set.consulted.len(), 3);
        assert!(set.consulted[0].note.contains("connection refused"));
    }

    #[test]
    fn later_sources_are_not_read_once_one_wins() {
        let set = assemble(
            [
                (
                    PeerSource::OvnSb,
                    Box::new(|| answer(&["198.18.0.2"])) as Box<dyn FnOnce() -> SourceAnswer>,
                ),
                (
                    PeerSource::Config,
                    Box::new(|| panic!("must not be consulted")),
                ),
            ],
            || (vec![], vec![]),
        );
        assert_eq!(set.peers.len(), 1);
        assert_eq!(set.peers[0].source, PeerSource::OvnSb);
    }

    #[test]
    fn nobody_at_all_explains_itself() {
        let set = assemble(
            [
                (
                    PeerSource::OvnSb,
                    Box::new(|| Err("no ovn_sb_addr in the config".to_owned()))
                        as Box<dyn FnOnce() -> SourceAnswer>,
                ),
                (
                    PeerSource::PeersNft,
                    Box::new(|| Err("/etc/spinifex/firewall/peers.nft not found".to_owned())),
                ),
            ],
            || panic!("own addresses are not needed when nobody is named"),
        );
        assert!(set.is_empty());
        assert_eq!(
            set.why_empty(),
            "ovn-sb: no ovn_sb_addr in the config; peers.nft: /etc/spinifex/firewall/peers.nft not found"
        );
    }

    #[test]
    fn config_nodes_skip_this_node_and_strip_ports() {
        let config = crate::config::parse(
            "node = \"spx1\"\n\
             [nodes.spx1]\nhost = \"198.18.0.1\"\n\
             [nodes.spx2]\nhost = \"198.18.0.2:8443\"\n\
             [nodes.spx3]\nhost = \"198.18.0.99\"\nadvertise = \"198.18.0.3\"\n",
            Path::new("spinifex.toml"),
        )
        .unwrap();
        let ctx = Ctx::new(
            crate::settings::ConfigState::Loaded {
                path: "spinifex.toml".into(),
                config: Box::new(config),
            },
            crate::settings::Options::default(),
        );
        let (cands, note) = config_nodes(&ctx).unwrap();
        assert_eq!(
            cands,
            vec![
                Candidate {
                    address: ip("198.18.0.2"),
                    scope: None,
                    node: Some("spx2".into())
                },
                Candidate {
                    address: ip("198.18.0.3"),
                    scope: None,
                    node: Some("spx3".into())
                },
            ]
        );
        assert_eq!(
            note,
            "2 addresses from [nodes.*] advertise/host (wan plane)"
        );
    }

    #[test]
    fn flag_peers_are_used_alone() {
        let opts = crate::settings::Options {
            peers: vec![
                "198.19.254.2".parse().unwrap(),
                "fd00:5bd:a::2".parse().unwrap(),
            ],
            ..Default::default()
        };
        let ctx = Ctx::new(
            crate::settings::ConfigState::Missing { looked_at: vec![] },
            opts,
        );
        let dir = tempfile::tempdir().unwrap();
        let set = discover_from(&ctx, &dir.path().join("peers.nft"));
        assert_eq!(
            set.peers
                .iter()
                .map(|p| (p.address, p.source))
                .collect::<Vec<_>>(),
            vec![
                (ip("198.19.254.2"), PeerSource::Flag),
                (ip("fd00:5bd:a::2"), PeerSource::Flag)
            ]
        );
        assert_eq!(set.consulted.len(), 1);
    }

    #[test]
    fn the_wan_plane_define_is_read_when_the_vpc_plane_names_nobody() {
        // No SB, no encap define: spinifex_peers (wan) is consulted before
        // the config's nodes, which are the wan plane too.
        let dir = tempfile::tempdir().unwrap();
        let nft = dir.path().join("peers.nft");
        std::fs::write(
            &nft,
            "define spinifex_peers = { 198.19.254.2, 198.19.254.3 }\n",
        )
        .unwrap();
        let config = crate::config::parse(
            "node = \"a\"\n[nodes.a]\n[nodes.b]\nhost = \"198.19.254.9\"\n",
            Path::new("spinifex.toml"),
        )
        .unwrap();
        let ctx = Ctx::new(
            crate::settings::ConfigState::Loaded {
                path: "spinifex.toml".into(),
                config: Box::new(config),
            },
            crate::settings::Options {
                ovs_db: Some(vec![Endpoint::Unix(dir.path().join("no-ovs.sock"))]),
                ..Default::default()
            },
        );
        let set = discover_from(&ctx, &nft);
        assert_eq!(
            set.peers
                .iter()
                .map(|p| (p.address, p.source))
                .collect::<Vec<_>>(),
            vec![
                (ip("198.19.254.2"), PeerSource::PeersNftWan),
                (ip("198.19.254.3"), PeerSource::PeersNftWan)
            ]
        );
        assert_eq!(set.plane(), Some("wan"));
        let notes: Vec<&str> = set.consulted.iter().map(|n| n.note.as_str()).collect();
        assert!(notes[1].starts_with("0 in "), "{notes:?}");
        assert!(
            notes[1].ends_with("`spinifex_encap_peers` (vpc plane)"),
            "{notes:?}"
        );
        assert!(
            notes[2].ends_with("`spinifex_peers` (wan plane)"),
            "{notes:?}"
        );
        assert_eq!(set.consulted.len(), 3, "config not consulted: {notes:?}");
        assert_eq!(
            serde_json::to_value(PeerSource::PeersNftWan).unwrap(),
            "peers.nft:spinifex_peers"
        );
    }

    #[test]
    fn nft_cannot_carry_a_scope_and_says_so() {
        let e = parse_nft_define(
            "define spinifex_encap_peers = { fe80::2%eth0 }",
            ENCAP_PEERS_DEFINE,
        )
        .unwrap_err();
        assert!(
            e.contains("has a scope id, which an nft set cannot hold"),
            "{e}"
        );
        assert!(e.contains("--peer ADDR%IF"), "{e}");
    }

    #[test]
    fn a_link_local_address_without_its_interface_is_excluded_with_the_reason() {
        let set = assemble(
            [(
                PeerSource::PeersNft,
                Box::new(|| answer(&["fe80::2", "198.18.0.2"]))
                    as Box<dyn FnOnce() -> SourceAnswer>,
            )],
            || (vec![], vec![]),
        );
        assert_eq!(set.peers.len(), 1);
        assert_eq!(set.excluded[0].address, ip("fe80::2"));
        assert!(
            set.excluded[0]
                .reason
                .contains("pass it as --peer fe80::2%IF"),
            "{:?}",
            set.excluded
        );
        // Alone, it is why nobody is probed.
        let set = assemble(
            [(
                PeerSource::PeersNft,
                Box::new(|| answer(&["fe80::2"])) as Box<dyn FnOnce() -> SourceAnswer>,
            )],
            || (vec![], vec![]),
        );
        assert!(set.is_empty());
        assert!(
            set.why_empty().contains("fe80::2 excluded: link-local"),
            "{}",
            set.why_empty()
        );
    }

    #[test]
    fn a_scope_names_an_interface_of_this_host() {
        let (a, scope) = parse_address(crate::live::test_host(), "fe80::2%lo")
            .unwrap()
            .unwrap();
        assert_eq!(a, ip("fe80::2"));
        let scope = scope.unwrap();
        assert_eq!((scope.interface.as_str(), scope.index), ("lo", 1));
        assert_eq!(
            parse_address(crate::live::test_host(), "fe80::2%1")
                .unwrap()
                .unwrap()
                .1
                .unwrap()
                .interface,
            "lo"
        );
        let e = parse_address(crate::live::test_host(), "fe80::2%nosuchif0").unwrap_err();
        assert_eq!(
            e,
            "\"fe80::2%nosuchif0\": no interface nosuchif0 on this host"
        );
        assert_eq!(
            parse_address(crate::live::test_host(), "spx2.lan").unwrap(),
            None
        );
        assert_eq!(
            flag_address(crate::live::test_host(), "fe80::2%lo")
                .unwrap()
                .map(|p| p.to_string())
                .as_deref(),
            Some("fe80::2%lo")
        );
        assert_eq!(
            flag_address(crate::live::test_host(), "198.18.0.2")
                .unwrap()
                .map(|p| p.to_string())
                .as_deref(),
            Some("198.18.0.2")
        );
        assert!(flag_address(crate::live::test_host(), "fe80::2")
            .unwrap_err()
            .contains("is link-local: name the interface it is on, e.g. fe80::2%eth0"));
        // Two peers with one link-local address on two links stay apart.
        let lo = Scope {
            interface: "lo".into(),
            index: 1,
        };
        let other = Scope {
            interface: "eth0".into(),
            index: 2,
        };
        let set = assemble(
            [(
                PeerSource::Flag,
                Box::new(move || {
                    Ok((
                        vec![
                            Candidate {
                                address: ip("fe80::2"),
                                scope: Some(lo.clone()),
                                node: None,
                            },
                            Candidate {
                                address: ip("fe80::2"),
                                scope: Some(other),
                                node: None,
                            },
                            Candidate {
                                address: ip("fe80::2"),
                                scope: Some(lo),
                                node: None,
                            },
                        ],
                        "3 given".to_owned(),
                    ))
                }) as Box<dyn FnOnce() -> SourceAnswer>,
            )],
            || (vec![], vec![]),
        );
        assert_eq!(
            set.peers.iter().map(Peer::label).collect::<Vec<_>>(),
            ["fe80::2%lo", "fe80::2%eth0"]
        );
        assert_eq!(serde_json::to_value(&set.peers[0]).unwrap()["scope"], "lo");
    }
}
