//! Does the "fragmentation needed" (ICMP type 3 code 4) or "packet too big"
//! (ICMPv6 type 2) that OVN sends for a router port's `gateway_mtu` get
//! back in to the guest that sent the frame? Its security group decides,
//! in two steps, as OVN's logical switch pipeline does:
//!
//! 1. If the guest's own traffic was committed to conntrack (it left
//!    through a stateful ACL: `allow-related`, or `allow` on a switch that
//!    has stateful ACLs), the ICMP error is related to it (`ct.rel`) and
//!    OVN lets it in whatever the ingress ACLs say. Spinifex's security
//!    groups are of this kind (egress rules `allow-related`): measured in
//!    the kernel lab, `gateway_mtu=1400` reached the guest as "Frag needed"
//!    with an ingress rule for TCP 22 alone.
//! 2. Otherwise the ingress (`to-lport`) ACLs judge the ICMP packet like
//!    any other: the highest priority ACL that matches decides; none
//!    matching lets it in.
//!
//! ACL matches are OVN's expression language. Only the conjunctions
//! Spinifex writes (and OVN's common fields) are evaluated; an ACL whose
//! match cannot be evaluated makes the answer unknown, named, never a guess.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::facts::ovsdb::topology::Acl;

/// True, false, or cannot tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tri {
    Yes,
    No,
    Maybe,
}

/// The packet an ACL is asked about: the ICMP error coming back to the
/// guest (`to-lport`) from the router port's address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcmpError {
    pub ipv6: bool,
    /// The router port's address it comes from, when known.
    pub src: Option<IpAddr>,
    /// The guest's address it goes to.
    pub dst: Option<IpAddr>,
}

impl IcmpError {
    fn kind_code(&self) -> (u8, u8) {
        if self.ipv6 {
            (2, 0)
        } else {
            (3, 4)
        }
    }
}

/// One ACL evaluated: its name (or match) and action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AclRef {
    pub priority: i64,
    pub direction: String,
    #[serde(rename = "match")]
    pub matches: String,
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl AclRef {
    fn of(acl: &Acl) -> AclRef {
        AclRef {
            priority: acl.priority,
            direction: acl.direction.clone(),
            matches: acl.matches.clone(),
            action: acl.action.clone(),
            name: acl.name.clone(),
        }
    }
}

/// Whether the ICMP error reaches the guest, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum IcmpBack {
    /// No ACL applies to the guest's port: nothing filters it.
    NoAcls,
    /// The guest's traffic leaves through stateful ACLs, so the error is
    /// related (`ct.rel`) and OVN lets it in.
    Related { stateful: Vec<AclRef> },
    /// An ingress ACL lets it in.
    Allowed { by: AclRef },
    /// No ingress ACL matches it: OVN's default lets it in.
    NoMatch,
    /// An ingress ACL drops or rejects it (and the guest's traffic is not
    /// committed: its egress is stateless, or the switch has no stateful ACL).
    Blocked { by: AclRef, stateless: Vec<AclRef> },
    /// An ACL's match could not be evaluated.
    Unknown { acl: AclRef },
}

impl IcmpBack {
    /// The error reaches the guest.
    pub fn reaches(&self) -> Option<bool> {
        match self {
            IcmpBack::NoAcls
            | IcmpBack::Related { .. }
            | IcmpBack::Allowed { .. }
            | IcmpBack::NoMatch => Some(true),
            IcmpBack::Blocked { .. } => Some(false),
            IcmpBack::Unknown { .. } => None,
        }
    }
}

fn stateful(action: &str) -> bool {
    matches!(action, "allow-related" | "allow")
}

fn allows(action: &str) -> bool {
    matches!(
        action,
        "allow" | "allow-related" | "allow-stateless" | "pass"
    )
}

/// Judge the ICMP error's way back to a guest whose port is subject to
/// `acls` (its port groups' and its switch's).
pub fn icmp_back(acls: &[&Acl], error: IcmpError) -> IcmpBack {
    if acls.is_empty() {
        return IcmpBack::NoAcls;
    }
    let egress_allows: Vec<&Acl> = acls
        .iter()
        .copied()
        .filter(|a| a.direction == "from-lport" && allows(&a.action))
        .collect();
    let stateless: Vec<AclRef> = egress_allows
        .iter()
        .filter(|a| a.action == "allow-stateless")
        .map(|a| AclRef::of(a))
        .collect();
    // `allow` is stateful too once the switch has an `allow-related` ACL
    // (ovn-nb(5), ACL action).
    let has_stateful = acls.iter().any(|a| a.action == "allow-related");
    let mut committed: Vec<AclRef> = egress_allows
        .iter()
        .filter(|a| stateful(&a.action) && has_stateful)
        .map(|a| AclRef::of(a))
        .collect();
    // The allow-related ones first: they are what makes the flow committed.
    committed.sort_by_key(|a| (a.action != "allow-related", -a.priority));
    if stateless.is_empty() && !committed.is_empty() {
        return IcmpBack::Related {
            stateful: committed,
        };
    }
    let mut ingress: Vec<&Acl> = acls
        .iter()
        .copied()
        .filter(|a| a.direction == "to-lport")
        .collect();
    ingress.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.uuid.cmp(&b.uuid)));
    for acl in ingress {
        match matches(&acl.matches, &error) {
            Tri::No => continue,
            Tri::Maybe => {
                return IcmpBack::Unknown {
                    acl: AclRef::of(acl),
                }
            }
            Tri::Yes if allows(&acl.action) => {
                return IcmpBack::Allowed {
                    by: AclRef::of(acl),
                }
            }
            Tri::Yes => {
                return IcmpBack::Blocked {
                    by: AclRef::of(acl),
                    stateless,
                }
            }
        }
    }
    IcmpBack::NoMatch
}

/// Evaluate an ACL match against the ICMP error: a conjunction (`&&`) of
/// the atoms OVN's expression language writes for ports, families,
/// protocols, ICMP types and codes, ports and addresses.
pub fn matches(expr: &str, p: &IcmpError) -> Tri {
    if expr.contains("||") || expr.contains('(') || expr.contains('!') {
        return Tri::Maybe;
    }
    let mut result = Tri::Yes;
    for atom in expr.split("&&").map(str::trim) {
        match atom_matches(atom, p) {
            Tri::No => return Tri::No,
            Tri::Maybe => result = Tri::Maybe,
            Tri::Yes => {}
        }
    }
    result
}

fn atom_matches(atom: &str, p: &IcmpError) -> Tri {
    let yes = |b: bool| if b { Tri::Yes } else { Tri::No };
    let (v4, v6) = (!p.ipv6, p.ipv6);
    match atom {
        "1" | "true" => return Tri::Yes,
        "0" | "false" => return Tri::No,
        "ip" => return Tri::Yes,
        "ip4" => return yes(v4),
        "ip6" => return yes(v6),
        "icmp" => return Tri::Yes,
        "icmp4" => return yes(v4),
        "icmp6" => return yes(v6),
        "tcp" | "udp" | "sctp" | "arp" | "nd" | "nd_ns" | "nd_na" => return Tri::No,
        _ => {}
    }
    let parts: Vec<&str> = atom.split_whitespace().collect();
    let [field, op, value] = parts.as_slice() else {
        return Tri::Maybe;
    };
    // The ACLs asked about are those of the guest's own port (its port
    // groups' and its switch's): the port they name is this one.
    if matches!(*field, "inport" | "outport") {
        return if *op == "==" { Tri::Yes } else { Tri::Maybe };
    }
    let (kind, code) = p.kind_code();
    let number = |v: &str| v.parse::<i64>().ok();
    let compare = |have: i64| match (*op, number(value)) {
        ("==", Some(n)) => yes(have == n),
        ("!=", Some(n)) => yes(have != n),
        (">=", Some(n)) => yes(have >= n),
        ("<=", Some(n)) => yes(have <= n),
        (">", Some(n)) => yes(have > n),
        ("<", Some(n)) => yes(have < n),
        _ => Tri::Maybe,
    };
    match *field {
        "icmp4.type" => {
            if v6 {
                Tri::No
            } else {
                compare(i64::from(kind))
            }
        }
        "icmp4.code" => {
            if v6 {
                Tri::No
            } else {
                compare(i64::from(code))
            }
        }
        "icmp6.type" => {
            if v4 {
                Tri::No
            } else {
                compare(i64::from(kind))
            }
        }
        "icmp6.code" => {
            if v4 {
                Tri::No
            } else {
                compare(i64::from(code))
            }
        }
        f if f.starts_with("tcp.") || f.starts_with("udp.") || f.starts_with("sctp.") => Tri::No,
        "ip4.src" | "ip4.dst" | "ip6.src" | "ip6.dst" => {
            let family_ok = field.starts_with("ip6") == v6;
            if !family_ok {
                return Tri::No;
            }
            let addr = if field.ends_with("src") { p.src } else { p.dst };
            match (addr, *op) {
                (Some(a), "==") => in_cidr(a, value),
                _ => Tri::Maybe,
            }
        }
        _ => Tri::Maybe,
    }
}

/// `addr` within `cidr` (`198.18.0.0/15`, or one address); an address set
/// (`$name`) or a set of values (`{…}`) cannot be told.
fn in_cidr(addr: IpAddr, cidr: &str) -> Tri {
    let (net, len) = match cidr.split_once('/') {
        Some((n, l)) => (n, l.parse::<u32>().ok()),
        None => (cidr, None),
    };
    let Ok(net) = net.parse::<IpAddr>() else {
        return Tri::Maybe;
    };
    let within = match (addr, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let len = len.unwrap_or(32).min(32);
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let len = len.unwrap_or(128).min(128);
            let mask = if len == 0 {
                0
            } else {
                u128::MAX << (128 - len)
            };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    };
    if within {
        Tri::Yes
    } else {
        Tri::No
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(direction: &str, priority: i64, m: &str, action: &str) -> Acl {
        Acl {
            uuid: format!("{priority}-{direction}"),
            direction: direction.into(),
            priority,
            matches: m.into(),
            action: action.into(),
            name: None,
        }
    }

    /// A security group as spinifex/network/policy (acl.go) writes it:
    /// the 900/800 default denies, the 1050 DHCP allows, and tenant rules
    /// at 1000, `allow-related`.
    fn spinifex_sg(egress: &str) -> Vec<Acl> {
        let pg = "sg_0abc";
        vec![
            acl("to-lport", 900, &format!("outport == @{pg} && ip4"), "drop"),
            acl(
                "from-lport",
                800,
                &format!("inport == @{pg} && ip4"),
                "drop",
            ),
            acl(
                "from-lport",
                1050,
                &format!("inport == @{pg} && udp && udp.src == 68 && udp.dst == 67"),
                "allow",
            ),
            acl(
                "to-lport",
                1050,
                &format!("outport == @{pg} && udp && udp.src == 67 && udp.dst == 68"),
                "allow",
            ),
            acl(
                "to-lport",
                1000,
                &format!("outport == @{pg} && ip4 && tcp.dst == 22"),
                "allow-related",
            ),
            acl(
                "from-lport",
                1000,
                &format!("inport == @{pg} && ip4"),
                egress,
            ),
        ]
    }

    const ERR: IcmpError = IcmpError {
        ipv6: false,
        src: None,
        dst: None,
    };

    #[test]
    fn spinifex_security_groups_let_the_error_in_as_related() {
        let sg = spinifex_sg("allow-related");
        let refs: Vec<&Acl> = sg.iter().collect();
        let back = icmp_back(&refs, ERR);
        assert!(matches!(back, IcmpBack::Related { .. }), "{back:?}");
        assert_eq!(back.reaches(), Some(true));
    }

    #[test]
    fn a_stateless_egress_leaves_the_error_to_the_ingress_deny() {
        let sg = spinifex_sg("allow-stateless");
        let refs: Vec<&Acl> = sg.iter().collect();
        let back = icmp_back(&refs, ERR);
        let IcmpBack::Blocked { by, stateless } = &back else {
            panic!("{back:?}")
        };
        assert_eq!((by.priority, by.action.as_str()), (900, "drop"));
        assert_eq!(stateless.len(), 1);
        // An ingress rule for ICMP type 3 code 4 above the deny lets it in.
        let mut sg = sg;
        sg.push(acl(
            "to-lport",
            1001,
            "outport == @sg_0abc && icmp4 && icmp4.type == 3 && icmp4.code == 4",
            "allow",
        ));
        let refs: Vec<&Acl> = sg.iter().collect();
        assert!(matches!(icmp_back(&refs, ERR), IcmpBack::Allowed { .. }));
        // IPv6's packet too big is not matched by an icmp4 rule.
        let v6 = IcmpError { ipv6: true, ..ERR };
        assert_eq!(icmp_back(&refs, v6), IcmpBack::NoMatch);
    }

    #[test]
    fn what_cannot_be_evaluated_is_unknown() {
        let sg = [
            acl(
                "from-lport",
                1000,
                "inport == @pg && ip4",
                "allow-stateless",
            ),
            acl(
                "to-lport",
                1000,
                "outport == @pg && ip4.src == $pg_ip4",
                "drop",
            ),
        ];
        let refs: Vec<&Acl> = sg.iter().collect();
        assert!(matches!(icmp_back(&refs, ERR), IcmpBack::Unknown { .. }));
        assert_eq!(matches("ip4 || ip6", &ERR), Tri::Maybe);
        assert_eq!(matches("ip4 && tcp", &ERR), Tri::No);
        assert_eq!(matches("ip4 && icmp4.type == 3", &ERR), Tri::Yes);
        let from = IcmpError {
            src: Some("198.18.1.1".parse().unwrap()),
            ..ERR
        };
        assert_eq!(matches("ip4.src == 198.18.0.0/15", &from), Tri::Yes);
        assert_eq!(matches("ip4.src == 203.0.113.0/24", &from), Tri::No);
        assert_eq!(icmp_back(&[], ERR), IcmpBack::NoAcls);
    }
}
