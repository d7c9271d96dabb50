//! Whether a fault on a database link reached the traffic (docs/results.md, "Validity",
//! `fault-not-applied`), from links.csv's probes of that link through the fault proxy: a
//! proxy that accepted a toxic and ignored it, or kept a cut link open, yields valid-looking
//! runs and wrong answers, so the link's own round trip is the evidence.
//!
//! - added latency: the median round trip of the probes answered while the latency was on,
//!   less the median of those answered before the fault, is at least `LATENCY_SHARE` of the
//!   latency asked;
//! - a cut: no probe made while the link was down was answered.
//!
//! The fault's span is `effect::span_of`'s. A latency's probes are those started from
//! `SETTLE_NS` after it was applied and answered before it was cleared; a cut's, those
//! started before `CLEARING_NS` ahead of its clear (the link is opened again before the
//! clear is stamped). Fewer than `MIN_ANSWERED` probes answered on either side of a latency,
//! none answered before a cut (the probe could not reach the link) or none made during it,
//! and any other toxic, are not evaluated, and say so.

use super::effect::{span_of, Span, CHECK};
use super::window::{EventRow, Window};
use super::{Assessment, Evidence};
use crate::plan::model::Injection;
use crate::rundir::links::{LinkFigures, LinkRow, Outcome};

/// The share of the asked latency a link's round trip must gain.
pub const LATENCY_SHARE: f64 = 0.9;

/// A latency's first second is left out: a probe already sent when the toxic was added.
const SETTLE_NS: i128 = 1_000_000_000;

/// A cut's last half second is left out: the link is open again before its clear is stamped.
const CLEARING_NS: i128 = 500_000_000;

/// Probes answered on each side of a latency before medians are compared.
const MIN_ANSWERED: usize = 3;

/// The fault on a link, as the probes judge it.
enum Asked<'a> {
    Latency { link: &'a str, ms: f64 },
    Cut { link: &'a str },
}

/// Judges `inject` when it is a fault on a link, from `rows` (links.csv; `None` without the
/// file) and the run's events; the proxy's container names the evidence.
pub fn check_link(
    inject: &Injection,
    rows: Option<&[LinkRow]>,
    events: &[EventRow],
    proxy: Option<&str>,
    out: &mut Assessment,
) {
    let asked = match inject {
        Injection::LinkLatency { link, latency, .. } => Asked::Latency {
            link: link.as_str(),
            ms: latency.millis as f64,
        },
        Injection::LinkDown { link } => Asked::Cut {
            link: link.as_str(),
        },
        Injection::Toxic { .. } => {
            return say(
                out,
                proxy,
                &"a `toxic` fault has no probe rule (link-latency and link-down have)",
            )
        }
        _ => return,
    };
    let link = match asked {
        Asked::Latency { link, .. } | Asked::Cut { link } => link,
    };
    let Some(rows) = rows else {
        return say(
            out,
            proxy,
            &format!("link `{link}` was not probed (no links.csv)"),
        );
    };
    let span = match span_of(events) {
        Span::Closed(w) => w,
        Span::None => return say(out, proxy, &"the fault was never applied"),
        Span::Open { .. } => return say(out, proxy, &"the fault was still on when the run ended"),
    };
    let of_link: Vec<&LinkRow> = rows.iter().filter(|r| r.link == link).collect();
    if of_link.is_empty() {
        return say(
            out,
            proxy,
            &format!("link `{link}` has no probe in links.csv (only database links are probed)"),
        );
    }
    let (figures, shortfall) = match asked {
        Asked::Latency { ms, .. } => latency(link, ms, &of_link, span),
        Asked::Cut { .. } => cut(link, &of_link, span),
    };
    match shortfall {
        Err(why) => say(out, proxy, &why),
        Ok(None) => {}
        Ok(Some((figure, value, threshold, unit))) => out.evidence.push(Evidence {
            check: CHECK.into(),
            role: "fault-proxy".into(),
            container: proxy.map(str::to_string),
            figure,
            value,
            threshold,
            unit: unit.into(),
        }),
    }
    out.link = Some(figures);
}

type Shortfall = Result<Option<(String, f64, f64, &'static str)>, String>;

fn latency(link: &str, asked_ms: f64, rows: &[&LinkRow], span: Window) -> (LinkFigures, Shortfall) {
    let f = figures(link, Some(asked_ms), rows, span, |r| {
        r.unix_ns >= span.start_ns.saturating_add(SETTLE_NS)
            && r.unix_ns
                .saturating_add(i128::from(r.round_trip_ns.unwrap_or(0)))
                <= span.end_ns
    });
    let shortfall = match f.added_ms {
        _ if f.answered_before < MIN_ANSWERED || f.answered_during < MIN_ANSWERED => Err(format!(
            "{} and {} probes of link `{link}` answered before and during its latency, fewer \
             than {MIN_ANSWERED}",
            f.answered_before, f.answered_during
        )),
        Some(added) if added < LATENCY_SHARE * asked_ms => Ok(Some((
            format!("round trip added on link `{link}` while its latency was on (links.csv)"),
            added,
            LATENCY_SHARE * asked_ms,
            "ms",
        ))),
        _ => Ok(None),
    };
    (f, shortfall)
}

fn cut(link: &str, rows: &[&LinkRow], span: Window) -> (LinkFigures, Shortfall) {
    let f = figures(link, None, rows, span, |r| {
        r.unix_ns >= span.start_ns && r.unix_ns < span.end_ns.saturating_sub(CLEARING_NS)
    });
    let shortfall = if f.answered_before == 0 {
        Err(format!(
            "no probe of link `{link}` was answered before its cut: the probe could not reach it"
        ))
    } else if f.probes_during == 0 {
        Err(format!(
            "no probe of link `{link}` was made while it was cut"
        ))
    } else if f.answered_during > 0 {
        Ok(Some((
            format!("probes answered on link `{link}` while it was cut (links.csv)"),
            f.answered_during as f64,
            0.0,
            "probes",
        )))
    } else {
        Ok(None)
    };
    (f, shortfall)
}

/// The link's figures from its probes made before the fault and those `in_window` (the
/// fault's, as its kind judges it); the added round trip when a latency was `asked_ms`.
fn figures(
    link: &str,
    asked_ms: Option<f64>,
    rows: &[&LinkRow],
    span: Window,
    in_window: impl Fn(&LinkRow) -> bool,
) -> LinkFigures {
    let before: Vec<&LinkRow> = rows
        .iter()
        .copied()
        .filter(|r| r.unix_ns < span.start_ns)
        .collect();
    let during: Vec<&LinkRow> = rows.iter().copied().filter(|r| in_window(r)).collect();
    let (a, b) = (answered(&before), answered(&during));
    let (before_ns, during_ns) = (median_ns(&a), median_ns(&b));
    LinkFigures {
        link: link.into(),
        asked_ms,
        probes_before: before.len(),
        answered_before: a.len(),
        before_ms: before_ns.map(|x| x / 1e6),
        probes_during: during.len(),
        answered_during: b.len(),
        during_ms: during_ns.map(|x| x / 1e6),
        added_ms: asked_ms.and(before_ns.zip(during_ns).map(|(x, y)| (y - x) / 1e6)),
    }
}

/// The round trips, ns, of the answered probes.
fn answered(rows: &[&LinkRow]) -> Vec<u64> {
    rows.iter()
        .filter(|r| r.outcome == Outcome::Ok)
        .filter_map(|r| r.round_trip_ns)
        .collect()
}

/// The median (the mean of the middle two for an even count), ns.
fn median_ns(ns: &[u64]) -> Option<f64> {
    let mut v = ns.to_vec();
    v.sort_unstable();
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2] as f64),
        _ => Some((v[n / 2 - 1] as f64 + v[n / 2] as f64) / 2.0),
    }
}

fn say(out: &mut Assessment, proxy: Option<&str>, why: &dyn std::fmt::Display) {
    out.warnings.push(format!(
        "validity: {CHECK} of fault-proxy ({}) not evaluated: {why}",
        proxy.unwrap_or("-")
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::units::{Duration, Name};

    const S: i128 = 1_000_000_000;

    fn name(s: &str) -> Name {
        serde_json::from_value(serde_json::json!(s)).unwrap()
    }

    fn latency(ms: u64) -> Injection {
        Injection::LinkLatency {
            link: name("db"),
            latency: Duration { millis: ms },
            jitter: Duration { millis: 0 },
        }
    }

    /// The fault on from second 10 to second 20.
    fn events() -> Vec<EventRow> {
        vec![
            EventRow {
                wall_ns: 10 * S,
                event: "fault-applied".into(),
            },
            EventRow {
                wall_ns: 20 * S,
                event: "fault-cleared".into(),
            },
        ]
    }

    /// A probe a second from 0 to 29 on `link`: `during(t)` gives the fault's seconds' ones.
    fn probes(link: &str, during: impl Fn(i128) -> (Outcome, Option<u64>)) -> Vec<LinkRow> {
        (0..30)
            .map(|t| {
                let (outcome, rt) = if (10..20).contains(&t) {
                    during(t)
                } else {
                    (Outcome::Ok, Some(1_000_000))
                };
                LinkRow {
                    unix_ns: t * S,
                    offset_s: t as f64,
                    tick: t as u64,
                    link: link.into(),
                    outcome,
                    round_trip_ns: rt,
                    detail: String::new(),
                }
            })
            .collect()
    }

    fn judge(inject: &Injection, rows: Option<&[LinkRow]>, events: &[EventRow]) -> Assessment {
        let mut out = Assessment::default();
        check_link(inject, rows, events, Some("proxy-c"), &mut out);
        out
    }

    #[test]
    fn a_latency_is_shown_by_the_round_trip_it_added_or_its_absence_is_evidence() {
        let slowed = probes("db", |_| (Outcome::Ok, Some(101_000_000)));
        let out = judge(&latency(100), Some(&slowed), &events());
        assert_eq!((out.evidence.len(), out.warnings.len()), (0, 0), "{out:?}");
        let f = out.link.unwrap();
        assert_eq!(f.added_ms, Some(100.0));
        // The fault's first second is left out; the rest of its ten, and the ten before.
        assert_eq!((f.answered_before, f.answered_during), (10, 9));

        // A proxy that took the toxic and ignored it.
        let ignored = probes("db", |_| (Outcome::Ok, Some(1_200_000)));
        let out = judge(&latency(100), Some(&ignored), &events());
        let e = &out.evidence[0];
        assert_eq!(
            (e.check.as_str(), e.role.as_str(), e.container.as_deref()),
            (CHECK, "fault-proxy", Some("proxy-c"))
        );
        assert!((e.value - 0.2).abs() < 1e-9 && e.threshold == 90.0, "{e:?}");
        assert_eq!(out.link.unwrap().added_ms, Some(0.2));

        // Short of 90 % of the asked: 89 ms of 100.
        let short = probes("db", |_| (Outcome::Ok, Some(90_000_000)));
        assert_eq!(
            judge(&latency(100), Some(&short), &events()).evidence.len(),
            1
        );
        // Another link's probes say nothing of this one's.
        let other = probes("cache", |_| (Outcome::Ok, Some(101_000_000)));
        let out = judge(&latency(100), Some(&other), &events());
        assert!(out.evidence.is_empty() && out.link.is_none());
        assert!(
            out.warnings[0].contains("link `db` has no probe in links.csv"),
            "{out:?}"
        );
        // Too few answered is said, with the figures kept.
        let few: Vec<LinkRow> = slowed.iter().filter(|r| r.tick < 12).cloned().collect();
        let out = judge(&latency(100), Some(&few), &events());
        assert!(out.evidence.is_empty());
        assert!(
            out.warnings[0].contains("10 and 1 probes of link `db` answered"),
            "{out:?}"
        );
        assert_eq!(out.link.unwrap().answered_during, 1);
    }

    #[test]
    fn a_cut_is_shown_by_refused_probes_and_an_answer_during_it_is_evidence() {
        let cut = Injection::LinkDown { link: name("db") };
        let refused = probes("db", |_| (Outcome::Refused, None));
        let out = judge(&cut, Some(&refused), &events());
        assert_eq!((out.evidence.len(), out.warnings.len()), (0, 0), "{out:?}");
        assert_eq!(out.link.unwrap().probes_during, 10);

        // One answer in the cut's last half second is the link opened again, not evidence.
        let mut late = refused.clone();
        late.push(LinkRow {
            unix_ns: 20 * S - S / 4,
            ..late[5].clone()
        });
        assert!(judge(&cut, Some(&late), &events()).evidence.is_empty());

        let kept_open = probes("db", |t| match t {
            12 | 13 => (Outcome::Ok, Some(1_000_000)),
            _ => (Outcome::Closed, None),
        });
        let out = judge(&cut, Some(&kept_open), &events());
        assert_eq!(
            (out.evidence[0].value, out.evidence[0].unit.as_str()),
            (2.0, "probes")
        );

        // A probe that never reached the link before the cut cannot show it.
        let unreachable = probes("db", |_| (Outcome::Timeout, None))
            .into_iter()
            .map(|r| LinkRow {
                outcome: Outcome::Timeout,
                round_trip_ns: None,
                ..r
            })
            .collect::<Vec<_>>();
        let out = judge(&cut, Some(&unreachable), &events());
        assert!(out.evidence.is_empty());
        assert!(out.warnings[0].contains("could not reach it"), "{out:?}");
    }

    #[test]
    fn what_cannot_be_judged_is_said() {
        let rows = probes("db", |_| (Outcome::Ok, Some(101_000_000)));
        type Case<'a> = (
            Injection,
            Option<&'a [LinkRow]>,
            Vec<EventRow>,
            &'static str,
        );
        let cases: [Case; 4] = [
            (
                latency(100),
                None,
                events(),
                "was not probed (no links.csv)",
            ),
            (latency(100), Some(&rows), vec![], "never applied"),
            (
                latency(100),
                Some(&rows),
                events()[..1].to_vec(),
                "still on when the run ended",
            ),
            (
                Injection::Toxic {
                    link: name("db"),
                    toxic_type: crate::plan::model::ToxicType::Bandwidth,
                    stream: Default::default(),
                    toxicity: 1.0,
                    attributes: Default::default(),
                },
                Some(&rows),
                events(),
                "has no probe rule",
            ),
        ];
        for (inject, rows, events, says) in cases {
            let out = judge(&inject, rows, &events);
            assert!(out.evidence.is_empty(), "{out:?}");
            assert!(out.warnings[0].contains(says), "{says}: {out:?}");
            assert!(
                out.warnings[0].starts_with("validity: fault-not-applied of fault-proxy (proxy-c)")
            );
        }
        let none = judge(
            &Injection::KillReplica { replica: 1 },
            Some(&rows),
            &events(),
        );
        assert_eq!(none, Assessment::default());
    }
}
