//! Test helpers: plans, the generator binary run with a deadline, its output parsed.
#![allow(dead_code)]

pub mod server;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use feedbench_load::plan::{LoadPlan, Route, Schedule, Segment, Stage, FORMAT_VERSION};
use feedbench_load::stream::{parse_line, End, Line, Row, Second};

/// A plan at a constant `rate` for `seconds`, with a GET and a POST route (weights 3 : 1).
pub fn plan(base_url: &str, rate: f64, seconds: f64) -> LoadPlan {
    let text = |s: &str| Segment::Text(s.into());
    let id = |s: &str| Segment::Id { id: s.into() };
    LoadPlan {
        format_version: FORMAT_VERSION,
        seed: 7,
        base_url: base_url.into(),
        timeout_ms: 2000,
        routes: vec![
            Route {
                name: "feed".into(),
                method: "GET".into(),
                path: vec![text("/feed/"), id("user"), text("?page="), id("page")],
                body: None,
            },
            Route {
                name: "post".into(),
                method: "POST".into(),
                path: vec![text("/users/"), id("user"), text("/posts")],
                body: Some(vec![text("{\"author\":"), id("user"), text("}")]),
            },
        ],
        cumulative_weights: vec![3.0, 4.0],
        total_weight: 4.0,
        ids: BTreeMap::from([("user".into(), [1, 100_000]), ("page".into(), [1, 3])]),
        schedule: Schedule {
            start_rate: rate,
            stages: vec![Stage {
                duration_s: seconds,
                target: rate,
            }],
        },
        max_connections: 200,
        max_lag_ms: 1000,
    }
}

/// A temporary directory holding the plan and the output.
pub struct Dir(PathBuf);

impl Dir {
    pub fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!(
            "feedbench-load-{name}-{}-{:?}",
            std::process::id(),
            Instant::now()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        Dir(dir)
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Starts the generator on a plan file.
pub fn spawn(plan_file: &Path, out: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_feedbench-load"))
        .arg("--plan")
        .arg(plan_file)
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn feedbench-load")
}

/// Waits for the process, killing it (and failing) past the deadline.
pub fn wait(child: &mut Child, deadline: Duration) -> (ExitStatus, String) {
    let until = Instant::now() + deadline;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            let mut stderr = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
            }
            return (status, stderr);
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("feedbench-load did not exit within {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `ready` holds for the output file's text, failing past the deadline.
pub fn wait_for_output(out: &Path, deadline: Duration, ready: impl Fn(&str) -> bool) {
    let until = Instant::now() + deadline;
    loop {
        if ready(&std::fs::read_to_string(out).unwrap_or_default()) {
            return;
        }
        assert!(Instant::now() < until, "the output never got ready");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The output, parsed.
#[derive(Debug)]
pub struct Output {
    pub start_ns: u64,
    pub rows: Vec<Row>,
    pub seconds: Vec<Second>,
    pub end: End,
}

/// Parses a whole output file, checking its framing: start, header, …, end.
pub fn read_output(out: &Path) -> Output {
    let text = std::fs::read_to_string(out).expect("output");
    assert!(text.ends_with('\n'), "unterminated output");
    let lines: Vec<Line> = text
        .lines()
        .map(|l| parse_line(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let Some(Line::Start {
        scenario_start_ns, ..
    }) = lines.first()
    else {
        panic!("no start line: {text}");
    };
    assert_eq!(lines.get(1), Some(&Line::Header));
    let Some(Line::End(end)) = lines.last() else {
        panic!("no end line: {text}");
    };
    let (mut rows, mut seconds) = (Vec::new(), Vec::new());
    for line in &lines[2..lines.len() - 1] {
        match line {
            Line::Request(row) => rows.push(row.clone()),
            Line::Second(second) => seconds.push(*second),
            other => panic!("unexpected {other:?}"),
        }
    }
    Output {
        start_ns: *scenario_start_ns,
        rows,
        seconds,
        end: *end,
    }
}

/// Writes the plan, runs the generator to its exit, and parses the output.
pub fn run(plan: &LoadPlan, dir: &Dir, deadline: Duration) -> (ExitStatus, String, Output) {
    let (plan_file, out) = (dir.path("load.json"), dir.path("load.csv"));
    std::fs::write(&plan_file, plan.to_json()).expect("write plan");
    let mut child = spawn(&plan_file, &out);
    let (status, stderr) = wait(&mut child, deadline);
    assert!(status.success(), "{status}: {stderr}");
    (status, stderr, read_output(&out))
}
