//! A fix repeated once per subject, said once.
//!
//! A check that judges many subjects (guests, peers, SAs, NICs) gives a
//! fix per subject that needs one: 300 guests lacking one flag are 300
//! lines of "stop, then start instance pid N". The report keeps every
//! line (JSON, `-v`); the first screen groups the lines that differ only
//! by the subject they name (a finding's `subject`, found as a whole word)
//! and says the first in full, then the other subjects, cut after
//! [`NAMED`] with their count and the command that lists them all.

use std::collections::{HashMap, HashSet};

/// Subjects named on the first screen, the one in the fix included.
pub const NAMED: usize = 10;

/// A fix as the first screen says it.
#[derive(Debug, PartialEq, Eq)]
pub enum Fix<'a> {
    /// A fix said once already.
    One(&'a str),
    /// The same fix for several subjects: the first subject's line in
    /// full, then every other subject, in order.
    PerSubject {
        first: &'a str,
        others: Vec<&'a str>,
    },
}

/// `fixes` grouped: the lines that name exactly one of `subjects` and are
/// otherwise the same become one [`Fix::PerSubject`], where the first of
/// them stood; every other line stays, in order.
pub fn grouped<'a>(fixes: &[&'a str], subjects: &[&'a str]) -> Vec<Fix<'a>> {
    let mut by_length: Vec<&str> = Vec::new();
    let mut seen = HashSet::new();
    for s in subjects.iter().filter(|s| !s.trim().is_empty()) {
        if seen.insert(*s) {
            by_length.push(s);
        }
    }
    by_length.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let index = Index::of(&by_length);
    // (template, first line, subjects) in the order first seen, or a line
    // on its own; each template's place among them.
    let mut groups: Vec<(Option<String>, &'a str, Vec<&'a str>)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for &line in fixes {
        let Some((subject, template)) = only_subject(line, &index.candidates(line, &by_length))
        else {
            groups.push((None, line, Vec::new()));
            continue;
        };
        match at.get(&template) {
            Some(&i) => groups[i].2.push(subject),
            None => {
                at.insert(template.clone(), groups.len());
                groups.push((Some(template), line, vec![subject]));
            }
        }
    }
    groups
        .into_iter()
        .map(|(_, first, named)| match named.len() {
            0 | 1 => Fix::One(first),
            _ => Fix::PerSubject {
                first,
                others: named[1..].to_vec(),
            },
        })
        .collect()
}

/// A character that joins a word (`eth1` is one word, `eth1.100` two).
fn joins(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The subjects by the word they begin with, so a line is searched only
/// for the subjects that begin with one of its words: a whole-word
/// occurrence of a subject starts where the line has that word, whole
/// (what follows the word in the subject does not join it). 1,022 lines of
/// a cluster's matrix, each against 1,022 subjects, were a million
/// searches a redraw.
struct Index<'s> {
    by_word: HashMap<&'s str, Vec<usize>>,
    /// Subjects that do not begin with a word: searched for in every line.
    always: Vec<usize>,
}

impl<'s> Index<'s> {
    fn of(by_length: &[&'s str]) -> Index<'s> {
        let mut by_word: HashMap<&'s str, Vec<usize>> = HashMap::new();
        let mut always = Vec::new();
        for (i, s) in by_length.iter().enumerate() {
            let end = s.find(|c: char| !joins(c)).unwrap_or(s.len());
            if end == 0 {
                always.push(i);
            } else {
                by_word.entry(&s[..end]).or_default().push(i);
            }
        }
        Index { by_word, always }
    }

    /// The subjects `line` may name, longest first (as `by_length`).
    fn candidates(&self, line: &str, by_length: &[&'s str]) -> Vec<&'s str> {
        let mut found = self.always.clone();
        for word in line.split(|c: char| !joins(c)).filter(|w| !w.is_empty()) {
            if let Some(i) = self.by_word.get(word) {
                found.extend(i);
            }
        }
        found.sort_unstable();
        found.dedup();
        found.into_iter().map(|i| by_length[i]).collect()
    }
}

/// The one subject `line` names (as a whole word), and the line with it
/// taken out; `None` when it names none, or more than one.
fn only_subject<'s>(line: &str, subjects: &[&'s str]) -> Option<(&'s str, String)> {
    let mut found: Option<(&'s str, String)> = None;
    for &s in subjects {
        let spans = occurrences(line, s);
        if spans.is_empty() {
            continue;
        }
        // A longer subject found already may contain this one.
        if let Some((first, template)) = &found {
            if first.contains(s) && occurrences(template, s).is_empty() {
                continue;
            }
            return None;
        }
        let mut template = String::with_capacity(line.len());
        let mut at = 0;
        for start in spans {
            template.push_str(&line[at..start]);
            template.push('\u{0}');
            at = start + s.len();
        }
        template.push_str(&line[at..]);
        found = Some((s, template));
    }
    found
}

/// Where `word` stands in `line` as a whole word: not inside a longer
/// name, number or address (`eth1` is not in `eth10` or `eth1.100`).
fn occurrences(line: &str, word: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = line[from..].find(word) {
        let start = from + i;
        let end = start + word.len();
        let before = line[..start].chars().next_back();
        let mut after = line[end..].chars();
        let next = after.next();
        let glued = match next {
            Some(c) if joins(c) => true,
            Some('.' | '-' | ':' | '/') => after.next().is_some_and(joins),
            _ => false,
        };
        if !before.is_some_and(joins) && !glued {
            out.push(start);
        }
        from = start + word.len().max(1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_fix_per_guest_becomes_one_line_with_the_guests() {
        let pids: Vec<String> = (1..=300).map(|i| format!("pid {}", 1000 + i)).collect();
        let lines: Vec<String> = pids
            .iter()
            .map(|p| {
                format!("stop, then start instance {p} (a guest reboot keeps the old QEMU process)")
            })
            .collect();
        let mut fixes = vec!["update the Spinifex daemon"];
        fixes.extend(lines.iter().map(String::as_str));
        let subjects: Vec<&str> = pids.iter().map(String::as_str).collect();
        let g = grouped(&fixes, &subjects);
        assert_eq!(g.len(), 2, "{g:?}");
        assert_eq!(g[0], Fix::One("update the Spinifex daemon"));
        let Fix::PerSubject { first, others } = &g[1] else {
            panic!("{g:?}")
        };
        assert!(first.contains("pid 1001 "), "{first}");
        assert_eq!(others.len(), 299);
        assert_eq!(others[0], "pid 1002");
    }

    #[test]
    fn only_lines_that_differ_by_the_subject_alone_are_grouped() {
        let subjects = ["eth1", "eth10", "eth1.100", "198.18.0.1", "198.18.0.12"];
        let fixes = [
            "ethtool -G eth1 rx 1024",
            "ethtool -G eth10 rx 1024",
            "ethtool -G eth1.100 rx 1024",
            "ethtool -G eth10 rx 4096",
            "configure the path to 198.18.0.1.",
            "configure the path to 198.18.0.12.",
            "between eth1 and eth10",
            "for everyone",
        ];
        let g = grouped(&fixes, &subjects);
        assert_eq!(
            g,
            vec![
                Fix::PerSubject {
                    first: "ethtool -G eth1 rx 1024",
                    others: vec!["eth10", "eth1.100"]
                },
                Fix::One("ethtool -G eth10 rx 4096"),
                Fix::PerSubject {
                    first: "configure the path to 198.18.0.1.",
                    others: vec!["198.18.0.12"]
                },
                Fix::One("between eth1 and eth10"),
                Fix::One("for everyone"),
            ]
        );
    }

    #[test]
    fn a_subject_inside_a_longer_one_is_that_one() {
        let subjects = ["pid 4343", "pid 4343 (i-0bbb)", "pid 4242"];
        let fixes = [
            "stop, then start instance pid 4343 (i-0bbb) (a reboot keeps it)",
            "stop, then start instance pid 4242 (a reboot keeps it)",
        ];
        let g = grouped(&fixes, &subjects);
        assert_eq!(
            g,
            vec![Fix::PerSubject {
                first: fixes[0],
                others: vec!["pid 4242"]
            }]
        );
        assert!(grouped(&fixes, &[])
            .iter()
            .all(|f| matches!(f, Fix::One(_))));
    }

    /// A cluster's size: 1,022 subjects (a path matrix's failing pairs)
    /// and a fix line each, grouped as one fix; a line naming two of them
    /// and one naming a subject inside a longer word stay lines of their
    /// own; a subject that begins with no word is still found.
    #[test]
    fn a_thousand_subjects_are_grouped_as_a_few() {
        let pairs: Vec<String> = (0..511)
            .flat_map(|i| [format!("n{i}->n511"), format!("n511->n{i}")])
            .collect();
        let lines: Vec<String> = pairs
            .iter()
            .map(|p| format!("raise the switch port on the path {p} to 9000"))
            .collect();
        let mut fixes: Vec<&str> = lines.iter().map(String::as_str).collect();
        fixes.push("the paths n0->n511 and n1->n511 share a port");
        fixes.push("xn0->n511 is not a pair");
        fixes.push("see -> here for 198.18.0.1");
        let mut subjects: Vec<&str> = pairs.iter().map(String::as_str).collect();
        subjects.push("-> here");
        let g = grouped(&fixes, &subjects);
        assert_eq!(g.len(), 4, "{:?}", &g[1..]);
        let Fix::PerSubject { first, others } = &g[0] else {
            panic!("{:?}", g[0])
        };
        assert_eq!(*first, "raise the switch port on the path n0->n511 to 9000");
        assert_eq!(others.len(), 1021);
        assert_eq!(others[0], "n511->n0");
        assert_eq!(
            &g[1..],
            [
                Fix::One("the paths n0->n511 and n1->n511 share a port"),
                Fix::One("xn0->n511 is not a pair"),
                Fix::One("see -> here for 198.18.0.1"),
            ]
        );
    }
}
