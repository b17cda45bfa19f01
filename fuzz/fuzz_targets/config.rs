//! spinifex.toml: the TOML parser, typed deserialisation, and every value
//! validator behind it. Any input must give a Config or a ConfigError whose
//! one-line Display can be built (it computes line and column from a span).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // `config::load` refuses non-UTF-8 before parsing; do the same.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match spx_checks::config::parse(text, Path::new("spinifex.toml")) {
        Ok(cfg) => {
            let _ = cfg.this_node();
            let _ = cfg.nb_endpoints();
            let _ = cfg.sb_endpoints();
        }
        Err(e) => {
            let line = e.to_string();
            assert!(!line.is_empty());
        }
    }
});
