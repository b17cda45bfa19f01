//! The IPsec policies (`XFRM_MSG_GETPOLICY` dump, what `ip xfrm policy`
//! lists), typed. A policy says which packets must be transformed and by
//! what kind of SA (its templates); the SA itself comes from the IKE
//! daemon, made ahead of time or on the first packet (an ACQUIRE).

use std::net::IpAddr;

use netlink_packet_xfrm::{XfrmAttrs, XfrmMessage, XFRM_POLICY_MAX};
use serde::{Deserialize, Serialize};

use super::netlink::POLICIES;
use super::selector::{address, Selector};
use crate::facts::ProbeError;

/// One policy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct XfrmPolicy {
    /// The packets it applies to.
    pub selector: Selector,
    pub dir: PolicyDir,
    /// A socket's own policy, not the system's (`socket in` in `ip xfrm
    /// policy`): charon sets one per IKE socket and direction so that its
    /// own IKE traffic is never caught by the system's policies.
    pub socket: bool,
    pub action: PolicyAction,
    pub priority: u32,
    pub index: u32,
    /// What must be applied, in order (`tmpl` lines); none for a policy
    /// that only allows or blocks.
    pub templates: Vec<PolicyTemplate>,
    /// `XFRMA_MARK`: the policy applies only to packets whose mark, under
    /// `mask`, equals `value` (ovs-monitor-ipsec's `skb_mark` shunts).
    pub mark: Option<Mark>,
}

/// `dir` of `ip xfrm policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyDir {
    In,
    Out,
    Fwd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyAction {
    Allow,
    Block,
}

/// One `tmpl` of a policy (`struct xfrm_user_tmpl`): the kind of SA its
/// packets need.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyTemplate {
    /// The SA's ends; 0.0.0.0 in transport mode (the packet's own).
    pub src: IpAddr,
    pub dst: IpAddr,
    /// 50 ESP, 51 AH, 108 IPComp.
    pub proto: u8,
    /// Host byte order; 0 when any SA of the reqid will do (strongSwan ≥
    /// 5.6 writes the outbound SA's SPI once it exists).
    pub spi: u32,
    pub reqid: u32,
    /// 0 transport, 1 tunnel.
    pub mode: u8,
    /// `level use`: a packet may pass without this transform.
    pub optional: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    pub value: u32,
    pub mask: u32,
}

impl XfrmPolicy {
    /// A template of `proto` (ESP: 50) that a packet cannot skip.
    pub fn requires(&self, proto: u8) -> Option<&PolicyTemplate> {
        self.templates
            .iter()
            .find(|t| t.proto == proto && !t.optional)
    }
}

/// What one buffer of a policy dump held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyChunk {
    pub policies: Vec<XfrmPolicy>,
    /// `NLMSG_DONE` was seen: the dump is complete.
    pub done: bool,
}

/// Parse the netlink messages in `bytes` (one or more `recv`s of an
/// `XFRM_MSG_GETPOLICY` dump). An error answer becomes the matching probe
/// error: EPERM is [`ProbeError::PermissionDenied`].
pub fn parse_policy_dump(bytes: &[u8]) -> Result<PolicyChunk, ProbeError> {
    let mut policies = Vec::new();
    let done = POLICIES.walk(bytes, |msg| {
        let XfrmMessage::AddPolicy(m) = msg else {
            return Ok(());
        };
        let info = &m.user_policy_info;
        let selector = Selector::of(&info.selector)?
            .ok_or_else(|| ProbeError::parse("xfrm policy", "a selector of no address family"))?;
        // Socket policies are dumped with XFRM_POLICY_MAX added.
        let (socket, dir) = match info.direction {
            d if d >= XFRM_POLICY_MAX => (true, d - XFRM_POLICY_MAX),
            d => (false, d),
        };
        let dir = match dir {
            0 => PolicyDir::In,
            1 => PolicyDir::Out,
            2 => PolicyDir::Fwd,
            other => {
                return Err(ProbeError::parse(
                    "xfrm policy",
                    format!(
                        "direction {}",
                        u16::from(other) + u16::from(XFRM_POLICY_MAX)
                    ),
                ))
            }
        };
        let action = match info.action {
            0 => PolicyAction::Allow,
            1 => PolicyAction::Block,
            other => return Err(ProbeError::parse("xfrm policy", format!("action {other}"))),
        };
        let mut templates = Vec::new();
        let mut mark = None;
        for attr in &m.nlas {
            match attr {
                XfrmAttrs::Template(list) => {
                    for t in list {
                        templates.push(PolicyTemplate {
                            src: address(t.family, &t.saddr.addr)?,
                            dst: address(t.family, &t.id.daddr.addr)?,
                            proto: t.id.proto,
                            spi: t.id.spi,
                            reqid: t.reqid,
                            mode: t.mode,
                            optional: t.optional != 0,
                        });
                    }
                }
                XfrmAttrs::Mark(m) => {
                    mark = Some(Mark {
                        value: m.value,
                        mask: m.mask,
                    })
                }
                _ => {}
            }
        }
        policies.push(XfrmPolicy {
            selector,
            dir,
            socket,
            action,
            priority: info.priority,
            index: info.index,
            templates,
            mark,
        });
        Ok(())
    })?;
    Ok(PolicyChunk { policies, done })
}
