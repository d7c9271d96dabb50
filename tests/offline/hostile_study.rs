//! Hostile study directories (issue 17, item 4): a real study written with the ledger's own
//! writers, mutated one way per case (tests/offline/hostile/cases.rs: flipped bytes, characters cut
//! in half, bytes that are not UTF-8, huge numbers, wrong JSON types, missing and extra
//! fields, duplicated lines, `..` and absolute paths, links and named pipes out of the study
//! directory, directories where files should be), then `audit`, `status`, `report`, `skip`
//! and `invalidate` run on it. Each must exit as its case says, naming the item, never
//! panic (exit 101), never block on the canary pipes outside the study directory, never
//! print the canary text, and never move or change anything outside.

use crate::hostile;

use hostile::cases::{self, Case};
use std::time::Duration;

use hostile::{run, run_command, Cmd, Study, CANARY_TEXT};

/// What went wrong with one command of one case, if anything.
fn judge(case: &Case, cmd: Cmd, want: &cases::Want, got: &hostile::Outcome) -> Option<String> {
    let at = format!("[{}] {cmd:?}", case.name);
    let chars: Vec<char> = got.out.chars().collect();
    let out: String = if chars.len() > 2000 {
        let (head, tail) = (&chars[..500], &chars[chars.len() - 1500..]);
        format!(
            "{}\n…\n{}",
            head.iter().collect::<String>(),
            tail.iter().collect::<String>()
        )
    } else {
        got.out.clone()
    };
    let Some(code) = got.code else {
        return Some(format!(
            "{at}: timed out after {:?}: it blocked, reading a pipe (the canary outside/canary.fifo or outside/pipes/*?)\n{}",
            hostile::TIMEOUT, out
        ));
    };
    if code == 101 || got.out.contains("panicked") {
        return Some(format!("{at}: panicked (exit {code})\n{out}"));
    }
    if got.out.contains(CANARY_TEXT) {
        return Some(format!(
            "{at}: printed the canary text of outside/: a file outside the study was read\n{out}"
        ));
    }
    if code != want.code {
        return Some(format!("{at}: exit {code}, want {}\n{out}", want.code));
    }
    let missing: Vec<&String> = want
        .names
        .iter()
        .filter(|n| !got.out.contains(n.as_str()))
        .collect();
    if !missing.is_empty() {
        return Some(format!("{at}: does not name {missing:?}\n{out}"));
    }
    None
}

/// `want`'s exit code, naming nothing.
fn code_of(want: &cases::Want) -> cases::Want {
    cases::Want {
        code: want.code,
        names: Vec::new(),
    }
}

fn check(cases: Vec<Case>) {
    let record = std::env::var_os("HOSTILE_RECORD").is_some();
    let mut failures = Vec::new();
    let n = cases.len();
    for case in &cases {
        let s = Study::new();
        (case.mutate)(&s);
        let before = s.outside_listing();
        // The JSON forms of the two readers exit as their human forms do (what they name
        // is in JSON, so only the code is compared).
        // In order: the readers (and their JSON forms, which exit as the human forms do;
        // what they name is in JSON, so only the code is compared), then the two writers.
        let [audit, status, report, skip, invalidate] = &case.want;
        let steps = [
            (Cmd::Audit, audit.clone()),
            (Cmd::Status, status.clone()),
            (Cmd::AuditJson, code_of(audit)),
            (Cmd::StatusJson, code_of(status)),
            (Cmd::Report, report.clone()),
            (Cmd::Skip, skip.clone()),
            (Cmd::Invalidate, invalidate.clone()),
        ];
        for (cmd, want) in &steps {
            let got = run(&s, *cmd);
            if record {
                let line = got
                    .out
                    .lines()
                    .filter(|l| {
                        l.contains("error") || l.contains("not analysable") || l.starts_with("D")
                    })
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" | ");
                eprintln!(
                    "RECORD [{}] {cmd:?}: {:?} {}",
                    case.name,
                    got.code,
                    line.chars().take(400).collect::<String>()
                );
            }
            if let Some(f) = judge(case, *cmd, want, &got) {
                failures.push(f);
            }
        }
        if s.outside_listing() != before {
            failures.push(format!(
                "[{}]: something outside the study directory was moved or made: {:?} then {:?}",
                case.name,
                before,
                s.outside_listing()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {n} cases' commands failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn a_clean_study_passes_every_command() {
    let s = Study::new();
    for cmd in Cmd::ALL {
        let got = run(&s, cmd);
        assert_eq!(got.code, Some(0), "{cmd:?}\n{}", got.out);
    }
}

#[test]
fn the_corpus_has_at_least_60_distinct_mutations() {
    let all = cases::all();
    let mut names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), all.len(), "two cases share a name");
    assert!(all.len() >= 60, "{} cases", all.len());
}

#[test]
fn damaged_journals() {
    check(cases::journal());
}

#[test]
fn damaged_manifests() {
    check(cases::manifest());
}

#[test]
fn damaged_run_files_and_layout() {
    check(cases::files());
}

#[test]
fn the_canaries_catch_a_reader_that_follows_a_link() {
    // The harness itself: `cat` through a link to the canary pipe blocks until killed, and
    // through a link to the canary text prints it.
    let s = Study::new();
    s.link("journal.jsonl", &s.outside.join("canary.fifo"));
    let mut c = std::process::Command::new("cat");
    c.arg("results/tiny/journal.jsonl");
    assert_eq!(run_command(&s, c, Duration::from_secs(1)).code, None);
    s.link("journal.jsonl", &s.outside.join("canary.txt"));
    let mut c = std::process::Command::new("cat");
    c.arg("results/tiny/journal.jsonl");
    assert!(run_command(&s, c, Duration::from_secs(5))
        .out
        .contains(CANARY_TEXT));
}

#[test]
fn no_command_opens_a_file_outside_the_study_under_strace() {
    if !hostile::strace_works() {
        eprintln!("strace is not installed or cannot trace here: the check is skipped");
        return;
    }
    let mut failures = Vec::new();
    let cases: Vec<Case> = cases::all()
        .into_iter()
        .filter(|c| c.name.contains("outside") || c.name.contains("link"))
        .collect();
    assert!(cases.len() >= 15, "{}", cases.len());
    // Files of the study the trace saw opened: none would mean the trace sees nothing.
    let mut seen = 0;
    for case in &cases {
        let s = Study::new();
        (case.mutate)(&s);
        let outside = s.outside.canonicalize().unwrap();
        for cmd in Cmd::ALL {
            let (got, opened) = hostile::run_traced(&s, cmd);
            assert!(
                got.code.is_some(),
                "[{}] {cmd:?} timed out under strace",
                case.name
            );
            let dir = s.dir.canonicalize().unwrap();
            seen += opened.iter().filter(|p| p.starts_with(&dir)).count();
            let out: Vec<_> = opened.iter().filter(|p| p.starts_with(&outside)).collect();
            if !out.is_empty() {
                failures.push(format!("[{}] {cmd:?} opened {out:?}", case.name));
            }
        }
    }
    assert!(
        seen > 100,
        "strace saw only {seen} files of the studies opened"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn report_verify_never_reads_a_metrics_csv_that_links_out() {
    // The report's metrics.csv, read back by --verify before the recomputation runs.
    let s = Study::new();
    assert_eq!(run(&s, Cmd::Report).code, Some(0));
    s.link("report/metrics.csv", &s.outside.join("text/run.json"));
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_feedbench"));
    c.args(["report", hostile::PLAN, "--verify"]);
    let got = run_command(&s, c, hostile::TIMEOUT);
    assert_eq!(got.code, Some(2), "{}", got.out);
    assert!(!got.out.contains(CANARY_TEXT), "{}", got.out);
    for name in [
        "report/metrics.csv",
        "symbolic link",
        "without --verify writes it again",
    ] {
        assert!(got.out.contains(name), "does not name {name}: {}", got.out);
    }
}
