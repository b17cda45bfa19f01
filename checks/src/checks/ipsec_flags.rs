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

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::endpoint::{self, Endpoint};
use crate::evidence::Evidence;
use crate::expect;
use crate::facts::ovsdb::{Answer, OvsRow};
use crate::facts::ProbeError;
use crate::finding::{Finding, SkipReason, Subject};
use crate::kind::most_severe;
use crate::read::ovsdb;
use crate::targets::ovsdb_endpoints as endpoints;

pub struct IpsecFlags;

crate::kinds! {
    /// What `ipsec.flags` can say, per database and for the check.
    pub enum IpsecFlagsKind for "ipsec.flags" {
        /// The config, NB_Global.ipsec and OVS ipsec_encapsulation agree.
        Ok = pass("ok"),
        /// NB_Global.ipsec is true while the config does not want IPsec: the flag the daemon never clears, so the control plane claims an encrypted cluster that is not.
        StaleNbIpsec = fail("stale-nb-ipsec"),
        /// NB_Global.ipsec is not true while the config wants IPsec: the overlay may be sending guest traffic in clear.
        MissingNbIpsec = fail("missing-nb-ipsec"),
        /// OVS other_config:ipsec_encapsulation is true while the config does not want IPsec (left behind on this node).
        StaleOvsIpsec = fail("stale-ovs-ipsec"),
        /// OVS other_config:ipsec_encapsulation is not true while the config wants IPsec.
        MissingOvsIpsec = fail("missing-ovs-ipsec"),
        /// NB_Global or the local Open_vSwitch database could not be read (down, no answer within the probe timeout): never a pass.
        DbUnreachable = error("db-unreachable"),
    }
}

static DECLARED: Declared = Declared::of::<IpsecFlagsKind, IpsecFlagsEvidence>();

/// The three readings and where the two database values were read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpsecFlagsEvidence {
    /// `ipsec_enabled && nodes > 1`, from the config.
    pub ipsec_wanted: bool,
    /// `NB_Global . ipsec`; null when unset or unread.
    pub nb_global_ipsec: Option<bool>,
    /// `other_config:ipsec_encapsulation` as written; null when unset or unread.
    pub ovs_ipsec_encapsulation: Option<String>,
    /// The NB member that answered.
    pub nb_endpoint: Option<String>,
    /// The Open_vSwitch endpoint that answered.
    pub ovs_endpoint: Option<String>,
    /// The NB raft list asked, comma-separated.
    pub nb_endpoints: String,
    /// In a cluster run, the node that read NB for the cluster when it is
    /// not this one (NB is then not judged here); null otherwise.
    pub nb_read_by: Option<String>,
}

impl Evidence for IpsecFlagsEvidence {}

/// Subjects of the per-database findings.
const NB_SUBJECT: &str = "NB_Global.ipsec";
const OVS_SUBJECT: &str = "Open_vSwitch other_config:ipsec_encapsulation";

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
    /// Why NB is not read at all (no `--nb-db`, no `ovn_nb_addr`): the
    /// local row is still judged, as on every other node, and with it
    /// agreeing the check skips for this reason.
    pub nb_unnamed: Option<String>,
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
         is an error, never a pass. The local row is judged the same way on every node: \
         where NB is named nowhere (no --nb-db, no ovn_nb_addr), or read by another node \
         in a cluster run, the local flag still fails when stale and errors when \
         unreadable; with it agreeing, a node with no NB to read skips for that reason."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let expect = match ctx.expectations() {
            Ok(e) => e.clone(),
            Err(f) => return f,
        };
        // In a cluster run another node may read NB for everyone, and a
        // config may name no NB at all; either way this node still judges
        // its own Open_vSwitch flag, the same way on every node.
        let nb_read_by = ctx.opts.ovn_read_by.clone();
        let (nb_endpoints, nb_unnamed) = match endpoints::nb(ctx) {
            Ok((list, _)) => (list, None),
            Err(_) if nb_read_by.is_some() => (Vec::new(), None),
            Err(_) if endpoints::nb_unnamed(ctx) => {
                (Vec::new(), Some(endpoints::NB_UNNAMED.to_owned()))
            }
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
            let nb = s.spawn(|| match (&nb_read_by, &nb_unnamed) {
                (Some(node), _) => Err(ProbeError::Other(format!("read by {node}"))),
                (_, Some(why)) => Err(ProbeError::Other(why.clone())),
                (None, None) => ovsdb::nb_global_ipsec(ctx.host(), &nb_endpoints, budget),
            });
            let ovs = ovsdb::ovs_row(ctx.host(), &ovs_endpoint, budget);
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
            config_file: ctx.config_file(),
            nb,
            nb_read_by,
            nb_unnamed,
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
        nb_unnamed,
        ovs,
    } = facts;
    // NB read elsewhere (a cluster run) or named nowhere: nothing about it
    // is judged here.
    let nb_err = if nb_read_by.is_none() && nb_unnamed.is_none() {
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
    let evidence = IpsecFlagsEvidence {
        ipsec_wanted,
        nb_global_ipsec: nb_value.flatten(),
        ovs_ipsec_encapsulation: ovs_value.clone().flatten(),
        nb_endpoint: nb_answered.clone(),
        ovs_endpoint: ovs_answered.clone(),
        nb_endpoints: nb_db.clone(),
        nb_read_by: nb_read_by.clone(),
    };

    // One subject per database: what it says, or why it said nothing.
    let mut subjects = Vec::new();
    if let Some(why) = &nb_unnamed {
        subjects.push(Subject::skipped(
            NB_SUBJECT,
            SkipReason::NotApplicable(why.clone()),
        ));
    }
    let mut errors = Vec::new();
    let mut denied = Vec::new();
    for (subject, result) in [(NB_SUBJECT, nb_err), (OVS_SUBJECT, ovs.as_ref().err())] {
        let Some(e) = result else { continue };
        let what = if subject == NB_SUBJECT {
            "NB_Global.ipsec"
        } else {
            "Open_vSwitch other_config"
        };
        errors.push(format!("{what} could not be read: {e}"));
        match e {
            ProbeError::PermissionDenied { needs, .. } => {
                denied.push(needs.as_str());
                subjects.push(Subject::skipped(
                    subject,
                    SkipReason::NeedsPrivilege(needs.clone()),
                ));
            }
            _ => subjects.push(Subject::new(
                IpsecFlagsKind::DbUnreachable,
                subject,
                format!("could not be read: {e}"),
            )),
        }
    }

    let wanted_word = if ipsec_wanted { "on" } else { "off" };
    // Each database's reading: (subject, on?, as shown, where it was read,
    // its stale and missing kinds, the command that sets it right).
    let nb_reading = nb_value.map(|v| {
        (
            NB_SUBJECT,
            v.unwrap_or(false),
            v.map_or("unset (no NB_Global row)".to_owned(), |b| b.to_string()),
            nb_answered.as_deref(),
            (IpsecFlagsKind::StaleNbIpsec, IpsecFlagsKind::MissingNbIpsec),
            format!(
                "ovn-nbctl --db=\"{nb_db}\" set NB_Global . ipsec={ipsec_wanted}   # once, against the NB raft endpoints (the local unix socket fails on a cluster)"
            ),
        )
    });
    let ovs_reading = ovs_value.as_ref().map(|v| {
        (
            OVS_SUBJECT,
            ovs_flag_on(v.as_deref()),
            v.as_deref().map_or("unset".to_owned(), |v| format!("{v:?}")),
            ovs_answered.as_deref(),
            (IpsecFlagsKind::StaleOvsIpsec, IpsecFlagsKind::MissingOvsIpsec),
            if ipsec_wanted {
                format!("ovs-vsctl set Open_vSwitch . other_config:ipsec_encapsulation=true   # on this node; `{}` re-applies it with the certificate, private_key and ca_cert", crate::spinifex::restart_daemon())
            } else {
                "ovs-vsctl remove Open_vSwitch . other_config ipsec_encapsulation   # on every node".to_owned()
            },
        )
    });
    let mut wrong = Vec::new();
    let mut fixes = Vec::new();
    for (subject, on, shown, read_from, (stale, missing), fix) in
        nb_reading.into_iter().chain(ovs_reading)
    {
        let read = format!("{shown} (read from {})", read_from.unwrap_or("?"));
        if on == ipsec_wanted {
            subjects.push(Subject::new(IpsecFlagsKind::Ok, subject, read));
            continue;
        }
        let kind = if on { stale } else { missing };
        wrong.push((kind, format!("{subject} is {read}")));
        subjects.push(Subject::new(
            kind,
            subject,
            format!("{read}, the config wants IPsec {wanted_word}"),
        ));
        fixes.push(fix);
    }

    let finding = if let Some(kind) = most_severe(wrong.iter().map(|(k, _)| *k)) {
        let said: Vec<&str> = wrong.iter().map(|(_, text)| text.as_str()).collect();
        // This node's ovn-encap-ip says whether the overlay runs over IPv6,
        // which costs 20 bytes of guest MTU.
        let ipv6 = ovs
            .as_ref()
            .ok()
            .and_then(|a| a.value.ovn_encap_ip.as_deref())
            .and_then(|t| crate::facts::ovsdb::parse_ip_list(t).ok())
            .is_some_and(|ips| ips.iter().any(std::net::IpAddr::is_ipv6));
        disagreement(kind, &said, &errors, ipsec_wanted, ipsec_enabled)
            .fixes(fixes)
            .fixes(restart_steps(
                Mtus {
                    ipsec_wanted,
                    ipsec_enabled,
                    underlay_mtu,
                    ipv6,
                },
                &config_file,
            ))
    } else if !errors.is_empty() {
        // Unreadable never passes. When every failure is a permission
        // problem, it is a skip naming the privilege; anything else is an
        // error.
        if denied.len() == errors.len() {
            Finding::skip(SkipReason::NeedsPrivilege(denied.join(" and ")))
        } else {
            Finding::new(IpsecFlagsKind::DbUnreachable, errors.join("; "))
        }
    } else if let Some(why) = &nb_unnamed {
        // The local row agrees; NB, named nowhere, is not judged: a skip
        // for that reason, as before the local row was read here.
        Finding::skip(SkipReason::NotApplicable(format!(
            "{why}; the local ipsec_encapsulation agrees with the config ({})",
            ovs_answered.as_deref().unwrap_or("?")
        )))
    } else if let Some(node) = &nb_read_by {
        Finding::new(
            IpsecFlagsKind::Ok,
            format!(
                "IPsec {wanted_word} in the config and ipsec_encapsulation ({}); NB_Global.ipsec is cluster-wide, read once by {node}",
                ovs_answered.as_deref().unwrap_or("?")
            ),
        )
    } else {
        Finding::new(
            IpsecFlagsKind::Ok,
            format!(
                "IPsec {wanted_word} in the config, NB_Global.ipsec ({}) and ipsec_encapsulation ({})",
                nb_answered.as_deref().unwrap_or("?"),
                ovs_answered.as_deref().unwrap_or("?")
            ),
        )
    };
    finding.evidence(&evidence).subjects(subjects)
}

/// A fail: the databases whose readings are in `wrong` disagree with the
/// config. The remediation is added by the caller, database commands first.
fn disagreement(
    kind: IpsecFlagsKind,
    wrong: &[&str],
    errors: &[String],
    ipsec_wanted: bool,
    ipsec_enabled: bool,
) -> Finding {
    let wanted_word = if ipsec_wanted { "on" } else { "off" };
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
    Finding::new(
        kind,
        format!(
            "{config}, but {}: {consequence}{unread}",
            wrong.join(" and ")
        ),
    )
}

/// What the guest MTU follows: IPsec wanted and configured, the underlay
/// MTU and its family.
struct Mtus {
    ipsec_wanted: bool,
    ipsec_enabled: bool,
    underlay_mtu: u32,
    ipv6: bool,
}

/// After the database commands: the config (`config_file`, the one this run
/// read) is the switch, and guests carry the old MTU until stopped and
/// started.
fn restart_steps(m: Mtus, config_file: &str) -> [String; 2] {
    let Mtus {
        ipsec_wanted,
        ipsec_enabled,
        underlay_mtu,
        ipv6,
    } = m;
    let from = expect::guest_mtu(underlay_mtu, !ipsec_enabled, ipv6);
    let to = expect::guest_mtu(underlay_mtu, ipsec_enabled, ipv6);
    [
        format!(
            "the config is the real switch: keep `ipsec_enabled = {ipsec_enabled}` under [network] in {config_file} the same on every node and `{}`",
            crate::spinifex::restart_daemon()
        ),
        format!(
            "stop and start every running guest (not a reboot from inside): host_mtu and the DHCP lease (up to an hour) carry the guest MTU{}",
            if from != to && ipsec_enabled == ipsec_wanted {
                format!(", which moves {from} -> {to} when IPsec changes")
            } else {
                String::new()
            }
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Status;

    /// Every verdict these tests see is also checked against the schema.
    fn judge(facts: FlagFacts) -> Finding {
        crate::schema_check::valid("ipsec.flags", super::judge(facts))
    }

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
            nb_unnamed: None,
            ovs: Ok(Answer {
                value: OvsRow {
                    ipsec_encapsulation: ovs.map(str::to_owned),
                    ..OvsRow::default()
                },
                endpoint: ep("unix:/var/run/openvswitch/db.sock"),
                passed_over: vec![],
            }),
        }
    }

    #[test]
    fn consistent_states_pass() {
        let f = judge(facts(true, Some(true), Some("true")));
        crate::snapshot::snapshot!("ipsec.flags", f);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(f.evidence["nb_endpoint"], "tcp:198.18.3.182:6641");
        let f = judge(facts(false, Some(false), None));
        crate::snapshot::snapshot!("ipsec.flags", f);
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
        crate::snapshot::snapshot!("ipsec.flags", f);
        assert_eq!(f.status, Status::Fail);
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
        crate::snapshot::snapshot!("ipsec.flags", f);
        assert_eq!(f.status, Status::Fail);
    }

    #[test]
    fn unreachable_nb_is_an_error_never_a_pass() {
        let mut x = facts(false, None, None);
        x.nb = Err(ProbeError::Other(
            "no member of OVN_Northbound at ... answered".into(),
        ));
        let f = judge(x);
        crate::snapshot::snapshot!("ipsec.flags", f);
        assert_eq!(f.status, Status::Error);
    }

    #[test]
    fn a_disagreement_still_fails_when_the_other_side_is_unreadable() {
        let mut x = facts(false, None, Some("true"));
        x.nb = Err(ProbeError::Other("down".into()));
        let f = judge(x);
        crate::snapshot::snapshot!("ipsec.flags", f);
        assert_eq!(f.status, Status::Fail);
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
        crate::snapshot::snapshot!("ipsec.flags", f);
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
        crate::snapshot::snapshot!("ipsec.flags", f);
        assert_eq!(f.status, Status::Fail, "{}", f.summary);
        let mut x = facts(true, None, Some("true"));
        x.nb = Err(ProbeError::Other("read by n0".into()));
        x.nb_read_by = Some("n0".into());
        let f = judge(x);
        crate::snapshot::snapshot!("ipsec.flags", f);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert_eq!(f.evidence["nb_read_by"], "n0");
    }

    /// With no NB named, the local row is judged as on a node told another
    /// reads NB: a stale flag fails, an unreadable database is an error,
    /// and only an agreeing row leaves the skip for want of NB.
    #[test]
    fn no_nb_named_still_judges_the_local_row_like_every_other_node() {
        let unnamed = |mut x: FlagFacts| {
            x.nb_endpoints = Vec::new();
            x.nb = Err(ProbeError::Other(endpoints::NB_UNNAMED.into()));
            x.nb_unnamed = Some(endpoints::NB_UNNAMED.into());
            x
        };
        let read_by = |mut x: FlagFacts| {
            x.nb = Err(ProbeError::Other("read by n0".into()));
            x.nb_read_by = Some("n0".into());
            x
        };
        let dead = |mut x: FlagFacts| {
            x.ovs = Err(ProbeError::NotFound("/var/run/openvswitch/db.sock".into()));
            x
        };
        // The same local row, the same kind of verdict, whoever reads NB.
        for (ovs, status) in [(Some("true"), Status::Fail), (None, Status::Error)] {
            let make = |f: fn(FlagFacts) -> FlagFacts| {
                let x = f(facts(false, None, ovs));
                if status == Status::Error {
                    dead(x)
                } else {
                    x
                }
            };
            let here = judge(make(unnamed));
            crate::snapshot::snapshot!("ipsec.flags", here);
            let there = judge(make(read_by));
            crate::snapshot::snapshot!("ipsec.flags", there);
            assert_eq!(here.status, status, "{}", here.summary);
            assert_eq!(
                here.kind, there.kind,
                "{} / {}",
                here.summary, there.summary
            );
        }
        let f = judge(unnamed(facts(false, None, Some("true"))));
        crate::snapshot::snapshot!("ipsec.flags", f);
        // An agreeing row: the skip for want of NB, as before, saying so.
        let f = judge(unnamed(facts(false, None, None)));
        crate::snapshot::snapshot!("ipsec.flags", f);
        assert_eq!(f.status, Status::Skip, "{}", f.summary);
        assert_eq!(
            f.summary,
            "not applicable here: the config has no [nodes.*.vpcd] ovn_nb_addr (pass --nb-db); the local ipsec_encapsulation agrees with the config (unix:/var/run/openvswitch/db.sock)"
        );
        assert_eq!(f.findings[0].subject, NB_SUBJECT);
        assert_eq!(f.findings[0].status(), Status::Skip);
    }
}
