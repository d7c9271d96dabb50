//! Per-second accounting: the `#second` records, one per whole second of the schedule.
//!
//! Counts and lags belong to the second an iteration was scheduled in; the in-flight and
//! connection maxima to the second of wall time (since the scenario start) they were seen in.

use feedbench_load::stream::{write_second, Second};

/// What became of an iteration taken from the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    Started,
    /// Every connection busy and the cap reached.
    Cap,
    /// Later than max_lag_ms behind its scheduled instant.
    Late,
}

/// The records of every second of the schedule, and how many are written.
#[derive(Debug)]
pub struct Seconds {
    records: Vec<Second>,
    written: usize,
}

impl Seconds {
    /// One record per second [t, t + 1) that the schedule overlaps.
    pub fn new(duration_s: f64) -> Seconds {
        // A checked schedule's duration is finite; `as` saturates anyway.
        let len = duration_s.ceil().max(0.0) as usize;
        let records = (0..len as u64)
            .map(|t| Second {
                t,
                ..Second::default()
            })
            .collect();
        Seconds {
            records,
            written: 0,
        }
    }

    /// Counts an iteration scheduled at `offset_s`, taken `lag_ms` late.
    pub fn taken(&mut self, offset_s: f64, lag_ms: f64, what: Taken) {
        // An offset equal to the end (rounding) counts in the last second.
        let i = (offset_s as usize).min(self.records.len().saturating_sub(1));
        let Some(r) = self.records.get_mut(i) else {
            return;
        };
        r.scheduled += 1;
        match what {
            Taken::Started => r.started += 1,
            Taken::Cap => r.dropped_cap += 1,
            Taken::Late => r.dropped_late += 1,
        }
        r.max_lag_ms = r.max_lag_ms.max(lag_ms);
    }

    /// Notes the levels seen during wall second `wall_s`.
    pub fn levels(&mut self, wall_s: u64, in_flight: u64, connections: u64) {
        if let Some(r) = usize::try_from(wall_s)
            .ok()
            .and_then(|i| self.records.get_mut(i))
        {
            r.in_flight = r.in_flight.max(in_flight);
            r.connections = r.connections.max(connections);
        }
    }

    /// Writes the records not yet written below `end` (clipped to the schedule).
    pub fn write_through(&mut self, end: usize, out: &mut Vec<u8>) {
        let end = end.min(self.records.len());
        for record in self.records.get(self.written..end).unwrap_or_default() {
            write_second(out, record);
        }
        self.written = self.written.max(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_scheduled_second_and_writes_once() {
        let mut s = Seconds::new(2.5);
        s.taken(0.2, 1.5, Taken::Started);
        s.taken(0.9, 0.5, Taken::Cap);
        s.taken(2.5, 9.0, Taken::Late);
        s.levels(0, 3, 4);
        s.levels(0, 1, 5);
        s.levels(7, 1, 1);
        let mut out = Vec::new();
        s.write_through(1, &mut out);
        s.write_through(1, &mut out);
        let text = String::from_utf8(out).expect("UTF-8");
        assert_eq!(text, "#second t=0 scheduled=2 started=1 dropped_cap=1 dropped_late=0 max_lag_ms=1.500 in_flight=3 connections=5\n");
        let mut out = Vec::new();
        s.write_through(usize::MAX, &mut out);
        let text = String::from_utf8(out).expect("UTF-8");
        assert_eq!(text.lines().count(), 2);
        assert!(text.ends_with("t=2 scheduled=1 started=0 dropped_cap=0 dropped_late=1 max_lag_ms=9.000 in_flight=0 connections=0\n"));
    }
}
