//! A JSON site check's answer: exactly one object on standard output, as
//! `schema/site-check-v1.schema.json` describes it. Read strictly: anything
//! else is refused with the reason, which the check reports as its error;
//! a plugin that prints half an object or an unknown status never passes.
//!
//! The schema is the contract; this reader holds to it field by field (a
//! test reads the same answers with both and compares).

use serde_json::{Map, Value};

/// The answer's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerStatus {
    Pass,
    Warn,
    Fail,
    Error,
}

impl AnswerStatus {
    pub const ALL: [(&'static str, AnswerStatus); 4] = [
        ("pass", AnswerStatus::Pass),
        ("warn", AnswerStatus::Warn),
        ("fail", AnswerStatus::Fail),
        ("error", AnswerStatus::Error),
    ];
}

/// A valid answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub status: AnswerStatus,
    pub code: String,
    pub summary: String,
    pub fix: Vec<String>,
    pub evidence: Map<String, Value>,
}

const FIELDS: [&str; 5] = ["status", "code", "summary", "fix", "evidence"];
const MAX_CODE: usize = 64;
const MAX_SUMMARY: usize = 4096;
const MAX_FIX: usize = 32;
const MAX_STEP: usize = 1024;

/// Read `text` (the plugin's standard output) as one answer, or say why
/// it is not one, in one line.
pub fn parse(text: &str) -> Result<Answer, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("not one JSON value: {e}"))?;
    let Value::Object(map) = value else {
        return Err(format!("not an object but {}", kind(&value)));
    };
    if let Some(k) = map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(format!(
            "{}: not a field of the answer (it has {})",
            quoted(k),
            FIELDS.join(", ")
        ));
    }
    let string = |name: &str| -> Result<&str, String> {
        match map.get(name) {
            None => Err(format!("{name}: missing")),
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(format!("{name}: not a string but {}", kind(other))),
        }
    };
    let status_text = string("status")?;
    let status = AnswerStatus::ALL
        .iter()
        .find(|(n, _)| *n == status_text)
        .map(|(_, s)| *s)
        .ok_or_else(|| {
            format!(
                "status: {} is not one of pass, warn, fail, error",
                quoted(status_text)
            )
        })?;
    let code = string("code")?;
    if !is_code(code) {
        return Err(format!(
            "code: {} is not a code (lowercase letters and digits, single hyphens inside, at most {MAX_CODE})",
            quoted(code)
        ));
    }
    let summary = string("summary")?;
    let len = summary.chars().count();
    if len == 0 || len > MAX_SUMMARY {
        return Err(format!("summary: {len} characters; 1 to {MAX_SUMMARY}"));
    }
    let fix = match map.get("fix") {
        None => Vec::new(),
        Some(Value::Array(steps)) => {
            if steps.len() > MAX_FIX {
                return Err(format!("fix: {} steps; at most {MAX_FIX}", steps.len()));
            }
            let mut out = Vec::with_capacity(steps.len());
            for (i, s) in steps.iter().enumerate() {
                match s {
                    Value::String(t) if (1..=MAX_STEP).contains(&t.chars().count()) => {
                        out.push(t.clone())
                    }
                    Value::String(_) => {
                        return Err(format!("fix[{i}]: a step is 1 to {MAX_STEP} characters"))
                    }
                    other => return Err(format!("fix[{i}]: not a string but {}", kind(other))),
                }
            }
            out
        }
        Some(other) => return Err(format!("fix: not an array but {}", kind(other))),
    };
    let evidence = match map.get("evidence") {
        None => Map::new(),
        Some(Value::Object(e)) => e.clone(),
        Some(other) => return Err(format!("evidence: not an object but {}", kind(other))),
    };
    Ok(Answer {
        status,
        code: code.to_owned(),
        summary: summary.to_owned(),
        fix,
        evidence,
    })
}

/// `^[a-z0-9]+(-[a-z0-9]+)*$`, at most 64.
fn is_code(s: &str) -> bool {
    s.len() <= MAX_CODE
        && !s.is_empty()
        && s.split('-').all(|w| {
            !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Text from outside in a message: quoted, escaped, at most 64 characters.
fn quoted(s: &str) -> String {
    let cut: String = s.chars().take(64).collect();
    format!("{cut:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers of every shape, each with whether the schema takes it.
    pub(crate) const CORPUS: &[(&str, bool)] = &[
        (
            r#"{"status":"pass","code":"ok","summary":"9000 carried"}"#,
            true,
        ),
        (
            r#"{"status":"fail","code":"low-mtu","summary":"8000","fix":["ip link set dev eth1 mtu 9000"],"evidence":{"mtu":8000}}"#,
            true,
        ),
        (
            "  {\"status\":\"warn\",\"code\":\"a1-b2\",\"summary\":\"x\"}\n\n",
            true,
        ),
        (r#"{"status":"ok","code":"ok","summary":"x"}"#, false),
        (r#"{"status":"pass","code":"OK","summary":"x"}"#, false),
        (r#"{"status":"pass","code":"a--b","summary":"x"}"#, false),
        (r#"{"status":"pass","code":"-a","summary":"x"}"#, false),
        (r#"{"status":"pass","code":"ok","summary":""}"#, false),
        (r#"{"status":"pass","code":"ok"}"#, false),
        (
            r#"{"status":"pass","code":"ok","summary":"x","extra":1}"#,
            false,
        ),
        (
            r#"{"status":"pass","code":"ok","summary":"x","fix":"do it"}"#,
            false,
        ),
        (
            r#"{"status":"pass","code":"ok","summary":"x","fix":[""]}"#,
            false,
        ),
        (
            r#"{"status":"pass","code":"ok","summary":"x","fix":[1]}"#,
            false,
        ),
        (
            r#"{"status":"pass","code":"ok","summary":"x","evidence":[]}"#,
            false,
        ),
        (r#"{"status":1,"code":"ok","summary":"x"}"#, false),
        (r#"[{"status":"pass","code":"ok","summary":"x"}]"#, false),
        (
            r#"{"status":"pass","code":"ok","summary":"x"}{"status":"pass","code":"ok","summary":"x"}"#,
            false,
        ),
        (r#"{"status":"pass","code":"ok","summary":"x""#, false),
        ("OK - all good", false),
        ("", false),
    ];

    #[test]
    fn the_reader_and_the_schema_agree() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../schema/site-check-v1.schema.json"
        );
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let mut long =
            serde_json::json!({"status": "pass", "code": "ok", "summary": "x".repeat(4097)});
        let corpus: Vec<(String, bool)> = CORPUS
            .iter()
            .map(|(t, ok)| (t.to_string(), *ok))
            .chain([(long.to_string(), false)])
            .chain({
                long["summary"] = Value::String("é".repeat(4096));
                [(long.to_string(), true)]
            })
            .collect();
        for (text, valid) in &corpus {
            let ours = parse(text);
            assert_eq!(ours.is_ok(), *valid, "{text}: {ours:?}");
            if let Ok(v) = serde_json::from_str::<Value>(text) {
                assert_eq!(validator.is_valid(&v), *valid, "the schema on {text}");
            }
        }
    }

    #[test]
    fn a_refusal_says_why_in_one_line() {
        let e = parse(r#"{"status":"ok","code":"ok","summary":"x"}"#).unwrap_err();
        assert_eq!(e, "status: \"ok\" is not one of pass, warn, fail, error");
        let e = parse("OK - all good").unwrap_err();
        assert!(
            e.starts_with("not one JSON value: expected value at line 1 column 1"),
            "{e}"
        );
        let e = parse(r#"{"status":"pass","code":"ok","summary":"x","extra":1}"#).unwrap_err();
        assert!(e.starts_with("\"extra\": not a field"), "{e}");
        let a = parse(CORPUS[1].0).unwrap();
        assert_eq!(a.status, AnswerStatus::Fail);
        assert_eq!(a.fix, ["ip link set dev eth1 mtu 9000"]);
        assert_eq!(a.evidence["mtu"], 8000);
    }
}
