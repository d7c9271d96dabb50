//! Reading plans, and each refusal of `check`.

use super::*;

pub(crate) const SAMPLE: &str = r#"{
  "format_version": 1,
  "seed": 42,
  "base_url": "http://balancer:8080",
  "timeout_ms": 5000,
  "routes": [
    {"name": "feed", "method": "GET", "path": ["/feed/", {"id": "user"}], "body": null},
    {"name": "post", "method": "POST", "path": ["/posts"],
     "body": ["{\"author\":", {"id": "user"}, "}"]}
  ],
  "cumulative_weights": [3.0, 4.0],
  "total_weight": 4.0,
  "ids": {"user": [1, 1000]},
  "schedule": {"start_rate": 10.0, "stages": [{"duration_s": 60.0, "target": 100.0}]},
  "max_connections": 1000,
  "max_lag_ms": 1000
}"#;

fn sample() -> LoadPlan {
    LoadPlan::parse(SAMPLE).expect("sample plan")
}

fn refused(change: impl FnOnce(&mut LoadPlan)) -> String {
    let mut plan = sample();
    change(&mut plan);
    plan.check().expect_err("refused").to_string()
}

#[test]
fn the_sample_reads_checks_and_round_trips() {
    let plan = sample();
    plan.check().expect("valid");
    assert_eq!(plan.routes[0].path[1], Segment::Id { id: "user".into() });
    assert_eq!(LoadPlan::parse(&plan.to_json()).expect("again"), plan);
    let json: serde_json::Value = serde_json::from_str(&plan.to_json()).expect("JSON");
    assert_eq!(
        json["routes"][0]["path"][1],
        serde_json::json!({"id": "user"})
    );
    assert_eq!(json["routes"][0]["path"][0], "/feed/");
}

#[test]
fn parse_errors_name_file_line_column_and_field() {
    let dir = std::env::temp_dir().join(format!("feedbench-load-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("load.json");
    std::fs::write(
        &file,
        SAMPLE.replace("\"seed\": 42", "\"seed\": 42, \"sead\": 1"),
    )
    .expect("write");
    let e = LoadPlan::read(&file)
        .expect_err("unknown field")
        .to_string();
    assert!(e.starts_with(&format!("{}:3:", file.display())), "{e}");
    assert!(e.contains("unknown field `sead`"), "{e}");
    assert!(!e.contains(" at line "), "{e}");
    std::fs::write(
        &file,
        SAMPLE.replace("\"timeout_ms\": 5000", "\"timeout_ms\": \"5s\""),
    )
    .expect("write");
    let e = LoadPlan::read(&file).expect_err("bad type").to_string();
    assert!(e.contains(":5:") && e.contains("invalid type"), "{e}");
    let missing = LoadPlan::read(dir.join("absent.json"))
        .expect_err("absent")
        .to_string();
    assert!(missing.starts_with("cannot read the load plan ") && missing.contains("absent.json"));
    std::fs::remove_dir_all(&dir).ok();
}

/// A change that makes the sample plan invalid, and what the refusal must say.
type Case = (fn(&mut LoadPlan), &'static str);

#[test]
fn check_refuses_what_cannot_run() {
    let cases: [Case; 23] = [
        (|p| p.format_version = 2, "reads format_version 1"),
        (|p| p.base_url = "https://b:443".into(), "does not support"),
        (|p| p.base_url = "b:80".into(), "http://host[:port]"),
        (|p| p.base_url = "http://b:80/api".into(), "has a path"),
        (|p| p.base_url = "http://b:80/".into(), "has a path"),
        (|p| p.base_url = "http://b:0".into(), "port"),
        (|p| p.base_url = "http://:80".into(), "no host"),
        (|p| p.routes.clear(), "no routes"),
        (|p| p.cumulative_weights.truncate(1), "one per route"),
        (|p| p.cumulative_weights[1] = 2.0, "never decreasing"),
        (|p| p.cumulative_weights[0] = f64::NAN, "finite"),
        (|p| p.total_weight = 0.0, "above 0"),
        (
            |p| p.schedule.start_rate = -1.0,
            "schedule.start_rate is -1",
        ),
        (
            |p| p.schedule.stages[0].target = f64::INFINITY,
            "stages[0].target",
        ),
        (
            |p| p.schedule.stages[0].duration_s = -1.0,
            "stages[0].duration_s",
        ),
        (|p| p.schedule.stages.clear(), "no stages"),
        (|p| p.ids.clear(), "add one"),
        (
            |p| p.ids.extend([("user".into(), [5, 4])]),
            "min must not be above max",
        ),
        (
            |p| p.ids.extend([("user".into(), [0, 1 << 53])]),
            "2^53 - 1",
        ),
        (|p| p.max_connections = 0, "max_connections"),
        (|p| p.timeout_ms = 0, "timeout_ms"),
        (|p| p.routes[0].method = "get".into(), "upper-case"),
        (
            |p| p.routes[1].path = vec![Segment::Text("posts".into())],
            "beginning with `/`",
        ),
    ];
    for (change, want) in cases {
        let e = refused(change);
        assert!(e.contains(want), "{e:?} should contain {want:?}");
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn base_url_parts() {
    let b = BaseUrl::parse("http://balancer:8080").expect("valid");
    assert_eq!(
        (b.host.as_str(), b.port, b.authority.as_str()),
        ("balancer", 8080, "balancer:8080")
    );
    assert_eq!(BaseUrl::parse("http://svc").expect("valid").port, 80);
    let v6 = BaseUrl::parse("http://[::1]:9000").expect("valid");
    assert_eq!((v6.host.as_str(), v6.port), ("::1", 9000));
    assert!(BaseUrl::parse("http://[::1]x").is_err());
}
