//! X.509 certificates, pure: what a certificate says (names, validity,
//! extended key usages, its public key's fingerprint) and whether one was
//! issued by another (issuer name and signature), all read by `x509-parser`
//! (signatures checked with `ring`).

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use x509_parser::extensions::GeneralName;
use x509_parser::oid_registry::{OID_X509_COMMON_NAME, OID_X509_EXT_EXTENDED_KEY_USAGE};
use x509_parser::prelude::{FromDer, X509Certificate};

use super::pem::sha256_hex;

/// id-kp-ipsecIKE (RFC 4945 §5.1.3.12), which Spinifex puts in every peer
/// certificate and strongSwan accepts as an IKEv2 credential.
pub const IPSEC_IKE_EKU: &str = "1.3.6.1.5.5.7.3.17";

/// What a certificate says, as the judgement needs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CertInfo {
    /// The subject, RDNs in certificate order (`O=Spinifex Platform, CN=spx1`).
    pub subject: String,
    pub issuer: String,
    /// The first CN of the subject.
    pub common_name: Option<String>,
    /// The name ovs-monitor-ipsec reads as this node's IKE identity: it
    /// runs `openssl x509 -subject -nameopt RFC2253` and takes `CN=(.+?),`,
    /// so a CN printed last (the first RDN in the certificate, or the only
    /// one) gives none, and it then ignores certificate and key.
    pub ovs_monitor_name: Option<String>,
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<IpAddr>,
    /// Seconds since the Unix epoch.
    pub not_before: i64,
    pub not_after: i64,
    /// The extended key usages by OID (`1.3.6.1.5.5.7.3.1` serverAuth…);
    /// null when the certificate has no such extension (any use allowed).
    pub extended_key_usages: Option<Vec<String>>,
    /// basicConstraints cA.
    pub is_ca: bool,
    /// keyUsage keyCertSign, or no keyUsage at all.
    pub may_sign_certificates: bool,
    /// `65:3f:…`, as `openssl x509 -serial` groups it.
    pub serial: String,
    /// SHA-256 of the certificate's DER, hex (`openssl x509 -fingerprint -sha256`).
    pub sha256: String,
    /// SHA-256 of its public key (the subjectPublicKey bits), hex: the
    /// same digest [`super::KeyFacts::public_key_sha256`] gives for its
    /// private key.
    pub public_key_sha256: String,
}

/// Why a certificate does not chain to a CA.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ChainError {
    /// The certificate names another issuer than the CA's subject.
    IssuerMismatch { issuer: String, ca_subject: String },
    /// The issuer's name is right but the CA's key did not sign it.
    BadSignature { reason: String },
    /// The CA certificate is no CA (basicConstraints cA false, or a
    /// keyUsage without keyCertSign).
    NotACa { subject: String },
    /// One of the two does not parse.
    Unreadable { reason: String },
}

impl std::fmt::Display for ChainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChainError::IssuerMismatch { issuer, ca_subject } => {
                write!(f, "issued by \"{issuer}\", not by the CA \"{ca_subject}\"")
            }
            ChainError::BadSignature { reason } => {
                write!(f, "the CA's key did not sign it ({reason})")
            }
            ChainError::NotACa { subject } => {
                write!(
                    f,
                    "\"{subject}\" is not a CA certificate (no cA, or no keyCertSign)"
                )
            }
            ChainError::Unreadable { reason } => f.write_str(reason),
        }
    }
}

fn parse_der(der: &[u8]) -> Result<X509Certificate<'_>, String> {
    let (rest, cert) =
        X509Certificate::from_der(der).map_err(|e| format!("not an X.509 certificate: {e}"))?;
    if !rest.is_empty() {
        return Err(format!("{} bytes follow the certificate's DER", rest.len()));
    }
    Ok(cert)
}

/// What the certificate `der` says.
pub fn parse(der: &[u8]) -> Result<CertInfo, String> {
    let cert = parse_der(der)?;
    let subject = cert.subject();
    let common_name = subject
        .iter_common_name()
        .next()
        .and_then(|a| a.as_str().ok())
        .map(str::to_owned);
    // The RDN that holds the CN, in certificate order: RFC 2253 prints
    // them last first, so the first one is printed last, with no comma
    // after it.
    let cn_rdn = subject
        .iter()
        .position(|rdn| rdn.iter().any(|a| a.attr_type() == &OID_X509_COMMON_NAME));
    let ovs_monitor_name = match (cn_rdn, &common_name) {
        (Some(i), Some(cn)) if i > 0 => Some(
            cn.replace(',', "\\,")
                .split(',')
                .next()
                .unwrap_or("")
                .to_owned(),
        ),
        _ => None,
    };
    let mut dns_names = Vec::new();
    let mut ip_addresses = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                GeneralName::DNSName(d) => dns_names.push((*d).to_owned()),
                GeneralName::IPAddress(b) => {
                    if let Ok(a) = <[u8; 4]>::try_from(*b) {
                        ip_addresses.push(IpAddr::from(a));
                    } else if let Ok(a) = <[u8; 16]>::try_from(*b) {
                        ip_addresses.push(IpAddr::from(a));
                    }
                }
                _ => {}
            }
        }
    }
    let extended_key_usages = cert
        .iter_extensions()
        .any(|e| e.oid == OID_X509_EXT_EXTENDED_KEY_USAGE)
        .then(|| ekus(&cert))
        .transpose()?;
    let (is_ca, may_sign_certificates) = (
        cert.basic_constraints()
            .ok()
            .flatten()
            .is_some_and(|b| b.value.ca),
        match cert.key_usage() {
            Ok(Some(ku)) => ku.value.key_cert_sign(),
            Ok(None) => true,
            Err(_) => false,
        },
    );
    let validity = cert.validity();
    Ok(CertInfo {
        subject: subject.to_string(),
        issuer: cert.issuer().to_string(),
        common_name,
        ovs_monitor_name,
        dns_names,
        ip_addresses,
        not_before: validity.not_before.timestamp(),
        not_after: validity.not_after.timestamp(),
        extended_key_usages,
        is_ca,
        may_sign_certificates,
        serial: cert.raw_serial_as_string(),
        sha256: sha256_hex(der),
        public_key_sha256: sha256_hex(&cert.public_key().subject_public_key.data),
    })
}

fn ekus(cert: &X509Certificate<'_>) -> Result<Vec<String>, String> {
    let Some(eku) = cert
        .extended_key_usage()
        .map_err(|e| format!("its extendedKeyUsage does not parse: {e}"))?
    else {
        return Ok(Vec::new());
    };
    let e = eku.value;
    let mut out = Vec::new();
    for (on, oid) in [
        (e.any, "2.5.29.37.0"),
        (e.server_auth, "1.3.6.1.5.5.7.3.1"),
        (e.client_auth, "1.3.6.1.5.5.7.3.2"),
        (e.code_signing, "1.3.6.1.5.5.7.3.3"),
        (e.email_protection, "1.3.6.1.5.5.7.3.4"),
        (e.time_stamping, "1.3.6.1.5.5.7.3.8"),
        (e.ocsp_signing, "1.3.6.1.5.5.7.3.9"),
    ] {
        if on {
            out.push(oid.to_owned());
        }
    }
    out.extend(e.other.iter().map(|o| o.to_id_string()));
    Ok(out)
}

/// The name of an extended key usage an operator knows it by.
pub fn eku_name(oid: &str) -> &str {
    match oid {
        "2.5.29.37.0" => "anyExtendedKeyUsage",
        "1.3.6.1.5.5.7.3.1" => "serverAuth",
        "1.3.6.1.5.5.7.3.2" => "clientAuth",
        "1.3.6.1.5.5.7.3.3" => "codeSigning",
        "1.3.6.1.5.5.7.3.4" => "emailProtection",
        "1.3.6.1.5.5.7.3.8" => "timeStamping",
        "1.3.6.1.5.5.7.3.9" => "OCSPSigning",
        IPSEC_IKE_EKU => "ipsecIKE",
        other => other,
    }
}

/// Was `leaf` issued by `ca`: the CA may sign certificates, the leaf names
/// it as issuer, and the CA's key verifies the leaf's signature.
pub fn verify_issued_by(leaf: &[u8], ca: &[u8]) -> Result<(), ChainError> {
    let unreadable = |what: &str, e: String| ChainError::Unreadable {
        reason: format!("the {what}: {e}"),
    };
    let leaf = parse_der(leaf).map_err(|e| unreadable("certificate", e))?;
    let ca = parse_der(ca).map_err(|e| unreadable("CA certificate", e))?;
    let ca_is_ca = ca
        .basic_constraints()
        .ok()
        .flatten()
        .is_some_and(|b| b.value.ca)
        && !matches!(ca.key_usage(), Ok(Some(ku)) if !ku.value.key_cert_sign());
    if !ca_is_ca {
        return Err(ChainError::NotACa {
            subject: ca.subject().to_string(),
        });
    }
    if leaf.issuer().as_raw() != ca.subject().as_raw() {
        return Err(ChainError::IssuerMismatch {
            issuer: leaf.issuer().to_string(),
            ca_subject: ca.subject().to_string(),
        });
    }
    leaf.verify_signature(Some(ca.public_key()))
        .map_err(|e| ChainError::BadSignature {
            reason: e.to_string(),
        })
}
