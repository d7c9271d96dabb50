//! Semantic checks of a typed plan: ranges, cross-references, dependencies, and warnings.
//! Every finding carries the field path it is about; `load` turns paths into positions.

use std::collections::{HashMap, HashSet};

use super::de::suggest;
use super::expand::{
    profile_dependencies, profile_length, resolve_contenders, selects, ResolvedContender,
};
use super::model::{
    Cap, CappedRole, CapsOverride, Fault, Injection, LoadGeneratorKind, Matrix, MatrixEntry, Plan,
    Profile, ServiceKind, Workload,
};
use super::units::{Duration, Name, Rate};
use super::yaml::join_key;
use super::Severity;

/// What validation may know about the world, passed in so the core stays pure.
pub struct Context<'a> {
    /// Cores of the machine feedbench runs on, for the oversubscription warning (a warning:
    /// `run` checks caps against the cores the engine reports).
    pub host_cores: Option<f64>,
    /// Whether a path relative to the plan file exists (init scripts, build contexts).
    pub exists: Option<&'a dyn Fn(&str) -> bool>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub severity: Severity,
    pub path: String,
    pub message: String,
    pub hint: Option<String>,
    /// Point at the key rather than the value (for names that are wrong).
    pub at_key: bool,
    /// A byte offset inside the value's string: where in a hypothesis' check the problem is.
    pub offset: Option<usize>,
}

#[derive(Default)]
struct Findings(Vec<Finding>);

impl Findings {
    fn error(&mut self, path: impl Into<String>, message: impl Into<String>) -> &mut Finding {
        self.push(Severity::Error, path.into(), message.into())
    }
    fn warn(&mut self, path: impl Into<String>, message: impl Into<String>) -> &mut Finding {
        self.push(Severity::Warning, path.into(), message.into())
    }
    fn push(&mut self, severity: Severity, path: String, message: String) -> &mut Finding {
        self.0.push(Finding {
            severity,
            path,
            message,
            hint: None,
            at_key: false,
            offset: None,
        });
        self.0.last_mut().expect("just pushed")
    }
}

impl Finding {
    fn hint(&mut self, hint: impl Into<String>) -> &mut Self {
        self.hint = Some(hint.into());
        self
    }
    fn at_key(&mut self) -> &mut Self {
        self.at_key = true;
        self
    }
}

/// A field path: `parts[0]` is a path already, the rest are keys appended to it.
fn p(parts: &[&str]) -> String {
    parts[1..]
        .iter()
        .fold(parts[0].to_string(), |acc, k| join_key(&acc, k))
}

/// "unknown X `y`" with a did-you-mean over the known names.
fn unknown<'a, 'f>(
    f: &'f mut Findings,
    path: String,
    what: &str,
    found: &str,
    known: impl Iterator<Item = &'a str>,
) -> &'f mut Finding {
    let known: Vec<&str> = known.collect();
    let hint = suggest(found, &known, what);
    f.error(path, format!("unknown {what} `{found}`"))
        .hint(hint)
}

/// Checks a plan; returns errors and warnings, errors first.
pub fn validate(plan: &Plan, ctx: &Context) -> Vec<Finding> {
    let mut f = Findings::default();
    study(plan, &mut f);
    caps(plan, &mut f);
    topology(plan, ctx, &mut f);
    contenders(plan, ctx, &mut f);
    workloads(plan, &mut f);
    profiles(plan, &mut f);
    faults(plan, &mut f);
    guards(plan, &mut f);
    analysis(plan, &mut f);
    matrix(plan, ctx, &mut f);
    load_generator_memory(plan, &mut f);
    let mut all = f.0;
    all.sort_by_key(|x| x.severity != Severity::Error);
    all
}

fn study(plan: &Plan, f: &mut Findings) {
    let s = &plan.study;
    if s.hypotheses.is_empty() {
        f.error(
            "study.hypotheses",
            "a study states at least one hypothesis before any run",
        )
        .hint("add `- {id: H1, text: \"...\"}`: pre-registration means writing it down first");
    }
    let mut seen = HashSet::new();
    for (i, h) in s.hypotheses.iter().enumerate() {
        let path = format!("study.hypotheses[{i}]");
        if h.id.trim().is_empty() {
            f.error(
                format!("{path}.id"),
                "a hypothesis needs an id, e.g. \"H1\"",
            );
        } else if !seen.insert(h.id.as_str()) {
            f.error(
                format!("{path}.id"),
                format!("the hypothesis id `{}` is used twice", h.id),
            );
        }
        if h.text.trim().is_empty() {
            f.error(format!("{path}.text"), "a hypothesis needs its text");
        }
        if let Some(text) = &h.check {
            if let Err(errors) = super::check::check(plan, text) {
                for e in errors {
                    let finding = f.error(format!("{path}.check"), e.message);
                    finding.hint = e.hint;
                    finding.offset = Some(e.span.start);
                }
            }
        }
    }
    let o = &s.objective;
    if o.p99.millis == 0 {
        f.error("study.objective.p99", "the p99 bound must be above 0");
    }
    if o.window.millis < 1000 {
        f.error(
            "study.objective.window",
            "the evaluation window must be at least 1s",
        );
    }
    if o.error_rate.percent > 100.0 {
        f.error(
            "study.objective.error-rate",
            format!("an error rate of {} is above 100%", o.error_rate),
        );
    }
}

fn cap(f: &mut Findings, path: String, c: &Cap) {
    if !(c.cpus.is_finite() && c.cpus > 0.0) {
        f.error(
            format!("{path}.cpus"),
            format!("cpus must be above 0, found {}", c.cpus),
        )
        .hint("fractional cores are fine, e.g. 0.5");
    }
    if c.memory.bytes < 6 << 20 {
        f.error(
            format!("{path}.memory"),
            format!(
                "memory must be at least 6MiB (the engine's minimum), found {}",
                c.memory
            ),
        );
    }
}

fn caps_override(f: &mut Findings, path: &str, o: &CapsOverride) {
    for (role, c) in o.entries() {
        cap(f, p(&[path, role.key()]), &c);
    }
}

fn caps(plan: &Plan, f: &mut Findings) {
    let c = &plan.caps;
    for role in [
        CappedRole::Replica,
        CappedRole::Database,
        CappedRole::ObjectStore,
        CappedRole::FaultProxy,
        CappedRole::Balancer,
        CappedRole::LoadGenerator,
    ] {
        if let Some(x) = c.get(role) {
            cap(f, p(&["caps", role.key()]), &x);
        }
    }
    // A role the topology does not have needs no cap; one it has needs its cap, in `caps`
    // or in the caps of every contender (and variant) that runs.
    let contenders = resolve_contenders(plan);
    for kind in [ServiceKind::Database, ServiceKind::ObjectStore] {
        let role = kind.role();
        let services: Vec<String> = plan
            .topology
            .services
            .iter()
            .filter(|(_, s)| s.kind == kind)
            .map(|(n, _)| format!("`{n}`"))
            .collect();
        let without: Vec<String> = contenders
            .iter()
            .filter(|r| r.caps.get(role).is_none())
            .map(|r| format!("`{}`", r.name))
            .collect();
        if services.is_empty() || without.is_empty() {
            continue;
        }
        let whom = if without.len() == contenders.len() {
            String::new()
        } else {
            format!(" for {}", without.join(", "))
        };
        f.error(
            "caps",
            format!(
                "the topology declares {} but `caps.{}` is missing{whom} (service {})",
                kind.described(),
                role.key(),
                services.join(", ")
            ),
        )
        .hint(format!(
            "add `{}: {{cpus: 1, memory: 512MiB}}` under `caps`",
            role.key()
        ));
    }
}

fn port(f: &mut Findings, path: String, port: u16) {
    if port == 0 {
        f.error(path, "a port must be between 1 and 65535");
    }
}

fn file(f: &mut Findings, ctx: &Context, path: String, rel: &str, what: &str) {
    if let Some(exists) = ctx.exists {
        if !exists(rel) {
            f.error(path, format!("{what} `{rel}` does not exist"))
                .hint("paths are relative to the plan file's directory");
        }
    }
}

fn topology(plan: &Plan, ctx: &Context, f: &mut Findings) {
    let t = &plan.topology;
    if t.replicas == 0 {
        f.error("topology.replicas", "at least 1 replica is needed");
    }
    for (name, s) in &t.services {
        let base = p(&["topology", "services", name.as_str()]);
        port(f, format!("{base}.port"), s.port);
        for (i, init) in s.init.iter().enumerate() {
            file(f, ctx, format!("{base}.init[{i}]"), init, "the init script");
        }
        if let Some(b) = &s.build {
            file(
                f,
                ctx,
                format!("{base}.build.context"),
                &b.context,
                "the build context",
            );
        }
    }
    let mut listens: HashMap<u16, &Name> = HashMap::new();
    for (name, l) in &t.links {
        let base = p(&["topology", "links", name.as_str()]);
        if !t.services.contains_key(&l.service) {
            unknown(
                f,
                format!("{base}.service"),
                "service",
                l.service.as_str(),
                t.services.keys().map(Name::as_str),
            );
        }
        if let Some(pt) = l.port {
            port(f, format!("{base}.port"), pt);
        }
        port(f, format!("{base}.listen"), l.listen);
        if l.listen == 8474 {
            f.error(
                format!("{base}.listen"),
                "port 8474 is the fault proxy's API port; choose another",
            );
        }
        if let Some(other) = listens.insert(l.listen, name) {
            f.error(
                format!("{base}.listen"),
                format!("link `{other}` already listens on {}", l.listen),
            );
        }
    }
    let b = &t.balancer;
    if b.check.inter.millis < 100 {
        f.error(
            "topology.balancer.check.inter",
            "the check interval must be at least 100ms",
        );
    }
    if b.check.fall == 0 {
        f.error("topology.balancer.check.fall", "fall must be at least 1");
    }
    if b.check.rise == 0 {
        f.error("topology.balancer.check.rise", "rise must be at least 1");
    }
    if b.connect_timeout.millis == 0 {
        f.error(
            "topology.balancer.connect-timeout",
            "the connect timeout must be above 0",
        );
    }
    let lg = &t.load_generator;
    if let Some(lag) = lg.max_lag {
        if !matches!(lg.kind, LoadGeneratorKind::Native) {
            f.error(
                "topology.load-generator.max-lag",
                "max-lag is feedbench-load's bound on a start's lag; k6 has none",
            )
            .hint("remove max-lag, or set `kind: native`");
        } else if lag.millis == 0 {
            f.error(
                "topology.load-generator.max-lag",
                "max-lag must be above 0 (a start is never exactly on time)",
            )
            .hint("250ms is the default: two and a half CPU-cap periods");
        }
    }
    if lg.max_in_flight == Some(0) {
        f.error(
            "topology.load-generator.max-in-flight",
            "max-in-flight must be at least 1: with none in flight no request is ever sent",
        )
        .hint("leave it out for the default: every request may take the whole timeout");
    }
    for (role, build) in [
        ("balancer", &b.build),
        ("fault-proxy", &t.fault_proxy.build),
        ("load-generator", &t.load_generator.build),
        ("co-tenant", &t.co_tenant.build),
    ] {
        if let Some(b) = build {
            file(
                f,
                ctx,
                format!("topology.{role}.build.context"),
                &b.context,
                "the build context",
            );
        }
    }
}

/// Names a template may use: `links.<link>.host` and `links.<link>.port`.
fn template(f: &mut Findings, plan: &Plan, path: String, text: &str) {
    let env = minijinja::Environment::new();
    let tmpl = match env.template_from_str(text) {
        Ok(t) => t,
        Err(e) => {
            f.error(
                path,
                format!(
                    "not a valid template: {}",
                    e.detail().unwrap_or("syntax error")
                ),
            )
            .hint("write `{{ links.<link>.host }}`; a literal `{{` is written `{{ '{{' }}`");
            return;
        }
    };
    let mut names: Vec<String> = tmpl.undeclared_variables(true).into_iter().collect();
    names.sort();
    for name in names {
        let parts: Vec<&str> = name.split('.').collect();
        let ok = match parts.as_slice() {
            ["links", link, field] => {
                plan.topology.links.contains_key(*link) && matches!(*field, "host" | "port")
            }
            _ => false,
        };
        if !ok {
            let links: Vec<String> = plan
                .topology
                .links
                .keys()
                .flat_map(|l| [format!("links.{l}.host"), format!("links.{l}.port")])
                .collect();
            let known: Vec<&str> = links.iter().map(String::as_str).collect();
            f.error(
                path.clone(),
                format!("the template names `{name}`, which is not defined"),
            )
            .hint(suggest(&name, &known, "name"));
        }
    }
}

fn contenders(plan: &Plan, ctx: &Context, f: &mut Findings) {
    if plan.contenders.is_empty() {
        f.error("contenders", "a study needs at least one contender");
    }
    for (name, c) in &plan.contenders {
        let base = p(&["contenders", name.as_str()]);
        port(f, format!("{base}.port"), c.port);
        if c.replicas == Some(0) {
            f.error(format!("{base}.replicas"), "at least 1 replica is needed");
        }
        for (k, v) in &c.env {
            template(f, plan, p(&[&base, "env", k.as_str()]), v.as_str());
        }
        if let Some(b) = &c.build {
            file(
                f,
                ctx,
                format!("{base}.build.context"),
                &b.context,
                "the build context",
            );
        }
        if let Some(g) = &c.gate {
            if g.command.is_empty() {
                f.error(
                    format!("{base}.gate.command"),
                    "the gate needs a command (an argv list)",
                );
            }
            if g.timeout.millis == 0 {
                f.error(
                    format!("{base}.gate.timeout"),
                    "the gate timeout must be above 0",
                );
            }
        }
        if let Some(o) = &c.caps {
            caps_override(f, &format!("{base}.caps"), o);
        }
        for (vname, v) in &c.variants {
            let vbase = p(&[&base, "variants", vname.as_str()]);
            for (k, val) in &v.env {
                template(f, plan, p(&[&vbase, "env", k.as_str()]), val.as_str());
            }
            if let Some(o) = &v.caps {
                caps_override(f, &format!("{vbase}.caps"), o);
            }
            for (svc, o) in &v.services {
                let sbase = p(&[&vbase, "services", svc.as_str()]);
                if !plan.topology.services.contains_key(svc) {
                    unknown(
                        f,
                        sbase.clone(),
                        "service",
                        svc.as_str(),
                        plan.topology.services.keys().map(Name::as_str),
                    )
                    .at_key();
                }
                for (i, init) in o.init.iter().flatten().enumerate() {
                    file(
                        f,
                        ctx,
                        format!("{sbase}.init[{i}]"),
                        init,
                        "the init script",
                    );
                }
            }
        }
    }
    // `a` with variant `b` and a contender named `a.b` cannot both exist (names have no
    // dots), but two variants must not collide with each other either.
    let mut seen = HashSet::new();
    for c in resolve_contenders(plan) {
        if !seen.insert(c.name.clone()) {
            f.error(
                p(&["contenders", c.declared.as_str()]),
                format!("the contender `{}` is declared twice", c.name),
            );
        }
    }
}

/// The study's workload and every named one, each checked alike at its own path; a named
/// workload no profile sends is a warning, and a profile naming an undeclared one an error.
fn workloads(plan: &Plan, f: &mut Findings) {
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

fn positive(f: &mut Findings, path: String, d: Duration) {
    if d.millis == 0 {
        f.error(path, "must be longer than 0s");
    }
}

fn profiles(plan: &Plan, f: &mut Findings) {
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

fn faults(plan: &Plan, f: &mut Findings) {
    let contenders = resolve_contenders(plan);
    let min_replicas = contenders
        .iter()
        .map(|c| c.replicas)
        .min()
        .unwrap_or(plan.topology.replicas);
    for (name, fault) in &plan.faults {
        let base = p(&["faults", name.as_str()]);
        positive(f, format!("{base}.duration"), fault.duration);
        let ibase = format!("{base}.inject.{}", fault.inject.kind());
        if let Some(link) = fault.inject.link() {
            if !plan.topology.links.contains_key(link) {
                unknown(
                    f,
                    format!("{ibase}.link"),
                    "link",
                    link.as_str(),
                    plan.topology.links.keys().map(Name::as_str),
                );
            }
        }
        if let Some(r) = fault.inject.replica() {
            if r == 0 || r > min_replicas {
                f.error(
                    format!("{ibase}.replica"),
                    format!("replica {r} does not exist; replicas count from 1 to {min_replicas}"),
                );
            }
        }
        match &fault.inject {
            Injection::CpuSteal { cores } => {
                if !(cores.is_finite() && *cores > 0.0) {
                    f.error(
                        format!("{ibase}.cores"),
                        format!("cores must be above 0, found {cores}"),
                    );
                }
            }
            Injection::LinkLatency { latency, .. } => {
                positive(f, format!("{ibase}.latency"), *latency)
            }
            Injection::Toxic {
                toxic_type,
                toxicity,
                attributes,
                ..
            } => {
                if !(0.0..=1.0).contains(toxicity) {
                    f.error(
                        format!("{ibase}.toxicity"),
                        format!("toxicity is a probability from 0 to 1, found {toxicity}"),
                    );
                }
                for key in attributes.keys() {
                    if !toxic_type.attributes().contains(&key.as_str()) {
                        unknown(
                            f,
                            format!("{ibase}.attributes.{key}"),
                            "attribute",
                            key,
                            toxic_type.attributes().iter().copied(),
                        )
                        .at_key();
                    }
                }
            }
            Injection::StopReplica { grace, .. } => positive(f, format!("{ibase}.grace"), *grace),
            Injection::KillReplica { .. }
            | Injection::FreezeReplica { .. }
            | Injection::LinkDown { .. } => {}
        }
    }
}

fn guards(plan: &Plan, f: &mut Findings) {
    let g = &plan.guards;
    for (field, v) in [
        ("measurement-cpu-ceiling", g.measurement_cpu_ceiling),
        (
            "measurement-throttle-ceiling",
            g.measurement_throttle_ceiling,
        ),
        ("host-interference", g.host_interference),
    ] {
        if v.percent <= 0.0 || v.percent > 100.0 {
            f.error(
                format!("guards.{field}"),
                format!("expected a share from above 0% to 100%, found {v}"),
            );
        }
    }
    if g.dropped_iterations.percent > 100.0 {
        f.error(
            "guards.dropped-iterations",
            format!("expected at most 100%, found {}", g.dropped_iterations),
        );
    }
}

fn analysis(plan: &Plan, f: &mut Findings) {
    let r = &plan.analysis.recovery;
    let base = "analysis.recovery";
    if r.window.millis == 0 {
        f.error(
            format!("{base}.window"),
            "the window must be longer than 0s",
        )
        .hint("the rule judges windows of this length after a fault, e.g. `10s`");
    }
    if r.step.millis == 0 {
        f.error(format!("{base}.step"), "the step must be longer than 0s")
            .hint("candidate instants and windows lie on a grid of this step, e.g. `100ms`");
    } else if r.window.millis > 0 && r.step > r.window {
        f.error(
            format!("{base}.step"),
            format!(
                "the step ({}) is longer than the window ({}), so the windows would leave gaps between them",
                r.step, r.window
            ),
        )
        .hint(format!("make the step at most {}", r.window));
    }
    if r.step.millis > 0 && r.hold.millis % r.step.millis != 0 {
        let below = Duration {
            millis: r.hold.millis - r.hold.millis % r.step.millis,
        };
        let above = Duration {
            millis: below.millis + r.step.millis,
        };
        f.error(
            format!("{base}.hold"),
            format!(
                "the hold ({}) is not a whole multiple of the step ({}): the rule checks the windows at t + j·step for j = 0 … hold/step",
                r.hold, r.step
            ),
        )
        .hint(format!("write {below} or {above}, or change the step"));
    }
    for (field, v, zero) in [
        (
            "throughput-tolerance",
            r.throughput_tolerance,
            "the control's throughput exactly",
        ),
        (
            "latency-tolerance",
            r.latency_tolerance,
            "a p95 and p99 at most the control's",
        ),
    ] {
        if !(0.0..=100.0).contains(&v.percent) {
            f.error(
                format!("{base}.{field}"),
                format!("expected a tolerance from 0% to 100%, found {v}"),
            )
            .hint(format!("0% asks for {zero}"));
        }
    }
    // Only windows that end by the observe window's end count, so the first candidate, the
    // clearing itself, already needs `window + hold` of it.
    if r.window.millis == 0 {
        return;
    }
    let needs = r.window.millis.saturating_add(r.hold.millis);
    for (name, fault) in &plan.faults {
        if fault.observe.millis < needs {
            let needs = Duration { millis: needs };
            f.warn(
                p(&["faults", name.as_str(), "observe"]),
                format!(
                    "the recovery rule needs {needs} after the fault clears (analysis.recovery window + hold), but the observe window is {}: no run of this fault can be found recovered from its clearing",
                    fault.observe
                ),
            )
            .hint(format!(
                "make `observe` at least {needs}, or shorten `analysis.recovery.window` or `hold`"
            ));
        }
    }
}

/// Warns when a profile may keep more requests in flight than the load generator's memory
/// cap holds (`plan::footprint`): every request taking the timeout, as past a knee, the
/// most the load's sizing lets it keep. When even requests within the objective would not
/// fit, the warning says so: the run could not measure the system up to its objective.
fn load_generator_memory(plan: &Plan, f: &mut Findings) {
    use super::footprint::{self, in_flight, timeout_s};
    let kind = plan.topology.load_generator.kind;
    let fp = footprint::of(kind);
    let Some(cap) = resolve_contenders(plan)
        .iter()
        .map(|c| c.caps.load_generator.memory.bytes as f64)
        .reduce(f64::min)
    else {
        return;
    };
    let mib = |b: f64| b / (1024.0 * 1024.0);
    let p99 = plan.study.objective.p99;
    let timeout = timeout_s(p99.as_secs_f64());
    for (name, profile) in &plan.profiles {
        let Some(rate) = footprint::highest_rate(plan, profile) else {
            continue;
        };
        let at_timeout = in_flight(rate, timeout) + 5.0;
        if fp.bytes(rate, at_timeout) <= cap {
            continue;
        }
        let at_objective = in_flight(rate, p99.as_secs_f64()) * 2.0 + 5.0;
        let when = if fp.bytes(rate, at_objective) > cap {
            format!(
                "even with requests within the objective (2 × p99 = {}s each, {at_objective:.0} in flight) it would not fit: the run could not measure the system up to its objective",
                2.0 * p99.as_secs_f64()
            )
        } else {
            "past the knee, as requests slow towards their timeout, it would be OOM-killed or drop starts, and the run would be invalid".to_string()
        };
        let other = match kind {
            LoadGeneratorKind::K6 => LoadGeneratorKind::Native,
            LoadGeneratorKind::Native => LoadGeneratorKind::K6,
        };
        f.warn(
            p(&["profiles", name.as_str()]),
            format!(
                "at {rate:.0} arrivals/s with every request taking the {timeout} s timeout, {} may keep {at_timeout:.0} requests in flight: about {:.0} MiB ({:.0} MiB, plus {:.0} KiB per arrival/s, plus {:.0} KiB per {}; docs/performance.md), above the load generator's {:.0} MiB cap; {when}",
                kind.as_str(),
                mib(fp.bytes(rate, at_timeout)),
                mib(fp.base),
                fp.per_rate / 1024.0,
                fp.per_request / 1024.0,
                fp.unit,
                mib(cap),
            ),
        )
        .hint(format!(
            "raise caps.load-generator.memory to at least {:.0} MiB, lower the profile's rate, or use `kind: {}` ({:.0} MiB for the same requests in flight)",
            mib(fp.bytes(rate, at_timeout)).ceil(),
            other.as_str(),
            mib(footprint::of(other).bytes(rate, at_timeout)).ceil(),
        ));
    }
}

fn matrix(plan: &Plan, ctx: &Context, f: &mut Findings) {
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

/// A contender whose caps sum to more cores than the host has: warned (deploying refuses
/// unless oversubscription is allowed).
fn caps_within_host(contenders: &[ResolvedContender], host: f64, f: &mut Findings) {
    for c in contenders {
        let total = total_cpus(c);
        if total > host {
            let what = if c.caps.allow_oversubscription {
                "allowed by caps.allow-oversubscription"
            } else {
                "deploying will refuse unless caps.allow-oversubscription is true"
            };
            f.warn(p(&["contenders", c.declared.as_str()]), format!(
                "the caps of a `{}` run sum to {total} cores, more than the {host} of the machine feedbench runs on ({what})", c.name
            ));
        }
    }
}

/// Cores one run of this contender reserves: replicas, services and the measurement path.
pub fn total_cpus(c: &ResolvedContender) -> f64 {
    let mut total = f64::from(c.replicas) * c.caps.replica.cpus
        + c.caps.fault_proxy.cpus
        + c.caps.balancer.cpus
        + c.caps.load_generator.cpus;
    for s in c.services.values() {
        total += c.caps.get(s.kind.role()).map_or(0.0, |x| x.cpus);
    }
    (total * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::Context;

    const MINIMAL: &str = include_str!("../../../../tests/plans/valid/minimal.yaml");
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
        let both = at(
            "analysis:\n  recovery:\n    throughput-tolerance: 101%\n    latency-tolerance: 200%\n",
        );
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
            let hashes =
                |r: &[(String, String)]| r.iter().map(|(_, h)| h.clone()).collect::<Vec<_>>();
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

    #[test]
    fn placeholders_inside_json_bodies_are_found() {
        assert_eq!(
            super::placeholders(r#"{"author": {viewer}, "n": {x-1}}"#),
            ["viewer", "x-1"]
        );
        assert_eq!(super::placeholders("/feed?viewer={viewer}"), ["viewer"]);
        assert!(super::placeholders("{}{ a}").is_empty());
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
            warnings.iter().any(|w| w.contains("workloads.hot")
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
}
