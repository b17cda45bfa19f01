//! Typed evidence: each converted check describes what it measured as a
//! struct that serializes into the report's `evidence` object and reads
//! back out of it. Profiles, metrics and anything that reads a report later
//! (a cluster run, a replay) use these types, never `evidence["key"]`.
//!
//! The JSON schema (schema/report-v1.schema.json) describes each check's
//! evidence under `$defs`, and the tests validate every result against it.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::metrics::{MetricDef, Series};

pub trait Evidence: Serialize + DeserializeOwned {
    /// The metrics these facts carry, declared here by the check that owns
    /// them; [`Evidence::series`] gives their values.
    const METRICS: &'static [&'static MetricDef] = &[];

    /// One sample per series, from these facts.
    fn series(&self) -> Vec<Series> {
        Vec::new()
    }
}

/// The evidence object a struct serializes to (empty if it is not one).
pub fn to_map<E: Evidence>(evidence: &E) -> Map<String, Value> {
    match serde_json::to_value(evidence) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// Read typed evidence back out of a result. `None` when the result carries
/// none of this type (a check that skipped before measuring).
pub fn read<E: Evidence>(evidence: &Map<String, Value>) -> Option<E> {
    if evidence.is_empty() {
        return None;
    }
    serde_json::from_value(Value::Object(evidence.clone())).ok()
}

/// The series of `E`'s metrics in one result's evidence (of any check:
/// `E` names what it measured).
pub fn series_of<E: Evidence>(_check: &str, evidence: &Map<String, Value>) -> Vec<Series> {
    read::<E>(evidence).map(|e| e.series()).unwrap_or_default()
}
