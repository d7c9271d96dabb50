//! The rule a run's objective windows are judged by: where each request is placed, what
//! its latency is, and whether the starts the load generator dropped count. One rule per
//! run, recorded in its frame (run.json) and its run hash; the live judge, the executor's
//! figures, the report and its twin all judge by the run's recorded rule (docs/analysis.md,
//! "Windows by schedule").
//!
//! An open model promises that a stall costs the requests it delayed. Judged by start, it
//! does not: a request that left 600 ms after its scheduled instant and was answered in
//! 20 ms counts as 20 ms, and a start the generator dropped counts nowhere. Judged by
//! schedule, the delay is the system's (or the generator's) and shows.

use serde::{Deserialize, Serialize};

use super::saturation::Request;

/// How a run's requests are judged against its objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// Each request placed at its start and judged by `duration_ms` (first byte sent to
    /// last byte received); dropped starts count in no window. Every run.json written
    /// before the rule was recorded was judged so.
    #[default]
    ByStart,
    /// Each request placed at its scheduled instant and judged by its latency from it
    /// (`end_ns − scheduled_ns`) where the load generator records one (feedbench-load);
    /// k6 records none, so its requests keep their start and `duration_ms`. Every dropped
    /// start is a failed request, never answered, placed at the start of the second it was
    /// counted in (its scheduled second for feedbench-load, the second k6 reported it in).
    BySchedule,
}

/// The rule the executor judges new runs by; its name is the one every run hash carries
/// (`plan::expand::JUDGED_BY`).
pub const CURRENT: Rule = Rule::BySchedule;

const SECOND_NS: i128 = 1_000_000_000;

/// The start (unix ns) of `second`, whole seconds since the scenario's start: where a
/// second's dropped starts are placed, by the windows of a run judged by schedule and by
/// the validity checks that count them whatever the rule.
pub fn second_start(scenario_start_ns: i128, second: u64) -> i128 {
    scenario_start_ns.saturating_add(i128::from(second) * SECOND_NS)
}

impl Rule {
    /// The name run.json and the run hash carry.
    pub fn name(self) -> &'static str {
        match self {
            Rule::ByStart => "by-start",
            Rule::BySchedule => "by-schedule",
        }
    }

    /// A request from its start and end (unix ns), `duration_ms`, scheduled instant (where
    /// the load generator records one) and status.
    pub fn judge(
        self,
        start_ns: i128,
        end_ns: i128,
        duration_ms: f64,
        scheduled_ns: Option<i128>,
        status: u16,
    ) -> Request {
        match (self, scheduled_ns) {
            (Rule::BySchedule, Some(at_ns)) => Request {
                at_ns,
                end_ns,
                latency_ms: Some((end_ns - at_ns).max(0) as f64 / 1e6),
                status,
            },
            _ => Request {
                at_ns: start_ns,
                end_ns,
                latency_ms: Some(duration_ms),
                status,
            },
        }
    }

    /// Where the starts dropped in `second` (whole seconds since the scenario's start at
    /// `scenario_start_ns`) are judged: at the second's start; `None` when this rule does
    /// not count dropped starts.
    pub fn dropped_at(self, scenario_start_ns: i128, second: u64) -> Option<i128> {
        match self {
            Rule::ByStart => None,
            Rule::BySchedule => Some(second_start(scenario_start_ns, second)),
        }
    }

    /// The dropped starts of a load summary's `dropped_per_second` (index: whole seconds
    /// since `scenario_start_ns`), one failed request each; none when this rule does not
    /// count them or the scenario's start is unknown.
    pub fn drops(self, scenario_start_ns: Option<u64>, per_second: &[u64]) -> Vec<Request> {
        let Some(start) = scenario_start_ns.map(i128::from) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (second, &count) in per_second.iter().enumerate() {
            if let Some(at_ns) = self.dropped_at(start, second as u64) {
                out.extend((0..count).map(|_| Request::dropped(at_ns)));
            }
        }
        out
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_schedule_a_late_start_is_judged_from_its_schedule_and_by_start_it_is_not() {
        // Scheduled at 1 s, started 600 ms late, answered in 20 ms.
        let late =
            |rule: Rule| rule.judge(1_600_000_000, 1_620_000_000, 20.0, Some(1_000_000_000), 200);
        let judged = late(Rule::BySchedule);
        assert_eq!(
            (judged.at_ns, judged.latency_ms),
            (1_000_000_000, Some(620.0))
        );
        let judged = late(Rule::ByStart);
        assert_eq!(
            (judged.at_ns, judged.latency_ms),
            (1_600_000_000, Some(20.0))
        );
        // k6 records no schedule: its start and duration either way.
        let judged = Rule::BySchedule.judge(1_600_000_000, 1_620_000_000, 19.0, None, 200);
        assert_eq!(
            (judged.at_ns, judged.latency_ms),
            (1_600_000_000, Some(19.0))
        );
        assert!(!judged.failed());
    }

    #[test]
    fn dropped_starts_are_failures_at_their_seconds_start_only_by_schedule() {
        let drops = Rule::BySchedule.drops(Some(5_000_000_000), &[0, 2, 0, 1]);
        let at: Vec<i128> = drops.iter().map(|d| d.at_ns).collect();
        assert_eq!(at, [6_000_000_000, 6_000_000_000, 8_000_000_000]);
        assert!(drops.iter().all(|d| d.failed() && d.latency_ms.is_none()));
        assert!(Rule::ByStart.drops(Some(5_000_000_000), &[3]).is_empty());
        assert!(Rule::BySchedule.drops(None, &[3]).is_empty());
    }

    #[test]
    fn the_rule_reads_back_by_name_and_older_files_were_judged_by_start() {
        for rule in [Rule::ByStart, Rule::BySchedule] {
            let text = serde_json::to_string(&rule).unwrap();
            assert_eq!(text, format!("\"{}\"", rule.name()));
            assert_eq!(serde_json::from_str::<Rule>(&text).unwrap(), rule);
        }
        assert_eq!(Rule::default(), Rule::ByStart);
        assert_eq!(CURRENT.name(), crate::plan::expand::JUDGED_BY);
    }
}
