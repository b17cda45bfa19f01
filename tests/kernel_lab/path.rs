//! `spx-doctor path` on a real OVN ([`crate::support::ovn_lab`]): three
//! nodes with their own OVS and ovn-controller, Debian's ovn-central, the
//! topology as Spinifex writes it and paused QEMU guests started with
//! Spinifex's command line, in one boot of the kernel lab. Every case first
//! measures the lab's own truth (DF frames of exact sizes from one guest's
//! namespace, seen arriving or not in the other's, each direction on its
//! own), then holds the doctor's answer to it: the largest size it names
//! crosses, one byte more does not, both ways, and who tells the sender.

use std::time::Instant;

use serde_json::Value;

use super::ipsec::{gcm, geneve_spi, policies, sa};
use crate::support::ovn_lab::{
    note, vpc_rules, Guest, Ladder, OvnLab, Rule, A, B, C, D, NB, NODES, PROBE_WAIT_MS, S1, S2, SB,
    SG_A, SG_VPC, UNBOUND_ENI,
};
use crate::support::strings;
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

/// `spx-doctor path FROM TO --format json` run as `node` (over ssh to the
/// others, the lab's ssh_config): the exit code and the document, held to
/// its schema and to the process's exit code.
fn path(lab: &OvnLab, node: &str, from: &str, to: &str, extra: &[&str]) -> (i32, Value) {
    let cfg = lab.ssh_config();
    // Under emulation an OVSDB answer or a netlink dump can take over the
    // default second (as the other kernel-lab groups find): 3 s a round.
    let mut args = vec![
        "path",
        from,
        to,
        "--format",
        "json",
        "--ssh-config",
        &cfg,
        "--timeout",
        "120s",
        "--probe-timeout",
        "3s",
    ];
    args.extend_from_slice(extra);
    let t = Instant::now();
    let out = lab.doctor(node, &args);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "spx-doctor path {from} {to}: not JSON ({e}); exit {}; stdout: {}; stderr: {}",
            out.code, out.stdout, out.stderr
        )
    });
    crate::support::assert_valid_path(&doc);
    assert_eq!(doc["exit_code"], out.code, "stderr: {}", out.stderr);
    note(&format!(
        "spx-doctor path {from} {to} on {node}: {} exit {} in {:.1}s (its own {} ms)",
        doc["code"],
        out.code,
        t.elapsed().as_secs_f64(),
        doc["duration_ms"]
    ));
    (out.code, doc)
}

/// The direction from `s` to `r` in a path document.
fn direction<'a>(doc: &'a Value, s: &Guest, r: &Guest) -> &'a Value {
    doc["directions"]
        .as_array()
        .and_then(|ds| {
            ds.iter()
                .find(|d| d["from"] == s.instance && d["to"] == r.instance)
        })
        .unwrap_or_else(|| panic!("no direction {} -> {}: {doc:#}", s.instance, r.instance))
}

/// The hop where a direction first drops a packet of its size.
fn first_drop(d: &Value) -> &Value {
    let i = d["first_drop"]
        .as_u64()
        .unwrap_or_else(|| panic!("no hop drops: {d:#}"));
    &d["hops"][i as usize]
}

/// The kinds of a direction's hops, in order.
fn hop_kinds(d: &Value) -> Vec<String> {
    d["hops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["kind"].as_str().unwrap().to_owned())
        .collect()
}

/// Hold the doctor's direction from `s` to `r` to the lab: the largest
/// frame it names is exact and the measured one (`truth`), a fresh probe
/// of it crosses and one byte more does not; and at the size it followed,
/// whether the frame crosses and whether the sender is told are what a
/// probe of that size shows.
fn holds(lab: &OvnLab, doc: &Value, s: &Guest, r: &Guest, truth: &Ladder) -> u32 {
    let d = direction(doc, s, r);
    assert_eq!(d["largest"]["bound"], "exact", "{d:#}");
    let n = d["largest"]["bytes"].as_u64().expect("largest") as u32;
    assert_eq!(
        n, truth.largest,
        "{} -> {}: the doctor vs the lab",
        s.instance, r.instance
    );
    assert!(lab.probe(s, r, n).arrived, "{n} bytes must cross: {d:#}");
    assert!(
        !lab.probe(s, r, n + 1).arrived,
        "{} bytes must not cross: {d:#}",
        n + 1
    );
    let size = d["size"].as_u64().expect("size") as u32;
    let at = lab.probe(s, r, size);
    let dropped = !d["first_drop"].is_null();
    assert_eq!(at.arrived, !dropped, "a frame of {size}: {d:#} vs {at:?}");
    if dropped {
        assert_eq!(
            d["signalled"].as_bool(),
            Some(at.frag_needed.is_some()),
            "is the sender told of {size}? {d:#} vs {at:?}"
        );
    }
    n
}

/// Hold both directions of `a`<->`b` to the lab's truth, measured first.
fn both_hold(lab: &OvnLab, doc: &Value, a: &Guest, b: &Guest, truth: &(Ladder, Ladder)) {
    holds(lab, doc, a, b, &truth.0);
    holds(lab, doc, b, a, &truth.1);
}

fn timed<T>(case: &str, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let v = f();
    note(&format!("case {case}: {:.1}s", t.elapsed().as_secs_f64()));
    v
}

/// 1. Healthy jumbo: 9000 everywhere, the guests offered 8942: both ways
///    carry what they were told, from either guest's node or a third.
fn healthy(lab: &OvnLab) {
    let truth = both_ways(lab, &A, &B, (8942, 8942));
    assert_eq!((truth.0.largest, truth.1.largest), (8942, 8942));
    for node in ["spx1", "spx3"] {
        let (code, doc) = path(lab, node, A.instance, B.instance, &[]);
        assert_eq!(doc["code"], "path/ok", "{doc:#}");
        assert_eq!(code, 0);
        assert_eq!(doc["question"]["size"], 8942, "the offered MTU by default");
        both_hold(lab, &doc, &A, &B, &truth);
        for d in doc["directions"].as_array().unwrap() {
            assert_eq!(d["outcome"], "carried", "{d:#}");
            assert!(hop_kinds(d).contains(&"underlay-path".to_owned()), "{d:#}");
        }
    }
}

/// 2. spx2's switch port at 1500 under 9000 nodes: a black hole at the
///    underlay, both ways, naming the largest guest frame that crosses.
fn black_hole(lab: &OvnLab) {
    lab.set_switch_port(NODES[1], 1500);
    let truth = both_ways(lab, &A, &B, (1442, 1442));
    assert_eq!((truth.0.largest, truth.1.largest), (1442, 1442));
    let (code, doc) = path(lab, "spx1", A.instance, B.instance, &[]);
    assert_eq!(doc["code"], "path/black-hole", "{doc:#}");
    assert_eq!(code, 1);
    both_hold(lab, &doc, &A, &B, &truth);
    for (s, r) in [(&A, &B), (&B, &A)] {
        let d = direction(&doc, s, r);
        assert_eq!(d["outcome"], "silent", "{d:#}");
        assert_eq!(first_drop(d)["kind"], "underlay-path", "{d:#}");
        assert_eq!(d["signalled"], false);
    }
    assert!(!strings(&doc["remediation"]).is_empty(), "{doc:#}");
    // The table names the same hop and sizes.
    let table = lab.doctor(
        "spx1",
        &[
            "path",
            A.instance,
            B.instance,
            "--ssh-config",
            &lab.ssh_config(),
            "--timeout",
            "120s",
            "--probe-timeout",
            "3s",
        ],
    );
    assert_eq!(table.code, 1, "{}", table.stderr);
    assert!(table.stdout.contains("1442"), "{}", table.stdout);
    lab.set_switch_port(NODES[1], 9000);
}

/// 3. The nodes' underlay at 1500 (and the config saying so), the guests
///    still told 8942: the MTU the guests are told is above the path.
fn guest_mtu_above_path(lab: &OvnLab) {
    lab.set_config(false, 1500, NB, SB);
    for n in NODES {
        lab.set_node_underlay(n, 1500);
    }
    let truth = both_ways(lab, &A, &B, (1442, 1442));
    assert_eq!((truth.0.largest, truth.1.largest), (1442, 1442));
    let (code, doc) = path(lab, "spx1", A.instance, B.instance, &[]);
    assert_eq!(doc["code"], "path/guest-mtu-above-path", "{doc:#}");
    assert_eq!(code, 1);
    both_hold(lab, &doc, &A, &B, &truth);
    assert_eq!(
        first_drop(direction(&doc, &A, &B))["kind"],
        "local-underlay",
        "{doc:#}"
    );
    let fixes = strings(&doc["remediation"]).join("\n");
    assert!(fixes.contains("1442"), "{fixes}");
    for n in NODES {
        lab.set_node_underlay(n, 9000);
    }
    lab.set_config(false, 9000, NB, SB);
}

/// How long a routed case's probes wait for the frame or for OVN's
/// "fragmentation needed" (ms). OVN's error is made in userspace: the
/// datapath sends the frame up to ovs-vswitchd (an upcall where it holds no
/// flow yet, and its flows expire after 10 s idle), which hands it to
/// ovn-controller (a packet-in); its pinctrl thread builds the ICMP error
/// and ovs-vswitchd translates it back down (a packet-out). Every other
/// probe of the truth waits 500 ms, and every frame that arrives does so
/// well within it; this chain is the one answer that can take longer. Seen
/// here (frag_ms, in the test log; TCG, a 2-core machine at load 4 to 12):
/// 161 ms for the first error on a fresh path (A to C) against 33 to 62 ms
/// once the flows are in place. The routed-related case once
/// failed after the MTU cases with A "not told" in both 500 ms tries and
/// passed when run first; two runs in that order (2026-12-04) passed, so
/// the failure was not reproduced: nothing a case leaves (the probes use a
/// fresh ICMP id each, so no conntrack entry is shared; A's cached path
/// MTUs are to B, not C) changes what OVN sends, and the one thing that
/// differed was timing. The routed cases now wait 3 s for the error (a
/// probe ends as soon as it comes, so told probes cost no more), which
/// removes that dependence: a sender not told within 3 s was not told.
const ROUTED_WAIT_MS: u64 = 3000;

/// 4. Routed (A in subnet 1, C in subnet 2), gateway_mtu 1400 on both
///    router ports. (a) A's group as Spinifex writes one (egress
///    allow-related; ingress ICMP from C's subnet and ssh only): OVN's
///    "fragmentation needed" still reaches A, related to its flow.
fn routed_related(lab: &OvnLab) {
    lab.set_probe_wait(ROUTED_WAIT_MS);
    lab.set_gateway_mtu(S1, Some(1400));
    lab.set_gateway_mtu(S2, Some(1400));
    lab.set_rules(
        SG_A,
        &[
            Rule::ingress("icmp", None, "10.0.2.0/24"),
            Rule::ingress("tcp", Some(22), "0.0.0.0/0"),
            Rule::egress_all(),
        ],
    );
    let truth = both_ways(lab, &A, &C, (1400, 1400));
    assert_eq!((truth.0.largest, truth.1.largest), (1400, 1400));
    assert_eq!(
        told(&truth.0),
        Some(1400),
        "OVN tells A, related to its flow; what spx1 and A hold:\n{}",
        routed_state(lab)
    );
    let (_, doc) = path(lab, "spx1", A.instance, C.instance, &[]);
    both_hold(lab, &doc, &A, &C, &truth);
    let d = direction(&doc, &A, &C);
    assert_eq!(first_drop(d)["kind"], "router", "{d:#}");
    assert_eq!(d["outcome"], "signalled", "{d:#}");
    assert_ne!(doc["code"], "path/icmp-blocked", "{doc:#}");
}

/// What spx1 and A's namespace hold for the routed path when a routed
/// case fails: A's route (and cached path MTU) to C, spx1's datapath
/// conntrack entries for C, its check_pkt_len flows, ovn-controller's log.
fn routed_state(lab: &OvnLab) -> String {
    let out = lab.vm.sh(&format!(
        "ip -n {ns} route get {c}; ip -n {ns} neigh; {enter} sh -c 'ovs-appctl dpctl/dump-conntrack | grep {c}; ovs-appctl dpctl/dump-flows | grep -c check_pkt_len; tail -20 /var/run/ovn/ovn-controller.log'",
        ns = A.netns(),
        c = C.ip,
        enter = lab.enter("spx1"),
    ));
    format!("{}{}", out.stdout, out.stderr)
}

/// What a routed case's truth says the sender was told: the MTU of
/// the "fragmentation needed" it got, if any.
fn told(t: &Ladder) -> Option<u32> {
    t.refused.as_ref().and_then(|r| r.frag_needed)
}

/// 4. (b) The routed path with A and C in one group whose rules are
///    stateless: neither gets its router port's ICMP error (icmp-blocked).
fn routed_stateless(lab: &OvnLab) {
    lab.set_probe_wait(ROUTED_WAIT_MS);
    lab.set_gateway_mtu(S1, Some(1400));
    lab.set_gateway_mtu(S2, Some(1400));
    // ICMP allowed in from each other only, stateless.
    lab.set_members(SG_VPC, &[B, D], &[UNBOUND_ENI]);
    lab.set_members(SG_A, &[A, C], &[]);
    lab.set_rules(
        SG_A,
        &[
            Rule::ingress("icmp", None, "10.0.2.12/32").stateless(),
            Rule::ingress("icmp", None, "10.0.1.10/32").stateless(),
            Rule::egress_all().stateless(),
        ],
    );
    let truth = both_ways(lab, &A, &C, (1400, 1400));
    assert_eq!(told(&truth.0), None, "stateless: the ICMP error is dropped");
    assert_eq!(told(&truth.1), None, "stateless: the ICMP error is dropped");
    let (code, doc) = path(lab, "spx1", A.instance, C.instance, &[]);
    assert_eq!(doc["code"], "path/icmp-blocked", "{doc:#}");
    assert_eq!(code, 1);
    both_hold(lab, &doc, &A, &C, &truth);
    for (s, r) in [(&A, &C), (&C, &A)] {
        let d = direction(&doc, s, r);
        assert_eq!(d["outcome"], "icmp-blocked", "{d:#}");
        assert_eq!(first_drop(d)["kind"], "router", "{d:#}");
    }
}

/// Put back what a routed case changed, whether it passed or not: the
/// groups' members and rules as the lab starts them, no gateway_mtu.
fn routed_undone(lab: &OvnLab) {
    lab.set_probe_wait(PROBE_WAIT_MS);
    lab.set_rules(SG_A, &vpc_rules());
    lab.set_members(SG_A, &[A], &[]);
    lab.set_members(SG_VPC, &[B, C, D], &[UNBOUND_ENI]);
    lab.set_gateway_mtu(S1, None);
    lab.set_gateway_mtu(S2, None);
}

/// The ESP layout the doctor used each way is the installed SA's, as `ip
/// xfrm state` on the sender shows it (the oracle): rfc4106(gcm(aes)) with
/// a 128-bit ICV is an 8-byte IV, 4-byte alignment and a 16-byte ICV;
/// cbc(aes) with hmac(sha256) truncated to 128 bits a 16-byte IV, 16-byte
/// blocks and a 16-byte ICV. The ESP hop adds the bytes that layout adds.
fn assert_esp_is_the_sas(lab: &OvnLab, doc: &Value) {
    for (s, r) in [(&A, &B), (&B, &A)] {
        let d = direction(doc, s, r);
        let state = lab.vm.ok(&format!(
            "ip -n {} xfrm state list src {} dst {} proto esp",
            s.node.name,
            s.node.underlay(),
            r.node.underlay()
        ));
        let (iv, align, icv) = if state.contains("aead rfc4106(gcm(aes))") && state.contains(" 128")
        {
            (8, 4, 16)
        } else if state.contains("enc cbc(aes)") && state.contains("auth-trunc hmac(sha256)") {
            (16, 16, 16)
        } else {
            panic!("the lab's SA is neither: {state}");
        };
        assert_eq!(
            (&d["esp"]["iv"], &d["esp"]["align"], &d["esp"]["icv"]),
            (&iv.into(), &align.into(), &icv.into()),
            "{state}\n{d:#}"
        );
        let hops = d["hops"].as_array().unwrap();
        let at = |k: &str| {
            hops.iter()
                .find(|h| h["kind"] == k)
                .unwrap_or_else(|| panic!("no {k} hop: {d:#}"))["bytes"]
                .as_u64()
                .unwrap()
        };
        let geneve = at("geneve");
        // ESP transport: the IPv4 header stays; ESP's header (8), the IV,
        // the payload and its 2-byte trailer padded to the alignment, the ICV.
        let payload = geneve - 20;
        let padded = (payload + 2).div_ceil(align) * align;
        assert_eq!(at("esp"), 20 + 8 + iv + padded + icv, "{d:#}");
    }
}

/// 5. IPsec with real SAs between the nodes. (a) rfc4106(gcm(aes)), the
///    guests still told 8942: above the path, by the SA's 34 bytes. (b)
///    Converted as Spinifex converts (DHCP 8908, the guests stopped and
///    started at 8908): ok. (c) AES-CBC with HMAC-SHA256 between spx1 and
///    spx2: the overhead is that SA's, not 34 (8888).
fn ipsec(lab: &OvnLab) {
    lab.set_config(true, 9000, NB, SB);
    esp(lab, Some(&|_, _| gcm()));
    let truth = both_ways(lab, &A, &B, (8908, 8908));
    assert_eq!((truth.0.largest, truth.1.largest), (8908, 8908));
    let (code, doc) = path(lab, "spx1", A.instance, B.instance, &[]);
    assert_eq!(doc["code"], "path/guest-mtu-above-path", "{doc:#}");
    assert_eq!(code, 1);
    both_hold(lab, &doc, &A, &B, &truth);
    assert_esp_is_the_sas(lab, &doc);

    lab.set_dhcp_mtu(S1, 8908);
    lab.restart_guests(&[A, B], 8908);
    let truth = both_ways(lab, &A, &B, (8908, 8908));
    let (code, doc) = path(lab, "spx1", A.instance, B.instance, &[]);
    assert_eq!(doc["code"], "path/ok", "{doc:#}");
    assert_eq!(code, 0);
    both_hold(lab, &doc, &A, &B, &truth);

    esp(
        lab,
        Some(&|a, b| if (a, b) == (1, 2) { cbc() } else { gcm() }),
    );
    let truth = both_ways(lab, &A, &B, (8888, 8888));
    assert_eq!((truth.0.largest, truth.1.largest), (8888, 8888));
    let (code, doc) = path(lab, "spx1", A.instance, B.instance, &[]);
    assert_eq!(code, 1, "{doc:#}");
    both_hold(lab, &doc, &A, &B, &truth);
    assert_esp_is_the_sas(lab, &doc);
}

/// Put back what the IPsec case changed: no SAs, IPsec off, A and B
/// told 8942 again.
fn ipsec_undone(lab: &OvnLab) {
    esp(lab, None);
    lab.set_config(false, 9000, NB, SB);
    lab.set_dhcp_mtu(S1, 8942);
    lab.restart_guests(&[A, B], 8942);
}

/// 6. Asymmetric: spx2 drops what arrives from the underlay above 1400
///    (geneve, and echo requests; its echo replies go out whole): A to B
///    carries 1342, B to A 8942.
fn asymmetric(lab: &OvnLab) {
    lab.limit_arrivals(NODES[1], Some(1400));
    let truth = both_ways(lab, &A, &B, (1342, 8942));
    assert_eq!((truth.0.largest, truth.1.largest), (1342, 8942));
    let (code, doc) = path(lab, "spx1", A.instance, B.instance, &[]);
    assert_eq!(doc["code"], "path/asymmetric", "{doc:#}");
    assert_eq!(code, 1);
    both_hold(lab, &doc, &A, &B, &truth);
    assert_eq!(
        first_drop(direction(&doc, &A, &B))["kind"],
        "underlay-path",
        "{doc:#}"
    );
    assert!(direction(&doc, &B, &A)["first_drop"].is_null(), "{doc:#}");
}

/// 7. Both guests on one node: no tunnel, no underlay.
fn one_node(lab: &OvnLab) {
    let truth = both_ways(lab, &A, &D, (8942, 8942));
    assert_eq!((truth.0.largest, truth.1.largest), (8942, 8942));
    let (code, doc) = path(lab, "spx1", A.instance, D.instance, &[]);
    assert_eq!(doc["code"], "path/ok", "{doc:#}");
    assert_eq!(code, 0);
    both_hold(lab, &doc, &A, &D, &truth);
    for d in doc["directions"].as_array().unwrap() {
        let kinds = hop_kinds(d);
        assert!(
            !kinds.iter().any(|k| k == "geneve" || k == "underlay-path"),
            "{kinds:?}"
        );
    }
}

/// 8. What does not resolve exits 2, naming the lookup that failed: an
///    instance no node runs, an ENI whose port is bound nowhere, NB that
///    does not answer.
fn unresolved(lab: &OvnLab) {
    let unresolved = |from: &str, to: &str, names: &str| {
        let (code, doc) = path(lab, "spx1", from, to, &[]);
        assert_eq!(code, 2, "{doc:#}");
        assert_eq!(doc["code"], "path/unresolved", "{doc:#}");
        let summary = doc["summary"].as_str().unwrap();
        assert!(summary.contains(names), "{summary}");
        assert!(doc["directions"].as_array().unwrap().is_empty(), "{doc:#}");
    };
    unresolved("i-0badc0ffee0000000", B.instance, "i-0badc0ffee0000000");
    unresolved(UNBOUND_ENI, B.instance, UNBOUND_ENI);
    // NB on a port nothing listens on.
    let dead = "tcp:198.19.0.1:6649";
    lab.set_config(false, 9000, dead, SB);
    unresolved(A.instance, B.instance, dead);
    lab.set_config(false, 9000, NB, SB);
}

/// 9. Over Spinifex's bus: nats-server on spx1 and an agent on every node
///    (the config naming the bus, so `path` asks over it by default): B's
///    side, probe and all, comes from spx2's agent and holds to the truth.
fn over_the_bus(lab: &OvnLab) {
    lab.start_bus();
    let truth = both_ways(lab, &A, &B, (8942, 8942));
    let t = Instant::now();
    let out = lab.doctor(
        "spx1",
        &[
            "path",
            A.instance,
            B.instance,
            "--format",
            "json",
            "--timeout",
            "120s",
            "--probe-timeout",
            "3s",
        ],
    );
    let doc: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", out.stdout, out.stderr));
    crate::support::assert_valid_path(&doc);
    note(&format!(
        "spx-doctor path over the bus: {} exit {} in {:.2}s (its own {} ms)",
        doc["code"],
        out.code,
        t.elapsed().as_secs_f64(),
        doc["duration_ms"]
    ));
    assert_eq!(doc["code"], "path/ok", "{doc:#}");
    assert_eq!(out.code, 0);
    let vias: Vec<&str> = doc["ends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["via"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(vias, ["in-process", "nats"], "{doc:#}");
    both_hold(lab, &doc, &A, &B, &truth);
}

/// After the black hole, passed or not: spx2's switch port back at 9000.
fn port_back(lab: &OvnLab) {
    lab.set_switch_port(NODES[1], 9000);
}

/// A case of the lab test: its name, the case, and what puts the lab back
/// after it, passed or not.
type Case = (&'static str, fn(&OvnLab), fn(&OvnLab));

#[root_test]
fn path_on_a_real_ovn_names_the_hop_the_size_and_the_fix_both_ways() {
    let nothing: fn(&OvnLab) = |_| {};
    lab_test(
        "path_on_a_real_ovn_names_the_hop_the_size_and_the_fix_both_ways",
        OvnLab::boot,
        &[
            ("healthy", healthy, nothing),
            ("black-hole", black_hole, port_back),
            ("guest-mtu-above-path", guest_mtu_above_path, nothing),
            // After the MTU cases, where routed-related once failed when every
            // probe waited 500 ms for OVN's error (ROUTED_WAIT_MS).
            ("routed-related", routed_related, routed_undone),
            ("routed-stateless", routed_stateless, routed_undone),
            ("ipsec", ipsec, ipsec_undone),
            ("asymmetric", asymmetric, |lab| {
                lab.limit_arrivals(NODES[1], None)
            }),
            ("one-node", one_node, nothing),
            ("unresolved", unresolved, nothing),
        ],
    );
}

/// The same lab on this host with OVS's userspace datapath
/// ([`OvnLab::boot_userspace`]), where `bench/path.sh` times the doctor
/// against the runbook at the host's own speed: its verdicts are held to
/// that lab's truth as the kernel lab's are. The cases whose truth lives
/// in the kernel's own datapath are the kernel lab's alone: IPsec (no xfrm
/// touches a frame OVS encapsulates in userspace) and the asymmetric path
/// (its limit is a firewall on the node's input, which a geneve frame OVS
/// takes off `eth1`'s packet socket never crosses). The black hole is not
/// a case here either: its truth holds and `bench/path.sh` runs it on a
/// quiet machine (39 of 40 runs the runbook's answer), but under CI's load
/// (kernel-lab guests on both cores) this lab's datapath lost spx1's probes
/// from about 1350 to 1500 while both nodes' ladders crossed, at both of
/// round 1's moments, and the doctor said, rightly, that spx1's probe
/// concluded nothing: a test of this lab's capacity, not of the doctor. The
/// kernel lab's black-hole case runs in CI.
#[root_test]
fn path_on_ovs_userspace_datapath_holds_to_the_labs_truth() {
    let nothing: fn(&OvnLab) = |_| {};
    lab_test(
        "path_on_ovs_userspace_datapath_holds_to_the_labs_truth",
        OvnLab::boot_userspace,
        &[
            ("healthy", healthy, nothing),
            ("guest-mtu-above-path", guest_mtu_above_path, nothing),
            ("one-node", one_node, nothing),
            ("unresolved", unresolved, nothing),
            ("over-the-bus", over_the_bus, |lab| lab.stop_bus()),
        ],
    );
}

/// Bring a lab up with `boot` (or skip, as it says) and run `cases` on it,
/// each followed by what puts the lab back (passed or not); fail naming
/// every case that failed. `SPX_PATH_LAB_CASES=routed-related,ipsec` runs
/// only those, in that order (while working on one, or to try another
/// order).
fn lab_test(test: &str, boot: fn(&str) -> Option<OvnLab>, cases: &[Case]) {
    let started = Instant::now();
    let Some(lab) = boot(test) else {
        return;
    };
    note(&format!("up in {:.1}s", started.elapsed().as_secs_f64()));
    let lab = &lab;
    let only = std::env::var("SPX_PATH_LAB_CASES").ok();
    let order: Vec<&Case> = match only.as_deref() {
        None => cases.iter().collect(),
        Some(o) => o
            .split(',')
            .filter_map(|n| {
                let case = cases.iter().find(|(name, ..)| *name == n);
                if case.is_none() {
                    note(&format!("SPX_PATH_LAB_CASES: no case {n} in this lab"));
                }
                case
            })
            .collect(),
    };
    let mut failed = Vec::new();
    for &(name, case, undo) in order {
        let run =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| timed(name, || case(lab))));
        if run.is_err() {
            note(&format!("case {name}: FAILED"));
            failed.push(name);
        }
        undo(lab);
    }
    note(&format!(
        "all cases in {:.1}s",
        started.elapsed().as_secs_f64()
    ));
    assert!(failed.is_empty(), "cases failed: {failed:?}");
}
