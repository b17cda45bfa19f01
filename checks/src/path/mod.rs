//! `spx doctor path FROM TO`: where a guest's packet of N bytes dies
//! between two guests, hop by hop, both ways.
//!
//! Operators hear about the overlay from a guest ("i-A times out on TLS to
//! i-B"), and Spinifex's own history has the case: a DHCP MTU of 1442 over
//! a real path of 1408 showed up as TLS handshake timeouts inside guests.
//! The checks answer per node and per node pair; the walk from a guest's
//! complaint to the hop that drops its frames was still done by hand: the
//! instance to its ENI, the ENI to its logical switch port and binding,
//! the chassis to a node and its encap IP, the DHCP MTU, QEMU's host_mtu
//! and the tap, the bridges, the xfrm pair and the underlay, the byte
//! arithmetic both ways, and whether anything would tell the sender. No
//! public tool walks it: `ovn-trace` models no frame size
//! (`check_pkt_larger` is a no-op there), `ofproto/trace` stops at the
//! tunnel, pwru and retis watch one kernel.
//!
//! A path is a question of its own, not a check: it has its own endpoints
//! ([`endpoint`]), resolves them from OVN's rows ([`resolve`]), gathers
//! each end's facts on the node that has them ([`node`], [`gather`]),
//! judges every hop and both directions ([`judge`], with the security
//! group's answer to the ICMP in [`acl`]), and words the verdict
//! ([`words`]) into its own document ([`report`]). Facts come through the
//! seam, so a recorded path run replays.

pub mod acl;
pub mod endpoint;
pub mod gather;
pub mod judge;
pub mod node;
pub mod report;
pub mod resolve;
pub mod words;

#[cfg(test)]
mod tests;

use crate::kind::{KindDoc, Kinds};

crate::kinds! {
    /// What `spx doctor path` can say about a path.
    pub enum PathKind for "path" {
        /// A guest packet of N bytes crosses both ways, or where it cannot, the sender is told: its own kernel for its own NIC, or OVN at a router port with gateway_mtu, with the ICMP let back in by its security group.
        Ok = pass("ok"),
        /// A hop drops the packet and nobody tells the sender (an L2 switch, the peer's tap, the node's own underlay link under OVN): TCP stalls on full-size segments while small ones pass. The hop carries less than the config implies.
        BlackHole = fail("black-hole"),
        /// The MTU the guest is told (DHCP, RA or host_mtu) is above what the path carries, while the path carries what the config implies: the 1442-over-1408 incident, TLS handshakes timing out inside guests.
        GuestMtuAbovePath = fail("guest-mtu-above-path"),
        /// A router port with gateway_mtu answers "fragmentation needed" (ICMP type 3 code 4, or ICMPv6 type 2), but the sender's security group drops it on the way back: a black hole made by an ACL.
        IcmpBlocked = fail("icmp-blocked"),
        /// One direction carries the packet (or tells its sender) and the other drops it without a word: the failing direction, its hop and its fix are named.
        Asymmetric = fail("asymmetric"),
        /// An endpoint did not resolve (no port, no binding, no chassis, NB or SB unreachable), or a hop before any drop could not be read: the lookup or read that failed is named, and nothing is concluded.
        Unresolved = error("unresolved"),
    }
}

/// The id `explain` takes for the question, and its codes' prefix.
pub const ID: &str = "path";

/// Every code of the path question, in order.
pub fn codes() -> impl Iterator<Item = &'static KindDoc> {
    PathKind::DOCS.iter()
}

/// The kind of a code (`path/black-hole`).
pub fn find_code(code: &str) -> Option<&'static KindDoc> {
    let name = code.strip_prefix("path/")?;
    PathKind::DOCS.iter().find(|k| k.name == name)
}

/// One line for `list`.
pub const TITLE: &str =
    "Where a guest's packet of N bytes dies between two guests, hop by hop, both ways";

/// The long text of `explain path`.
pub fn explain() -> String {
    format!(
        "`spx doctor path FROM TO [--size N] [--vpc ID] [--via nats|ssh] [--format table|json]`\n\
         \n\
         FROM and TO are each an instance (i-…), an ENI (eni-…), a guest's private IP (with \
         --vpc ID when two VPCs share it), or a node of the config (then it is the underlay \
         between the two nodes alone). They are resolved through OVN over the config's NB and \
         SB raft endpoints: the Logical_Switch_Port (external_ids:spinifex:eni_id, or the \
         address), its switch, its DHCP_Options (options:mtu; ipv6_ra_configs:mtu for IPv6), \
         its port groups and their ACLs, the router ports between two subnets and their \
         gateway_mtu, then Port_Binding → Chassis → the node and its Encap IP. Instance ids \
         are not in OVN: the node whose QEMU runs the instance (its pid file and QMP socket \
         name it) gives its taps, and each tap's OVS external_ids:iface-id is its ENI's \
         logical switch port. Each node reads its own side, in this process when it is this \
         node, else over the cluster transport (its agent over NATS, or ssh, as --cluster): \
         the QEMU command line (host_mtu, the tap), the tap's MTU, the underlay device and \
         its ports, the ESP SAs between the two encap IPs, and a fresh don't-fragment probe \
         to the other's encap IP at exactly the outer size the guest packet needs there, with \
         the exact path MTU when it fails. A node probes only an address in its own peer \
         list. A node whose OVS database cannot be read still gets a verdict (its encap IP \
         comes from SB); what was not read is shown unread, never guessed.\n\
         \n\
         The arithmetic: geneve adds {} bytes on an IPv4 underlay and {} on IPv6 (outer IP, \
         UDP 8, geneve 8, OVN's option 8, inner Ethernet 14); ESP adds, from the SA actually \
         installed, header 8 + IV + padding to 4 (or the cipher's block) + trailer 2 + ICV, \
         plus UDP 8 with NAT traversal: 34 bytes for rfc4106(gcm(aes)) with a 16-byte ICV at \
         every guest MTU Spinifex computes (RFC 4303, RFC 4106, RFC 3948).\n\
         \n\
         For each direction: every hop (the guest's NIC with the MTU it was offered, \
         virtio host_mtu, the tap, br-int, the router with gateway_mtu, geneve, ESP, the \
         node's underlay, the path between the encap IPs, the peer's underlay, its tap and \
         guest), the bytes a packet of N occupies there, the hop's limit, whether it is \
         carried, dropped or fragmented, and for a drop whether the sender learns of it and \
         from whom: its own kernel for its own NIC; OVN only at a router port with \
         gateway_mtu, and only when the security group lets ICMP type 3 code 4 (ICMPv6 type \
         2) back in; never an L2 switch, the peer's tap (OVS drops above an output port's \
         MTU without a word), or the node's own underlay link (the kernel's tunnel PMTU \
         answer does not reach an OVN guest). The verdict names the largest packet that \
         crosses each way, the first hop that drops N, whether silently, and the fix in the \
         words the checks use. N defaults to the MTU the source guest was offered, so the \
         bare command answers \"does what this guest is told hold, to that guest, both \
         ways?\".\n\
         \n\
         Codes: {}. Exit 0 ok, 1 a failure, 2 unresolved (an endpoint that does not resolve \
         names the lookup that failed). --format json follows schema/path-v1.schema.json; \
         --record FILE keeps every read (and each node's answer) for `--replay FILE`.",
        crate::expect::GENEVE_OVERHEAD,
        crate::expect::geneve_overhead(
            crate::expect::Family::Ipv6,
            crate::expect::OVN_GENEVE_OPTIONS
        ),
        PathKind::DOCS
            .iter()
            .map(|k| k.code(ID))
            .collect::<Vec<_>>()
            .join(", ")
    )
}
