//! `ipsec.flags`: the config, OVN's northbound database and the local
//! Open_vSwitch database must agree on whether the overlay is encrypted.
//!
//! The daemon sets `NB_Global . ipsec=true` and OVS
//! `other_config:ipsec_encapsulation=true` when IPsec is wanted, and never
//! clears them when it is turned off: the control plane then claims an
//! encrypted cluster that is not (or, turned back on, narrows the guest path
//! from 1442 to 1408 while guests still believe 1442, black-holing large
//! segments until they restart). Three readings, three places; any
//! disagreement is named with where each value was read.

use crate::check::Check;
use crate::ctx::Ctx;
use crate::endpoint::{self, Endpoint};
use crate::expect;
use crate::finding::Finding;
use crate::probe::ovsdb::{self, endpoints, Answer, OvsRow};
use crate::probe::ProbeError;

pub struct IpsecFlags;

/// What was read, or why it could not be.
#[derive(Debug)]
pub struct FlagFacts {
    /// `ipsec_enabled && nodes > 1`, from the config.
    pub ipsec_wanted: bool,
    pub ipsec_enabled: bool,
    pub underlay_mtu: u32,
    /// The NB endpoints used (flag or config): for the remediation command.
    pub nb_endpoints: Vec<Endpoint>,
    /// The Spinifex config the remediation names (the one this run read).
    pub config_file: String,
    pub nb: Result<Answer<Option<bool>>, ProbeError>,
    /// In a cluster run, the node that read NB for the cluster when it is
    /// not this one: `nb` is then not judged here.
    pub nb_read_by: Option<String>,
    pub ovs: Result<Answer<OvsRow>, ProbeError>,
}

impl Check for IpsecFlags {
    fn id(&self) -> &'static str {
        "ipsec.flags"
    }

    fn title(&self) -> &'static str {
        "Config, NB_Global.ipsec and OVS ipsec_encapsulation agree"
    }

    fn explain(&self) -> &'static str {
        "Compares three readings of one setting: whether IPsec is wanted (the config: \
         [network] ipsec_enabled, default true, on a cluster of more than one node), \
         OVN northbound `NB_Global . ipsec` (read over OVSDB JSON-RPC from the \
         ovn_nb_addr raft list, or --nb-db; each member is tried in turn within the \
         probe timeout and the one that answered is reported), and the local \
         Open_vSwitch `other_config:ipsec_encapsulation` (unix:/var/run/openvswitch/db.sock, \
         or --ovs-db).\n\
         \n\
         Why: the Spinifex daemon sets both database flags when IPsec is wanted and never \
         clears them when it is turned off. The control plane then says the cluster is \
         encrypted when it is not; turned back on, the guest path narrows from 1442 to \
         1408 bytes while running guests still believe 1442, which black-holes large \
         segments until the guests are stopped and started.\n\
         \n\
         Fix: the config is the real switch. Clear or set the stale flags with the exact \
         commands the finding prints (`ovn-nbctl --db=\"<NB raft endpoints>\" set NB_Global . \
         ipsec=false`, and on every node `ovs-vsctl remove Open_vSwitch . other_config \
         ipsec_encapsulation`), then stop and start the guests. An unreachable database \
         is an error, never a pass."
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let expect = match ctx.expectations() {
            Ok(e) => e.clone(),
            Err(f) => return f,
        };
        // In a cluster run another node may read NB for everyone; this
        // node still judges its own Open_vSwitch flag.
        let nb_read_by = ctx.opts.ovn_read_by.clone();
        let nb_endpoints = match endpoints::nb(ctx) {
            Ok((list, _)) => list,
            Err(_) if nb_read_by.is_some() => Vec::new(),
            Err(f) => return f,
        };
        let (ovs_endpoint, _) = match endpoints::ovs(ctx) {
            Ok(x) => x,
            Err(f) => return f,
        };
        let budget = endpoints::budget(ctx);
        // The two servers are independent: ask both at once, so a hung NB
        // member does not eat the OVS read's time.
        let (nb, ovs) = std::thread::scope(|s| {
            let nb = s.spawn(|| match &nb_read_by {
                Some(node) => Err(ProbeError::Other(format!("read by {node}"))),
                None => ovsdb::nb_global_ipsec(&nb_endpoints, budget),
            });
            let ovs = ovsdb::ovs_row(&ovs_endpoint, budget);
            let nb = nb
                .join()
                .unwrap_or_else(|_| Err(ProbeError::Other("the NB query panicked".into())));
            (nb, ovs)
        });
        judge(FlagFacts {
            ipsec_wanted: expect.ipsec_wanted,
            ipsec_enabled: expect.ipsec_enabled,
            underlay_mtu: expect.underlay_mtu,
            nb_endpoints,
            config_file: crate::spinifex::config_file(ctx),
            nb,
            nb_read_by,
            ovs,
        })
    }
}

/// OVS reads `other_config` booleans with `smap_get_bool`: only "true" is true.
pub fn ovs_flag_on(value: Option<&str>) -> bool {
    value == Some("true")
}

pub fn judge(facts: FlagFacts) -> Finding {
    let FlagFacts {
        ipsec_wanted,
        ipsec_enabled,
        underlay_mtu,
        nb_endpoints,
        config_file,
        nb,
        nb_read_by,
        ovs,
    } = facts;
    // NB read elsewhere (a cluster run): nothing about it is judged here.
    let nb_err = if nb_read_by.is_none() {
        nb.as_ref().err()
    } else {
        None
    };
    let nb_db = endpoint::join(&nb_endpoints);
    let nb_value = nb.as_ref().ok().map(|a| a.value);
    let ovs_value = ovs
        .as_ref()
        .ok()
        .map(|a| a.value.ipsec_encapsulation.clone());
    let nb_answered = nb.as_ref().ok().map(|a| a.endpoint.to_string());
    let ovs_answered = ovs.as_ref().ok().map(|a| a.endpoint.to_string());

    let evidence = |f: Finding| {
        f.with("ipsec_wanted", ipsec_wanted)
            .with("nb_global_ipsec", nb_value.flatten())
            .with("ovs_ipsec_encapsulation", ovs_value.clone().flatten())
            .with("nb_endpoint", nb_answered.clone())
            .with("ovs_endpoint", ovs_answered.clone())
            .with("nb_endpoints", nb_db.clone())
            .with("nb_read_by", nb_read_by.clone())
    };

    let mut errors = Vec::new();
    if let Some(e) = nb_err {
        errors.push(format!("NB_Global.ipsec could not be read: {e}"));
    }
    if let Err(e) = &ovs {
        errors.push(format!("Open_vSwitch other_config could not be read: {e}"));
    }

    let wanted_word = if ipsec_wanted { "on" } else { "off" };
    let mut wrong = Vec::new();
    let mut fixes = Vec::new();
    if let Some(nb_val) = nb_value {
        let on = nb_val.unwrap_or(false);
        if on != ipsec_wanted {
            let shown = nb_val.map_or("unset (no NB_Global row)".to_owned(), |b| b.to_string());
            wrong.push(format!(
                "NB_Global.ipsec is {shown} (read from {})",
                nb_answered.as_deref().unwrap_or("?")
            ));
            fixes.push(format!(
                "ovn-nbctl --db=\"{nb_db}\" set NB_Global . ipsec={ipsec_wanted}   # once, against the NB raft endpoints (the local unix socket fails on a cluster)"
            ));
        }
    }
    if let Some(ovs_val) = &ovs_value {
        let on = ovs_flag_on(ovs_val.as_deref());
        if on != ipsec_wanted {
            wrong.push(format!(
                "Open_vSwitch other_config:ipsec_encapsulation is {} (read from {})",
                ovs_val
                    .as_deref()
                    .map_or("unset".to_owned(), |v| format!("{v:?}")),
                ovs_answered.as_deref().unwrap_or("?")
            ));
            fixes.push(if ipsec_wanted {
                format!("ovs-vsctl set Open_vSwitch . other_config:ipsec_encapsulation=true   # on this node; `{}` re-applies it with the certificate, private_key and ca_cert", crate::spinifex::restart_daemon())
            } else {
                "ovs-vsctl remove Open_vSwitch . other_config ipsec_encapsulation   # on every node".to_owned()
            });
        }
    }

    if !wrong.is_empty() {
        let config = format!(
            "the config wants IPsec {wanted_word} (ipsec_enabled = {ipsec_enabled}{})",
            if ipsec_enabled && !ipsec_wanted {
                ", but this is a single-node cluster"
            } else {
                ""
            }
        );
        let unread = if errors.is_empty() {
            String::new()
        } else {
            format!("; also {}", errors.join("; "))
        };
        let consequence = if ipsec_wanted {
            "the overlay may be sending guest traffic in clear"
        } else {
            "the control plane claims an encrypted cluster that is not (and turning IPsec back on narrows guests to 1408 while they believe 1442)"
        };
        // This node's ovn-encap-ip says whether the overlay runs over IPv6,
        // which costs 20 bytes of guest MTU.
        let ipv6 = ovs
            .as_ref()
            .ok()
            .and_then(|a| a.value.ovn_encap_ip.as_deref())
            .and_then(|t| ovsdb::parse_ip_list(t).ok())
            .is_some_and(|ips| ips.iter().any(std::net::IpAddr::is_ipv6));
        let from = expect::guest_mtu(underlay_mtu, !ipsec_enabled, ipv6);
        let to = expect::guest_mtu(underlay_mtu, ipsec_enabled, ipv6);
        fixes.push(format!(
            "the config is the real switch: keep `ipsec_enabled = {ipsec_enabled}` under [network] in {config_file} the same on every node and `{}`",
            crate::spinifex::restart_daemon()
        ));
        fixes.push(format!(
            "stop and start every running guest (not a reboot from inside): host_mtu and the DHCP lease (up to an hour) carry the guest MTU{}",
            if from != to && ipsec_enabled == ipsec_wanted { format!(", which moves {from} -> {to} when IPsec changes") } else { String::new() }
        ));
        return evidence(
            Finding::fail(format!(
                "{config}, but {}: {consequence}{unread}",
                wrong.join(" and ")
            ))
            .fixes(fixes),
        );
    }
    if !errors.is_empty() {
        // Unreadable never passes. When every failure is a permission
        // problem, it is a skip naming the privilege; anything else is an
        // error.
        let denied: Vec<&str> = [nb_err, ovs.as_ref().err()]
            .into_iter()
            .flatten()
            .filter_map(|e| match e {
                ProbeError::PermissionDenied { needs, .. } => Some(needs.as_str()),
                _ => None,
            })
            .collect();
        if denied.len() == errors.len() {
            return evidence(Finding::skip(crate::finding::SkipReason::NeedsPrivilege(
                denied.join(" and "),
            )));
        }
        return evidence(Finding::error(errors.join("; ")));
    }
    if let Some(node) = &nb_read_by {
        return evidence(Finding::pass(format!(
            "IPsec {wanted_word} in the config and ipsec_encapsulation ({}); NB_Global.ipsec is cluster-wide, read once by {node}",
            ovs_answered.as_deref().unwrap_or("?")
        )));
    }
    evidence(Finding::pass(format!(
        "IPsec {wanted_word} in the config, NB_Global.ipsec ({}) and ipsec_encapsulation ({})",
        nb_answered.as_deref().unwrap_or("?"),
        ovs_answered.as_deref().unwrap_or("?")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Status;

    fn ep(s: &str) -> Endpoint {
        Endpoint::parse(s).unwrap()
    }

    fn nb_list() -> Vec<Endpoint> {
        Endpoint::parse_list("tcp:198.18.3.181:6641,tcp:198.18.3.182:6641,tcp:198.18.3.183:6641")
            .unwrap()
    }

    fn facts(wanted: bool, nb: Option<bool>, ovs: Option<&str>) -> FlagFacts {
        FlagFacts {
            ipsec_wanted: wanted,
            ipsec_enabled: wanted,
            underlay_mtu: 1500,
            nb_endpoints: nb_list(),
            config_file: "/etc/spinifex/spinifex.toml".into(),
            nb: Ok(Answer {
                value: nb,
                endpoint: ep("tcp:198.18.3.182:6641"),
                passed_over: vec![],
            }),
            nb_read_by: None,
            ovs: Ok(Answer {
                value: OvsRow {
                    ipsec_encapsulation: ovs.map(str::to_owned),
                    ovn_encap_ip: None,
                },
                endpoint: ep("unix:/var/run/openvswitch/db.sock"),
                passed_over: vec![],
            }),
        }
    }

    #[test]
    fn consistent_states_pass() {
        let f = judge(facts(true, Some(true), Some("true")));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(f.evidence["nb_endpoint"], "tcp:198.18.3.182:6641");
        let f = judge(facts(false, Some(false), None));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(
            f.evidence["ovs_ipsec_encapsulation"],
            serde_json::Value::Null
        );
    }

    #[test]
    fn stale_true_after_disabling_fails_with_both_commands() {
        // spinifex-facts.md: "When disabled it never clears them".
        let f = judge(facts(false, Some(true), Some("true")));
        assert_eq!(f.status, Status::Fail);
        assert!(
            f.summary
                .contains("NB_Global.ipsec is true (read from tcp:198.18.3.182:6641)"),
            "{}",
            f.summary
        );
        assert!(
            f.summary.contains("ipsec_encapsulation is \"true\""),
            "{}",
            f.summary
        );
        assert!(f.remediation[0].starts_with(
            "ovn-nbctl --db=\"tcp:198.18.3.181:6641,tcp:198.18.3.182:6641,tcp:198.18.3.183:6641\" set NB_Global . ipsec=false"
        ));
        assert!(f.remediation[1]
            .starts_with("ovs-vsctl remove Open_vSwitch . other_config ipsec_encapsulation"));
        assert!(
            f.remediation.iter().any(|r| r.contains("1408 -> 1442")),
            "{:?}",
            f.remediation
        );
        assert_eq!(f.evidence["ipsec_wanted"], false);
        assert_eq!(f.evidence["nb_global_ipsec"], true);
    }

    #[test]
    fn nb_on_and_ovs_off_fails_naming_ovs() {
        let f = judge(facts(true, Some(true), Some("false")));
        assert_eq!(f.status, Status::Fail);
        assert!(!f.summary.contains("NB_Global.ipsec is"), "{}", f.summary);
        assert!(f.remediation[0]
            .starts_with("ovs-vsctl set Open_vSwitch . other_config:ipsec_encapsulation=true"));
    }

    #[test]
    fn unreachable_nb_is_an_error_never_a_pass() {
        let mut x = facts(false, None, None);
        x.nb = Err(ProbeError::Other(
            "no member of OVN_Northbound at ... answered".into(),
        ));
        let f = judge(x);
        assert_eq!(f.status, Status::Error);
        assert!(
            f.summary.contains("NB_Global.ipsec could not be read"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn a_disagreement_still_fails_when_the_other_side_is_unreadable() {
        let mut x = facts(false, None, Some("true"));
        x.nb = Err(ProbeError::Other("down".into()));
        let f = judge(x);
        assert_eq!(f.status, Status::Fail);
        assert!(
            f.summary
                .contains("also NB_Global.ipsec could not be read: down"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn a_socket_we_may_not_open_skips() {
        let mut x = facts(false, Some(false), None);
        x.ovs = Err(ProbeError::PermissionDenied {
            what: "unix:/var/run/openvswitch/db.sock".into(),
            needs: "root to connect to unix:/var/run/openvswitch/db.sock".into(),
        });
        assert_eq!(judge(x).status, Status::Skip);
    }

    #[test]
    fn both_sockets_out_of_reach_skip_naming_both() {
        let denied = |p: &str| ProbeError::PermissionDenied {
            what: p.into(),
            needs: format!("root to connect to {p}"),
        };
        let mut x = facts(false, None, None);
        x.nb = Err(denied("unix:/run/ovn/ovnnb_db.sock"));
        x.ovs = Err(denied("unix:/var/run/openvswitch/db.sock"));
        let f = judge(x);
        assert_eq!(f.status, Status::Skip);
        assert_eq!(
            f.summary,
            "needs root to connect to unix:/run/ovn/ovnnb_db.sock and root to connect to unix:/var/run/openvswitch/db.sock"
        );
        // One denied and one down is an error: the outage is not a privilege matter.
        let mut x = facts(false, None, None);
        x.nb = Err(denied("unix:/run/ovn/ovnnb_db.sock"));
        x.ovs = Err(ProbeError::Other("down".into()));
        assert_eq!(judge(x).status, Status::Error);
    }

    #[test]
    fn nb_read_by_another_node_judges_only_this_nodes_ovs_flag() {
        let mut x = facts(false, None, Some("true"));
        x.nb = Err(ProbeError::Other("read by n0".into()));
        x.nb_read_by = Some("n0".into());
        let f = judge(x);
        assert_eq!(f.status, Status::Fail, "{}", f.summary);
        assert!(!f.summary.contains("NB_Global"), "{}", f.summary);
        assert!(f.remediation[0].starts_with("ovs-vsctl remove"));
        let mut x = facts(true, None, Some("true"));
        x.nb = Err(ProbeError::Other("read by n0".into()));
        x.nb_read_by = Some("n0".into());
        let f = judge(x);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert!(
            f.summary
                .ends_with("NB_Global.ipsec is cluster-wide, read once by n0"),
            "{}",
            f.summary
        );
        assert_eq!(f.evidence["nb_read_by"], "n0");
    }
}
