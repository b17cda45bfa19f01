//! The real binary's contract: exit codes, refusals, JSON, generated files.

use crate::support::{self, run, run_json, spx, write_config};

#[test]
fn no_config_runs_host_checks_and_validates() {
    let (code, doc) = run_json(spx().args(["--check", "sysctl,udp", "--sample", "100ms"]));
    assert!(code == 0 || code == 1, "exit {code}: {doc}");
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["profile"], "default");
    assert_eq!(doc["node"], serde_json::Value::Null);
    // sysctl.udp-buffers, sysctl.neigh (a skip without a config) and
    // udp.rcvbuf-errors.
    assert_eq!(doc["checks"].as_array().unwrap().len(), 3);
    let sum: u64 = ["pass", "warn", "fail", "skip", "error"]
        .iter()
        .map(|k| doc["summary"][k].as_u64().unwrap())
        .sum();
    assert_eq!(sum, 3);
}

#[test]
fn exit_code_follows_the_buffer_verdict() {
    // The oracle is the kernel file itself, read independently.
    let rmem: u64 = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let wmem: u64 = std::fs::read_to_string("/proc/sys/net/core/wmem_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let (code, doc) = run_json(spx().args(["--check", "sysctl.udp-buffers"]));
    let c = support::check(&doc, "sysctl.udp-buffers");
    assert_eq!(c["evidence"]["rmem_max"], rmem);
    assert_eq!(c["evidence"]["wmem_max"], wmem);
    let low = rmem < 16_777_216 || wmem < 16_777_216;
    assert_eq!(c["status"], if low { "fail" } else { "pass" });
    assert_eq!(code, if low { 1 } else { 0 });
}

#[test]
fn config_node_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(
        dir.path(),
        "node = \"spx1\"\n[nodes.spx1]\nhost = \"198.18.0.1\"\n",
    );
    let (_, doc) = run_json(spx().args(["--check", "sysctl"]).arg("--config").arg(&cfg));
    assert_eq!(doc["node"], "spx1");
}

#[test]
fn mistyped_config_is_exit_2_with_position_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(
        dir.path(),
        "node = \"spx1\"\n[network]\nunderlay_mtu = \"9000\"\n",
    );
    let (code, out, err) = run(spx().arg("--config").arg(&cfg));
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("spinifex.toml:3:16"), "{err}");
    assert!(err.contains("network.underlay_mtu"), "{err}");
}

#[test]
fn malformed_config_is_exit_2_with_position() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(
        dir.path(),
        "node = \"spx1\"\n[network\nipsec_enabled = true\n",
    );
    let (code, _, err) = run(spx().arg("--config").arg(&cfg));
    assert_eq!(code, 2);
    assert!(err.contains("spinifex.toml:2:"), "{err}");
}

#[test]
fn missing_explicit_config_is_exit_2() {
    let (code, _, err) = run(spx().args(["--config", "/nonexistent/spinifex.toml"]));
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot read config /nonexistent/spinifex.toml"),
        "{err}"
    );
}

#[test]
fn unknown_check_is_exit_2_with_suggestion_and_list() {
    let (code, out, err) = run(spx().args(["--check", "udp.rcvbuf-eror"]));
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("did you mean \"udp.rcvbuf-errors\""), "{err}");
    assert!(err.contains("sysctl.udp-buffers"), "{err}");
    let (code, _, err) = run(spx().args(["--skip", "nope"]));
    assert_eq!(code, 2, "{err}");
    let (code, _, _) = run(spx().args(["explain", "nope.nope"]));
    assert_eq!(code, 2);
}

#[test]
fn bad_flags_are_exit_2() {
    for args in [
        &["--timeout", "soon"][..],
        &["--timeout", "0s"],
        &["--sample", "20s"],
        &["--probe-timeout", "-1s"],
        &["--mtu", "100"],
        &["--mtu", "70000"],
        &["--interface", "bad/name"],
        &["--interface", "waytoolonginterfacename"],
        &["--nb-db", "tcp:127.0.0.1"],
        &["--sb-db", "ssl:127.0.0.1:6642"],
        &["--ovs-db", "unix:relative"],
        &["--peer", "$(id)"],
        &["--peer", "no-such-host.invalid"],
        &["--format", "xml"],
        &["--for", "enable-everything"],
    ] {
        let (code, out, err) = run(spx().args(args));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(
            err.starts_with("spx-doctor: error: ") || err.starts_with("error: "),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn list_and_explain_come_from_the_check_list() {
    let (code, out, _) = run(spx().args(["list"]));
    assert_eq!(code, 0);
    assert!(out.contains("sysctl.udp-buffers") && out.contains("udp.rcvbuf-errors"));
    let (code, out, _) = run(spx().args(["explain", "sysctl.udp-buffers"]));
    assert_eq!(code, 0);
    assert!(out.contains("416 KiB"), "{out}");
}

#[test]
fn table_output_has_counts_and_no_color_when_piped() {
    let (_, out, _) = run(spx().args(["--check", "sysctl", "--color", "auto"]));
    assert!(
        out.contains(" · 2 checks in ") && out.contains("sysctl.udp-buffers"),
        "{out}"
    );
    assert!(!out.contains('\u{1b}'), "no escape codes when piped");
    let (_, out, _) = run(spx().args(["--check", "sysctl", "--color", "always"]));
    assert!(out.contains('\u{1b}'), "colour forced");
    let (_, out, _) = run(spx().args(["--check", "sysctl", "-v"]));
    assert!(
        out.contains("required: 16777216"),
        "evidence with -v: {out}"
    );
}

#[test]
fn output_file_is_written_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doctor.json");
    let (code, out, err) = run(spx()
        .args(["--check", "sysctl", "--format", "json", "--output"])
        .arg(&path));
    assert!(code < 2, "{err}");
    assert!(out.is_empty());
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    support::assert_valid(&doc);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file left behind");
}

#[test]
fn broken_pipe_exits_quietly() {
    use std::process::Stdio;
    let mut child = spx()
        .args(["list"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before the writer writes
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.code().is_some(),
        "killed by a signal: {:?}",
        out.status
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

/// Generated files must match what the binary generates now. To refresh:
/// `cargo run -q -- completions bash > completions/spx-doctor.bash` (zsh:
/// `_spx-doctor`, fish: `spx-doctor.fish`) and `cargo run -q -- man >
/// doc/spx-doctor.1`.
#[test]
fn completions_and_man_page_are_fresh() {
    let root = support::repo_root();
    for (args, file) in [
        (&["completions", "bash"][..], "completions/spx-doctor.bash"),
        (&["completions", "zsh"], "completions/_spx-doctor"),
        (&["completions", "fish"], "completions/spx-doctor.fish"),
        (&["man"], "doc/spx-doctor.1"),
    ] {
        let (code, out, _) = run(spx().args(args));
        assert_eq!(code, 0);
        let committed = std::fs::read_to_string(root.join(file)).unwrap_or_default();
        assert!(
            committed == out,
            "{file} is stale: regenerate with `cargo run -q -- {} > {file}`",
            args.join(" ")
        );
    }
    let bash = std::fs::read_to_string(root.join("completions/spx-doctor.bash")).unwrap();
    for c in spx_ids() {
        assert!(bash.contains(&c), "bash completion lacks check id {c}");
    }
}

fn spx_ids() -> Vec<String> {
    let (_, out, _) = run(spx().args(["list"]));
    out.lines()
        .filter_map(|l| l.split('┆').next())
        .map(|s| s.trim_start_matches('│').trim().to_owned())
        .filter(|s| s.contains('.'))
        .collect()
}

#[test]
fn readme_lists_every_check_and_its_two_commands() {
    let readme = std::fs::read_to_string(support::repo_root().join("README.md")).unwrap();
    for id in spx_ids() {
        assert!(
            readme.contains(&format!("| `{id}` |")),
            "README's check table lacks {id}"
        );
    }
    assert!(readme.contains("cargo run --release --\n"));
    assert!(readme.contains("bash .ci/run"));
    let ci = std::fs::read_to_string(support::repo_root().join(".ci/run")).unwrap();
    assert!(ci.contains("cargo test --workspace --locked"));
}

/// docs/codes.md's table between its markers, as the catalog makes it.
fn code_table() -> String {
    use spx_checks::kind::{Origin, COMMON};
    let cell = |s: &str| s.replace('|', "\\|");
    let mut t = String::from("| code | status | meaning |\n|---|---|---|\n");
    for c in spx_checks::codes::all().filter(|c| c.kind.origin == Origin::Check) {
        t.push_str(&format!(
            "| `{}` | {} | {} |\n",
            c.code(),
            c.kind.status,
            cell(&c.kind.text())
        ));
    }
    t.push_str(&site_code_rows());
    // The path question's own codes (`spx doctor path FROM TO`).
    for k in spx_checks::path::codes() {
        t.push_str(&format!(
            "| `{}` | {} | {} |\n",
            k.code(spx_checks::path::ID),
            k.status,
            cell(&k.text())
        ));
    }
    for k in &COMMON {
        t.push_str(&format!(
            "| `CHECK-ID/{}` | {} | {} |\n",
            k.name,
            k.status,
            cell(&k.text())
        ));
    }
    t
}

/// Every site check's codes (doctor.d: docs/site-checks.md), as rows.
fn site_code_rows() -> String {
    spx_checks::checks::site::SITE_KINDS
        .iter()
        .map(|(name, status, doc)| {
            format!(
                "| `site.NAME/{name}` | {status} | {} |\n",
                doc.replace('|', "\\|")
            )
        })
        .collect()
}

/// Replace what stands between `begin` and `end` in the file at `rel` with
/// `fresh` under `SPX_BLESS=1`, else assert it is `fresh`.
fn generated_block(rel: &str, begin: &str, end: &str, fresh: &str) {
    let path = support::repo_root().join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text
        .find(begin)
        .unwrap_or_else(|| panic!("{rel} has the marker {begin:?}"))
        + begin.len();
    let stop = start
        + text[start..]
            .find(end)
            .unwrap_or_else(|| panic!("{rel} has the end marker {end:?}"));
    if std::env::var_os("SPX_BLESS").is_some() && text[start..stop] != *fresh {
        std::fs::write(&path, format!("{}{fresh}{}", &text[..start], &text[stop..])).unwrap();
    } else {
        assert!(
            text[start..stop] == *fresh,
            "{rel}'s generated block is stale: regenerate with \
             `SPX_BLESS=1 cargo test --test tests cli::docs_list_every_code_and_every_metric`\n{fresh}"
        );
    }
}

/// docs/codes.md carries the full code list, generated from the catalog
/// (`SPX_BLESS=1` rewrites it), and the guide's Monitoring section names
/// every declared metric.
#[test]
fn docs_list_every_code_and_every_metric() {
    generated_block(
        "docs/codes.md",
        "<!-- codes: generated by cli::docs_list_every_code_and_every_metric -->\n",
        "<!-- end of codes -->",
        &code_table(),
    );
    generated_block(
        "docs/site-checks.md",
        "<!-- site codes: generated by cli::docs_list_every_code_and_every_metric -->\n",
        "<!-- end of site codes -->",
        &site_code_rows(),
    );
    let guide = std::fs::read_to_string(support::repo_root().join("docs/guide.md")).unwrap();
    let monitoring = &guide[guide
        .find("\n## Monitoring\n")
        .expect("the guide has Monitoring")..];
    let monitoring = &monitoring[..monitoring[1..]
        .find("\n## ")
        .map_or(monitoring.len(), |n| n + 1)];
    let site = [("site.NAME", &spx_checks::checks::site::SITE_VALUE)];
    for (id, m) in spx_checks::catalogue::metrics().into_iter().chain(site) {
        assert!(
            monitoring.contains(&format!("`{}", m.name)),
            "docs/guide.md's Monitoring section lacks {} ({id})",
            m.name
        );
    }
}

/// The per-check blocks of the schema's `$defs/check`, generated from the
/// catalog: a check's code pattern takes every code of that check and no
/// other check's, and its evidence is `$defs/evidence-<id>` (or empty, for
/// a result the runner made).
fn schema_check_blocks() -> String {
    let mut out = Vec::new();
    for check in spx_checks::CHECKS {
        let id = check.id();
        let names: Vec<&str> = spx_checks::codes::of_check(*check)
            .map(|c| c.kind.name)
            .collect();
        let pattern = format!("^{}/({})$", id.replace('.', "\\\\."), names.join("|"));
        out.push(format!(
            r##"        {{
          "if": {{ "properties": {{ "id": {{ "const": "{id}" }} }}, "required": ["id"] }},
          "then": {{
            "properties": {{
              "code": {{ "pattern": "{pattern}" }},
              "findings": {{ "items": {{ "properties": {{ "code": {{ "pattern": "{pattern}" }} }} }} }},
              "evidence": {{ "anyOf": [{{ "maxProperties": 0 }}, {{ "$ref": "#/$defs/evidence-{id}" }}] }}
            }}
          }}
        }}"##
        ));
    }
    // The site's own checks (doctor.d): ids and codes from files, so one
    // block for all of them, by id.
    let codes = r"[a-z0-9]+(-[a-z0-9]+)*";
    let pattern = format!("^site\\\\.{codes}/{codes}$");
    out.push(format!(
        r##"        {{
          "if": {{ "properties": {{ "id": {{ "pattern": "^site\\." }} }}, "required": ["id"] }},
          "then": {{
            "properties": {{
              "id": {{ "pattern": "^site\\.{codes}$" }},
              "code": {{ "pattern": "{pattern}" }},
              "evidence": {{ "anyOf": [{{ "maxProperties": 0 }}, {{ "$ref": "#/$defs/evidence-site" }}] }}
            }}
          }}
        }}"##
    ));
    out.join(",\n") + "\n"
}

/// The schema describes every converted check: its evidence under
/// `$defs/evidence-<id>`, and a code pattern that takes every code of the
/// catalog for that check and no other check's (the blocks are generated:
/// `SPX_BLESS=1 cargo test --test tests cli::the_schema_knows_every_code_and_typed_evidence`).
#[test]
fn the_schema_knows_every_code_and_typed_evidence() {
    const FIRST: &str = "        {\n          \"if\": { \"properties\": { \"id\": { \"const\": ";
    const END: &str = "      ]\n    },\n    \"status\": ";
    let path = support::repo_root().join("schema/report-v1.schema.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text.find(FIRST).expect("the schema has per-check blocks");
    let end = start
        + text[start..]
            .find(END)
            .expect("the schema has the end block");
    let blocks = schema_check_blocks();
    let mut text = text.clone();
    if std::env::var_os("SPX_BLESS").is_some() && text[start..end] != blocks {
        text = format!("{}{blocks}{}", &text[..start], &text[end..]);
        std::fs::write(&path, &text).unwrap();
    } else {
        assert!(
            text[start..end] == blocks,
            "the schema's per-check blocks are stale: regenerate with \
             `SPX_BLESS=1 cargo test --test tests cli::the_schema_knows_every_code_and_typed_evidence`"
        );
    }
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    let blocks = schema["$defs"]["check"]["allOf"].as_array().unwrap();
    for check in spx_checks::CHECKS {
        let id = check.id();
        let block = blocks
            .iter()
            .find(|b| b["if"]["properties"]["id"]["const"] == id)
            .unwrap_or_else(|| panic!("{id} has no if/then in the schema"));
        assert!(
            schema["$defs"][format!("evidence-{id}")].is_object(),
            "no $defs/evidence-{id}"
        );
        let pattern = &block["then"]["properties"]["code"]["pattern"];
        let v =
            jsonschema::validator_for(&serde_json::json!({ "type": "string", "pattern": pattern }))
                .unwrap();
        for code in spx_checks::codes::of_check(*check) {
            assert!(
                v.is_valid(&serde_json::json!(code.code())),
                "{} not in {pattern}",
                code.code()
            );
        }
        assert!(!v.is_valid(&serde_json::json!(format!("{id}/no-such-kind"))));
        let foreign = if id == "sysctl.udp-buffers" {
            "nic.rings/ok"
        } else {
            "sysctl.udp-buffers/ok"
        };
        assert!(!v.is_valid(&serde_json::json!(foreign)));
    }
}

/// `--output /dev/null` once replaced the device with a regular file: the
/// atomic rename must never land on anything but a regular file.
#[test]
fn output_to_a_device_or_a_link_keeps_what_is_there() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    if support::is_root() {
        // A null device of our own, so a regression cannot break the host's.
        let null = dir.path().join("null");
        nix::sys::stat::mknod(
            &null,
            nix::sys::stat::SFlag::S_IFCHR,
            nix::sys::stat::Mode::from_bits_truncate(0o666),
            nix::sys::stat::makedev(1, 3),
        )
        .unwrap();
        let (code, out, err) = run(spx().args(["--check", "sysctl", "--output"]).arg(&null));
        assert!(code < 2, "{err}");
        assert!(out.is_empty());
        let meta = std::fs::metadata(&null).unwrap();
        assert!(
            meta.file_type().is_char_device(),
            "the device is still a device"
        );
        std::fs::remove_file(&null).unwrap();
    }

    let real = dir.path().join("real.json");
    std::fs::write(&real, "old").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let (code, _, err) = run(spx()
        .args(["--check", "sysctl", "--format", "json", "--output"])
        .arg(&link));
    assert!(code < 2, "{err}");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link stays"
    );
    assert!(std::fs::read_to_string(&real)
        .unwrap()
        .contains("\"schema_version\": 1"));

    let (code, _, err) = run(spx()
        .args(["--check", "sysctl", "--output"])
        .arg(dir.path()));
    assert_eq!(code, 2);
    assert!(err.contains("is a directory"), "{err}");
}

/// The bad-input table is kept once: in docs/bad-input.md, which
/// `hardening::bad_input_table_is_what_spx_says` generates. No other page
/// carries a copy of its rows (a copy goes stale), and the README and the
/// guide point to it.
#[test]
fn the_bad_input_table_is_kept_once() {
    let root = support::repo_root();
    let generated = std::fs::read_to_string(root.join("docs/bad-input.md")).unwrap();
    let rows: Vec<&str> = generated
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Input ") && !l.starts_with("| ---"))
        .collect();
    assert!(rows.len() > 10);
    for page in markdown_pages(&root) {
        if page.ends_with("docs/bad-input.md") {
            continue;
        }
        let text = std::fs::read_to_string(&page).unwrap();
        for row in &rows {
            assert!(
                !text.contains(row),
                "{} copies a row of docs/bad-input.md (link to it instead):\n{row}",
                page.display()
            );
        }
    }
    for page in ["README.md", "docs/guide.md"] {
        let text = std::fs::read_to_string(root.join(page)).unwrap();
        assert!(
            text.contains("bad-input.md)"),
            "{page} does not link docs/bad-input.md"
        );
    }
}

/// README.md and every page of docs/.
fn markdown_pages(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-`
/// and `_` dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every relative link of the README and docs/ points at a file that
/// exists and, with a `#fragment`, at a heading of that file: moving a
/// section between pages cannot leave a link behind.
#[test]
fn doc_links_resolve() {
    let root = support::repo_root();
    let anchors = |path: &std::path::Path| -> Vec<String> {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut fenced = false;
        let mut out = Vec::new();
        for line in text.lines() {
            if line.starts_with("```") {
                fenced = !fenced;
            } else if !fenced && line.starts_with('#') {
                out.push(anchor(line.trim_start_matches('#')));
            }
        }
        out
    };
    let mut checked = 0;
    for page in markdown_pages(&root) {
        let text = std::fs::read_to_string(&page).unwrap();
        let dir = page.parent().unwrap();
        for (n, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("](") {
                let rest = &line[at + 2..];
                let Some(close) = rest.find(')') else {
                    continue;
                };
                let target = &rest[..close];
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
                let path = if file.is_empty() {
                    page.clone()
                } else {
                    dir.join(file)
                };
                assert!(
                    path.exists(),
                    "{}:{}: {target}: no such file",
                    page.display(),
                    n + 1
                );
                if !fragment.is_empty() {
                    assert!(
                        anchors(&path).iter().any(|a| a == fragment),
                        "{}:{}: {target}: no such heading",
                        page.display(),
                        n + 1
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 30, "only {checked} links");
}

/// Spinifex's `spx` takes its config from `--config` or
/// `SPINIFEX_CONFIG_PATH`; the doctor resolves its default the same way.
#[test]
fn spinifex_config_path_is_read_like_spx_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), "node = \"from-env\"\n");
    let other = dir.path().join("other.toml");
    std::fs::write(&other, "node = \"from-flag\"\n").unwrap();
    let (_, doc) = run_json(
        spx()
            .args(["--check", "sysctl"])
            .env("SPINIFEX_CONFIG_PATH", &cfg),
    );
    assert_eq!(doc["node"], "from-env");
    // The flag wins over the environment, as in spx.
    let (_, doc) = run_json(
        spx()
            .args(["--check", "sysctl", "--config"])
            .arg(&other)
            .env("SPINIFEX_CONFIG_PATH", &cfg),
    );
    assert_eq!(doc["node"], "from-flag");
    // A path named in the environment must be readable, like --config.
    let (code, out, err) = run(spx()
        .args(["--check", "sysctl"])
        .env("SPINIFEX_CONFIG_PATH", "/nonexistent/spinifex.toml"));
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains("cannot read config /nonexistent/spinifex.toml"),
        "{err}"
    );
    // An empty variable is no setting at all.
    let (_, doc) = run_json(
        spx()
            .args(["--check", "sysctl"])
            .env("SPINIFEX_CONFIG_PATH", ""),
    );
    assert_eq!(doc["node"], serde_json::Value::Null);
}

/// Help, usage, errors and the text of remediation name the command as the
/// operator typed it: `spx doctor` through Spinifex's `spx` (which sets
/// SPX_DOCTOR_VIA=spx), `spx-doctor` otherwise.
#[test]
fn names_follow_how_the_doctor_was_started() {
    let (code, out, _) = run(spx().arg("--help"));
    assert_eq!(code, 0);
    assert!(out.contains("Usage: spx-doctor [OPTIONS]"), "{out}");
    let (code, out, _) = run(spx().arg("--help").env("SPX_DOCTOR_VIA", "spx"));
    assert_eq!(code, 0);
    assert!(out.contains("Usage: spx doctor [OPTIONS]"), "{out}");
    assert!(!out.contains("spx-doctor"), "{out}");

    let (code, _, err) = run(spx().args(["--check", "nope"]));
    assert_eq!(code, 2);
    assert!(err.starts_with("spx-doctor: error: unknown check"), "{err}");
    let (code, _, err) = run(spx().args(["--check", "nope"]).env("SPX_DOCTOR_VIA", "spx"));
    assert_eq!(code, 2);
    assert!(err.starts_with("spx doctor: error: unknown check"), "{err}");
    let (code, _, err) = run(spx().arg("--bogus").env("SPX_DOCTOR_VIA", "spx"));
    assert_eq!(code, 2);
    assert!(err.contains("Usage: spx doctor [OPTIONS]"), "{err}");

    let (_, out, _) = run(spx().args(["explain", "cpu.softirq"]));
    assert!(out.contains("`spx-doctor --for disable-ipsec`"), "{out}");
    let (_, out, _) = run(spx()
        .args(["explain", "cpu.softirq"])
        .env("SPX_DOCTOR_VIA", "spx"));
    assert!(out.contains("`spx doctor --for disable-ipsec`"), "{out}");

    let (_, man, _) = run(spx().arg("man").env("SPX_DOCTOR_VIA", "spx"));
    assert!(man.contains("\\fBspx doctor\\fR [\\fB\\-\\-check"), "{man}");
    // Any other value is not Spinifex's hook.
    let (_, out, _) = run(spx().arg("--help").env("SPX_DOCTOR_VIA", "kubectl"));
    assert!(out.contains("Usage: spx-doctor [OPTIONS]"), "{out}");
}

/// `spx doctor <TAB>` completes through cobra's own completion scripts,
/// which ask the hook, which asks `spx-doctor __complete WORDS…`.
#[test]
fn complete_offers_flags_subcommands_and_check_ids() {
    let (code, out, _) = run(spx().args(["__complete", "--che"]));
    assert_eq!(code, 0);
    assert!(out.lines().any(|l| l.starts_with("--check\t")), "{out}");
    assert_eq!(out.lines().last(), Some(":4"), "no file completion: {out}");
    let (_, out, _) = run(spx().args(["__complete", "--check", "mtu."]));
    let got: Vec<&str> = out.lines().map(|l| l.split('\t').next().unwrap()).collect();
    assert_eq!(got, ["mtu.path", "mtu.overlay", ":4"], "{out}");
    // Each check id comes with its title, from CHECKS.
    let title = spx_checks::CHECKS
        .iter()
        .find(|c| c.id() == "mtu.path")
        .unwrap()
        .title();
    assert!(out.starts_with(&format!("mtu.path\t{title}\n")), "{out}");
    // --help and --version are words to complete, not requests for help.
    for word in ["--help", "-h", "--version", "-V"] {
        let (code, out, _) = run(spx().args(["__complete", word]));
        assert_eq!(code, 0);
        assert!(
            !out.contains("Usage") && !out.contains("0.1"),
            "{word}: {out}"
        );
        assert_eq!(out.lines().last(), Some(":4"), "{word}: {out}");
    }
    let (_, out, _) = run(spx().args(["__complete", "--he"]));
    assert!(out.lines().any(|l| l.starts_with("--help\t")), "{out}");
    // A path is the shell's to complete: no candidates, directive 0.
    for words in [&["--config", "/et"][..], &["-o", ""], &["--output=x"]] {
        let (_, out, _) = run(spx().arg("__complete").args(words));
        assert_eq!(out, ":0\n", "{words:?}");
    }
    let (_, out, _) = run(spx().args(["__complete", "--for", ""]));
    assert!(out.lines().any(|l| l.starts_with("enable-jumbo")), "{out}");
    let (_, out, _) = run(spx().args(["__complete", "ex"]));
    assert!(out.lines().any(|l| l.starts_with("explain\t")), "{out}");
    assert!(!out.contains("__complete"), "hidden: {out}");
}

/// Spinifex's CLI is `spx`: nothing here may build, install or tell an
/// operator to install a binary of that name over it.
#[test]
fn no_binary_named_spx_is_built_or_installed() {
    let root = support::repo_root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("[[bin]]\nname = \"spx-doctor\""),
        "{manifest}"
    );
    assert_eq!(manifest.matches("[[bin]]").count(), 1, "{manifest}");
    assert!(support::bin().ends_with("/spx-doctor"));
    let mut files = vec![root.join("README.md")];
    for dir in [
        "contrib",
        "contrib/systemd",
        "contrib/spinifex",
        "bench",
        "docs",
    ] {
        if let Ok(rd) = std::fs::read_dir(root.join(dir)) {
            files.extend(rd.flatten().map(|e| e.path()).filter(|p| p.is_file()));
        }
    }
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            for bad in [
                "/usr/local/bin/spx ",
                "/usr/local/bin/spx\n",
                "release/spx ",
                "bin/spx`",
            ] {
                assert!(
                    !format!("{line}\n").contains(bad),
                    "{}:{}: installs a binary named spx: {line}",
                    f.display(),
                    n + 1
                );
            }
        }
    }
}
