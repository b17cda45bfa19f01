//! The judgement of `ipsec.cert`, pure: the facts in, the credentials as
//! parsed and what is wrong with them out. No words here
//! ([`super::words`] says it).

use std::path::{Path, PathBuf};

use super::{CertFacts, FileError, FileRead, Purpose, Slot};
use crate::facts::credential::x509::{self, CertInfo, ChainError, IPSEC_IKE_EKU};
use crate::facts::credential::{CredentialFile, KeyFacts};

/// Which credential.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// The peer certificate (`ipsec/peer.pem`).
    Certificate,
    /// Its private key (`ipsec/peer.key`).
    Key,
    /// The cluster CA (`ca.pem`).
    Ca,
    /// charon's trust store.
    TrustStore,
}

/// What is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// No file at `path` (or a link to nothing: `dangling`, where it points).
    Missing {
        role: Role,
        path: PathBuf,
        dangling: Option<PathBuf>,
    },
    /// Not ours to read.
    Denied {
        role: Role,
        path: PathBuf,
        needs: String,
    },
    /// There, but of no use.
    Unusable {
        role: Role,
        path: PathBuf,
        reason: String,
    },
    /// The local Open_vSwitch row could not be read.
    OvsUnreachable {
        reason: String,
    },
    /// OVS names no file for `role` (`ovs` None), or another file than
    /// Spinifex's.
    OvsPointer {
        role: Role,
        ovs: Option<String>,
        expected: PathBuf,
    },
    Expired {
        role: Role,
        not_after: i64,
    },
    NotYetValid {
        role: Role,
        not_before: i64,
    },
    ExpiresSoon {
        role: Role,
        not_after: i64,
        days_left: i64,
    },
    UntrustedChain(ChainError),
    /// The key's public key is not the certificate's (fingerprints).
    KeyMismatch {
        certificate: String,
        key: String,
    },
    /// The certificate is not named for this chassis.
    WrongName {
        common_name: Option<String>,
        dns_names: Vec<String>,
        system_id: Option<String>,
        node: Option<String>,
    },
    /// ovs-monitor-ipsec reads no CN (or another one) from this subject.
    CnUnreadable {
        subject: String,
        reads: Option<String>,
    },
    /// No ipsecIKE EKU; what it has instead (null: no EKU extension).
    MissingEku {
        has: Option<Vec<String>>,
    },
    KeyExposed {
        path: PathBuf,
        mode: String,
    },
    /// The CA is in none of the trust stores; `stores` are those that
    /// exist (none: charon has no trust store), `dangling` their links to
    /// nothing.
    CaNotTrusted {
        stores: Vec<PathBuf>,
        dangling: Vec<(PathBuf, PathBuf)>,
    },
}

/// A certificate as read and parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedCert {
    pub path: PathBuf,
    pub file: CredentialFile,
    pub info: CertInfo,
    pub der: Vec<u8>,
}

/// Everything [`analyse`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    pub certificate: Option<ParsedCert>,
    pub key: Option<(PathBuf, CredentialFile, KeyFacts)>,
    pub ca: Option<ParsedCert>,
    /// The trust store entries that hold the CA.
    pub trusted_as: Vec<PathBuf>,
    pub problems: Vec<Problem>,
}

const DAY: i64 = 86_400;

/// The file this run judges for `slot`: the one OVS names while IPsec is
/// in use (what IKE reads), Spinifex's before it is (the daemon points OVS
/// at it when it turns IPsec on).
fn judged(slot: &Slot, purpose: Purpose) -> (PathBuf, &FileRead) {
    match purpose {
        Purpose::IpsecWanted => slot.used(),
        Purpose::EnableIpsec => (slot.expected.clone(), &slot.expected_file),
    }
}

fn file<'a>(
    role: Role,
    path: &Path,
    read: &'a FileRead,
    problems: &mut Vec<Problem>,
) -> Option<&'a CredentialFile> {
    match read {
        Ok(f) => Some(f),
        Err(FileError::Missing) => {
            problems.push(Problem::Missing {
                role,
                path: path.to_owned(),
                dangling: None,
            });
            None
        }
        Err(FileError::Dangling(to)) => {
            problems.push(Problem::Missing {
                role,
                path: path.to_owned(),
                dangling: Some(to.clone()),
            });
            None
        }
        Err(FileError::Denied(needs)) => {
            problems.push(Problem::Denied {
                role,
                path: path.to_owned(),
                needs: needs.clone(),
            });
            None
        }
        Err(FileError::Other(reason)) => {
            problems.push(Problem::Unusable {
                role,
                path: path.to_owned(),
                reason: reason.clone(),
            });
            None
        }
    }
}

fn malformed(f: &CredentialFile) -> Option<String> {
    f.blocks.iter().find_map(|b| match b {
        crate::facts::credential::PemBlock::Malformed { reason } => Some(reason.clone()),
        _ => None,
    })
}

fn certificate(
    role: Role,
    slot: &Slot,
    purpose: Purpose,
    problems: &mut Vec<Problem>,
) -> Option<ParsedCert> {
    let (path, read) = judged(slot, purpose);
    let f = file(role, &path, read, problems)?;
    let Some(der) = f.certificates().into_iter().next() else {
        problems.push(Problem::Unusable {
            role,
            reason: malformed(f).map_or("holds no certificate".to_owned(), |r| {
                format!("holds no certificate ({r})")
            }),
            path,
        });
        return None;
    };
    match x509::parse(&der) {
        Ok(info) => Some(ParsedCert {
            path,
            file: f.clone(),
            info,
            der,
        }),
        Err(reason) => {
            problems.push(Problem::Unusable { role, path, reason });
            None
        }
    }
}

fn validity(role: Role, c: &CertInfo, facts: &CertFacts, problems: &mut Vec<Problem>) {
    let now = facts.now;
    if c.not_after < now {
        problems.push(Problem::Expired {
            role,
            not_after: c.not_after,
        });
    } else if c.not_before > now {
        problems.push(Problem::NotYetValid {
            role,
            not_before: c.not_before,
        });
    } else if c.not_after - now < i64::from(facts.warn_days) * DAY {
        problems.push(Problem::ExpiresSoon {
            role,
            not_after: c.not_after,
            // To the nearest day: 9 days 23 hours is "10 days".
            days_left: (c.not_after - now + DAY / 2) / DAY,
        });
    }
}

/// OVS names the file Spinifex keeps for this credential (the same file,
/// links followed), while IPsec is in use.
fn pointer(slot: &Slot, problems: &mut Vec<Problem>) {
    let elsewhere = match (&slot.ovs, &slot.ovs_file) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(_), Some(theirs)) => match (theirs, &slot.expected_file) {
            (Ok(a), Ok(b)) => a.resolved != b.resolved,
            _ => true,
        },
    };
    if elsewhere {
        problems.push(Problem::OvsPointer {
            role: slot.role,
            ovs: slot.ovs.clone(),
            expected: slot.expected.clone(),
        });
    }
}

/// Judge the credentials.
pub fn analyse(facts: &CertFacts) -> Analysis {
    let mut problems = Vec::new();
    let purpose = facts.purpose;
    let system_id = match &facts.ovs {
        Ok(o) => o.system_id.clone(),
        Err(reason) => {
            problems.push(Problem::OvsUnreachable {
                reason: reason.clone(),
            });
            None
        }
    };
    if purpose == Purpose::IpsecWanted && facts.ovs.is_ok() {
        for slot in [&facts.peer, &facts.key, &facts.ca] {
            pointer(slot, &mut problems);
        }
    }

    let cert = certificate(Role::Certificate, &facts.peer, purpose, &mut problems);
    let ca = certificate(Role::Ca, &facts.ca, purpose, &mut problems);

    let key = {
        let (path, read) = judged(&facts.key, purpose);
        file(Role::Key, &path, read, &mut problems).and_then(|f| {
            if f.world_readable() {
                problems.push(Problem::KeyExposed {
                    path: path.clone(),
                    mode: f.mode_text(),
                });
            }
            match f.key() {
                None => {
                    problems.push(Problem::Unusable {
                        role: Role::Key,
                        path,
                        reason: malformed(f).map_or("holds no private key".to_owned(), |r| {
                            format!("holds no private key ({r})")
                        }),
                    });
                    None
                }
                Some(k) => {
                    if let Some(e) = &k.error {
                        problems.push(Problem::Unusable {
                            role: Role::Key,
                            path: path.clone(),
                            reason: e.clone(),
                        });
                    }
                    Some((path, f.clone(), k.clone()))
                }
            }
        })
    };

    if let Some(c) = &cert {
        validity(Role::Certificate, &c.info, facts, &mut problems);
        let identity = system_id.as_ref().or(facts.node.as_ref());
        let cn = c.info.common_name.as_ref();
        let named = |want: &String| cn == Some(want) && c.info.dns_names.contains(want);
        let right = identity.is_some_and(named) && facts.node.as_ref().is_none_or(named);
        if !right {
            problems.push(Problem::WrongName {
                common_name: c.info.common_name.clone(),
                dns_names: c.info.dns_names.clone(),
                system_id: system_id.clone(),
                node: facts.node.clone(),
            });
        }
        if c.info.common_name.is_some() && c.info.ovs_monitor_name != c.info.common_name {
            problems.push(Problem::CnUnreadable {
                subject: c.info.subject.clone(),
                reads: c.info.ovs_monitor_name.clone(),
            });
        }
        let ekus = &c.info.extended_key_usages;
        if !ekus
            .as_ref()
            .is_some_and(|e| e.iter().any(|o| o == IPSEC_IKE_EKU))
        {
            problems.push(Problem::MissingEku { has: ekus.clone() });
        }
    }
    if let Some(ca) = &ca {
        validity(Role::Ca, &ca.info, facts, &mut problems);
    }
    if let (Some(c), Some(ca)) = (&cert, &ca) {
        if let Err(e) = x509::verify_issued_by(&c.der, &ca.der) {
            problems.push(Problem::UntrustedChain(e));
        }
    }
    if let (Some(c), Some((_, _, k))) = (&cert, &key) {
        if let Some(theirs) = &k.public_key_sha256 {
            if *theirs != c.info.public_key_sha256 {
                problems.push(Problem::KeyMismatch {
                    certificate: c.info.public_key_sha256.clone(),
                    key: theirs.clone(),
                });
            }
        }
    }

    let mut trusted_as = Vec::new();
    if let Some(ca) = &ca {
        let mut dangling = Vec::new();
        for store in &facts.trust_stores {
            let entries = match &store.entries {
                Ok(e) => e,
                Err(FileError::Denied(needs)) => {
                    problems.push(Problem::Denied {
                        role: Role::TrustStore,
                        path: store.dir.clone(),
                        needs: needs.clone(),
                    });
                    continue;
                }
                Err(_) => continue,
            };
            for (name, read) in entries {
                let path = store.dir.join(name);
                match read {
                    Ok(f) => {
                        let holds = f.certificates().iter().any(|der| {
                            x509::parse(der).is_ok_and(|i| {
                                i.public_key_sha256 == ca.info.public_key_sha256
                                    && i.subject == ca.info.subject
                            })
                        });
                        if holds {
                            trusted_as.push(path);
                        }
                    }
                    Err(FileError::Dangling(to)) => dangling.push((path, to.clone())),
                    Err(_) => {}
                }
            }
        }
        let denied = problems.iter().any(|p| {
            matches!(
                p,
                Problem::Denied {
                    role: Role::TrustStore,
                    ..
                }
            )
        });
        if trusted_as.is_empty() && !denied {
            problems.push(Problem::CaNotTrusted {
                stores: facts.trust_stores.iter().map(|s| s.dir.clone()).collect(),
                dangling,
            });
        }
    }

    Analysis {
        certificate: cert,
        key,
        ca,
        trusted_as,
        problems,
    }
}
