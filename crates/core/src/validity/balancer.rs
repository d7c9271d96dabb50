//! Whether the balancer took a killed or stopped replica out (docs/results.md, "Validity",
//! `fault-not-applied`): the replica's `down` reads show the engine stopped it
//! (`validity::effect`); health.csv's DOWN for its server shows the traffic was moved off
//! it, which is what a kill is for. A replica the engine restarted at once, or a balancer
//! that kept sending to a dead server, would otherwise yield a valid run of a fault that did
//! not happen to the traffic.
//!
//! The DOWN is looked for from the fault's first `fault-applied` (a stop's SIGTERM: a
//! draining replica may fail its checks before it exits) to `SLACK_NS` after the replica
//! could first pass a check again: its `fault-cleared`, or later, as long after its
//! `replica-starting` as readiness.csv shows it failing the path HAProxy checks
//! (`unready_until`): a restarted replica fails its checks while it boots. A server whose
//! last state before the fault was DOWN was out already, and that shows it too. The
//! balancer needs `fall` failed checks: the kill may land just after a check passed, the
//! next starts `inter` later, and a check of a container that is gone fails only when it
//! times out, `inter` again (haproxy.cfg sets no `timeout check`); with `SCHEDULING_NS` for
//! HAProxy's own scheduling under its CPU cap, a replica failing its checks for less than
//! `fall × 2 × inter + 0.5 s` may be back before its server could be taken out, and is not
//! evaluated, saying so.

use super::effect::{span_of, Effect, Span, Target, CHECK};
use super::window::{EventRow, Window};
use super::{Assessment, Evidence};
use crate::plan::model::HealthCheck;
use crate::rundir::health::HealthRow;
use crate::rundir::readiness::{booting_ns, ReadyAttempt};

/// HAProxy's log line is stamped when the engine receives it, a little after the mark.
const SLACK_NS: i128 = 1_000_000_000;

/// HAProxy's own scheduling on a loaded host: a quota of 0.25 CPU throttles it for up to
/// 75 ms in every 100.
const SCHEDULING_NS: i128 = 500_000_000;

/// Until when a restarted replica failed its checks, on the events' clock: its last
/// `replica-starting` (the probe's first attempt is made as it is logged) plus how long
/// readiness.csv shows it failing them after that (`readiness::booting_ns`, on the fault
/// proxy's clock, which may not be the events': only a length crosses between them).
/// `None` without either.
pub fn unready_until(attempts: &[ReadyAttempt], server: &str, events: &[EventRow]) -> Option<i128> {
    let starting = events
        .iter()
        .filter(|e| e.event == "replica-starting")
        .map(|e| e.wall_ns)
        .max()?;
    Some(starting.saturating_add(booting_ns(attempts, server)?))
}

/// Judges a kill or stop of `target` from health.csv's `rows` and `unready_until_ns`
/// (`unready_until` of readiness.csv, `None` without one; `Err` says why either could not be
/// read) and the run's events; `balancer` is the balancer's container, for the evidence.
/// Other faults, and a fault whose span `effect` could not place (it says so), are left alone.
pub fn check_taken_out(
    target: &Target,
    rows: Result<&[HealthRow], String>,
    events: &[EventRow],
    unready_until_ns: Result<Option<i128>, String>,
    check: &HealthCheck,
    balancer: Option<&str>,
    out: &mut Assessment,
) {
    if target.effect != Some(Effect::Down) {
        return;
    }
    let say = |out: &mut Assessment, why: &dyn std::fmt::Display| {
        out.warnings.push(format!(
            "validity: {CHECK} of balancer ({}) for {} not evaluated: {why}",
            balancer.unwrap_or("-"),
            target.role
        ))
    };
    let Span::Closed(mut span) = span_of(events) else {
        return;
    };
    // The replica failed its checks until it passed one again; without readiness.csv's word
    // (or with a damaged one), until its clear.
    span.end_ns = span
        .end_ns
        .max(unready_until_ns.clone().ok().flatten().unwrap_or(i128::MIN));
    let needed_ns = i128::from(check.fall)
        .saturating_mul(2 * i128::from(check.inter.millis))
        .saturating_mul(1_000_000)
        .saturating_add(SCHEDULING_NS);
    if span.end_ns.saturating_sub(span.start_ns) < needed_ns {
        return say(
            out,
            &format!(
                "down or not ready {:.1} s, shorter than the {:.1} s the balancer needs to \
                 take a server out (fall {} × 2 × inter {} ms + 0.5 s)",
                span.len_s(),
                needed_ns as f64 / 1e9,
                check.fall,
                check.inter.millis
            ),
        );
    }
    let rows = match rows {
        Ok(rows) => rows,
        Err(why) => return say(out, &why),
    };
    if taken_out(rows, &target.role, events, span) {
        return;
    }
    // A DOWN may have come while the replica booted, which a damaged readiness.csv hides.
    if let Err(why) = unready_until_ns {
        return say(
            out,
            &format!(
                "no DOWN by 1 s after the clear, and how long the replica booted is unknown: {why}"
            ),
        );
    }
    out.evidence.push(Evidence {
        check: CHECK.into(),
        role: "balancer".into(),
        container: balancer.map(str::to_string),
        figure: format!(
            "DOWN marks of {} in health.csv while it was killed or stopped",
            target.role
        ),
        value: 0.0,
        threshold: 1.0,
        unit: "marks".into(),
    });
}

/// Whether health.csv shows `server` out of the traffic: a DOWN from the fault's first
/// `fault-applied` to `SLACK_NS` after `span`'s end, or DOWN already as the fault came.
fn taken_out(rows: &[HealthRow], server: &str, events: &[EventRow], span: Window) -> bool {
    let from = events
        .iter()
        .filter(|e| e.event == "fault-applied" && e.wall_ns <= span.start_ns)
        .map(|e| e.wall_ns)
        .min()
        .unwrap_or(span.start_ns);
    let until = span.end_ns.saturating_add(SLACK_NS);
    // The server's rows in time order.
    let mut of_server: Vec<&HealthRow> =
        rows.iter().filter(|r| r.server_name() == server).collect();
    of_server.sort_by_key(|r| r.wall_ns);
    // Already out when the fault came (its last state before it DOWN): no traffic reached it.
    let out_before = of_server
        .iter()
        .rev()
        .find(|r| r.wall_ns < from)
        .is_some_and(|r| r.state == "DOWN");
    out_before
        || of_server
            .iter()
            .any(|r| r.state == "DOWN" && (from..=until).contains(&r.wall_ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::units::Duration;

    const S: i128 = 1_000_000_000;

    fn target(effect: Effect) -> Target {
        Target {
            effect: Some(effect),
            role: "replica-1".into(),
            container: "r1-c".into(),
        }
    }

    fn ev(t: i128, event: &str) -> EventRow {
        EventRow {
            wall_ns: t * S,
            event: event.into(),
        }
    }

    fn down(t: i128, server: &str) -> HealthRow {
        HealthRow {
            wall_ns: t * S,
            server: server.into(),
            state: "DOWN".into(),
        }
    }

    fn judge(rows: Result<&[HealthRow], String>, events: &[EventRow], fall: u32) -> Assessment {
        judge_ready(rows, events, Ok(None), fall)
    }

    fn judge_ready(
        rows: Result<&[HealthRow], String>,
        events: &[EventRow],
        unready_until_ns: Result<Option<i128>, String>,
        fall: u32,
    ) -> Assessment {
        let check = HealthCheck {
            inter: Duration { millis: 1000 },
            fall,
            rise: 2,
        };
        let mut out = Assessment::default();
        check_taken_out(
            &target(Effect::Down),
            rows,
            events,
            unready_until_ns,
            &check,
            Some("lb-c"),
            &mut out,
        );
        out
    }

    #[test]
    fn a_kill_is_shown_by_its_server_marked_down_or_its_absence_is_evidence() {
        let kill = [ev(10, "fault-applied"), ev(15, "fault-cleared")];
        let seen = [down(12, "replica-1")];
        assert_eq!(judge(Ok(&seen), &kill, 2), Assessment::default());
        // A mark logged just after the restart was stamped still counts; a bystander's,
        // or one from before the fault, does not.
        assert!(judge(Ok(&[down(16, "replica-1")]), &kill, 2)
            .evidence
            .is_empty());
        // A server already out when the kill came stays out: shown.
        assert!(judge(Ok(&[down(9, "replica-1")]), &kill, 2)
            .evidence
            .is_empty());
        // So is one named with its backend.
        assert!(judge(Ok(&[down(12, "replicas/replica-1")]), &kill, 2)
            .evidence
            .is_empty());
        let back_up = [
            down(9, "replica-1"),
            HealthRow {
                wall_ns: 9 * S + 1,
                server: "replica-1".into(),
                state: "UP".into(),
            },
        ];
        for rows in [&[down(12, "replica-2")][..], &back_up[..]] {
            let out = judge(Ok(rows), &kill, 2);
            let e = &out.evidence[0];
            assert_eq!(
                (e.check.as_str(), e.role.as_str(), e.container.as_deref()),
                (CHECK, "balancer", Some("lb-c"))
            );
            assert_eq!((e.value, e.threshold, e.unit.as_str()), (0.0, 1.0, "marks"));
            assert!(e.figure.contains("replica-1"), "{e:?}");
        }
        // A stop: the DOWN of a draining replica before its exit (the second applied) counts.
        let stop = [
            ev(10, "fault-applied"),
            ev(12, "fault-applied"),
            ev(17, "fault-cleared"),
        ];
        assert!(judge(Ok(&[down(11, "replica-1")]), &stop, 2)
            .evidence
            .is_empty());
    }

    #[test]
    fn what_cannot_be_judged_is_said_or_left_to_the_samples_check() {
        let kill = [ev(10, "fault-applied"), ev(13, "fault-cleared")];
        // 3 s down against fall 2 × 2 × 1 s + 0.5 s.
        let out = judge(Ok(&[]), &kill, 2);
        assert!(out.evidence.is_empty());
        assert!(
            out.warnings[0].starts_with(
                "validity: fault-not-applied of balancer (lb-c) for replica-1 not evaluated: \
                 down or not ready 3.0 s, shorter than the 4.5 s"
            ),
            "{out:?}"
        );
        let long = [ev(10, "fault-applied"), ev(15, "fault-cleared")];
        let out = judge(Err("`health.csv` is missing".into()), &long, 2);
        assert!(out.evidence.is_empty() && out.warnings[0].ends_with("is missing"));
        // A fault never cleared is the samples check's to say.
        assert_eq!(judge(Ok(&[]), &kill[..1], 2), Assessment::default());
        // Only a kill or stop is the balancer's to show.
        let mut out = Assessment::default();
        let check = HealthCheck::default();
        check_taken_out(
            &target(Effect::Frozen),
            Ok(&[]),
            &kill,
            Ok(None),
            &check,
            None,
            &mut out,
        );
        assert_eq!(out, Assessment::default());
    }

    fn attempt(start_ms: i128, status: u16, error: &str) -> ReadyAttempt {
        ReadyAttempt {
            start_ns: start_ms * 1_000_000,
            end_ns: start_ms * 1_000_000 + 2_000_000,
            server: "replica-1".into(),
            status,
            error: error.into(),
        }
    }

    #[test]
    fn a_restarted_replica_fails_its_checks_until_it_could_pass_one() {
        // Started at 13 s on the events' clock; the probe's clock is 100 s behind. Refused
        // from its first attempt to 2.2 s later, then 204 (a check passes on 2xx or 3xx),
        // in any order; a later refusal does not count, nor another server's.
        let starting = [
            ev(10, "fault-applied"),
            ev(13, "replica-starting"),
            ev(13, "fault-cleared"),
        ];
        let mut booting = vec![
            attempt(-84_700, 204, ""),
            attempt(-87_000, 0, "connect: refused"),
            attempt(-84_800, 503, ""),
            attempt(-84_600, 0, "connect: refused"),
        ];
        let at = |attempts: &[ReadyAttempt]| unready_until(attempts, "replica-1", &starting);
        assert_eq!(at(&booting), Some(15_200_000_000));
        assert_eq!(at(&booting[..1]), None);
        assert_eq!(at(&[]), None);
        assert_eq!(unready_until(&booting, "replica-2", &starting), None);
        assert_eq!(unready_until(&booting, "replica-1", &starting[..1]), None);
        // An attempt the probe gave up on says nothing: HAProxy's check waits longer.
        booting.push(attempt(-84_900, 0, "no connection within 100 ms"));
        assert_eq!(at(&booting), Some(15_200_000_000));
        // Never ready: unready at least until its last failed attempt.
        let never = [attempt(-87_000, 0, "refused"), attempt(-86_900, 500, "")];
        assert_eq!(at(&never), Some(13_100_000_000));
        // 3 s down alone is too short at fall 2; with 2.2 s of booting it is judged, and
        // a DOWN marked while it booted (past the clear's 1 s slack) counts.
        let booted = Ok(at(&booting));
        let late = [HealthRow {
            wall_ns: 15 * S + 500_000_000,
            server: "replica-1".into(),
            state: "DOWN".into(),
        }];
        let kill = &starting[..];
        assert_eq!(
            judge_ready(Ok(&late), kill, booted.clone(), 2),
            Assessment::default()
        );
        let out = judge_ready(Ok(&[]), kill, booted, 2);
        assert!(out.warnings.is_empty(), "{out:?}");
        assert_eq!(out.evidence.len(), 1, "{out:?}");
        // Readiness before the clear (no such run, but no file bends the span backwards).
        let early = judge_ready(Ok(&[]), kill, Ok(Some(11 * S)), 2);
        assert!(early.evidence.is_empty() && early.warnings.len() == 1);
        // A damaged readiness.csv: a DOWN by the clear still shows it; none is not evidence.
        let long = [ev(10, "fault-applied"), ev(15, "fault-cleared")];
        let damaged = || Err("`readiness.csv` line 2: bad".to_string());
        let seen = [down(12, "replica-1")];
        assert_eq!(
            judge_ready(Ok(&seen), &long, damaged(), 2),
            Assessment::default()
        );
        let out = judge_ready(Ok(&[]), &long, damaged(), 2);
        assert!(out.evidence.is_empty(), "{out:?}");
        assert!(
            out.warnings[0].contains("how long the replica booted is unknown: `readiness.csv`"),
            "{out:?}"
        );
    }
}
