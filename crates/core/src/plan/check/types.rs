//! Checking a parsed check against the plan: every name is known, units agree, conditions
//! and quantities are not mixed, and the matrix has the runs each metric function reads.
//! The outcome is the list of metric queries, resolved, that an evaluator answers.

use crate::plan::de::suggest;
use crate::plan::expand::{resolve_contenders, selects, ResolvedContender};
use crate::plan::model::{Plan, Profile, ServiceKind};
use crate::plan::units::Rate;

use super::functions::{
    self, literal, Arg, Dim, Function, Reads, Subject, BREACHES, DEFINITIONS, DETECTIONS,
    FUNCTIONS, ORIGINS, REQUEST_SPANS, SPANS, STATS, STATUS_CLASSES,
};
use super::parse::{parse, ArgValue, ArithOp, Call, Expr, NamedArg, Word};
use super::{CheckError, Span};

/// The span of the runs a query reads.
#[derive(Debug, Clone, PartialEq)]
pub enum At {
    Measured,
    FirstBreach,
    /// A ramp step, by its rate.
    Step(f64),
    /// The fault, from its injection to its clearing (the request figures only).
    Fault,
    /// The fault until the balancer marked its target DOWN (the request figures only).
    UntilDown,
    /// The observe window after the fault's clearing (the request figures only).
    Observe,
}

/// One metric function call, resolved against the plan: the metrics.csv rows it reads
/// (one per repetition) and the statistic taken across them.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub function: &'static str,
    /// The contender as the matrix runs it (`feed-rs.indexed`).
    pub contender: String,
    /// metrics.csv's `contender` and `variant` columns.
    pub declared: String,
    pub variant: Option<String>,
    pub profile: String,
    pub fault: Option<String>,
    pub metric: String,
    /// metrics.csv's `definition` column (empty where the row has none).
    pub definition: String,
    /// The container role (`replicas` is the replicas' sum row); `None` for run-wide rows.
    pub role: Option<String>,
    pub at: At,
    pub stat: &'static str,
    /// metrics.csv's unit for the row, and the factor to the dimension's base unit.
    pub unit: (&'static str, f64),
    pub span: Span,
}

/// Parses and checks a check against the plan; every error found, in check order.
pub fn check(plan: &Plan, src: &str) -> Result<Vec<Query>, Vec<CheckError>> {
    let expr = parse(src).map_err(|e| vec![e])?;
    let mut c = Checker {
        plan,
        contenders: resolve_contenders(plan),
        queries: Vec::new(),
        errors: Vec::new(),
    };
    match c.expr(&expr) {
        Ty::Bool | Ty::Unknown => {}
        Ty::Quantity(d) => c.errors.push(
            CheckError::new(
                expr.span(),
                format!("a check must be a condition, but this is {}", d.described()),
            )
            .hint(format!("compare it, e.g. `… >= {}`", d.example())),
        ),
    }
    if c.errors.is_empty() {
        Ok(c.queries)
    } else {
        Err(c.errors)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Bool,
    Quantity(Dim),
    /// After an error: accepted anywhere, so one mistake is reported once.
    Unknown,
}

struct Checker<'a> {
    plan: &'a Plan,
    contenders: Vec<ResolvedContender>,
    queries: Vec<Query>,
    errors: Vec<CheckError>,
}

impl Checker<'_> {
    fn fail(&mut self, e: CheckError) -> Ty {
        self.errors.push(e);
        Ty::Unknown
    }

    fn expr(&mut self, e: &Expr) -> Ty {
        match e {
            Expr::Number(_, u, _) => Ty::Quantity(literal(*u).0),
            Expr::Call(call) => match self.call(call) {
                Ok(dim) => Ty::Quantity(dim),
                Err(err) => self.fail(err),
            },
            Expr::Neg(a, _) => {
                let t = self.expr(a);
                self.quantity(t, a, "`-`")
            }
            Expr::Arith(op, a, b, _) => {
                let (ta, tb) = (self.expr(a), self.expr(b));
                let what = match op {
                    ArithOp::Add => "`+`",
                    ArithOp::Sub => "`-`",
                    ArithOp::Mul => "`*`",
                    ArithOp::Div => "`/`",
                };
                let (Ty::Quantity(da), Ty::Quantity(db)) =
                    (self.quantity(ta, a, what), self.quantity(tb, b, what))
                else {
                    return Ty::Unknown;
                };
                self.arith(*op, da, db, b.span())
            }
            Expr::Compare(_, a, b, _) => {
                let (ta, tb) = (self.expr(a), self.expr(b));
                let what = "a comparison";
                let (Ty::Quantity(da), Ty::Quantity(db)) =
                    (self.quantity(ta, a, what), self.quantity(tb, b, what))
                else {
                    return Ty::Bool;
                };
                if da != db {
                    self.errors.push(
                        CheckError::new(
                            b.span(),
                            format!("compares {} with {}", da.described(), db.described()),
                        )
                        .hint(format!(
                            "both sides must measure the same thing, e.g. `{}`",
                            da.example()
                        )),
                    );
                }
                Ty::Bool
            }
            Expr::Not(a, _) => {
                let t = self.expr(a);
                self.condition(t, a, "`not`")
            }
            Expr::And(a, b, _) | Expr::Or(a, b, _) => {
                let what = if matches!(e, Expr::And(..)) {
                    "`and`"
                } else {
                    "`or`"
                };
                let (ta, tb) = (self.expr(a), self.expr(b));
                self.condition(ta, a, what);
                self.condition(tb, b, what);
                Ty::Bool
            }
        }
    }

    /// A quantity where `what` needs one; a condition there is an error.
    fn quantity(&mut self, t: Ty, e: &Expr, what: &str) -> Ty {
        if t == Ty::Bool {
            return self.fail(
                CheckError::new(
                    e.span(),
                    format!("{what} takes numbers, but this is a condition"),
                )
                .hint("a condition is true or false; join conditions with `and`, `or`, `not`"),
            );
        }
        t
    }

    fn condition(&mut self, t: Ty, e: &Expr, what: &str) -> Ty {
        if let Ty::Quantity(d) = t {
            return self.fail(
                CheckError::new(
                    e.span(),
                    format!("{what} joins conditions, but this is {}", d.described()),
                )
                .hint(format!("compare it, e.g. `… < {}`", d.example())),
            );
        }
        Ty::Bool
    }

    fn arith(&mut self, op: ArithOp, a: Dim, b: Dim, at: Span) -> Ty {
        let mismatch = |verb: &str| {
            CheckError::new(
                at,
                format!("cannot {verb} {} and {}", a.described(), b.described()),
            )
        };
        match op {
            ArithOp::Add | ArithOp::Sub if a == b => Ty::Quantity(a),
            ArithOp::Add => self.fail(mismatch("add")),
            ArithOp::Sub => self.fail(mismatch("subtract")),
            ArithOp::Mul if a == Dim::Number => Ty::Quantity(b),
            ArithOp::Mul if b == Dim::Number => Ty::Quantity(a),
            ArithOp::Mul => self.fail(
                mismatch("multiply")
                    .hint("scale a quantity by a plain number, e.g. `5 * saturation(…)`"),
            ),
            ArithOp::Div if b == Dim::Number => Ty::Quantity(a),
            ArithOp::Div if a == b => Ty::Quantity(Dim::Number),
            ArithOp::Div => self.fail(
                CheckError::new(
                    at,
                    format!("cannot divide {} by {}", a.described(), b.described()),
                )
                .hint("divide by a plain number, or by a quantity of the same kind for a ratio"),
            ),
        }
    }

    fn call(&mut self, call: &Call) -> Result<Dim, CheckError> {
        let f = functions::find(&call.function.text).ok_or_else(|| {
            let names: Vec<&str> = FUNCTIONS.iter().map(|f| f.name).collect();
            CheckError::new(
                call.function.span,
                format!("unknown function `{}`", call.function.text),
            )
            .hint(suggest(&call.function.text, &names, "function"))
        })?;
        for a in &call.args {
            arg_known(f, &a.name)?;
        }
        let arg = |k: Arg| call.args.iter().find(|a| a.name.text == k.key());
        let (ci, role) = self.subject(f, call)?;
        let pick = |k: Arg, known: &[&str], what: &str| -> Result<Option<String>, CheckError> {
            let Some(a) = arg(k) else { return Ok(None) };
            let w = name_value(a, what)?;
            if known.contains(&w.text.as_str()) {
                Ok(Some(w.text.clone()))
            } else {
                Err(unknown(w, what, known))
            }
        };
        let definition = pick(Arg::Definition, &DEFINITIONS, "definition")?;
        let breaches: Vec<&str> = BREACHES.iter().map(|b| b.0).collect();
        let breach = pick(Arg::Breach, &breaches, "breach")?;
        let origin = pick(Arg::Origin, &ORIGINS, "origin")?;
        let detect = pick(Arg::Detect, &DETECTIONS, "detection kind")?;
        let stat = pick(Arg::Stat, &STATS, "statistic")?;
        let faults: Vec<&str> = self.plan.faults.keys().map(|n| n.as_str()).collect();
        let fault = pick(Arg::Fault, &faults, "fault")?;
        let profiles: Vec<&str> = self.plan.profiles.keys().map(|n| n.as_str()).collect();
        let profile = pick(Arg::Profile, &profiles, "profile")?;
        let at = match arg(Arg::At) {
            None => At::Measured,
            Some(a) => self.at(f, a)?,
        };
        if f.needs_fault() && fault.is_none() {
            return Err(CheckError::new(
                call.span,
                format!("`{}` needs `fault:` naming the fault it is about", f.name),
            )
            .hint(if faults.is_empty() {
                "the plan declares no faults".to_string()
            } else {
                format!("e.g. `fault: {}`", faults[0])
            }));
        }
        let needs_ramp = f.needs_ramp || matches!(at, At::FirstBreach | At::Step(_));
        let span_of = |k: Arg| arg(k).map_or(call.span, |a| a.value.span());
        let profile = self.profile(
            ci,
            profile,
            fault.as_deref(),
            needs_ramp,
            span_of(Arg::Profile),
            call.span,
        )?;
        if let At::Step(rate) = at {
            self.step(&profile, rate, span_of(Arg::At))?;
        }
        let request_rows = self.request_rows(f, call, &profile, fault.as_deref(), &at)?;
        if let Some(fname) = &fault {
            if origin.as_deref() == Some("restart") {
                self.restarts(
                    fname,
                    span_of(Arg::Origin),
                    "`origin: restart`",
                    "time recovery from the fault's clearing with `origin: clear`",
                )?;
            }
            if f.reads == Reads::Ready {
                self.restarts(
                    fname,
                    span_of(Arg::Fault),
                    "`ready`",
                    "only a replica started again has a time to its first readiness",
                )?;
            }
        }
        // A recovery is timed from its injection's own origin unless the check names one.
        let origin = match (f.reads, origin, &fault) {
            (Reads::Recovery, None, Some(fname)) => Some(self.own_origin(fname).to_string()),
            (_, origin, _) => origin,
        };
        let (metric, definition) =
            metric_and_definition(f, &at, (definition, breach), origin, detect);
        let definition = request_rows.unwrap_or(definition);
        let role = match f.reads {
            Reads::Efficiency => Some(functions::REPLICAS.to_string()),
            _ => role,
        };
        let c = &self.contenders[ci];
        self.queries.push(Query {
            function: f.name,
            contender: c.name.clone(),
            declared: c.declared.to_string(),
            variant: c.variant.as_ref().map(|v| v.to_string()),
            profile,
            fault,
            metric,
            definition,
            role,
            at,
            stat: STATS
                .iter()
                .find(|s| Some(**s) == stat.as_deref())
                .copied()
                .unwrap_or(STATS[0]),
            unit: f.reads.report_unit(),
            span: call.span,
        });
        Ok(f.dim)
    }

    /// The contender a call is about (its index) and, for a per-container function, the
    /// role's container.
    fn subject(&self, f: &Function, call: &Call) -> Result<(usize, Option<String>), CheckError> {
        let subject = subject_word(f, call)?;
        let contender_word = match f.subject {
            Subject::Contender => subject,
            Subject::Role => match call.args.iter().find(|a| a.name.text == Arg::Of.key()) {
                Some(a) => name_value(a, "contender")?,
                None => {
                    return Err(CheckError::new(
                        call.span,
                        format!("`{}` needs `of:` naming the contender", f.name),
                    )
                    .hint(format!("e.g. `{}({}, of: svc)`", f.name, subject.text)))
                }
            },
        };
        let ci = self.contender(contender_word)?;
        let role = match f.subject {
            Subject::Role => Some(self.role(ci, subject)?),
            Subject::Contender => None,
        };
        self.cpu_share_of_one(f, ci, role.as_deref(), subject)?;
        Ok((ci, role))
    }

    /// A `route:` the profile's workload sends (its rows are `definition = route:<name>`).
    fn route(&self, profile: &str, w: &Word) -> Result<String, CheckError> {
        let workload = self
            .plan
            .profiles
            .get(profile)
            .map_or(&self.plan.workload, |p| self.plan.workload_of(p));
        let routes: Vec<&str> = workload.routes.keys().map(|n| n.as_str()).collect();
        if routes.contains(&w.text.as_str()) {
            Ok(w.text.clone())
        } else {
            Err(unknown(w, "route", &routes))
        }
    }

    /// The replicas' sum row has CPU seconds, not a share of a cap (docs/analysis.md): a CPU
    /// share is per replica, and one asked of `replicas` can never be evaluated.
    fn cpu_share_of_one(
        &self,
        f: &Function,
        ci: usize,
        role: Option<&str>,
        subject: &Word,
    ) -> Result<(), CheckError> {
        let cpu = matches!(f.reads, Reads::PerContainer { metric } if metric.starts_with("cpu_"));
        if role != Some(functions::REPLICAS) || !cpu {
            return Ok(());
        }
        let c = &self.contenders[ci];
        let each: Vec<String> = (1..=c.replicas.min(3))
            .map(|i| format!("{}(replica-{i}, of: {}) …", f.name, c.name))
            .collect();
        Err(CheckError::new(
            subject.span,
            format!(
                "can never be evaluated: `{}` of `replicas` has no row, as the replicas' sum row holds CPU seconds, not a share of a cap",
                f.name
            ),
        )
        .hint(format!("name each replica: `{}`", each.join(" and "))))
    }

    /// Whether the fault kills or stops a replica: the faults with a restart.
    fn has_restart(&self, fault: &str) -> bool {
        self.plan.faults[fault].inject.restarts_replica()
    }

    /// A fault's own recovery origin (docs/analysis.md, "Recovery"): the replica back in
    /// service for a kill or stop of one, the fault removed for every other.
    fn own_origin(&self, fault: &str) -> &'static str {
        if self.has_restart(fault) {
            ORIGINS[1]
        } else {
            ORIGINS[0]
        }
    }

    /// `origin: restart` and `ready` need a fault that kills or stops a replica.
    fn restarts(&self, fault: &str, span: Span, what: &str, hint: &str) -> Result<(), CheckError> {
        if self.has_restart(fault) {
            return Ok(());
        }
        let inject = &self.plan.faults[fault].inject;
        Err(CheckError::new(
            span,
            format!(
                "can never be evaluated: {what} needs a fault that kills or stops a replica, but `{fault}` is {}",
                inject.kind()
            ),
        )
        .hint(hint))
    }

    /// The index of the contender a name picks: a contender without variants, or a variant.
    fn contender(&self, w: &Word) -> Result<usize, CheckError> {
        if let Some(i) = self.contenders.iter().position(|c| c.name == w.text) {
            return Ok(i);
        }
        let variants: Vec<&str> = self
            .contenders
            .iter()
            .filter(|c| c.declared.as_str() == w.text)
            .map(|c| c.name.as_str())
            .collect();
        if !variants.is_empty() {
            return Err(CheckError::new(
                w.span,
                format!("`{}` runs as its variants; name one", w.text),
            )
            .hint(format!("the variants are: {}", list(&variants))));
        }
        if let Some((declared, variant)) = w.text.split_once('.') {
            let of: Vec<&str> = self
                .contenders
                .iter()
                .filter(|c| c.declared.as_str() == declared)
                .filter_map(|c| c.variant.as_ref().map(|v| v.as_str()))
                .collect();
            if self
                .contenders
                .iter()
                .any(|c| c.declared.as_str() == declared)
            {
                let span = Span::new(w.span.start + declared.len() + 1, w.span.end);
                return Err(CheckError::new(
                    span,
                    format!("unknown variant `{variant}` of `{declared}`"),
                )
                .hint(suggest(variant, &of, "variant")));
            }
        }
        let names: Vec<&str> = self.contenders.iter().map(|c| c.name.as_str()).collect();
        Err(unknown(w, "contender", &names))
    }

    /// A container role of this contender's runs.
    fn role(&self, ci: usize, w: &Word) -> Result<String, CheckError> {
        let c = &self.contenders[ci];
        let mut roles = vec![functions::REPLICAS.to_string()];
        roles.extend((1..=c.replicas).map(|i| format!("replica-{i}")));
        for kind in [ServiceKind::Database, ServiceKind::ObjectStore] {
            if c.services.values().any(|s| s.kind == kind) {
                roles.push(kind.role().key().to_string());
            }
        }
        roles.extend(["balancer", "fault-proxy", "load-generator"].map(String::from));
        if roles.contains(&w.text) {
            return Ok(w.text.clone());
        }
        // Every replica is named in the list only up to a few, to keep the hint short.
        let shown: Vec<&str> = roles
            .iter()
            .map(String::as_str)
            .filter(|r| !r.starts_with("replica-") || r.len() <= "replica-3".len())
            .collect();
        Err(unknown(w, "role", &shown))
    }

    fn at(&self, f: &Function, a: &NamedArg) -> Result<At, CheckError> {
        let request = matches!(f.reads, Reads::Measured { .. });
        match &a.value {
            ArgValue::Name(w) => match (w.text.as_str(), request) {
                ("measured", _) => Ok(At::Measured),
                ("first-breach", false) => Ok(At::FirstBreach),
                ("fault", true) => Ok(At::Fault),
                ("until-down", true) => Ok(At::UntilDown),
                ("observe", true) => Ok(At::Observe),
                (other, _) => Err(self.unknown_span(f, w, other, request)),
            },
            ArgValue::Number(_, _, span) if request => Err(CheckError::new(
                *span,
                format!("`{}` is read over a span, not a step", f.name),
            )
            .hint("the request figures' spans are `measured`, `fault`, `until-down` and `observe`; a step's figures are the ramp's, read with `saturation(…)`")),
            ArgValue::Number(v, Some(super::lex::UnitSuffix::PerSecond), _) => Ok(At::Step(*v)),
            ArgValue::Number(_, _, span) => Err(CheckError::new(
                *span,
                "`at:` names a step by its rate, in arrivals per second",
            )
            .hint("e.g. `at: 100/s`")),
        }
    }

    /// An `at:` span the function has no rows for.
    fn unknown_span(&self, f: &Function, w: &Word, other: &str, request: bool) -> CheckError {
        let known: &[&str] = if request { &REQUEST_SPANS } else { &SPANS };
        let e = unknown(w, "span", known);
        if self.plan.profiles.contains_key(other) {
            e.hint(format!(
                "the spans are {}; for the profile write `profile: {other}`",
                list(known)
            ))
        } else if REQUEST_SPANS.contains(&other) {
            e.hint(format!(
                "`at: {other}` is for the request figures (throughput, failed, p50 … p99.9); `{}` is read over `measured`, `first-breach` or a step's rate",
                f.name
            ))
        } else if SPANS.contains(&other) || request {
            e.hint(format!(
                "`{}` is read over {}",
                f.name,
                list(&REQUEST_SPANS)
            ))
        } else {
            e
        }
    }

    /// The `definition` a request figure reads (docs/analysis.md, "qualified rows"): its
    /// span, route and status; `None` for the other functions. `at: fault` and
    /// `at: observe` need the fault.
    fn request_rows(
        &self,
        f: &Function,
        call: &Call,
        profile: &str,
        fault: Option<&str>,
        at: &At,
    ) -> Result<Option<String>, CheckError> {
        let Reads::Measured { .. } = f.reads else {
            return Ok(None);
        };
        let arg = |k: Arg| call.args.iter().find(|a| a.name.text == k.key());
        let route = match arg(Arg::Route) {
            Some(a) => Some(self.route(profile, name_value(a, "route")?)?),
            None => None,
        };
        let status = arg(Arg::Status).map(|a| status(f, a)).transpose()?;
        let span = match at {
            At::Fault => Some(REQUEST_SPANS[1]),
            At::UntilDown => Some(REQUEST_SPANS[2]),
            At::Observe => Some(REQUEST_SPANS[3]),
            _ => None,
        };
        if let (Some(span), None) = (span, fault) {
            let a = arg(Arg::At).map_or(call.span, |a| a.value.span());
            return Err(CheckError::new(
                a,
                format!("`at: {span}` needs `fault:` naming the fault whose span it reads"),
            )
            .hint(match self.plan.faults.keys().next() {
                Some(name) => format!("e.g. `fault: {name}, at: {span}`"),
                None => "the plan declares no faults".to_string(),
            }));
        }
        Ok(Some(functions::qualified(
            span,
            route.as_deref(),
            status.as_deref(),
        )))
    }

    /// The profile of the runs read: as given, or the only one the matrix runs for this
    /// contender with this fault (the only step ramp where a ramp is needed).
    fn profile(
        &self,
        ci: usize,
        given: Option<String>,
        fault: Option<&str>,
        needs_ramp: bool,
        profile_span: Span,
        call_span: Span,
    ) -> Result<String, CheckError> {
        let c = &self.contenders[ci];
        let runs = self.runs(c);
        let fault_words = match fault {
            Some(x) => format!("with the fault `{x}`"),
            None => "without a fault".to_string(),
        };
        let runs_hint = || {
            if runs.is_empty() {
                format!("the matrix runs nothing for `{}`", c.name)
            } else {
                let cells: Vec<String> = runs
                    .iter()
                    .map(|(p, f)| match f {
                        Some(f) => format!("{p}+{f}"),
                        None => p.clone(),
                    })
                    .collect();
                let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
                format!("the matrix runs `{}` under: {}", c.name, list(&cells))
            }
        };
        let matching: Vec<&String> = runs
            .iter()
            .filter(|(_, f)| f.as_deref() == fault)
            .map(|(p, _)| p)
            .collect();
        if let Some(p) = given {
            if !matching.contains(&&p) {
                return Err(CheckError::new(
                    profile_span,
                    format!(
                        "can never be evaluated: the matrix never runs `{}` under the profile `{p}` {fault_words}",
                        c.name
                    ),
                )
                .hint(runs_hint()));
            }
            if needs_ramp && !self.is_ramp(&p) {
                return Err(CheckError::new(
                    profile_span,
                    format!(
                        "can never be evaluated: this reads a step ramp's rows, but `{p}` is a {} profile",
                        self.plan.profiles[p.as_str()].kind()
                    ),
                )
                .hint("name a step-ramp profile, or read the measured phase (leave `at:` out)"));
            }
            return Ok(p);
        }
        let candidates: Vec<&String> = matching
            .into_iter()
            .filter(|p| !needs_ramp || self.is_ramp(p))
            .collect();
        let ramp = if needs_ramp { "step-ramp " } else { "" };
        match candidates.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(CheckError::new(
                call_span,
                format!(
                    "can never be evaluated: the matrix runs `{}` under no {ramp}profile {fault_words}",
                    c.name
                ),
            )
            .hint(runs_hint())),
            many => {
                let names: Vec<&str> = many.iter().map(|s| s.as_str()).collect();
                Err(CheckError::new(
                    call_span,
                    format!(
                        "`{}` runs under several {ramp}profiles {fault_words} ({}); name one with `profile:`",
                        c.name,
                        list(&names)
                    ),
                ))
            }
        }
    }

    /// The (profile, fault) pairs the matrix runs this contender under, in matrix order;
    /// entries naming unknown profiles or faults are left out (they have their own errors).
    fn runs(&self, c: &ResolvedContender) -> Vec<(String, Option<String>)> {
        let mut out: Vec<(String, Option<String>)> = Vec::new();
        for e in &self.plan.matrix.runs {
            let picked = e
                .contenders
                .as_ref()
                .is_none_or(|sel| sel.iter().any(|s| selects(s, c)));
            let known = self.plan.profiles.contains_key(&e.profile)
                && e.fault
                    .as_ref()
                    .is_none_or(|f| self.plan.faults.contains_key(f));
            let cell = (
                e.profile.to_string(),
                e.fault.as_ref().map(|f| f.to_string()),
            );
            if picked && known && !out.contains(&cell) {
                out.push(cell);
            }
        }
        out
    }

    fn is_ramp(&self, profile: &str) -> bool {
        matches!(
            self.plan.profiles.get(profile),
            Some(Profile::StepRamp { .. })
        )
    }

    /// A step rate must be one of the ramp's steps, where its rates are known in advance.
    fn step(&self, profile: &str, rate: f64, span: Span) -> Result<(), CheckError> {
        let Some(Profile::StepRamp {
            start: Rate::Fixed(start),
            step,
            max: Rate::Fixed(max),
            ..
        }) = self.plan.profiles.get(profile)
        else {
            return Ok(());
        };
        let n = Profile::ramp_steps(*start, *step, *max);
        let steps: Vec<f64> = (0..n).map(|k| start + k as f64 * step).collect();
        if steps.iter().any(|s| (s - rate).abs() < 1e-9) {
            return Ok(());
        }
        let mut shown: Vec<String> = steps.iter().take(8).map(|s| format!("{s}/s")).collect();
        if steps.len() > 8 {
            shown.push("…".into());
        }
        Err(CheckError::new(
            span,
            format!("can never be evaluated: the ramp `{profile}` has no step at {rate}/s"),
        )
        .hint(format!("its steps are: {}", shown.join(", "))))
    }
}

fn subject_of(f: &Function) -> &'static str {
    match f.subject {
        Subject::Contender => "a contender",
        Subject::Role => "a container role",
    }
}

fn arg_known(f: &Function, name: &Word) -> Result<(), CheckError> {
    let takes: Vec<&str> = Arg::ALL
        .into_iter()
        .filter(|a| f.takes(*a))
        .map(Arg::key)
        .collect();
    match Arg::parse(&name.text) {
        Some(a) if f.takes(a) => Ok(()),
        Some(_) => Err(CheckError::new(
            name.span,
            format!("`{}` takes no `{}:` argument", f.name, name.text),
        )
        .hint(format!("its arguments are: {}", list(&takes)))),
        None => Err(CheckError::new(
            name.span,
            format!("unknown argument `{}` of `{}`", name.text, f.name),
        )
        .hint(suggest(&name.text, &takes, "argument"))),
    }
}

/// A `status:` value: a class (`5xx`) or a code (`503`). `failed` takes none: the failed
/// share of one status is 0 or 1 by what the status is.
fn status(f: &Function, a: &NamedArg) -> Result<String, CheckError> {
    if matches!(
        f.reads,
        Reads::Measured {
            metric: "failed_share"
        }
    ) {
        return Err(CheckError::new(
            a.name.span,
            "the failed share of one status is 0 % or 100 % by what the status is",
        )
        .hint("count the requests answered with it instead, e.g. `throughput(…, status: 5xx)`"));
    }
    match &a.value {
        ArgValue::Name(w) if STATUS_CLASSES.contains(&w.text.as_str()) => Ok(w.text.clone()),
        ArgValue::Name(w) => Err(unknown(w, "status class", &STATUS_CLASSES)
            .hint("a status is a class, `2xx`, `4xx` or `5xx`, or a code such as `503`")),
        ArgValue::Number(v, None, _) if v.fract() == 0.0 && (100.0..=599.0).contains(v) => {
            Ok(format!("{v}"))
        }
        ArgValue::Number(_, _, span) => Err(CheckError::new(
            *span,
            "a status code is a whole number from 100 to 599",
        )
        .hint("e.g. `status: 503`, or a class, `status: 5xx`")),
    }
}

fn name_value<'a>(a: &'a NamedArg, what: &str) -> Result<&'a Word, CheckError> {
    match &a.value {
        ArgValue::Name(w) => Ok(w),
        ArgValue::Number(_, _, span) => Err(CheckError::new(
            *span,
            format!("`{}:` names a {what}, not a number", a.name.text),
        )),
    }
}

fn unknown(w: &Word, what: &str, known: &[&str]) -> CheckError {
    CheckError::new(w.span, format!("unknown {what} `{}`", w.text))
        .hint(suggest(&w.text, known, what))
}

fn list(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A call's first argument, which names its subject (a contender, or a role with `of:`).
fn subject_word<'c>(f: &Function, call: &'c Call) -> Result<&'c Word, CheckError> {
    match &call.subject {
        Some(ArgValue::Name(w)) => Ok(w),
        Some(v) => Err(CheckError::new(
            v.span(),
            format!("the first argument of `{}` is a name, not a number", f.name),
        )),
        None => {
            let example = match f.subject {
                Subject::Contender => format!("{}(svc)", f.name),
                Subject::Role => format!("{}(replicas, of: svc)", f.name),
            };
            Err(CheckError::new(
                call.span,
                format!("`{}` needs {} as its first argument", f.name, subject_of(f)),
            )
            .hint(format!("e.g. `{example}`")))
        }
    }
}

/// The metric a function reads and the definition that picks its row: a saturation's
/// definition and breach, a recovery's origin, a per-container figure's span, a detection's
/// kind.
fn metric_and_definition(
    f: &Function,
    at: &At,
    (definition, breach): (Option<String>, Option<String>),
    origin: Option<String>,
    detect: Option<String>,
) -> (String, String) {
    let span_definition = match at {
        // The fault's spans are the request figures', which read `request_rows`.
        At::Measured | At::Fault | At::UntilDown | At::Observe => "measured",
        At::FirstBreach => "first-breach",
        At::Step(_) => "step",
    };
    match f.reads {
        Reads::Measured { metric } => (metric.to_string(), String::new()),
        Reads::Saturation => (
            BREACHES
                .iter()
                .find(|b| Some(b.0) == breach.as_deref())
                .map_or(BREACHES[0].1, |b| b.1)
                .to_string(),
            definition.unwrap_or_else(|| DEFINITIONS[0].to_string()),
        ),
        Reads::PerContainer { metric } => (metric.to_string(), span_definition.to_string()),
        Reads::Efficiency => (
            "requests_per_core_second".to_string(),
            span_definition.to_string(),
        ),
        Reads::Recovery => (
            "time_to_recover".to_string(),
            origin.unwrap_or_else(|| ORIGINS[0].to_string()),
        ),
        Reads::Detect => (
            format!(
                "detect_{}",
                detect.as_deref().unwrap_or(DETECTIONS[0]).replace('-', "_")
            ),
            String::new(),
        ),
        Reads::Ready => ("time_to_ready".to_string(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = include_str!("../../../../../tests/plans/valid/hypotheses.yaml");

    fn plan() -> Plan {
        let ctx = crate::plan::validate::Context {
            host_cores: None,
            exists: None,
        };
        match crate::plan::load_str("t.yaml", PLAN, &ctx) {
            Ok(l) => l.plan,
            Err(crate::plan::LoadError::Invalid { diagnostics, .. }) => panic!("{diagnostics:?}"),
            Err(e) => panic!("{e}"),
        }
    }

    /// The first error: its offset, message and hint.
    fn err(src: &str) -> (usize, String, String) {
        let e = check(&plan(), src).unwrap_err().remove(0);
        (e.span.start, e.message, e.hint.unwrap_or_default())
    }

    #[test]
    fn request_figures_read_their_span_route_and_status() {
        for (text, definition) in [
            ("p99(feed-py, route: feed) < 1s", "route:feed"),
            (
                "p50(feed-py, fault: db-latency, at: fault, status: 5xx) < 1s",
                "at:fault status:5xx",
            ),
            (
                "p99(feed-py, fault: db-latency, at: observe, route: feed) < 1s",
                "at:observe route:feed",
            ),
            (
                "p99(feed-rs.indexed, fault: replica-kill, at: until-down) > 1s",
                "at:until-down",
            ),
            (
                "throughput(feed-py, fault: db-latency, status: 503, route: feed, at: fault) > 1/s",
                "at:fault route:feed status:503",
            ),
            (
                "throughput(feed-py, status: 2xx, at: measured) > 1/s",
                "status:2xx",
            ),
        ] {
            let q = &check(&plan(), text).unwrap()[0];
            assert_eq!(q.definition, definition, "{text}");
            if text.contains("fault:") {
                assert_eq!(q.profile, "baseline", "{text}: the fault's runs");
            }
        }
        // Refused: a span without its fault, a step, a span of another function's, a class
        // or code that is none, the failed share of one status.
        for (text, at, message) in [
            (
                "p99(feed-py, at: fault) < 1s",
                17,
                "`at: fault` needs `fault:`",
            ),
            (
                "p99(feed-py, at: 30/s) < 1s",
                17,
                "read over a span, not a step",
            ),
            (
                "p99(feed-py, at: first-breach) < 1s",
                17,
                "unknown span `first-breach`",
            ),
            (
                "cpu(database, of: feed-py, fault: db-latency, at: fault) < 90%",
                50,
                "unknown span `fault`",
            ),
            (
                "p99(feed-py, status: 3xx) < 1s",
                21,
                "unknown status class `3xx`",
            ),
            (
                "p99(feed-py, status: 700) < 1s",
                21,
                "whole number from 100 to 599",
            ),
            (
                "p99(feed-py, status: 50.5) < 1s",
                21,
                "whole number from 100 to 599",
            ),
            ("failed(feed-py, status: 5xx) < 1%", 16, "0 % or 100 %"),
        ] {
            let (start, m, _) = err(text);
            assert!(m.contains(message), "{text}: {m}");
            assert_eq!(start, at, "{text}: {m}");
        }
        // A restarted replica's time to its first readiness, of a fault that restarts one.
        let q = &check(&plan(), "ready(feed-rs.indexed, fault: replica-kill) < 1s").unwrap()[0];
        assert_eq!(
            (q.metric.as_str(), q.definition.as_str(), q.unit),
            ("time_to_ready", "", ("s", 1.0))
        );
        let (at, m, hint) = err("ready(feed-py, fault: db-latency) < 1s");
        assert!(
            m.contains(
                "can never be evaluated: `ready` needs a fault that kills or stops a replica"
            ),
            "{m}"
        );
        assert_eq!(at, 22, "{m}");
        assert!(hint.contains("started again"), "{hint}");
        let (_, m, _) = err("ready(feed-py) < 1s");
        assert!(m.contains("`ready` needs `fault:`"), "{m}");
        let (_, _, hint) = err("cpu(database, of: feed-py, fault: db-latency, at: fault) < 90%");
        assert!(hint.contains("for the request figures"), "{hint}");
    }

    #[test]
    fn queries_name_the_rows_they_read() {
        let q = check(
            &plan(),
            "cpu(database, at: first-breach, of: feed-rs.indexed) >= 90%",
        )
        .unwrap();
        assert_eq!(
            q,
            [Query {
                function: "cpu",
                contender: "feed-rs.indexed".into(),
                declared: "feed-rs".into(),
                variant: Some("indexed".into()),
                profile: "ramp".into(),
                fault: None,
                metric: "cpu_mean_pct_of_cap".into(),
                definition: "first-breach".into(),
                role: Some("database".into()),
                at: At::FirstBreach,
                stat: "median",
                unit: ("%", 0.01),
                span: Span::new(0, 52),
            }]
        );
        let q = check(
            &plan(),
            "recovery(feed-rs.indexed, fault: replica-kill) > 1s and detect(feed-py, fault: db-latency, stat: max) < 1s and saturation(feed-py, definition: p99-only) > 1/s and efficiency(feed-py, at: 30/s) > 1/core-s",
        )
        .unwrap();
        let rows: Vec<(&str, &str, &str, Option<&str>, &str)> = q
            .iter()
            .map(|q| {
                (
                    q.metric.as_str(),
                    q.definition.as_str(),
                    q.profile.as_str(),
                    q.role.as_deref(),
                    q.stat,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                // A kill's own origin: its replica back in service.
                ("time_to_recover", "restart", "baseline", None, "median"),
                ("detect_objective_window", "", "baseline", None, "max"),
                ("saturation", "p99-only", "ramp", None, "median"),
                (
                    "requests_per_core_second",
                    "step",
                    "ramp",
                    Some("replicas"),
                    "median"
                ),
            ]
        );
        assert_eq!(q[3].at, At::Step(30.0));
        // A link fault's own origin is its removal; a named origin is the one named.
        for (text, origin) in [
            ("recovery(feed-py, fault: db-latency) < 1s", "clear"),
            (
                "recovery(feed-rs.indexed, fault: replica-kill, origin: clear) < 1s",
                "clear",
            ),
            (
                "recovery(feed-rs.indexed, fault: replica-kill, origin: restart) < 1s",
                "restart",
            ),
        ] {
            assert_eq!(
                check(&plan(), text).unwrap()[0].definition,
                origin,
                "{text}"
            );
        }
        // A saturation is read at its sustained breach unless the check asks for the first.
        for (text, metric) in [
            ("saturation(feed-py) > 1/s", "saturation"),
            ("saturation(feed-py, breach: sustained) > 1/s", "saturation"),
            (
                "saturation(feed-py, breach: first) > 1/s",
                "saturation_before_first_breach",
            ),
        ] {
            let q = &check(&plan(), text).unwrap()[0];
            assert_eq!(
                (q.metric.as_str(), q.definition.as_str()),
                (metric, "objective-windows"),
                "{text}"
            );
        }
        // A route's figures: the measured phase's rows of that route.
        let q = &check(&plan(), "p99(feed-py, route: feed) < 1s").unwrap()[0];
        assert_eq!(
            (q.metric.as_str(), q.definition.as_str()),
            ("latency_p99", "route:feed")
        );
        let (_, m, h) = err("failed(feed-py, route: fed) < 1%");
        assert!(m.contains("unknown route `fed`"), "{m}");
        assert!(h.contains("`feed`"), "{h}");
        let (_, m, _) = err("saturation(feed-py, route: feed) > 1/s");
        assert!(m.contains("route"), "{m}");
        let (_, m, h) = err("saturation(feed-py, breach: last) > 1/s");
        assert!(m.contains("breach"), "{m}");
        assert!(h.contains("sustained") && h.contains("first"), "{h}");
    }

    #[test]
    fn every_check_of_the_fixture_passes() {
        let p = plan();
        let checks: Vec<&String> = p
            .study
            .hypotheses
            .iter()
            .filter_map(|h| h.check.as_ref())
            .collect();
        assert_eq!(checks.len(), 6);
        for c in checks {
            assert!(check(&p, c).is_ok(), "{c}: {:?}", check(&p, c));
        }
    }

    #[test]
    fn unknown_names_get_a_did_you_mean() {
        assert_eq!(
            err("saturaton(feed-py) > 1/s"),
            (
                0,
                "unknown function `saturaton`".into(),
                format!(
                    "did you mean `saturation`? (the functions are: {})",
                    list(&FUNCTIONS.map(|f| f.name))
                )
            )
        );
        let (at, m, h) = err("saturation(feed-pi) > 1/s");
        assert_eq!((at, m.as_str()), (11, "unknown contender `feed-pi`"));
        assert!(h.starts_with("did you mean `feed-py`?"), "{h}");
        let (at, m, h) = err("saturation(feed-rs.indexd) > 1/s");
        assert_eq!(
            (at, m.as_str()),
            (19, "unknown variant `indexd` of `feed-rs`")
        );
        assert!(h.starts_with("did you mean `indexed`?"), "{h}");
        let (at, m, h) = err("saturation(feed-rs) > 1/s");
        assert_eq!(
            (at, m.as_str()),
            (11, "`feed-rs` runs as its variants; name one")
        );
        assert_eq!(
            h,
            "the variants are: `feed-rs.indexed`, `feed-rs.production`"
        );
        let (at, m, h) = err("failed(feed-py, fault: db-latncy) < 1%");
        assert_eq!((at, m.as_str()), (23, "unknown fault `db-latncy`"));
        assert!(h.starts_with("did you mean `db-latency`?"), "{h}");
        let (_, m, h) = err("failed(feed-py, profile: basline, fault: db-latency) < 1%");
        assert_eq!(m, "unknown profile `basline`");
        assert!(h.starts_with("did you mean `baseline`?"));
        let (_, m, h) = err("saturation(feed-py, definition: every-secnd) > 1/s");
        assert_eq!(m, "unknown definition `every-secnd`");
        assert!(h.starts_with("did you mean `every-second`?"));
        let (_, m, _) = err("recovery(feed-py, fault: db-latency, origin: clearing) < 1s");
        assert_eq!(m, "unknown origin `clearing`");
        let (_, m, h) = err("detect(feed-py, fault: db-latency, detect: balancer) < 1s");
        assert_eq!(m, "unknown detection kind `balancer`");
        assert!(h.contains("balancer-down"));
        let (at, m, h) = err("cpu(replica, of: feed-py) < 1%");
        assert_eq!((at, m.as_str()), (4, "unknown role `replica`"));
        assert!(h.starts_with("did you mean `replicas`?"), "{h}");
        assert_eq!(
            err("cpu(replica-3, of: feed-py) < 1%").1,
            "unknown role `replica-3`"
        );
        let (_, m, h) = err("failed(feed-py, falt: db-latency) < 1%");
        assert_eq!(m, "unknown argument `falt` of `failed`");
        assert!(h.starts_with("did you mean `fault`?"));
        let (_, m, _) = err("failed(feed-py, origin: clear) < 1%");
        assert_eq!(m, "`failed` takes no `origin:` argument");
        assert_eq!(
            err("p99(feed-py, stat: p95) < 1s").1,
            "unknown statistic `p95`"
        );
        let (_, m, h) = err("cpu(replica-1, of: feed-py, at: baseline) < 1%");
        assert_eq!(m, "unknown span `baseline`");
        assert!(
            h.ends_with("for the profile write `profile: baseline`"),
            "{h}"
        );
    }

    #[test]
    fn units_must_agree() {
        assert_eq!(
            err("p99(feed-py, fault: db-latency) < 1%").1,
            "compares a duration (`ms`, `s`) with a share (`%`)"
        );
        assert_eq!(
            err("p99(feed-py, fault: db-latency) < 500").1,
            "compares a duration (`ms`, `s`) with a plain number"
        );
        assert_eq!(
            err("p99(feed-py, fault: db-latency) + 1% < 1s"),
            (
                34,
                "cannot add a duration (`ms`, `s`) and a share (`%`)".into(),
                String::new()
            )
        );
        assert_eq!(
            err("1s * 2s < 1s").1,
            "cannot multiply a duration (`ms`, `s`) and a duration (`ms`, `s`)"
        );
        assert_eq!(
            err("1s / 2% < 1").1,
            "cannot divide a duration (`ms`, `s`) by a share (`%`)"
        );
        // Time adds to time whatever its unit; a ratio of like quantities is a plain number.
        assert!(check(&plan(), "500ms + 1s < 2s and 1s / 500ms == 2 and -1s < 0s").is_ok());
    }

    #[test]
    fn conditions_and_quantities_do_not_mix() {
        assert_eq!(err("1 < 2 < 3").1, "comparisons do not chain");
        assert_eq!(
            err("(1 < 2) < 3"),
            (
                0,
                "a comparison takes numbers, but this is a condition".into(),
                "a condition is true or false; join conditions with `and`, `or`, `not`".into()
            )
        );
        assert_eq!(
            err("1s and 1 < 2").1,
            "`and` joins conditions, but this is a duration (`ms`, `s`)"
        );
        assert_eq!(
            err("not 5%").1,
            "`not` joins conditions, but this is a share (`%`)"
        );
        assert_eq!(
            err("(1 < 2) + 1 < 3").1,
            "`+` takes numbers, but this is a condition"
        );
        assert_eq!(
            err("p99(feed-py, fault: db-latency)").1,
            "a check must be a condition, but this is a duration (`ms`, `s`)"
        );
    }

    #[test]
    fn a_check_the_matrix_cannot_evaluate_is_refused() {
        let (at, m, h) = err("failed(feed-py, profile: baseline, fault: replica-kill) < 1%");
        assert_eq!((at, m.as_str()), (25, "can never be evaluated: the matrix never runs `feed-py` under the profile `baseline` with the fault `replica-kill`"));
        assert_eq!(
            h,
            "the matrix runs `feed-py` under: `ramp`, `baseline+db-latency`"
        );
        let (at, m, _) = err("recovery(feed-py, fault: replica-kill) < 1s");
        assert_eq!((at, m.as_str()), (0, "can never be evaluated: the matrix runs `feed-py` under no profile with the fault `replica-kill`"));
        let (_, m, _) = err("cpu(replica-1, of: feed-py, profile: baseline, fault: db-latency, at: first-breach) < 1%");
        assert_eq!(m, "can never be evaluated: this reads a step ramp's rows, but `baseline` is a constant profile");
        let (_, m, _) = err("saturation(feed-py, fault: db-latency) > 1/s");
        assert_eq!(m, "can never be evaluated: the matrix runs `feed-py` under no step-ramp profile with the fault `db-latency`");
        let (_, m, h) = err("efficiency(feed-py, at: 25/s) > 1/core-s");
        assert_eq!(
            m,
            "can never be evaluated: the ramp `ramp` has no step at 25/s"
        );
        assert_eq!(h, "its steps are: 10/s, 20/s, 30/s");
        let (_, m, _) = err("recovery(feed-py, fault: db-latency, origin: restart) < 1s");
        assert_eq!(m, "can never be evaluated: `origin: restart` needs a fault that kills or stops a replica, but `db-latency` is link-latency");
        assert_eq!(
            err("recovery(feed-py) < 1s").1,
            "`recovery` needs `fault:` naming the fault it is about"
        );
        assert_eq!(
            err("cpu(database) < 1%").1,
            "`cpu` needs `of:` naming the contender"
        );
        assert_eq!(
            err("cpu() < 1%").1,
            "`cpu` needs a container role as its first argument"
        );
    }

    #[test]
    fn every_error_of_a_check_is_reported_once() {
        let e = check(
            &plan(),
            "p99(nope) < 1s and failed(feed-py, fault: nope) < 1% or 1s < 1%",
        )
        .unwrap_err();
        let m: Vec<&str> = e.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(
            m,
            [
                "unknown contender `nope`",
                "unknown fault `nope`",
                "compares a duration (`ms`, `s`) with a share (`%`)"
            ]
        );
    }

    #[test]
    fn no_input_panics() {
        // A deterministic stream of strings drawn from the check's own alphabet and beyond.
        const PIECES: [&str; 32] = [
            "saturation(",
            "cpu(",
            "p99.9(",
            "feed-rs.indexed",
            "feed-py",
            ",",
            ":",
            "at",
            "of",
            ")",
            "(",
            " ",
            "and",
            "or",
            "not",
            "<",
            ">=",
            "==",
            "!=",
            "+",
            "-",
            "*",
            "/",
            "5",
            "1.5",
            "%",
            "ms",
            "/s",
            "é",
            "\"",
            "9e99",
            "first-breach",
        ];
        let p = plan();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..5000 {
            let mut s = String::new();
            for _ in 0..(x % 24) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.push_str(PIECES[(x % PIECES.len() as u64) as usize]);
            }
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            let _ = check(&p, &s);
        }
    }
}
