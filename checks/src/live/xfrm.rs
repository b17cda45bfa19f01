//! The kernel's IPsec tables, dumped over NETLINK_XFRM.
use crate::facts::xfrm::netlink::{self, Dump};
use crate::facts::xfrm::{parse_dump, parse_policy_dump, SecurityAssociation, XfrmPolicy};
use crate::facts::ProbeError;
use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_xfrm::XfrmMessage;
use netlink_sys::{protocols::NETLINK_XFRM, Socket, SocketAddr};
use std::io;
use std::time::{Duration, Instant};

/// Every SA in this network namespace (larval ACQUIRE states included),
/// from the live kernel. `bound` caps the whole dump.
pub fn states(bound: Duration) -> Result<Vec<SecurityAssociation>, ProbeError> {
    let request = XfrmMessage::GetDumpSa(netlink_packet_xfrm::state::GetDumpMessage::default());
    dump(&netlink::STATES, request, bound, |bytes| {
        parse_dump(bytes).map(|c| (c.states, c.done))
    })
}

/// Every policy in this network namespace (sockets' own included), from
/// the live kernel. `bound` caps the whole dump.
pub fn policies(bound: Duration) -> Result<Vec<XfrmPolicy>, ProbeError> {
    // The kernel's policy dump reads no filter: the id is sent empty.
    let request = XfrmMessage::GetPolicy(netlink_packet_xfrm::policy::DelGetMessage::default());
    dump(&netlink::POLICIES, request, bound, |bytes| {
        parse_policy_dump(bytes).map(|c| (c.policies, c.done))
    })
}

/// Send `request` as a dump and gather what `parse` makes of the answer.
fn dump<T>(
    what: &Dump,
    request: XfrmMessage,
    bound: Duration,
    parse: impl Fn(&[u8]) -> Result<(Vec<T>, bool), ProbeError>,
) -> Result<Vec<T>, ProbeError> {
    let io_err = |source: io::Error| match source.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => ProbeError::Other(format!(
            "the kernel did not finish the {} dump within {bound:?}",
            what.request_name
        )),
        _ => what.io(source),
    };
    let deadline = Instant::now() + bound;
    let mut socket = Socket::new(NETLINK_XFRM).map_err(io_err)?;
    socket.bind_auto().map_err(io_err)?;
    socket.connect(&SocketAddr::new(0, 0)).map_err(io_err)?;

    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_DUMP;
    header.sequence_number = 1;
    let mut msg = NetlinkMessage::new(header, NetlinkPayload::from(request));
    msg.finalize();
    let mut buf = vec![0u8; msg.buffer_len()];
    msg.serialize(&mut buf);
    socket.send(&buf, 0).map_err(io_err)?;

    let mut out = Vec::new();
    // Large enough for any one message the kernel sends in a dump.
    let mut rx = vec![0u8; 1 << 16];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io_err(io::ErrorKind::TimedOut.into()));
        }
        crate::live::set_receive_timeout(&socket, left).map_err(io_err)?;
        let n = socket.recv(&mut &mut rx[..], 0).map_err(io_err)?;
        if n == 0 {
            return Err(ProbeError::Other(format!(
                "netlink XFRM socket closed during the {} dump",
                what.request_name
            )));
        }
        let (items, done) = parse(&rx[..n])?;
        out.extend(items);
        if done {
            return Ok(out);
        }
    }
}
