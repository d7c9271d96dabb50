//! The HTTP API: routes, JSON shapes, status codes and error bodies.

mod common;

use common::{echo_server, http, FaultProxy};
use serde_json::json;

#[test]
fn proxy_lifecycle_and_errors() {
    let fp = FaultProxy::start();
    let echo = echo_server();

    let body = format!(r#"{{"name":"db","listen":"127.0.0.1:0","upstream":"{echo}"}}"#);
    let (status, v) = fp.call("POST", "/proxies", Some(&body));
    assert_eq!(status, 201);
    assert_eq!(v["name"], "db");
    assert_eq!(v["upstream"], echo.as_str());
    assert_eq!(v["enabled"], true);
    assert_eq!(v["toxics"], json!([]));
    assert!(v["listen"].as_str().unwrap().starts_with("127.0.0.1:"));
    assert_ne!(v["listen"], "127.0.0.1:0", "listen reports the bound port");

    let (status, v) = fp.call("POST", "/proxies", Some(&body));
    assert_eq!(
        (status, v),
        (409, json!({"error": "proxy already exists", "status": 409}))
    );

    let (status, v) = fp.call("POST", "/proxies", Some(r#"{"name":"x"}"#));
    assert_eq!(
        (status, v),
        (
            400,
            json!({"error": "missing required field: upstream", "status": 400})
        )
    );
    let (status, v) = fp.call("POST", "/proxies", Some(r#"{"upstream":"127.0.0.1:1"}"#));
    assert_eq!(
        (status, v["error"].clone()),
        (400, json!("missing required field: name"))
    );
    let (status, v) = fp.call("POST", "/proxies", Some("{not json"));
    assert_eq!(status, 400);
    assert!(
        v["error"].as_str().unwrap().starts_with("bad request body"),
        "{v}"
    );

    let (status, v) = fp.call("GET", "/proxies/nope", None);
    assert_eq!(
        (status, v),
        (404, json!({"error": "proxy not found", "status": 404}))
    );
    let (status, _) = fp.call("DELETE", "/proxies/nope", None);
    assert_eq!(status, 404);

    let (status, v) = fp.call("GET", "/proxies", None);
    assert_eq!(status, 200);
    assert_eq!(v["db"]["name"], "db");
    assert_eq!(v.as_object().unwrap().len(), 1);

    let (status, v) = fp.call("POST", "/proxies/db", Some(r#"{"enabled":false}"#));
    assert_eq!((status, v["enabled"].clone()), (200, json!(false)));
    let (status, v) = fp.call("PATCH", "/proxies/db", Some(r#"{"enabled":true}"#));
    assert_eq!((status, v["enabled"].clone()), (200, json!(true)));

    let (status, v) = fp.call("DELETE", "/proxies/db", None);
    assert_eq!((status, v), (204, serde_json::Value::Null));
    let (status, _) = fp.call("GET", "/proxies/db", None);
    assert_eq!(status, 404);
}

#[test]
fn toxic_crud_and_errors() {
    let fp = FaultProxy::start();
    let echo = echo_server();
    fp.create("p", &echo);

    let v = fp.toxic("p", r#"{"type":"latency","attributes":{"latency":100}}"#);
    assert_eq!(
        v,
        json!({"attributes": {"latency": 100, "jitter": 0}, "name": "latency_downstream",
               "type": "latency", "stream": "downstream", "toxicity": 1.0})
    );
    let v = fp.toxic("p", r#"{"name":"cut","type":"limit_data","stream":"upstream","toxicity":0.5,"attributes":{"bytes":10}}"#);
    assert_eq!(v["name"], "cut");
    assert_eq!(v["stream"], "upstream");
    assert_eq!(v["toxicity"], 0.5);

    let (status, v) = fp.call("POST", "/proxies/p/toxics", Some(r#"{"type":"latency"}"#));
    assert_eq!(
        (status, v),
        (409, json!({"error": "toxic already exists", "status": 409}))
    );
    let (status, v) = fp.call("POST", "/proxies/p/toxics", Some(r#"{"type":"bogus"}"#));
    assert_eq!(
        (status, v),
        (400, json!({"error": "invalid toxic type", "status": 400}))
    );
    let (status, v) = fp.call(
        "POST",
        "/proxies/p/toxics",
        Some(r#"{"type":"latency","stream":"both"}"#),
    );
    assert_eq!(
        (status, v),
        (
            400,
            json!({"error": "stream was invalid, can be either upstream or downstream", "status": 400})
        )
    );
    let (status, _) = fp.call(
        "POST",
        "/proxies/p/toxics",
        Some(r#"{"type":"latency","name":"l2","toxicity":1.5}"#),
    );
    assert_eq!(status, 400);
    let (status, v) = fp.call(
        "POST",
        "/proxies/nope/toxics",
        Some(r#"{"type":"latency"}"#),
    );
    assert_eq!(
        (status, v["error"].clone()),
        (404, json!("proxy not found"))
    );

    // Every type is accepted, with its default name.
    for (t, attrs) in [
        ("bandwidth", r#"{"rate":100}"#),
        ("timeout", r#"{"timeout":0}"#),
        ("reset_peer", r#"{"timeout":10}"#),
        ("slow_close", r#"{"delay":10}"#),
        (
            "slicer",
            r#"{"average_size":10,"size_variation":5,"delay":10}"#,
        ),
    ] {
        let v = fp.toxic(
            "p",
            &format!(r#"{{"type":"{t}","stream":"upstream","attributes":{attrs}}}"#),
        );
        assert_eq!(v["name"], format!("{t}_upstream"));
    }

    let (status, v) = fp.call("GET", "/proxies/p/toxics", None);
    assert_eq!(status, 200);
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "cut",
            "bandwidth_upstream",
            "timeout_upstream",
            "reset_peer_upstream",
            "slow_close_upstream",
            "slicer_upstream",
            "latency_downstream"
        ]
    );

    let (status, v) = fp.call("GET", "/proxies/p/toxics/latency_downstream", None);
    assert_eq!(
        (status, v["attributes"]["latency"].clone()),
        (200, json!(100))
    );
    let (status, v) = fp.call("GET", "/proxies/p/toxics/nope", None);
    assert_eq!(
        (status, v),
        (404, json!({"error": "toxic not found", "status": 404}))
    );

    let (status, v) = fp.call(
        "POST",
        "/proxies/p/toxics/latency_downstream",
        Some(r#"{"attributes":{"jitter":5},"toxicity":0.25}"#),
    );
    assert_eq!(status, 200);
    assert_eq!(v["attributes"], json!({"latency": 100, "jitter": 5}));
    assert_eq!(v["toxicity"], 0.25);
    let (status, _) = fp.call("PATCH", "/proxies/p/toxics/nope", Some("{}"));
    assert_eq!(status, 404);

    let (status, v) = fp.call("GET", "/proxies/p", None);
    assert_eq!((status, v["toxics"].as_array().unwrap().len()), (200, 7));

    let (status, _) = fp.call("DELETE", "/proxies/p/toxics/cut", None);
    assert_eq!(status, 204);
    let (status, _) = fp.call("DELETE", "/proxies/p/toxics/cut", None);
    assert_eq!(status, 404);

    fp.call("POST", "/proxies/p", Some(r#"{"enabled":false}"#));
    let (status, _) = fp.call("POST", "/reset", None);
    assert_eq!(status, 204);
    let (_, v) = fp.call("GET", "/proxies/p", None);
    assert_eq!(v["enabled"], true);
    assert_eq!(v["toxics"], json!([]));
}

#[test]
fn populate_version_and_misc() {
    let fp = FaultProxy::start();
    let echo = echo_server();
    let body = format!(
        r#"[{{"name":"a","listen":"127.0.0.1:0","upstream":"{echo}"}},
            {{"name":"b","listen":"127.0.0.1:0","upstream":"{echo}","enabled":false}}]"#
    );
    let (status, v) = fp.call("POST", "/populate", Some(&body));
    assert_eq!(status, 201, "{v}");
    let proxies = v["proxies"].as_array().unwrap();
    assert_eq!(proxies.len(), 2);
    assert_eq!(proxies[0]["enabled"], true);
    assert_eq!(proxies[1]["enabled"], false);

    // Re-populating an unchanged proxy keeps it (and its port).
    let listen_a = proxies[0]["listen"].as_str().unwrap().to_string();
    let again = format!(r#"[{{"name":"a","listen":"{listen_a}","upstream":"{echo}"}}]"#);
    let (status, v) = fp.call("POST", "/populate", Some(&again));
    assert_eq!(
        (status, v["proxies"][0]["listen"].clone()),
        (201, json!(listen_a))
    );

    let (status, v) = fp.call("POST", "/populate", Some(r#"[{"name":"c"}]"#));
    assert_eq!(status, 400);
    assert_eq!(v["error"], "missing required field: upstream at proxy 1");
    let (status, _) = fp.call("POST", "/populate", Some(r#"{"name":"c"}"#));
    assert_eq!(status, 400);

    let (status, v) = fp.call("GET", "/version", None);
    assert_eq!(status, 200);
    assert!(v["version"].is_string());

    let (status, _) = fp.call("GET", "/nothing/here", None);
    assert_eq!(status, 404);
    let (status, _) = fp.call("PUT", "/proxies", None);
    assert_eq!(status, 405);

    let (status, text) = http(
        &fp.api,
        "GET",
        "/proxies",
        None,
        &[("User-Agent", "Mozilla/5.0")],
    );
    assert_eq!((status, text.as_str()), (403, "User agent not allowed\n"));

    // A listen address already taken is reported, not fatal.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let body = format!(r#"{{"name":"clash","listen":"{addr}","upstream":"{echo}"}}"#);
    let (status, v) = fp.call("POST", "/proxies", Some(&body));
    assert_eq!(status, 500, "{v}");
    assert!(
        v["error"].as_str().unwrap().starts_with("listen tcp"),
        "{v}"
    );
    let (status, _) = fp.call("GET", "/proxies/clash", None);
    assert_eq!(status, 404);
}

#[test]
fn config_file_populates_at_start() {
    let echo = echo_server();
    let dir = std::env::temp_dir().join(format!("fault-proxy-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("proxies.json");
    std::fs::write(
        &path,
        format!(r#"[{{"name":"fromfile","listen":"127.0.0.1:0","upstream":"{echo}"}}]"#),
    )
    .unwrap();
    let fp = FaultProxy::start_with(&["-config", path.to_str().unwrap()]);
    let (status, v) = fp.call("GET", "/proxies/fromfile", None);
    assert_eq!((status, v["enabled"].clone()), (200, json!(true)));
    let _ = std::fs::remove_dir_all(&dir);
}
