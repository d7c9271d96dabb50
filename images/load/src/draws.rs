//! Which request iteration n sends: an exact port of the k6 script's seeded draws
//! (crates/core/src/spec/templates/load.js.j2), so that iteration n sends the same request
//! under either generator.
//!
//! JavaScript's bitwise operators work on 32-bit integers, so u32 wrapping arithmetic is the
//! same; `Math.imul` is `wrapping_mul`. The route pick and the uniform draw are f64
//! arithmetic there and here, step for step. tests/offline/load_draws.rs (at the workspace root)
//! runs the script's functions in node and compares.

use crate::plan::{LoadPlan, Segment};

/// The golden-ratio increment of the counter-based generator.
const GOLDEN: u32 = 0x9e37_79b9;

/// lowbias32 (Chris Wellons): a 32-bit integer hash with good avalanche.
pub fn mix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

/// The draws of one iteration: a counter-based generator keyed by (seed, iteration).
#[derive(Debug, Clone)]
pub struct Draws {
    state: u32,
}

impl Draws {
    /// The script's `drawsFor(n)`.
    pub fn new(seed: u32, n: u64) -> Draws {
        // n % 2^32 and floor(n / 2^32); JavaScript's `^` then takes the sum modulo 2^32.
        let low = n as u32;
        let high = ((n >> 32) as u32).wrapping_add(GOLDEN);
        Draws {
            state: mix32(seed ^ mix32(low) ^ mix32(high)),
        }
    }

    /// The next 32-bit draw.
    pub fn next_u32(&mut self) -> u32 {
        self.state = self.state.wrapping_add(GOLDEN);
        mix32(self.state)
    }

    /// A uniform integer in [min, max] from 53 random bits (the script's `uniform`).
    pub fn uniform(&mut self, [min, max]: [u64; 2]) -> u64 {
        let span = max as f64 - min as f64 + 1.0;
        // Left operand first, as JavaScript evaluates it.
        let high = f64::from(self.next_u32() >> 5);
        let low = f64::from(self.next_u32() >> 6);
        let fraction = (high * 67_108_864.0 + low) / 9_007_199_254_740_992.0;
        // Exact while max <= 2^53 - 1, which LoadPlan::check ensures.
        (min as f64 + (fraction * span).floor()) as u64
    }
}

/// The request of one iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drawn {
    /// Index into the plan's routes.
    pub route: usize,
    /// The filled path template (to append to base_url).
    pub path: String,
    /// The filled body template, when the route has one.
    pub body: Option<String>,
}

/// The request iteration `n` sends. The plan must have passed [`LoadPlan::check`] (an id
/// naming no range would panic).
pub fn request(plan: &LoadPlan, n: u64) -> Drawn {
    let mut next = Draws::new(plan.seed, n);
    let pick = (f64::from(next.next_u32()) / 4_294_967_296.0) * plan.total_weight;
    let last = plan.routes.len() - 1;
    let route = plan
        .cumulative_weights
        .iter()
        .position(|&w| pick < w)
        .unwrap_or(last);
    let template = &plan.routes[route];
    // One draw per id name per iteration, shared by path and body (the script's `drawn`).
    let mut drawn: Vec<(&str, u64)> = Vec::new();
    let path = fill(plan, &template.path, &mut next, &mut drawn);
    let body = template
        .body
        .as_ref()
        .map(|segments| fill(plan, segments, &mut next, &mut drawn));
    Drawn { route, path, body }
}

fn fill<'p>(
    plan: &'p LoadPlan,
    segments: &'p [Segment],
    next: &mut Draws,
    drawn: &mut Vec<(&'p str, u64)>,
) -> String {
    let mut out = String::new();
    for segment in segments {
        match segment {
            Segment::Text(text) => out.push_str(text),
            Segment::Id { id } => {
                let value = match drawn.iter().find(|(name, _)| name == id) {
                    Some(&(_, value)) => value,
                    None => {
                        let value = next.uniform(plan.ids[id.as_str()]);
                        drawn.push((id, value));
                        value
                    }
                };
                // As JavaScript's String() prints an integer below 2^53.
                out.push_str(crate::decimal::digits(value, &mut [0; 20]));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix32_matches_the_script() {
        // Values from the script's mix32, run in node.
        assert_eq!(mix32(0), 0);
        assert_eq!(mix32(1), 0x6889_90c0);
        assert_eq!(mix32(0xffff_ffff), 0x6768_824a);
        assert_eq!(mix32(0x9e37_79b9), 0x01fc_e552);
        assert_eq!(mix32(123_456_789), 0xa8f1_db88);
    }

    #[test]
    fn draws_match_the_script_above_2_pow_32() {
        // drawsFor(2^32 + 5) with seed 0xffffffff, three next() calls, in node.
        let mut d = Draws::new(0xffff_ffff, (1 << 32) + 5);
        assert_eq!(
            [d.next_u32(), d.next_u32(), d.next_u32()],
            [76_667_134, 3_506_706_025, 4_001_446_181]
        );
    }

    #[test]
    fn uniform_stays_in_range() {
        let mut d = Draws::new(7, 3);
        for _ in 0..10_000 {
            let v = d.uniform([5, 9]);
            assert!((5..=9).contains(&v));
        }
        let top = (1u64 << 53) - 1;
        for _ in 0..10_000 {
            assert!(d.uniform([top - 2, top]) >= top - 2);
        }
        assert_eq!(d.uniform([42, 42]), 42);
    }

    #[test]
    fn one_draw_per_id_name_per_iteration() {
        let plan = LoadPlan::parse(crate::plan::tests::SAMPLE).expect("sample");
        let mut posts = 0;
        for n in 0..2000 {
            let d = request(&plan, n);
            assert_eq!(d, request(&plan, n), "draws depend on n alone");
            if d.route == 1 {
                posts += 1;
                assert_eq!(d.path, "/posts");
                let body = d.body.expect("a body");
                let author: u64 = body["{\"author\":".len()..body.len() - 1]
                    .parse()
                    .expect("an id");
                assert!((1..=1000).contains(&author));
            } else {
                assert!(d.path.starts_with("/feed/") && d.body.is_none());
            }
        }
        // Weights 3 : 1.
        assert!((400..600).contains(&posts), "{posts}");
    }
}
