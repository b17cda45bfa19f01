//! What to look at, from the run ([`crate::Ctx`]): the peers to probe, the
//! OVSDB endpoints to read, the underlay NICs to inspect. A target that
//! cannot be found is a [`crate::Finding`] (a skip or an error) the checks
//! return as is.

pub mod ovsdb_endpoints;
pub mod peers;
pub mod underlay_nics;
