//! The native OVSDB client against real `ovsdb-server` processes: the
//! peer source for mtu.path (SB `Encap`), the local encap IP, raft member
//! failover, and the bounds on dead and hung members.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use spx_checks::endpoint::Endpoint;
use spx_checks::facts::ovsdb::Budget;
use spx_checks::host::HostRef;
use spx_checks::live::LiveHost;
use spx_checks::read::ovsdb;

/// The live host, as these probe tests ask it (outside any check).
fn live() -> HostRef<'static> {
    static LIVE: std::sync::OnceLock<LiveHost> = std::sync::OnceLock::new();
    HostRef::new(LIVE.get_or_init(LiveHost::new), "test")
}

use crate::support::ovsdb_server::{refused_port, silent_listener, OvsdbServer};

fn ep(s: &str) -> Endpoint {
    Endpoint::parse(s).unwrap()
}

fn ips(list: &[&str]) -> Vec<IpAddr> {
    list.iter().map(|s| s.parse().unwrap()).collect()
}

#[test]
fn sb_encap_rows_are_the_peers_over_tcp_and_unix() {
    let sb = OvsdbServer::sb();
    for (name, ip) in [
        ("spx1", "198.18.0.1"),
        ("spx2", "198.18.0.2"),
        ("spx3", "198.18.0.3"),
    ] {
        sb.sbctl(&["chassis-add", name, "geneve", ip]);
    }
    for endpoint in [sb.tcp(), sb.unix()] {
        let (got, answered) =
            ovsdb::sb_encap_ips(live(), &[ep(&endpoint)], Duration::from_secs(1)).unwrap();
        assert_eq!(
            got,
            ips(&["198.18.0.1", "198.18.0.2", "198.18.0.3"]),
            "{endpoint}"
        );
        assert_eq!(answered.to_string(), endpoint);
    }
}

#[test]
fn local_encap_ip_is_read_from_open_vswitch_external_ids() {
    let ovs = OvsdbServer::ovs();
    let local = ep(&ovs.unix());
    assert_eq!(
        ovsdb::local_encap_ips(live(), &local, Duration::from_secs(1)).unwrap(),
        Vec::<IpAddr>::new()
    );
    ovs.vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        "external_ids:ovn-encap-ip=\"198.18.0.1,fd00::1\"",
    ]);
    assert_eq!(
        ovsdb::local_encap_ips(live(), &local, Duration::from_secs(1)).unwrap(),
        ips(&["198.18.0.1", "fd00::1"])
    );
}

#[test]
fn raft_list_passes_over_a_refusing_member_and_names_the_one_that_answered() {
    let sb = OvsdbServer::sb();
    sb.sbctl(&["chassis-add", "spx2", "geneve", "198.18.0.2"]);
    let dead = format!("tcp:127.0.0.1:{}", refused_port());
    let list = Endpoint::parse_list(&format!("{dead},{}", sb.tcp())).unwrap();
    let ans =
        ovsdb::sb_encap_ips_within(live(), &list, Budget::per_member(Duration::from_secs(1), 2))
            .unwrap();
    assert_eq!(ans.value, ips(&["198.18.0.2"]));
    assert_eq!(ans.endpoint.to_string(), sb.tcp());
    assert_eq!(ans.passed_over.len(), 1);
    assert_eq!(ans.passed_over[0].0.to_string(), dead);
    assert!(
        ans.passed_over[0].1.contains("refused"),
        "{:?}",
        ans.passed_over
    );
}

#[test]
fn all_members_dead_is_an_error_naming_each() {
    let list = Endpoint::parse_list(&format!(
        "tcp:127.0.0.1:{},tcp:127.0.0.1:{},unix:/nonexistent/spx-test.sock",
        refused_port(),
        refused_port()
    ))
    .unwrap();
    let started = Instant::now();
    let err = ovsdb::sb_encap_ips(live(), &list, Duration::from_secs(1))
        .unwrap_err()
        .to_string();
    // Refusals are immediate; nothing waited for a bound.
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert!(
        err.starts_with("no member of OVN_Southbound at tcp:127.0.0.1:"),
        "{err}"
    );
    assert_eq!(err.matches("refused").count(), 2, "{err}");
    assert!(
        err.contains("unix:/nonexistent/spx-test.sock: no socket at /nonexistent/spx-test.sock (is ovsdb-server running on this host?)"),
        "{err}"
    );
}

#[test]
fn a_member_that_accepts_and_never_answers_times_out_within_its_bound() {
    let (_hold, hung) = silent_listener();
    let sb = OvsdbServer::sb();
    sb.sbctl(&["chassis-add", "spx3", "geneve", "198.18.0.3"]);
    let bound = Duration::from_millis(300);
    let list = Endpoint::parse_list(&format!("{hung},{}", sb.unix())).unwrap();
    let started = Instant::now();
    let ans = ovsdb::sb_encap_ips_within(live(), &list, Budget::per_member(bound, 2)).unwrap();
    let took = started.elapsed();
    assert_eq!(ans.value, ips(&["198.18.0.3"]));
    assert!(
        ans.passed_over[0].1.contains("no answer within 300ms"),
        "{:?}",
        ans.passed_over
    );
    assert!(
        took >= bound,
        "the hung member was given its bound: {took:?}"
    );

    // Alone, it is an error after the bound and no later than the deadline.
    let deadline = Instant::now() + Duration::from_millis(500);
    let err = ovsdb::sb_encap_ips_within(
        live(),
        &[ep(&hung)],
        Budget::within(Duration::from_secs(5), deadline),
    )
    .unwrap_err();
    assert!(
        Instant::now() < deadline + Duration::from_secs(2),
        "overran the deadline"
    );
    assert!(err.to_string().contains("no answer within"), "{err}");
}

#[test]
fn a_server_without_the_database_says_which_it_serves() {
    let nb = OvsdbServer::nb();
    let err = ovsdb::sb_encap_ips(live(), &[ep(&nb.unix())], Duration::from_secs(1))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("serves OVN_Northbound but not OVN_Southbound"),
        "{err}"
    );
}

#[test]
fn nb_global_and_dhcp_options_are_read() {
    let nb = OvsdbServer::nb();
    let list = [ep(&nb.tcp())];
    let b = || Budget::per_member(Duration::from_secs(1), 1);
    assert_eq!(
        ovsdb::nb_global_ipsec(live(), &list, b()).unwrap().value,
        Some(false)
    );
    nb.nbctl(&["set", "NB_Global", ".", "ipsec=true"]);
    assert_eq!(
        ovsdb::nb_global_ipsec(live(), &list, b()).unwrap().value,
        Some(true)
    );

    nb.nbctl(&["dhcp-options-create", "198.18.10.0/24"]);
    let uuid = nb.nbctl(&[
        "--bare",
        "--columns=_uuid",
        "find",
        "DHCP_Options",
        "cidr=\"198.18.10.0/24\"",
    ]);
    nb.nbctl(&[
        "dhcp-options-set-options",
        uuid.trim(),
        "mtu=1408",
        "router=198.18.10.1",
    ]);
    nb.nbctl(&["dhcp-options-create", "198.18.11.0/24"]);
    let rows = ovsdb::dhcp_options(live(), &list, b()).unwrap().value;
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].cidr, "198.18.10.0/24");
    assert_eq!(rows[0].uuid, uuid.trim());
    assert_eq!(rows[0].mtu.as_deref(), Some("1408"));
    assert_eq!(rows[1].mtu, None);
}

#[test]
fn the_servers_echo_keepalive_is_answered() {
    // A fake server that sends `echo` first and only answers once it got
    // the echo reply back, split across tiny writes.
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut line = String::new();
        r.read_line(&mut line).unwrap(); // our _Server transact
        let id = serde_json::from_str::<serde_json::Value>(&line).unwrap()["id"].clone();
        s.write_all(br#"{"method":"echo","params":["x"],"id":"echo"}"#)
            .unwrap();
        line.clear();
        r.read_line(&mut line).unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&line).unwrap()["result"],
            serde_json::json!(["x"])
        );
        let reply = format!(
            r#"{{"id":{id},"error":null,"result":[{{"rows":[{{"name":"OVN_Southbound","model":"standalone","connected":true,"leader":true}}]}}]}}"#
        );
        for chunk in reply.as_bytes().chunks(7) {
            s.write_all(chunk).unwrap();
            s.flush().unwrap();
        }
        line.clear();
        r.read_line(&mut line).unwrap(); // the Encap select
        let id = serde_json::from_str::<serde_json::Value>(&line).unwrap()["id"].clone();
        s.write_all(br#"{"id":null,"method":"update","params":[null,{}]}"#)
            .unwrap();
        s.write_all(format!(r#"{{"id":{id},"error":null,"result":[{{"rows":[{{"ip":"198.18.0.9","type":"geneve"}}]}}]}}"#).as_bytes())
            .unwrap();
    });
    let (got, _) = ovsdb::sb_encap_ips(
        live(),
        &[ep(&format!("tcp:127.0.0.1:{port}"))],
        Duration::from_secs(2),
    )
    .unwrap();
    assert_eq!(got, ips(&["198.18.0.9"]));
    server.join().unwrap();
}

#[test]
fn a_raft_member_not_connected_to_its_cluster_is_passed_over() {
    // ovn-nbctl does the same: a member that is up but has no cluster
    // (here: still joining one whose other member is gone) is not asked.
    let joining = OvsdbServer::joining("OVN_Southbound");
    let sb = OvsdbServer::clustered(crate::support::ovsdb_server::SB_SCHEMA);
    sb.sbctl(&["chassis-add", "spx4", "geneve", "198.18.0.4"]);
    let list = Endpoint::parse_list(&format!("{},{}", joining.unix(), sb.tcp())).unwrap();
    let ans =
        ovsdb::sb_encap_ips_within(live(), &list, Budget::per_member(Duration::from_secs(2), 2))
            .unwrap();
    assert_eq!(ans.value, ips(&["198.18.0.4"]));
    assert_eq!(
        ans.endpoint.to_string(),
        sb.tcp(),
        "the clustered, connected member answered"
    );
    assert_eq!(ans.passed_over[0].0.to_string(), joining.unix());
    assert!(
        ans.passed_over[0]
            .1
            .contains("not connected to its cluster"),
        "{:?}",
        ans.passed_over
    );
}

/// A scripted OVSDB peer on 127.0.0.1: each request line gets `answer`'s
/// bytes back (none: no reply). Serves one connection.
fn scripted(
    answer: impl Fn(&serde_json::Value) -> Option<Vec<u8>> + Send + 'static,
) -> (String, std::thread::JoinHandle<()>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ep = format!("tcp:127.0.0.1:{}", listener.local_addr().unwrap().port());
    let handle = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut line = String::new();
        while r.read_line(&mut line).unwrap_or(0) > 0 {
            let req: serde_json::Value = serde_json::from_str(&line).unwrap();
            line.clear();
            match answer(&req) {
                Some(bytes) => {
                    if s.write_all(&bytes).is_err() {
                        return;
                    }
                }
                None => return,
            }
        }
    });
    (ep, handle)
}

#[test]
fn a_server_without_the_server_database_is_asked_list_dbs() {
    // ovsdb-server before 2.9 has no _Server database.
    let (addr, server) = scripted(|req| {
        let id = &req["id"];
        let reply = match (req["method"].as_str(), req["params"][0].as_str()) {
            (Some("transact"), Some("_Server")) => serde_json::json!({"id": id, "result": null,
                "error": {"error": "unknown database", "details": "No database named _Server."}}),
            (Some("list_dbs"), _) => {
                serde_json::json!({"id": id, "result": ["Open_vSwitch"], "error": null})
            }
            (Some("transact"), Some("Open_vSwitch")) => serde_json::json!({"id": id, "error": null,
                "result": [{"rows": [{"other_config": ["map", []],
                                      "external_ids": ["map", [["ovn-encap-ip", "198.18.0.7"]]]}]}]}),
            _ => return None,
        };
        Some(serde_json::to_vec(&reply).unwrap())
    });
    let got = ovsdb::local_encap_ips(live(), &ep(&addr), Duration::from_secs(2)).unwrap();
    assert_eq!(got, ips(&["198.18.0.7"]));
    server.join().unwrap();
}

#[test]
fn garbage_or_a_closed_connection_is_an_error_not_a_hang() {
    let (addr, server) = scripted(|_| Some(b"HTTP/1.1 400 Bad Request\r\n\r\n".to_vec()));
    let err = ovsdb::local_encap_ips(live(), &ep(&addr), Duration::from_secs(2))
        .unwrap_err()
        .to_string();
    assert!(err.contains("not JSON-RPC"), "{err}");
    server.join().unwrap();

    // The server reads the request and hangs up without a word.
    let (addr, server) = scripted(|req| {
        let _ = req;
        None
    });
    let started = Instant::now();
    let err = ovsdb::local_encap_ips(live(), &ep(&addr), Duration::from_secs(2))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("closed the connection before answering"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "did not wait for the bound"
    );
    server.join().unwrap();
}

/// The family of this node's overlay endpoint, as the guest MTU needs it:
/// the local `ovn-encap-ip` first, else the SB `Encap` rows when they
/// agree, else IPv4 assumed and said so.
#[test]
fn the_underlay_family_is_read_from_ovn_encap_ip_else_the_sb() {
    use spx_checks::ctx::Ctx;
    use spx_checks::expect::Family;
    use spx_checks::settings::{ConfigState, Options};
    use spx_checks::targets::peers::underlay_family;

    let ovs = OvsdbServer::ovs();
    let sb = OvsdbServer::sb();
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("unix:{}", dir.path().join("none.sock").display());
    let ctx = |ovs_db: &str, sb_db: Option<String>| {
        Ctx::new(
            ConfigState::Missing { looked_at: vec![] },
            Options {
                ovs_db: Some(spx_checks::endpoint::Endpoint::parse_list(ovs_db).unwrap()),
                sb_db: sb_db.map(|t| spx_checks::endpoint::Endpoint::parse_list(&t).unwrap()),
                ..Options::default()
            },
        )
    };
    let set = |ip: &str| {
        ovs.vsctl(&[
            "set",
            "Open_vSwitch",
            ".",
            &format!("external_ids:ovn-encap-ip=\"{ip}\""),
        ])
    };
    set("198.18.0.1");
    let f = underlay_family(&ctx(&ovs.unix(), None));
    assert_eq!((f.family, f.known), (Family::Ipv4, true), "{f:?}");
    set("fd00:198:18::1");
    let f = underlay_family(&ctx(&ovs.unix(), None));
    assert_eq!((f.family, f.known), (Family::Ipv6, true), "{f:?}");
    assert_eq!(
        f.source,
        format!("ovn-encap-ip fd00:198:18::1 at {}", ovs.unix())
    );
    // Both families: the guest MTU must fit the IPv6 tunnels.
    set("198.18.0.1,fd00:198:18::1");
    assert_eq!(
        underlay_family(&ctx(&ovs.unix(), None)).family,
        Family::Ipv6
    );

    // No local OVS database: the SB, when every chassis agrees.
    for (name, ip) in [("spx1", "fd00:198:18::1"), ("spx2", "fd00:198:18::2")] {
        sb.sbctl(&["chassis-add", name, "geneve", ip]);
    }
    let f = underlay_family(&ctx(&missing, Some(sb.unix())));
    assert_eq!((f.family, f.known), (Family::Ipv6, true), "{f:?}");
    assert!(f.source.starts_with("OVN SB: all 2 Encap rows"), "{f:?}");
    sb.sbctl(&["chassis-add", "spx3", "geneve", "198.18.0.3"]);
    let f = underlay_family(&ctx(&missing, Some(sb.unix())));
    assert_eq!((f.family, f.known), (Family::Ipv4, false), "{f:?}");
    assert!(f.source.contains("mix IPv4 and IPv6"), "{f:?}");

    // Nothing to ask: IPv4 assumed, and why.
    let f = underlay_family(&ctx(&missing, None));
    assert_eq!((f.family, f.known), (Family::Ipv4, false));
    assert!(
        f.source
            .starts_with("IPv4 assumed (no local OVS database at unix:"),
        "{f:?}"
    );
}
