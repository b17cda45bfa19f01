//! `mtu.overlay`: the guest MTU the config implies, against the places it
//! reaches a guest from (OVN `DHCP_Options` `options:mtu` for IPv4, a
//! router port's `ipv6_ra_configs:mtu` for IPv6, the host tap, and,
//! underneath, the underlay bridge that must carry it).
//!
//! Turning IPsec on narrows the guest path from 1442 to 1408 at a 1500
//! underlay (8942 to 8908 at 9000); turning it off widens it. Guests keep
//! the old value (QEMU's host_mtu, a DHCP lease of up to an hour) until they
//! are stopped and started, and a guest that believes 1442 on a 1408 path
//! black-holes every full-size segment. This check finds the rows and
//! devices still carrying the old number.
//!
//! Two facts shape it. OVN's DHCPv6 options have no MTU: an IPv6 guest
//! learns it from router advertisements, so `DHCP_Options` rows for an IPv6
//! `cidr` are never asked for `options:mtu`; the RA MTU is judged where a
//! router port sets one. And an IPv6 outer header costs 20 bytes more than
//! IPv4's, so the expected guest MTU follows the family of this node's
//! overlay endpoint ([`peers::underlay_family`]).

use serde::{Deserialize, Serialize};

use crate::check::{Check, Declared};
use crate::ctx::Ctx;
use crate::endpoint::{self, Endpoint};
use crate::evidence::Evidence;
use crate::expect;
use crate::finding::{Finding, SkipReason, Subject};
use crate::kind::{most_severe, Kinds};
use crate::probe::ovsdb::{self, endpoints, Answer, DhcpOptions, NbGuestMtus};
use crate::probe::peers::{self, UnderlayFamily};
use crate::probe::{links, ProbeError};
use crate::spinifex;

pub struct OverlayMtu;

/// VPC taps are `tap` + ENI id (management taps are `mg…`).
pub use crate::spinifex::VPC_TAP_PREFIX;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    pub name: String,
    pub mtu: u32,
}

crate::kinds! {
    /// What `mtu.overlay` can say, per NB row, tap and bridge, and for the check.
    pub enum OverlayMtuKind for "mtu.overlay" {
        /// Every IPv4 DHCP_Options row, router advertisement MTU and VPC tap carries the guest MTU the config implies, and the underlay bridge carries underlay_mtu.
        Ok = pass("ok"),
        /// The underlay bridge (br-vpc, else br-lan, else br-wan) is below underlay_mtu: every full-size geneve packet is dropped.
        BridgeBelowUnderlay = fail("bridge-below-underlay"),
        /// An IPv4 DHCP_Options row's options:mtu is not the guest MTU (or is unset, so guests take 1500): guests believe a path the overlay does not carry.
        DhcpMtu = fail("dhcp-mtu"),
        /// A logical router port advertises an ipv6_ra_configs:mtu other than the guest MTU.
        RaMtu = fail("ra-mtu"),
        /// A VPC tap's MTU is not the guest MTU: its guest was started before IPsec or the underlay changed.
        TapMtu = fail("tap-mtu"),
        /// The northbound DHCP_Options and router ports could not be read (down, no answer within the probe timeout): never a pass.
        NbUnreachable = error("nb-unreachable"),
    }
}

static DECLARED: Declared = Declared::of::<OverlayMtuKind, OverlayMtuEvidence>();

/// The guest MTU the config implies and every place it was read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverlayMtuEvidence {
    pub expected_guest_mtu: u32,
    pub underlay_mtu: u32,
    pub underlay_family: UnderlayFamily,
    /// Every DHCP_Options row; null when the NB was not read.
    pub dhcp_mtus: Option<Vec<DhcpMtu>>,
    /// Every logical router port's RA settings; null when the NB was not read.
    pub ra_mtus: Option<Vec<RaMtu>>,
    pub taps: Vec<Device>,
    pub underlay_bridge: Option<Device>,
    pub mismatches: Vec<String>,
    /// The NB member that answered.
    pub nb_endpoint: Option<String>,
}

impl Evidence for OverlayMtuEvidence {}

/// How the NB read (`DHCP_Options` and router ports) went.
#[derive(Debug)]
pub enum DhcpFacts {
    Read(Answer<NbGuestMtus>),
    Unreadable(ProbeError),
    /// No NB endpoint is known (no config entry, no flag).
    NotConfigured(String),
}

#[derive(Debug)]
pub struct OverlayFacts {
    pub ipsec_enabled: bool,
    /// The underlay MTU the guest MTU derives from (config, or `--mtu`).
    pub underlay_mtu: u32,
    /// The family of this node's overlay endpoint, and how it is known.
    pub underlay_family: UnderlayFamily,
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
         IPsec: 1442/1408 at 1500, 8942/8908 at 9000; 20 less again when this node's \
         overlay endpoint, its ovn-encap-ip, is IPv6; --mtu overrides the underlay) and \
         compares it with every OVN northbound DHCP_Options row for an IPv4 cidr \
         (options:mtu), every logical router port that sets ipv6_ra_configs:mtu (IPv6 \
         guests learn the MTU from router advertisements: DHCPv6 has no MTU option), read \
         over OVSDB from the ovn_nb_addr raft list or --nb-db, with the MTU of every VPC \
         tap on this host (tap*), and checks that the underlay bridge (br-vpc, else \
         br-lan, else br-wan) is at least underlay_mtu. DHCPv6 rows, and IPv6 subnets \
         whose router port sets no RA MTU, are reported as not judged.\n\
         \n\
         Why: the guest MTU reaches a guest three ways (DHCP or RA, QEMU host_mtu, the \
         tap) and changes when IPsec is turned on or off or the underlay changes. Running \
         guests keep the old value until they are stopped and started (a DHCP lease \
         lasts up to an hour); a guest that believes 1442 on a path that carries 1408 \
         black-holes full-size segments, and a bridge below underlay_mtu drops every \
         full-size geneve packet.\n\
         \n\
         Fix: `ovn-nbctl --db=\"<NB raft endpoints>\" set DHCP_Options <uuid> options:mtu=N` \
         (or `set Logical_Router_Port <port> ipv6_ra_configs:mtu=N`) for each row named, \
         raise the bridge (NIC first), then stop and start the guests."
    }

    fn declared(&self) -> &'static Declared {
        &DECLARED
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
        let underlay_family = peers::underlay_family(ctx);
        let expected_guest_mtu = expect::guest_mtu(
            underlay_mtu,
            expect.ipsec_enabled,
            underlay_family.family.is_ipv6(),
        );
        let (nb_endpoints, dhcp) = match endpoints::nb(ctx) {
            Ok((list, _)) => {
                let budget = endpoints::budget(ctx);
                let dhcp = match ovsdb::nb_guest_mtus(ctx.host(), &list, budget) {
                    Ok(a) => DhcpFacts::Read(a),
                    Err(e) => DhcpFacts::Unreadable(e),
                };
                (list, dhcp)
            }
            Err(f) => (Vec::new(), DhcpFacts::NotConfigured(f.summary)),
        };
        // The taps, the bridge and its ports: one link dump, one moment.
        let dump = match ctx.host().links() {
            Ok(l) => l,
            Err(e) => return e.into(),
        };
        let mut taps: Vec<Device> = dump
            .iter()
            .filter(|l| l.name.starts_with(VPC_TAP_PREFIX))
            .map(|l| Device {
                name: l.name.clone(),
                mtu: l.mtu,
            })
            .collect();
        taps.sort_by(|a, b| a.name.cmp(&b.name));
        let bridge = links::underlay_bridge(&dump);
        let underlay_bridge = bridge.map(|b| Device {
            name: b.name.clone(),
            mtu: b.mtu,
        });
        let bridge_ports = bridge
            .map(|b| links::port_names(&dump, b))
            .unwrap_or_default()
            .into_iter()
            .filter(|p| !spinifex::is_guest_tap(p))
            .collect();
        judge(OverlayFacts {
            ipsec_enabled: expect.ipsec_enabled,
            underlay_mtu,
            underlay_family,
            expected_guest_mtu,
            nb_endpoints,
            dhcp,
            taps,
            underlay_bridge,
            bridge_ports,
        })
    }
}

/// One DHCP_Options row as read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DhcpMtu {
    pub cidr: String,
    pub uuid: String,
    pub mtu: Option<String>,
    /// `ipv4`, or `ipv6` for a DHCPv6 row (no MTU option: not judged).
    pub family: expect::Family,
}

/// One logical router port's router-advertisement settings as read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaMtu {
    pub port: String,
    pub uuid: String,
    pub address_mode: Option<String>,
    pub mtu: Option<String>,
}

/// A DHCP_Options `cidr` for IPv6 (DHCPv6 options, which carry no MTU).
fn is_ipv6_cidr(cidr: &str) -> bool {
    cidr.contains(':')
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub fn judge(facts: OverlayFacts) -> Finding {
    let want = facts.expected_guest_mtu;
    let nb_db = endpoint::join(&facts.nb_endpoints);
    let mut mismatches = Vec::new();
    let mut fixes = Vec::new();
    let mut subjects = Vec::new();

    let mut dhcp_note = None;
    let mut dhcp_error = None;
    let mut dhcp_denied: Option<String> = None;
    // What was judged in the NB: IPv4 DHCP rows, router ports with an RA MTU.
    let mut judged_v4 = 0;
    let mut judged_ra = 0;
    let mut ipv6_note = None;
    let (dhcp_mtus, ra_mtus, nb_endpoint) = match &facts.dhcp {
        DhcpFacts::Read(a) => {
            let is_want = |m: Option<&str>| m.map(str::trim) == Some(want.to_string().as_str());
            let (v6_rows, v4_rows): (Vec<&DhcpOptions>, Vec<&DhcpOptions>) =
                a.value.dhcp.iter().partition(|r| is_ipv6_cidr(&r.cidr));
            for row in &v4_rows {
                judged_v4 += 1;
                let subject = format!("DHCP_Options {} ({})", row.cidr, row.uuid);
                let shown = row
                    .mtu
                    .as_deref()
                    .map_or("no options:mtu (guests default to 1500)".to_owned(), |m| {
                        format!("options:mtu={m}")
                    });
                if is_want(row.mtu.as_deref()) {
                    subjects.push(Subject::new(OverlayMtuKind::Ok, subject, shown));
                } else {
                    mismatches.push(format!("{subject} has {shown}"));
                    subjects.push(Subject::new(
                        OverlayMtuKind::DhcpMtu,
                        subject,
                        format!("{shown}, expected options:mtu={want}"),
                    ));
                    fixes.push(format!(
                        "ovn-nbctl --db=\"{nb_db}\" set DHCP_Options {} options:mtu={want}",
                        row.uuid
                    ));
                }
            }
            let ports = &a.value.router_ports;
            for port in ports.iter().filter(|p| p.mtu.is_some()) {
                judged_ra += 1;
                let name = if port.name.is_empty() {
                    &port.uuid
                } else {
                    &port.name
                };
                let subject = format!("Logical_Router_Port {name}");
                let said = format!(
                    "advertises ipv6_ra_configs:mtu={}",
                    port.mtu.as_deref().unwrap_or_default()
                );
                if is_want(port.mtu.as_deref()) {
                    subjects.push(Subject::new(OverlayMtuKind::Ok, subject, said));
                } else {
                    mismatches.push(format!("{subject} {said}"));
                    subjects.push(Subject::new(
                        OverlayMtuKind::RaMtu,
                        subject,
                        format!("{said}, expected {want}"),
                    ));
                    fixes.push(format!(
                        "ovn-nbctl --db=\"{nb_db}\" set Logical_Router_Port {name} ipv6_ra_configs:mtu={want}"
                    ));
                }
            }
            let silent_ra = ports.iter().filter(|p| p.mtu.is_none()).count();
            if !v6_rows.is_empty() || silent_ra > 0 {
                let mut parts = Vec::new();
                if !v6_rows.is_empty() {
                    parts.push(format!(
                        "{} not judged (DHCPv6 carries no MTU; IPv6 guests learn it from router advertisements)",
                        plural(v6_rows.len(), "DHCPv6 row", "DHCPv6 rows")
                    ));
                }
                if silent_ra > 0 {
                    parts.push(format!(
                        "{} router advertisements without ipv6_ra_configs:mtu (their guests use the virtio host_mtu)",
                        plural(silent_ra, "router port sends", "router ports send")
                    ));
                } else if judged_ra == 0 {
                    parts.push("no router port sets ipv6_ra_configs:mtu".to_owned());
                }
                ipv6_note = Some(format!("IPv6: {}", parts.join("; ")));
            }
            let rows: Vec<DhcpMtu> = a
                .value
                .dhcp
                .iter()
                .map(|r| DhcpMtu {
                    cidr: r.cidr.clone(),
                    uuid: r.uuid.clone(),
                    mtu: r.mtu.clone(),
                    family: if is_ipv6_cidr(&r.cidr) {
                        expect::Family::Ipv6
                    } else {
                        expect::Family::Ipv4
                    },
                })
                .collect();
            let ras: Vec<RaMtu> = ports
                .iter()
                .map(|p| RaMtu {
                    port: p.name.clone(),
                    uuid: p.uuid.clone(),
                    address_mode: p.address_mode.clone(),
                    mtu: p.mtu.clone(),
                })
                .collect();
            (Some(rows), Some(ras), Some(a.endpoint.to_string()))
        }
        DhcpFacts::Unreadable(e) => {
            if let ProbeError::PermissionDenied { needs, .. } = e {
                dhcp_denied = Some(format!("{needs} (to read DHCP_Options)"));
            }
            dhcp_error = Some(format!("DHCP_Options could not be read: {e}"));
            (None, None, None)
        }
        DhcpFacts::NotConfigured(why) => {
            dhcp_note = Some(format!("DHCP_Options not checked: {why}"));
            (None, None, None)
        }
    };

    let wrong_taps: Vec<&Device> = facts.taps.iter().filter(|t| t.mtu != want).collect();
    for t in &facts.taps {
        let said = format!("MTU {}", t.mtu);
        if t.mtu == want {
            subjects.push(Subject::new(OverlayMtuKind::Ok, &t.name, said));
        } else {
            mismatches.push(format!("tap {} has {said}", t.name));
            subjects.push(Subject::new(
                OverlayMtuKind::TapMtu,
                &t.name,
                format!("{said}, expected {want}"),
            ));
        }
    }
    if !wrong_taps.is_empty() {
        let names: Vec<&str> = wrong_taps.iter().map(|t| t.name.as_str()).collect();
        fixes.push(format!(
            "stop and start the guests on {} (the daemon recreates the tap and QEMU's host_mtu={want}); meanwhile, for the host side only: {}",
            names.join(", "),
            spinifex::set_mtus(&names, want, ", ")
        ));
    }

    if let Some(b) = &facts.underlay_bridge {
        if b.mtu >= facts.underlay_mtu {
            subjects.push(Subject::new(
                OverlayMtuKind::Ok,
                &b.name,
                format!("MTU {}, carries underlay_mtu {}", b.mtu, facts.underlay_mtu),
            ));
        } else {
            mismatches.push(format!(
                "underlay bridge {} has MTU {}, below underlay_mtu {}",
                b.name, b.mtu, facts.underlay_mtu
            ));
            subjects.push(Subject::new(
                OverlayMtuKind::BridgeBelowUnderlay,
                &b.name,
                format!("MTU {}, below underlay_mtu {}", b.mtu, facts.underlay_mtu),
            ));
            let mut devs = facts.bridge_ports.clone();
            devs.push(b.name.clone());
            fixes.push(format!(
                "raise the NIC first, then the bridge: {} (and persist it in the host's network configuration)",
                spinifex::set_mtus(&devs, facts.underlay_mtu, ", then ")
            ));
        }
    }

    let ipsec = if facts.ipsec_enabled { "on" } else { "off" };
    let family = if facts.underlay_family.family.is_ipv6() {
        ", IPv6 underlay"
    } else {
        ""
    };
    let worst = most_severe(
        subjects
            .iter()
            .filter(|s| s.status() == crate::finding::Status::Fail)
            .filter_map(|s| OverlayMtuKind::of(s.kind)),
    );
    let finding = if let Some(kind) = worst {
        fixes.push(
            "running guests need a stop/start (not a reboot from inside): QEMU's host_mtu and the DHCP lease (up to an hour) keep the old MTU".to_owned(),
        );
        let also = [dhcp_error.as_deref(), dhcp_note.as_deref()]
            .into_iter()
            .flatten()
            .map(|s| format!("; {s}"))
            .collect::<String>();
        Finding::new(
            kind,
            format!(
                "expected guest MTU {want} (underlay {}{family}, IPsec {ipsec}), but {}{also}",
                facts.underlay_mtu,
                mismatches.join(", ")
            ),
        )
        .fixes(fixes)
    } else if let Some(needs) = dhcp_denied {
        // The taps and the bridge were fine, but the DHCP rows were out of
        // reach: not a pass, and a privilege matter, not an outage.
        Finding::skip(SkipReason::NeedsPrivilege(needs))
    } else if let Some(err) = dhcp_error {
        Finding::new(OverlayMtuKind::NbUnreachable, err)
    } else if judged_v4 == 0
        && judged_ra == 0
        && facts.taps.is_empty()
        && facts.underlay_bridge.is_none()
    {
        let notes: Vec<String> = [dhcp_note, ipv6_note].into_iter().flatten().collect();
        Finding::skip(SkipReason::NothingToMeasure(format!(
            "no IPv4 DHCP_Options rows, no router port with an RA MTU, no VPC taps and no underlay bridge here{}",
            if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join("; "))
            }
        )))
    } else {
        let mut summary = format!(
            "guest MTU {want} (underlay {}{family}, IPsec {ipsec}) in {} and {}",
            facts.underlay_mtu,
            plural(judged_v4, "DHCP_Options row", "DHCP_Options rows"),
            plural(facts.taps.len(), "VPC tap", "VPC taps")
        );
        if judged_ra > 0 {
            summary.push_str(&format!(
                ", and in the router advertisements of {}",
                plural(judged_ra, "router port", "router ports")
            ));
        }
        if let Some(b) = &facts.underlay_bridge {
            summary.push_str(&format!("; {} at {}", b.name, b.mtu));
        }
        for note in [dhcp_note, ipv6_note].into_iter().flatten() {
            summary.push_str(&format!("; {note}"));
        }
        Finding::new(OverlayMtuKind::Ok, summary)
    };
    finding
        .evidence(&OverlayMtuEvidence {
            expected_guest_mtu: want,
            underlay_mtu: facts.underlay_mtu,
            underlay_family: facts.underlay_family.clone(),
            dhcp_mtus,
            ra_mtus,
            taps: facts.taps.clone(),
            underlay_bridge: facts.underlay_bridge.clone(),
            mismatches,
            nb_endpoint,
        })
        .subjects(subjects)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expect::Family;
    use crate::finding::Status;
    use crate::probe::ovsdb::RouterPortRa;

    /// Every verdict these tests see is also checked against the schema.
    fn judge(facts: OverlayFacts) -> Finding {
        crate::schema_check::valid("mtu.overlay", super::judge(facts))
    }

    fn ipv4_known() -> UnderlayFamily {
        UnderlayFamily {
            family: Family::Ipv4,
            source: "ovn-encap-ip 198.18.3.181 at unix:/var/run/openvswitch/db.sock".into(),
            known: true,
        }
    }

    fn ra(name: &str, mode: Option<&str>, mtu: Option<&str>) -> RouterPortRa {
        RouterPortRa {
            uuid: format!("uuid-{name}"),
            name: name.into(),
            address_mode: mode.map(str::to_owned),
            mtu: mtu.map(str::to_owned),
        }
    }

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
            underlay_family: ipv4_known(),
            expected_guest_mtu: expect::guest_mtu(1500, ipsec, false),
            nb_endpoints: Endpoint::parse_list("tcp:198.18.3.181:6641,tcp:198.18.3.182:6641")
                .unwrap(),
            dhcp: DhcpFacts::Read(Answer {
                value: NbGuestMtus {
                    dhcp: rows,
                    router_ports: vec![],
                },
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
        crate::snapshot::snapshot!("mtu.overlay", f);
        assert_eq!(f.status, Status::Fail);
        assert_eq!(
            f.remediation[0],
            "ovn-nbctl --db=\"tcp:198.18.3.181:6641,tcp:198.18.3.182:6641\" set DHCP_Options 5d3c2b1a-0000-4000-8000-000000000001 options:mtu=1442"
        );
        assert!(f.remediation.last().unwrap().contains("stop/start"));
        assert_eq!(f.evidence["expected_guest_mtu"], 1442);
        assert_eq!(f.evidence["dhcp_mtus"][0]["mtu"], "1408");
        assert_eq!(f.kind.code("mtu.overlay"), "mtu.overlay/dhcp-mtu");
        let codes: Vec<String> = f
            .findings
            .iter()
            .map(|s| format!("{} {}", s.subject, s.kind.code("mtu.overlay")))
            .collect();
        assert_eq!(
            codes,
            [
                "DHCP_Options 198.19.0.0/24 (5d3c2b1a-0000-4000-8000-000000000001) mtu.overlay/dhcp-mtu",
                "tapeni0a1b2c3d4 mtu.overlay/ok",
                "br-vpc mtu.overlay/ok"
            ]
        );
        let back = f.evidence_as::<OverlayMtuEvidence>().unwrap();
        assert_eq!(back.dhcp_mtus.unwrap()[0].family, Family::Ipv4);
    }

    #[test]
    fn wrong_taps_and_a_low_bridge_are_named() {
        let f = judge(facts(
            true,
            vec![row("198.19.0.0/24", "u1", Some("1408"))],
            &[("tapa", 1408), ("tapb", 1442)],
            Some(("br-lan", 1400)),
        ));
        crate::snapshot::snapshot!("mtu.overlay", f);
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
        crate::snapshot::snapshot!("mtu.overlay", f);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
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
        crate::snapshot::snapshot!("mtu.overlay", f);
        assert_eq!(f.status, Status::Skip);
        assert_eq!(
            f.summary,
            "needs root to connect to unix:/run/ovn/ovnnb_db.sock (to read DHCP_Options)"
        );
        // A wrong tap is still a fail: what was read is judged.
        let mut x = facts(false, vec![], &[("tapa", 1408)], None);
        x.dhcp = denied();
        let f = judge(x);
        crate::snapshot::snapshot!("mtu.overlay", f);
        assert_eq!(f.status, Status::Fail);
    }

    #[test]
    fn unreadable_nb_is_an_error_unless_something_local_is_already_wrong() {
        let mut x = facts(false, vec![], &[("tapa", 1442)], None);
        x.dhcp = DhcpFacts::Unreadable(ProbeError::Other("no member answered".into()));
        let f = judge(x);
        crate::snapshot::snapshot!("mtu.overlay", f);
        assert_eq!(f.status, Status::Error);
        let mut x = facts(false, vec![], &[("tapa", 1408)], None);
        x.dhcp = DhcpFacts::Unreadable(ProbeError::Other("no member answered".into()));
        let f = judge(x);
        crate::snapshot::snapshot!("mtu.overlay", f);
        assert_eq!(f.status, Status::Fail);
    }

    #[test]
    fn a_row_without_mtu_is_a_mismatch() {
        let f = judge(facts(
            false,
            vec![row("198.19.1.0/24", "u2", None)],
            &[],
            None,
        ));
        crate::snapshot::snapshot!("mtu.overlay", f);
        assert_eq!(f.status, Status::Fail);
    }

    #[test]
    fn a_dhcpv6_row_is_not_judged_and_a_dual_stack_cluster_passes() {
        let f = judge(with_nb(
            false,
            vec![
                row("198.19.0.0/24", "v4", Some("1442")),
                row("fd00:aa::/64", "v6", None),
            ],
            vec![],
        ));
        crate::snapshot::snapshot!("mtu.overlay", f);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        assert!(f.remediation.is_empty());
        assert_eq!(f.evidence["dhcp_mtus"][1]["family"], "ipv6");
        assert_eq!(f.evidence["dhcp_mtus"][0]["family"], "ipv4");
    }

    #[test]
    fn a_router_port_ra_mtu_is_judged_for_ipv6() {
        let ports = vec![
            ra("lrp-good", Some("slaac"), Some("1442")),
            ra("lrp-stale", Some("slaac"), Some("1408")),
            ra("lrp-quiet", Some("dhcpv6_stateful"), None),
        ];
        let f = judge(with_nb(
            false,
            vec![
                row("198.19.0.0/24", "v4", Some("1442")),
                row("fd00:aa::/64", "v6", None),
            ],
            ports,
        ));
        crate::snapshot::snapshot!("mtu.overlay", f);
        assert_eq!(f.status, Status::Fail, "{}", f.summary);
        assert_eq!(
            f.remediation[0],
            "ovn-nbctl --db=\"tcp:198.18.3.181:6641,tcp:198.18.3.182:6641\" set Logical_Router_Port lrp-stale ipv6_ra_configs:mtu=1442"
        );
        assert!(!f.summary.contains("fd00:aa::/64"), "{}", f.summary);
        assert_eq!(f.evidence["ra_mtus"][1]["port"], "lrp-stale");
        // Fixed: it passes, naming the RA ports judged and the quiet one.
        let ports = vec![
            ra("lrp-good", Some("slaac"), Some("1442")),
            ra("lrp-quiet", Some("dhcpv6_stateful"), None),
        ];
        let f = judge(with_nb(false, vec![], ports));
        crate::snapshot::snapshot!("mtu.overlay", f);
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
    }

    #[test]
    fn an_ipv6_underlay_expects_20_bytes_less() {
        let mut x = with_nb(
            false,
            vec![row("198.19.0.0/24", "v4", Some("1442"))],
            vec![],
        );
        x.underlay_family = UnderlayFamily {
            family: Family::Ipv6,
            source: "ovn-encap-ip fd00::1 at unix:/x".into(),
            known: true,
        };
        x.expected_guest_mtu = expect::guest_mtu(1500, false, true);
        let f = judge(x);
        crate::snapshot::snapshot!("mtu.overlay", f);
        assert_eq!(f.status, Status::Fail, "{}", f.summary);
        assert!(f.remediation[0].ends_with("options:mtu=1422"));
        assert_eq!(f.evidence["underlay_family"]["family"], "ipv6");
    }

    fn with_nb(ipsec: bool, rows: Vec<DhcpOptions>, ports: Vec<RouterPortRa>) -> OverlayFacts {
        let mut x = facts(ipsec, rows, &[], None);
        if let DhcpFacts::Read(a) = &mut x.dhcp {
            a.value.router_ports = ports;
        }
        x
    }
}
