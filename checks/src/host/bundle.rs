//! The bundle: one file holding what a run read, for `spx-doctor --replay`
//! on any machine and for a support engineer's eyes.
//!
//! It is JSON lines inside gzip (`flate2`): the first line a [`Header`]
//! (the doctor's version, when, the options and config the run used, each
//! check's outcome), then one line per question the run asked the host, in
//! call order, with the time since the start, the scope (the check that
//! asked), the [`Request`] and its answer (`ok`: a [`Fact`], or `err`: a
//! probe error). `zcat FILE | jq` reads it. Within format 1, fields and
//! request kinds are only ever added; a reader ignores what it does not
//! know, and says so.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::request::{Fact, Request};
use crate::facts::ProbeError;
use crate::settings::{ConfigState, Options};
use crate::site_definition::SiteDefinition;

/// The container's format. A reader refuses a bundle of another format
/// (fields are added within one; a new format would change their meaning).
pub const BUNDLE_FORMAT: u32 = 1;
/// What the first line says it is.
const BUNDLE_KIND: &str = "spx-doctor bundle";

/// The first line: the run that was recorded.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Header {
    /// Always "spx-doctor bundle".
    pub bundle: String,
    pub format: u32,
    /// The doctor that recorded it.
    pub doctor_version: String,
    /// When the run started (RFC 3339).
    pub started_at: String,
    pub duration_ms: u64,
    /// The options the run used (peers resolved, endpoints, the sample
    /// window, the preflight); a replay uses these, not its own.
    pub options: Options,
    /// The config as the run read it (the values the doctor uses; never
    /// the file's text, which holds other services' secrets).
    pub config: ConfigState,
    /// Every check the run ran, in report order, and how it ended.
    pub checks: Vec<Outcome>,
    /// The run's policy flags, which a replay applies too.
    #[serde(default)]
    pub policy: Policy,
    /// The site's own checks (doctor.d) the run knew: a replay knows
    /// these, not the ones of the machine it runs on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub site_checks: Vec<SiteDefinition>,
    /// A `spx-doctor path` run: the question and every other node's answer,
    /// as that command reads them back (its own reads are the records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<Value>,
}

/// The flags that turn verdicts into levels and an exit code, as given.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Policy {
    /// `--strict`.
    pub strict: bool,
    /// `--allow CODE`, in order.
    pub allow: Vec<String>,
    /// `--deny CODE`, in order.
    pub deny: Vec<String>,
}

/// How one check's run ended, as the runner saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub id: String,
    pub duration_ms: u64,
    /// It was still running at the deadline (the report says "timed out").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
}

impl Header {
    pub fn new(
        started_at: String,
        duration_ms: u64,
        options: Options,
        config: ConfigState,
        checks: Vec<Outcome>,
    ) -> Header {
        Header {
            bundle: BUNDLE_KIND.to_owned(),
            format: BUNDLE_FORMAT,
            doctor_version: env!("CARGO_PKG_VERSION").to_owned(),
            started_at,
            duration_ms,
            options,
            config,
            checks,
            policy: Policy::default(),
            site_checks: Vec::new(),
            path: None,
        }
    }
}

/// One question and its answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    /// Milliseconds since the run started, when the question was asked.
    pub t_ms: f64,
    /// The check that asked (its id), or `run`/`runbook`.
    pub scope: String,
    /// A [`Request`], kept as read so that a kind this version does not
    /// know survives to be reported.
    pub request: Value,
    /// The answer: a [`Fact`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<Value>,
    /// Or why there was none: a [`ProbeError`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub err: Option<Value>,
}

impl Record {
    pub fn new(
        t_ms: f64,
        scope: &str,
        request: &Request,
        answer: &Result<Fact, ProbeError>,
    ) -> Record {
        let (ok, err) = match answer {
            Ok(fact) => (Some(to_value(fact)), None),
            Err(e) => (None, Some(to_value(e))),
        };
        Record {
            t_ms: (t_ms * 1000.0).round() / 1000.0,
            scope: scope.to_owned(),
            request: to_value(request),
            ok,
            err,
        }
    }
}

fn to_value(v: &impl Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// A bundle in memory.
#[derive(Clone, Debug)]
pub struct Bundle {
    pub header: Header,
    pub records: Vec<Record>,
}

/// Why a file is not a bundle this doctor can replay. Each is one line.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not a spx-doctor bundle ({0})")]
    NotABundle(String),
    #[error("the bundle is damaged or cut short ({0})")]
    Corrupt(String),
    #[error("bundle format {found} is not the format {BUNDLE_FORMAT} this doctor reads (recorded by spx-doctor {by})")]
    Format { found: u32, by: String },
}

impl Bundle {
    /// Read and check a bundle file.
    pub fn read(path: &Path) -> Result<Bundle, BundleError> {
        let file = std::fs::File::open(path)?;
        Bundle::from_reader(file)
    }

    /// Parse a bundle from its gzip bytes.
    pub fn from_reader(r: impl Read) -> Result<Bundle, BundleError> {
        let mut r = BufReader::new(r);
        // Not gzip at all is "not a bundle"; a gzip that breaks off is
        // "damaged".
        let magic = r.fill_buf()?;
        if magic.len() < 2 || magic[..2] != [0x1f, 0x8b] {
            return Err(BundleError::NotABundle(
                "not gzip-compressed JSON lines".into(),
            ));
        }
        // The whole stream first: gzip's checksum, at its end, says
        // whether anything in it was damaged.
        let mut text = String::new();
        GzDecoder::new(r)
            .read_to_string(&mut text)
            .map_err(|e| BundleError::Corrupt(e.to_string()))?;
        Bundle::from_text(&text)
    }

    /// Parse a bundle's JSON lines (decompressed).
    pub fn from_text(text: &str) -> Result<Bundle, BundleError> {
        let mut lines = text.lines();
        let Some(first) = lines.next() else {
            return Err(BundleError::NotABundle("empty".into()));
        };
        let head: Value = serde_json::from_str(first)
            .map_err(|e| BundleError::NotABundle(format!("line 1: {e}")))?;
        if head.get("bundle").and_then(Value::as_str) != Some(BUNDLE_KIND) {
            return Err(BundleError::NotABundle(
                "line 1 is not a spx-doctor bundle header".into(),
            ));
        }
        let found = head.get("format").and_then(Value::as_u64).unwrap_or(0);
        if found != u64::from(BUNDLE_FORMAT) {
            return Err(BundleError::Format {
                found: u32::try_from(found).unwrap_or(u32::MAX),
                by: head
                    .get("doctor_version")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned(),
            });
        }
        let header: Header = serde_json::from_value(head)
            .map_err(|e| BundleError::Corrupt(format!("line 1: {e}")))?;
        let mut records = Vec::new();
        for (n, line) in lines.enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let record: Record = serde_json::from_str(line)
                .map_err(|e| BundleError::Corrupt(format!("line {}: {e}", n + 2)))?;
            records.push(record);
        }
        Ok(Bundle { header, records })
    }

    /// The bundle as gzip-compressed JSON lines.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::default());
        write_line(&mut gz, &self.header);
        for r in &self.records {
            write_line(&mut gz, r);
        }
        gz.finish().expect("writing to memory does not fail")
    }
}

fn write_line(out: &mut impl Write, value: &impl Serialize) {
    serde_json::to_writer(&mut *out, value).expect("bundle lines serialize to memory");
    out.write_all(b"\n")
        .expect("writing to memory does not fail");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Bundle {
        let header = Header::new(
            "2026-11-30T00:00:00.000Z".into(),
            1000,
            Options::default(),
            ConfigState::Missing { looked_at: vec![] },
            vec![Outcome {
                id: "sysctl.udp-buffers".into(),
                duration_ms: 0,
                timed_out: false,
            }],
        );
        let request = Request::File {
            path: "/proc/sys/net/core/rmem_max".into(),
        };
        Bundle {
            header,
            records: vec![Record::new(
                0.25,
                "sysctl.udp-buffers",
                &request,
                &Ok(Fact::Text("212992\n".into())),
            )],
        }
    }

    #[test]
    fn a_bundle_reads_back_what_was_written() {
        let b = sample();
        let bytes = b.to_bytes();
        let back = Bundle::from_reader(&bytes[..]).unwrap();
        assert_eq!(back.header.checks, b.header.checks);
        assert_eq!(back.records.len(), 1);
        assert_eq!(back.records[0].request, b.records[0].request);
        assert_eq!(back.records[0].ok, b.records[0].ok);
        let text = {
            let mut s = String::new();
            GzDecoder::new(&bytes[..]).read_to_string(&mut s).unwrap();
            s
        };
        assert!(text.starts_with("{\"bundle\":\"spx-doctor bundle\",\"format\":1,"));
        assert!(text.contains(r#""request":{"kind":"file","path":"/proc/sys/net/core/rmem_max"},"ok":{"text":"212992\n"}"#), "{text}");
    }

    #[test]
    fn damage_is_named() {
        let bytes = sample().to_bytes();
        let cut = &bytes[..bytes.len() - 12];
        let e = Bundle::from_reader(cut).unwrap_err();
        assert!(matches!(e, BundleError::Corrupt(_)), "{e}");
        let e = Bundle::from_reader(&b"{\"bundle\":1}\n"[..]).unwrap_err();
        assert!(matches!(e, BundleError::NotABundle(_)), "{e}");
        assert_eq!(
            e.to_string(),
            "not a spx-doctor bundle (not gzip-compressed JSON lines)"
        );
        let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(
            b"{\"bundle\":\"spx-doctor bundle\",\"format\":7,\"doctor_version\":\"9.0.0\"}\n",
        )
        .unwrap();
        let e = Bundle::from_reader(&gz.finish().unwrap()[..]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "bundle format 7 is not the format 1 this doctor reads (recorded by spx-doctor 9.0.0)"
        );
    }
}
