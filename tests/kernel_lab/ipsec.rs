//! `ipsec.xfrm` with IPsec wanted, on real ESP: three namespaces of the
//! guest are three nodes on one bridged underlay (198.18.0.1-3), each
//! holding `rfc4106(gcm(aes))` transport SAs and policies for geneve (UDP
//! 6081) in both directions with each peer, as OVN's IPsec sets them up,
//! and geneve tunnels between them carrying pings while the check runs.
//! The peers come from a real OVN southbound `Encap` table and each node's
//! `ovn-encap-ip` from its own Open_vSwitch database, served in the guest.

use serde_json::{json, Value};

use crate::support::vm::{self, Vm, VmOptions};
use crate::support::{check, strings};
use spx_test_harness::root_test;

pub(super) const KEY: &str = "0x0102030405060708090a0b0c0d0e0f1011121314";

pub(super) fn addr(n: u32) -> String {
    format!("198.18.0.{n}")
}

/// The SPI of the SA from node `s` to node `d` (one per direction).
pub(super) fn spi(s: u32, d: u32) -> String {
    format!("0x{:x}", 0x1000 + s * 16 + d)
}

/// `xfrm state add` (an `ip` command) for the SA `s`->`d` with `alg`
/// (`aead rfc4106…` or `enc … auth …`).
pub(super) fn sa(s: u32, d: u32, alg: &str) -> String {
    format!(
        "xfrm state add src {} dst {} proto esp spi {} reqid {} mode transport {alg}",
        addr(s),
        addr(d),
        spi(s, d),
        s * 16 + d
    )
}

pub(super) fn gcm() -> String {
    format!("aead 'rfc4106(gcm(aes))' {KEY} 128")
}

/// A node's config: spx`me` of `nodes` nodes, SB in the guest.
fn config(vm: &Vm, me: u32, ipsec: bool) -> String {
    let mut text =
        format!("node = \"spx{me}\"\n[network]\nipsec_enabled = {ipsec}\nunderlay_mtu = 1500\n");
    for n in 1..=3 {
        text.push_str(&format!("[nodes.spx{n}]\nhost = \"{}\"\n", addr(n)));
        text.push_str(&format!(
            "[nodes.spx{n}.vpcd]\novn_nb_addr = \"unix:/tmp/nb.sock\"\novn_sb_addr = \"unix:/tmp/sb.sock\"\n"
        ));
    }
    vm.file(&format!("spx{me}-{ipsec}.toml"), &text)
}

fn xfrm(vm: &Vm, me: u32, ipsec: bool) -> (i32, Value) {
    let cfg = config(vm, me, ipsec);
    let ovs = format!("unix:/tmp/ovs{me}.sock");
    let (code, doc) = vm.spx(
        Some(&format!("n{me}")),
        &["--check", "ipsec.xfrm", "--config", &cfg, "--ovs-db", &ovs],
    );
    (code, check(&doc, "ipsec.xfrm").clone())
}

/// Packets through the SA `s`->`d` as node `ns` counts them (`ip -s xfrm
/// state`, the oracle that traffic really went through ESP).
pub(super) fn sa_packets(vm: &Vm, ns: u32, s: u32, d: u32) -> u64 {
    let out = vm.ok(&format!(
        "ip -s -n n{ns} xfrm state get src {} dst {} proto esp spi {}",
        addr(s),
        addr(d),
        spi(s, d)
    ));
    // "lifetime current:\n\t  BYTES(bytes), PACKETS(packets)"
    let current = out.split("lifetime current:").nth(1).expect(&out);
    let packets = current
        .split("(packets)")
        .next()
        .and_then(|s| s.rsplit([',', ' ']).next())
        .unwrap_or_else(|| panic!("{out}"));
    packets.trim().parse().unwrap()
}

/// Pings over the geneve tunnel from node `a` to node `b` succeed.
pub(super) fn overlay_reachable(vm: &Vm, a: u32, b: u32) -> bool {
    overlay_pings(vm, &[(a, b)], 5)[0]
}

/// Every direction of the three-node mesh.
pub(super) const DIRECTIONS: [(u32, u32); 6] = [(1, 2), (2, 1), (1, 3), (3, 1), (2, 3), (3, 2)];

/// One ping over the geneve tunnel from node `a` to node `b` for each
/// `(a, b)` of `pairs`, all at once: whether each was answered within
/// `wait` seconds.
pub(super) fn overlay_pings(vm: &Vm, pairs: &[(u32, u32)], wait: u32) -> Vec<bool> {
    let mut script = String::new();
    for (i, (a, b)) in pairs.iter().enumerate() {
        let (lo, hi) = (a.min(b), a.max(b));
        script.push_str(&format!(
            "(ip netns exec n{a} ping -c 1 -W {wait} 10.{lo}{hi}.0.{b} >/dev/null 2>&1 && echo {i}) &\n"
        ));
    }
    script.push_str("wait\n");
    let answered: Vec<String> = vm.ok(&script).lines().map(str::to_owned).collect();
    (0..pairs.len())
        .map(|i| answered.contains(&i.to_string()))
        .collect()
}

/// What the three-node ESP lab loads.
pub(super) const MODULES: [&str; 7] = [
    "veth",
    "bridge",
    "geneve",
    "xfrm_user",
    "esp4",
    // ESP's IV generator needs the DRBG, which needs jitter entropy.
    "jitterentropy_rng",
    "drbg",
];

/// The shell script that makes three namespaces of the guest, `n1`-`n3`,
/// three nodes at [`addr`] 1-3 on one bridged underlay, with real
/// `rfc4106(gcm(aes))` transport SAs ([`sa`], [`spi`]) and policies for
/// geneve both ways per pair, and a geneve tunnel per pair that
/// [`overlay_reachable`] pings through them.
pub(super) fn esp_mesh() -> String {
    // The underlay: a bridge in namespace sw, one veth per node. SAs and
    // policies for every pair, in both nodes of the pair; a geneve tunnel
    // per pair (VNI 1ab, overlay 10.ab.0.0/24). One `ip -batch` per
    // namespace: every exec costs in the guest.
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
    for n in 1..=3 {
        let mut lines = vec![
            "link set lo up".to_owned(),
            format!("link add eth0 type veth peer name p{n} netns sw"),
            format!("addr add {}/24 dev eth0", addr(n)),
            "link set eth0 up".to_owned(),
        ];
        for peer in (1..=3).filter(|p| *p != n) {
            let (a, b) = (n.min(peer), n.max(peer));
            let (m, p) = (addr(n), addr(peer));
            lines.extend([
                sa(n, peer, &gcm()),
                sa(peer, n, &gcm()),
                format!("xfrm policy add src {m} dst {p} proto udp dport 6081 dir out tmpl src {m} dst {p} proto esp reqid {} mode transport", n * 16 + peer),
                format!("xfrm policy add src {p} dst {m} proto udp dport 6081 dir in tmpl src {p} dst {m} proto esp reqid {} mode transport", peer * 16 + n),
                format!("link add gnv{peer} type geneve id 1{a}{b} remote {p}"),
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

#[root_test]
fn xfrm_on_real_esp_sas_between_three_nodes() {
    let test = "xfrm_on_real_esp_sas_between_three_nodes";
    let Some(image) = vm::lab_or_skip(test) else {
        return;
    };
    let vm = Vm::boot(image, VmOptions::default().modules(&MODULES));
    let mut setup = esp_mesh();
    // OVN: the SB Encap table (one chassis per node) and each node's
    // Open_vSwitch row with its ovn-encap-ip.
    setup.push_str(
        "ovsdb-tool create /tmp/sb.db /usr/share/ovn/ovn-sb.ovsschema\n\
         ovsdb-server --detach --no-chdir --pidfile=/tmp/sb.pid --unixctl=/tmp/sb.ctl --remote=punix:/tmp/sb.sock /tmp/sb.db\n",
    );
    for n in 1..=3 {
        setup.push_str(&format!(
            "ovn-sbctl --db=unix:/tmp/sb.sock chassis-add spx{n} geneve {a}\n\
             ovsdb-tool create /tmp/ovs{n}.db /usr/share/openvswitch/vswitch.ovsschema\n\
             ovsdb-server --detach --no-chdir --pidfile=/tmp/ovs{n}.pid --unixctl=/tmp/ovs{n}.ctl --remote=punix:/tmp/ovs{n}.sock /tmp/ovs{n}.db\n\
             ovs-vsctl --db=unix:/tmp/ovs{n}.sock --no-wait init\n\
             ovs-vsctl --db=unix:/tmp/ovs{n}.sock --no-wait set Open_vSwitch . external_ids:ovn-encap-ip={a}\n",
            a = addr(n)
        ));
    }
    vm.ok(&setup);

    // Every overlay path works through ESP, both ways.
    assert_eq!(
        overlay_pings(&vm, &DIRECTIONS, 5),
        [true; 6],
        "geneve over ESP, {DIRECTIONS:?}"
    );
    for n in 1..=3 {
        assert_eq!(
            vm.ok(&format!("ip -n n{n} xfrm state | grep -c '^src'"))
                .trim(),
            "4",
            "2 x (3 - 1) SAs in n{n} (oracle: ip xfrm state)"
        );
    }

    // Geneve-over-ESP traffic while the checks run, on every node.
    vm.ok("for p in 2 3; do (ip netns exec n1 ping -q -i 0.05 -w 120 10.1$p.0.$p >/dev/null 2>&1 &); done; \
           (ip netns exec n2 ping -q -i 0.05 -w 120 10.23.0.3 >/dev/null 2>&1 &)");
    let before = sa_packets(&vm, 1, 1, 2);
    for me in 1..=3 {
        let (code, c) = xfrm(&vm, me, true);
        assert_eq!(c["status"], "pass", "node {me}: {c:#}");
        assert_eq!(code, 0);
        assert_eq!(c["evidence"]["sa_count"], 4, "{c:#}");
        assert_eq!(c["evidence"]["expected_min"], 4, "{c:#}");
        assert_eq!(c["evidence"]["algorithms"], json!(["rfc4106(gcm(aes))"]));
        let peers: Vec<String> = (1..=3).filter(|n| *n != me).map(addr).collect();
        assert_eq!(c["evidence"]["peers"], json!(peers), "{c:#}");
        assert_eq!(
            c["evidence"]["peer_source"],
            "OVN_Southbound Encap at unix:/tmp/sb.sock"
        );
        assert_eq!(c["evidence"]["missing_pairs"], json!([]), "{c:#}");
        assert_eq!(c["evidence"]["stale_pairs"], json!([]), "{c:#}");
    }
    let during = sa_packets(&vm, 1, 1, 2) - before;
    assert!(
        during >= 20,
        "geneve traffic went through the ESP SA while the checks ran ({during} packets)"
    );

    // One SA gone from node 1: the inbound one from node 3. Node 3 still
    // encrypts, node 1 can no longer decrypt (the oracle), and the check
    // names exactly that pair and direction.
    vm.ok(&format!(
        "ip -n n1 xfrm state delete src {} dst {} proto esp spi {}",
        addr(3),
        addr(1),
        spi(3, 1)
    ));
    assert!(!overlay_reachable(&vm, 3, 1), "3 -> 1 needs the SA removed");
    let (code, c) = xfrm(&vm, 1, true);
    assert_eq!(c["status"], "fail", "{c:#}");
    assert_eq!(code, 1);
    assert_eq!(c["evidence"]["sa_count"], 3);
    assert_eq!(
        c["evidence"]["missing_pairs"],
        json!(["198.18.0.3->198.18.0.1"])
    );
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains("3 ESP SAs, fewer than 2x(3-1) = 4")
            && summary.contains("missing 198.18.0.3->198.18.0.1"),
        "{summary}"
    );
    assert!(!strings(&c["remediation"]).is_empty());
    vm.ok(&format!("ip -n n1 {}", sa(3, 1, &gcm())));
    assert!(overlay_reachable(&vm, 3, 1));

    // A pair on another algorithm (an IKE configuration OVN does not
    // own): node 1 -> 3 with AES-CBC and HMAC-SHA256, on both ends, so
    // traffic still flows; the check names the SA and what it uses.
    let cbc = format!(
        "enc 'cbc(aes)' 0x{} auth-trunc 'hmac(sha256)' 0x{} 128",
        "11".repeat(16),
        "22".repeat(32)
    );
    for ns in ["n1", "n3"] {
        vm.ok(&format!(
            "ip -n {ns} xfrm state delete src {} dst {} proto esp spi {} && ip -n {ns} {}",
            addr(1),
            addr(3),
            spi(1, 3),
            sa(1, 3, &cbc)
        ));
    }
    assert!(overlay_reachable(&vm, 1, 3), "1 -> 3 over AES-CBC");
    let (code, c) = xfrm(&vm, 1, true);
    assert_eq!(c["status"], "fail", "{c:#}");
    assert_eq!(code, 1);
    assert_eq!(
        c["evidence"]["algorithms"],
        json!(["cbc(aes)", "rfc4106(gcm(aes))"])
    );
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains("not rfc4106(gcm(aes)): 198.18.0.1->198.18.0.3 uses cbc(aes)"),
        "{summary}"
    );
    assert_eq!(c["evidence"]["missing_pairs"], json!([]), "{c:#}");
    assert!(
        strings(&c["remediation"])
            .iter()
            .any(|f| f.contains("IKE configuration OVN does not own")),
        "{c:#}"
    );
    // The bundle of that run holds every SA and none of their keys: the
    // AEAD key and the CBC and HMAC keys, in any encoding a field would
    // take (hex, the bytes as a JSON array).
    let (out, bundle) = vm.spx_recording(
        Some("n1"),
        &[
            "--check",
            "ipsec.xfrm",
            "--config",
            &config(&vm, 1, true),
            "--ovs-db",
            "unix:/tmp/ovs1.sock",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let text = crate::support::bundle_text(&bundle);
    assert!(text.contains("\"kind\":\"xfrm-states\""), "{text}");
    assert!(
        text.contains(&format!("\"spi\":{}", 0x1000 + 16 + 3)),
        "{text}"
    );
    assert!(text.contains("cbc(aes)") && text.contains("rfc4106(gcm(aes))"));
    let bytes = |b: u8, n: usize| format!("[{}", vec![b.to_string(); n].join(","));
    for secret in [
        KEY.trim_start_matches("0x").to_owned(),
        "0102030405060708".to_owned(),
        "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16".to_owned(),
        "11".repeat(16),
        bytes(0x11, 16),
        "22".repeat(32),
        bytes(0x22, 32),
    ] {
        assert!(!text.contains(&secret), "the bundle holds a key: {secret}");
    }
    vm.ok(&format!(
        "ip -n n1 xfrm state delete src {} dst {} proto esp spi {} && ip -n n1 {}",
        addr(1),
        addr(3),
        spi(1, 3),
        sa(1, 3, &gcm())
    ));

    // SAs left toward a node that is gone (198.18.0.4: in neither the
    // config nor OVN's Encap table): every peer is covered, so a warning
    // that names both directions.
    vm.ok(&format!(
        "ip -n n1 {} && ip -n n1 {}",
        sa(1, 4, &gcm()),
        sa(4, 1, &gcm())
    ));
    let (code, c) = xfrm(&vm, 1, true);
    assert_eq!(c["status"], "warn", "{c:#}");
    assert_eq!(code, 0);
    assert_eq!(c["evidence"]["sa_count"], 6);
    assert_eq!(
        c["evidence"]["stale_pairs"],
        json!(["198.18.0.1->198.18.0.4", "198.18.0.4->198.18.0.1"])
    );
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("198.18.0.1->198.18.0.4, 198.18.0.4->198.18.0.1"),
        "{c:#}"
    );

    // IPsec turned off in the config, charon's SAs left behind: a failure
    // naming every one; the printed flush clears them, then it passes.
    let (code, c) = xfrm(&vm, 1, false);
    assert_eq!(c["status"], "fail", "{c:#}");
    assert_eq!(code, 1);
    assert_eq!(c["evidence"]["expected_min"], 0);
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("6 ESP SAs remain although IPsec is not wanted"),
        "{summary}"
    );
    for (s, d) in [(1, 2), (2, 1), (1, 3), (3, 1), (1, 4), (4, 1)] {
        assert!(
            summary.contains(&format!("{}->{}", addr(s), addr(d))),
            "{summary}"
        );
    }
    let flush = strings(&c["remediation"])
        .into_iter()
        .find(|f| f.contains("ip xfrm state flush proto esp"))
        .expect("the flush");
    assert!(flush.contains("`ip xfrm policy flush`"), "{flush}");
    vm.ok("ip -n n1 xfrm state flush proto esp && ip -n n1 xfrm policy flush");
    let (code, c) = xfrm(&vm, 1, false);
    assert_eq!(c["status"], "pass", "{c:#}");
    assert_eq!(code, 0);
    assert_eq!(c["evidence"]["sa_count"], 0);
}
