//! Names in the order an operator counts them: `c2` before `c10`, `n9`
//! before `n10`. Byte order (`c1, c10, c11, …, c2`) scatters a cluster's
//! nodes across a screen; every list of nodes the doctor prints (the
//! cluster's columns, node lists, pairs) is in this order, or in the
//! order the operator gave.

use std::cmp::Ordering;

/// `a` against `b`, runs of digits compared as numbers (of any length),
/// everything else byte by byte. A tie between different spellings of
/// one number (`n01`, `n1`) falls back to byte order, so this is a total
/// order that agrees with `==`.
pub fn cmp(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) if p.is_ascii_digit() && q.is_ascii_digit() => {
                let (m, rest_x) = number(x);
                let (n, rest_y) = number(y);
                let by_value = m.len().cmp(&n.len()).then_with(|| m.cmp(n));
                if by_value != Ordering::Equal {
                    return by_value;
                }
                (x, y) = (rest_x, rest_y);
            }
            (Some(p), Some(q)) if p != q => return p.cmp(q),
            _ => (x, y) = (&x[1..], &y[1..]),
        }
    }
}

/// The run of digits `s` starts with, without its leading zeros, and the
/// rest of `s`.
fn number(s: &[u8]) -> (&[u8], &[u8]) {
    let end = s
        .iter()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(s.len());
    let digits = &s[..end];
    let zeros = digits.iter().take_while(|&&c| c == b'0').count();
    (&digits[zeros.min(end.saturating_sub(1))..], &s[end..])
}

/// Sort `names` in natural order.
pub fn sort<S: AsRef<str>>(names: &mut [S]) {
    names.sort_by(|a, b| cmp(a.as_ref(), b.as_ref()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_count_and_the_rest_is_bytes() {
        let mut v = vec![
            "c10", "c2", "c1", "c16", "c9", "spx-b", "spx-a", "c01", "n0", "c", "c1a", "c1b",
        ];
        sort(&mut v);
        assert_eq!(
            v,
            ["c", "c01", "c1", "c1a", "c1b", "c2", "c9", "c10", "c16", "n0", "spx-a", "spx-b"]
        );
        assert_eq!(cmp("node-2.rack10", "node-2.rack9"), Ordering::Greater);
        assert_eq!(
            cmp("a99999999999999999999999", "a100000000000000000000000"),
            Ordering::Less
        );
        assert_eq!(
            cmp("x0", "x00"),
            Ordering::Less,
            "a total order: by bytes on a tie"
        );
        assert_eq!(cmp("n7", "n7"), Ordering::Equal);
    }
}
