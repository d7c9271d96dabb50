//! The study journal, `results/<study>/journal.jsonl`: one JSON event per line, appended and
//! fsync'd, never rewritten, each line linked to the one before it (`chain`). A crash can
//! leave a torn last line; reading tolerates it and the next writer terminates it and records
//! that it did, so no line is ever lost or hidden.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::chain::{link_of, Broken, Chain, Place, BACK_NS, EARLIEST_NS, UNCHAINED_VERSION};
use crate::files::{fail, sync_dir, FileError};

/// 2: each line carries `prev` (`chain`). Lines of version 1 are read as they are.
pub const FORMAT_VERSION: u32 = 2;
pub const FILE: &str = crate::rundir::layout::JOURNAL;

pub use crate::evidence::Evidence;

/// Who decided: feedbench itself, from data, or a person, with a reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decider {
    Feedbench,
    Person,
}

/// A change of one run's hash, or a run added or removed, by a plan amendment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunChange {
    pub run: String,
    /// None: the run is new in the amended plan.
    pub old_run_hash: Option<String>,
    /// None: the amended plan no longer has the run.
    pub new_run_hash: Option<String>,
}

/// One journal event. The tag `event` names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// A `feedbench run` began on the study (the first, or a resume).
    StudyStarted {
        plan_file: String,
        plan_hash: String,
        feedbench_version: String,
        git_commit: Option<String>,
        /// Whether the plan file had no uncommitted change (None: not in a git repository).
        git_clean: Option<bool>,
        resume: bool,
        runs_planned: usize,
        /// Runs this invocation means to execute.
        runs_to_do: Vec<String>,
    },
    /// The plan file was run with uncommitted changes, by `--allow-uncommitted`.
    UncommittedPlan {
        plan_file: String,
        plan_hash: String,
        git_commit: Option<String>,
        /// The plan's input files that differ from their commit or are not committed.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        files: Vec<String>,
    },
    RunStarted {
        run: String,
        run_hash: String,
        attempt: u32,
        dir: String,
    },
    /// The run executed to its end and its manifest is written.
    RunFinished {
        run: String,
        run_hash: String,
        attempt: u32,
        dir: String,
        /// `met`, `breached`, or None when the run has no verdict of its own.
        objective: Option<String>,
        cleanup_ok: bool,
    },
    /// A guard stopped the run, or it failed; its directory was moved aside.
    RunAborted {
        run: String,
        run_hash: String,
        attempt: u32,
        dir: String,
        reason: String,
    },
    /// A run started and never finished: feedbench was killed, the host rebooted, the
    /// engine restarted. Found by the next `run --resume`, which moved its directory aside.
    RunInterrupted {
        run: String,
        run_hash: String,
        attempt: u32,
        dir: String,
        /// What the directory held when it was found, e.g. `events.csv and containers.csv, no manifest`.
        found: String,
    },
    RunInvalidated {
        run: String,
        run_hash: String,
        attempt: u32,
        /// Where the run's directory is now (`_invalid_<reason>/…`).
        dir: String,
        reason: String,
        by: Decider,
        evidence: Vec<Evidence>,
    },
    RunSkipped {
        run: String,
        run_hash: String,
        reason: String,
        by: Decider,
    },
    /// An amendment changed the run's definition; its result no longer stands for the plan.
    RunSuperseded {
        run: String,
        run_hash: String,
        attempt: u32,
        dir: Option<String>,
        amendment: String,
    },
    /// A person invalidated or skipped a run another run took a figure from (a baseline's
    /// rate from its ramp's saturation): the dependent result no longer stands either. Its
    /// directory moved to `_superseded/`; it is not run, to be run again once its source is.
    RunSupersededByDependency {
        run: String,
        run_hash: String,
        attempt: u32,
        dir: String,
        /// The run it depends on, which was set aside.
        dependency: String,
        /// The person's reason for setting the dependency aside.
        reason: String,
    },
    PlanAmended {
        reason: String,
        old_plan_hash: String,
        new_plan_hash: String,
        git_commit: Option<String>,
        changes: Vec<RunChange>,
        /// The inputs' digest (`inputs-read`) before and after, when the study recorded one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        old_inputs_digest: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        new_inputs_digest: Option<String>,
        /// The input files whose content changed, by path.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        files_changed: Vec<String>,
    },
    /// The study's inputs as read when an invocation began, written when they differ from
    /// the last record (the first time, and after an amendment): every file the run hashes
    /// cover, with feedbench's templates.
    InputsRead {
        /// `inputs::Inputs::digest`: over the sources the run hashes cover.
        digest: String,
        files: Vec<crate::inputs::InputFile>,
    },
    GatePassed {
        contender: String,
        image: String,
        seconds: f64,
    },
    ContenderExcluded {
        contender: String,
        image: String,
        /// The gate's exit code (None: it timed out or could not start).
        exit_code: Option<i64>,
        reason: String,
        /// The gate's output (its last 64 KiB).
        output: String,
        runs: Vec<String>,
    },
    /// Another live study runs on one of this invocation's engines: found as the study
    /// began (it was there, and this one passed `--share-engine`) or before a run began or
    /// was settled (it came later, with `--share-engine`). The runs settled from here on
    /// competed with its runs for the engine's CPU and memory.
    EngineShared {
        /// The engine's name in the plan.
        engine: String,
        /// The other study, as its claim names it (study, instance, pid, results directory).
        with: String,
    },
    /// A torn line (a crash mid-write) was found at the end of the journal and terminated
    /// with a newline before this event was appended.
    TornLineFound { line: usize, bytes: usize },
    /// The writer's clock read more than 1 s before the journal's last line (a clock
    /// stepped by NTP, a resume on a host behind): the lines from this one on are timed by
    /// it, so their step back is declared (`chain`).
    ClockSteppedBack {
        /// The last line's `wall_ns`.
        from_ns: String,
        /// The clock's reading, this line's `wall_ns`.
        to_ns: String,
    },
}

impl Event {
    /// An attempt that did not finish (`run-aborted`, `run-interrupted`) whose directory is
    /// still named under `runs/`: it had none when it was found (killed before it made one),
    /// since one that had is moved aside (`_aborted/`, `_interrupted/`). That name may by now
    /// hold the next attempt's directory, which is not this attempt's.
    pub fn left_no_directory(&self) -> bool {
        match self {
            Event::RunAborted { dir, .. } | Event::RunInterrupted { dir, .. } => {
                dir.starts_with(&format!("{}/", crate::rundir::layout::RUNS))
            }
            _ => false,
        }
    }
}

pub fn unix_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// A journal line as written: when, then the event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub format_version: u32,
    /// Unix ns, as a string (JSON numbers lose precision past 2^53).
    pub wall_ns: String,
    /// The sha256 of the line before (`chain::link_of`); none on a line of version 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<String>,
    #[serde(flatten)]
    pub event: Event,
}

/// A line that does not parse.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BadLine {
    pub line: usize,
    pub text: String,
    pub error: String,
}

impl BadLine {
    /// The line as every message names it: `` `journal` line N does not parse: why ``.
    pub fn at(&self, journal: impl std::fmt::Display) -> String {
        format!(
            "`{journal}` line {} does not parse: {}",
            self.line, self.error
        )
    }
}

/// The journal as read.
#[derive(Debug, Clone, Default)]
pub struct Journal {
    /// (1-based line number, entry).
    pub entries: Vec<(usize, Entry)>,
    /// Lines that do not parse; a torn last line is in `torn` instead.
    pub bad: Vec<BadLine>,
    /// A last line without its newline: a write cut short.
    pub torn: Option<BadLine>,
    /// The first broken link of the chain and the first impossible time, and how many
    /// lines were written before the chain.
    pub order: Chain,
}

impl Journal {
    pub fn events(&self) -> impl Iterator<Item = &Event> {
        self.entries.iter().map(|(_, e)| &e.event)
    }

    /// Bad lines that no `torn-line-found` event declares.
    pub fn undeclared_bad(&self) -> Vec<&BadLine> {
        let declared: Vec<usize> = self
            .events()
            .filter_map(|e| match e {
                Event::TornLineFound { line, .. } => Some(*line),
                _ => None,
            })
            .collect();
        self.bad
            .iter()
            .chain(self.torn.iter())
            .filter(|b| !declared.contains(&b.line))
            .collect()
    }

    /// Where the journal's order is not proven: its first broken link, then its first
    /// impossible time.
    pub fn disorder(&self) -> impl Iterator<Item = &Broken> {
        self.order.broken.iter().chain(self.order.clock.iter())
    }
}

/// Parses journal text. Never fails: what does not parse is reported line by line.
pub fn parse(text: &str) -> Journal {
    parse_bytes(text.as_bytes())
}

/// Parses a journal's bytes. Never fails: what does not parse is reported line by line; a
/// line that is not UTF-8 (feedbench writes only UTF-8) is a bad line, never read lossily.
pub fn parse_bytes(bytes: &[u8]) -> Journal {
    let mut j = Journal {
        order: Chain::new(unix_ns()),
        ..Journal::default()
    };
    let complete = bytes.ends_with(b"\n");
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    if complete || bytes.is_empty() {
        lines.pop();
    }
    for (i, raw) in lines.iter().enumerate() {
        let n = i + 1;
        match entry(raw) {
            Ok(e) => {
                let place = Place {
                    version: e.format_version,
                    prev: e.prev.as_deref(),
                    wall_ns: &e.wall_ns,
                    steps_back: matches!(e.event, Event::ClockSteppedBack { .. }),
                };
                j.order.line(n, raw, Some(place), true);
                j.entries.push((n, e));
            }
            Err(error) => {
                j.order.line(n, raw, None, false);
                let bad = BadLine {
                    line: n,
                    text: String::from_utf8_lossy(raw).chars().take(200).collect(),
                    error,
                };
                if !complete && n == lines.len() {
                    j.torn = Some(bad);
                } else {
                    j.bad.push(bad);
                }
            }
        }
    }
    j
}

/// One line's entry: UTF-8, JSON, a version this feedbench reads, chained from version 2.
fn entry(raw: &[u8]) -> Result<Entry, String> {
    if raw.iter().all(u8::is_ascii_whitespace) {
        // feedbench never writes one: a line emptied by hand hides what it held.
        return Err("white space only".into());
    }
    let line = std::str::from_utf8(raw).map_err(|e| {
        format!(
            "not UTF-8 text (byte {} of the line is not)",
            e.valid_up_to() + 1
        )
    })?;
    let e = serde_json::from_str::<Entry>(line).map_err(|e| e.to_string())?;
    match e.format_version {
        FORMAT_VERSION if e.prev.is_none() => Err(format!(
            "format_version {FORMAT_VERSION} without `prev`, the sha256 of the line before it"
        )),
        FORMAT_VERSION | UNCHAINED_VERSION => Ok(e),
        v => Err(format!(
            "format_version {v}; this feedbench reads {UNCHAINED_VERSION} and {FORMAT_VERSION} (use the feedbench that wrote it)"
        )),
    }
}

pub fn read(path: &Path) -> Result<Journal, FileError> {
    match crate::confine::read(path) {
        Ok(bytes) => Ok(parse_bytes(&bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Journal::default()),
        Err(source) => Err(FileError {
            action: "read",
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// An open journal, appending.
pub struct Writer {
    path: PathBuf,
    file: std::fs::File,
    /// The link of the last line written (`chain::link_of`).
    last: String,
    /// The `wall_ns` of the last line that has one.
    last_ns: Option<u128>,
}

/// The time of the last line that gives one, read from the end (a torn or damaged line
/// gives none): the journal's clock, which the writer's must not fall behind.
fn last_wall_ns(body: &[u8]) -> Option<u128> {
    #[derive(Deserialize)]
    struct Stamp {
        wall_ns: String,
    }
    body.split(|b| *b == b'\n').rev().find_map(|l| {
        serde_json::from_slice::<Stamp>(l)
            .ok()?
            .wall_ns
            .parse()
            .ok()
    })
}

impl Writer {
    /// Opens (or creates) the journal for appending. A torn last line is terminated with a
    /// newline and declared with a `torn-line-found` event, so later lines stay whole.
    pub fn open(path: &Path) -> Result<Writer, FileError> {
        let fail = |action| fail(action, path);
        let existed = path.exists();
        // Never through a planted link, never blocked on a pipe (`confine`).
        let mut file = crate::confine::open_with(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .read(true),
            path,
        )
        .map_err(fail("open"))?;
        if !existed {
            if let Some(dir) = path.parent() {
                sync_dir(dir);
            }
        }
        let mut w = Writer {
            path: path.to_path_buf(),
            file: file.try_clone().map_err(fail("open"))?,
            last: link_of(b""),
            last_ns: None,
        };
        let len = file.seek(SeekFrom::End(0)).map_err(fail("read"))?;
        if len > 0 {
            // Bytes, not text: a crash can cut a multi-byte character in half.
            let mut bytes = Vec::new();
            file.seek(SeekFrom::Start(0)).map_err(fail("read"))?;
            file.read_to_end(&mut bytes).map_err(fail("read"))?;
            let whole = bytes.last() == Some(&b'\n');
            let body = if whole {
                &bytes[..bytes.len() - 1]
            } else {
                &bytes[..]
            };
            let start = body.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            // The torn line too is a line: the declaration links to it as it stands.
            w.last = link_of(&body[start..]);
            w.last_ns = last_wall_ns(body);
            if !whole {
                let line = bytes.iter().filter(|b| **b == b'\n').count() + 1;
                let cut = body.len() - start;
                // The newline and the declaration go in one write: no crash can leave the
                // torn line terminated but undeclared.
                let (_, entry) = line_of(
                    Event::TornLineFound { line, bytes: cut },
                    &w.last,
                    unix_ns(),
                );
                let mut buf = b"\n".to_vec();
                buf.extend_from_slice(&entry);
                w.raw(&buf, &entry)?;
            }
        }
        Ok(w)
    }

    /// Writes `bytes`, which end with the journal line `line`, and syncs them. The link
    /// moves on once the bytes are written: a failed sync leaves the line on disk.
    fn raw(&mut self, bytes: &[u8], line: &[u8]) -> Result<(), FileError> {
        self.file
            .write_all(bytes)
            .map_err(fail("append to", &self.path))?;
        self.last = link_of(&line[..line.len() - 1]);
        self.file.sync_data().map_err(fail("sync", &self.path))
    }

    /// Appends one event as one line (one `write`) and fsyncs it before returning. A clock
    /// before 2020 is refused; one more than 1 s behind the last line is declared first
    /// with `clock-stepped-back` (`chain`).
    pub fn append(&mut self, event: Event) -> Result<Entry, FileError> {
        let now = unix_ns();
        if now < EARLIEST_NS {
            let clock = std::io::Error::other(format!(
                "this host's clock reads {now} ns since 1970, before 2020: set the clock, then run again"
            ));
            return Err(fail("append to", &self.path)(clock));
        }
        if let Some(last) = self.last_ns.filter(|l| now + BACK_NS < *l) {
            let step = Event::ClockSteppedBack {
                from_ns: last.to_string(),
                to_ns: now.to_string(),
            };
            let (_, line) = line_of(step, &self.last, now);
            self.raw(&line, &line)?;
        }
        let (entry, line) = line_of(event, &self.last, now);
        self.raw(&line, &line)?;
        self.last_ns = Some(now);
        Ok(entry)
    }
}

/// An event as its journal line, linked to the line before (`prev`), newline included.
fn line_of(event: Event, prev: &str, now: u128) -> (Entry, Vec<u8>) {
    let entry = Entry {
        format_version: FORMAT_VERSION,
        wall_ns: now.to_string(),
        prev: Some(prev.to_string()),
        event,
    };
    let mut line = serde_json::to_string(&entry).expect("journal entries serialise");
    line.push('\n');
    (entry, line.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skipped(run: &str) -> Event {
        Event::RunSkipped {
            run: run.into(),
            run_hash: "h".into(),
            reason: "r".into(),
            by: Decider::Person,
        }
    }

    #[test]
    fn appends_and_reads_back() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FILE);
        let mut w = Writer::open(&p).unwrap();
        w.append(skipped("a/b/r1")).unwrap();
        w.append(skipped("a/b/r2")).unwrap();
        let j = read(&p).unwrap();
        assert_eq!(j.entries.len(), 2);
        assert_eq!(j.entries[1].0, 2);
        assert_eq!(j.entries[1].1.event, skipped("a/b/r2"));
        assert!(j.bad.is_empty() && j.torn.is_none());
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(
            text.starts_with(r#"{"format_version":2,"wall_ns":""#),
            "{text}"
        );
        assert!(
            text.contains(r#""event":"run-skipped","run":"a/b/r1""#),
            "{text}"
        );
    }

    #[test]
    fn a_torn_last_line_is_tolerated_then_terminated_and_declared() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FILE);
        let mut w = Writer::open(&p).unwrap();
        w.append(skipped("a/b/r1")).unwrap();
        drop(w);
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(br#"{"format_version":1,"wall_ns":"12","event":"run-sta"#)
            .unwrap();
        drop(f);
        let j = read(&p).unwrap();
        assert_eq!(j.entries.len(), 1);
        assert_eq!(j.torn.as_ref().map(|t| t.line), Some(2));
        assert_eq!(j.undeclared_bad().len(), 1);

        let mut w = Writer::open(&p).unwrap();
        w.append(skipped("a/b/r2")).unwrap();
        let j = read(&p).unwrap();
        assert!(j.torn.is_none());
        assert_eq!(j.bad.len(), 1);
        assert_eq!(j.bad[0].line, 2);
        assert!(matches!(
            j.entries[1].1.event,
            Event::TornLineFound { line: 2, bytes: 51 }
        ));
        assert_eq!(j.entries[2].1.event, skipped("a/b/r2"));
        assert!(j.undeclared_bad().is_empty());
    }

    #[test]
    fn a_torn_multibyte_character_does_not_stop_the_next_writer() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FILE);
        let mut w = Writer::open(&p).unwrap();
        w.append(skipped("a/b/r1")).unwrap();
        drop(w);
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        let half = "{\"reason\":\"✓".as_bytes();
        f.write_all(&half[..half.len() - 1]).unwrap();
        drop(f);
        let mut w = Writer::open(&p).unwrap();
        w.append(skipped("a/b/r2")).unwrap();
        let j = read(&p).unwrap();
        assert!(j.undeclared_bad().is_empty(), "{:?}", j.undeclared_bad());
        assert_eq!(j.entries.len(), 3);
    }

    #[test]
    fn a_line_that_is_not_utf8_is_a_bad_line_not_read_lossily() {
        let good = serde_json::to_string(&Entry {
            format_version: 1,
            wall_ns: "1".into(),
            prev: None,
            event: skipped("x"),
        })
        .unwrap();
        let mut bytes = format!("{good}\n").into_bytes();
        bytes.extend_from_slice(&good.replace("\"x\"", "\"x\u{1}\"").into_bytes());
        let at = bytes.len() - 10;
        bytes[at] = 0xff;
        bytes.extend_from_slice(format!("\n{good}\n").as_bytes());
        let j = parse_bytes(&bytes);
        assert_eq!(j.entries.len(), 2);
        assert_eq!(j.bad.len(), 1, "{:?}", j.bad);
        assert_eq!(j.bad[0].line, 2);
        assert!(
            j.bad[0].error.starts_with("not UTF-8"),
            "{}",
            j.bad[0].error
        );
        // Another format's line is not read as this one's.
        let j = parse(&format!(
            "{}\n",
            good.replace("\"format_version\":1", "\"format_version\":99")
        ));
        assert_eq!(j.bad.len(), 1, "{good}");
        assert!(
            j.bad[0].error.starts_with("format_version 99"),
            "{}",
            j.bad[0].error
        );
        // A torn last line cut mid-character is still the torn line.
        let half = "{\"reason\":\"✓".as_bytes();
        let j = parse_bytes(&[format!("{good}\n").as_bytes(), &half[..half.len() - 1]].concat());
        assert_eq!(j.torn.as_ref().map(|t| t.line), Some(2));
    }

    #[test]
    fn a_bad_line_in_the_middle_is_reported_not_hidden() {
        let good = serde_json::to_string(&Entry {
            format_version: 1,
            wall_ns: "1".into(),
            prev: None,
            event: skipped("x"),
        })
        .unwrap();
        let j = parse(&format!("{good}\nnot json\n{good}\n"));
        assert_eq!(j.entries.len(), 2);
        assert_eq!(j.bad.len(), 1);
        assert_eq!(j.bad[0].line, 2);
        assert_eq!(j.undeclared_bad().len(), 1);
    }

    #[test]
    fn every_line_links_to_the_one_before_past_an_old_line_and_a_torn_one() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FILE);
        // A journal of version 1, torn at its end, carried on by this version.
        let old = serde_json::to_string(&Entry {
            format_version: 1,
            wall_ns: unix_ns().to_string(),
            prev: None,
            event: skipped("a/b/r1"),
        })
        .unwrap();
        std::fs::write(&p, format!("{old}\n{{\"format_version\":2,\"wall")).unwrap();
        let mut w = Writer::open(&p).unwrap();
        w.append(skipped("a/b/r2")).unwrap();
        w.append(skipped("a/b/r3")).unwrap();
        let j = read(&p).unwrap();
        assert_eq!(j.entries.len(), 4, "{:?}", j.bad);
        assert_eq!((&j.order.broken, &j.order.clock), (&None, &None));
        assert_eq!(j.order.unchained, 1);
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let joined = |ls: &[&str]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
        // Moved, duplicated, deleted: the link after the change breaks.
        let moved = [lines[0], lines[1], lines[2], lines[4], lines[3]];
        let duplicated = [lines[0], lines[1], lines[2], lines[3], lines[3], lines[4]];
        let deleted = [lines[0], lines[1], lines[2], lines[4]];
        for (ls, at) in [(&moved[..], 4), (&duplicated[..], 5), (&deleted[..], 4)] {
            let broken = parse(&joined(ls)).order.broken;
            assert_eq!(broken.map(|b| b.line), Some(at), "{ls:?}");
        }
        // A line of version 2 carries its link.
        let e = parse(&format!("{}\n", lines[4].replace("\"prev\"", "\"was\"")));
        assert!(e.bad[0].error.contains("without `prev`"), "{:?}", e.bad);
    }

    #[test]
    fn a_clock_behind_the_last_line_is_declared_before_the_line_it_times() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FILE);
        // The last line was written an hour ahead of this host's clock.
        let ahead = (unix_ns() + 3_600_000_000_000).to_string();
        let first = serde_json::to_string(&Entry {
            format_version: FORMAT_VERSION,
            wall_ns: ahead.clone(),
            prev: Some(link_of(b"")),
            event: skipped("a/b/r1"),
        })
        .unwrap();
        std::fs::write(&p, format!("{first}\n")).unwrap();
        let mut w = Writer::open(&p).unwrap();
        w.append(skipped("a/b/r2")).unwrap();
        w.append(skipped("a/b/r3")).unwrap();
        let j = read(&p).unwrap();
        let events: Vec<&Event> = j.events().collect();
        assert!(
            matches!(events[1], Event::ClockSteppedBack { from_ns, .. } if *from_ns == ahead),
            "{events:?}"
        );
        assert_eq!(events.len(), 4, "one declaration, then the lines");
        assert_eq!((&j.order.broken, &j.order.clock), (&None, &None));
        // Undeclared, the same step is an impossible time.
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let undeclared = format!("{}\n{}\n", lines[0], lines[2]);
        let clock = parse(&undeclared).order.clock;
        assert_eq!(clock.map(|c| c.line), Some(2));
    }

    #[test]
    fn the_clock_of_a_journal_torn_at_its_end_is_its_last_whole_lines() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FILE);
        let ahead = (unix_ns() + 3_600_000_000_000).to_string();
        let first = serde_json::to_string(&Entry {
            format_version: FORMAT_VERSION,
            wall_ns: ahead.clone(),
            prev: Some(link_of(b"")),
            event: skipped("a/b/r1"),
        })
        .unwrap();
        std::fs::write(
            &p,
            format!("{first}\n{{\"format_version\":2,\"wall_ns\":\"1"),
        )
        .unwrap();
        let mut w = Writer::open(&p).unwrap();
        w.append(skipped("a/b/r2")).unwrap();
        let events: Vec<Event> = read(&p).unwrap().events().cloned().collect();
        assert!(
            matches!(events[1], Event::TornLineFound { line: 2, .. }),
            "{events:?}"
        );
        assert!(
            matches!(&events[2], Event::ClockSteppedBack { from_ns, .. } if *from_ns == ahead),
            "{events:?}"
        );
    }

    #[test]
    fn a_line_of_white_space_is_a_bad_line() {
        let j = parse("\n   \n");
        assert_eq!(j.bad.iter().map(|b| b.line).collect::<Vec<_>>(), [1, 2]);
    }
}
