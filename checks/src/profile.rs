//! Preflight profiles (`spx doctor --for CHANGE`): a named set of checks
//! that must all conclude before a risky change, and the runbook for the
//! change with this node's values filled in. A preflight never passes on
//! missing evidence: a required check that skips or errors makes the run
//! inconclusive (the binary's exit policy reads [`Profile::required`]).

use serde_json::Value;

use crate::ctx::Ctx;
use crate::endpoint;
use crate::expect;
use crate::finding::{Finding, Status};
use crate::probe::sysfs_net;

/// Each check's id and finding, in report order.
pub type Results<'a> = [(&'a str, &'a Finding)];

pub struct Profile {
    pub name: &'static str,
    /// The checks this preflight runs; each must conclude.
    pub required: &'static [&'static str],
    /// The target underlay MTU when `--mtu` is not given.
    pub default_mtu: Option<u32>,
    /// The steps of the change, given what the checks found.
    pub runbook: fn(&Ctx, &Results) -> Vec<String>,
}

pub static PROFILES: &[Profile] = &[
    Profile {
        name: "enable-jumbo",
        required: &["mtu.path"],
        default_mtu: Some(9000),
        runbook: enable_jumbo,
    },
    Profile {
        name: "disable-ipsec",
        required: &["underlay.on-link", "ipsec.flags", "ipsec.xfrm"],
        default_mtu: None,
        runbook: disable_ipsec,
    },
];

pub fn find(name: &str) -> Option<&'static Profile> {
    PROFILES.iter().find(|p| p.name == name)
}

fn finding<'a>(results: &'a Results, id: &str) -> Option<&'a Finding> {
    results.iter().find(|(i, _)| *i == id).map(|(_, f)| *f)
}

/// The underlay devices to raise on this node: the vpc-plane bridge and its
/// ports, or `<dev>` placeholders when there is no bridge here.
fn underlay_devices() -> Vec<String> {
    match sysfs_net::underlay_bridge() {
        Some(bridge) => {
            let mut devs = sysfs_net::bridge_ports(bridge).unwrap_or_default();
            devs.retain(|d| !d.starts_with("tap") && !d.starts_with("mg"));
            devs.push(bridge.to_owned());
            devs
        }
        None => vec!["<nic>".to_owned(), "br-vpc".to_owned()],
    }
}

fn enable_jumbo(ctx: &Ctx, results: &Results) -> Vec<String> {
    let target = ctx.opts.mtu.unwrap_or(9000);
    let ipsec = ctx.expect.as_ref().map(|e| e.ipsec_enabled);
    let devices = underlay_devices();
    let mut steps = vec![format!(
        "on every node, raise the physical NIC and the bridge, both ends of every path: {}",
        devices
            .iter()
            .map(|d| format!("`ip link set {d} mtu {target}`"))
            .collect::<Vec<_>>()
            .join(", then ")
    )];
    steps.push(format!(
        "verify from every node: `spx doctor --for enable-jumbo --mtu {target}` must exit 0 (every peer carries {target})"
    ));
    let bad: Vec<String> = finding(results, "mtu.path")
        .and_then(|f| f.evidence.get("peers"))
        .and_then(Value::as_array)
        .map(|peers| {
            peers
                .iter()
                .filter(|p| p.get("verdict").and_then(Value::as_str) != Some("ok"))
                .map(|p| {
                    let addr = p.get("address").and_then(Value::as_str).unwrap_or("?");
                    let verdict = p.get("verdict").and_then(Value::as_str).unwrap_or("?");
                    match p.get("path_mtu").and_then(Value::as_u64) {
                        Some(m) => format!("{addr} ({verdict}, carries {m})"),
                        None => format!("{addr} ({verdict})"),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let revert_to = 1500;
    if bad.is_empty() {
        steps.push(format!(
            "if any peer fails, revert at once on both ends: {}",
            devices
                .iter()
                .map(|d| format!("`ip link set {d} mtu {revert_to}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    } else {
        steps.push(format!(
            "STOP: these peers do not carry {target}: {}. Configure the fabric (switch ports) for jumbo, or revert on both ends: {}",
            bad.join(", "),
            devices
                .iter()
                .map(|d| format!("`ip link set {d} mtu {revert_to}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    steps.push(format!(
        "only then, on every node: set `underlay_mtu = {target}` under [network] in /etc/spinifex/spinifex.toml and `systemctl restart spinifex-daemon`"
    ));
    let guest = |ipsec| expect::guest_mtu(target, ipsec, false);
    steps.push(match ipsec {
        Some(on) => format!(
            "guests will be given MTU {} (IPsec {}): stop and start every running guest, which keeps its old host_mtu and its DHCP lease (up to an hour) until then",
            guest(on),
            if on { "on" } else { "off" }
        ),
        None => format!(
            "guests will be given MTU {} ({} with IPsec): stop and start every running guest, which keeps its old host_mtu and its DHCP lease (up to an hour) until then",
            guest(false),
            guest(true)
        ),
    });
    steps.push(
        "afterwards a plain `spx doctor` verifies the end state (mtu.path, mtu.overlay)".to_owned(),
    );
    steps
}

fn disable_ipsec(ctx: &Ctx, results: &Results) -> Vec<String> {
    let nb = ctx
        .opts
        .nb_db
        .clone()
        .or_else(|| {
            ctx.config()
                .ok()
                .map(|c| endpoint::join(&c.nb_endpoints()))
                .filter(|s| !s.is_empty())
        })
        .unwrap_or_else(|| "<ovn_nb_addr from spinifex.toml>".to_owned());
    let underlay = ctx.expect.as_ref().map_or(1500, |e| e.underlay_mtu);
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
        "on every node: set `ipsec_enabled = false` under [network] in /etc/spinifex/spinifex.toml".to_owned(),
        "on every node: `systemctl restart spinifex-daemon`".to_owned(),
        "on every node: `spx doctor --check ipsec.xfrm` must report 0 ESP SAs (charon and the SAs gone)".to_owned(),
        format!("once, against the NB raft endpoints (the local unix socket fails on a cluster): `ovn-nbctl --db=\"{nb}\" set NB_Global . ipsec=false`"),
        "on every node: `ovs-vsctl remove Open_vSwitch . other_config ipsec_encapsulation`".to_owned(),
        format!(
            "stop and start every guest: the guest MTU moves {} -> {} and multiqueue turns on; expect launches to fail for a minute or two while ovn-controller reprograms tunnels (RunInstances ServerInternal, vpc.add-nat timing out: not a capacity problem)",
            expect::guest_mtu(underlay, true, false),
            expect::guest_mtu(underlay, false, false)
        ),
        format!(
            "afterwards a plain `spx doctor` verifies the end state: 0 SAs (ipsec.xfrm), flags cleared (ipsec.flags), DHCP and tap MTU {} (mtu.overlay)",
            expect::guest_mtu(underlay, false, false)
        ),
    ]);
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctx::{ConfigState, Options};

    fn ctx(config: &str, opts: Options) -> Ctx {
        let config = crate::config::parse(config, std::path::Path::new("x")).unwrap();
        Ctx::new(
            ConfigState::Loaded {
                path: "x".into(),
                config: Box::new(config),
            },
            opts,
        )
    }

    #[test]
    fn profiles_name_real_checks() {
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
        let f = Finding::fail("x").fix("y").with(
            "peers",
            serde_json::json!([{"address": "198.18.0.2", "verdict": "blackhole", "path_mtu": 1500},
                               {"address": "198.18.0.3", "verdict": "ok", "path_mtu": null}]),
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
        assert!(all.contains("underlay_mtu = 9000"));
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
    }
}
