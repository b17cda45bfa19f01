//! What the checks make of an OVSDB reply once framed: transact results,
//! rows, and the datum forms (maps, sets, strings, booleans, uuids), and
//! error values, on arbitrary JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use spx_checks::facts::ovsdb::{datum, parse_ip_list, topology, wire};

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        if let Ok(text) = std::str::from_utf8(data) {
            let _ = parse_ip_list(text);
        }
        return;
    };
    let _ = wire::Message::from_value(v.clone());
    let _ = wire::error_text(&v);
    // The rows spx-doctor path resolves a guest from, as NB (7 tables),
    // SB (3) and a node's OVS interfaces (1) answer them.
    for ops in [1, 3, 7] {
        if let Ok(tables) = wire::transact_rows(&v, ops) {
            let _ = topology::nb_topology(&tables);
            let _ = topology::sb_topology(&tables);
            if let Some(rows) = tables.first() {
                let _ = topology::ovs_interfaces(rows);
            }
            for port in topology::nb_topology(&tables).iter().flat_map(|t| &t.ports) {
                let _ = port.macs_and_ips();
            }
        }
    }
    for ops in 0..3 {
        if let Ok(tables) = wire::transact_rows(&v, ops) {
            for row in tables.iter().flatten() {
                let _ = datum::uuid(row);
                for column in row.keys() {
                    let _ = datum::boolean(row, column);
                    let _ = datum::string(row, column);
                    let _ = datum::map_get(row, column, "ovn-encap-ip");
                    if let Some(cell) = row.get(column) {
                        let _ = datum::string_map(cell);
                        let _ = datum::set_atoms(cell);
                    }
                }
            }
        }
    }
    let _ = datum::string_map(&v);
    let _ = datum::set_atoms(&v);
    if let Some(s) = v.as_str() {
        let _ = parse_ip_list(s);
    }
});
