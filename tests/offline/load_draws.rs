//! The native generator's draws (`feedbench_load::draws`) against the k6 script's own
//! JavaScript: iteration n must send the same request under either generator.
//!
//! The script's functions are taken from the template at test time (from `// lowbias32` up
//! to `export default function`), and so is its per-iteration function, run in node with
//! stand-ins for k6's `exec`, `http` and metrics. Needs `node` (ignored by default; CI runs
//! ignored tests): without it the test fails, it does not pass.

use std::collections::BTreeMap;
use std::process::Command;

use feedbench_load::draws;
use feedbench_load::plan::{LoadPlan, Route, Schedule, Segment, Stage, FORMAT_VERSION};
use serde_json::{json, Value};

const TEMPLATE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/crates/core/src/spec/templates/load.js.j2"
);
const SEEDS: [u32; 4] = [0, 1, 0x075b_cd15, 0xffff_ffff];
/// The largest integer JavaScript holds exactly.
const MAX_SAFE: u64 = (1 << 53) - 1;

fn plan(seed: u32) -> LoadPlan {
    let text = |s: &str| Segment::Text(s.into());
    let id = |s: &str| Segment::Id { id: s.into() };
    let route = |name: &str, method: &str, path, body| Route {
        name: name.into(),
        method: method.into(),
        path,
        body,
    };
    LoadPlan {
        format_version: FORMAT_VERSION,
        seed,
        base_url: "http://balancer:8080".into(),
        timeout_ms: 5000,
        routes: vec![
            route(
                "feed",
                "GET",
                vec![text("/feed/"), id("user"), text("?page="), id("page")],
                None,
            ),
            route(
                "post",
                "POST",
                vec![text("/users/"), id("user"), text("/posts")],
                Some(vec![
                    text("{\"author\":"),
                    id("user"),
                    text(",\"ref\":"),
                    id("big"),
                    text("}"),
                ]),
            ),
            route("item", "GET", vec![text("/items/"), id("big")], None),
        ],
        cumulative_weights: vec![5.0, 7.5, 8.0],
        total_weight: 8.0,
        ids: BTreeMap::from([
            ("user".into(), [1, 100_000]),
            ("page".into(), [0, 2]),
            ("big".into(), [MAX_SAFE - 999, MAX_SAFE]),
        ]),
        schedule: Schedule {
            start_rate: 10.0,
            stages: vec![Stage {
                duration_s: 10.0,
                target: 10.0,
            }],
        },
        max_connections: 10,
        max_lag_ms: 250,
    }
}

/// The iterations compared: the first 2000 and a few past 2^32 (up to 2^53 - 1).
fn iterations() -> Vec<u64> {
    let mut n: Vec<u64> = (0..2000).collect();
    n.extend([
        (1 << 32) - 1,
        1 << 32,
        (1 << 32) + 1,
        (1 << 32) + 12_345,
        (1 << 40) + 7,
        (1 << 52) + 3,
        MAX_SAFE,
    ]);
    n
}

/// The k6 script's PLAN for the same draws.
fn k6_plan(plan: &LoadPlan) -> Value {
    json!({
        "seed": plan.seed,
        "baseUrl": plan.base_url,
        "timeout": "5s",
        "routes": plan.routes,
        "cumulativeWeights": plan.cumulative_weights,
        "totalWeight": plan.total_weight,
        "ids": plan.ids,
    })
}

/// The template's draw functions and per-iteration function, with k6 stood in for.
fn script(plans: &[LoadPlan]) -> String {
    let template = std::fs::read_to_string(TEMPLATE).expect("the k6 load template");
    let start = template
        .find("// lowbias32")
        .expect("`// lowbias32` in the template");
    let default = template
        .find("export default function")
        .expect("`export default function` in the template");
    let functions = &template[start..default];
    let iteration =
        template[default..].replacen("export default function", "function iteration", 1);
    let plans: Vec<Value> = plans.iter().map(k6_plan).collect();
    let iterations: Vec<String> = iterations().iter().map(u64::to_string).collect();
    format!(
        "let PLAN;\n\
         let n = 0;\n\
         const exec = {{ scenario: {{ get iterationInTest() {{ return n; }}, startTime: 0 }} }};\n\
         const scenarioStart = {{ add() {{}} }};\n\
         let sent;\n\
         const http = {{ request(method, url, body, params) {{ sent = [method, url, body, params.tags.name]; }} }};\n\
         {functions}\n{iteration}\n\
         const out = [];\n\
         for (const plan of {plans}) {{\n\
           PLAN = plan;\n\
           for (const i of [{iterations}]) {{\n\
             n = i;\n\
             iteration();\n\
             out.push(JSON.stringify([plan.seed, i].concat(sent)));\n\
           }}\n\
         }}\n\
         process.stdout.write(out.join('\\n') + '\\n');\n",
        plans = Value::from(plans),
        iterations = iterations.join(","),
    )
}

#[test]
#[ignore = "needs node"]
fn draws_match_the_k6_script() {
    let plans: Vec<LoadPlan> = SEEDS.iter().map(|&s| plan(s)).collect();
    for p in &plans {
        p.check().expect("a valid plan");
    }
    let dir = std::env::temp_dir().join(format!("feedbench-load-draws-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("draws.js");
    std::fs::write(&file, script(&plans)).expect("write the script");
    let output = Command::new("node")
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run node (this test needs it): {e}"));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        output.status.success(),
        "node failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 from node");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), plans.len() * iterations().len());
    let mut compared = 0;
    for line in lines {
        let v: Value = serde_json::from_str(line).expect("a JSON line from node");
        let (seed, n) = (v[0].as_u64().expect("seed"), v[1].as_u64().expect("n"));
        let plan = plans
            .iter()
            .find(|p| u64::from(p.seed) == seed)
            .expect("a seed of ours");
        let route = plan
            .routes
            .iter()
            .position(|r| v[5] == r.name.as_str())
            .expect("a route of ours");
        let url = v[3].as_str().expect("url");
        let path = url.strip_prefix(&plan.base_url).expect("base_url first");
        let body = v[4].as_str().map(str::to_string);
        let drawn = draws::request(plan, n);
        assert_eq!(
            (drawn.route, drawn.path.as_str(), &drawn.body),
            (route, path, &body),
            "seed {seed}, iteration {n}"
        );
        assert_eq!(v[2], plan.routes[route].method.as_str());
        compared += 1;
    }
    assert_eq!(compared, SEEDS.len() * iterations().len());
}
