//! The harness every integration test uses: run the real `spx-doctor` binary, read
//! its JSON (validated against the committed schema every time), and build
//! throw-away network namespaces that are always removed, even when a test
//! fails (a Drop guard; names are unique so tests run in parallel).

#![allow(dead_code)]

pub mod ethtool_k;
pub mod fabric;
pub mod nats;
pub mod netns;
pub mod otlp;
pub mod ovn_lab;
pub mod ovn_lab_daemon;
pub mod ovsdb_server;
pub mod pki;
pub mod private;
pub mod qemu;
pub mod root;
pub mod site;
pub mod sshd;
pub mod strongswan;
pub mod tmux;
pub mod vm;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

pub use netns::Netns;
pub use root::{is_root, root_or_skip};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_spx-doctor")
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The real binary with a clean environment: no config found unless a test
/// passes `--config`, no colour.
pub fn spx() -> Command {
    let mut cmd = Command::new(bin());
    cmd.env_remove("NO_COLOR")
        .env_remove("SPX_DOCTOR_VIA")
        .env_remove("SPINIFEX_CONFIG_PATH")
        .env("HOME", "/nonexistent-spx-test-home");
    cmd
}

/// Run and return (exit code, stdout, stderr).
pub fn run(cmd: &mut Command) -> (i32, String, String) {
    let out: Output = cmd.output().expect("run spx");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Run with `--format json`, parse, validate against the schema and check
/// that the document's `exit_code` is the process's. Every such run also
/// records a bundle (`--record`), and its replay must give the same report
/// ([`assert_replays`]): the live and the replayed verdicts never drift.
pub fn run_json(cmd: &mut Command) -> (i32, Value) {
    let (_dir, bundle) = record(cmd);
    let (code, doc) = run_doc(cmd, assert_valid);
    let via = cmd
        .get_envs()
        .find(|(k, _)| *k == "SPX_DOCTOR_VIA")
        .and_then(|(_, v)| v.map(ToOwned::to_owned));
    assert_replays(&bundle, &doc, via.as_deref());
    (code, doc)
}

/// [`run`] a doctor command line in any `--format` (the report on
/// stdout) with `--record`, replay the bundle with the same presentation
/// (`--format`, `-v`, `--color`, `--width`, `COLUMNS`, `SPX_DOCTOR_VIA`) and assert the
/// replay prints the same report, byte for byte (a table's closing lines
/// that name the bundle aside).
pub fn run_replayed(cmd: &mut Command) -> (i32, String, String) {
    let (_dir, bundle) = record(cmd);
    let (code, out, err) = run(cmd);
    assert!(code < 2 || !out.is_empty(), "no report to replay: {err}");
    let mut replay = spx();
    for (k, v) in cmd.get_envs() {
        if let ("SPX_DOCTOR_VIA" | "COLUMNS" | "NO_COLOR", Some(v)) = (k.to_str().unwrap_or(""), v)
        {
            replay.env(k, v);
        }
    }
    let args: Vec<&std::ffi::OsStr> = cmd.get_args().collect();
    for (i, a) in args.iter().enumerate() {
        match a.to_str() {
            Some("--format" | "--color" | "--width") => {
                replay.arg(a).arg(args[i + 1]);
            }
            Some("-v" | "--verbose") => {
                replay.arg(a);
            }
            _ => {}
        }
    }
    replay.arg("--replay").arg(&bundle);
    let (rcode, rout, rerr) = run(&mut replay);
    assert_eq!(rcode, code, "{rerr}");
    // The lines naming the bundle, each with the lines it wrapped onto
    // (indented under it).
    let mut naming = false;
    let rout: String = rout
        .lines()
        .filter(|l| {
            naming = l.starts_with("replayed from ")
                || l.starts_with("replay: ")
                || (naming && l.starts_with("  "));
            !naming
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(rout, out, "the replay prints another report");
    (code, out, err)
}

/// [`run_json`] without the recording: for replays themselves, and runs
/// that record on their own.
pub fn run_json_unrecorded(cmd: &mut Command) -> (i32, Value) {
    run_doc(cmd, assert_valid)
}

/// A bundle's JSON lines, decompressed: what a support engineer would read
/// (and grep for secrets).
pub fn bundle_text(path: &Path) -> String {
    use std::io::Read;
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text
}

/// Add `--record FILE` to a doctor command line (the doctor's arguments
/// last, as every wrapper here puts them): the temp dir that holds FILE
/// (keep it alive) and FILE.
pub fn record(cmd: &mut Command) -> (tempfile::TempDir, PathBuf) {
    let dir = bundle_dir();
    let bundle = dir.path().join("run.spxb");
    cmd.arg("--record").arg(&bundle);
    (dir, bundle)
}

/// A temp dir any user may write a bundle into (runs as nobody record too).
pub fn bundle_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("spx-bundle-")
        .tempdir()
        .expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777))
        .expect("chmod temp dir");
    dir
}

/// Replay `bundle` (as the user running the tests, outside any namespace
/// or VM the live run was in, touching nothing) and assert the report is
/// `live`, field for field, plus `replayed_from`. The bundle carries the
/// run's settings and policy; only `SPX_DOCTOR_VIA` (how messages name the
/// command: the invocation's, not the host's) carries over.
pub fn assert_replays(bundle: &Path, live: &Value, via: Option<&std::ffi::OsStr>) {
    let mut replay = spx();
    if let Some(via) = via {
        replay.env("SPX_DOCTOR_VIA", via);
    }
    replay.arg("--replay").arg(bundle);
    let (code, mut doc) = run_doc(&mut replay, assert_valid);
    let from = doc
        .as_object_mut()
        .and_then(|d| d.remove("replayed_from"))
        .unwrap_or_else(|| panic!("a replay names its bundle: {doc:#}"));
    assert_eq!(from["bundle"], bundle.display().to_string(), "{from:#}");
    if doc != *live {
        let kept = std::env::temp_dir().join(format!(
            "spx-replay-drift-{}-{}.spxb",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        let _ = std::fs::copy(bundle, &kept);
        panic!(
            "the replay of the recorded run (kept at {}) differs from the live report: {}\nlive: {live:#}\nreplayed: {doc:#}",
            kept.display(),
            drift(live, &doc).join("; ")
        );
    }
    assert_eq!(code, live["exit_code"]);
}

/// Where two reports differ: top-level fields and check ids.
fn drift(live: &Value, replayed: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let (Some(a), Some(b)) = (live.as_object(), replayed.as_object()) else {
        return vec!["not objects".into()];
    };
    for (k, v) in a {
        if k == "checks" {
            let empty = Vec::new();
            let theirs = b.get(k).and_then(Value::as_array).unwrap_or(&empty);
            for c in v.as_array().unwrap_or(&empty) {
                match theirs.iter().find(|t| t["id"] == c["id"]) {
                    Some(t) if t == c => {}
                    Some(t) => out.push(format!("check {}: live {c} replayed {t}", c["id"])),
                    None => out.push(format!("check {} missing from the replay", c["id"])),
                }
            }
        } else if b.get(k) != Some(v) {
            out.push(format!("{k}: live {v} replayed {:?}", b.get(k)));
        }
    }
    for k in b.keys().filter(|k| !a.contains_key(*k)) {
        out.push(format!("{k} only in the replay"));
    }
    out
}

fn run_doc(cmd: &mut Command, validate: fn(&Value)) -> (i32, Value) {
    cmd.args(["--format", "json"]);
    let (code, stdout, stderr) = run(cmd);
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("not JSON ({e}); exit {code}; stdout: {stdout}; stderr: {stderr}")
    });
    validate(&doc);
    assert_eq!(
        doc["exit_code"], code,
        "JSON exit_code vs process; stderr: {stderr}"
    );
    (code, doc)
}

/// Run a program with `input` on its stdin: its output.
pub fn run_with_stdin(cmd: &mut Command, input: &str) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// The check object with this id.
pub fn check<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["checks"]
        .as_array()
        .expect("checks array")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id} in {doc}"))
}

/// A JSON array of strings (a check's remediation, problems, …).
pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

static SCHEMA: OnceLock<jsonschema::Validator> = OnceLock::new();
static CLUSTER_SCHEMA: OnceLock<jsonschema::Validator> = OnceLock::new();
static PATH_SCHEMA: OnceLock<jsonschema::Validator> = OnceLock::new();

fn schema_file(name: &str) -> Value {
    let path = repo_root().join("schema").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).expect("schema file"))
        .expect("schema JSON")
}

fn assert_matches(validator: &jsonschema::Validator, schema: &str, doc: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "JSON does not match schema/{schema}: {errors:#?}\n{doc:#}"
    );
    // What the schema cannot say: every result of this version has a code,
    // its check's own, and so does every finding.
    for c in doc["checks"].as_array().into_iter().flatten() {
        let prefix = format!("{}/", c["id"].as_str().unwrap_or_default());
        let code = c["code"].as_str().unwrap_or_default();
        assert!(code.starts_with(&prefix), "code {code:?} of {c:#}");
        for f in c["findings"].as_array().expect("findings").iter() {
            let code = f["code"].as_str().unwrap_or_default();
            assert!(code.starts_with(&prefix), "finding code {code:?} of {c:#}");
        }
    }
}

pub fn assert_valid(doc: &Value) {
    let validator = SCHEMA.get_or_init(|| {
        jsonschema::validator_for(&schema_file("report-v1.schema.json")).expect("valid schema")
    });
    assert_matches(validator, "report-v1.schema.json", doc);
}

/// The validator of schema/`name`, which refers to
/// schema/report-v1.schema.json (given to it as a resource by its `$id`).
fn beside_the_report(name: &str) -> jsonschema::Validator {
    let node = schema_file("report-v1.schema.json");
    let id = node["$id"].as_str().expect("$id").to_owned();
    jsonschema::options()
        .with_resource(
            id,
            jsonschema::Resource::from_contents(node).expect("resource"),
        )
        .build(&schema_file(name))
        .expect("valid schema")
}

/// Validate a cluster report against schema/cluster-report-v1.schema.json,
/// which holds every node's report to schema/report-v1.schema.json.
pub fn assert_valid_cluster(doc: &Value) {
    let validator =
        CLUSTER_SCHEMA.get_or_init(|| beside_the_report("cluster-report-v1.schema.json"));
    assert_matches(validator, "cluster-report-v1.schema.json", doc);
}

/// Validate a `path` document against schema/path-v1.schema.json, which
/// takes the tool and status from schema/report-v1.schema.json.
pub fn assert_valid_path(doc: &Value) {
    let validator = PATH_SCHEMA.get_or_init(|| beside_the_report("path-v1.schema.json"));
    assert_matches(validator, "path-v1.schema.json", doc);
}

/// Run `spx-doctor path … --format json`: parse, validate against the path
/// schema, check the document's exit code is the process's.
pub fn run_path_json(cmd: &mut Command) -> (i32, Value) {
    run_doc(cmd, assert_valid_path)
}

/// Run a cluster run with `--format json`: parse, validate against the
/// cluster schema, check the document's exit code is the process's.
pub fn run_cluster_json(cmd: &mut Command) -> (i32, Value) {
    run_doc(cmd, assert_valid_cluster)
}

/// True when a tool a test needs (`what`) is `available`. Otherwise prints
/// the skip reason locally, and fails the test under CI=true, where .ci/run
/// has installed it.
#[allow(clippy::disallowed_macros)] // the skip reason belongs in the test log
pub fn tool_or_skip(test: &str, what: &str, available: bool) -> bool {
    if available {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{test} needs {what} and CI=true: .ci/run installs it, so it must run here");
    }
    println!("skipping {test}: needs {what} (bash .ci/run installs it)");
    false
}

/// A two-node config that wants IPsec, whose NB and SB are a closed
/// loopback port (in a test's own namespace: refused, never anyone else's).
pub const IPSEC_WANTED_DEAD_DBS: &str = r#"node = "spx1"
[network]
ipsec_enabled = true
[nodes.spx1]
host = "198.18.7.1"
[nodes.spx1.vpcd]
ovn_nb_addr = "tcp:127.0.0.1:1"
ovn_sb_addr = "tcp:127.0.0.1:1"
[nodes.spx2]
host = "198.18.7.2"
"#;

/// A UDP socket on loopback with the smallest receive buffer the kernel
/// allows, never read: datagrams sent to it are dropped and counted as
/// RcvbufErrors. Call on a thread inside the test's namespace.
pub fn tiny_udp_receiver() -> (socket2::Socket, std::net::SocketAddr) {
    let rx = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).unwrap();
    rx.set_recv_buffer_size(1).unwrap();
    rx.bind(
        &"127.0.0.1:0"
            .parse::<std::net::SocketAddr>()
            .unwrap()
            .into(),
    )
    .unwrap();
    let to = rx.local_addr().unwrap().as_socket().unwrap();
    (rx, to)
}

/// A config file in a temp dir.
pub fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("spinifex.toml");
    std::fs::write(&path, text).expect("write config");
    path
}

/// Run a remediation command exactly as printed (`prog args… # comment`),
/// without a shell: the printed command must work as is.
pub fn run_remediation(step: &str) {
    let cmd = step.split("   #").next().unwrap().trim();
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for ch in cmd.chars() {
        match ch {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    words.push(cur);
    let out = std::process::Command::new(&words[0])
        .args(&words[1..])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
