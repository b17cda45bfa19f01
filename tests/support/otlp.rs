//! A real OTLP/HTTP receiver for the tests (`otlp_receiver.py`): Python's
//! `opentelemetry-proto` package from PyPI decodes every request, in a
//! venv .ci/run makes (target/tmp/otlp-venv), so the doctor's protobuf is
//! read by the OpenTelemetry project's own classes, not by ours.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The venv's python, when it can import opentelemetry-proto.
pub fn python() -> Option<PathBuf> {
    let p = std::env::var_os("SPX_OTLP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::repo_root().join("target/tmp/otlp-venv/bin/python3"));
    let ok = Command::new(&p)
        .args([
            "-c",
            "import opentelemetry.proto.collector.metrics.v1.metrics_service_pb2",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(p)
}

/// True when the receiver can run; else the skip reason (a failure
/// under CI=true).
pub fn python_or_skip(test: &str) -> Option<PathBuf> {
    let p = python();
    super::tool_or_skip(
        test,
        "python3 with opentelemetry-proto (target/tmp/otlp-venv, made by .ci/run)",
        p.is_some(),
    )
    .then(|| p.expect("checked"))
}

pub fn script() -> PathBuf {
    super::repo_root().join("tests/support/otlp_receiver.py")
}

/// An ExportMetricsServiceRequest in `file`, decoded: `{"resources":
/// [...], "series": [{name, kind, attributes, value, time_unix_nano}]}`.
pub fn decode(python: &Path, file: &Path) -> Value {
    let out = Command::new(python)
        .arg(script())
        .arg("--decode")
        .arg(file)
        .output()
        .expect("run the decoder");
    assert!(
        out.status.success(),
        "the OTLP decoder refused {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the decoder's JSON")
}

/// Every request the receiver decoded so far, in order.
pub fn received(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
