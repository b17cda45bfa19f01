//! The judgement of `ipsec.errors`, pure: two readings of
//! `/proc/net/xfrm_stat` in, the counters that advanced and those that only
//! counted before the window out, each with what it means for geneve. No
//! words of the verdict here ([`super::words`] says it).

use crate::facts::xfrm::XfrmStat;

/// A counter that moved during the window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Moved {
    pub name: String,
    /// How much it advanced during the window.
    pub delta: u64,
    /// Its value at the end of the window (since boot).
    pub total: u64,
}

/// What the two readings show.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Counters that advanced during the window, in the file's order.
    pub advanced: Vec<Moved>,
    /// Counters above 0 that did not move: drops before the window.
    pub history: Vec<(String, u64)>,
}

/// Compare the readings at the start and the end of the window. A counter
/// only one reading has (it cannot be, on one kernel) is left out; a
/// counter that went down (it cannot, within one namespace) did not move.
pub fn analyse(start: &XfrmStat, end: &XfrmStat) -> Analysis {
    let mut out = Analysis::default();
    for (name, total) in &end.counters {
        let Some(before) = start.get(name) else {
            continue;
        };
        let delta = total.saturating_sub(before);
        if delta > 0 {
            out.advanced.push(Moved {
                name: name.clone(),
                delta,
                total: *total,
            });
        } else if *total > 0 {
            out.history.push((name.clone(), *total));
        }
    }
    out
}

/// The counters the kernel lab saw move with geneve between namespace
/// nodes on Debian's 6.1 (strongSwan configured by ovs-monitor-ipsec), and
/// the ones the issue names besides: what each means on a Spinifex node.
/// `wanted` is whether the config wants IPsec (`None`: no config).
pub fn meaning(name: &str, wanted: Option<bool>) -> &'static str {
    match name {
        "XfrmOutNoStates" if wanted == Some(false) => {
            "IPsec is not wanted, yet a policy still demands ESP for what this node sends (ipsec.policy names it) and no SA exists: each such packet is dropped"
        }
        "XfrmOutNoStates" => {
            "a policy demands ESP for what this node sends but no SA exists (IKE never completed, or is pending toward that peer): about one per geneve packet sent is dropped"
        }
        "XfrmInTmplMismatch" => {
            "geneve from a peer arrived in plaintext (or under the wrong SA) and met this node's inbound policy, which demands ESP: dropped; that peer's IPsec is not up (see ipsec.policy and ipsec.daemon there)"
        }
        "XfrmInNoStates" => {
            "a peer encrypts to this node, which holds no SA for it (this side lost its SAs: a flush or a charon restart): the peer's geneve is dropped on arrival"
        }
        "XfrmOutPolBlock" => {
            "a block policy selects what this node sends (type=drop: ovs-monitor-ipsec's prevent_unencrypted shunts, or one added by hand): dropped"
        }
        "XfrmInPolBlock" => "a block policy selects what arrives: dropped",
        "XfrmInStateProtoError" => {
            "ESP from a peer failed to authenticate or decrypt under the SA it names (the two ends' keys differ: an SA replaced behind the IKE daemon's back, or a rekey only one end took): dropped"
        }
        "XfrmOutStateProtoError" => "ESP could not be applied to what this node sends: dropped",
        "XfrmInNoPols" => {
            "a packet that arrived through an SA found no inbound policy to accept it (a tunnel-mode SA without its policy): dropped"
        }
        "XfrmInStateSeqError" => {
            "ESP from a peer arrived outside the SA's replay window (reordered beyond it, or replayed): dropped"
        }
        "XfrmOutStateSeqError" => {
            "an SA's sequence number ran out before it was rekeyed: what it would carry is dropped"
        }
        "XfrmInStateExpired" | "XfrmOutStateExpired" => {
            "an SA past its lifetime was used (rekeying is late or failing): dropped"
        }
        "XfrmAcquireError" => {
            "a packet used an SA the IKE daemon had not finished (an ACQUIRE state): dropped"
        }
        "XfrmInStateMismatch" => {
            "an SA's options do not fit what arrived (UDP encapsulation, NAT traversal, on one end only): dropped"
        }
        "XfrmInStateModeError" | "XfrmOutStateModeError" => {
            "the SA's mode (transport or tunnel) failed on the packet: dropped"
        }
        "XfrmInStateInvalid" | "XfrmOutStateInvalid" => {
            "an SA no longer valid (being deleted or expired) was used: dropped"
        }
        "XfrmInStateDirError" | "XfrmOutStateDirError" => {
            "an SA installed for the other direction was used: dropped"
        }
        "XfrmOutPolDead" => "a policy being deleted was used: dropped",
        "XfrmOutPolError" | "XfrmInPolError" => "a policy could not be applied: dropped",
        "XfrmOutBundleGenError" | "XfrmOutBundleCheckError" => {
            "the kernel could not build the transform for what this node sends (a route or SA problem): dropped"
        }
        "XfrmInError" => {
            "an arriving IPsec packet was dropped for a reason no other counter names"
        }
        "XfrmOutError" => "an outgoing packet was dropped by the IPsec layer for a reason no other counter names",
        "XfrmInBufferError" => "no memory for an arriving IPsec packet: dropped",
        "XfrmInHdrError" => "an arriving IPsec packet had a bad header: dropped",
        "XfrmFwdHdrError" => "a forwarded packet was refused by the IPsec layer: dropped",
        "XfrmInIptfsError" | "XfrmOutNoQueueSpace" => {
            "IP-TFS (not used by OVN) dropped a packet"
        }
        _ => "the IPsec layer dropped a packet (Documentation/networking/xfrm_proc.rst in the kernel names it)",
    }
}

/// What to do about a counter that advanced: the fix of its cause, when
/// the counter says which.
pub fn remedy(name: &str, wanted: Option<bool>) -> Option<&'static str> {
    Some(match name {
        "XfrmOutNoStates" | "XfrmAcquireError" if wanted == Some(false) => {
            "IPsec is not wanted: `spx doctor --check ipsec.policy` names the leftover policies; stop openvswitch-ipsec and charon, then `ip xfrm policy flush` (only when nothing else here uses IPsec)"
        }
        "XfrmOutNoStates" | "XfrmAcquireError" => {
            "IKE has not completed toward some peer: `spx doctor --check ipsec.xfrm,ipsec.policy` names which; on that peer openvswitch-ipsec and charon must run (`systemctl status openvswitch-ipsec`, `ipsec statusall`), and both ends must trust the cluster CA"
        }
        "XfrmInTmplMismatch" => {
            "a peer sends geneve in clear: `spx doctor --cluster --check ipsec` names it (cluster.ipsec); there `systemctl restart openvswitch-ipsec` (and check ipsec.daemon)"
        }
        "XfrmInNoStates" => {
            "this node holds no SA for what a peer encrypts to it: `systemctl restart openvswitch-ipsec` here (ovs-monitor-ipsec re-initiates every tunnel, both ends get new SAs); `ip xfrm state` shows what is held"
        }
        "XfrmInStateProtoError" | "XfrmInStateSeqError" | "XfrmInStateExpired"
        | "XfrmOutStateExpired" | "XfrmOutStateSeqError" | "XfrmInStateMismatch" => {
            "the two ends of a pair disagree on an SA: `spx doctor --cluster --check ipsec` names the pair (cluster.sa-pairs); `systemctl restart openvswitch-ipsec` on both of its nodes"
        }
        "XfrmOutPolBlock" | "XfrmInPolBlock" => {
            "`ip xfrm policy` shows the block policy (action block); ovs-monitor-ipsec's prevent_unencrypted shunt drops only packets of its skb_mark that no ESP policy takes: `spx doctor --check ipsec.policy`"
        }
        _ => return None,
    })
}
