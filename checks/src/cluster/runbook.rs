//! The preflight runbooks of a cluster run (`spx doctor --cluster --for
//! CHANGE`): the same procedure as a node's ([`crate::profile`]), with the
//! cluster's values filled in: the nodes, in order, and what the cross-node
//! checks found.

use crate::expect;
use crate::finding::{Finding, Status};
use crate::settings::Preflight;

/// What the cluster runbooks are filled with.
#[derive(Clone, Debug)]
pub struct RunbookFacts<'a> {
    /// The selected nodes, in the order the change goes through them.
    pub nodes: Vec<String>,
    /// The target underlay MTU (`--mtu`, else the profile's default).
    pub target_mtu: u32,
    /// The coordinator's `ipsec_enabled`, when its config was read.
    pub ipsec_enabled: Option<bool>,
    /// The coordinator's underlay MTU (after the 668 floor).
    pub underlay_mtu: u32,
    /// The NB raft endpoints, comma-separated, or a placeholder.
    pub nb: String,
    /// `cluster.path-matrix`, when it ran.
    pub path_matrix: Option<&'a Finding>,
    /// Nodes whose `underlay.on-link` warned or failed, with its summary.
    pub routed: Vec<(String, String)>,
    /// Nodes whose `ipsec.cert` or `ipsec.daemon` did not pass, with the
    /// check and its summary.
    pub ipsec_not_ready: Vec<(String, String, String)>,
    /// How the nodes' IPsec CAs differ (`cluster.config-drift`), when they do.
    pub ca_drift: Option<String>,
}

/// The steps of `preflight` for the cluster.
pub fn runbook(preflight: Preflight, f: &RunbookFacts) -> Vec<String> {
    match preflight {
        Preflight::EnableJumbo => enable_jumbo(f),
        Preflight::DisableIpsec => disable_ipsec(f),
        Preflight::EnableIpsec => enable_ipsec(f),
    }
}

fn in_order(f: &RunbookFacts) -> String {
    format!("one node at a time, in this order: {}", f.nodes.join(", "))
}

fn enable_jumbo(f: &RunbookFacts) -> Vec<String> {
    let t = f.target_mtu;
    let mut steps = Vec::new();
    if let Some(m) = f.path_matrix.filter(|m| m.status == Status::Fail) {
        steps.push(format!(
            "STOP: not every pair carries {t}: {}. Configure the fabric (every switch port, VLAN and router between the pairs named) for {t} before anything else",
            m.summary
        ));
    }
    steps.push(format!(
        "{}: raise the physical NIC and then the bridge (`ip link set dev <dev> mtu {t}`; each node's own report lists its devices in its runbook)",
        in_order(f)
    ));
    steps.push(format!(
        "verify from this node: `spx doctor --cluster --for enable-jumbo --mtu {t}` must exit 0 (every pair carries {t}, both ways); if it does not, revert the devices on every node to {}",
        f.underlay_mtu
    ));
    steps.push(format!(
        "only then, {}: set `underlay_mtu = {t}` under [network] in /etc/spinifex/spinifex.toml and `systemctl restart spinifex-daemon`",
        in_order(f)
    ));
    steps.push(match f.ipsec_enabled {
        Some(on) => format!(
            "guests will be given MTU {} (IPsec {}): stop and start every running guest, which keeps its old host_mtu and its DHCP lease (up to an hour) until then",
            expect::guest_mtu(t, on, false),
            if on { "on" } else { "off" }
        ),
        None => format!(
            "guests will be given MTU {} ({} with IPsec): stop and start every running guest",
            expect::guest_mtu(t, false, false),
            expect::guest_mtu(t, true, false)
        ),
    });
    steps.push(format!(
        "afterwards a plain `spx doctor --cluster` verifies the end state: underlay_mtu = {t} on every node (cluster.config-drift), every pair at {t} (cluster.path-matrix), guest MTUs (mtu.overlay on every node)"
    ));
    steps
}

fn disable_ipsec(f: &RunbookFacts) -> Vec<String> {
    let mut steps = Vec::new();
    for (node, summary) in &f.routed {
        steps.push(format!(
            "STOP and decide: on {node}, {summary}: east-west traffic to those peers would cross a router hop in clear"
        ));
    }
    steps.push("only on a physically trusted underlay (one rack, a private VLAN, no untrusted tenant on the fabric): all east-west guest traffic will cross the wire unencrypted".to_owned());
    steps.push(format!(
        "{}: set `ipsec_enabled = false` under [network] in /etc/spinifex/spinifex.toml and `systemctl restart spinifex-daemon`",
        in_order(f)
    ));
    steps.push(
        "`spx doctor --cluster --check ipsec.xfrm` must then report 0 ESP SAs on every node (charon and the SAs gone)"
            .to_owned(),
    );
    steps.push(format!(
        "once, against the NB raft endpoints (the local unix socket fails on a cluster): `ovn-nbctl --db=\"{}\" set NB_Global . ipsec=false`",
        f.nb
    ));
    steps.push(format!(
        "on every node ({}): `ovs-vsctl remove Open_vSwitch . other_config ipsec_encapsulation`",
        f.nodes.join(", ")
    ));
    steps.push(format!(
        "stop and start every guest: the guest MTU moves {} -> {} and multiqueue turns on; expect launches to fail for a minute or two while ovn-controller reprograms tunnels (RunInstances ServerInternal, vpc.add-nat timing out: not a capacity problem)",
        expect::guest_mtu(f.underlay_mtu, true, false),
        expect::guest_mtu(f.underlay_mtu, false, false)
    ));
    steps.push(format!(
        "afterwards a plain `spx doctor --cluster` verifies the end state: ipsec_enabled = false on every node (cluster.config-drift), 0 SAs (ipsec.xfrm), flags cleared (ipsec.flags), DHCP and tap MTU {} (mtu.overlay)",
        expect::guest_mtu(f.underlay_mtu, false, false)
    ));
    steps
}

fn enable_ipsec(f: &RunbookFacts) -> Vec<String> {
    let mut steps = Vec::new();
    if let Some(drift) = &f.ca_drift {
        steps.push(format!(
            "STOP: the nodes do not share one IPsec CA ({drift}): IKE between nodes of different CAs fails. Copy one cluster CA (ca.pem and ca.key) to every node and reissue the peer certificates its own report names"
        ));
    }
    for (node, check, summary) in &f.ipsec_not_ready {
        steps.push(format!(
            "STOP: on {node}, {check}: {summary} (its own report has the fix)"
        ));
    }
    steps.push(format!(
        "{}, the node that holds the NB database (/run/ovn/ovnnb_db.sock) last: set `ipsec_enabled = true` under [network] in /etc/spinifex/spinifex.toml and `systemctl restart spinifex-daemon` (the NB node's restart sets NB_Global ipsec=true, which makes every tunnel encrypt)",
        in_order(f)
    ));
    steps.push(
        "at once after the last node: `spx doctor --cluster --check ipsec` must pass on every node (SAs to every peer, flags set, daemons up): a partial enable once black-holed cross-chassis traffic for 5.5 minutes while every health signal stayed green".to_owned(),
    );
    steps.push(format!(
        "then stop and start the running guests each node's report names (host_mtu above {}, the guest MTU with IPsec on): they drop larger packets until then; expect launches to fail for a minute or two while ovn-controller reprograms the tunnels (not a capacity problem)",
        expect::guest_mtu(f.underlay_mtu, true, false)
    ));
    steps.push(format!(
        "afterwards a plain `spx doctor --cluster` verifies the end state: ipsec_enabled = true on every node (cluster.config-drift), SAs paired (cluster.sa-pairs), flags set (ipsec.flags), DHCP and tap MTU {} (mtu.overlay)",
        expect::guest_mtu(f.underlay_mtu, true, false)
    ));
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(m: Option<&Finding>) -> RunbookFacts<'_> {
        RunbookFacts {
            nodes: vec!["n0".into(), "n1".into(), "n2".into()],
            target_mtu: 9000,
            ipsec_enabled: Some(true),
            underlay_mtu: 1500,
            nb: "tcp:198.18.0.1:6641,tcp:198.18.0.2:6641".into(),
            path_matrix: m,
            routed: vec![],
            ipsec_not_ready: vec![],
            ca_drift: None,
        }
    }

    #[test]
    fn jumbo_goes_through_the_nodes_in_order_and_stops_on_a_bad_matrix() {
        let steps = runbook(Preflight::EnableJumbo, &facts(None));
        assert!(steps[0].starts_with("one node at a time, in this order: n0, n1, n2: raise"));
        assert!(steps.iter().any(|s| s.contains("`underlay_mtu = 9000`")));
        assert!(steps.iter().any(|s| s.contains("MTU 8908 (IPsec on)")));
        let bad = Finding::new(
            crate::checks::cluster_path_matrix::PathMatrixKind::PathTooSmall,
            "2 of 6 paths cannot carry 9000 bytes: n0<->n2",
        )
        .fix("x");
        let steps = runbook(Preflight::EnableJumbo, &facts(Some(&bad)));
        assert!(steps[0].starts_with("STOP: not every pair carries 9000: 2 of 6 paths"));
    }

    #[test]
    fn ipsec_names_the_nb_once_and_every_node() {
        let mut f = facts(None);
        f.routed
            .push(("n1".into(), "198.18.1.2 is behind a router".into()));
        let steps = runbook(Preflight::DisableIpsec, &f);
        assert!(steps[0].starts_with("STOP and decide: on n1, 198.18.1.2 is behind a router"));
        assert!(steps.iter().any(|s| s.contains("ovn-nbctl --db=\"tcp:198.18.0.1:6641,tcp:198.18.0.2:6641\" set NB_Global . ipsec=false")));
        assert!(steps
            .iter()
            .any(|s| s.starts_with("on every node (n0, n1, n2): `ovs-vsctl remove")));
        assert!(steps.iter().any(|s| s.contains("1408 -> 1442")));
    }

    #[test]
    fn enabling_ipsec_stops_on_a_node_not_ready_and_on_ca_drift() {
        let steps = runbook(Preflight::EnableIpsec, &facts(None));
        assert!(steps[0].starts_with("one node at a time, in this order: n0, n1, n2, the node that holds the NB database"), "{steps:#?}");
        assert!(steps.iter().any(|s| s.contains("host_mtu above 1408")));
        let mut f = facts(None);
        f.ca_drift = Some("n2 has CA ab12".into());
        f.ipsec_not_ready.push((
            "n1".into(),
            "ipsec.cert".into(),
            "the peer certificate expired".into(),
        ));
        let steps = runbook(Preflight::EnableIpsec, &f);
        assert!(steps[0].starts_with("STOP: the nodes do not share one IPsec CA (n2 has CA ab12)"));
        assert!(steps[1].starts_with("STOP: on n1, ipsec.cert: the peer certificate expired"));
    }
}
