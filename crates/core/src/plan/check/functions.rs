//! The metric functions a check may call: their arguments, defaults and units, and the
//! metrics.csv rows each reads (docs/analysis.md). The evaluator reads rows through this
//! table, and docs/plan.md's functions table is this table written out.

use super::lex::UnitSuffix;

/// What a quantity measures. Values of one dimension compare and add whatever unit they
/// were written in (`500ms` and `0.5s` are equal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dim {
    /// A plain number: a factor or a ratio of two quantities of one dimension.
    Number,
    /// A duration, in seconds.
    Time,
    /// A share, as a fraction (`90%` is 0.9).
    Share,
    /// Arrivals or requests per second.
    Rate,
    Bytes,
    /// Served answers (2xx and each route's declared share of 4xx) per replica core-second.
    Efficiency,
}

impl Dim {
    /// How the dimension reads in a message.
    pub fn described(self) -> &'static str {
        match self {
            Dim::Number => "a plain number",
            Dim::Time => "a duration (`ms`, `s`)",
            Dim::Share => "a share (`%`)",
            Dim::Rate => "a rate (`/s`)",
            Dim::Bytes => "a size (`KiB`, `MiB`, `GiB`)",
            Dim::Efficiency => "an efficiency (`/core-s`)",
        }
    }

    /// An example literal of this dimension, for hints.
    pub fn example(self) -> &'static str {
        match self {
            Dim::Number => "5",
            Dim::Time => "500ms",
            Dim::Share => "1%",
            Dim::Rate => "100/s",
            Dim::Bytes => "512MiB",
            Dim::Efficiency => "200/core-s",
        }
    }
}

/// A literal's dimension and the factor to its dimension's base unit (s, fraction, 1/s,
/// bytes, 1/core·s).
pub fn literal(unit: Option<UnitSuffix>) -> (Dim, f64) {
    match unit {
        None => (Dim::Number, 1.0),
        Some(UnitSuffix::Millis) => (Dim::Time, 1e-3),
        Some(UnitSuffix::Seconds) => (Dim::Time, 1.0),
        Some(UnitSuffix::Percent) => (Dim::Share, 1e-2),
        Some(UnitSuffix::PerSecond) => (Dim::Rate, 1.0),
        Some(UnitSuffix::PerCoreSecond) => (Dim::Efficiency, 1.0),
        Some(UnitSuffix::KiB) => (Dim::Bytes, 1024.0),
        Some(UnitSuffix::MiB) => (Dim::Bytes, 1024.0 * 1024.0),
        Some(UnitSuffix::GiB) => (Dim::Bytes, 1024.0 * 1024.0 * 1024.0),
    }
}

/// What a function's first argument names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// A contender as the matrix runs it: `feed-rs`, or `feed-rs.indexed` for a variant.
    Contender,
    /// A container role (`database`, `replicas`, `replica-1`, …); `of:` names the contender.
    Role,
}

/// The named arguments. Which a function takes is in its `args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// The profile of the runs read; defaults to the only one the matrix runs for the
    /// contender with this fault (the only step ramp where one is needed).
    Profile,
    /// The fault of the runs read; defaults to none (faultless runs), required by `recovery`
    /// and `detect`.
    Fault,
    /// The saturation definition; defaults to `objective-windows`.
    Definition,
    /// Which breach a saturation is read at: `sustained` (default) or `first`.
    Breach,
    /// One route of the workload: the request figures over its requests alone.
    Route,
    /// A status class (`2xx`, `4xx`, `5xx`) or code (`503`): the request figures over the
    /// requests answered with it.
    Status,
    /// Where recovery is timed from: `clear` (default) or `restart`.
    Origin,
    /// The detection kind: `objective-window` (default), `failed-request`, `balancer-down`.
    Detect,
    /// The span: `measured` (default), `first-breach`, or a step's rate such as `120/s`;
    /// for the request figures, `measured`, `fault`, `until-down` or `observe`.
    At,
    /// The contender of a per-container function.
    Of,
    /// The statistic across repetitions: `median` (default), `mean`, `min`, `max`.
    Stat,
}

impl Arg {
    pub const ALL: [Arg; 11] = [
        Arg::Profile,
        Arg::Fault,
        Arg::Definition,
        Arg::Breach,
        Arg::Route,
        Arg::Status,
        Arg::Origin,
        Arg::Detect,
        Arg::At,
        Arg::Of,
        Arg::Stat,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Arg::Profile => "profile",
            Arg::Fault => "fault",
            Arg::Definition => "definition",
            Arg::Breach => "breach",
            Arg::Route => "route",
            Arg::Status => "status",
            Arg::Origin => "origin",
            Arg::Detect => "detect",
            Arg::At => "at",
            Arg::Of => "of",
            Arg::Stat => "stat",
        }
    }

    pub fn parse(s: &str) -> Option<Arg> {
        Arg::ALL.into_iter().find(|a| a.key() == s)
    }
}

/// The saturation definitions, as the report's ramp module names them in the `definition`
/// column, in its order (the plan may not use the report; tests/offline/plan_cli.rs checks that the
/// two lists are one).
pub const DEFINITIONS: [&str; 5] = [
    "objective-windows",
    "every-second",
    "p99-only",
    "errors-only",
    "throughput-knee",
];
/// The breaches a saturation is read at, and the metric each reads (docs/analysis.md,
/// "Step ramps"): the first sustained breach (the default), or the first breach.
pub const BREACHES: [(&str, &str); 2] = [
    ("sustained", "saturation"),
    ("first", "saturation_before_first_breach"),
];
/// Recovery origins, as the `definition` column of `time_to_recover` names them.
pub const ORIGINS: [&str; 2] = ["clear", "restart"];
/// Detection kinds; the metric is `detect_` and the kind with `_` for `-`.
pub const DETECTIONS: [&str; 3] = ["objective-window", "failed-request", "balancer-down"];
/// Statistics across repetitions.
pub const STATS: [&str; 4] = ["median", "mean", "min", "max"];
/// The `container` of the replicas' sum rows, and the role that reads them (the report's
/// usage module writes it; tests/offline/plan_cli.rs checks they agree).
pub const REPLICAS: &str = "replicas";
/// Named spans for `at:`; a step is named by its rate.
pub const SPANS: [&str; 2] = ["measured", "first-breach"];
/// The spans of the request figures (`throughput`, `failed`, `p50` …): the measured phase,
/// the fault (from its injection to its clearing), the fault until the balancer marked its
/// target DOWN, and the observe window after the clearing.
pub const REQUEST_SPANS: [&str; 4] = ["measured", "fault", "until-down", "observe"];
/// The status classes that have rows; a status code is written as its number.
pub const STATUS_CLASSES: [&str; 3] = ["2xx", "4xx", "5xx"];

/// The `definition` of a request figure's row over a span other than the measured phase,
/// one route and one status (docs/analysis.md, "qualified rows"): the qualifiers given, in
/// this order, joined by a space (`at:fault route:post status:5xx`); none, the measured
/// phase's own rows.
pub fn qualified(at: Option<&str>, route: Option<&str>, status: Option<&str>) -> String {
    [("at", at), ("route", route), ("status", status)]
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}:{v}")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Which metrics.csv rows a function reads, besides the run's contender, variant, profile,
/// fault and repetition (docs/analysis.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// `metric` with `definition` = `qualified(at, route, status)` (empty for the measured
    /// phase of every route and status), empty `container` and `step_rate`.
    Measured { metric: &'static str },
    /// `saturation` (`breach: first`: `saturation_before_first_breach`) with `definition`
    /// = the `definition:` argument.
    Saturation,
    /// `metric` with `container` = the role's container (`replicas` as written; otherwise
    /// the run's container `<run prefix>-<role>`, spec::topology::run_prefix), and
    /// `definition` = the span: `measured`; `first-breach` (with its `step_rate`); `step`
    /// with `step_rate` = the `at:` rate.
    PerContainer { metric: &'static str },
    /// `requests_per_core_second` with `container = replicas` and the span as above.
    Efficiency,
    /// `time_to_recover` with `definition` = the origin.
    Recovery,
    /// `detect_<kind>` with an empty `definition`.
    Detect,
    /// `time_to_ready` with an empty `definition`.
    Ready,
}

impl Reads {
    /// The row's unit in metrics.csv and the factor from it to the dimension's base unit.
    pub fn report_unit(self) -> (&'static str, f64) {
        match self {
            Reads::Measured { metric } if metric.starts_with("latency_") => ("ms", 1e-3),
            Reads::Measured { metric } if metric.ends_with("_share") => ("ratio", 1.0),
            Reads::Measured { .. } | Reads::Saturation => ("1/s", 1.0),
            Reads::PerContainer { metric } if metric.starts_with("cpu_") => ("%", 1e-2),
            Reads::PerContainer { .. } => ("bytes", 1.0),
            Reads::Efficiency => ("1/core·s", 1.0),
            Reads::Recovery | Reads::Detect | Reads::Ready => ("s", 1.0),
        }
    }
}

/// One metric function.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Function {
    pub name: &'static str,
    pub subject: Subject,
    /// The named arguments it takes, beyond `stat`, which every function takes.
    pub args: &'static [Arg],
    pub dim: Dim,
    pub reads: Reads,
    /// Needs its runs to be step ramps whatever `at:` says (saturation).
    pub needs_ramp: bool,
    pub summary: &'static str,
}

/// The request figures' arguments.
const ROUTED: &[Arg] = &[Arg::Profile, Arg::Fault, Arg::Route, Arg::Status, Arg::At];
const SPAN: &[Arg] = &[Arg::Profile, Arg::Fault, Arg::At];
const CONTAINER: &[Arg] = &[Arg::Of, Arg::Profile, Arg::Fault, Arg::At];

const fn measured(
    name: &'static str,
    metric: &'static str,
    dim: Dim,
    summary: &'static str,
) -> Function {
    Function {
        name,
        subject: Subject::Contender,
        args: ROUTED,
        dim,
        reads: Reads::Measured { metric },
        needs_ramp: false,
        summary,
    }
}

/// Every metric function, in the order docs/plan.md lists them.
pub const FUNCTIONS: [Function; 16] = [
    Function {
        name: "saturation",
        subject: Subject::Contender,
        args: &[Arg::Profile, Arg::Fault, Arg::Definition, Arg::Breach],
        dim: Dim::Rate,
        reads: Reads::Saturation,
        needs_ramp: true,
        summary: "the last step rate that met the definition before its first sustained breach (`breach: first`: before its first breach)",
    },
    measured(
        "throughput",
        "achieved_rate",
        Dim::Rate,
        "requests per second over the span (the measured phase by default)",
    ),
    measured(
        "failed",
        "failed_share",
        Dim::Share,
        "the share of failed requests (no response or 5xx)",
    ),
    measured(
        "p50",
        "latency_p50",
        Dim::Time,
        "the 50th percentile latency",
    ),
    measured(
        "p90",
        "latency_p90",
        Dim::Time,
        "the 90th percentile latency",
    ),
    measured(
        "p95",
        "latency_p95",
        Dim::Time,
        "the 95th percentile latency",
    ),
    measured(
        "p99",
        "latency_p99",
        Dim::Time,
        "the 99th percentile latency",
    ),
    measured(
        "p99.9",
        "latency_p99_9",
        Dim::Time,
        "the 99.9th percentile latency",
    ),
    Function {
        name: "cpu",
        subject: Subject::Role,
        args: CONTAINER,
        dim: Dim::Share,
        reads: Reads::PerContainer {
            metric: "cpu_mean_pct_of_cap",
        },
        needs_ramp: false,
        summary: "mean CPU use as a share of the role's cap",
    },
    Function {
        name: "cpu-p95",
        subject: Subject::Role,
        args: CONTAINER,
        dim: Dim::Share,
        reads: Reads::PerContainer {
            metric: "cpu_p95_pct_of_cap",
        },
        needs_ramp: false,
        summary: "the 95th percentile of CPU use as a share of the role's cap",
    },
    Function {
        name: "memory",
        subject: Subject::Role,
        args: CONTAINER,
        dim: Dim::Bytes,
        reads: Reads::PerContainer {
            metric: "memory_working_set_peak",
        },
        needs_ramp: false,
        summary: "the peak working-set memory (usage less inactive file pages, as `docker stats` shows it)",
    },
    Function {
        name: "memory-rss",
        subject: Subject::Role,
        args: CONTAINER,
        dim: Dim::Bytes,
        reads: Reads::PerContainer {
            metric: "memory_rss_peak",
        },
        needs_ramp: false,
        summary: "the peak resident anonymous memory (heaps and stacks; no page cache)",
    },
    Function {
        name: "efficiency",
        subject: Subject::Contender,
        args: SPAN,
        dim: Dim::Efficiency,
        reads: Reads::Efficiency,
        needs_ramp: false,
        summary: "answers served (2xx, and declared 4xx) per replica core-second",
    },
    Function {
        name: "recovery",
        subject: Subject::Contender,
        args: &[Arg::Fault, Arg::Profile, Arg::Origin],
        dim: Dim::Time,
        reads: Reads::Recovery,
        needs_ramp: false,
        summary: "time from the origin to recovery under the recovery rule",
    },
    Function {
        name: "detect",
        subject: Subject::Contender,
        args: &[Arg::Fault, Arg::Profile, Arg::Detect],
        dim: Dim::Time,
        reads: Reads::Detect,
        needs_ramp: false,
        summary: "time from the fault's start to its detection",
    },
    Function {
        name: "ready",
        subject: Subject::Contender,
        args: &[Arg::Fault, Arg::Profile],
        dim: Dim::Time,
        reads: Reads::Ready,
        needs_ramp: false,
        summary: "time from the killed or stopped replica's start to its first 200 on its readiness path",
    },
];

pub fn find(name: &str) -> Option<&'static Function> {
    FUNCTIONS.iter().find(|f| f.name == name)
}

impl Function {
    /// Does it take this named argument?
    pub fn takes(&self, arg: Arg) -> bool {
        arg == Arg::Stat || self.args.contains(&arg)
    }

    /// A fault is required: the rows exist only for runs with one.
    pub fn needs_fault(&self) -> bool {
        matches!(self.reads, Reads::Recovery | Reads::Detect | Reads::Ready)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_dimension_has_a_literal() {
        for (i, f) in FUNCTIONS.iter().enumerate() {
            assert!(
                FUNCTIONS[..i].iter().all(|g| g.name != f.name),
                "{}",
                f.name
            );
            assert_eq!(find(f.name), Some(f));
            assert!(f.needs_fault() == (f.args.first() == Some(&Arg::Fault)));
        }
        for d in [
            Dim::Number,
            Dim::Time,
            Dim::Share,
            Dim::Rate,
            Dim::Bytes,
            Dim::Efficiency,
        ] {
            let lit = super::super::lex::lex(d.example()).unwrap();
            let super::super::lex::Tok::Number(_, u) = lit[0].tok else {
                panic!()
            };
            assert_eq!(literal(u).0, d);
        }
    }

    #[test]
    fn report_units_match_docs_analysis() {
        assert_eq!(find("p99").unwrap().reads.report_unit(), ("ms", 1e-3));
        assert_eq!(find("failed").unwrap().reads.report_unit(), ("ratio", 1.0));
        assert_eq!(find("cpu").unwrap().reads.report_unit(), ("%", 1e-2));
        assert_eq!(find("memory").unwrap().reads.report_unit(), ("bytes", 1.0));
        assert_eq!(
            find("saturation").unwrap().reads.report_unit(),
            ("1/s", 1.0)
        );
        assert_eq!(find("recovery").unwrap().reads.report_unit(), ("s", 1.0));
    }
}
