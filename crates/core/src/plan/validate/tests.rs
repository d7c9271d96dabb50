//! Validation's findings on plans, valid and refused, at their paths.

use super::Context;

const MINIMAL: &str = include_str!("../../../../../tests/plans/valid/minimal.yaml");
const DB_CAP: &str = "  database: {cpus: 0.5, memory: 512MiB}\n";

/// The minimal plan without `caps.database`, with a second contender `other`; `extra`
/// is added to `svc`, `other_extra` to `other`.
fn two_contenders_without_database_cap(extra: &str, other_extra: &str) -> String {
    let text = MINIMAL.replace(DB_CAP, "");
    let svc = "    readiness: /readyz\n    liveness: /healthz\n";
    let other = format!(
        "{svc}{extra}  other:\n    image: example/other:1\n    port: 8080\n{svc}{other_extra}"
    );
    assert!(text.contains(svc));
    text.replacen(svc, &other, 1)
}

fn errors(text: &str) -> Vec<String> {
    let ctx = Context {
        host_cores: None,
        exists: None,
    };
    match crate::plan::load_str("t.yaml", text, &ctx) {
        Ok(_) => Vec::new(),
        Err(crate::plan::LoadError::Invalid { diagnostics, .. }) => {
            diagnostics.iter().map(|d| d.to_string()).collect()
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_database_cap_may_come_from_every_contender_instead_of_the_study() {
    let cap = "    caps: {database: {cpus: 0.5, memory: 512MiB}}\n";
    assert_eq!(
        errors(&two_contenders_without_database_cap(cap, cap)),
        Vec::<String>::new()
    );
    let one = errors(&two_contenders_without_database_cap(cap, ""));
    assert_eq!(one.len(), 1, "{one:?}");
    assert!(
            one[0].contains(
                "caps: the topology declares a database but `caps.database` is missing for `other` (service `database`)"
            ),
            "{one:?}"
        );
    let none = errors(&two_contenders_without_database_cap("", ""));
    assert!(
            none[0].contains(
                "caps: the topology declares a database but `caps.database` is missing (service `database`)"
            ),
            "{none:?}"
        );
}

#[test]
fn no_database_no_database_cap() {
    let text = MINIMAL
        .replace(DB_CAP, "")
        .replace(
            "    env:\n      DB: \"{{ links.db.host }}:{{ links.db.port }}\"\n      POOL: 8\n",
            "",
        )
        .replace(
            "    database: {kind: database, image: postgres:16, port: 5432}\n",
            "",
        )
        .replace("    db: {service: database, listen: 15432}\n", "")
        .replace(", touches: [db]", "")
        .replace(
            "    inject: {link-down: {link: db}}",
            "    inject: {kill-replica: {replica: 1}}",
        )
        .replace("  services:\n", "  services: {}\n")
        .replace("  links:\n", "  links: {}\n");
    assert!(!text.contains("database"), "{text}");
    assert_eq!(errors(&text), Vec::<String>::new());
}

/// The minimal plan with `block` (an `analysis:` section) before its matrix.
fn with_analysis(block: &str) -> String {
    assert!(MINIMAL.contains("\nmatrix:\n"));
    MINIMAL.replacen("\nmatrix:\n", &format!("\n{block}matrix:\n"), 1)
}

fn load(text: &str) -> crate::plan::LoadedPlan {
    let ctx = Context {
        host_cores: None,
        exists: None,
    };
    crate::plan::load_str("t.yaml", text, &ctx).unwrap_or_else(|e| match e {
        crate::plan::LoadError::Invalid { diagnostics, .. } => {
            panic!("{diagnostics:?}")
        }
        e => panic!("{e}"),
    })
}

#[test]
fn analysis_defaults_when_the_section_or_a_field_is_absent() {
    use crate::plan::model::{Analysis, Recovery};
    assert!(!MINIMAL.contains("analysis"));
    assert_eq!(load(MINIMAL).plan.analysis, Analysis::default());
    assert_eq!(
        load(&with_analysis("analysis: {}\n")).plan.analysis,
        Analysis::default()
    );
    let r = load(&with_analysis("analysis:\n  recovery: {hold: 5s}\n"))
        .plan
        .analysis
        .recovery;
    assert_eq!(
        r,
        Recovery {
            hold: crate::plan::units::Duration::from_secs(5),
            ..Recovery::default()
        }
    );
}

#[test]
fn analysis_values_are_parsed() {
    let text = with_analysis(
            "analysis:\n  recovery:\n    window: 1m30s\n    step: 250ms\n    hold: 1.5s\n    throughput-tolerance: 2.5%\n    latency-tolerance: 0%\n",
        );
    let r = load(&text).plan.analysis.recovery;
    assert_eq!(r.window_ns(), 90_000_000_000);
    assert_eq!(r.step_ns(), 250_000_000);
    assert_eq!(r.hold_ns(), 1_500_000_000);
    assert_eq!(r.throughput_fraction(), 0.025);
    assert_eq!(r.latency_fraction(), 0.0);
    // A hold of 0s asks for the one window at t; 100% is the widest tolerance.
    let r = load(&with_analysis(
        "analysis:\n  recovery: {hold: 0s, throughput-tolerance: 100%, latency-tolerance: 100%}\n",
    ))
    .plan
    .analysis
    .recovery;
    assert_eq!((r.hold_ns(), r.throughput_fraction()), (0, 1.0));
    // The step may equal the window.
    load(&with_analysis(
        "analysis:\n  recovery: {window: 2s, step: 2s, hold: 4s}\n",
    ));
}

/// Each run's id and run hash, in expansion order.
fn run_hashes(l: &crate::plan::LoadedPlan) -> Vec<(String, String)> {
    crate::plan::expand(&l.plan)
        .into_iter()
        .map(|r| (r.id, r.run_hash))
        .collect()
}

#[test]
fn analysis_enters_the_plan_hash_as_written_and_no_run_hash() {
    let absent = load(MINIMAL);
    assert_eq!(
        absent.plan_hash,
        crate::plan::hash::plan_hash(&crate::plan::yaml::parse(MINIMAL).unwrap()).unwrap(),
        "the plan hash is the document's, whatever feedbench defaults"
    );
    let changed = load(&with_analysis(
        "analysis:\n  recovery: {window: 5s, throughput-tolerance: 1%}\n",
    ));
    assert_ne!(absent.plan_hash, changed.plan_hash);
    assert_eq!(run_hashes(&absent), run_hashes(&changed));
    assert!(!run_hashes(&absent).is_empty());
    // The defaults written out are the same settings, and a different document.
    let written = load(&with_analysis(
            "analysis:\n  recovery: {window: 10s, step: 100ms, hold: 10s, throughput-tolerance: 5%, latency-tolerance: 10%}\n",
        ));
    assert_eq!(written.plan.analysis, absent.plan.analysis);
    assert_ne!(written.plan_hash, absent.plan_hash);
    assert_eq!(run_hashes(&written), run_hashes(&absent));
}

#[test]
fn the_smallest_effect_enters_the_plan_hash_and_no_run_hash() {
    let absent = load(MINIMAL);
    let text = MINIMAL.replace(
        "  repetitions: 3\n",
        "  repetitions: 3\n  smallest-effect: 10%\n",
    );
    assert_ne!(text, MINIMAL);
    let declared = load(&text);
    assert_eq!(
        declared.plan.matrix.smallest_effect.unwrap().fraction(),
        0.1
    );
    assert_ne!(absent.plan_hash, declared.plan_hash);
    assert_eq!(run_hashes(&absent), run_hashes(&declared));
    let above = text.replace("10%", "100.5%");
    assert_eq!(
            errors(&above),
            [format!(
                "t.yaml:{}:20: matrix.smallest-effect: expected an effect above 0% and at most 100%, found 100.5%\n  hint: 10% asks to show one arm's median 1.1 times another's",
                above.lines().position(|l| l.contains("smallest-effect")).unwrap() + 1
            )]
        );
}

#[test]
fn analysis_errors_name_the_line_the_field_and_the_fix() {
    let at = |block: &str| errors(&with_analysis(block));
    assert_eq!(
            at("analysis:\n  recovery:\n    window: 0s\n"),
            ["t.yaml:53:13: analysis.recovery.window: the window must be longer than 0s\n  hint: the rule judges windows of this length after a fault, e.g. `10s`"]
        );
    assert_eq!(
            at("analysis:\n  recovery:\n    step: 0s\n"),
            ["t.yaml:53:11: analysis.recovery.step: the step must be longer than 0s\n  hint: candidate instants and windows lie on a grid of this step, e.g. `100ms`"]
        );
    assert_eq!(
            at("analysis:\n  recovery:\n    step: 11s\n    hold: 0s\n"),
            ["t.yaml:53:11: analysis.recovery.step: the step (11s) is longer than the window (10s), so the windows would leave gaps between them\n  hint: make the step at most 10s"]
        );
    assert_eq!(
            at("analysis:\n  recovery:\n    step: 3s\n"),
            ["t.yaml:53:5: analysis.recovery.hold: the hold (10s) is not a whole multiple of the step (3s): the rule checks the windows at t + j·step for j = 0 … hold/step\n  hint: write 9s or 12s, or change the step"],
            "a defaulted hold points at the mapping that leaves it out"
        );
    let both =
        at("analysis:\n  recovery:\n    throughput-tolerance: 101%\n    latency-tolerance: 200%\n");
    assert_eq!(
            both,
            [
                "t.yaml:53:27: analysis.recovery.throughput-tolerance: expected a tolerance from 0% to 100%, found 101%\n  hint: 0% asks for the control's throughput exactly",
                "t.yaml:54:24: analysis.recovery.latency-tolerance: expected a tolerance from 0% to 100%, found 200%\n  hint: 0% asks for a p95 and p99 at most the control's",
            ]
        );
    let unknown = at("analysis:\n  recovery:\n    hold-for: 5s\n");
    assert_eq!(unknown.len(), 1);
    assert!(
            unknown[0].starts_with("t.yaml:53:5: analysis.recovery.hold-for: unknown field `hold-for`\n  hint: did you mean `hold`?"),
            "{unknown:?}"
        );
}

#[test]
fn an_observe_window_shorter_than_window_plus_hold_is_warned_about() {
    // The minimal plan's fault observes for 20s, exactly the default window + hold.
    assert!(MINIMAL.contains("    observe: 20s\n"));
    assert!(load(MINIMAL).warnings.is_empty());
    let short = load(&MINIMAL.replace("    observe: 20s\n", "    observe: 19.9s\n"));
    let w: Vec<String> = short.warnings.iter().map(|d| d.to_string()).collect();
    assert_eq!(
            w,
            ["t.yaml:49:14: faults.db-cut.observe: the recovery rule needs 20s after the fault clears (analysis.recovery window + hold), but the observe window is 19900ms: no run of this fault can be found recovered from its clearing\n  hint: make `observe` at least 20s, or shorten `analysis.recovery.window` or `hold`"]
        );
    let shorter_rule = load(
        &with_analysis("analysis:\n  recovery: {hold: 9.9s}\n")
            .replace("    observe: 20s\n", "    observe: 19.9s\n"),
    );
    assert!(shorter_rule.warnings.is_empty());
}

#[test]
fn a_profile_whose_requests_in_flight_outgrow_the_load_generators_memory_is_warned_about() {
    // 30/s, requests up to the 5 s timeout: 155 VUs, about 72 MiB, within 256MiB.
    assert!(load(MINIMAL).warnings.is_empty());
    // 500/s: k6 may need 49.6 + 137.5 + 2505 VUs × 90 KiB, about 407 MiB; within the
    // objective (505 VUs) 231 MiB would still fit.
    let past_knee = MINIMAL.replace("max: 30}", "max: 500}");
    let w: Vec<String> = load(&past_knee)
        .warnings
        .iter()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].starts_with("t.yaml:42:5: profiles.ramp: at 500 arrivals/s with every request taking the 5 s timeout, k6 may keep 2505 requests in flight: about 407 MiB"), "{w:?}");
    assert!(
        w[0].contains("above the load generator's 256 MiB cap; past the knee"),
        "{w:?}"
    );
    assert!(w[0].contains("use `kind: native` (18 MiB"), "{w:?}");
    // The baseline's 70% of the ramp is bounded by the ramp's max.
    assert!(
        w[1].contains("profiles.baseline: at 350 arrivals/s"),
        "{w:?}"
    );
    // 1,000/s: even requests within the objective (1,005 VUs) would not fit.
    let fast = MINIMAL.replace("max: 30}", "max: 1000}");
    let w: Vec<String> = load(&fast).warnings.iter().map(|d| d.to_string()).collect();
    assert!(
        w[0].contains("even with requests within the objective"),
        "{w:?}"
    );
    // The native generator holds the same load in a few tens of MiB.
    let native = fast.replace(
        "load-generator: {image: grafana/k6:0.54.0}",
        "load-generator: {kind: native, image: feedbench/load:latest}",
    );
    assert!(load(&native).warnings.is_empty());
}

#[test]
fn max_lag_belongs_to_the_native_load_generator_and_is_above_zero() {
    let k6 = MINIMAL.replace(
        "load-generator: {image: grafana/k6:0.54.0}",
        "load-generator: {image: grafana/k6:0.54.0, max-lag: 100ms}",
    );
    assert_eq!(
            errors(&k6),
            ["t.yaml:27:55: topology.load-generator.max-lag: max-lag is feedbench-load's bound on a start's lag; k6 has none\n  hint: remove max-lag, or set `kind: native`"]
        );
    let zero = MINIMAL.replace(
        "load-generator: {image: grafana/k6:0.54.0}",
        "load-generator: {kind: native, image: feedbench/load:latest, max-lag: 0s}",
    );
    assert_eq!(errors(&zero).len(), 1, "{:?}", errors(&zero));
    assert!(errors(&zero)[0].contains("max-lag must be above 0"));
    let fine = MINIMAL.replace(
        "load-generator: {image: grafana/k6:0.54.0}",
        "load-generator: {kind: native, image: feedbench/load:latest, max-lag: 50ms}",
    );
    assert!(errors(&fine).is_empty());
    let unknown = MINIMAL.replace(
        "load-generator: {image: grafana/k6:0.54.0}",
        "load-generator: {kind: wrk, image: grafana/k6:0.54.0}",
    );
    assert!(
        errors(&unknown)[0].contains("kind"),
        "{:?}",
        errors(&unknown)
    );
}

#[test]
fn max_in_flight_is_at_least_one_for_either_generator() {
    for lg in [
        "{image: grafana/k6:0.54.0, max-in-flight: 20}",
        "{kind: native, image: feedbench/load:latest, max-in-flight: 20}",
    ] {
        let fine = MINIMAL.replace("{image: grafana/k6:0.54.0}", lg);
        assert!(errors(&fine).is_empty(), "{:?}", errors(&fine));
        // It changes the load, so every run's hash, and only when set: plans without
        // it keep theirs.
        let without = load(&fine.replace(", max-in-flight: 20", ""));
        let (with, other) = (
            run_hashes(&load(&fine)),
            run_hashes(&load(
                &fine.replace("max-in-flight: 20", "max-in-flight: 21"),
            )),
        );
        let hashes = |r: &[(String, String)]| r.iter().map(|(_, h)| h.clone()).collect::<Vec<_>>();
        assert!(hashes(&with)
            .iter()
            .all(|h| !hashes(&run_hashes(&without)).contains(h)));
        assert!(hashes(&with).iter().all(|h| !hashes(&other).contains(h)));
        if lg.contains("k6") {
            assert_eq!(run_hashes(&without), run_hashes(&load(MINIMAL)));
        }
        let zero = fine.replace("max-in-flight: 20", "max-in-flight: 0");
        assert_eq!(errors(&zero).len(), 1, "{:?}", errors(&zero));
        assert!(
            errors(&zero)[0].contains(
                "topology.load-generator.max-in-flight: max-in-flight must be at least 1"
            ),
            "{:?}",
            errors(&zero)
        );
    }
}

/// The minimal plan with a named workload `hot` and `profile_extra` added to the
/// constant profile's fields.
fn with_hot_workload(hot: &str, profile_extra: &str) -> String {
    let text = MINIMAL
        .replace(
            "profiles:\n",
            &format!("workloads:\n  hot:\n{hot}profiles:\n"),
        )
        .replace(
            "constant: {rate: 70% of ramp, duration: 60s}",
            &format!("constant: {{rate: 70% of ramp, duration: 60s{profile_extra}}}"),
        );
    assert!(text.contains("workloads:"));
    text
}

const HOT: &str = "    routes:\n      feed: {path: \"/feed?viewer={viewer}\", weight: 1, touches: [db]}\n    ids:\n      viewer: {min: 1, max: 10}\n";

fn diagnostics(text: &str) -> (Vec<String>, Vec<String>) {
    let ctx = Context {
        host_cores: None,
        exists: None,
    };
    match crate::plan::load_str("t.yaml", text, &ctx) {
        Ok(loaded) => (
            Vec::new(),
            loaded.warnings.iter().map(|d| d.to_string()).collect(),
        ),
        Err(crate::plan::LoadError::Invalid { diagnostics, .. }) => (
            diagnostics.iter().map(|d| d.to_string()).collect(),
            Vec::new(),
        ),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_profile_sends_a_named_workload() {
    let text = with_hot_workload(HOT, ", workload: hot");
    let (errors, warnings) = diagnostics(&text);
    assert_eq!(errors, Vec::<String>::new());
    assert!(
        !warnings.iter().any(|w| w.contains("workload")),
        "{warnings:?}"
    );
    let loaded = crate::plan::load_str(
        "t.yaml",
        &text,
        &Context {
            host_cores: None,
            exists: None,
        },
    )
    .unwrap();
    let plan = &loaded.plan;
    assert_eq!(
        plan.workload_of(&plan.profiles["baseline"]).ids["viewer"].max,
        10
    );
    assert_eq!(
        plan.workload_of(&plan.profiles["ramp"]).ids["viewer"].max,
        100
    );
}

#[test]
fn a_profile_naming_an_undeclared_workload_is_refused_with_the_names_it_could_mean() {
    // The error comes first; the warning that `hot` is sent by no profile follows it.
    let (errors, _) = diagnostics(&with_hot_workload(HOT, ", workload: hots"));
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].starts_with("t.yaml:50:")
            && errors[0].contains("profiles.baseline.constant.workload")
            && errors[0].contains("unknown workload `hots`")
            && errors[0].contains("did you mean `hot`?"),
        "{errors:?}"
    );
    let (errors, _) = diagnostics(&MINIMAL.replace(
        "constant: {rate: 70% of ramp, duration: 60s}",
        "constant: {rate: 70% of ramp, duration: 60s, workload: hot}",
    ));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("declare it under `workloads:`"),
        "{errors:?}"
    );
}

#[test]
fn a_named_workload_is_checked_like_the_studys_at_its_own_path() {
    let bad = HOT
        .replace("weight: 1, touches: [db]", "weight: 0, touches: [dbb]")
        .replace("{viewer}", "{viewr}")
        .replace("min: 1, max: 10", "min: 11, max: 10");
    let (errors, _) = diagnostics(&with_hot_workload(&bad, ", workload: hot"));
    let all = errors.join("\n");
    for expected in [
        "workloads.hot.routes.feed.weight",
        "workloads.hot.routes.feed.touches[0]",
        "workloads.hot.routes.feed.path",
        "workloads.hot.ids.viewer",
    ] {
        assert!(all.contains(expected), "{expected} in {all}");
    }
    assert_eq!(errors.len(), 4, "{all}");
}

#[test]
fn a_named_workload_no_profile_sends_is_a_warning() {
    let (errors, warnings) = diagnostics(&with_hot_workload(HOT, ""));
    assert_eq!(errors, Vec::<String>::new());
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("workloads.hot")
                && w.contains("no profile sends the workload `hot`")),
        "{warnings:?}"
    );
}

#[test]
fn a_placement_is_one_of_its_words_named_at_its_line() {
    let ok = format!("{MINIMAL}placement: {{load-generator: apart}}\n");
    assert_eq!(errors(&ok), Vec::<String>::new());
    let bad = format!("{MINIMAL}placement: {{load-generator: apartt}}\n");
    let e = errors(&bad);
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].contains("placement.load-generator") && e[0].contains("did you mean `apart`?"),
        "{e:?}"
    );
}
