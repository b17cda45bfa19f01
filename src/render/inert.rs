//! Text from outside this process is data, never terminal control.
//!
//! A node's report, config values, OVSDB strings, interface and guest
//! names, QEMU command lines and journal lines all reach the operator's
//! terminal through the table and the text lines around it. A field that
//! carried an escape sequence could set the window title, clear the
//! screen or colour the output; one that carried CR or LF could start a
//! line of its own making (`FORGED: cluster.path-matrix pass`). So the
//! table and text renderers build every cell and every line here, and
//! nowhere else: each line is made inert whole (the renderer's own words
//! hold no control character, so they pass unchanged), and only then are
//! the lines joined. A line break a field carried stays inside its line,
//! shown as `\n`.
//!
//! Shown inert: C0 controls (`\t`, `\n`, `\r` by name, the others as
//! `\x1b`), DEL (`\x7f`), C1 controls (`\u{9b}`), and the Unicode controls
//! that reorder or break what a terminal shows (bidirectional overrides
//! and isolates, the line and paragraph separators). The JSON report keeps
//! the exact text (serde escapes it); JUnit and Prometheus escape in their
//! own formats.

// The one place cells are made: everything else goes through `cell`.
#![allow(clippy::disallowed_methods)]

use std::borrow::Cow;
use std::fmt::Write;

use comfy_table::{Cell, Table};

/// True for a character a terminal may act on rather than show.
fn acts(c: char) -> bool {
    matches!(c,
        '\0'..='\x1f' | '\x7f' | '\u{80}'..='\u{9f}'
        // bidirectional marks, embeddings, overrides and isolates
        | '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        // line and paragraph separators
        | '\u{2028}' | '\u{2029}')
}

/// `text` with every character a terminal would act on shown as an
/// escape: `\x1b`, `\r`, `\n`, `\u{9b}`. Text without one is returned as it
/// is.
pub fn inert(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < '\u{80}' && acts(c) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if acts(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A table cell of one line.
pub fn cell(text: impl AsRef<str>) -> Cell {
    Cell::new(inert(text.as_ref()))
}

/// A table cell of several lines, each made inert before they are joined.
pub fn cell_lines<S: AsRef<str>>(lines: &[S]) -> Cell {
    Cell::new(
        lines
            .iter()
            .map(|l| inert(l.as_ref()))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// What the table format prints: lines, each made inert, and tables whose
/// cells were made by [`cell`] and [`cell_lines`].
#[derive(Default)]
pub struct Screen {
    out: String,
}

impl Screen {
    pub fn new() -> Screen {
        Screen::default()
    }

    /// One line (a line break inside it is shown, not made).
    pub fn line(&mut self, line: impl AsRef<str>) {
        self.out.push_str(&inert(line.as_ref()));
        self.out.push('\n');
    }

    /// One line wrapped at `width` columns on spaces, continuation lines
    /// indented two more than the line's own indent.
    pub fn wrapped(&mut self, line: impl AsRef<str>, width: usize) {
        let line = inert(line.as_ref());
        let indent = line.len() - line.trim_start().len();
        let pad = " ".repeat(indent + 2);
        let mut current = String::new();
        for word in line.trim_start().split(' ') {
            let len = current.chars().count();
            if len > 0 && len + 1 + word.chars().count() > width.max(40) {
                self.out.push_str(&current);
                self.out.push('\n');
                current = format!("{pad}{word}");
            } else if current.is_empty() {
                current = format!("{}{word}", &line[..indent]);
            } else {
                current.push(' ');
                current.push_str(word);
            }
        }
        self.out.push_str(&current);
        self.out.push('\n');
    }

    /// A drawn table (its borders and the colours it was asked for).
    pub fn table(&mut self, table: &Table) {
        self.out.push_str(&table.to_string());
        self.out.push('\n');
    }

    pub fn into_string(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_and_plain_text_passes_unchanged() {
        assert!(matches!(inert("n1: 9000 ✔ ┆ ü"), Cow::Borrowed(_)));
        assert_eq!(
            inert("a\x1b]0;title\x07b\r\nFORGED\tx\x7f\u{9b}2J\u{202e}z\0"),
            "a\\x1b]0;title\\x07b\\r\\nFORGED\\tx\\x7f\\u{9b}2J\\u{202e}z\\x00"
        );
    }

    #[test]
    fn a_line_break_inside_a_field_stays_in_its_line() {
        let mut s = Screen::new();
        s.line("fix: a\r\nFORGED: cluster.path-matrix pass");
        s.wrapped("  n1: one\ntwo", 80);
        assert_eq!(
            s.into_string(),
            "fix: a\\r\\nFORGED: cluster.path-matrix pass\n  n1: one\\ntwo\n"
        );
        let c = cell_lines(&["summary\x1b[2J", "  fix: x\ny"]);
        assert_eq!(c.content(), "summary\\x1b[2J\n  fix: x\\ny");
    }

    #[test]
    fn long_lines_wrap_with_a_hanging_indent() {
        let mut s = Screen::new();
        s.wrapped("  n1: one two three four five six seven eight nine ten", 40);
        s.wrapped("short", 40);
        assert_eq!(
            s.into_string(),
            "  n1: one two three four five six seven\n    eight nine ten\nshort\n"
        );
    }
}
