//! RFC 7047 framing: a stream of back-to-back JSON objects from an OVSDB
//! server. Property beyond "no panic": feeding the same bytes in arbitrary
//! pieces (as reads from a socket end anywhere) yields the same messages
//! as feeding them whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::facts::ovsdb::wire::{parse_reply_bytes, Framer};

fuzz_target!(|data: &[u8]| {
    // The first byte picks the piece size for the incremental feed.
    let Some((&step, stream)) = data.split_first() else {
        return;
    };
    let whole = parse_reply_bytes(stream);
    let step = usize::from(step % 16) + 1;
    let mut framer = Framer::new();
    let mut pieces = Vec::new();
    let mut failed = false;
    'feed: for chunk in stream.chunks(step) {
        framer.push(chunk);
        loop {
            match framer.next_message() {
                Ok(Some(m)) => pieces.push(m),
                Ok(None) => break,
                Err(_) => {
                    failed = true;
                    break 'feed;
                }
            }
        }
    }
    if let Ok(msgs) = whole {
        assert!(!failed, "whole stream parsed, piecewise failed");
        assert_eq!(pieces, msgs);
    }
});
