//! Each hypothesis's verdict from its check (docs/analysis.md, "Hypotheses' verdicts"):
//! the check's calls resolved to the metrics.csv rows they read (the same resolution the
//! twin is given, as checks.json), each call's value and bootstrap interval, and the check
//! evaluated over both. The registered check is evaluated beside an amended one.

pub mod compared;
pub mod hypotheses;
pub mod interval;
pub mod scaled;
pub mod twin;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::rows::{number, Bound, Row};
use super::summary::{self, SplitMix64};
use crate::plan::check::types::At;
use crate::plan::check::{self, functions, parse, Dim, Query};
use crate::plan::{expand, Plan};
use crate::rundir::frame::Frame;
use interval::Interval;

/// The version of checks.json and of the twin's verdicts.json.
pub const FORMAT_VERSION: u32 = 2;
pub const SUPPORTED: &str = "supported";
pub const NOT_SUPPORTED: &str = "not supported";
pub const NOT_EVALUABLE: &str = "not evaluable";
pub const UNDECIDED: &str = "undecided";

/// Which statement of a hypothesis's check.
pub const CURRENT: &str = "current";
pub const REGISTERED: &str = "registered";

/// One check, resolved: what checks.json carries for each.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resolved {
    pub hypothesis: String,
    /// `current` or `registered`.
    pub which: String,
    pub check: String,
    /// Why the check does not resolve against the plan (then there are no calls).
    pub unresolved: Option<String>,
    /// Whether this statement is the one registered before the runs (the registered
    /// check, or the current one of a hypothesis standing as registered): only these
    /// register the pairs they compare.
    pub registered: bool,
    pub calls: Vec<Call>,
}

/// One metric function call of a check and the rows it reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Call {
    /// Byte offsets of the call in the check.
    pub start: usize,
    pub end: usize,
    pub stat: String,
    /// What its values measure (the function's), for showing them; not in checks.json.
    #[serde(skip)]
    pub dim: Dim,
    /// One per standing planned run, in run-id order.
    pub rows: Vec<RowKey>,
    /// The figure and arm it reads, as comparisons.csv names them, for a call over the
    /// whole measured phase (none for an `at:`); not in checks.json.
    #[serde(skip)]
    pub figure: Option<Figure>,
    /// Planned runs that do not stand, as `run: state`.
    pub not_standing: Vec<String>,
}

/// What a call reads, as comparisons.csv keys a pair: `(metric, definition, container,
/// profile, fault)` and the arm (`contender` or `contender.variant`).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Figure {
    pub metric: String,
    pub definition: String,
    /// Empty for a run-wide row, `replicas` for the replicas' sum, else the role.
    pub container: String,
    pub profile: String,
    pub fault: String,
    pub arm: String,
}

/// The metrics.csv row a call reads in one run (`second` empty).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowKey {
    pub run: String,
    /// The run's repetition: what pairs two calls' runs by round.
    pub repetition: u32,
    pub metric: String,
    pub definition: String,
    pub container: String,
    pub step_rate: Option<f64>,
    /// `at: first-breach`: the row at the step of the run's own `first_breach` row under
    /// `objective-windows`; a run whose ramp never breached has none to read.
    pub at_first_breach: bool,
}

/// What the runs hold for the resolution: each standing run's containers by role (its
/// frame's caps), and why each other planned run does not stand.
#[derive(Debug, Default)]
pub struct Standing<'a> {
    pub containers: BTreeMap<&'a str, BTreeMap<&'a str, &'a str>>,
    pub not_standing: BTreeMap<&'a str, String>,
}

impl<'a> Standing<'a> {
    /// A standing run's containers by role, from its frame.
    pub fn add(&mut self, run: &'a str, frame: &'a Frame) {
        let roles = frame
            .caps
            .iter()
            .map(|(name, cap)| (cap.role.as_str(), name.as_str()))
            .collect();
        self.containers.insert(run, roles);
    }
}

/// Resolves one check against the plan.
pub fn resolve(plan: &Plan, hypothesis: &str, which: &str, src: &str, runs: &Standing) -> Resolved {
    let mut out = Resolved {
        hypothesis: hypothesis.to_string(),
        which: which.to_string(),
        check: src.to_string(),
        unresolved: None,
        registered: false,
        calls: Vec::new(),
    };
    let queries = match check::check(plan, src) {
        Ok(q) => q,
        Err(errors) => {
            let shown: Vec<String> = errors
                .iter()
                .map(|e| format!("at {}: {}", e.span.start + 1, e.message))
                .collect();
            out.unresolved = Some(shown.join("; "));
            return out;
        }
    };
    let mut planned = expand(plan);
    planned.sort_by(|a, b| a.id.as_bytes().cmp(b.id.as_bytes()));
    for q in &queries {
        let mut call = Call {
            start: q.span.start,
            end: q.span.end,
            stat: q.stat.to_string(),
            dim: functions::find(q.function).map_or(Dim::Number, |f| f.dim),
            rows: Vec::new(),
            figure: (q.at == At::Measured).then(|| Figure {
                metric: q.metric.clone(),
                definition: q.definition.clone(),
                container: q.role.clone().unwrap_or_default(),
                profile: q.profile.clone(),
                fault: q.fault.clone().unwrap_or_default(),
                arm: q.contender.clone(),
            }),
            not_standing: Vec::new(),
        };
        let of_query = planned
            .iter()
            .filter(|r| r.contender == q.contender && r.profile == q.profile && r.fault == q.fault);
        for r in of_query {
            match runs.containers.get(r.id.as_str()) {
                Some(roles) => call.rows.push(row_key(q, &r.id, r.repetition, roles)),
                None => call.not_standing.push(format!(
                    "{}: {}",
                    r.id,
                    runs.not_standing
                        .get(r.id.as_str())
                        .map_or("not run", String::as_str)
                )),
            }
        }
        out.calls.push(call);
    }
    out
}

fn row_key(q: &Query, run: &str, repetition: u32, roles: &BTreeMap<&str, &str>) -> RowKey {
    let container = match q.role.as_deref() {
        None => String::new(),
        Some(functions::REPLICAS) => functions::REPLICAS.to_string(),
        // A role the run had no container for reads no row, and says so.
        Some(role) => roles.get(role).map_or(role, |name| *name).to_string(),
    };
    RowKey {
        run: run.to_string(),
        repetition,
        metric: q.metric.clone(),
        definition: q.definition.clone(),
        container,
        step_rate: match q.at {
            At::Step(rate) => Some(rate),
            _ => None,
        },
        at_first_breach: q.at == At::FirstBreach,
    }
}

/// One call's value, with the rows it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallValue {
    pub start: usize,
    pub end: usize,
    /// The call as written.
    pub text: String,
    pub stat: String,
    /// How its values read (`ms`, `%`, `/s`, …).
    pub unit: &'static str,
    pub n: usize,
    /// In the dimension's base unit; `None` when the call is not evaluable. `hi` is
    /// infinite for a lower bound.
    pub value: Option<Interval>,
    /// The statistic's interval, with 3 or more repetitions: a median's exact
    /// order-statistic interval, a mean's percentile bootstrap; none for `min` or `max`.
    pub interval: Option<Interval>,
    /// A median interval's exact coverage (`None` for a mean's bootstrap, whose 95 % is
    /// nominal).
    pub confidence: Option<f64>,
    /// Each row read: its run, value as metrics.csv has it, unit and note.
    pub rows: Vec<(String, Option<f64>, String, String)>,
    /// Why the call is not evaluable (empty when it is).
    pub problems: Vec<String>,
    /// Each repetition's value in base units, when every row read is exact (what a
    /// comparison of two arms ranks); `None` with a bound or a problem.
    #[serde(skip)]
    pub exact: Option<Vec<(u32, f64)>>,
}

/// A check's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    pub which: String,
    pub check: String,
    pub verdict: &'static str,
    /// Across the bootstrap interval: `supported`, `not supported`, `undecided`.
    pub interval: Option<&'static str>,
    pub reasons: Vec<String>,
    pub calls: Vec<CallValue>,
    /// The check's comparisons of two arms read through their comparison's interval, which
    /// decide them across the intervals in place of interval arithmetic.
    pub compared: Vec<compared::Compared>,
    /// The check's comparisons of a two-arm form that keep interval arithmetic across the
    /// intervals, each as written with why (said in report.md; not in verdicts.json).
    #[serde(skip)]
    pub fallbacks: Vec<(String, &'static str)>,
}

/// metrics.csv's rows without a second, by `(run, metric, definition, container)`.
pub struct RowIndex<'a>(HashMap<String, Vec<&'a Row>>);

/// The index's key: the four fields, joined by a byte no field holds.
fn key(run: &str, metric: &str, definition: &str, container: &str) -> String {
    [run, metric, definition, container].join("\u{1f}")
}

impl<'a> RowIndex<'a> {
    pub fn new(rows: &'a [Row]) -> Self {
        let mut m: HashMap<_, Vec<&Row>> = HashMap::new();
        for r in rows.iter().filter(|r| r.second.is_none()) {
            m.entry(key(&r.key.run, &r.metric, &r.definition, &r.container))
                .or_default()
                .push(r);
        }
        RowIndex(m)
    }

    fn get(&self, run: &str, metric: &str, definition: &str, container: &str) -> &[&'a Row] {
        self.0
            .get(&key(run, metric, definition, container))
            .map_or(&[], Vec::as_slice)
    }

    /// The rows a key finds, or why there is no step to look at.
    fn find(&self, k: &RowKey) -> Result<Vec<&'a Row>, String> {
        let step = if k.at_first_breach {
            let breach: Vec<&Row> = self
                .get(&k.run, FIRST_BREACH, FIRST_BREACH_DEFINITION, "")
                .iter()
                .filter(|r| r.step_rate.is_none())
                .copied()
                .collect();
            match breach.as_slice() {
                [r] => match r.value {
                    Some(v) => Some(v),
                    None => {
                        return Err(format!(
                            "`{}` has no first breach ({})",
                            k.run,
                            if r.note.is_empty() { "empty" } else { &r.note }
                        ))
                    }
                },
                _ => {
                    return Err(format!(
                        "`{}` has {} row `{FIRST_BREACH}` {FIRST_BREACH_DEFINITION}",
                        k.run,
                        if breach.is_empty() {
                            "no"
                        } else {
                            "more than one"
                        }
                    ))
                }
            }
        } else {
            k.step_rate
        };
        Ok(self
            .get(&k.run, &k.metric, &k.definition, &k.container)
            .iter()
            .filter(|r| r.step_rate == step)
            .copied()
            .collect())
    }
}

/// The row whose step `at: first-breach` reads.
const FIRST_BREACH: &str = "first_breach";
const FIRST_BREACH_DEFINITION: &str = "objective-windows";

/// The factor from a metrics.csv unit to its dimension's base unit.
pub fn unit_factor(unit: &str) -> f64 {
    match unit {
        "ms" => 1e-3,
        "%" => 1e-2,
        _ => 1.0,
    }
}

/// Evaluates a resolved check against the rows.
pub fn evaluate(r: &Resolved, rows: &RowIndex, paired_rounds: bool) -> Evaluation {
    let mut e = Evaluation {
        which: r.which.clone(),
        check: r.check.clone(),
        verdict: NOT_EVALUABLE,
        interval: None,
        reasons: Vec::new(),
        calls: Vec::new(),
        compared: Vec::new(),
        fallbacks: Vec::new(),
    };
    if let Some(why) = &r.unresolved {
        e.reasons.push(format!(
            "the check does not resolve against the plan: {why}"
        ));
        return e;
    }
    let Ok(expr) = parse::parse(&r.check) else {
        e.reasons.push("the check does not parse".into());
        return e;
    };
    e.calls = r
        .calls
        .iter()
        .map(|c| call_value(&r.check, c, rows))
        .collect();
    for c in &e.calls {
        e.reasons
            .extend(c.problems.iter().map(|p| format!("`{}`: {p}", c.text)));
    }
    if !e.reasons.is_empty() {
        return e;
    }
    if let Some(c) = scaled::negative_recovery_scaled(&expr, &e.calls) {
        let v = c.value.map_or(0.0, |i| i.lo);
        e.reasons.push(format!(
            "`{}` is {} s, a recovery before its origin: a multiple of it compares nothing",
            c.text,
            number(v)
        ));
        return e;
    }
    let at = |pick: fn(&CallValue) -> Option<Interval>| {
        let calls = &e.calls;
        move |s: check::Span| {
            calls
                .iter()
                .find(|c| c.start == s.start && c.end == s.end)
                .and_then(pick)
                .unwrap_or(Interval {
                    lo: f64::NEG_INFINITY,
                    hi: f64::INFINITY,
                })
        }
    };
    let point = interval::evaluate(&expr, &at(|c| c.value));
    e.verdict = match point {
        Some(true) => SUPPORTED,
        Some(false) => NOT_SUPPORTED,
        None => {
            e.reasons
                .push("a value that is only a bound (not reached, censored, or below the first step) leaves the check open".to_string());
            NOT_EVALUABLE
        }
    };
    if e.calls.iter().all(|c| c.interval.is_some()) {
        e.interval = Some(across_intervals(&mut e, &expr, paired_rounds));
    }
    e
}

/// The verdict across the intervals: each comparison of two arms' medians by its
/// comparison's interval (kept in `e.compared`), the rest by interval arithmetic over the
/// calls' intervals.
fn across_intervals(e: &mut Evaluation, expr: &parse::Expr, paired_rounds: bool) -> &'static str {
    let mut atoms = Vec::new();
    compared::atoms(expr, &mut atoms);
    let mut read = Vec::new();
    for a in &atoms {
        match compared::read(&e.check, a, &e.calls, paired_rounds) {
            Ok(c) => read.push((a.span, c)),
            Err(why) => e
                .fallbacks
                .push((compared::span_text(&e.check, a.span), why)),
        }
    }
    let calls = &e.calls;
    let call = |s: check::Span| {
        calls
            .iter()
            .find(|c| c.start == s.start && c.end == s.end)
            .and_then(|c| c.interval)
            .unwrap_or(Interval::WHOLE)
    };
    let atom = |s: check::Span| read.iter().find(|(at, _)| *at == s).map(|(_, c)| c.verdict);
    let verdict = match interval::evaluate_atoms(expr, &call, &atom) {
        Some(true) => SUPPORTED,
        Some(false) => NOT_SUPPORTED,
        None => UNDECIDED,
    };
    e.compared = read.into_iter().map(|(_, c)| c).collect();
    verdict
}

fn call_value(src: &str, c: &Call, index: &RowIndex) -> CallValue {
    let text = src.get(c.start..c.end).unwrap_or("?").to_string();
    let mut v = CallValue {
        start: c.start,
        end: c.end,
        text,
        stat: c.stat.clone(),
        unit: shown_unit(c.dim),
        n: 0,
        value: None,
        interval: None,
        confidence: None,
        rows: Vec::new(),
        problems: c
            .not_standing
            .iter()
            .map(|s| format!("needs `{s}`"))
            .collect(),
        exact: None,
    };
    let (mut lows, mut highs, mut exact) = (Vec::new(), Vec::new(), Vec::new());
    for k in &c.rows {
        let found = match index.find(k) {
            Ok(found) => found,
            Err(why) => {
                v.problems.push(why);
                continue;
            }
        };
        let [row] = found.as_slice() else {
            v.problems.push(format!(
                "`{}` has {} row `{}`{}{}{}",
                k.run,
                if found.is_empty() {
                    "no"
                } else {
                    "more than one"
                },
                k.metric,
                [&k.definition, &k.container]
                    .iter()
                    .filter(|s| !s.is_empty())
                    .map(|s| format!(" {s}"))
                    .collect::<String>(),
                k.step_rate
                    .map_or(String::new(), |s| format!(" at step {}/s", number(s))),
                if k.at_first_breach {
                    " at the first breach"
                } else {
                    ""
                }
            ));
            continue;
        };
        v.rows
            .push((k.run.clone(), row.value, row.unit.clone(), row.note.clone()));
        match row.value {
            None => v.problems.push(format!(
                "`{}` has no value for `{}` ({})",
                k.run,
                k.metric,
                if row.note.is_empty() {
                    "empty"
                } else {
                    &row.note
                }
            )),
            Some(x) => {
                // The value as metrics.csv writes it, which is what the twin reads back.
                let written = number(x).parse().unwrap_or(x);
                let x = written * unit_factor(&row.unit);
                // A bound is the interval it leaves open: [0, v] or [v, +∞].
                let (lo, hi) = match row.bound() {
                    Bound::Exact => (x, x),
                    Bound::AtMost => (0.0, x),
                    Bound::AtLeast => (x, f64::INFINITY),
                };
                exact.push((row.bound() == Bound::Exact).then_some((k.repetition, x)));
                lows.push(lo);
                highs.push(hi);
            }
        }
    }
    v.n = lows.len();
    if v.problems.is_empty() {
        v.exact = exact.into_iter().collect();
    }
    if v.problems.is_empty() && !lows.is_empty() {
        v.value = Some(Interval {
            lo: stat(&c.stat, &lows),
            hi: stat(&c.stat, &highs),
        });
        if let Some((i, confidence)) = interval_of(&c.stat, &lows, &highs) {
            v.interval = Some(i);
            v.confidence = confidence;
        }
    } else if v.problems.is_empty() {
        v.problems.push("the matrix plans no run for it".into());
    }
    v
}

/// How a dimension's base-unit values are shown.
fn shown_unit(d: Dim) -> &'static str {
    match d {
        Dim::Number => "",
        Dim::Time => "s",
        Dim::Share => "%",
        Dim::Rate => "/s",
        Dim::Bytes => "MiB",
        Dim::Efficiency => "/core-s",
    }
}

/// A base-unit value in the call's shown unit.
pub fn show(unit: &str, v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "∞".into() } else { "-∞".into() };
    }
    let (x, u) = match unit {
        "s" if v.abs() < 1.0 => (v * 1e3, " ms"),
        "s" => (v, " s"),
        "%" => (v * 1e2, " %"),
        "MiB" => (v / (1024.0 * 1024.0), " MiB"),
        "/s" => (v, "/s"),
        "/core-s" => (v, "/core-s"),
        _ => (v, ""),
    };
    let r = if x.abs() >= 100.0 {
        (x * 10.0).round() / 10.0
    } else {
        (x * 1000.0).round() / 1000.0
    };
    format!("{}{u}", number(r))
}

/// The statistic across repetitions (not empty).
pub fn stat(name: &str, v: &[f64]) -> f64 {
    match name {
        "mean" => v.iter().sum::<f64>() / v.len() as f64,
        "min" => v.iter().copied().fold(f64::INFINITY, f64::min),
        "max" => v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        _ => summary::median(v).unwrap_or(f64::NAN),
    }
}

/// The interval of a statistic across repetitions, from the values' lower and upper ends,
/// with its coverage where it is exact: `None` under 3 values and for `min` and `max` (a
/// sample's extreme has no interval).
pub fn interval_of(name: &str, lows: &[f64], highs: &[f64]) -> Option<(Interval, Option<f64>)> {
    let n = lows.len();
    if n < 3 {
        return None;
    }
    match name {
        "median" => {
            let k = summary::order_rank(n);
            let nth = |v: &[f64], i: usize| {
                let mut v = v.to_vec();
                *v.select_nth_unstable_by(i, f64::total_cmp).1
            };
            let i = Interval {
                lo: nth(lows, k - 1),
                hi: nth(highs, n - k),
            };
            Some((i, Some(summary::order_confidence(n, k))))
        }
        "mean" => {
            let (lo, hi) = (mean_bootstrap(lows)?.0, mean_bootstrap(highs)?.1);
            Some((Interval { lo, hi }, None))
        }
        _ => None,
    }
}

/// The percentile bootstrap of a mean (10,000 resamples, nearest-rank 2.5th and 97.5th).
fn mean_bootstrap(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    let mut rng = SplitMix64::new(summary::SEED);
    let mut draw = vec![0.0; n];
    let mut stats = Vec::with_capacity(summary::RESAMPLES);
    for _ in 0..summary::RESAMPLES {
        for d in draw.iter_mut() {
            *d = values[(rng.next_u64() % n as u64) as usize];
        }
        stats.push(stat("mean", &draw));
    }
    Some((
        summary::nth(&mut stats, 2.5),
        summary::nth(&mut stats, 97.5),
    ))
}
