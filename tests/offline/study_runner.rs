//! The study runner's policy on a fake testbed, without Docker: a failed gate excludes its
//! contender and the study goes on; a ramp that will not stand skips the runs that take
//! their rate from it; an interrupt mid-run settles the run as interrupted and a resume
//! runs it again; an amendment supersedes exactly the runs it touched. The same policy
//! runs on the real engine in tests/testbed/ledger.rs.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use feedbench::analysis::saturation::Saturation;
use feedbench::ledger::journal::{self, Decider, Event, Writer};
use feedbench::ledger::manifest::{verify, Git, Host, Image, Manifest};
use feedbench::ledger::Evidence;
use feedbench::plan::{load_file, LoadedPlan, RunSpec};
use feedbench::run::execute::Saturations;
use feedbench::run::gate::GateOutcome;
use feedbench::rundir::events::{Clock, RunEvent};
use feedbench::rundir::record::{Ending, Measured, RunRecord, FORMAT_VERSION};
use feedbench::rundir::REQUESTS_CSV;
use feedbench::spec::topology::{Instance, RunTopology};
use feedbench::study::{
    run_study, Interrupt, Observer, Reporter, Session, StudyError, StudyEvent, StudyRequest,
    Testbed, TestbedError,
};
use feedbench_core::inputs::Inputs;

const PLAN: &str = "tests/plans/runner/study.yaml";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A testbed that runs nothing: gates and runs end as the test says, and it notes what it
/// was asked to do.
#[derive(Default)]
struct Fake {
    failing_gates: BTreeSet<String>,
    invalid_runs: BTreeSet<String>,
    /// Runs whose execution fails (after `run_time`): no record.
    failing_runs: BTreeSet<String>,
    /// The run during which a person presses Ctrl-C: the fake raises the interrupt and the
    /// run never ends by itself.
    interrupt_during: Option<(String, tokio::sync::watch::Sender<bool>)>,
    /// What it was asked to do; shared with its twins (`Fake::twin`).
    log: Rc<RefCell<Vec<String>>>,
    /// The instance of every reap, in order.
    reaped: Rc<RefCell<Vec<Instance>>>,
    /// How long a run takes; with `gauge`, how many runs of all fakes are under way at once.
    run_time: std::time::Duration,
    gauge: Option<std::rc::Rc<Gauge>>,
}

/// Runs under way now, and the most ever under way at once, across fakes.
#[derive(Default)]
struct Gauge {
    now: std::cell::Cell<usize>,
    most: std::cell::Cell<usize>,
}

impl Fake {
    /// A fake for another group, ending gates and runs as this one does and noting what it
    /// is asked into the same log (no interrupt of its own).
    fn twin(&self) -> Fake {
        Fake {
            failing_gates: self.failing_gates.clone(),
            invalid_runs: self.invalid_runs.clone(),
            failing_runs: self.failing_runs.clone(),
            interrupt_during: None,
            log: self.log.clone(),
            reaped: self.reaped.clone(),
            run_time: self.run_time,
            gauge: self.gauge.clone(),
        }
    }

    fn note(&self, s: String) {
        self.log.borrow_mut().push(s);
    }

    fn log(&self) -> Vec<String> {
        self.log.borrow().clone()
    }
}

impl Testbed for Fake {
    async fn host(&self) -> Result<Host, TestbedError> {
        Ok(Host {
            cores: 8.0,
            memory_bytes: 16 << 30,
            kernel: "fake".into(),
            cgroup_version: "2".into(),
            engine_version: "fake".into(),
            cpu: None,
        })
    }

    async fn reap(&self, instance: &Instance) -> Result<usize, TestbedError> {
        self.note("reap".into());
        self.reaped.borrow_mut().push(instance.clone());
        Ok(0)
    }

    async fn images(&self, topo: &RunTopology) -> Vec<Image> {
        topo.containers
            .iter()
            .map(|c| Image {
                role: c.role.key(),
                container: c.name.clone(),
                image: c.image.clone(),
                image_id: Some(format!("sha256:{}", c.image.len())),
                engine: None,
            })
            .collect()
    }

    async fn gate(
        &self,
        _loaded: &LoadedPlan,
        run: &RunSpec,
        _instance: &Instance,
        _observer: Observer<'_>,
    ) -> Result<GateOutcome, TestbedError> {
        self.note(format!("gate {}", run.contender));
        let passed = !self.failing_gates.contains(&run.contender);
        Ok(GateOutcome {
            passed,
            judged: true,
            exit_code: Some(if passed { 0 } else { 1 }),
            output: if passed { "ok\n" } else { "C2 violated\n" }.into(),
            seconds: 0.1,
            image: "feedbench/gate:dev".into(),
            reason: format!("exit code {}", if passed { 0 } else { 1 }),
        })
    }

    async fn execute(
        &self,
        loaded: &LoadedPlan,
        run: &RunSpec,
        _topo: &RunTopology,
        measured: &Saturations,
        dir: &Path,
        observer: Observer<'_>,
    ) -> Result<RunRecord, TestbedError> {
        let from_ramp = measured
            .get(&(run.contender.clone(), run.repetition, "ramp".to_string()))
            .map(|(rate, _)| format!(" at 70% of {rate}"))
            .unwrap_or_default();
        self.note(format!("execute {}{from_ramp}", run.id));
        if let Some(g) = &self.gauge {
            g.now.set(g.now.get() + 1);
            g.most.set(g.most.get().max(g.now.get()));
        }
        tokio::time::sleep(self.run_time).await;
        if let Some(g) = &self.gauge {
            g.now.set(g.now.get() - 1);
        }
        if self.failing_runs.contains(&run.id) {
            return Err(TestbedError::Other("the engine went away".into()));
        }
        let clock = Clock::start();
        observer(
            &run.id,
            clock.now(),
            &RunEvent::Phase {
                phase: "measure".into(),
            },
        );
        if let Some((id, tx)) = &self.interrupt_during {
            if id == &run.id {
                std::fs::create_dir_all(dir).unwrap();
                tx.send_replace(true);
                std::future::pending::<()>().await;
            }
        }
        let fail = |e: std::io::Error| TestbedError::Other(e.to_string());
        std::fs::create_dir_all(dir).map_err(fail)?;
        std::fs::write(dir.join(REQUESTS_CSV), "start_ns\n").map_err(fail)?;
        let ramp = run.profile == "ramp";
        let record = RunRecord {
            format_version: FORMAT_VERSION,
            run_id: run.id.clone(),
            run_hash: run.run_hash.clone(),
            plan_hash: loaded.plan_hash.clone(),
            execution: Ending::Completed,
            cleanup_ok: true,
            derived: Vec::new(),
            warnings: Vec::new(),
            load: None,
            scheduled_arrivals: Some(100.0),
            monitors: None,
            frame: None,
            oom_kills: Vec::new(),
            saturation: ramp.then(|| Saturation {
                rate: Some(100.0),
                sustained_breach: Some(150.0),
                rate_before_first_breach: Some(100.0),
                first_breach: Some(150.0),
                transients: Vec::new(),
                confirm_steps: 1,
                steps: Vec::new(),
            }),
            measured: Some(Measured {
                requests: 100,
                p50_ms: Some(1.0),
                p99_ms: Some(2.0),
                failed_share: 0.0,
                windows: Some(feedbench::analysis::objective::JudgedWindows {
                    windows: 3,
                    breached: 0,
                }),
            }),
            validity: if self.invalid_runs.contains(&run.id) {
                vec![Evidence {
                    check: "cpu".into(),
                    role: "fault-proxy".into(),
                    container: None,
                    figure: "p95 CPU over the measured window, share of its cap".into(),
                    value: 97.0,
                    threshold: 80.0,
                    unit: "%".into(),
                }]
            } else {
                Vec::new()
            },
            seed: None,
            caps: Vec::new(),
            host: None,
            link: None,
            started_wall_ns: clock.start_wall_ns(),
            ended_wall_ns: clock.now().wall_ns,
        };
        record
            .write(dir)
            .map_err(|e| TestbedError::Other(e.to_string()))?;
        Ok(record)
    }
}

/// Keeps what the runner reported, as words.
#[derive(Default)]
struct Collect(Vec<String>);

impl Reporter for Collect {
    fn report(&mut self, event: StudyEvent<'_>) {
        let line = match event {
            StudyEvent::Journal(e) => format!("journal {}", kind(e)),
            StudyEvent::Excluded { run, .. } => format!("excluded {run}"),
            StudyEvent::Run { run, event, .. } => format!("run {run} {}", event.kind()),
            StudyEvent::RunStarting { run, .. } => format!("starting {run}"),
            other => format!("{other:?}"),
        };
        self.0.push(line);
    }
}

fn kind(e: &Event) -> String {
    serde_json::to_value(e).unwrap()["event"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The study's journal as `kind run` lines (`kind` alone for study-wide events).
fn journal_lines(results: &Path) -> Vec<String> {
    let j = journal::read(&results.join("runner").join(journal::FILE)).unwrap();
    assert!(j.undeclared_bad().is_empty());
    j.events()
        .map(|e| {
            let v = serde_json::to_value(e).unwrap();
            let run = v["run"]
                .as_str()
                .or(v["contender"].as_str())
                .map(|r| format!(" {r}"))
                .unwrap_or_default();
            format!("{}{run}", kind(e))
        })
        .collect()
}

fn count(lines: &[String], line: &str) -> usize {
    lines.iter().filter(|l| *l == line).count()
}

/// The contender a fake's log line is about (`None` for a reap, which is the study's).
fn contender_of(line: &str) -> Option<&str> {
    let what = line.split_once(' ')?.1;
    (!line.starts_with("reap")).then(|| what.split(['/', '.']).next().unwrap_or(what))
}

/// What the fakes of `groups` groups were asked, against what one group is asked, in order
/// (`one_group`). On one group: exactly that. On several, runs overlap: the same requests,
/// each contender's in the same order, and every group reaped where one would be.
fn assert_asked(log: &[String], one_group: &[&str], groups: usize) {
    if groups == 1 {
        assert_eq!(log, one_group);
        return;
    }
    let mut want: Vec<String> = Vec::new();
    for line in one_group {
        let copies = if line.starts_with("reap") { groups } else { 1 };
        want.extend(std::iter::repeat_n(line.to_string(), copies));
    }
    let (mut got_sorted, mut want_sorted) = (log.to_vec(), want.clone());
    got_sorted.sort();
    want_sorted.sort();
    assert_eq!(got_sorted, want_sorted, "asked {log:?}");
    for c in one_group.iter().filter_map(|l| contender_of(l)) {
        let of = |lines: &[String]| -> Vec<String> {
            lines
                .iter()
                .filter(|l| contender_of(l) == Some(c))
                .cloned()
                .collect()
        };
        assert_eq!(of(log), of(&want), "{c}'s order, asked {log:?}");
    }
}

fn registered() -> Git {
    Git {
        commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
        path: Some(PLAN.into()),
        clean: Some(true),
    }
}

struct Study {
    loaded: LoadedPlan,
    inputs: Inputs,
    runs: Vec<RunSpec>,
    results: tempfile::TempDir,
    git: Git,
}

impl Study {
    fn new(plan: &Path) -> Study {
        let loaded = load_file(plan, None).unwrap();
        let inputs = Inputs::of_working_tree(&loaded).unwrap();
        let runs = feedbench_core::inputs::expand(&loaded.plan, &inputs);
        Study {
            loaded,
            inputs,
            runs,
            results: tempfile::tempdir().unwrap(),
            git: registered(),
        }
    }

    /// One `feedbench run` of the whole plan on `fake`.
    async fn run(
        &self,
        fake: &Fake,
        interrupt: &mut Interrupt,
        resume: bool,
        amend: Option<&str>,
    ) -> (Result<(), StudyError>, Vec<String>) {
        self.run_on(std::slice::from_ref(fake), interrupt, resume, amend)
            .await
    }

    /// One `feedbench run` of the whole plan on `groups` groups, each a twin of `fake`.
    async fn run_groups(
        &self,
        fake: &Fake,
        groups: usize,
        interrupt: &mut Interrupt,
        resume: bool,
        amend: Option<&str>,
    ) -> (Result<(), StudyError>, Vec<String>) {
        let fakes: Vec<Fake> = (0..groups).map(|_| fake.twin()).collect();
        self.run_on(&fakes, interrupt, resume, amend).await
    }

    /// One `feedbench run` of the whole plan on `fakes`, one per group of engines.
    async fn run_on(
        &self,
        fakes: &[Fake],
        interrupt: &mut Interrupt,
        resume: bool,
        amend: Option<&str>,
    ) -> (Result<(), StudyError>, Vec<String>) {
        let request = StudyRequest {
            loaded: &self.loaded,
            runs: &self.runs,
            selected: &self.runs,
            results: self.results.path(),
            dir: None,
            registration: &self.git,
            resume,
            amend,
            allow_uncommitted: false,
            inputs: &self.inputs,
            uncommitted_inputs: &[],
        };
        let mut seen = Collect::default();
        let result = match Session::open(&request, &mut seen) {
            Ok(mut session) => run_study(&mut session, &request, fakes, interrupt).await,
            Err(e) => Err(e),
        };
        (result, seen.0)
    }

    fn journal(&self) -> Vec<String> {
        journal_lines(self.results.path())
    }

    /// Reads the plan and its inputs again, as the next `feedbench run` would.
    fn reload(&mut self, plan: &Path) {
        self.loaded = load_file(plan, None).unwrap();
        self.inputs = Inputs::of_working_tree(&self.loaded).unwrap();
        self.runs = feedbench_core::inputs::expand(&self.loaded.plan, &self.inputs);
    }

    fn dir(&self) -> PathBuf {
        self.results.path().join("runner")
    }
}

fn never() -> Interrupt {
    let (tx, i) = Interrupt::channel();
    std::mem::forget(tx);
    i
}

#[tokio::test]
async fn a_resume_reaps_the_instance_its_directory_records_and_a_damaged_record_is_refused() {
    let study = Study::new(&repo().join(PLAN));
    let (result, _) = study.run(&Fake::default(), &mut never(), false, None).await;
    result.unwrap();
    let recorded = feedbench_core::rundir::instance::read(&study.dir(), "runner")
        .unwrap()
        .expect("the first start records the study's instance");
    let again = Fake::default();
    let (result, _) = study.run(&again, &mut never(), true, None).await;
    result.unwrap();
    let reaped = again.reaped.borrow().clone();
    assert!(!reaped.is_empty());
    assert!(reaped.iter().all(|i| *i == recorded.instance), "{reaped:?}");
    // Damaged by hand: refused, naming the file, before anything is reaped or run.
    std::fs::write(study.dir().join("instance.json"), b"{\"format_version\":1,").unwrap();
    let damaged = Fake::default();
    let (result, _) = study.run(&damaged, &mut never(), true, None).await;
    let err = result.unwrap_err();
    assert!(err.is_refusal(), "{err}");
    assert!(
        err.to_string().contains("instance.json` is damaged"),
        "{err}"
    );
    assert!(damaged.log().is_empty(), "{:?}", damaged.log());
}

#[tokio::test]
async fn a_failed_gate_excludes_its_contender_and_the_study_goes_on() {
    a_failed_gate_excludes_its_contender_and_the_study_goes_on_on(1).await
}

#[tokio::test]
async fn a_failed_gate_excludes_its_contender_and_the_study_goes_on_on_two_groups() {
    a_failed_gate_excludes_its_contender_and_the_study_goes_on_on(2).await
}

async fn a_failed_gate_excludes_its_contender_and_the_study_goes_on_on(groups: usize) {
    let study = Study::new(&repo().join(PLAN));
    let fake = Fake {
        failing_gates: ["caddy".to_string()].into(),
        ..Fake::default()
    };
    let (result, seen) = study
        .run_groups(&fake, groups, &mut never(), false, None)
        .await;
    let err = result.unwrap_err();
    assert!(!err.is_refusal());
    assert!(
        err.to_string()
            .contains("2 run(s) not run because their contender failed its gate"),
        "{err}"
    );
    // Every gate first: caddy's failure is known before nginx's runs.
    assert_asked(
        &fake.log(),
        &[
            "gate nginx",
            "gate caddy",
            "execute nginx/ramp/r1",
            "execute nginx/baseline+replica-kill/r1 at 70% of 100",
        ],
        groups,
    );
    let j = study.journal();
    assert_eq!(count(&j, "gate-passed nginx"), 1, "{j:?}");
    assert_eq!(count(&j, "contender-excluded caddy"), 1, "{j:?}");
    assert_eq!(count(&j, "run-finished nginx/ramp/r1"), 1, "{j:?}");
    assert_eq!(
        count(&j, "run-finished nginx/baseline+replica-kill/r1"),
        1,
        "{j:?}"
    );
    assert!(
        !j.iter().any(|l| l.starts_with("run-started caddy")),
        "{j:?}"
    );
    assert!(
        seen.contains(&"excluded caddy/ramp/r1".to_string()),
        "{seen:?}"
    );
    assert!(
        seen.contains(&"run nginx/ramp/r1 phase".to_string()),
        "{seen:?}"
    );
    // The gate's output is kept, and the exclusion names it.
    let log = study.dir().join("gates/caddy.log");
    assert_eq!(std::fs::read_to_string(log).unwrap(), "C2 violated\n");

    // A resume does not gate caddy again, nor run what stands: an excluded contender's
    // runs are settled (status and the audit list them as excluded).
    let fake2 = Fake::default();
    let (result, seen) = study
        .run_groups(&fake2, groups, &mut never(), true, None)
        .await;
    result.unwrap();
    assert_asked(&fake2.log(), &["reap"], groups);
    assert!(
        seen.contains(&"NothingToDo { selected: 4 }".to_string()),
        "{seen:?}"
    );
}

#[tokio::test]
async fn an_invalid_ramp_skips_the_runs_that_take_their_rate_from_it() {
    an_invalid_ramp_skips_the_runs_that_take_their_rate_from_it_on(1).await
}

#[tokio::test]
async fn an_invalid_ramp_skips_the_runs_that_take_their_rate_from_it_on_two_groups() {
    an_invalid_ramp_skips_the_runs_that_take_their_rate_from_it_on(2).await
}

async fn an_invalid_ramp_skips_the_runs_that_take_their_rate_from_it_on(groups: usize) {
    let study = Study::new(&repo().join(PLAN));
    let fake = Fake {
        invalid_runs: ["nginx/ramp/r1".to_string()].into(),
        ..Fake::default()
    };
    let (result, _) = study
        .run_groups(&fake, groups, &mut never(), false, None)
        .await;
    let err = result.unwrap_err().to_string();
    assert!(err.contains("2 run(s) did not complete valid"), "{err}");
    assert!(
        !fake
            .log()
            .iter()
            .any(|l| l.starts_with("execute nginx/baseline")),
        "{:?}",
        fake.log()
    );
    let j = study.journal();
    assert_eq!(count(&j, "run-invalidated nginx/ramp/r1"), 1, "{j:?}");
    assert_eq!(
        count(&j, "run-skipped nginx/baseline+replica-kill/r1"),
        1,
        "{j:?}"
    );
    assert_eq!(
        count(&j, "run-finished caddy/baseline+replica-kill/r1"),
        1,
        "{j:?}"
    );
    assert!(study
        .dir()
        .join("_invalid_fault-proxy-cpu/nginx_ramp_r1")
        .is_dir());
}

#[tokio::test]
async fn a_ramp_a_person_skipped_skips_its_dependents() {
    a_ramp_a_person_skipped_skips_its_dependents_on(1).await
}

#[tokio::test]
async fn a_ramp_a_person_skipped_skips_its_dependents_on_two_groups() {
    a_ramp_a_person_skipped_skips_its_dependents_on(2).await
}

async fn a_ramp_a_person_skipped_skips_its_dependents_on(groups: usize) {
    let study = Study::new(&repo().join(PLAN));
    let ramp = study.runs.iter().find(|r| r.id == "nginx/ramp/r1").unwrap();
    std::fs::create_dir_all(study.dir()).unwrap();
    let mut w = Writer::open(&study.dir().join(journal::FILE)).unwrap();
    w.append(Event::StudyStarted {
        plan_file: PLAN.into(),
        plan_hash: study.loaded.plan_hash.clone(),
        feedbench_version: "0".into(),
        git_commit: None,
        git_clean: Some(true),
        resume: false,
        runs_planned: 4,
        runs_to_do: Vec::new(),
    })
    .unwrap();
    w.append(Event::RunSkipped {
        run: ramp.id.clone(),
        run_hash: ramp.run_hash.clone(),
        reason: "the host was needed elsewhere".into(),
        by: Decider::Person,
    })
    .unwrap();
    drop(w);
    let fake = Fake::default();
    let (result, _) = study
        .run_groups(&fake, groups, &mut never(), true, None)
        .await;
    assert!(result.is_err());
    let j = study.journal();
    assert_eq!(
        count(&j, "run-skipped nginx/baseline+replica-kill/r1"),
        1,
        "{j:?}"
    );
    assert!(!fake.log().iter().any(|l| l.starts_with("execute nginx")));
    assert_eq!(count(&j, "run-finished caddy/ramp/r1"), 1, "{j:?}");
}

#[tokio::test]
async fn an_interrupt_mid_run_is_settled_and_a_resume_runs_it_again() {
    let study = Study::new(&repo().join(PLAN));
    let (tx, mut interrupt) = Interrupt::channel();
    let fake = Fake {
        interrupt_during: Some(("nginx/baseline+replica-kill/r1".into(), tx)),
        ..Fake::default()
    };
    let (result, _) = study.run(&fake, &mut interrupt, false, None).await;
    let err = result.unwrap_err().to_string();
    assert!(
        err.contains("interrupted during `nginx/baseline+replica-kill/r1`"),
        "{err}"
    );
    // The runner reaped the run's containers, set its directory aside and stopped.
    assert_eq!(fake.log().last().unwrap(), "reap");
    // Its own instance, the one its directory records, and no other.
    let recorded = feedbench_core::rundir::instance::read(&study.dir(), "runner")
        .unwrap()
        .unwrap();
    assert_eq!(*fake.reaped.borrow(), [recorded.instance]);
    assert!(study
        .dir()
        .join("_interrupted/nginx_baseline_replica-kill_r1")
        .is_dir());
    let j = study.journal();
    assert_eq!(
        count(&j, "run-interrupted nginx/baseline+replica-kill/r1"),
        1,
        "{j:?}"
    );
    // Gates come first, so caddy's passed; none of its runs started.
    assert_eq!(count(&j, "gate-passed caddy"), 1, "{j:?}");
    assert!(
        !j.iter()
            .any(|l| l.starts_with("run-") && l.contains("caddy")),
        "{j:?}"
    );

    // A crash (no chance to settle) leaves a run started and not settled: write one.
    let caddy_ramp = study.runs.iter().find(|r| r.id == "caddy/ramp/r1").unwrap();
    let mut w = Writer::open(&study.dir().join(journal::FILE)).unwrap();
    w.append(Event::RunStarted {
        run: caddy_ramp.id.clone(),
        run_hash: caddy_ramp.run_hash.clone(),
        attempt: 1,
        dir: "runs/caddy_ramp_r1".into(),
    })
    .unwrap();
    drop(w);
    std::fs::create_dir_all(study.dir().join("runs/caddy_ramp_r1")).unwrap();

    let fake = Fake::default();
    let (result, _) = study.run(&fake, &mut never(), true, None).await;
    result.unwrap();
    assert_eq!(
        fake.log(),
        [
            "reap",
            "execute nginx/baseline+replica-kill/r1 at 70% of 100",
            "execute caddy/ramp/r1",
            "execute caddy/baseline+replica-kill/r1 at 70% of 100",
        ]
    );
    let j = study.journal();
    for run in &study.runs {
        assert_eq!(count(&j, &format!("run-finished {}", run.id)), 1, "{j:?}");
    }
    assert_eq!(count(&j, "run-interrupted caddy/ramp/r1"), 1, "{j:?}");
    assert!(study.dir().join("_interrupted/caddy_ramp_r1").is_dir());
    for run in &study.runs {
        let dir = study
            .dir()
            .join("runs")
            .join(run.id.replace(['/', '+'], "_"));
        let m = Manifest::read(&dir).unwrap().unwrap();
        assert!(verify(&dir, &m).unwrap().is_empty(), "{}", run.id);
    }
}

#[tokio::test]
async fn an_interrupt_between_runs_is_not_lost() {
    an_interrupt_between_runs_is_not_lost_on(1).await
}

#[tokio::test]
async fn an_interrupt_between_runs_is_not_lost_on_two_groups() {
    an_interrupt_between_runs_is_not_lost_on(2).await
}

async fn an_interrupt_between_runs_is_not_lost_on(groups: usize) {
    let study = Study::new(&repo().join(PLAN));
    let (tx, mut interrupt) = Interrupt::channel();
    tx.send_replace(true);
    let fake = Fake::default();
    let (result, _) = study
        .run_groups(&fake, groups, &mut interrupt, false, None)
        .await;
    let err = result.unwrap_err().to_string();
    assert!(err.contains("interrupted between runs"), "{err}");
    assert!(fake.log().is_empty(), "{:?}", fake.log());
}

#[tokio::test]
async fn an_amendment_supersedes_exactly_what_it_touched() {
    an_amendment_supersedes_exactly_what_it_touched_on(1).await
}

#[tokio::test]
async fn an_amendment_supersedes_exactly_what_it_touched_on_two_groups() {
    an_amendment_supersedes_exactly_what_it_touched_on(2).await
}

async fn an_amendment_supersedes_exactly_what_it_touched_on(groups: usize) {
    let study = Study::new(&repo().join(PLAN));
    let fake = Fake::default();
    study
        .run_groups(&fake, groups, &mut never(), false, None)
        .await
        .0
        .unwrap();
    let study_dir = study.dir();
    let manifest = |run: &str| {
        std::fs::read(
            study_dir
                .join("runs")
                .join(run.replace(['/', '+'], "_"))
                .join("manifest.json"),
        )
        .unwrap()
    };
    let nginx_before = manifest("nginx/baseline+replica-kill/r1");

    // caddy's replicas get more CPU: its runs change, nginx's do not. The changed contender
    // passes its gate again; nginx is not gated again.
    let text = std::fs::read_to_string(repo().join(PLAN)).unwrap();
    let edited = text.replace(
        "    caps:\n      replica: {cpus: 0.25, memory: 128MiB}",
        "    caps:\n      replica: {cpus: 0.5, memory: 128MiB}",
    );
    assert_ne!(text, edited);
    let plan_dir = tempfile::tempdir().unwrap();
    let plan = plan_dir.path().join("study.yaml");
    std::fs::write(&plan, edited).unwrap();
    let amended = Study {
        results: study.results,
        ..Study::new(&plan)
    };

    let fake = Fake::default();
    let (result, _) = amended
        .run_groups(&fake, groups, &mut never(), true, None)
        .await;
    let err = result.unwrap_err();
    assert!(err.is_refusal(), "{err}");
    let text = err.to_string();
    assert!(text.contains("--amend"), "{text}");
    assert!(
        text.contains("caddy/ramp/r1 (its definition changed)"),
        "{text}"
    );
    assert!(!text.contains("nginx"), "{text}");
    assert!(fake.log().is_empty(), "{:?}", fake.log());

    let fake = Fake::default();
    let (result, _) = amended
        .run_groups(
            &fake,
            groups,
            &mut never(),
            true,
            Some("caddy needs half a core"),
        )
        .await;
    result.unwrap();
    assert_asked(
        &fake.log(),
        &[
            "reap",
            "gate caddy",
            "execute caddy/ramp/r1",
            "execute caddy/baseline+replica-kill/r1 at 70% of 100",
        ],
        groups,
    );
    let j = amended.journal();
    assert_eq!(count(&j, "plan-amended"), 1, "{j:?}");
    let superseded: BTreeSet<&str> = j
        .iter()
        .filter(|l| l.starts_with("run-superseded"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        superseded,
        [
            "run-superseded caddy/ramp/r1",
            "run-superseded caddy/baseline+replica-kill/r1"
        ]
        .into(),
        "{j:?}"
    );
    assert_eq!(manifest("nginx/baseline+replica-kill/r1"), nginx_before);
    assert!(amended
        .dir()
        .join("_superseded/caddy_ramp_r1/manifest.json")
        .is_file());
}

#[tokio::test]
async fn a_pilot_runs_in_its_own_area_under_its_own_name_and_leaves_the_study_alone() {
    use feedbench::plan::scale::{scale_loaded, Scale};
    use feedbench::plan::select::with_dependencies;
    use feedbench::rundir::layout::{pilot_dir, PILOT_RECORD};
    use feedbench::study::{open_area, PilotRequest};

    let study = Study::new(&repo().join(PLAN));
    let text = std::fs::read(repo().join(PLAN)).unwrap();
    let scale = Scale::new(0.25).unwrap();
    let scaled = scale_loaded(&study.loaded, &String::from_utf8_lossy(&text), scale, None).unwrap();
    let inputs = Inputs::of_working_tree(&scaled).unwrap();
    let runs = feedbench_core::inputs::expand(&scaled.plan, &inputs);
    let selected = with_dependencies(&runs, Some("nginx/baseline*"));
    let git = Git {
        clean: Some(false),
        ..registered()
    };
    let pilot = async |fake: &Fake| {
        let pilot = open_area(&PilotRequest {
            scaled: &scaled,
            plan_text: &text,
            scale,
            repetitions: None,
            only: Some("nginx/baseline*"),
            selected: &selected,
            results: study.results.path(),
            git: &git,
        })
        .unwrap();
        let request = StudyRequest {
            loaded: &pilot.loaded,
            runs: &runs,
            selected: &selected,
            results: study.results.path(),
            dir: Some(&pilot.dir),
            registration: &git,
            resume: false,
            amend: None,
            allow_uncommitted: true,
            inputs: &inputs,
            uncommitted_inputs: &[],
        };
        let mut seen = Collect::default();
        let mut session = Session::open(&request, &mut seen).unwrap();
        let result = run_study(
            &mut session,
            &request,
            std::slice::from_ref(fake),
            &mut never(),
        )
        .await;
        (pilot, result)
    };
    let fake = Fake::default();
    let (one, result) = pilot(&fake).await;
    result.unwrap();
    assert_eq!(one.number, 1);
    assert_eq!(one.dir, pilot_dir(&study.dir(), 1));
    assert_eq!(
        fake.log(),
        [
            "gate nginx",
            "execute nginx/ramp/r1",
            "execute nginx/baseline+replica-kill/r1 at 70% of 100",
        ]
    );
    // Its own journal, with the plan's state; nothing in the study's own place.
    let j = journal::read(&one.dir.join(journal::FILE)).unwrap();
    let kinds: Vec<String> = j.events().map(kind).collect();
    assert_eq!(
        kinds[..3],
        ["inputs-read", "uncommitted-plan", "study-started"],
        "{kinds:?}"
    );
    assert_eq!(count(&kinds, "run-finished"), 2, "{kinds:?}");
    assert!(!study.dir().join(journal::FILE).exists());
    // Its runs ran under the pilot's name, in containers no study's run can have.
    let m = Manifest::read(&one.dir.join("runs/nginx_ramp_r1"))
        .unwrap()
        .unwrap();
    assert_eq!(m.study, "runner.pilot-1");
    assert_eq!(m.plan_hash, study.loaded.plan_hash);
    assert!(
        m.images
            .iter()
            .all(|i| i.container.starts_with("fb-runner.pilot-1-")),
        "{:?}",
        m.images
    );
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(one.dir.join(PILOT_RECORD)).unwrap()).unwrap();
    assert_eq!(record["scale"], 0.25);
    assert_eq!(record["runs"].as_array().unwrap().len(), 2);

    // A second pilot takes the next number; the study itself then runs without --resume.
    let (two, result) = pilot(&Fake::default()).await;
    result.unwrap();
    assert_eq!(two.number, 2);
    let (result, _) = study.run(&Fake::default(), &mut never(), false, None).await;
    result.unwrap();
    assert!(study.dir().join(journal::FILE).exists());
}

/// The runner's plan with a database whose init scripts are files beside it, and nginx in
/// two arms: `plain` runs `schema.sql`, `indexed` also `indexed.sql`.
fn plan_with_init_scripts(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(repo().join(PLAN))
        .unwrap()
        .replace(
            "  services: {}\n  links: {}\n",
            "  services:\n    database: {kind: database, image: \"postgres:16\", port: 5432, init: [schema.sql]}\n  links:\n    db: {service: database, listen: 15432}\n",
        )
        .replace(
            "caps:\n  replica: {cpus: 0.25, memory: 128MiB}\n  fault-proxy",
            "caps:\n  replica: {cpus: 0.25, memory: 128MiB}\n  database: {cpus: 0.25, memory: 256MiB}\n  fault-proxy",
        )
        .replace(
            "    gate: {image: \"feedbench/gate:dev\", command: [check], timeout: 1m}\n  caddy:",
            "    gate: {image: \"feedbench/gate:dev\", command: [check], timeout: 1m}\n    variants:\n      plain: {}\n      indexed:\n        services:\n          database: {init: [schema.sql, indexed.sql]}\n  caddy:",
        );
    assert!(text.contains("indexed.sql") && text.contains("database: {cpus"));
    std::fs::write(dir.join("schema.sql"), "create table t (id int);\n").unwrap();
    std::fs::write(dir.join("indexed.sql"), "create index on t (id);\n").unwrap();
    let plan = dir.join("study.yaml");
    std::fs::write(&plan, text).unwrap();
    plan
}

/// Editing one init script is a change of exactly the runs that use it: `--resume` refuses,
/// naming the file and those runs and no other; `--amend` supersedes and reruns exactly
/// those, and journals the file.
#[tokio::test]
async fn an_edited_init_script_is_refused_with_its_runs_and_an_amendment_reruns_exactly_those() {
    an_edited_init_script_is_refused_with_its_runs_and_an_amendment_reruns_exactly_those_on(1).await
}

#[tokio::test]
async fn an_edited_init_script_is_refused_with_its_runs_and_an_amendment_reruns_exactly_those_on_two_groups(
) {
    an_edited_init_script_is_refused_with_its_runs_and_an_amendment_reruns_exactly_those_on(2).await
}

async fn an_edited_init_script_is_refused_with_its_runs_and_an_amendment_reruns_exactly_those_on(
    groups: usize,
) {
    let scripts = tempfile::tempdir().unwrap();
    let plan = plan_with_init_scripts(scripts.path());
    let mut study = Study::new(&plan);
    let fake = Fake::default();
    let (result, _) = study
        .run_groups(&fake, groups, &mut never(), false, None)
        .await;
    result.unwrap();
    assert_eq!(
        count(&study.journal(), "run-finished nginx.indexed/ramp/r1"),
        1
    );

    std::fs::write(
        scripts.path().join("indexed.sql"),
        "create index on t (id desc);\n",
    )
    .unwrap();
    study.reload(&plan);
    let (result, _) = study
        .run_groups(&Fake::default(), groups, &mut never(), true, None)
        .await;
    let err = result.unwrap_err();
    assert!(err.is_refusal(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("`indexed.sql`: sha256"), "{msg}");
    let named: Vec<&str> = msg
        .lines()
        .filter_map(|l| l.trim().split(' ').next())
        .filter(|w| w.contains("/r1"))
        .collect();
    assert_eq!(
        named,
        [
            "nginx.indexed/baseline+replica-kill/r1",
            "nginx.indexed/ramp/r1"
        ],
        "{msg}"
    );

    let fake = Fake::default();
    let (result, _) = study
        .run_groups(
            &fake,
            groups,
            &mut never(),
            false,
            Some("a descending index"),
        )
        .await;
    result.unwrap();
    let executed: Vec<String> = fake
        .log()
        .into_iter()
        .filter(|l| l.starts_with("execute"))
        .collect();
    assert_asked(
        &executed,
        &[
            "execute nginx.indexed/ramp/r1",
            "execute nginx.indexed/baseline+replica-kill/r1 at 70% of 100",
        ],
        groups,
    );
    let j = journal::read(&study.dir().join(journal::FILE)).unwrap();
    let amended: Vec<&Event> = j
        .events()
        .filter(|e| matches!(e, Event::PlanAmended { .. }))
        .collect();
    let Event::PlanAmended {
        files_changed,
        old_inputs_digest,
        new_inputs_digest,
        changes,
        ..
    } = amended[0]
    else {
        unreachable!()
    };
    assert_eq!(files_changed, &["indexed.sql"]);
    assert_ne!(old_inputs_digest, new_inputs_digest);
    assert_eq!(changes.len(), 2);
    assert_eq!(j.events().filter(|e| kind(e) == "inputs-read").count(), 2);
}

/// Two groups of engines: both gates first (on the first group), both ramps at once, each
/// baseline only once its ramp stands (and at 70% of it), every run once, on both groups.
#[tokio::test]
async fn several_groups_run_at_once_and_a_run_waits_for_the_run_it_takes_a_rate_from() {
    let study = Study::new(&repo().join(PLAN));
    let gauge = std::rc::Rc::new(Gauge::default());
    let fake = || Fake {
        run_time: std::time::Duration::from_millis(200),
        gauge: Some(gauge.clone()),
        ..Fake::default()
    };
    let fakes = [fake(), fake()];
    let (result, seen) = study.run_on(&fakes, &mut never(), false, None).await;
    result.unwrap();
    let (a, b) = (fakes[0].log(), fakes[1].log());
    assert_eq!(&a[..2], ["gate nginx", "gate caddy"], "{a:?}");
    assert!(!b.iter().any(|l| l.starts_with("gate")), "{b:?}");
    let executed: Vec<&String> = a
        .iter()
        .chain(&b)
        .filter(|l| l.starts_with("execute"))
        .collect();
    assert_eq!(executed.len(), 4, "{executed:?}");
    for c in ["nginx", "caddy"] {
        assert_eq!(
            executed
                .iter()
                .filter(|l| l.starts_with(&format!("execute {c}/ramp/r1")))
                .count(),
            1
        );
        assert_eq!(
            executed
                .iter()
                .filter(|l| **l == &format!("execute {c}/baseline+replica-kill/r1 at 70% of 100"))
                .count(),
            1,
            "{executed:?}"
        );
    }
    assert!(a.iter().any(|l| l.starts_with("execute")), "{a:?}");
    assert!(b.iter().any(|l| l.starts_with("execute")), "{b:?}");
    assert_eq!(gauge.most.get(), 2, "the two groups never ran at once");
    let j = study.journal();
    for id in [
        "nginx/ramp/r1",
        "caddy/ramp/r1",
        "nginx/baseline+replica-kill/r1",
        "caddy/baseline+replica-kill/r1",
    ] {
        assert_eq!(count(&j, &format!("run-started {id}")), 1, "{j:?}");
        assert_eq!(count(&j, &format!("run-finished {id}")), 1, "{j:?}");
    }
    // A baseline starts only after its ramp finished.
    let at = |line: &str| j.iter().position(|l| l == line).unwrap();
    for c in ["nginx", "caddy"] {
        assert!(
            at(&format!("run-finished {c}/ramp/r1"))
                < at(&format!("run-started {c}/baseline+replica-kill/r1")),
            "{j:?}"
        );
    }
    assert!(
        seen.iter().any(|l| l == "starting caddy/ramp/r1"),
        "{seen:?}"
    );
}

/// An interrupt with a run under way on each group stops both: each group is reaped, both
/// runs are recorded as interrupted, and a resume runs them again, once each.
#[tokio::test]
async fn an_interrupt_stops_every_group_and_a_resume_runs_each_interrupted_run_again() {
    let study = Study::new(&repo().join(PLAN));
    let (tx, mut interrupt) = Interrupt::channel();
    let first = Fake {
        interrupt_during: Some(("nginx/ramp/r1".into(), tx)),
        ..Fake::default()
    };
    let second = Fake {
        run_time: std::time::Duration::from_secs(3600),
        ..Fake::default()
    };
    let fakes = [first, second];
    let (result, _) = study.run_on(&fakes, &mut interrupt, false, None).await;
    let err = result.unwrap_err().to_string();
    assert!(
        err.contains("`nginx/ramp/r1`") && err.contains("`caddy/ramp/r1`"),
        "{err}"
    );
    for f in &fakes {
        assert_eq!(
            f.log().last().map(String::as_str),
            Some("reap"),
            "{:?}",
            f.log()
        );
    }
    let j = study.journal();
    assert_eq!(count(&j, "run-interrupted nginx/ramp/r1"), 1, "{j:?}");
    assert_eq!(count(&j, "run-interrupted caddy/ramp/r1"), 1, "{j:?}");
    let fakes = [Fake::default(), Fake::default()];
    let (result, _) = study.run_on(&fakes, &mut never(), true, None).await;
    result.unwrap();
    let j = study.journal();
    for id in [
        "nginx/ramp/r1",
        "caddy/ramp/r1",
        "nginx/baseline+replica-kill/r1",
        "caddy/baseline+replica-kill/r1",
    ] {
        assert_eq!(count(&j, &format!("run-finished {id}")), 1, "{j:?}");
    }
    assert_eq!(count(&j, "run-started nginx/ramp/r1"), 2, "{j:?}");
    assert_eq!(count(&j, "run-started caddy/ramp/r1"), 2, "{j:?}");
}

/// A run that cannot be executed on one group while another group's run is under way: the
/// other run finishes and is settled, no run starts after the failure, the failed run is
/// aborted with its group reaped, and the study says which run could not be executed.
#[tokio::test]
async fn a_run_failing_on_one_group_lets_the_other_finish_and_starts_no_more() {
    let study = Study::new(&repo().join(PLAN));
    let first = Fake {
        failing_runs: ["nginx/ramp/r1".to_string()].into(),
        run_time: std::time::Duration::from_millis(20),
        ..Fake::default()
    };
    let second = Fake {
        run_time: std::time::Duration::from_millis(400),
        ..Fake::default()
    };
    let fakes = [first, second];
    let (result, seen) = study.run_on(&fakes, &mut never(), false, None).await;
    // Nothing is taken up after the failure: not even a run found waiting.
    assert!(!seen.iter().any(|l| l.starts_with("Waiting")), "{seen:?}");
    let err = result.unwrap_err();
    assert!(!err.is_refusal());
    let err = err.to_string();
    assert!(
        err.contains("`nginx/ramp/r1` could not be executed: the engine went away"),
        "{err}"
    );
    let j = study.journal();
    assert_eq!(count(&j, "run-aborted nginx/ramp/r1"), 1, "{j:?}");
    assert_eq!(count(&j, "run-finished caddy/ramp/r1"), 1, "{j:?}");
    assert!(
        !j.iter()
            .any(|l| l.starts_with("run-started nginx/baseline")),
        "{j:?}"
    );
    assert!(
        !j.iter()
            .any(|l| l.starts_with("run-started caddy/baseline")),
        "{j:?}"
    );
    // The failed run's group was reaped; the other group was not touched while it ran.
    assert_eq!(fakes[0].log().last().map(String::as_str), Some("reap"));
    assert!(
        !fakes[1].log().iter().any(|l| l == "reap"),
        "{:?}",
        fakes[1].log()
    );
}
