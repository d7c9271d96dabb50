//! Reading a container's counters straight from the host's cgroup and proc files, for a
//! local engine. The layout (v2, or v1's separate cpu / cpuacct / memory hierarchies) is
//! found once; each container's files are opened once and re-read from offset 0 every
//! second (one `pread` per file), and reopened only after its cgroup has gone.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::parse;
use crate::rundir::samples::Counters;

const CGROUP_ROOT: &str = "/sys/fs/cgroup";
/// USER_HZ, the unit of v1's `cpuacct.stat`; 100 on every Linux architecture Docker runs on.
const USER_HZ: u64 = 100;

/// Where this host keeps cgroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// The unified hierarchy (cgroup v2), mounted at `root`.
    V2 { root: PathBuf },
    /// cgroup v1: where the cpu, cpuacct and memory hierarchies are mounted (the first two
    /// may be one mount).
    V1 {
        cpu: PathBuf,
        cpuacct: PathBuf,
        memory: PathBuf,
    },
}

impl Layout {
    /// v2 when `/sys/fs/cgroup/cgroup.controllers` exists; otherwise the v1 mounts, from
    /// `/proc/self/mountinfo`.
    pub fn detect() -> Result<Layout, String> {
        let root = Path::new(CGROUP_ROOT);
        if root.join("cgroup.controllers").exists() {
            return Ok(Layout::V2 {
                root: root.to_path_buf(),
            });
        }
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
        let mount = |c: &str| {
            parse::v1_mount(&mountinfo, c)
                .map(PathBuf::from)
                .ok_or_else(|| {
                    format!(
                        "neither cgroup v2 at {CGROUP_ROOT} nor a v1 `{c}` hierarchy is mounted"
                    )
                })
        };
        Ok(Layout::V1 {
            cpu: mount("cpu")?,
            cpuacct: mount("cpuacct")?,
            memory: mount("memory")?,
        })
    }

    /// A short description for reports: `v2 at /sys/fs/cgroup` or the v1 mounts.
    pub fn describe(&self) -> String {
        match self {
            Layout::V2 { root } => format!("v2 at {}", root.display()),
            Layout::V1 {
                cpu,
                cpuacct,
                memory,
            } => {
                format!(
                    "v1: cpu at {}, cpuacct at {}, memory at {}",
                    cpu.display(),
                    cpuacct.display(),
                    memory.display()
                )
            }
        }
    }
}

/// The container's directory under the hierarchy mounted at `mount`: the path the process's
/// `/proc/<pid>/cgroup` names, else the systemd driver's or the cgroupfs driver's place.
/// Only a path that holds the container's ID is taken (the engine names every container's
/// cgroup so): a pid reported by an engine of another host may be an unrelated process here.
fn container_dir(
    mount: &Path,
    proc_path: Option<String>,
    id: &str,
    probe: &str,
) -> Result<PathBuf, String> {
    let candidates = proc_path.into_iter().chain([
        format!("/system.slice/docker-{id}.scope"),
        format!("/docker/{id}"),
    ]);
    let mut tried = Vec::new();
    for rel in candidates {
        let dir = mount.join(rel.trim_start_matches('/'));
        if !rel.contains(id) {
            tried.push(format!("{} (not the container's)", dir.display()));
            continue;
        }
        if dir.join(probe).exists() {
            return Ok(dir);
        }
        tried.push(dir.display().to_string());
    }
    Err(format!("no {probe} in {}", tried.join(", ")))
}

#[derive(Debug)]
enum Files {
    V2 {
        cpu_stat: File,
        memory_current: File,
        memory_stat: File,
        memory_max: File,
        memory_events: File,
    },
    V1 {
        usage: File,
        /// `cpuacct.usage_user` and `cpuacct.usage_sys` in ns (Linux ≥ 4.16), else
        /// `cpuacct.stat` in USER_HZ ticks.
        user_sys: UserSys,
        cpu_stat: File,
        memory_usage: File,
        memory_stat: File,
        memory_limit: File,
        oom_control: File,
    },
}

#[derive(Debug)]
enum UserSys {
    Ns { user: File, sys: File },
    Ticks(File),
}

/// One container's open counter files.
#[derive(Debug)]
pub struct CgroupFiles {
    files: Files,
    /// `/proc/<pid>/net/dev` of the container's main process: its network namespace.
    net_dev: Option<File>,
    buf: Vec<u8>,
}

fn open(path: PathBuf) -> Result<File, String> {
    File::open(&path).map_err(|e| format!("{}: {e}", path.display()))
}

impl CgroupFiles {
    /// Opens the files of container `id` whose main process is `pid` (> 0).
    pub fn open(layout: &Layout, id: &str, pid: i64) -> Result<CgroupFiles, String> {
        let proc_cgroup =
            std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
        let files = match layout {
            Layout::V2 { root } => {
                let dir = container_dir(
                    root,
                    parse::proc_cgroup_path(&proc_cgroup, None),
                    id,
                    "cpu.stat",
                )?;
                Files::V2 {
                    cpu_stat: open(dir.join("cpu.stat"))?,
                    memory_current: open(dir.join("memory.current"))?,
                    memory_stat: open(dir.join("memory.stat"))?,
                    memory_max: open(dir.join("memory.max"))?,
                    memory_events: open(dir.join("memory.events"))?,
                }
            }
            Layout::V1 {
                cpu,
                cpuacct,
                memory,
            } => {
                let path = |c| parse::proc_cgroup_path(&proc_cgroup, Some(c));
                let acct = container_dir(cpuacct, path("cpuacct"), id, "cpuacct.usage")?;
                let cpu = container_dir(cpu, path("cpu"), id, "cpu.stat")?;
                let mem = container_dir(memory, path("memory"), id, "memory.usage_in_bytes")?;
                let user_sys = match (
                    File::open(acct.join("cpuacct.usage_user")),
                    File::open(acct.join("cpuacct.usage_sys")),
                ) {
                    (Ok(user), Ok(sys)) => UserSys::Ns { user, sys },
                    _ => UserSys::Ticks(open(acct.join("cpuacct.stat"))?),
                };
                Files::V1 {
                    usage: open(acct.join("cpuacct.usage"))?,
                    user_sys,
                    cpu_stat: open(cpu.join("cpu.stat"))?,
                    memory_usage: open(mem.join("memory.usage_in_bytes"))?,
                    memory_stat: open(mem.join("memory.stat"))?,
                    memory_limit: open(mem.join("memory.limit_in_bytes"))?,
                    oom_control: open(mem.join("memory.oom_control"))?,
                }
            }
        };
        // Without the process's namespace the row still has CPU and memory.
        let net_dev = File::open(format!("/proc/{pid}/net/dev")).ok();
        Ok(CgroupFiles {
            files,
            net_dev,
            buf: Vec::with_capacity(4096),
        })
    }

    /// Reads every counter. An error means the cgroup is gone (a removed cgroup's open files
    /// answer ENODEV) or unreadable; the caller decides which by asking the engine.
    pub fn read(&mut self) -> std::io::Result<Counters> {
        let buf = &mut self.buf;
        let bad = |what: &str| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("cannot parse {what}"),
            )
        };
        let mut c = Counters::default();
        // Inactive file pages, which the working set leaves out of usage.
        let inactive_file = match &self.files {
            Files::V2 {
                cpu_stat,
                memory_current,
                memory_stat,
                memory_max,
                memory_events,
            } => {
                let s = read_at0(cpu_stat, buf)?;
                let us = |k| parse::keyed(s, k).map(|v| v.saturating_mul(1000));
                c.cpu_usage_ns = Some(us("usage_usec").ok_or_else(|| bad("cpu.stat"))?);
                c.cpu_user_ns = us("user_usec");
                c.cpu_system_ns = us("system_usec");
                c.cpu_periods = parse::keyed(s, "nr_periods");
                c.cpu_throttled_periods = parse::keyed(s, "nr_throttled");
                c.cpu_throttled_ns = us("throttled_usec");
                c.memory_bytes = Some(
                    parse::single(read_at0(memory_current, buf)?)
                        .ok_or_else(|| bad("memory.current"))?,
                );
                let stat = read_at0(memory_stat, buf)?;
                c.memory_rss_bytes = parse::v2_anon(stat);
                let inactive = parse::v2_inactive_file(stat);
                c.memory_limit_bytes = parse::memory_limit(read_at0(memory_max, buf)?);
                c.oom_kills = parse::keyed(read_at0(memory_events, buf)?, "oom_kill");
                inactive
            }
            Files::V1 {
                usage,
                user_sys,
                cpu_stat,
                memory_usage,
                memory_stat,
                memory_limit,
                oom_control,
            } => {
                c.cpu_usage_ns =
                    Some(parse::single(read_at0(usage, buf)?).ok_or_else(|| bad("cpuacct.usage"))?);
                match user_sys {
                    UserSys::Ns { user, sys } => {
                        c.cpu_user_ns = parse::single(read_at0(user, buf)?);
                        c.cpu_system_ns = parse::single(read_at0(sys, buf)?);
                    }
                    UserSys::Ticks(f) => {
                        let s = read_at0(f, buf)?;
                        let ns = |k| {
                            parse::keyed(s, k).map(|t| t.saturating_mul(1_000_000_000 / USER_HZ))
                        };
                        c.cpu_user_ns = ns("user");
                        c.cpu_system_ns = ns("system");
                    }
                }
                let s = read_at0(cpu_stat, buf)?;
                c.cpu_periods = parse::keyed(s, "nr_periods");
                c.cpu_throttled_periods = parse::keyed(s, "nr_throttled");
                c.cpu_throttled_ns = parse::keyed(s, "throttled_time");
                c.memory_bytes = Some(
                    parse::single(read_at0(memory_usage, buf)?)
                        .ok_or_else(|| bad("memory.usage_in_bytes"))?,
                );
                let stat = read_at0(memory_stat, buf)?;
                c.memory_rss_bytes = parse::v1_rss(stat);
                let inactive = parse::v1_inactive_file(stat);
                c.memory_limit_bytes = parse::memory_limit(read_at0(memory_limit, buf)?);
                c.oom_kills = parse::keyed(read_at0(oom_control, buf)?, "oom_kill");
                inactive
            }
        };
        c.memory_working_set_bytes = c
            .memory_bytes
            .zip(inactive_file)
            .map(|(usage, inactive)| crate::rundir::samples::working_set(usage, inactive));
        if let Some(f) = &self.net_dev {
            if let Some((rx, tx)) = read_at0(f, buf).ok().and_then(parse::net_dev) {
                c.net_rx_bytes = Some(rx);
                c.net_tx_bytes = Some(tx);
            }
        }
        Ok(c)
    }
}

/// The whole file, read from offset 0 into `buf` (reused), as text.
fn read_at0<'b>(file: &File, buf: &'b mut Vec<u8>) -> std::io::Result<&'b str> {
    buf.clear();
    let mut chunk = [0u8; 4096];
    loop {
        let n = file.read_at(&mut chunk, buf.len() as u64)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    std::str::from_utf8(buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rereads_a_file_from_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cpu.stat");
        std::fs::write(&p, "usage_usec 10\n").unwrap();
        let f = File::open(&p).unwrap();
        let mut buf = Vec::new();
        assert_eq!(read_at0(&f, &mut buf).unwrap(), "usage_usec 10\n");
        std::fs::write(&p, "usage_usec 20\n").unwrap();
        assert_eq!(read_at0(&f, &mut buf).unwrap(), "usage_usec 20\n");
    }

    #[test]
    fn finds_a_v2_container_by_either_driver() {
        let root = tempfile::tempdir().unwrap();
        let systemd = root.path().join("system.slice/docker-abc.scope");
        std::fs::create_dir_all(&systemd).unwrap();
        for f in [
            "cpu.stat",
            "memory.current",
            "memory.stat",
            "memory.max",
            "memory.events",
        ] {
            std::fs::write(systemd.join(f), "").unwrap();
        }
        std::fs::write(systemd.join("cpu.stat"), "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 4\nnr_throttled 1\nthrottled_usec 7\n").unwrap();
        std::fs::write(systemd.join("memory.current"), "4096\n").unwrap();
        std::fs::write(
            systemd.join("memory.stat"),
            "anon 1024\nfile 3072\nanon_thp 0\ninactive_file 2048\nactive_file 1024\n",
        )
        .unwrap();
        std::fs::write(systemd.join("memory.max"), "max\n").unwrap();
        std::fs::write(
            systemd.join("memory.events"),
            "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
        )
        .unwrap();
        let layout = Layout::V2 {
            root: root.path().to_path_buf(),
        };
        // pid -1: no /proc entry, so the conventional places are searched.
        let mut files = CgroupFiles::open(&layout, "abc", -1).unwrap();
        let c = files.read().unwrap();
        assert_eq!(
            (c.cpu_usage_ns, c.cpu_user_ns, c.cpu_throttled_ns),
            (Some(1_500_000), Some(1_000_000), Some(7000))
        );
        assert_eq!(
            (
                c.memory_bytes,
                c.memory_rss_bytes,
                c.memory_limit_bytes,
                c.oom_kills
            ),
            (Some(4096), Some(1024), None, Some(1))
        );
        assert_eq!(c.memory_working_set_bytes, Some(2048));
        assert_eq!(c.net_rx_bytes, None);

        let cgroupfs = root.path().join("docker/def");
        std::fs::create_dir_all(&cgroupfs).unwrap();
        assert!(CgroupFiles::open(&layout, "def", -1)
            .unwrap_err()
            .contains("no cpu.stat"));
        std::fs::remove_dir_all(&systemd).unwrap();
        // The open files of a removed directory still read here (a tmpfs keeps them); on
        // cgroupfs they answer ENODEV, which the test against the engine covers.
        assert!(CgroupFiles::open(&layout, "abc", -1).is_err());
    }

    #[test]
    fn this_host_has_a_layout() {
        // Only where cgroups are mounted at all (every Linux host Docker runs on).
        if Path::new(CGROUP_ROOT).exists() {
            let l = Layout::detect();
            assert!(l.is_ok(), "{l:?}");
        }
    }
}
