//! The matrix: what each entry selects exists, each fault fits its profile, and the rates
//! derived from a ramp have that ramp in the study.

use std::collections::HashSet;

use super::caps::caps_within_host;
use super::{unknown, Context, Findings};
use crate::plan::expand::{
    profile_dependencies, profile_length, resolve_contenders, selects, ResolvedContender,
};
use crate::plan::model::{Fault, Matrix, MatrixEntry, Plan, Profile};
use crate::plan::units::{Duration, Name};

pub(super) fn matrix(plan: &Plan, ctx: &Context, f: &mut Findings) {
    let m = &plan.matrix;
    if m.repetitions == 0 {
        f.error("matrix.repetitions", "at least 1 repetition is needed");
    } else if m.repetitions < 3 {
        f.warn(
            "matrix.repetitions",
            format!(
                "{} repetition(s): with fewer than 3, no difference can be called significant",
                m.repetitions
            ),
        );
    }
    if let Some(e) = m
        .smallest_effect
        .filter(|e| !(e.percent > 0.0 && e.percent <= 100.0))
    {
        f.error(
            "matrix.smallest-effect",
            format!("expected an effect above 0% and at most 100%, found {e}"),
        )
        .hint("10% asks to show one arm's median 1.1 times another's");
    }
    if m.runs.is_empty() {
        f.error("matrix.runs", "the matrix needs at least one entry");
    }
    let contenders = resolve_contenders(plan);
    let mut names: Vec<&str> = plan.contenders.keys().map(Name::as_str).collect();
    for c in &contenders {
        if !names.contains(&c.name.as_str()) {
            names.push(&c.name);
        }
    }
    let mut seen: HashSet<(String, &Name, Option<&Name>)> = HashSet::new();
    for (i, e) in m.runs.iter().enumerate() {
        let base = format!("matrix.runs[{i}]");
        let profile = plan.profiles.get(&e.profile);
        if profile.is_none() {
            unknown(
                f,
                format!("{base}.profile"),
                "profile",
                e.profile.as_str(),
                plan.profiles.keys().map(Name::as_str),
            );
        }
        let fault = e.fault.as_ref().and_then(|n| {
            let x = plan.faults.get(n);
            if x.is_none() {
                unknown(
                    f,
                    format!("{base}.fault"),
                    "fault",
                    n.as_str(),
                    plan.faults.keys().map(Name::as_str),
                );
            }
            x
        });
        selection_known(&base, e, &names, f);
        let picked: Vec<&ResolvedContender> = contenders
            .iter()
            .filter(|c| {
                e.contenders
                    .as_ref()
                    .is_none_or(|sel| sel.iter().any(|s| selects(s, c)))
            })
            .collect();
        for c in &picked {
            if !seen.insert((c.name.clone(), &e.profile, e.fault.as_ref())) {
                f.error(
                    base.clone(),
                    format!("`{}` runs this (profile, fault) pair twice", c.name),
                )
                .hint("use `repetitions` to repeat runs");
            }
        }
        if let (Some(prof), Some(fault)) = (profile, fault) {
            fault_fits(&base, e, prof, fault, f);
        }
        if let Some(prof) = profile {
            rates_have_their_ramps(&base, m, e, prof, &picked, f);
        }
    }
    if let Some(host) = ctx.host_cores {
        caps_within_host(&contenders, host, f);
    }
}

/// Every contender an entry's `contenders` names exists, and the list selects one.
fn selection_known(base: &str, e: &MatrixEntry, names: &[&str], f: &mut Findings) {
    let Some(sel) = &e.contenders else { return };
    if sel.is_empty() {
        f.error(
            format!("{base}.contenders"),
            "an empty list selects no contender",
        )
        .hint("leave `contenders` out to select every contender");
    }
    for (j, s) in sel.iter().enumerate() {
        if !names.contains(&s.as_str()) {
            unknown(
                f,
                format!("{base}.contenders[{j}]"),
                "contender",
                s,
                names.iter().copied(),
            );
        }
    }
}

/// A fault's window (at + duration + observe) fits in its profile's measured phase.
fn fault_fits(base: &str, e: &MatrixEntry, prof: &Profile, fault: &Fault, f: &mut Findings) {
    let (_, Some(measured)) = profile_length(prof) else {
        return;
    };
    let end = fault.at.millis + fault.duration.millis + fault.observe.millis;
    if end > measured.millis {
        f.error(format!("{base}.fault"), format!(
            "the fault `{}` needs {} (at + duration + observe) but the profile `{}` measures for {}",
            e.fault.as_ref().map(Name::as_str).unwrap_or(""),
            Duration { millis: end },
            e.profile,
            measured
        )).hint("lengthen the profile or move the fault earlier");
    }
}

/// A derived rate needs its ramp, faultless, for the same contender.
fn rates_have_their_ramps(
    base: &str,
    m: &Matrix,
    e: &MatrixEntry,
    prof: &Profile,
    picked: &[&ResolvedContender],
    f: &mut Findings,
) {
    for dep in profile_dependencies(prof) {
        for c in picked {
            let has_ramp = m.runs.iter().any(|o| {
                &o.profile == dep
                    && o.fault.is_none()
                    && o.contenders
                        .as_ref()
                        .is_none_or(|sel| sel.iter().any(|s| selects(s, c)))
            });
            if !has_ramp {
                f.error(
                    format!("{base}.profile"),
                    format!(
                    "`{}` takes its rate from `{dep}`, but `{}` never runs `{dep}` without a fault",
                    e.profile, c.name
                ),
                )
                .hint(format!(
                    "add `- profile: {dep}` to matrix.runs for this contender"
                ));
            }
        }
    }
}
