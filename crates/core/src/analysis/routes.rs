//! Each route's 4xx answers against the share its workload declares (docs/analysis.md,
//! "Expected 4xx"): a 404 for a post the viewer may not see is the contract's right answer,
//! so it is served work up to the declared share, and a route over its share (or with 4xx
//! and none declared) is named.

use std::collections::BTreeMap;
use std::fmt;

/// How far a route's 4xx share may exceed its declared share at least (a ratio: one point)
/// before it is named; a route that declares none may have this much.
pub const OVER_BY: f64 = 0.01;

/// How far a share of `requests` may exceed the declared `expected` before it is named:
/// a point, or three standard errors of a share of that many requests drawn at `expected`
/// (`3·√(p(1−p)/n)`), whichever is more. A route's requests draw their ids at random, so
/// its 4xx share is binomial: the post route's 68.4 % over 280 requests has a standard
/// error of 2.8 points, and a one-point bound alone would name it one run in three.
pub fn tolerance(expected: Option<f64>, requests: usize) -> f64 {
    let p = expected.unwrap_or(0.0);
    if requests == 0 {
        return OVER_BY;
    }
    (3.0 * (p * (1.0 - p) / requests as f64).sqrt()).max(OVER_BY)
}

/// Whether a 4xx share of `requests` is above the declared one (none declared: 0) by more
/// than the `tolerance`.
pub fn over_expected(share: f64, expected: Option<f64>, requests: usize) -> bool {
    share > expected.unwrap_or(0.0) + tolerance(expected, requests)
}

/// The 4xx answers counted as served work: as many as were answered, up to the declared
/// share of the route's requests (none declared: none).
pub fn served_4xx(status_4xx: usize, requests: usize, expected: Option<f64>) -> f64 {
    (status_4xx as f64).min(expected.unwrap_or(0.0) * requests as f64)
}

/// A route's requests, and its 2xx and 4xx answers, over a span.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub requests: usize,
    pub status_2xx: usize,
    pub status_4xx: usize,
}

impl Tally {
    pub fn add(&mut self, status: u16) {
        self.requests += 1;
        self.status_2xx += usize::from((200..300).contains(&status));
        self.status_4xx += usize::from((400..500).contains(&status));
    }

    /// Its served answers: the 2xx, and the 4xx up to the declared share.
    pub fn served(&self, expected: Option<f64>) -> f64 {
        self.status_2xx as f64 + served_4xx(self.status_4xx, self.requests, expected)
    }

    pub fn share_4xx(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.status_4xx as f64 / self.requests as f64
        }
    }
}

/// A route whose 4xx share is over its declared one.
#[derive(Debug, Clone, PartialEq)]
pub struct Unexpected {
    pub route: String,
    pub requests: usize,
    pub share: f64,
    pub expected: Option<f64>,
}

/// The routes over their declared 4xx share, by name.
pub fn unexpected(
    tallies: &BTreeMap<String, Tally>,
    expected: &BTreeMap<String, f64>,
) -> Vec<Unexpected> {
    tallies
        .iter()
        .filter_map(|(route, t)| {
            let e = expected.get(route).copied();
            over_expected(t.share_4xx(), e, t.requests).then(|| Unexpected {
                route: route.clone(),
                requests: t.requests,
                share: t.share_4xx(),
                expected: e,
            })
        })
        .collect()
}

impl fmt::Display for Unexpected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |r: f64| format!("{:.1} %", r * 100.0);
        write!(
            f,
            "route `{}`: {} of its {} measured requests were answered 4xx, ",
            self.route,
            pct(self.share),
            self.requests
        )?;
        match self.expected {
            Some(e) => write!(
                f,
                "over its declared `expected-4xx` of {} by more than {} (a point, or three standard errors of a share of {} requests); a 4xx beyond the declared share is not counted as served",
                pct(e),
                pct(tolerance(Some(e), self.requests)),
                self.requests
            ),
            None => write!(
                f,
                "and it declares none, so they are not counted as served: declare the share the seed data gives as the route's `expected-4xx`, or change the route so it asks what it may see"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_is_named_only_past_a_point_or_three_standard_errors_over_its_share() {
        assert!(!over_expected(0.01, None, 280), "1 % with none declared");
        assert!(over_expected(0.0101, None, 280));
        // 68.4 % of 280 requests: a standard error of 2.78 points, so 8.3 points of room.
        let t = tolerance(Some(0.684), 280);
        assert!(
            (t - 3.0 * (0.684f64 * 0.316 / 280.0).sqrt()).abs() < 1e-12,
            "{t}"
        );
        assert!(!over_expected(0.76, Some(0.684), 280));
        assert!(over_expected(0.77, Some(0.684), 280));
        // Over a million requests the point is the bound.
        assert!(over_expected(0.70, Some(0.684), 1_000_000));
        assert!(!over_expected(0.69, Some(0.684), 1_000_000));
        assert_eq!(tolerance(Some(0.5), 0), OVER_BY);
    }

    #[test]
    fn served_4xx_are_capped_at_the_declared_share() {
        assert_eq!(served_4xx(70, 100, Some(0.684)), 68.4);
        assert_eq!(served_4xx(50, 100, Some(0.684)), 50.0);
        assert_eq!(served_4xx(50, 100, None), 0.0);
    }

    #[test]
    fn the_unexpected_routes_are_those_over_their_share() {
        let mut post = Tally::default();
        for s in [404, 404, 200, 404, 200] {
            post.add(s);
        }
        let mut feed = Tally::default();
        for s in [200, 200, 404] {
            feed.add(s);
        }
        let tallies = BTreeMap::from([("feed".to_string(), feed), ("post".to_string(), post)]);
        let declared = BTreeMap::from([("post".to_string(), 0.6)]);
        let u = unexpected(&tallies, &declared);
        assert_eq!(u.len(), 1, "post at 60 % is as declared: {u:?}");
        assert_eq!((u[0].route.as_str(), u[0].requests), ("feed", 3));
        assert!(u[0].to_string().contains("declares none"), "{}", u[0]);
        // Declared none at all: its 60 % is named, with the bound it broke.
        let declared = BTreeMap::from([("post".to_string(), 0.0)]);
        let u = unexpected(&tallies, &declared);
        let names: Vec<&str> = u.iter().map(|u| u.route.as_str()).collect();
        assert_eq!(names, ["feed", "post"]);
        assert!(u[1].to_string().contains("by more than 1.0 %"), "{}", u[1]);
    }
}
