//! udp.rcvbuf-errors against the real kernel: a namespace of our own, a
//! socket with a tiny receive buffer that never reads, and a flood of
//! datagrams to it on the namespace's loopback.

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{self, run_json, Netns};
use spx_test_harness::root_test;

#[root_test]
fn flood_into_a_full_socket_fails_with_a_positive_delta() {
    let ns = Netns::new();
    // A receiver with the smallest buffer the kernel allows, never read,
    // and a sender flooding it for a bounded time: both on a thread inside
    // the namespace, so every packet stays on its loopback.
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let stop_flood = Arc::clone(&stop);
    let flood = ns.in_thread(move || {
        let (rx, to) = support::tiny_udp_receiver();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let payload = [0x5a_u8; 1200];
        let end = Instant::now() + Duration::from_secs(15);
        let mut sent = 0u64;
        while Instant::now() < end && !stop_flood.load(Ordering::Relaxed) {
            let _ = tx.send_to(&payload, to);
            sent += 1;
            if sent == 1000 {
                let _ = ready_tx.send(());
            }
        }
        drop(rx);
        sent
    });
    ready_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("flood started");
    // Measure inside the namespace while the flood runs.
    let (code, doc) =
        run_json(
            ns.spx()
                .args(["--check", "udp.rcvbuf-errors", "--sample", "500ms"]),
        );
    stop.store(true, Ordering::Relaxed);
    assert!(flood.join().unwrap() > 1000);
    let c = support::check(&doc, "udp.rcvbuf-errors");
    assert_eq!(c["status"], "fail", "{c}");
    assert_eq!(code, 1);
    assert!(
        c["evidence"]["rcvbuf_errors_delta"].as_u64().unwrap() > 0,
        "{c}"
    );
    assert!(c["evidence"]["window_ms"].as_u64().unwrap() >= 400, "{c}");
    assert!(!c["remediation"].as_array().unwrap().is_empty());
}

#[root_test]
fn a_fresh_namespace_has_no_drops() {
    let ns = Netns::new();
    let (code, doc) = run_json(ns.spx().args(["--check", "udp", "--sample", "200ms"]));
    assert_eq!(support::check(&doc, "udp.rcvbuf-errors")["status"], "pass");
    assert_eq!(code, 0);
}
