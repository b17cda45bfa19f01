//! The kernel's IPsec tables, dumped over netlink on a `NETLINK_XFRM`
//! socket with `NLM_F_DUMP`: the security associations (`XFRM_MSG_GETSA`,
//! what `ip xfrm state` asks) and the policies (`XFRM_MSG_GETPOLICY`, what
//! `ip xfrm policy` asks), without their text.
//!
//! Why netlink: these tables are the ground truth of whether a node
//! encrypts (charon and ovs-monitor-ipsec can both claim otherwise), and
//! `ip xfrm` output is not an interface. A dump needs CAP_NET_ADMIN;
//! without it the kernel answers EPERM, which becomes a permission-denied
//! probe error (the check skips, naming the capability).
//!
//! The xfrm layer's error counters ([`stat`]) are a procfs file, read
//! through the host seam like any other.
//!
//! The facts and their parsers ([`state`], [`policy`], [`selector`]) are
//! pure functions over the bytes the kernel sent, so recorded dumps are
//! judged in unit tests and fuzzed; this module only moves the bytes.

pub mod netlink;
pub mod policy;
pub mod selector;
pub mod stat;
pub mod state;

pub use policy::{parse_policy_dump, Mark, PolicyAction, PolicyDir, PolicyTemplate, XfrmPolicy};
pub use selector::{Port, Selector, IPPROTO_UDP};
pub use stat::{parse_xfrm_stat, XfrmStat, XFRM_STAT};
pub use state::{parse_dump, DumpChunk, SaLayout, SecurityAssociation, UdpEncap, IPPROTO_ESP};
