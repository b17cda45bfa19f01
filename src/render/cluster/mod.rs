//! The table of a cluster run (`--cluster`, `watch --once`, `watch`'s
//! screen): a headline (the nodes, who answered, where OVN was read, the
//! wall time, the counts), then what is wrong first ([`first_screen`]),
//! or with `-v` everything ([`full`]); then the levels' notes, a
//! preflight's runbook, and last the exit code with why.

pub mod first_screen;
pub mod full;
pub mod names;

use spx_checks::Status;

use super::inert::{Lead, Screen};
use super::table::{runbook_lines, seconds};
use super::term::{Paint, Sym, Term};
use super::Style;
use crate::report::cluster::ClusterReport;

pub fn table(r: &ClusterReport, style: &Style) -> String {
    let term = &style.term;
    let mut out = Screen::new();
    headline(&mut out, r, term);
    if style.verbose {
        full::body(&mut out, r, style);
    } else {
        first_screen::body(&mut out, r, term);
    }
    for note in &r.notes {
        out.wrap(term, &Lead::default(), &format!("note: {note}"), 2);
    }
    if let Some(runbook) = &r.runbook {
        runbook_lines(&mut out, term, runbook);
    }
    exit_line(&mut out, r, term);
    out.into_string()
}

/// `16 nodes (15 answered, 1 did not: n7); OVN NB/SB read once, by n0 ·
/// over ssh`, then `271 results in 3.1 s: 17 fail, …`.
fn headline(out: &mut Screen, r: &ClusterReport, term: &Term) {
    let order: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
    let silent: Vec<&str> = r
        .nodes
        .iter()
        .filter(|n| n.report.is_none())
        .map(|n| n.name.as_str())
        .collect();
    let sm = &r.summary;
    let answered = if silent.is_empty() {
        format!("{} answered", sm.nodes - sm.unreachable)
    } else {
        format!(
            "{} answered, {} did not: {}",
            sm.nodes - sm.unreachable,
            silent.len(),
            names::said(term, &order, &silent)
        )
    };
    let ovn = match &r.ovn_read_by {
        Some(reader) => format!("OVN NB/SB read once, by {reader}"),
        None => "each agent's own periodic reports, from the bucket".to_owned(),
    };
    let preflight = match r.profile.0 {
        Some(p) => format!(" (preflight {})", p.name()),
        None => String::new(),
    };
    let dot = term.sym(Sym::Dot);
    let lead = Lead::default()
        .push(term, &format!("{} nodes", sm.nodes), Some(Paint::Bold))
        .push(term, " ", None);
    let nodes = format!("({answered}); {ovn}{preflight} {dot} over {}", r.via);
    out.wrap(term, &lead, &nodes, 2);
    // The counts on a line of their own: where the first line breaks
    // never depends on how long the run took.
    let counts = format!(
        "{} results in {}: {} fail, {} warn, {} error, {} pass, {} skip",
        sm.pass + sm.warn + sm.fail + sm.skip + sm.error,
        seconds(r.duration_ms),
        sm.fail,
        sm.warn,
        sm.error,
        sm.pass,
        sm.skip
    );
    out.wrap(term, &Lead::default(), &counts, 2);
}

/// The exit code and why, the last line.
fn exit_line(out: &mut Screen, r: &ClusterReport, term: &Term) {
    let order: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
    let failed_nodes: Vec<&str> = r
        .nodes
        .iter()
        .filter(|n| n.exit_code() == Some(1))
        .map(|n| n.name.as_str())
        .collect();
    let failed_checks: Vec<&str> = r
        .checks
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| c.id)
        .collect();
    let why = match r.exit_code {
        0 => "every node answered and nothing failed".to_owned(),
        1 => {
            let mut parts = Vec::new();
            if !failed_checks.is_empty() {
                parts.push(format!("{} failed", failed_checks.join(", ")));
            }
            if !failed_nodes.is_empty() {
                parts.push(format!(
                    "a check failed on {}",
                    names::said(term, &order, &failed_nodes)
                ));
            }
            if parts.is_empty() {
                "a check failed".to_owned()
            } else {
                parts.join("; ")
            }
        }
        _ => {
            let silent = first_screen::inconclusive_nodes(r);
            if silent.is_empty() {
                "inconclusive: a cluster check could not conclude, and nothing failed".to_owned()
            } else {
                format!(
                    "inconclusive: {} did not answer or could not conclude, and nothing failed",
                    names::said(term, &order, &silent)
                )
            }
        }
    };
    let paint = match r.exit_code {
        0 => Paint::Status(Status::Pass),
        1 => Paint::Status(Status::Fail),
        _ => Paint::Status(Status::Error),
    };
    let lead = Lead::default().push(term, &format!("exit {}", r.exit_code), Some(paint));
    out.wrap(term, &lead, &format!(": {why}"), 2);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    use crate::report::cluster::{ClusterSummary, NodeEntry};
    use crate::report::{CheckReport, Tool};
    use serde_json::Value;
    use spx_checks::checks::cluster_path_matrix::{Cell as MatrixCell, CellVerdict};
    use spx_checks::{Scope, CHECKS};

    /// `count` nodes named `{prefix}{i}`, every node check passing but
    /// mtu.path failing alike on every node but `hole` (which fails its
    /// own way), `silent` without a report, the matrix black-holed to and
    /// from `hole`.
    pub(crate) fn cluster(
        prefix: &str,
        count: usize,
        hole: usize,
        silent: Option<usize>,
    ) -> ClusterReport {
        let names: Vec<String> = (1..=count).map(|i| format!("{prefix}{i}")).collect();
        let checks: Vec<Value> = CHECKS
            .iter()
            .filter(|c| c.scope() == Scope::Node)
            .map(|c| {
                serde_json::json!({"id": c.id(), "title": "t", "status": "pass", "code": format!("{}/ok", c.id()),
                                   "summary": "fine", "evidence": {}, "remediation": [], "duration_ms": 1})
            })
            .collect();
        let mtu = checks.iter().position(|c| c["id"] == "mtu.path").unwrap();
        let nodes = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let mut checks = checks.clone();
                let c = &mut checks[mtu];
                c["status"] = "fail".into();
                c["code"] = "mtu.path/black-hole".into();
                if i + 1 == hole {
                    c["summary"] = format!("{} of {} peers cannot carry 9000 bytes: all black-hole above 1500 bytes, so the narrow point is most likely on this node's side", count - 1, count - 1).into();
                    c["remediation"] = serde_json::json!(["configure this node's switch port (and any VLAN on it) for 9000, or revert as below"]);
                } else {
                    c["summary"] = format!("1 of {} peers cannot carry 9000 bytes: 198.18.0.{hole} black-holes packets above 1500 bytes (no \"fragmentation needed\" comes back)", count - 1).into();
                    c["remediation"] = serde_json::json!(["either configure the fabric for jumbo frames (a switch between this host and the peer silently drops frames above 1500 bytes), or revert as below"]);
                }
                let report = if Some(i + 1) == silent {
                    Err(spx_checks::cluster::Unreached::new(
                        spx_checks::cluster::UnreachedKind::ConnectionRefused,
                        "ssh: connect to host 198.19.0.9 port 22: Connection refused".to_owned(),
                    ))
                } else {
                    Ok(serde_json::json!({"checks": checks, "exit_code": 1}))
                };
                NodeEntry::of(
                    &spx_checks::cluster::NodeAnswer::new(n.clone(), Some(format!("198.19.0.{}", i + 1)), report.map(Into::into)),
                    "ssh",
                )
            })
            .collect();
        let hole_name = format!("{prefix}{hole}");
        let mut path_matrix = Vec::new();
        for a in &names {
            for b in &names {
                if a != b {
                    let bad = *a == hole_name || *b == hole_name;
                    path_matrix.push(MatrixCell {
                        from: a.as_str().into(),
                        to: b.as_str().into(),
                        verdict: if bad {
                            CellVerdict::BlackHole
                        } else {
                            CellVerdict::Ok
                        },
                        path_mtu: Some(if bad { 1500 } else { 9000 }),
                        path_mtu_inexact: false,
                        target: Some(9000),
                        detail: None,
                    });
                }
            }
        }
        ClusterReport {
            schema_version: 1,
            kind: "cluster",
            tool: Tool {
                name: "spx-doctor",
                version: "0.1.0",
            },
            profile: spx_checks::profile::RunProfile::default(),
            started_at: "2026-01-01T00:00:00.000Z".into(),
            duration_ms: 2000,
            exit_code: 1,
            summary: ClusterSummary {
                nodes: count,
                unreachable: usize::from(silent.is_some()),
                ..ClusterSummary::default()
            },
            ovn_read_by: Some(names[0].clone()),
            via: "ssh",
            nodes,
            checks: vec![CheckReport {
                title: "t",
                summary: format!(
                    "{} of {} paths cannot carry 9000 bytes: every path to and from {hole_name}",
                    2 * (count - 1),
                    count * (count - 1)
                ),
                remediation: vec![format!(
                    "{hole_name}: every path to and from it fails: configure its switch port"
                )],
                ..crate::report::tests::c("cluster.path-matrix", Status::Fail)
            }],
            path_matrix: path_matrix.into(),
            runbook: None,
            notes: Vec::new(),
        }
    }

    fn drawn(r: &ClusterReport, width: usize, verbose: bool) -> String {
        let style = Style {
            verbose,
            strict: false,
            term: Term::plain(width),
        };
        let text = table(r, &style);
        for line in text.lines() {
            assert!(
                crate::render::term::width(line) <= width,
                "{} > {width}: {line}\n{text}",
                crate::render::term::width(line)
            );
        }
        text
    }

    #[test]
    fn a_fault_several_nodes_share_is_said_once_with_their_names() {
        let r = cluster("c", 16, 12, Some(7));
        let text = drawn(&r, 120, false);
        if std::env::var_os("SPX_PEEK").is_some() {
            eprintln!("{text}");
        }
        assert!(
            text.lines().count() <= 40,
            "{}\n{text}",
            text.lines().count()
        );
        assert!(
            text.contains("✘ c1–c6, c8–c11, c13–c16: mtu.path/black-hole: 1 of 15 peers"),
            "{text}"
        );
        assert_eq!(text.matches("mtu.path/black-hole").count(), 2, "{text}");
        assert!(
            text.contains("✘ c12: mtu.path/black-hole: 15 of 15 peers"),
            "{text}"
        );
        assert!(
            text.contains("16 nodes (15 answered, 1 did not: c7)"),
            "{text}"
        );
        assert!(
            text.contains("∅ c7: unreachable (connection refused"),
            "{text}"
        );
        // The matrix: its count and the cells below the target, grouped.
        assert!(
            text.contains("path MTU: 30 of 240 paths below 9000 (210 carry it)"),
            "{text}"
        );
        assert!(text.contains("  c12 → c1–c11, c13–c16: 1500✘"), "{text}");
        assert!(text.contains("  c1–c11, c13–c16 → c12: 1500✘"), "{text}");
        assert!(!text.contains("from \\ to"), "no matrix drawn: {text}");
        // Problems before passes, the exit line last.
        let fail = text.find("mtu.path/black-hole").unwrap();
        assert!(fail < text.find("✔ ").unwrap(), "{text}");
        assert!(
            text.trim_end()
                .lines()
                .last()
                .unwrap()
                .starts_with("exit 1: cluster.path-matrix failed; a check failed on c1–c6, c8–c16"),
            "{text}"
        );
    }

    #[test]
    fn sixty_four_nodes_with_one_black_hole_fit_one_screen() {
        let r = cluster("n", 64, 40, None);
        for width in [80, 120] {
            let text = drawn(&r, width, false);
            assert!(
                text.lines().count() <= 30,
                "{}\n{text}",
                text.lines().count()
            );
            assert!(
                text.contains("n1–n39, n41–n64: mtu.path/black-hole"),
                "{text}"
            );
        }
    }

    #[test]
    fn verbose_draws_every_node_and_the_whole_matrix_in_the_width() {
        let r = cluster("spx-node-0", 8, 8, None);
        for width in [80usize, 120] {
            let text = drawn(&r, width, true);
            for n in &r.nodes {
                assert!(text.contains(&n.name), "{text}");
            }
            assert!(text.contains("1500✘"), "{text}");
            assert!(text.contains("mtu.path: fail on spx-node-01–08"), "{text}");
            // Both matrices in one block each, the columns named without
            // the common prefix.
            assert_eq!(text.matches("│ check ").count(), 1, "{text}");
            assert_eq!(text.matches("│ from \\ to ").count(), 1, "{text}");
            assert!(
                text.contains("(columns: the node names without \"spx-node-\")"),
                "{text}"
            );
            assert!(text.contains("│ spx-node-08 ┆ 1500✘"), "{text}");
            // Every node's result, its code and its summary.
            assert!(text.contains("pass udp.rcvbuf-errors/ok: fine"), "{text}");
            assert!(
                text.contains("fail mtu.path/black-hole: 7 of 7 peers"),
                "{text}"
            );
        }
    }

    #[test]
    fn ascii_outside_a_utf8_locale() {
        let r = cluster("c", 4, 4, Some(2));
        let style = Style {
            verbose: false,
            strict: false,
            term: Term {
                unicode: false,
                ..Term::plain(100)
            },
        };
        let text = table(&r, &style);
        assert!(
            text.is_ascii(),
            "{:?}\n{text}",
            text.chars().find(|c| !c.is_ascii())
        );
        assert!(text.contains("XX c1, c3: mtu.path/black-hole"), "{text}");
        assert!(text.contains("c4 -> c1..c3: 1500X"), "{text}");
    }
}
