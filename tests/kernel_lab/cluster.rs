//! `cluster.sa-pairs` on real ESP, over real sshd: three nodes holding
//! strongSwan's layout written by hand ([`super::ipsec::esp_mesh`]:
//! namespaces n1-n3 of the guest, two CHILD_SAs per pair, 4
//! `rfc4106(gcm(aes))` SAs per peer with the same SPIs on both ends under
//! each end's own reqids, geneve tunnels through them), each also running Debian's `sshd` on its own address with its own
//! host key, its own `/etc/spinifex/spinifex.toml` bound over `/etc` by `ip
//! netns exec` from `/etc/netns/NODE` (the files come from
//! [`crate::support::sshd::SshFiles`], as in the host's cluster lab).
//! `spx-doctor --cluster` runs in n1 and reaches n2 and n3 with the system
//! ssh; every node dumps its own SA table over netlink, and the coordinator
//! puts the three side by side. `ip xfrm state` in each namespace is the
//! oracle for what the nodes report, and pings through the tunnels show
//! that each pairing fault the check names really breaks that direction.

use std::collections::BTreeSet;
use std::os::unix::fs::symlink;

use serde_json::Value;

use super::ipsec::{
    addr, esp_mesh, gcm, geneve_spi, overlay_pings, policies, sa, sa_with, DIRECTIONS, MODULES,
};
use crate::cluster::{cluster_check, node};
use crate::support::sshd::{node_config, SshFiles};
use crate::support::vm::{self, Vm, VmOptions, GUEST_FILES};
use crate::support::{self, strings};
use spx_test_harness::root_test;

const NODES: [u32; 3] = [1, 2, 3];

/// Node `n`'s own ipsec.xfrm finding, as it reported it.
fn node_xfrm(doc: &Value, n: u32) -> &Value {
    support::check(&node(doc, &format!("n{n}"))["report"], "ipsec.xfrm")
}

fn set(v: &Value) -> BTreeSet<String> {
    strings(v).into_iter().collect()
}

/// `spx-doctor --cluster --check ipsec.xfrm` from n1: the exit code and
/// the `cluster.sa-pairs` finding (and the whole report).
fn cluster_run(vm: &Vm, files: &SshFiles) -> (i32, Value, Value) {
    let (code, doc) = vm.spx_cluster(
        Some("n1"),
        &[
            "--cluster",
            "--ssh-config",
            &files.seen("ssh_config"),
            "--check",
            "ipsec.xfrm",
            "--timeout",
            "60s",
            // Three doctors, two sshd sessions and the coordinator share
            // one emulated CPU: a netlink dump can take over the default
            // second there.
            "--probe-timeout",
            "5s",
        ],
    );
    for n in NODES {
        let e = node(&doc, &format!("n{n}"));
        assert_eq!(e["status"], "ok", "{e:#}");
        assert_eq!(e["via"], if n == 1 { "in-process" } else { "ssh" });
    }
    let c = cluster_check(&doc, "cluster.sa-pairs").clone();
    (code, c, doc)
}

/// The ESP SAs of node `n` as `ip xfrm state` prints them (the oracle):
/// "src dst spi algorithm".
fn oracle_sas(vm: &Vm, n: u32) -> BTreeSet<String> {
    let text = vm.ok(&format!("ip -n n{n} xfrm state"));
    let mut out = BTreeSet::new();
    let (mut ends, mut spi) = (String::new(), String::new());
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["src", s, "dst", d, ..] => ends = format!("{s} {d}"),
            ["proto", "esp", "spi", x, ..] => spi = (*x).to_owned(),
            ["aead" | "enc", alg, ..] => {
                out.insert(format!("{ends} {spi} {alg}"));
            }
            _ => {}
        }
    }
    out
}

/// The same, from node `n`'s report (ipsec.xfrm evidence `sas`), with the
/// direction each entry must have from `n`'s side.
fn reported_sas(doc: &Value, n: u32) -> BTreeSet<String> {
    let me = addr(n);
    node_xfrm(doc, n)["evidence"]["sas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let want = if s["src"] == me.as_str() { "out" } else { "in" };
            assert_eq!(s["direction"], want, "n{n}: {s}");
            assert!(s.get("key").is_none(), "never keys: {s}");
            format!(
                "{} {} {} {}",
                s["src"].as_str().unwrap(),
                s["dst"].as_str().unwrap(),
                s["spi"].as_str().unwrap(),
                s["algorithm"].as_str().unwrap()
            )
        })
        .collect()
}

/// `spi s->d` as the check writes it: "spi 0x00001012 (198.18.0.1->198.18.0.2)".
fn spi_text(s: u32, d: u32, spi: &str) -> String {
    let hex = u32::from_str_radix(spi.trim_start_matches("0x"), 16).unwrap();
    format!("spi 0x{hex:08x} ({}->{})", addr(s), addr(d))
}

/// What `cluster.sa-pairs` says when node `s`'s outbound SA to `d` (SPI
/// `spi`) is not on `d`.
fn not_on_peer(s: u32, d: u32, spi: &str) -> String {
    format!(
        "n{s}->n{d}: n{s}'s outbound {} is not on n{d}",
        spi_text(s, d, spi)
    )
}

/// What it says when `d` holds an inbound SA from `s` that `s` does not.
fn orphan_inbound(s: u32, d: u32, spi: &str) -> String {
    format!(
        "n{s}->n{d}: n{d} holds inbound {} that n{s} does not have",
        spi_text(s, d, spi)
    )
}

/// A failing run (exit 1) whose `cluster.sa-pairs` names exactly
/// `problems` (pair by pair).
fn assert_problems(code: i32, c: &Value, problems: &[String]) {
    assert_eq!(c["status"], "fail", "{c:#}");
    assert_eq!(code, 1);
    assert_eq!(
        set(&c["evidence"]["problems"]),
        problems.iter().cloned().collect::<BTreeSet<_>>(),
        "{c:#}"
    );
}

/// Run `ip` commands in node `n`'s namespace.
fn ip(vm: &Vm, n: u32, cmds: &[String]) {
    let script: Vec<String> = cmds.iter().map(|c| format!("ip -n n{n} {c}")).collect();
    vm.ok(&script.join(" && "));
}

/// `xfrm state delete` of the SA `s`->`d` with `spi`.
fn delete(s: u32, d: u32, spi: &str) -> String {
    format!(
        "xfrm state delete src {} dst {} proto esp spi {spi}",
        addr(s),
        addr(d)
    )
}

#[root_test]
fn cluster_sa_pairs_on_real_esp_over_real_sshd() {
    let test = "cluster_sa_pairs_on_real_esp_over_real_sshd";
    let Some(image) = vm::lab_or_skip(test) else {
        return;
    };
    let vm = Vm::boot(image, VmOptions::default().modules(&MODULES));

    // The ssh side, written where the guest sees it: keys, known_hosts,
    // ssh_config, one sshd_config per node, the `spx-doctor` on every
    // session's PATH (the one cargo built), each node's config and passwd.
    let dir = vm.files_dir();
    let files = SshFiles::new(&dir, GUEST_FILES.as_ref());
    let addrs: Vec<String> = NODES.iter().map(|n| addr(*n)).collect();
    // A lab setting, not the doctor's: OpenSSH 9's default key exchange
    // (sntrup761x25519) takes about 4 s of emulated CPU per connection
    // here, curve25519-sha256 about 1 s.
    files.hosts(&addrs, &["KexAlgorithms curve25519-sha256"]);
    std::fs::create_dir(dir.join("bin")).unwrap();
    symlink(support::bin(), dir.join("bin/spx-doctor")).unwrap();
    let names: Vec<String> = NODES.iter().map(|n| format!("n{n}")).collect();
    let table: Vec<(&str, &str, Option<&str>)> = names
        .iter()
        .zip(&addrs)
        .map(|(n, a)| (n.as_str(), a.as_str(), None))
        .collect();
    let passwd = vm.file("passwd", &files.passwd());
    let mut setup = esp_mesh();
    setup.push_str("mkdir -p /run/sshd /etc/spinifex\n");
    for (i, n) in NODES.iter().enumerate() {
        let cfg = vm.file(
            &format!("spinifex-n{n}.toml"),
            &node_config(&names[i], true, 1500, &table),
        );
        files.sshd_config(i, &addrs[i], &files.seen("bin"));
        setup.push_str(&format!(
            "mkdir -p /etc/netns/n{n}/spinifex\n\
             cp {cfg} /etc/netns/n{n}/spinifex/spinifex.toml\n\
             cp {passwd} /etc/netns/n{n}/passwd\n\
             (ip netns exec n{n} /usr/sbin/sshd -D -e -f {} >/tmp/sshd-n{n}.log 2>&1 &)\n",
            files.seen(&format!("sshd_{i}"))
        ));
    }
    vm.ok(&setup);
    let listening = NODES.map(|n| format!("grep -q 'Server listening' /tmp/sshd-n{n}.log"));
    assert!(
        vm.wait_until(&listening.join(" && "), std::time::Duration::from_secs(30)),
        "sshd did not start: {}",
        vm.sh("cat /tmp/sshd-n*.log").stdout
    );
    assert_eq!(
        overlay_pings(&vm, &DIRECTIONS, 5),
        [true; 6],
        "geneve over ESP, {DIRECTIONS:?}"
    );

    // 1. The full mesh: every node's 8 SAs reported exactly as `ip xfrm
    //    state` shows them, each outbound SA on its peer: pass, exit 0.
    let (code, c, doc) = cluster_run(&vm, &files);
    assert_eq!(c["status"], "pass", "{c:#}");
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(c["evidence"]["pairs_checked"], 6, "{c:#}");
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("every outbound ESP SA of the 3 nodes is on the node it points to"),
        "{c:#}"
    );
    for n in NODES {
        let oracle = oracle_sas(&vm, n);
        assert_eq!(oracle.len(), 8, "n{n}: {oracle:?}");
        assert_eq!(reported_sas(&doc, n), oracle, "n{n}");
        assert_eq!(node_xfrm(&doc, n)["status"], "pass");
    }
    assert_eq!(c["evidence"]["sas"].as_array().unwrap().len(), 24);
    // One CHILD_SA, both ends: the same SPI, each end's own reqid.
    let reqid_of = |n: u32, spi: &str| {
        c["evidence"]["sas"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| {
                s["node"] == format!("n{n}")
                    && s["spi"]
                        .as_str()
                        .unwrap()
                        .ends_with(spi.trim_start_matches("0x"))
            })
            .map(|s| s["reqid"].clone())
            .unwrap()
    };
    assert_ne!(
        reqid_of(1, &geneve_spi(1, 2)),
        reqid_of(2, &geneve_spi(1, 2)),
        "{c:#}"
    );

    // 2. One SA gone from each of two pairs (one run per fault costs 5-10
    //    s of emulated ssh; the pairs are judged apart, and the exact list
    //    shows no other pair is named). n1->n2: the SA carrying n1's
    //    geneve, on n1; n2->n3: the one carrying n2's geneve, on n3. Both
    //    directions stop (the oracle); each is named with its direction
    //    and SPI.
    let (spi12, spi23) = (geneve_spi(1, 2), geneve_spi(2, 3));
    ip(&vm, 1, &[delete(1, 2, &spi12)]);
    ip(&vm, 3, &[delete(2, 3, &spi23)]);
    assert_eq!(
        overlay_pings(&vm, &[(1, 2), (2, 3), (1, 3)], 2),
        [false, false, true],
        "n1 no longer sends to n2, n3 no longer decrypts n2's"
    );
    let (code, c, _) = cluster_run(&vm, &files);
    assert_problems(
        code,
        &c,
        &[orphan_inbound(1, 2, &spi12), not_on_peer(2, 3, &spi23)],
    );
    assert!(
        strings(&c["remediation"])[0]
            .starts_with("on n1, n2 and n3: `systemctl restart openvswitch-ipsec`"),
        "{c:#}"
    );
    // Back as they were (the pings left ACQUIRE states on n1: gone too).
    vm.ok("ip -n n1 xfrm state flush proto esp && ip -n n1 xfrm policy flush");
    let mut restore: Vec<String> = Vec::new();
    for peer in [2, 3] {
        restore.extend([
            sa(1, 1, 1, peer, &gcm()),
            sa(1, 1, peer, 1, &gcm()),
            sa(1, peer, peer, 1, &gcm()),
            sa(1, peer, 1, peer, &gcm()),
        ]);
        restore.extend(policies(1, peer, "add", &geneve_spi(1, peer)));
    }
    ip(&vm, 1, &restore);
    ip(&vm, 3, &[sa(3, 2, 2, 3, &gcm())]);
    assert_eq!(overlay_pings(&vm, &[(1, 2), (2, 3)], 5), [true, true]);

    // 3. Two pairs whose ends disagree, and SAs toward an address that is
    //    no node. n1->n3: n3 holds the SPI with AES-CBC while n1 encrypts
    //    with GCM. n2->n1: n2 rekeyed the SA of its geneve to n1 (a new
    //    SPI, its policy updated, as charon does) and n1 did not. n2 also
    //    holds SAs with 198.18.0.9. Both directions stop (the oracle). n2
    //    alone looks healthy (OVN not asked, every SA it holds carries its
    //    geneve, all GCM): only the tables side by side show its pair and
    //    its foreign SAs.
    let cbc = format!(
        "enc 'cbc(aes)' 0x{} auth-trunc 'hmac(sha256)' 0x{} 128",
        "11".repeat(16),
        "22".repeat(32)
    );
    let (spi13, spi21, rekeyed) = (geneve_spi(1, 3), geneve_spi(2, 1), "0x2021".to_owned());
    ip(&vm, 3, &[delete(1, 3, &spi13), sa(3, 1, 1, 3, &cbc)]);
    let mut rekey = vec![delete(2, 1, &spi21), sa_with(2, 2, 2, 1, &rekeyed, &gcm())];
    rekey.extend(policies(2, 1, "update", &rekeyed));
    rekey.extend([
        format!(
            "xfrm state add src {} dst 198.18.0.9 proto esp spi 0x2209 reqid 9 mode transport {}",
            addr(2),
            gcm()
        ),
        format!(
            "xfrm state add src 198.18.0.9 dst {} proto esp spi 0x0992 reqid 9 mode transport {}",
            addr(2),
            gcm()
        ),
    ]);
    ip(&vm, 2, &rekey);
    assert_eq!(
        overlay_pings(&vm, &[(1, 3), (2, 1), (3, 2)], 2),
        [false, false, true],
        "n3 cannot authenticate n1's GCM, n1 has no SA for n2's new SPI"
    );
    let (code, c, doc) = cluster_run(&vm, &files);
    assert_problems(
        code,
        &c,
        &[
            format!(
                "n1->n3: {} is rfc4106(gcm(aes)) on n1 but cbc(aes) on n3",
                spi_text(1, 3, &spi13)
            ),
            not_on_peer(2, 1, &rekeyed),
            orphan_inbound(2, 1, &spi21),
        ],
    );
    assert_eq!(
        set(&c["evidence"]["foreign"]),
        BTreeSet::from([
            format!("n2 holds {} toward {}", spi_text(2, 9, "0x2209"), addr(9)),
            format!("n2 holds {} toward {}", spi_text(9, 2, "0x0992"), addr(9)),
        ]),
        "{c:#}"
    );
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains("toward 198.18.0.9, which is no node of the cluster"),
        "{summary}"
    );
    assert!(
        strings(&c["remediation"])
            .iter()
            .any(|f| f.contains("ovn-sbctl chassis-del")),
        "{c:#}"
    );
    assert_eq!(node_xfrm(&doc, 2)["status"], "pass", "n2 on its own");
    for n in NODES {
        assert_eq!(reported_sas(&doc, n), oracle_sas(&vm, n), "n{n}");
    }
}
