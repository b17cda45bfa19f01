//! A doctor.d file: a site check's definition, TOML read strictly.
//! Properties beyond "no panic": an accepted file's id is under `site.`,
//! its command has an executable, its timeout is within bounds, and it
//! survives its trip through JSON (a bundle's header) unchanged; a refused
//! one is refused in one line naming the file.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use spx_checks::site_definition::{parse, SiteDefinition, ID_PREFIX, MAX_TIMEOUT};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("/etc/spinifex/doctor.d/fuzz.toml");
    match parse(text, path) {
        Ok(d) => {
            assert!(d.id.starts_with(ID_PREFIX));
            assert!(!d.command.is_empty() && !d.command[0].is_empty());
            assert!(!d.timeout.is_zero() && d.timeout <= MAX_TIMEOUT);
            assert!(!d.title.is_empty() && !d.explain.is_empty());
            let back: SiteDefinition =
                serde_json::from_value(serde_json::to_value(&d).unwrap()).unwrap();
            assert_eq!(back, d);
        }
        Err(e) => {
            let line = e.to_string();
            assert!(
                line.starts_with("/etc/spinifex/doctor.d/fuzz.toml"),
                "{line}"
            );
            assert!(!line.contains('\n'), "{line}");
        }
    }
});
