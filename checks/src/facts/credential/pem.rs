//! PEM blocks, pure: certificates kept as DER (public), private keys reduced
//! to the facts a judgement needs (algorithm, size, and the SHA-256 of the
//! public key they belong to). PEM framing is `x509-parser`'s; the keys are
//! read by `ring` (PKCS#8 RSA, ECDSA P-256/P-384 and Ed25519, and PKCS#1
//! RSA), which derives the public key.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// The largest credential file read (a certificate chain of a few
/// certificates is well under this).
pub const MAX_FILE: u64 = 256 * 1024;

/// One PEM block of a credential file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum PemBlock {
    /// A certificate: its DER, base64 (public).
    Certificate { der: String },
    /// A private key: only what was derived from it.
    PrivateKey(KeyFacts),
    /// Anything else, by its label (`X509 CRL`, `PARAMETERS`).
    Other { label: String },
    /// Text that is not PEM (or a block that does not decode).
    Malformed { reason: String },
}

/// What a private key is, never the key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyFacts {
    /// The PEM label: `PRIVATE KEY` (PKCS#8), `RSA PRIVATE KEY` (PKCS#1),
    /// `ENCRYPTED PRIVATE KEY`, `EC PRIVATE KEY` (SEC1).
    pub label: String,
    /// `rsa`, `ecdsa-p256`, `ecdsa-p384`, `ed25519`; null when unknown.
    pub algorithm: Option<String>,
    /// The key size in bits (RSA: the modulus).
    pub bits: Option<u32>,
    /// SHA-256, hex, of the public key it belongs to as a certificate
    /// carries it (the subjectPublicKey bits): equal to the certificate's
    /// [`super::x509::CertInfo::public_key_sha256`] when they belong
    /// together.
    pub public_key_sha256: Option<String>,
    /// Why the public key could not be derived.
    pub error: Option<String>,
}

/// Every PEM block of `bytes`, in order; text that holds none is one
/// [`PemBlock::Malformed`].
pub fn blocks(bytes: &[u8]) -> Vec<PemBlock> {
    let mut out = Vec::new();
    for pem in x509_parser::pem::Pem::iter_from_buffer(bytes) {
        match pem {
            Ok(pem) => out.push(block(&pem.label, &pem.contents)),
            Err(e) => {
                out.push(PemBlock::Malformed {
                    reason: format!("not PEM past block {}: {e}", out.len()),
                });
                break;
            }
        }
    }
    if out.is_empty() {
        out.push(PemBlock::Malformed {
            reason: "holds no PEM block".into(),
        });
    }
    out
}

fn block(label: &str, der: &[u8]) -> PemBlock {
    match label {
        "CERTIFICATE" | "X509 CERTIFICATE" | "TRUSTED CERTIFICATE" => PemBlock::Certificate {
            der: base64::engine::general_purpose::STANDARD.encode(der),
        },
        l if l.ends_with("PRIVATE KEY") => PemBlock::PrivateKey(key_facts(l, der)),
        other => PemBlock::Other {
            label: other.to_owned(),
        },
    }
}

/// The DER a [`PemBlock::Certificate`] holds.
pub fn decode_der(b64: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| format!("not base64: {e}"))
}

/// SHA-256 of `bytes`, lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// What a private key of PEM label `label` and DER `der` is.
pub fn key_facts(label: &str, der: &[u8]) -> KeyFacts {
    let mut facts = KeyFacts {
        label: label.to_owned(),
        algorithm: None,
        bits: None,
        public_key_sha256: None,
        error: None,
    };
    let derived: Result<(&str, Option<u32>, Vec<u8>), String> = match label {
        "PRIVATE KEY" => pkcs8(der),
        "RSA PRIVATE KEY" => ring::rsa::KeyPair::from_der(der)
            .map(|k| rsa(&k))
            .map_err(|e| format!("not an RSA key ring accepts: {e}")),
        "ENCRYPTED PRIVATE KEY" => Err(
            "encrypted with a passphrase, which ovs-monitor-ipsec's ipsec.secrets does not give charon"
                .into(),
        ),
        "EC PRIVATE KEY" => Err(
            "a SEC1 EC key: its public key is not derived here (convert it with `openssl pkcs8 -topk8 -nocrypt`)"
                .into(),
        ),
        other => Err(format!("a {other} block is not a key this check reads")),
    };
    match derived {
        Ok((algorithm, bits, public)) => {
            facts.algorithm = Some(algorithm.to_owned());
            facts.bits = bits;
            facts.public_key_sha256 = Some(sha256_hex(&public));
        }
        Err(e) => facts.error = Some(e),
    }
    facts
}

fn rsa(k: &ring::rsa::KeyPair) -> (&'static str, Option<u32>, Vec<u8>) {
    let public = k.public();
    (
        "rsa",
        u32::try_from(public.modulus_len() * 8).ok(),
        public.as_ref().to_vec(),
    )
}

/// A PKCS#8 key of any algorithm ring reads.
fn pkcs8(der: &[u8]) -> Result<(&'static str, Option<u32>, Vec<u8>), String> {
    use ring::signature::{self, KeyPair as _};
    let rsa_err = match ring::rsa::KeyPair::from_pkcs8(der) {
        Ok(k) => return Ok(rsa(&k)),
        Err(e) => e,
    };
    let rng = ring::rand::SystemRandom::new();
    for (alg, name, bits) in [
        (
            &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
            "ecdsa-p256",
            256,
        ),
        (
            &signature::ECDSA_P384_SHA384_ASN1_SIGNING,
            "ecdsa-p384",
            384,
        ),
    ] {
        if let Ok(k) = signature::EcdsaKeyPair::from_pkcs8(alg, der, &rng) {
            return Ok((name, Some(bits), k.public_key().as_ref().to_vec()));
        }
    }
    if let Ok(k) = signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(der) {
        return Ok(("ed25519", Some(256), k.public_key().as_ref().to_vec()));
    }
    Err(format!(
        "a PKCS#8 key that is not RSA (ring: {rsa_err}), ECDSA P-256/P-384 or Ed25519"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_without_pem_is_one_malformed_block() {
        assert!(matches!(
            blocks(b"hello").as_slice(),
            [PemBlock::Malformed { .. }]
        ));
        assert!(matches!(
            blocks(b"").as_slice(),
            [PemBlock::Malformed { .. }]
        ));
    }

    #[test]
    fn a_key_that_is_not_a_key_says_so_and_holds_nothing() {
        let k = key_facts("PRIVATE KEY", b"\x30\x03\x02\x01\x00");
        assert!(k.error.is_some(), "{k:?}");
        assert_eq!(k.public_key_sha256, None);
        let k = key_facts("ENCRYPTED PRIVATE KEY", b"");
        assert!(k.error.unwrap().contains("passphrase"));
    }

    #[test]
    fn other_blocks_keep_only_their_label() {
        let pem = b"-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n";
        assert_eq!(
            blocks(pem),
            [PemBlock::Other {
                label: "X509 CRL".into()
            }]
        );
    }
}
