//! `ipsec.cert`: the credentials IKE authenticates this node with are
//! usable, today and for the next weeks: the peer certificate and key
//! Spinifex issued (`<configdir>/ipsec/peer.pem`, `peer.key`), the cluster
//! CA (`<configdir>/ca.pem`), the files OVS gives ovs-monitor-ipsec
//! (`Open_vSwitch other_config:certificate`, `private_key`, `ca_cert`), and
//! the CA where charon really reads it (strongSwan's trust store,
//! `/etc/ipsec.d/cacerts`: ovs-monitor-ipsec's own `ca` section is not
//! loaded by the starter).
//!
//! Why: the peer certificate is valid for 365 days and nothing renews it;
//! the day the first one expires, IKE fails between that node and every
//! other, and geneve to it is dropped or goes out in clear. A CN that is not
//! the chassis id, a key that is not the certificate's, a CA missing from
//! the trust store all fail IKE the same way (`AUTHENTICATION_FAILED`, "no
//! trusted RSA public key"), with nothing else to show it.
//!
//! [`gather`] reads the facts through the host seam (a private key only as
//! the fingerprint of its public key); [`analyse`] judges them (pure);
//! `words` says it.

mod analyse;
#[cfg(test)]
mod tests;
mod words;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::evidence::Evidence;
use crate::facts::credential::CredentialFile;
use crate::facts::ProbeError;
use crate::finding::{Finding, SkipReason};
use crate::host::HostRef;
use crate::metrics::{MetricDef, MetricType, Series};
use crate::read::ovsdb;
use crate::settings::ConfigState;
use crate::settings::Preflight;
use crate::spinifex;
use crate::targets::ovsdb_endpoints as endpoints;

pub use analyse::{analyse, Problem, Role};

pub struct IpsecCert;

crate::kinds! {
    /// What `ipsec.cert` can say, per credential and for the check.
    pub enum IpsecCertKind for "ipsec.cert" {
        /// The peer certificate, its key and the cluster CA are where Spinifex and OVS say, valid beyond the warning window, named for this chassis, issued by the CA that charon's trust store holds.
        Ok = pass("ok"),
        /// A credential file is missing (the peer certificate, its key or the cluster CA): IKE cannot authenticate this node.
        Missing = fail("missing"),
        /// A credential file cannot be used: not PEM, no certificate in it, a key encrypted with a passphrase or of a kind that cannot be read.
        Unusable = fail("unusable"),
        /// The peer certificate or the cluster CA has expired: IKE with every peer fails (AUTHENTICATION_FAILED) and geneve to this node is dropped or sent in clear.
        Expired = fail("expired"),
        /// The peer certificate or the CA is not valid yet (its notBefore is in the future: a clock off, or issued on a machine whose clock is).
        NotYetValid = fail("not-yet-valid"),
        /// The peer certificate does not chain to the cluster CA (another issuer, a signature the CA's key did not make, or a CA file that is no CA): the peers reject this node.
        UntrustedChain = fail("untrusted-chain"),
        /// The private key does not belong to the certificate (their public keys differ): IKE authentication fails.
        KeyMismatch = fail("key-mismatch"),
        /// The certificate's CN or dNSName is not this node's OVS chassis id (external_ids:system-id) or its name in the config: the peers expect the chassis id as this node's IKE identity.
        WrongName = fail("wrong-name"),
        /// ovs-monitor-ipsec cannot read the CN: it takes `CN=(.+?),` from the RFC 2253 subject, so a CN that comes first in the certificate (or alone) yields nothing and it ignores certificate and key.
        CnUnreadable = fail("cn-unreadable"),
        /// The certificate lacks the ipsecIKE extended key usage (1.3.6.1.5.5.7.3.17) Spinifex issues it with.
        MissingEku = fail("missing-eku"),
        /// The cluster CA is not in charon's trust store (/etc/ipsec.d/cacerts for strongSwan with the starter): IKE fails with AUTHENTICATION_FAILED, "no trusted RSA public key".
        CaNotTrusted = fail("ca-not-trusted"),
        /// The private key file is readable by every user on the host.
        KeyExposed = fail("key-exposed"),
        /// OVS other_config:certificate, private_key or ca_cert is unset or names other files than Spinifex's credentials: ovs-monitor-ipsec configures IKE with those.
        OvsPointers = fail("ovs-pointers"),
        /// The peer certificate or the CA expires within the warning window (`[doctor] cert_warn_days`, 30 days unless set): nothing renews it.
        ExpiresSoon = warn("expires-soon"),
        /// The local Open_vSwitch database could not be read, so the files OVS points at and the chassis id are unknown: never a pass.
        DbUnreachable = error("db-unreachable"),
    }
}

static DECLARED: Declared = Declared::of::<IpsecCertKind, IpsecCertEvidence>();

/// Why the credentials are judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Purpose {
    /// The config wants IPsec: they are in use.
    IpsecWanted,
    /// `--for enable-ipsec`: they are about to be; OVS is pointed at them
    /// by the daemon when IPsec is turned on.
    EnableIpsec,
}

/// Why a file could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileError {
    Missing,
    /// A dangling link: where it points.
    Dangling(PathBuf),
    Denied(String),
    Other(String),
}

/// One credential file as read (or why not).
pub type FileRead = Result<CredentialFile, FileError>;

/// A credential: where Spinifex keeps it, where OVS points, and the files.
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    pub role: Role,
    /// Where Spinifex keeps it.
    pub expected: PathBuf,
    pub expected_file: FileRead,
    /// What OVS names (`other_config:certificate`…), when OVS was read and
    /// names one.
    pub ovs: Option<String>,
    /// The file OVS names, when its text differs from `expected`.
    pub ovs_file: Option<FileRead>,
}

impl Slot {
    /// The file IKE uses: the one OVS names, else Spinifex's.
    pub fn used(&self) -> (PathBuf, &FileRead) {
        match (&self.ovs, &self.ovs_file) {
            (Some(p), Some(f)) => (PathBuf::from(p), f),
            _ => (self.expected.clone(), &self.expected_file),
        }
    }
}

/// What OVS says, or why it said nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct OvsFacts {
    pub endpoint: String,
    pub system_id: Option<String>,
}

/// One trust store directory and the certificates in it.
#[derive(Clone, Debug, PartialEq)]
pub struct TrustStore {
    pub dir: PathBuf,
    /// Each entry by name and what it holds; `Err` when the directory could
    /// not be listed.
    pub entries: Result<Vec<(String, FileRead)>, FileError>,
}

/// Everything `ipsec.cert` judges.
#[derive(Clone, Debug, PartialEq)]
pub struct CertFacts {
    pub purpose: Purpose,
    pub warn_days: u32,
    /// The wall clock, seconds since the Unix epoch.
    pub now: i64,
    /// The config's `node`.
    pub node: Option<String>,
    /// This node's address in the config (`advertise`, else `host`), for
    /// the certificate's IP SAN.
    pub node_ip: Option<String>,
    /// The config's directory.
    pub config_dir: PathBuf,
    pub ovs: Result<OvsFacts, String>,
    pub peer: Slot,
    pub key: Slot,
    pub ca: Slot,
    /// The trust store directories that exist (none: charon has none).
    pub trust_stores: Vec<TrustStore>,
}

/// Where strongSwan's starter-driven charon loads CA certificates from:
/// Debian and Ubuntu, then Fedora and RHEL.
pub const TRUST_STORES: [&str; 2] = ["/etc/ipsec.d/cacerts", "/etc/strongswan/ipsec.d/cacerts"];

/// One certificate as the evidence shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CertEvidence {
    pub path: String,
    /// The file it resolves to, links followed.
    pub resolved: String,
    pub subject: String,
    pub issuer: String,
    pub common_name: Option<String>,
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<String>,
    /// RFC 3339.
    pub not_before: String,
    pub not_after: String,
    /// Seconds from the check to `not_after` (negative: expired).
    pub expires_in_seconds: i64,
    /// By name (`serverAuth`, `ipsecIKE`) or OID; null without the extension.
    pub extended_key_usages: Option<Vec<String>>,
    pub serial: String,
    /// SHA-256 of the certificate, hex.
    pub sha256: String,
    /// SHA-256 of its public key, hex.
    pub public_key_sha256: String,
}

/// The private key as the evidence shows it: never the key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyEvidence {
    pub path: String,
    pub resolved: String,
    /// `0600`.
    pub mode: String,
    pub uid: u32,
    pub algorithm: Option<String>,
    pub bits: Option<u32>,
    /// SHA-256 of the public key it belongs to, hex.
    pub public_key_sha256: Option<String>,
}

/// What `ipsec.cert` read and judged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpsecCertEvidence {
    pub purpose: Purpose,
    /// The warning window in days (`[doctor] cert_warn_days`).
    pub warn_days: u32,
    /// When it was judged, RFC 3339.
    pub checked_at: String,
    pub certificate: Option<CertEvidence>,
    pub key: Option<KeyEvidence>,
    pub ca: Option<CertEvidence>,
    /// `Open_vSwitch other_config:certificate`, `private_key`, `ca_cert`
    /// and `external_ids:system-id`, as read; null when unset or unread.
    pub ovs_certificate: Option<String>,
    pub ovs_private_key: Option<String>,
    pub ovs_ca_cert: Option<String>,
    pub system_id: Option<String>,
    /// The config's `node`.
    pub node: Option<String>,
    /// The trust store entries that hold the cluster CA (`/etc/ipsec.d/cacerts/spinifex-ca.pem`).
    pub trusted_as: Vec<String>,
}

static EXPIRY: MetricDef = MetricDef {
    name: "spx_doctor_ipsec_certificate_expiry_seconds",
    help: "Seconds until the IPsec peer certificate (certificate=peer) or the cluster CA (certificate=ca) expires; negative once expired.",
    kind: MetricType::Gauge,
    labels: &["certificate"],
};

impl Evidence for IpsecCertEvidence {
    const METRICS: &'static [&'static MetricDef] = &[&EXPIRY];
    fn series(&self) -> Vec<Series> {
        [("peer", &self.certificate), ("ca", &self.ca)]
            .into_iter()
            .filter_map(|(label, c)| {
                let c = c.as_ref()?;
                Some(Series::labelled(
                    &EXPIRY,
                    vec![label.to_owned()],
                    c.expires_in_seconds as f64,
                ))
            })
            .collect()
    }
}

impl Check for IpsecCert {
    fn id(&self) -> &'static str {
        "ipsec.cert"
    }

    fn title(&self) -> &'static str {
        "The IPsec peer certificate, key and cluster CA are valid, matching, named for this chassis and trusted by charon"
    }

    fn explain(&self) -> &'static str {
        "Reads the credentials IKE authenticates this node with: the peer certificate and key \
         Spinifex issues at `spx admin init`/`join` (<configdir>/ipsec/peer.pem and peer.key, \
         <configdir> being the directory of the config), the cluster CA (<configdir>/ca.pem), the \
         files the local Open_vSwitch row gives ovs-monitor-ipsec (other_config:certificate, \
         private_key, ca_cert; over OVSDB, or --ovs-db) and the chassis id \
         (external_ids:system-id), and charon's trust store (/etc/ipsec.d/cacerts, or \
         /etc/strongswan/ipsec.d/cacerts). Certificates are parsed with x509-parser and the \
         signature checked with ring; the private key is read as root and reduced to the \
         fingerprint of its public key, which is all a report or a bundle holds of it.\n\
         \n\
         Runs when IPsec is wanted, and with --for enable-ipsec (before it is). Fails when a \
         file is missing or unusable, the certificate or CA expired or is not valid yet, the \
         certificate does not chain to the CA, the key is not the certificate's, the CN or \
         dNSName is not the chassis id (and the config's node name), ovs-monitor-ipsec cannot \
         read the CN (it wants `CN=…,` in the RFC 2253 subject), the ipsecIKE EKU \
         (1.3.6.1.5.5.7.3.17) is absent, the key file is world-readable, the CA is not in the \
         trust store, or OVS names other files. Warns when a certificate expires within \
         [doctor] cert_warn_days (30 unless set in the config).\n\
         \n\
         Why: the peer certificate is valid for 365 days and nothing renews it: the day it \
         expires, IKE with every peer fails and geneve to this node is dropped or sent in \
         clear, while every other health signal stays green. ovs-monitor-ipsec writes its `ca` \
         section without auto=add, so the starter never loads it: charon trusts only what is \
         in its trust store.\n\
         \n\
         Fix: no `spx` command renews the peer certificate (`spx admin cert renew` renews only \
         the server certificate). The finding gives the openssl commands that reissue it from \
         the cluster CA as Spinifex does (RSA 4096 PKCS#8, O=Spinifex Platform, CN and dNSName \
         the chassis id, the node's IP, digitalSignature and keyEncipherment, clientAuth, \
         serverAuth and ipsecIKE, 365 days), then `systemctl restart openvswitch-ipsec`."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let facts = match gather(ctx) {
            Ok(f) => f,
            Err(f) => return f,
        };
        words::finding(&facts, &analyse(&facts))
    }
}

/// Why the credentials are judged in this run, or the skip when they are
/// not.
fn purpose(ctx: &Ctx) -> Result<Purpose, Finding> {
    let expect = ctx.expectations()?;
    if expect.node_count <= 1 {
        return Err(Finding::skip(SkipReason::NotApplicable(
            "a single-node cluster encrypts no geneve: IPsec is never used".into(),
        )));
    }
    if ctx.opts.profile == Some(Preflight::EnableIpsec) {
        return Ok(Purpose::EnableIpsec);
    }
    if !expect.ipsec_wanted {
        return Err(Finding::skip(SkipReason::NotApplicable(
            "IPsec is not wanted (ipsec_enabled = false): its credentials are checked when it is, and by --for enable-ipsec".into(),
        )));
    }
    Ok(Purpose::IpsecWanted)
}

fn file_error(e: ProbeError, host: HostRef<'_>, path: &Path) -> FileError {
    match e {
        ProbeError::NotFound(_) => match host.read_link(path) {
            Ok(target) => FileError::Dangling(target),
            Err(_) => FileError::Missing,
        },
        ProbeError::PermissionDenied { needs, .. } => FileError::Denied(needs),
        other => FileError::Other(other.to_string()),
    }
}

fn read(host: HostRef<'_>, path: &Path) -> FileRead {
    host.credential(path).map_err(|e| file_error(e, host, path))
}

fn slot(host: HostRef<'_>, role: Role, expected: PathBuf, ovs: Option<String>) -> Slot {
    let expected_file = read(host, &expected);
    let ovs_file = ovs
        .as_deref()
        .filter(|p| Path::new(p) != expected)
        .map(|p| read(host, Path::new(p)));
    Slot {
        role,
        expected,
        expected_file,
        ovs,
        ovs_file,
    }
}

/// Read everything `ipsec.cert` judges.
pub fn gather(ctx: &Ctx) -> Result<CertFacts, Finding> {
    let purpose = purpose(ctx)?;
    let config = ctx.config()?;
    let config_path = match &ctx.config {
        ConfigState::Loaded { path, .. } => path.clone(),
        _ => PathBuf::from(spinifex::CONFIG_PATH),
    };
    let config_dir = config_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_owned();
    let host = ctx.host();
    let now = host.unix_time().map_err(Finding::from)?;
    let (endpoint, _) = endpoints::ovs(ctx)?;
    let ovs_row = ovsdb::ovs_row(host, &endpoint, endpoints::budget(ctx));
    let (row, ovs) = match ovs_row {
        Ok(a) => {
            let facts = OvsFacts {
                endpoint: a.endpoint.to_string(),
                system_id: a.value.system_id.clone(),
            };
            (Some(a.value), Ok(facts))
        }
        Err(e) => (None, Err(e.to_string())),
    };
    let pointer = |f: fn(&crate::facts::ovsdb::OvsRow) -> &Option<String>| {
        row.as_ref().and_then(|r| f(r).clone())
    };
    let ipsec = config_dir.join(spinifex::IPSEC_DIR);
    let peer = slot(
        host,
        Role::Certificate,
        ipsec.join(spinifex::PEER_CERT),
        pointer(|r| &r.certificate),
    );
    let key = slot(
        host,
        Role::Key,
        ipsec.join(spinifex::PEER_KEY),
        pointer(|r| &r.private_key),
    );
    let ca = slot(
        host,
        Role::Ca,
        config_dir.join(spinifex::CLUSTER_CA),
        pointer(|r| &r.ca_cert),
    );
    let mut trust_stores = Vec::new();
    for dir in TRUST_STORES {
        let dir = PathBuf::from(dir);
        let entries = match host.read_dir(&dir) {
            Ok(names) => Ok(names
                .into_iter()
                .filter(|n| !n.starts_with('.'))
                .map(|n| {
                    let f = read(host, &dir.join(&n));
                    (n, f)
                })
                .collect()),
            Err(ProbeError::NotFound(_)) => continue,
            Err(e) => Err(file_error(e, host, &dir)),
        };
        trust_stores.push(TrustStore { dir, entries });
    }
    let this = config.this_node();
    Ok(CertFacts {
        purpose,
        warn_days: config.doctor.cert_warn_days,
        now,
        node: config.node.clone(),
        node_ip: this.and_then(|n| n.advertise.clone().or_else(|| n.host.clone())),
        config_dir,
        ovs,
        peer,
        key,
        ca,
        trust_stores,
    })
}
