//! A full disk, for real: the study's results on a size-limited tmpfs that this test mounts
//! and fills while a run measures. The disk guard aborts the run with its figure, no
//! journal line or manifest is torn or lost, and once space is freed `run --resume`
//! completes the study; with (almost) no byte left, a resume fails at the first write that
//! does not fit, with a clear error naming the file, never a panic.

use crate::common;
use crate::run::{following, json_run};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use feedbench::ledger::journal::{self, Event};
use feedbench::ledger::manifest::{verify, Manifest};

const PLAN: &str = "tests/plans/docker/disk.yaml";
/// The tmpfs's size and the plan's disk floor.
const SIZE_MIB: u64 = 64;
const FLOOR_MIB: u64 = 24;

/// A tmpfs mounted on a fresh directory, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount() -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={SIZE_MIB}m")])
            .arg("feedbench-disk-test")
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "cannot mount a tmpfs (the test needs root): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn free(&self) -> u64 {
        let c = std::ffi::CString::new(self.path().to_string_lossy().as_bytes()).unwrap();
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut s) }, 0);
        s.f_bavail as u64 * s.f_frsize as u64
    }

    /// Writes a filler file that leaves `leave` bytes free (about: tmpfs counts pages).
    fn fill_leaving(&self, leave: u64) -> PathBuf {
        let path = self.path().join("filler");
        let mut f = std::fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 1 << 20];
        while self.free() > leave + chunk.len() as u64 {
            f.write_all(&chunk).unwrap();
        }
        let rest = self.free().saturating_sub(leave) as usize;
        // Up to the last byte when nothing is to be left: the final write may fail short.
        let _ = f.write_all(&vec![0u8; rest]);
        let _ = f.sync_all();
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

fn feedbench(results: &Path, extra: &[&str]) -> Command {
    let mut c = json_run(PLAN, results);
    c.args(extra);
    c
}

/// Every journal line parses (a torn last line would be declared, none is expected).
fn journal_whole(study: &Path) -> Vec<Event> {
    let j = journal::read(&study.join(journal::FILE)).unwrap();
    assert!(j.undeclared_bad().is_empty(), "{:?}", j.undeclared_bad());
    j.events().cloned().collect()
}

pub fn a_disk_that_fills_mid_run_aborts_it_with_its_figure_and_resume_completes_the_study() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::plan_images(PLAN));
    let disk = Tmpfs::mount();
    let results = disk.path().join("results");
    let study = results.join("test-disk");

    // Run, and fill the disk once the run measures: the guard must trip within its tick.
    let mut filler = None;
    let mut free_before_fill = 0;
    let out = following(feedbench(&results, &[]), |v| {
        if filler.is_none() && v["event"] == "phase" && v["phase"] == "measure" {
            free_before_fill = disk.free();
            filler = Some(disk.fill_leaving(8 << 20));
        }
    });
    let filler = filler.expect("the run never reached its measured phase");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let free_at_fill = disk.free();
    eprintln!(
        "free before the fill: {free_before_fill} B; left by the fill: about {} B; floor {} B",
        8u64 << 20,
        FLOOR_MIB << 20
    );

    let aborted = study.join("_aborted/static_steady_r1");
    let m = Manifest::read(&aborted)
        .unwrap()
        .expect("the aborted run is sealed");
    assert!(verify(&aborted, &m).unwrap().is_empty());
    let detail = m.outcome.execution_detail.clone().unwrap_or_default();
    assert!(detail.contains("disk-floor"), "{detail}");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(aborted.join("run.json")).unwrap()).unwrap();
    let exec = &record["execution"];
    assert_eq!(exec["guard"], "disk-floor", "{record}");
    assert_eq!(exec["threshold"].as_f64(), Some(FLOOR_MIB as f64));
    let figure = exec["figure"].as_f64().unwrap();
    assert!(figure < FLOOR_MIB as f64, "{exec}");
    eprintln!("the guard's figure: {figure} MiB free against a floor of {FLOOR_MIB} MiB (free after: {free_at_fill} B)");
    let events = journal_whole(&study);
    assert!(events.iter().any(|e| matches!(e,
        Event::RunAborted { run, reason, .. } if run == "static/steady/r1" && reason.contains("disk-floor"))));

    // With (almost) no byte left, a resume fails at the first write that does not fit (a
    // journal line may still fit in the last page), clearly and naming it; nothing panics.
    disk.fill_leaving(0);
    let full = feedbench(&results, &["--resume"]).output().unwrap();
    let err = String::from_utf8_lossy(&full.stderr);
    eprintln!("a resume on the full disk said: {}", err.trim());
    assert_eq!(full.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(
        err.contains("journal.jsonl") || err.contains("test-disk"),
        "{err}"
    );
    let after_full = journal_whole(&study);
    assert!(after_full.len() >= events.len());

    // Space freed: the resume completes the study.
    std::fs::remove_file(&filler).unwrap();
    let out = feedbench(&results, &["--resume"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let done = study.join("runs/static_steady_r1");
    let m = Manifest::read(&done).unwrap().expect("the run completed");
    assert!(verify(&done, &m).unwrap().is_empty());
    let events = journal_whole(&study);
    assert!(events.iter().any(|e| matches!(e,
        Event::RunFinished { run, .. } if run == "static/steady/r1")));
    assert_eq!(
        rt.block_on(common::leftovers(&engine, "test-disk")),
        (vec![], vec![])
    );
}
