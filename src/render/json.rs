//! JSON v1: one document on stdout. The schemas are committed at
//! schema/report-v1.schema.json and schema/cluster-report-v1.schema.json,
//! and every test validates against them.

use serde::Serialize;

use crate::report::cluster::ClusterReport;
use crate::report::Report;

pub fn render(report: &Report) -> String {
    pretty(report)
}

/// A cluster run's report.
pub fn render_cluster(report: &ClusterReport) -> String {
    pretty(report)
}

/// A cluster run's report, written to `out` as it is made: the same bytes
/// as [`render_cluster`], never the whole document in memory (at hundreds
/// of nodes it is hundreds of MiB).
pub fn write_cluster(report: &ClusterReport, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    use std::io::Write;
    // The document is millions of small writes (a key, a colon, an
    // indent): into a buffer of a known type they are copies the compiler
    // sees, where through `out` each was a call through its vtable; `out`
    // is handed the buffer a MiB at a time.
    let mut buffered = std::io::BufWriter::with_capacity(1 << 20, out);
    let mut json = serde_json::Serializer::with_formatter(&mut buffered, Indented::default());
    report.serialize(&mut json).map_err(std::io::Error::from)?;
    buffered.write_all(b"\n")?;
    buffered.flush()
}

/// serde_json's `PrettyFormatter` with its two spaces, the same bytes, but
/// each line break and its indent written as one slice, where the pretty
/// formatter writes the indent once per level: the cluster document is 20
/// million lines at 1,024 nodes.
#[derive(Default)]
struct Indented {
    level: usize,
    has_value: bool,
}

impl Indented {
    /// A line break and two spaces per level.
    fn line<W: ?Sized + std::io::Write>(&self, w: &mut W) -> std::io::Result<()> {
        const BREAK: &[u8] = b"\n                                                                ";
        let mut left = 1 + 2 * self.level;
        w.write_all(&BREAK[..left.min(BREAK.len())])?;
        left = left.saturating_sub(BREAK.len());
        while left > 0 {
            let spaces = left.min(BREAK.len() - 1);
            w.write_all(&BREAK[1..=spaces])?;
            left -= spaces;
        }
        Ok(())
    }

    fn open<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        bracket: &[u8],
    ) -> std::io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    fn close<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        bracket: &[u8],
    ) -> std::io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.line(w)?;
        }
        w.write_all(bracket)
    }

    fn item<W: ?Sized + std::io::Write>(&self, w: &mut W, first: bool) -> std::io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.line(w)
    }
}

impl serde_json::ser::Formatter for Indented {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(w, first)
    }

    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(w, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

fn pretty(report: &impl Serialize) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("a report always serializes");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The same bytes as serde_json's pretty writer: empty and nested
    /// arrays and objects, text with escapes, and nesting deeper than the
    /// one-slice indent (32 levels).
    #[test]
    fn indented_is_byte_for_byte_the_pretty_writer() {
        let mut deep = json!({"leaf": [1, {}, []]});
        for i in 0..40 {
            deep = if i % 2 == 0 {
                json!([deep, "x"])
            } else {
                json!({"k": deep, "e": {}, "a": []})
            };
        }
        for doc in [
            json!({}),
            json!([]),
            json!({"a": [1, 2, {"b": null, "c": "line\nbreak \u{1b}[2J"}], "d": {}}),
            deep,
        ] {
            let mut ours = Vec::new();
            let mut ser = serde_json::Serializer::with_formatter(&mut ours, Indented::default());
            doc.serialize(&mut ser).unwrap();
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                serde_json::to_string_pretty(&doc).unwrap()
            );
        }
    }
}
