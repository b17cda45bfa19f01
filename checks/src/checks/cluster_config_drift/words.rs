//! How `cluster.config-drift` says what [`super::analyse`] found: each
//! compared value's words and fix beside its kind, the headline, and the
//! evidence.

use serde_json::Value;

use super::analyse::{Analysis, Compared, Problem};
use super::{ConfigDriftEvidence, ConfigDriftKind, Drift, DriftValue};
use crate::cluster::and_list;
use crate::finding::{Finding, Status, Subject};
use crate::kind::{most_severe, Kinds};
use crate::spinifex;

/// What applies a config change on the nodes changed (the fixes and
/// `explain`'s Fix line).
pub fn apply_on_changed() -> String {
    format!("then `{}` on the nodes changed", spinifex::restart_daemon())
}

/// What the guests of a node changed need before they take the change.
pub const RESTART_GUESTS: &str = "stop and start their guests";

/// `ipsec_enabled = true`, `[nodes.*] n0, n1`, `spx-doctor 0.1.0`.
fn shown(key: &str, v: &Value) -> String {
    match (key, v) {
        ("nodes", Value::Array(a)) => format!(
            "[nodes.*] {}",
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ("version", Value::String(s)) => format!("spx-doctor {s}"),
        (_, Value::String(s)) => format!("{key} = {s:?}"),
        (_, other) => format!("{key} = {other}"),
    }
}

/// `CA "O=…, CN=…" (key 0123456789abcdef)`.
pub fn ca_shown(v: &Value) -> String {
    let key = v["public_key_sha256"].as_str().unwrap_or_default();
    format!(
        "CA \"{}\" (key {})",
        v["subject"].as_str().unwrap_or_default(),
        &key[..16.min(key.len())]
    )
}

/// `site checks site.a (0123456789abcdef), site.b (unreadable)`, or `no
/// site checks`.
fn site_checks_shown(v: &Value) -> String {
    let Some(by_id) = v.as_object().filter(|m| !m.is_empty()) else {
        return "no site checks".to_owned();
    };
    let each: Vec<String> = by_id
        .iter()
        .map(|(id, sha)| match sha.as_str() {
            Some(sha) => format!("{id} ({})", &sha[..16.min(sha.len())]),
            None => format!("{id} (executable unreadable)"),
        })
        .collect();
    format!("site checks {}", each.join(", "))
}

impl Compared {
    /// One value of it, in words.
    fn shown(self, v: &Value) -> String {
        match self {
            Compared::IpsecCa => ca_shown(v),
            Compared::SiteChecks => site_checks_shown(v),
            _ => shown(self.key(), v),
        }
    }

    /// What it is called in the headline.
    fn label(self) -> &'static str {
        match self {
            Compared::IpsecCa => "ipsec CA",
            Compared::SiteChecks => "site checks",
            Compared::Version => "doctor version",
            _ => self.key(),
        }
    }
}

impl Problem {
    /// `n2 has X (the other 3 have Y)`, or every group when no value has a
    /// majority.
    fn said(&self) -> String {
        let says = |g: &DriftValue| {
            format!(
                "{} {} {}",
                and_list(&g.nodes),
                if g.nodes.len() == 1 { "has" } else { "have" },
                self.what.shown(&g.value)
            )
        };
        if self.clear {
            let odd: Vec<String> = self.odd().iter().map(says).collect();
            format!(
                "{} (the other {} have {})",
                and_list(&odd),
                self.groups[0].nodes.len(),
                self.what.shown(&self.groups[0].value)
            )
        } else {
            self.groups.iter().map(says).collect::<Vec<_>>().join("; ")
        }
    }

    /// Its part of the headline.
    fn part(&self) -> String {
        format!("{}: {}", self.what.label(), self.said())
    }

    /// Each odd node, with what it has (against the others' for a setting).
    fn subjects(&self) -> impl Iterator<Item = Subject> + '_ {
        let kind = self.what.kind();
        self.odd().iter().flat_map(move |g| {
            let text = match (self.what, self.clear) {
                (Compared::IpsecCa, _) | (_, false) => self.what.shown(&g.value),
                (_, true) => format!(
                    "{}, the others {}",
                    self.what.shown(&g.value),
                    self.what.shown(&self.groups[0].value)
                ),
            };
            g.nodes
                .iter()
                .map(move |n| Subject::new(kind, n.as_str(), text.clone()))
        })
    }

    /// The fix; `version` is this doctor's.
    fn fix(&self, version: &str) -> String {
        let odd = and_list(&self.odd_nodes());
        match self.what {
            Compared::IpsecEnabled | Compared::UnderlayMtu if self.clear => format!(
                "on {odd}: {} (or the others to {its} value, whichever is intended), {} and {RESTART_GUESTS}",
                spinifex::set_network_key(
                    self.what.key(),
                    &self.groups[0].value,
                    spinifex::CONFIG_PATH
                ),
                apply_on_changed(),
                its = if self.odd_nodes().len() == 1 { "its" } else { "their" }
            ),
            Compared::IpsecEnabled | Compared::UnderlayMtu => format!(
                "decide on one `{}` and set it under [network] in {} on every node, {} and {RESTART_GUESTS}",
                self.what.key(),
                spinifex::CONFIG_PATH,
                apply_on_changed()
            ),
            Compared::Nodes => format!(
                "make the [nodes.*] tables the same on every node (on {odd}), then `{}` there",
                spinifex::restart_daemon()
            ),
            Compared::Version => {
                format!("install the same spx-doctor on every node ({version} here)")
            }
            Compared::SiteChecks => format!(
                "make doctor.d beside {} the same on every node (on {odd}): the same files, and the executables they run; `{} list` on a node shows its site checks",
                spinifex::CONFIG_PATH,
                spinifex::doctor_command()
            ),
            Compared::IpsecCa => "copy one cluster CA (ca.pem and ca.key, beside spinifex.toml) to every node that has another, reissue its peer certificate from it (`spx doctor --check ipsec.cert` there gives the commands) and link it into charon's trust store".to_owned(),
        }
    }
}

/// The finding: the most severe drift, else what is unknown, else the pass.
pub fn finding(a: Analysis) -> Finding {
    let mut subjects: Vec<Subject> = a.problems.iter().flat_map(Problem::subjects).collect();
    for n in a.unanswered.iter().chain(&a.without_config) {
        subjects.push(Subject::new(
            ConfigDriftKind::ConfigUnknown,
            n.as_str(),
            if a.unanswered.contains(n) {
                "did not answer"
            } else {
                "reported no config"
            },
        ));
    }
    let fails = |p: &&Problem| p.what.kind().doc().status == Status::Fail;
    let fail_parts: Vec<String> = a.problems.iter().filter(fails).map(Problem::part).collect();
    let warn_parts: Vec<String> = a
        .problems
        .iter()
        .filter(|p| !fails(p))
        .map(Problem::part)
        .collect();
    let fixes: Vec<String> = a.problems.iter().map(|p| p.fix(&a.version)).collect();
    let worst_fail = most_severe(a.problems.iter().filter(fails).map(|p| p.what.kind()));

    let f = if let Some(kind) = worst_fail {
        let mut summary = format!("the nodes' configs disagree: {}", fail_parts.join("; "));
        if !warn_parts.is_empty() {
            summary.push_str(&format!("; {}", warn_parts.join("; ")));
        }
        if !a.unanswered.is_empty() {
            summary.push_str(&format!("; {} did not answer", and_list(&a.unanswered)));
        }
        Finding::new(kind, summary).fixes(fixes)
    } else if !a.without_config.is_empty() || !a.unanswered.is_empty() {
        let mut why = Vec::new();
        if !a.unanswered.is_empty() {
            why.push(format!("{} did not answer", and_list(&a.unanswered)));
        }
        if !a.without_config.is_empty() {
            why.push(format!(
                "{} reported no config (a doctor before JSON v1 `config`?)",
                and_list(&a.without_config)
            ));
        }
        let mut f = Finding::new(
            ConfigDriftKind::ConfigUnknown,
            format!(
                "{}, so their configs are unknown; the {} that did agree",
                why.join("; "),
                a.answered - a.without_config.len()
            ),
        );
        if !warn_parts.is_empty() {
            f.summary.push_str(&format!(" ({})", warn_parts.join("; ")));
        }
        f
    } else if !warn_parts.is_empty() {
        let kind = most_severe(a.problems.iter().map(|p| p.what.kind()))
            .unwrap_or(ConfigDriftKind::VersionDrift);
        let what = match kind {
            ConfigDriftKind::SiteChecksDrift => "the nodes' site checks (doctor.d) differ",
            _ => "the doctors differ",
        };
        Finding::new(
            kind,
            format!("the configs agree, but {what}: {}", warn_parts.join("; ")),
        )
        .fixes(fixes)
    } else if let Some(agreed) = &a.agreed {
        let common: Vec<String> = agreed.iter().map(|(s, v)| s.shown(v)).collect();
        Finding::new(
            ConfigDriftKind::Ok,
            format!(
                "all {} nodes run the same config: {}",
                a.nodes,
                common.join(", ")
            ),
        )
    } else {
        Finding::new(ConfigDriftKind::ConfigUnknown, "no node answered")
    };
    let mut f = f.evidence(&ConfigDriftEvidence {
        drift: a
            .problems
            .iter()
            .map(|p| Drift {
                key: p.what.key().to_owned(),
                values: p.groups.clone(),
            })
            .collect(),
        configs: std::collections::BTreeMap::new(),
        unanswered: a.unanswered,
        without_config: a.without_config,
    });
    // The configs moved into the evidence in their place, not copied: each
    // node's row lists every node's name, N² names at N nodes (a million
    // at 1,024, about 100 MiB as a tree).
    if let Some(slot) = f.evidence.get_mut("configs") {
        *slot = Value::Object(
            a.configs
                .into_iter()
                .map(|(node, row)| (node, Value::Object(row.into_iter().collect())))
                .collect(),
        );
    }
    f.subjects(subjects)
}

/// How the nodes' IPsec CAs differ, from a `cluster.config-drift` result
/// (for the enable-ipsec runbook), when they do.
pub fn ipsec_ca_drift(f: &Finding) -> Option<String> {
    let e: ConfigDriftEvidence = f.evidence_as()?;
    let d = e.drift.iter().find(|d| d.key == Compared::IpsecCa.key())?;
    Some(
        d.values
            .iter()
            .map(|v| format!("{}: {}", and_list(&v.nodes), ca_shown(&v.value)))
            .collect::<Vec<_>>()
            .join("; "),
    )
}
