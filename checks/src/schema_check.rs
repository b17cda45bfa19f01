//! Unit tests of converted checks validate every verdict they produce
//! against the committed JSON schema (schema/report-v1.schema.json), as the
//! report would carry it: typed evidence, codes and findings included.

use std::sync::OnceLock;

use serde_json::{json, Value};

use crate::finding::Finding;

fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let text = include_str!("../../schema/report-v1.schema.json");
        let full: Value = serde_json::from_str(text).expect("schema JSON");
        let check = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": full["$defs"],
            "$ref": "#/$defs/check",
        });
        jsonschema::validator_for(&check).expect("valid schema")
    })
}

/// `f` as check `id` would report it, checked against the schema.
pub fn valid(id: &str, f: Finding) -> Finding {
    valid_doc(id, crate::snapshot::check_json(id, &f));
    f
}

/// A report's check entry (`checks[]`, without `duration_ms`), checked
/// against the schema.
pub fn valid_doc(id: &str, mut doc: Value) {
    doc["duration_ms"] = json!(0);
    let errors: Vec<String> = validator()
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "{id}: not what schema/report-v1.schema.json describes: {errors:#?}\n{doc:#}"
    );
}

#[test]
fn the_schema_refuses_stray_evidence_and_foreign_codes() {
    let f = crate::checks::sysctl_udp_buffers::judge(
        crate::checks::sysctl_udp_buffers::BufferCeilings {
            rmem_max: 1,
            wmem_max: 1,
        },
    );
    let mut typo = f.clone();
    typo.evidence.insert("typo".into(), 1.into());
    let stray = std::panic::catch_unwind(|| valid("sysctl.udp-buffers", typo));
    assert!(stray.is_err(), "an evidence key the schema does not know");
    let foreign = std::panic::catch_unwind(|| valid("nic.rings", f.clone()));
    assert!(foreign.is_err(), "a code of another check");
    valid("sysctl.udp-buffers", f);
}

#[test]
fn a_result_without_a_code_is_refused() {
    let doc = json!({
        "id": "sysctl.udp-buffers",
        "title": "t",
        "status": "pass",
        "summary": "s",
        "evidence": {},
        "remediation": [],
        "duration_ms": 0,
    });
    assert!(!validator().is_valid(&doc), "every result has a code");
    let mut with = doc.clone();
    with["code"] = json!("sysctl.udp-buffers/ok");
    assert!(validator().is_valid(&with));
}
