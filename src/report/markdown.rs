//! report.md: the study's answers as Markdown tables, from the report's rows (the same
//! text, rendered, is the body of index.html).

use std::fmt::Write as _;

use feedbench_core::analysis::routes;
use feedbench_core::report::comparison::HEADLINE;
use feedbench_core::report::ramp::DEFINITIONS;
use feedbench_core::report::rows::{number, Row, BELOW_FIRST_STEP};
use feedbench_core::report::run::RunFigures;
use feedbench_core::report::summary::{Across, SummaryRow};
use feedbench_core::report::usage::REPLICAS;
use feedbench_core::report::StudyReport;

/// A lookup over one run's rows.
struct Rows<'a>(&'a [Row]);

impl<'a> Rows<'a> {
    fn find(
        &self,
        metric: &str,
        definition: &str,
        container: &str,
        step: Option<f64>,
    ) -> Option<&'a Row> {
        self.0.iter().find(|r| {
            r.metric == metric
                && r.definition == definition
                && r.container == container
                && r.step_rate == step
                && r.second.is_none()
        })
    }

    /// The value with its unit scaled for reading, or the note.
    fn show(&self, metric: &str, definition: &str, container: &str, step: Option<f64>) -> String {
        show(self.find(metric, definition, container, step))
    }
}

fn round(v: f64) -> String {
    let digits = if v.abs() >= 100.0 {
        1
    } else if v.abs() >= 1.0 {
        2
    } else {
        4
    };
    number((v * 10f64.powi(digits)).round() / 10f64.powi(digits))
}

fn show(row: Option<&Row>) -> String {
    let Some(r) = row else {
        return "–".into();
    };
    match r.value {
        None => format!("({})", r.note),
        Some(v) => {
            let text = match r.unit.as_str() {
                "ratio" => format!("{} %", round(v * 100.0)),
                "bytes" => format!("{} MiB", round(v / 1_048_576.0)),
                "count" => number(v),
                u => format!("{} {u}", round(v)),
            };
            if r.note.is_empty() {
                text
            } else if r.note == BELOW_FIRST_STEP {
                format!("below {text}")
            } else {
                format!("{text} ({})", r.note)
            }
        }
    }
}

fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(out, "|{}|", vec!["---"; header.len()].join("|"));
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out.push('\n');
}

fn run_name(r: &RunFigures) -> String {
    format!("`{}`", r.key.run)
}

/// The whole report.md.
pub fn render(report: &StudyReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Report: study `{}`\n", report.study);
    let verdict = if report.audit.undeclared == 0 {
        "clean (no undeclared departure)".to_string()
    } else {
        format!(
            "{} undeclared departures (see `feedbench audit`)",
            report.audit.undeclared
        )
    };
    let _ = writeln!(
        out,
        "Plan `{}`, plan hash `{}`, registered in commit `{}`. Audit: {verdict}; {} declared departures, {} gaps.\n",
        report.plan_file, report.plan_hash, report.registration, report.audit.declared, report.audit.gaps
    );
    let _ = writeln!(
        out,
        "{} runs analysed, {} left out, {} gaps. Every figure is defined in docs/analysis.md and recomputed from the raw CSVs by `feedbench report --verify`. Latency figures are requests.csv's `duration_ms`; the objective counts no-response and 5xx answers as failed. {}\n",
        report.runs.len(),
        report.excluded.len(),
        report.gaps.len(),
        judged_by(&report.runs)
    );
    super::verdicts::section(&mut out, report);
    ramps(&mut out, &report.runs);
    runs(&mut out, report);
    routes(&mut out, &report.runs);
    faults(&mut out, report);
    path(&mut out, report);
    repetitions(&mut out, report);
    left_out(&mut out, report);
    hours(&mut out, report);
    out
}

/// Which rule the runs' objective windows (verdicts, steps, detection) were judged by, with
/// how many runs each (docs/analysis.md, "Windows by schedule").
fn judged_by(runs: &[RunFigures]) -> String {
    use feedbench_core::analysis::judging::Rule;
    let count = |rule: Rule| runs.iter().filter(|r| r.frame.judged_by == rule).count();
    let (by_schedule, by_start) = (count(Rule::BySchedule), count(Rule::ByStart));
    let schedule = "by schedule (each request at its scheduled instant where the load generator records one, its latency from there; every dropped start failed)";
    let start = "by start (each request at its start, by `duration_ms`; dropped starts in no window), as runs recorded before the rule was";
    match (by_schedule, by_start) {
        (0, 0) => String::new(),
        (_, 0) => format!("Objective windows are judged {schedule}."),
        (0, _) => format!("Objective windows are judged {start}."),
        (s, t) => {
            format!("Objective windows are judged {schedule} in {s} runs, and {start} in {t}.")
        }
    }
}

/// A run's windows verdict with how many windows breached, and the manifest's recorded
/// verdict beside it where they differ.
fn verdict_cell(r: &RunFigures, x: &Rows<'_>) -> String {
    let computed = r.objective_verdict();
    let mut cell = match computed {
        None if !r.frame.steps.is_empty() => "per step".to_string(),
        None => "–".to_string(),
        Some(v) => format!(
            "{v} ({} of {} windows breached)",
            x.show("objective_windows_breached", "", "", None),
            x.show("objective_windows", "", "", None)
        ),
    };
    let recorded = r.recorded_objective.as_deref();
    if recorded != computed {
        let _ = write!(cell, "; recorded: {}", recorded.unwrap_or("none"));
    }
    cell
}

/// The appendix: where the study's wall time went (what `feedbench status` says).
fn hours(out: &mut String, report: &StudyReport) {
    let Some(t) = report.time.filter(|t| t.total_s > 0.0) else {
        return;
    };
    let _ = writeln!(
        out,
        "## Appendix: where the study's time went

From the journal and each run's events (docs/results.md, \"Where the time went\", under the journal): {} s in all; the harness's overhead, everything but warm-up and measuring, {} % of it.\n",
        round(t.total_s),
        round(100.0 * t.overhead())
    );
    let rows: Vec<Vec<String>> = t
        .parts()
        .iter()
        .map(|(name, s)| {
            vec![
                name.to_string(),
                format!("{} s", round(*s)),
                format!("{} %", round(100.0 * s / t.total_s)),
            ]
        })
        .collect();
    table(out, &["part", "time", "share"], &rows);
}

fn ramps(out: &mut String, runs: &[RunFigures]) {
    let ramps: Vec<&RunFigures> = runs.iter().filter(|r| !r.frame.steps.is_empty()).collect();
    if ramps.is_empty() {
        return;
    }
    out.push_str("## Saturation\n\nUnder five definitions side by side (docs/analysis.md, \"Step ramps\"): the last step rate that met each before its first sustained breach (a breach the `confirm-steps` after it confirmed), and, where it differs, before its first breach; a breach a met step followed is a transient.\n\n");
    let mut rows = Vec::new();
    for r in &ramps {
        let x = Rows(&r.rows);
        for d in DEFINITIONS {
            rows.push(vec![
                run_name(r),
                d.to_string(),
                x.show("saturation", d, "", None),
                x.show("sustained_breach", d, "", None),
                at_first_breach(&x, d),
                x.show("transient_steps", d, "", None),
            ]);
        }
    }
    table(
        out,
        &[
            "run",
            "definition",
            "saturation",
            "sustained breach",
            "at the first breach",
            "transients",
        ],
        &rows,
    );
    for r in &ramps {
        let x = Rows(&r.rows);
        let _ = writeln!(out, "### Steps of {}\n", run_name(r));
        let mut header = vec!["step rate", "offered", "achieved", "p99", "failed"];
        header.extend(DEFINITIONS);
        let rows: Vec<Vec<String>> = r
            .frame
            .steps
            .iter()
            .map(|s| {
                let st = Some(s.rate);
                let mut row = vec![
                    format!("{}/s", number(s.rate)),
                    x.show("step_offered_rate", "", "", st),
                    x.show("step_achieved_rate", "", "", st),
                    x.show("step_p99", "", "", st),
                    x.show("step_failed_share", "", "", st),
                ];
                for d in DEFINITIONS {
                    let met = x.find("step_met", d, "", st).and_then(|r| r.value);
                    row.push(match met {
                        Some(v) if v > 0.0 => "met".into(),
                        Some(_) => "**not met**".into(),
                        None => "–".into(),
                    });
                }
                row
            })
            .collect();
        table(out, &header, &rows);
        transient_line(out, r);
        if let Some(step) = r
            .rows
            .iter()
            .find(|row| row.definition == "first-breach")
            .and_then(|row| row.step_rate)
        {
            let _ = writeln!(out, "Where the CPU was at {}/s (the first breaching step under `objective-windows`, or the last step):\n", number(step));
            usage_table(out, r, "first-breach", Some(step));
        }
    }
}

/// The saturation read at the first breach and that breach, where they differ from the
/// sustained reading; "same" where they do not.
fn at_first_breach(x: &Rows<'_>, d: &str) -> String {
    let value = |m: &str| x.find(m, d, "", None).map(|r| (r.value, r.note.clone()));
    if value("saturation_before_first_breach") == value("saturation")
        && value("first_breach") == value("sustained_breach")
    {
        return "same".into();
    }
    format!(
        "{} (first breach {})",
        x.show("saturation_before_first_breach", d, "", None),
        x.show("first_breach", d, "", None)
    )
}

/// The transients under `objective-windows`, in words: each breaching step before the
/// sustained breach, and the p99 and failed share that broke it.
fn transient_line(out: &mut String, r: &RunFigures) {
    let x = Rows(&r.rows);
    let d = DEFINITIONS[0];
    let sustained = x
        .find("sustained_breach", d, "", None)
        .and_then(|r| r.value);
    let transients: Vec<String> = r
        .frame
        .steps
        .iter()
        .map(|s| Some(s.rate))
        .take_while(|st| sustained.is_none_or(|b| *st != Some(b)))
        .filter(|&st| x.find("step_met", d, "", st).and_then(|r| r.value) == Some(0.0))
        .map(|st| {
            format!(
                "{}/s (p99 {}, failed {})",
                number(st.unwrap_or_default()),
                x.show("step_p99", "", "", st),
                x.show("step_failed_share", "", "", st)
            )
        })
        .collect();
    if !transients.is_empty() {
        let _ = writeln!(
            out,
            "Transient under `{d}` (a met step followed within `confirm-steps`; the ramp went on): {}.\n",
            transients.join("; ")
        );
    }
}

fn usage_table(out: &mut String, r: &RunFigures, definition: &str, step: Option<f64>) {
    let x = Rows(&r.rows);
    let mut rows: Vec<Vec<String>> = r
        .frame
        .caps
        .iter()
        .map(|(name, cap)| {
            vec![
                format!("`{name}`"),
                cap.role.clone(),
                format!("{}", number(cap.cpus)),
                x.show("cpu_mean_pct_of_cap", definition, name, step),
                x.show("cpu_p95_pct_of_cap", definition, name, step),
                x.show("memory_working_set_mean", definition, name, step),
                x.show("memory_working_set_peak", definition, name, step),
                x.show("memory_rss_peak", definition, name, step),
            ]
        })
        .collect();
    rows.push(vec![
        format!("`{REPLICAS}`"),
        "sum".into(),
        "".into(),
        "".into(),
        "".into(),
        x.show("memory_working_set_mean", definition, REPLICAS, step),
        x.show("memory_working_set_peak", definition, REPLICAS, step),
        x.show("memory_rss_peak", definition, REPLICAS, step),
    ]);
    table(
        out,
        &[
            "container",
            "role",
            "cap (cores)",
            "CPU mean, % of cap",
            "CPU p95, % of cap",
            "working set mean",
            "working set peak",
            "anonymous RSS peak",
        ],
        &rows,
    );
}

/// Each run's measured phase route by route: the rows with `definition = route:<name>`,
/// a route more than a point over its declared 4xx share marked and named below.
fn routes(out: &mut String, runs: &[RunFigures]) {
    let mut rows = Vec::new();
    let mut over = Vec::new();
    for r in runs {
        let x = Rows(&r.rows);
        let names = r
            .rows
            .iter()
            .filter(|row| row.metric == "requests" && row.step_rate.is_none())
            .filter_map(|row| row.definition.strip_prefix("route:"))
            // The measured phase's own route rows, not a span's or a status's.
            .filter(|name| !name.contains(' '));
        for name in names {
            let d = format!("route:{name}");
            let mut row = vec![run_name(r), format!("`{name}`")];
            for m in [
                "requests",
                "achieved_rate",
                "latency_p50",
                "latency_p99",
                "status_2xx_share",
                "status_4xx_share",
                "expected_4xx_share",
                "status_5xx_share",
                "failed_share",
            ] {
                row.push(x.show(m, &d, "", None));
            }
            let value = |m: &str| x.find(m, &d, "", None).and_then(|r| r.value);
            if let (Some(share), Some(n)) = (value("status_4xx_share"), value("requests")) {
                if routes::over_expected(share, value("expected_4xx_share"), n as usize) {
                    row[7].push_str(" ⚠");
                    over.push(format!("`{name}` in {}", run_name(r)));
                }
            }
            rows.push(row);
        }
    }
    if rows.is_empty() {
        return;
    }
    out.push_str("### The measured phase by route\n\nEach route's requests apart (docs/analysis.md, \"The measured phase\"): a route the others hide shows here. A 4xx share over the route's declared `expected-4xx` (none declared: 0 %) by more than a point, or three standard errors of a share of its requests, is marked ⚠; only the declared share of 4xx counts as served work (docs/analysis.md, \"Expected 4xx\").\n\n");
    table(
        out,
        &[
            "run",
            "route",
            "requests",
            "achieved",
            "p50",
            "p99",
            "2xx",
            "4xx",
            "4xx declared",
            "5xx",
            "failed",
        ],
        &rows,
    );
    if !over.is_empty() {
        let _ = writeln!(
            out,
            "\n**4xx over the declared share:** {}.\n",
            over.join(", ")
        );
    }
}

fn runs(out: &mut String, report: &StudyReport) {
    out.push_str("## Every run's measured phase\n\n");
    let rows: Vec<Vec<String>> = report
        .runs
        .iter()
        .map(|r| {
            let x = Rows(&r.rows);
            let mut row = vec![run_name(r)];
            for m in [
                "offered_rate",
                "achieved_rate",
                "latency_p50",
                "latency_p90",
                "latency_p95",
                "latency_p99",
                "latency_p99_9",
                "latency_max",
                "failed_share",
                "no_response_share",
                "status_5xx_share",
                "status_4xx_share",
            ] {
                row.push(x.show(m, "", "", None));
            }
            row.push(x.show("requests_per_core_second", "measured", REPLICAS, None));
            row.push(x.show("memory_working_set_peak", "measured", REPLICAS, None));
            row.push(verdict_cell(r, &x));
            row
        })
        .collect();
    table(
        out,
        &[
            "run",
            "offered",
            "achieved",
            "p50",
            "p90",
            "p95",
            "p99",
            "p99.9",
            "max",
            "failed",
            "no response",
            "5xx",
            "4xx",
            "requests per replica core-second",
            "replicas' working set peak",
            "objective (windows)",
        ],
        &rows,
    );
    let _ = writeln!(
        out,
        "The objective's verdict is judged over each full objective window of the measured phase, the way an SLO is evaluated (docs/analysis.md, \"The run's verdict\"); a step ramp's verdicts are its steps'. Where a run's manifest recorded another verdict (written by a feedbench that judged the whole phase), it is shown beside.\n"
    );
    let killed: Vec<String> = report
        .runs
        .iter()
        .flat_map(|r| {
            r.oom_kills.iter().map(move |k| {
                format!(
                    "- {}: `{}` ({}) killed for memory {} time(s) at its cap of {} MiB, first {:.1} s after the load started; the run went on, and its figures include what followed.",
                    run_name(r),
                    k.container,
                    k.role,
                    k.kills,
                    k.memory_limit_bytes >> 20,
                    k.first_at_s
                )
            })
        })
        .collect();
    if !killed.is_empty() {
        let _ = writeln!(
            out,
            "Killed for memory (the system under test; a result, not an abort):\n\n{}\n",
            killed.join("\n")
        );
    }
    for r in &report.runs {
        let _ = writeln!(
            out,
            "CPU and memory of {} over its measured phase:\n",
            run_name(r)
        );
        usage_table(out, r, "measured", None);
    }
}

fn faults(out: &mut String, report: &StudyReport) {
    let with: Vec<&RunFigures> = report
        .runs
        .iter()
        .filter(|r| r.frame.fault_window.is_some())
        .collect();
    if with.is_empty() {
        return;
    }
    out.push_str("## Faults\n\nDetection counts from the fault's application; recovery from its clearing (`clear`) and from the replica back in service (`restart`), under the rule of docs/analysis.md (windows of the plan's `analysis.recovery`); a negative recovery is the service back within its control that long before its origin. The first ready is a restarted replica's first 200 on its readiness path, from its start, asked every 100 ms from inside the run's network. The balancer's DOWN is the fault's target's for a fault on one replica, and the first replica's marked DOWN for a link or CPU fault, named beside it.\n\n");
    let rows: Vec<Vec<String>> = with
        .iter()
        .map(|r| {
            let x = Rows(&r.rows);
            vec![
                run_name(r),
                r.frame
                    .fault_window
                    .as_ref()
                    .map(|f| format!("{} ({})", f.name, f.injection))
                    .unwrap_or_default(),
                match &r.seen_down {
                    Some(server) => format!(
                        "{} ({server})",
                        x.show("detect_balancer_down", "", "", None)
                    ),
                    None => x.show("detect_balancer_down", "", "", None),
                },
                x.show("detect_failed_request", "", "", None),
                x.show("detect_objective_window", "", "", None),
                x.show("time_to_recover", "clear", "", None),
                x.show("time_to_recover", "restart", "", None),
                x.show("time_to_ready", "", "", None),
                x.show("fault_failed", "", "", None),
                x.show("observe_failed", "", "", None),
                x.show("fault_worst_p99", "", "", None),
                x.show("observe_worst_p99", "", "", None),
                x.show("seconds_below_50pct", "", "", None),
                x.show("seconds_below_90pct", "", "", None),
            ]
        })
        .collect();
    table(
        out,
        &[
            "run",
            "fault",
            "detect: balancer DOWN",
            "detect: failed request",
            "detect: objective window",
            "time to recover (clear)",
            "time to recover (restart)",
            "first ready after restart",
            "failed during",
            "failed after",
            "worst p99 during",
            "worst p99 after",
            "s below 50 %",
            "s below 90 %",
        ],
        &rows,
    );
}

fn path(out: &mut String, report: &StudyReport) {
    out.push_str("## The measurement path\n\nThe load generator, fault proxy and balancer of every analysed run: nothing in the path should have bound.\n\n");
    let rows: Vec<Vec<String>> = report
        .runs
        .iter()
        .map(|r| {
            let x = Rows(&r.rows);
            let by_role = |role: &str| {
                r.frame
                    .caps
                    .iter()
                    .find(|(_, c)| c.role == role)
                    .map(|(n, _)| x.show("path_cpu_p95_pct_of_cap", "measured", n, None))
                    .unwrap_or_else(|| "–".into())
            };
            vec![
                run_name(r),
                by_role("load-generator"),
                by_role("fault-proxy"),
                by_role("balancer"),
                x.show("dropped_iterations", "", "", None),
            ]
        })
        .collect();
    table(
        out,
        &[
            "run",
            "load generator CPU p95, % of cap",
            "fault proxy",
            "balancer",
            "dropped iterations",
        ],
        &rows,
    );
}

fn headline(s: &SummaryRow) -> bool {
    s.step_rate.is_none()
        && HEADLINE
            .iter()
            .any(|(m, d, c)| s.metric == *m && s.definition == *d && s.container == *c)
}

fn fmt_summary(s: &SummaryRow) -> String {
    let unit = |v: f64| match s.unit.as_str() {
        "ratio" => format!("{} %", round(v * 100.0)),
        "bytes" => format!("{} MiB", round(v / 1_048_576.0)),
        u => format!("{} {u}", round(v)),
    };
    match (s.median, s.ci_low, s.ci_high) {
        (Some(m), Some(l), Some(h)) => format!(
            "{} [{} – {}]{}",
            unit(m),
            unit(l),
            unit(h),
            s.confidence
                .map_or_else(String::new, |c| format!(" ({} %)", round(c * 100.0)))
        ),
        (Some(m), _, _) => match s.bound {
            Across::AtLeast => format!("≥ {} (n = {}, some values bounds)", unit(m), s.n),
            Across::AtMost => format!("≤ {} (n = {}, some values bounds)", unit(m), s.n),
            _ => format!("{} (n = {}, no interval)", unit(m), s.n),
        },
        _ if s.bound == Across::Both => format!("(n = {}, bounds both ways)", s.n),
        _ => "(none)".into(),
    }
}

fn repetitions(out: &mut String, report: &StudyReport) {
    out.push_str("## Across repetitions\n\nMedian and, with 3 or more repetitions, its exact order-statistic interval with the interval's coverage in brackets: 95 % or more where n allows, the range at its own level below that (75 % at n = 3), a lower bound where values tie; where some values are only bounds (a saturation not reached), the median is a bound (≥, ≤) without an interval (docs/analysis.md); every figure is in summary.csv.\n\n");
    let key = |s: &SummaryRow| {
        let c = if s.variant.is_empty() {
            s.contender.clone()
        } else {
            format!("{}.{}", s.contender, s.variant)
        };
        (c, s.profile.clone(), s.fault.clone())
    };
    let rows: Vec<Vec<String>> = report
        .summary
        .iter()
        .filter(|s| headline(s))
        .map(|s| {
            let (c, p, f) = key(s);
            let what = if s.definition.is_empty() {
                s.metric.clone()
            } else {
                format!("{} ({})", s.metric, s.definition)
            };
            vec![c, p, f, what, fmt_summary(s)]
        })
        .collect();
    table(
        out,
        &[
            "contender",
            "profile",
            "fault",
            "figure",
            "median [interval] (coverage)",
        ],
        &rows,
    );
    super::comparisons::section(out, &report.comparisons);
}

fn left_out(out: &mut String, report: &StudyReport) {
    out.push_str("## Runs left out\n\n");
    if report.excluded.is_empty() && report.gaps.is_empty() {
        out.push_str("None: every planned run stands and was analysed.\n\n");
        return;
    }
    let rows: Vec<Vec<String>> = report
        .excluded
        .iter()
        .chain(&report.gaps)
        .map(|l| {
            let mut reason = l.reason.replace('|', "\\|");
            if !l.evidence.is_empty() {
                reason.push_str(&format!(
                    "; evidence: {}",
                    l.evidence.join("; ").replace('|', "\\|")
                ));
            }
            vec![format!("`{}`", l.run), l.state.clone(), reason]
        })
        .collect();
    table(out, &["run", "state", "reason and evidence"], &rows);
}

#[cfg(test)]
mod tests {
    use super::*;
    use feedbench_core::report::out::Out;
    use feedbench_core::report::ramp::{self, Reading};
    use feedbench_core::report::read::Req;
    use feedbench_core::report::rows::RunKey;
    use feedbench_core::rundir::frame::Frame;

    const S: i128 = 1_000_000_000;

    /// A ramp of 10 s steps at 20, 40, …, 180/s stopped at its knee (160/s, confirmed at
    /// 180/s), with a 3 s stall (every request 1 s) inside its 80/s step.
    fn stalled() -> RunFigures {
        let rates: Vec<f64> = (1..=9).map(|k| 20.0 * f64::from(k)).collect();
        let steps: Vec<serde_json::Value> = rates
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let a = i as i128 * 10 * S;
                serde_json::json!({"rate": r, "start_ns": a, "end_ns": a + 10 * S, "offered_arrivals": r * 10.0})
            })
            .collect();
        let frame: Frame = serde_json::from_value(serde_json::json!({
            "contender": "feed-rs", "variant": null, "profile": "ramp", "fault": null,
            "repetition": 1,
            "measured": {"start_ns": 0, "end_ns": 90 * S, "offered_arrivals": 9000.0},
            "steps": steps,
            "objective": {"p99_ms": 500.0, "failed_share": 0.01, "window_ns": 5 * S},
            "fault_window": null, "caps": {},
            "recovery": {"window_ns": 10 * S, "step_ns": S / 10, "hold_ns": 10 * S,
                         "throughput_tolerance": 0.05, "latency_tolerance": 0.1},
            "stopped": {"breach_rate": 160.0, "last_rate": 180.0, "at_ns": 90 * S},
            "confirm_steps": 1,
        }))
        .unwrap();
        let mut reqs = Vec::new();
        for s in &frame.steps {
            let n = (s.rate * 10.0) as i128;
            for k in 0..n {
                let start = s.start_ns + k * 10 * S / n;
                let into = start - s.start_ns;
                let ms = if s.rate == 80.0 && (2 * S..5 * S).contains(&into) {
                    1000.0
                } else if s.rate >= 160.0 && k % 10 < 3 {
                    800.0
                } else {
                    10.0
                };
                reqs.push(Req {
                    start_ns: start,
                    end_ns: start + (ms * 1e6) as i128,
                    status: 200,
                    duration_ms: ms,
                    scheduled_ns: None,
                    route: 0,
                });
            }
        }
        let key = RunKey {
            run: "feed-rs/ramp/r1".into(),
            contender: "feed-rs".into(),
            variant: String::new(),
            profile: "ramp".into(),
            fault: String::new(),
            repetition: 1,
        };
        let mut out = Out::new(key.clone());
        let how = Reading {
            stopped: true,
            confirm: 1,
        };
        let judged = feedbench_core::report::judged::requests(frame.judged_by, &reqs, None);
        ramp::rows(&mut out, &judged, &frame.steps, &frame.objective, how);
        RunFigures {
            key,
            frame,
            rows: out.rows,
            seconds: Vec::new(),
            instants: None,
            cpu: Vec::new(),
            oom_kills: Vec::new(),
            recorded_objective: None,
            seen_down: None,
        }
    }

    #[test]
    fn a_ramp_with_a_transient_shows_both_readings_and_names_the_transient() {
        let mut md = String::new();
        ramps(&mut md, &[stalled()]);
        let line = md
            .lines()
            .find(|l| l.contains("| objective-windows |"))
            .unwrap_or_else(|| panic!("{md}"));
        assert!(line.contains("140"), "{line}");
        assert!(line.contains("(first breach 80"), "{line}");
        let transient = md
            .lines()
            .find(|l| l.starts_with("Transient under `objective-windows`"))
            .unwrap_or_else(|| panic!("{md}"));
        assert!(transient.contains("80/s (p99 1000"), "{transient}");
        assert!(!transient.contains("160/s"), "{transient}");
        // Where the readings agree, the first-breach reading is not repeated.
        let errors = md.lines().find(|l| l.contains("| errors-only |")).unwrap();
        assert!(errors.contains("| same |"), "{errors}");
    }
}
