//! Spinifex's NATS bus, as the doctor uses it: where a node's NATS is and
//! how to log in (its `[nodes.<node>.nats]` table, read the way the daemon
//! reads it), the one way to connect (TLS against the config's CA, the
//! shared token), and what a failure to connect was.
//!
//! The token is effectively root on the bus, so it is read here, into
//! [`NatsConfig`] alone: never into the library's `Config` (which a
//! `--record` bundle keeps), never printed, never logged. tokio and
//! async-nats live in this module, the agent and the cluster transport
//! only; the checks stay synchronous.

pub mod bucket;
pub mod events;
pub mod held;
pub mod identity;
pub mod wire;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use spx_checks::validate::{self, shown};

/// The port Spinifex's nats.conf listens on.
pub const DEFAULT_PORT: u16 = 4222;

/// How one node reaches its NATS.
#[derive(Clone)]
pub struct NatsConfig {
    /// The node whose table this is.
    pub node: String,
    /// `host:port` (`[v6]:port`), as the config gives it, with the
    /// default port when it gives none.
    pub server: String,
    /// `cacert`: the CA the server's certificate must chain to.
    pub cacert: Option<PathBuf>,
    /// `acl.token`.
    token: Option<String>,
}

impl std::fmt::Debug for NatsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsConfig")
            .field("node", &self.node)
            .field("server", &self.server)
            .field("cacert", &self.cacert)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

#[derive(Deserialize, Default)]
struct RawFile {
    #[serde(default)]
    nodes: BTreeMap<String, RawNode>,
}

#[derive(Deserialize, Default)]
struct RawNode {
    nats: Option<RawNats>,
}

#[derive(Deserialize, Default)]
struct RawNats {
    host: Option<String>,
    cacert: Option<String>,
    acl: Option<RawAcl>,
}

#[derive(Deserialize, Default)]
struct RawAcl {
    token: Option<String>,
}

impl NatsConfig {
    /// `[nodes.<node>.nats]` of the config at `path` (already read and
    /// validated as a whole by the library): `Ok(None)` when the node has
    /// no such table. Unknown keys are ignored, as the daemon ignores them.
    pub fn read(path: &Path, node: &str) -> Result<Option<NatsConfig>, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        NatsConfig::parse(&text, path, node)
    }

    pub fn parse(text: &str, path: &Path, node: &str) -> Result<Option<NatsConfig>, String> {
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            format!(
                "{}: {}",
                path.display(),
                e.message().split_whitespace().collect::<Vec<_>>().join(" ")
            )
        })?;
        let Some(nats) = raw.nodes.get(node).and_then(|n| n.nats.as_ref()) else {
            return Ok(None);
        };
        let key = |k: &str| format!("{}: nodes.{node}.nats.{k}", path.display());
        let host = nats
            .host
            .as_deref()
            .ok_or_else(|| format!("{}: missing (the node's NATS, host:port)", key("host")))?;
        let server = server_address(host).map_err(|e| format!("{}: {e}", key("host")))?;
        let cacert = match nats.cacert.as_deref() {
            None | Some("") => None,
            Some(c) => {
                validate::plain_text(c).map_err(|e| format!("{}: {e}", key("cacert")))?;
                let p = Path::new(c);
                Some(if p.is_absolute() {
                    p.to_owned()
                } else {
                    path.parent().unwrap_or(Path::new(".")).join(p)
                })
            }
        };
        let token = nats
            .acl
            .as_ref()
            .and_then(|a| a.token.clone())
            .filter(|t| !t.is_empty());
        if let Some(t) = &token {
            if t.len() > 4096 || t.chars().any(|c| c.is_control()) {
                return Err(format!(
                    "{}: not a token (control characters or over 4096 bytes)",
                    key("acl.token")
                ));
            }
        }
        Ok(Some(NatsConfig {
            node: node.to_owned(),
            server,
            cacert,
            token,
        }))
    }

    /// Whether the config gives a token.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// Connect once, within `timeout`, as `name` (what the server's
    /// monitoring shows). Only the configured server is used: servers the
    /// cluster advertises are ignored, as a node talks to its own NATS.
    pub async fn connect(
        &self,
        name: &str,
        timeout: Duration,
        more: impl FnOnce(async_nats::ConnectOptions) -> async_nats::ConnectOptions,
    ) -> Result<async_nats::Client, ConnectFailure> {
        let mut opts = async_nats::ConnectOptions::new()
            .name(name)
            .ping_interval(PING_INTERVAL)
            .connection_timeout(timeout.max(Duration::from_millis(1)))
            .ignore_discovered_servers()
            .reconnect_delay_callback(backoff);
        if let Some(ca) = &self.cacert {
            // Read it here first: a missing CA is named as such, not as a
            // TLS failure of the server.
            std::fs::metadata(ca).map_err(|e| ConnectFailure {
                kind: FailureKind::Tls,
                detail: format!("cannot read the CA certificate {}: {e}", ca.display()),
            })?;
            opts = opts.add_root_certificates(ca.clone()).require_tls(true);
        }
        if let Some(t) = &self.token {
            opts = opts.token(t.clone());
        }
        let opts = more(opts);
        let url = format!("nats://{}", self.server);
        match tokio::time::timeout(timeout, opts.connect(url.as_str())).await {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(e)) => Err(ConnectFailure::of(&e, &self.server)),
            Err(_) => Err(ConnectFailure {
                kind: FailureKind::Connect,
                detail: format!(
                    "no NATS session with {} within {} ms",
                    self.server,
                    timeout.as_millis()
                ),
            }),
        }
    }
}

/// `host[:port]`, `[v6]:port`, `nats://…` or `tls://…` → `host:port`.
fn server_address(text: &str) -> Result<String, String> {
    validate::plain_text(text)?;
    let bare = text
        .strip_prefix("nats://")
        .or_else(|| text.strip_prefix("tls://"))
        .unwrap_or(text);
    let (host, port) = if let Some(rest) = bare.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("{}: unclosed '['", shown(text)))?;
        (h.to_owned(), after.strip_prefix(':'))
    } else if bare.parse::<std::net::Ipv6Addr>().is_ok() {
        (bare.to_owned(), None)
    } else {
        match bare.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (bare.to_owned(), None),
        }
    };
    validate::host(&host)?;
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("{}: bad port {}", shown(text), shown(p)))?,
    };
    Ok(if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    })
}

/// Reconnect delay after `attempts` tries: at once, then 0.5 s doubling to
/// 10 s (the daemon's ConnectNATSWithRetry), less up to a quarter so
/// agents restarted together do not return together. Never more than
/// [`BACKOFF_CAP`]: a node back on the network is back on the bus within
/// the cap and one attempt ([`ATTEMPT_TIMEOUT`]), whatever the jitter.
pub fn backoff(attempts: usize) -> Duration {
    if attempts <= 1 {
        return Duration::ZERO;
    }
    let exp = (attempts - 2).min(16) as u32;
    let base = Duration::from_millis(500)
        .saturating_mul(2u32.saturating_pow(exp))
        .min(BACKOFF_CAP);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    base - base.mul_f64(f64::from(nanos % 1000) / 4000.0)
}

/// The reconnect backoff's cap.
pub const BACKOFF_CAP: Duration = Duration::from_secs(10);

/// One reconnect attempt at most (TCP, TLS, the server's INFO): a LAN
/// handshake takes milliseconds, and an attempt whose SYN was dropped while
/// the network was cut must not hold the next one back past the heal by
/// more than this.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);

/// How often a client pings the server. The client counts a connection
/// dead when two pings in a row got no PONG (async-nats 0.51 fixes that
/// count at 2), so a connection the network silently dropped is noticed
/// within two to three of these, not when TCP's retransmissions give up
/// (their backoff doubles to 2 minutes).
pub const PING_INTERVAL: Duration = Duration::from_secs(3);

/// Why there is no session with NATS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectFailure {
    pub kind: FailureKind,
    /// One line: what the client or the server said.
    pub detail: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// Nothing there, refused, timed out, no route, a name that does not
    /// resolve.
    Connect,
    /// The CA cannot be read, or the server's certificate does not chain
    /// to it (or names another host).
    Tls,
    /// The server refused the token.
    Auth,
}

impl ConnectFailure {
    fn of(e: &async_nats::ConnectError, server: &str) -> ConnectFailure {
        use async_nats::ConnectErrorKind as K;
        // The client's words repeat themselves ("authorization violation:
        // nats: authorization violation"): each part once.
        let mut parts: Vec<String> = Vec::new();
        let mut add = |text: String| {
            for p in text.replace("nats: ", "").split(": ") {
                let p = p.trim();
                if !p.is_empty() && !parts.iter().any(|q| q.eq_ignore_ascii_case(p)) {
                    parts.push(p.to_owned());
                }
            }
        };
        add(e.to_string());
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            add(s.to_string());
            source = s.source();
        }
        let chain = parts.join(": ");
        let lower = chain.to_lowercase();
        let kind = match e.kind() {
            K::AuthorizationViolation | K::Authentication => FailureKind::Auth,
            K::Tls => FailureKind::Tls,
            _ if lower.contains("certificate") || lower.contains("handshake") => FailureKind::Tls,
            _ if lower.contains("authorization violation") => FailureKind::Auth,
            _ => FailureKind::Connect,
        };
        ConnectFailure {
            kind,
            detail: one_line(&format!("NATS at {server}: {chain}")),
        }
    }
}

/// One printable line, at most 300 characters: text from outside (a
/// server's words) never reaches a terminal or the journal as control.
pub fn one_line(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let clean = clean.trim();
    if clean.chars().count() > 300 {
        format!("{}…", clean.chars().take(300).collect::<String>())
    } else {
        clean.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, node: &str) -> Result<Option<NatsConfig>, String> {
        NatsConfig::parse(text, Path::new("/etc/spinifex/spinifex.toml"), node)
    }

    // recorded: the shape spinifex-facts.md gives, with the keys a real
    // node carries beside it.
    const NODE: &str = r#"
node = "spx1"
[nodes.spx1]
host = "192.0.2.181"
[nodes.spx1.nats]
host = "192.0.2.181:4222"
cacert = "/etc/spinifex/ca.pem"
port = 4222
[nodes.spx1.nats.acl]
token = "s3cr3t"
[nodes.spx2]
host = "192.0.2.182"
"#;

    #[test]
    fn reads_the_nodes_nats_table_as_the_daemon_does() {
        let c = parse(NODE, "spx1").unwrap().unwrap();
        assert_eq!(c.server, "192.0.2.181:4222");
        assert_eq!(c.cacert.as_deref(), Some(Path::new("/etc/spinifex/ca.pem")));
        assert!(c.has_token());
        assert!(!format!("{c:?}").contains("s3cr3t"), "{c:?}");
        assert!(parse(NODE, "spx2").unwrap().is_none(), "no table, no NATS");
        assert!(parse("", "spx1").unwrap().is_none());
        let rel = parse("[nodes.a.nats]\nhost = \"h\"\ncacert = \"ca.pem\"\n", "a")
            .unwrap()
            .unwrap();
        assert_eq!(rel.server, "h:4222");
        assert_eq!(
            rel.cacert.as_deref(),
            Some(Path::new("/etc/spinifex/ca.pem"))
        );
        assert!(!rel.has_token());
    }

    #[test]
    fn server_addresses() {
        for (given, want) in [
            ("198.18.0.1", "198.18.0.1:4222"),
            ("198.18.0.1:4333", "198.18.0.1:4333"),
            ("nats://bus.lab:4222", "bus.lab:4222"),
            ("tls://bus.lab", "bus.lab:4222"),
            ("fd00::1", "[fd00::1]:4222"),
            ("[fd00::1]:4223", "[fd00::1]:4223"),
        ] {
            assert_eq!(server_address(given).unwrap(), want, "{given}");
        }
        for bad in [
            "a b:4222",
            "h:0",
            "h:x",
            "[fd00::1",
            "$(id):4222",
            "h:4222\n",
            "",
        ] {
            assert!(server_address(bad).is_err(), "{bad:?}");
        }
        let e = parse("[nodes.a.nats]\ncacert = \"/ca\"\n", "a").unwrap_err();
        assert!(e.contains("nodes.a.nats.host: missing"), "{e}");
        let e = parse("[nodes.a.nats]\nhost = \"-oX=y\"\n", "a").unwrap_err();
        assert!(e.contains("nodes.a.nats.host"), "{e}");
        let e = parse("[nodes.a.nats]\nhost = 7\n", "a").unwrap_err();
        assert!(e.contains("spinifex.toml"), "{e}");
    }

    #[test]
    fn backoff_doubles_to_ten_seconds_never_past_it() {
        assert_eq!(backoff(1), Duration::ZERO);
        let within = |n: usize, base: u64| {
            let d = backoff(n);
            assert!(
                d <= Duration::from_millis(base) && d >= Duration::from_millis(base * 3 / 4),
                "{n}: {d:?}"
            );
            assert!(d <= BACKOFF_CAP);
        };
        within(2, 500);
        within(3, 1000);
        within(4, 2000);
        within(7, 10_000);
        within(1000, 10_000);
    }
}
