//! The study readers never panic on a damaged journal or manifest: the bytes of a real
//! study's (tests/hostile) are flipped, cut and given multibyte characters at random, then
//! read in-process the way `audit`, `status` and `report` read them (the journal, the
//! ledger's fold and states, the time split, every run directory and its manifest, the
//! audit's checks), under `catch_unwind`; and a fewer such studies go through the commands
//! themselves, which exit 0, 1 or 2, never 101.

use crate::hostile;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use feedbench::audit::{self, History, StudyFiles};
use feedbench::ledger::journal;
use feedbench::ledger::manifest::Manifest;
use feedbench::ledger::state::Ledger;
use feedbench::plan::{expand, load_file, RunSpec};
use feedbench::rundir::record::RunRecord;
use hostile::{run, Cmd, Study, PLAN, RUN_DIR};
use proptest::prelude::*;
use proptest::sample::Index;

/// One change to a file's bytes.
#[derive(Debug, Clone)]
enum Op {
    Flip(Index, u8),
    Cut(Index),
    Insert(Index, &'static str),
    Delete(Index, usize),
    Duplicate(Index, usize),
}

/// What gets inserted: multibyte characters (cut later, maybe), a BOM, NUL, a newline,
/// JSON punctuation, a `..` path and a huge number.
const INSERTS: &[&str] = &[
    "é",
    "✓",
    "𝄞",
    "\u{feff}",
    "\0",
    "\n",
    "\"",
    "{",
    "]",
    ",",
    "../../",
    "99999999999999999999999999999999",
    "-1",
];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(i, b)| Op::Flip(i, b)),
        any::<Index>().prop_map(Op::Cut),
        (any::<Index>(), proptest::sample::select(INSERTS)).prop_map(|(i, s)| Op::Insert(i, s)),
        (any::<Index>(), 1usize..64).prop_map(|(i, n)| Op::Delete(i, n)),
        (any::<Index>(), 1usize..256).prop_map(|(i, n)| Op::Duplicate(i, n)),
    ]
}

fn apply(bytes: &mut Vec<u8>, ops: &[Op]) {
    for op in ops {
        if bytes.is_empty() {
            return;
        }
        let len = bytes.len();
        match op {
            Op::Flip(i, bit) => bytes[i.index(len)] ^= 1 << bit,
            Op::Cut(i) => bytes.truncate(i.index(len)),
            Op::Insert(i, s) => {
                let at = i.index(len + 1);
                bytes.splice(at..at, s.bytes());
            }
            Op::Delete(i, n) => {
                let at = i.index(len);
                bytes.drain(at..(at + n).min(len));
            }
            Op::Duplicate(i, n) => {
                let at = i.index(len);
                let piece = bytes[at..(at + n).min(len)].to_vec();
                bytes.splice(at..at, piece);
            }
        }
    }
}

/// One study for every case, its journal and manifest as written, and what the readers
/// need besides (the plan's runs and its history in git).
struct Fixture {
    study: Study,
    journal: Vec<u8>,
    manifest: Vec<u8>,
    runs: Vec<RunSpec>,
    history: History,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let study = Study::new();
        let plan = study.repo.path(PLAN);
        Fixture {
            journal: study.read("journal.jsonl"),
            manifest: study.read(&format!("{RUN_DIR}/manifest.json")),
            runs: expand(&load_file(&plan, None).unwrap().plan),
            history: History::from_git(&plan, None).unwrap(),
            study,
        }
    })
}

/// Everything `audit`, `status` and `report` read from the study directory, in-process.
fn read_everything(f: &Fixture) {
    let dir = &f.study.dir;
    if let Ok(j) = journal::read(&dir.join(journal::FILE)) {
        let ledger = Ledger::fold(j.events());
        let _ = ledger.status(&f.runs);
        let _ = ledger.plan_change("x", &f.runs);
        let _ = j.undeclared_bad();
        let entries: Vec<_> = j.entries.iter().map(|(_, e)| e.clone()).collect();
        let _ = feedbench::ledger::hours::split(&entries, &mut |rel| {
            feedbench::ledger::hours::phases_at(dir, rel)
        });
    }
    let run = dir.join(RUN_DIR);
    let _ = Manifest::read(&run);
    let _ = RunRecord::read(&run);
    if let Ok(files) = StudyFiles::read(dir) {
        let report = audit::audit(&f.history, &files, &dir.display().to_string());
        let _ = report.markdown();
        let _ = serde_json::to_string(&report);
    }
}

/// Writes the mutated journal and manifest, runs `body`, and puts the originals back.
fn with_mutated<T>(journal: &[Op], manifest: &[Op], body: impl FnOnce(&Fixture) -> T) -> T {
    let f = fixture();
    let (mut j, mut m) = (f.journal.clone(), f.manifest.clone());
    apply(&mut j, journal);
    apply(&mut m, manifest);
    let m_rel = format!("{RUN_DIR}/manifest.json");
    f.study.write("journal.jsonl", &j);
    f.study.write(&m_rel, &m);
    let out = body(f);
    f.study.write("journal.jsonl", &f.journal);
    f.study.write(&m_rel, &f.manifest);
    out
}

/// The study is shared: the cases take turns.
fn turn() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn the_readers_never_panic_on_damaged_bytes(
        journal in prop::collection::vec(op(), 0..6),
        manifest in prop::collection::vec(op(), 0..6),
    ) {
        let _turn = turn();
        let result = with_mutated(&journal, &manifest, |f| {
            catch_unwind(AssertUnwindSafe(|| read_everything(f)))
        });
        prop_assert!(result.is_ok(), "a reader panicked on journal {journal:?}, manifest {manifest:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn the_commands_exit_0_1_or_2_on_damaged_bytes(
        journal in prop::collection::vec(op(), 1..4),
        manifest in prop::collection::vec(op(), 0..4),
    ) {
        let _turn = turn();
        let outcomes = with_mutated(&journal, &manifest, |f| {
            [Cmd::Audit, Cmd::Status, Cmd::Report].map(|c| (c, run(&f.study, c)))
        });
        for (cmd, got) in outcomes {
            prop_assert!(
                matches!(got.code, Some(0..=2)) && !got.out.contains("panicked"),
                "{cmd:?} exited {:?} on journal {journal:?}, manifest {manifest:?}:\n{}",
                got.code,
                got.out
            );
        }
    }
}
