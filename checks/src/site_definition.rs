//! A site's own checks: `doctor.d/*.toml` beside the config, one file per
//! check, read before anything runs.
//!
//! An operator's check belongs to one site (the storage network's MTU, a
//! BMC's fans, a corosync ring), so no release ships it; these files make it
//! a check like the built-in ones without recompiling. The file says what to
//! run (an argv, never a shell string), how long it may take, how it answers
//! (the Nagios plugin API or one JSON object), and what `explain` prints.
//!
//! A file that cannot be used is a config error naming the file, line and
//! key, and the run stops (exit 2): a check an operator wrote and the doctor
//! quietly left out would be a gate that is not there. Whether the
//! executable is safe to run is decided when it runs, by the live host, and
//! a refusal is that check's error (`live::site`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::config::{self, ConfigError};
use crate::settings::Preflight;
use crate::status::Status;

/// The folder beside the config that holds the site's checks.
pub const DIR_NAME: &str = "doctor.d";
/// Every site check's id is `site.NAME`.
pub const ID_PREFIX: &str = "site.";
/// The longest a site check may run (its `timeout`).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// At most this many words in `command`, each at most [`MAX_WORD`] bytes.
const MAX_ARGS: usize = 256;
const MAX_WORD: usize = 4096;
/// At most this many site checks: more files is a mistake, not a site.
pub const MAX_CHECKS: usize = 256;

/// How a site check answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// The Nagios plugin API: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN;
    /// the first line of output the summary, `|perfdata` after it.
    Nagios,
    /// One JSON object on stdout (schema/site-check-v1.schema.json).
    Json,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Nagios => "nagios",
            Protocol::Json => "json",
        }
    }
}

/// A code a JSON site check declares (`[codes.NAME]`): its status and what
/// it means, so that `list --codes`, `explain CODE` and `--allow` know it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SiteCode {
    pub name: String,
    pub status: Status,
    pub means: String,
}

/// One `doctor.d` file, read and validated.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SiteDefinition {
    /// The file it was read from.
    pub file: PathBuf,
    /// `site.NAME`.
    pub id: String,
    pub title: String,
    /// The argv: the executable (an absolute path), then its arguments.
    pub command: Vec<String>,
    pub timeout: Duration,
    pub protocol: Protocol,
    /// What `spx-doctor explain ID` prints.
    pub explain: String,
    /// Without root the check is skipped, saying so.
    pub requires_root: bool,
    /// The preflights (`--for`) it is part of.
    pub profiles: Vec<Preflight>,
    /// The steps a warning or a failure names (besides the plugin's own).
    pub fix: Vec<String>,
    /// The JSON protocol's own codes, beside the four every site check has.
    pub codes: Vec<SiteCode>,
    /// The executable's SHA-256 when the file was read (lowercase hex), or
    /// none when it could not be read: what `cluster.config-drift`
    /// compares between nodes.
    #[serde(default)]
    pub executable_sha256: Option<String>,
}

impl SiteDefinition {
    /// The executable: the command's first word.
    pub fn executable(&self) -> &Path {
        Path::new(self.command.first().map_or("", String::as_str))
    }
}

/// The codes every site check has, whichever protocol: the four Nagios
/// states by the names the JSON protocol answers them with too.
pub const STANDARD_CODES: [(&str, Status); 4] = [
    ("ok", Status::Pass),
    ("warning", Status::Warn),
    ("critical", Status::Fail),
    ("unknown", Status::Error),
];

/// The codes the doctor gives a site check that did not answer (it could
/// not be run, or its answer is not one): a JSON check may not declare them.
pub const RUNNER_CODES: [&str; 8] = [
    "refused",
    "cannot-run",
    "bad-exit",
    "killed",
    "timeout",
    "stuck",
    "output-cut",
    "bad-answer",
];

/// The doctor.d folder of a run whose config is (or would be) `config`.
pub fn dir_beside(config: &Path) -> PathBuf {
    match config.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.join(DIR_NAME),
        _ => PathBuf::from(DIR_NAME),
    }
}

/// Every `*.toml` in `dir` (a dot file is an editor's, not a check), in
/// name order, read and validated. No folder: no site checks. Anything
/// else that keeps a file from being read is an error naming it.
pub fn load_dir(dir: &Path) -> Result<Vec<SiteDefinition>, ConfigError> {
    let whole = |path: &Path, message: String| ConfigError {
        path: path.to_owned(),
        line: None,
        column: None,
        key: None,
        message,
    };
    // The files are named absolute, as the live host judges them.
    let dir = &std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(whole(
                dir,
                format!("cannot read the site checks' folder: {e}"),
            ))
        }
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| whole(dir, format!("cannot list: {e}")))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".toml") && !name.starts_with('.') {
            files.push(entry.path());
        }
    }
    files.sort();
    if files.len() > MAX_CHECKS {
        return Err(whole(
            dir,
            format!(
                "{} site check files: at most {MAX_CHECKS} are read",
                files.len()
            ),
        ));
    }
    let mut out: Vec<SiteDefinition> = Vec::new();
    for path in files {
        let bytes = std::fs::read(&path).map_err(|e| whole(&path, format!("cannot read: {e}")))?;
        let text =
            String::from_utf8(bytes).map_err(|e| whole(&path, format!("not UTF-8 text ({e})")))?;
        let def = parse(&text, &path)?;
        if let Some(first) = out.iter().find(|d| d.id == def.id) {
            return Err(ConfigError {
                key: Some("id".into()),
                message: format!("{} is already defined by {}", def.id, first.file.display()),
                ..whole(&path, String::new())
            });
        }
        out.push(def);
    }
    Ok(out)
}

/// The text of one doctor.d file; `path` names it in errors and is kept
/// in the definition.
pub fn parse(text: &str, path: &Path) -> Result<SiteDefinition, ConfigError> {
    let raw: RawSite = config::deserialize(text, path).map_err(|mut e| {
        // serde names a missing key only in its message.
        if e.key.is_none() {
            e.key = missing_field(&e.message);
        }
        e
    })?;
    raw.validate(path)
        .map_err(|(span, key, message)| config::error_at(text, path, span, Some(key), message))
}

/// `missing field `title`` → `title`.
fn missing_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("missing field `")?;
    Some(rest.split('`').next()?.to_owned())
}

type Invalid = (Option<std::ops::Range<usize>>, String, String);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSite {
    id: Spanned<String>,
    title: Spanned<String>,
    command: Spanned<Vec<Spanned<String>>>,
    timeout: Spanned<String>,
    protocol: Spanned<String>,
    explain: Spanned<String>,
    #[serde(default)]
    requires_root: bool,
    #[serde(default)]
    profiles: Vec<Spanned<String>>,
    #[serde(default)]
    fix: Vec<Spanned<String>>,
    #[serde(default)]
    codes: BTreeMap<Spanned<String>, RawCode>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCode {
    status: Spanned<String>,
    means: Spanned<String>,
}

/// One line of text with no control character: a title or a code's meaning.
fn one_line(v: &Spanned<String>, key: &str, max: usize) -> Result<String, Invalid> {
    let s = v.get_ref().trim();
    let bad = |m: String| Err((Some(v.span()), key.to_owned(), m));
    if s.is_empty() {
        return bad("empty".into());
    }
    if s.len() > max {
        return bad(format!("{} bytes; at most {max}", s.len()));
    }
    if s.chars().any(char::is_control) {
        return bad("one line of text without control characters".into());
    }
    Ok(s.to_owned())
}

/// A kebab-case word of at most 64 bytes.
fn name(s: &str) -> Result<(), String> {
    if crate::kind::is_kebab(s) && s.len() <= 64 {
        Ok(())
    } else {
        Err(format!(
            "{} is not a name: lowercase letters, digits and single hyphens, at most 64",
            crate::validate::shown(s)
        ))
    }
}

impl RawSite {
    fn validate(self, path: &Path) -> Result<SiteDefinition, Invalid> {
        let at = |v: &Spanned<String>, key: &str, m: String| (Some(v.span()), key.to_owned(), m);
        let id = self.id.get_ref().trim();
        let suffix = id.strip_prefix(ID_PREFIX).ok_or_else(|| {
            at(
                &self.id,
                "id",
                format!(
                    "{} is not under {ID_PREFIX} (a site check's id is site.NAME)",
                    crate::validate::shown(id)
                ),
            )
        })?;
        name(suffix).map_err(|m| at(&self.id, "id", m))?;
        let title = one_line(&self.title, "title", 200)?;
        let explain = self.explain.get_ref().trim();
        if explain.is_empty() {
            return Err(at(&self.explain, "explain", "empty".into()));
        }
        if explain.len() > 16 * 1024 {
            return Err(at(&self.explain, "explain", "at most 16 KiB".into()));
        }
        let words = self.command.get_ref();
        if words.is_empty() {
            return Err((
                Some(self.command.span()),
                "command".into(),
                "empty: the executable, then its arguments".into(),
            ));
        }
        if words.len() > MAX_ARGS {
            return Err((
                Some(self.command.span()),
                "command".into(),
                format!("{} words; at most {MAX_ARGS}", words.len()),
            ));
        }
        let mut command = Vec::with_capacity(words.len());
        for w in words {
            let s = w.get_ref();
            if w.get_ref().is_empty() && command.is_empty() {
                return Err(at(w, "command", "the executable is empty".into()));
            }
            if s.contains('\0') || s.len() > MAX_WORD {
                return Err(at(
                    w,
                    "command",
                    format!("a word holds a NUL byte or is over {MAX_WORD} bytes"),
                ));
            }
            command.push(s.clone());
        }
        let timeout = humantime::parse_duration(self.timeout.get_ref().trim()).map_err(|e| {
            at(
                &self.timeout,
                "timeout",
                format!("not a duration ({e}); e.g. \"5s\""),
            )
        })?;
        if timeout.is_zero() || timeout > MAX_TIMEOUT {
            return Err(at(
                &self.timeout,
                "timeout",
                format!(
                    "must be more than 0 and at most {}",
                    humantime::format_duration(MAX_TIMEOUT)
                ),
            ));
        }
        let protocol = match self.protocol.get_ref().trim() {
            "nagios" => Protocol::Nagios,
            "json" => Protocol::Json,
            other => {
                return Err(at(
                    &self.protocol,
                    "protocol",
                    format!(
                        "{} is not a protocol: \"nagios\" or \"json\"",
                        crate::validate::shown(other)
                    ),
                ))
            }
        };
        let mut profiles = Vec::new();
        for p in &self.profiles {
            let preflight: Preflight =
                serde_json::from_value(serde_json::Value::String(p.get_ref().trim().to_owned()))
                    .map_err(|_| {
                        let names: Vec<String> = Preflight::ALL
                            .iter()
                            .map(|p| serde_json::to_value(p).map(|v| v.to_string()))
                            .filter_map(Result::ok)
                            .collect();
                        at(
                            p,
                            "profiles",
                            format!(
                                "{} is not a preflight ({})",
                                crate::validate::shown(p.get_ref()),
                                names.join(", ")
                            ),
                        )
                    })?;
            if !profiles.contains(&preflight) {
                profiles.push(preflight);
            }
        }
        let mut fix = Vec::new();
        for f in &self.fix {
            fix.push(one_line(f, "fix", 1024)?);
        }
        if !self.codes.is_empty() && protocol != Protocol::Json {
            let (first, _) = self.codes.iter().next().expect("not empty");
            return Err(at(
                first,
                "codes",
                "only a json check declares its own codes (a nagios check's are its exit states)"
                    .into(),
            ));
        }
        let mut codes = Vec::new();
        for (code, raw) in &self.codes {
            let key = format!("codes.{}", code.get_ref());
            let text = code.get_ref().as_str();
            name(text).map_err(|m| at(code, &key, m))?;
            if STANDARD_CODES.iter().any(|(n, _)| *n == text) || RUNNER_CODES.contains(&text) {
                return Err(at(
                    code,
                    &key,
                    format!("{text} is a code every site check has already"),
                ));
            }
            let status = match raw.status.get_ref().trim() {
                "pass" => Status::Pass,
                "warn" => Status::Warn,
                "fail" => Status::Fail,
                "error" => Status::Error,
                other => {
                    return Err(at(
                        &raw.status,
                        &format!("{key}.status"),
                        format!(
                            "{} is not a status: pass, warn, fail or error",
                            crate::validate::shown(other)
                        ),
                    ))
                }
            };
            codes.push(SiteCode {
                name: text.to_owned(),
                status,
                means: one_line(&raw.means, &format!("{key}.means"), 1024)?,
            });
        }
        Ok(SiteDefinition {
            file: path.to_owned(),
            id: id.to_owned(),
            title,
            command,
            timeout,
            protocol,
            explain: explain.to_owned(),
            requires_root: self.requires_root,
            profiles,
            fix,
            codes,
            executable_sha256: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<SiteDefinition, ConfigError> {
        parse(text, Path::new("/etc/spinifex/doctor.d/storage.toml"))
    }

    const STORAGE: &str = r#"
id = "site.storage-mtu"
title = "The storage network carries 9000"
command = ["/usr/local/lib/spx-doctor/check_storage_mtu", "--mtu", "9000"]
timeout = "5s"
protocol = "nagios"
explain = """
Pings the storage array with DF set at 9000.
"""
profiles = ["enable-jumbo"]
"#;

    #[test]
    fn the_issues_example_reads() {
        let d = p(STORAGE).unwrap();
        assert_eq!(d.id, "site.storage-mtu");
        assert_eq!(d.command.len(), 3);
        assert_eq!(d.timeout, Duration::from_secs(5));
        assert_eq!(d.protocol, Protocol::Nagios);
        assert_eq!(d.profiles, [Preflight::EnableJumbo]);
        assert!(!d.requires_root);
        assert_eq!(d.explain, "Pings the storage array with DF set at 9000.");
        assert_eq!(
            d.executable(),
            Path::new("/usr/local/lib/spx-doctor/check_storage_mtu")
        );
    }

    /// Every refusal names the file and the key, on one line.
    #[test]
    fn a_broken_file_names_the_file_and_the_key() {
        let cases: &[(&str, &str, &str)] = &[
            (r#"id = "storage""#, "id", "not under site."),
            (r#"id = "site.Storage""#, "id", "not a name"),
            (r#"command = "/bin/check --x""#, "command", "invalid type"),
            ("command = []", "command", "empty"),
            (r#"timeout = "soon""#, "timeout", "not a duration"),
            (r#"timeout = "0s""#, "timeout", "more than 0"),
            (r#"protocol = "snmp""#, "protocol", "not a protocol"),
            (
                r#"profiles = ["enable-everything"]"#,
                "profiles",
                "not a preflight",
            ),
            (r#"title = "two\nlines""#, "title", "one line"),
            ("colour = 1", "colour", "unknown field"),
            (
                "[codes.low-mtu]\nstatus = \"fail\"\nmeans = \"x\"",
                "codes",
                "only a json check",
            ),
        ];
        for (change, key, message) in cases {
            let key_of = change.split([' ', '.', '\n']).next().unwrap();
            let text: String = STORAGE
                .lines()
                .filter(|l| !l.starts_with(&format!("{key_of} ")))
                .map(|l| format!("{l}\n"))
                .collect::<String>()
                + change;
            let e = p(&text).unwrap_err();
            let line = e.to_string();
            assert!(
                line.starts_with("/etc/spinifex/doctor.d/storage.toml"),
                "{line}"
            );
            assert!(line.contains(&format!("key `{key}")), "{change}: {line}");
            assert!(line.contains(message), "{change}: {line}");
            assert_eq!(line.lines().count(), 1, "{line}");
        }
        let e = p(&STORAGE.replace("title =", "# title =")).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("title"), "{e}");
        assert!(e.to_string().contains("missing field `title`"), "{e}");
    }

    #[test]
    fn a_json_check_declares_its_own_codes() {
        let text = STORAGE.replace("\"nagios\"", "\"json\"")
            + "[codes.low-mtu]\nstatus = \"fail\"\nmeans = \"The storage path carries less than 9000.\"\n";
        let d = p(&text).unwrap();
        assert_eq!(d.codes[0].name, "low-mtu");
        assert_eq!(d.codes[0].status, Status::Fail);
        let taken = STORAGE.replace("\"nagios\"", "\"json\"")
            + "[codes.critical]\nstatus = \"fail\"\nmeans = \"x\"\n";
        assert!(p(&taken).unwrap_err().to_string().contains("already"));
        let skip = STORAGE.replace("\"nagios\"", "\"json\"")
            + "[codes.gone]\nstatus = \"skip\"\nmeans = \"x\"\n";
        assert!(p(&skip)
            .unwrap_err()
            .to_string()
            .contains("codes.gone.status"));
    }

    #[test]
    fn a_folder_is_read_in_name_order_and_a_second_id_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load_dir(&dir.path().join("none")).unwrap().is_empty());
        std::fs::write(dir.path().join("b.toml"), STORAGE).unwrap();
        std::fs::write(
            dir.path().join("a.toml"),
            STORAGE.replace("storage-mtu", "bmc-fans"),
        )
        .unwrap();
        std::fs::write(dir.path().join(".b.toml.swp"), "junk").unwrap();
        std::fs::write(dir.path().join("README"), "junk").unwrap();
        let defs = load_dir(dir.path()).unwrap();
        let ids: Vec<&str> = defs.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["site.bmc-fans", "site.storage-mtu"]);
        assert_eq!(defs[1].file, dir.path().join("b.toml"));
        std::fs::write(dir.path().join("c.toml"), STORAGE).unwrap();
        let e = load_dir(dir.path()).unwrap_err();
        assert!(
            e.to_string()
                .contains("c.toml: key `id`: site.storage-mtu is already defined by"),
            "{e}"
        );
        std::fs::write(dir.path().join("c.toml"), [0xff, 0xfe]).unwrap();
        assert!(load_dir(dir.path())
            .unwrap_err()
            .to_string()
            .contains("not UTF-8"));
        assert_eq!(
            dir_beside(Path::new("/etc/spinifex/spinifex.toml")),
            Path::new("/etc/spinifex/doctor.d")
        );
        assert_eq!(
            dir_beside(Path::new("spinifex.toml")),
            Path::new("doctor.d")
        );
    }
}
