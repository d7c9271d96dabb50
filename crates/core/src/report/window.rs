//! Windows sliding forward over a run's requests (sorted by start), with the exact
//! nearest-rank percentile of their durations at every position: each request's duration
//! gets its rank among all the run's durations once, and a Fenwick tree counts the ranks in
//! the window, so moving the window costs O(log n) per request entering or leaving and a
//! percentile O(log n) — the same value sorting the window would give. The fault figures
//! slide a 10 s or objective-long window by 100 ms steps over minutes of requests: sorting
//! each window anew would cost a window's worth of work per step.

use super::read::Req;
use crate::analysis::saturation::rank;

/// Every request's duration rank, computed once per run and shared by its windows.
pub struct Ranks {
    /// Rank (0-based) of each request's duration among all durations (ties by position).
    rank_of: Vec<u32>,
    /// Duration by rank, ascending.
    by_rank: Vec<f64>,
}

impl Ranks {
    pub fn of(reqs: &[Req]) -> Ranks {
        let mut order: Vec<(f64, u32)> = reqs
            .iter()
            .enumerate()
            .map(|(i, r)| (r.duration_ms, i as u32))
            .collect();
        order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut rank_of = vec![0; reqs.len()];
        for (r, &(_, i)) in order.iter().enumerate() {
            rank_of[i as usize] = r as u32;
        }
        Ranks {
            rank_of,
            by_rank: order.into_iter().map(|(d, _)| d).collect(),
        }
    }
}

pub struct Sliding<'a> {
    reqs: &'a [Req],
    ranks: &'a Ranks,
    tree: Vec<u32>,
    failed: usize,
    lo: usize,
    hi: usize,
}

impl<'a> Sliding<'a> {
    /// An empty window over `reqs`, whose ranks are `ranks` (`Ranks::of(reqs)`).
    pub fn new(reqs: &'a [Req], ranks: &'a Ranks) -> Sliding<'a> {
        Sliding {
            reqs,
            ranks,
            tree: vec![0; reqs.len() + 1],
            failed: 0,
            lo: 0,
            hi: 0,
        }
    }

    fn add(&mut self, i: usize, delta: i32) {
        let mut k = self.ranks.rank_of[i] as usize + 1;
        while k < self.tree.len() {
            self.tree[k] = (self.tree[k] as i64 + delta as i64) as u32;
            k += k & k.wrapping_neg();
        }
        if self.reqs[i].failed() {
            self.failed = (self.failed as i64 + delta as i64) as usize;
        }
    }

    /// Moves the window to the requests that started in `[a, b)`; both ends only move
    /// forward (a call with earlier ends restarts from the beginning).
    pub fn set(&mut self, a: i128, b: i128) {
        let lo = self.reqs.partition_point(|r| r.start_ns < a);
        let hi = self.reqs.partition_point(|r| r.start_ns < b).max(lo);
        if lo < self.lo || hi < self.hi {
            while self.hi > self.lo {
                self.hi -= 1;
                self.add(self.hi, -1);
            }
            self.lo = 0;
            self.hi = 0;
        }
        while self.hi < hi {
            if self.hi >= self.lo {
                self.add(self.hi, 1);
            }
            self.hi += 1;
        }
        while self.lo < lo {
            if self.lo < self.hi {
                self.add(self.lo, -1);
            }
            self.lo += 1;
        }
        self.hi = self.hi.max(self.lo);
    }

    pub fn len(&self) -> usize {
        self.hi - self.lo
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn failed(&self) -> usize {
        self.failed
    }

    /// The nearest-rank `p`-th percentile of the window's durations.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        let n = self.len();
        if n == 0 {
            return None;
        }
        // The k-th smallest (1-based) rank present: descend the tree.
        let mut k = rank(p, n) as u32;
        let mut pos = 0usize;
        let mut step = (self.tree.len() - 1).next_power_of_two();
        while step > 0 {
            let next = pos + step;
            if next < self.tree.len() && self.tree[next] < k {
                pos = next;
                k -= self.tree[next];
            }
            step >>= 1;
        }
        self.ranks.by_rank.get(pos).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::saturation::percentile;

    #[test]
    fn percentiles_equal_those_of_the_sorted_window() {
        let mut state = 7u64;
        let reqs: Vec<Req> = (0..2000)
            .map(|i| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                Req {
                    start_ns: i * 10,
                    end_ns: i * 10 + 5,
                    status: if state % 17 == 0 { 503 } else { 200 },
                    // Ties on purpose: durations on a coarse grid.
                    duration_ms: ((state >> 33) % 300) as f64 / 4.0,
                    scheduled_ns: None,
                    route: 0,
                }
            })
            .collect();
        let ranks = Ranks::of(&reqs);
        let mut s = Sliding::new(&reqs, &ranks);
        for (a, b) in [
            (0, 0),
            (0, 500),
            (30, 900),
            (31, 5000),
            (4000, 4005),
            (4000, 20_000),
            (100, 200),
        ] {
            s.set(a, b);
            let w: Vec<&Req> = reqs
                .iter()
                .filter(|r| r.start_ns >= a && r.start_ns < b)
                .collect();
            let mut d: Vec<f64> = w.iter().map(|r| r.duration_ms).collect();
            d.sort_by(f64::total_cmp);
            assert_eq!(s.len(), w.len(), "[{a}, {b})");
            assert_eq!(s.failed(), w.iter().filter(|r| r.failed()).count());
            for p in [50.0, 95.0, 99.0, 99.9, 100.0] {
                assert_eq!(s.percentile(p), percentile(&d, p), "p{p} of [{a}, {b})");
            }
        }
    }
}
