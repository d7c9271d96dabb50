//! Requests over a span: counts by class, nearest-rank latency percentiles, and the
//! per-second series (docs/analysis.md, "The measured phase" and "The per-second series").

use std::collections::BTreeMap;

use super::faults::Instants;
use super::judged::{self, within};
use super::out::Out;
use super::read::Req;
use crate::analysis::routes;
use crate::analysis::saturation::{percentile, Request};
use crate::plan::check::functions::{qualified, REQUEST_SPANS, STATUS_CLASSES};
use crate::rundir::frame::Span;

/// A span's requests, summarised.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub requests: usize,
    pub failed: usize,
    /// Starts the load generator dropped in the span (by schedule: the run's rule places
    /// them; by start, none): failed requests that were never sent.
    pub dropped: usize,
    pub no_response: usize,
    pub status_5xx: usize,
    pub status_4xx: usize,
    pub status_2xx: usize,
    /// Every duration, sorted ascending.
    pub sorted_ms: Vec<f64>,
}

impl Stats {
    pub fn of(reqs: &[Req]) -> Stats {
        let mut s = Stats {
            requests: reqs.len(),
            sorted_ms: reqs.iter().map(|r| r.duration_ms).collect(),
            ..Stats::default()
        };
        s.sorted_ms.sort_unstable_by(f64::total_cmp);
        for r in reqs {
            match r.status {
                0 => s.no_response += 1,
                200..=299 => s.status_2xx += 1,
                400..=499 => s.status_4xx += 1,
                500.. => s.status_5xx += 1,
                _ => {}
            }
            if r.failed() {
                s.failed += 1;
            }
        }
        s
    }

    pub fn p(&self, p: f64) -> Option<f64> {
        percentile(&self.sorted_ms, p)
    }

    pub fn share(&self, n: usize) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            n as f64 / self.requests as f64
        }
    }

    /// The span's dropped starts, from the judged requests placed in `[a, b)`.
    pub fn with_drops(mut self, judged: &[Request], a: i128, b: i128) -> Stats {
        self.dropped = judged::within(judged, a, b)
            .iter()
            .filter(|r| r.latency_ms.is_none())
            .count();
        self
    }

    /// The span's failed share, its dropped starts counted as failed, as in the
    /// objective's windows (`judged::failed_share`).
    pub fn failed_share(&self) -> f64 {
        judged::failed_share(self.failed, self.dropped, self.requests)
    }
}

/// A run's requests with each route's declared expected 4xx share (by `Req::route`).
pub struct Answers<'a> {
    pub reqs: &'a [Req],
    expected: Vec<Option<f64>>,
}

impl<'a> Answers<'a> {
    pub fn of(reqs: &'a [Req], routes: &[String], declared: &BTreeMap<String, f64>) -> Self {
        Answers {
            reqs,
            expected: routes.iter().map(|n| declared.get(n).copied()).collect(),
        }
    }

    /// The route's declared expected 4xx share.
    pub fn expected(&self, route: u16) -> Option<f64> {
        self.expected.get(usize::from(route)).copied().flatten()
    }

    /// The answers served by the requests that started in `[a, b)`: the 2xx, and each
    /// route's 4xx up to its declared share of its requests (docs/analysis.md, "Expected
    /// 4xx").
    pub fn served(&self, a: i128, b: i128) -> f64 {
        let mut by_route: BTreeMap<u16, routes::Tally> = BTreeMap::new();
        for r in within(self.reqs, a, b) {
            by_route.entry(r.route).or_default().add(r.status);
        }
        by_route
            .iter()
            .map(|(&route, t)| t.served(self.expected(route)))
            .sum()
    }
}

/// The nearest-rank percentile of a span's durations without sorting them all.
pub fn quick_p(reqs: &[Req], p: f64, scratch: &mut Vec<f64>) -> Option<f64> {
    if reqs.is_empty() {
        return None;
    }
    scratch.clear();
    scratch.extend(reqs.iter().map(|r| r.duration_ms));
    let k = crate::analysis::saturation::rank(p, scratch.len()) - 1;
    let (_, v, _) = scratch.select_nth_unstable_by(k, f64::total_cmp);
    Some(*v)
}

/// The measured phase's rows, then each route's (`definition = route:<name>`).
pub fn measured(
    out: &mut Out,
    answers: &Answers<'_>,
    routes: &[String],
    span: &Span,
    (judged, dropped): (&[Request], Option<u64>),
) {
    let span_reqs = within(answers.reqs, span.start_ns, span.end_ns);
    let len = span.len_s();
    out.value("offered_rate", ratio(span.offered_arrivals, len), "1/s");
    let stats = Stats::of(span_reqs).with_drops(judged, span.start_ns, span.end_ns);
    answer_rows(out, &stats, len);
    match dropped {
        Some(d) => out.count("dropped_iterations", d as usize),
        None => out.empty("dropped_iterations", "count", super::rows::NONE),
    }
    from_schedule(out, span_reqs);
    by_route(out, answers, span_reqs, routes, len);
}

/// The latency percentiles every request row set has.
const PERCENTILES: [(&str, f64); 5] = [
    ("latency_p50", 50.0),
    ("latency_p90", 90.0),
    ("latency_p95", 95.0),
    ("latency_p99", 99.0),
    ("latency_p99_9", 99.9),
];

/// The rows of what a span's requests were answered, over `len_s` seconds: how many, how
/// fast, and the shares by status class.
fn answer_rows(out: &mut Out, s: &Stats, len_s: f64) {
    out.count("requests", s.requests);
    out.value("achieved_rate", ratio(s.requests as f64, len_s), "1/s");
    for (metric, p) in PERCENTILES {
        out.value(metric, s.p(p), "ms");
    }
    out.value("latency_max", s.sorted_ms.last().copied(), "ms");
    out.value("failed_share", Some(s.failed_share()), "ratio");
    out.value("no_response_share", Some(s.share(s.no_response)), "ratio");
    out.value("status_2xx_share", Some(s.share(s.status_2xx)), "ratio");
    out.value("status_4xx_share", Some(s.share(s.status_4xx)), "ratio");
    out.value("status_5xx_share", Some(s.share(s.status_5xx)), "ratio");
}

/// The routes with a request among `reqs`, by name, with their ids; a route with an empty
/// name (a file without the column) is none.
fn routes_in<'r>(reqs: &[Req], routes: &'r [String]) -> Vec<(u16, &'r str)> {
    let mut seen = vec![false; routes.len()];
    for r in reqs {
        if let Some(s) = seen.get_mut(usize::from(r.route)) {
            *s = true;
        }
    }
    let mut order: Vec<(u16, &str)> = routes
        .iter()
        .enumerate()
        .filter(|(i, n)| seen[*i] && !n.is_empty())
        .filter_map(|(i, n)| Some((u16::try_from(i).ok()?, n.as_str())))
        .collect();
    order.sort_by_key(|(_, n)| *n);
    order
}

fn on_route(reqs: &[Req], id: u16) -> Vec<Req> {
    reqs.iter().filter(|r| r.route == id).copied().collect()
}

/// Each route's answers over the span (`definition = route:<name>`), routes by name.
fn by_route(
    out: &mut Out,
    answers: &Answers<'_>,
    span_reqs: &[Req],
    routes: &[String],
    len_s: f64,
) {
    for (id, name) in routes_in(span_reqs, routes) {
        let mut x = out.under(&qualified(None, Some(name), None));
        answer_rows(&mut x, &Stats::of(&on_route(span_reqs, id)), len_s);
        // Declared or not: a route without a declaration expects none.
        let expected = answers.expected(id).unwrap_or(0.0);
        x.value("expected_4xx_share", Some(expected), "ratio");
        out.absorb(x);
    }
}

/// A span of the qualified request rows: its `at:` qualifier (none for the measured phase)
/// and `[start_ns, end_ns)`.
pub type RequestSpan = (Option<&'static str>, i128, i128);

/// The request rows' spans (docs/analysis.md, "qualified rows"): the measured phase, and
/// for a run whose fault was applied, the fault until its clearing (or the measured end),
/// until the balancer marked its target DOWN (when it did; at most until the clearing), and
/// after a clearing its observe window, each cut to the measured phase.
pub fn request_spans(m: &Span, fault: Option<&Instants>) -> Vec<RequestSpan> {
    let mut spans = vec![(None, m.start_ns, m.end_ns)];
    let Some(i) = fault else {
        return spans;
    };
    let [_, during, until_down, observe] = REQUEST_SPANS;
    let windows = [
        (during, Some((i.applied, i.cleared.unwrap_or(m.end_ns)))),
        // Cut at the clear: past it the replica is back, whatever the balancer thought.
        (
            until_down,
            i.down
                .map(|d| (i.applied, i.cleared.map_or(d, |c| d.min(c)))),
        ),
        (observe, i.cleared.map(|c| (c, i.observe_end))),
    ];
    for (name, window) in windows {
        if let Some((a, b)) = window {
            let (a, b) = (a.max(m.start_ns), b.min(m.end_ns));
            spans.push((Some(name), a, b.max(a)));
        }
    }
    spans
}

/// The qualified request rows over each span, route and status, but the measured phase's
/// own rows and its route rows (written by `measured`). `spans` begins with the measured
/// phase (`request_spans`): its routes and status codes have rows in every span, with a
/// request or not, so that a check of one's absence from a span reads its zero.
/// `judged`: the run's requests with its dropped starts, which each span's own
/// `failed_share` counts (a route's cannot: a dropped start has no route).
pub fn qualified_rows(
    out: &mut Out,
    (reqs, judged): (&[Req], &[Request]),
    routes: &[String],
    spans: &[RequestSpan],
) {
    let Some(&(_, ma, mb)) = spans.first() else {
        return;
    };
    let measured = within(reqs, ma, mb);
    let names = routes_in(measured, routes);
    let mut codes: Vec<u16> = measured
        .iter()
        .map(|r| r.status)
        .filter(|s| *s != 0)
        .collect();
    codes.sort_unstable();
    codes.dedup();
    for &(at, a, b) in spans {
        let span_reqs = within(reqs, a, b);
        let len = (b - a) as f64 / 1e9;
        let mut sets = vec![(None, span_reqs.to_vec())];
        for &(id, name) in &names {
            sets.push((Some(name), on_route(span_reqs, id)));
        }
        for (route, mine) in sets {
            if at.is_some() {
                let mut x = out.under(&qualified(at, route, None));
                let mut stats = Stats::of(&mine);
                if route.is_none() {
                    stats = stats.with_drops(judged, a, b);
                }
                answer_rows(&mut x, &stats, len);
                out.absorb(x);
            }
            status_rows(out, &mine, &codes, (at, route), len);
        }
    }
}

/// A status's class as the qualified rows name it; none for no response or a 1xx or 3xx.
fn class_of(status: u16) -> Option<&'static str> {
    match status {
        200..=299 => Some(STATUS_CLASSES[0]),
        400..=499 => Some(STATUS_CLASSES[1]),
        500.. => Some(STATUS_CLASSES[2]),
        _ => None,
    }
}

/// The rows of `reqs` answered with each status class and each of `codes`: how many, how
/// fast, their share of `reqs`.
fn status_rows(
    out: &mut Out,
    reqs: &[Req],
    codes: &[u16],
    (at, route): (Option<&str>, Option<&str>),
    len: f64,
) {
    let pick = |of: &dyn Fn(u16) -> bool| -> Vec<Req> {
        reqs.iter().filter(|r| of(r.status)).copied().collect()
    };
    let sets = STATUS_CLASSES
        .iter()
        .map(|c| (c.to_string(), pick(&|s| class_of(s) == Some(*c))))
        .chain(
            codes
                .iter()
                .map(|&code| (code.to_string(), pick(&|s| s == code))),
        );
    for (status, mine) in sets {
        let s = Stats::of(&mine);
        let mut x = out.under(&qualified(at, route, Some(&status)));
        x.count("requests", s.requests);
        x.value("achieved_rate", ratio(s.requests as f64, len), "1/s");
        for (metric, p) in PERCENTILES {
            x.value(metric, s.p(p), "ms");
        }
        x.value("latency_max", s.sorted_ms.last().copied(), "ms");
        let share = if reqs.is_empty() {
            0.0
        } else {
            s.requests as f64 / reqs.len() as f64
        };
        x.value("status_share", Some(share), "ratio");
        out.absorb(x);
    }
}

/// The measured phase's `duration_ms` (first byte sent to last byte received) of the
/// requests that started in it, whatever the run's rule: `duration_p50`, `duration_p99`,
/// `duration_max`. `sent` is requests.csv as it is, sorted by start.
pub fn duration_rows(out: &mut Out, sent: &[Req], span: &Span) {
    let s = Stats::of(within(sent, span.start_ns, span.end_ns));
    out.value("duration_p50", s.p(50.0), "ms");
    out.value("duration_p99", s.p(99.0), "ms");
    out.value("duration_max", s.sorted_ms.last().copied(), "ms");
}

/// Latency counted from each request's scheduled instant (`end_ns − scheduled_ns`), free of
/// coordinated omission: a request the generator sent late is charged its lateness. Only
/// where every request of the span has `scheduled_ns` (a native load generator's rows).
fn from_schedule(out: &mut Out, span_reqs: &[Req]) {
    let Some(mut ms) = span_reqs
        .iter()
        .map(|r| r.scheduled_ns.map(|s| (r.end_ns - s) as f64 / 1e6))
        .collect::<Option<Vec<f64>>>()
        .filter(|v| !v.is_empty())
    else {
        return;
    };
    ms.sort_unstable_by(f64::total_cmp);
    for (metric, p) in [
        ("latency_from_schedule_p50", 50.0),
        ("latency_from_schedule_p99", 99.0),
    ] {
        out.value(metric, percentile(&ms, p), "ms");
    }
    out.value("latency_from_schedule_max", ms.last().copied(), "ms");
}

pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// One second of the series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Second {
    pub start_ns: i128,
    pub throughput: usize,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub failed: usize,
}

/// The whole seconds of the measured phase, from its start.
pub fn series(reqs: &[Req], span: &Span) -> Vec<Second> {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    let mut k = 0i128;
    while span.start_ns + (k + 1) * 1_000_000_000 <= span.end_ns {
        let a = span.start_ns + k * 1_000_000_000;
        let r = within(reqs, a, a + 1_000_000_000);
        out.push(Second {
            start_ns: a,
            throughput: r.len(),
            p50: quick_p(r, 50.0, &mut scratch),
            p99: quick_p(r, 99.0, &mut scratch),
            failed: r.iter().filter(|q| q.failed()).count(),
        });
        k += 1;
    }
    out
}

pub fn series_rows(out: &mut Out, seconds: &[Second]) {
    for (k, s) in seconds.iter().enumerate() {
        let mut o = out.at_second(k as u64);
        o.value("second_throughput", Some(s.throughput as f64), "1/s");
        o.value("second_p50", s.p50, "ms");
        o.value("second_p99", s.p99, "ms");
        o.count("second_failed", s.failed);
        out.absorb(o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(start_ns: i128, duration_ms: f64, status: u16) -> Req {
        Req {
            start_ns,
            end_ns: start_ns + 1,
            status,
            duration_ms,
            scheduled_ns: None,
            route: 0,
        }
    }

    #[test]
    fn the_faults_spans_routes_and_statuses_have_rows_of_their_own() {
        const S: i128 = 1_000_000_000;
        // 10 s at 10/s, every other request an upload (route 1), the rest feeds. During
        // the fault, [4 s, 6 s), the uploads are answered 503 in 300 ms; otherwise every
        // request 200 in 10 ms. Cleared at 6 s, observed until 8 s.
        let reqs: Vec<Req> = (0..100)
            .map(|i: i128| {
                let t = i * S / 10;
                let upload = i % 2 == 1;
                let hit = upload && (4 * S..6 * S).contains(&t);
                let mut r = req(
                    t,
                    if hit { 300.0 } else { 10.0 },
                    if hit { 503 } else { 200 },
                );
                r.route = u16::from(upload);
                r
            })
            .collect();
        let routes = vec!["feed".to_string(), "upload".to_string()];
        let m = Span {
            start_ns: 0,
            end_ns: 10 * S,
            offered_arrivals: 100.0,
        };
        let fault = Instants {
            applied: 4 * S,
            cleared: Some(6 * S),
            restart: None,
            observe_end: 8 * S,
            down: Some(5 * S),
        };
        let spans = request_spans(&m, Some(&fault));
        assert_eq!(
            spans,
            [
                (None, 0, 10 * S),
                (Some("fault"), 4 * S, 6 * S),
                (Some("until-down"), 4 * S, 5 * S),
                (Some("observe"), 6 * S, 8 * S)
            ]
        );
        let mut out = Out::new(crate::report::rows::RunKey {
            run: "r".into(),
            contender: "c".into(),
            variant: String::new(),
            profile: "p".into(),
            fault: "f".into(),
            repetition: 1,
        });
        qualified_rows(&mut out, (&reqs, &[]), &routes, &spans);
        let get = |d: &str, m: &str| {
            let r = out.rows.iter().find(|r| r.definition == d && r.metric == m);
            r.map(|r| (r.value, r.note.clone()))
        };
        let value = |d: &str, m: &str| get(d, m).and_then(|v| v.0);
        // Only uploads felt it: their p99 during the fault, the feed's unchanged.
        assert_eq!(value("at:fault route:upload", "latency_p99"), Some(300.0));
        assert_eq!(value("at:fault route:feed", "latency_p99"), Some(10.0));
        assert_eq!(value("at:observe route:upload", "latency_p99"), Some(10.0));
        // The 503s' median latency during the fault, and their share of it.
        assert_eq!(value("at:fault status:503", "requests"), Some(10.0));
        assert_eq!(value("at:until-down status:503", "requests"), Some(5.0));
        assert_eq!(value("at:fault status:503", "latency_p50"), Some(300.0));
        assert_eq!(value("at:fault status:503", "status_share"), Some(0.5));
        assert_eq!(value("at:fault status:5xx", "achieved_rate"), Some(5.0));
        assert_eq!(value("at:fault", "failed_share"), Some(0.5));
        assert_eq!(value("status:503", "status_share"), Some(0.1));
        // A class always has rows, a code only where seen.
        assert_eq!(
            value("at:fault route:feed status:5xx", "requests"),
            Some(0.0)
        );
        assert_eq!(
            get("at:fault route:feed status:5xx", "latency_p50"),
            Some((None, crate::report::rows::NONE.to_string()))
        );
        // The measured phase's codes in every span: none answered 503 after the clear.
        assert_eq!(value("at:observe status:503", "requests"), Some(0.0));
        assert_eq!(
            get("at:observe status:404", "requests"),
            None,
            "never answered"
        );
        // The measured phase's own rows and route rows are `measured`'s, not these.
        assert_eq!(get("", "requests"), None);
        assert_eq!(get("route:feed", "requests"), None);
        // Without a fault, the measured phase's statuses only.
        assert_eq!(request_spans(&m, None), [(None, 0, 10 * S)]);
    }

    #[test]
    fn classes_and_percentiles() {
        let reqs: Vec<Req> = (1..=100)
            .map(|i| {
                req(
                    i,
                    i as f64,
                    if i <= 2 {
                        0
                    } else if i <= 5 {
                        503
                    } else if i == 6 {
                        404
                    } else {
                        200
                    },
                )
            })
            .collect();
        let s = Stats::of(&reqs);
        assert_eq!(
            (s.no_response, s.status_5xx, s.status_4xx, s.failed),
            (2, 3, 1, 5)
        );
        assert_eq!(s.p(99.0), Some(99.0));
        assert_eq!(s.p(99.9), Some(100.0));
        assert_eq!(s.p(50.0), Some(50.0));
        let mut scratch = Vec::new();
        assert_eq!(quick_p(&reqs, 99.0, &mut scratch), Some(99.0));
        assert_eq!(within(&reqs, 10, 20).len(), 10);
        assert_eq!(s.failed_share(), 0.05);
        // Judged by schedule, the drops placed in the span are failed requests among all
        // (15 of 110); the shares of answers stay over the requests sent.
        let judged: Vec<Request> = (0..12)
            .map(|i| Request::dropped(if i < 10 { 50 } else { 200 }))
            .collect();
        let s = Stats::of(&reqs).with_drops(&judged, 1, 101);
        assert_eq!((s.dropped, s.failed_share()), (10, 15.0 / 110.0));
        assert_eq!(s.share(s.no_response), 0.02);
        assert_eq!(Stats::of(&[]).with_drops(&judged, 0, 1).failed_share(), 0.0);
    }

    #[test]
    fn each_route_is_answered_apart() {
        // 10 s: 90 feed requests of 10 ms (200) and 10 post requests of 50 ms (404).
        let reqs: Vec<Req> = (0..100)
            .map(|i: i128| {
                let post = i % 10 == 9;
                let mut r = req(
                    i * 100_000_000,
                    if post { 50.0 } else { 10.0 },
                    if post { 404 } else { 200 },
                );
                r.route = if post { 1 } else { 0 };
                r
            })
            .collect();
        let routes = vec!["feed".to_string(), "post".to_string()];
        let span = Span {
            start_ns: 0,
            end_ns: 10_000_000_000,
            offered_arrivals: 100.0,
        };
        let mut out = Out::new(crate::report::rows::RunKey {
            run: "r".into(),
            contender: "c".into(),
            variant: String::new(),
            profile: "p".into(),
            fault: String::new(),
            repetition: 1,
        });
        let declared = BTreeMap::from([("post".to_string(), 1.0)]);
        measured(
            &mut out,
            &Answers::of(&reqs, &routes, &declared),
            &routes,
            &span,
            (&[], None),
        );
        let get = |d: &str, m: &str| {
            out.rows
                .iter()
                .find(|r| r.definition == d && r.metric == m)
                .and_then(|r| r.value)
        };
        assert_eq!(get("", "status_2xx_share"), Some(0.9));
        assert_eq!(get("", "status_4xx_share"), Some(0.1));
        assert_eq!(get("", "latency_p99"), Some(50.0));
        assert_eq!(get("route:feed", "requests"), Some(90.0));
        assert_eq!(get("route:feed", "achieved_rate"), Some(9.0));
        assert_eq!(get("route:feed", "latency_p99"), Some(10.0));
        assert_eq!(get("route:feed", "status_4xx_share"), Some(0.0));
        assert_eq!(get("route:post", "status_4xx_share"), Some(1.0));
        assert_eq!(get("route:post", "latency_p50"), Some(50.0));
        assert_eq!(get("route:post", "expected_4xx_share"), Some(1.0));
        assert_eq!(
            get("route:feed", "expected_4xx_share"),
            Some(0.0),
            "none declared"
        );
        // No offered rate per route: the schedule does not say which route each arrival is.
        assert_eq!(get("route:post", "offered_rate"), None);
        // Without a route column (no names), no route rows.
        let mut bare = Out::new(out.rows[0].key.clone());
        measured(
            &mut bare,
            &Answers::of(&reqs, &[], &declared),
            &[],
            &span,
            (&[], None),
        );
        assert!(bare
            .rows
            .iter()
            .all(|r| !r.definition.starts_with("route:")));
    }

    #[test]
    fn the_series_covers_whole_seconds_only() {
        let reqs = vec![req(0, 5.0, 200), req(1_500_000_000, 7.0, 500)];
        let span = Span {
            start_ns: 0,
            end_ns: 2_500_000_000,
            offered_arrivals: 2.0,
        };
        let s = series(&reqs, &span);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].throughput, s[1].failed), (1, 1));
        assert_eq!(s[1].p99, Some(7.0));
    }
}
