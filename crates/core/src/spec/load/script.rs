//! The k6 script: the workload compiled to JSON data and rendered into the template.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{json, Value};

use super::schedule::{per_unit, Schedule, TIME_UNIT_S};
use super::ScriptError;
use crate::plan::model::{Method, Workload};

const TEMPLATE: &str = crate::spec::LOAD_TEMPLATE;

/// The largest ID a script can draw exactly (JavaScript's Number.MAX_SAFE_INTEGER).
pub const MAX_ID: u64 = (1 << 53) - 1;

/// A piece of a path or body template: literal text, or a placeholder naming an ID range.
/// feedbench-load's plan owns the type; the k6 script carries the same JSON.
pub use feedbench_load::plan::Segment;

/// A route as both generators take it (feedbench-load's plan owns the type; the k6 script
/// carries the same JSON).
pub use feedbench_load::plan::Route;

/// Splits `text` at its `{name}` placeholders (a name of `[a-z0-9-]`); any other brace,
/// such as a JSON body's, is text.
pub fn segments(text: &str) -> Vec<Segment> {
    let bytes = text.as_bytes();
    let is_name = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
    let mut out = Vec::new();
    let (mut literal_from, mut i) = (0, 0);
    while i < bytes.len() {
        if bytes[i] == b'{' {
            let mut j = i + 1;
            while j < bytes.len() && is_name(bytes[j]) {
                j += 1;
            }
            if j > i + 1 && j < bytes.len() && bytes[j] == b'}' {
                if literal_from < i {
                    out.push(Segment::Text(text[literal_from..i].to_string()));
                }
                out.push(Segment::Id {
                    id: text[i + 1..j].to_string(),
                });
                literal_from = j + 1;
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    if literal_from < bytes.len() {
        out.push(Segment::Text(text[literal_from..].to_string()));
    }
    out
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PlanData {
    seed: u32,
    base_url: String,
    timeout: String,
    routes: Vec<Route>,
    cumulative_weights: Vec<f64>,
    total_weight: f64,
    ids: BTreeMap<String, [u64; 2]>,
    scenario: Value,
}

/// What the script needs besides the workload.
pub struct ScriptParams<'a> {
    pub kind: &'static str,
    pub base_url: &'a str,
    pub seed: u64,
    pub schedule: &'a Schedule,
    pub pre_allocated_vus: u32,
    pub max_vus: u32,
    pub timeout_ms: u64,
}

fn method(m: Method) -> &'static str {
    match m {
        Method::Get => "GET",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Delete => "DELETE",
    }
}

fn ms(seconds: f64) -> String {
    format!("{}ms", (seconds * 1000.0).round() as u64)
}

/// The k6 scenario: constant-arrival-rate for a constant schedule, ramping-arrival-rate
/// otherwise. `gracefulStop` lets requests in flight at the end finish or time out.
pub fn scenario(p: &ScriptParams) -> (&'static str, Value) {
    let s = p.schedule;
    let common = json!({
        "timeUnit": format!("{TIME_UNIT_S}s"),
        "preAllocatedVUs": p.pre_allocated_vus,
        "maxVUs": p.max_vus,
        "gracefulStop": format!("{}ms", p.timeout_ms + 1000),
    });
    let (executor, mut v) = if s.is_constant() {
        let specific = json!({ "rate": per_unit(s.start_rate), "duration": ms(s.duration_s()) });
        ("constant-arrival-rate", specific)
    } else {
        let stages: Vec<Value> = s
            .stages
            .iter()
            .map(|st| json!({ "duration": ms(st.duration_s), "target": per_unit(st.target) }))
            .collect();
        (
            "ramping-arrival-rate",
            json!({ "startRate": per_unit(s.start_rate), "stages": stages }),
        )
    };
    if let (Value::Object(map), Value::Object(extra)) = (&mut v, common) {
        map.insert("executor".into(), Value::String(executor.into()));
        map.extend(extra);
    }
    (executor, v)
}

/// JSON with every non-ASCII character escaped (`\uXXXX`), so that the text is pure ASCII
/// and valid JavaScript whatever the strings hold (U+2028 included).
fn ascii_json(value: &impl Serialize) -> Result<String, ScriptError> {
    let text = serde_json::to_string(value).map_err(ScriptError::Json)?;
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            for unit in c.encode_utf16(&mut [0; 2]) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        }
    }
    Ok(out)
}

fn compile_routes(w: &Workload) -> Result<Vec<Route>, ScriptError> {
    let mut routes = Vec::new();
    for (name, r) in &w.routes {
        let path = segments(&r.path);
        let body = r.body.as_deref().map(segments);
        for seg in path.iter().chain(body.iter().flatten()) {
            if let Segment::Id { id } = seg {
                if !w.ids.contains_key(id.as_str()) {
                    return Err(ScriptError::UnknownId {
                        route: name.to_string(),
                        id: id.clone(),
                    });
                }
            }
        }
        routes.push(Route {
            name: name.to_string(),
            method: method(r.method).to_string(),
            path,
            body,
        });
    }
    Ok(routes)
}

/// The workload compiled once for either load generator: the routes with their templates
/// split at placeholders, the cumulative weights the route draw walks, and the ID ranges.
pub struct Compiled {
    pub routes: Vec<Route>,
    pub cumulative_weights: Vec<f64>,
    pub total_weight: f64,
    pub ids: BTreeMap<String, [u64; 2]>,
}

/// Checks and compiles the workload.
pub fn compile(w: &Workload) -> Result<Compiled, ScriptError> {
    let routes = compile_routes(w)?;
    let mut cumulative_weights = Vec::new();
    let mut total = 0.0;
    for r in w.routes.values() {
        total += f64::from(r.weight);
        cumulative_weights.push(total);
    }
    if routes.is_empty() || total <= 0.0 {
        return Err(ScriptError::EmptyWorkload);
    }
    let mut ids = BTreeMap::new();
    for (name, range) in &w.ids {
        if range.min > range.max || range.max > MAX_ID {
            return Err(ScriptError::BadIdRange {
                id: name.to_string(),
                min: range.min,
                max: range.max,
            });
        }
        ids.insert(name.to_string(), [range.min, range.max]);
    }
    Ok(Compiled {
        routes,
        cumulative_weights,
        total_weight: total,
        ids,
    })
}

/// The seed as both generators key their draws with (32 bits).
pub fn seed32(seed: u64) -> u32 {
    (seed ^ (seed >> 32)) as u32
}

/// Renders the script and names the executor it uses.
pub fn render(w: &Workload, p: &ScriptParams) -> Result<(String, &'static str), ScriptError> {
    let c = compile(w)?;
    let (executor, scenario) = scenario(p);
    let data = PlanData {
        seed: seed32(p.seed),
        base_url: p.base_url.trim_end_matches('/').to_string(),
        timeout: format!("{}ms", p.timeout_ms),
        routes: c.routes,
        cumulative_weights: c.cumulative_weights,
        total_weight: c.total_weight,
        ids: c.ids,
        scenario,
    };
    let plan_json = ascii_json(&data)?;
    let mut env = minijinja::Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.add_template("k6-script", TEMPLATE)
        .map_err(ScriptError::Template)?;
    let script = env
        .get_template("k6-script")
        .and_then(|t| t.render(minijinja::context! { kind => p.kind, plan_json => plan_json }))
        .map_err(ScriptError::Template)?;
    Ok((script, executor))
}

/// The executor name recorded for a native run (k6's are its executors' names).
pub const NATIVE_EXECUTOR: &str = "feedbench-load-open-model";

/// Renders feedbench-load's plan: the same routes, weights, ID ranges, seed and schedule
/// as the k6 script would carry, so that iteration n sends the same request at the same
/// scheduled instant under either generator.
pub fn render_native(
    w: &Workload,
    p: &ScriptParams,
    max_lag_ms: u64,
) -> Result<String, ScriptError> {
    use feedbench_load::plan as native;
    let c = compile(w)?;
    let plan = native::LoadPlan {
        format_version: native::FORMAT_VERSION,
        seed: seed32(p.seed),
        base_url: p.base_url.trim_end_matches('/').to_string(),
        timeout_ms: p.timeout_ms,
        routes: c.routes,
        cumulative_weights: c.cumulative_weights,
        total_weight: c.total_weight,
        ids: c.ids,
        schedule: native::Schedule {
            start_rate: p.schedule.start_rate,
            stages: p
                .schedule
                .stages
                .iter()
                .map(|s| native::Stage {
                    duration_s: s.duration_s,
                    target: s.target,
                })
                .collect(),
        },
        max_connections: p.max_vus,
        max_lag_ms,
    };
    let mut text = serde_json::to_string_pretty(&plan).map_err(ScriptError::Json)?;
    text.push('\n');
    Ok(text)
}
