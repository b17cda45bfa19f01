//! The rows a guest's path is resolved from, over the host seam: one
//! northbound and one southbound transaction (each from the first raft
//! member that answers), and a node's own OVS interfaces. Each is a
//! [`crate::host::Request::Ovsdb`], so a path run is recorded and replayed
//! like a check's.

use crate::endpoint::Endpoint;
use crate::facts::ovsdb::raft::{CHASSIS_TABLE, ENCAP_TABLE};
use crate::facts::ovsdb::topology::{
    self, NbTopology, OvsInterface, SbTopology, ACL_COLUMNS, ACL_TABLE, CHASSIS_COLUMNS,
    DHCP_COLUMNS, DHCP_TABLE, ENCAP_COLUMNS, INTERFACE_COLUMNS, INTERFACE_TABLE, LRP_COLUMNS,
    LRP_TABLE, LR_COLUMNS, LR_TABLE, LSP_COLUMNS, LSP_TABLE, LS_COLUMNS, LS_TABLE,
    PORT_BINDING_COLUMNS, PORT_BINDING_TABLE, PORT_GROUP_COLUMNS, PORT_GROUP_TABLE,
};
use crate::facts::ovsdb::wire::Select;
use crate::facts::ovsdb::{Answer, Budget, NB_DB, OVS_DB, SB_DB};
use crate::facts::ProbeError;
use crate::host::HostRef;
use crate::read::ovsdb::select;

/// Switch ports, switches, DHCP options, port groups, ACLs, routers and
/// router ports, in one northbound transaction.
pub fn nb_topology(
    host: HostRef<'_>,
    endpoints: &[Endpoint],
    budget: Budget,
) -> Result<Answer<NbTopology>, ProbeError> {
    let ans = select(
        host,
        endpoints,
        NB_DB,
        &[
            Select::all(LSP_TABLE, &LSP_COLUMNS),
            Select::all(LS_TABLE, &LS_COLUMNS),
            Select::all(DHCP_TABLE, &DHCP_COLUMNS),
            Select::all(PORT_GROUP_TABLE, &PORT_GROUP_COLUMNS),
            Select::all(ACL_TABLE, &ACL_COLUMNS),
            Select::all(LR_TABLE, &LR_COLUMNS),
            Select::all(LRP_TABLE, &LRP_COLUMNS),
        ],
        budget,
    )?;
    let value = topology::nb_topology(&ans.value)
        .map_err(|e| ProbeError::parse(format!("{NB_DB} at {}", ans.endpoint), e))?;
    Ok(ans.with(value))
}

/// Port bindings, chassis and their encaps, in one southbound transaction.
pub fn sb_topology(
    host: HostRef<'_>,
    endpoints: &[Endpoint],
    budget: Budget,
) -> Result<Answer<SbTopology>, ProbeError> {
    let ans = select(
        host,
        endpoints,
        SB_DB,
        &[
            Select::all(PORT_BINDING_TABLE, &PORT_BINDING_COLUMNS),
            Select::all(CHASSIS_TABLE, &CHASSIS_COLUMNS),
            Select::all(ENCAP_TABLE, &ENCAP_COLUMNS),
        ],
        budget,
    )?;
    let value = topology::sb_topology(&ans.value)
        .map_err(|e| ProbeError::parse(format!("{SB_DB} at {}", ans.endpoint), e))?;
    Ok(ans.with(value))
}

/// Every `Interface` of this node's Open_vSwitch database.
pub fn ovs_interfaces(
    host: HostRef<'_>,
    endpoint: &Endpoint,
    budget: Budget,
) -> Result<Answer<Vec<OvsInterface>>, ProbeError> {
    let mut ans = select(
        host,
        std::slice::from_ref(endpoint),
        OVS_DB,
        &[Select::all(INTERFACE_TABLE, &INTERFACE_COLUMNS)],
        budget,
    )?;
    let rows = ans.value.remove(0);
    let value = topology::ovs_interfaces(&rows)
        .map_err(|e| ProbeError::parse(format!("{OVS_DB} at {endpoint}"), e))?;
    Ok(ans.with(value))
}
