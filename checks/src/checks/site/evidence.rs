//! What a site check's result carries: the definition it ran, how the
//! plugin ended, what it said (summary aside), its perfdata typed, a JSON
//! check's own evidence, and the one metric every site check shares,
//! `spx_doctor_site_value{check,label,uom}`, from its perfdata.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::evidence::{self, Evidence};
use crate::facts::site::perfdata::Perf;
use crate::facts::site::{Ended, Isolation};
use crate::metrics::{MetricDef, MetricType, Series};
use crate::site_definition::Protocol;

/// Every site check's perfdata values, by check, label and unit.
pub static SITE_VALUE: MetricDef = MetricDef {
    name: "spx_doctor_site_value",
    help: "A site check's performance data value (Nagios perfdata), by check, label and unit as the plugin printed them",
    kind: MetricType::Gauge,
    labels: &["check", "label", "uom"],
};

/// The most of the plugin's output the evidence keeps when it is not an
/// answer that was read (an error): enough to see what it said.
pub const OUTPUT_SHOWN: usize = 4096;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SiteEvidence {
    /// The doctor.d file.
    pub definition: String,
    pub command: Vec<String>,
    pub protocol: Protocol,
    pub timeout_ms: u64,
    /// The executable's SHA-256 when the catalogue was built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable_sha256: Option<String>,
    /// How the plugin ended.
    pub ended: Ended,
    pub duration_ms: u64,
    pub isolation: Isolation,
    /// Bytes it wrote on stdout (it is stopped past 64 KiB).
    pub output_bytes: u64,
    /// A Nagios plugin's long text (the lines after the first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub detail: Vec<String>,
    /// A Nagios plugin's performance data, typed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub perfdata: Vec<Perf>,
    /// Each perfdata item that was not one, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub perfdata_errors: Vec<String>,
    /// A JSON check's own `evidence`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_evidence: Option<Map<String, Value>>,
    /// The start of what it wrote, when that was no answer to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The start of its standard error.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
}

impl Evidence for SiteEvidence {
    const METRICS: &'static [&'static MetricDef] = &[&SITE_VALUE];
}

/// The series of a site check's result: one per perfdata value, labelled
/// with the check that reported it. (Read by id prefix too, so that a
/// cluster run draws the series of another node's site checks.)
pub fn series(check: &str, evidence: &Map<String, Value>) -> Vec<Series> {
    let Some(e) = evidence::read::<SiteEvidence>(evidence) else {
        return Vec::new();
    };
    e.perfdata
        .iter()
        .filter_map(|p| {
            Some(Series::labelled(
                &SITE_VALUE,
                vec![check.to_owned(), p.label.clone(), p.uom.clone()],
                p.value?,
            ))
        })
        .collect()
}
