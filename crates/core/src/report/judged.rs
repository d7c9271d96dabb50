//! A run's requests as its recorded rule judges them (`analysis::judging`): each placed at
//! its scheduled instant or its start, with its latency from there. The report's figures
//! read requests so placed ([`placed`]); its verdicts (objective windows, a ramp's steps
//! under every definition, the fault's objective-window detection) read them with the
//! starts the load generator dropped, failed and without a latency ([`requests`]); its
//! `duration_*` figures read requests.csv as it is (docs/analysis.md, "Windows by
//! schedule").

use super::read::Req;
use crate::analysis::judging::Rule;
use crate::analysis::saturation::{percentile, Request};
use crate::rundir::requests::LoadSummary;

/// requests.csv's rows as `rule` places and times them: by schedule, a row with a scheduled
/// instant starts there and lasts to its end (`duration_ms` is its latency from the
/// schedule); sorted by that start. By start, the rows as they are.
pub fn placed(rule: Rule, sent: &[Req]) -> Vec<Req> {
    let mut out: Vec<Req> = sent
        .iter()
        .map(|r| {
            let j = rule.judge(
                r.start_ns,
                r.end_ns,
                r.duration_ms,
                r.scheduled_ns,
                r.status,
            );
            Req {
                start_ns: j.at_ns,
                duration_ms: j.latency_ms.unwrap_or(r.duration_ms),
                ..*r
            }
        })
        .collect();
    out.sort_by_key(|r| r.start_ns);
    out
}

/// The requests `placed` placed (each at its start, timed by its `duration_ms`) with the
/// dropped starts of `load` (run.json's load summary) as `rule` judges them, sorted by
/// `at_ns`. Rows read any other way are placed by start: `rule` only decides the drops.
pub fn requests(rule: Rule, placed: &[Req], load: Option<&LoadSummary>) -> Vec<Request> {
    let mut out: Vec<Request> = placed
        .iter()
        .map(|r| Request {
            at_ns: r.start_ns,
            end_ns: r.end_ns,
            latency_ms: Some(r.duration_ms),
            status: r.status,
        })
        .collect();
    if let Some(l) = load {
        out.extend(rule.drops(l.scenario_start_ns, &l.dropped_per_second));
        // Stable: a drop placed at the instant of a request sent stays after it.
        out.sort_by_key(|r| r.at_ns);
    }
    out
}

/// A request with its place on the run's timeline: the instant that decides which span
/// (second, window, step, fault span) it falls in.
pub trait Placed {
    fn placed_ns(&self) -> i128;
}

impl Placed for Request {
    fn placed_ns(&self) -> i128 {
        self.at_ns
    }
}

impl Placed for Req {
    fn placed_ns(&self) -> i128 {
        self.start_ns
    }
}

/// The requests placed in `[a, b)`, from requests sorted by their place.
pub fn within<T: Placed>(reqs: &[T], a: i128, b: i128) -> &[T] {
    let lo = reqs.partition_point(|r| r.placed_ns() < a);
    let hi = reqs.partition_point(|r| r.placed_ns() < b);
    &reqs[lo..hi.max(lo)]
}

/// A span's failed share: its failed requests and its dropped starts over its requests sent
/// and its starts dropped (0 without either). A dropped start is a request the open model
/// scheduled and nobody served, so it counts as failed (docs/analysis.md).
pub fn failed_share(failed_sent: usize, dropped: usize, sent: usize) -> f64 {
    let all = sent + dropped;
    if all == 0 {
        0.0
    } else {
        (failed_sent + dropped) as f64 / all as f64
    }
}

/// A span of judged requests summarised: how many were sent, how many starts were
/// dropped, how many failed (dropped starts included), and the latencies of those sent.
#[derive(Debug, Clone, Default)]
pub struct Judged {
    pub sent: usize,
    pub dropped: usize,
    pub failed: usize,
    /// The latencies of the requests sent, ascending.
    pub sorted_ms: Vec<f64>,
}

impl Judged {
    pub fn of(reqs: &[Request]) -> Judged {
        let mut sorted_ms: Vec<f64> = reqs.iter().filter_map(|r| r.latency_ms).collect();
        sorted_ms.sort_unstable_by(f64::total_cmp);
        Judged {
            sent: sorted_ms.len(),
            dropped: reqs.len() - sorted_ms.len(),
            failed: reqs.iter().filter(|r| r.failed()).count(),
            sorted_ms,
        }
    }

    /// The nearest-rank percentile of the latencies sent; `None` without one.
    pub fn p(&self, p: f64) -> Option<f64> {
        percentile(&self.sorted_ms, p)
    }

    /// The failed share of every request and dropped start (0 without either).
    pub fn failed_share(&self) -> f64 {
        // `failed` counts the drops already (each one failed).
        failed_share(self.failed - self.dropped, self.dropped, self.sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i128 = 1_000_000_000;

    fn req(start_ns: i128, end_ns: i128, scheduled_ns: Option<i128>, status: u16) -> Req {
        Req {
            start_ns,
            end_ns,
            status,
            duration_ms: (end_ns - start_ns) as f64 / 1e6,
            scheduled_ns,
            route: 0,
        }
    }

    #[test]
    fn by_schedule_requests_move_to_their_schedule_and_drops_join_them_failed() {
        // Scheduled at 1 s and 2 s, started 600 ms late, answered in 20 ms.
        let sent = [
            req(S + 600_000_000, S + 620_000_000, Some(S), 200),
            req(2 * S + 600_000_000, 2 * S + 620_000_000, Some(2 * S), 200),
        ];
        let load = LoadSummary {
            scenario_start_ns: Some(0),
            dropped_per_second: vec![0, 0, 3],
            ..LoadSummary::default()
        };
        let judged = requests(
            Rule::BySchedule,
            &placed(Rule::BySchedule, &sent),
            Some(&load),
        );
        assert_eq!(judged.len(), 5);
        assert_eq!(judged[0].at_ns, S);
        let second = Judged::of(within(&judged, 2 * S, 3 * S));
        assert_eq!((second.sent, second.dropped, second.failed), (1, 3, 3));
        assert_eq!(second.p(99.0), Some(620.0));
        assert_eq!(second.failed_share(), 0.75);
        // Judged by start, as every older run was: as requests.csv says, no drop counted.
        let by_start = requests(Rule::ByStart, &placed(Rule::ByStart, &sent), Some(&load));
        assert_eq!(by_start.len(), 2);
        let first = Judged::of(within(&by_start, S, 2 * S));
        assert_eq!((first.sent, first.p(99.0)), (1, Some(20.0)));
        assert_eq!(Judged::of(&[]).failed_share(), 0.0);
        // Placed for the figures: at the schedule, timed from it, in that order.
        let placed = placed(Rule::BySchedule, &sent);
        assert_eq!((placed[1].start_ns, placed[1].duration_ms), (2 * S, 620.0));
        assert_eq!(placed[1].end_ns, sent[1].end_ns);
        assert_eq!(super::placed(Rule::ByStart, &sent), sent);
    }

    #[test]
    fn a_failed_share_counts_every_drop_failed_and_is_zero_over_nothing() {
        // 1 of 3 sent failed, 1 start dropped: 2 of 4.
        assert_eq!(failed_share(1, 1, 3), 0.5);
        assert_eq!(failed_share(0, 2, 0), 1.0);
        assert_eq!(failed_share(0, 0, 0), 0.0);
    }
}
