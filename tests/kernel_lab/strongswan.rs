//! `ipsec.xfrm` on IPsec as strongSwan really runs it: three namespace
//! nodes of the guest, each with its own charon (Debian's strongSwan,
//! started by the starter), configured by ovs-monitor-ipsec's own code from
//! Debian's openvswitch-ipsec, with certificates from a cluster CA made at
//! test time ([`crate::support::strongswan`]), geneve between them and
//! pings as the traffic. The peers come from a real OVN southbound
//! `Encap` table, each node's `ovn-encap-ip` from its own OVS database.
//!
//! In order, on one boot: armed and idle (trap policies, no SA: a pass
//! naming the peers without SAs yet); the mesh up (4 SAs per peer, 4x(N-1));
//! an SA removed behind charon's back, another algorithm and SAs toward a
//! node that left (hand-made on top of the real ones); one node's
//! strongSwan stopped while geneve flows (an ACQUIRE state on the others:
//! IKE pending, both directions named; `ipsec.errors` on the survivors
//! names the drops toward it and its plaintext; on the stopped node
//! `ipsec.daemon` finds no charon of its own, the others' being in other
//! network namespaces, and `ipsec.policy` names its geneve as plaintext);
//! that node back without the CA in
//! its trust store (IKE fails: AUTH_FAILED, and pending again); IPsec
//! turned off with charon's SAs left. The oracles: `ip -s xfrm state`,
//! `ip xfrm policy`, `/proc/net/xfrm_stat`, charon's log, and pings.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::ipsec_daemon::daemon;
use crate::support::strongswan::{
    self, addr, moved, oracle_states, pings, start_pings, stop_pings, xfrm_stat, Mesh,
};
use crate::support::vm::Vm;
use crate::support::{check, strings};
use spx_test_harness::root_test;

const NODES: [u32; 3] = [1, 2, 3];
/// Every direction of the mesh.
const ALL: [(u32, u32); 6] = [(1, 2), (2, 1), (1, 3), (3, 1), (2, 3), (3, 2)];

#[allow(clippy::disallowed_macros)] // the measured facts belong in the test log
fn note(line: &str) {
    eprintln!("strongswan lab: {line}");
}

/// Node `n`'s `ipsec.xfrm`, run as the node (its /etc, its /var/run: its
/// OVS database is the default one), IPsec wanted or not: the exit code,
/// the finding, and the bundle the run recorded (replayed already).
fn xfrm_recorded(vm: &Vm, mesh: &Mesh, n: u32, ipsec: bool) -> (i32, Value, std::path::PathBuf) {
    let cfg = mesh.doctor_config(vm, n, ipsec);
    let started = Instant::now();
    // (--probe-timeout: on the emulated CPU, shared with three charons, a
    // netlink dump can take over the default second.)
    let (code, doc, bundle) = vm.spx_in_recorded(
        &mesh.enter(n),
        &[
            "--check",
            "ipsec.xfrm",
            "--config",
            &cfg,
            "--probe-timeout",
            "5s",
        ],
    );
    note(&format!(
        "n{n}: {} in {:.1}s (the doctor's own {} ms)",
        check(&doc, "ipsec.xfrm")["code"],
        started.elapsed().as_secs_f64(),
        doc["duration_ms"]
    ));
    (code, check(&doc, "ipsec.xfrm").clone(), bundle)
}

fn xfrm(vm: &Vm, mesh: &Mesh, n: u32, ipsec: bool) -> (i32, Value) {
    let (code, c, _) = xfrm_recorded(vm, mesh, n, ipsec);
    (code, c)
}

/// What the stopped-peer scenario asks of each node: one run, one sample
/// window for `ipsec.errors`.
const STOPPED_CHECKS: &str = "ipsec.xfrm,ipsec.errors,ipsec.daemon,ipsec.policy";

/// Node `n`'s [`STOPPED_CHECKS`] as the node, IPsec wanted (recorded and
/// replayed), and `/proc/net/xfrm_stat` in its namespace read just before
/// and just after the run, around the doctor's own window: the exit code,
/// the report, and the counters the oracle saw move.
fn judged(vm: &Vm, mesh: &Mesh, n: u32) -> (i32, Value, BTreeSet<String>) {
    let cfg = mesh.doctor_config(vm, n, true);
    let started = Instant::now();
    let before = xfrm_stat(vm, &format!("n{n}"));
    let (code, doc, _) = vm.spx_in_recorded(
        &mesh.enter(n),
        &[
            "--check",
            STOPPED_CHECKS,
            "--config",
            &cfg,
            "--probe-timeout",
            "5s",
            // 5 pings a second per flow; 5 s, because under load the
            // emulated guest sent only 3 in a 2 s window (one survivor's
            // plaintext from n3 then fell outside it).
            "--sample",
            "5s",
        ],
    );
    let after = xfrm_stat(vm, &format!("n{n}"));
    note(&format!(
        "n{n}: {} in {:.1}s (the doctor's own {} ms)",
        STOPPED_CHECKS
            .split(',')
            .map(|id| check(&doc, id)["code"].as_str().unwrap_or("?").to_owned())
            .collect::<Vec<_>>()
            .join(", "),
        started.elapsed().as_secs_f64(),
        doc["duration_ms"]
    ));
    (code, doc, moved(&before, &after).into_keys().collect())
}

/// The counters a node's ipsec.errors saw advance.
fn advanced(doc: &Value) -> BTreeSet<String> {
    check(doc, "ipsec.errors")["evidence"]["advanced"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["counter"].as_str().unwrap().to_owned())
        .collect()
}

fn peers_of(n: u32) -> Vec<String> {
    NODES
        .iter()
        .filter(|p| **p != n)
        .map(|p| addr(*p))
        .collect()
}

/// The reported SAs of a finding: "src dst spi algorithm selector".
fn reported(c: &Value) -> BTreeSet<String> {
    c["evidence"]["sas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} {} {} {} {}",
                s["src"].as_str().unwrap(),
                s["dst"].as_str().unwrap(),
                s["spi"].as_str().unwrap(),
                s["algorithm"].as_str().unwrap(),
                s["selector"].as_str().unwrap()
            )
        })
        .collect()
}

/// The same from `ip -s xfrm state` (SAs only).
fn oracle(vm: &Vm, n: u32) -> BTreeSet<String> {
    oracle_states(vm, &format!("n{n}"))
        .into_iter()
        .filter(|s| !s.is_larval())
        .map(|s| {
            format!(
                "{} {} {} {} {}",
                s.src,
                s.dst,
                s.spi,
                s.algorithm,
                s.sel.trim_start_matches("proto ")
            )
        })
        .collect()
}

/// Wait until every node holds `want` SAs (not counting larval states).
fn wait_sas(vm: &Vm, nodes: &[u32], want: usize, bound: Duration) -> bool {
    let cond: Vec<String> = nodes
        .iter()
        .map(|n| format!("[ \"$(ip -n n{n} xfrm state | grep -c '^src')\" = {want} ]"))
        .collect();
    vm.wait_until_every(&cond.join(" && "), bound, "0.5")
}

#[root_test]
fn xfrm_on_real_strongswan_between_three_nodes() {
    let lab_started = Instant::now();
    let Some((vm, mesh)) = strongswan::boot("xfrm_on_real_strongswan_between_three_nodes", 3)
    else {
        return;
    };
    // The layout ovs-monitor-ipsec writes: two connections per peer.
    let conf = mesh.ipsec_conf(1);
    for want in [
        "auto=route",
        "conn ovn-spx2-0-in-1",
        "conn ovn-spx2-0-out-1",
        "leftprotoport=udp/6081",
        "rightprotoport=udp/6081",
        "ca ca_auth",
    ] {
        assert!(conf.contains(want), "{want} in\n{conf}");
    }
    assert!(
        !conf.contains("auto=add"),
        "the ca section is ignored by the starter"
    );
    let setup = Instant::now();
    vm.ok(&mesh.setup_script());
    note(&format!(
        "fabric, node directories and OVSDB in {:.1}s",
        setup.elapsed().as_secs_f64()
    ));

    // 1. Armed and idle: trap policies for every peer, no state at all.
    let armed_in = mesh.start(&vm, &NODES);
    note(&format!(
        "three charons armed {:.1}s after `ipsec start`",
        armed_in.as_secs_f64()
    ));
    for n in NODES {
        assert!(oracle_states(&vm, &format!("n{n}")).is_empty(), "n{n} idle");
        assert_eq!(Mesh::policy_count(&vm, n), 8, "4 policies per peer on n{n}");
    }
    let policies = vm.ok("ip -n n1 xfrm policy");
    assert!(!policies.contains("dir fwd"), "{policies}");
    assert!(
        !policies.contains("spi 0x"),
        "no SPI in the templates yet: {policies}"
    );
    assert_eq!(
        policies.matches("socket in").count(),
        4,
        "charon's IKE sockets: {policies}"
    );
    // One node judged: the others hold the same (the oracle above).
    let (code, c) = xfrm(&vm, &mesh, 1, true);
    assert_eq!(c["code"], "ipsec.xfrm/armed", "{c:#}");
    assert_eq!(code, 0);
    assert_eq!(c["evidence"]["sa_count"], 0);
    assert_eq!(c["evidence"]["policy_count"], 8);
    assert_eq!(c["evidence"]["armed_peers"], json!(peers_of(1)), "{c:#}");
    assert_eq!(
        c["evidence"]["peer_source"],
        "OVN_Southbound Encap at unix:/tmp/sb.sock"
    );
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .starts_with("armed: no SA yet with 198.18.0.2 and 198.18.0.3"),
        "{c:#}"
    );
    note(&format!(
        "n1 idle: {}",
        vm.ok("ip -n n1 xfrm policy | grep -A3 '^src 198' | tr '\\n' ' '")
    ));

    // 2. The mesh up. One initiator per pair first (both ends at once
    //    collide and retransmit under emulation), then the other way over
    //    the IKE SAs that exist.
    let up = Instant::now();
    start_pings(&vm, &[(1, 2), (2, 3), (3, 1)], "0.5");
    assert!(
        wait_sas(&vm, &NODES, 4, Duration::from_secs(180)),
        "{}",
        mesh.charon_log(&vm, 1)
    );
    let first = up.elapsed();
    start_pings(&vm, &[(2, 1), (3, 2), (1, 3)], "0.5");
    assert!(
        wait_sas(&vm, &NODES, 8, Duration::from_secs(180)),
        "{}",
        mesh.charon_log(&vm, 1)
    );
    note(&format!(
        "IKE: one CHILD_SA per pair after {:.1}s, all 4 per peer after {:.1}s",
        first.as_secs_f64(),
        up.elapsed().as_secs_f64()
    ));
    assert_eq!(pings(&vm, &ALL, 5), [true; 6], "geneve over ESP, {ALL:?}");
    for n in NODES {
        assert_eq!(oracle(&vm, n).len(), 8, "4x(3-1) on n{n}: ip xfrm state");
    }
    // One node judged (each judges only its own table: the others hold
    // the same, the oracle above).
    let (code, c, bundle) = xfrm_recorded(&vm, &mesh, 1, true);
    assert_eq!(c["code"], "ipsec.xfrm/ok", "{c:#}");
    assert_eq!(code, 0);
    assert_eq!(c["evidence"]["sa_count"], 8, "4x(3-1)");
    assert_eq!(c["evidence"]["expected"], 8);
    assert_eq!(c["evidence"]["expected_min"], 4);
    assert_eq!(c["evidence"]["algorithms"], json!(["rfc4106(gcm(aes))"]));
    assert_eq!(reported(&c), oracle(&vm, 1), "against ip xfrm state");
    let geneve = c["evidence"]["sas"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["selector"] == "udp dport 6081")
        .count();
    assert_eq!(geneve, 4, "per peer one SA each way carries geneve");
    assert!(
        c["evidence"]["sas"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["selector"] == "udp sport 6081")
            .all(|s| s["bytes"] == 0),
        "{c:#}"
    );
    // The two `sport 6081` SAs of each peer stay at 0 bytes; the geneve
    // ones carry the pings (`ip -s xfrm state`).
    let states = oracle_states(&vm, "n1");
    assert!(
        states
            .iter()
            .filter(|s| !s.is_geneve())
            .all(|s| s.bytes == 0),
        "{states:#?}"
    );
    assert!(
        states.iter().filter(|s| s.is_geneve()).all(|s| s.bytes > 0),
        "{states:#?}"
    );
    note(&format!(
        "n1 up: {}",
        states
            .iter()
            .map(|s| format!(
                "{}->{} spi {} reqid {} {} {}B",
                s.src, s.dst, s.spi, s.reqid, s.sel, s.bytes
            ))
            .collect::<Vec<_>>()
            .join("; ")
    ));
    // That run's bundle holds the SAs and policies and none of charon's
    // keys, in any encoding a field would take.
    let text = crate::support::bundle_text(&bundle);
    assert!(
        text.contains("\"kind\":\"xfrm-states\"") && text.contains("\"kind\":\"xfrm-policies\"")
    );
    for s in &states {
        let key = s.key.trim_start_matches("0x");
        assert_eq!(key.len(), 72, "256-bit AES-GCM and its salt: {s:?}");
        let bytes: Vec<String> = (0..8)
            .map(|i| {
                u8::from_str_radix(&key[i * 2..i * 2 + 2], 16)
                    .unwrap()
                    .to_string()
            })
            .collect();
        for secret in [
            key.to_owned(),
            key[..16].to_owned(),
            format!("[{}", bytes.join(",")),
        ] {
            assert!(!text.contains(&secret), "the bundle holds a key: {secret}");
        }
    }

    // 3. An SA removed behind charon's back: n1 loses the one that
    //    decrypts n2's geneve. n2 still encrypts (the oracle: its pings no
    //    longer arrive); n1's policy and the other SA of that CHILD_SA are
    //    still here, so it is lost, not armed. Put back as it was.
    let gone = states
        .iter()
        .find(|s| s.src == addr(2) && s.is_geneve())
        .unwrap()
        .clone();
    vm.ok(&format!(
        "ip -n n1 xfrm state delete src {} dst {} proto esp spi {}",
        gone.src, gone.dst, gone.spi
    ));
    assert_eq!(
        pings(&vm, &[(2, 1), (1, 2)], 2),
        [false, false],
        "n2's geneve dropped at n1"
    );
    let (code, c) = xfrm(&vm, &mesh, 1, true);
    assert_eq!(c["code"], "ipsec.xfrm/missing-sas", "{c:#}");
    assert_eq!(code, 1);
    assert_eq!(
        c["summary"],
        "IPsec is wanted but missing 198.18.0.2->198.18.0.1 (the SA is gone but the rest of its CHILD_SA is here: removed behind the IKE daemon's back, so its packets are dropped)"
    );
    assert_eq!(c["evidence"]["sa_count"], 7);
    vm.ok(&format!(
        "ip -n n1 xfrm state add src {} dst {} proto esp spi {} reqid {} mode transport replay-window 32 \
         aead 'rfc4106(gcm(aes))' {} 128 sel src {}/32 dst {}/32 {}",
        gone.src, gone.dst, gone.spi, gone.reqid, gone.key, gone.src, gone.dst, gone.sel
    ));
    assert_eq!(pings(&vm, &[(2, 1)], 5), [true]);

    // 4. States strongSwan does not make here, on top of its own: an
    //    AES-CBC SA (another IKE configuration) and SAs toward 198.18.0.9,
    //    no node of the cluster. Both named; then removed.
    let cbc = format!(
        "enc 'cbc(aes)' 0x{} auth-trunc 'hmac(sha256)' 0x{} 128",
        "11".repeat(16),
        "22".repeat(32)
    );
    vm.ok(&format!(
        "ip -n n1 xfrm state add src {a1} dst {a2} proto esp spi 0x5002 reqid 50 mode transport {cbc} && \
         ip -n n1 xfrm state add src {a1} dst 198.18.0.9 proto esp spi 0x1009 reqid 51 mode transport aead 'rfc4106(gcm(aes))' 0x{k} 128 && \
         ip -n n1 xfrm state add src 198.18.0.9 dst {a1} proto esp spi 0x9001 reqid 51 mode transport aead 'rfc4106(gcm(aes))' 0x{k} 128",
        a1 = addr(1),
        a2 = addr(2),
        k = "33".repeat(20)
    ));
    let (code, c) = xfrm(&vm, &mesh, 1, true);
    assert_eq!(c["code"], "ipsec.xfrm/wrong-algorithm", "{c:#}");
    assert_eq!(code, 1);
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("not rfc4106(gcm(aes)): 198.18.0.1->198.18.0.2 uses cbc(aes)"),
        "{c:#}"
    );
    assert_eq!(
        c["evidence"]["stale_pairs"],
        json!(["198.18.0.1->198.18.0.9", "198.18.0.9->198.18.0.1"])
    );
    assert!(strings(&c["remediation"])
        .iter()
        .any(|f| f.contains("IKE configuration OVN does not own")));
    vm.ok(&format!(
        "ip -n n1 xfrm state delete src {a1} dst {a2} proto esp spi 0x5002 && \
         ip -n n1 xfrm state delete src {a1} dst 198.18.0.9 proto esp spi 0x1009 && \
         ip -n n1 xfrm state delete src 198.18.0.9 dst {a1} proto esp spi 0x9001",
        a1 = addr(1),
        a2 = addr(2)
    ));
    stop_pings(&vm, &ALL);

    // 5. n3's strongSwan stopped (SIGTERM to its starter's recorded pid)
    //    while geneve flows both ways between n3 and the others. Its charon
    //    deletes its SAs and policies (its geneve now leaves in clear); the
    //    others keep their trap policies, and the next packet toward n3
    //    leaves an ACQUIRE state: IKE pending, both directions named.
    //    Permanent neighbours on the tunnels: once n3 stops answering, a
    //    ping toward it still leaves at five a second, not as the kernel's
    //    ARP probes (about one a second, none between a failed resolution
    //    and the next ping), so the doctors' 5 s window sees it under load.
    let toward3 = [(1, 3), (2, 3), (3, 1), (3, 2)];
    mesh.static_neighbours(&vm);
    start_pings(&vm, &toward3, "0.2");
    std::thread::sleep(Duration::from_secs(1));
    let before: Vec<_> = NODES
        .iter()
        .map(|n| xfrm_stat(&vm, &format!("n{n}")))
        .collect();
    let (starter, charon) = Mesh::pids(&vm, 3);
    let took = mesh.stop(&vm, 3);
    vm.ok(&format!(
        "! [ -e /proc/{starter} ] && ! [ -e /proc/{charon} ]"
    ));
    assert!(
        vm.wait_until_every(
            "ip -n n1 xfrm state | grep -q 'spi 0x00000000' && ip -n n2 xfrm state | grep -q 'spi 0x00000000'",
            Duration::from_secs(60),
            "0.2"
        ),
        "no ACQUIRE state toward n3"
    );
    // n3's geneve, now in clear, meets the survivors' inbound policies.
    let plaintext = Instant::now();
    let seen: Vec<String> = [1, 2]
        .iter()
        .map(|n| {
            format!(
                "[ \"$(ip netns exec n{n} awk '$1 == \"XfrmInTmplMismatch\" {{print $2}}' /proc/net/xfrm_stat)\" -gt {} ]",
                before[*n as usize - 1]["XfrmInTmplMismatch"]
            )
        })
        .collect();
    let arrived = vm.wait_until_every(&seen.join(" && "), Duration::from_secs(30), "0.5");
    note(&format!(
        "n3's plaintext geneve counted (XfrmInTmplMismatch) on n1 and n2: {arrived}, {:.1}s after the stop",
        plaintext.elapsed().as_secs_f64()
    ));
    let window = Instant::now();
    let after: Vec<_> = NODES
        .iter()
        .map(|n| xfrm_stat(&vm, &format!("n{n}")))
        .collect();
    note(&format!(
        "n3's starter and charon gone {:.1}s after SIGTERM",
        took.as_secs_f64()
    ));
    for (i, n) in NODES.iter().enumerate() {
        note(&format!(
            "xfrm_stat moved on n{n} across the stop: {:?}",
            moved(&before[i], &after[i])
        ));
    }
    assert!(
        moved(&before[0], &after[0]).contains_key("XfrmOutNoStates"),
        "n1 drops toward n3"
    );
    assert!(
        arrived,
        "n3's plaintext geneve never met n1's and n2's inbound policies"
    );
    assert_eq!(Mesh::policy_count(&vm, 3), 0, "n3 removed its policies");
    assert!(
        oracle_states(&vm, "n3").iter().all(|s| s.is_larval()),
        "n3 removed its SAs"
    );
    assert_eq!(Mesh::policy_count(&vm, 1), 8, "n1 keeps its trap policies");
    let larval: Vec<_> = oracle_states(&vm, "n1")
        .into_iter()
        .filter(|s| s.is_larval())
        .collect();
    assert_eq!(larval.len(), 1, "{larval:?}");
    assert_eq!(
        (
            larval[0].dst.as_str(),
            larval[0].sel.ends_with("dport 6081")
        ),
        ("198.18.0.3", true)
    );
    note(&format!(
        "n1 after the stop: {}",
        vm.ok("ip -n n1 xfrm state | grep -B1 -A4 'spi 0x00000000' | tr '\\n' ' '")
    ));
    // The charons that still run, each in its node's network namespace
    // (`ip netns identify`, the oracle): all three nodes share the guest's
    // /proc, so n3's doctor sees them, and must not count them as its own.
    let charons: Vec<u32> = [1, 2].iter().map(|n| Mesh::pids(&vm, *n).1).collect();
    for (n, pid) in [1, 2].iter().zip(&charons) {
        assert_eq!(
            vm.ok(&format!("ip netns identify {pid}")).trim(),
            format!("n{n}")
        );
    }
    // The survivors judged: both hold the same toward n3 (the oracle above).
    for n in [1, 2] {
        let (code, doc, oracle_moved) = judged(&vm, &mesh, n);
        let c = check(&doc, "ipsec.xfrm");
        assert_eq!(c["code"], "ipsec.xfrm/ike-pending", "n{n}: {c:#}");
        assert_eq!(code, 1);
        // ipsec.errors: the drops toward n3 (the larval ACQUIRE state) and
        // n3's plaintext geneve, each counted in the doctor's window, and
        // only what the kernel's own counters moved around it.
        let e = check(&doc, "ipsec.errors");
        assert_eq!(e["code"], "ipsec.errors/dropping", "n{n}: {e:#}");
        let seen = advanced(&doc);
        for counter in ["XfrmOutNoStates", "XfrmInTmplMismatch"] {
            assert!(seen.contains(counter), "n{n}: {counter} in {e:#}");
            assert!(
                oracle_moved.contains(counter),
                "n{n}: {counter} in {oracle_moved:?}"
            );
        }
        assert!(
            seen.is_subset(&oracle_moved),
            "n{n}: {seen:?} vs xfrm_stat {oracle_moved:?}"
        );
        // ipsec.daemon: its own charon runs (no ovs-monitor-ipsec runs in the
        // lab, so the check fails on that alone), the other survivor's is
        // another node's.
        let own = charons[n as usize - 1];
        assert_eq!(daemon(&doc, "charon")["running_pids"], json!([own]), "n{n}");
        assert_eq!(
            daemon(&doc, "charon")["other_net_ns_pids"],
            json!([charons[2 - n as usize]]),
            "n{n}"
        );
        let d = check(&doc, "ipsec.daemon");
        assert!(
            !d["summary"]
                .as_str()
                .unwrap()
                .contains("charon is not running"),
            "n{n}: {d:#}"
        );
        // Only what the missing monitor costs, never "nothing negotiates".
        assert!(
            d["summary"].as_str().unwrap().starts_with(&format!(
                "IPsec is wanted and charon runs (pid {own}), but ovs-monitor-ipsec does not: charon still negotiates the tunnels it was last configured for"
            )),
            "n{n}: {d:#}"
        );
        note(&format!(
        "n{n}: ipsec.errors saw {seen:?} (xfrm_stat around the run: {oracle_moved:?}); ipsec.policy {}",
        check(&doc, "ipsec.policy")["summary"]
    ));
        if n == 2 {
            continue;
        }
        let c = check(&doc, "ipsec.xfrm");
        let me = addr(n);
        assert_eq!(
        c["summary"],
        format!(
            "IPsec is wanted but IKE pending or failing toward 198.18.0.3: the kernel is waiting for keys and drops what it sends (no SA for {me}->198.18.0.3, 198.18.0.3->{me})"
        )
    );
        assert_eq!(
            c["evidence"]["missing_pairs"],
            json!([format!("{me}->198.18.0.3"), format!("198.18.0.3->{me}")])
        );
        assert_eq!(c["evidence"]["pending_peers"], json!(["198.18.0.3"]));
        assert_eq!(
            c["evidence"]["sa_count"], 4,
            "the SAs with the other survivor"
        );
        let fixes = strings(&c["remediation"]);
        assert!(
            fixes[0].starts_with("on 198.18.0.3: openvswitch-ipsec"),
            "{fixes:#?}"
        );
        assert!(fixes[1].contains("/etc/ipsec.d/cacerts"), "{fixes:#?}");
        assert!(!c["summary"].as_str().unwrap().contains("no encryption"));
    }
    // The stopped node judged.
    let (code, doc, oracle_moved) = judged(&vm, &mesh, 3);
    let c = check(&doc, "ipsec.xfrm");
    assert_eq!(c["code"], "ipsec.xfrm/missing-sas", "n3: {c:#}");
    assert_eq!(code, 1);
    // ipsec.daemon: no charon of its own (its pid file went with it); the
    // survivors' charons run in other network namespaces.
    let d = check(&doc, "ipsec.daemon");
    assert_eq!(d["code"], "ipsec.daemon/not-running", "n3: {d:#}");
    let mut others = charons.clone();
    others.sort_unstable();
    assert!(
        d["summary"].as_str().unwrap().contains(&format!(
            "charon is not running (no /var/run/charon.pid; pids {}, {} run in other network namespaces, other nodes')",
            others[0], others[1]
        )),
        "n3: {d:#}"
    );
    assert_eq!(daemon(&doc, "charon")["running_pids"], json!([]));
    assert_eq!(daemon(&doc, "charon")["other_net_ns_pids"], json!(others));
    assert_eq!(daemon(&doc, "starter")["pid_file_state"], "absent");
    vm.ok(&format!("! [ -e {}/charon.pid ]", Mesh::run_dir(3)));
    // ipsec.policy: its policies went with its charon (the oracle above:
    // `ip xfrm policy` holds none), so its geneve leaves in plaintext, and
    // is taken in plaintext, with both peers (its own southbound's Encaps).
    let p = check(&doc, "ipsec.policy");
    assert_eq!(p["code"], "ipsec.policy/plaintext", "n3: {p:#}");
    assert_eq!(
        p["summary"],
        "IPsec is wanted but no policy demands ESP for 198.18.0.3->198.18.0.1, 198.18.0.1->198.18.0.3, 198.18.0.3->198.18.0.2, 198.18.0.2->198.18.0.3: geneve in plaintext",
        "n3: {p:#}"
    );
    assert_eq!(p["evidence"]["geneve_policies"], 0);
    for (i, peer) in ["198.18.0.1", "198.18.0.2"].iter().enumerate() {
        let v = &p["evidence"]["peers"][i];
        assert_eq!(
            (&v["peer"], &v["out"], &v["inbound"]),
            (&json!(peer), &json!("plaintext"), &json!("plaintext")),
            "n3: {p:#}"
        );
    }
    // ipsec.errors: with no policy and no SA nothing here is counted; it
    // names no more than the kernel's counters moved.
    let seen = advanced(&doc);
    assert!(
        seen.is_subset(&oracle_moved),
        "n3: {seen:?} vs xfrm_stat {oracle_moved:?}"
    );
    note(&format!(
        "n3: ipsec.errors saw {seen:?} (xfrm_stat around the run: {oracle_moved:?})"
    ));
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("(no SA, and no policy demands one: nothing encrypts that geneve)"),
        "{c:#}"
    );
    assert_eq!(c["evidence"]["policy_count"], 0);
    assert_eq!(c["evidence"]["pending_peers"], json!([]));
    note(&format!(
        "stop scenario judged {:.1}s after the window",
        window.elapsed().as_secs_f64()
    ));

    // 6. n3 back, but without the cluster CA in its trust store
    //    (/etc/ipsec.d/cacerts): its charon cannot verify the others'
    //    certificates. Its own geneve arms IKE and fails (AUTH_FAILED); it
    //    waits for keys toward both peers, and n1 still toward it.
    mesh.drop_ca(&vm, 3);
    let back = mesh.start(&vm, &[3]);
    note(&format!(
        "n3's charon armed again {:.1}s after `ipsec start`",
        back.as_secs_f64()
    ));
    // Fresh pings (each lives two minutes): step 5's three judged runs and
    // a slow start under load can outlast the ones started there.
    stop_pings(&vm, &toward3);
    start_pings(&vm, &toward3, "0.2");
    let failing = Instant::now();
    assert!(
        vm.wait_until_every(
            &format!(
                "grep -q 'no trusted RSA public key found' {run}/charon.log && [ \"$(ip -n n3 xfrm state | grep -c 'spi 0x00000000')\" = 2 ]",
                run = Mesh::run_dir(3)
            ),
            Duration::from_secs(120),
            "0.5"
        ),
        "IKE from n3 did not fail as expected: {}",
        mesh.charon_log(&vm, 3)
    );
    note(&format!(
        "n3 without the CA: AUTH_FAILED and ACQUIRE states toward both peers {:.1}s after its start",
        failing.elapsed().as_secs_f64()
    ));
    let log3 = mesh.charon_log(&vm, 3);
    note(&format!(
        "n3's charon: {}",
        log3.lines()
            .filter(|l| l.contains("no trusted")
                || l.contains("AUTH_FAILED")
                || l.contains("authentication of"))
            .take(4)
            .collect::<Vec<_>>()
            .join(" | ")
    ));
    assert!(
        oracle_states(&vm, "n3").iter().all(|s| s.is_larval()),
        "no SA at all on n3"
    );
    let (code, c) = xfrm(&vm, &mesh, 3, true);
    assert_eq!(c["code"], "ipsec.xfrm/ike-pending", "n3: {c:#}");
    assert_eq!(code, 1);
    assert_eq!(
        c["evidence"]["pending_peers"],
        json!(["198.18.0.1", "198.18.0.2"])
    );
    assert_eq!(c["evidence"]["sa_count"], 0);
    stop_pings(&vm, &toward3);
    mesh.stop(&vm, 3);

    // 7. IPsec turned off on n2 with charon still running: every SA it
    //    holds with n1 is named (and an ACQUIRE state toward n3, while it
    //    lasts); the printed flush clears them, and it passes.
    let (code, c) = xfrm(&vm, &mesh, 2, false);
    assert_eq!(c["code"], "ipsec.xfrm/leftover-sas", "{c:#}");
    assert_eq!(code, 1);
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("4 ESP SAs remain although IPsec is not wanted (charon still running?): 198.18.0.1->198.18.0.2, 198.18.0.2->198.18.0.1"),
        "{summary}"
    );
    let flush = strings(&c["remediation"])
        .into_iter()
        .find(|f| f.contains("ip xfrm state flush proto esp"))
        .expect("the flush");
    assert!(flush.contains("`ip xfrm policy flush`"), "{flush}");
    vm.ok("ip -n n2 xfrm state flush proto esp && ip -n n2 xfrm policy flush");
    let (code, c) = xfrm(&vm, &mesh, 2, false);
    assert_eq!(c["code"], "ipsec.xfrm/ok", "{c:#}");
    assert_eq!(code, 0);
    note(&format!(
        "the whole group took {:.1}s (boot {:.1}s)",
        lab_started.elapsed().as_secs_f64(),
        vm.boot_seconds
    ));
}
