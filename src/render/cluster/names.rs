//! Lists of nodes as the cluster table says them: in the report's order
//! (the config's, natural: c2 before c10), a run of consecutive numbered
//! nodes said as its ends (`c1–c11`), so that 63 nodes sharing a fault
//! take a few words, not three lines.

use crate::render::term::{Sym, Term};

/// `group` (a subset of `order`, in any order) said in `order`'s order,
/// each run of three or more nodes that stand next to each other in
/// `order` and are numbered one after the other (`n3, n4, n5`) said as
/// `n3–n5`.
pub fn said(term: &Term, order: &[&str], group: &[&str]) -> String {
    let members: Vec<&str> = order
        .iter()
        .copied()
        .filter(|n| group.contains(n))
        .collect();
    let position = |n: &str| order.iter().position(|o| *o == n);
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < members.len() {
        let mut j = i;
        while j + 1 < members.len()
            && position(members[j + 1]) == position(members[j]).map(|p| p + 1)
            && follows(members[j], members[j + 1])
        {
            j += 1;
        }
        if j - i >= 2 {
            parts.push(range(term, members[i], members[j]));
        } else {
            parts.extend(members[i..=j].iter().map(|s| s.to_string()));
        }
        i = j + 1;
    }
    parts.join(", ")
}

/// The name's stem and its trailing number (`spx-node-07` is
/// `spx-node-`, 7, two digits).
fn numbered(name: &str) -> Option<(&str, u64, usize)> {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 18 {
        return None;
    }
    let (stem, number) = name.split_at(name.len() - digits);
    Some((stem, number.parse().ok()?, digits))
}

/// True when `b` is the node numbered right after `a`.
fn follows(a: &str, b: &str) -> bool {
    match (numbered(a), numbered(b)) {
        (Some((sa, na, da)), Some((sb, nb, db))) => {
            sa == sb && nb == na + 1 && (da == db || !a[sa.len()..].starts_with('0'))
        }
        _ => false,
    }
}

/// `c1–c11`; a long common stem said once (`spx-node-01–08`).
fn range(term: &Term, first: &str, last: &str) -> String {
    let through = term.sym(Sym::Through);
    match numbered(last) {
        Some((stem, _, _)) if stem.len() > 3 => {
            format!("{first}{through}{}", &last[stem.len()..])
        }
        _ => format!("{first}{through}{last}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_numbered_nodes_are_said_by_their_ends() {
        let t = Term::plain(80);
        let names: Vec<String> = (1..=16).map(|i| format!("c{i}")).collect();
        let order: Vec<&str> = names.iter().map(String::as_str).collect();
        let all_but: Vec<&str> = order
            .iter()
            .copied()
            .filter(|n| *n != "c12" && *n != "c7")
            .collect();
        assert_eq!(said(&t, &order, &all_but), "c1–c6, c8–c11, c13–c16");
        assert_eq!(said(&t, &order, &["c9", "c3", "c7"]), "c3, c7, c9");
        assert_eq!(said(&t, &order, &["c2", "c3"]), "c2, c3");
        let long: Vec<String> = (1..=8).map(|i| format!("spx-node-{i:02}")).collect();
        let order: Vec<&str> = long.iter().map(String::as_str).collect();
        assert_eq!(said(&t, &order, &order), "spx-node-01–08");
        // Not numbered, or not in a row in the report's order: named.
        let odd = ["spx-a", "spx-b", "spx-c"];
        assert_eq!(said(&t, &odd, &odd), "spx-a, spx-b, spx-c");
        let given = ["n3", "n1", "n2"];
        assert_eq!(said(&t, &given, &given), "n3, n1, n2");
        let ascii = Term {
            unicode: false,
            ..t
        };
        assert_eq!(
            said(&ascii, &["n1", "n2", "n3"], &["n1", "n2", "n3"]),
            "n1..n3"
        );
    }
}
