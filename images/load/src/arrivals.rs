//! When each iteration starts: the schedule's piecewise-linear rate, integrated.
//!
//! With N(t) the integral of the rate from 0 to t, iteration n starts at the first instant
//! after which N exceeds n: where N reaches n, at the end of any zero-rate stretch there
//! (so iteration 0 starts at t = 0 when start_rate > 0, and no iteration starts while the
//! rate is 0). Iterations run while n < N(end). Each piece's quadratic is solved exactly,
//! not stepped, so the offsets do not drift over a long schedule.

use crate::plan::Schedule;

/// One stage of positive duration: the rate goes linearly from `r0` to `r1`.
#[derive(Debug, Clone, Copy)]
struct Piece {
    /// Start (s from the scenario start) and duration (s).
    t0: f64,
    d: f64,
    r0: f64,
    r1: f64,
    /// N at the piece's start and end.
    n0: f64,
    n1: f64,
}

impl Piece {
    /// The offset where N reaches `n`, for n0 <= n < n1.
    fn solve(&self, n: f64) -> f64 {
        let k = n - self.n0;
        let x = if self.r0 == self.r1 {
            // n1 > n0, so the constant rate is positive.
            k / self.r0
        } else if k <= 0.0 {
            0.0
        } else {
            // r0 x + a x^2 = k, in the form that loses no precision when a is small
            // (r0 >= 0, so the denominator never cancels).
            let a = (self.r1 - self.r0) / (2.0 * self.d);
            let disc = (self.r0 * self.r0 + 4.0 * a * k).max(0.0);
            2.0 * k / (self.r0 + disc.sqrt())
        };
        self.t0 + x.clamp(0.0, self.d)
    }

    /// N at `t`, for t0 <= t <= t0 + d.
    fn integral(&self, t: f64) -> f64 {
        let x = t - self.t0;
        self.n0 + self.r0 * x + (self.r1 - self.r0) / (2.0 * self.d) * x * x
    }
}

/// The schedule as pieces, with its length and total count.
#[derive(Debug, Clone)]
struct Pieces {
    pieces: Vec<Piece>,
    end_s: f64,
    total: u64,
}

impl Pieces {
    fn new(schedule: &Schedule) -> Pieces {
        let (mut t, mut rate, mut n) = (0.0, schedule.start_rate, 0.0);
        let mut pieces = Vec::with_capacity(schedule.stages.len());
        for stage in &schedule.stages {
            // A stage of duration 0 only moves the rate (a jump); it holds no arrivals.
            if stage.duration_s > 0.0 {
                let n1 = n + stage.duration_s * (rate + stage.target) / 2.0;
                pieces.push(Piece {
                    t0: t,
                    d: stage.duration_s,
                    r0: rate,
                    r1: stage.target,
                    n0: n,
                    n1,
                });
                t += stage.duration_s;
                n = n1;
            }
            rate = stage.target;
        }
        // Iterations 0..total have n < N(end). A non-finite N (an unchecked plan) gives 0.
        let total = if n.is_finite() && n > 0.0 {
            n.ceil() as u64
        } else {
            0
        };
        Pieces {
            pieces,
            end_s: t,
            total,
        }
    }

    /// The index of the piece holding iteration n (n0 <= n < n1), from `from` on.
    fn piece_of(&self, n: f64, from: usize) -> usize {
        from + self.pieces[from..].partition_point(|p| p.n1 <= n)
    }

    fn offset(&self, n: u64) -> Option<f64> {
        if n >= self.total {
            return None;
        }
        let piece = self.piece_of(n as f64, 0);
        // n < N(end) = the last n1, so some piece holds it; rounding aside, take the last.
        let piece = self.pieces.get(piece).or(self.pieces.last())?;
        Some(piece.solve(n as f64))
    }

    fn integral(&self, t: f64) -> f64 {
        if t <= 0.0 {
            return 0.0;
        }
        let i = self.pieces.partition_point(|p| p.t0 + p.d <= t);
        match self.pieces.get(i) {
            Some(piece) => piece.integral(t),
            None => self.pieces.last().map_or(0.0, |p| p.n1),
        }
    }

    /// The first iteration whose offset is at or after `t` (`total` when none is).
    fn first_at_or_after(&self, t: f64) -> u64 {
        let mut n = (self.integral(t).ceil().max(0.0) as u64).min(self.total);
        // The guess comes from N; the fix-ups make the answer agree with `offset` exactly.
        while n > 0 && self.offset(n - 1).is_some_and(|o| o >= t) {
            n -= 1;
        }
        while self.offset(n).is_some_and(|o| o < t) {
            n += 1;
        }
        n
    }
}

/// The scheduled offsets (s from the scenario start) of iterations 0, 1, 2, …, in order,
/// ending with the schedule.
#[derive(Debug, Clone)]
pub struct Arrivals {
    pieces: Pieces,
    next: u64,
    piece: usize,
}

impl Arrivals {
    /// The arrivals of a checked schedule (see `LoadPlan::check`).
    pub fn new(schedule: &Schedule) -> Arrivals {
        Arrivals {
            pieces: Pieces::new(schedule),
            next: 0,
            piece: 0,
        }
    }

    /// How many iterations the whole schedule holds.
    pub fn total(&self) -> u64 {
        self.pieces.total
    }

    /// The schedule's length in seconds.
    pub fn duration_s(&self) -> f64 {
        self.pieces.end_s
    }

    /// The offset of iteration n, if the schedule holds it.
    pub fn offset(&self, n: u64) -> Option<f64> {
        self.pieces.offset(n)
    }
}

impl Iterator for Arrivals {
    type Item = f64;

    fn next(&mut self) -> Option<f64> {
        let n = self.next;
        if n >= self.pieces.total {
            return None;
        }
        self.next += 1;
        // Same piece as `offset` picks, found from the current one on: O(1) per iteration.
        self.piece = self.pieces.piece_of(n as f64, self.piece);
        let pieces = &self.pieces.pieces;
        let piece = pieces.get(self.piece).or(pieces.last())?;
        Some(piece.solve(n as f64))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.pieces.total - self.next).unwrap_or(usize::MAX);
        (left, Some(left))
    }
}

/// How many iterations have their offset in [a_s, b_s).
pub fn scheduled_between(schedule: &Schedule, a_s: f64, b_s: f64) -> u64 {
    let pieces = Pieces::new(schedule);
    let (a, b) = (pieces.first_at_or_after(a_s), pieces.first_at_or_after(b_s));
    b.saturating_sub(a)
}

/// The integral of the rate from 0 to `t_s`: the arrivals expected by then.
pub fn integral(schedule: &Schedule, t_s: f64) -> f64 {
    Pieces::new(schedule).integral(t_s)
}

/// The schedule's length in seconds.
pub fn duration_s(schedule: &Schedule) -> f64 {
    schedule.stages.iter().map(|s| s.duration_s).sum()
}

#[cfg(test)]
mod tests;
