//! The topology and the contenders: ports, files the plan names, services and links,
//! templates, and each contender's image, build, settings and gate.

use std::collections::{HashMap, HashSet};

use super::caps::caps_override;
use super::{p, unknown, Context, Findings};
use crate::plan::de::suggest;
use crate::plan::expand::resolve_contenders;
use crate::plan::model::{LoadGeneratorKind, Plan};
use crate::plan::units::Name;

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

pub(super) fn topology(plan: &Plan, ctx: &Context, f: &mut Findings) {
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

pub(super) fn contenders(plan: &Plan, ctx: &Context, f: &mut Findings) {
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
