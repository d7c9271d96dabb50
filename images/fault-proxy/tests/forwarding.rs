//! Forwarding through the proxy, with and without toxics, against local
//! echo and HTTP servers on 127.0.0.1.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{
    closed_within, connect, echo_server, http, http_server, median_rtt, round_trip, FaultProxy,
};

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[test]
fn forwards_without_toxics() {
    let fp = FaultProxy::start();
    let listen = fp.create("echo", &echo_server());
    let mut s = connect(&listen);
    assert!(median_rtt(&mut s, 50) < ms(20));
    let big: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
    round_trip(&mut s, &big);
}

#[test]
fn latency_toxic_adds_latency_to_new_and_open_connections() {
    let fp = FaultProxy::start();
    let listen = fp.create("echo", &echo_server());
    let mut open = connect(&listen);
    let base = median_rtt(&mut open, 20);

    fp.toxic("echo", r#"{"type":"latency","attributes":{"latency":100}}"#);
    // Upper bounds leave room for a loaded CI machine but stay below twice
    // the latency, so a toxic applied twice would fail.
    let with = median_rtt(&mut open, 9);
    assert!(
        with >= base + ms(100),
        "open connection: {with:?} vs {base:?}"
    );
    assert!(
        with < base + ms(190),
        "open connection: {with:?} vs {base:?}"
    );

    let mut fresh = connect(&listen);
    round_trip(&mut fresh, b"warm");
    let t = median_rtt(&mut fresh, 9);
    assert!(t >= ms(100) && t < ms(190), "new connection: {t:?}");

    // Both directions add up.
    fp.toxic(
        "echo",
        r#"{"type":"latency","stream":"upstream","attributes":{"latency":50}}"#,
    );
    let t = median_rtt(&mut fresh, 5);
    assert!(t >= ms(150) && t < ms(240), "both directions: {t:?}");

    fp.call("DELETE", "/proxies/echo/toxics/latency_downstream", None);
    fp.call("DELETE", "/proxies/echo/toxics/latency_upstream", None);
    let t = median_rtt(&mut fresh, 9);
    assert!(t < ms(50), "after removal: {t:?}");
}

#[test]
fn latency_toxic_on_http() {
    let fp = FaultProxy::start();
    let listen = fp.create("web", &http_server());
    let start = Instant::now();
    let (status, body) = http(&listen, "GET", "/", None, &[]);
    assert_eq!((status, body.as_str()), (200, "hello"));
    let plain = start.elapsed();

    fp.toxic("web", r#"{"type":"latency","attributes":{"latency":100}}"#);
    let start = Instant::now();
    let (status, body) = http(&listen, "GET", "/", None, &[]);
    assert_eq!((status, body.as_str()), (200, "hello"));
    let slow = start.elapsed();
    // The toxic holds the answer 100 ms: a bound no load can break. Against `plain` (one
    // request, which a loaded host once made take 15 ms) a margin would be a guess.
    assert!(
        slow >= ms(100),
        "{slow:?} with the toxic, {plain:?} without"
    );
}

#[test]
fn disable_drops_and_refuses_then_enable_restores() {
    let fp = FaultProxy::start();
    let listen = fp.create("echo", &echo_server());
    let mut open = connect(&listen);
    round_trip(&mut open, b"hi");

    let start = Instant::now();
    let (status, _) = fp.call("POST", "/proxies/echo", Some(r#"{"enabled":false}"#));
    assert_eq!(status, 200);
    assert!(
        closed_within(&mut open, ms(1000)),
        "open connection not dropped"
    );
    assert!(start.elapsed() < ms(1000));
    let refused = TcpStream::connect_timeout(&listen.parse().unwrap(), ms(1000));
    assert!(refused.is_err(), "new connection accepted while disabled");

    let (status, v) = fp.call("POST", "/proxies/echo", Some(r#"{"enabled":true}"#));
    assert_eq!(status, 200);
    assert_eq!(
        v["listen"],
        listen.as_str(),
        "re-enabled on the same address"
    );
    let mut again = connect(&listen);
    round_trip(&mut again, b"back");

    // /reset re-enables too.
    fp.call("POST", "/proxies/echo", Some(r#"{"enabled":false}"#));
    assert!(TcpStream::connect(&listen).is_err());
    fp.call("POST", "/reset", None);
    round_trip(&mut connect(&listen), b"reset");
}

/// A disabled proxy keeps its port: nobody else can bind it before the proxy is enabled
/// again, so re-enabling never races for a port number that was let go.
#[test]
fn a_disabled_proxy_keeps_its_port() {
    let fp = FaultProxy::start();
    let listen = fp.create("echo", &echo_server());
    let (status, _) = fp.call("POST", "/proxies/echo", Some(r#"{"enabled":false}"#));
    assert_eq!(status, 200);
    assert!(
        std::net::TcpListener::bind(&listen).is_err(),
        "{listen} was free while the proxy was disabled"
    );
}

#[test]
fn deleting_a_proxy_drops_its_connections() {
    let fp = FaultProxy::start();
    let listen = fp.create("echo", &echo_server());
    let mut open = connect(&listen);
    round_trip(&mut open, b"hi");
    fp.call("DELETE", "/proxies/echo", None);
    assert!(closed_within(&mut open, ms(1000)));
    assert!(TcpStream::connect(&listen).is_err());
}

#[test]
fn limit_data_closes_after_the_limit() {
    let fp = FaultProxy::start();
    let listen = fp.create("echo", &echo_server());
    fp.toxic("echo", r#"{"type":"limit_data","attributes":{"bytes":10}}"#);
    let mut s = connect(&listen);
    s.write_all(b"0123456789abcdefghij").unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert_eq!(got, b"0123456789");
}

#[test]
fn timeout_toxic_stalls_then_closes() {
    let fp = FaultProxy::start();
    let listen = fp.create("echo", &echo_server());
    fp.toxic("echo", r#"{"type":"timeout","attributes":{"timeout":300}}"#);
    let start = Instant::now();
    let mut s = connect(&listen);
    s.write_all(b"hello").unwrap();
    let mut buf = [0u8; 16];
    let n = s.read(&mut buf).unwrap_or(0);
    let took = start.elapsed();
    assert_eq!(n, 0, "data must not pass");
    assert!(took >= ms(250) && took < ms(1000), "closed after {took:?}");
}

#[test]
fn timeout_zero_stalls_forever_and_removal_closes() {
    let fp = FaultProxy::start();
    let listen = fp.create("echo", &echo_server());
    fp.toxic("echo", r#"{"type":"timeout","attributes":{"timeout":0}}"#);
    let mut s = connect(&listen);
    s.write_all(b"hello").unwrap();
    assert!(
        !closed_within(&mut s, ms(500)),
        "timeout 0 must keep the connection open"
    );
    // As in Toxiproxy, removing the timeout closes connections it stalled.
    fp.call("DELETE", "/proxies/echo/toxics/timeout_downstream", None);
    assert!(closed_within(&mut s, ms(1000)));
    round_trip(&mut connect(&listen), b"fine again");
}

#[test]
fn reset_peer_resets() {
    let fp = FaultProxy::start();
    let listen = fp.create("echo", &echo_server());
    fp.toxic(
        "echo",
        r#"{"type":"reset_peer","stream":"upstream","attributes":{"timeout":100}}"#,
    );
    let mut s = connect(&listen);
    let start = Instant::now();
    s.write_all(b"hello").unwrap();
    let mut buf = [0u8; 16];
    let err = s.read(&mut buf).expect_err("expected a reset");
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset);
    assert!(start.elapsed() >= ms(90), "{:?}", start.elapsed());
}

#[test]
fn slow_close_delays_the_close() {
    let fp = FaultProxy::start();
    let listen = fp.create("echo", &echo_server());
    fp.toxic(
        "echo",
        r#"{"type":"slow_close","attributes":{"delay":300}}"#,
    );
    let mut s = connect(&listen);
    round_trip(&mut s, b"x");
    let start = Instant::now();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    let took = start.elapsed();
    assert!(took >= ms(280) && took < ms(1000), "{took:?}");
}

#[test]
fn bandwidth_limits_rate() {
    let fp = FaultProxy::start();
    let listen = fp.create("echo", &echo_server());
    fp.toxic("echo", r#"{"type":"bandwidth","attributes":{"rate":100}}"#);
    let mut s = connect(&listen);
    let data = vec![7u8; 50_000];
    let took = round_trip(&mut s, &data);
    // 50 KB at 100 KB/s: about half a second.
    assert!(took >= ms(450) && took < ms(2000), "{took:?}");
}

#[test]
fn slicer_keeps_data_intact() {
    let fp = FaultProxy::start();
    let listen = fp.create("echo", &echo_server());
    fp.toxic(
        "echo",
        r#"{"type":"slicer","attributes":{"average_size":64,"size_variation":32,"delay":10}}"#,
    );
    let mut s = connect(&listen);
    let data: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
    round_trip(&mut s, &data);
}

#[test]
fn zero_toxicity_has_no_effect() {
    let fp = FaultProxy::start();
    let listen = fp.create("echo", &echo_server());
    fp.toxic(
        "echo",
        r#"{"type":"latency","toxicity":0,"attributes":{"latency":500}}"#,
    );
    let mut s = connect(&listen);
    assert!(median_rtt(&mut s, 5) < ms(100));
}

#[test]
fn unreachable_upstream_closes_the_client() {
    let fp = FaultProxy::start();
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = dead.local_addr().unwrap().to_string();
    drop(dead);
    let listen = fp.create("dead", &addr);
    let mut s = connect(&listen);
    assert!(closed_within(&mut s, ms(1000)));
}
