//! The corpus: each case one mutation of the real study, and what each of the five commands
//! must do on it: exit 0, exit 1 naming the tampered item, or exit 2 naming the unreadable
//! file (and line). The names are what the output must contain.

use serde_json::{json, Value};

use super::edit::{self, *};
use super::{Study, NOT_RUN, RUN, RUN_DIR};

/// What one command must do: its exit code and what its output (stdout and stderr) names.
#[derive(Debug, Clone)]
pub struct Want {
    pub code: i32,
    pub names: Vec<String>,
}

pub fn ok() -> Want {
    Want {
        code: 0,
        names: Vec::new(),
    }
}

/// Exit 0, naming `names` (a deviation or a left-out run reported, not failed).
pub fn ok_naming(names: &[&str]) -> Want {
    Want {
        code: 0,
        names: names.iter().map(|n| n.to_string()).collect(),
    }
}

/// Exit 1: evidence of tampering, named.
pub fn tampered(names: &[&str]) -> Want {
    Want {
        code: 1,
        names: names.iter().map(|n| n.to_string()).collect(),
    }
}

/// Exit 2: unreadable input, the file (and line) named.
pub fn unreadable(names: &[&str]) -> Want {
    Want {
        code: 2,
        names: names.iter().map(|n| n.to_string()).collect(),
    }
}

/// One mutation and what audit, status, report, skip and invalidate must do on it (in
/// `Cmd::ALL`'s order).
pub struct Case {
    pub name: String,
    pub mutate: Box<dyn Fn(&Study)>,
    pub want: [Want; 5],
}

fn case(name: &str, mutate: impl Fn(&Study) + 'static, want: [Want; 5]) -> Case {
    Case {
        name: name.into(),
        mutate: Box::new(mutate),
        want,
    }
}

/// The journal line of RUN's `run-finished` in a fresh study (after `study-started` and
/// `inputs-read`, then its `run-started`).
const FINISHED: usize = 4;

fn run_file(name: &str) -> String {
    format!("{RUN_DIR}/{name}")
}

fn outside(s: &Study, rel: &str) -> std::path::PathBuf {
    s.outside.join(rel)
}

/// The audit's titles for a journal out of its order.
const CHAIN: &str = "breaks the journal's chain";
const CLOCK: &str = "has an impossible time";

/// The time of the journal's last line: an appended line's, with no impossible time.
fn late(ls: &[Value]) -> Value {
    ls.last().unwrap()["wall_ns"].clone()
}

/// Cases over the journal.
pub fn journal() -> Vec<Case> {
    let j = "journal.jsonl";
    // An undeclared line that does not parse: the audit fails naming it; status lists it;
    // the report goes on (its audit verdict counts it); skip and invalidate refuse to
    // decide from a damaged journal, naming the file and line.
    let bad_line = |n: usize| -> [Want; 5] {
        let named = format!("journal.jsonl` line {n} does not parse");
        [
            tampered(&[&format!("Journal line {n} does not parse")]),
            ok_naming(&[&named]),
            ok(),
            unreadable(&[&named]),
            unreadable(&[&named]),
        ]
    };
    let finished_dir =
        |to: &'static str| move |s: &Study| edit_line(s, FINISHED, |l| l["dir"] = to.into());
    // A journal whose order is not proven (`ledger::chain`): the audit fails naming the
    // line, status names it and fails, the report goes on (its audit verdict counts it),
    // skip and invalidate refuse to decide from it.
    let out_of_order = |n: usize, what: &str| -> [Want; 5] {
        let named = format!("journal.jsonl` line {n}: ");
        [
            tampered(&[&format!("Journal line {n} {what}")]),
            tampered(&[&named]),
            ok(),
            unreadable(&[&named, "order is not proven"]),
            unreadable(&[&named, "order is not proven"]),
        ]
    };
    vec![
        case(
            "journal: one byte flipped in a line's JSON",
            |s| {
                edit::bytes(s, j, |b| {
                    let at = b.iter().position(|c| *c == b'\n').unwrap() + 1;
                    b[at] = b'X';
                })
            },
            bad_line(2),
        ),
        case(
            "journal: last line cut in the middle of a multibyte character",
            |s| {
                edit::bytes(s, j, |b| {
                    b.extend_from_slice(b"{\"event\":\"run-skipped\",\"reason\":\"\xe2\x9c")
                });
            },
            // A crash's torn last line: skip and invalidate terminate and declare it.
            [
                tampered(&["Journal line 13 does not parse"]),
                ok_naming(&["journal.jsonl` line 13 does not parse"]),
                ok(),
                ok(),
                ok(),
            ],
        ),
        case(
            "journal: a middle line cut mid-character, later lines whole",
            |s| {
                replace(
                    s,
                    j,
                    "\"run\":\"svc/ramp/r1\"",
                    b"\"run\":\"svc/ramp/r1\xe2\x9c",
                )
            },
            bad_line(3),
        ),
        case(
            "journal: bytes that are not UTF-8 inside a string",
            |s| {
                replace(
                    s,
                    j,
                    "\"attempt\":1,\"dir\":\"runs/svc_ramp_r1\",\"objective\"",
                    b"\"attempt\":1,\"dir\":\"runs/svc_ramp_r1\xff\xfe\",\"objective\"",
                )
            },
            bad_line(FINISHED),
        ),
        case(
            "journal: empty file",
            |s| s.write(j, b""),
            [
                tampered(&["runs/svc_ramp_r1"]),
                ok_naming(&["nothing has run"]),
                unreadable(&["holds no result that stands"]),
                unreadable(&["holds no journal"]),
                unreadable(&["holds no journal"]),
            ],
        ),
        case(
            "journal: a directory where the file should be",
            |s| directory(s, j),
            [
                unreadable(&["journal.jsonl", "directory"]),
                unreadable(&["journal.jsonl", "directory"]),
                unreadable(&["journal.jsonl", "directory"]),
                unreadable(&["journal.jsonl", "directory"]),
                unreadable(&["journal.jsonl", "directory"]),
            ],
        ),
        case(
            "journal: a named pipe in the study directory",
            |s| fifo(s, j),
            [
                unreadable(&["journal.jsonl", "named pipe"]),
                unreadable(&["journal.jsonl", "named pipe"]),
                unreadable(&["journal.jsonl", "named pipe"]),
                unreadable(&["journal.jsonl", "named pipe"]),
                unreadable(&["journal.jsonl", "named pipe"]),
            ],
        ),
        case(
            "journal: a symbolic link to the canary pipe outside",
            |s| s.link(j, &outside(s, "canary.fifo")),
            [
                unreadable(&["journal.jsonl", "symbolic link"]),
                unreadable(&["journal.jsonl", "symbolic link"]),
                unreadable(&["journal.jsonl", "symbolic link"]),
                unreadable(&["journal.jsonl", "symbolic link"]),
                unreadable(&["journal.jsonl", "symbolic link"]),
            ],
        ),
        case(
            "journal: a symbolic link to the canary text outside",
            |s| s.link(j, &outside(s, "canary.txt")),
            [
                unreadable(&["journal.jsonl", "symbolic link"]),
                unreadable(&["journal.jsonl", "symbolic link"]),
                unreadable(&["journal.jsonl", "symbolic link"]),
                unreadable(&["journal.jsonl", "symbolic link"]),
                unreadable(&["journal.jsonl", "symbolic link"]),
            ],
        ),
        case(
            "journal: a run's run-finished line duplicated",
            |s| {
                let mut ls = raw_lines(s);
                ls.insert(FINISHED, ls[FINISHED - 1].clone());
                set_raw_lines(s, &ls);
            },
            out_of_order(FINISHED + 1, CHAIN),
        ),
        case(
            "journal: every line twice",
            |s| {
                let ls: Vec<String> = raw_lines(s)
                    .into_iter()
                    .flat_map(|l| [l.clone(), l])
                    .collect();
                set_raw_lines(s, &ls);
            },
            out_of_order(2, CHAIN),
        ),
        case(
            "journal: lines in reverse order",
            |s| {
                let mut ls = raw_lines(s);
                ls.reverse();
                set_raw_lines(s, &ls);
            },
            // Every run-finished now comes before its run-started: each run reads as
            // interrupted, and the report has nothing to stand on.
            {
                let mut want = out_of_order(1, CHAIN);
                want[2] = unreadable(&["holds no result that stands: 5 interrupted"]);
                want
            },
        ),
        case(
            "journal: a line deleted mid-journal",
            |s| {
                let mut ls = raw_lines(s);
                ls.remove(2);
                set_raw_lines(s, &ls);
            },
            out_of_order(3, CHAIN),
        ),
        case(
            "journal: two lines swapped",
            |s| {
                let mut ls = raw_lines(s);
                ls.swap(1, 2);
                set_raw_lines(s, &ls);
            },
            out_of_order(2, CHAIN),
        ),
        case(
            "journal: a line written in 1970",
            |s| edit_line(s, 2, |l| l["wall_ns"] = "12".into()),
            out_of_order(2, CLOCK),
        ),
        case(
            "journal: a line a year past the host's clock",
            |s| {
                edit_line(s, FINISHED, |l| {
                    let t: u128 = l["wall_ns"].as_str().unwrap().parse().unwrap();
                    l["wall_ns"] = (t + 365 * 86_400 * 1_000_000_000).to_string().into();
                })
            },
            out_of_order(FINISHED, CLOCK),
        ),
        case(
            "journal: a line an hour before the line before it",
            |s| {
                let mut ls = lines(s);
                let t: u128 = ls[1]["wall_ns"].as_str().unwrap().parse().unwrap();
                ls[2]["wall_ns"] = (t - 3_600 * 1_000_000_000).to_string().into();
                set_lines(s, &ls);
            },
            out_of_order(3, CLOCK),
        ),
        case(
            "journal: a run's dir `../..` out to the canary pipes",
            finished_dir("../../outside/pipes"),
            [
                tampered(&["../../outside/pipes", "not in the study directory"]),
                ok(),
                ok_naming(&["../../outside/pipes", "not a plain path"]),
                ok(),
                unreadable(&["../../outside/pipes", "not a plain path"]),
            ],
        ),
        case(
            "journal: a run's dir `..` in the middle, out to the canary text",
            finished_dir("runs/../../../outside/text"),
            [
                tampered(&["runs/../../../outside/text", "not in the study directory"]),
                ok(),
                ok_naming(&["runs/../../../outside/text", "not a plain path"]),
                ok(),
                unreadable(&["runs/../../../outside/text", "not a plain path"]),
            ],
        ),
        case(
            "journal: a run's dir an absolute path to the canary pipes",
            |s| {
                let to = outside(s, "pipes").display().to_string();
                edit_line(s, FINISHED, |l| l["dir"] = to.into())
            },
            [
                tampered(&["outside/pipes", "not in the study directory"]),
                ok(),
                ok_naming(&["outside/pipes", "not a plain path"]),
                ok(),
                unreadable(&["outside/pipes", "not a plain path"]),
            ],
        ),
        case(
            "journal: a run's dir empty",
            finished_dir(""),
            [
                tampered(&["not in the study directory"]),
                ok(),
                ok_naming(&["not a plain path"]),
                ok(),
                unreadable(&["names `` as the directory", "not a plain path"]),
            ],
        ),
        case(
            "journal: a run's dir 10 000 multibyte characters",
            |s| {
                let d = format!("runs/{}", multibyte(10_000));
                edit_line(s, FINISHED, |l| l["dir"] = d.into())
            },
            [
                tampered(&["is gone", "runs/é✓𝄞"]),
                ok(),
                ok_naming(&["not analysable", "runs/é✓𝄞"]),
                ok(),
                unreadable(&["no such directory", "runs/é✓𝄞"]),
            ],
        ),
        case(
            "journal: a run id `../../canary`",
            |s| edit_line(s, FINISHED, |l| l["run"] = "../../canary".into()),
            [
                tampered(&["../../canary"]),
                ok(),
                ok(),
                unreadable(&["records runs that", "../../canary"]),
                unreadable(&["records runs that", "../../canary"]),
            ],
        ),
        case(
            "journal: a run hash of 5 000 multibyte characters",
            |s| {
                let h = multibyte(5_000);
                edit_line(s, FINISHED, |l| l["run_hash"] = h.into())
            },
            [
                tampered(&["svc/ramp/r1"]),
                ok(),
                ok(),
                unreadable(&["records runs that", "svc/ramp/r1"]),
                unreadable(&["records runs that", "svc/ramp/r1"]),
            ],
        ),
        case(
            "journal: a run hash of 1 MB",
            |s| {
                let h = "a".repeat(1 << 20);
                edit_line(s, FINISHED, |l| l["run_hash"] = h.into())
            },
            [
                tampered(&["svc/ramp/r1"]),
                ok(),
                ok(),
                unreadable(&["records runs that", "svc/ramp/r1"]),
                unreadable(&["records runs that", "svc/ramp/r1"]),
            ],
        ),
        case(
            "journal: an attempt past u32",
            |s| edit_line(s, FINISHED, |l| l["attempt"] = json!(99_999_999_999u64)),
            bad_line(FINISHED),
        ),
        case(
            "journal: an attempt of u32::MAX",
            |s| {
                edit_line(s, FINISHED, |l| l["attempt"] = json!(u32::MAX));
                edit_line(s, FINISHED - 1, |l| l["attempt"] = json!(u32::MAX));
            },
            [ok(), ok(), ok(), ok(), ok()],
        ),
        case(
            "journal: a negative attempt",
            |s| edit_line(s, FINISHED, |l| l["attempt"] = json!(-1)),
            bad_line(FINISHED),
        ),
        case(
            "journal: a wall_ns of 40 digits",
            |s| edit_line(s, FINISHED, |l| l["wall_ns"] = "9".repeat(40).into()),
            out_of_order(FINISHED, CLOCK),
        ),
        case(
            "journal: a wall_ns of i128::MIN",
            |s| edit_line(s, FINISHED, |l| l["wall_ns"] = i128::MIN.to_string().into()),
            out_of_order(FINISHED, CLOCK),
        ),
        case(
            "journal: wall_ns at i128's ends on two lines",
            |s| {
                edit_line(s, 1, |l| l["wall_ns"] = i128::MIN.to_string().into());
                edit_line(s, 12, |l| l["wall_ns"] = i128::MAX.to_string().into());
            },
            out_of_order(1, CLOCK),
        ),
        case(
            "journal: a wall_ns that is not a number",
            |s| edit_line(s, FINISHED, |l| l["wall_ns"] = "soon".into()),
            out_of_order(FINISHED, CLOCK),
        ),
        case(
            "journal: a run id of the wrong JSON type",
            |s| edit_line(s, FINISHED, |l| l["run"] = json!(5)),
            bad_line(FINISHED),
        ),
        case(
            "journal: an event name of the wrong JSON type",
            |s| edit_line(s, FINISHED, |l| l["event"] = json!(["run-finished"])),
            bad_line(FINISHED),
        ),
        case(
            "journal: an unknown event",
            |s| edit_line(s, FINISHED, |l| l["event"] = "run-exploded".into()),
            bad_line(FINISHED),
        ),
        case(
            "journal: a missing field",
            |s| {
                edit_line(s, FINISHED, |l| {
                    l.as_object_mut().unwrap().remove("run_hash");
                })
            },
            bad_line(FINISHED),
        ),
        case(
            "journal: an extra field",
            |s| edit_line(s, FINISHED, |l| l["extra"] = json!({"nested": [1, 2]})),
            [ok(), ok(), ok(), ok(), ok()],
        ),
        case(
            "journal: format_version 99",
            |s| edit_line(s, FINISHED, |l| l["format_version"] = json!(99)),
            bad_line(FINISHED),
        ),
        case(
            "journal: 100 000 nested brackets on a line",
            |s| {
                edit::bytes(s, j, |b| {
                    b.extend(std::iter::repeat_n(b'[', 100_000));
                    b.push(b'\n');
                })
            },
            bad_line(13),
        ),
        case(
            "journal: a 4 MB line of garbage",
            |s| {
                edit::bytes(s, j, |b| {
                    b.extend(std::iter::repeat_n(b'x', 4 << 20));
                    b.push(b'\n');
                })
            },
            bad_line(13),
        ),
        case(
            "journal: NUL bytes on a line",
            |s| {
                replace(
                    s,
                    j,
                    "\"event\":\"run-finished\"",
                    b"\"event\":\"run-fin\0\0ished\"",
                )
            },
            bad_line(FINISHED),
        ),
        case(
            "journal: a torn-line-found declaring line u64::MAX",
            |s| {
                let mut ls = lines(s);
                ls.push(
                    json!({"format_version": 2, "wall_ns": late(&ls), "event": "torn-line-found",
                    "line": u64::MAX, "bytes": u64::MAX}),
                );
                set_lines(s, &ls);
            },
            [ok(), ok(), ok(), ok(), ok()],
        ),
        case(
            "journal: runs_planned of u64::MAX",
            |s| edit_line(s, 1, |l| l["runs_planned"] = json!(u64::MAX)),
            [ok(), ok(), ok(), ok(), ok()],
        ),
        case(
            "journal: a plan hash of multibyte characters",
            |s| {
                let h = multibyte(40);
                edit_line(s, 1, |l| l["plan_hash"] = h.into())
            },
            [
                tampered(&["plan"]),
                ok(),
                unreadable(&["were made under plan hash é✓𝄞"]),
                unreadable(&["changed since"]),
                unreadable(&["changed since"]),
            ],
        ),
        case(
            "journal: CRLF line ends",
            |s| {
                let t = String::from_utf8(s.read(j)).unwrap().replace('\n', "\r\n");
                s.write(j, t.as_bytes())
            },
            [ok(), ok(), ok(), ok(), ok()],
        ),
        case(
            "journal: a byte-order mark before the first line",
            |s| edit::bytes(s, j, |b| b.splice(0..0, *b"\xef\xbb\xbf").for_each(drop)),
            bad_line(1),
        ),
        case(
            "journal: a superseded run's dir out to the canary text",
            |s| {
                let mut ls = lines(s);
                ls.push(
                    json!({"format_version": 2, "wall_ns": late(&ls), "event": "run-superseded",
                    "run": RUN, "run_hash": "x", "attempt": 1, "dir": "../../outside/text",
                    "amendment": "none"}),
                );
                set_lines(s, &ls);
            },
            [tampered(&["../../outside/text"]), ok(), ok(), ok(), ok()],
        ),
        case(
            "journal: a gate that took 1e308 seconds",
            |s| {
                let mut ls = lines(s);
                ls.insert(
                    1,
                    json!({"format_version": 2, "wall_ns": ls[0]["wall_ns"], "event": "gate-passed",
                    "contender": "svc", "image": "example/svc:1", "seconds": 1e308}),
                );
                set_lines(s, &ls);
            },
            [ok(), ok(), ok(), ok(), ok()],
        ),
        case(
            "journal: evidence with a huge value and a multibyte figure",
            |s| {
                let mut ls = lines(s);
                ls.push(json!({"format_version": 2, "wall_ns": late(&ls), "event": "run-invalidated",
                    "run": RUN, "run_hash": ls[FINISHED - 1]["run_hash"], "attempt": 1,
                    "dir": RUN_DIR, "reason": multibyte(300), "by": "feedbench",
                    "evidence": [{"check": "cpu", "role": "replica-1", "container": "c",
                        "figure": multibyte(500), "value": 1e308, "threshold": -1e308, "unit": "%"}]}));
                set_lines(s, &ls);
            },
            [
                ok(),
                ok(),
                ok(),
                ok(),
                unreadable(&["`svc/ramp/r1` is invalid"]),
            ],
        ),
        case(
            "journal: the not-run run already skipped twice",
            |s| {
                let mut ls = lines(s);
                let skip = json!({"format_version": 2, "wall_ns": late(&ls), "event": "run-skipped",
                    "run": NOT_RUN, "run_hash": "x", "reason": "r", "by": "person"});
                ls.push(skip.clone());
                ls.push(skip);
                set_lines(s, &ls);
            },
            [
                ok(),
                ok(),
                ok(),
                unreadable(&["records runs that", NOT_RUN]),
                unreadable(&["records runs that", NOT_RUN]),
            ],
        ),
    ]
}

/// Cases over RUN's manifest.
pub fn manifest() -> Vec<Case> {
    let m = || run_file("manifest.json");
    let bad = || -> [Want; 5] {
        [
            tampered(&["runs/svc_ramp_r1/manifest.json"]),
            ok(),
            ok(),
            ok(),
            ok(),
        ]
    };
    let not_a_file = |what: &'static str| -> [Want; 5] {
        [
            tampered(&["runs/svc_ramp_r1/manifest.json", what]),
            ok(),
            ok(),
            ok(),
            ok(),
        ]
    };
    vec![
        case(
            "manifest: one hex digit of a file's sha256 changed",
            move |s| {
                edit_json(s, &m(), |v| {
                    let d = v["files"]["requests.csv"]["sha256"]
                        .as_str()
                        .unwrap()
                        .to_string();
                    let flipped = if d.starts_with('0') { "1" } else { "0" };
                    v["files"]["requests.csv"]["sha256"] = format!("{flipped}{}", &d[1..]).into();
                })
            },
            [
                tampered(&["runs/svc_ramp_r1/requests.csv"]),
                ok(),
                ok(),
                ok(),
                ok(),
            ],
        ),
        case(
            "manifest: one byte flipped",
            move |s| edit::bytes(s, &m(), |b| b[0] = b'X'),
            bad(),
        ),
        case(
            "manifest: cut in the middle of a multibyte character",
            move |s| cut_mid_char(s, &m(), "\"kernel\": \"", "✓✓"),
            bad(),
        ),
        case(
            "manifest: bytes that are not UTF-8",
            move |s| replace(s, &m(), "\"kernel\": \"6.1", b"\"kernel\": \"6.1\xff\xfe"),
            bad(),
        ),
        case("manifest: empty", move |s| s.write(&m(), b""), bad()),
        case(
            "manifest: a directory where the file should be",
            move |s| directory(s, &m()),
            not_a_file("directory"),
        ),
        case(
            "manifest: a named pipe in the run directory",
            move |s| fifo(s, &m()),
            not_a_file("named pipe"),
        ),
        case(
            "manifest: a symbolic link to the canary pipe outside",
            move |s| s.link(&m(), &outside(s, "canary.fifo")),
            not_a_file("symbolic link"),
        ),
        case(
            "manifest: a symbolic link to the canary text outside",
            move |s| s.link(&m(), &outside(s, "canary.txt")),
            not_a_file("symbolic link"),
        ),
        case(
            "manifest: files names `../../../outside/canary.fifo`",
            move |s| {
                edit_json(s, &m(), |v| {
                    v["files"]["../../../outside/canary.fifo"] =
                        json!({"sha256": "00", "bytes": 1});
                })
            },
            [
                tampered(&["../../../outside/canary.fifo", "is recorded but missing"]),
                ok(),
                ok(),
                ok(),
                ok(),
            ],
        ),
        case(
            "manifest: files names an absolute path to the canary text",
            move |s| {
                let to = outside(s, "canary.txt").display().to_string();
                edit_json(s, &m(), |v| {
                    v["files"][to] = json!({"sha256": "00", "bytes": 1})
                })
            },
            [
                tampered(&["outside/canary.txt", "is recorded but missing"]),
                ok(),
                ok(),
                ok(),
                ok(),
            ],
        ),
        case(
            "manifest: run_id `../../canary`",
            move |s| edit_json(s, &m(), |v| v["run_id"] = "../../canary".into()),
            [tampered(&["runs/svc_ramp_r1"]), ok(), ok(), ok(), ok()],
        ),
        case(
            "manifest: a run hash of 5 000 multibyte characters",
            move |s| edit_json(s, &m(), |v| v["run_hash"] = multibyte(5_000).into()),
            [tampered(&["runs/svc_ramp_r1"]), ok(), ok(), ok(), ok()],
        ),
        case(
            "manifest: an attempt past u32",
            move |s| edit_json(s, &m(), |v| v["attempt"] = json!(1e20)),
            bad(),
        ),
        case(
            "manifest: a file's bytes of u64::MAX",
            move |s| {
                edit_json(s, &m(), |v| {
                    v["files"]["requests.csv"]["bytes"] = json!(u64::MAX)
                })
            },
            [ok(), ok(), ok(), ok(), ok()],
        ),
        case(
            "manifest: files of the wrong JSON type",
            move |s| edit_json(s, &m(), |v| v["files"] = json!(["requests.csv"])),
            bad(),
        ),
        case(
            "manifest: outcome missing",
            move |s| {
                edit_json(s, &m(), |v| {
                    v.as_object_mut().unwrap().remove("outcome");
                })
            },
            bad(),
        ),
        case(
            "manifest: format_version 2",
            move |s| edit_json(s, &m(), |v| v["format_version"] = json!(2)),
            bad(),
        ),
        case(
            "manifest: extra fields",
            move |s| edit_json(s, &m(), |v| v["extra"] = json!({"a": [1, "✓"]})),
            [ok(), ok(), ok(), ok(), ok()],
        ),
        case(
            "manifest: 1e308 cores and a wall time of 40 digits",
            move |s| {
                edit_json(s, &m(), |v| {
                    v["host"]["cores"] = json!(1e308);
                    v["ended_wall_ns"] = "9".repeat(40).into();
                })
            },
            // The manifest is not among the files it seals: the audit reads the host it
            // claims, which differs from the other runs' of its comparison.
            [
                tampered(&["ran on hosts that differ", "1e308 cores"]),
                ok(),
                ok(),
                ok(),
                ok(),
            ],
        ),
        case(
            "manifest: 100 000 nested brackets",
            move |s| s.write(&m(), &[b'['; 100_000]),
            bad(),
        ),
    ]
}

/// Cases over RUN's raw files and the study directory's layout.
pub fn files() -> Vec<Case> {
    let f = |name: &'static str| move || run_file(name);
    let req = f("requests.csv");
    let rec = f("run.json");
    let ev = f("events.csv");
    let con = f("containers.csv");
    // A sealed file changed: the audit names it; the report reads the change or names
    // the run not analysable.
    let changed = |file: &'static str| -> [Want; 5] { [tampered(&[file]), ok(), ok(), ok(), ok()] };
    let not_analysable = |file: &'static str, what: &'static str| -> [Want; 5] {
        [
            tampered(&[file]),
            ok(),
            ok_naming(&["not analysable", file, what]),
            ok(),
            ok(),
        ]
    };
    vec![
        case(
            "requests.csv: one byte flipped in a number",
            move |s| {
                edit::bytes(s, &req(), |b| {
                    let at = b.len() - 20;
                    b[at] = if b[at] == b'1' { b'2' } else { b'1' };
                })
            },
            changed("runs/svc_ramp_r1/requests.csv"),
        ),
        case(
            "requests.csv: cut in the middle of a multibyte character",
            move |s| cut_mid_char(s, &req(), "GET,404,13.288037,", "✓✓"),
            // The cut is in the error column, which no figure reads: the report goes on.
            changed("runs/svc_ramp_r1/requests.csv"),
        ),
        case(
            "requests.csv: bytes that are not UTF-8 in the error column",
            move |s| {
                replace(
                    s,
                    &req(),
                    "GET,404,13.288037,1404",
                    b"GET,404,13.288037,\xff\xfe",
                )
            },
            changed("runs/svc_ramp_r1/requests.csv"),
        ),
        case(
            "requests.csv: empty",
            move |s| s.write(&req(), b""),
            not_analysable("runs/svc_ramp_r1/requests.csv", "start_ns"),
        ),
        case(
            "requests.csv: a directory where the file should be",
            move |s| directory(s, &req()),
            not_analysable("runs/svc_ramp_r1/requests.csv", "directory"),
        ),
        case(
            "requests.csv: a named pipe in the run directory",
            move |s| fifo(s, &req()),
            not_analysable("runs/svc_ramp_r1/requests.csv", "named pipe"),
        ),
        case(
            "requests.csv: a symbolic link to the canary pipe outside",
            move |s| s.link(&req(), &outside(s, "canary.fifo")),
            not_analysable("runs/svc_ramp_r1/requests.csv", "symbolic link"),
        ),
        case(
            "requests.csv: a start_ns of 30 digits",
            move |s| {
                replace(
                    s,
                    &req(),
                    "1796153200580974180",
                    b"999999999999999999999999999999",
                )
            },
            not_analysable("runs/svc_ramp_r1/requests.csv", "line 2"),
        ),
        case(
            "requests.csv: an end before its start and a negative duration",
            move |s| {
                replace(
                    s,
                    &req(),
                    "1796153200595753914,post,GET,404,13.288037",
                    b"1,post,GET,404,-1e308",
                )
            },
            changed("runs/svc_ramp_r1/requests.csv"),
        ),
        case(
            "requests.csv: the duration_ms column gone",
            move |s| replace(s, &req(), "duration_ms", b"durationms"),
            not_analysable("runs/svc_ramp_r1/requests.csv", "duration_ms"),
        ),
        case(
            "requests.csv: a ragged row with extra fields",
            move |s| replace(s, &req(), "13.288037,1404", b"13.288037,1404,x,y,z"),
            not_analysable("runs/svc_ramp_r1/requests.csv", "line 2"),
        ),
        case(
            "run.json: a number of the wrong JSON type",
            move |s| {
                edit_json(s, &rec(), |v| {
                    v["frame"]["measured"]["start_ns"] = "soon".into()
                })
            },
            not_analysable("runs/svc_ramp_r1/run.json", "line"),
        ),
        case(
            "run.json: cut in the middle of a multibyte character",
            move |s| cut_mid_char(s, &rec(), "\"warnings\": [", "\"✓✓"),
            not_analysable("runs/svc_ramp_r1/run.json", "UTF-8"),
        ),
        case(
            "run.json: bytes that are not UTF-8",
            move |s| replace(s, &rec(), "\"cgroup\"", b"\"cg\xff\xferoup\""),
            not_analysable("runs/svc_ramp_r1/run.json", "UTF-8"),
        ),
        case(
            "run.json: a symbolic link to the canary text outside",
            move |s| s.link(&rec(), &outside(s, "canary.txt")),
            not_analysable("runs/svc_ramp_r1/run.json", "symbolic link"),
        ),
        case(
            "run.json: a named pipe in the run directory",
            move |s| fifo(s, &rec()),
            not_analysable("runs/svc_ramp_r1/run.json", "named pipe"),
        ),
        case(
            "run.json: a directory where the file should be",
            move |s| directory(s, &rec()),
            not_analysable("runs/svc_ramp_r1/run.json", "directory"),
        ),
        case(
            "run.json: a measured window that ends before it starts, at i64's ends",
            move |s| {
                edit_json(s, &rec(), |v| {
                    v["frame"]["measured"]["start_ns"] = json!(i64::MAX);
                    v["frame"]["measured"]["end_ns"] = json!(i64::MIN);
                })
            },
            changed("runs/svc_ramp_r1/run.json"),
        ),
        case(
            "run.json: no caps, so no container is known",
            move |s| edit_json(s, &rec(), |v| v["frame"]["caps"] = json!({})),
            changed("runs/svc_ramp_r1/run.json"),
        ),
        case(
            "run.json: steps with a huge rate and an empty window",
            move |s| {
                edit_json(s, &rec(), |v| {
                    let st = v["frame"]["steps"][0].clone();
                    let mut big = st.clone();
                    big["rate"] = json!(1e308);
                    big["end_ns"] = big["start_ns"].clone();
                    v["frame"]["steps"] = json!([big, st]);
                })
            },
            changed("runs/svc_ramp_r1/run.json"),
        ),
        case(
            "events.csv: a symbolic link to the canary pipe outside",
            move |s| s.link(&ev(), &outside(s, "canary.fifo")),
            not_analysable("runs/svc_ramp_r1/events.csv", "symbolic link"),
        ),
        case(
            "events.csv: bytes that are not UTF-8 and a wall_ns of 40 digits",
            move |s| {
                let mut to = format!("{},10,phase,me", "9".repeat(40)).into_bytes();
                to.extend_from_slice(b"\xff\xfeasure");
                replace(s, &ev(), "1796153210477000000,10,phase,measure", &to)
            },
            not_analysable("runs/svc_ramp_r1/events.csv", "line 3"),
        ),
        case(
            "containers.csv: a directory where the file should be",
            move |s| directory(s, &con()),
            not_analysable("runs/svc_ramp_r1/containers.csv", "directory"),
        ),
        case(
            "containers.csv: NaN, inf and a tick past u64",
            move |s| {
                replace(
                    s,
                    &con(),
                    ",0,fb-smoke-feed-rs_ramp_r1-balancer,balancer,ok,0,",
                    b",99999999999999999999999,fb-smoke-feed-rs_ramp_r1-balancer,balancer,ok,NaN,",
                )
            },
            not_analysable("runs/svc_ramp_r1/containers.csv", "tick"),
        ),
        case(
            "containers.csv: NaN and inf usage",
            move |s| replace(s, &con(), ",ok,0,100000000,", b",ok,NaN,inf,"),
            changed("runs/svc_ramp_r1/containers.csv"),
        ),
        case(
            "logs/: a symbolic link to a directory outside",
            move |s| s.link(&run_file("logs"), &outside(s, "pipes")),
            [
                tampered(&["runs/svc_ramp_r1/logs/replica-1.log"]),
                ok(),
                ok(),
                ok(),
                ok(),
            ],
        ),
        case(
            "run directory: a symbolic link to the canary pipes outside",
            move |s| s.link(RUN_DIR, &outside(s, "pipes")),
            [
                tampered(&["runs/svc_ramp_r1", "symbolic link"]),
                ok(),
                ok_naming(&["runs/svc_ramp_r1", "symbolic link"]),
                ok(),
                unreadable(&["runs/svc_ramp_r1", "symbolic link"]),
            ],
        ),
        case(
            "run directory: a regular file",
            move |s| {
                std::fs::remove_dir_all(s.path(RUN_DIR)).unwrap();
                s.write(RUN_DIR, b"not a directory");
            },
            [
                tampered(&["runs/svc_ramp_r1", "is gone"]),
                ok(),
                ok_naming(&["runs/svc_ramp_r1"]),
                ok(),
                unreadable(&["`runs/svc_ramp_r1`", "no such directory"]),
            ],
        ),
        case(
            "runs/: a symbolic link to a directory outside",
            move |s| {
                let runs = s.path("runs");
                std::fs::rename(&runs, outside(s, "runs")).unwrap();
                std::os::unix::fs::symlink(outside(s, "runs"), &runs).unwrap();
            },
            [
                tampered(&["runs/svc_ramp_r1", "symbolic link"]),
                ok(),
                ok_naming(&["0 runs analysed", "symbolic link"]),
                ok(),
                unreadable(&["runs/svc_ramp_r1", "symbolic link"]),
            ],
        ),
        case(
            "_aborted/: an area whose run directory links to the canary pipes",
            move |s| {
                std::fs::create_dir_all(s.path("_aborted")).unwrap();
                std::os::unix::fs::symlink(outside(s, "pipes"), s.path("_aborted/x")).unwrap();
            },
            [
                tampered(&["`_aborted/x` is a symbolic link"]),
                ok(),
                ok(),
                ok(),
                ok(),
            ],
        ),
        case(
            "run directory: an extra symbolic link to the canary text",
            move |s| {
                std::os::unix::fs::symlink(outside(s, "canary.txt"), s.path(&run_file("extra.csv")))
                    .unwrap()
            },
            [
                tampered(&[
                    "`extra.csv` is a symbolic link",
                    "runs/svc_ramp_r1/extra.csv",
                ]),
                ok(),
                ok(),
                ok(),
                ok(),
            ],
        ),
        case(
            "_invalid_x/: a run directory holding links to the canary text",
            move |s| {
                let d = s.path("_invalid_x/svc_ramp_r9");
                std::fs::create_dir_all(&d).unwrap();
                for name in super::RUN_FILES {
                    std::os::unix::fs::symlink(outside(s, "text").join(name), d.join(name))
                        .unwrap();
                }
            },
            [
                tampered(&["_invalid_x/svc_ramp_r9/manifest.json", "symbolic link"]),
                ok(),
                ok(),
                ok(),
                ok(),
            ],
        ),
        case(
            "pilots/: a pilot whose journal and record are named pipes",
            move |s| {
                let d = s.path("pilots/001");
                std::fs::create_dir_all(&d).unwrap();
                super::mkfifo(&d.join("journal.jsonl"));
                super::mkfifo(&d.join("pilot.json"));
            },
            [
                ok_naming(&["pilots/001/pilot.json"]),
                ok(),
                ok(),
                ok(),
                ok(),
            ],
        ),
        case(
            ".lock: a named pipe",
            move |s| super::mkfifo(&s.path(".lock")),
            [
                ok(),
                ok(),
                ok(),
                unreadable(&[".lock", "named pipe"]),
                unreadable(&[".lock", "named pipe"]),
            ],
        ),
        case(
            ".lock: a symbolic link to the canary text outside",
            move |s| s.link(".lock", &outside(s, "canary.txt")),
            [
                ok(),
                ok(),
                ok(),
                unreadable(&[".lock", "symbolic link"]),
                unreadable(&[".lock", "symbolic link"]),
            ],
        ),
        case(
            "report/: a symbolic link to a directory outside",
            move |s| s.link("report", &outside(s, "text")),
            [ok(), ok(), ok(), ok(), ok()],
        ),
    ]
}

/// Every case.
pub fn all() -> Vec<Case> {
    let mut v = journal();
    v.extend(manifest());
    v.extend(files());
    v
}
