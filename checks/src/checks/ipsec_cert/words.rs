//! How `ipsec.cert` says what [`super::analyse`] found: the summary, one
//! subject per credential, the fixes (the exact reissue procedure, since no
//! `spx` command does it) and the evidence.

use std::path::{Path, PathBuf};

use super::analyse::{Analysis, ParsedCert, Problem, Role};
use super::{CertEvidence, CertFacts, IpsecCertEvidence, IpsecCertKind, KeyEvidence, Purpose};
use crate::facts::credential::x509::eku_name;
use crate::finding::{Finding, SkipReason, Subject};
use crate::kind::{most_severe, Kinds};
use crate::spinifex;

/// RFC 3339 of a time in seconds since the Unix epoch.
pub fn rfc3339(secs: i64) -> String {
    let t = if secs >= 0 {
        std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_secs(secs.unsigned_abs()))
    } else {
        std::time::UNIX_EPOCH.checked_sub(std::time::Duration::from_secs(secs.unsigned_abs()))
    };
    t.map_or_else(
        || format!("{secs}s since 1970"),
        |t| humantime::format_rfc3339_seconds(t).to_string(),
    )
}

fn date(secs: i64) -> String {
    rfc3339(secs)
        .split('T')
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Certificate => "the peer certificate",
        Role::Key => "the private key",
        Role::Ca => "the cluster CA",
        Role::TrustStore => "charon's trust store",
    }
}

fn ovs_column(role: Role) -> &'static str {
    match role {
        Role::Certificate => "certificate",
        Role::Key => "private_key",
        _ => "ca_cert",
    }
}

fn kind(p: &Problem) -> Option<IpsecCertKind> {
    use IpsecCertKind as K;
    Some(match p {
        Problem::Missing { .. } => K::Missing,
        Problem::Denied { .. } => return None,
        Problem::Unusable { .. } => K::Unusable,
        Problem::OvsUnreachable { .. } => K::DbUnreachable,
        Problem::OvsPointer { .. } => K::OvsPointers,
        Problem::Expired { .. } => K::Expired,
        Problem::NotYetValid { .. } => K::NotYetValid,
        Problem::ExpiresSoon { .. } => K::ExpiresSoon,
        Problem::UntrustedChain(_) => K::UntrustedChain,
        Problem::KeyMismatch { .. } => K::KeyMismatch,
        Problem::WrongName { .. } => K::WrongName,
        Problem::CnUnreadable { .. } => K::CnUnreadable,
        Problem::MissingEku { .. } => K::MissingEku,
        Problem::KeyExposed { .. } => K::KeyExposed,
        Problem::CaNotTrusted { .. } => K::CaNotTrusted,
    })
}

/// The subject a problem is about, as an operator names it.
fn subject(p: &Problem, a: &Analysis, facts: &CertFacts) -> String {
    let path_of = |role: Role| -> String {
        let parsed = match role {
            Role::Certificate => a.certificate.as_ref().map(|c| c.path.clone()),
            Role::Ca => a.ca.as_ref().map(|c| c.path.clone()),
            Role::Key => a.key.as_ref().map(|k| k.0.clone()),
            Role::TrustStore => None,
        };
        parsed
            .unwrap_or_else(|| match role {
                Role::Certificate => facts.peer.expected.clone(),
                Role::Key => facts.key.expected.clone(),
                _ => facts.ca.expected.clone(),
            })
            .display()
            .to_string()
    };
    match p {
        Problem::Missing { path, .. }
        | Problem::Denied { path, .. }
        | Problem::Unusable { path, .. }
        | Problem::KeyExposed { path, .. } => path.display().to_string(),
        Problem::OvsUnreachable { .. } => "Open_vSwitch".into(),
        Problem::OvsPointer { role, .. } => format!("other_config:{}", ovs_column(*role)),
        Problem::Expired { role, .. }
        | Problem::NotYetValid { role, .. }
        | Problem::ExpiresSoon { role, .. } => path_of(*role),
        Problem::UntrustedChain(_)
        | Problem::WrongName { .. }
        | Problem::CnUnreadable { .. }
        | Problem::MissingEku { .. } => path_of(Role::Certificate),
        Problem::KeyMismatch { .. } => path_of(Role::Key),
        Problem::CaNotTrusted { .. } => "charon's trust store".into(),
    }
}

fn or_unset(v: &Option<String>) -> String {
    v.as_deref()
        .map_or("unset".to_owned(), |s| format!("{s:?}"))
}

/// One problem, in a sentence.
fn said(p: &Problem) -> String {
    match p {
        Problem::Missing {
            role,
            path,
            dangling: None,
        } => format!("{} {} does not exist", role_name(*role), path.display()),
        Problem::Missing {
            role,
            path,
            dangling: Some(to),
        } => format!(
            "{} {} is a link to {}, which does not exist",
            role_name(*role),
            path.display(),
            to.display()
        ),
        Problem::Denied { role, path, needs } => format!(
            "{} {} was not read (needs {needs})",
            role_name(*role),
            path.display()
        ),
        Problem::Unusable { role, path, reason } => {
            format!("{} {} {reason}", role_name(*role), path.display())
        }
        Problem::OvsUnreachable { reason } => {
            format!("the local Open_vSwitch row could not be read: {reason}")
        }
        Problem::OvsPointer {
            role,
            ovs: None,
            expected,
        } => format!(
            "OVS other_config:{} is unset (Spinifex's is {}): ovs-monitor-ipsec gives charon no {}",
            ovs_column(*role),
            expected.display(),
            role_name(*role).trim_start_matches("the ")
        ),
        Problem::OvsPointer {
            role,
            ovs: Some(theirs),
            expected,
        } => format!(
            "OVS other_config:{} names {theirs}, not Spinifex's {}",
            ovs_column(*role),
            expected.display()
        ),
        Problem::Expired { role, not_after } => format!(
            "{} expired on {}: IKE with every peer fails",
            role_name(*role),
            rfc3339(*not_after)
        ),
        Problem::NotYetValid { role, not_before } => format!(
            "{} is not valid before {} (is this node's clock right?)",
            role_name(*role),
            rfc3339(*not_before)
        ),
        Problem::ExpiresSoon {
            role,
            not_after,
            days_left,
        } => format!(
            "{} expires on {} ({days_left} days from now) and nothing renews it",
            role_name(*role),
            date(*not_after)
        ),
        Problem::UntrustedChain(e) => {
            format!("the peer certificate does not chain to the cluster CA: {e}")
        }
        Problem::KeyMismatch { certificate, key } => format!(
            "the private key is not the certificate's (public key SHA-256 {} in the key, {} in the certificate)",
            &key[..16.min(key.len())],
            &certificate[..16.min(certificate.len())]
        ),
        Problem::WrongName {
            common_name,
            dns_names,
            system_id,
            node,
        } => format!(
            "the certificate names CN {} and dNSName {}, but the OVS chassis id is {} and the config names this node {}",
            or_unset(common_name),
            if dns_names.is_empty() {
                "none".to_owned()
            } else {
                dns_names.join(", ")
            },
            or_unset(system_id),
            or_unset(node)
        ),
        Problem::CnUnreadable { subject, reads } => format!(
            "ovs-monitor-ipsec reads {} as this node's IKE identity from the subject \"{subject}\" (it takes `CN=…,` from the RFC 2253 form, where a CN that comes first in the certificate is printed last)",
            reads.as_deref().map_or("no name".to_owned(), |r| format!("{r:?}"))
        ),
        Problem::MissingEku { has } => format!(
            "the certificate lacks the ipsecIKE extended key usage (1.3.6.1.5.5.7.3.17); it has {}",
            match has {
                None => "no extendedKeyUsage at all".to_owned(),
                Some(h) if h.is_empty() => "none".to_owned(),
                Some(h) => h.iter().map(|o| eku_name(o)).collect::<Vec<_>>().join(", "),
            }
        ),
        Problem::KeyExposed { path, mode } => format!(
            "the private key {} is readable by every user (mode {mode})",
            path.display()
        ),
        Problem::CaNotTrusted { stores, dangling } => {
            let mut s = if stores.is_empty() {
                format!(
                    "charon has no trust store ({} does not exist)",
                    super::TRUST_STORES.join(" nor ")
                )
            } else {
                format!(
                    "the cluster CA is not in charon's trust store {}",
                    stores
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(" or ")
                )
            };
            for (link, to) in dangling {
                s.push_str(&format!(
                    " ({} links to {}, which does not exist)",
                    link.display(),
                    to.display()
                ));
            }
            s.push_str(": IKE fails with AUTHENTICATION_FAILED (no trusted RSA public key)");
            s
        }
    }
}

/// Does fixing `p` take a new peer certificate?
fn needs_reissue(p: &Problem) -> bool {
    match p {
        Problem::Missing { role, .. } | Problem::Unusable { role, .. } => {
            matches!(role, Role::Certificate | Role::Key)
        }
        Problem::Expired { role, .. }
        | Problem::NotYetValid { role, .. }
        | Problem::ExpiresSoon { role, .. } => *role == Role::Certificate,
        Problem::UntrustedChain(_)
        | Problem::KeyMismatch { .. }
        | Problem::CnUnreadable { .. }
        | Problem::MissingEku { .. } => true,
        Problem::WrongName {
            common_name, node, ..
        } => node.is_none() || common_name.as_ref() != node.as_ref(),
        _ => false,
    }
}

/// The name a reissued certificate carries: the chassis id, else the
/// config's node name.
fn identity(facts: &CertFacts) -> String {
    facts
        .node
        .clone()
        .or_else(|| facts.ovs.as_ref().ok().and_then(|o| o.system_id.clone()))
        .unwrap_or_else(|| "<chassis id>".to_owned())
}

/// The exact steps that reissue the peer certificate from the cluster CA,
/// as Spinifex's `admin/ipsec.go` issues it.
pub fn reissue_steps(facts: &CertFacts, ip: Option<&str>) -> Vec<String> {
    let dir = facts.config_dir.join(spinifex::IPSEC_DIR);
    let d = dir.display();
    let ca = facts.config_dir.join(spinifex::CLUSTER_CA);
    let ca_key = facts.config_dir.join(spinifex::CLUSTER_CA_KEY);
    let name = identity(facts);
    let ip = ip
        .map(str::to_owned)
        .or_else(|| facts.node_ip.clone())
        .unwrap_or_else(|| "<this node's IP>".to_owned());
    let san = format!("DNS:{name},IP:{ip}");
    vec![
        format!(
            "no `spx` command reissues the IPsec peer certificate (`spx admin init` and `spx admin join` issue it once; `spx admin cert renew` renews only the server certificate): reissue it by hand on this node ({name}), as root, from the cluster CA ({} and {}) with the commands below",
            ca.display(),
            ca_key.display()
        ),
        format!(
            "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:{} -out {d}/peer.key.new   # RSA, PKCS#8, as Spinifex writes it",
            spinifex::PEER_KEY_BITS
        ),
        format!("chmod 0600 {d}/peer.key.new"),
        format!(
            "openssl req -new -key {d}/peer.key.new -subj \"/O={}/CN={name}\" -out {d}/peer.csr   # CN after O: ovs-monitor-ipsec reads the CN as `CN=...,`",
            spinifex::CERT_ORGANIZATION
        ),
        format!(
            "printf 'basicConstraints=critical,CA:FALSE\\nkeyUsage=critical,digitalSignature,keyEncipherment\\nextendedKeyUsage=clientAuth,serverAuth,1.3.6.1.5.5.7.3.17\\nsubjectAltName={san}\\n' > {d}/peer.ext"
        ),
        format!(
            "openssl x509 -req -in {d}/peer.csr -CA {} -CAkey {} -days {} -sha256 -extfile {d}/peer.ext -out {d}/peer.pem.new",
            ca.display(),
            ca_key.display(),
            spinifex::PEER_CERT_DAYS
        ),
        format!(
            "mv {d}/peer.key.new {d}/peer.key && mv {d}/peer.pem.new {d}/peer.pem && chmod 0644 {d}/peer.pem && rm {d}/peer.csr {d}/peer.ext"
        ),
        restart_ipsec(),
    ]
}

fn restart_ipsec() -> String {
    format!(
        "systemctl restart {}   # ovs-monitor-ipsec restarts charon, which loads the credentials again",
        spinifex::OVS_IPSEC_UNIT
    )
}

fn trust_steps(facts: &CertFacts, ca: &Path) -> Vec<String> {
    let store = facts
        .trust_stores
        .first()
        .map_or(PathBuf::from(super::TRUST_STORES[0]), |s| s.dir.clone());
    vec![
        format!(
            "mkdir -p {} && ln -sfn {} {}/{}   # the link Spinifex's join makes",
            store.display(),
            ca.display(),
            store.display(),
            spinifex::CHARON_TRUST_LINK
        ),
        "ipsec rereadcacerts   # a running charon loads the trust store again".to_owned(),
    ]
}

fn fixes(facts: &CertFacts, a: &Analysis) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: String| {
        if !out.contains(&s) {
            out.push(s);
        }
    };
    let ca_path =
        a.ca.as_ref()
            .map_or(facts.ca.expected.clone(), |c| c.path.clone());
    for p in &a.problems {
        match p {
            Problem::WrongName {
                system_id: Some(id),
                node: Some(node),
                ..
            } if id != node => push(format!(
                "the chassis id is {id:?} but the config names this node {node:?}: Spinifex pins the chassis id to the node name (`scripts/setup-ovn.sh --node-name {node}`, which runs `ovs-vsctl set Open_vSwitch . external_ids:system-id={node}`), then restart ovn-controller"
            )),
            Problem::Missing { role: Role::Ca, .. } | Problem::Unusable { role: Role::Ca, .. } => {
                push(format!(
                    "copy the cluster CA ({}, and {} to reissue certificates) from a node that has it to {}",
                    spinifex::CLUSTER_CA,
                    spinifex::CLUSTER_CA_KEY,
                    facts.config_dir.display()
                ))
            }
            Problem::Expired { role: Role::Ca, .. }
            | Problem::ExpiresSoon { role: Role::Ca, .. }
            | Problem::NotYetValid { role: Role::Ca, .. } => {
                let ca = facts.config_dir.join(spinifex::CLUSTER_CA);
                let key = facts.config_dir.join(spinifex::CLUSTER_CA_KEY);
                push(format!(
                    "renew the cluster CA with its own key, so that the certificates it issued stay valid: `openssl x509 -in {ca} -signkey {key} -days 3650 -out {ca}.new && mv {ca}.new {ca}`, then copy {ca} to every node and `systemctl restart {}` on each",
                    spinifex::OVS_IPSEC_UNIT,
                    ca = ca.display(),
                    key = key.display()
                ))
            }
            Problem::KeyExposed { path, .. } => push(format!("chmod 0600 {}", path.display())),
            Problem::OvsPointer { .. } => push(format!(
                "ovs-vsctl set Open_vSwitch . other_config:certificate={} other_config:private_key={} other_config:ca_cert={}   # what spinifex-daemon sets when it enables IPsec (`{}` sets them again)",
                facts.peer.expected.display(),
                facts.key.expected.display(),
                facts.ca.expected.display(),
                spinifex::restart_daemon()
            )),
            Problem::CaNotTrusted { .. } => {
                for s in trust_steps(facts, &ca_path) {
                    push(s);
                }
            }
            Problem::OvsUnreachable { .. } => push(
                "check that ovsdb-server runs (`systemctl status openvswitch-switch`), or name the database with --ovs-db".to_owned(),
            ),
            _ => {}
        }
    }
    if a.problems.iter().any(needs_reissue) {
        let ip = a
            .certificate
            .as_ref()
            .and_then(|c| c.info.ip_addresses.first())
            .map(ToString::to_string);
        for s in reissue_steps(facts, ip.as_deref()) {
            push(s);
        }
    } else if a.problems.iter().any(|p| {
        matches!(
            p,
            Problem::KeyExposed { .. }
                | Problem::OvsPointer { .. }
                | Problem::Expired { role: Role::Ca, .. }
        )
    }) && facts.purpose == Purpose::IpsecWanted
    {
        push(restart_ipsec());
    }
    if !out.is_empty() {
        out.push(format!(
            "then `{} --check ipsec.cert` must pass",
            spinifex::doctor_command()
        ));
    }
    out
}

fn cert_evidence(c: &ParsedCert, now: i64) -> CertEvidence {
    let i = &c.info;
    CertEvidence {
        path: c.path.display().to_string(),
        resolved: c.file.resolved.display().to_string(),
        subject: i.subject.clone(),
        issuer: i.issuer.clone(),
        common_name: i.common_name.clone(),
        dns_names: i.dns_names.clone(),
        ip_addresses: i.ip_addresses.iter().map(ToString::to_string).collect(),
        not_before: rfc3339(i.not_before),
        not_after: rfc3339(i.not_after),
        expires_in_seconds: i.not_after - now,
        extended_key_usages: i
            .extended_key_usages
            .as_ref()
            .map(|e| e.iter().map(|o| eku_name(o).to_owned()).collect()),
        serial: i.serial.clone(),
        sha256: i.sha256.clone(),
        public_key_sha256: i.public_key_sha256.clone(),
    }
}

fn evidence(facts: &CertFacts, a: &Analysis) -> IpsecCertEvidence {
    let ptr = |s: &super::Slot| s.ovs.clone();
    IpsecCertEvidence {
        purpose: facts.purpose,
        warn_days: facts.warn_days,
        checked_at: rfc3339(facts.now),
        certificate: a.certificate.as_ref().map(|c| cert_evidence(c, facts.now)),
        key: a.key.as_ref().map(|(path, f, k)| KeyEvidence {
            path: path.display().to_string(),
            resolved: f.resolved.display().to_string(),
            mode: f.mode_text(),
            uid: f.uid,
            algorithm: k.algorithm.clone(),
            bits: k.bits,
            public_key_sha256: k.public_key_sha256.clone(),
        }),
        ca: a.ca.as_ref().map(|c| cert_evidence(c, facts.now)),
        ovs_certificate: ptr(&facts.peer),
        ovs_private_key: ptr(&facts.key),
        ovs_ca_cert: ptr(&facts.ca),
        system_id: facts.ovs.as_ref().ok().and_then(|o| o.system_id.clone()),
        node: facts.node.clone(),
        trusted_as: a
            .trusted_as
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
    }
}

/// The finding for `facts`, as `a` judged them.
pub fn finding(facts: &CertFacts, a: &Analysis) -> Finding {
    let evidence = evidence(facts, a);
    let mut subjects: Vec<Subject> = Vec::new();
    let mut judged = Vec::new();
    let mut denied = Vec::new();
    for p in &a.problems {
        let who = subject(p, a, facts);
        match (kind(p), p) {
            (Some(k), _) => {
                subjects.push(Subject::new(k, who, said(p)));
                judged.push((k, said(p)));
            }
            (None, Problem::Denied { needs, .. }) => {
                denied.push(needs.clone());
                subjects.push(Subject::skipped(
                    who,
                    SkipReason::NeedsPrivilege(needs.clone()),
                ));
            }
            (None, _) => {}
        }
    }
    let worst = most_severe(judged.iter().map(|(k, _)| *k));
    let finding = match worst {
        None if !denied.is_empty() => {
            denied.dedup();
            return Finding::skip(SkipReason::NeedsPrivilege(denied.join(" and ")))
                .evidence(&evidence)
                .subjects(subjects);
        }
        None => {
            for c in [&a.certificate, &a.ca].into_iter().flatten() {
                subjects.push(Subject::new(
                    IpsecCertKind::Ok,
                    c.path.display().to_string(),
                    format!("valid until {}", date(c.info.not_after)),
                ));
            }
            if let Some((path, _, _)) = &a.key {
                subjects.push(Subject::new(
                    IpsecCertKind::Ok,
                    path.display().to_string(),
                    "the certificate's key, not readable by others",
                ));
            }
            Finding::new(IpsecCertKind::Ok, ok_summary(facts, a))
        }
        Some(k) => {
            // The worst status first, then the rest.
            let mut parts: Vec<&(IpsecCertKind, String)> = judged.iter().collect();
            parts.sort_by_key(|(k, _)| std::cmp::Reverse(crate::kind::severity(k.doc().status)));
            let text: Vec<&str> = parts.iter().map(|(_, s)| s.as_str()).collect();
            let mut summary = text.join("; ");
            if facts.purpose == Purpose::EnableIpsec {
                summary = format!("before enabling IPsec: {summary}");
            }
            Finding::new(k, summary).fixes(fixes(facts, a))
        }
    };
    finding.evidence(&evidence).subjects(subjects)
}

fn ok_summary(facts: &CertFacts, a: &Analysis) -> String {
    let Some(c) = &a.certificate else {
        return "the IPsec credentials are in order".into();
    };
    let days = (c.info.not_after - facts.now) / 86_400;
    let trusted = a.trusted_as.first().map_or(String::new(), |p| {
        format!(", trusted by charon as {}", p.display())
    });
    format!(
        "{} (CN {}) valid until {} ({days} days, warned at {}), issued by the cluster CA{}, with its key{}",
        c.path.display(),
        c.info.common_name.as_deref().unwrap_or("?"),
        date(c.info.not_after),
        facts.warn_days,
        a.ca.as_ref()
            .map_or(String::new(), |ca| format!(" {}", ca.path.display())),
        trusted
    )
}
