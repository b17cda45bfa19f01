//! A bundle handed to `--replay`: gzip JSON lines from another machine (a
//! customer's node, another version of the doctor). Beyond "no panic": a
//! bundle that reads back replays every request it holds to an answer or a
//! probe error, and one written out again reads back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::host::{Bundle, Host, Limit, Replay, Request};

fuzz_target!(|data: &[u8]| {
    // Raw bytes exercise the gzip framing; text (gzipped here) the lines.
    let bundle = match Bundle::from_reader(data) {
        Ok(b) => b,
        Err(_) => {
            let Ok(text) = std::str::from_utf8(data) else {
                return;
            };
            match Bundle::from_text(text) {
                Ok(b) => b,
                Err(_) => return,
            }
        }
    };
    let replay = Replay::new(&bundle, |id| spx_checks::find(id).is_some());
    for record in &bundle.records {
        if let Ok(request) = serde_json::from_value::<Request>(record.request.clone()) {
            let _ = replay.read(&record.scope, &request, Limit::NONE);
        }
    }
    let again = Bundle::from_reader(&bundle.to_bytes()[..]).expect("a written bundle reads back");
    assert_eq!(again.records.len(), bundle.records.len());
});
