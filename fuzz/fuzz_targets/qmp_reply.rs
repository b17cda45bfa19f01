//! QMP replies to `query-iothreads` and `query-block`, as a guest's
//! monitor sends them. The input is split at the first NUL byte into the
//! two replies.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use spx_checks::facts::qemu::qmp::parse_facts;

fuzz_target!(|data: &[u8]| {
    let (a, b) = match data.iter().position(|&x| x == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, data),
    };
    let iothreads = serde_json::from_slice::<Value>(a).unwrap_or(Value::Null);
    let block = serde_json::from_slice::<Value>(b).unwrap_or(Value::Null);
    let _ = parse_facts(&iothreads, &block);
});
