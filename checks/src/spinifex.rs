//! Spinifex's own names, in one place: what the doctor is called on the
//! command line, where Spinifex keeps its files, what it calls its bridges
//! and taps, and the one wording of each command the doctor prints, so
//! every message an operator copies works as typed.
//!
//! The doctor ships as `spx-doctor`. Spinifex's Go CLI `spx` runs it as
//! `spx doctor` (contrib/spinifex/doctor.go), exec'ing the binary with
//! `SPX_DOCTOR_VIA=spx` in the environment; help, usage, errors, runbooks and
//! remediation then name `spx doctor`, and `spx-doctor` otherwise.

/// The environment variable Spinifex's `spx doctor` hook sets.
pub const VIA_ENV: &str = "SPX_DOCTOR_VIA";

/// The installed binary's name.
pub const BINARY: &str = "spx-doctor";

/// The config Spinifex reads when `/etc/spinifex` exists.
pub const CONFIG_PATH: &str = "/etc/spinifex/spinifex.toml";
/// The config under `$HOME` when `/etc/spinifex` does not exist.
pub const HOME_CONFIG: &str = "spinifex/config/spinifex.toml";
/// Spinifex's `spx` reads the config from here when `--config` is not given.
pub const CONFIG_PATH_ENV: &str = "SPINIFEX_CONFIG_PATH";

/// Where the daemon writes the node firewall's peer sets.
pub const PEERS_NFT: &str = "/etc/spinifex/firewall/peers.nft";
/// The `peers.nft` define holding the overlay (geneve) endpoints: the vpc plane.
pub const ENCAP_PEERS_DEFINE: &str = "spinifex_encap_peers";
/// The `peers.nft` define holding the other nodes' wan-plane addresses.
pub const WAN_PEERS_DEFINE: &str = "spinifex_peers";

/// The sysctl.d file setup.sh's sysctl stage writes (`net.core.rmem_max`,
/// `net.core.wmem_max`): where every kernel setting the doctor asks for
/// belongs, so that it survives a reboot.
pub const SYSCTL_FILE: &str = "/etc/sysctl.d/99-spinifex-net.conf";

/// The daemon's systemd unit.
pub const DAEMON_UNIT: &str = "spinifex-daemon";

/// Spinifex's IPsec credentials (`admin/ipsec.go`): under the config's
/// directory, `ipsec/peer.pem` (0644) and `ipsec/peer.key` (0600, RSA
/// PKCS#8), issued by the cluster CA `ca.pem` (its key `ca.key` beside it)
/// for 365 days, CN and dNSName the node's name, O `Spinifex Platform`,
/// the node's IP, key usage digitalSignature and keyEncipherment, EKUs
/// clientAuth, serverAuth and ipsecIKE.
pub const IPSEC_DIR: &str = "ipsec";
pub const PEER_CERT: &str = "peer.pem";
pub const PEER_KEY: &str = "peer.key";
pub const CLUSTER_CA: &str = "ca.pem";
pub const CLUSTER_CA_KEY: &str = "ca.key";
pub const PEER_CERT_DAYS: u32 = 365;
pub const PEER_KEY_BITS: u32 = 4096;
pub const CERT_ORGANIZATION: &str = "Spinifex Platform";
/// The name Spinifex links the cluster CA under in charon's trust store.
pub const CHARON_TRUST_LINK: &str = "spinifex-ca.pem";
/// The unit that runs ovs-monitor-ipsec, which starts charon.
pub const OVS_IPSEC_UNIT: &str = "openvswitch-ipsec";

/// The Linux bridge of each plane is `br-` + the plane's name.
pub const BRIDGE_PREFIX: &str = "br-";
/// The vpc plane's bridge, best first: planes collapse vpc → lan → wan on
/// nodes with fewer NICs, so `br-vpc` may be absent.
pub const UNDERLAY_BRIDGES: [&str; 3] = ["br-vpc", "br-lan", "br-wan"];
/// The bridge of the vpc plane on a node with a NIC for it.
pub const VPC_BRIDGE: &str = UNDERLAY_BRIDGES[0];
/// The bridge of the wan plane.
pub const WAN_BRIDGE: &str = UNDERLAY_BRIDGES[2];

/// VPC taps are `tap` + ENI id, cut to 15 characters.
pub const VPC_TAP_PREFIX: &str = "tap";
/// Management taps are `mg` + instance id.
pub const MGMT_TAP_PREFIX: &str = "mg";

/// The OVS bridge OVN's logical ports are plugged into.
pub const INTEGRATION_BRIDGE: &str = "br-int";
/// The logical switch port of an ENI (topology/names.go `Port`).
pub const ENI_PORT_PREFIX: &str = "port-";

/// The logical switch port of ENI `eni`: `port-<eni>` (names.go `Port`),
/// also the OVS `external_ids:iface-id` of its tap (network_helpers.go
/// `OVSIfaceID`).
pub fn eni_port(eni: &str) -> String {
    format!("{ENI_PORT_PREFIX}{eni}")
}

/// The tap of ENI `eni`: `tap` + the id without `eni-`, cut to 15
/// characters, Linux's IFNAMSIZ (network_helpers.go `TapDeviceName`).
pub fn tap_name(eni: &str) -> String {
    let id = eni.strip_prefix("eni-").unwrap_or(eni);
    let mut name = format!("{VPC_TAP_PREFIX}{id}");
    name.truncate(15);
    name
}

/// The bridge of `plane` (`vpc`, `lan`, `wan`).
pub fn bridge(plane: &str) -> String {
    format!("{BRIDGE_PREFIX}{plane}")
}

/// A guest's tap on this host (VPC or management), not a NIC of the
/// underlay: bridge ports with these names are not raised with the NIC.
pub fn is_guest_tap(dev: &str) -> bool {
    dev.starts_with(VPC_TAP_PREFIX) || dev.starts_with(MGMT_TAP_PREFIX)
}

/// How the operator started the doctor: `spx doctor` through Spinifex's
/// `spx`, else `spx-doctor`.
pub fn doctor_command() -> &'static str {
    if via_spx() {
        "spx doctor"
    } else {
        BINARY
    }
}

/// True when Spinifex's `spx` started this process (`SPX_DOCTOR_VIA=spx`).
pub fn via_spx() -> bool {
    std::env::var_os(VIA_ENV).is_some_and(|v| v == "spx")
}

/// Text written for `spx doctor` (the `explain` pages, which are static),
/// with the command as this process was started.
pub fn as_invoked(text: &str) -> String {
    if via_spx() {
        text.to_owned()
    } else {
        text.replace("`spx doctor", &format!("`{BINARY}"))
    }
}

/// The one wording of an MTU change: `ip link set dev DEV mtu N`.
pub fn set_mtu(dev: &str, mtu: u32) -> String {
    format!("ip link set dev {dev} mtu {mtu}")
}

/// `set_mtu` for each device, in order, quoted and joined with `sep`.
pub fn set_mtus<S: AsRef<str>>(devs: &[S], mtu: u32, sep: &str) -> String {
    devs.iter()
        .map(|d| format!("`{}`", set_mtu(d.as_ref(), mtu)))
        .collect::<Vec<_>>()
        .join(sep)
}

/// The one wording of a config change: set `[network] KEY = VALUE` in the
/// file this run read (see [`crate::Ctx::config_file`]).
pub fn set_network_key(key: &str, value: impl std::fmt::Display, file: &str) -> String {
    format!("set `{key} = {value}` under [network] in {file}")
}

/// Loading every file of /etc/sysctl.d (the second step after a change).
pub const LOAD_SYSCTLS: &str = "sysctl --system";

/// The one wording of a kernel setting made to last: add these `KEY =
/// VALUE` lines to [`SYSCTL_FILE`], then load them (`sysctl --system`, the
/// second step).
pub fn persist_sysctls(lines: &[(String, u64)]) -> [String; 2] {
    let count = match lines.len() {
        1 => "this line".to_owned(),
        2 => "these two lines".to_owned(),
        3 => "these three lines".to_owned(),
        n => format!("these {n} lines"),
    };
    let quoted: Vec<String> = lines.iter().map(|(k, v)| format!("`{k} = {v}`")).collect();
    let listed = match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => quoted.concat(),
    };
    [
        format!("add {count} to {SYSCTL_FILE} (setup.sh's sysctl stage writes them): {listed}"),
        LOAD_SYSCTLS.to_owned(),
    ]
}

/// The one wording of a neighbour table's thresholds raised to `[t1, t2,
/// t3]` (`prefix`: `net.ipv4.neigh.default`): the three lines added to
/// [`SYSCTL_FILE`], then loaded.
pub fn raise_neigh_thresholds(prefix: &str, [t1, t2, t3]: [u32; 3]) -> [String; 2] {
    persist_sysctls(&[
        (format!("{prefix}.gc_thresh1"), u64::from(t1)),
        (format!("{prefix}.gc_thresh2"), u64::from(t2)),
        (format!("{prefix}.gc_thresh3"), u64::from(t3)),
    ])
}

/// Restarting the daemon, which applies a config change.
pub fn restart_daemon() -> String {
    format!("systemctl restart {DAEMON_UNIT}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taps_and_ports_are_named_as_spinifex_names_them() {
        // As TapDeviceName cuts them: a 17-digit ENI id to 15 characters.
        assert_eq!(tap_name("eni-0123456789abcdef0"), "tap0123456789ab");
        assert_eq!(tap_name("eni-abc"), "tapabc");
        assert_eq!(eni_port("eni-abc"), "port-eni-abc");
    }

    #[test]
    fn bridges_are_br_plus_the_plane() {
        assert_eq!(bridge("vpc"), VPC_BRIDGE);
        assert_eq!(bridge("wan"), WAN_BRIDGE);
        for (plane, br) in ["vpc", "lan", "wan"].into_iter().zip(UNDERLAY_BRIDGES) {
            assert_eq!(bridge(plane), br);
        }
        assert!(is_guest_tap("tapeni-0abc") && is_guest_tap("mgi-0abc"));
        assert!(!is_guest_tap("enp65s0f0"));
    }

    #[test]
    fn sysctls_are_added_to_setup_sh_s_file_then_loaded() {
        let [add, load] = persist_sysctls(&[
            ("net.ipv4.neigh.default.gc_thresh1".into(), 2048),
            ("net.ipv4.neigh.default.gc_thresh2".into(), 4096),
            ("net.ipv4.neigh.default.gc_thresh3".into(), 8192),
        ]);
        assert_eq!(add, "add these three lines to /etc/sysctl.d/99-spinifex-net.conf (setup.sh's sysctl stage writes them): `net.ipv4.neigh.default.gc_thresh1 = 2048`, `net.ipv4.neigh.default.gc_thresh2 = 4096` and `net.ipv4.neigh.default.gc_thresh3 = 8192`");
        assert_eq!(load, "sysctl --system");
    }

    #[test]
    fn remediation_words_name_the_file_and_devices() {
        assert_eq!(
            set_network_key("underlay_mtu", 1500, "/srv/spx/node.toml"),
            "set `underlay_mtu = 1500` under [network] in /srv/spx/node.toml"
        );
        assert_eq!(
            set_mtus(&["enp1s0", "br-vpc"], 9000, ", then "),
            "`ip link set dev enp1s0 mtu 9000`, then `ip link set dev br-vpc mtu 9000`"
        );
    }
}
