//! A pilot's sizing in words: the table `feedbench pilot` prints, and the warnings
//! `feedbench plan` gives from the newest pilot's `sizing.json`.

use std::path::Path;

use super::{comparisons, design, level, newest, shortfalls, Shortfall, Sizing, Spread, POWER};
use crate::plan::expand::RunSpec;
use crate::plan::model::Plan;

/// A spread's figure in words: `latency_p99 of feed-rs on baseline + db-latency`.
pub fn figure(s: &Spread) -> String {
    let mut name = s.metric.clone();
    let qualifiers: Vec<&str> = [s.definition.as_str(), s.container.as_str()]
        .into_iter()
        .filter(|q| !q.is_empty())
        .collect();
    if !qualifiers.is_empty() {
        name = format!("{name} ({})", qualifiers.join(", "));
    }
    let mut on = s.profile.clone();
    if !s.fault.is_empty() {
        on = format!("{on} + {}", s.fault);
    }
    format!("{name} of {} on {on}", s.arm)
}

/// A level as a person reads it: four decimals, or three significant digits below 0.001.
pub fn level_text(level: f64) -> String {
    if level >= 0.001 {
        format!("{level:.4}")
    } else {
        format!("{level:.2e}")
    }
}

/// Where a plan's warnings about its repetitions come from: the newest pilot's sizing, in
/// `file`, judged at the current plan's `comparisons` (their level) and pairing.
pub struct Judged<'a> {
    pub sizing: &'a Sizing,
    pub file: &'a Path,
    pub comparisons: usize,
    /// Whether the plan changed since the pilot ran (its hash differs).
    pub changed: bool,
}

/// The warning for a figure whose registered repetitions fall short, naming where the
/// sizing came from.
pub fn warning(j: &Judged<'_>, short: &Shortfall<'_>, registered: u32, effect: f64) -> String {
    let s = j.sizing;
    format!(
        "matrix.repetitions: {registered} repetition(s) fall short for {}: its spread across pilot {}'s {} repetitions (`{}`{}; sd of ln {:.3}) needs {} of each arm to show the plan's smallest effect, {}%, in {:.0}% of studies at level {} ({} comparison(s))",
        figure(short.spread),
        s.pilot,
        s.repetitions,
        j.file.display(),
        if j.changed { ", of an earlier version of the plan" } else { "" },
        short.spread.log_sd.unwrap_or_default(),
        short.needed,
        ryu_js::Buffer::new().format(effect * 100.0),
        POWER * 100.0,
        level_text(level(j.comparisons)),
        j.comparisons.max(1),
    )
}

/// What `feedbench plan` says of the newest pilot of the study in `study_dir`: the
/// warnings [`judge`] gives of its sizing (none without an effect or a pilot), or one naming
/// a damaged `sizing.json`.
pub fn plan_warnings(
    study_dir: &Path,
    plan: &Plan,
    plan_hash: &str,
    runs: &[RunSpec],
) -> Vec<String> {
    if plan.matrix.smallest_effect.is_none() {
        return Vec::new();
    }
    match newest(study_dir) {
        None => Vec::new(),
        Some((file, Ok(sizing))) => judge(&sizing, &file, plan, plan_hash, runs),
        Some((file, Err(why))) => vec![format!(
            "`{}` cannot be read ({why}): the repetitions are not sized; run `feedbench pilot` again",
            file.display()
        )],
    }
}

/// A warning per figure of `sizing` (read from `file`) whose registered repetitions fall
/// short of the plan's smallest effect, at the level and under the test the current plan
/// (hashed `plan_hash`, expanded into `runs`) asks; none when the plan declares no effect.
pub fn judge(
    sizing: &Sizing,
    file: &Path,
    plan: &Plan,
    plan_hash: &str,
    runs: &[RunSpec],
) -> Vec<String> {
    let Some(effect) = plan.matrix.smallest_effect.map(|e| e.fraction()) else {
        return Vec::new();
    };
    let judged = Judged {
        sizing,
        file,
        comparisons: comparisons(plan, runs),
        changed: sizing.plan_hash != plan_hash,
    };
    let repetitions = plan.matrix.repetitions;
    shortfalls(sizing, repetitions, effect, design(plan, runs))
        .iter()
        .map(|short| warning(&judged, short, repetitions, effect))
        .collect()
}

/// The pilot's sizing as a table: each figure's median, spread and needed repetitions.
pub fn render(s: &Sizing) -> String {
    use std::fmt::Write;
    let test = if s.paired { "signed-rank" } else { "rank-sum" };
    let mut out = format!(
        "pilot {}: {} repetition(s) of each arm; {test} tests at level {} ({} comparison(s) in the plan's report)\n",
        s.pilot,
        s.repetitions,
        level_text(s.level),
        s.comparisons.max(1)
    );
    match s.smallest_effect {
        Some(e) => {
            let _ = writeln!(
                out,
                "repetitions of each arm needed to show a {}% effect in {:.0}% of studies:",
                ryu_js::Buffer::new().format(e * 100.0),
                POWER * 100.0
            );
        }
        None => out.push_str(
            "the plan declares no smallest effect: add `matrix.smallest-effect` (e.g. 10%) to size its repetitions\n",
        ),
    }
    let _ = writeln!(
        out,
        "{:>12}  {:>8}  {:>11}  figure",
        "median", "sd of ln", "needed"
    );
    for sp in &s.spreads {
        let median = sp.median.map_or("-".into(), |m| format!("{m:.4}"));
        let sd = sp.log_sd.map_or("-".into(), |v| format!("{v:.3}"));
        let needed = match (&sp.needed, &sp.why_not) {
            (Some(n), _) => n.to_string(),
            (None, Some(_)) => "no spread".into(),
            (None, None) => "-".into(),
        };
        let why = sp
            .why_not
            .as_ref()
            .map_or(String::new(), |w| format!(" ({w})"));
        let _ = writeln!(
            out,
            "{median:>12}  {sd:>8}  {needed:>11}  {}{why}",
            figure(sp)
        );
    }
    for l in &s.left_out {
        let _ = writeln!(out, "left out: {l}");
    }
    out
}
