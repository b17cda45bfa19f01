//! The partial enable of issue 22, end to end, on real strongSwan: three
//! namespace nodes of one guest ([`crate::support::strongswan`]: charon
//! and the starter configured by ovs-monitor-ipsec's own code, certificates
//! from a cluster CA made at test time, geneve between every pair), OVN's
//! northbound with `NB_Global ipsec=true` and its southbound, and an sshd
//! per node, started as the node (its /etc, its /var/run), so that
//! `spx-doctor --cluster` run on spx1 reaches spx2 and spx3 as a
//! coordinator reaches real nodes. Pings over geneve both ways between
//! every pair are the traffic, five a second per direction (permanent
//! neighbour entries on the tunnels, so that a ping whose geneve is
//! dropped is still sent at that rate, not one ARP probe a second).
//!
//! In order, on one boot:
//!
//! 1. **(a) IKE never completed**, as in the incident: only spx1's
//!    strongSwan runs. It holds its trap policies and no SA (ACQUIRE states
//!    toward both peers); spx2 and spx3 hold neither. spx1 counts
//!    `XfrmOutNoStates` (its geneve to them, dropped) and
//!    `XfrmInTmplMismatch` (theirs, in clear); on spx2 and spx3 no counter
//!    moves, their signals are `ipsec.policy` and `ipsec.daemon` (no charon
//!    of theirs runs: spx1's, which their `/proc` shows, is in another
//!    network namespace).
//! 2. **(b) One side lost its SAs**: spx2's and spx3's strongSwan started,
//!    spx1's IKE toward them completes; then their charons are killed
//!    (SIGKILL: no IKE DELETE) and their SAs and policies flushed, as a
//!    crash and a flush leave them. spx1 keeps its SAs and policies and
//!    encrypts to them: `XfrmInNoStates` on spx2 and spx3, and their
//!    `ipsec.daemon` names charon's pid file, whose process is gone.
//! 3. **The plaintext case**: spx1's policies flushed behind charon's back,
//!    its SAs kept. Geneve flows, in clear, and `ip -s xfrm state` byte
//!    counters stay still: `ipsec.xfrm` (which counts SAs) passes,
//!    `ipsec.policy` names the peers as plaintext.
//!
//! In (a) and (b) `--cluster` names spx2 and spx3 in `cluster.ipsec`, with
//! exit 1. The oracles: `ip xfrm`, `/proc/net/xfrm_stat`, pings over
//! geneve.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cluster::{cluster_check, node};
use crate::ipsec_daemon::daemon;
use crate::support::sshd::SshFiles;
use crate::support::strongswan::{
    self, moved, oracle_states, pings, start_pings, stop_pings, xfrm_stat, Mesh,
};
use crate::support::vm::{Vm, GUEST_FILES};
use crate::support::{self, check, strings, tool_or_skip};
use spx_test_harness::root_test;

const NODES: [u32; 3] = [1, 2, 3];
/// Every direction of the mesh.
const ALL: [(u32, u32); 6] = [(1, 2), (2, 1), (1, 3), (3, 1), (2, 3), (3, 2)];
/// The node checks every node runs.
const CHECKS: &str = "ipsec.flags,ipsec.xfrm,ipsec.policy,ipsec.errors,ipsec.daemon";

#[allow(clippy::disallowed_macros)] // the measured facts belong in the test log
fn note(line: &str) {
    eprintln!("partial enable lab: {line}");
}

/// `spx-doctor --cluster` from spx1, as the node: the exit code and the
/// cluster report, every node answered.
fn cluster_run(vm: &Vm, mesh: &Mesh, files: &SshFiles) -> (i32, Value) {
    let started = Instant::now();
    let (code, doc) = vm.spx_cluster_in(
        &mesh.enter(1),
        &[
            "--cluster",
            "--config",
            "/etc/spinifex/spinifex.toml",
            "--ssh-config",
            &files.seen("ssh_config"),
            "--check",
            CHECKS,
            "--timeout",
            "60s",
            // The pings' counters, at 5 a second per flow, well inside it.
            "--sample",
            "2s",
            // Three doctors, two sshd sessions and three charons on one
            // emulated CPU: a netlink dump can take over the default second.
            "--probe-timeout",
            "5s",
        ],
    );
    for n in NODES {
        let e = node(&doc, &format!("spx{n}"));
        assert_eq!(e["status"], "ok", "{e:#}");
    }
    note(&format!(
        "--cluster: exit {code}, cluster.ipsec {} in {:.1}s",
        cluster_check(&doc, "cluster.ipsec")["code"],
        started.elapsed().as_secs_f64()
    ));
    (code, doc)
}

/// A `--cluster` run of form `form` (`xfrm_stat` read before it given):
/// it exits 1 and `cluster.ipsec` names spx2 and spx3 black-holed while
/// spx1 does `how` toward them. The report, and `xfrm_stat` after.
fn black_holed(
    vm: &Vm,
    mesh: &Mesh,
    files: &SshFiles,
    form: &str,
    before: &[BTreeMap<String, u64>],
    how: &str,
) -> (Value, Vec<BTreeMap<String, u64>>) {
    let (code, doc) = cluster_run(vm, mesh, files);
    let after = stats(vm);
    for (i, n) in NODES.iter().enumerate() {
        note(&format!(
            "({form}) xfrm_stat moved on spx{n} across the run: {:?}",
            moved(&before[i], &after[i])
        ));
    }
    let c = cluster_check(&doc, "cluster.ipsec");
    assert_eq!(c["code"], "cluster.ipsec/black-holed", "{c:#}");
    assert_eq!(code, 1);
    assert_eq!(
        c["summary"],
        format!("spx2 and spx3 hold no SAs or policies while NB_Global ipsec=true and spx1 {how}: cross-chassis guest traffic to and from them is black-holed")
    );
    assert_eq!(c["evidence"]["black_holed"], json!(["spx2", "spx3"]));
    (doc, after)
}

/// Node `n`'s result of check `id` in a cluster report.
fn node_check<'a>(doc: &'a Value, n: u32, id: &str) -> &'a Value {
    check(&node(doc, &format!("spx{n}"))["report"], id)
}

/// The counters node `n`'s ipsec.errors saw advance.
fn advanced(doc: &Value, n: u32) -> Vec<String> {
    node_check(doc, n, "ipsec.errors")["evidence"]["advanced"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["counter"].as_str().unwrap().to_owned())
        .collect()
}

fn stats(vm: &Vm) -> Vec<BTreeMap<String, u64>> {
    NODES
        .iter()
        .map(|n| xfrm_stat(vm, &format!("n{n}")))
        .collect()
}

/// Wait until counter `name` of every node in `nodes` is above `before`.
fn wait_counter(vm: &Vm, nodes: &[u32], name: &str, before: &[BTreeMap<String, u64>]) -> bool {
    let cond: Vec<String> = nodes
        .iter()
        .map(|n| {
            format!(
                "[ \"$(ip netns exec n{n} awk '$1 == \"{name}\" {{print $2}}' /proc/net/xfrm_stat)\" -gt {} ]",
                before[*n as usize - 1].get(name).copied().unwrap_or(0)
            )
        })
        .collect();
    vm.wait_until_every(&cond.join(" && "), Duration::from_secs(60), "0.5")
}

/// ESP SAs (larval states aside) node `n` holds, by `ip xfrm state`.
fn sas(vm: &Vm, n: u32) -> usize {
    oracle_states(vm, &format!("n{n}"))
        .iter()
        .filter(|s| !s.is_larval())
        .count()
}

#[root_test]
fn partial_enable_on_real_strongswan_over_real_sshd() {
    let test = "partial_enable_on_real_strongswan_over_real_sshd";
    let sshd = std::path::Path::new("/usr/sbin/sshd").exists();
    if !tool_or_skip(test, "sshd", sshd) {
        return;
    }
    let lab_started = Instant::now();
    let Some((vm, mesh)) = strongswan::boot(test, 3) else {
        return;
    };

    // The ssh side, where the guest sees it: keys, known_hosts, ssh_config,
    // one sshd_config per node, the `spx-doctor` cargo built on every
    // session's PATH, each node's config and passwd.
    let dir = vm.files_dir();
    let files = SshFiles::new(&dir, GUEST_FILES.as_ref());
    let addrs: Vec<String> = NODES.iter().map(|n| strongswan::addr(*n)).collect();
    // A lab setting, not the doctor's: OpenSSH 9's default key exchange
    // takes about 4 s of emulated CPU per connection, this one about 1 s.
    files.hosts(&addrs, &["KexAlgorithms curve25519-sha256"]);
    std::fs::create_dir(dir.join("bin")).unwrap();
    symlink(support::bin(), dir.join("bin/spx-doctor")).unwrap();
    let passwd = vm.file("passwd", &files.passwd());
    let mut setup = mesh.setup_script();
    setup.push_str("mkdir -p /run/sshd\n");
    for (i, n) in NODES.iter().enumerate() {
        let cfg = vm.file(
            &format!("partial-spx{n}.toml"),
            &mesh.doctor_config_text(*n, true),
        );
        files.sshd_config(i, &addrs[i], &files.seen("bin"));
        setup.push_str(&format!(
            "cp {cfg} /etc/netns/n{n}/spinifex/spinifex.toml\n\
             cp {passwd} /etc/netns/n{n}/passwd\n\
             ({enter} /usr/sbin/sshd -D -e -f {sshd} >/tmp/sshd-n{n}.log 2>&1 &)\n",
            enter = mesh.enter(*n),
            sshd = files.seen(&format!("sshd_{i}"))
        ));
    }
    vm.ok(&setup);
    mesh.static_neighbours(&vm);
    let listening = NODES.map(|n| format!("grep -q 'Server listening' /tmp/sshd-n{n}.log"));
    assert!(
        vm.wait_until(&listening.join(" && "), Duration::from_secs(30)),
        "sshd did not start: {}",
        vm.sh("cat /tmp/sshd-n*.log").stdout
    );

    // 1. (a) IKE never completed: only spx1's strongSwan, its trap
    //    policies armed; geneve both ways between every pair.
    let armed = mesh.start(&vm, &[1]);
    note(&format!(
        "spx1's charon armed {:.1}s after `ipsec start`",
        armed.as_secs_f64()
    ));
    let before = stats(&vm);
    start_pings(&vm, &ALL, "0.2");
    assert!(
        vm.wait_until_every(
            "[ \"$(ip -n n1 xfrm state | grep -c 'spi 0x00000000')\" -ge 2 ]",
            Duration::from_secs(60),
            "0.5"
        ),
        "no ACQUIRE states on spx1 toward both peers: {}",
        vm.ok("ip -n n1 xfrm state")
    );
    assert!(
        wait_counter(&vm, &[1], "XfrmInTmplMismatch", &before),
        "spx2's and spx3's plaintext geneve never met spx1's inbound policies"
    );
    // The oracles: spx1 holds its 8 policies and no SA; spx2 and spx3 hold
    // neither; their geneve to each other flows in clear, and every pair
    // with spx1 is cut both ways.
    assert_eq!(Mesh::policy_count(&vm, 1), 8);
    assert_eq!(sas(&vm, 1), 0);
    for n in [2, 3] {
        assert_eq!(Mesh::policy_count(&vm, n), 0, "spx{n}");
        assert!(oracle_states(&vm, &format!("n{n}")).is_empty(), "spx{n}");
    }
    assert_eq!(
        pings(&vm, &ALL, 2),
        [false, false, false, false, true, true],
        "{ALL:?}"
    );
    let (doc, after) = black_holed(
        &vm,
        &mesh,
        &files,
        "a",
        &before,
        "holds policies for them (IKE never completes)",
    );
    let c = cluster_check(&doc, "cluster.ipsec");
    assert_eq!(c["evidence"]["nodes"][0]["geneve_policies"], 8);
    // spx1 counts both: its geneve dropped, theirs in clear.
    let moved1 = advanced(&doc, 1);
    assert!(
        moved1.contains(&"XfrmOutNoStates".to_owned())
            && moved1.contains(&"XfrmInTmplMismatch".to_owned()),
        "{moved1:?}"
    );
    assert!(moved(&before[0], &after[0]).contains_key("XfrmOutNoStates"));
    let p1 = node_check(&doc, 1, "ipsec.policy");
    assert_eq!(p1["code"], "ipsec.policy/no-sa", "{p1:#}");
    assert_eq!(
        p1["evidence"]["dropped"],
        json!(["198.18.0.1->198.18.0.2", "198.18.0.1->198.18.0.3"])
    );
    // On spx2 and spx3 no counter moves: ipsec.policy is their signal.
    for n in [2, 3] {
        let e = node_check(&doc, n, "ipsec.errors");
        assert_eq!(e["status"], "pass", "spx{n}: {e:#}");
        assert_eq!(advanced(&doc, n), Vec::<String>::new());
        assert!(moved(&before[n as usize - 1], &after[n as usize - 1]).is_empty());
        let p = node_check(&doc, n, "ipsec.policy");
        assert_eq!(p["code"], "ipsec.policy/plaintext", "spx{n}: {p:#}");
        assert!(
            p["summary"].as_str().unwrap().contains(
                "this node holds no IPsec policy or SA for any peer (the config has 3 nodes)"
            ),
            "{p:#}"
        );
        assert_eq!(p["evidence"]["geneve_policies"], 0);
    }
    // ipsec.daemon is their other signal: their local setup never started,
    // so no charon of theirs runs and no pid file was written (the oracle:
    // their run directories). The one charon of the lab is spx1's, which
    // every node's /proc shows (one pid namespace) but which runs in n1
    // (`ip netns identify`); each doctor ran in its own node's namespace
    // (its `net_ns` is the inode of /run/netns/nN). No node of the lab runs
    // ovs-monitor-ipsec, so spx1's fails on that alone, with its own charon
    // counted.
    let spx1_charon = Mesh::pids(&vm, 1).1;
    assert_eq!(
        vm.ok(&format!("ip netns identify {spx1_charon}")).trim(),
        "n1"
    );
    let charon = |n: u32| daemon(&node(&doc, &format!("spx{n}"))["report"], "charon");
    assert_eq!(charon(1)["running_pids"], json!([spx1_charon]));
    assert_eq!(charon(1)["other_net_ns_pids"], json!([]));
    for n in NODES {
        let ino = vm.ok(&format!("stat -L -c %i /run/netns/n{n}"));
        assert_eq!(
            node_check(&doc, n, "ipsec.daemon")["evidence"]["net_ns"],
            format!("net:[{}]", ino.trim()),
            "spx{n}"
        );
    }
    for n in [2, 3] {
        let run = Mesh::run_dir(n);
        vm.ok(&format!(
            "! [ -e {run}/charon.pid ] && ! [ -e {run}/starter.charon.pid ]"
        ));
        let d = node_check(&doc, n, "ipsec.daemon");
        assert_eq!(d["code"], "ipsec.daemon/not-running", "spx{n}: {d:#}");
        assert_eq!(
            d["summary"],
            format!(
                "IPsec is wanted, but nothing negotiates it here (geneve goes out in clear or is dropped): \
                 ovs-monitor-ipsec is not running (no /var/run/openvswitch/ovs-monitor-ipsec.pid); \
                 charon is not running (no /var/run/charon.pid; pid {spx1_charon} runs in another network namespace, another node's)"
            ),
            "spx{n}"
        );
        assert_eq!(charon(n)["pid_file_state"], "absent", "spx{n}");
        assert_eq!(charon(n)["running_pids"], json!([]), "spx{n}");
        assert_eq!(
            charon(n)["other_net_ns_pids"],
            json!([spx1_charon]),
            "spx{n}"
        );
    }

    // 2. (b) One side lost its SAs. spx1's strongSwan stopped (its ACQUIRE
    //    states flushed with it), then all three started; one initiator
    //    per pair first, spx1 (both ends at once collide under emulation),
    //    then the other way: 4 SAs per peer on spx1.
    stop_pings(&vm, &ALL);
    mesh.stop(&vm, 1);
    vm.ok("ip -n n1 xfrm state flush");
    let up = Instant::now();
    mesh.start(&vm, &NODES);
    start_pings(&vm, &[(1, 2), (1, 3)], "0.2");
    let held = |test: &str, want: usize| {
        format!(
            "[ \"$(ip -n n1 xfrm state | grep -c '^src')\" {test} {want} ] && ! ip -n n1 xfrm state | grep -q 'spi 0x00000000'"
        )
    };
    assert!(
        vm.wait_until_every(&held("-ge", 4), Duration::from_secs(180), "0.5"),
        "spx1's IKE toward spx2 and spx3 did not complete: {}",
        mesh.charon_log(&vm, 1)
    );
    start_pings(&vm, &[(2, 1), (3, 1)], "0.2");
    assert!(
        vm.wait_until_every(&held("=", 8), Duration::from_secs(180), "0.5"),
        "spx2's and spx3's IKE toward spx1 did not complete: {}",
        mesh.charon_log(&vm, 1)
    );
    note(&format!(
        "(b) spx1 holds 4 SAs per peer {:.1}s after the three started",
        up.elapsed().as_secs_f64()
    ));
    assert_eq!(sas(&vm, 1), 8);
    // Their charons killed (no IKE DELETE reaches spx1), their SAs and
    // policies flushed: as a crash and a flush leave them.
    let mut kill = String::new();
    for n in [2, 3] {
        let (starter, charon) = Mesh::pids(&vm, n);
        kill.push_str(&format!(
            "kill -KILL {starter} {charon}; while [ -e /proc/{charon} ]; do sleep 0.05; done; \
             ip -n n{n} xfrm state flush && ip -n n{n} xfrm policy flush\n"
        ));
    }
    vm.ok(&kill);
    let before = stats(&vm);
    assert!(
        wait_counter(&vm, &[2, 3], "XfrmInNoStates", &before),
        "spx1's ESP never met spx2's and spx3's empty tables"
    );
    assert_eq!(sas(&vm, 1), 8, "spx1 keeps its SAs");
    assert_eq!(Mesh::policy_count(&vm, 1), 8, "and its policies");
    for n in [2, 3] {
        assert_eq!(Mesh::policy_count(&vm, n), 0, "spx{n}");
        assert!(oracle_states(&vm, &format!("n{n}")).is_empty(), "spx{n}");
    }
    assert_eq!(
        pings(&vm, &ALL, 2),
        [false, false, false, false, true, true],
        "{ALL:?}"
    );
    let (doc, after) = black_holed(&vm, &mesh, &files, "b", &before, "encrypts to them");
    let c = cluster_check(&doc, "cluster.ipsec");
    assert_eq!(
        c["evidence"]["nodes"][0]["sas_with"],
        json!(["spx2", "spx3"])
    );
    for n in [2, 3] {
        let e = node_check(&doc, n, "ipsec.errors");
        assert_eq!(e["code"], "ipsec.errors/dropping", "spx{n}: {e:#}");
        assert!(
            advanced(&doc, n).contains(&"XfrmInNoStates".to_owned()),
            "spx{n}: {e:#}"
        );
        assert!(
            moved(&before[n as usize - 1], &after[n as usize - 1]).contains_key("XfrmInNoStates")
        );
    }
    // Their charons' pid files name processes that are gone: ipsec.daemon
    // says so, and that no charon of theirs runs: spx1's, which every
    // node's /proc shows (the guest's nodes share one pid namespace), is
    // in another network namespace. (No node of the lab runs
    // ovs-monitor-ipsec.)
    for n in [2, 3] {
        let d = node_check(&doc, n, "ipsec.daemon");
        assert_eq!(d["status"], "fail", "spx{n}: {d:#}");
        let spx1_charon = Mesh::pids(&vm, 1).1;
        assert!(
            d["summary"].as_str().unwrap().contains(&format!(
                "charon is not running (pid {spx1_charon} runs in another network namespace, another node's)"
            )),
            "spx{n}: {d:#}"
        );
        let stale: Vec<&str> = d["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["code"] == "ipsec.daemon/stale-pid-file")
            .map(|f| f["subject"].as_str().unwrap())
            .collect();
        assert!(stale.contains(&"/var/run/charon.pid"), "spx{n}: {d:#}");
    }
    assert!(
        advanced(&doc, 1).contains(&"XfrmInTmplMismatch".to_owned()),
        "{:#}",
        node_check(&doc, 1, "ipsec.errors")
    );
    assert_eq!(
        node_check(&doc, 1, "ipsec.policy")["code"],
        "ipsec.policy/ok"
    );

    // 3. The plaintext case: spx1's policies flushed behind charon's back,
    //    its 8 SAs kept. Geneve between spx1 and the others flows again, in
    //    clear, and the SAs carry nothing (`ip -s xfrm state`).
    vm.ok("ip -n n1 xfrm policy flush");
    assert_eq!(Mesh::policy_count(&vm, 1), 0);
    let bytes = |vm: &Vm| -> Vec<u64> {
        oracle_states(vm, "n1")
            .iter()
            .filter(|s| !s.is_larval())
            .map(|s| s.bytes)
            .collect()
    };
    let still = bytes(&vm);
    assert_eq!(pings(&vm, &ALL, 5), [true; 6], "geneve in clear, {ALL:?}");
    assert_eq!(bytes(&vm), still, "the SAs carried nothing");
    assert_eq!(still.len(), 8);
    let (code, doc, _) = vm.spx_in_recorded(
        &mesh.enter(1),
        &[
            "--check",
            "ipsec.xfrm,ipsec.policy,ipsec.errors",
            "--config",
            "/etc/spinifex/spinifex.toml",
            "--probe-timeout",
            "5s",
        ],
    );
    assert_eq!(code, 1);
    let x = check(&doc, "ipsec.xfrm");
    assert_eq!(
        x["code"], "ipsec.xfrm/ok",
        "the SA table alone looks fine: {x:#}"
    );
    let p = check(&doc, "ipsec.policy");
    assert_eq!(p["code"], "ipsec.policy/plaintext", "{p:#}");
    assert_eq!(
        p["summary"],
        "IPsec is wanted but no policy demands ESP for 198.18.0.1->198.18.0.2, 198.18.0.2->198.18.0.1, 198.18.0.1->198.18.0.3, 198.18.0.3->198.18.0.1: geneve in plaintext (4 SA(s) without a policy that would use them)"
    );
    assert_eq!(p["evidence"]["sa_count"], 8);
    assert_eq!(p["evidence"]["geneve_policies"], 0);
    assert!(strings(&p["remediation"])[0].contains("systemctl restart openvswitch-ipsec"));
    // Nothing is dropped now: what the earlier forms counted is history
    // (and the window replays from the bundle as it was measured).
    let e = check(&doc, "ipsec.errors");
    assert_eq!(e["code"], "ipsec.errors/history", "{e:#}");
    stop_pings(&vm, &ALL);
    note(&format!(
        "the whole group took {:.1}s (boot {:.1}s)",
        lab_started.elapsed().as_secs_f64(),
        vm.boot_seconds
    ));
}
