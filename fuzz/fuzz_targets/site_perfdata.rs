//! A site check's Nagios output: the plugin API's layout (summary, long
//! text, `|perfdata` on the first line and after) and its performance
//! data (`'label'=value[UOM];warn;crit;min;max`). Properties beyond "no
//! panic": at most MAX_ITEMS items are read; every item has a label of
//! text and a finite value (or none, for U); an item survives its trip
//! through JSON (the report and the bundle) unchanged; the summary stays
//! within its bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::facts::site::nagios::{self, MAX_SUMMARY};
use spx_checks::facts::site::perfdata::{self, Perf, MAX_ITEMS};

fn holds(items: &[Perf]) {
    assert!(items.len() <= MAX_ITEMS);
    for p in items {
        assert!(!p.label.is_empty() && !p.label.chars().any(char::is_control));
        assert!(p.value.is_none_or(f64::is_finite));
        assert!(p.min.is_none_or(f64::is_finite) && p.max.is_none_or(f64::is_finite));
        let back: Perf = serde_json::from_value(serde_json::to_value(p).unwrap()).unwrap();
        assert_eq!(&back, p);
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (items, errors) = perfdata::parse(&text);
    holds(&items);
    assert!(errors.iter().all(|e| !e.contains('\n')));
    let out = nagios::parse(&text);
    holds(&out.perfdata);
    assert!(out.summary.len() <= MAX_SUMMARY + '…'.len_utf8());
    assert!(!out.summary.contains('\n'));
});
