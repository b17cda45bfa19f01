//! Preflight profiles (`spx doctor --for CHANGE`): a named set of checks
//! that must all conclude before a risky change, and the runbook for the
//! change with this node's values filled in. A preflight never passes on
//! missing evidence: a required check that skips or errors makes the run
//! inconclusive (the binary's exit policy reads [`Profile::required`]).

use serde::Serialize;

use crate::checks::mtu_path::{PathMtuEvidence, PeerVerdict};
use crate::ctx::Ctx;
use crate::endpoint;
use crate::expect;
use crate::facts::links;
use crate::finding::{Finding, Status};
use crate::settings::Preflight;
use crate::spinifex;
use crate::targets::peers;

pub mod enable_ipsec;

/// Each check's id and finding, in report order.
pub type Results<'a> = [(&'a str, &'a Finding)];

impl Preflight {
    /// Its profile: the checks it requires and its runbook.
    pub fn profile(self) -> &'static Profile {
        &PROFILES[self as usize]
    }

    /// `enable-jumbo`, `disable-ipsec`.
    pub fn name(self) -> &'static str {
        self.profile().name
    }
}

/// A report's `profile` (JSON v1): the preflight's name, or `default`
/// for a run without `--for`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunProfile(pub Option<Preflight>);

impl RunProfile {
    /// `default`, `enable-jumbo`, `disable-ipsec`.
    pub fn name(self) -> &'static str {
        self.0.map_or("default", Preflight::name)
    }
}

impl std::fmt::Display for RunProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for RunProfile {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

pub struct Profile {
    pub preflight: Preflight,
    pub name: &'static str,
    /// The built-in checks this preflight runs; each must conclude. With
    /// the site checks whose `profiles` name it: [`Profile::required_ids`].
    pub required: &'static [&'static str],
    /// The target underlay MTU when `--mtu` is not given.
    pub default_mtu: Option<u32>,
    /// The steps of the change, given what the checks found.
    pub runbook: fn(&Ctx, &Results) -> Vec<String>,
}

pub static PROFILES: &[Profile] = &[
    Profile {
        preflight: Preflight::EnableJumbo,
        name: "enable-jumbo",
        required: &["mtu.path"],
        default_mtu: Some(9000),
        runbook: enable_jumbo,
    },
    Profile {
        preflight: Preflight::DisableIpsec,
        name: "disable-ipsec",
        required: &["underlay.on-link", "ipsec.flags", "ipsec.xfrm"],
        default_mtu: None,
        runbook: disable_ipsec,
    },
    Profile {
        preflight: Preflight::EnableIpsec,
        name: "enable-ipsec",
        required: &["ipsec.cert", "ipsec.daemon"],
        default_mtu: None,
        runbook: enable_ipsec::runbook,
    },
];

impl Profile {
    /// Every check this preflight runs, each of which must conclude: its
    /// own, then the site checks (doctor.d) whose `profiles` name it.
    pub fn required_ids(&self) -> Vec<&'static str> {
        let site = crate::catalogue::all()
            .iter()
            .filter(|c| c.profiles().contains(&self.preflight))
            .map(|c| c.id())
            .collect::<Vec<_>>();
        self.required.iter().copied().chain(site).collect()
    }

    /// Does this preflight run the check `id`?
    pub fn requires(&self, id: &str) -> bool {
        self.required_ids().contains(&id)
    }
}

fn finding<'a>(results: &'a Results, id: &str) -> Option<&'a Finding> {
    results.iter().find(|(i, _)| *i == id).map(|(_, f)| *f)
}

/// The underlay devices to raise on this node: the vpc-plane bridge and its
/// ports (one link dump: `IFLA_MASTER` names a port's bridge), or `<nic>`
/// and `br-vpc` placeholders when there is no bridge here (or the links
/// could not be read).
fn underlay_devices(ctx: &Ctx) -> Vec<String> {
    let dump = ctx.host().links().unwrap_or_default();
    match links::underlay_bridge(&dump) {
        Some(bridge) => {
            let mut devs = links::port_names(&dump, bridge);
            devs.retain(|d| !spinifex::is_guest_tap(d));
            devs.push(bridge.name.clone());
            devs
        }
        None => vec!["<nic>".to_owned(), spinifex::VPC_BRIDGE.to_owned()],
    }
}

/// What guests are given with IPsec on and off after the change, on this
/// node's underlay family: `MTU 8942 (IPsec off)`, or both when there is
/// no config.
fn guest_mtu_text(ctx: &Ctx, underlay_mtu: u32, family: &peers::UnderlayFamily) -> String {
    let v6 = family.family.is_ipv6();
    let over = if v6 { ", IPv6 underlay" } else { "" };
    let guest = |ipsec| expect::guest_mtu(underlay_mtu, ipsec, v6);
    match ctx.expect.as_ref().map(|e| e.ipsec_enabled) {
        Some(on) => format!(
            "MTU {} (IPsec {}{over})",
            guest(on),
            if on { "on" } else { "off" }
        ),
        None => format!("MTU {} ({} with IPsec{over})", guest(false), guest(true)),
    }
}

fn enable_jumbo(ctx: &Ctx, results: &Results) -> Vec<String> {
    let target = ctx.opts.mtu.unwrap_or(9000);
    let config = ctx.config_file();
    let devices = underlay_devices(ctx);
    let mut steps = vec![format!(
        "on every node, raise the physical NIC and the bridge, both ends of every path: {}",
        spinifex::set_mtus(&devices, target, ", then ")
    )];
    steps.push(format!(
        "verify from every node: `spx doctor --for enable-jumbo --mtu {target}` must exit 0 (every peer carries {target})"
    ));
    let path = finding(results, "mtu.path").and_then(Finding::evidence_as::<PathMtuEvidence>);
    let bad: Vec<String> = path
        .iter()
        .flat_map(|e| &e.peers)
        .filter(|p| p.verdict != PeerVerdict::Ok)
        .map(|p| {
            let (addr, verdict) = (p.address, p.verdict);
            match p.usable_mtu.or(p.path_mtu) {
                Some(m) => format!("{addr} ({verdict}, carries {m})"),
                None => format!("{addr} ({verdict})"),
            }
        })
        .collect();
    // Revert to what the node runs today (the configured underlay_mtu), or
    // to what the path was measured to carry when that is less.
    let configured = ctx
        .expect
        .as_ref()
        .map_or(expect::DEFAULT_UNDERLAY_MTU, |e| e.underlay_mtu);
    let measured = path.and_then(|e| e.suggested_underlay_mtu);
    let revert_to = measured.map_or(configured, |m| m.min(configured));
    let revert = spinifex::set_mtus(&devices, revert_to, ", ");
    if bad.is_empty() {
        steps.push(format!(
            "if any peer fails, revert at once on both ends to the configured underlay_mtu {revert_to}: {revert}"
        ));
    } else {
        steps.push(format!(
            "STOP: these peers do not carry {target}: {}. Configure the fabric (switch ports, and the peers' own interfaces) for jumbo, or revert on both ends to {revert_to}: {revert}",
            bad.join(", ")
        ));
    }
    steps.push(format!(
        "only then, on every node: {} and `{}`",
        spinifex::set_network_key("underlay_mtu", target, &config),
        spinifex::restart_daemon()
    ));
    let family = peers::underlay_family(ctx);
    steps.push(format!(
        "guests will be given {}: stop and start every running guest, which keeps its old host_mtu and its DHCP lease (up to an hour) until then",
        guest_mtu_text(ctx, target, &family)
    ));
    steps.push(
        "afterwards a plain `spx doctor` verifies the end state (mtu.path, mtu.overlay)".to_owned(),
    );
    steps
}

fn disable_ipsec(ctx: &Ctx, results: &Results) -> Vec<String> {
    let nb = ctx
        .opts
        .nb_db
        .as_deref()
        .map(endpoint::join)
        .or_else(|| {
            ctx.config()
                .ok()
                .map(|c| endpoint::join(&c.nb_endpoints()))
                .filter(|s| !s.is_empty())
        })
        .unwrap_or_else(|| format!("<ovn_nb_addr from {}>", ctx.config_file()));
    let underlay = ctx
        .expect
        .as_ref()
        .map_or(expect::DEFAULT_UNDERLAY_MTU, |e| e.underlay_mtu);
    let config = ctx.config_file();
    let v6 = peers::underlay_family(ctx).family.is_ipv6();
    let guest = |ipsec| expect::guest_mtu(underlay, ipsec, v6);
    let mut steps = Vec::new();
    if let Some(f) = finding(results, "underlay.on-link") {
        if f.status == Status::Warn || f.status == Status::Fail {
            steps.push(format!(
                "STOP and decide: {} — east-west traffic to those peers would cross a router hop in clear",
                f.summary
            ));
        }
    }
    steps.extend([
        "only on a physically trusted underlay (one rack, a private VLAN, no untrusted tenant on the fabric): all east-west guest traffic will cross the wire unencrypted".to_owned(),
        format!("on every node: {}", spinifex::set_network_key("ipsec_enabled", false, &config)),
        format!("on every node: `{}`", spinifex::restart_daemon()),
        "on every node: `spx doctor --check ipsec.xfrm` must report 0 ESP SAs (charon and the SAs gone)".to_owned(),
        format!("once, against the NB raft endpoints (the local unix socket fails on a cluster): `ovn-nbctl --db=\"{nb}\" set NB_Global . ipsec=false`"),
        "on every node: `ovs-vsctl remove Open_vSwitch . other_config ipsec_encapsulation`".to_owned(),
        format!(
            "stop and start every guest: the guest MTU moves {} -> {}{} and multiqueue turns on; expect launches to fail for a minute or two while ovn-controller reprograms tunnels (RunInstances ServerInternal, vpc.add-nat timing out: not a capacity problem)",
            guest(true),
            guest(false),
            if v6 { " (IPv6 underlay)" } else { "" }
        ),
        format!(
            "afterwards a plain `spx doctor` verifies the end state: 0 SAs (ipsec.xfrm), flags cleared (ipsec.flags), DHCP and tap MTU {} (mtu.overlay)",
            guest(false)
        ),
    ]);
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::mtu_path::PathMtuKind;
    use crate::settings::{ConfigState, Options};
    use serde_json::json;

    /// An mtu.path result with these peers (address, verdict, path_mtu and
    /// usable_mtu as the evidence writes them).
    fn path_mtu(kind: PathMtuKind, peers: serde_json::Value, suggested: Option<u32>) -> Finding {
        let peers: Vec<serde_json::Value> = peers
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let mut row =
                    json!({"source": "config", "interface": "br-vpc", "rtt_ms": null, "rounds": 1});
                row.as_object_mut()
                    .unwrap()
                    .extend(p.as_object().unwrap().clone());
                row
            })
            .collect();
        let evidence: PathMtuEvidence = serde_json::from_value(json!({
            "target_mtu": 9000,
            "peers": peers,
            "suggested_underlay_mtu": suggested,
        }))
        .unwrap();
        Finding::new(kind, "x").fix("y").evidence(&evidence)
    }

    fn ctx(config: &str, opts: Options) -> Ctx {
        let config = crate::config::parse(config, std::path::Path::new("x")).unwrap();
        Ctx::new(
            ConfigState::Loaded {
                path: "/srv/spx/node.toml".into(),
                config: Box::new(config),
            },
            opts,
        )
    }

    #[test]
    fn profiles_name_real_checks() {
        for (i, p) in PROFILES.iter().enumerate() {
            assert_eq!(p.preflight as usize, i);
            assert_eq!(p.preflight.profile().name, p.name);
            assert_eq!(serde_json::to_value(p.preflight).unwrap(), p.name);
        }
        assert_eq!(PROFILES.len(), Preflight::ALL.len());
        for p in PROFILES {
            for id in p.required {
                assert!(
                    crate::find(id).is_some(),
                    "{} requires unknown {id}",
                    p.name
                );
            }
        }
    }

    #[test]
    fn jumbo_runbook_names_the_black_holed_peer_and_the_guest_mtu() {
        let c = ctx(
            "[network]\nipsec_enabled = true\n[nodes.a]\n[nodes.b]\n",
            Options {
                mtu: Some(9000),
                ..Options::default()
            },
        );
        let f = path_mtu(
            PathMtuKind::BlackHole,
            json!([{"address": "198.18.0.2", "verdict": "blackhole", "path_mtu": 1500},
                   {"address": "198.18.0.3", "verdict": "ok", "path_mtu": null}]),
            None,
        );
        let steps = enable_jumbo(&c, &[("mtu.path", &f)]);
        let all = steps.join("\n");
        assert!(
            all.contains(
                "STOP: these peers do not carry 9000: 198.18.0.2 (blackhole, carries 1500)"
            ),
            "{all}"
        );
        assert!(!all.contains("198.18.0.3"));
        assert!(all.contains("MTU 8908 (IPsec on)"), "{all}");
        assert!(
            all.contains("set `underlay_mtu = 9000` under [network] in /srv/spx/node.toml and `systemctl restart spinifex-daemon`"),
            "{all}"
        );
        assert!(!all.contains("/etc/spinifex"), "{all}");
        // One wording for every MTU command.
        assert!(
            !all.contains("`ip link set br") && !all.contains("`ip link set <"),
            "{all}"
        );
        assert!(
            all.contains("revert on both ends to 1500: `ip link set dev "),
            "{all}"
        );
    }

    #[test]
    fn jumbo_runbook_reverts_to_the_configured_underlay_mtu_or_what_the_path_carries() {
        let c = ctx(
            "[network]\nunderlay_mtu = 4000\nipsec_enabled = false\n[nodes.a]\n[nodes.b]\n",
            Options {
                mtu: Some(9000),
                ..Options::default()
            },
        );
        let ok = path_mtu(PathMtuKind::Ok, json!([]), None);
        let all = enable_jumbo(&c, &[("mtu.path", &ok)]).join("\n");
        assert!(all.contains("revert at once on both ends to the configured underlay_mtu 4000: `ip link set dev "), "{all}");
        assert!(all.contains("MTU 8942 (IPsec off)"), "{all}");
        // The path was measured to carry 1504 (a 1500 link): revert to 1500.
        let f = path_mtu(
            PathMtuKind::BlackHole,
            json!([{"address": "198.18.0.2", "verdict": "blackhole", "path_mtu": 1504, "usable_mtu": 1500}]),
            Some(1500),
        );
        let all = enable_jumbo(&c, &[("mtu.path", &f)]).join("\n");
        assert!(
            all.contains("198.18.0.2 (blackhole, carries 1500)"),
            "{all}"
        );
        assert!(all.contains("the peers' own interfaces"), "{all}");
        assert!(all.contains("revert on both ends to 1500"), "{all}");
        assert!(!all.contains("mtu 1504"), "{all}");
    }

    #[test]
    fn ipsec_runbook_fills_in_the_nb_endpoints_in_order() {
        let c = ctx(
            "node = \"a\"\n[nodes.a.vpcd]\novn_nb_addr = \"tcp:198.18.0.1:6641,tcp:198.18.0.2:6641\"\n[nodes.b]\n",
            Options::default(),
        );
        let steps = disable_ipsec(&c, &[]);
        let nb = steps.iter().position(|s| s.contains("ovn-nbctl --db=\"tcp:198.18.0.1:6641,tcp:198.18.0.2:6641\" set NB_Global . ipsec=false")).unwrap();
        let cfg = steps
            .iter()
            .position(|s| s.contains("ipsec_enabled = false"))
            .unwrap();
        let ovs = steps
            .iter()
            .position(|s| {
                s.contains("ovs-vsctl remove Open_vSwitch . other_config ipsec_encapsulation")
            })
            .unwrap();
        assert!(cfg < nb && nb < ovs);
        assert!(steps.iter().any(|s| s.contains("1408 -> 1442")));
        assert!(steps[cfg]
            .contains("set `ipsec_enabled = false` under [network] in /srv/spx/node.toml"));
    }
}
