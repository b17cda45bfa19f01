//! Nagios performance data: `'label'=value[UOM];[warn];[crit];[min];[max]`,
//! space separated, as the Nagios plugin development guidelines write it
//! (and monitoring-plugins' `check_load` and `check_disk` print it).
//!
//! A label is quoted with single quotes when it holds a space or `=` (a
//! quote inside is doubled). The value is a number, or `U` when it could not
//! be determined. warn and crit are ranges (`10`, `10:`, `~:10`, `@10:20`)
//! and kept as written; min and max are numbers. An item that is not one is
//! reported by itself and the others still read: one plugin's odd item must
//! not cost the rest.

use serde::{Deserialize, Serialize};

/// At most this many items are read from one answer.
pub const MAX_ITEMS: usize = 256;
/// A label's longest.
const MAX_LABEL: usize = 256;

/// One performance data item.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Perf {
    pub label: String,
    /// `None` for `U` (undetermined).
    pub value: Option<f64>,
    /// The unit as written (`s`, `%`, `B`, `c`, …; empty for a plain number).
    pub uom: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

/// Every item of `text`, and a line for each one that is not an item.
pub fn parse(text: &str) -> (Vec<Perf>, Vec<String>) {
    let mut items = Vec::new();
    let mut errors = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        if items.len() + errors.len() >= MAX_ITEMS {
            errors.push(format!(
                "more than {MAX_ITEMS} items: the rest were not read"
            ));
            break;
        }
        let (item, after) = split_item(rest);
        match item {
            Ok((label, spec)) => match parse_spec(&label, spec) {
                Ok(p) => items.push(p),
                Err(e) => errors.push(e),
            },
            Err(e) => errors.push(e),
        }
        rest = after.trim_start();
    }
    (items, errors)
}

/// The first item's label and the text after its `=`, and what follows it.
#[allow(clippy::type_complexity)]
fn split_item(text: &str) -> (Result<(String, &str), String>, &str) {
    let (label, after_label) = if let Some(quoted) = text.strip_prefix('\'') {
        // 'a label', where '' is a quote.
        let mut label = String::new();
        let mut chars = quoted.char_indices().peekable();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            if c == '\'' {
                if let Some((_, '\'')) = chars.peek() {
                    label.push('\'');
                    chars.next();
                    continue;
                }
                end = Some(i + 1);
                break;
            }
            label.push(c);
        }
        match end {
            Some(e) => (label, &quoted[e..]),
            None => return (Err(format!("{}: the quote is not closed", shown(text))), ""),
        }
    } else {
        let stop = text
            .find(|c: char| c == '=' || c.is_whitespace())
            .unwrap_or(text.len());
        (text[..stop].to_owned(), &text[stop..])
    };
    let word_end = |s: &str| s.find(char::is_whitespace).unwrap_or(s.len());
    let Some(spec_and_rest) = after_label.strip_prefix('=') else {
        let end = word_end(text);
        return (
            Err(format!("{}: no `=` after the label", shown(&text[..end]))),
            &text[end..],
        );
    };
    let end = word_end(spec_and_rest);
    if label.is_empty() || label.len() > MAX_LABEL || label.chars().any(char::is_control) {
        return (
            Err(format!(
                "{}: a label is 1 to {MAX_LABEL} bytes of text",
                shown(&label)
            )),
            &spec_and_rest[end..],
        );
    }
    (Ok((label, &spec_and_rest[..end])), &spec_and_rest[end..])
}

/// `value[UOM];warn;crit;min;max`.
fn parse_spec(label: &str, spec: &str) -> Result<Perf, String> {
    let bad = |why: &str| format!("{}={}: {why}", shown(label), shown(spec));
    let mut fields = spec.split(';');
    let first = fields.next().unwrap_or_default();
    let (value, uom) = if let Some(uom) = first.strip_prefix('U') {
        if !uom.is_empty() {
            return Err(bad("U (undetermined) takes no unit"));
        }
        (None, String::new())
    } else {
        let split = first
            .find(|c: char| !(c.is_ascii_digit() || ".-+eE".contains(c)))
            .unwrap_or(first.len());
        // `1e3`'s e is an exponent, `3ms`'s m is a unit: a number ends
        // where parsing it stops working.
        let (mut number, mut unit) = first.split_at(split);
        while !number.is_empty() && number.parse::<f64>().is_err() {
            let cut = number.len() - 1;
            (number, unit) = first.split_at(cut);
        }
        let v = number
            .parse::<f64>()
            .map_err(|_| bad("the value is not a number"))?;
        if !v.is_finite() {
            return Err(bad("the value is not finite"));
        }
        if !unit.chars().all(|c| c.is_ascii_alphabetic() || c == '%') || unit.len() > 8 {
            return Err(bad("the unit is not one (letters or %)"));
        }
        (Some(v), unit.to_owned())
    };
    let range = |f: Option<&str>| -> Result<Option<String>, String> {
        match f.map(str::trim) {
            None | Some("") => Ok(None),
            Some(r)
                if r.len() <= 64
                    && r.chars()
                        .all(|c| c.is_ascii_digit() || ".-+:~@eE".contains(c)) =>
            {
                Ok(Some(r.to_owned()))
            }
            Some(_) => Err(bad("a threshold is not a range")),
        }
    };
    let number = |f: Option<&str>| -> Result<Option<f64>, String> {
        match f.map(str::trim) {
            None | Some("") => Ok(None),
            Some(n) => n
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .map(Some)
                .ok_or_else(|| bad("min or max is not a number")),
        }
    };
    let warn = range(fields.next())?;
    let crit = range(fields.next())?;
    let min = number(fields.next())?;
    let max = number(fields.next())?;
    if fields.next().is_some_and(|f| !f.is_empty()) {
        return Err(bad("more than value;warn;crit;min;max"));
    }
    Ok(Perf {
        label: label.to_owned(),
        value,
        uom,
        warn,
        crit,
        min,
        max,
    })
}

/// Text from outside in a message: quoted, escaped, at most 80 characters.
fn shown(s: &str) -> String {
    let cut: String = s.chars().take(80).collect();
    format!("{cut:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Perf {
        let (items, errors) = parse(text);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(items.len(), 1, "{items:?}");
        items.into_iter().next().unwrap()
    }

    // Captured on Debian 12, monitoring-plugins-basic 2.3.3:
    // `/usr/lib/nagios/plugins/check_load -w 5,4,3 -c 10,8,6`.
    #[test]
    fn check_load() {
        let (items, errors) = parse(
            "load1=1.270;5.000;10.000;0; load5=1.770;4.000;8.000;0; load15=1.250;3.000;6.000;0; ",
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(items.len(), 3);
        assert_eq!(
            items[0],
            Perf {
                label: "load1".into(),
                value: Some(1.27),
                uom: String::new(),
                warn: Some("5.000".into()),
                crit: Some("10.000".into()),
                min: Some(0.0),
                max: None,
            }
        );
        assert_eq!(items[2].label, "load15");
    }

    // Captured on Debian 12, monitoring-plugins-basic 2.3.3:
    // `/usr/lib/nagios/plugins/check_disk -w 10% -c 5% -p /`.
    #[test]
    fn check_disk() {
        let p = one("/=20982005760B;243497277849;257024904396;0;270552530944");
        assert_eq!(p.label, "/");
        assert_eq!(p.value, Some(20982005760.0));
        assert_eq!(p.uom, "B");
        assert_eq!(p.max, Some(270552530944.0));
    }

    #[test]
    fn quoted_labels_units_and_ranges() {
        let p = one("'storage path''s mtu'=8972B;@8900:9000;~:8000");
        assert_eq!(p.label, "storage path's mtu");
        assert_eq!(p.warn.as_deref(), Some("@8900:9000"));
        assert_eq!(p.crit.as_deref(), Some("~:8000"));
        assert_eq!(one("time=0.5ms").uom, "ms");
        assert_eq!(one("t=1e3s").value, Some(1000.0));
        assert_eq!(one("pct=99.5%").uom, "%");
        assert_eq!(one("rta=U").value, None);
        assert_eq!(one("n=-3").value, Some(-3.0));
    }

    #[test]
    fn a_bad_item_is_named_and_the_others_still_read() {
        let (items, errors) = parse("a=1 b=x c=3 'open=4 ");
        assert_eq!(
            items.iter().map(|p| p.label.as_str()).collect::<Vec<_>>(),
            ["a", "c"]
        );
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].contains("\"b\"=\"x\": the value is not a number"),
            "{errors:?}"
        );
        assert!(errors[1].contains("quote is not closed"));
        let (items, errors) = parse("novalue other=1 x=1;2;3;4;5;6 y=1;;;;");
        assert_eq!(items.len(), 2, "{items:?} {errors:?}");
        assert_eq!(errors.len(), 2, "{errors:?}");
        let (items, errors) = parse(&"x=1 ".repeat(MAX_ITEMS + 5));
        assert_eq!(items.len(), MAX_ITEMS);
        assert_eq!(errors.len(), 1);
        assert!(parse("inf=inf").0.is_empty());
        assert!(parse("=1").1[0].contains("a label is 1 to"));
    }
}
