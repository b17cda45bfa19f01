//! The Spinifex node config, `spinifex.toml`, read the way the daemon reads
//! it: unknown tables and keys are ignored (the file has many the doctor
//! does not need), missing keys take the daemon's defaults, and every value
//! the doctor *uses* is validated before anything touches the network.
//!
//! A malformed file or a wrong type is an error that names the file, line,
//! column and key, because that is what an operator needs to fix it.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::endpoint::Endpoint;
use crate::validate;

/// Where Spinifex keeps its config: `/etc/spinifex/spinifex.toml` when
/// `/etc/spinifex` exists, else `~/spinifex/config/spinifex.toml`. Both are
/// returned (system first) because the second reading is uncertain.
pub fn default_paths() -> Vec<PathBuf> {
    let mut paths = vec![PathBuf::from(crate::spinifex::CONFIG_PATH)];
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        paths.push(Path::new(&home).join(crate::spinifex::HOME_CONFIG));
    }
    paths
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, Deserialize)]
pub struct Config {
    /// `node`: this node's name.
    pub node: Option<String>,
    pub network: Network,
    /// `[nodes.NAME]`, sorted by name.
    pub nodes: BTreeMap<String, NodeEntry>,
    /// `[doctor]`: the doctor's own table.
    #[serde(default)]
    pub doctor: Doctor,
}

/// `[doctor]`: levels per code, as `--allow` and `--deny` give them (kept
/// as written: the run resolves them against the catalog together with the
/// flags, in one place), and the doctor's own thresholds.
#[derive(Clone, Debug, PartialEq, serde::Serialize, Deserialize)]
#[serde(default)]
pub struct Doctor {
    /// `allow = ["CODE", …]`: known problems of these kinds pass, with a note.
    pub allow: Vec<RawCode>,
    /// `deny = ["CODE", …]`: warnings of these kinds fail.
    pub deny: Vec<RawCode>,
    /// `cert_warn_days = N`: `ipsec.cert` warns when a certificate expires
    /// within N days ([`DEFAULT_CERT_WARN_DAYS`]).
    pub cert_warn_days: u32,
    /// `interval = "60s"`: how often `spx-doctor agent` runs the checks
    /// by itself, as written (a duration like `--interval`; "0" turns the
    /// periodic runs off). Read with [`Doctor::interval`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
}

/// A code as `[doctor]` writes it (trimmed), and where: not resolved
/// against the catalog here. The run resolves it with `--allow` and
/// `--deny`, and refuses one it does not know at this line and column.
/// Serialized as the text alone (a recorded bundle's config reads back
/// without a position); two are equal when their text is.
#[derive(Clone, Debug, Eq)]
pub struct RawCode {
    pub text: String,
    /// 1-based line and column in the file it was read from.
    pub at: Option<(usize, usize)>,
}

impl RawCode {
    /// The refusal of this code under `key` (`doctor.allow`) of the config
    /// at `path`, at its position.
    pub fn refused(&self, path: &Path, key: &str, message: String) -> ConfigError {
        ConfigError {
            path: path.to_owned(),
            line: self.at.map(|(l, _)| l),
            column: self.at.map(|(_, c)| c),
            key: Some(key.to_owned()),
            message,
        }
    }
}

impl PartialEq for RawCode {
    fn eq(&self, other: &RawCode) -> bool {
        self.text == other.text
    }
}

impl PartialEq<&str> for RawCode {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl serde::Serialize for RawCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.text.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RawCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RawCode, D::Error> {
        Ok(RawCode {
            text: String::deserialize(d)?,
            at: None,
        })
    }
}

/// Days before a certificate's expiry that `ipsec.cert` warns, unless
/// `[doctor] cert_warn_days` says otherwise.
pub const DEFAULT_CERT_WARN_DAYS: u32 = 30;

impl Default for Doctor {
    fn default() -> Doctor {
        Doctor {
            allow: Vec::new(),
            deny: Vec::new(),
            cert_warn_days: DEFAULT_CERT_WARN_DAYS,
            interval: None,
        }
    }
}

impl Doctor {
    /// `interval`, when the table gives one: `Some(ZERO)` turns the
    /// agent's periodic runs off.
    pub fn interval(&self) -> Option<std::time::Duration> {
        self.interval
            .as_deref()
            .and_then(|t| parse_interval(t).ok())
    }
}

/// The longest interval between an agent's periodic runs.
pub const MAX_INTERVAL: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// An interval as `--interval` and `[doctor] interval` take it: a
/// duration (`60s`, `5m`, `1m30s`), `0` for none; at least a second and at
/// most a day.
pub fn parse_interval(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    let d = humantime::parse_duration(text).map_err(|e| {
        format!(
            "{}: not a duration ({e}); e.g. \"60s\", or \"0\" for no periodic runs",
            validate::shown(text)
        )
    })?;
    if d.is_zero() {
        return Ok(d);
    }
    if d < std::time::Duration::from_secs(1) || d > MAX_INTERVAL {
        return Err(format!(
            "{}: an interval is 0 (off) or from 1s to 24h",
            validate::shown(text)
        ));
    }
    Ok(d)
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, Deserialize)]
pub struct Network {
    /// `ipsec_enabled`; a missing key means true.
    pub ipsec_enabled: bool,
    /// `underlay_mtu` as written; a missing key means 1500. See
    /// [`crate::expect::effective_underlay_mtu`] for the floor.
    pub underlay_mtu: u32,
}

#[derive(Clone, Debug, PartialEq, Default, serde::Serialize, Deserialize)]
pub struct NodeEntry {
    /// `host` with any `:port` removed.
    pub host: Option<String>,
    /// `advertise` with any `:port` removed.
    pub advertise: Option<String>,
    pub vpcd: Option<Vpcd>,
}

#[derive(Clone, Debug, PartialEq, Default, serde::Serialize, Deserialize)]
pub struct Vpcd {
    pub ovn_nb_addr: Vec<Endpoint>,
    pub ovn_sb_addr: Vec<Endpoint>,
    pub external_interface: Option<String>,
}

impl Config {
    /// This node's `[nodes.<node>]` entry.
    pub fn this_node(&self) -> Option<&NodeEntry> {
        self.nodes.get(self.node.as_deref()?)
    }

    /// NB endpoints: this node's `vpcd.ovn_nb_addr`, else any node's.
    pub fn nb_endpoints(&self) -> Vec<Endpoint> {
        self.vpcd_list(|v| &v.ovn_nb_addr)
    }

    /// SB endpoints: this node's `vpcd.ovn_sb_addr`, else any node's.
    pub fn sb_endpoints(&self) -> Vec<Endpoint> {
        self.vpcd_list(|v| &v.ovn_sb_addr)
    }

    fn vpcd_list(&self, pick: impl Fn(&Vpcd) -> &Vec<Endpoint>) -> Vec<Endpoint> {
        let mine = self.this_node().and_then(|n| n.vpcd.as_ref()).map(&pick);
        match mine {
            Some(list) if !list.is_empty() => list.clone(),
            _ => self
                .nodes
                .values()
                .filter_map(|n| n.vpcd.as_ref())
                .map(pick)
                .find(|l| !l.is_empty())
                .cloned()
                .unwrap_or_default(),
        }
    }
}

/// A config that could not be used. Its Display is one line:
/// `FILE:LINE:COL: KEY: MESSAGE`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, ":{l}:{c}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": key `{key}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Read and parse a config file. I/O errors are returned as `io::Error` so
/// the caller can tell "missing" and "unreadable" from "malformed".
pub fn load(path: &Path) -> Result<Result<Config, ConfigError>, std::io::Error> {
    let bytes = std::fs::read(path)?;
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return Ok(Err(ConfigError {
                path: path.to_owned(),
                line: None,
                column: None,
                key: None,
                message: format!("not UTF-8 text ({e})"),
            }))
        }
    };
    Ok(parse(&text, path))
}

/// Parse config text. `path` is used only in error messages.
pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
    let raw: RawConfig = deserialize(text, path)?;
    raw.validate(text)
        .map_err(|(span, key, message)| error_at(text, path, span, Some(key), message))
}

/// TOML text deserialized into `T`, or the one-line error that names the
/// file, line, column and key (the doctor.d files are read the same way).
pub(crate) fn deserialize<T: serde::de::DeserializeOwned>(
    text: &str,
    path: &Path,
) -> Result<T, ConfigError> {
    let de = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        // A `Spanned` value adds toml's private field to the path.
        let key = e
            .path()
            .to_string()
            .replace(".$__serde_spanned_private_value", "");
        let key = (!key.is_empty() && key != ".").then_some(key);
        let inner = e.into_inner();
        // toml's messages may span lines; a refusal is one line.
        let message = inner
            .message()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        error_at(text, path, inner.span(), key, message)
    })
}

/// The error at `span` of `text` (the file at `path`), under `key`.
pub(crate) fn error_at(
    text: &str,
    path: &Path,
    span: Option<std::ops::Range<usize>>,
    key: Option<String>,
    message: String,
) -> ConfigError {
    let (line, column) = match span {
        Some(s) => {
            let (l, c) = line_col(text, s.start);
            (Some(l), Some(c))
        }
        None => (None, None),
    };
    ConfigError {
        path: path.to_owned(),
        line,
        column,
        key,
        message,
    }
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

type Invalid = (Option<std::ops::Range<usize>>, String, String);

#[derive(Deserialize)]
struct RawConfig {
    node: Option<Spanned<String>>,
    #[serde(default)]
    network: RawNetwork,
    #[serde(default)]
    nodes: BTreeMap<Spanned<String>, RawNode>,
    #[serde(default)]
    doctor: RawDoctor,
}

/// The doctor's own table: unlike the rest of the file (Spinifex's, with
/// keys the doctor does not know), a key here the doctor does not know is
/// a mistake worth an error.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawDoctor {
    #[serde(default)]
    allow: Vec<Spanned<String>>,
    #[serde(default)]
    deny: Vec<Spanned<String>>,
    cert_warn_days: Option<Spanned<i64>>,
    interval: Option<Spanned<String>>,
}

#[derive(Deserialize, Default)]
struct RawNetwork {
    ipsec_enabled: Option<bool>,
    underlay_mtu: Option<Spanned<i64>>,
}

#[derive(Deserialize, Default)]
struct RawNode {
    host: Option<Spanned<String>>,
    advertise: Option<Spanned<String>>,
    vpcd: Option<RawVpcd>,
}

#[derive(Deserialize, Default)]
struct RawVpcd {
    ovn_nb_addr: Option<Spanned<String>>,
    ovn_sb_addr: Option<Spanned<String>>,
    external_interface: Option<Spanned<String>>,
}

fn check<T>(
    value: &Spanned<String>,
    key: impl FnOnce() -> String,
    f: impl FnOnce(&str) -> Result<T, String>,
) -> Result<T, Invalid> {
    f(value.get_ref()).map_err(|m| (Some(value.span()), key(), m))
}

impl RawConfig {
    fn validate(self, text: &str) -> Result<Config, Invalid> {
        let node = match &self.node {
            Some(n) => Some(check(
                n,
                || "node".into(),
                |s| validate::node_name(s).map(|()| s.to_owned()),
            )?),
            None => None,
        };
        let underlay_mtu = match &self.network.underlay_mtu {
            None => 1500,
            Some(v) => {
                let mtu = *v.get_ref();
                if !(1..=65535).contains(&mtu) {
                    return Err((
                        Some(v.span()),
                        "network.underlay_mtu".into(),
                        format!("{mtu} is not an MTU (1..65535)"),
                    ));
                }
                mtu as u32
            }
        };
        let mut nodes = BTreeMap::new();
        for (name, raw) in self.nodes {
            let n = check(
                &name,
                || "nodes".into(),
                |s| validate::node_name(s).map(|()| s.to_owned()),
            )?;
            let key = |k: &str| format!("nodes.{n}.{k}");
            let host = raw
                .host
                .as_ref()
                .map(|h| check(h, || key("host"), validate::host_maybe_port))
                .transpose()?;
            let advertise = raw
                .advertise
                .as_ref()
                .map(|h| check(h, || key("advertise"), validate::host_maybe_port))
                .transpose()?;
            let vpcd = match raw.vpcd {
                None => None,
                Some(v) => Some(Vpcd {
                    ovn_nb_addr: v
                        .ovn_nb_addr
                        .as_ref()
                        .map(|e| check(e, || key("vpcd.ovn_nb_addr"), Endpoint::parse_list))
                        .transpose()?
                        .unwrap_or_default(),
                    ovn_sb_addr: v
                        .ovn_sb_addr
                        .as_ref()
                        .map(|e| check(e, || key("vpcd.ovn_sb_addr"), Endpoint::parse_list))
                        .transpose()?
                        .unwrap_or_default(),
                    external_interface: v
                        .external_interface
                        .as_ref()
                        .map(|i| {
                            check(
                                i,
                                || key("vpcd.external_interface"),
                                |s| validate::interface(s).map(|()| s.to_owned()),
                            )
                        })
                        .transpose()?,
                }),
            };
            nodes.insert(
                n,
                NodeEntry {
                    host,
                    advertise,
                    vpcd,
                },
            );
        }
        Ok(Config {
            node,
            network: Network {
                ipsec_enabled: self.network.ipsec_enabled.unwrap_or(true),
                underlay_mtu,
            },
            nodes,
            doctor: self.doctor.validate(text)?,
        })
    }
}

impl RawDoctor {
    /// `text` is the file's, for the codes' positions.
    fn validate(self, text: &str) -> Result<Doctor, Invalid> {
        let mut doctor = Doctor::default();
        if let Some(i) = &self.interval {
            check(i, || "doctor.interval".into(), parse_interval)?;
            doctor.interval = Some(i.get_ref().trim().to_owned());
        }
        let raw = |list: &[Spanned<String>]| -> Vec<RawCode> {
            list.iter()
                .map(|c| RawCode {
                    text: c.get_ref().trim().to_owned(),
                    at: Some(line_col(text, c.span().start)),
                })
                .collect()
        };
        doctor.allow = raw(&self.allow);
        doctor.deny = raw(&self.deny);
        if let Some(days) = &self.cert_warn_days {
            let n = *days.get_ref();
            doctor.cert_warn_days = u32::try_from(n)
                .ok()
                .filter(|d| (1..=3650).contains(d))
                .ok_or_else(|| {
                    (
                        Some(days.span()),
                        "doctor.cert_warn_days".to_owned(),
                        format!("{n} is not a number of days from 1 to 3650"),
                    )
                })?;
        }
        Ok(doctor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<Config, ConfigError> {
        parse(text, Path::new("spinifex.toml"))
    }

    // recorded: the schema in spinifex-facts.md, with the extra tables a real
    // node carries.
    const FACTS_EXAMPLE: &str = r#"
version = "1.4.0"
node = "spx1"
[operator]
email = "ops@example.com"
[network]
ipsec_enabled = true
underlay_mtu = 1500
[nodes.spx1]
host = "198.18.3.181"
advertise = "198.18.3.181"
[nodes.spx1.vpcd]
ovn_nb_addr = "tcp:198.18.3.181:6641,tcp:198.18.3.182:6641,tcp:198.18.3.183:6641"
ovn_sb_addr = "tcp:198.18.3.181:6642,tcp:198.18.3.182:6642,tcp:198.18.3.183:6642"
external_interface = "br-wan"
[nodes.spx1.nats]
port = 4222
[nodes.spx2]
host = "198.18.3.182:8443"
"#;

    #[test]
    fn parses_the_documented_schema_and_ignores_unknown_keys() {
        let c = p(FACTS_EXAMPLE).unwrap();
        assert_eq!(c.node.as_deref(), Some("spx1"));
        assert!(c.network.ipsec_enabled);
        assert_eq!(c.network.underlay_mtu, 1500);
        assert_eq!(c.nodes.len(), 2);
        assert_eq!(c.nodes["spx2"].host.as_deref(), Some("198.18.3.182"));
        assert_eq!(c.nb_endpoints().len(), 3);
        assert_eq!(
            c.this_node()
                .unwrap()
                .vpcd
                .as_ref()
                .unwrap()
                .external_interface
                .as_deref(),
            Some("br-wan")
        );
    }

    #[test]
    fn missing_keys_take_the_daemon_defaults() {
        let c = p("node = \"a\"\n").unwrap();
        assert!(c.network.ipsec_enabled, "missing ipsec_enabled means true");
        assert_eq!(c.network.underlay_mtu, 1500);
        assert!(c.nodes.is_empty());
        assert!(p("").is_ok());
    }

    #[test]
    fn wrong_type_names_line_column_and_key() {
        let e = p("node = \"a\"\n[network]\nipsec_enabled = \"yes\"\n").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("network.ipsec_enabled"));
        assert_eq!((e.line, e.column), (Some(3), Some(17)), "{e}");
        assert!(
            e.to_string()
                .starts_with("spinifex.toml:3:17: key `network.ipsec_enabled`"),
            "{e}"
        );
    }

    // Found by tests/hardening.rs's bad-input table (issue 8): a `Spanned`
    // value leaked `$__serde_spanned_private_value` into the key, and
    // toml's two-line messages broke the one-line refusal.
    #[test]
    fn spanned_keys_are_clean_and_messages_one_line() {
        let e = p("[network]\nunderlay_mtu = \"9000\"\n").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("network.underlay_mtu"), "{e}");
        let e = p("node = \"a\"\n[network\n").unwrap_err();
        assert_eq!(e.to_string().lines().count(), 1, "{e}");
    }

    #[test]
    fn the_doctor_table_keeps_codes_as_written_with_their_positions() {
        let c = p(
            "[doctor]\nallow = [\"qemu.tuning/no-vhost\", \"nic.rings/shallow-ring\"]\ndeny = [\"tcp.reordering/reordering-or-loss\"]\n",
        )
        .unwrap();
        assert_eq!(
            c.doctor.allow,
            ["qemu.tuning/no-vhost", "nic.rings/shallow-ring"]
        );
        assert_eq!(c.doctor.deny, ["tcp.reordering/reordering-or-loss"]);
        assert_eq!(p("").unwrap().doctor, Doctor::default());
        // Resolved by the run (src/levels.rs), not here: a typo is kept,
        // with where it was written for the refusal.
        let c = p("node = \"a\"\n[doctor]\nallow = [\" nic.rings/shalow-ring\"]\n").unwrap();
        assert_eq!(c.doctor.allow, ["nic.rings/shalow-ring"]);
        assert_eq!(c.doctor.allow[0].at, Some((3, 10)));
        let e = c.doctor.allow[0].refused(Path::new("spinifex.toml"), "doctor.allow", "no".into());
        assert_eq!(e.to_string(), "spinifex.toml:3:10: key `doctor.allow`: no");
        // A bundle's config reads back as the text alone.
        let back: Doctor =
            serde_json::from_value(serde_json::to_value(&c.doctor).unwrap()).unwrap();
        assert_eq!(back.allow, ["nic.rings/shalow-ring"]);
        assert_eq!(back.allow[0].at, None);
        assert_eq!(p("").unwrap().doctor.cert_warn_days, 30);
        assert_eq!(
            p("[doctor]\ncert_warn_days = 45\n")
                .unwrap()
                .doctor
                .cert_warn_days,
            45
        );
        let e = p("[doctor]\ncert_warn_days = 0\n").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("doctor.cert_warn_days"), "{e}");
        // The doctor's own table knows its keys; the rest of the file stays lenient.
        let e = p("[doctor]\nalow = []\n").unwrap_err();
        assert!(e.message.contains("unknown field `alow`"), "{e}");
        assert!(p("[operator]\nalow = 1\n").is_ok());
    }

    #[test]
    fn the_doctor_table_gives_the_agents_interval() {
        let c = p("[doctor]\ninterval = \"90s\"\n").unwrap();
        assert_eq!(
            c.doctor.interval(),
            Some(std::time::Duration::from_secs(90))
        );
        assert_eq!(
            p("[doctor]\ninterval = \"0\"\n").unwrap().doctor.interval(),
            Some(std::time::Duration::ZERO)
        );
        assert_eq!(p("").unwrap().doctor.interval(), None);
        for bad in ["\"soon\"", "\"10ms\"", "\"2d\"", "60"] {
            let e = p(&format!("[doctor]\ninterval = {bad}\n")).unwrap_err();
            assert!(
                e.to_string().contains("doctor.interval") || e.message.contains("string"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn malformed_toml_names_the_position() {
        let e = p("node = \"a\"\n[network\n").unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
    }

    #[test]
    fn hostile_values_are_refused_with_their_key() {
        for (text, key) in [
            (
                "[nodes.a]\nhost = \"$(touch /tmp/pwned)\"\n",
                "nodes.a.host",
            ),
            (
                "[nodes.a]\nadvertise = \"1.2.3.4; reboot\"\n",
                "nodes.a.advertise",
            ),
            (
                "[nodes.a.vpcd]\novn_nb_addr = \"tcp:`id`:6641\"\n",
                "nodes.a.vpcd.ovn_nb_addr",
            ),
            (
                "[nodes.a.vpcd]\nexternal_interface = \"br wan\"\n",
                "nodes.a.vpcd.external_interface",
            ),
            ("node = \"a\\nb\"\n", "node"),
            ("[network]\nunderlay_mtu = 70000\n", "network.underlay_mtu"),
        ] {
            let e = p(text).unwrap_err();
            assert_eq!(e.key.as_deref(), Some(key), "{text}: {e}");
            assert!(e.line.is_some(), "{e}");
        }
        let long = format!("[nodes.a]\nhost = \"{}\"\n", "a".repeat(10_000));
        assert_eq!(p(&long).unwrap_err().key.as_deref(), Some("nodes.a.host"));
    }
}
