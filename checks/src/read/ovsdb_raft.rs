//! The reads behind `ovn.cluster`, over the host seam ([`HostRef`]): each
//! is one OVSDB `transact` of `select`s ([`crate::host::Request::Ovsdb`]),
//! so it is recorded and replayed like every other, and its rows are made
//! facts by the pure parsers of [`crate::facts::ovsdb::raft`].

use crate::endpoint::Endpoint;
use crate::facts::ProbeError;
use crate::host::HostRef;

use crate::facts::ovsdb::raft::{
    self, LocalChassis, SbChassis, ServerDb, CHASSIS_COLUMNS, CHASSIS_TABLE, DATABASE_TABLE,
    ENCAP_COLUMNS, ENCAP_TABLE, OVS_IDENTITY_COLUMNS, SERVER_COLUMNS, SERVER_DB,
};
use crate::facts::ovsdb::wire::Select;
use crate::facts::ovsdb::{Answer, Budget, OVS_DB, SB_DB};
use crate::read::ovsdb::{local_ovs_row, select};

/// What one member said about the databases it serves: its `_Server`
/// `Database` rows. Asked of that member alone (no failover: a member that
/// does not answer is itself the fact), within the budget.
pub fn server_databases(
    host: HostRef<'_>,
    member: &Endpoint,
    budget: Budget,
) -> Result<Vec<ServerDb>, ProbeError> {
    let mut ans = select(
        host,
        std::slice::from_ref(member),
        SERVER_DB,
        &[Select::all(DATABASE_TABLE, &SERVER_COLUMNS)],
        budget,
    )
    .map_err(|e| one_member(e, member))?;
    raft::server_rows(&ans.value.remove(0))
        .map_err(|e| ProbeError::parse(format!("{SERVER_DB} {DATABASE_TABLE} at {member}"), e))
}

/// A member's failure without the list wording ("… at M did not answer:")
/// the failover of [`select`] gives it: the member is named by the caller.
fn one_member(e: ProbeError, member: &Endpoint) -> ProbeError {
    match e {
        ProbeError::Other(text) => {
            let prefix = format!("{SERVER_DB} at {member} did not answer: ");
            ProbeError::Other(text.strip_prefix(&prefix).unwrap_or(&text).to_owned())
        }
        other => other,
    }
}

/// Every southbound chassis with its tunnel addresses, from the first
/// member of `endpoints` that answers (pass the leader first: a follower
/// may be behind).
pub fn sb_chassis(
    host: HostRef<'_>,
    endpoints: &[Endpoint],
    budget: Budget,
) -> Result<Answer<Vec<SbChassis>>, ProbeError> {
    let mut ans = select(
        host,
        endpoints,
        SB_DB,
        &[
            Select::all(CHASSIS_TABLE, &CHASSIS_COLUMNS),
            Select::all(ENCAP_TABLE, &ENCAP_COLUMNS),
        ],
        budget,
    )?;
    let encaps = ans.value.remove(1);
    let chassis = ans.value.remove(0);
    let value = raft::chassis_rows(&chassis, &encaps)
        .map_err(|e| ProbeError::parse(format!("{SB_DB} {CHASSIS_TABLE}"), e))?;
    Ok(ans.with(value))
}

/// This node's chassis identity, from its Open_vSwitch database.
pub fn local_chassis(
    host: HostRef<'_>,
    endpoint: &Endpoint,
    budget: Budget,
) -> Result<Answer<LocalChassis>, ProbeError> {
    local_ovs_row(host, endpoint, budget, &OVS_IDENTITY_COLUMNS, |row| {
        raft::local_chassis(row)
            .map_err(|e| ProbeError::parse(format!("{OVS_DB} Open_vSwitch external_ids"), e))
    })
}
