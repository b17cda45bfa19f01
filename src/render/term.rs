//! The screen a text renderer writes for: how wide it is, whether it
//! takes colour, and whether its locale can show ✔ and ✘. Decided once
//! per run from `--width`, `--color` and the environment, then handed to
//! every renderer of text (the node and cluster tables, `list`, `explain`,
//! the runbooks), so that they all follow one rule:
//!
//! - **Width.** `--width N`; else, on a terminal, its width; else
//!   `COLUMNS`; else 100. A line built with [`Term::wrap`] (or
//!   [`super::inert::Screen::wrap`]) is never wider: a word longer than a
//!   line, a path, is broken.
//! - **Colour.** `--color always` or `never`; `auto` colours only a
//!   terminal, and never when `NO_COLOR` is set and not empty
//!   (no-color.org: a flag given on the command line still wins).
//! - **Symbols.** ✔ ! ✘ - ? when the locale's character set is UTF-8
//!   (the first of `LC_ALL`, `LC_CTYPE`, `LANG` that is set), else
//!   `ok !! XX -- ??`, and ASCII for the few other symbols the tables use.
//!
//! A renderer of another command (`path`, say) adopts it in three steps:
//! flatten [`TermArgs`] into its flags; make its `Term` with
//! `Term::detect(args.term, to_terminal)` (`to_terminal`: stdout is one
//! and no `--output FILE`); build its text in a
//! [`super::inert::Screen`] with [`super::inert::Lead`] and
//! [`super::inert::Screen::wrap`] (outside text made inert, its own words
//! painted with [`Paint`], every line within `term.width`), and its
//! tables with [`Term::table`].

use std::io::IsTerminal;

use clap::{Args, ValueEnum};
use comfy_table::presets::{ASCII_FULL_CONDENSED, UTF8_FULL_CONDENSED};
use comfy_table::{ContentArrangement, Table};
use spx_checks::Status;
use unicode_width::UnicodeWidthStr;

/// How text reaches the screen: `--color` and `--width`, the same on every
/// command that prints text (this module).
#[derive(Args, Debug, Default, Clone, Copy)]
pub struct TermArgs {
    /// When to colour: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,

    /// Wrap text to N columns [default: the terminal's width; off a terminal, $COLUMNS, else 100].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(20..=1000))]
    pub width: Option<u16>,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq, Default)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

/// The width off a terminal, when `COLUMNS` does not say.
pub const DEFAULT_WIDTH: usize = 100;
/// No screen is taken to be narrower (`--width` refuses less).
pub const MIN_WIDTH: usize = 20;

/// What a piece of text is painted as, when there is colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paint {
    Status(Status),
    /// A problem an operator allowed (`--allow`).
    Allowed,
    /// A heading, the run's own headline.
    Bold,
    /// What matters least: the ids of passes, a hint.
    Dim,
}

impl Paint {
    fn sgr(self) -> &'static str {
        match self {
            Paint::Status(Status::Pass) => "32",
            Paint::Status(Status::Warn) => "1;33",
            Paint::Status(Status::Fail) => "1;31",
            Paint::Status(Status::Skip) => "90",
            Paint::Status(Status::Error) => "1;35",
            Paint::Allowed => "36",
            Paint::Bold => "1",
            Paint::Dim => "2",
        }
    }
}

/// The symbols the tables draw besides the status marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sym {
    /// A list or a line cut short.
    More,
    /// A matrix cell from a node to itself.
    Itself,
    /// A node without a report.
    NoReport,
    /// A matrix cell below the target (`1500✘`).
    Below,
    /// Between the first and last of a run of node names (`c1–c11`).
    Through,
    /// Between the parts of a headline.
    Dot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Term {
    /// Columns: no line is wider.
    pub width: usize,
    /// SGR colour sequences in the output.
    pub color: bool,
    /// The locale shows UTF-8: ✔ rather than `ok`.
    pub unicode: bool,
}

impl Term {
    /// The screen of this process's stdout (`to_terminal`: stdout is a
    /// terminal and no `--output FILE` takes the text instead).
    pub fn detect(args: TermArgs, to_terminal: bool) -> Term {
        let columns = if to_terminal {
            terminal_size::terminal_size().map(|(w, _)| w.0)
        } else {
            None
        };
        Term::decide(args, to_terminal, columns, &|k| std::env::var(k).ok())
    }

    /// True when stdout is a terminal.
    pub fn stdout_is_terminal() -> bool {
        std::io::stdout().is_terminal()
    }

    /// [`Term::detect`] of given facts: the flags, whether the text goes
    /// to a terminal and how wide that is, and the environment.
    pub fn decide(
        args: TermArgs,
        to_terminal: bool,
        columns: Option<u16>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Term {
        let set = |k: &str| env(k).filter(|v| !v.is_empty());
        let width = match (args.width, columns) {
            (Some(w), _) => usize::from(w),
            (None, Some(w)) if to_terminal => usize::from(w),
            _ => set("COLUMNS")
                .and_then(|c| c.trim().parse::<usize>().ok())
                .filter(|&c| c > 0)
                .unwrap_or(DEFAULT_WIDTH),
        };
        let color = match args.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => to_terminal && set("NO_COLOR").is_none(),
        };
        let locale = ["LC_ALL", "LC_CTYPE", "LANG"].into_iter().find_map(set);
        let unicode = locale.is_some_and(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("utf-8") || l.contains("utf8")
        });
        Term {
            width: width.max(MIN_WIDTH),
            color,
            unicode,
        }
    }

    /// No colour, UTF-8, `width` columns: what tests draw.
    pub fn plain(width: usize) -> Term {
        Term {
            width: width.max(MIN_WIDTH),
            color: false,
            unicode: true,
        }
    }

    /// `text` in `paint`'s colour when there is colour. `text` must be
    /// inert already (the renderer's own words, or made inert).
    pub fn paint(&self, paint: Paint, text: &str) -> String {
        if self.color && !text.is_empty() {
            format!("\x1b[{}m{text}\x1b[0m", paint.sgr())
        } else {
            text.to_owned()
        }
    }

    /// A status's mark: ✔ ! ✘ - ?, or ok !! XX -- ?? without UTF-8.
    pub fn mark(&self, s: Status) -> &'static str {
        match (s, self.unicode) {
            (Status::Pass, true) => "✔",
            (Status::Warn, true) => "!",
            (Status::Fail, true) => "✘",
            (Status::Skip, true) => "-",
            (Status::Error, true) => "?",
            (Status::Pass, false) => "ok",
            (Status::Warn, false) => "!!",
            (Status::Fail, false) => "XX",
            (Status::Skip, false) => "--",
            (Status::Error, false) => "??",
        }
    }

    pub fn sym(&self, s: Sym) -> &'static str {
        match (s, self.unicode) {
            (Sym::More, true) => "…",
            (Sym::More, false) => "...",
            (Sym::Itself, true) => "·",
            (Sym::Itself, false) => ".",
            (Sym::NoReport, true) => "∅",
            (Sym::NoReport, false) => "~",
            (Sym::Below, true) => "✘",
            (Sym::Below, false) => "X",
            (Sym::Through, true) => "–",
            (Sym::Through, false) => "..",
            (Sym::Dot, true) => "·",
            (Sym::Dot, false) => "|",
        }
    }

    /// A table in the house style: condensed borders (ASCII without
    /// UTF-8), its columns fitted to the width, coloured only when asked.
    pub fn table(&self) -> Table {
        let mut table = Table::new();
        table.load_preset(if self.unicode {
            UTF8_FULL_CONDENSED
        } else {
            ASCII_FULL_CONDENSED
        });
        table.set_content_arrangement(ContentArrangement::Dynamic);
        if self.color {
            table.enforce_styling();
        } else {
            table.force_no_tty();
        }
        table.set_width(u16::try_from(self.width).unwrap_or(u16::MAX));
        table
    }

    /// `text` (inert already, one line) cut into lines of at most `first`
    /// columns, then `rest` columns, on spaces; a word wider than a line
    /// is broken, after a `/`, `,` or `=` when one falls in its second
    /// half.
    pub fn wrap(&self, text: &str, first: usize, rest: usize) -> Vec<String> {
        let (first, rest) = (first.max(1), rest.max(1));
        let mut lines = Vec::new();
        let mut line = String::new();
        let mut used = 0;
        let mut room = first;
        for word in text.split(' ').filter(|w| !w.is_empty()) {
            let w = width(word);
            if used > 0 && used + 1 + w <= room {
                line.push(' ');
                line.push_str(word);
                used += 1 + w;
                continue;
            }
            if used > 0 {
                lines.push(std::mem::take(&mut line));
                room = rest;
            }
            let mut word = word;
            while width(word) > room {
                let (head, tail) = split_to_fit(word, room);
                lines.push(head.to_owned());
                room = rest;
                word = tail;
            }
            line = word.to_owned();
            used = width(word);
        }
        if !line.is_empty() || lines.is_empty() {
            lines.push(line);
        }
        lines
    }
}

/// Columns `s` takes on a terminal.
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// `word` split where its head fits `room` columns (at least one
/// character), after a `/`, `,` or `=` in the head's second half if any.
fn split_to_fit(word: &str, room: usize) -> (&str, &str) {
    let mut fit = 0;
    let mut used = 0;
    for (i, c) in word.char_indices() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > room && i > 0 {
            break;
        }
        used += w;
        fit = i + c.len_utf8();
    }
    let head = &word[..fit];
    let nice = head
        .char_indices()
        .filter(|(i, c)| matches!(c, '/' | ',' | '=') && *i + 1 >= fit / 2 && *i + 1 < fit)
        .map(|(i, _)| i + 1)
        .next_back();
    let at = nice.unwrap_or(fit);
    (&word[..at], &word[at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn args(color: ColorChoice, width: Option<u16>) -> TermArgs {
        TermArgs { color, width }
    }

    #[test]
    fn width_from_the_flag_the_terminal_columns_or_100() {
        let utf8 = [("LANG", "C.UTF-8")];
        let auto = args(ColorChoice::Auto, None);
        assert_eq!(Term::decide(auto, true, Some(132), &env(&utf8)).width, 132);
        assert_eq!(Term::decide(auto, false, None, &env(&utf8)).width, 100);
        let cols = [("COLUMNS", "60")];
        assert_eq!(Term::decide(auto, false, None, &env(&cols)).width, 60);
        // A terminal's own width wins over COLUMNS; --width over both.
        assert_eq!(Term::decide(auto, true, Some(80), &env(&cols)).width, 80);
        let forced = args(ColorChoice::Auto, Some(70));
        assert_eq!(Term::decide(forced, true, Some(80), &env(&cols)).width, 70);
        let junk = [("COLUMNS", "wide")];
        assert_eq!(Term::decide(auto, false, None, &env(&junk)).width, 100);
    }

    #[test]
    fn colour_only_on_a_terminal_without_no_color_unless_forced() {
        let auto = args(ColorChoice::Auto, None);
        assert!(Term::decide(auto, true, Some(80), &env(&[])).color);
        assert!(!Term::decide(auto, false, None, &env(&[])).color);
        let no = [("NO_COLOR", "1")];
        assert!(!Term::decide(auto, true, Some(80), &env(&no)).color);
        // An empty NO_COLOR is not set (no-color.org).
        assert!(Term::decide(auto, true, Some(80), &env(&[("NO_COLOR", "")])).color);
        let always = args(ColorChoice::Always, None);
        assert!(Term::decide(always, false, None, &env(&no)).color);
        let never = args(ColorChoice::Never, None);
        assert!(!Term::decide(never, true, Some(80), &env(&[])).color);
    }

    #[test]
    fn marks_fall_back_to_ascii_outside_a_utf8_locale() {
        let auto = args(ColorChoice::Auto, None);
        let t = |vars: &[(&str, &str)]| Term::decide(auto, false, None, &env(vars));
        assert!(t(&[("LANG", "en_AU.UTF-8")]).unicode);
        assert!(t(&[("LC_CTYPE", "de_DE.utf8"), ("LANG", "C")]).unicode);
        // LC_ALL wins; an unset locale is C.
        assert!(!t(&[("LC_ALL", "C"), ("LANG", "en_AU.UTF-8")]).unicode);
        assert!(!t(&[]).unicode);
        assert!(!t(&[("LANG", "en_US.ISO-8859-1")]).unicode);
        let ascii = t(&[]);
        let marks: Vec<&str> = [
            Status::Pass,
            Status::Warn,
            Status::Fail,
            Status::Skip,
            Status::Error,
        ]
        .into_iter()
        .map(|s| ascii.mark(s))
        .collect();
        assert_eq!(marks, ["ok", "!!", "XX", "--", "??"]);
        assert_eq!(Term::plain(80).mark(Status::Fail), "✘");
    }

    #[test]
    fn paint_is_sgr_only_with_colour() {
        let mut t = Term::plain(80);
        assert_eq!(t.paint(Paint::Status(Status::Fail), "✘"), "✘");
        t.color = true;
        assert_eq!(
            t.paint(Paint::Status(Status::Fail), "✘"),
            "\x1b[1;31m✘\x1b[0m"
        );
    }

    #[test]
    fn wrapping_never_passes_the_width_and_breaks_long_words() {
        let t = Term::plain(20);
        let lines = t.wrap("one two three four five six seven eight", 20, 16);
        assert_eq!(lines, ["one two three four", "five six seven", "eight"]);
        let path = "/etc/spinifex/a-rather-long-directory/spinifex.toml";
        let lines = t.wrap(&format!("see {path} now"), 20, 20);
        for l in &lines {
            assert!(width(l) <= 20, "{l:?} in {lines:?}");
        }
        assert_eq!(lines.concat().replace(' ', ""), format!("see{path}now"));
        // Broken after a slash where one falls late enough.
        assert_eq!(lines[1], "/etc/spinifex/");
        // Wide characters count twice; nothing is lost at width 1.
        let lines = t.wrap("✔ 日本語", 3, 3);
        assert!(lines.iter().all(|l| width(l) <= 3), "{lines:?}");
        assert_eq!(lines.concat().replace(' ', ""), "✔日本語");
        assert_eq!(t.wrap("", 10, 10), [""]);
    }
}
