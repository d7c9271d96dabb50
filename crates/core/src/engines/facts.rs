//! What the engines a study uses must be before anything is journalled: each reachable
//! at an API version feedbench speaks, all with one cgroup version (a run's CPU and memory
//! figures are read from cgroups, and v1 and v2 count them differently), each with the
//! cores its roles are capped at; and two engines on one host (one boot id) are said,
//! because their runs then share that host's cores.

use super::{Engine, Engines};

/// The oldest engine API feedbench speaks (Docker 20.10).
pub const MIN_API: (u32, u32) = (1, 41);

/// What an engine says of itself and its host.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// The engine's API version, e.g. `1.47`.
    pub api_version: String,
    /// `1` or `2`.
    pub cgroup_version: String,
    pub cores: f64,
    /// The host kernel's boot id (`/proc/sys/kernel/random/boot_id`), when it could be read.
    pub boot_id: Option<String>,
}

/// Cores a study places on an engine, and what they are for.
#[derive(Debug, Clone, PartialEq)]
pub struct Need {
    pub engine: usize,
    pub cores: f64,
    pub what: String,
}

/// The refusals, each at its engine's endpoint in the engines file, and the warnings.
#[derive(Debug, Default, PartialEq)]
pub struct Checked {
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

/// Checks the facts of the engines a study uses (`facts`: by index into `engines`).
pub fn check(engines: &Engines, facts: &[(usize, Facts)], needs: &[Need]) -> Checked {
    let mut out = Checked::default();
    let refuse = |e: &Engine, message: String, hint: Option<String>| match &e.site {
        Some(site) => site.error(message, hint).to_string(),
        None => match hint {
            Some(h) => format!("the local engine: {message}\n  hint: {h}"),
            None => format!("the local engine: {message}"),
        },
    };
    for (i, f) in facts {
        let e = &engines.engines[*i];
        match api(&f.api_version) {
            Some(v) if v >= MIN_API => {}
            _ => out.errors.push(refuse(
                e,
                format!(
                    "engine `{}` speaks API {}; feedbench needs {}.{} or newer",
                    e.name, f.api_version, MIN_API.0, MIN_API.1
                ),
                Some("upgrade the engine to Docker 20.10 or newer".into()),
            )),
        }
    }
    if let Some((first, f0)) = facts.first() {
        for (i, f) in &facts[1..] {
            if f.cgroup_version != f0.cgroup_version {
                let (a, b) = (&engines.engines[*first], &engines.engines[*i]);
                out.errors.push(refuse(
                    b,
                    format!(
                        "engine `{}` runs cgroup v{} and engine `{}` cgroup v{}: one study's CPU and memory figures must be read one way",
                        b.name, f.cgroup_version, a.name, f0.cgroup_version
                    ),
                    Some("use engines whose hosts run the same cgroup version".into()),
                ));
            }
        }
    }
    for n in needs {
        let Some((_, f)) = facts.iter().find(|(i, _)| *i == n.engine) else {
            continue;
        };
        if n.cores > f.cores {
            let e = &engines.engines[n.engine];
            out.errors.push(refuse(
                e,
                format!(
                    "engine `{}` has {} cores; {} needs {:.2}",
                    e.name, f.cores, n.what, n.cores
                ),
                Some("lower the caps, or name an engine with more cores".into()),
            ));
        }
    }
    for (k, (i, f)) in facts.iter().enumerate() {
        let Some(boot) = &f.boot_id else { continue };
        for (j, g) in &facts[k + 1..] {
            if g.boot_id.as_ref() == Some(boot) {
                out.warnings.push(format!(
                    "engines `{}` and `{}` run on one host (boot id {boot}): runs placed on both share its cores",
                    engines.engines[*i].name, engines.engines[*j].name
                ));
            }
        }
    }
    out
}

/// `1.41` → (1, 41).
fn api(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.trim().split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::{load_str, Context};

    fn two() -> Engines {
        let text = "format_version: 1\nengines:\n  here: {endpoint: \"unix:///var/run/docker.sock\", address: 10.99.0.1}\n  second:\n    endpoint: \"unix:///tmp/second.sock\"\n    address: 10.99.0.2\ngroups:\n  - {system: here, load-generator: second}\n";
        let ctx = Context {
            base_dir: std::path::Path::new("/"),
            docker_cert_path: None,
        };
        load_str("engines.yaml", text, &ctx).unwrap()
    }

    fn facts(api: &str, cgroup: &str, cores: f64, boot: &str) -> Facts {
        Facts {
            api_version: api.into(),
            cgroup_version: cgroup.into(),
            cores,
            boot_id: Some(boot.into()),
        }
    }

    #[test]
    fn agreeing_engines_on_two_hosts_pass() {
        let e = two();
        let c = check(
            &e,
            &[
                (0, facts("1.47", "1", 2.0, "a")),
                (1, facts("1.41", "1", 2.0, "b")),
            ],
            &[Need {
                engine: 1,
                cores: 0.5,
                what: "the load generator".into(),
            }],
        );
        assert_eq!(c, Checked::default());
    }

    #[test]
    fn an_old_api_another_cgroup_version_and_too_few_cores_are_refused_at_the_endpoint() {
        let e = two();
        let c = check(
            &e,
            &[
                (0, facts("1.40", "1", 2.0, "a")),
                (1, facts("1.43", "2", 1.0, "b")),
            ],
            &[Need {
                engine: 1,
                cores: 1.5,
                what: "the load generator".into(),
            }],
        );
        assert_eq!(c.errors.len(), 3, "{:?}", c.errors);
        assert!(
            c.errors[0].starts_with("engines.yaml:3:20: engines.here.endpoint: engine `here` speaks API 1.40; feedbench needs 1.41"),
            "{}",
            c.errors[0]
        );
        assert!(
            c.errors[1].starts_with("engines.yaml:5:15: engines.second.endpoint: engine `second` runs cgroup v2 and engine `here` cgroup v1"),
            "{}",
            c.errors[1]
        );
        assert!(
            c.errors[2].contains("engine `second` has 1 cores; the load generator needs 1.50"),
            "{}",
            c.errors[2]
        );
        assert!(c.warnings.is_empty());
    }

    #[test]
    fn two_engines_of_one_boot_are_said_to_share_a_host() {
        let e = two();
        let c = check(
            &e,
            &[
                (0, facts("1.41", "1", 2.0, "b00t")),
                (1, facts("1.41", "1", 2.0, "b00t")),
            ],
            &[],
        );
        assert!(c.errors.is_empty());
        assert_eq!(
            c.warnings,
            vec!["engines `here` and `second` run on one host (boot id b00t): runs placed on both share its cores".to_string()]
        );
    }

    #[test]
    fn the_local_engine_is_named_without_a_file() {
        let e = Engines::local();
        let c = check(&e, &[(0, facts("1.24", "1", 2.0, "a"))], &[]);
        assert_eq!(
            c.errors,
            vec!["the local engine: engine `local` speaks API 1.24; feedbench needs 1.41 or newer\n  hint: upgrade the engine to Docker 20.10 or newer".to_string()]
        );
    }
}
