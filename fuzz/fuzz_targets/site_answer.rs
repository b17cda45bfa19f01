//! A JSON site check's answer, read against schema/site-check-v1.schema.json.
//! Properties beyond "no panic": an accepted answer's code is a kebab-case
//! word of at most 64, its summary 1 to 4096 characters, at most 32 fix
//! steps; a refusal is one line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::facts::site::answer::parse;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match parse(&text) {
        Ok(a) => {
            assert!(a.code.len() <= 64 && !a.code.is_empty());
            assert!(a.code.split('-').all(|w| !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())));
            assert!((1..=4096).contains(&a.summary.chars().count()));
            assert!(a.fix.len() <= 32);
        }
        Err(e) => assert!(!e.contains('\n'), "{e}"),
    }
});
