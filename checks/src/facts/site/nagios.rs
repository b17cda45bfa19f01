//! A Nagios plugin's output, as the plugin development guidelines lay it
//! out: the first line is the summary, `|` and perfdata after it; the lines
//! after it are the long text, until one holds a `|`, after which every line
//! is perfdata.
//!
//! ```text
//! DISK OK - free space: / 3326 MB (56%); | /=2643MB;5948;5958;0;5968
//! / 15272 MB (77%);
//! /boot 68 MB (69%); | /boot=68MB;88;93;0;98
//! /home=69357MB;253404;253409;0;253414
//! ```
//!
//! The exit code, not the text, is the verdict (`checks::site`).

use super::perfdata::{self, Perf};

/// A summary longer than this is cut (a plugin's first line is one line).
pub const MAX_SUMMARY: usize = 1024;
/// At most this many lines of long text are kept.
pub const MAX_DETAIL_LINES: usize = 200;

/// What a plugin said.
#[derive(Clone, Debug, PartialEq)]
pub struct NagiosOutput {
    /// The first line before its `|`, trimmed; empty when it said nothing.
    pub summary: String,
    /// The long text's lines, trimmed, empty ones left out.
    pub detail: Vec<String>,
    pub perfdata: Vec<Perf>,
    /// Each perfdata item that is not one, and why.
    pub perfdata_errors: Vec<String>,
}

pub fn parse(output: &str) -> NagiosOutput {
    let mut lines = output.lines().map(|l| l.trim_end_matches('\r'));
    let first = lines.next().unwrap_or_default();
    let (summary, mut perf_text) = match first.split_once('|') {
        Some((s, p)) => (s, p.to_owned()),
        None => (first, String::new()),
    };
    let mut detail = Vec::new();
    let mut in_perfdata = false;
    for line in lines {
        if in_perfdata {
            perf_text.push(' ');
            perf_text.push_str(line);
            continue;
        }
        let (text, perf) = match line.split_once('|') {
            Some((t, p)) => {
                in_perfdata = true;
                (t, Some(p))
            }
            None => (line, None),
        };
        let text = text.trim();
        if !text.is_empty() && detail.len() < MAX_DETAIL_LINES {
            detail.push(text.to_owned());
        }
        if let Some(p) = perf {
            perf_text.push(' ');
            perf_text.push_str(p);
        }
    }
    let (perfdata, perfdata_errors) = perfdata::parse(&perf_text);
    NagiosOutput {
        summary: cut(summary.trim(), MAX_SUMMARY),
        detail,
        perfdata,
        perfdata_errors,
    }
}

/// At most `max` bytes of `s`, on a character boundary, `…` marking a cut.
pub fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guidelines_example() {
        let out = parse(
            "DISK OK - free space: / 3326 MB (56%); | /=2643MB;5948;5958;0;5968\n\
             / 15272 MB (77%);\n\
             /boot 68 MB (69%); | /boot=68MB;88;93;0;98\n\
             /home=69357MB;253404;253409;0;253414\n",
        );
        assert_eq!(out.summary, "DISK OK - free space: / 3326 MB (56%);");
        assert_eq!(out.detail, ["/ 15272 MB (77%);", "/boot 68 MB (69%);"]);
        let labels: Vec<&str> = out.perfdata.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(labels, ["/", "/boot", "/home"]);
        assert!(out.perfdata_errors.is_empty());
    }

    // Captured on Debian 12, monitoring-plugins-basic 2.3.3.
    #[test]
    fn check_load_as_it_prints() {
        let out = parse("LOAD OK - total load average: 1.27, 1.77, 1.25|load1=1.270;5.000;10.000;0; load5=1.770;4.000;8.000;0; load15=1.250;3.000;6.000;0; \n");
        assert_eq!(
            out.summary,
            "LOAD OK - total load average: 1.27, 1.77, 1.25"
        );
        assert!(out.detail.is_empty());
        assert_eq!(out.perfdata.len(), 3);
    }

    #[test]
    fn nothing_said_and_a_long_line() {
        let out = parse("");
        assert_eq!(out.summary, "");
        assert!(out.perfdata.is_empty());
        let long = "é".repeat(MAX_SUMMARY);
        let s = parse(&long).summary;
        assert!(s.len() <= MAX_SUMMARY + "…".len() && s.ends_with('…'));
        let out = parse("OK\r\nline two\r\n\r\n");
        assert_eq!(out.summary, "OK");
        assert_eq!(out.detail, ["line two"]);
    }
}
