//! strongSwan's IPsec layout written by hand, for the tests that place
//! faults in it exactly (`cluster.rs`: an SA gone on one end, a rekey one
//! end missed, another algorithm on one end). The layout is the one
//! measured on real strongSwan configured by ovs-monitor-ipsec
//! (`strongswan.rs`, which judges `ipsec.xfrm` on the real thing): per
//! pair of nodes two CHILD_SAs, each node's `-out-` connection's (its
//! geneve to the peer, `udp dport 6081`, and the peer's replies, `udp
//! sport 6081`), the same SPIs on both ends under each end's own reqid, so
//! 4 `rfc4106(gcm(aes))` transport SAs per peer; and per peer 4 policies
//! (out and in for each connection, no fwd), templates `src 0.0.0.0 dst
//! 0.0.0.0 proto esp reqid R mode transport`, the outbound ones with their
//! SA's SPI. Three namespaces of the guest are three nodes on one bridged
//! underlay (198.18.0.1-3), with a geneve tunnel per pair carrying pings
//! through the SAs.

use crate::support::strongswan::{self, GENEVE_PORT};

pub(super) use crate::support::strongswan::{addr, MODULES};

pub(super) const KEY: &str = "0x0102030405060708090a0b0c0d0e0f1011121314";

/// The nodes.
const NODES: [u32; 3] = [1, 2, 3];

/// Every direction of the three-node mesh.
pub(super) const DIRECTIONS: [(u32, u32); 6] = [(1, 2), (2, 1), (1, 3), (3, 1), (2, 3), (3, 2)];

/// The SPI of the SA `src`->`dst` of the CHILD_SA that node `owner`'s
/// `-out-` connection made (`owner` is `src` for the geneve SA, `dst` for
/// the replies').
pub(super) fn spi(owner: u32, src: u32, dst: u32) -> String {
    format!("0x{:x}", 0x1000 + owner * 256 + src * 16 + dst)
}

/// The SPI of the SA carrying node `s`'s geneve to `d`.
pub(super) fn geneve_spi(s: u32, d: u32) -> String {
    spi(s, s, d)
}

/// Node `me`'s reqid for its connection toward `peer`, numbered as charon
/// numbers them in the lab (per peer in order, `-in-` then `-out-`).
pub(super) fn reqid(me: u32, peer: u32, out: bool) -> u32 {
    let k = NODES
        .iter()
        .filter(|p| **p != me)
        .position(|p| *p == peer)
        .unwrap() as u32;
    2 * k + if out { 2 } else { 1 }
}

pub(super) fn gcm() -> String {
    format!("aead 'rfc4106(gcm(aes))' {KEY} 128")
}

/// The port words of a selector: the geneve SA's or the replies'.
fn ports(geneve: bool) -> String {
    if geneve {
        format!("proto udp dport {GENEVE_PORT}")
    } else {
        format!("proto udp sport {GENEVE_PORT}")
    }
}

/// `xfrm state add` (an `ip` command) as node `me` holds the SA `s`->`d`
/// of `owner`'s CHILD_SA, with `alg` (`aead …` or `enc … auth …`) and
/// `spi`.
pub(super) fn sa_with(me: u32, owner: u32, s: u32, d: u32, spi: &str, alg: &str) -> String {
    let peer = if me == s { d } else { s };
    format!(
        "xfrm state add src {} dst {} proto esp spi {spi} reqid {} mode transport {alg} sel src {}/32 dst {}/32 {}",
        addr(s),
        addr(d),
        reqid(me, peer, owner == me),
        addr(s),
        addr(d),
        ports(owner == s)
    )
}

/// The same with the layout's own SPI.
pub(super) fn sa(me: u32, owner: u32, s: u32, d: u32, alg: &str) -> String {
    sa_with(me, owner, s, d, &spi(owner, s, d), alg)
}

/// The policies node `me` holds for `peer`'s tunnels: 4, as charon installs
/// them (`cmd` is `add` or `update`; `out_spi` the SPI its geneve goes out
/// with).
pub(super) fn policies(me: u32, peer: u32, cmd: &str, out_spi: &str) -> Vec<String> {
    let (m, p) = (addr(me), addr(peer));
    let tmpl = |reqid: u32, spi: Option<&str>| {
        format!(
            "tmpl src 0.0.0.0 dst 0.0.0.0 proto esp{} reqid {reqid} mode transport",
            spi.map_or(String::new(), |s| format!(" spi {s}"))
        )
    };
    let (out, inn) = (reqid(me, peer, true), reqid(me, peer, false));
    vec![
        // -out-: this node's geneve, and the peer's replies.
        format!(
            "xfrm policy {cmd} src {m} dst {p} proto udp dport {GENEVE_PORT} dir out {}",
            tmpl(out, Some(out_spi))
        ),
        format!(
            "xfrm policy {cmd} src {p} dst {m} proto udp sport {GENEVE_PORT} dir in {}",
            tmpl(out, None)
        ),
        // -in-: the peer's geneve, and this node's replies.
        format!(
            "xfrm policy {cmd} src {m} dst {p} proto udp sport {GENEVE_PORT} dir out {}",
            tmpl(inn, Some(&spi(peer, me, peer)))
        ),
        format!(
            "xfrm policy {cmd} src {p} dst {m} proto udp dport {GENEVE_PORT} dir in {}",
            tmpl(inn, None)
        ),
    ]
}

/// One ping over geneve from node `a` to node `b` for each `(a, b)` of
/// `pairs`, all at once: whether each was answered within `wait` seconds.
pub(super) fn overlay_pings(
    vm: &crate::support::vm::Vm,
    pairs: &[(u32, u32)],
    wait: u32,
) -> Vec<bool> {
    strongswan::pings(vm, pairs, wait)
}

/// The shell script that makes three namespaces of the guest, `n1`-`n3`,
/// three nodes at [`addr`] 1-3 on one bridged underlay, with strongSwan's
/// SAs and policies written by hand for every pair, and a geneve tunnel per
/// pair that [`overlay_pings`] pings through them.
pub(super) fn esp_mesh() -> String {
    // The underlay: a bridge in namespace sw, one veth per node. One `ip
    // -batch` per namespace: every exec costs in the guest.
    let mut batches: Vec<(String, Vec<String>)> = vec![
        (
            String::new(),
            ["sw", "n1", "n2", "n3"]
                .map(|n| format!("netns add {n}"))
                .to_vec(),
        ),
        (
            "sw".into(),
            vec!["link add br0 type bridge".into(), "link set br0 up".into()],
        ),
    ];
    let mut ports = Vec::new();
    for n in NODES {
        let mut lines = vec![
            "link set lo up".to_owned(),
            format!("link add eth0 type veth peer name p{n} netns sw"),
            format!("addr add {}/24 dev eth0", addr(n)),
            "link set eth0 up".to_owned(),
        ];
        for peer in NODES.into_iter().filter(|p| *p != n) {
            let (a, b) = (n.min(peer), n.max(peer));
            // Both CHILD_SAs of the pair, as this node holds them.
            lines.extend([
                sa(n, n, n, peer, &gcm()),
                sa(n, n, peer, n, &gcm()),
                sa(n, peer, peer, n, &gcm()),
                sa(n, peer, n, peer, &gcm()),
            ]);
            lines.extend(policies(n, peer, "add", &geneve_spi(n, peer)));
            lines.extend([
                format!(
                    "link add gnv{peer} type geneve id 1{a}{b} remote {}",
                    addr(peer)
                ),
                format!("addr add 10.{a}{b}.0.{n}/24 dev gnv{peer}"),
                format!("link set gnv{peer} up"),
            ]);
        }
        batches.push((format!("n{n}"), lines));
        ports.push(format!("link set p{n} master br0 up"));
    }
    batches.push(("sw".into(), ports));
    let mut setup = String::from("set -e\n");
    for (ns, lines) in batches {
        let ns = if ns.is_empty() {
            ns
        } else {
            format!("-n {ns} ")
        };
        setup.push_str(&format!(
            "ip {ns}-batch - <<'EOF'\n{}\nEOF\n",
            lines.join("\n")
        ));
    }
    setup
}
