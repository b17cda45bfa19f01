//! The judgement on facts built in memory: certificates made by rcgen
//! (ECDSA P-256, which generates in microseconds; the RSA keys Spinifex
//! issues are covered by the integration tests on real files), keys
//! reduced to their facts by the same code the live read uses, and every
//! verdict checked against the schema.

use std::path::PathBuf;

use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};
use time::OffsetDateTime;

use super::{
    analyse, words, CertFacts, FileError, FileRead, IpsecCertEvidence, OvsFacts, Purpose, Role,
    Slot, TrustStore,
};
use crate::evidence::Evidence;
use crate::facts::credential::{pem, CredentialFile, PemBlock};
use crate::finding::{Finding, Status};

const NOW: i64 = 1_800_000_000;
const DAY: i64 = 86_400;

fn at(secs: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(secs).unwrap()
}

struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

fn ca() -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "Spinifex Platform");
    dn.push(DnType::CommonName, "Spinifex CA");
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    p.not_before = at(NOW - 10 * DAY);
    p.not_after = at(NOW + 3650 * DAY);
    Ca {
        cert: p.self_signed(&key).unwrap(),
        key,
    }
}

fn peer(ca: &Ca, key: &KeyPair, name: &str, not_after: i64) -> Vec<u8> {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "Spinifex Platform");
    dn.push(DnType::CommonName, name);
    p.distinguished_name = dn;
    p.subject_alt_names = vec![SanType::DnsName(name.to_owned().try_into().unwrap())];
    p.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ClientAuth,
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::Other(vec![1, 3, 6, 1, 5, 5, 7, 3, 17]),
    ];
    p.not_before = at(NOW - DAY);
    p.not_after = at(not_after);
    p.signed_by(key, &ca.cert, &ca.key).unwrap().der().to_vec()
}

fn file(path: &str, mode: u32, blocks: Vec<PemBlock>) -> FileRead {
    Ok(CredentialFile {
        path: path.into(),
        link: None,
        resolved: path.into(),
        mode,
        uid: 0,
        gid: 0,
        blocks,
    })
}

fn cert_block(der: &[u8]) -> PemBlock {
    PemBlock::Certificate {
        der: base64::engine::general_purpose::STANDARD.encode(der),
    }
}

fn key_block(key: &KeyPair) -> PemBlock {
    PemBlock::PrivateKey(pem::key_facts("PRIVATE KEY", &key.serialize_der()))
}

fn slot(role: Role, path: &str, read: FileRead) -> Slot {
    Slot {
        role,
        expected: path.into(),
        expected_file: read,
        ovs: Some(path.to_owned()),
        ovs_file: None,
    }
}

const PEM: &str = "/etc/spinifex/ipsec/peer.pem";
const KEY: &str = "/etc/spinifex/ipsec/peer.key";
const CA: &str = "/etc/spinifex/ca.pem";

/// A node as Spinifex sets it up, its certificate expiring at `not_after`.
fn facts(not_after: i64) -> CertFacts {
    let ca = ca();
    let key = KeyPair::generate().unwrap();
    let der = peer(&ca, &key, "spx1", not_after);
    CertFacts {
        purpose: Purpose::IpsecWanted,
        warn_days: 30,
        now: NOW,
        node: Some("spx1".into()),
        node_ip: Some("198.18.0.1".into()),
        config_dir: "/etc/spinifex".into(),
        ovs: Ok(OvsFacts {
            endpoint: "unix:/var/run/openvswitch/db.sock".into(),
            system_id: Some("spx1".into()),
        }),
        peer: slot(
            Role::Certificate,
            PEM,
            file(PEM, 0o644, vec![cert_block(&der)]),
        ),
        key: slot(Role::Key, KEY, file(KEY, 0o600, vec![key_block(&key)])),
        ca: slot(
            Role::Ca,
            CA,
            file(CA, 0o644, vec![cert_block(ca.cert.der())]),
        ),
        trust_stores: vec![TrustStore {
            dir: "/etc/ipsec.d/cacerts".into(),
            entries: Ok(vec![(
                "spinifex-ca.pem".into(),
                file(CA, 0o644, vec![cert_block(ca.cert.der())]),
            )]),
        }],
    }
}

fn judge(f: &CertFacts) -> Finding {
    crate::schema_check::valid("ipsec.cert", words::finding(f, &analyse(f)))
}

fn kinds(f: &Finding) -> Vec<&'static str> {
    f.findings.iter().map(|s| s.kind.name).collect()
}

#[test]
fn credentials_as_spinifex_issues_them_pass_with_their_expiry_as_a_series() {
    let f = judge(&facts(NOW + 365 * DAY));
    assert_eq!(f.status, Status::Pass, "{}", f.summary);
    assert!(
        f.summary.contains("(365 days, warned at 30)"),
        "{}",
        f.summary
    );
    let e: IpsecCertEvidence = f.evidence_as().unwrap();
    assert_eq!(e.trusted_as, ["/etc/ipsec.d/cacerts/spinifex-ca.pem"]);
    assert_eq!(
        e.key.as_ref().unwrap().public_key_sha256,
        Some(e.certificate.clone().unwrap().public_key_sha256)
    );
    let series = e.series();
    assert_eq!(series[0].labels, ["peer"]);
    assert_eq!(series[0].value, (365 * DAY) as f64);
}

#[test]
fn expiry_fails_when_past_and_warns_within_the_window_only() {
    let f = judge(&facts(NOW - DAY));
    assert_eq!(f.kind.name, "expired");
    assert!(
        f.remediation[0].starts_with("no `spx` command reissues"),
        "{:?}",
        f.remediation
    );
    let f = judge(&facts(NOW + 29 * DAY));
    assert_eq!((f.status, f.kind.name), (Status::Warn, "expires-soon"));
    assert!(f.summary.contains("(29 days from now)"), "{}", f.summary);
    let mut x = facts(NOW + 29 * DAY);
    x.warn_days = 20;
    assert_eq!(judge(&x).status, Status::Pass);
}

#[test]
fn a_chassis_id_that_is_not_the_node_name_says_how_spinifex_pins_it() {
    let mut x = facts(NOW + 365 * DAY);
    x.ovs = Ok(OvsFacts {
        endpoint: "unix:/x".into(),
        system_id: Some("0b1f6e3c-uuid".into()),
    });
    let f = judge(&x);
    assert_eq!(f.kind.name, "wrong-name");
    assert!(
        f.remediation[0].contains("`ovs-vsctl set Open_vSwitch . external_ids:system-id=spx1`"),
        "{:?}",
        f.remediation
    );
    // The certificate names the node: no reissue is offered.
    assert!(
        !f.remediation.iter().any(|r| r.contains("openssl genpkey")),
        "{:?}",
        f.remediation
    );
}

#[test]
fn before_enabling_ipsec_unset_ovs_pointers_are_not_judged() {
    let mut x = facts(NOW + 365 * DAY);
    for s in [&mut x.peer, &mut x.key, &mut x.ca] {
        s.ovs = None;
    }
    assert_eq!(judge(&x).kind.name, "ovs-pointers");
    x.purpose = Purpose::EnableIpsec;
    assert_eq!(judge(&x).status, Status::Pass);
}

#[test]
fn unreadable_as_a_user_is_a_skip_but_a_fail_still_fails() {
    let mut x = facts(NOW + 365 * DAY);
    x.key.expected_file = Err(FileError::Denied(
        "root to read /etc/spinifex/ipsec/peer.key".into(),
    ));
    let f = judge(&x);
    assert_eq!(f.status, Status::Skip, "{}", f.summary);
    assert_eq!(
        f.needs.as_deref(),
        Some("root to read /etc/spinifex/ipsec/peer.key")
    );
    let mut x = facts(NOW - DAY);
    x.key.expected_file = Err(FileError::Denied("root".into()));
    let f = judge(&x);
    assert_eq!(f.kind.name, "expired");
    assert!(kinds(&f).contains(&"needs-privilege"), "{:?}", kinds(&f));
}

#[test]
fn a_dangling_trust_link_and_an_unreachable_ovs_are_named() {
    let mut x = facts(NOW + 365 * DAY);
    x.trust_stores[0].entries = Ok(vec![(
        "spinifex-ca.pem".into(),
        Err(FileError::Dangling("/old/ca.pem".into())),
    )]);
    x.ovs = Err("Open_vSwitch at unix:/x did not answer".into());
    let f = judge(&x);
    assert_eq!(f.kind.name, "ca-not-trusted");
    assert!(
        f.summary
            .contains("spinifex-ca.pem links to /old/ca.pem, which does not exist"),
        "{}",
        f.summary
    );
    assert!(kinds(&f).contains(&"db-unreachable"), "{:?}", kinds(&f));
    // OVS alone unreachable is an error, never a pass.
    let mut x = facts(NOW + 365 * DAY);
    x.ovs = Err("down".into());
    assert_eq!(judge(&x).status, Status::Error);
}

#[test]
fn a_ca_that_is_no_ca_and_a_key_in_no_pem_are_named() {
    let mut x = facts(NOW + 365 * DAY);
    // The peer's own certificate given as the CA: it is no CA.
    let Ok(peer) = &x.peer.expected_file else {
        unreachable!()
    };
    x.ca.expected_file = Ok(CredentialFile {
        path: PathBuf::from(CA),
        ..peer.clone()
    });
    let f = judge(&x);
    assert!(
        f.summary.contains("is not a CA certificate"),
        "{}",
        f.summary
    );
    let mut x = facts(NOW + 365 * DAY);
    x.key.expected_file = file(KEY, 0o600, pem::blocks(b"not a key"));
    let f = judge(&x);
    assert_eq!(f.kind.name, "unusable");
    assert!(
        f.summary
            .contains("holds no private key (holds no PEM block)"),
        "{}",
        f.summary
    );
}

#[test]
fn a_certificate_without_the_ipsec_ike_eku_fails_naming_what_it_has() {
    let mut x = facts(NOW + 365 * DAY);
    let ca = ca();
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(vec!["spx1".to_owned()]).unwrap();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "Spinifex Platform");
    dn.push(DnType::CommonName, "spx1");
    p.distinguished_name = dn;
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    p.not_before = at(NOW - DAY);
    p.not_after = at(NOW + 100 * DAY);
    let der = p.signed_by(&key, &ca.cert, &ca.key).unwrap().der().to_vec();
    x.peer.expected_file = file(PEM, 0o644, vec![cert_block(&der)]);
    x.key.expected_file = file(KEY, 0o600, vec![key_block(&key)]);
    x.ca.expected_file = file(CA, 0o644, vec![cert_block(ca.cert.der())]);
    x.trust_stores[0].entries = Ok(vec![(
        "spinifex-ca.pem".into(),
        file(CA, 0o644, vec![cert_block(ca.cert.der())]),
    )]);
    let f = judge(&x);
    assert_eq!(f.kind.name, "missing-eku", "{}", f.summary);
    assert!(f.summary.ends_with("it has serverAuth"), "{}", f.summary);
}
