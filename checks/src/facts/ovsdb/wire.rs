//! RFC 7047 framing and messages, with no I/O: bytes in, messages out.
//!
//! OVSDB sends JSON objects back to back on a stream with no length prefix
//! or delimiter, so a reader has to find where one object ends. [`Framer`]
//! does that incrementally (a read may end anywhere, even inside a string
//! or a UTF-8 sequence) by tracking bracket depth outside strings, and only
//! then hands the complete object to serde_json. Keeping this apart from
//! sockets lets tests and fuzzers feed it arbitrary bytes
//! ([`parse_reply_bytes`]).

use serde_json::{json, Value};

/// The most one message may hold. A Spinifex NB database is far smaller;
/// anything larger is a wrong endpoint or a hostile peer, not a reply.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// One JSON-RPC message from the server.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// A reply to one of our requests.
    Reply {
        id: Value,
        result: Value,
        error: Value,
    },
    /// A request from the server; OVSDB servers send `echo` as a keepalive
    /// and expect the params back.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A notification (`id: null`), e.g. `update`; we never monitor, so
    /// these are ignored.
    Notification { method: String, params: Value },
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("not JSON-RPC: {0}")]
    Malformed(String),
    #[error("message larger than {MAX_MESSAGE_BYTES} bytes")]
    TooLarge,
}

/// Splits a byte stream into complete top-level JSON values.
#[derive(Default, Debug)]
pub struct Framer {
    buf: Vec<u8>,
    /// Bytes of `buf` already scanned for the current message.
    scanned: usize,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// Offset of the current message's first byte, once seen.
    start: Option<usize>,
}

impl Framer {
    pub fn new() -> Framer {
        Framer::default()
    }

    /// Append bytes just read.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes buffered but not yet returned as a message.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// The next complete message, `Ok(None)` when more bytes are needed.
    pub fn next_message(&mut self) -> Result<Option<Message>, WireError> {
        match self.next_value()? {
            None => Ok(None),
            Some(v) => Message::from_value(v).map(Some),
        }
    }

    /// The next complete top-level JSON value (an object or array).
    pub fn next_value(&mut self) -> Result<Option<Value>, WireError> {
        let mut i = self.scanned;
        while i < self.buf.len() {
            let b = self.buf[i];
            i += 1;
            if self.start.is_none() {
                match b {
                    b' ' | b'\t' | b'\r' | b'\n' => continue,
                    b'{' | b'[' => {
                        self.start = Some(i - 1);
                        self.depth = 1;
                        continue;
                    }
                    other => {
                        return Err(WireError::Malformed(format!(
                            "expected a JSON object, got byte 0x{other:02x}"
                        )))
                    }
                }
            }
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        let start = self.start.take().unwrap_or(0);
                        let value = serde_json::from_slice::<Value>(&self.buf[start..i])
                            .map_err(|e| WireError::Malformed(e.to_string()));
                        self.buf.drain(..i);
                        self.scanned = 0;
                        return value.map(Some);
                    }
                }
                _ => {}
            }
        }
        self.scanned = i;
        if self.buf.len() > MAX_MESSAGE_BYTES {
            return Err(WireError::TooLarge);
        }
        Ok(None)
    }
}

impl Message {
    pub fn from_value(v: Value) -> Result<Message, WireError> {
        let Value::Object(mut obj) = v else {
            return Err(WireError::Malformed(
                "a message must be a JSON object".into(),
            ));
        };
        let id = obj.remove("id").unwrap_or(Value::Null);
        if let Some(method) = obj.remove("method") {
            let Value::String(method) = method else {
                return Err(WireError::Malformed("\"method\" is not a string".into()));
            };
            let params = obj.remove("params").unwrap_or(Value::Null);
            return Ok(if id.is_null() {
                Message::Notification { method, params }
            } else {
                Message::Request { id, method, params }
            });
        }
        if !obj.contains_key("result") && !obj.contains_key("error") {
            return Err(WireError::Malformed(
                "neither a request (method) nor a reply (result/error)".into(),
            ));
        }
        Ok(Message::Reply {
            id,
            result: obj.remove("result").unwrap_or(Value::Null),
            error: obj.remove("error").unwrap_or(Value::Null),
        })
    }
}

/// Parse every complete message in `bytes` (a recorded reply stream). A
/// trailing partial message is reported as an error, since a recording ends
/// where the stream did. This is the pure entry point for fuzzing.
pub fn parse_reply_bytes(bytes: &[u8]) -> Result<Vec<Message>, WireError> {
    let mut framer = Framer::new();
    framer.push(bytes);
    let mut out = Vec::new();
    while let Some(m) = framer.next_message()? {
        out.push(m);
    }
    if framer.buf.iter().any(|b| !b.is_ascii_whitespace()) {
        return Err(WireError::Malformed(format!(
            "stream ends inside a message ({} bytes pending)",
            framer.pending()
        )));
    }
    Ok(out)
}

/// `{"method": M, "params": P, "id": ID}`.
pub fn request(method: &str, params: Value, id: u64) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(&json!({"method": method, "params": params, "id": id}))
        .unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// The reply to a server's `echo`: its params, back.
pub fn echo_reply(id: &Value, params: &Value) -> Vec<u8> {
    let mut bytes =
        serde_json::to_vec(&json!({"result": params, "error": null, "id": id})).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// A `transact` whose operations are all `select`s on `db`.
pub fn transact_params(db: &str, selects: &[Select<'_>]) -> Value {
    let mut params = vec![Value::String(db.to_owned())];
    for s in selects {
        params.push(json!({
            "op": "select",
            "table": s.table,
            "where": s.conditions,
            "columns": s.columns,
        }));
    }
    Value::Array(params)
}

/// One `select` operation.
#[derive(Clone, Debug)]
pub struct Select<'a> {
    pub table: &'a str,
    pub columns: &'a [&'a str],
    /// Already-encoded conditions, e.g. `[["name","==","OVN_Northbound"]]`.
    pub conditions: Value,
}

impl<'a> Select<'a> {
    pub fn all(table: &'a str, columns: &'a [&'a str]) -> Select<'a> {
        Select {
            table,
            columns,
            conditions: json!([]),
        }
    }
}

/// The rows of each `select` in a transact result, in order. A per-operation
/// error (`{"error": ...}`) is returned as an error naming it.
pub fn transact_rows(
    result: &Value,
    ops: usize,
) -> Result<Vec<Vec<serde_json::Map<String, Value>>>, String> {
    let Value::Array(results) = result else {
        return Err("transact result is not an array".into());
    };
    if results.len() < ops {
        return Err(format!(
            "transact returned {} results for {ops} operations",
            results.len()
        ));
    }
    let mut out = Vec::with_capacity(ops);
    for r in &results[..ops] {
        if let Some(err) = r.get("error").filter(|e| !e.is_null()) {
            let details = r.get("details").and_then(Value::as_str).unwrap_or("");
            return Err(format!(
                "{}{}{details}",
                error_text(err),
                if details.is_empty() { "" } else { ": " }
            ));
        }
        let rows = r
            .get("rows")
            .and_then(Value::as_array)
            .ok_or("select result has no rows")?;
        let mut table = Vec::with_capacity(rows.len());
        for row in rows {
            match row {
                Value::Object(o) => table.push(o.clone()),
                _ => return Err("a row is not a JSON object".into()),
            }
        }
        out.push(table);
    }
    Ok(out)
}

/// An RFC 7047 error value as text: a string, or an object with `error`
/// and `details`.
pub fn error_text(err: &Value) -> String {
    match err {
        Value::String(s) => s.clone(),
        Value::Object(o) => {
            let e = o.get("error").and_then(Value::as_str).unwrap_or("error");
            match o.get("details").and_then(Value::as_str) {
                Some(d) if !d.is_empty() => format!("{e}: {d}"),
                _ => e.to_owned(),
            }
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // captured from ovsdb-server 3.1 (Debian 12) answering
    // `ovsdb-client transact unix:nb.sock '["OVN_Northbound",{"op":"select","table":"NB_Global","where":[],"columns":["ipsec"]}]'`
    // preceded by the keepalive it sends on an idle connection.
    const RECORDED: &[u8] = br#"{"id":"echo","method":"echo","params":[]}{"id":1,"result":[{"rows":[{"ipsec":true}]}],"error":null}"#;

    #[test]
    fn recorded_stream_splits_into_messages() {
        let msgs = parse_reply_bytes(RECORDED).unwrap();
        assert_eq!(msgs.len(), 2);
        assert!(matches!(&msgs[0], Message::Request { method, .. } if method == "echo"));
        match &msgs[1] {
            Message::Reply { id, result, error } => {
                assert_eq!(id, &json!(1));
                assert!(error.is_null());
                let rows = transact_rows(result, 1).unwrap();
                assert_eq!(rows[0][0]["ipsec"], json!(true));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_split_point_gives_the_same_messages() {
        // Partial reads can end anywhere: inside a string, after a
        // backslash, inside a multi-byte character.
        let stream = "{\"id\":2,\"result\":[{\"rows\":[{\"name\":\"a}\\\"]\u{e9}\"}]}],\"error\":null}\n{\"id\":null,\"method\":\"update\",\"params\":[]}";
        let whole = parse_reply_bytes(stream.as_bytes()).unwrap();
        assert_eq!(whole.len(), 2);
        for cut in 0..stream.len() {
            let mut f = Framer::new();
            let mut got = Vec::new();
            f.push(&stream.as_bytes()[..cut]);
            while let Some(m) = f.next_message().unwrap() {
                got.push(m);
            }
            f.push(&stream.as_bytes()[cut..]);
            while let Some(m) = f.next_message().unwrap() {
                got.push(m);
            }
            assert_eq!(got, whole, "cut at {cut}");
        }
        assert!(matches!(&whole[1], Message::Notification { method, .. } if method == "update"));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bad in [
            &b"HTTP/1.1 400 Bad Request\r\n"[..],
            b"{\"id\":1}",
            b"[1,2]",
            b"{\"a\":tru}",
            b"{\"id\":1,",
        ] {
            assert!(
                parse_reply_bytes(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn transact_errors_name_the_operation_error() {
        let r = json!([{"error": "unknown table", "details": "No table named Bogus."}]);
        assert_eq!(
            transact_rows(&r, 1).unwrap_err(),
            "unknown table: No table named Bogus."
        );
        assert!(transact_rows(&json!([]), 1).is_err());
    }

    #[test]
    fn requests_are_json_rpc() {
        let r = request(
            "transact",
            transact_params("OVN_Southbound", &[Select::all("Encap", &["ip"])]),
            7,
        );
        let v: Value = serde_json::from_slice(&r).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["params"][0], "OVN_Southbound");
        assert_eq!(v["params"][1]["op"], "select");
        assert_eq!(v["params"][1]["columns"], json!(["ip"]));
        let e: Value = serde_json::from_slice(&echo_reply(&json!("echo"), &json!([]))).unwrap();
        assert_eq!(e, json!({"result": [], "error": null, "id": "echo"}));
    }
}
