//! `mtu.overlay`: the guest MTU the config implies, against the three
//! places it reaches a guest from (OVN `DHCP_Options` `options:mtu`, the
//! host tap, and, underneath, the underlay bridge that must carry it).
//!
//! Turning IPsec on narrows the guest path from 1442 to 1408 at a 1500
//! underlay (8942 to 8908 at 9000); turning it off widens it. Guests keep
//! the old value (QEMU's host_mtu, a DHCP lease of up to an hour) until they
//! are stopped and started, and a guest that believes 1442 on a 1408 path
//! black-holes every full-size segment. This check finds the rows and
//! devices still carrying the old number.

use serde::Serialize;

use crate::check::Check;
use crate::ctx::Ctx;
use crate::endpoint::{self, Endpoint};
use crate::expect;
use crate::finding::{Finding, SkipReason};
use crate::probe::ovsdb::{self, endpoints, Answer, DhcpOptions};
use crate::probe::{sysfs_net, ProbeError};

pub struct OverlayMtu;

/// VPC taps are `tap` + ENI id (management taps are `mg…`).
pub use crate::spinifex::VPC_TAP_PREFIX;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Device {
    pub name: String,
    pub mtu: u32,
}

/// How the NB `DHCP_Options` read went.
#[derive(Debug)]
pub enum DhcpFacts {
    Read(Answer<Vec<DhcpOptions>>),
    Unreadable(ProbeError),
    /// No NB endpoint is known (no config entry, no flag).
    NotConfigured(String),
}

#[derive(Debug)]
pub struct OverlayFacts {
    pub ipsec_enabled: bool,
    /// The underlay MTU the guest MTU derives from (config, or `--mtu`).
    pub underlay_mtu: u32,
    pub expected_guest_mtu: u32,
    pub nb_endpoints: Vec<Endpoint>,
    pub dhcp: DhcpFacts,
    pub taps: Vec<Device>,
    /// br-vpc, else br-lan, else br-wan; none on a host without them.
    pub underlay_bridge: Option<Device>,
    pub bridge_ports: Vec<String>,
}

impl Check for OverlayMtu {
    fn id(&self) -> &'static str {
        "mtu.overlay"
    }

    fn title(&self) -> &'static str {
        "DHCP options, VPC taps and the underlay bridge carry the guest MTU the config implies"
    }

    fn explain(&self) -> &'static str {
        "Computes the guest MTU from the config (underlay_mtu - 58, and - 34 more with \
         IPsec: 1442/1408 at 1500, 8942/8908 at 9000; --mtu overrides the underlay) and \
         compares it with every OVN northbound DHCP_Options row's options:mtu (read over \
         OVSDB from the ovn_nb_addr raft list or --nb-db), with the MTU of every VPC tap \
         on this host (tap*), and checks that the underlay bridge (br-vpc, else br-lan, \
         else br-wan) is at least underlay_mtu.\n\
         \n\
         Why: the guest MTU reaches a guest three ways (DHCP, QEMU host_mtu, the tap) \
         and changes when IPsec is turned on or off or the underlay changes. Running \
         guests keep the old value until they are stopped and started (a DHCP lease \
         lasts up to an hour); a guest that believes 1442 on a path that carries 1408 \
         black-holes full-size segments, and a bridge below underlay_mtu drops every \
         full-size geneve packet.\n\
         \n\
         Fix: `ovn-nbctl --db=\"<NB raft endpoints>\" set DHCP_Options <uuid> options:mtu=N` \
         for each row named, raise the bridge (NIC first), then stop and start the guests."
    }

    fn run(&self, ctx: &Ctx) -> Finding {
        let expect = match ctx.expectations() {
            Ok(e) => e.clone(),
            Err(f) => return f,
        };
        let underlay_mtu = ctx
            .opts
            .mtu
            .map_or(expect.underlay_mtu, expect::effective_underlay_mtu);
        let expected_guest_mtu = expect::guest_mtu(underlay_mtu, expect.ipsec_enabled, false);
        let (nb_endpoints, dhcp) = match endpoints::nb(ctx) {
            Ok((list, _)) => {
                let budget = endpoints::budget(ctx);
                let dhcp = match ovsdb::dhcp_options(&list, budget) {
                    Ok(a) => DhcpFacts::Read(a),
                    Err(e) => DhcpFacts::Unreadable(e),
                };
                (list, dhcp)
            }
            Err(f) => (Vec::new(), DhcpFacts::NotConfigured(f.summary)),
        };
        let names = match sysfs_net::interfaces() {
            Ok(n) => n,
            Err(e) => return e.into(),
        };
        let mut taps = Vec::new();
        for name in names.iter().filter(|n| n.starts_with(VPC_TAP_PREFIX)) {
            match sysfs_net::mtu(name) {
                Ok(mtu) => taps.push(Device {
                    name: name.clone(),
                    mtu,
                }),
                // Gone between listing and reading: a guest stopped.
                Err(ProbeError::NotFound(_)) => {}
                Err(e) => return e.into(),
            }
        }
        let underlay_bridge = match sysfs_net::underlay_bridge() {
            Some(b) => match sysfs_net::mtu(b) {
                Ok(mtu) => Some(Device {
                    name: b.to_owned(),
                    mtu,
                }),
                Err(e) => return e.into(),
            },
            None => None,
        };
        let bridge_ports = underlay_bridge
            .as_ref()
            .and_then(|b| sysfs_net::bridge_ports(&b.name).ok())
            .unwrap_or_default()
            .into_iter()
            .filter(|p| !p.starts_with(VPC_TAP_PREFIX) && !p.starts_with("mg"))
            .collect();
        judge(OverlayFacts {
            ipsec_enabled: expect.ipsec_enabled,
            underlay_mtu,
            expected_guest_mtu,
            nb_endpoints,
            dhcp,
            taps,
            underlay_bridge,
            bridge_ports,
        })
    }
}

#[derive(Serialize)]
struct DhcpMtu<'a> {
    cidr: &'a str,
    uuid: &'a str,
    mtu: Option<&'a str>,
}

pub fn judge(facts: OverlayFacts) -> Finding {
    let want = facts.expected_guest_mtu;
    let nb_db = endpoint::join(&facts.nb_endpoints);
    let mut mismatches = Vec::new();
    let mut fixes = Vec::new();

    let mut dhcp_note = None;
    let mut dhcp_error = None;
    let mut dhcp_denied: Option<String> = None;
    let (dhcp_mtus, nb_endpoint) = match &facts.dhcp {
        DhcpFacts::Read(a) => {
            for row in &a.value {
                if row.mtu.as_deref().map(str::trim) != Some(want.to_string().as_str()) {
                    let shown = row
                        .mtu
                        .as_deref()
                        .map_or("no options:mtu (guests default to 1500)".to_owned(), |m| {
                            format!("options:mtu={m}")
                        });
                    mismatches.push(format!(
                        "DHCP_Options {} ({}) has {shown}",
                        row.cidr, row.uuid
                    ));
                    fixes.push(format!(
                        "ovn-nbctl --db=\"{nb_db}\" set DHCP_Options {} options:mtu={want}",
                        row.uuid
                    ));
                }
            }
            let rows: Vec<DhcpMtu> = a
                .value
                .iter()
                .map(|r| DhcpMtu {
                    cidr: &r.cidr,
                    uuid: &r.uuid,
                    mtu: r.mtu.as_deref(),
                })
                .collect();
            (
                serde_json::to_value(rows).ok(),
                Some(a.endpoint.to_string()),
            )
        }
        DhcpFacts::Unreadable(e) => {
            if let ProbeError::PermissionDenied { needs, .. } = e {
                dhcp_denied = Some(format!("{needs} (to read DHCP_Options)"));
            }
            dhcp_error = Some(format!("DHCP_Options could not be read: {e}"));
            (None, None)
        }
        DhcpFacts::NotConfigured(why) => {
            dhcp_note = Some(format!("DHCP_Options not checked: {why}"));
            (None, None)
        }
    };

    let wrong_taps: Vec<&Device> = facts.taps.iter().filter(|t| t.mtu != want).collect();
    for t in &wrong_taps {
        mismatches.push(format!("tap {} has MTU {}", t.name, t.mtu));
    }
    if !wrong_taps.is_empty() {
        fixes.push(format!(
            "stop and start the guests on {} (the daemon recreates the tap and QEMU's host_mtu={want}); meanwhile, for the host side only: {}",
            wrong_taps.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", "),
            wrong_taps
                .iter()
                .map(|t| format!("`ip link set dev {} mtu {want}`", t.name))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }

    if let Some(b) = &facts.underlay_bridge {
        if b.mtu < facts.underlay_mtu {
            mismatches.push(format!(
                "underlay bridge {} has MTU {}, below underlay_mtu {}",
                b.name, b.mtu, facts.underlay_mtu
            ));
            let mut devs = facts.bridge_ports.clone();
            devs.push(b.name.clone());
            fixes.push(format!(
                "raise the NIC first, then the bridge: {} (and persist it in the host's network configuration)",
                devs.iter()
                    .map(|d| format!("`ip link set dev {d} mtu {}`", facts.underlay_mtu))
                    .collect::<Vec<_>>()
                    .join(", then ")
            ));
        }
    }

    let ipsec = if facts.ipsec_enabled { "on" } else { "off" };
    let finding = if !mismatches.is_empty() {
        fixes.push(
            "running guests need a stop/start (not a reboot from inside): QEMU's host_mtu and the DHCP lease (up to an hour) keep the old MTU".to_owned(),
        );
        let also = [dhcp_error.as_deref(), dhcp_note.as_deref()]
            .into_iter()
            .flatten()
            .map(|s| format!("; {s}"))
            .collect::<String>();
        Finding::fail(format!(
            "expected guest MTU {want} (underlay {}, IPsec {ipsec}), but {}{also}",
            facts.underlay_mtu,
            mismatches.join(", ")
        ))
        .fixes(fixes)
    } else if let Some(needs) = dhcp_denied {
        // The taps and the bridge were fine, but the DHCP rows were out of
        // reach: not a pass, and a privilege matter, not an outage.
        Finding::skip(SkipReason::NeedsPrivilege(needs))
    } else if let Some(err) = dhcp_error {
        Finding::error(err)
    } else if dhcp_mtus
        .as_ref()
        .and_then(|v| v.as_array())
        .is_none_or(Vec::is_empty)
        && facts.taps.is_empty()
        && facts.underlay_bridge.is_none()
    {
        Finding::skip(SkipReason::NothingToMeasure(format!(
            "no DHCP_Options rows, no VPC taps and no underlay bridge here{}",
            dhcp_note.map(|n| format!(" ({n})")).unwrap_or_default()
        )))
    } else {
        let n = dhcp_mtus
            .as_ref()
            .and_then(|v| v.as_array())
            .map_or(0, Vec::len);
        Finding::pass(format!(
            "guest MTU {want} (underlay {}, IPsec {ipsec}) in {n} DHCP_Options rows and {} VPC taps{}{}",
            facts.underlay_mtu,
            facts.taps.len(),
            facts
                .underlay_bridge
                .as_ref()
                .map(|b| format!("; {} at {}", b.name, b.mtu))
                .unwrap_or_default(),
            dhcp_note.map(|n| format!("; {n}")).unwrap_or_default()
        ))
    };
    finding
        .with("expected_guest_mtu", want)
        .with("underlay_mtu", facts.underlay_mtu)
        .with("dhcp_mtus", dhcp_mtus)
        .with("taps", &facts.taps)
        .with("underlay_bridge", &facts.underlay_bridge)
        .with("mismatches", &mismatches)
        .with("nb_endpoint", nb_endpoint)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Status;

    fn row(cidr: &str, uuid: &str, mtu: Option<&str>) -> DhcpOptions {
        DhcpOptions {
            uuid: uuid.into(),
            cidr: cidr.into(),
            mtu: mtu.map(str::to_owned),
        }
    }

    fn facts(
        ipsec: bool,
        rows: Vec<DhcpOptions>,
        taps: &[(&str, u32)],
        bridge: Option<(&str, u32)>,
    ) -> OverlayFacts {
        OverlayFacts {
            ipsec_enabled: ipsec,
            underlay_mtu: 1500,
            expected_guest_mtu: expect::guest_mtu(1500, ipsec, false),
            nb_endpoints: Endpoint::parse_list("tcp:198.18.3.181:6641,tcp:198.18.3.182:6641")
                .unwrap(),
            dhcp: DhcpFacts::Read(Answer {
                value: rows,
                endpoint: Endpoint::parse("tcp:198.18.3.181:6641").unwrap(),
                passed_over: vec![],
            }),
            taps: taps
                .iter()
                .map(|(n, m)| Device {
                    name: (*n).into(),
                    mtu: *m,
                })
                .collect(),
            underlay_bridge: bridge.map(|(n, m)| Device {
                name: n.into(),
                mtu: m,
            }),
            bridge_ports: vec!["enp1s0f0".into()],
        }
    }

    #[test]
    fn dhcp_left_at_1408_after_disabling_ipsec_fails_expecting_1442() {
        let f = judge(facts(
            false,
            vec![row(
                "198.19.0.0/24",
                "5d3c2b1a-0000-4000-8000-000000000001",
                Some("1408"),
            )],
            &[("tapeni0a1b2c3d4", 1442)],
            Some(("br-vpc", 1500)),
        ));
        assert_eq!(f.status, Status::Fail);
        assert!(
            f.summary
                .contains("expected guest MTU 1442 (underlay 1500, IPsec off)"),
            "{}",
            f.summary
        );
        assert!(f.summary.contains(
            "DHCP_Options 198.19.0.0/24 (5d3c2b1a-0000-4000-8000-000000000001) has options:mtu=1408"
        ));
        assert_eq!(
            f.remediation[0],
            "ovn-nbctl --db=\"tcp:198.18.3.181:6641,tcp:198.18.3.182:6641\" set DHCP_Options 5d3c2b1a-0000-4000-8000-000000000001 options:mtu=1442"
        );
        assert!(f.remediation.last().unwrap().contains("stop/start"));
        assert_eq!(f.evidence["expected_guest_mtu"], 1442);
        assert_eq!(f.evidence["dhcp_mtus"][0]["mtu"], "1408");
    }

    #[test]
    fn wrong_taps_and_a_low_bridge_are_named() {
        let f = judge(facts(
            true,
            vec![row("198.19.0.0/24", "u1", Some("1408"))],
            &[("tapa", 1408), ("tapb", 1442)],
            Some(("br-lan", 1400)),
        ));
        assert_eq!(f.status, Status::Fail);
        assert_eq!(
            f.evidence["mismatches"],
            serde_json::json!([
                "tap tapb has MTU 1442",
                "underlay bridge br-lan has MTU 1400, below underlay_mtu 1500"
            ])
        );
        assert!(f.remediation.iter().any(|r| r.contains(
            "`ip link set dev enp1s0f0 mtu 1500`, then `ip link set dev br-lan mtu 1500`"
        )));
    }

    #[test]
    fn consistent_host_passes() {
        let f = judge(facts(
            true,
            vec![row("198.19.0.0/24", "u1", Some("1408"))],
            &[("tapa", 1408)],
            Some(("br-vpc", 1500)),
        ));
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert!(
            f.summary
                .contains("1 DHCP_Options rows and 1 VPC taps; br-vpc at 1500"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn an_nb_socket_we_may_not_open_skips_naming_the_privilege() {
        let denied = || {
            DhcpFacts::Unreadable(ProbeError::PermissionDenied {
                what: "unix:/run/ovn/ovnnb_db.sock".into(),
                needs: "root to connect to unix:/run/ovn/ovnnb_db.sock".into(),
            })
        };
        let mut x = facts(false, vec![], &[("tapa", 1442)], None);
        x.dhcp = denied();
        let f = judge(x);
        assert_eq!(f.status, Status::Skip);
        assert_eq!(
            f.summary,
            "needs root to connect to unix:/run/ovn/ovnnb_db.sock (to read DHCP_Options)"
        );
        // A wrong tap is still a fail: what was read is judged.
        let mut x = facts(false, vec![], &[("tapa", 1408)], None);
        x.dhcp = denied();
        assert_eq!(judge(x).status, Status::Fail);
    }

    #[test]
    fn unreadable_nb_is_an_error_unless_something_local_is_already_wrong() {
        let mut x = facts(false, vec![], &[("tapa", 1442)], None);
        x.dhcp = DhcpFacts::Unreadable(ProbeError::Other("no member answered".into()));
        assert_eq!(judge(x).status, Status::Error);
        let mut x = facts(false, vec![], &[("tapa", 1408)], None);
        x.dhcp = DhcpFacts::Unreadable(ProbeError::Other("no member answered".into()));
        let f = judge(x);
        assert_eq!(f.status, Status::Fail);
        assert!(
            f.summary.contains("DHCP_Options could not be read"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn a_row_without_mtu_is_a_mismatch() {
        let f = judge(facts(
            false,
            vec![row("198.19.1.0/24", "u2", None)],
            &[],
            None,
        ));
        assert_eq!(f.status, Status::Fail);
        assert!(f.summary.contains("no options:mtu"), "{}", f.summary);
    }
}
