//! The load: workloads and their routes, rates, and profiles with the ramps they derive
//! their rates from (no cycles).

use super::{p, unknown, Findings};
use crate::plan::expand::profile_dependencies;
use crate::plan::model::{Plan, Profile, Workload};
use crate::plan::units::{Duration, Name, Rate};

/// The study's workload and every named one, each checked alike at its own path; a named
/// workload no profile sends is a warning, and a profile naming an undeclared one an error.
pub(super) fn workloads(plan: &Plan, f: &mut Findings) {
    workload(plan, &plan.workload, "workload", f);
    for (name, w) in &plan.workloads {
        workload(plan, w, &p(&["workloads", name.as_str()]), f);
        if !plan.profiles.values().any(|pr| pr.workload() == Some(name)) {
            f.warn(
                p(&["workloads", name.as_str()]),
                format!("no profile sends the workload `{name}`"),
            )
            .hint(format!(
                "name it in a profile (`workload: {name}`) or remove it"
            ));
        }
    }
    for (pname, profile) in &plan.profiles {
        if let Some(name) = profile.workload() {
            if !plan.workloads.contains_key(name) {
                let finding = unknown(
                    f,
                    p(&["profiles", pname.as_str(), profile.kind(), "workload"]),
                    "workload",
                    name.as_str(),
                    plan.workloads.keys().map(Name::as_str),
                );
                if plan.workloads.is_empty() {
                    finding.hint(
                        "declare it under `workloads:` (routes and ids, as in `workload:`), or remove the field to send the study's `workload`",
                    );
                }
            }
        }
    }
}

fn workload(plan: &Plan, w: &Workload, at: &str, f: &mut Findings) {
    if w.routes.is_empty() {
        f.error(p(&[at, "routes"]), "the workload needs at least one route");
    }
    for (name, r) in &w.routes {
        let base = p(&[at, "routes", name.as_str()]);
        if r.weight == 0 {
            f.error(
                format!("{base}.weight"),
                "a route's weight must be at least 1",
            )
            .hint("remove the route to leave it out of the mix");
        }
        if let Some(share) = r.expected_4xx.filter(|s| s.percent > 100.0) {
            f.error(
                format!("{base}.expected-4xx"),
                format!("a share of the route's requests cannot be {share}"),
            )
            .hint("give the share of its requests whose right answer is a 4xx, 0% to 100%");
        }
        if !r.path.starts_with('/') || r.path.contains(char::is_whitespace) {
            f.error(
                format!("{base}.path"),
                format!(
                    "expected a path starting with `/` and without spaces, found \"{}\"",
                    r.path
                ),
            );
        }
        for (field, text) in [("path", Some(r.path.as_str())), ("body", r.body.as_deref())] {
            for ph in placeholders(text.unwrap_or("")) {
                if !w.ids.contains_key(ph) {
                    unknown(
                        f,
                        format!("{base}.{field}"),
                        "id range",
                        ph,
                        w.ids.keys().map(Name::as_str),
                    );
                }
            }
        }
        for (i, link) in r.touches.iter().enumerate() {
            if !plan.topology.links.contains_key(link) {
                unknown(
                    f,
                    format!("{base}.touches[{i}]"),
                    "link",
                    link.as_str(),
                    plan.topology.links.keys().map(Name::as_str),
                );
            }
        }
    }
    for (name, r) in &w.ids {
        if r.min > r.max {
            f.error(
                p(&[at, "ids", name.as_str()]),
                format!("min {} is above max {}", r.min, r.max),
            );
        }
    }
}

/// `{name}` placeholders in a route's path or body: a `{`, a name, a `}`. Other braces
/// (JSON's) are text.
fn placeholders(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices('{') {
        let rest = &text[i + 1..];
        let len = rest
            .bytes()
            .take_while(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            .count();
        if len > 0 && rest[len..].starts_with('}') {
            out.push(&rest[..len]);
        }
    }
    out
}

fn rate(f: &mut Findings, plan: &Plan, path: String, r: &Rate) {
    match r {
        Rate::Fixed(v) if *v <= 0.0 => {
            f.error(
                path,
                format!("a rate must be above 0 arrivals per second, found {v}"),
            );
        }
        Rate::Fixed(_) => {}
        Rate::OfSaturation { share, profile } => {
            if share.percent <= 0.0 {
                f.error(path.clone(), "the share of saturation must be above 0%");
            }
            match plan.profiles.get(profile) {
                None => {
                    unknown(
                        f,
                        path,
                        "profile",
                        profile.as_str(),
                        plan.profiles.keys().map(Name::as_str),
                    );
                }
                Some(Profile::StepRamp { .. }) => {}
                Some(other) => {
                    f.error(path, format!("`{profile}` is a {} profile; saturation comes from a step-ramp profile", other.kind()));
                }
            }
        }
    }
}

pub(super) fn positive(f: &mut Findings, path: String, d: Duration) {
    if d.millis == 0 {
        f.error(path, "must be longer than 0s");
    }
}

pub(super) fn profiles(plan: &Plan, f: &mut Findings) {
    if plan.profiles.is_empty() {
        f.error("profiles", "the plan needs at least one profile");
    }
    for (name, prof) in &plan.profiles {
        let base = p(&["profiles", name.as_str(), prof.kind()]);
        for (field, r) in prof.rates() {
            rate(f, plan, format!("{base}.{field}"), r);
        }
        match prof {
            Profile::StepRamp {
                start,
                step,
                step_duration,
                max,
                ..
            } => {
                if !(step.is_finite() && *step > 0.0) {
                    f.error(
                        format!("{base}.step"),
                        format!("the step must be above 0 arrivals per second, found {step}"),
                    );
                }
                positive(f, format!("{base}.step-duration"), *step_duration);
                if step_duration.millis > 0
                    && step_duration.millis < plan.study.objective.window.millis
                {
                    f.warn(format!("{base}.step-duration"), format!(
                        "each step ({step_duration}) is shorter than the objective's window ({}), so no step is judged over a full window",
                        plan.study.objective.window
                    ));
                }
                if let (Rate::Fixed(s), Rate::Fixed(m)) = (start, max) {
                    if m < s {
                        f.warn(format!("{base}.max"), format!("the ramp's max ({m}) is below its start ({s}): it runs a single step"));
                    }
                }
            }
            Profile::Constant { duration, .. } | Profile::Soak { duration, .. } => {
                positive(f, format!("{base}.duration"), *duration);
            }
            Profile::Diurnal {
                period,
                peak,
                trough,
                cycles,
                ..
            } => {
                positive(f, format!("{base}.period"), *period);
                if trough.percent > peak.percent {
                    f.error(
                        format!("{base}.trough"),
                        format!("the trough ({trough}) is above the peak ({peak})"),
                    );
                }
                if peak.percent <= 0.0 {
                    f.error(format!("{base}.peak"), "the peak must be above 0%");
                }
                if *cycles == 0 {
                    f.error(format!("{base}.cycles"), "at least 1 cycle is needed");
                }
            }
        }
    }
    // Cycles among derived rates: a ramp whose bounds derive from a ramp that derives from it.
    for start in plan.profiles.keys() {
        let mut path = vec![start];
        if let Some(cycle) = find_cycle(plan, start, &mut path) {
            let names: Vec<&str> = cycle.iter().map(|n| n.as_str()).collect();
            f.error(
                p(&["profiles", start.as_str()]),
                format!("the profile depends on itself: {}", names.join(" → ")),
            )
            .hint("a rate such as \"70% of ramp\" must lead back to a ramp with fixed rates");
            break;
        }
    }
}

fn find_cycle<'a>(
    plan: &'a Plan,
    node: &'a Name,
    path: &mut Vec<&'a Name>,
) -> Option<Vec<&'a Name>> {
    let prof = plan.profiles.get(node)?;
    for dep in profile_dependencies(prof) {
        if dep == path[0] {
            let mut c = path.clone();
            c.push(dep);
            return Some(c);
        }
        if path.contains(&dep) || path.len() > plan.profiles.len() {
            continue;
        }
        path.push(dep);
        if let Some(c) = find_cycle(plan, dep, path) {
            return Some(c);
        }
        path.pop();
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn placeholders_inside_json_bodies_are_found() {
        assert_eq!(
            super::placeholders(r#"{"author": {viewer}, "n": {x-1}}"#),
            ["viewer", "x-1"]
        );
        assert_eq!(super::placeholders("/feed?viewer={viewer}"), ["viewer"]);
        assert!(super::placeholders("{}{ a}").is_empty());
    }
}
