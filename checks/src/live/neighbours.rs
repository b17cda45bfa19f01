//! The kernel's neighbour tables (`RTM_GETNEIGHTBL`) and this namespace's
//! neighbour entries (`RTM_GETNEIGH`), asked on [`super::links`]'s
//! rtnetlink socket of this thread, bounded as it says. Both are dumps
//! that need no privilege and change nothing; what they mean is
//! [`crate::facts::neighbours`]'s.

use std::time::Instant;

use netlink_packet_route::neighbour::NeighbourMessage;
use netlink_packet_route::neighbour_table::NeighbourTableMessage;
use netlink_packet_route::RouteNetlinkMessage;

use super::links::{io_err, request};
use crate::facts::neighbours::{neighbour_from, table_from, Neighbour, NeighbourTable};
use crate::facts::ProbeError;

/// Every neighbour table of the kernel (ARP, IPv6 ND): thresholds, entries
/// and statistics, the same in every network namespace.
pub fn tables(deadline: Option<Instant>) -> Result<Vec<NeighbourTable>, ProbeError> {
    let answers = request(
        RouteNetlinkMessage::GetNeighbourTable(NeighbourTableMessage::default()),
        true,
        deadline,
    )
    .map_err(|e| io_err("neighbour table dump", e))?;
    Ok(answers
        .iter()
        .filter_map(|m| match m {
            RouteNetlinkMessage::NewNeighbourTable(t) => table_from(t),
            _ => None,
        })
        .collect())
}

/// Every neighbour entry of this network namespace, both families.
pub fn entries(deadline: Option<Instant>) -> Result<Vec<Neighbour>, ProbeError> {
    let answers = request(
        RouteNetlinkMessage::GetNeighbour(NeighbourMessage::default()),
        true,
        deadline,
    )
    .map_err(|e| io_err("neighbour dump", e))?;
    Ok(answers
        .iter()
        .filter_map(|m| match m {
            RouteNetlinkMessage::NewNeighbour(n) => neighbour_from(n),
            _ => None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::neighbours::{table_of, AF_INET};

    #[test]
    fn the_live_arp_table_agrees_with_procfs() {
        // /proc/sys is the oracle of the thresholds in the initial network
        // namespace (a child namespace has no gc_thresh files: the table is
        // the kernel's, and netlink answers for it from anywhere).
        let tables = tables(None).unwrap();
        let arp = table_of(&tables, AF_INET).expect("an ARP table");
        assert_eq!(arp.name, "arp_cache");
        if let Ok(t3) = std::fs::read_to_string("/proc/sys/net/ipv4/neigh/default/gc_thresh3") {
            assert_eq!(arp.gc_thresh3.to_string(), t3.trim());
        }
        assert!(
            arp.table_fulls.is_some() && arp.entries.is_some(),
            "{arp:?}"
        );
        // The loopback's own address never needs an entry; the dump works
        // with or without any.
        let here = entries(None).unwrap();
        assert!(here.iter().all(|n| n.ifindex > 0), "{here:?}");
    }
}
