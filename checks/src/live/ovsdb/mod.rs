//! OVSDB over its sockets: one JSON-RPC session per member ([`conn`]),
//! the selects the live host answers.

pub mod conn;

use self::conn::{MemberError, Session};
use crate::endpoint::{self, Endpoint};
use crate::facts::ovsdb::wire::{self, Select};
use crate::facts::ovsdb::{datum, raft};
use crate::facts::ovsdb::{drop_secrets, Answer, Budget, Row};
use crate::facts::ProbeError;
use serde_json::{json, Value};
use std::time::Instant;
/// [`crate::read::ovsdb::select`] on the live servers: every member in turn, each within the
/// budget; secrets dropped from every row ([`drop_secrets`]).
pub fn select_live(
    endpoints: &[Endpoint],
    db: &str,
    selects: &[Select<'_>],
    budget: Budget,
) -> Result<Answer<Vec<Vec<Row>>>, ProbeError> {
    let mut answer = select_members(endpoints, db, selects, budget)?;
    for rows in &mut answer.value {
        drop_secrets(rows);
    }
    Ok(answer)
}

fn select_members(
    endpoints: &[Endpoint],
    db: &str,
    selects: &[Select<'_>],
    budget: Budget,
) -> Result<Answer<Vec<Vec<Row>>>, ProbeError> {
    let mut failures: Vec<(Endpoint, MemberError)> = Vec::new();
    for ep in endpoints {
        let now = Instant::now();
        if now >= budget.deadline {
            failures.push((
                ep.clone(),
                MemberError::Protocol("not tried: the run's deadline had passed".into()),
            ));
            continue;
        }
        let member_deadline = budget.deadline.min(now + budget.per_member);
        match select_one(ep, db, selects, member_deadline) {
            Ok(rows) => {
                return Ok(Answer {
                    value: rows,
                    endpoint: ep.clone(),
                    passed_over: failures
                        .into_iter()
                        .map(|(e, err)| (e, err.to_string()))
                        .collect(),
                })
            }
            Err(err) => failures.push((ep.clone(), err)),
        }
    }
    Err(no_member_answered(endpoints, db, failures))
}

fn no_member_answered(
    endpoints: &[Endpoint],
    db: &str,
    failures: Vec<(Endpoint, MemberError)>,
) -> ProbeError {
    if endpoints.is_empty() {
        return ProbeError::Other(format!("no {db} endpoint is configured"));
    }
    // A lone socket we may not open is a privilege matter, not an outage.
    if let [(ep, MemberError::Io(e))] = failures.as_slice() {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            return ProbeError::PermissionDenied {
                what: ep.to_string(),
                needs: format!("root to connect to {ep}"),
            };
        }
    }
    if let [(ep, e)] = failures.as_slice() {
        return ProbeError::Other(format!("{db} at {ep} did not answer: {e}"));
    }
    let reasons: Vec<String> = failures
        .iter()
        .map(|(ep, e)| format!("{ep}: {e}"))
        .collect();
    ProbeError::Other(format!(
        "no member of {db} at {} answered ({})",
        endpoint::join(endpoints),
        reasons.join("; ")
    ))
}

fn select_one(
    ep: &Endpoint,
    db: &str,
    selects: &[Select<'_>],
    deadline: Instant,
) -> Result<Vec<Vec<Row>>, MemberError> {
    let mut session = Session::connect(ep, deadline)?;
    // `_Server` itself is what the check asks: asked of a member not
    // connected to its cluster, it still answers (ovn.cluster's question).
    if db != raft::SERVER_DB {
        check_database(&mut session, db)?;
    }
    let result = session.call("transact", wire::transact_params(db, selects))?;
    wire::transact_rows(&result, selects.len()).map_err(MemberError::Protocol)
}

/// Is `db` served here, and (for a raft member) connected to its cluster?
/// Asked of the `_Server` database (OVS ≥ 2.9), else of `list_dbs`.
fn check_database(session: &mut Session, db: &str) -> Result<(), MemberError> {
    let server = session.call(
        "transact",
        wire::transact_params(
            "_Server",
            &[Select::all(
                "Database",
                &["name", "model", "connected", "leader"],
            )],
        ),
    );
    let rows = match server {
        Ok(result) => wire::transact_rows(&result, 1)
            .map_err(MemberError::Protocol)?
            .remove(0),
        Err(MemberError::Rpc(e)) if e.contains("unknown database") => {
            let dbs = session.call("list_dbs", json!([]))?;
            let names: Vec<&str> = dbs
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if names.contains(&db) {
                return Ok(());
            }
            return Err(not_served(db, &names));
        }
        Err(e) => return Err(e),
    };
    let names: Vec<String> = rows
        .iter()
        .filter_map(|r| datum::string(r, "name").ok().flatten())
        .collect();
    let Some(row) = rows
        .iter()
        .find(|r| datum::string(r, "name").ok().flatten().as_deref() == Some(db))
    else {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        return Err(not_served(db, &names));
    };
    let clustered = datum::string(row, "model").ok().flatten().as_deref() == Some("clustered");
    if clustered && datum::boolean(row, "connected").ok().flatten() == Some(false) {
        return Err(MemberError::Database(format!(
            "this raft member of {db} is not connected to its cluster"
        )));
    }
    Ok(())
}

fn not_served(db: &str, names: &[&str]) -> MemberError {
    let names: Vec<&str> = names.iter().copied().filter(|n| *n != "_Server").collect();
    MemberError::Database(format!(
        "serves {} but not {db} (wrong endpoint for this database?)",
        if names.is_empty() {
            "no database".to_owned()
        } else {
            names.join(", ")
        }
    ))
}
