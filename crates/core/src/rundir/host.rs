//! The host's own samples, one row a second beside the containers' (`host.csv`; see
//! docs/results.md, "host.csv"): the whole machine's CPU from `/proc/stat`, the load average,
//! and who used it — the study's containers, feedbench itself, the engine's daemons — so that
//! what was used outside the study (another job, a build, a backup) and the hypervisor's steal
//! are figures of the run. The parsers of the kernel's files are here too, pure, and the one
//! reader of host.csv (`read`).

use std::fmt::Write as _;
use std::path::Path;

use super::samples::text;
use super::table::{ReadError, Table};
use super::HOST_CSV;

/// The columns of host.csv. Every `_s` figure but `interval_s` is CPU time, in core-seconds,
/// used during the interval since the previous row (empty in a row that has no previous).
pub const HOST_HEADER: &str = "unix_ns,offset_s,tick,status,interval_s,logical_cpus,busy_s,\
iowait_s,steal_s,study_s,feedbench_s,engine_s,load1,detail";

/// The processes counted as the engine's daemons, by `/proc/<pid>/comm` (which the kernel cuts
/// to 15 bytes: `containerd-shim` is every `containerd-shim-runc-v2`). Their work is the
/// study's housekeeping (container lifecycle, published ports, an overlay filesystem in user
/// space), not interference.
pub const ENGINE_PROCESSES: [&str; 6] = [
    "dockerd",
    "containerd",
    "containerd-shim",
    "docker-proxy",
    "fuse-overlayfs",
    "runc",
];

/// One second of the host.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostRow {
    pub unix_ns: u64,
    pub offset_s: f64,
    pub tick: u64,
    /// `ok`, or `error` with `detail` saying which file could not be read.
    pub ok: bool,
    /// Since the previous row's read; every figure below is for this interval.
    pub interval_ns: Option<u64>,
    pub logical_cpus: u32,
    pub busy_ns: Option<u64>,
    pub iowait_ns: Option<u64>,
    pub steal_ns: Option<u64>,
    /// The study's containers on this host, from the same tick's container rows.
    pub study_ns: Option<u64>,
    pub feedbench_ns: Option<u64>,
    pub engine_ns: Option<u64>,
    pub load1: Option<f64>,
    pub detail: String,
}

impl HostRow {
    /// Appends the row's CSV line, with its newline.
    pub fn write_csv(&self, out: &mut String) {
        let status = if self.ok { "ok" } else { "error" };
        let _ = write!(
            out,
            "{},{:.6},{},{status},",
            self.unix_ns, self.offset_s, self.tick
        );
        secs(out, self.interval_ns);
        let _ = write!(out, ",{}", self.logical_cpus);
        for v in [
            self.busy_ns,
            self.iowait_ns,
            self.steal_ns,
            self.study_ns,
            self.feedbench_ns,
            self.engine_ns,
        ] {
            out.push(',');
            secs(out, v);
        }
        out.push(',');
        if let Some(l) = self.load1 {
            let _ = write!(out, "{l}");
        }
        out.push(',');
        text(out, &self.detail);
        out.push('\n');
    }
}

/// Nanoseconds as exact decimal seconds.
fn secs(out: &mut String, ns: Option<u64>) {
    if let Some(ns) = ns {
        let _ = write!(out, "{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
    }
}

/// CPU outside the study in one interval: the host's busy time less the study's containers,
/// feedbench and the engine's daemons, never below zero (the readers are a few milliseconds
/// apart, so a quiet second can come out slightly negative). `None` when a part is unknown.
pub fn outside_ns(busy: u64, study: u64, feedbench: u64, engine: u64) -> u64 {
    busy.saturating_sub(study.saturating_add(feedbench).saturating_add(engine))
}

/// The host's figures over a run's measured window (run.json's `host`), from host.csv's
/// rows whose interval ended inside it and whose every part is known; the means are
/// time-weighted (CPU-seconds over the seconds of those intervals), in cores.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HostFigures {
    /// The seconds of the window the figures cover, and the window's length.
    pub seconds: f64,
    pub window_s: f64,
    pub logical_cpus: u32,
    pub busy_cores: f64,
    pub study_cores: f64,
    pub feedbench_cores: f64,
    pub engine_cores: f64,
    /// Used outside the study (busy less the study, feedbench and the engine's daemons).
    pub outside_cores: f64,
    /// Taken by the hypervisor for other guests.
    pub steal_cores: f64,
    pub iowait_cores: f64,
    /// The second with the most used outside the study, and when (s after the window's start).
    pub busiest_outside_cores: f64,
    pub busiest_at_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load1_max: Option<f64>,
    /// (outside + steal) as a share of the logical CPUs, in percent: what the
    /// `host-interference` guard bounds.
    pub interference_pct: f64,
}

/// One host.csv row as `read` gives it to the report and the host-interference check: ns
/// figures of the interval that ended at `unix_ns`; a part that is unknown leaves the row
/// out of the figures.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HostSample {
    pub unix_ns: i128,
    pub interval_ns: Option<u64>,
    pub logical_cpus: u32,
    pub busy_ns: Option<u64>,
    pub iowait_ns: Option<u64>,
    pub steal_ns: Option<u64>,
    pub study_ns: Option<u64>,
    pub feedbench_ns: Option<u64>,
    pub engine_ns: Option<u64>,
    pub load1: Option<f64>,
}

/// One complete interval, in ns.
struct Part {
    at_ns: i128,
    interval: u64,
    busy: u64,
    iowait: u64,
    steal: u64,
    study: u64,
    feedbench: u64,
    engine: u64,
}

impl HostSample {
    fn part(&self) -> Option<Part> {
        Some(Part {
            at_ns: self.unix_ns,
            interval: self.interval_ns.filter(|i| *i > 0)?,
            busy: self.busy_ns?,
            iowait: self.iowait_ns?,
            steal: self.steal_ns?,
            study: self.study_ns?,
            feedbench: self.feedbench_ns?,
            engine: self.engine_ns?,
        })
    }
}

/// The figures over `[start_ns, end_ns)` from the rows whose interval ended in it; `None`
/// without one that has every part.
pub fn figures(rows: &[HostSample], start_ns: i128, end_ns: i128) -> Option<HostFigures> {
    let inside: Vec<&HostSample> = rows
        .iter()
        .filter(|r| (start_ns..end_ns).contains(&r.unix_ns))
        .collect();
    let parts: Vec<Part> = inside.iter().filter_map(|r| r.part()).collect();
    let logical_cpus = inside.iter().map(|r| r.logical_cpus).max().unwrap_or(0);
    if parts.is_empty() || logical_cpus == 0 {
        return None;
    }
    // Summed wide: a hand-edited figure may be near u64::MAX.
    let span: u128 = parts.iter().map(|p| u128::from(p.interval)).sum();
    let cores = |f: fn(&Part) -> u64| {
        parts.iter().map(|p| u128::from(f(p))).sum::<u128>() as f64 / span as f64
    };
    let outside = |p: &Part| outside_ns(p.busy, p.study, p.feedbench, p.engine);
    let (busiest_outside_cores, busiest_at_ns) = parts
        .iter()
        .map(|p| (outside(p) as f64 / p.interval as f64, p.at_ns))
        .fold((0.0, start_ns), |a, b| if b.0 > a.0 { b } else { a });
    let outside_cores = cores(|p| outside_ns(p.busy, p.study, p.feedbench, p.engine));
    let steal_cores = cores(|p| p.steal);
    Some(HostFigures {
        seconds: span as f64 / 1e9,
        window_s: (end_ns - start_ns).max(0) as f64 / 1e9,
        logical_cpus,
        busy_cores: cores(|p| p.busy),
        study_cores: cores(|p| p.study),
        feedbench_cores: cores(|p| p.feedbench),
        engine_cores: cores(|p| p.engine),
        outside_cores,
        steal_cores,
        iowait_cores: cores(|p| p.iowait),
        busiest_outside_cores,
        busiest_at_s: (busiest_at_ns - start_ns) as f64 / 1e9,
        load1_max: inside.iter().filter_map(|r| r.load1).reduce(f64::max),
        interference_pct: 100.0 * (outside_cores + steal_cores) / f64::from(logical_cpus),
    })
}

/// The aggregate `cpu` line of `/proc/stat`, in clock ticks (`USER_HZ`) since boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProcStat {
    /// user + nice + system + irq + softirq (guest time is already inside user and nice).
    pub busy: u64,
    pub iowait: u64,
    pub steal: u64,
    /// The number of `cpuN` lines: the logical CPUs online.
    pub logical_cpus: u32,
}

/// Parses `/proc/stat`.
pub fn parse_proc_stat(text: &str) -> Result<ProcStat, String> {
    let line = text
        .lines()
        .find(|l| l.starts_with("cpu "))
        .ok_or("no aggregate `cpu` line")?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| {
            v.parse::<u64>()
                .map_err(|e| format!("`cpu` field {v:?}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    if f.len() < 8 {
        return Err(format!(
            "the `cpu` line has {} fields, not the 8 (user to steal) of Linux 2.6.11 and later",
            f.len()
        ));
    }
    let logical_cpus = text
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count() as u32;
    Ok(ProcStat {
        busy: f[0] + f[1] + f[2] + f[5] + f[6],
        iowait: f[4],
        steal: f[7],
        logical_cpus,
    })
}

/// The one-minute load average from `/proc/loadavg`.
pub fn parse_loadavg(text: &str) -> Result<f64, String> {
    let first = text.split_whitespace().next().ok_or("empty")?;
    first
        .parse()
        .map_err(|e| format!("load average {first:?}: {e}"))
}

/// What `/proc/<pid>/stat` says of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessStat {
    pub comm: String,
    /// utime + stime, clock ticks.
    pub cpu_ticks: u64,
    /// Clock ticks after boot when it started: with the pid, the process's identity.
    pub start_ticks: u64,
}

/// Parses `/proc/<pid>/stat`. The command name sits in parentheses and may itself hold
/// spaces and parentheses, so the fields are counted from its last `)`.
pub fn parse_pid_stat(text: &str) -> Result<ProcessStat, String> {
    let open = text.find('(').ok_or("no `(` before the command name")?;
    let close = text.rfind(')').ok_or("no `)` after the command name")?;
    if close < open {
        return Err("`)` before `(`".into());
    }
    // Fields after the name start at field 3 (state); utime and stime are 14 and 15,
    // starttime 22 (proc(5)).
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let field = |n: usize| -> Result<u64, String> {
        let v = rest
            .get(n - 3)
            .ok_or_else(|| format!("no field {n} (of {} after the name)", rest.len()))?;
        v.parse().map_err(|e| format!("field {n} {v:?}: {e}"))
    };
    Ok(ProcessStat {
        comm: text[open + 1..close].to_string(),
        cpu_ticks: field(14)? + field(15)?,
        start_ticks: field(22)?,
    })
}

/// host.csv, in file order; `None` when the run has none (its engine was not on the host
/// that ran feedbench, or it was recorded before host samples). A row that is not `ok`
/// keeps only its time. A negative CPU time, count or load average is an error naming its
/// place, as in the twin (twin/recompute.py, `host_rows`). The one reader of host.csv: the
/// report's figures and the validity checks' host-interference both read it here.
pub fn read(dir: &Path) -> Result<Option<Vec<HostSample>>, ReadError> {
    let mut t = match Table::open(dir, HOST_CSV) {
        Ok(t) => t,
        Err(e) if e.is_missing() => return Ok(None),
        Err(e) => return Err(e),
    };
    let (u, status, cpus) = (
        t.column("unix_ns")?,
        t.column("status")?,
        t.column("logical_cpus")?,
    );
    const PARTS: [&str; 7] = [
        "interval_s",
        "busy_s",
        "iowait_s",
        "steal_s",
        "study_s",
        "feedbench_s",
        "engine_s",
    ];
    let mut cols = [0usize; 7];
    for (c, name) in cols.iter_mut().zip(PARTS) {
        *c = t.column(name)?;
    }
    let load1 = t.column("load1")?;
    let mut out = Vec::new();
    t.each(|rec, c| {
        let cpus_text = c.text(rec, cpus);
        let mut ns = [None; 7];
        for ((v, i), name) in ns.iter_mut().zip(cols).zip(PARTS) {
            *v = c
                .opt_non_negative(rec, i, name, "a CPU time of 0 or more")?
                .map(|s| (s * 1e9).round() as u64);
        }
        let ok = c.text(rec, status) == "ok";
        out.push(HostSample {
            unix_ns: c.int(rec, u, "unix_ns")?,
            interval_ns: ns[0].filter(|_| ok),
            logical_cpus: cpus_text
                .parse()
                .map_err(|_| c.bad("logical_cpus", cpus_text, "a whole number"))?,
            busy_ns: ns[1],
            iowait_ns: ns[2],
            steal_ns: ns[3],
            study_ns: ns[4],
            feedbench_ns: ns[5],
            engine_ns: ns[6],
            load1: c.opt_non_negative(rec, load1, "load1", "0 or more")?,
        });
        Ok(())
    })?;
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_reads_back_what_the_monitor_writes_and_names_a_negative_load() {
        let dir = tempfile::tempdir().unwrap();
        let s = 1_000_000_000;
        let ok = HostRow {
            unix_ns: 1_700_000_000_000_000_000,
            tick: 1,
            ok: true,
            interval_ns: Some(s),
            logical_cpus: 2,
            busy_ns: Some(s / 2),
            iowait_ns: Some(0),
            steal_ns: Some(s / 100),
            study_ns: Some(s / 4),
            feedbench_ns: Some(s / 50),
            engine_ns: Some(s / 50),
            load1: Some(1.25),
            ..HostRow::default()
        };
        let failed = HostRow {
            tick: 2,
            ok: false,
            interval_ns: Some(s),
            logical_cpus: 2,
            detail: "cannot read /proc/stat".into(),
            ..HostRow::default()
        };
        let mut text = format!("{HOST_HEADER}\n");
        ok.write_csv(&mut text);
        failed.write_csv(&mut text);
        std::fs::write(dir.path().join(HOST_CSV), &text).unwrap();
        let rows = read(dir.path()).unwrap().unwrap();
        assert_eq!(rows.len(), 2);
        let r = &rows[0];
        assert_eq!(
            (r.interval_ns, r.busy_ns, r.steal_ns, r.study_ns, r.load1),
            (Some(s), Some(s / 2), Some(s / 100), Some(s / 4), Some(1.25))
        );
        // A row that is not `ok` keeps its time, and no interval to make a figure of.
        assert_eq!((rows[1].interval_ns, rows[1].busy_ns), (None, None));

        std::fs::write(
            dir.path().join(HOST_CSV),
            text.replacen(",1.25,", ",-1.25,", 1),
        )
        .unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("line 2, column `load1`: `-1.25` is not 0 or more"),
            "{e}"
        );
        assert_eq!(text.matches(",0.010000000,").count(), 1, "{text}");
        std::fs::write(
            dir.path().join(HOST_CSV),
            text.replacen(",0.010000000,", ",-0.010000000,", 1),
        )
        .unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("line 2, column `steal_s`: `-0.010000000` is not a CPU time of 0 or more"),
            "{e}"
        );
        assert!(read(tempfile::tempdir().unwrap().path()).unwrap().is_none());
    }

    const STAT: &str = "cpu  100 5 50 9000 7 3 2 11 4 0\ncpu0 50 2 25 4500 3 1 1 5 2 0\n\
cpu1 50 3 25 4500 4 2 1 6 2 0\nintr 1 2 3\nctxt 99\n";

    #[test]
    fn proc_stat_gives_busy_iowait_steal_and_the_cpus() {
        let s = parse_proc_stat(STAT).unwrap();
        assert_eq!(
            s,
            ProcStat {
                busy: 100 + 5 + 50 + 3 + 2,
                iowait: 7,
                steal: 11,
                logical_cpus: 2
            }
        );
        assert!(parse_proc_stat("cpu0 1 2 3\n")
            .unwrap_err()
            .contains("aggregate"));
        assert!(parse_proc_stat("cpu  1 2 3 4\n")
            .unwrap_err()
            .contains("4 fields"));
        assert!(parse_proc_stat("cpu  1 2 x 4 5 6 7 8\n")
            .unwrap_err()
            .contains("\"x\""));
    }

    #[test]
    fn loadavg_is_its_first_figure() {
        assert_eq!(parse_loadavg("2.31 1.02 0.50 3/456 7890\n").unwrap(), 2.31);
        assert!(parse_loadavg("").is_err());
        assert!(parse_loadavg("high 1 1").is_err());
    }

    #[test]
    fn pid_stat_counts_fields_after_a_name_with_spaces_and_parentheses() {
        let text = "1457 (a (b) c) S 1 1457 1457 0 -1 4194560 9 0 0 0 120 30 0 0 20 0 12 0 \
777 1 2\n";
        let p = parse_pid_stat(text).unwrap();
        assert_eq!(p.comm, "a (b) c");
        assert_eq!(p.cpu_ticks, 150);
        assert_eq!(p.start_ticks, 777);
        assert!(parse_pid_stat("12 (x) S 1 2")
            .unwrap_err()
            .contains("field 14"));
        assert!(parse_pid_stat("no name here").is_err());
    }

    #[test]
    fn rows_match_the_header_and_outside_never_goes_negative() {
        let row = HostRow {
            unix_ns: 1_700_000_000_000_000_001,
            offset_s: 3.5,
            tick: 3,
            ok: true,
            interval_ns: Some(1_000_000_000),
            logical_cpus: 2,
            busy_ns: Some(1_500_000_000),
            iowait_ns: Some(0),
            steal_ns: Some(10_000_000),
            study_ns: Some(400_000_000),
            feedbench_ns: Some(20_000_000),
            engine_ns: None,
            load1: Some(1.25),
            detail: String::new(),
        };
        let mut line = String::new();
        row.write_csv(&mut line);
        assert_eq!(
            line,
            "1700000000000000001,3.500000,3,ok,1.000000000,2,1.500000000,0.000000000,\
0.010000000,0.400000000,0.020000000,,1.25,\n"
        );
        assert_eq!(line.split(',').count(), HOST_HEADER.split(',').count());
        assert_eq!(outside_ns(1_000, 600, 100, 100), 200);
        assert_eq!(outside_ns(1_000, 900, 100, 100), 0);
    }
}
