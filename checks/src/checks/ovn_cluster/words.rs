//! The words of `ovn.cluster`: each [`Problem`] as its kind, the subject it
//! is about, what was found, and the exact commands that fix it; then the
//! whole finding, with a pass for every member and chassis that is fine.

use std::net::IpAddr;
use std::time::Duration;

use crate::finding::{Finding, SkipReason, Subject};
use crate::kind::most_severe;

use super::analyse::{Foreign, Problem, RaftView, LAG_MIN_BOUND, RAFT_FROM_NODES, RAFT_MEMBERS};
use super::facts::{Db, DbFacts, DbSide, MemberRead, MemberRef, OvnFacts, Read};
use super::OvnClusterKind as K;

/// One problem in words.
pub struct Said {
    pub kind: K,
    pub subject: String,
    pub text: String,
    pub fixes: Vec<String>,
}

/// The subject a member's findings are filed under.
pub fn member_subject(db: Db, m: &MemberRef) -> String {
    format!("{} {m}", db.name())
}

/// The subject of a chassis' findings.
pub fn chassis_subject(name: &str) -> String {
    format!("chassis {name}")
}

/// The subject of this node's own identity.
pub const LOCAL_SUBJECT: &str = "Open_vSwitch external_ids";

/// Addresses as OVN writes a list of them.
pub fn ips(list: &[IpAddr]) -> String {
    if list.is_empty() {
        return "none".into();
    }
    list.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// `cluster/status`, the first look at any member.
fn status_cmd(db: Db) -> String {
    format!("`ovn-appctl -t {} cluster/status {}`", db.ctl(), db.name())
}

/// How to put a member back: kick its old server id from the cluster (on
/// the leader), then rejoin it with a fresh copy of the log.
fn rejoin(db: Db, m: &MemberRef, sid: Option<&str>, leader: Option<&MemberRef>) -> Vec<String> {
    let (on_leader, remote) = match leader {
        Some(l) => (l.on(), l.raft_address(db)),
        None => (
            "on the leader (the member whose cluster/status says `Role: leader`)".to_owned(),
            format!("tcp:<leader's address>:{}", db.raft_port()),
        ),
    };
    // cluster/kick takes the server id or the raft address it joined with.
    let server = match (sid, m.host()) {
        (Some(sid), _) => sid.to_owned(),
        (None, Some(_)) => m.raft_address(db),
        (None, None) => "<its server id, from cluster/status Servers>".to_owned(),
    };
    vec![
        format!(
            "if it cannot rejoin on its own (its database lost, corrupt or of another cluster): {on_leader}, `ovn-appctl -t {} cluster/kick {} {server}`",
            db.ctl(),
            db.name(),
        ),
        format!(
            "then {}: `systemctl stop {unit}`, `mv {file} {file}.bad`, `ovsdb-tool join-cluster {file} {name} {local} {remote}`, `systemctl start {unit}` (it copies the log from the others)",
            m.on(),
            unit = db.unit(),
            file = db.file(),
            name = db.name(),
            local = m.raft_address(db),
        ),
    ]
}

/// How to get a node's chassis registered (`sb_db`: the SB members as
/// `--db` takes them, quoted).
pub fn missing_chassis_fix(node: &str, sb_db: &str) -> String {
    format!(
        "on {node}: `systemctl status ovn-controller`; `ovs-vsctl get Open_vSwitch . external_ids:system-id` must print {node} (`ovs-vsctl set Open_vSwitch . external_ids:system-id={node}`), external_ids:ovn-remote must name the SB members ({sb_db}) and external_ids:ovn-encap-ip its overlay address; then `systemctl restart ovn-controller`"
    )
}

/// A node's chassis at other addresses than its own `ovn-encap-ip`.
pub fn encap_mismatch_text(node: &str, sb: &[IpAddr], local: &[IpAddr]) -> String {
    format!(
        "{node}'s SB chassis has encap {}, but its own Open_vSwitch says ovn-encap-ip {}: the other nodes send {node}'s tunnels to the wrong address",
        ips(sb),
        if local.is_empty() {
            "unset".to_owned()
        } else {
            ips(local)
        }
    )
}

pub fn encap_mismatch_fix(node: &str, sb_db: &str) -> String {
    format!(
        "on {node}: `ovs-vsctl get Open_vSwitch . external_ids:ovn-encap-ip` must be its overlay (vpc plane) address; `systemctl restart ovn-controller` rewrites its Encap from it (if another chassis holds that address, `ovn-sbctl --db={sb_db} chassis-del` it first)"
    )
}

/// The sid a member answered with (at either end of the window).
fn sid_of(d: Option<&DbFacts>, m: &MemberRef) -> Option<String> {
    let member = d?.members.iter().find(|x| &x.who == m)?;
    [&member.end, &member.start]
        .into_iter()
        .find_map(|r| r.row().and_then(|r| r.sid.clone()))
}

/// One problem in words, with its fixes (`facts` for the lists and ids
/// the commands name).
pub fn said(p: &Problem, facts: &OvnFacts) -> Said {
    let sb_db = facts
        .sb_list()
        .map_or_else(|| "<ovn_sb_addr>".to_owned(), |l| format!("\"{l}\""));
    let db_facts = |db: Db| match db {
        Db::Nb => facts.nb.read(),
        Db::Sb => facts.sb.read(),
    };
    match p {
        Problem::Unreachable { db, silent } => Said {
            kind: K::DbUnreachable,
            subject: db.name().to_owned(),
            text: format!(
                "no {} member answered ({})",
                db.name(),
                silent
                    .iter()
                    .map(|(m, why)| format!("{m}: {why}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            fixes: vec![format!(
                "on each member's host: `systemctl status {}` and {}",
                db.unit(),
                status_cmd(*db)
            )],
        },
        Problem::NoLeader {
            db,
            connected,
            listed,
        } => {
            let majority = listed / 2 + 1;
            Said {
                kind: K::NoLeader,
                subject: db.name().to_owned(),
                text: format!(
                    "{} has no leader: {connected} of {listed} members answer connected and a majority is {majority}, so the raft {}: no change to {} can be committed (launches, VPCs, port bindings stop)",
                    db.name(),
                    if *connected < majority {
                        "has lost its quorum"
                    } else {
                        "is electing one"
                    },
                    db.name()
                ),
                fixes: vec![
                    format!(
                        "start the members named as down (`systemctl start {}` on their hosts): the raft elects a leader once a majority is back",
                        db.unit()
                    ),
                    format!("on each member: {} shows its Role, Term and whom it reaches", status_cmd(*db)),
                    format!(
                        "if a majority is lost for good, rebuild from the member with the highest index: there, `ovsdb-tool cluster-to-standalone /var/lib/ovn/{stem}-standalone.db {file}` and `ovsdb-tool create-cluster {file}.new /var/lib/ovn/{stem}-standalone.db tcp:<its address>:{port}`, move it to {file}, start it, then join the others to it",
                        stem = db.file().trim_start_matches("/var/lib/ovn/").trim_end_matches(".db"),
                        file = db.file(),
                        port = db.raft_port(),
                    ),
                ],
            }
        }
        Problem::SeveralLeaders { db, leaders } => Said {
            kind: K::SeveralLeaders,
            subject: db.name().to_owned(),
            text: format!(
                "{} members say they lead {} ({}): two clusters answer in one list, or a leader cut off from the others has not stepped down",
                leaders.len(),
                db.name(),
                leaders
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            fixes: vec![format!(
                "on each: {}; the one with the lower Term, or with another Cluster ID, is the odd one: rejoin it to the others (`ovsdb-tool join-cluster`, as for a member of another cluster)",
                status_cmd(*db)
            )],
        },
        Problem::NotClustered {
            db,
            member,
            model,
            nodes,
            listed,
        } => {
            let why = if *nodes >= RAFT_FROM_NODES {
                format!(
                    "Spinifex runs {} as a raft of {RAFT_MEMBERS} for a cluster of {RAFT_FROM_NODES} or more nodes (this config has {nodes}), and a {model} database is lost with its host",
                    db.short()
                )
            } else if *listed > 1 {
                format!("yet the list names {listed} servers: each is a database of its own, not one cluster")
            } else {
                format!("a {model} database is no database Spinifex runs")
            };
            let host = member.host().unwrap_or("<its address>");
            Said {
                kind: K::NotClustered,
                subject: member_subject(*db, member),
                text: format!("{member} holds {} {model}, not as a raft member: {why}", db.name()),
                fixes: vec![
                    format!(
                        "make it the raft's first member, keeping its data: {}, `systemctl stop {unit}`, `ovsdb-tool create-cluster {file}.raft {file} tcp:{host}:{port}` (the standalone database is the new cluster's contents), `mv {file}.raft {file}`, and start it with `--db-{low}-cluster-local-addr={host}` in OVN_CTL_OPTS (/etc/default/ovn-central): `systemctl start {unit}`",
                        member.on(),
                        unit = db.unit(),
                        file = db.file(),
                        port = db.raft_port(),
                        low = db.short().to_lowercase(),
                    ),
                    format!(
                        "then on each other database node: `scripts/setup-ovn.sh --management --db-cluster-local-addr=<its address> --db-cluster-remote-addr={host} --recreate-db` (Spinifex's; a joining member's own copy is discarded and replaced by the cluster's), and list all three in every node's {} ",
                        db.named_by().0
                    )
                    .trim_end()
                    .to_owned(),
                ],
            }
        }
        Problem::ForeignMember { db, member, why } => match why {
            Foreign::OtherCluster { cid, cluster } => {
                let leader = db_facts(*db).and_then(|d| RaftView::of(d).leader(d).cloned());
                Said {
                    kind: K::ForeignMember,
                    subject: member_subject(*db, member),
                    text: format!(
                        "{member} is a member of another {} cluster (cluster id {cid}; the list's is {cluster}): it was recreated with create-cluster, or the list names another cluster's server",
                        db.name()
                    ),
                    fixes: rejoin(*db, member, None, leader.as_ref())[1..]
                        .iter()
                        .map(|s| s.replacen("then ", "rejoin it to this cluster ", 1))
                        .collect(),
                }
            }
            Foreign::Lacks(serves) => {
                let (key, flag) = db.named_by();
                Said {
                    kind: K::ForeignMember,
                    subject: member_subject(*db, member),
                    text: format!(
                        "{member} answers but serves {}, not {}: a wrong endpoint in the list",
                        if serves.is_empty() {
                            "no database".to_owned()
                        } else {
                            serves.join(", ")
                        },
                        db.name()
                    ),
                    fixes: vec![format!(
                        "name {}'s members in {key} under [nodes.*.vpcd] of the Spinifex config on every node (or {flag})",
                        db.name()
                    )],
                }
            }
        },
        Problem::MemberDown {
            db,
            member,
            why,
            healthy,
            listed,
            leader,
        } => {
            let majority = listed / 2 + 1;
            let standing = if healthy < &majority {
                "the raft has lost its quorum".to_owned()
            } else if healthy == &majority {
                format!(
                    "the raft keeps its quorum (a majority is {majority}) but one more lost member stops every change to {} (launches, VPCs)",
                    db.name()
                )
            } else {
                format!(
                    "the raft keeps its quorum and tolerates {} more lost member(s)",
                    healthy - majority
                )
            };
            let sid = sid_of(db_facts(*db), member);
            let mut fixes = vec![format!(
                "{}: `systemctl start {}` (or `systemctl restart ovn-central`), then {} there must say `Status: cluster member` and name the leader",
                member.on(),
                db.unit(),
                status_cmd(*db)
            )];
            fixes.extend(rejoin(*db, member, sid.as_deref(), leader.as_ref()));
            Said {
                kind: K::MemberDown,
                subject: member_subject(*db, member),
                text: format!(
                    "{member} does not answer ({why}) while {healthy} of {listed} {} members do: {standing}",
                    db.short()
                ),
                fixes,
            }
        }
        Problem::Disconnected { db, member, leader } => {
            let sid = sid_of(db_facts(*db), member);
            let mut fixes = vec![format!(
                "{}: {} (Status, Connections, Disconnections); it must reach the other members' raft port {} (firewall, routes)",
                member.on(),
                status_cmd(*db),
                db.raft_port()
            )];
            fixes.extend(rejoin(*db, member, sid.as_deref(), leader.as_ref()));
            Said {
                kind: K::MemberDisconnected,
                subject: member_subject(*db, member),
                text: format!(
                    "{member} answers but is not connected to its cluster (out of contact with a majority, or still joining): its clients see what it last had"
                ),
                fixes,
            }
        }
        Problem::Lagging {
            db,
            member,
            index,
            reference,
            behind,
            bound,
            leader,
        } => {
            let sid = sid_of(db_facts(*db), member);
            let mut fixes = vec![format!(
                "{}: {} shows its log; {} the same command shows its match_index falling behind; look for CPU or disk starvation on its host (every entry is written to {} before it is applied)",
                member.on(),
                status_cmd(*db),
                leader.as_ref().map_or("on the leader".to_owned(), MemberRef::on),
                db.file()
            )];
            fixes.extend(rejoin(*db, member, sid.as_deref(), leader.as_ref()));
            Said {
                kind: K::Lagging,
                subject: member_subject(*db, member),
                text: format!(
                    "{member} has applied {}, still below the {reference} another member had applied at least {} earlier{}: its clients read an old {}",
                    index.map_or("no entry".to_owned(), |i| format!("index {i}")),
                    seconds(*bound),
                    behind.map_or(String::new(), |b| format!(" ({b} entries behind)")),
                    db.name()
                ),
                fixes,
            }
        }
        Problem::MemberCount {
            db,
            listed,
            nodes,
            same_server,
        } => {
            let mut why = Vec::new();
            if *listed == 2 {
                why.push(format!(
                    "the {} list names 2 members: 2 of 2 tolerate no failure, which is worse than one standalone database",
                    db.short()
                ));
            } else if *nodes >= RAFT_FROM_NODES && *listed != RAFT_MEMBERS {
                why.push(format!(
                    "the {} list names {listed} member(s); Spinifex runs a raft of {RAFT_MEMBERS} for a cluster of {RAFT_FROM_NODES} or more nodes (its install check expects {RAFT_MEMBERS} {} members)",
                    db.short(),
                    db.name()
                ));
            }
            for (a, b) in same_server {
                why.push(format!("{a} and {b} are one server (the same server id)"));
            }
            let (key, flag) = db.named_by();
            Said {
                kind: K::MemberCount,
                subject: db.name().to_owned(),
                text: why.join("; "),
                fixes: vec![format!(
                    "list the {RAFT_MEMBERS} raft members, each once, in {key} under [nodes.*.vpcd] of the Spinifex config on every node (or {flag}); add a missing member with `scripts/setup-ovn.sh --management --db-cluster-local-addr=<its address> --db-cluster-remote-addr=<a member's address> --recreate-db` on its node"
                )],
            }
        }
        Problem::MissingChassis {
            node,
            registered_as,
        } => {
            let text = match registered_as {
                Some(id) => format!(
                    "{node} has no SB chassis under its name: its ovn-controller registered as {id:?} (its system-id)"
                ),
                None => format!(
                    "{node} has no SB chassis: its ovn-controller has not registered, so {node} has no overlay networking"
                ),
            };
            Said {
                kind: K::MissingChassis,
                subject: chassis_subject(node),
                text,
                fixes: vec![missing_chassis_fix(node, &sb_db)],
            }
        }
        Problem::StaleChassis {
            name,
            hostname,
            encap_ips,
            this_nodes_id,
        } => Said {
            kind: K::StaleChassis,
            subject: chassis_subject(name),
            text: format!(
                "SB chassis {name:?} (hostname {}, encap {}) is of no node in the config{}",
                hostname.as_deref().unwrap_or("unset"),
                ips(encap_ips),
                if *this_nodes_id {
                    ": it is this node's system-id, not its name"
                } else {
                    ": a removed node, or a system-id since changed (its ovn-controller left it behind)"
                }
            ),
            fixes: vec![format!(
                "`ovn-sbctl --db={sb_db} chassis-del {name}`{}",
                if *this_nodes_id {
                    " once this node's system-id is its name (below)"
                } else {
                    ""
                }
            )],
        },
        Problem::EncapMismatch { node, sb, local } => Said {
            kind: K::EncapMismatch,
            subject: chassis_subject(node),
            text: encap_mismatch_text(node, sb, local),
            fixes: vec![encap_mismatch_fix(node, &sb_db)],
        },
        Problem::ChassisIdMismatch { node, system_id } => Said {
            kind: K::ChassisIdMismatch,
            subject: LOCAL_SUBJECT.to_owned(),
            text: match system_id {
                Some(id) => format!(
                    "this node's external_ids:system-id is {id:?}, not its node name {node}: ovn-controller registers chassis {id:?}, while Spinifex pins the chassis id to the node name (the IPsec peer certificate names {node})"
                ),
                None => format!(
                    "this node's external_ids:system-id is unset: ovn-controller cannot register a chassis for {node}"
                ),
            },
            fixes: vec![format!(
                "on {node}: `ovs-vsctl set Open_vSwitch . external_ids:system-id={node}`, `systemctl restart ovn-controller`{}",
                match system_id {
                    Some(id) => format!(", then `ovn-sbctl --db={sb_db} chassis-del {id}`"),
                    None => String::new(),
                }
            )],
        },
        Problem::ChassisUnread { why } => Said {
            kind: K::DbUnreachable,
            subject: "SB Chassis".to_owned(),
            text: format!("the SB Chassis table could not be read: {why}"),
            fixes: Vec::new(),
        },
        Problem::LocalUnreadable { why } => Said {
            kind: K::LocalUnreadable,
            subject: LOCAL_SUBJECT.to_owned(),
            text: format!(
                "this node's Open_vSwitch database could not be read ({why}): its chassis id and ovn-encap-ip are unknown"
            ),
            fixes: vec!["`systemctl status openvswitch-switch` on this node (or pass --ovs-db)".into()],
        },
    }
}

/// A member that is fine, in words: its role and index.
fn member_fine(r: &MemberRead) -> Option<String> {
    let r = r.row()?;
    Some(match (r.clustered(), r.leader, r.index) {
        (false, _, _) => format!(
            "{}, as Spinifex runs a cluster of one or two nodes",
            r.model
        ),
        (true, true, Some(i)) => format!("leader, index {i}"),
        (true, false, Some(i)) => format!("follower, connected, index {i}"),
        (true, true, None) => "leader".into(),
        (true, false, None) => "follower, connected".into(),
    })
}

/// One database in a pass's summary.
fn db_fine(d: &DbFacts, lag_bound: Option<Duration>) -> String {
    let view = RaftView::of(d);
    if view.cluster.is_empty() {
        let who = d
            .members
            .first()
            .map(|m| m.who.to_string())
            .unwrap_or_default();
        return format!(
            "{} standalone at {who} (Spinifex's layout below {RAFT_FROM_NODES} nodes: it tolerates no loss of its host)",
            d.db.name()
        );
    }
    let leader = view
        .leader(d)
        .map_or_else(String::new, |l| format!(", leader {l}"));
    let lag = match lag_bound {
        Some(b) if b < LAG_MIN_BOUND => format!(
            " (lag not judged: the readings were {} ms apart, under {} ms; --sample 1s judges it)",
            b.as_millis(),
            LAG_MIN_BOUND.as_millis()
        ),
        _ => String::new(),
    };
    format!(
        "{} raft of {}, all connected{leader}, index {}{lag}",
        d.db.name(),
        d.members.len(),
        view.end_max.map_or("?".into(), |i| i.to_string())
    )
}

/// The finding: the most severe problem heads it; every member, chassis
/// and this node's identity is a subject; nothing judged is a skip.
pub fn finding(facts: &OvnFacts, problems: &[Problem]) -> Finding {
    let said: Vec<Said> = problems.iter().map(|p| said(p, facts)).collect();
    let mut subjects: Vec<Subject> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    let troubled = |subject: &str| said.iter().any(|s| s.subject == subject);

    for side in [&facts.nb, &facts.sb] {
        match side {
            DbSide::Read(d) => {
                for m in &d.members {
                    let subject = member_subject(d.db, &m.who);
                    if let MemberRead::Denied(needs) = &m.end {
                        subjects.push(Subject::skipped(
                            subject,
                            SkipReason::NeedsPrivilege(needs.clone()),
                        ));
                    } else if let (false, Some(text)) = (troubled(&subject), member_fine(&m.end)) {
                        subjects.push(Subject::new(K::Ok, subject, text));
                    }
                }
            }
            DbSide::Elsewhere(node) => {
                let why = format!(
                    "OVN NB and SB are cluster-wide: read once in this cluster run, by {node}"
                );
                skipped.push(why.clone());
                subjects.push(Subject::skipped(
                    "OVN NB and SB",
                    SkipReason::NotApplicable(why),
                ));
            }
            DbSide::Unnamed(why) => {
                skipped.push(why.clone());
                subjects.push(Subject::skipped(
                    "OVN",
                    SkipReason::NotApplicable(why.clone()),
                ));
            }
        }
    }
    // Elsewhere is one subject for both databases.
    subjects.dedup_by(|a, b| a.subject == b.subject && a.summary == b.summary);
    skipped.dedup();

    let local = facts.local.value();
    if let Read::Answered { value: chassis, .. } = &facts.chassis {
        for c in chassis.iter().filter(|c| facts.nodes.contains(&c.name)) {
            let subject = chassis_subject(&c.name);
            if troubled(&subject) {
                continue;
            }
            let mine = facts.node.as_ref() == Some(&c.name) && local.is_some();
            subjects.push(Subject::new(
                K::Ok,
                subject,
                format!(
                    "encap {}{}",
                    ips(&c.encap_ips),
                    if mine {
                        ", as its Open_vSwitch ovn-encap-ip says"
                    } else {
                        ""
                    }
                ),
            ));
        }
    }
    if let Read::Denied(needs) = &facts.chassis {
        subjects.push(Subject::skipped(
            "SB Chassis",
            SkipReason::NeedsPrivilege(needs.clone()),
        ));
    }
    match &facts.local {
        Read::Answered { value, from } if !troubled(LOCAL_SUBJECT) => subjects.push(Subject::new(
            K::Ok,
            LOCAL_SUBJECT,
            format!(
                "system-id {}, ovn-encap-ip {} (read from {from})",
                value.system_id.as_deref().unwrap_or("unset"),
                ips(&value.encap_ips)
            ),
        )),
        Read::Denied(needs) => subjects.push(Subject::skipped(
            LOCAL_SUBJECT,
            SkipReason::NeedsPrivilege(needs.clone()),
        )),
        _ => {}
    }
    for s in &said {
        subjects.push(Subject::new(s.kind, s.subject.clone(), s.text.clone()));
    }

    if let Some(kind) = most_severe(said.iter().map(|s| s.kind)) {
        let mut fixes: Vec<String> = Vec::new();
        for f in said.iter().flat_map(|s| s.fixes.iter()) {
            if !fixes.contains(f) {
                fixes.push(f.clone());
            }
        }
        let text: Vec<&str> = said.iter().map(|s| s.text.as_str()).collect();
        return Finding::new(kind, text.join("; "))
            .fixes(fixes)
            .subjects(subjects);
    }

    let mut fine: Vec<String> = Vec::new();
    for side in [&facts.nb, &facts.sb] {
        if let DbSide::Read(d) = side {
            fine.push(db_fine(d, facts.lag_bound));
        }
    }
    if let Read::Answered { value, .. } = &facts.chassis {
        fine.push(format!(
            "{} SB chassis, one per node ({})",
            value.len(),
            facts.nodes.join(", ")
        ));
    }
    if let (Some(l), Some(node)) = (local, &facts.node) {
        fine.push(format!(
            "this node's chassis id {node} with ovn-encap-ip {}",
            ips(&l.encap_ips)
        ));
    }
    let judged_ovn = facts.nb.read().is_some() || facts.sb.read().is_some();
    if !judged_ovn && local.is_none() {
        let mut why = skipped.clone();
        if let Read::Denied(needs) = &facts.local {
            return Finding::skip(SkipReason::NeedsPrivilege(needs.clone())).subjects(subjects);
        }
        why.retain(|w| !w.is_empty());
        return Finding::skip(SkipReason::NotApplicable(why.join("; "))).subjects(subjects);
    }
    if !judged_ovn && facts.read_by().is_none() {
        // Named nowhere: this node's identity agrees, nothing else is known.
        return Finding::skip(SkipReason::NotApplicable(format!(
            "{}; {}",
            skipped.join("; "),
            fine.join("; ")
        )))
        .subjects(subjects);
    }
    if let Some(node) = facts.read_by() {
        fine.push(format!(
            "NB and SB are read once, by {node} (cluster.chassis compares this node's chassis with SB)"
        ));
    } else {
        fine.extend(skipped);
    }
    Finding::new(K::Ok, fine.join("; ")).subjects(subjects)
}
