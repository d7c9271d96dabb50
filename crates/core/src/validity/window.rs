//! Time spans on the wall clock (unix ns): the measured window, the faults' active spans
//! from events.csv, and the measured window with the faults taken out.

use crate::rundir::requests::LoadSummary;
use crate::spec::load::LoadScript;

/// A half-open span `[start_ns, end_ns)` of unix nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start_ns: i128,
    pub end_ns: i128,
}

impl Window {
    /// The measured window of a run: from the k6 scenario's start plus the warm-up to the
    /// scenario's start plus the schedule's length. `None` when k6 reported no start.
    pub fn measured(script: &LoadScript, summary: &LoadSummary) -> Option<Window> {
        let t0 = summary.scenario_start_ns? as i128;
        Some(Window {
            start_ns: t0 + secs_to_ns(script.measured_start_s),
            end_ns: t0 + secs_to_ns(script.schedule.duration_s()),
        })
    }

    pub fn contains(&self, t_ns: i128) -> bool {
        t_ns >= self.start_ns && t_ns < self.end_ns
    }

    pub fn len_s(&self) -> f64 {
        (self.end_ns - self.start_ns).max(0) as f64 / 1e9
    }
}

fn secs_to_ns(s: f64) -> i128 {
    (s * 1e9) as i128
}

/// One line of events.csv, as far as fault windows need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRow {
    pub wall_ns: i128,
    /// The `event` column, e.g. `fault-applied`.
    pub event: String,
}

/// The spans in which a fault was active: from a `fault-applied` (the first one while none
/// is active) to the next `fault-cleared`; a fault never cleared stays active to the end of
/// time (`i128::MAX`). Events are taken in time order.
pub fn fault_spans(events: &[EventRow]) -> Vec<Window> {
    let mut sorted: Vec<&EventRow> = events.iter().collect();
    sorted.sort_by_key(|e| e.wall_ns);
    let mut spans = Vec::new();
    let mut open: Option<i128> = None;
    for e in sorted {
        match e.event.as_str() {
            "fault-applied" if open.is_none() => open = Some(e.wall_ns),
            "fault-cleared" => {
                if let Some(start_ns) = open.take() {
                    spans.push(Window {
                        start_ns,
                        end_ns: e.wall_ns,
                    });
                }
            }
            _ => {}
        }
    }
    if let Some(start_ns) = open {
        spans.push(Window {
            start_ns,
            end_ns: i128::MAX,
        });
    }
    spans
}

/// `window` without the `holes`: the pieces, in order, each non-empty.
pub fn subtract(window: Window, holes: &[Window]) -> Vec<Window> {
    let mut holes: Vec<Window> = holes.to_vec();
    holes.sort_by_key(|h| h.start_ns);
    let mut pieces = Vec::new();
    let mut from = window.start_ns;
    for h in holes {
        if h.end_ns <= from || h.start_ns >= window.end_ns {
            continue;
        }
        if h.start_ns > from {
            pieces.push(Window {
                start_ns: from,
                end_ns: h.start_ns,
            });
        }
        from = from.max(h.end_ns);
    }
    if from < window.end_ns {
        pieces.push(Window {
            start_ns: from,
            end_ns: window.end_ns,
        });
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(start_ns: i128, end_ns: i128) -> Window {
        Window { start_ns, end_ns }
    }

    fn ev(wall_ns: i128, event: &str) -> EventRow {
        EventRow {
            wall_ns,
            event: event.into(),
        }
    }

    #[test]
    fn faults_open_at_the_first_apply_and_close_at_the_next_clear() {
        let events = [
            ev(10, "phase"),
            ev(20, "fault-applied"),
            ev(21, "fault-applied"),
            ev(30, "fault-cleared"),
            ev(35, "fault-failed"),
            ev(40, "fault-cleared"),
            ev(50, "fault-applied"),
        ];
        assert_eq!(
            fault_spans(&events),
            vec![w(20, 30), w(50, i128::MAX)],
            "a clear without an apply is ignored; an apply without a clear lasts"
        );
    }

    #[test]
    fn subtracting_holes_leaves_the_pieces_between() {
        let window = w(0, 100);
        assert_eq!(subtract(window, &[]), vec![window]);
        assert_eq!(
            subtract(window, &[w(60, 70), w(-5, 10), w(20, 30), w(25, 40)]),
            vec![w(10, 20), w(40, 60), w(70, 100)]
        );
        assert_eq!(subtract(window, &[w(50, i128::MAX)]), vec![w(0, 50)]);
        assert!(subtract(window, &[w(-1, 200)]).is_empty());
        assert_eq!(subtract(window, &[w(100, 120)]), vec![window]);
    }
}
