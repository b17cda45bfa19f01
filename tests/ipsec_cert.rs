//! ipsec.cert against certificates made at test time (tests/support/pki.rs,
//! as Spinifex's admin/ipsec.go issues them, or with one thing wrong), a
//! real Open_vSwitch row in a real ovsdb-server pointing at them, and a
//! private trust store bind-mounted over /etc/ipsec.d/cacerts for the
//! doctor alone (tests/support/private.rs). openssl is the independent
//! oracle (`verify`, `x509 -checkend`, the public keys of key and
//! certificate), and a real charon says which CAs it loads from the trust
//! store.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;
use spx_test_harness::root_test;

use crate::support::ovsdb_server::OvsdbServer;
use crate::support::pki::{openssl, openssl_ok, rsa_key, Ca, NodeFiles, Peer};
use crate::support::private::isolate;
use crate::support::{self, check, run_json, spx};

const TRUST_STORE: &str = "/etc/ipsec.d/cacerts";

/// A node's credentials and its Open_vSwitch row, as Spinifex sets it.
pub(crate) struct Lab {
    pub(crate) ca: Ca,
    pub(crate) node: NodeFiles,
    ovs: OvsdbServer,
}

impl Lab {
    fn new(peer: Peer) -> Lab {
        let ca = Ca::new("Spinifex CA");
        let node = NodeFiles::new("spx1", &ca, &peer);
        let ovs = OvsdbServer::ovs();
        ovs.vsctl(&[
            "set",
            "Open_vSwitch",
            ".",
            "external_ids:system-id=spx1",
            &format!("other_config:certificate={}", node.peer_pem().display()),
            &format!("other_config:private_key={}", node.peer_key().display()),
            &format!("other_config:ca_cert={}", node.ca_pem().display()),
            "other_config:ipsec_encapsulation=true",
        ]);
        Lab { ca, node, ovs }
    }

    pub(crate) fn spinifex() -> Lab {
        Lab::new(Peer::spinifex("spx1"))
    }

    /// The doctor's ipsec.cert, with this node's trust store over
    /// /etc/ipsec.d/cacerts.
    pub(crate) fn command(&self, extra: &[&str]) -> Command {
        let mut cmd = spx();
        cmd.args(["--check", "ipsec.cert", "--config"])
            .arg(&self.node.config)
            .args(["--ovs-db", &self.ovs.unix()])
            .args(extra);
        isolate(&mut cmd, &[(self.node.trust.path(), TRUST_STORE)], false);
        cmd
    }

    fn run(&self, extra: &[&str]) -> (i32, Value) {
        run_json(&mut self.command(extra))
    }

    fn reissue(&self, peer: &Peer, key: &str) {
        self.node.write_peer(&peer.issue(&self.ca, key), key);
    }
}

fn code(doc: &Value) -> &str {
    check(doc, "ipsec.cert")["code"].as_str().unwrap()
}

fn codes(doc: &Value) -> Vec<String> {
    check(doc, "ipsec.cert")["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_owned())
        .collect()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[root_test]
fn credentials_as_spinifex_issues_them_pass_and_no_key_reaches_the_bundle() {
    let lab = Lab::spinifex();
    // The oracles: openssl verifies the chain, and key and certificate
    // hold the same public key.
    assert!(openssl_ok(&[
        "verify",
        "-CAfile",
        path(&lab.node.ca_pem()),
        path(&lab.node.peer_pem())
    ]));
    let from_cert = openssl(&[
        "x509",
        "-noout",
        "-pubkey",
        "-in",
        path(&lab.node.peer_pem()),
    ]);
    let from_key = openssl(&["pkey", "-pubout", "-in", path(&lab.node.peer_key())]);
    assert_eq!(from_cert, from_key);

    let mut cmd = spx();
    let bundles = support::bundle_dir();
    let bundle = bundles.path().join("cert.spxb");
    cmd.args(["--check", "ipsec.cert", "--config"])
        .arg(&lab.node.config)
        .args(["--ovs-db", &lab.ovs.unix(), "--record"])
        .arg(&bundle);
    isolate(&mut cmd, &[(lab.node.trust.path(), TRUST_STORE)], false);
    let (code, doc) = support::run_json_unrecorded(&mut cmd);
    let c = check(&doc, "ipsec.cert");
    assert_eq!(code, 0, "{c:#}");
    assert_eq!(c["status"], "pass", "{c:#}");
    let e = &c["evidence"];
    assert_eq!(e["certificate"]["common_name"], "spx1");
    assert_eq!(e["system_id"], "spx1");
    assert_eq!(e["key"]["algorithm"], "rsa");
    assert_eq!(e["key"]["mode"], "0600");
    assert_eq!(
        e["key"]["public_key_sha256"],
        e["certificate"]["public_key_sha256"]
    );
    assert_eq!(
        e["trusted_as"][0],
        format!("{TRUST_STORE}/spinifex-ca.pem"),
        "{e:#}"
    );
    assert_eq!(
        e["certificate"]["extended_key_usages"],
        serde_json::json!(["serverAuth", "clientAuth", "ipsecIKE"])
    );
    // 365 days, in seconds, less the time since it was issued.
    let left = e["certificate"]["expires_in_seconds"].as_i64().unwrap();
    assert!((364 * 86_400..=365 * 86_400).contains(&left), "{left}");

    // The bundle replays to the same verdict, and holds no key material:
    // not the PEM, and no encoding of the private exponent (the modulus is
    // public: the certificate carries it too).
    support::assert_replays(&bundle, &doc, None);
    let text = support::bundle_text(&bundle);
    assert!(!text.contains("-----BEGIN"), "{text}");
    for key in [lab.node.peer_key(), lab.node.dir.path().join("ca.key")] {
        let d = private_exponent(&key);
        assert!(d.len() >= 200, "{}", d.len());
        let hex: String = d[..24].iter().map(|b| format!("{b:02x}")).collect();
        assert!(!text.contains(&hex));
        for offset in 0..3 {
            use base64::Engine as _;
            let b64 = base64::engine::general_purpose::STANDARD.encode(&d[offset..offset + 48]);
            assert!(
                !text.contains(&b64),
                "the bundle holds the private exponent of {}",
                key.display()
            );
        }
    }
}

/// The private exponent of an RSA key, as openssl reads it.
fn private_exponent(key: &Path) -> Vec<u8> {
    let text = openssl(&["rsa", "-in", path(key), "-noout", "-text"]);
    let start = text.find("privateExponent:").unwrap() + "privateExponent:".len();
    let end = text[start..].find("prime1:").unwrap() + start;
    text[start..end]
        .split(|c: char| c == ':' || c.is_whitespace())
        .filter(|h| !h.is_empty())
        .map(|h| u8::from_str_radix(h, 16).unwrap())
        .skip_while(|b| *b == 0)
        .collect()
}

#[root_test]
fn an_expired_certificate_fails_and_the_printed_reissue_makes_it_pass() {
    let lab = Lab::new(Peer {
        not_before_days: -400,
        not_after_days: -35,
        ..Peer::spinifex("spx1")
    });
    // The oracle: openssl says it expired.
    assert!(!openssl_ok(&[
        "x509",
        "-checkend",
        "0",
        "-noout",
        "-in",
        path(&lab.node.peer_pem())
    ]));
    let (code, doc) = lab.run(&[]);
    assert_eq!(code, 1);
    let c = check(&doc, "ipsec.cert");
    assert_eq!(c["code"], "ipsec.cert/expired", "{c:#}");
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("the peer certificate expired on "),
        "{c:#}"
    );
    let fixes = support::strings(&c["remediation"]);
    assert!(
        fixes[0].starts_with("no `spx` command reissues the IPsec peer certificate"),
        "{fixes:#?}"
    );
    assert!(fixes
        .iter()
        .any(|f| f.starts_with("systemctl restart openvswitch-ipsec")));

    // Run the printed commands as an operator would, in a shell on the
    // node (all but the restart of the service, which this test has not).
    for step in fixes.iter().skip(1) {
        if step.starts_with("systemctl") || step.starts_with("then ") {
            continue;
        }
        let out = Command::new("sh")
            .arg("-c")
            .arg(step.split("   #").next().unwrap())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{step}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // openssl's own reading of what was made: the chain, the name, the EKUs.
    assert!(openssl_ok(&[
        "verify",
        "-CAfile",
        path(&lab.node.ca_pem()),
        path(&lab.node.peer_pem())
    ]));
    let text = openssl(&["x509", "-noout", "-text", "-in", path(&lab.node.peer_pem())]);
    assert!(
        text.contains("Subject: O = Spinifex Platform, CN = spx1"),
        "{text}"
    );
    assert!(text.contains("TLS Web Client Authentication, TLS Web Server Authentication, ipsec Internet Key Exchange"), "{text}");
    assert!(text.contains("DNS:spx1, IP Address:198.18.0.1"), "{text}");
    let (code, doc) = lab.run(&[]);
    let c = check(&doc, "ipsec.cert");
    assert_eq!((code, c["status"].as_str()), (0, Some("pass")), "{c:#}");
    assert_eq!(c["evidence"]["key"]["bits"], 4096);
}

#[root_test]
fn near_expiry_warns_within_the_configured_window() {
    let lab = Lab::new(Peer {
        not_before_days: -355,
        not_after_days: 10,
        ..Peer::spinifex("spx1")
    });
    let (code, doc) = lab.run(&[]);
    assert_eq!(code, 0);
    let c = check(&doc, "ipsec.cert");
    assert_eq!(c["code"], "ipsec.cert/expires-soon", "{c:#}");
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("(10 days from now)"),
        "{c:#}"
    );
    let (code, _) = lab.run(&["--strict"]);
    assert_eq!(code, 1);
    // [doctor] cert_warn_days = 5: ten days left is no warning.
    let mut text = std::fs::read_to_string(&lab.node.config).unwrap();
    text.push_str("[doctor]\ncert_warn_days = 5\n");
    std::fs::write(&lab.node.config, text).unwrap();
    let (_, doc) = lab.run(&[]);
    assert_eq!(code_of(&doc), "ipsec.cert/ok");
    assert_eq!(check(&doc, "ipsec.cert")["evidence"]["warn_days"], 5);
}

fn code_of(doc: &Value) -> String {
    code(doc).to_owned()
}

#[root_test]
fn a_certificate_for_another_name_fails() {
    let lab = Lab::new(Peer::spinifex("spx9"));
    let (code, doc) = lab.run(&[]);
    assert_eq!(code, 1);
    let c = check(&doc, "ipsec.cert");
    assert_eq!(c["code"], "ipsec.cert/wrong-name", "{c:#}");
    assert!(
        c["summary"].as_str().unwrap().contains("CN \"spx9\""),
        "{c:#}"
    );
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("the OVS chassis id is \"spx1\""),
        "{c:#}"
    );
    let fixes = support::strings(&c["remediation"]).join("\n");
    assert!(
        fixes.contains("-subj \"/O=Spinifex Platform/CN=spx1\""),
        "{fixes}"
    );
}

#[root_test]
fn a_certificate_of_another_ca_does_not_chain() {
    let lab = Lab::spinifex();
    let other = Ca::new("Spinifex CA");
    let key = rsa_key(2048);
    lab.node
        .write_peer(&Peer::spinifex("spx1").issue(&other, &key), &key);
    // The oracle: same issuer name, but openssl refuses the signature.
    assert!(!openssl_ok(&[
        "verify",
        "-CAfile",
        path(&lab.node.ca_pem()),
        path(&lab.node.peer_pem())
    ]));
    let (code, doc) = lab.run(&[]);
    assert_eq!(code, 1);
    assert_eq!(code_of(&doc), "ipsec.cert/untrusted-chain");
    let s = check(&doc, "ipsec.cert")["summary"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(s.contains("the CA's key did not sign it"), "{s}");
}

#[root_test]
fn a_key_of_another_certificate_and_a_world_readable_key_fail() {
    let lab = Lab::spinifex();
    let cert = std::fs::read_to_string(lab.node.peer_pem()).unwrap();
    let other_key = rsa_key(2048);
    lab.node.write_peer(&cert, &other_key);
    // The oracle: their public keys differ.
    assert_ne!(
        openssl(&[
            "x509",
            "-noout",
            "-pubkey",
            "-in",
            path(&lab.node.peer_pem())
        ]),
        openssl(&["pkey", "-pubout", "-in", path(&lab.node.peer_key())])
    );
    let (code, doc) = lab.run(&[]);
    assert_eq!(code, 1);
    assert_eq!(code_of(&doc), "ipsec.cert/key-mismatch");

    lab.reissue(&Peer::spinifex("spx1"), &other_key);
    lab.node.chmod_key(0o644);
    let (code, doc) = lab.run(&[]);
    assert_eq!(code, 1);
    assert_eq!(code_of(&doc), "ipsec.cert/key-exposed");
    let fixes = support::strings(&check(&doc, "ipsec.cert")["remediation"]);
    assert_eq!(
        fixes[0],
        format!("chmod 0600 {}", lab.node.peer_key().display())
    );
}

#[root_test]
fn a_cn_first_in_the_subject_is_unreadable_to_ovs_monitor_ipsec() {
    let lab = Lab::new(Peer {
        cn_first: true,
        ..Peer::spinifex("spx1")
    });
    // The oracle: ovs-monitor-ipsec's own reading (`openssl x509 -subject
    // -nameopt RFC2253`, then `CN=(.+?),`) finds no comma after the CN.
    let subject = openssl(&[
        "x509",
        "-noout",
        "-subject",
        "-nameopt",
        "RFC2253",
        "-in",
        path(&lab.node.peer_pem()),
    ]);
    assert_eq!(subject.trim(), "subject=O=Spinifex Platform,CN=spx1");
    let (code, doc) = lab.run(&[]);
    assert_eq!(code, 1);
    assert_eq!(code_of(&doc), "ipsec.cert/cn-unreadable");
}

#[root_test]
fn ovs_pointing_at_other_files_fails_and_unset_ones_too() {
    let lab = Lab::spinifex();
    let copy = lab.node.dir.path().join("elsewhere.pem");
    std::fs::copy(lab.node.peer_pem(), &copy).unwrap();
    lab.ovs.vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        &format!("other_config:certificate={}", copy.display()),
    ]);
    lab.ovs
        .vsctl(&["remove", "Open_vSwitch", ".", "other_config", "ca_cert"]);
    let (code, doc) = lab.run(&[]);
    assert_eq!(code, 1);
    assert_eq!(code_of(&doc), "ipsec.cert/ovs-pointers");
    let subjects: Vec<String> = check(&doc, "ipsec.cert")["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["subject"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        subjects.contains(&"other_config:certificate".to_owned()),
        "{subjects:?}"
    );
    assert!(
        subjects.contains(&"other_config:ca_cert".to_owned()),
        "{subjects:?}"
    );
    // A link to the same file is the same file.
    std::fs::remove_file(&copy).unwrap();
    std::os::unix::fs::symlink(lab.node.peer_pem(), &copy).unwrap();
    lab.ovs.vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        &format!("other_config:ca_cert={}", lab.node.ca_pem().display()),
    ]);
    let (_, doc) = lab.run(&[]);
    assert_eq!(code_of(&doc), "ipsec.cert/ok", "{:?}", codes(&doc));
}

/// charon started in its own mount and network namespaces over this
/// node's trust store: its log says which CAs it loaded.
fn charon_loads(trust: &Path) -> String {
    let run = tempfile::tempdir().unwrap();
    let log = run.path().join("charon.log");
    let mut cmd = Command::new("/usr/lib/ipsec/charon");
    let file = std::fs::File::create(&log).unwrap();
    cmd.stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file);
    isolate(
        &mut cmd,
        &[(run.path(), "/run"), (trust, TRUST_STORE)],
        true,
    );
    let mut child = cmd.spawn().expect("start charon");
    // charon writes its pid file once it has loaded its credentials; its
    // log (to a file, buffered) is complete once it exits on SIGTERM.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !run.path().join("charon.pid").exists() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let _ = child.wait();
    std::fs::read_to_string(&log).unwrap_or_default()
}

#[root_test]
fn a_ca_missing_from_charons_trust_store_fails_as_charon_sees_it() {
    if !support::tool_or_skip(
        "a_ca_missing_from_charons_trust_store_fails_as_charon_sees_it",
        "strongswan-charon",
        Path::new("/usr/lib/ipsec/charon").exists(),
    ) {
        return;
    }
    // No other test's charon runs meanwhile (ipsec.daemon's tests count them).
    let _only = crate::ipsec_daemon::CHARON_LOCK
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let lab = Lab::spinifex();
    // Linked as Spinifex links it: charon loads it.
    let log = charon_loads(lab.node.trust.path());
    assert!(
        log.contains("loaded ca certificate \"O=Spinifex Platform, CN=Spinifex CA\""),
        "{log}"
    );
    // The link gone: charon loads no CA, and the doctor says so.
    std::fs::remove_file(lab.node.trust.path().join("spinifex-ca.pem")).unwrap();
    let log = charon_loads(lab.node.trust.path());
    assert!(!log.contains("loaded ca certificate"), "{log}");
    let (code, doc) = lab.run(&[]);
    assert_eq!(code, 1);
    let c = check(&doc, "ipsec.cert");
    assert_eq!(c["code"], "ipsec.cert/ca-not-trusted", "{c:#}");
    let fixes = support::strings(&c["remediation"]);
    assert!(
        fixes[0].starts_with(&format!(
            "mkdir -p /etc/ipsec.d/cacerts && ln -sfn {} /etc/ipsec.d/cacerts/spinifex-ca.pem",
            lab.node.ca_pem().display()
        )),
        "{fixes:#?}"
    );
    // A link to a CA that moved is named as such.
    std::os::unix::fs::symlink(
        "/nonexistent/ca.pem",
        lab.node.trust.path().join("spinifex-ca.pem"),
    )
    .unwrap();
    let (_, doc) = lab.run(&[]);
    let s = check(&doc, "ipsec.cert")["summary"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        s.contains("spinifex-ca.pem links to /nonexistent/ca.pem, which does not exist"),
        "{s}"
    );
}

#[root_test]
fn before_enabling_ipsec_the_credentials_are_judged_and_unset_ovs_pointers_are_fine() {
    let lab = Lab::spinifex();
    let text = std::fs::read_to_string(&lab.node.config)
        .unwrap()
        .replace("ipsec_enabled = true", "ipsec_enabled = false");
    std::fs::write(&lab.node.config, text).unwrap();
    for key in [
        "certificate",
        "private_key",
        "ca_cert",
        "ipsec_encapsulation",
    ] {
        lab.ovs
            .vsctl(&["remove", "Open_vSwitch", ".", "other_config", key]);
    }
    // IPsec not wanted, no preflight: not applicable.
    let (_, doc) = lab.run(&[]);
    assert_eq!(code_of(&doc), "ipsec.cert/not-applicable");
    let (_, doc) = lab.run(&["--for", "enable-ipsec"]);
    let c = check(&doc, "ipsec.cert");
    assert_eq!(c["code"], "ipsec.cert/ok", "{c:#}");
    assert_eq!(c["evidence"]["purpose"], "enable-ipsec");
    // A missing key is named before the flip.
    std::fs::remove_file(lab.node.peer_key()).unwrap();
    let (code, doc) = lab.run(&["--for", "enable-ipsec"]);
    assert_eq!(code, 1);
    let c = check(&doc, "ipsec.cert");
    assert_eq!(c["code"], "ipsec.cert/missing", "{c:#}");
    assert!(c["summary"]
        .as_str()
        .unwrap()
        .starts_with("before enabling IPsec: the private key "));
}
