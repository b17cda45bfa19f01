//! The agent's request parser (`src/bus/wire.rs`, built here as it is:
//! it depends only on serde, serde_json and spx_checks): anyone holding
//! the bus token can send an agent any bytes. Whatever comes, the parser
//! answers with a request or a one-line refusal, never a panic; what it
//! accepts holds the bounds and reads back the same once written; the
//! error-answer and traceparent readers (the coordinator's side) likewise.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../src/bus/wire.rs"]
#[allow(dead_code)]
mod wire;

fuzz_target!(|data: &[u8]| {
    match wire::Request::parse(data) {
        Ok(r) => {
            assert!(r.timeout <= wire::MAX_TIMEOUT && r.sample < r.timeout);
            let again = wire::Request::parse(&r.to_json()).expect("a request written back reads back");
            assert_eq!(again, r);
            assert_eq!(again.key(), r.key());
        }
        Err((_, refusal)) => {
            assert!(!refusal.message.contains('\n'), "{:?}", refusal.message);
        }
    }
    if let Some(e) = wire::ErrorReply::parse(data) {
        assert_eq!(wire::ErrorReply::parse(&e.to_json()), Some(e));
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Some(t) = wire::TraceParent::parse(text) {
            assert_eq!(wire::TraceParent::parse(&t.to_string()), Some(t));
        }
    }
});
