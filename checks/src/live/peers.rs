//! Name lookups of peers, bounded.
use std::collections::HashMap;
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Resolve host names on this machine, concurrently, each within `bound`
/// overall. A name that does not answer in time is absent from the map.
/// Checks ask [`crate::host::HostRef::resolve`], whose live answer this is.
pub fn lookup_names(
    names: &[String],
    bound: Duration,
) -> HashMap<String, Result<Vec<IpAddr>, String>> {
    let (tx, rx) = mpsc::channel();
    for name in names {
        if crate::validate::host(name).is_err() {
            let _ = tx.send((name.clone(), Err("not a host name".to_owned())));
            continue;
        }
        let tx = tx.clone();
        let name = name.clone();
        // The lookup thread may outlive the bound; it is detached and the
        // process does not wait for it.
        std::thread::spawn(move || {
            let answer = (name.as_str(), 0u16)
                .to_socket_addrs()
                .map(|a| {
                    let mut ips: Vec<IpAddr> = Vec::new();
                    for ip in a.map(|s| s.ip()) {
                        if !ips.contains(&ip) {
                            ips.push(ip);
                        }
                    }
                    ips
                })
                .map_err(|e| format!("does not resolve ({e})"))
                .and_then(|ips| {
                    if ips.is_empty() {
                        Err("does not resolve".to_owned())
                    } else {
                        Ok(ips)
                    }
                });
            let _ = tx.send((name, answer));
        });
    }
    drop(tx);
    let deadline = Instant::now() + bound;
    let mut out = HashMap::new();
    while out.len() < names.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((name, answer)) => {
                out.insert(name, answer);
            }
            Err(_) => break,
        }
    }
    out
}
