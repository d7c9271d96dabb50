//! A pilot's sizing in words: the table `feedbench pilot` prints, and the warnings
//! `feedbench plan` gives from the newest pilot's `sizing.json`.

use std::path::Path;

use super::{newest, shortfalls, Shortfall, Sizing, Spread, POWER};

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

/// The warning for a figure whose registered repetitions fall short, naming where the
/// sizing came from.
pub fn warning(
    sizing: &Sizing,
    file: &Path,
    short: &Shortfall<'_>,
    registered: u32,
    effect: f64,
) -> String {
    format!(
        "matrix.repetitions: {registered} repetition(s) fall short for {}: its spread across pilot {}'s {} repetitions (`{}`; sd of ln {:.3}) needs {} of each arm to show the plan's smallest effect, {}%, in {:.0}% of studies at level {:.4} ({} comparison(s))",
        figure(short.spread),
        sizing.pilot,
        sizing.repetitions,
        file.display(),
        short.spread.log_sd.unwrap_or_default(),
        short.needed,
        ryu_js::Buffer::new().format(effect * 100.0),
        POWER * 100.0,
        sizing.level,
        sizing.comparisons.max(1),
    )
}

/// What `feedbench plan` says of the newest pilot of the study in `study_dir`: a warning
/// per figure whose `repetitions` fall short of the `effect` (none without an effect or a
/// pilot), or one naming a damaged `sizing.json`.
pub fn plan_warnings(study_dir: &Path, repetitions: u32, effect: Option<f64>) -> Vec<String> {
    let (Some(effect), Some((file, found))) = (effect, newest(study_dir)) else {
        return Vec::new();
    };
    match found {
        Ok(sizing) => shortfalls(&sizing, repetitions, effect)
            .iter()
            .map(|short| warning(&sizing, &file, short, repetitions, effect))
            .collect(),
        Err(why) => vec![format!(
            "`{}` cannot be read ({why}): the repetitions are not sized; run `feedbench pilot` again",
            file.display()
        )],
    }
}

/// The pilot's sizing as a table: each figure's median, spread and needed repetitions.
pub fn render(s: &Sizing) -> String {
    use std::fmt::Write;
    let test = if s.paired { "signed-rank" } else { "rank-sum" };
    let mut out = format!(
        "pilot {}: {} repetition(s) of each arm; {test} tests at level {:.4} ({} comparison(s) in the plan's report)\n",
        s.pilot,
        s.repetitions,
        s.level,
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
