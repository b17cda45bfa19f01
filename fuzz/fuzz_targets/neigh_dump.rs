//! Netlink RTM_GETNEIGHTBL and RTM_GETNEIGH dump replies (what the kernel
//! sends for `ip -s ntable show` and `ip neigh show`), parsed into neighbour
//! tables and entries; what parses is judged as mtu.path and sysctl.neigh
//! read it (a table of an address's family, an entry's state).
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::facts::neighbours::{
    entry_for, family_of, parse_neighbour_dump, parse_table_dump, table_of,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(dump) = parse_table_dump(data) {
        for t in &dump.items {
            let _ = t.sysctl_prefix();
            let _ = (t.is_ipv4(), t.is_ipv6());
            assert!(table_of(&dump.items, t.family).is_some());
        }
    }
    if let Ok(dump) = parse_neighbour_dump(data) {
        for n in &dump.items {
            let _ = (n.resolved(), n.state_name(), family_of(n.address));
            assert!(entry_for(&dump.items, n.ifindex, n.address).is_some());
        }
    }
});
