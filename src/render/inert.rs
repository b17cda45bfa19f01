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

use super::term::{self, Paint, Term};

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

/// The start of a line: pieces of the renderer's own words and of
/// outside text, each made inert as it is added, some painted, and the
/// columns they take.
#[derive(Clone, Debug, Default)]
pub struct Lead {
    text: String,
    width: usize,
}

impl Lead {
    /// `indent` spaces.
    pub fn indent(indent: usize) -> Lead {
        Lead {
            text: " ".repeat(indent),
            width: indent,
        }
    }

    /// `piece`, made inert, in `paint` (when the screen takes colour).
    pub fn push(mut self, term: &Term, piece: &str, paint: Option<Paint>) -> Lead {
        let piece = inert(piece);
        self.width += term::width(&piece);
        match paint {
            Some(p) => self.text.push_str(&term.paint(p, &piece)),
            None => self.text.push_str(&piece),
        }
        self
    }

    /// Columns taken.
    pub fn width(&self) -> usize {
        self.width
    }
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

    /// `lead`, then `text` made inert, wrapped to `term.width`: the lines
    /// after the first start `hang` columns in. Returns the lines written.
    pub fn wrap(&mut self, term: &Term, lead: &Lead, text: &str, hang: usize) -> usize {
        self.wrap_at_most(term, lead, text, hang, usize::MAX)
    }

    /// [`Screen::wrap`] in at most `max` lines, the last one ending in `…`
    /// when the text was cut.
    pub fn wrap_at_most(
        &mut self,
        term: &Term,
        lead: &Lead,
        text: &str,
        hang: usize,
        max: usize,
    ) -> usize {
        let text = inert(text);
        let hang = hang.min(term.width / 2);
        let first = term.width.saturating_sub(lead.width);
        let rest = term.width - hang;
        let mut lines = if first == 0 {
            let mut l = vec![String::new()];
            l.extend(term.wrap(&text, rest, rest));
            l
        } else {
            term.wrap(&text, first, rest)
        };
        if lines.len() > max.max(1) {
            lines.truncate(max.max(1));
            let more = term.sym(term::Sym::More);
            let room = if lines.len() == 1 { first } else { rest };
            let last = lines.last_mut().expect("at least one line");
            // Cut at a space, else (one long word) at a character.
            while !last.is_empty() && term::width(last) + 1 + term::width(more) > room {
                match last.rfind(' ') {
                    Some(at) => last.truncate(at),
                    None => {
                        last.pop();
                    }
                }
            }
            last.push(' ');
            last.push_str(more);
        }
        for (i, line) in lines.iter().enumerate() {
            if i == 0 {
                self.out.push_str(&lead.text);
            } else {
                self.out.push_str(&" ".repeat(hang));
            }
            self.out.push_str(line);
            self.out.push('\n');
        }
        lines.len()
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
        let t = Term::plain(80);
        s.wrap(
            &t,
            &Lead::indent(2).push(&t, "n1\x1b[2J: ", None),
            "one\ntwo",
            4,
        );
        assert_eq!(
            s.into_string(),
            "fix: a\\r\\nFORGED: cluster.path-matrix pass\n  n1\\x1b[2J: one\\ntwo\n"
        );
        let c = cell_lines(&["summary\x1b[2J", "  fix: x\ny"]);
        assert_eq!(c.content(), "summary\\x1b[2J\n  fix: x\\ny");
    }

    #[test]
    fn long_lines_wrap_with_a_hanging_indent_and_can_be_cut() {
        let t = Term::plain(40);
        let mut s = Screen::new();
        let lead = Lead::indent(2).push(&t, "n1: ", None);
        s.wrap(
            &t,
            &lead,
            "one two three four five six seven eight nine ten",
            4,
        );
        s.wrap(&t, &Lead::default(), "short", 2);
        s.wrap_at_most(&t, &Lead::default(), &"word ".repeat(20), 2, 1);
        assert_eq!(
            s.into_string(),
            "  n1: one two three four five six seven\n    eight nine ten\nshort\n\
             word word word word word word word …\n"
        );
    }
}
