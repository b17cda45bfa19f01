//! The same screens off a terminal and in colour: piped (to a file, a
//! pager, a CI log) every text output wraps to `COLUMNS`, else 100
//! columns; `NO_COLOR` means no escape byte; `--color always` colours
//! even a pipe; outside a UTF-8 locale the marks are ASCII.

use std::process::Command;

use super::fixtures::ClusterFixture;
use super::terminal::{assert_fits, in_terminal, piped, replay_args, StoredCluster, UTF8};
use crate::support::{run, tmux::Tmux, tool_or_skip};

/// Every text command, piped: the node views of every fixture (default
/// and `-v`), the README's first command here, a preflight's runbook,
/// `list`, `list --codes`, `explain` of a check and of a code.
fn text_commands() -> Vec<Vec<String>> {
    let mut all: Vec<Vec<String>> = Vec::new();
    for bundle in [
        "node-no-config.spxb",
        "node-healthy.spxb",
        "node-three-problems.spxb",
        "node-300-guests.spxb",
    ] {
        all.push(replay_args(bundle));
        let mut v = replay_args(bundle);
        v.push("-v".into());
        all.push(v);
    }
    for words in [
        &["--sample", "200ms"][..],
        &["--for", "disable-ipsec"],
        &["list"],
        &["list", "--codes"],
        &["explain", "mtu.path"],
        &["explain", "nic.rings/virtio-queue-size"],
    ] {
        all.push(words.iter().map(|w| w.to_string()).collect());
    }
    all
}

#[test]
fn piped_text_fits_100_columns_or_columns() {
    for args in text_commands() {
        for (columns, width) in [(None, 100), (Some("60"), 60), (Some("250"), 250)] {
            let mut cmd = piped();
            cmd.args(&args).env("LANG", "C.UTF-8");
            if let Some(c) = columns {
                cmd.env("COLUMNS", c);
            }
            let (code, out, err) = run(&mut cmd);
            assert!(code < 2 || !out.is_empty(), "{args:?}: {err}");
            assert_fits(&out, width, &format!("{args:?} COLUMNS={columns:?}"));
            assert!(!out.contains('\u{1b}'), "{args:?}: colour in a pipe");
        }
        // --width wins over COLUMNS.
        let (_, out, _) = run(piped()
            .args(&args)
            .args(["--width", "70"])
            .env("COLUMNS", "200"));
        assert_fits(&out, 70, &format!("{args:?} --width 70"));
    }
}

#[test]
fn a_piped_cluster_table_fits_too() {
    let cluster = StoredCluster::new(&ClusterFixture::read(16), &["n7"]);
    for verbose in [false, true] {
        for (columns, width) in [(None, 100), (Some("60"), 60)] {
            let mut cmd = cluster.spx();
            if verbose {
                cmd.arg("-v");
            }
            if let Some(c) = columns {
                cmd.env("COLUMNS", c);
            }
            let (code, out, err) = run(&mut cmd);
            assert_eq!(code, 1, "{err}");
            assert_fits(&out, width, &format!("-v {verbose}, COLUMNS={columns:?}"));
        }
    }
}

/// Escape bytes in `text`.
fn escapes(text: &str) -> usize {
    text.matches('\u{1b}').count()
}

#[test]
fn no_color_means_not_one_escape_byte_and_always_means_colour() {
    if !tool_or_skip(
        "no_color_means_not_one_escape_byte",
        "tmux",
        Tmux::available(),
    ) {
        return;
    }
    let args = replay_args("node-three-problems.spxb");
    // A terminal: coloured by default, not with NO_COLOR or --color never.
    let coloured = in_terminal(&args, 120, &[UTF8], None, true);
    assert!(escapes(&coloured) > 0, "{coloured:?}");
    let plain = in_terminal(&args, 120, &[UTF8, ("NO_COLOR", "1")], None, true);
    assert_eq!(escapes(&plain), 0, "{plain:?}");
    let mut never = args.clone();
    never.extend(["--color".into(), "never".into()]);
    assert_eq!(escapes(&in_terminal(&never, 120, &[UTF8], None, true)), 0);
    // A pipe: plain, unless --color always (NO_COLOR or not).
    let pipe = |extra: &[&str], no_color: bool| {
        let mut cmd: Command = piped();
        cmd.args(&args).args(extra);
        if no_color {
            cmd.env("NO_COLOR", "1");
        }
        run(&mut cmd).1
    };
    assert_eq!(escapes(&pipe(&[], false)), 0);
    assert_eq!(escapes(&pipe(&[], true)), 0);
    assert!(escapes(&pipe(&["--color", "always"], false)) > 0);
    assert!(escapes(&pipe(&["--color", "always"], true)) > 0);
    for words in [&["list"][..], &["explain", "mtu.path"]] {
        let (_, out, _) = run(piped().args(words).args(["--color", "always"]));
        assert!(escapes(&out) > 0, "{words:?}");
        let (_, out, _) = run(piped().args(words).env("NO_COLOR", "1"));
        assert_eq!(escapes(&out), 0, "{words:?}");
    }
}

#[test]
fn outside_a_utf8_locale_the_marks_are_ascii() {
    let args = replay_args("node-three-problems.spxb");
    let (_, out, _) = run(piped()
        .args(&args)
        .env("LANG", "C")
        .env_remove("LC_ALL")
        .env_remove("LC_CTYPE"));
    assert!(out.is_ascii(), "{out}");
    assert!(out.contains("\nXX mtu.path/black-hole: "), "{out}");
    assert!(out.contains("\n!! nic.queues/unused-queues: "), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("ok ") && l.contains(" pass: ")),
        "{out}"
    );
    let (_, out, _) = run(piped().args(&args).env("LC_ALL", "en_AU.UTF-8"));
    assert!(out.contains("\n✘ mtu.path/black-hole: "), "{out}");
}

/// `text` without white space or table borders: what survives any
/// wrapping, to look for a text in.
fn unwrapped(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace() && !"│┆".contains(*c))
        .collect()
}

/// Nothing lost: every result of every node's report and every cluster
/// check (its id, status, code, summary and fixes, as the JSON says them)
/// is in the cluster table with `-v`, for the 16- and 64-node clusters.
#[test]
fn a_cluster_table_with_v_holds_every_result_of_the_json() {
    for (nodes, silent) in [(16, &["n7"][..]), (64, &[][..])] {
        let cluster = StoredCluster::new(&ClusterFixture::read(nodes), silent);
        let (_, json, _) = run(cluster.spx().args(["--format", "json"]));
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        let (_, table, _) = run(cluster.spx().args(["-v", "--width", "200"]));
        let table = unwrapped(&table);
        let mut results: Vec<&serde_json::Value> =
            doc["checks"].as_array().unwrap().iter().collect();
        for n in doc["nodes"].as_array().unwrap() {
            results.extend(n["report"]["checks"].as_array().into_iter().flatten());
        }
        assert!(results.len() > nodes * 10, "{}", results.len());
        // Each text once (most are the same on every node).
        let mut wanted: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
        for c in results {
            for key in ["id", "status", "code", "summary"] {
                wanted.insert(unwrapped(c[key].as_str().unwrap()));
            }
            for fix in c["remediation"].as_array().unwrap() {
                wanted.insert(unwrapped(fix.as_str().unwrap()));
            }
        }
        for want in wanted {
            assert!(table.contains(&want), "{nodes} nodes: {want} lost");
        }
    }
}
