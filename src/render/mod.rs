//! Renderers: the only code that prints. Each turns a [`Report`] into bytes;
//! `emit` writes them to stdout or, atomically, to `--output FILE`.

#![allow(clippy::disallowed_macros)]

pub mod catalog;
pub mod cluster;
pub mod fixes;
pub mod grouped;
pub mod inert;
pub mod journal;
pub mod json;
pub mod junit;
pub mod path;
pub mod problem;
pub mod prometheus;
pub mod table;
pub mod term;
pub mod verbose;

use std::io::{self, Write};
use std::path::Path;

use crate::cli::Format;
use crate::report::cluster::ClusterReport;
use crate::report::Report;

/// How a report is drawn: the screen, and what the flags ask of it.
pub struct Style {
    /// `-v`: every check, in catalogue order, with its evidence.
    pub verbose: bool,
    /// `--strict`: a warning is a failure (JUnit draws it as one).
    pub strict: bool,
    pub term: term::Term,
}

pub fn render(report: &Report, format: Format, style: &Style) -> Vec<u8> {
    match format {
        Format::Table => table::render(report, style).into_bytes(),
        Format::Json => json::render(report).into_bytes(),
        Format::Prometheus => prometheus::render(report).into_bytes(),
        Format::Junit => junit::render(report, style.strict).into_bytes(),
        Format::Otlp => {
            let env = |k: &str| std::env::var(k).ok();
            crate::otlp::encode(&crate::otlp::request(
                &prometheus::families(report),
                crate::otlp::resource(report.node.as_deref(), &report.host, &env),
                crate::otlp::unix_nanos(&report.started_at),
            ))
        }
    }
}

/// A cluster report in `format`: the one format dispatch of `--cluster`
/// and `watch --once`. `node` names this node in OTLP's resource.
pub fn render_cluster(
    report: &ClusterReport,
    format: Format,
    style: &Style,
    node: Option<&str>,
) -> Vec<u8> {
    match format {
        Format::Json => json::render_cluster(report).into_bytes(),
        Format::Prometheus => prometheus::render_cluster(report).into_bytes(),
        Format::Table => cluster::table(report, style).into_bytes(),
        Format::Junit => junit::render_cluster(report, style.strict).into_bytes(),
        Format::Otlp => otlp_cluster(report, node),
    }
}

/// A cluster run's series as one OTLP request, from `node`.
fn otlp_cluster(report: &ClusterReport, node: Option<&str>) -> Vec<u8> {
    let env = |k: &str| std::env::var(k).ok();
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default();
    crate::otlp::encode(&crate::otlp::request(
        &prometheus::cluster_families(report),
        crate::otlp::resource(node, &host, &env),
        crate::otlp::unix_nanos(&report.started_at),
    ))
}

/// Write to `path` by way of a temporary file in the same directory and a
/// rename, so a reader (node_exporter's textfile collector, a monitoring
/// script) never sees half a report, and nothing else is left behind.
///
/// Only a regular file (or a new one) is replaced that way. A device or a
/// pipe (`--output /dev/null`, `--output /dev/stdout`) is written to in
/// place: renaming over it would replace the device with a file. A link to
/// a regular file is followed, so the link stays and its target is replaced.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomically_with(path, |w| w.write_all(bytes))
}

/// [`write_atomically`], of what `write` writes (through a buffer): a
/// large report goes to the file as it is made, never whole in memory.
pub fn write_atomically_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let target = match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a directory",
            ))
        }
        Ok(meta) if !meta.is_file() => {
            let f = std::fs::OpenOptions::new().write(true).open(path)?;
            let mut w = io::BufWriter::new(f);
            return write(&mut w).and_then(|()| w.flush());
        }
        Ok(_) => std::fs::canonicalize(path)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => path.to_owned(),
        Err(e) => return Err(e),
    };
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".spx-doctor-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    {
        let mut w = io::BufWriter::new(&mut tmp);
        write(&mut w)?;
        w.flush()?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(&target).map_err(|e| e.error)?;
    Ok(())
}

/// Write to stdout. A closed pipe (`spx doctor | head -1`) is not an error.
pub fn to_stdout(text: &str) -> io::Result<()> {
    to_stdout_bytes(text.as_bytes())
}

/// [`to_stdout`], for output that is not text (`--format otlp`).
pub fn to_stdout_bytes(bytes: &[u8]) -> io::Result<()> {
    to_stdout_with(|w| w.write_all(bytes))
}

/// [`to_stdout`] of what `write` writes, through a buffer, as it is made.
pub fn to_stdout_with(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(64 << 10, io::stdout().lock());
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// One line on stderr, the only form errors take (what it quotes from
/// outside shown inert, a line break in it included).
pub fn error_line(msg: &str) {
    let _ = writeln!(
        io::stderr(),
        "{}: error: {}",
        spx_checks::spinifex::doctor_command(),
        inert::inert(msg)
    );
}
