//! OVSDB endpoints as Spinifex writes them: `tcp:HOST:PORT`, `unix:PATH`,
//! and comma-separated raft member lists. Parsed once, here, so that no
//! string from the config or a flag reaches a socket unvalidated.

use std::fmt;
use std::path::PathBuf;

use crate::validate;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Tcp {
        host: String,
        port: u16,
    },
    Unix(PathBuf),
    /// Parsed so that it can be refused with a clear message where used.
    Ssl {
        host: String,
        port: u16,
    },
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp { host, port } if host.contains(':') => write!(f, "tcp:[{host}]:{port}"),
            Endpoint::Tcp { host, port } => write!(f, "tcp:{host}:{port}"),
            Endpoint::Ssl { host, port } => write!(f, "ssl:{host}:{port}"),
            Endpoint::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

impl Endpoint {
    pub fn parse(text: &str) -> Result<Endpoint, String> {
        validate::plain_text(text)?;
        let (kind, rest) = text.split_once(':').ok_or_else(|| {
            format!("{text:?} is not an endpoint (expected tcp:HOST:PORT or unix:PATH)")
        })?;
        match kind {
            "unix" => {
                if rest.is_empty() || !rest.starts_with('/') {
                    return Err(format!("{text:?}: unix: needs an absolute socket path"));
                }
                Ok(Endpoint::Unix(PathBuf::from(rest)))
            }
            "tcp" | "ssl" => {
                let (host, port) = split_host_port(rest).ok_or_else(|| {
                    format!("{text:?}: expected {kind}:HOST:PORT (the port is required)")
                })?;
                validate::host(&host).map_err(|e| format!("{text:?}: {e}"))?;
                let port: u16 = port
                    .parse()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| format!("{text:?}: {port:?} is not a port (1..65535)"))?;
                Ok(if kind == "tcp" {
                    Endpoint::Tcp { host, port }
                } else {
                    Endpoint::Ssl { host, port }
                })
            }
            other => Err(format!(
                "{text:?}: unknown endpoint kind {other:?} (expected tcp:HOST:PORT or unix:PATH)"
            )),
        }
    }

    /// A comma-separated list, as in `ovn_nb_addr`.
    pub fn parse_list(text: &str) -> Result<Vec<Endpoint>, String> {
        let list: Result<Vec<_>, _> = text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(Endpoint::parse)
            .collect();
        let list = list?;
        if list.is_empty() {
            return Err("empty endpoint list".into());
        }
        Ok(list)
    }
}

/// Written as an operator writes it (`tcp:HOST:PORT`), as bundles keep it.
impl serde::Serialize for Endpoint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Endpoint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Endpoint, D::Error> {
        let text = String::deserialize(d)?;
        Endpoint::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// An optional endpoint list kept as one comma-separated text (as the
/// flags take it and as bundles keep it), parsed on the way in: for
/// `#[serde(with = "crate::endpoint::opt_list")]`.
pub mod opt_list {
    use super::{join, Endpoint};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Vec<Endpoint>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(list) => s.serialize_some(&join(list)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Endpoint>>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|t| Endpoint::parse_list(&t).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// Join a list back into the form ovn-nbctl's `--db` takes.
pub fn join(list: &[Endpoint]) -> String {
    list.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// `HOST:PORT` or `[V6]:PORT` or a bare IPv6 `a:b::c:PORT` (OVS accepts the
/// last form too: the port is after the last colon).
fn split_host_port(rest: &str) -> Option<(String, &str)> {
    if let Some(v6) = rest.strip_prefix('[') {
        let (host, port) = v6.split_once("]:")?;
        return Some((host.to_owned(), port));
    }
    let (host, port) = rest.rsplit_once(':')?;
    if host.is_empty() || port.is_empty() {
        return None;
    }
    Some((host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms_spinifex_writes() {
        // recorded: spinifex-facts.md, [nodes.spx1.vpcd] ovn_nb_addr
        let list = Endpoint::parse_list("tcp:198.18.3.181:6641,tcp:198.18.3.182:6641").unwrap();
        assert_eq!(
            list[1],
            Endpoint::Tcp {
                host: "198.18.3.182".into(),
                port: 6641
            }
        );
        assert_eq!(
            Endpoint::parse("unix:/var/run/openvswitch/db.sock").unwrap(),
            Endpoint::Unix("/var/run/openvswitch/db.sock".into())
        );
        assert_eq!(
            Endpoint::parse("tcp:[::1]:6641").unwrap().to_string(),
            "tcp:[::1]:6641"
        );
        assert!(matches!(
            Endpoint::parse("ssl:127.0.0.1:6641").unwrap(),
            Endpoint::Ssl { .. }
        ));
        assert_eq!(join(&list), "tcp:198.18.3.181:6641,tcp:198.18.3.182:6641");
    }

    #[test]
    fn refuses_malformed_endpoints() {
        for bad in [
            "tcp:127.0.0.1",
            "tcp:host:",
            "tcp::6641",
            "tcp:127.0.0.1:0",
            "tcp:127.0.0.1:99999",
            "unix:relative.sock",
            "http://x",
            "tcp:$(touch /tmp/x):6641",
            "tcp:a;b:6641",
            "",
        ] {
            assert!(Endpoint::parse_list(bad).is_err(), "{bad:?} accepted");
        }
    }
}
