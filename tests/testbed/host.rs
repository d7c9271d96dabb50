//! Host interference on the real engine (tests/plans/docker/host.yaml): a steady run on a
//! quiet host stands, with host.csv written and the host's figures in run.json; the same
//! run while a process outside the study burns a core is set aside as `host-interference`,
//! its evidence naming the CPU used outside the study (every logical CPU but one burned,
//! on a larger host). The first run's figure is what a quiet host shows (docs/performance.md,
//! "Host interference").

use std::path::Path;
use std::process::{Child, Command};

use crate::common::{self, report::text};
use crate::run::{csv, run_json, run_plan, run_plan_on_a_quiet_host};

const PLAN: &str = "tests/plans/docker/host.yaml";
const STUDY: &str = "test-host";

/// Processes outside the study that burn every logical CPU but one until dropped: on any
/// host, at least half of it (one core of two here), far over the 20 % default.
struct Burners(Vec<Child>);

impl Burners {
    fn start() -> Burners {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let burn = || {
            Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("sh runs")
        };
        Burners((1..cpus.max(2)).map(|_| burn()).collect())
    }
}

impl Drop for Burners {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
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
    let out = run_plan_on_a_quiet_host(PLAN, quiet.path());
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
    // A late tick costs two rows of ten (its own and the next one's interval): most stay.
    let covered = host["seconds"].as_f64().unwrap() / host["window_s"].as_f64().unwrap();
    assert!(covered >= 0.6, "{host}");

    let busy = tempfile::tempdir().unwrap();
    let burners = Burners::start();
    let out = run_plan(PLAN, busy.path());
    drop(burners);
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
    eprintln!("cores burned outside the study: {host}");
    // The burners' cores are outside the study: most of them, whatever else ran.
    let burned = host["logical_cpus"].as_f64().unwrap() - 1.0;
    assert!(
        host["outside_cores"].as_f64().unwrap() > 0.7 * burned,
        "{host}"
    );
    // The evidence is run.json's figure, against the default ceiling.
    let pct = host["interference_pct"].as_f64().unwrap();
    assert!(
        (first["value"].as_f64().unwrap() - pct).abs() < 0.001,
        "{first} {host}"
    );
    assert_eq!(first["threshold"], 20.0, "{first}");
    assert!(
        pct > quiet_pct + 20.0,
        "{pct} against {quiet_pct} on a quiet host"
    );
    assert_eq!(
        rt.block_on(common::leftovers(&engine, STUDY)),
        (vec![], vec![])
    );
}
