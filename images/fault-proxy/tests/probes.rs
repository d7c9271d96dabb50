//! feedbench's readiness probes beside Toxiproxy's API: a server asked until it answers 200,
//! every attempt with its instants and status, and the API's errors.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::FaultProxy;
use serde_json::{json, Value};

/// A server answering its first `not_ready` requests 503, then 200; its address.
fn readiness_server(not_ready: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&asked);
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 1024];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let n = count.fetch_add(1, Ordering::SeqCst);
            let line: &[u8] = if n < not_ready {
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
            };
            let _ = conn.write_all(line);
        }
    });
    (addr.port().to_string(), asked)
}

fn probe(port: &str, name: &str) -> String {
    json!({
        "name": name, "host": "127.0.0.1", "port": port.parse::<u16>().unwrap(),
        "path": "/readyz", "interval_ms": 100, "timeout_ms": 1000, "for_ms": 60_000,
    })
    .to_string()
}

/// The probe's view once it stopped (the test fails after a minute without that).
fn finished(fp: &FaultProxy, name: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, v) = fp.call("GET", &format!("/feedbench/probes/{name}"), None);
        assert_eq!(status, 200, "{v}");
        if v["running"] == false {
            return v;
        }
        assert!(Instant::now() < deadline, "the probe still runs: {v}");
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_probe_asks_until_a_200_and_keeps_every_attempt() {
    let fp = FaultProxy::start();
    let (port, asked) = readiness_server(3);
    let (status, v) = fp.call(
        "POST",
        "/feedbench/probes",
        Some(&probe(&port, "replica-1")),
    );
    assert_eq!((status, v["running"].clone()), (201, json!(true)), "{v}");
    let v = finished(&fp, "replica-1");
    let attempts = v["attempts"].as_array().unwrap();
    let statuses: Vec<u64> = attempts
        .iter()
        .map(|a| a["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [503, 503, 503, 200], "{v}");
    assert_eq!(asked.load(Ordering::SeqCst), 4, "no attempt after the 200");
    let ns = |a: &Value, k: &str| a[k].as_u64().unwrap();
    for pair in attempts.windows(2) {
        assert!(ns(&pair[0], "start_ns") <= ns(&pair[0], "end_ns"));
        // One attempt every 100 ms at most.
        assert!(
            ns(&pair[1], "start_ns") >= ns(&pair[0], "start_ns") + 100_000_000,
            "{v}"
        );
    }
    assert!(attempts.iter().all(|a| a["error"] == ""), "{v}");
}

#[test]
fn a_server_that_is_not_there_is_no_answer_with_its_reason() {
    let fp = FaultProxy::start();
    // A port bound and closed again: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let body = json!({
        "name": "gone", "host": "127.0.0.1", "port": port, "path": "/readyz",
        "interval_ms": 10, "timeout_ms": 200, "for_ms": 100,
    })
    .to_string();
    assert_eq!(fp.call("POST", "/feedbench/probes", Some(&body)).0, 201);
    let v = finished(&fp, "gone");
    let attempts = v["attempts"].as_array().unwrap();
    assert!(!attempts.is_empty(), "{v}");
    assert!(
        attempts
            .iter()
            .all(|a| a["status"] == 0 && a["error"] != ""),
        "{v}"
    );
}

#[test]
fn probe_errors_are_toxiproxy_shaped() {
    let fp = FaultProxy::start();
    let (port, _) = readiness_server(0);
    assert_eq!(
        fp.call("POST", "/feedbench/probes", Some(&probe(&port, "r")))
            .0,
        201
    );
    assert_eq!(
        fp.call("POST", "/feedbench/probes", Some(&probe(&port, "r"))),
        (409, json!({"error": "probe already exists", "status": 409}))
    );
    assert_eq!(
        fp.call("GET", "/feedbench/probes/nope", None),
        (404, json!({"error": "probe not found", "status": 404}))
    );
    let no_host = probe(&port, "h").replace("\"127.0.0.1\"", "\"\"");
    assert_eq!(
        fp.call("POST", "/feedbench/probes", Some(&no_host)),
        (
            400,
            json!({"error": "missing required field: host", "status": 400})
        )
    );
    assert_eq!(fp.call("DELETE", "/feedbench/probes/r", None).0, 405);
    let (status, v) = fp.call("POST", "/feedbench/probes", Some(r#"{"name":"x"}"#));
    assert_eq!(status, 400, "{v}");
}
