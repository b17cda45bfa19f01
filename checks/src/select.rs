//! `--check` and `--skip`: comma-separated check ids or category prefixes,
//! resolved against [`crate::CHECKS`].

use crate::check::{category, Check};

/// Every word `--check`/`--skip` accept: the ids, then the categories.
pub fn selectors(all: &[&dyn Check]) -> Vec<&'static str> {
    let mut words: Vec<&'static str> = all.iter().map(|c| c.id()).collect();
    for c in all {
        let cat = category(c.id());
        if !words.contains(&cat) {
            words.push(cat);
        }
    }
    words
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCheck {
    pub given: String,
    pub nearest: Option<&'static str>,
    pub valid: Vec<&'static str>,
}

impl std::fmt::Display for UnknownCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown check {:?}", self.given)?;
        if let Some(n) = self.nearest {
            write!(f, " (did you mean {n:?}?)")?;
        }
        write!(f, "; valid ids and categories: {}", self.valid.join(", "))
    }
}

impl std::error::Error for UnknownCheck {}

/// The checks to run, in list order: those matched by `include` (all when
/// empty), minus those matched by `exclude`.
pub fn select<'a>(
    all: &[&'a dyn Check],
    include: &[String],
    exclude: &[String],
) -> Result<Vec<&'a dyn Check>, UnknownCheck> {
    let words = selectors(all);
    for given in include.iter().chain(exclude) {
        if !words.contains(&given.as_str()) {
            return Err(UnknownCheck {
                given: given.clone(),
                nearest: nearest(given, &words),
                valid: words,
            });
        }
    }
    let matches =
        |list: &[String], c: &dyn Check| list.iter().any(|w| w == c.id() || w == category(c.id()));
    Ok(all
        .iter()
        .copied()
        .filter(|c| include.is_empty() || matches(include, *c))
        .filter(|c| !matches(exclude, *c))
        .collect())
}

fn nearest(given: &str, words: &[&'static str]) -> Option<&'static str> {
    words
        .iter()
        .map(|w| (strsim::jaro_winkler(given, w), *w))
        .filter(|(score, _)| *score > 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, w)| w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CHECKS;

    fn ids(v: &[&dyn Check]) -> Vec<&'static str> {
        v.iter().map(|c| c.id()).collect()
    }

    #[test]
    fn empty_include_selects_all() {
        assert_eq!(select(CHECKS, &[], &[]).unwrap().len(), CHECKS.len());
    }

    #[test]
    fn category_prefix_and_skip() {
        let got = select(CHECKS, &["udp".into(), "sysctl".into()], &["sysctl".into()]).unwrap();
        assert_eq!(ids(&got), vec!["udp.rcvbuf-errors"]);
    }

    #[test]
    fn unknown_id_suggests_the_nearest() {
        let e = select(CHECKS, &["udp.rcvbuf-eror".into()], &[]).unwrap_err();
        assert_eq!(e.nearest, Some("udp.rcvbuf-errors"));
        assert!(e.to_string().contains("sysctl.udp-buffers"));
        let e = select(CHECKS, &[], &["zzzz".into()]).unwrap_err();
        assert_eq!(e.nearest, None);
    }
}
