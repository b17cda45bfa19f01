//! Certificates made at test time, the way Spinifex's `admin/ipsec.go`
//! issues them (an RSA cluster CA; per node an RSA PKCS#8 key and a
//! certificate with O `Spinifex Platform` and CN the node's name, dNSName
//! the same, the node's IP, key usage digitalSignature and
//! keyEncipherment, EKUs clientAuth, serverAuth and ipsecIKE), or with one
//! thing wrong. Keys are made by `openssl genpkey` (PKCS#8, as Go's
//! MarshalPKCS8PrivateKey writes them), certificates by rcgen (any
//! validity, names and usages), and a node's files laid out as Spinifex
//! lays them: `<configdir>/ca.pem`, `ca.key`, `ipsec/peer.pem` (0644),
//! `ipsec/peer.key` (0600), the trust store linking the CA.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};
use time::{Duration, OffsetDateTime};

/// id-kp-ipsecIKE.
pub const IPSEC_IKE: [u64; 9] = [1, 3, 6, 1, 5, 5, 7, 3, 17];

/// A fresh RSA key, PKCS#8 PEM, from `openssl genpkey`.
pub fn rsa_key(bits: u32) -> String {
    let out = Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            &format!("rsa_keygen_bits:{bits}"),
        ])
        .output()
        .expect("run openssl (bash .ci/run installs openssl)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn key_pair(pem: &str) -> KeyPair {
    KeyPair::from_pkcs8_pem_and_sign_algo(pem, &rcgen::PKCS_RSA_SHA256).expect("an RSA PKCS#8 key")
}

/// A cluster CA.
pub struct Ca {
    pub cert: rcgen::Certificate,
    pub key: KeyPair,
    pub key_pem: String,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let key_pem = rsa_key(2048);
        let key = key_pair(&key_pem);
        let mut p = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::OrganizationName, "Spinifex Platform");
        dn.push(DnType::CommonName, name);
        p.distinguished_name = dn;
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let now = OffsetDateTime::now_utc();
        p.not_before = now - Duration::days(1);
        p.not_after = now + Duration::days(3650);
        let cert = p.self_signed(&key).unwrap();
        Ca { cert, key, key_pem }
    }
}

/// A peer certificate to issue: Spinifex's, unless a field says otherwise.
pub struct Peer {
    /// CN and dNSName.
    pub name: String,
    /// The CN first in the subject (ovs-monitor-ipsec cannot read it).
    pub cn_first: bool,
    pub ip: std::net::IpAddr,
    /// Days from now (negative: in the past).
    pub not_before_days: i64,
    pub not_after_days: i64,
    pub ipsec_ike: bool,
}

impl Peer {
    pub fn spinifex(name: &str) -> Peer {
        Peer {
            name: name.to_owned(),
            cn_first: false,
            ip: "198.18.0.1".parse().unwrap(),
            not_before_days: 0,
            not_after_days: 365,
            ipsec_ike: true,
        }
    }

    /// Its certificate (PEM) for `key_pem`, issued by `ca`.
    pub fn issue(&self, ca: &Ca, key_pem: &str) -> String {
        let key = key_pair(key_pem);
        let mut p = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        if self.cn_first {
            dn.push(DnType::CommonName, self.name.as_str());
            dn.push(DnType::OrganizationName, "Spinifex Platform");
        } else {
            dn.push(DnType::OrganizationName, "Spinifex Platform");
            dn.push(DnType::CommonName, self.name.as_str());
        }
        p.distinguished_name = dn;
        p.subject_alt_names = vec![
            SanType::DnsName(self.name.clone().try_into().unwrap()),
            SanType::IpAddress(self.ip),
        ];
        p.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        p.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ClientAuth,
            ExtendedKeyUsagePurpose::ServerAuth,
        ];
        if self.ipsec_ike {
            p.extended_key_usages
                .push(ExtendedKeyUsagePurpose::Other(IPSEC_IKE.to_vec()));
        }
        let now = OffsetDateTime::now_utc();
        // A minute of slack each side of "now", as a clock would have.
        p.not_before = now + Duration::days(self.not_before_days) - Duration::minutes(1);
        p.not_after = now + Duration::days(self.not_after_days);
        p.signed_by(&key, &ca.cert, &ca.key).unwrap().pem()
    }
}

/// One node's credentials laid out as Spinifex lays them, with its config.
pub struct NodeFiles {
    /// `<configdir>`: spinifex.toml, ca.pem, ca.key, ipsec/.
    pub dir: tempfile::TempDir,
    /// Stands for `/etc/ipsec.d/cacerts` (bind-mounted over it).
    pub trust: tempfile::TempDir,
    pub config: PathBuf,
}

impl NodeFiles {
    /// `node`'s files: the CA, a key and the certificate `peer` describes,
    /// the trust store linking the CA, and a two-node config wanting IPsec.
    pub fn new(node: &str, ca: &Ca, peer: &Peer) -> NodeFiles {
        let dir = tempfile::Builder::new()
            .prefix("spx-pki-")
            .tempdir()
            .unwrap();
        let trust = tempfile::Builder::new()
            .prefix("spx-cacerts-")
            .tempdir()
            .unwrap();
        let config = crate::support::write_config(
            dir.path(),
            &format!(
                "node = \"{node}\"\n[network]\nipsec_enabled = true\n[nodes.{node}]\nhost = \"198.18.0.1\"\n[nodes.other]\nhost = \"198.18.0.2\"\n"
            ),
        );
        let files = NodeFiles { dir, trust, config };
        files.write_ca(ca);
        let key = rsa_key(2048);
        files.write_peer(&peer.issue(ca, &key), &key);
        std::os::unix::fs::symlink(files.ca_pem(), files.trust.path().join("spinifex-ca.pem"))
            .unwrap();
        files
    }

    pub fn ipsec(&self) -> PathBuf {
        self.dir.path().join("ipsec")
    }
    pub fn peer_pem(&self) -> PathBuf {
        self.ipsec().join("peer.pem")
    }
    pub fn peer_key(&self) -> PathBuf {
        self.ipsec().join("peer.key")
    }
    pub fn ca_pem(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    pub fn write_ca(&self, ca: &Ca) {
        std::fs::write(self.ca_pem(), ca.cert.pem()).unwrap();
        write_mode(&self.dir.path().join("ca.key"), &ca.key_pem, 0o600);
    }

    /// Write the certificate (0644) and key (0600) as Spinifex does.
    pub fn write_peer(&self, cert: &str, key: &str) {
        std::fs::create_dir_all(self.ipsec()).unwrap();
        write_mode(&self.peer_pem(), cert, 0o644);
        write_mode(&self.peer_key(), key, 0o600);
    }

    pub fn chmod_key(&self, mode: u32) {
        std::fs::set_permissions(self.peer_key(), std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

fn write_mode(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `openssl ARGS`, its stdout; panics on failure.
pub fn openssl(args: &[&str]) -> String {
    let out = Command::new("openssl").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether `openssl ARGS` succeeds.
pub fn openssl_ok(args: &[&str]) -> bool {
    Command::new("openssl")
        .args(args)
        .output()
        .unwrap()
        .status
        .success()
}
