//! What `FROM` and `TO` may be: an instance (`i-…`), an ENI (`eni-…`), a
//! guest's private IP, or a node of the config (the underlay path alone).
//! Read strictly: each form is recognised by its shape, and a word that is
//! none of them is refused naming what it may be.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::facts::qemu::instance::is_instance_id;
use crate::validate::{self, shown};

/// One end of the path, as the operator named it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "id", rename_all = "kebab-case")]
pub enum EndpointArg {
    /// `i-…`: found on the node whose QEMU runs it.
    Instance(String),
    /// `eni-…`: its logical switch port, `spinifex:eni_id`.
    Eni(String),
    /// A guest's private IP: the logical switch port whose addresses hold it.
    Ip(IpAddr),
    /// A node of the config: the underlay between the nodes alone.
    Node(String),
}

/// An ENI id: `eni-` and 1 to 32 lower-case hex digits.
pub fn is_eni_id(text: &str) -> bool {
    text.strip_prefix("eni-").is_some_and(|hex| {
        !hex.is_empty()
            && hex.len() <= 32
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// A VPC id, as `--vpc` takes it: `vpc-` and 1 to 32 lower-case hex digits.
pub fn is_vpc_id(text: &str) -> bool {
    text.strip_prefix("vpc-").is_some_and(|hex| {
        !hex.is_empty()
            && hex.len() <= 32
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

impl EndpointArg {
    /// Read `text` as one end of the path; `nodes` are the config's
    /// `[nodes.*]` names, which a node endpoint must be one of.
    pub fn parse(text: &str, nodes: &[String]) -> Result<EndpointArg, String> {
        let text = text.trim();
        if text.starts_with("i-") {
            return if is_instance_id(text) {
                Ok(EndpointArg::Instance(text.to_owned()))
            } else {
                Err(format!(
                    "{} is not an instance id (i- and 1 to 32 lower-case hex digits)",
                    shown(text)
                ))
            };
        }
        if text.starts_with("eni-") {
            return if is_eni_id(text) {
                Ok(EndpointArg::Eni(text.to_owned()))
            } else {
                Err(format!(
                    "{} is not an ENI id (eni- and 1 to 32 lower-case hex digits)",
                    shown(text)
                ))
            };
        }
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Ok(EndpointArg::Ip(ip));
        }
        if validate::node_name(text).is_ok() && nodes.iter().any(|n| n == text) {
            return Ok(EndpointArg::Node(text.to_owned()));
        }
        let known = if nodes.is_empty() {
            "the config names no [nodes.*]".to_owned()
        } else {
            format!("the config's nodes: {}", nodes.join(", "))
        };
        Err(format!(
            "{} is not an instance (i-…), an ENI (eni-…), a guest's IP address or a node ({known})",
            shown(text)
        ))
    }

    /// As the operator wrote it.
    pub fn label(&self) -> String {
        match self {
            EndpointArg::Instance(id) | EndpointArg::Eni(id) | EndpointArg::Node(id) => id.clone(),
            EndpointArg::Ip(ip) => ip.to_string(),
        }
    }

    pub fn is_node(&self) -> bool {
        matches!(self, EndpointArg::Node(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_is_known_by_its_shape() {
        let nodes = vec!["spx1".to_owned(), "spx2".to_owned()];
        let p = |t: &str| EndpointArg::parse(t, &nodes);
        assert_eq!(
            p("i-0a1b2c3d4e5f60718"),
            Ok(EndpointArg::Instance("i-0a1b2c3d4e5f60718".into()))
        );
        assert_eq!(
            p("eni-0a11c0ffee0000011"),
            Ok(EndpointArg::Eni("eni-0a11c0ffee0000011".into()))
        );
        assert_eq!(
            p("198.18.1.11"),
            Ok(EndpointArg::Ip("198.18.1.11".parse().unwrap()))
        );
        assert_eq!(
            p("fd00::11"),
            Ok(EndpointArg::Ip("fd00::11".parse().unwrap()))
        );
        assert_eq!(p("spx2"), Ok(EndpointArg::Node("spx2".into())));
        for (bad, says) in [
            ("i-XYZ", "not an instance id"),
            ("eni-../x", "not an ENI id"),
            ("spx9", "the config's nodes: spx1, spx2"),
            ("\u{1b}[2J", "\\u{1b}"),
            ("", "not an instance"),
        ] {
            let e = p(bad).unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
            assert!(!e.contains('\u{1b}'), "{e:?}");
        }
        assert!(EndpointArg::parse("spx1", &[])
            .unwrap_err()
            .contains("names no [nodes.*]"));
        assert!(is_vpc_id("vpc-0f3a9c2e1b7d45a60") && !is_vpc_id("vpc-X"));
    }
}
