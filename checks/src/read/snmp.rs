//! UDP receive-buffer drops from /proc/net/snmp and /proc/net/snmp6: the
//! counters `nstat -az | grep UdpRcvbufErrors` shows. Both files are per
//! network namespace, so a run under `ip netns exec` reads that namespace.

use std::io::BufRead;

use procfs::FromBufRead;

use crate::facts::ProbeError;
use crate::host::HostRef;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpRcvbufErrors {
    /// `Udp: RcvbufErrors` in /proc/net/snmp.
    pub udp: u64,
    /// `Udp6RcvbufErrors` in /proc/net/snmp6; `None` without IPv6.
    pub udp6: Option<u64>,
}

impl UdpRcvbufErrors {
    pub fn total(&self) -> u64 {
        self.udp + self.udp6.unwrap_or(0)
    }
}

pub const SNMP: &str = "/proc/net/snmp";
pub const SNMP6: &str = "/proc/net/snmp6";

/// Read the counters of this process's network namespace (snmp6 is absent
/// without IPv6).
pub fn read_udp_rcvbuf_errors(host: HostRef<'_>) -> Result<UdpRcvbufErrors, ProbeError> {
    let snmp = host.read_file(SNMP)?;
    let snmp6 = match host.read_file(SNMP6) {
        Ok(text) => Some(text),
        Err(ProbeError::NotFound(_)) => None,
        Err(e) => return Err(e),
    };
    parse_udp_rcvbuf_errors(snmp.as_bytes(), snmp6.as_deref().map(str::as_bytes))
}

/// Parse recorded text of the two files (snmp6 absent without IPv6).
pub fn parse_udp_rcvbuf_errors<R: BufRead>(
    snmp: R,
    snmp6: Option<R>,
) -> Result<UdpRcvbufErrors, ProbeError> {
    let udp = procfs::net::Snmp::from_buf_read(snmp)
        .map_err(|e| ProbeError::parse(SNMP, e.to_string()))?
        .udp_rcvbuf_errors;
    let udp6 = snmp6
        .map(|r| {
            procfs::net::Snmp6::from_buf_read(r)
                .map(|s| s.udp_rcvbuf_errors)
                .map_err(|e| ProbeError::parse(SNMP6, e.to_string()))
        })
        .transpose()?;
    Ok(UdpRcvbufErrors { udp, udp6 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_live_namespace() {
        let c = read_udp_rcvbuf_errors(crate::live::test_host())
            .expect("/proc/net/snmp is world-readable");
        assert!(c.total() >= c.udp);
    }

    #[test]
    fn parses_recorded_snmp() {
        // captured on Debian 12, kernel 6.18 (this project's CI machine),
        // with RcvbufErrors edited to the seed's 80k figure.
        let snmp = "Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams InUnknownProtos InDiscards InDelivers OutRequests OutDiscards OutNoRoutes ReasmTimeout ReasmReqds ReasmOKs ReasmFails FragOKs FragFails FragCreates OutTransmits
Ip: 2 64 10106 0 0 0 0 0 10106 7591 0 0 0 0 0 0 0 0 0 7591
Icmp: InMsgs InErrors InCsumErrors InDestUnreachs InTimeExcds InParmProbs InSrcQuenchs InRedirects InEchos InEchoReps InTimestamps InTimestampReps InAddrMasks InAddrMaskReps OutMsgs OutErrors OutRateLimitGlobal OutRateLimitHost OutDestUnreachs OutTimeExcds OutParmProbs OutSrcQuenchs OutRedirects OutEchos OutEchoReps OutTimestamps OutTimestampReps OutAddrMasks OutAddrMaskReps
Icmp: 1 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
IcmpMsg: InType3
IcmpMsg: 1
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors
Tcp: 1 200 120000 -1 19 2 0 7 0 10070 7564 0 0 9 0
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 85000 0 80412 36 80412 0 0 0 0
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
UdpLite: 0 0 0 0 0 0 0 0 0
";
        let c = parse_udp_rcvbuf_errors(snmp.as_bytes(), None).unwrap();
        assert_eq!(
            c,
            UdpRcvbufErrors {
                udp: 80_412,
                udp6: None
            }
        );
        assert!(parse_udp_rcvbuf_errors("garbage\n".as_bytes(), None).is_err());
    }
}
