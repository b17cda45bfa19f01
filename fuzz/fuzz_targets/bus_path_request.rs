//! The agent's path request parser (`src/bus/wire.rs`, built here as it
//! is): anyone holding the bus token can send an agent's
//! `spinifex.doctor.<node>.path` any bytes. Whatever comes, the parser
//! answers with a request or a one-line refusal, never a panic; what it
//! accepts names only an instance or ENI id and an IP address, holds the
//! size and timeout bounds, reads back the same once written, and never
//! shares a run with a check run.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::path::node::{GuestRef, Size, MAX_SIZE, MIN_SIZE};

#[path = "../../src/bus/wire.rs"]
#[allow(dead_code)]
mod wire;

fuzz_target!(|data: &[u8]| {
    match wire::PathRequest::parse(data) {
        Ok(r) => {
            assert!(r.timeout <= wire::MAX_TIMEOUT && !r.timeout.is_zero());
            let (Size::Guest(n) | Size::Underlay(n)) = r.query.size;
            assert!((MIN_SIZE..=MAX_SIZE).contains(&n));
            match &r.query.guest {
                Some(GuestRef::Instance(i)) => assert!(i.starts_with("i-") && i.len() <= 34),
                Some(GuestRef::Eni(e)) => assert!(e.starts_with("eni-") && e.len() <= 36),
                None => {}
            }
            let again = wire::PathRequest::parse(&r.to_json())
                .expect("a path request written back reads back");
            assert_eq!(again, r);
            let key = r.key();
            assert!(key.path.is_some() && !key.measures_like(&key));
        }
        Err((_, refusal)) => {
            assert!(!refusal.message.contains('\n'), "{:?}", refusal.message);
        }
    }
});
