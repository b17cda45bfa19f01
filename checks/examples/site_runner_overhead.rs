//! What running a site check costs beyond running the program: the
//! doctor's runner (the StrictModes walk, the cgroup made, joined, killed
//! and removed, the session, the pipes and the bounded read, the kill of
//! the process group, the judgement) against a bare fork, exec and wait
//! of the same program. Both run `/bin/true` `N` times, alternating in
//! rounds so that the machine's load falls on both alike; the medians of
//! the rounds are printed. `bench/site_checks.sh` runs it (release build).
//!
//! ```sh
//! cargo run --release -p spx-checks --example site_runner_overhead -- 2000
//! ```

use std::ffi::CString;
use std::path::Path;
use std::time::{Duration, Instant};

use spx_checks::checks::site::{checks_of, judge};
use spx_checks::live::site::{run, Plugin};
use spx_checks::site_definition::parse;

const ROUNDS: usize = 10;

/// fork(2), execv(2) of /bin/true, waitpid(2): nothing else.
fn bare() {
    let path = CString::new("/bin/true").unwrap();
    let argv = [path.as_ptr(), std::ptr::null()];
    // SAFETY: the child only calls execv and _exit.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            libc::execv(path.as_ptr(), argv.as_ptr());
            libc::_exit(127);
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[allow(clippy::disallowed_macros)] // a benchmark's figures go to its stdout
fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    // The definition must pass the walk: a file of this example's own,
    // under target/ (whose parents are the checkout's).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tmp");
    std::fs::create_dir_all(&dir).unwrap();
    let file = std::fs::canonicalize(&dir).unwrap().join("bench-true.toml");
    let text = "id = \"site.true\"\ntitle = \"true\"\ncommand = [\"/bin/true\"]\n\
                timeout = \"5s\"\nprotocol = \"nagios\"\nexplain = \"/bin/true\"\n";
    std::fs::write(&file, text).unwrap();
    let def = parse(text, &file).unwrap();
    let check = checks_of(std::slice::from_ref(&def))[0];
    let context = serde_json::json!({"version": 1, "check": "site.true", "node": "bench",
        "config": "/etc/spinifex/spinifex.toml", "mtu": {"target": 1500, "underlay": 1500},
        "ipsec_wanted": false, "peers": [], "profile": null});
    let plugin = Plugin {
        check: "site.true",
        definition: &file,
        command: &def.command,
        timeout: def.timeout,
        requires_root: false,
        context: &context,
    };
    let mut isolation = String::new();
    let mut doctor = |deadline: Instant| {
        let r = run(&plugin, Some(deadline)).expect("runs");
        let f = judge(&def, check.declared().kinds, &r);
        assert_eq!(f.summary, "OK (exit 0, no output)", "{f:?}");
        if isolation.is_empty() {
            isolation = serde_json::to_string(&r.isolation).unwrap();
        }
    };
    let per = n / ROUNDS;
    let (mut bare_ms, mut doctor_ms) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let t0 = Instant::now();
        for _ in 0..per {
            bare();
        }
        bare_ms.push(t0.elapsed().as_secs_f64() * 1000.0 / per as f64);
        let t0 = Instant::now();
        let deadline = t0 + Duration::from_secs(3600);
        for _ in 0..per {
            doctor(deadline);
        }
        doctor_ms.push(t0.elapsed().as_secs_f64() * 1000.0 / per as f64);
    }
    let (b, d) = (median(bare_ms), median(doctor_ms));
    println!("runs           {}", per * ROUNDS);
    println!("isolation      {isolation}");
    println!("bare fork/exec/wait of /bin/true   {b:.3} ms");
    println!("site check runner on /bin/true     {d:.3} ms");
    println!("runner overhead per plugin         {:.3} ms", d - b);
    let _ = std::fs::remove_file(&file);
}
