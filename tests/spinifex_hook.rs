//! The cobra hook, contrib/spinifex/doctor.go, built for real: Debian's Go and
//! cobra (GOPATH mode, offline) compile it with a stand-in for Spinifex's
//! root command (tests/spinifex/root.go: the same persistent flags and
//! Execute), at Spinifex's own import path, and `spx doctor` is run against
//! `spx-doctor` itself.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::support::{self, run, write_config, Netns};
use spx_test_harness::root_test;

const PKG: &str = "github.com/mulgadc/spinifex/cmd/spinifex";
const DEFAULT_PATH: &str = "/usr/local/bin/spx-doctor";

/// The `spx` binaries the tests run, each built with its doctor path.
struct Built {
    /// doctorPath = the spx-doctor cargo built.
    spx: PathBuf,
    /// No -X: the path the hook ships with.
    default: PathBuf,
    /// doctorPath = a file that does not exist.
    missing: PathBuf,
    /// doctorPath = a copy of spx-doctor that others may write.
    writable: PathBuf,
    dir: PathBuf,
}

static BUILT: OnceLock<Result<Built, String>> = OnceLock::new();

fn go_and_cobra_or_skip(test: &str) -> bool {
    let go = Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    let cobra = Path::new("/usr/share/gocode/src/github.com/spf13/cobra").is_dir();
    support::tool_or_skip(
        test,
        "golang-go and golang-github-spf13-cobra-dev",
        go && cobra,
    )
}

/// Go in GOPATH mode, offline, with Debian's packaged sources.
fn go(gopath: &Path, cache: &Path) -> Command {
    let mut cmd = Command::new("go");
    cmd.env("GO111MODULE", "off")
        .env("GOPATH", format!("{}:/usr/share/gocode", gopath.display()))
        .env("GOFLAGS", "")
        .env("GOPROXY", "off")
        .env("GOTOOLCHAIN", "local")
        .env("CGO_ENABLED", "0")
        .env("GOCACHE", cache);
    cmd
}

fn built() -> &'static Built {
    BUILT
        .get_or_init(build)
        .as_ref()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn build() -> Result<Built, String> {
    let root = support::repo_root();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("spinifex-hook");
    let _ = std::fs::remove_dir_all(&dir);
    let gopath = dir.join("gopath");
    let pkg = gopath.join("src").join(PKG);
    std::fs::create_dir_all(pkg.join("cmd")).map_err(|e| e.to_string())?;
    let copy = |from: &str, to: PathBuf| {
        std::fs::copy(root.join(from), to).map_err(|e| format!("{from}: {e}"))
    };
    copy("tests/spinifex/main.go", pkg.join("main.go"))?;
    copy("tests/spinifex/root.go", pkg.join("cmd/root.go"))?;
    copy("contrib/spinifex/doctor.go", pkg.join("cmd/doctor.go"))?;
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("go-cache");

    let vet = go(&gopath, &cache)
        .args(["vet", &format!("{PKG}/cmd")])
        .output()
        .map_err(|e| e.to_string())?;
    if !vet.status.success() {
        return Err(format!(
            "go vet doctor.go: {}",
            String::from_utf8_lossy(&vet.stderr)
        ));
    }

    let writable_doctor = dir.join("writable/spx-doctor");
    std::fs::create_dir_all(writable_doctor.parent().unwrap()).map_err(|e| e.to_string())?;
    std::fs::copy(support::bin(), &writable_doctor).map_err(|e| e.to_string())?;
    std::fs::set_permissions(&writable_doctor, std::fs::Permissions::from_mode(0o777))
        .map_err(|e| e.to_string())?;

    let link = |name: &str, doctor: Option<&Path>| -> Result<PathBuf, String> {
        let out = dir.join(name);
        let mut cmd = go(&gopath, &cache);
        cmd.arg("build").arg("-o").arg(&out);
        if let Some(doctor) = doctor {
            cmd.arg("-ldflags")
                .arg(format!("-X {PKG}/cmd.doctorPath={}", doctor.display()));
        }
        let o = cmd.arg(PKG).output().map_err(|e| e.to_string())?;
        if !o.status.success() {
            return Err(format!(
                "go build {name}: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        Ok(out)
    };
    Ok(Built {
        spx: link("spx", Some(Path::new(support::bin())))?,
        default: link("spx-default", None)?,
        missing: link("spx-missing", Some(&dir.join("no-such/spx-doctor")))?,
        writable: link("spx-writable", Some(&writable_doctor))?,
        dir,
    })
}

/// A built `spx` with the same clean environment as `support::spx()`.
fn spx_at(bin: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_remove("NO_COLOR")
        .env_remove("SPX_DOCTOR_VIA")
        .env_remove("SPINIFEX_CONFIG_PATH")
        .env("HOME", "/nonexistent-spx-test-home");
    cmd
}

fn spx() -> Command {
    spx_at(&built().spx)
}

/// The volatile fields of a JSON report (when it ran, how long it took)
/// set to fixed values, line by line; every other byte is left as it was.
fn normalise(json: &str) -> String {
    json.lines()
        .map(|l| {
            let key = l.trim_start();
            if key.starts_with("\"started_at\": ") {
                format!("{}\"started_at\": \"T\",", &l[..l.len() - key.len()])
            } else if let Some(rest) = key.strip_prefix("\"duration_ms\": ") {
                let comma = if rest.ends_with(',') { "," } else { "" };
                format!("{}\"duration_ms\": 0{comma}", &l[..l.len() - key.len()])
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `spx doctor WORDS` and `spx-doctor WORDS` print the same bytes. The JSON
/// is compared whole, with only `started_at` and `duration_ms` normalised;
/// list and explain byte for byte, apart from the command's own name.
#[test]
fn spx_doctor_prints_what_spx_doctor_prints() {
    if !go_and_cobra_or_skip("spx_doctor_prints_what_spx_doctor_prints") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(
        dir.path(),
        "node = \"spx1\"\n[nodes.spx1]\nhost = \"198.18.0.1\"\n",
    );
    for words in [
        vec!["--check", "sysctl.udp-buffers", "--format", "json"],
        vec![
            "--check",
            "mtu,ipsec.flags",
            "--format",
            "json",
            "--config",
            cfg.to_str().unwrap(),
        ],
    ] {
        let (code, out, err) = run(spx().arg("doctor").args(&words));
        let (dcode, dout, derr) = run(support::spx().args(&words));
        assert_eq!(code, dcode, "{words:?}: {err}");
        assert_eq!(err, derr, "{words:?}");
        assert!(out.starts_with("{\n  \"schema_version\": 1,"), "{out}");
        assert_ne!(normalise(&out), out, "the volatile fields were found");
        assert_eq!(normalise(&out), normalise(&dout), "{words:?}");
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        support::assert_valid(&doc);
    }
    let (code, out, _) = run(spx().args(["doctor", "list"]).env("COLUMNS", "200"));
    let (_, dout, _) = run(support::spx().arg("list").env("COLUMNS", "200"));
    assert_eq!(code, 0);
    assert_eq!(out, dout);
    // The hook says SPX_DOCTOR_VIA=spx: the doctor names itself `spx doctor`.
    let (_, out, _) = run(spx().args(["doctor", "explain", "cpu.softirq"]));
    let (_, dout, _) = run(support::spx().args(["explain", "cpu.softirq"]));
    assert!(out.contains("`spx doctor --for disable-ipsec`"), "{out}");
    assert_eq!(out.replace("`spx doctor", "`spx-doctor"), dout);
}

/// The hook execs the doctor: the process `spx` started is spx-doctor, and a
/// signal sent to it ends the doctor itself.
#[test]
fn the_hook_execs_the_doctor_and_signals_reach_it() {
    if !go_and_cobra_or_skip("the_hook_execs_the_doctor_and_signals_reach_it") {
        return;
    }
    let mut child = spx()
        .args([
            "doctor",
            "--check",
            "udp.rcvbuf-errors",
            "--sample",
            "5s",
            "--timeout",
            "10s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let exe = Path::new(support::bin()).canonicalize().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
        if now.as_deref() == Some(exe.as_path()) {
            break;
        }
        assert!(Instant::now() < deadline, "pid {pid} is still {now:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill has no memory preconditions; pid is our own child.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
}

/// 0, 1 and 2 reach the caller of `spx doctor` unchanged, and equal the
/// doctor's own.
#[root_test]
fn exit_codes_pass_through() {
    const TEST: &str = "exit_codes_pass_through";
    if !go_and_cobra_or_skip(TEST) {
        return;
    }
    let ns = Netns::new();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), support::IPSEC_WANTED_DEAD_DBS);
    let cfg = cfg.to_str().unwrap();
    let cases: [(&[&str], i32); 4] = [
        // No peers to probe: a skip, nothing failed.
        (&["--check", "mtu.path"], 0),
        // IPsec wanted, no SAs in this namespace: a fail.
        (&["--check", "ipsec.xfrm", "--config", cfg], 1),
        // NB and OVS refused: an error, nothing failed.
        (
            &[
                "--check",
                "ipsec.flags",
                "--config",
                cfg,
                "--ovs-db",
                "tcp:127.0.0.1:1",
            ],
            2,
        ),
        // Bad usage.
        (&["--check", "nope"], 2),
    ];
    for (words, want) in cases {
        let mut hook = ns.command(built().spx.to_str().unwrap());
        hook.env_remove("SPX_DOCTOR_VIA")
            .env_remove("SPINIFEX_CONFIG_PATH")
            .env("HOME", "/nonexistent-spx-test-home")
            .arg("doctor")
            .args(words);
        let (code, _, err) = run(&mut hook);
        let (dcode, _, _) = run(ns.spx().args(words));
        assert_eq!(code, want, "spx doctor {words:?}: {err}");
        assert_eq!(dcode, want, "spx-doctor {words:?}");
        if want == 2 && words[1] == "nope" {
            assert!(err.starts_with("spx doctor: error: unknown check"), "{err}");
        }
    }
}

#[test]
fn help_names_spx_doctor() {
    if !go_and_cobra_or_skip("help_names_spx_doctor") {
        return;
    }
    for words in [
        &["doctor", "--help"][..],
        &["help", "doctor"],
        &["doctor", "-h"],
    ] {
        let (code, out, err) = run(spx().args(words));
        assert_eq!(code, 0, "{words:?}: {err}");
        assert!(
            out.contains("Usage: spx doctor [OPTIONS]"),
            "{words:?}: {out}"
        );
        assert!(
            out.contains("--check <LIST>"),
            "the doctor's own help: {out}"
        );
        assert!(!out.contains("spx-doctor"), "{out}");
    }
    // `spx --help` lists the command.
    let (_, out, _) = run(spx().arg("--help"));
    assert!(
        out.lines().any(|l| l.trim_start().starts_with("doctor ")),
        "{out}"
    );
}

/// `spx doctor <TAB>` through cobra's own `__complete`, as its bash, zsh and
/// fish scripts ask it.
#[test]
fn cobra_completes_spx_doctor_through_the_doctor() {
    if !go_and_cobra_or_skip("cobra_completes_spx_doctor_through_the_doctor") {
        return;
    }
    let complete = |words: &[&str]| {
        let (code, out, err) = run(spx().arg("__complete").args(words));
        assert_eq!(code, 0, "{words:?}: {err}");
        let values: Vec<String> = out
            .lines()
            .filter(|l| !l.starts_with(':'))
            .map(|l| l.split('\t').next().unwrap().to_owned())
            .collect();
        let directive = out.lines().last().unwrap_or_default().to_owned();
        (values, directive, out)
    };
    let (values, directive, out) = complete(&["doctor", "--che"]);
    assert_eq!(values, ["--check"], "{out}");
    assert_eq!(directive, ":4", "no file completion: {out}");
    // spx's own --config (offered by cobra) and the doctor's: listed once.
    let (values, _, out) = complete(&["doctor", "--c"]);
    assert_eq!(
        values.iter().filter(|v| *v == "--config").count(),
        1,
        "{out}"
    );
    for want in ["--check", "--color"] {
        assert!(values.iter().any(|v| v == want), "{want}: {out}");
    }
    let (values, _, out) = complete(&["doctor", "--check", "mtu."]);
    assert_eq!(values, ["mtu.path", "mtu.overlay"], "{out}");
    assert!(out.contains("mtu.path\tThe underlay carries"), "{out}");
    let (values, _, out) = complete(&["doctor", "ex"]);
    assert_eq!(values, ["explain"], "{out}");
    let (values, _, out) = complete(&["doctor", "explain", "ipsec."]);
    assert_eq!(
        values,
        [
            "ipsec.flags",
            "ipsec.xfrm",
            "ipsec.cert",
            "ipsec.daemon",
            "ipsec.policy",
            "ipsec.errors"
        ],
        "{out}"
    );
    // After spx's own flags, before `doctor`, too.
    let (values, _, out) = complete(&["--config", "/x.toml", "-v", "doctor", "--for", ""]);
    assert_eq!(
        values,
        ["enable-jumbo", "disable-ipsec", "enable-ipsec"],
        "{out}"
    );
    // A path: the shell's own file completion (cobra's directive 0).
    let (values, directive, out) = complete(&["doctor", "--config", "/et"]);
    assert!(values.is_empty(), "{out}");
    assert_eq!(directive, ":0", "{out}");
}

/// A missing or writable doctor: one line on stderr naming the path, exit 2
/// (inconclusive), and nothing run.
#[test]
fn a_missing_or_unsafe_doctor_is_exit_2_with_the_path() {
    if !go_and_cobra_or_skip("a_missing_or_unsafe_doctor_is_exit_2_with_the_path") {
        return;
    }
    let b = built();
    let missing = b.dir.join("no-such/spx-doctor");
    let (code, out, err) = run(spx_at(&b.missing).args(["doctor", "--check", "sysctl"]));
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert_eq!(
        err,
        format!(
            "spx doctor: error: {0} is not installed: install spx-doctor there (install -m 0755 spx-doctor {0})\n",
            missing.display()
        )
    );
    // Completion says nothing rather than fail.
    let (code, out, _) = run(spx_at(&b.missing).args(["__complete", "doctor", "--che"]));
    assert_eq!(code, 0);
    assert_eq!(
        out.lines().filter(|l| !l.starts_with(':')).count(),
        0,
        "{out}"
    );

    let (code, out, err) = run(spx_at(&b.writable).args(["doctor", "--check", "sysctl"]));
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "the doctor did not run: {out}");
    assert!(
        err.starts_with("spx doctor: error: cannot run ")
            && err.contains("is writable by group or others (mode 0777); refusing to run it"),
        "{err}"
    );

    // As shipped, the hook runs /usr/local/bin/spx-doctor and nothing else.
    let (code, out, err) = run(spx_at(&b.default).args(["doctor", "--version"]));
    if Path::new(DEFAULT_PATH).exists() {
        assert_eq!(code, 0, "{err}");
        assert!(out.starts_with("spx doctor "), "{out}");
    } else {
        assert_eq!(code, 2);
        assert!(
            err.contains(&format!("{DEFAULT_PATH} is not installed")),
            "{err}"
        );
        // Not found on $PATH either, though one is there.
        let path = format!(
            "{}:{}",
            Path::new(support::bin()).parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let (code, _, _) = run(spx_at(&b.default)
            .env("PATH", path)
            .args(["doctor", "--version"]));
        assert_eq!(code, 2, "no $PATH search");
    }
}

/// The config reaches the doctor as Spinifex's `spx` takes it: from
/// SPINIFEX_CONFIG_PATH, and from spx's own --config before `doctor`
/// (the doctor's own --config after `doctor` wins, as a flag wins over the
/// environment).
#[test]
fn the_config_reaches_the_doctor_as_spx_takes_it() {
    if !go_and_cobra_or_skip("the_config_reaches_the_doctor_as_spx_takes_it") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.toml");
    let b = dir.path().join("b.toml");
    std::fs::write(&a, "node = \"from-a\"\n").unwrap();
    std::fs::write(&b, "node = \"from-b\"\n").unwrap();
    let node = |cmd: &mut Command| {
        let (code, out, err) = run(cmd);
        assert!(code == 0 || code == 1, "exit {code}: {err}");
        let doc: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
        doc["node"].clone()
    };
    let json = ["--check", "sysctl", "--format", "json"];
    assert_eq!(
        node(
            spx()
                .arg("doctor")
                .args(json)
                .env("SPINIFEX_CONFIG_PATH", &a)
        ),
        "from-a"
    );
    // `spx --config a.toml doctor --check sysctl --format json`
    let a_then_doctor = || {
        let mut cmd = spx();
        cmd.arg("--config").arg(&a).arg("doctor").args(json);
        cmd
    };
    assert_eq!(node(&mut a_then_doctor()), "from-a");
    assert_eq!(
        node(
            spx()
                .arg(format!("--config={}", a.display()))
                .args(["-v", "--host", "h", "doctor"])
                .args(json)
        ),
        "from-a",
        "spx's other flags before doctor are spx's"
    );
    assert_eq!(
        node(a_then_doctor().env("SPINIFEX_CONFIG_PATH", &b)),
        "from-a",
        "spx's --config wins over the environment, as in spx"
    );
    assert_eq!(
        node(a_then_doctor().arg("--config").arg(&b)),
        "from-b",
        "the doctor's own --config wins"
    );
    // A subcommand after spx's --config still works.
    let (code, out, err) = run(spx().arg("--config").arg(&a).args(["doctor", "list"]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("sysctl.udp-buffers"));
    // A config spx was told about must be there, as for --config.
    let (code, _, err) = run(spx().args([
        "--config",
        "/nonexistent/x.toml",
        "doctor",
        "--check",
        "sysctl",
    ]));
    assert_eq!(code, 2);
    assert!(
        err.starts_with("spx doctor: error: cannot read config /nonexistent/x.toml"),
        "{err}"
    );
}

/// Every way of installing or running the doctor agrees on one path: the
/// hook's default, the setup.sh line in install.md, the Dockerfile line
/// that ships it beside spx, the setup stage and the systemd unit.
#[test]
fn install_lines_put_the_doctor_where_the_hook_looks() {
    let root = support::repo_root();
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    let hook = read("contrib/spinifex/doctor.go");
    assert!(
        hook.contains(&format!("var doctorPath = \"{DEFAULT_PATH}\"\n")),
        "doctor.go's default path"
    );
    let install = read("contrib/spinifex/install.md");
    assert!(
        install.contains(&format!(
            "    $SUDO install -m 0755 \"$EXTRACT_DIR/spx-doctor\" {DEFAULT_PATH}\n"
        )),
        "{install}"
    );
    assert!(install.contains("COPY --from=doctor /out/spx-doctor /out/spx-doctor\n"));
    assert!(install.contains("install -D -m 0755 target/release/spx-doctor /out/spx-doctor\n"));
    assert!(read("contrib/setup-stage.sh").contains(&format!("${{SPX_DOCTOR:-{DEFAULT_PATH}}}")));
    assert!(
        read("contrib/systemd/spx-doctor.service").contains(&format!("ExecStart={DEFAULT_PATH} "))
    );
}
