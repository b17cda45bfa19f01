//! `spx-doctor path` on a real OVN ([`crate::support::ovn_lab`]): three
//! nodes with their own OVS and ovn-controller, Debian's ovn-central, the
//! topology as Spinifex writes it and paused QEMU guests started with
//! Spinifex's command line, in one boot of the kernel lab. Every case first
//! measures the lab's own truth (DF frames of exact sizes from one guest's
//! namespace, seen arriving or not in the other's, each direction on its
//! own), then holds the doctor's answer to it: the largest size it names
//! crosses, one byte more does not, both ways, and who tells the sender.

use std::time::Instant;

use super::ipsec::{gcm, geneve_spi, policies, sa};
use crate::support::ovn_lab::{
    note, Guest, Ladder, OvnLab, Rule, A, B, C, D, NB, NODES, S1, S2, SB, SG_A,
};
use spx_test_harness::root_test;

/// The lab's truth for both directions of `a`<->`b`, each expected at
/// `hint` (the size the lab was built to carry; the ladder finds the real
/// one if it is not).
fn both_ways(lab: &OvnLab, a: &Guest, b: &Guest, hint: (u32, u32)) -> (Ladder, Ladder) {
    (lab.largest(a, b, hint.0), lab.largest(b, a, hint.1))
}

/// AES-CBC with HMAC-SHA256 (16-byte IV, 16-byte blocks, 16-byte ICV):
/// an SA whose overhead is not rfc4106's 34 bytes.
fn cbc() -> String {
    format!(
        "enc 'cbc(aes)' 0x{} auth-trunc 'hmac(sha256)' 0x{} 128",
        "11".repeat(16),
        "22".repeat(32)
    )
}

/// ESP between every pair of nodes as strongSwan lays it out (transport
/// mode on geneve's UDP 6081, two CHILD_SAs per pair: `super::ipsec`), each
/// pair's SAs with `alg(a, b)`; or none (`alg` None).
fn esp(lab: &OvnLab, alg: Option<&dyn Fn(u32, u32) -> String>) {
    let mut script = String::from("set -e\n");
    for node in NODES {
        let n = node.n;
        script.push_str(&format!(
            "ip -n {0} xfrm policy flush && ip -n {0} xfrm state flush\n",
            node.name
        ));
        let Some(alg) = alg else { continue };
        let mut lines = Vec::new();
        for peer in NODES.iter().map(|p| p.n).filter(|p| *p != n) {
            let a = alg(n.min(peer), n.max(peer));
            lines.extend([
                sa(n, n, n, peer, &a),
                sa(n, n, peer, n, &a),
                sa(n, peer, peer, n, &a),
                sa(n, peer, n, peer, &a),
            ]);
            lines.extend(policies(n, peer, "add", &geneve_spi(n, peer)));
        }
        script.push_str(&format!(
            "ip -n {} -batch - <<'EOF'\n{}\nEOF\n",
            node.name,
            lines.join("\n")
        ));
    }
    lab.vm.ok(&script);
}

#[root_test]
fn path_on_a_real_ovn_names_the_hop_the_size_and_the_fix_both_ways() {
    let test = "path_on_a_real_ovn_names_the_hop_the_size_and_the_fix_both_ways";
    let started = Instant::now();
    let Some(lab) = OvnLab::boot(test) else {
        return;
    };
    note(&format!("up in {:.1}s", started.elapsed().as_secs_f64()));

    // 1. Healthy jumbo: 9000 everywhere, guests offered 8942.
    let t = Instant::now();
    let (ab, ba) = both_ways(&lab, &A, &B, (8942, 8942));
    assert_eq!((ab.largest, ba.largest), (8942, 8942));
    note(&format!("case healthy: {:.1}s", t.elapsed().as_secs_f64()));

    // 2. spx2's switch port at 1500.
    let t = Instant::now();
    lab.set_switch_port(NODES[1], 1500);
    let (ab, ba) = both_ways(&lab, &A, &B, (1442, 1442));
    assert_eq!((ab.largest, ba.largest), (1442, 1442));
    lab.set_switch_port(NODES[1], 9000);
    note(&format!(
        "case black hole: {:.1}s",
        t.elapsed().as_secs_f64()
    ));

    // 3. The nodes at 1500, the guests still told 8942.
    let t = Instant::now();
    lab.set_config(false, 1500, NB, SB);
    for n in NODES {
        lab.set_node_underlay(n, 1500);
    }
    let (ab, ba) = both_ways(&lab, &A, &B, (1442, 1442));
    assert_eq!((ab.largest, ba.largest), (1442, 1442));
    for n in NODES {
        lab.set_node_underlay(n, 9000);
    }
    lab.set_config(false, 9000, NB, SB);
    note(&format!(
        "case guest mtu above path: {:.1}s",
        t.elapsed().as_secs_f64()
    ));

    // 4. Routed, gateway_mtu 1400 on both router ports.
    let t = Instant::now();
    lab.set_gateway_mtu(S1, Some(1400));
    lab.set_gateway_mtu(S2, Some(1400));
    // (a) A's group as Spinifex writes one: egress allow-related, ingress
    //     ICMP from C's subnet only and ssh.
    lab.set_rules(
        SG_A,
        &[
            Rule::ingress("icmp", None, "10.0.2.0/24"),
            Rule::ingress("tcp", Some(22), "0.0.0.0/0"),
            Rule::egress_all(),
        ],
    );
    let (ac, ca) = both_ways(&lab, &A, &C, (1400, 1400));
    assert_eq!((ac.largest, ca.largest), (1400, 1400));
    // (b) stateless.
    lab.set_rules(
        SG_A,
        &[
            Rule::ingress("icmp", None, "10.0.2.0/24").stateless(),
            Rule::egress_all().stateless(),
        ],
    );
    let ac = lab.largest(&A, &C, 1400);
    assert_eq!(ac.largest, 1400);
    lab.set_rules(SG_A, &crate::support::ovn_lab::vpc_rules());
    lab.set_gateway_mtu(S1, None);
    lab.set_gateway_mtu(S2, None);
    note(&format!("case routed: {:.1}s", t.elapsed().as_secs_f64()));

    // 5. IPsec: rfc4106(gcm(aes)) between every pair, the guests still
    //    told 8942; then converted as Spinifex converts (DHCP 8908, the
    //    guests stopped and started at 8908); then AES-CBC between spx1 and
    //    spx2, whose overhead is not 34.
    let t = Instant::now();
    lab.set_config(true, 9000, NB, SB);
    esp(&lab, Some(&|_, _| gcm()));
    let (ab, ba) = both_ways(&lab, &A, &B, (8908, 8908));
    assert_eq!((ab.largest, ba.largest), (8908, 8908));
    lab.set_dhcp_mtu(S1, 8908);
    lab.restart_guests(&[A, B], 8908);
    let (ab, ba) = both_ways(&lab, &A, &B, (8908, 8908));
    assert_eq!((ab.largest, ba.largest), (8908, 8908));
    esp(
        &lab,
        Some(&|a, b| if (a, b) == (1, 2) { cbc() } else { gcm() }),
    );
    let (ab, ba) = both_ways(&lab, &A, &B, (8888, 8888));
    assert_eq!((ab.largest, ba.largest), (8888, 8888));
    esp(&lab, None);
    lab.set_config(false, 9000, NB, SB);
    lab.set_dhcp_mtu(S1, 8942);
    lab.restart_guests(&[A, B], 8942);
    note(&format!("case ipsec: {:.1}s", t.elapsed().as_secs_f64()));

    // 6. Asymmetric: spx2 drops what arrives above 1400.
    let t = Instant::now();
    lab.limit_arrivals(NODES[1], Some(1400));
    let (ab, ba) = both_ways(&lab, &A, &B, (1342, 8942));
    assert_eq!((ab.largest, ba.largest), (1342, 8942));
    lab.limit_arrivals(NODES[1], None);
    note(&format!(
        "case asymmetric: {:.1}s",
        t.elapsed().as_secs_f64()
    ));

    // 7. Both on one node.
    let t = Instant::now();
    let (ad, da) = both_ways(&lab, &A, &D, (8942, 8942));
    assert_eq!((ad.largest, da.largest), (8942, 8942));
    note(&format!("case one node: {:.1}s", t.elapsed().as_secs_f64()));
    let _ = (C, B, S2);
}
