//! Host interference on the real engine (tests/plans/docker/host.yaml): a steady run on a
//! quiet host stands, with host.csv written and the host's figures in run.json; the same
//! run while a process outside the study burns a core is set aside as `host-interference`,
//! its evidence naming the CPU used outside the study. The first run's figure is what a
//! quiet host shows (docs/performance.md, "Host interference").

use std::path::Path;
use std::process::{Child, Command};

use crate::common::{self, report::text};
use crate::run::{csv, run_json, run_plan};

const PLAN: &str = "tests/plans/docker/host.yaml";
const STUDY: &str = "test-host";

/// A process outside the study that burns one core until dropped.
struct Burner(Child);

impl Burner {
    fn start() -> Burner {
        let child = Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("sh runs");
        Burner(child)
    }
}

impl Drop for Burner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The run's directory under `results`, wherever the ledger put it.
fn run_dir(results: &Path) -> std::path::PathBuf {
    let study = results.join(STUDY);
    let found: Vec<_> = std::fs::read_dir(&study)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("queue_steady_r1"))
        .chain([study.join("runs/queue_steady_r1")])
        .filter(|p| p.join("run.json").is_file())
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

pub fn a_run_beside_a_process_burning_a_core_is_set_aside_as_host_interference() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::plan_images(PLAN));

    let quiet = tempfile::tempdir().unwrap();
    let out = run_plan(PLAN, quiet.path());
    assert!(out.status.success(), "{}", text(&out));
    let dir = quiet.path().join(STUDY).join("runs/queue_steady_r1");
    let record = run_json(&dir);
    assert!(
        record["validity_evidence"]
            .as_array()
            .is_none_or(|e| e.is_empty()),
        "a quiet host: {record:#}"
    );
    let host = &record["host"];
    let quiet_pct = host["interference_pct"].as_f64().unwrap();
    eprintln!("quiet host: {host}");
    assert!(host["study_cores"].as_f64().unwrap() > 0.0, "{host}");
    // Every second of the run is in host.csv, and the measured window's are complete.
    let rows = csv(&dir.join("host.csv"));
    assert!(rows.len() >= 12, "{} rows", rows.len());
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
    let covered = host["seconds"].as_f64().unwrap() / host["window_s"].as_f64().unwrap();
    assert!(covered > 0.8, "{host}");

    let busy = tempfile::tempdir().unwrap();
    let burner = Burner::start();
    let out = run_plan(PLAN, busy.path());
    drop(burner);
    // The study ran to its end; a run set aside is a failure of the study (exit 1).
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = run_dir(busy.path());
    assert!(
        dir.starts_with(busy.path().join(STUDY).join("_invalid_host-interference")),
        "{}",
        dir.display()
    );
    let record = run_json(&dir);
    let first = &record["validity_evidence"][0];
    assert_eq!(
        (&first["role"], &first["check"]),
        (&"host".into(), &"interference".into())
    );
    let host = &record["host"];
    eprintln!("a core burned outside the study: {host}");
    // The burner's core is outside the study: most of a core of two, whatever else ran.
    assert!(host["outside_cores"].as_f64().unwrap() > 0.7, "{host}");
    assert!(first["value"].as_f64().unwrap() > quiet_pct, "{first}");
    assert!(
        first["figure"].as_str().unwrap().contains("outside"),
        "{first}"
    );
    assert_eq!(
        rt.block_on(common::leftovers(&engine, STUDY)),
        (vec![], vec![])
    );
}
