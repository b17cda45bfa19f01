//! The doctor's metrics as OTLP, into Spinifex's telemetry pipeline.
//!
//! The series are exactly `--format prometheus`'s: the same
//! [`Family`] list renders both, so a series, its labels (data-point
//! attributes here) and its value are the same by construction. The
//! request is opentelemetry-proto's own generated
//! `ExportMetricsServiceRequest`, encoded by prost; it is built afresh from
//! one run's report and nothing else, so a label set that no longer holds
//! (a code that cleared) is simply absent from the next export, which the
//! SDK's cumulative instruments would keep reporting.
//!
//! Where it goes follows the OpenTelemetry environment, which Spinifex's
//! units read from `/etc/spinifex/telemetry.env`:
//! `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` (as it is), else
//! `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/metrics`; `OTEL_SDK_DISABLED=true`
//! turns it off. The transport is OTLP/HTTP with protobuf bodies; an
//! endpoint configured for gRPC only is refused with one line. The
//! resource carries `service.name=spx-doctor`, `service.version`,
//! `host.name` and the node (`spinifex.node`), and `mulga.env` (with
//! `deployment.environment`) and `mulga.source` from `MULGA_ENV` and
//! `MULGA_SOURCE`, as Spinifex's services set them.

use std::time::Duration;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    metric, number_data_point, AggregationTemporality, Gauge, Metric, NumberDataPoint,
    ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use crate::render::prometheus::{Family, Kind};

/// One export's bound, connect to answer.
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// A collector's answer is read up to this.
const MAX_ANSWER: u64 = 64 << 10;

fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_owned())),
        }),
        ..KeyValue::default()
    }
}

/// The resource attributes of the doctor on `node`, from `env` (a
/// lookup, so tests need not touch the process's environment).
pub fn resource(
    node: Option<&str>,
    host: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<KeyValue> {
    let mut attrs = vec![
        kv("service.name", spx_checks::spinifex::BINARY),
        kv("service.version", env!("CARGO_PKG_VERSION")),
        kv("host.name", host),
    ];
    if let Some(n) = node {
        attrs.push(kv("spinifex.node", n));
    }
    if let Some(e) = env("MULGA_ENV").filter(|v| !v.is_empty()) {
        attrs.push(kv("mulga.env", &e));
        attrs.push(kv("deployment.environment", &e));
    }
    if let Some(s) = env("MULGA_SOURCE").filter(|v| !v.is_empty()) {
        attrs.push(kv("mulga.source", &s));
    }
    attrs
}

/// The request carrying exactly `families`, each point stamped `at`
/// (Unix nanoseconds: when the run started).
pub fn request(
    families: &[Family],
    resource: Vec<KeyValue>,
    at: u64,
) -> ExportMetricsServiceRequest {
    let metrics = families
        .iter()
        .filter(|f| !f.samples.is_empty())
        .map(|f| {
            let points: Vec<NumberDataPoint> = f
                .samples
                .iter()
                .map(|s| NumberDataPoint {
                    attributes: s.labels.iter().map(|(k, v)| kv(k, v)).collect(),
                    time_unix_nano: at,
                    value: Some(number_data_point::Value::AsDouble(s.value)),
                    ..NumberDataPoint::default()
                })
                .collect();
            let data = match f.kind {
                Kind::Gauge => metric::Data::Gauge(Gauge {
                    data_points: points,
                }),
                Kind::Counter => metric::Data::Sum(Sum {
                    data_points: points,
                    aggregation_temporality: AggregationTemporality::Cumulative as i32,
                    is_monotonic: true,
                }),
            };
            Metric {
                name: f.name.to_owned(),
                description: f.help.to_owned(),
                data: Some(data),
                ..Metric::default()
            }
        })
        .collect();
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: resource,
                ..Resource::default()
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: spx_checks::spinifex::BINARY.to_owned(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                    ..InstrumentationScope::default()
                }),
                metrics,
                ..ScopeMetrics::default()
            }],
            ..ResourceMetrics::default()
        }],
    }
}

/// `request` as bytes, for `--format otlp` and the exporter.
pub fn encode(request: &ExportMetricsServiceRequest) -> Vec<u8> {
    request.encode_to_vec()
}

/// An RFC 3339 time as Unix nanoseconds (0 when unreadable).
pub fn unix_nanos(rfc3339: &str) -> u64 {
    humantime::parse_rfc3339(rfc3339)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Where metrics go, from the OpenTelemetry environment: `Ok(None)` when
/// export is off (no endpoint, or `OTEL_SDK_DISABLED=true`), `Err` with one
/// line when it is asked for in a way this exporter cannot do.
pub fn endpoint(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<String>, String> {
    let set = |k: &str| {
        env(k)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    if set("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let url = match (
        set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
        set("OTEL_EXPORTER_OTLP_ENDPOINT"),
    ) {
        (Some(u), _) => u,
        (None, Some(base)) => format!("{}/v1/metrics", base.trim_end_matches('/')),
        (None, None) => return Ok(None),
    };
    let protocol =
        set("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL").or_else(|| set("OTEL_EXPORTER_OTLP_PROTOCOL"));
    if let Some(p) = protocol.filter(|p| p != "http/protobuf") {
        return Err(format!(
            "OTLP: protocol {} is not supported: the doctor exports OTLP/HTTP with protobuf (OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf, the collector's HTTP port, 4318 by default)",
            crate::bus::one_line(&p)
        ));
    }
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!(
            "OTLP: endpoint {} is not an http:// or https:// URL",
            crate::bus::one_line(&url)
        ));
    }
    Ok(Some(url))
}

/// POST one request to `url`; one line on failure.
pub fn export(url: &str, body: Vec<u8>) -> Result<(), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(EXPORT_TIMEOUT))
        .http_status_as_error(false)
        .build()
        .into();
    let mut answer = agent
        .post(url)
        .header("Content-Type", "application/x-protobuf")
        .send(&body[..])
        .map_err(|e| crate::bus::one_line(&format!("OTLP export to {url}: {e}")))?;
    let status = answer.status();
    if status.is_success() {
        return Ok(());
    }
    let text = answer
        .body_mut()
        .with_config()
        .limit(MAX_ANSWER)
        .read_to_string()
        .unwrap_or_default();
    Err(crate::bus::one_line(&format!(
        "OTLP export to {url}: HTTP {status}: {}",
        text.chars().take(200).collect::<String>()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::prometheus::Sample;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_endpoint_follows_the_opentelemetry_environment() {
        assert_eq!(endpoint(&env(&[])), Ok(None));
        assert_eq!(
            endpoint(&env(&[(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "http://127.0.0.1:4318/"
            )])),
            Ok(Some("http://127.0.0.1:4318/v1/metrics".into()))
        );
        assert_eq!(
            endpoint(&env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
                ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://b:4318/m"),
            ])),
            Ok(Some("http://b:4318/m".into()))
        );
        assert_eq!(
            endpoint(&env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
                ("OTEL_SDK_DISABLED", "true"),
            ])),
            Ok(None)
        );
        let e = endpoint(&env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]))
        .unwrap_err();
        assert!(e.contains("grpc is not supported"), "{e}");
        assert!(endpoint(&env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "a:4318")])).is_err());
    }

    #[test]
    fn a_request_carries_the_families_as_they_are() {
        let fam = |name, kind, samples| Family {
            name,
            kind,
            help: "h",
            samples,
            decimals: None,
        };
        let s = |labels: &[(&str, &str)], value| Sample {
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            value,
        };
        let r = request(
            &[
                fam(
                    "spx_doctor_check_code",
                    Kind::Gauge,
                    vec![s(&[("check", "mtu.path"), ("code", "mtu.path/ok")], 1.0)],
                ),
                fam("spx_doctor_x_total", Kind::Counter, vec![s(&[], 7.0)]),
                fam("spx_doctor_empty", Kind::Gauge, vec![]),
            ],
            resource(Some("n1"), "h1", &env(&[("MULGA_ENV", "env19")])),
            5,
        );
        let back = ExportMetricsServiceRequest::decode(&encode(&r)[..]).unwrap();
        assert_eq!(back, r);
        let rm = &r.resource_metrics[0];
        let attrs: Vec<(&str, String)> = rm
            .resource
            .as_ref()
            .unwrap()
            .attributes
            .iter()
            .map(|a| (a.key.as_str(), format!("{:?}", a.value)))
            .collect();
        for key in [
            "service.name",
            "spinifex.node",
            "mulga.env",
            "deployment.environment",
            "host.name",
        ] {
            assert!(attrs.iter().any(|(k, _)| *k == key), "{key}: {attrs:?}");
        }
        assert!(!attrs.iter().any(|(k, _)| *k == "mulga.source"));
        let m = &rm.scope_metrics[0].metrics;
        assert_eq!(m.len(), 2, "no empty family");
        match &m[1].data {
            Some(metric::Data::Sum(sum)) => {
                assert!(sum.is_monotonic);
                assert_eq!(
                    sum.data_points[0].value,
                    Some(number_data_point::Value::AsDouble(7.0))
                );
            }
            other => panic!("{other:?}"),
        }
        match &m[0].data {
            Some(metric::Data::Gauge(g)) => {
                assert_eq!(g.data_points[0].attributes.len(), 2);
                assert_eq!(g.data_points[0].time_unix_nano, 5);
            }
            other => panic!("{other:?}"),
        }
    }
}
