//! The judgement of `mtu.overlay`, pure: the facts in, each place the guest
//! MTU reaches a guest (or the underlay bridge) as it holds or not, and how
//! the NB read went, out. No words here ([`super::words`] says it).

use super::{Device, DhcpFacts, OverlayFacts};
use crate::facts::ovsdb::DhcpOptions;
use crate::facts::ProbeError;

/// A place that does not carry what the config implies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// An IPv4 `DHCP_Options` row whose `options:mtu` is not the guest MTU
    /// (`None`: unset, so guests take 1500).
    DhcpMtu {
        cidr: String,
        uuid: String,
        mtu: Option<String>,
    },
    /// A logical router port advertising another RA MTU (`port`: its name,
    /// else its uuid).
    RaMtu { port: String, mtu: String },
    /// A VPC tap at another MTU.
    TapMtu { tap: String, mtu: u32 },
    /// The underlay bridge below `underlay_mtu`; `ports` are its non-guest
    /// ports (the NICs to raise first).
    BridgeBelowUnderlay {
        bridge: String,
        mtu: u32,
        ports: Vec<String>,
    },
}

/// A place that carries what the config implies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Holds {
    Dhcp {
        cidr: String,
        uuid: String,
        mtu: String,
    },
    Ra {
        port: String,
        mtu: String,
    },
    Tap {
        tap: String,
        mtu: u32,
    },
    Bridge {
        bridge: String,
        mtu: u32,
    },
}

/// One place judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    Holds(Holds),
    Wrong(Problem),
}

/// How the NB read went, as far as the verdict cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Nb {
    Read {
        /// IPv4 `DHCP_Options` rows judged.
        ipv4_rows: usize,
        /// Router ports that set an RA MTU, judged.
        ra_ports: usize,
        /// DHCPv6 rows (no MTU option): not judged.
        dhcpv6_rows: usize,
        /// Router ports that advertise no MTU: not judged.
        silent_ra_ports: usize,
    },
    /// Not read. `needs`: the privilege it took, when that was why.
    Unreadable {
        error: String,
        needs: Option<String>,
    },
    /// No NB endpoint is known.
    NotConfigured { why: String },
}

/// What `mtu.overlay` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    /// The guest MTU the config implies.
    pub want: u32,
    /// Every place judged, in the order the finding names them: IPv4
    /// DHCP rows, router ports with an RA MTU, taps, the underlay bridge.
    pub places: Vec<Place>,
    pub nb: Nb,
}

impl Analysis {
    pub fn problems(&self) -> impl Iterator<Item = &Problem> {
        self.places.iter().filter_map(|p| match p {
            Place::Wrong(problem) => Some(problem),
            Place::Holds(_) => None,
        })
    }

    /// Nothing was there to judge: no IPv4 DHCP row, no RA MTU, no tap,
    /// no bridge.
    pub fn nothing_judged(&self) -> bool {
        self.places.is_empty()
    }
}

/// A DHCP_Options `cidr` for IPv6 (DHCPv6 options, which carry no MTU).
pub fn is_ipv6_cidr(cidr: &str) -> bool {
    cidr.contains(':')
}

pub fn analyse(facts: &OverlayFacts) -> Analysis {
    let want = facts.expected_guest_mtu;
    let is_want = |m: Option<&str>| m.map(str::trim) == Some(want.to_string().as_str());
    let mut places = Vec::new();
    let nb = match &facts.dhcp {
        DhcpFacts::Read(a) => {
            let (v6_rows, v4_rows): (Vec<&DhcpOptions>, Vec<&DhcpOptions>) =
                a.value.dhcp.iter().partition(|r| is_ipv6_cidr(&r.cidr));
            for row in &v4_rows {
                places.push(match &row.mtu {
                    Some(mtu) if is_want(Some(mtu)) => Place::Holds(Holds::Dhcp {
                        cidr: row.cidr.clone(),
                        uuid: row.uuid.clone(),
                        mtu: mtu.clone(),
                    }),
                    mtu => Place::Wrong(Problem::DhcpMtu {
                        cidr: row.cidr.clone(),
                        uuid: row.uuid.clone(),
                        mtu: mtu.clone(),
                    }),
                });
            }
            let ports = &a.value.router_ports;
            let mut ra_ports = 0;
            for port in ports {
                let Some(mtu) = &port.mtu else { continue };
                ra_ports += 1;
                let name = if port.name.is_empty() {
                    &port.uuid
                } else {
                    &port.name
                };
                let (port, mtu) = (name.clone(), mtu.clone());
                places.push(if is_want(Some(&mtu)) {
                    Place::Holds(Holds::Ra { port, mtu })
                } else {
                    Place::Wrong(Problem::RaMtu { port, mtu })
                });
            }
            Nb::Read {
                ipv4_rows: v4_rows.len(),
                ra_ports,
                dhcpv6_rows: v6_rows.len(),
                silent_ra_ports: ports.iter().filter(|p| p.mtu.is_none()).count(),
            }
        }
        DhcpFacts::Unreadable(e) => Nb::Unreadable {
            error: e.to_string(),
            needs: match e {
                ProbeError::PermissionDenied { needs, .. } => Some(needs.clone()),
                _ => None,
            },
        },
        DhcpFacts::NotConfigured(why) => Nb::NotConfigured { why: why.clone() },
    };
    for Device { name, mtu } in &facts.taps {
        let (tap, mtu) = (name.clone(), *mtu);
        places.push(if mtu == want {
            Place::Holds(Holds::Tap { tap, mtu })
        } else {
            Place::Wrong(Problem::TapMtu { tap, mtu })
        });
    }
    if let Some(Device { name, mtu }) = &facts.underlay_bridge {
        let (bridge, mtu) = (name.clone(), *mtu);
        places.push(if mtu >= facts.underlay_mtu {
            Place::Holds(Holds::Bridge { bridge, mtu })
        } else {
            Place::Wrong(Problem::BridgeBelowUnderlay {
                bridge,
                mtu,
                ports: facts.bridge_ports.clone(),
            })
        });
    }
    Analysis { want, places, nb }
}
