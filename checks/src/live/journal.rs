//! The journal, asked through journalctl with a bound.
use crate::facts::journal::JournalLookup;
use crate::facts::ProbeError;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use wait_timeout::ChildExt;

const JOURNALCTL: &[&str] = &["/usr/bin/journalctl", "/bin/journalctl"];

const MAX_OUTPUT: u64 = 64 * 1024;

/// Lines of this boot's journal for `unit` that contain `needle`.
pub fn grep_unit(unit: &str, needle: &str, bound: Duration) -> Result<JournalLookup, ProbeError> {
    let Some(program) = JOURNALCTL.iter().find(|p| Path::new(p).exists()) else {
        return Ok(JournalLookup::Unavailable);
    };
    let mut child = Command::new(program)
        .args([
            "--boot",
            "--no-pager",
            "--quiet",
            "--output=cat",
            "--lines=5",
        ])
        .arg(format!("--unit={unit}"))
        .arg(format!("--grep={needle}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| ProbeError::Other(format!("could not run journalctl: {e}")))?;
    let stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.take(MAX_OUTPUT).read_to_string(&mut out);
        out
    });
    match child.wait_timeout(bound) {
        Ok(Some(_status)) => {}
        Ok(None) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ProbeError::Other(format!(
                "journalctl did not answer within {}ms",
                bound.as_millis()
            )));
        }
        Err(e) => return Err(ProbeError::Other(format!("waiting for journalctl: {e}"))),
    }
    let out = reader.join().unwrap_or_default();
    // journalctl exits 1 when --grep matches nothing; the lines are the answer.
    Ok(JournalLookup::Lines(
        out.lines()
            .filter(|l| l.contains(needle))
            .map(str::to_owned)
            .collect(),
    ))
}
