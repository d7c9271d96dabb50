//! A real study directory written with the ledger's own writers, canaries outside it that
//! must never be read, and a feedbench command run on it with a timeout: the harness of
//! tests/offline/hostile_study.rs and tests/offline/hostile_fuzz.rs.
#![allow(dead_code)]

pub mod cases;
pub mod edit;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::common::audit::Repo;
use super::common::repo as project;
use feedbench::audit::fixture::Fixture;
use feedbench::plan::RunSpec;

pub const PLAN: &str = "experiments/tiny.yaml";
/// The run every mutation of a run's files touches: completed, in `runs/`.
pub const RUN: &str = "svc/ramp/r1";
pub const RUN_DIR: &str = "runs/svc_ramp_r1";
/// The run left not run, for `skip`.
pub const NOT_RUN: &str = "svc/baseline+db-cut/r3";
/// What the regular canary file holds: it must never appear in any output.
pub const CANARY_TEXT: &str = "CANARY-6b1f0e2d-never-read-this";
/// The files a run directory may hold that feedbench reads.
pub const RUN_FILES: [&str; 6] = [
    "manifest.json",
    "run.json",
    "requests.csv",
    "events.csv",
    "containers.csv",
    "journal.jsonl",
];

/// A study of the minimal plan, every run but `NOT_RUN` completed, with canaries beside it.
pub struct Study {
    pub repo: Repo,
    /// `results/tiny`.
    pub dir: PathBuf,
    /// `outside/`, beside `results/`: nothing in it may ever be read or moved.
    pub outside: PathBuf,
}

pub fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

/// A run directory's files: the smoke ramp's real run.json (renamed) and requests.csv, the
/// fixture's events.csv and a log.
fn files_for(run: &RunSpec) -> Vec<(String, Vec<u8>)> {
    let smoke = project().join("tests/fixtures/ramps/smoke");
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(smoke.join("run.json")).unwrap()).unwrap();
    record["run_id"] = run.id.clone().into();
    record["run_hash"] = run.run_hash.clone().into();
    vec![
        (
            "run.json".into(),
            serde_json::to_vec_pretty(&record).unwrap(),
        ),
        (
            "requests.csv".into(),
            std::fs::read(smoke.join("requests.csv")).unwrap(),
        ),
        (
            "events.csv".into(),
            b"wall_ns,t_s,event,subject,detail\n1796153200477000000,0,phase,warmup,\n\
              1796153210477000000,10,phase,measure,\n1796153245458738883,45,phase,teardown,\n"
                .to_vec(),
        ),
        ("containers.csv".into(), containers_csv()),
        (
            "logs/replica-1.log".into(),
            b"2026-12-01T00:00:00Z ready \xe2\x9c\x93\n".to_vec(),
        ),
    ]
}

/// containers.csv for the smoke ramp's six containers, one row each per second.
fn containers_csv() -> Vec<u8> {
    let mut s = String::from(
        "unix_ns,offset_s,tick,container,role,status,cpu_usage_s,memory_bytes,memory_rss_bytes\n",
    );
    let roles = [
        "balancer",
        "database",
        "fault-proxy",
        "load-generator",
        "replica-1",
        "replica-2",
    ];
    for tick in 0..47u64 {
        for role in roles {
            s.push_str(&format!(
                "{},{}.000500,{tick},fb-smoke-feed-rs_ramp_r1-{role},{role},ok,{},100000000,90000000\n",
                1_796_153_200_477_000_000u64 + tick * 1_000_000_000,
                tick,
                tick as f64 * 0.1
            ));
        }
    }
    s.into_bytes()
}

impl Study {
    pub fn new() -> Study {
        let repo = Repo::with_plan("tests/plans/valid/minimal.yaml", PLAN);
        let (mut f, runs) = Fixture::start(&repo.path(PLAN), &repo.path("results")).unwrap();
        for r in runs.iter().filter(|r| r.id != NOT_RUN) {
            f.complete_with(r, &files_for(r)).unwrap();
        }
        let outside = repo.path("outside");
        std::fs::create_dir_all(outside.join("pipes")).unwrap();
        std::fs::create_dir_all(outside.join("text")).unwrap();
        mkfifo(&outside.join("canary.fifo"));
        std::fs::write(outside.join("canary.txt"), CANARY_TEXT).unwrap();
        for name in RUN_FILES {
            mkfifo(&outside.join("pipes").join(name));
            std::fs::write(outside.join("text").join(name), CANARY_TEXT).unwrap();
        }
        Study {
            dir: repo.path("results/tiny"),
            repo,
            outside,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path(rel)).unwrap()
    }

    pub fn write(&self, rel: &str, bytes: &[u8]) {
        let p = self.path(rel);
        if p.is_dir() && !p.is_symlink() {
            std::fs::remove_dir_all(&p).unwrap();
        } else if p.symlink_metadata().is_ok() {
            std::fs::remove_file(&p).unwrap();
        }
        std::fs::write(p, bytes).unwrap();
    }

    /// Replaces `rel` (a file or a directory) with a symbolic link to `to`.
    pub fn link(&self, rel: &str, to: &Path) {
        let p = self.path(rel);
        match p.symlink_metadata() {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&p).unwrap(),
            Ok(_) => std::fs::remove_file(&p).unwrap(),
            Err(_) => {}
        }
        std::os::unix::fs::symlink(to, p).unwrap();
    }

    /// Everything under `outside/`, each regular file with its contents, to check nothing
    /// was moved, made or changed there.
    pub fn outside_listing(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![self.outside.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                let name = p.strip_prefix(&self.outside).unwrap().display().to_string();
                let m = p.symlink_metadata().unwrap();
                if m.is_dir() {
                    stack.push(p.clone());
                }
                if m.is_file() {
                    let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
                    out.push(format!("{name}: {text}"));
                } else {
                    out.push(name);
                }
            }
        }
        out.sort();
        out
    }
}

/// A feedbench command the corpus runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmd {
    Audit,
    Status,
    Skip,
    Invalidate,
    Report,
    /// `audit --format json`, `status --format json`: the same exit as the human forms.
    AuditJson,
    StatusJson,
}

impl Cmd {
    /// In the order a case runs them: the readers first, then the two that write.
    pub const ALL: [Cmd; 5] = [
        Cmd::Audit,
        Cmd::Status,
        Cmd::Report,
        Cmd::Skip,
        Cmd::Invalidate,
    ];

    pub fn args(self) -> Vec<&'static str> {
        match self {
            Cmd::Audit => vec!["audit", PLAN],
            Cmd::Status => vec!["status", PLAN],
            Cmd::Skip => vec!["skip", NOT_RUN, "--reason", "hostile", "--plan", PLAN],
            Cmd::Invalidate => vec!["invalidate", RUN, "--reason", "hostile", "--plan", PLAN],
            Cmd::Report => vec!["report", PLAN],
            Cmd::AuditJson => vec!["audit", PLAN, "--format", "json"],
            Cmd::StatusJson => vec!["status", PLAN, "--format", "json"],
        }
    }
}

/// What a command did.
pub struct Outcome {
    /// None: killed at the timeout (it blocked, on a canary pipe or otherwise).
    pub code: Option<i32>,
    pub out: String,
}

pub const TIMEOUT: Duration = Duration::from_secs(20);

/// Runs `feedbench <cmd>` in the study's repository, killed after `TIMEOUT`.
pub fn run(study: &Study, cmd: Cmd) -> Outcome {
    let mut c = Command::new(env!("CARGO_BIN_EXE_feedbench"));
    c.args(cmd.args());
    run_command(study, c, TIMEOUT)
}

/// Runs `c` in the study's repository, killed after `timeout`.
pub fn run_command(study: &Study, mut c: Command, timeout: Duration) -> Outcome {
    let log = tempfile::tempdir().unwrap();
    let (o, e) = (log.path().join("out"), log.path().join("err"));
    let mut child = c
        .current_dir(study.repo.dir.path())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&o).unwrap())
        .stderr(std::fs::File::create(&e).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + timeout;
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s.code().unwrap_or(-1));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let text = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    Outcome {
        code,
        out: format!("{}\n--- stderr\n{}", text(&o), text(&e)),
    }
}

/// Whether strace runs here (it may be missing, or ptrace refused in a container).
pub fn strace_works() -> bool {
    Command::new("strace")
        .args(["-o", "/dev/null", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `feedbench <cmd>` under strace and returns every path it opened successfully,
/// resolved (links and all) as it is now, with the outcome.
pub fn run_traced(study: &Study, cmd: Cmd) -> (Outcome, Vec<PathBuf>) {
    let trace = tempfile::NamedTempFile::new().unwrap();
    let mut c = Command::new("strace");
    c.args(["-f", "-qq", "-e", "trace=open,openat,openat2,creat", "-o"])
        .arg(trace.path())
        .arg(env!("CARGO_BIN_EXE_feedbench"))
        .args(cmd.args());
    let got = run_command(study, c, TIMEOUT);
    let text = std::fs::read_to_string(trace.path()).unwrap();
    let opened = opened(&text)
        .into_iter()
        .map(|p| {
            let p = study.repo.dir.path().join(p);
            p.canonicalize().unwrap_or(p)
        })
        .collect();
    (got, opened)
}

/// The paths of an strace log's successful opens. With threads a call may be split in two
/// lines, `PID openat(…, "path", … <unfinished ...>` and `PID <... openat resumed>) = 3`.
fn opened(log: &str) -> Vec<String> {
    let mut pending = std::collections::HashMap::new();
    let mut out = Vec::new();
    for line in log.lines() {
        let (pid, rest) = line.split_once(' ').unwrap_or(("", line));
        let call = if rest.contains("<unfinished ...>") {
            if let Some(p) = rest.split('"').nth(1) {
                pending.insert(pid.to_string(), p.to_string());
            }
            continue;
        } else if rest.trim_start().starts_with("<...") {
            pending.remove(pid).map(|p| (p, rest))
        } else {
            rest.split('"').nth(1).map(|p| (p.to_string(), rest))
        };
        if let Some((path, rest)) = call {
            let ok = rest.rsplit_once("= ").is_some_and(|(_, r)| {
                r.split(' ')
                    .next()
                    .is_some_and(|n| n.parse::<i64>().is_ok_and(|n| n >= 0))
            });
            if ok {
                out.push(path);
            }
        }
    }
    out
}
