//! Metrics are declared by the check that owns them: name, help, type and
//! labels next to the evidence struct whose fields they are computed from
//! ([`Evidence::series`](crate::evidence::Evidence::series)). The
//! Prometheus renderer draws whatever is declared, so a renamed evidence
//! field is a compile error in the check, never a series that silently
//! disappears. Samples come from the evidence in the report, so a report
//! read back (a cluster run, a replay) gives the same series.

use serde_json::{Map, Value};

use crate::check::Check;

/// Prometheus metric types the doctor uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricType {
    Gauge,
    Counter,
}

impl MetricType {
    pub fn as_str(self) -> &'static str {
        match self {
            MetricType::Gauge => "gauge",
            MetricType::Counter => "counter",
        }
    }
}

/// One metric family.
#[derive(Debug, PartialEq, Eq)]
pub struct MetricDef {
    /// `spx_doctor_…`, in base units (`_bytes`, `_seconds`, `_ratio`, `_total`).
    pub name: &'static str,
    pub help: &'static str,
    pub kind: MetricType,
    /// Label names; every sample gives one value for each, in this order.
    pub labels: &'static [&'static str],
}

/// One series and its value in one report.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub metric: &'static MetricDef,
    pub labels: Vec<String>,
    pub value: f64,
}

impl Series {
    /// A sample of a metric without labels.
    pub fn of(metric: &'static MetricDef, value: f64) -> Series {
        Series {
            metric,
            labels: Vec::new(),
            value,
        }
    }

    pub fn labelled(metric: &'static MetricDef, labels: Vec<String>, value: f64) -> Series {
        Series {
            metric,
            labels,
            value,
        }
    }
}

/// Every declared metric, with the check that owns it, in `CHECKS` order.
pub fn declared() -> Vec<(&'static str, &'static MetricDef)> {
    let mut all = Vec::new();
    for check in crate::CHECKS {
        for m in metrics_of(*check) {
            all.push((check.id(), *m));
        }
    }
    all
}

fn metrics_of(check: &dyn Check) -> &'static [&'static MetricDef] {
    check.declared().metrics
}

/// The series in one check result's evidence (an unknown id has none),
/// read back through the owning check's typed evidence.
pub fn series(check_id: &str, evidence: &Map<String, Value>) -> Vec<Series> {
    crate::find(check_id)
        .map(|c| (c.declared().series)(evidence))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_metrics_are_unique_well_named_and_owned_by_real_checks() {
        let all = declared();
        assert!(all.len() >= 8, "{all:?}");
        let mut names = std::collections::HashSet::new();
        for (id, m) in &all {
            assert!(crate::find(id).is_some(), "{id}");
            assert!(names.insert(m.name), "{} declared twice", m.name);
            assert!(m.name.starts_with("spx_doctor_"), "{}", m.name);
            assert!(
                m.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{}",
                m.name
            );
            assert_eq!(
                m.kind == MetricType::Counter,
                m.name.ends_with("_total"),
                "{}: counters and only counters end in _total",
                m.name
            );
            assert!(!m.help.is_empty() && !m.help.contains('\n'), "{}", m.name);
            for suffix in ["_count", "_sum", "_bucket"] {
                assert!(
                    !m.name.ends_with(suffix),
                    "{}: promtool reserves {suffix}",
                    m.name
                );
            }
            for l in m.labels {
                assert!(l.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{l}");
            }
        }
    }
}
