//! A second Docker engine on this machine (tests/engines/second-engine: its own network
//! namespace, data root, exec root, socket and cgroup parent, TLS on tcp://10.99.0.2:2376 and
//! OpenSSH's server on 10.99.0.2:2222), reached over every transport an engines file accepts,
//! and the engines file's refusals of what cannot be reached, each naming the engine and its
//! endpoint.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use feedbench::engine::runtime::Runtime;
use feedbench_core::engines::{load_str, Context, Engine, Engines};
use feedbench_core::plan::model::LoadGeneratorKind::{Native, K6};
use feedbench_core::rundir;

use common::repo;

/// The second engine, up for one test and taken down (namespace, links, daemon, files) when
/// dropped, whatever the test did.
struct SecondEngine {
    dir: PathBuf,
    unix: String,
    tcp: String,
    certs: PathBuf,
    ssh_config: PathBuf,
    _scratch: tempfile::TempDir,
}

impl SecondEngine {
    fn up() -> Self {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("engine2");
        let out = Command::new(repo().join("tests/engines/second-engine"))
            .arg("up")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "the second engine did not start (this test needs root, iproute2, openssl, dockerd, \
             fuse-overlayfs and OpenSSH's server: scripts/test installs them):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        SecondEngine {
            dir,
            unix: lines[0].to_string(),
            tcp: lines[1].to_string(),
            certs: PathBuf::from(lines[2]),
            ssh_config: PathBuf::from(lines[3]),
            _scratch: scratch,
        }
    }
}

impl Drop for SecondEngine {
    fn drop(&mut self) {
        // Never a panic here (it may run while a failed test unwinds): what did not come
        // down is said, and the next `up` refuses to start over it.
        let out = Command::new(repo().join("tests/engines/second-engine"))
            .arg("down")
            .arg(&self.dir)
            .output();
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => eprintln!(
                "the second engine did not come down: {}",
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => eprintln!("the second engine did not come down: {e}"),
        }
    }
}

/// An engines file's text, resolved as `feedbench` resolves one in `base`.
fn engines(base: &Path, text: &str) -> Engines {
    let ctx = Context {
        base_dir: base,
        docker_cert_path: None,
    };
    load_str("engines.yaml", text, &ctx).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn only(e: &Engines) -> &Engine {
    &e.engines[0]
}

/// An engines file naming one engine, `second`, by `endpoint` and any `extra` fields.
fn one(endpoint: &str, extra: &str) -> String {
    format!(
        "format_version: 1\nengines:\n  second: {{endpoint: \"{endpoint}\", address: 10.99.0.2{extra}}}\n"
    )
}

/// A CA and client certificate the second engine never saw.
fn foreign_certs(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let run = |args: &[&str]| {
        let ok = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            ok.status.success(),
            "{}",
            String::from_utf8_lossy(&ok.stderr)
        );
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=other CA",
        "-keyout",
        "ca-key.pem",
        "-out",
        "ca.pem",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=other",
        "-keyout",
        "key.pem",
        "-out",
        "c.csr",
    ]);
    run(&[
        "x509",
        "-req",
        "-in",
        "c.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca-key.pem",
        "-CAcreateserial",
        "-days",
        "1",
        "-out",
        "cert.pem",
    ]);
}

pub fn every_transport_reaches_the_second_engine_and_what_cannot_be_reached_is_named() {
    let second = SecondEngine::up();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let base = second.dir.parent().unwrap().to_path_buf();
    let data_root = second.dir.join("data").display().to_string();
    let local = rt.block_on(Runtime::connect()).unwrap();
    let local_root = rt.block_on(local.facts()).unwrap().data_root;
    assert_ne!(local_root.as_deref(), Some(data_root.as_str()));

    // Each transport reaches the second engine, not the first: its data root says which.
    let certs = second.certs.display().to_string();
    let ssh = second.ssh_config.display().to_string();
    let socket = second.unix.trim_start_matches("unix://");
    for (transport, text) in [
        ("unix", one(&second.unix, "")),
        (
            "tcp",
            one(&second.tcp, &format!(", tls: {{cert-path: {certs}}}")),
        ),
        (
            "ssh",
            one(
                "ssh://root@10.99.0.2:2222",
                &format!(", socket: {socket}, ssh-config: {ssh}"),
            ),
        ),
    ] {
        let e = engines(&base, &text);
        let engine = rt
            .block_on(Runtime::connect_to(only(&e)))
            .unwrap_or_else(|err| panic!("{transport}: {err}"));
        let facts = rt.block_on(engine.facts()).unwrap();
        assert_eq!(
            facts.data_root.as_deref(),
            Some(data_root.as_str()),
            "{transport}"
        );
        assert!(facts.cores >= 1.0, "{transport}: {facts:?}");
    }

    // A certificate the engine does not trust, a port nothing listens on, a key ssh does not
    // know: each is refused naming the engine and its endpoint.
    let other = base.join("other-certs");
    foreign_certs(&other);
    let refused = |text: String| {
        let e = engines(&base, &text);
        match rt.block_on(Runtime::connect_to(only(&e))) {
            Ok(_) => panic!("connected: {text}"),
            Err(err) => err.to_string(),
        }
    };
    let wrong_cert = refused(one(
        &second.tcp,
        &format!(", tls: {{cert-path: {}}}", other.display()),
    ));
    assert!(
        wrong_cert.starts_with("cannot reach engine `second` at tcp://10.99.0.2:2376: "),
        "{wrong_cert}"
    );
    let closed = refused(one(
        "tcp://10.99.0.2:2377",
        &format!(", tls: {{cert-path: {certs}}}"),
    ));
    assert!(
        closed.starts_with("cannot reach engine `second` at tcp://10.99.0.2:2377: "),
        "{closed}"
    );
    let missing = refused(one(
        "tcp://10.99.0.2:2376",
        &format!(", tls: {{cert-path: {}}}", base.join("nowhere").display()),
    ));
    assert!(
        missing.contains("ca.pem` is not a readable file"),
        "{missing}"
    );
    let stranger = base.join("stranger_key");
    assert!(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", ""])
        .arg("-f")
        .arg(&stranger)
        .status()
        .unwrap()
        .success());
    let config = std::fs::read_to_string(&second.ssh_config)
        .unwrap()
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("IdentityFile") {
                format!("    IdentityFile {}", stranger.display())
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let stranger_config = base.join("stranger_config");
    std::fs::write(&stranger_config, config + "\n").unwrap();
    let denied = refused(one(
        "ssh://root@10.99.0.2:2222",
        &format!(
            ", socket: {socket}, ssh-config: {}",
            stranger_config.display()
        ),
    ));
    assert!(
        denied.starts_with("cannot reach engine `second` at ssh://root@10.99.0.2:2222: ssh exited")
            && denied.contains("Permission denied"),
        "{denied}"
    );
}

pub fn an_image_is_copied_to_the_second_engine_with_its_id_and_config_and_runs_there() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let local = rt.block_on(Runtime::connect()).unwrap();
    let image = "feedbench/load:latest";
    rt.block_on(common::plan_images(APART));
    let second = SecondEngine::up();
    let base = second.dir.parent().unwrap().to_path_buf();
    let e = engines(&base, &one(&second.unix, ""));
    let remote = rt.block_on(Runtime::connect_to(only(&e))).unwrap();
    let (from, to) = (local.docker(), remote.docker());
    assert!(rt
        .block_on(feedbench::images::inspect(to, image))
        .unwrap()
        .is_none());
    let started = std::time::Instant::now();
    let id = rt
        .block_on(feedbench::images::copy(from, to, image))
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{image} copied in {:?}", started.elapsed());
    let original = rt.block_on(from.inspect_image(image)).unwrap();
    let copy = rt.block_on(to.inspect_image(image)).unwrap();
    assert_eq!(Some(id), original.id);
    assert_eq!(copy.id, original.id);
    let (a, b) = (original.config.unwrap(), copy.config.unwrap());
    assert_eq!(a.entrypoint, b.entrypoint);
    assert_eq!(a.cmd, b.cmd);
    assert_eq!(a.env, b.env);
    assert_eq!(a.labels, b.labels);
    // It runs there: its own binary answers, from the second engine's copy.
    let out = Command::new("docker")
        .args([
            "-H",
            &second.unix,
            "run",
            "--rm",
            "--network",
            "none",
            image,
            "--version",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("feedbench-load "),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // An image the source does not have is named, and nothing is loaded.
    let missing = rt
        .block_on(feedbench::images::copy(from, to, "feedbench/nothing:here"))
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("feedbench/nothing:here") && missing.contains("does not have it"),
        "{missing}"
    );
}

/// `feedbench run PLAN --engines FILE` into `results`: its exit code and stderr.
fn run_with_engines(plan: &str, engines_file: &Path, results: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .current_dir(repo())
        .args(["run", plan, "--no-build", "--engines"])
        .arg(engines_file)
        .arg("--results")
        .arg(results)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// No journal anywhere under `results`: nothing was recorded.
fn no_journal(results: &Path) -> bool {
    walk(results)
        .iter()
        .all(|p| p.file_name().and_then(|n| n.to_str()) != Some(feedbench::rundir::layout::JOURNAL))
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            }
            out.push(p);
        }
    }
    out
}

pub fn run_refuses_an_engines_file_it_cannot_use_with_exit_2_at_the_field_and_records_nothing() {
    let second = SecondEngine::up();
    let base = second.dir.parent().unwrap().to_path_buf();
    let other = base.join("other-certs");
    foreign_certs(&other);
    let here = "  here: {endpoint: \"unix:///var/run/docker.sock\", address: 10.99.0.1}\n";
    let write = |name: &str, text: String| {
        let path = base.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let file = |name: &str, second_engine: &str, groups: &str| {
        write(
            name,
            format!("format_version: 1\nengines:\n{here}{second_engine}groups:\n{groups}"),
        )
    };
    let tls = format!(
        "  second: {{endpoint: \"tcp://10.99.0.2:2376\", address: 10.99.0.2, tls: {{cert-path: {}}}}}\n",
        second.certs.display()
    );
    let system_here = "  - {system: here}\n";
    let cases = [
        (
            "unreachable",
            file(
                "unreachable.yaml",
                &format!(
                    "  second: {{endpoint: \"tcp://10.99.0.2:2377\", address: 10.99.0.2, tls: {{cert-path: {}}}}}\n",
                    second.certs.display()
                ),
                "  - {system: second}\n",
            ),
            "unreachable.yaml:4:22: engines.second.endpoint: cannot reach engine `second` at tcp://10.99.0.2:2377: ",
        ),
        (
            "wrong certificate",
            file(
                "wrong-cert.yaml",
                &format!(
                    "  second: {{endpoint: \"tcp://10.99.0.2:2376\", address: 10.99.0.2, tls: {{cert-path: {}}}}}\n",
                    other.display()
                ),
                "  - {system: second}\n",
            ),
            "wrong-cert.yaml:4:22: engines.second.endpoint: cannot reach engine `second` at tcp://10.99.0.2:2376: ",
        ),
        (
            "duplicate name",
            file(
                "duplicate.yaml",
                "  here: {endpoint: \"unix:///var/run/docker.sock\", address: 10.99.0.1}\n",
                system_here,
            ),
            "duplicate.yaml:4:3: engines.here: duplicate key `here`",
        ),
        (
            "the system under test elsewhere",
            file(
                "elsewhere.yaml",
                &format!(
                    "  second: {{endpoint: \"tcp://10.99.0.2:2376\", address: 10.99.0.2, tls: {{cert-path: {}}}}}\n",
                    second.certs.display()
                ),
                "  - {system: second}\n",
            ),
            "elsewhere.yaml:4:22: engines.second.endpoint: no group's `system` engine is the engine feedbench builds images on",
        ),
    ];
    // Two names for this machine's engine in two groups: groups run at once, so no engine
    // may serve two.
    let twice = (
        "one engine in two groups",
        file(
            "twice.yaml",
            "  again: {endpoint: \"unix:///var/run/docker.sock\", address: 10.99.0.1}\n",
            "  - {system: here}\n  - {system: again}\n",
        ),
        "twice.yaml:4:21: engines.again.endpoint: engine `again` of groups[1] and engine `here` of groups[0] are one engine",
    );
    let cases: Vec<_> = cases.into_iter().chain([twice]).collect();
    let smoke = "experiments/smoke.yaml";
    let mut cases: Vec<(&str, &str, PathBuf, &str)> = cases
        .into_iter()
        .map(|(c, p, s)| (c, smoke, p, s))
        .collect();
    // Apart, the balancer is published at the system engine's address: never a loopback one.
    cases.push((
        "a loopback address for a load generator apart",
        APART,
        write(
            "loopback.yaml",
            format!(
                "format_version: 1\nengines:\n  here: {{endpoint: \"unix:///var/run/docker.sock\", address: 127.0.0.1}}\n{tls}groups:\n  - {{system: here, load-generator: second}}\n"
            ),
        ),
        "loopback.yaml:3:60: engines.here.address: engine `here`'s address 127.0.0.1 is a loopback address",
    ));
    for (case, plan, path, said) in cases {
        let results = base.join(format!("results-{}", case.replace(' ', "-")));
        let (code, stderr) = run_with_engines(plan, &path, &results);
        assert_eq!(code, Some(2), "{case}: {stderr}");
        assert!(
            stderr.contains(said),
            "{case}: expected `{said}` in:\n{stderr}"
        );
        assert!(no_journal(&results), "{case}: a journal was written");
    }
}

const APART: &str = "tests/plans/docker/smoke-apart.yaml";

/// The commit that last changed the apart plan or any of its inputs: its registration.
fn registered() -> String {
    let out = Command::new("git")
        .current_dir(repo())
        .args(["log", "-1", "--format=%H", "--"])
        .args([APART, "contenders", "images", "Cargo.lock"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Labelled containers and networks of `study` left on an engine.
fn leftovers_on(rt: &tokio::runtime::Runtime, engine: &Runtime, study: &str) -> usize {
    let (c, n) = rt.block_on(common::leftovers(engine, study));
    c.len() + n.len()
}

/// The smoke study with feedbench-load as its load generator, on the second engine reached
/// over ssh, in one study: the coordinator is SIGKILLed as the first run's load starts,
/// leaving containers on both engines and no ssh tunnel behind it; `--resume` reaps both,
/// records the run interrupted and runs it again, and every run completes once, valid, each
/// container on its engine, the load generator sampled like the rest and keeping its open
/// model (`native_kept_its_schedule`); the report agrees with its twin and the audit passes.
/// (Three tests once, each with a study of its own: the kill's ran the ramp alone, and the
/// native generator's ran the smoke study on one engine. One study holds what all three
/// asserted.)
pub fn the_smoke_study_runs_with_its_load_generator_on_the_second_engine() {
    use std::io::BufRead;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let local = rt.block_on(Runtime::connect()).unwrap();
    rt.block_on(common::plan_images(APART));
    let second = SecondEngine::up();
    let base = second.dir.parent().unwrap().to_path_buf();
    // Over ssh: its tunnel ends with the coordinator too.
    let file = base.join("engines.yaml");
    std::fs::write(
        &file,
        format!(
            "format_version: 1\nengines:\n  here: {{endpoint: \"unix:///var/run/docker.sock\", address: 10.99.0.1}}\n  second: {{endpoint: \"ssh://root@10.99.0.2:2222\", address: 10.99.0.2, socket: {}, ssh-config: {}}}\ngroups:\n  - {{system: here, load-generator: second}}\n",
            second.unix.trim_start_matches("unix://"),
            second.ssh_config.display()
        ),
    )
    .unwrap();
    let results = base.join("results");
    let run = |extra: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_feedbench"));
        c.current_dir(repo())
            .args(["run", APART, "--no-build", "--format", "json", "--engines"])
            .arg(&file)
            .arg("--results")
            .arg(&results)
            .args(extra);
        c
    };
    let stderr = base.join("first.stderr");
    let mut child = run(&[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut killed = false;
    for line in out.lines() {
        let Ok(line) = line else { break };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if v["event"] == "load-started" {
            child.kill().unwrap(); // SIGKILL: no handler, no cleanup
            killed = true;
            break;
        }
    }
    child.wait().unwrap();
    let err = std::fs::read_to_string(&stderr).unwrap();
    assert!(killed, "the run ended before its load started: {err}");
    // One host: said, since the two engines' runs share its cores.
    assert!(
        err.contains("engines `here` and `second` run on one host (boot id "),
        "{err}"
    );
    assert!(err.contains("copying image `feedbench/load:"), "{err}");
    let remote = rt
        .block_on(Runtime::connect_to(only(&engines(
            &base,
            &one(&second.unix, ""),
        ))))
        .unwrap();
    assert!(leftovers_on(&rt, &local, "smoke-apart") > 0);
    assert!(
        leftovers_on(&rt, &remote, "smoke-apart") > 0,
        "the load generator was left on the second engine"
    );
    let out = run(&["--resume"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(leftovers_on(&rt, &local, "smoke-apart"), 0);
    assert_eq!(leftovers_on(&rt, &remote, "smoke-apart"), 0);
    // Reaped, recorded interrupted, and run again once.
    let journal = std::fs::read_to_string(results.join("smoke-apart/journal.jsonl")).unwrap();
    let count = |event: &str| {
        journal
            .lines()
            .filter(|l| l.contains(&format!("\"event\":\"{event}\"")))
            .count()
    };
    assert_eq!(count("run-interrupted"), 1, "{journal}");
    assert_eq!(count("run-finished"), 2, "{journal}");
    // No ssh tunnel outlived the killed coordinator.
    let tunnels = Command::new("pgrep")
        .args(["-f", "ssh -nNT .*10.99.0.2"])
        .output()
        .unwrap();
    assert!(
        tunnels.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&tunnels.stdout)
    );
    for name in ["feed-rs_ramp_r1", "feed-rs_baseline_replica-kill_r1"] {
        let dir = results.join("smoke-apart/runs").join(name);
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(record["execution"]["execution"], "completed", "{name}");
        assert_eq!(record["validity_evidence"], serde_json::json!([]), "{name}");
        let m: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
        // Each container's engine, and both engines' hosts.
        for img in m["images"].as_array().unwrap() {
            let want = if img["role"] == "load-generator" {
                "second"
            } else {
                "here"
            };
            assert_eq!(img["engine"], want, "{name}: {img}");
        }
        let engines: Vec<&str> = m["engines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(engines, ["here", "second"], "{name}");
        assert!(m["engines"][1]["host"]["cores"].as_f64().unwrap() >= 1.0);
        // The load generator reached the balancer where the system engine published it,
        // and was sampled like every other container.
        let events = std::fs::read_to_string(dir.join("events.csv")).unwrap();
        assert!(
            events.contains(
                "the load generator runs on engine `second` and reaches the balancer at http://10.99.0.1:"
            ),
            "{name}: {events}"
        );
        let script = std::fs::read_to_string(dir.join(rundir::load_input(Native))).unwrap();
        assert!(script.contains("http://10.99.0.1:"), "{name}");
        native_kept_its_schedule(name, &dir, &record);
        let csv = std::fs::read_to_string(dir.join("containers.csv")).unwrap();
        let lg_ok = csv
            .lines()
            .filter(|l| l.contains(",load-generator,") && l.contains(",ok,"))
            .count();
        assert!(lg_ok >= 30, "{name}: {lg_ok} samples of the load generator");
    }
    let report = Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .current_dir(repo())
        .args(["report", APART, "--verify", "--registered", &registered()])
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&report.stderr);
    assert!(report.status.success(), "{err}");
    assert!(err.contains("agrees"), "{err}");
    let audit = Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .current_dir(repo())
        .args(["audit", APART, "--registered", &registered()])
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&audit.stdout);
    assert!(
        audit.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&audit.stderr)
    );
    assert!(said.contains("smoke-apart"), "{said}");
    let md = std::fs::read_to_string(results.join("smoke-apart/report/report.md")).unwrap();
    assert!(md.contains("H1"), "{md}");
    assert!(!said.contains("ran on hosts that differ"), "{said}");
    assert_eq!(leftovers_on(&rt, &local, "smoke-apart"), 0);
    assert_eq!(leftovers_on(&rt, &remote, "smoke-apart"), 0);
}

/// One run of feedbench-load, from its record and raw data: it completed with no start
/// dropped, sent the scheduled number of requests (a constant profile, within 2 %), started
/// each within 100 ms of its schedule (its bound is 250 ms), and left its own files, with
/// `scheduled_ns` after k6's columns in requests.csv, and none of k6's.
fn native_kept_its_schedule(name: &str, dir: &Path, record: &serde_json::Value) {
    let load = &record["load"];
    assert_eq!(load["generator"], "native", "{name}");
    assert_eq!(load["ended"], "completed", "{name}");
    assert_eq!(load["dropped_iterations"], 0, "{name}");
    let scheduled = record["scheduled_arrivals"].as_f64().unwrap();
    let sent = load["requests"].as_f64().unwrap();
    if !name.contains("ramp") {
        assert!(
            (sent - scheduled).abs() <= 0.02 * scheduled,
            "{name}: {sent} of {scheduled}"
        );
    }
    let lags: Vec<f64> = load["max_lag_ms_per_second"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!(!lags.is_empty(), "{name}: no per-second record");
    let worst = lags.iter().copied().fold(0.0, f64::max);
    eprintln!("{name}: {sent} requests of {scheduled:.0} scheduled, worst lag {worst:.1} ms");
    assert!(worst < 100.0, "{name}: a start lagged {worst} ms");
    for f in [rundir::load_raw(Native), rundir::REQUESTS_CSV] {
        assert!(dir.join(f).is_file(), "{name} has no {f}");
    }
    assert!(!dir.join(rundir::load_input(K6)).exists() && !dir.join(rundir::load_raw(K6)).exists());
    let csv = std::fs::read_to_string(dir.join(rundir::REQUESTS_CSV)).unwrap();
    assert!(
        csv.starts_with("start_ns,end_ns,route,method,status,duration_ms,error,scheduled_ns\n"),
        "{name}"
    );
}

pub fn a_container_on_the_second_engine_is_sampled_through_its_stats_api_when_told_to() {
    use feedbench::run::monitor::{self, MonitorOptions, Sampled, Source, Target};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let local = rt.block_on(Runtime::connect()).unwrap();
    rt.block_on(common::infrastructure_images());
    let second = SecondEngine::up();
    let base = second.dir.parent().unwrap().to_path_buf();
    let remote = rt
        .block_on(Runtime::connect_to(only(&engines(
            &base,
            &one(&second.unix, ""),
        ))))
        .unwrap();
    let image = "feedbench/base:bookworm";
    rt.block_on(feedbench::images::copy(
        local.docker(),
        remote.docker(),
        image,
    ))
    .unwrap();
    let name = "fb-remote-sampled";
    let out = Command::new("docker")
        .args(["-H", &second.unix, "run", "-d", "--name", name])
        .args([
            "--label",
            "feedbench.study=remote-sampled",
            "--network",
            "none",
        ])
        .args(["--cpus", "0.2", "--memory", "64m", image])
        .args(["sh", "-c", "while :; do :; done"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let target = || Sampled {
        target: Target {
            name: name.into(),
            role: "load-generator".into(),
        },
        rt: remote.clone(),
        remote: true,
    };
    // Forced, then automatic: the API, then this host's cgroup files (the engines share it).
    for (remote_source, want) in [(Source::EngineApi, "engine-api"), (Source::Auto, "cgroup")] {
        let dir = base.join(format!("monitor-{want}"));
        let handle = rt
            .block_on(monitor::start_placed(
                vec![target()],
                None,
                Vec::new(),
                &dir,
                MonitorOptions {
                    remote_source,
                    period: std::time::Duration::from_millis(500),
                    ..Default::default()
                },
            ))
            .unwrap();
        // Until five rows read, or a minute: the rows say which source read them.
        let ok_rows = |dir: &Path| {
            std::fs::read_to_string(dir.join("containers.csv"))
                .unwrap_or_default()
                .lines()
                .filter(|r| r.contains(",ok,"))
                .map(String::from)
                .collect::<Vec<_>>()
        };
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while ok_rows(&dir).len() < 5 && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        let summary = rt.block_on(handle.stop()).unwrap();
        let rows = ok_rows(&dir);
        assert!(rows.len() >= 5, "{want}: {summary:?}");
        assert!(
            rows.iter().all(|r| r.contains(&format!(",{want},ok,"))),
            "{want}: {rows:?}"
        );
        // CPU used between the first and the last read: the counters are the container's.
        let cpu = |r: &str| r.split(',').nth(7).unwrap().parse::<f64>().unwrap();
        let (first, last) = (cpu(&rows[0]), cpu(&rows[rows.len() - 1]));
        assert!(last > first, "{want}: {first} → {last}");
    }
    // `clean --engines` removes it from the engine the file names beside the local one.
    let file = base.join("clean-engines.yaml");
    std::fs::write(
        &file,
        format!(
            "format_version: 1\nengines:\n  here: {{endpoint: \"unix:///var/run/docker.sock\", address: 10.99.0.1}}\n  second: {{endpoint: \"{}\", address: 10.99.0.2}}\ngroups:\n  - {{system: here, load-generator: second}}\n",
            second.unix
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .args(["clean", "--study", "remote-sampled", "--engines"])
        .arg(&file)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("engine `here`: removed 0 container(s)")
            && said.contains("engine `second`: removed 1 container(s)"),
        "{said}"
    );
    assert_eq!(leftovers_on(&rt, &remote, "remote-sampled"), 0);
}

const PARALLEL: &str = "tests/plans/docker/parallel.yaml";

/// Two groups of engines, `here` and `second` (over TCP with TLS), each running a whole run
/// at a time: the 4-run study's two ramps run at once, one on each; the coordinator is
/// killed (SIGKILL) while both run, leaving containers on both engines; `--resume` reaps
/// both, runs each interrupted run again and the baselines after their ramps, every run
/// completed once, valid, with each run's containers all on one engine and both engines
/// used; the report agrees with its twin, the audit passes and nothing is left on either
/// engine.
pub fn a_study_split_across_two_groups_runs_each_run_once_and_a_killed_coordinator_is_reaped_on_both(
) {
    use std::io::BufRead;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let local = rt.block_on(Runtime::connect()).unwrap();
    rt.block_on(common::plan_images(PARALLEL));
    let second = SecondEngine::up();
    let base = second.dir.parent().unwrap().to_path_buf();
    let file = base.join("engines.yaml");
    std::fs::write(
        &file,
        format!(
            "format_version: 1\nengines:\n  here: {{endpoint: \"unix:///var/run/docker.sock\", address: 10.99.0.1}}\n  second: {{endpoint: \"{}\", address: 10.99.0.2, tls: {{cert-path: {}}}}}\ngroups:\n  - {{system: second}}\n  - {{system: here}}\n",
            second.tcp,
            second.certs.display()
        ),
    )
    .unwrap();
    let results = base.join("results");
    let run = |extra: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_feedbench"));
        c.current_dir(repo())
            .args([
                "run",
                PARALLEL,
                "--no-build",
                "--format",
                "json",
                "--engines",
            ])
            .arg(&file)
            .arg("--results")
            .arg(&results)
            .args(extra);
        c
    };
    let stderr = base.join("first.stderr");
    let mut child = run(&[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut loading = std::collections::BTreeSet::new();
    for line in out.lines() {
        let Ok(line) = line else { break };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if v["event"] == "load-started" {
            loading.insert(v["run"].as_str().unwrap_or_default().to_string());
            if loading.len() == 2 {
                child.kill().unwrap(); // SIGKILL: no handler, no cleanup
                break;
            }
        }
    }
    child.wait().unwrap();
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(
        loading.len(),
        2,
        "both groups never loaded at once: {loading:?}\n{said}"
    );
    assert!(
        said.contains("engines `second` and `here` run on one host (boot id ")
            || said.contains("engines `here` and `second` run on one host (boot id "),
        "{said}"
    );
    let remote = rt
        .block_on(Runtime::connect_to(only(&engines(
            &base,
            &one(&second.unix, ""),
        ))))
        .unwrap();
    assert!(leftovers_on(&rt, &local, "parallel") > 0);
    assert!(leftovers_on(&rt, &remote, "parallel") > 0);
    let out = run(&["--resume"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(leftovers_on(&rt, &local, "parallel"), 0);
    assert_eq!(leftovers_on(&rt, &remote, "parallel"), 0);
    let journal = std::fs::read_to_string(results.join("parallel/journal.jsonl")).unwrap();
    let count = |event: &str, run: &str| {
        journal
            .lines()
            .filter(|l| {
                l.contains(&format!("\"event\":\"{event}\""))
                    && (run.is_empty() || l.contains(&format!("\"run\":\"{run}\"")))
            })
            .count()
    };
    assert_eq!(count("run-interrupted", ""), 2, "{journal}");
    assert_eq!(count("run-finished", ""), 4, "{journal}");
    let mut used = std::collections::BTreeSet::new();
    for (id, name) in [
        ("feed-rs/ramp/r1", "feed-rs_ramp_r1"),
        ("feed-rs/ramp/r2", "feed-rs_ramp_r2"),
        (
            "feed-rs/baseline+db-latency/r1",
            "feed-rs_baseline_db-latency_r1",
        ),
        (
            "feed-rs/baseline+db-latency/r2",
            "feed-rs_baseline_db-latency_r2",
        ),
    ] {
        assert_eq!(count("run-finished", id), 1, "{id}: {journal}");
        let dir = results.join("parallel/runs").join(name);
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(record["execution"]["execution"], "completed", "{name}");
        assert_eq!(record["validity_evidence"], serde_json::json!([]), "{name}");
        let m: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
        let engines: std::collections::BTreeSet<&str> = m["images"]
            .as_array()
            .unwrap()
            .iter()
            .map(|img| img["engine"].as_str().unwrap())
            .collect();
        assert_eq!(engines.len(), 1, "{name}: one run, one engine: {engines:?}");
        used.extend(engines.into_iter().map(String::from));
        // The balancer was polled each second through the port published for the
        // coordinator, wherever the run was.
        let balancer = std::fs::read_to_string(dir.join("balancer.csv")).unwrap();
        assert!(balancer.lines().count() >= 30, "{name}: {balancer}");
        // So was the database link, through the listener published beside the proxy's API:
        // the latency it added was measured, and judged.
        if name.contains("db-latency") {
            let link = &record["link"];
            eprintln!("{name} on {}: {link}", m["images"][0]["engine"]);
            assert!(
                common::link_figure(&record, "answered_during") >= 3.0,
                "{name}: {link}"
            );
            assert!(
                common::link_figure(&record, "added_ms") >= 45.0,
                "{name}: {link}"
            );
        }
    }
    assert_eq!(
        used.into_iter().collect::<Vec<_>>(),
        ["here", "second"],
        "both groups ran runs"
    );
    // A baseline started only once its ramp finished.
    let at = |event: &str, run: &str| {
        journal
            .lines()
            .position(|l| {
                l.contains(&format!("\"event\":\"{event}\""))
                    && l.contains(&format!("\"run\":\"{run}\""))
            })
            .unwrap()
    };
    for r in ["r1", "r2"] {
        assert!(
            at("run-finished", &format!("feed-rs/ramp/{r}"))
                < at("run-started", &format!("feed-rs/baseline+db-latency/{r}")),
            "{journal}"
        );
    }
    let registered = {
        let out = Command::new("git")
            .current_dir(repo())
            .args(["log", "-1", "--format=%H", "--"])
            .args([PARALLEL, "contenders", "images", "Cargo.lock"])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let report = Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .current_dir(repo())
        .args(["report", PARALLEL, "--verify", "--registered", &registered])
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&report.stderr);
    assert!(report.status.success(), "{err}");
    assert!(err.contains("agrees"), "{err}");
    let audit = Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .current_dir(repo())
        .args(["audit", PARALLEL, "--registered", &registered])
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&audit.stdout);
    assert!(
        audit.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&audit.stderr)
    );
}
