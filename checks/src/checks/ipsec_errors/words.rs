//! How `ipsec.errors` says what [`super::analyse`] found: the summary, one
//! subject per counter that advanced, the fixes and the evidence.

use super::analyse::{meaning, remedy, Analysis};
use super::{Advanced, IpsecErrorsEvidence, IpsecErrorsKind, Sample};
use crate::finding::{Finding, Subject};

/// The finding for `sample`, as `analysis` judged it.
pub fn finding(sample: &Sample, analysis: &Analysis) -> Finding {
    let window_ms = sample.window.as_millis() as u64;
    let wanted = sample.ipsec_wanted;
    let evidence = IpsecErrorsEvidence {
        window_ms,
        counters: sample.end.counters.iter().cloned().collect(),
        advanced: analysis
            .advanced
            .iter()
            .map(|m| Advanced {
                counter: m.name.clone(),
                delta: m.delta,
                total: m.total,
                meaning: meaning(&m.name, wanted).to_owned(),
            })
            .collect(),
        history: analysis.history.iter().map(|(n, _)| n.clone()).collect(),
        ipsec_wanted: wanted,
    };
    let history = || -> String {
        analysis
            .history
            .iter()
            .map(|(n, v)| format!("{n} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if analysis.advanced.is_empty() {
        let f = if analysis.history.is_empty() {
            Finding::new(
                IpsecErrorsKind::Ok,
                format!("no IPsec drop counted since boot ({window_ms} ms window)"),
            )
        } else {
            Finding::new(
                IpsecErrorsKind::History,
                format!(
                    "no IPsec drop during the {window_ms} ms window; counted before it (history, not a failure now): {}",
                    history()
                ),
            )
        };
        return f.evidence(&evidence);
    }
    let said: Vec<String> = analysis
        .advanced
        .iter()
        .map(|m| format!("{} +{}", m.name, m.delta))
        .collect();
    let subjects: Vec<Subject> = analysis
        .advanced
        .iter()
        .map(|m| {
            Subject::new(
                IpsecErrorsKind::Dropping,
                m.name.clone(),
                format!(
                    "+{} in {window_ms} ms ({} since boot): {}",
                    m.delta,
                    m.total,
                    meaning(&m.name, wanted)
                ),
            )
        })
        .collect();
    let mut summary = format!(
        "the IPsec layer is dropping packets now: {} in the {window_ms} ms window ({})",
        said.join(", "),
        analysis
            .advanced
            .iter()
            .map(|m| format!("{}: {}", m.name, meaning(&m.name, wanted)))
            .collect::<Vec<_>>()
            .join("; ")
    );
    if !analysis.history.is_empty() {
        summary.push_str(&format!("; counted before the window: {}", history()));
    }
    let mut fixes: Vec<&str> = Vec::new();
    for m in &analysis.advanced {
        if let Some(r) = remedy(&m.name, wanted) {
            if !fixes.contains(&r) {
                fixes.push(r);
            }
        }
    }
    if fixes.is_empty() {
        fixes.push("`ip -s xfrm state` and `ip xfrm policy` show what the IPsec layer holds; `journalctl -t charon` (or charon's log) why IKE changed it");
    }
    Finding::new(IpsecErrorsKind::Dropping, summary)
        .fixes(fixes)
        .fix("then `watch -n1 cat /proc/net/xfrm_stat` (or `spx doctor --check ipsec.errors`) must show no counter advancing")
        .evidence(&evidence)
        .subjects(subjects)
}
