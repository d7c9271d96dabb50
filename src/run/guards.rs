//! Guards: host conditions under which a run must stop. The checks are pure functions of
//! readings; reading the host is separate, so the checks are tested on synthetic figures.

use std::path::{Path, PathBuf};

use crate::plan::model::Guards;
use crate::spec::topology::Role;

/// What the host offers right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostReadings {
    pub available_memory_bytes: u64,
    /// Free space on the filesystem holding the results directory.
    pub free_disk_bytes: u64,
    /// The engine's data root (where container writes land: layers, logs, volumes) and the
    /// free space under it, when it is on this host.
    pub engine_disk: Option<(PathBuf, u64)>,
}

/// Where the guards read the host: the results directory, and the engine's data root when
/// it is on this host's filesystem.
#[derive(Debug, Clone)]
pub struct HostProbe {
    pub results: PathBuf,
    pub engine_root: Option<PathBuf>,
}

impl HostProbe {
    /// The probe for a run writing into `results`, with the engine's data root as the engine
    /// reports it; and, when that root is not on this host (a remote engine) or the engine
    /// names none, the warning that its disk goes unguarded.
    pub fn of(data_root: Option<String>, results: &Path) -> (HostProbe, Option<String>) {
        let (engine_root, warning) = match data_root {
            Some(r) if Path::new(&r).is_dir() => (Some(PathBuf::from(r)), None),
            Some(r) => (
                None,
                Some(format!(
                    "the engine's data root `{r}` is not on this host: the disk-floor guard \
                     watches the results directory only"
                )),
            ),
            None => (
                None,
                Some(
                    "the engine names no data root: the disk-floor guard watches the results \
                     directory only"
                        .to_string(),
                ),
            ),
        };
        let probe = HostProbe {
            results: results.to_path_buf(),
            engine_root,
        };
        (probe, warning)
    }

    /// Reads the host: available memory, free space under the results directory and under
    /// the engine's data root.
    pub fn read(&self) -> std::io::Result<HostReadings> {
        let meminfo = std::fs::read_to_string("/proc/meminfo")?;
        let available_memory_bytes = parse_mem_available(&meminfo)
            .ok_or_else(|| std::io::Error::other("/proc/meminfo has no MemAvailable line"))?;
        let engine_disk = match &self.engine_root {
            Some(root) => Some((root.clone(), free_space(root)?)),
            None => None,
        };
        Ok(HostReadings {
            available_memory_bytes,
            free_disk_bytes: free_space(&self.results)?,
            engine_disk,
        })
    }
}

/// A guard that tripped, with the figure that proves it.
#[derive(Debug, Clone, PartialEq)]
pub struct Trip {
    pub guard: &'static str,
    pub figure: f64,
    pub threshold: f64,
    pub unit: &'static str,
    pub detail: String,
}

const MIB: f64 = 1024.0 * 1024.0;

/// The first guard the readings trip, if any.
pub fn check(guards: &Guards, r: &HostReadings) -> Option<Trip> {
    if r.available_memory_bytes < guards.host_memory_floor.bytes {
        return Some(Trip {
            guard: "host-memory-floor",
            figure: (r.available_memory_bytes as f64 / MIB).round(),
            threshold: (guards.host_memory_floor.bytes as f64 / MIB).round(),
            unit: "MiB",
            detail: "the host's available memory fell below the floor".into(),
        });
    }
    if r.free_disk_bytes < guards.disk_floor.bytes {
        return Some(Trip {
            guard: "disk-floor",
            figure: (r.free_disk_bytes as f64 / MIB).round(),
            threshold: (guards.disk_floor.bytes as f64 / MIB).round(),
            unit: "MiB",
            detail: "free disk under the results directory fell below the floor".into(),
        });
    }
    if let Some((root, free)) = &r.engine_disk {
        if *free < guards.disk_floor.bytes {
            return Some(Trip {
                guard: "disk-floor",
                figure: (*free as f64 / MIB).round(),
                threshold: (guards.disk_floor.bytes as f64 / MIB).round(),
                unit: "MiB",
                detail: format!(
                    "free disk under the engine's data root `{}` (where containers write) \
                     fell below the floor",
                    root.display()
                ),
            });
        }
    }
    None
}

/// Whether a kill for memory in a container of `role` stops the run: in the measurement
/// path (load generator, fault proxy, balancer) and the co-tenant it changes what the run
/// measured; in the system under test (replicas, database, object store) it is what the
/// system did under the load, a result that the run goes on to record.
pub fn oom_stops_the_run(role: Role) -> bool {
    !matches!(role, Role::Replica(_) | Role::Database | Role::ObjectStore)
}

/// A container of the measurement path killed for memory: a trip.
pub fn oom_trip(container: &str, kills: u64) -> Trip {
    Trip {
        guard: "out-of-memory",
        figure: kills as f64,
        threshold: 0.0,
        unit: "kills",
        detail: format!("`{container}` was killed for memory"),
    }
}

/// An image removed from the engine while the study ran (someone pruned it).
pub fn image_gone_trip(image: &str) -> Trip {
    Trip {
        guard: "image-gone",
        figure: 0.0,
        threshold: 1.0,
        unit: "images",
        detail: format!("the image `{image}` is no longer in the engine; rebuild it and resume"),
    }
}

/// `MemAvailable` from /proc/meminfo's text.
pub fn parse_mem_available(meminfo: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

fn free_space(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other(format!("`{}` contains a NUL byte", dir.display())))?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a valid NUL-terminated string and `st` a writable statvfs.
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::units::ByteSize;

    /// The engine's data root is watched when it is a directory here; one elsewhere (a
    /// remote engine's), or none named, leaves the results directory watched alone, said.
    #[test]
    fn the_engines_data_root_is_watched_only_where_it_is_on_this_host() {
        let here = tempfile::tempdir().unwrap();
        let results = here.path().join("results");
        let root = here.path().display().to_string();
        let (p, warning) = HostProbe::of(Some(root), &results);
        assert_eq!(
            (p.engine_root.as_deref(), warning),
            (Some(here.path()), None)
        );
        let (p, warning) = HostProbe::of(Some("/var/lib/elsewhere-9f2c".into()), &results);
        assert_eq!(p.engine_root, None);
        assert!(
            warning.is_some_and(|w| w.contains("`/var/lib/elsewhere-9f2c` is not on this host"))
        );
        let (p, warning) = HostProbe::of(None, &results);
        assert_eq!(p.engine_root, None);
        assert!(warning.is_some_and(|w| w.contains("names no data root")));
        assert_eq!(p.results, results);
    }

    fn guards() -> Guards {
        Guards {
            host_memory_floor: ByteSize { bytes: 1536 << 20 },
            disk_floor: ByteSize { bytes: 5 << 30 },
            ..Guards::default()
        }
    }

    #[test]
    fn memory_under_the_floor_trips_with_its_figure() {
        let t = check(
            &guards(),
            &HostReadings {
                available_memory_bytes: 1 << 30,
                free_disk_bytes: 10 << 30,
                engine_disk: None,
            },
        )
        .unwrap();
        assert_eq!(
            (t.guard, t.figure, t.threshold, t.unit),
            ("host-memory-floor", 1024.0, 1536.0, "MiB")
        );
        let t = check(
            &guards(),
            &HostReadings {
                available_memory_bytes: 8 << 30,
                free_disk_bytes: 1 << 30,
                engine_disk: None,
            },
        )
        .unwrap();
        assert_eq!(t.guard, "disk-floor");
        assert!(check(
            &guards(),
            &HostReadings {
                available_memory_bytes: 8 << 30,
                free_disk_bytes: 10 << 30,
                engine_disk: Some(("/var/lib/docker".into(), 10 << 30)),
            }
        )
        .is_none());
    }

    #[test]
    fn the_engines_data_root_under_the_floor_trips_naming_it() {
        let t = check(
            &guards(),
            &HostReadings {
                available_memory_bytes: 8 << 30,
                free_disk_bytes: 10 << 30,
                engine_disk: Some(("/var/lib/docker".into(), 3 << 30)),
            },
        )
        .unwrap();
        assert_eq!(
            (t.guard, t.figure, t.threshold, t.unit),
            ("disk-floor", 3072.0, 5120.0, "MiB")
        );
        assert!(t.detail.contains("`/var/lib/docker`"), "{}", t.detail);
        assert!(t.detail.contains("engine's data root"), "{}", t.detail);
    }

    #[test]
    fn a_kill_for_memory_stops_the_run_only_outside_the_system_under_test() {
        for role in [
            Role::Replica(1),
            Role::Replica(2),
            Role::Database,
            Role::ObjectStore,
        ] {
            assert!(!oom_stops_the_run(role), "{role:?}");
        }
        for role in [
            Role::LoadGenerator,
            Role::FaultProxy,
            Role::Balancer,
            Role::CoTenant,
            Role::Gate,
        ] {
            assert!(oom_stops_the_run(role), "{role:?}");
        }
    }

    #[test]
    fn meminfo_and_the_real_host_are_read() {
        assert_eq!(
            parse_mem_available("MemTotal: 10 kB\nMemAvailable:     2048 kB\n"),
            Some(2 << 20)
        );
        assert_eq!(parse_mem_available("MemTotal: 10 kB\n"), None);
        let probe = HostProbe {
            results: "/".into(),
            engine_root: Some(std::env::temp_dir()),
        };
        let r = probe.read().unwrap();
        assert!(r.available_memory_bytes > 0 && r.free_disk_bytes > 0);
        assert!(
            matches!(r.engine_disk, Some((_, free)) if free > 0),
            "{r:?}"
        );
        let gone = HostProbe {
            results: "/".into(),
            engine_root: Some("/nonexistent/engine-root".into()),
        };
        assert!(
            gone.read().is_err(),
            "a root that vanished is an error, not 0 bytes"
        );
    }
}
