//! OVSDB's JSON encoding of column values (RFC 7047 §5.1): atoms, sets
//! (`["set", [...]]`, or a bare atom for a one-element set) and maps
//! (`["map", [[k, v], ...]]`). Decoding is strict about shape so that a
//! wrong table or a future schema change shows up as an error, not as a
//! silently missing value.

use serde_json::{Map, Value};

/// A map column (`options`, `other_config`, `external_ids`) with string
/// keys and values.
pub fn string_map(v: &Value) -> Result<Vec<(String, String)>, String> {
    let pairs = match v {
        Value::Array(a) if a.len() == 2 && a[0] == "map" => a[1]
            .as_array()
            .ok_or_else(|| format!("map body is not an array: {v}"))?,
        other => return Err(format!("not an OVSDB map: {other}")),
    };
    pairs
        .iter()
        .map(|p| match p.as_array().map(Vec::as_slice) {
            Some([Value::String(k), Value::String(val)]) => Ok((k.clone(), val.clone())),
            _ => Err(format!("map entry is not a [string, string] pair: {p}")),
        })
        .collect()
}

/// The value of `key` in a map column of `row`.
pub fn map_get(
    row: &Map<String, Value>,
    column: &str,
    key: &str,
) -> Result<Option<String>, String> {
    let v = row
        .get(column)
        .ok_or_else(|| format!("row has no column {column:?}"))?;
    Ok(string_map(v)
        .map_err(|e| format!("{column}: {e}"))?
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, val)| val))
}

/// Remove the entries of a map value (`["map", [[k, v], ...]]`) whose key
/// is one of `keys` and whose value `keep` refuses; any other value is left
/// as it is.
pub fn drop_map_keys(v: &mut Value, keys: &[&str], keep: impl Fn(&Value) -> bool) {
    let Value::Array(a) = v else { return };
    if a.len() != 2 || a[0] != "map" {
        return;
    }
    if let Value::Array(pairs) = &mut a[1] {
        pairs.retain(|p| {
            !matches!(p.as_array().map(Vec::as_slice),
                Some([Value::String(k), v]) if keys.contains(&k.as_str()) && !keep(v))
        });
    }
}

/// A set column's atoms; a bare atom is a one-element set.
pub fn set_atoms(v: &Value) -> Result<Vec<Value>, String> {
    match v {
        Value::Array(a) if a.len() == 2 && a[0] == "set" => a[1]
            .as_array()
            .cloned()
            .ok_or_else(|| format!("set body is not an array: {v}")),
        Value::Array(a) if a.len() == 2 && a[0] == "map" => {
            Err(format!("expected a set, got a map: {v}"))
        }
        Value::Array(a) if a.len() == 2 && (a[0] == "uuid" || a[0] == "named-uuid") => {
            Ok(vec![v.clone()])
        }
        Value::Array(_) | Value::Object(_) | Value::Null => {
            Err(format!("not an OVSDB set or atom: {v}"))
        }
        atom => Ok(vec![atom.clone()]),
    }
}

/// A boolean column (possibly optional: an empty set reads as `None`).
pub fn boolean(row: &Map<String, Value>, column: &str) -> Result<Option<bool>, String> {
    let v = row
        .get(column)
        .ok_or_else(|| format!("row has no column {column:?}"))?;
    let atoms = set_atoms(v).map_err(|e| format!("{column}: {e}"))?;
    match atoms.as_slice() {
        [] => Ok(None),
        [Value::Bool(b)] => Ok(Some(*b)),
        _ => Err(format!("{column} is not a boolean: {v}")),
    }
}

/// A string column (possibly optional).
pub fn string(row: &Map<String, Value>, column: &str) -> Result<Option<String>, String> {
    let v = row
        .get(column)
        .ok_or_else(|| format!("row has no column {column:?}"))?;
    let atoms = set_atoms(v).map_err(|e| format!("{column}: {e}"))?;
    match atoms.as_slice() {
        [] => Ok(None),
        [Value::String(s)] => Ok(Some(s.clone())),
        _ => Err(format!("{column} is not a string: {v}")),
    }
}

/// An integer column (possibly optional: an empty set reads as `None`).
pub fn integer(row: &Map<String, Value>, column: &str) -> Result<Option<i64>, String> {
    let v = row
        .get(column)
        .ok_or_else(|| format!("row has no column {column:?}"))?;
    let atoms = set_atoms(v).map_err(|e| format!("{column}: {e}"))?;
    match atoms.as_slice() {
        [] => Ok(None),
        [Value::Number(n)] => n
            .as_i64()
            .map(Some)
            .ok_or_else(|| format!("{column} is not an integer: {v}")),
        _ => Err(format!("{column} is not an integer: {v}")),
    }
}

/// A uuid column (possibly optional), as text.
pub fn uuid_column(row: &Map<String, Value>, column: &str) -> Result<Option<String>, String> {
    let v = row
        .get(column)
        .ok_or_else(|| format!("row has no column {column:?}"))?;
    let atoms = set_atoms(v).map_err(|e| format!("{column}: {e}"))?;
    match atoms.as_slice() {
        [] => Ok(None),
        [atom] => uuid_atom(atom)
            .map(Some)
            .ok_or_else(|| format!("{column} is not a uuid: {v}")),
        _ => Err(format!("{column} holds more than one uuid: {v}")),
    }
}

/// A set-of-uuids column (references to other rows), as text.
pub fn uuid_set(row: &Map<String, Value>, column: &str) -> Result<Vec<String>, String> {
    let v = row
        .get(column)
        .ok_or_else(|| format!("row has no column {column:?}"))?;
    set_atoms(v)
        .map_err(|e| format!("{column}: {e}"))?
        .iter()
        .map(|a| uuid_atom(a).ok_or_else(|| format!("{column} holds a non-uuid: {a}")))
        .collect()
}

/// `["uuid", "…"]` as its text.
fn uuid_atom(v: &Value) -> Option<String> {
    match v.as_array()?.as_slice() {
        [Value::String(kind), Value::String(u)] if kind == "uuid" => Some(u.clone()),
        _ => None,
    }
}

/// The `_uuid` of a row, as text.
pub fn uuid(row: &Map<String, Value>) -> Option<String> {
    match row.get("_uuid")?.as_array()?.as_slice() {
        [Value::String(kind), Value::String(u)] if kind == "uuid" => Some(u.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn decodes_the_shapes_ovsdb_sends() {
        // captured from ovsdb-server 3.1 selecting Open_vSwitch other_config
        // and NB DHCP_Options on a test database.
        let r = row(json!({
            "_uuid": ["uuid", "0b4c1f1e-3f0e-4a57-9a57-2f0f6c4a3a11"],
            "other_config": ["map", [["ipsec_encapsulation", "true"], ["x", "y"]]],
            "external_ids": ["map", []],
            "ipsec": false,
            "cidr": "198.19.0.0/24",
            "opt": ["set", []],
        }));
        assert_eq!(
            map_get(&r, "other_config", "ipsec_encapsulation")
                .unwrap()
                .as_deref(),
            Some("true")
        );
        assert_eq!(map_get(&r, "external_ids", "ovn-encap-ip").unwrap(), None);
        assert_eq!(boolean(&r, "ipsec").unwrap(), Some(false));
        assert_eq!(boolean(&r, "opt").unwrap(), None);
        assert_eq!(
            string(&r, "cidr").unwrap().as_deref(),
            Some("198.19.0.0/24")
        );
        assert_eq!(
            uuid(&r).as_deref(),
            Some("0b4c1f1e-3f0e-4a57-9a57-2f0f6c4a3a11")
        );
    }

    #[test]
    fn integers_and_uuids_as_the_server_database_holds_them() {
        // ovsdb-server 3.1's _Server Database rows: a follower's, and the
        // _Server row itself (every optional column an empty set).
        let r = row(json!({
            "index": 19, "none": ["set", []], "neg": -1, "float": 1.5,
            "cid": ["uuid", "f9807868-6c97-45a1-838e-cf3dc6fca988"],
            "refs": ["set", [["uuid", "e1"], ["uuid", "e2"]]], "one": ["uuid", "e3"],
        }));
        assert_eq!(integer(&r, "index").unwrap(), Some(19));
        assert_eq!(integer(&r, "none").unwrap(), None);
        assert_eq!(integer(&r, "neg").unwrap(), Some(-1));
        assert!(integer(&r, "float").is_err() && integer(&r, "cid").is_err());
        assert_eq!(
            uuid_column(&r, "cid").unwrap().as_deref(),
            Some("f9807868-6c97-45a1-838e-cf3dc6fca988")
        );
        assert_eq!(uuid_column(&r, "none").unwrap(), None);
        assert!(uuid_column(&r, "index").is_err() && uuid_column(&r, "refs").is_err());
        assert_eq!(uuid_set(&r, "refs").unwrap(), ["e1", "e2"]);
        assert_eq!(uuid_set(&r, "one").unwrap(), ["e3"]);
        assert!(uuid_set(&r, "index").is_err() && uuid_set(&r, "missing").is_err());
    }

    #[test]
    fn wrong_shapes_are_errors() {
        let r = row(
            json!({"m": ["set", ["a"]], "b": "true", "s": ["map", []], "bad": ["map", [["k", 1]]]}),
        );
        assert!(map_get(&r, "m", "k").is_err());
        assert!(boolean(&r, "b").is_err());
        assert!(string(&r, "s").is_err());
        assert!(map_get(&r, "bad", "k").is_err());
        assert!(map_get(&r, "missing", "k").is_err());
    }
}
