//! The library's layers, bottom up, and the rule between them: a file may
//! import from its own layer or a lower one, never a higher one. Every file
//! under `checks/src` belongs to exactly one layer, by its path; a file no
//! layer claims fails the test, so a new folder has to be placed.
//!
//! Imports are read from the source: every `use crate::…` (grouped ones
//! expanded), every `crate::…` path in code, and `use super::…` resolved
//! against the file's own module. Each is mapped to the file that defines
//! the module it names (the names `lib.rs` re-exports map to where they are
//! defined). Inside one layer below the top, files must not import each
//! other in a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, bottom up: a name, and the paths (relative to `checks/src`)
/// that belong to it. A path ending in `/` claims a folder; any other
/// claims one file.
const LAYERS: &[(&str, &[&str])] = &[
    // Fact types and their pure parsers, with no I/O: what the host is.
    (
        "facts",
        &[
            "facts/",
            "validate.rs",
            "endpoint.rs",
            "spinifex.rs",
            "natural.rs",
            "hw_captures.rs",
        ],
    ),
    // The verdict's vocabulary: Status, Finding (and how a ProbeError reads
    // as one), kinds, typed evidence, metric types.
    (
        "leaves",
        &[
            "status.rs",
            "finding.rs",
            "kind.rs",
            "evidence.rs",
            "metrics.rs",
        ],
    ),
    // What the run was asked: flags, the config, what it implies, the preflight.
    (
        "settings",
        &[
            "settings.rs",
            "config.rs",
            "expect.rs",
            "site_definition.rs",
        ],
    ),
    // The seam: the Host trait, requests and facts, record and replay.
    ("host", &["host/"]),
    // The syscalls behind LiveHost.
    ("live", &["live/"]),
    // Typed reads over HostRef.
    ("read", &["read/"]),
    // The run a check is given: settings, the host and the clock.
    ("ctx", &["ctx.rs"]),
    // What to look at, from the run: peers, OVSDB endpoints, underlay NICs.
    ("targets", &["targets/"]),
    // The checks, the catalogue, codes, selection, the cluster judges'
    // plumbing and the preflight runbooks (and the tests over all of them).
    (
        "top",
        &[
            "lib.rs",
            "check.rs",
            "checks/",
            // A guest's path: a question of its own beside the checks.
            "path/",
            "catalogue.rs",
            "codes.rs",
            "select.rs",
            "per_interface.rs",
            "profile.rs",
            "profile/",
            "cluster/",
            "replayed_runs/",
            "snapshot.rs",
            "schema_check.rs",
            "seeds.rs",
        ],
    ),
];

/// Upward imports known and owned elsewhere, each with why it is still
/// here: (file, the file it imports). The test fails on one that is gone,
/// so the list only shrinks.
const KNOWN_UPWARD: &[(&str, &str, &str)] = &[];

/// The layer that claims `file` (a path relative to `checks/src`, with `/`).
fn layer_of(file: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, paths)| {
        paths.iter().any(|p| {
            if p.ends_with('/') {
                file.starts_with(p)
            } else {
                file == *p
            }
        })
    })
}

/// The module path of a file: `host/mod.rs` is `["host"]`, `lib.rs` is `[]`.
fn module_of(file: &str) -> Vec<String> {
    let stem = file.strip_suffix(".rs").unwrap_or(file);
    let mut parts: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// An import found in a file: its line and the module path it names (the
/// path's segments after `crate`, resolved if it began with `super`).
#[derive(Debug)]
struct Import {
    line: usize,
    path: Vec<String>,
}

/// Remove comments and the contents of string and char literals, keeping
/// every newline so that line numbers stay right.
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if b[i] == b'\n' {
                            out.push('\n');
                        }
                        i += 1;
                    }
                }
            }
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                // A raw string: r"…", r#"…"#.
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                j += 1;
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                while j < b.len() && !b[j..].starts_with(&close) {
                    if b[j] == b'\n' {
                        out.push('\n');
                    }
                    j += 1;
                }
                out.push_str("\"\"");
                i = j + close.len();
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    if i < b.len() && b[i] == b'\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
                out.push_str("\"\"");
                i += 1;
            }
            b'\'' => {
                // A char literal ('a', '\n', '\''), or a lifetime ('a): a
                // char literal closes within a few bytes.
                let close = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..]
                        .iter()
                        .position(|&c| c == b'\'')
                        .map(|p| i + 2 + p)
                } else if b.get(i + 2) == Some(&b'\'') {
                    Some(i + 2)
                } else {
                    None
                };
                match close {
                    Some(end) if end - i <= 12 => {
                        out.push_str("' '");
                        i = end + 1;
                    }
                    _ => {
                        out.push('\'');
                        i += 1;
                    }
                }
            }
            _ => {
                let ch = src[i..].chars().next().expect("in bounds");
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    out
}

/// Expand a use tree (`a::{b, c::{d, e}}`, `a::b as c`, `a::*`) into paths.
fn expand(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    expand_into(&tree, &mut Vec::new(), &mut out);
    out
}

fn expand_into(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    if let Some(open) = tree.find('{') {
        let head = &tree[..open];
        let inner = &tree[open + 1..tree.rfind('}').expect("balanced braces")];
        let base: Vec<String> = head
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        let depth = prefix.len();
        prefix.extend(base);
        for part in split_top(inner) {
            expand_into(part, prefix, out);
        }
        prefix.truncate(depth);
    } else {
        let tree = tree.split(" as ").next().unwrap_or(tree).trim();
        if tree.is_empty() {
            return;
        }
        let mut path = prefix.clone();
        path.extend(
            tree.split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty() && *s != "*")
                .map(str::to_owned),
        );
        out.push(path);
    }
}

/// Split `a, b::{c, d}, e` at its top-level commas.
fn split_top(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// Every import of `crate` (or, by `super`, of a module above `file`) in
/// the source of `file`.
fn imports(file: &str, src: &str) -> Vec<Import> {
    let code = strip(src);
    let module = module_of(file);
    let inline = inline_mods(&code);
    let mut found = Vec::new();
    // `use` statements, which may span lines and group paths.
    let mut rest = code.as_str();
    let mut offset = 0;
    while let Some(at) = find_word(rest, "use") {
        let start = offset + at;
        let after = &code[start + 3..];
        let Some(end) = after.find(';') else { break };
        let tree = &after[..end];
        let line = code[..start].matches('\n').count() + 1;
        let mut here = module.clone();
        here.extend(
            inline
                .iter()
                .filter(|(from, to, _)| (*from..*to).contains(&start))
                .map(|(_, _, name)| name.clone()),
        );
        for path in expand(tree) {
            if let Some(resolved) = resolve(&here, &path) {
                found.push(Import {
                    line,
                    path: resolved,
                });
            }
        }
        offset = start + 3 + end;
        rest = &code[offset..];
    }
    // `crate::…` paths in code (a `use` line's were read above; reading them
    // again only repeats the same finding).
    for (n, text) in code.lines().enumerate() {
        if text.trim_start().starts_with("use ") || text.trim_start().starts_with("pub use ") {
            continue;
        }
        let mut from = 0;
        while let Some(at) = text[from..].find("crate::") {
            let start = from + at;
            from = start + 7;
            let before = text[..start].chars().next_back();
            if matches!(before, Some(c) if c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            let path: Vec<String> = text[start + 7..]
                .split("::")
                .map(|seg| {
                    seg.chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect::<String>()
                })
                .take_while(|seg| !seg.is_empty())
                .collect();
            if !path.is_empty() {
                found.push(Import { line: n + 1, path });
            }
        }
    }
    found
}

/// The next `use` keyword in `text` (a whole word), as a byte offset.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find(word) {
        let start = from + at;
        let before = text[..start].chars().next_back();
        let after = text[start + word.len()..].chars().next();
        let boundary = |c: Option<char>| !matches!(c, Some(c) if c.is_alphanumeric() || c == '_');
        if boundary(before) && boundary(after) {
            return Some(start);
        }
        from = start + word.len();
    }
    None
}

/// The inline modules of a file (`mod tests { … }`): where each opens and
/// closes, and its name.
fn inline_mods(code: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = find_word(&code[from..], "mod") {
        let start = from + at;
        from = start + 3;
        let rest = &code[from..];
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = rest.trim_start()[name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = code.len() - after.len();
        let mut depth = 0;
        let mut close = code.len();
        for (i, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push((open, close, name));
    }
    out
}

/// A use path as a module path from the crate root, if it names this crate:
/// `module` is the module the `use` stands in.
fn resolve(module: &[String], path: &[String]) -> Option<Vec<String>> {
    match path.first().map(String::as_str) {
        Some("crate") => Some(path[1..].to_vec()),
        Some("super") => {
            let mut base = module.to_vec();
            let mut rest = path;
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            Some(base)
        }
        _ => None,
    }
}

/// The file under `checks/src` that defines the module `path` names (its
/// longest prefix that is a module), given every file there; a name the
/// crate root re-exports maps to the module it comes from.
fn file_of(
    path: &[String],
    files: &BTreeSet<String>,
    reexports: &BTreeMap<String, Vec<String>>,
) -> Option<String> {
    let mut path = path.to_vec();
    if let Some(first) = path.first() {
        if let Some(to) = reexports.get(first) {
            let mut p = to.clone();
            p.extend(path[1..].iter().cloned());
            path = p;
        }
    }
    for n in (1..=path.len()).rev() {
        let stem = path[..n].join("/");
        for candidate in [format!("{stem}.rs"), format!("{stem}/mod.rs")] {
            if files.contains(&candidate) {
                return Some(candidate);
            }
        }
    }
    None
}

/// `pub use a::b::{C, D};` in `lib.rs`: `C` and `D` name `a::b`.
fn root_reexports(lib: &str) -> BTreeMap<String, Vec<String>> {
    let code = strip(lib);
    let mut map = BTreeMap::new();
    for stmt in code.split(';') {
        let stmt = stmt.trim();
        let Some(tree) = stmt.strip_prefix("pub use ") else {
            continue;
        };
        for path in expand(tree) {
            if let Some((name, module)) = path.split_last() {
                map.insert(name.clone(), module.to_vec());
            }
        }
    }
    map
}

/// One import that breaks the rule.
#[derive(Debug, PartialEq, Eq)]
struct Violation {
    file: String,
    line: usize,
    target: String,
    from_layer: &'static str,
    to_layer: &'static str,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "checks/src/{}:{}: {} (layer {}) imports {} (layer {}), a higher layer",
            self.file, self.line, self.file, self.from_layer, self.target, self.to_layer
        )
    }
}

/// What is wrong with these files (path relative to `checks/src`, source):
/// files no layer claims, imports that run up, and circles inside a layer.
#[derive(Debug, Default)]
struct Report {
    unmapped: Vec<String>,
    /// The [`KNOWN_UPWARD`] imports that were seen.
    known: BTreeSet<(String, String)>,
    upward: Vec<Violation>,
    circles: Vec<Vec<String>>,
}

fn check(sources: &BTreeMap<String, String>) -> Report {
    let files: BTreeSet<String> = sources.keys().cloned().collect();
    let reexports = sources
        .get("lib.rs")
        .map(|l| root_reexports(l))
        .unwrap_or_default();
    let mut report = Report::default();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, src) in sources {
        let Some(from) = layer_of(file) else {
            report.unmapped.push(file.clone());
            continue;
        };
        for import in imports(file, src) {
            let Some(target) = file_of(&import.path, &files, &reexports) else {
                continue;
            };
            if &target == file {
                continue;
            }
            let Some(to) = layer_of(&target) else {
                continue;
            };
            let known = KNOWN_UPWARD
                .iter()
                .any(|(f, t, _)| f == file && *t == target);
            if to > from && known {
                report.known.insert((file.clone(), target));
            } else if to > from {
                report.upward.push(Violation {
                    file: file.clone(),
                    line: import.line,
                    target,
                    from_layer: LAYERS[from].0,
                    to_layer: LAYERS[to].0,
                });
            } else if to == from && LAYERS[from].0 != "top" {
                edges.entry(file.clone()).or_default().insert(target);
            }
        }
    }
    report.upward.dedup();
    report.circles = circles(&edges);
    report
}

/// The strongly connected components of more than one file (Tarjan).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(targets) = s.edges.get(v) {
            for w in targets {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let low = s.low[v].min(s.low[w]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w) {
                    let low = s.low[v].min(s.index[w]);
                    s.low.insert(v, low);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn read_tree(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable source folder") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(root)
                    .expect("under the root")
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(
                    rel,
                    std::fs::read_to_string(&path).expect("readable source"),
                );
            }
        }
    }
    out
}

#[test]
fn no_import_runs_from_a_lower_layer_to_a_higher_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let sources = read_tree(&root);
    assert!(sources.len() > 50, "read {} files", sources.len());
    let report = check(&sources);
    let mut problems: Vec<String> = report
        .unmapped
        .iter()
        .map(|f| format!("checks/src/{f}: no layer claims this file (add it to LAYERS)"))
        .collect();
    problems.extend(report.upward.iter().map(ToString::to_string));
    for (file, target, why) in KNOWN_UPWARD {
        if !report
            .known
            .contains(&((*file).to_owned(), (*target).to_owned()))
        {
            problems.push(format!(
                "checks/src/{file} no longer imports {target}: remove it from KNOWN_UPWARD ({why})"
            ));
        }
    }
    problems.extend(report.circles.iter().map(|c| {
        format!(
            "these files of one layer import each other in a circle: {}",
            c.join(", ")
        )
    }));
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

fn tree(files: &[(&str, &str)]) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(f, s)| ((*f).to_owned(), (*s).to_owned()))
        .collect()
}

#[test]
fn the_checker_names_an_upward_import_with_its_line_and_both_layers() {
    let sources = tree(&[
        ("lib.rs", "pub mod facts;\npub mod ctx;\npub use ctx::Ctx;\n"),
        ("ctx.rs", "pub struct Ctx;\n"),
        ("finding.rs", "pub struct Finding;\n"),
        ("host/mod.rs", "pub trait Host {}\n"),
        (
            "facts/mod.rs",
            "//! Uses crate::ctx in a comment only.\nuse std::io;\n\nuse crate::{\n    finding::Finding,\n    host::Host,\n};\nfn f() -> crate::Ctx { let _ = \"crate::ctx\"; todo!() }\n",
        ),
    ]);
    let report = check(&sources);
    assert!(report.unmapped.is_empty(), "{:?}", report.unmapped);
    let found: Vec<String> = report.upward.iter().map(ToString::to_string).collect();
    assert_eq!(
        found,
        [
            "checks/src/facts/mod.rs:4: facts/mod.rs (layer facts) imports finding.rs (layer leaves), a higher layer",
            "checks/src/facts/mod.rs:4: facts/mod.rs (layer facts) imports host/mod.rs (layer host), a higher layer",
            "checks/src/facts/mod.rs:8: facts/mod.rs (layer facts) imports ctx.rs (layer ctx), a higher layer",
        ]
    );
}

#[test]
fn the_checker_reads_super_paths_and_unmapped_files_and_circles() {
    let sources = tree(&[
        ("lib.rs", ""),
        ("ctx.rs", ""),
        ("read/mod.rs", "mod a;\nmod b;\n"),
        ("read/a.rs", "use super::b::B;\npub struct A;\n"),
        (
            "read/b.rs",
            "use super::a::A;\nuse super::super::ctx::Ctx;\npub struct B;\n",
        ),
        ("nowhere.rs", ""),
    ]);
    let report = check(&sources);
    assert_eq!(report.unmapped, ["nowhere.rs"]);
    assert_eq!(report.upward.len(), 1, "{:?}", report.upward);
    assert_eq!(report.upward[0].file, "read/b.rs");
    assert_eq!(report.upward[0].line, 2);
    assert_eq!(report.upward[0].to_layer, "ctx");
    assert_eq!(
        report.circles,
        [["read/a.rs".to_owned(), "read/b.rs".to_owned()]]
    );
    // Downward and same-file imports are fine.
    let fine = check(&tree(&[
        ("lib.rs", ""),
        (
            "facts/mod.rs",
            "pub struct F;\n#[cfg(test)]\nmod tests { use super::*; }\n",
        ),
        ("read/mod.rs", "use crate::facts::F;\n"),
    ]));
    assert!(
        fine.upward.is_empty() && fine.circles.is_empty(),
        "{fine:?}"
    );
}
