//! Metrics are declared by the check that owns them: name, help, type and
//! labels next to the evidence struct whose fields they are computed from
//! ([`Evidence::series`](crate::evidence::Evidence::series)). The
//! Prometheus renderer draws whatever is declared, so a renamed evidence
//! field is a compile error in the check, never a series that silently
//! disappears. Samples come from the evidence in the report, so a report
//! read back (a cluster run, a replay) gives the same series.

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
