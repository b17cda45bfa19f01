//! Clear refusals: the bad-input table, `docs/bad-input.md` (kept there once),
//! every row run against the real binary.

use super::unprivileged::{nobody_binary, run_copied};
use super::*;

/// One row: what the operator typed (with a config file's contents, if
/// any), and how the file is made unreadable.
struct BadInput {
    what: &'static str,
    args: &'static [&'static str],
    /// Written to `spinifex.toml` in the working directory.
    config: Option<&'static str>,
    /// Run as uid 65534 with the config file mode 0600 root.
    unreadable: bool,
    /// A bundle `node.spxb` in the working directory, recorded by this
    /// binary, then damaged so.
    bundle: Option<Damage>,
}

/// What is done to the bundle a bad-input row replays.
#[derive(Clone, Copy)]
enum Damage {
    None,
    /// Its second half missing, as a copy interrupted.
    CutShort,
    /// Its gzip checksum (CRC-32, before the length at the end)
    /// overwritten: gzip's own integrity check must catch it.
    Overwritten,
    /// A well-formed bundle whose header says format 2.
    FormatTwo,
}

/// Record `node.spxb` in `dir` and damage it.
fn damaged_bundle(dir: &Path, damage: Damage) {
    let path = dir.join("node.spxb");
    let (code, _, err) = run(spx().current_dir(dir).args([
        "--check",
        "sysctl.udp-buffers",
        "--record",
        "node.spxb",
    ]));
    assert!(code < 2, "{err}");
    let mut bytes = std::fs::read(&path).unwrap();
    match damage {
        Damage::None => {}
        Damage::CutShort => bytes.truncate(bytes.len() / 2),
        Damage::Overwritten => {
            let crc = bytes.len() - 8;
            for b in &mut bytes[crc..crc + 4] {
                *b = !*b;
            }
        }
        Damage::FormatTwo => {
            use std::io::Write;
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(
                b"{\"bundle\":\"spx-doctor bundle\",\"format\":2,\"doctor_version\":\"2.0.0\"}\n",
            )
            .unwrap();
            bytes = gz.finish().unwrap();
        }
    }
    std::fs::write(&path, bytes).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
}

const BAD_INPUT: &[BadInput] = &[
    BadInput {
        what: "malformed config (TOML syntax)",
        args: &["--config", "spinifex.toml"],
        config: Some("node = \"spx1\"\n[network\nipsec_enabled = true\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "mistyped config value",
        args: &["--config", "spinifex.toml"],
        config: Some("node = \"spx1\"\n[network]\nunderlay_mtu = \"9000\"\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "config value out of range",
        args: &["--config", "spinifex.toml"],
        config: Some("[network]\nunderlay_mtu = 70000\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "shell syntax in a config value",
        args: &["--config", "spinifex.toml"],
        config: Some("[nodes.spx1]\nhost = \"$(touch /tmp/pwned)\"\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "control character in a config value",
        args: &["--config", "spinifex.toml"],
        config: Some("node = \"spx1\\nspx2\"\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "bad interface name in the config",
        args: &["--config", "spinifex.toml"],
        config: Some("[nodes.spx1.vpcd]\nexternal_interface = \"br wan\"\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "endpoint without a port in the config",
        args: &["--config", "spinifex.toml"],
        config: Some("[nodes.spx1.vpcd]\novn_nb_addr = \"tcp:198.18.3.181\"\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "missing config file",
        args: &["--config", "nonexistent.toml"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "unreadable config file",
        args: &["--config", "spinifex.toml"],
        config: Some("node = \"spx1\"\n"),
        unreadable: true,
        bundle: None,
    },
    BadInput {
        what: "unknown check",
        args: &["--check", "udp.rcvbuf-eror"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "unknown check to skip",
        args: &["--skip", "nope"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "explain a category",
        args: &["explain", "udp"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "path: not an instance id",
        args: &["path", "i-XYZ", "198.18.1.10"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "path: a node the config does not have",
        args: &["path", "spx9", "spx2", "--config", "spinifex.toml"],
        config: Some("node = \"spx1\"\n[nodes.spx1]\n[nodes.spx2]\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "path: bad --vpc",
        args: &["path", "198.18.1.10", "198.18.1.11", "--vpc", "vpc-$(id)"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "path: --size below range",
        args: &["path", "198.18.1.10", "198.18.1.11", "--size", "60"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "path: --via nats without this node's NATS",
        args: &[
            "path",
            "spx1",
            "spx2",
            "--via",
            "nats",
            "--config",
            "spinifex.toml",
        ],
        config: Some("node = \"spx1\"\n[nodes.spx1]\n[nodes.spx2]\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "--mtu below range",
        args: &["--mtu", "100"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "--mtu above range",
        args: &["--mtu", "70000"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "bad duration",
        args: &["--timeout", "soon"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "zero timeout",
        args: &["--timeout", "0s"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "sample window not shorter than the timeout",
        args: &["--sample", "20s"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "negative probe timeout",
        args: &["--probe-timeout", "-1s"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "interface name with '/'",
        args: &["--interface", "bad/name"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "interface name too long",
        args: &["--interface", "waytoolonginterfacename"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "peer that is shell syntax",
        args: &["--peer", "$(id)"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "unresolvable peer name",
        args: &["--peer", "no-such-host.invalid"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "link-local peer without its interface",
        args: &["--peer", "fe80::2"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "link-local peer on an interface this host lacks",
        args: &["--peer", "fe80::2%nosuchif0"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "scope id on an address that is not link-local",
        args: &["--peer", "198.18.0.2%eth0"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "endpoint without a port",
        args: &["--nb-db", "tcp:127.0.0.1"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "ssl: endpoint",
        args: &["--sb-db", "ssl:127.0.0.1:6642"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "relative unix: socket path",
        args: &["--ovs-db", "unix:relative"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "unknown endpoint kind",
        args: &["--nb-db", "http://198.18.3.181:6641"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "unknown output format",
        args: &["--format", "xml"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "unknown preflight",
        args: &["--for", "enable-everything"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "skipping a check a preflight requires",
        args: &["--for", "enable-jumbo", "--skip", "mtu.path"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "a cluster flag without --cluster",
        args: &["--nodes", "spx1"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "a cluster run on a config without nodes",
        args: &["--cluster", "--config", "spinifex.toml"],
        config: Some("node = \"spx1\"\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "an unknown node",
        args: &["--cluster", "--config", "spinifex.toml", "--nodes", "spx9"],
        config: Some(CLUSTER_CONFIG),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "shell syntax in a node name",
        args: &[
            "--cluster",
            "--config",
            "spinifex.toml",
            "--nodes",
            "spx1;id",
        ],
        config: Some(CLUSTER_CONFIG),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "shell syntax in the ssh user",
        args: &[
            "--cluster",
            "--config",
            "spinifex.toml",
            "--ssh-user",
            "root;id",
        ],
        config: Some(CLUSTER_CONFIG),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "shell syntax in the remote binary",
        args: &[
            "--cluster",
            "--config",
            "spinifex.toml",
            "--remote-bin",
            "spx-doctor;id",
        ],
        config: Some(CLUSTER_CONFIG),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "a missing ssh config",
        args: &[
            "--cluster",
            "--config",
            "spinifex.toml",
            "--ssh-config",
            "nonexistent",
        ],
        config: Some(CLUSTER_CONFIG),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "a cluster timeout that leaves the nodes no sample window",
        args: &[
            "--cluster",
            "--config",
            "spinifex.toml",
            "--timeout",
            "1200ms",
        ],
        config: Some(CLUSTER_CONFIG),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "unknown code to allow",
        args: &["--allow", "nic.rings/shalow-ring"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "allowing a pass",
        args: &["--allow", "nic.rings/ok"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "denying a failure",
        args: &["--deny", "qemu.tuning/no-vhost"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "allowing what a preflight requires",
        args: &[
            "--for",
            "disable-ipsec",
            "--allow",
            "ipsec.flags/stale-nb-ipsec",
        ],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "unknown code in the config",
        args: &["--config", "spinifex.toml"],
        config: Some("[doctor]\nallow = [\"nic.rings/shalow-ring\"]\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "explain an unknown code",
        args: &["explain", "nic.rings/shalow"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "a bundle that is not there",
        args: &["--replay", "nonexistent.spxb"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "a file that is not a bundle",
        args: &["--replay", "spinifex.toml"],
        config: Some("node = \"spx1\"\n"),
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "a bundle cut short (its second half missing)",
        args: &["--replay", "node.spxb"],
        config: None,
        unreadable: false,
        bundle: Some(Damage::CutShort),
    },
    BadInput {
        what: "a damaged bundle (its gzip checksum overwritten)",
        args: &["--replay", "node.spxb"],
        config: None,
        unreadable: false,
        bundle: Some(Damage::Overwritten),
    },
    BadInput {
        what: "a bundle of an unknown format",
        args: &["--replay", "node.spxb"],
        config: None,
        unreadable: false,
        bundle: Some(Damage::FormatTwo),
    },
    BadInput {
        what: "--replay with --record",
        args: &["--replay", "node.spxb", "--record", "again.spxb"],
        config: None,
        unreadable: false,
        bundle: Some(Damage::None),
    },
    BadInput {
        what: "--replay with --cluster",
        args: &["--replay", "node.spxb", "--cluster"],
        config: None,
        unreadable: false,
        bundle: Some(Damage::None),
    },
    BadInput {
        what: "--record with --cluster",
        args: &["--cluster", "--record", "cluster.spxb"],
        config: None,
        unreadable: false,
        bundle: None,
    },
    BadInput {
        what: "--replay with a flag the bundle sets",
        args: &["--replay", "node.spxb", "--peer", "198.18.0.2"],
        config: None,
        unreadable: false,
        bundle: Some(Damage::None),
    },
    BadInput {
        what: "--record into a directory that is not there",
        args: &["--check", "sysctl", "--record", "nonexistent/node.spxb"],
        config: None,
        unreadable: false,
        bundle: None,
    },
];

/// Two nodes, for the cluster rows (refused before any ssh runs).
const CLUSTER_CONFIG: &str =
    "[nodes.spx1]\nhost = \"198.18.3.181\"\n[nodes.spx2]\nhost = \"198.18.3.182\"\n";

/// Run one row in a fresh working directory: (exit code, stdout, stderr).
fn run_bad_input(row: &BadInput) -> (i32, String, String) {
    let dir = world_readable_tempdir();
    if let Some(damage) = row.bundle {
        damaged_bundle(dir.path(), damage);
    }
    if let Some(text) = row.config {
        write_file(
            &dir.path().join("spinifex.toml"),
            text,
            if row.unreadable { 0o600 } else { 0o644 },
        );
    }
    let mut cmd = if row.unreadable {
        let bin = nobody_binary(dir.path());
        let mut c = Command::new("setpriv");
        c.args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
        ])
        .arg(bin);
        c
    } else {
        spx()
    };
    cmd.current_dir(dir.path())
        .env("HOME", "/nonexistent-spx-test-home")
        .env("COLUMNS", "200")
        .args(row.args);
    run_copied(&mut cmd)
}

fn markdown_code(s: &str) -> String {
    // Inline code with a backtick inside needs a longer fence.
    let fence = if s.contains('`') { "`` " } else { "`" };
    let close = if s.contains('`') { " ``" } else { "`" };
    format!("{fence}{}{close}", s.replace('|', "\\|"))
}

fn render_table(rows: &[(String, String, i32)]) -> String {
    let mut doc = String::from(
        "# Bad input: what spx-doctor says\n\n\
         Every refusal goes to stderr, nothing to stdout, and exits 2 (usage or\n\
         config error). The message column is stderr up to clap's \"For more\n\
         information\" hint. Generated by the test\n\
         `hardening::bad_input_table_is_what_spx_says` in `tests/hardening/bad_input.rs`,\n\
         which runs every row against the real binary; after changing a\n\
         message, regenerate with\n\
         `SPX_BLESS=1 cargo test --test tests hardening::bad_input_table_is_what_spx_says`.\n\
         A config file's contents are shown with `⏎` for line ends; the unreadable\n\
         file is mode 0600 root and spx-doctor runs as uid 65534.\n\n\
         | Input | What spx-doctor says | Exit |\n\
         | --- | --- | --- |\n",
    );
    for (input, message, code) in rows {
        doc.push_str(&format!(
            "| {input} | {} | {code} |\n",
            markdown_code(message)
        ));
    }
    doc
}

/// `hardening::bad_input_table_is_what_spx_says` (kept at that path, the
/// one docs/bad-input.md and `SPX_BLESS` name).
pub(super) fn bad_input_table_is_what_spx_says() {
    let mut rows = Vec::new();
    for row in BAD_INPUT {
        let (code, out, err) = run_bad_input(row);
        assert_eq!(code, 2, "{}: {err}", row.what);
        assert!(out.is_empty(), "{}: {out}", row.what);
        // The message: stderr up to clap's "For more information" hint,
        // on one line.
        let first = err
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            first.starts_with("spx-doctor: error: ") || first.starts_with("error: "),
            "{}: {err}",
            row.what
        );
        if first.starts_with("spx-doctor: error: ") {
            assert_eq!(err.lines().count(), 1, "{}: one line: {err}", row.what);
        }
        assert!(!err.contains("panicked"), "{}: {err}", row.what);
        // The list of every check changes as checks land; the table shows
        // its place, not its contents.
        let first = match first.split_once("; valid ids and categories: ") {
            Some((head, list)) => {
                for id in all_ids() {
                    assert!(list.contains(id), "{}: the list lacks {id}", row.what);
                }
                format!("{head}; valid ids and categories: …every check id and category…")
            }
            None => first,
        };
        let mut input = format!(
            "{}: {}",
            row.what,
            markdown_code(&format!("spx-doctor {}", row.args.join(" ")))
        );
        if let Some(text) = row.config {
            input.push_str(&format!(
                " with {}",
                markdown_code(&text.trim_end().replace('\n', "⏎"))
            ));
        }
        rows.push((input, first, code));
    }
    let generated = render_table(&rows);
    let path = support::repo_root().join("docs/bad-input.md");
    if std::env::var_os("SPX_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/bad-input.md is stale: regenerate with \
         `SPX_BLESS=1 cargo test --test tests hardening::bad_input_table_is_what_spx_says`\n\
         generated:\n{generated}"
    );
}
