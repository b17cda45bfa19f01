//! QEMU's option-argument syntax, `key=value,key=value`, as QEMU itself
//! reads it (util/qemu-option.c `opts_do_parse`, util/keyval.c):
//!
//! - `,,` inside a value is a literal comma; a single `,` ends the value.
//! - The first element may omit its key: `-netdev tap,id=n0` means
//!   `type=tap` (each option has its own implied key, see [`implied_key`]).
//! - A later bare `flag` means `flag=on`, and `noflag` means `flag=off`
//!   (the legacy `server,nowait` of chardevs).
//! - Dotted keys (`server.type=inet`) are nested options of `-blockdev`;
//!   the JSON form (`-blockdev '{"driver":"nbd","server":{...}}'`) is
//!   flattened into the same dotted keys, so both spellings compare equal.
//! - When a key repeats, the last one wins.
//!
//! Everything here is a pure function of the text: no I/O, no panics on any
//! input (the parser is fuzzed).

use serde_json::Value;

/// One parsed option argument: the `(key, value)` pairs in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Opts {
    pub pairs: Vec<(String, String)>,
}

/// Why an option argument could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OptsError {
    #[error("invalid JSON in {option}: {detail}")]
    Json { option: String, detail: String },
    #[error("{option}: JSON form must be an object")]
    JsonNotObject { option: String },
}

/// The key QEMU gives a first element written without `key=`.
pub fn implied_key(option: &str) -> Option<&'static str> {
    Some(match option {
        "netdev" | "nic" | "net" | "machine" | "M" | "numa" => "type",
        "device" | "audiodev" => "driver",
        "object" => "qom-type",
        "chardev" => "backend",
        "smp" => "cpus",
        "name" => "guest",
        "mon" => "chardev",
        "accel" => "accel",
        "display" => "type",
        "boot" => "order",
        "m" => "size",
        "cpu" => "model",
        _ => return None,
    })
}

/// Options whose argument may be a JSON object instead of `key=value` text.
fn accepts_json(option: &str) -> bool {
    matches!(
        option,
        "blockdev" | "device" | "object" | "netdev" | "audiodev" | "compat" | "display"
    )
}

impl Opts {
    /// Parse the argument of `-OPTION` (the option name without dashes
    /// decides the implied key and whether JSON is accepted).
    pub fn parse(option: &str, text: &str) -> Result<Opts, OptsError> {
        if accepts_json(option) && text.trim_start().starts_with('{') {
            return Opts::from_json(option, text);
        }
        Ok(Opts::parse_keyval(text, implied_key(option)))
    }

    /// The `key=value,…` text form.
    pub fn parse_keyval(text: &str, implied: Option<&str>) -> Opts {
        let mut pairs = Vec::new();
        let bytes = text.as_bytes();
        let mut pos = 0;
        let mut first = true;
        while pos < bytes.len() {
            // The name runs to the first '=' or ','.
            let name_end = text[pos..]
                .find(['=', ','])
                .map_or(bytes.len(), |i| pos + i);
            let has_value = name_end < bytes.len() && bytes[name_end] == b'=';
            if first && !has_value && implied.is_some() {
                let (value, next) = read_value(text, pos);
                pairs.push((implied.unwrap_or_default().to_owned(), value));
                pos = next;
            } else if has_value {
                let name = text[pos..name_end].to_owned();
                let (value, next) = read_value(text, name_end + 1);
                pairs.push((name, value));
                pos = next;
            } else {
                // A bare flag: `server` → server=on, `nowait` → wait=off.
                let name = &text[pos..name_end];
                if !name.is_empty() {
                    match name.strip_prefix("no") {
                        Some(rest) if !rest.is_empty() => {
                            pairs.push((rest.to_owned(), "off".to_owned()))
                        }
                        _ => pairs.push((name.to_owned(), "on".to_owned())),
                    }
                }
                pos = name_end;
            }
            first = false;
            if pos < bytes.len() && bytes[pos] == b',' {
                pos += 1;
            }
        }
        Opts { pairs }
    }

    /// The JSON form, flattened to dotted keys: numbers as their decimal
    /// text, booleans as `on`/`off`, arrays as `key.0`, `key.1`.
    pub fn from_json(option: &str, text: &str) -> Result<Opts, OptsError> {
        let value: Value = serde_json::from_str(text).map_err(|e| OptsError::Json {
            option: format!("-{option}"),
            detail: e.to_string(),
        })?;
        if !value.is_object() {
            return Err(OptsError::JsonNotObject {
                option: format!("-{option}"),
            });
        }
        let mut pairs = Vec::new();
        flatten("", &value, &mut pairs);
        Ok(Opts { pairs })
    }

    /// The value of `key` (the last one when it repeats).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// A boolean property: `Some(true)` for on/yes/true/y, `Some(false)` for
    /// off/no/false/n, `None` when absent or not a boolean.
    pub fn flag(&self, key: &str) -> Option<bool> {
        parse_bool(self.get(key)?)
    }

    /// An unsigned property (decimal, or `0x` hexadecimal as QEMU accepts).
    pub fn number(&self, key: &str) -> Option<u64> {
        parse_number(self.get(key)?)
    }

    pub fn id(&self) -> Option<&str> {
        self.get("id")
    }

    /// Set `key` (used by `-set`): replaces every earlier value.
    pub fn set(&mut self, key: &str, value: &str) {
        self.pairs.retain(|(k, _)| k != key);
        self.pairs.push((key.to_owned(), value.to_owned()));
    }
}

/// Read a value starting at `pos` up to an unescaped `,`; `,,` is a comma.
/// Returns the value and the position of the terminating comma (or end).
fn read_value(text: &str, mut pos: usize) -> (String, usize) {
    let bytes = text.as_bytes();
    let mut value = String::new();
    let mut run_start = pos;
    while pos < bytes.len() {
        if bytes[pos] == b',' {
            if pos + 1 < bytes.len() && bytes[pos + 1] == b',' {
                value.push_str(&text[run_start..=pos]);
                pos += 2;
                run_start = pos;
                continue;
            }
            break;
        }
        pos += 1;
    }
    value.push_str(&text[run_start..pos]);
    (value, pos)
}

fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_owned()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                flatten(&key(k), v, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                flatten(&key(&i.to_string()), v, out);
            }
        }
        Value::String(s) => out.push((prefix.to_owned(), s.clone())),
        Value::Number(n) => out.push((prefix.to_owned(), n.to_string())),
        Value::Bool(b) => out.push((prefix.to_owned(), if *b { "on" } else { "off" }.to_owned())),
        Value::Null => {}
    }
}

/// QEMU's boolean spellings (qapi_bool_parse).
pub fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "on" | "yes" | "true" | "y" => Some(true),
        "off" | "no" | "false" | "n" => Some(false),
        _ => None,
    }
}

/// Decimal or `0x` hexadecimal.
pub fn parse_number(text: &str) -> Option<u64> {
    let t = text.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(opts: &Opts) -> Vec<(&str, &str)> {
        opts.pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    #[test]
    fn implied_first_key_and_pairs() {
        let o = Opts::parse(
            "netdev",
            "tap,id=net0,ifname=tapeni-1,script=no,vhost=on,queues=4",
        )
        .unwrap();
        assert_eq!(o.get("type"), Some("tap"));
        assert_eq!(o.id(), Some("net0"));
        assert_eq!(o.flag("vhost"), Some(true));
        assert_eq!(o.number("queues"), Some(4));
        let d = Opts::parse("device", "virtio-net-pci,netdev=net0,mq=on,vectors=10").unwrap();
        assert_eq!(d.get("driver"), Some("virtio-net-pci"));
        let s = Opts::parse("smp", "4,sockets=1,cores=4,maxcpus=4").unwrap();
        assert_eq!(s.get("cpus"), Some("4"));
    }

    #[test]
    fn double_comma_is_a_literal_comma() {
        let o = Opts::parse("drive", "file=/var/lib/a,,b.img,format=raw,id=os").unwrap();
        assert_eq!(o.get("file"), Some("/var/lib/a,b.img"));
        assert_eq!(o.get("format"), Some("raw"));
        // Escaped comma in the implied value, and at the very end.
        let n = Opts::parse("name", "web,,1,debug-threads=on").unwrap();
        assert_eq!(n.get("guest"), Some("web,1"));
        let e = Opts::parse("drive", "file=x,,").unwrap();
        assert_eq!(e.get("file"), Some("x,"));
        // Three commas: an escaped comma, then a separator.
        let t = Opts::parse("drive", "file=a,,,id=os").unwrap();
        assert_eq!(kv(&t), [("file", "a,"), ("id", "os")]);
    }

    #[test]
    fn bare_flags_and_no_prefix() {
        let o = Opts::parse("qmp", "path=/run/q.sock,server,nowait").unwrap();
        assert_eq!(o.flag("server"), Some(true));
        assert_eq!(o.flag("wait"), Some(false));
        // Without an implied key the first bare word is a flag too.
        let d = Opts::parse("drive", "snapshot,file=x").unwrap();
        assert_eq!(d.flag("snapshot"), Some(true));
    }

    #[test]
    fn last_value_wins_and_empty_values() {
        let o = Opts::parse("drive", "cache=writeback,cache=none,file=,id=os").unwrap();
        assert_eq!(o.get("cache"), Some("none"));
        assert_eq!(o.get("file"), Some(""));
        assert_eq!(Opts::parse("drive", "").unwrap().pairs, vec![]);
        // Empty names (QEMU rejects them) are dropped, never a panic.
        assert!(Opts::parse("drive", ",,,").unwrap().pairs.is_empty());
        assert_eq!(
            Opts::parse("netdev", ",,,id=x").unwrap().get("type"),
            Some(",")
        );
    }

    #[test]
    fn json_and_dotted_blockdev_are_the_same_keys() {
        // The hot-attach QMP arguments from nbd-performance.md, as -blockdev JSON.
        let json = Opts::parse(
            "blockdev",
            r#"{"node-name":"nbd-vol-abc123","driver":"nbd","server":{"type":"unix","path":"/run/user/1000/nbd-vol-abc123.sock"},"export":"","read-only":false}"#,
        )
        .unwrap();
        let dotted = Opts::parse(
            "blockdev",
            "node-name=nbd-vol-abc123,driver=nbd,server.type=unix,server.path=/run/user/1000/nbd-vol-abc123.sock,export=,read-only=off",
        )
        .unwrap();
        let mut a = json.pairs.clone();
        let mut b = dotted.pairs.clone();
        a.sort();
        b.sort();
        assert_eq!(a, b);
        assert_eq!(
            json.get("server.path"),
            Some("/run/user/1000/nbd-vol-abc123.sock")
        );
        assert_eq!(json.flag("read-only"), Some(false));
    }

    #[test]
    fn json_numbers_arrays_and_errors() {
        let o = Opts::parse(
            "device",
            r#"{"driver":"virtio-blk-pci","num-queues":2,"x":[1,{"a":true}]}"#,
        )
        .unwrap();
        assert_eq!(o.number("num-queues"), Some(2));
        assert_eq!(o.get("x.0"), Some("1"));
        assert_eq!(o.get("x.1.a"), Some("on"));
        assert!(matches!(
            Opts::parse("blockdev", "{\"driver\":"),
            Err(OptsError::Json { .. })
        ));
        // JSON is only read where QEMU reads it: -drive text starting with { is key=value.
        assert_eq!(Opts::parse("drive", "{x").unwrap().flag("{x"), Some(true));
    }

    #[test]
    fn numbers_and_bools() {
        assert_eq!(parse_number("0x100"), Some(256));
        assert_eq!(parse_number("1024"), Some(1024));
        assert_eq!(parse_number("ten"), None);
        assert_eq!(parse_bool("yes"), Some(true));
        assert_eq!(parse_bool("maybe"), None);
    }
}
