//! Pure parsers for the kernel's counter files: cgroup v2 and v1 CPU and memory files,
//! `/proc/<pid>/net/dev`, `/proc/<pid>/cgroup` and `/proc/self/mountinfo`.

/// The value of `key` in a flat-keyed file (`key value` per line: cpu.stat,
/// memory.events, memory.oom_control, cpuacct.stat).
pub fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut f = l.split_ascii_whitespace();
        (f.next() == Some(key))
            .then(|| f.next()?.parse().ok())
            .flatten()
    })
}

/// Resident anonymous memory from a cgroup v1 `memory.stat`: `total_rss` (the cgroup with
/// its descendants), else `rss` (the cgroup alone). Page cache and shmem are not in it.
pub fn v1_rss(memory_stat: &str) -> Option<u64> {
    keyed(memory_stat, "total_rss").or_else(|| keyed(memory_stat, "rss"))
}

/// Resident anonymous memory from a cgroup v2 `memory.stat`: `anon`.
pub fn v2_anon(memory_stat: &str) -> Option<u64> {
    keyed(memory_stat, "anon")
}

/// Inactive file pages from a cgroup v1 `memory.stat`: `total_inactive_file` (the cgroup
/// with its descendants), else `inactive_file`.
pub fn v1_inactive_file(memory_stat: &str) -> Option<u64> {
    keyed(memory_stat, "total_inactive_file").or_else(|| keyed(memory_stat, "inactive_file"))
}

/// Inactive file pages from a cgroup v2 `memory.stat`: `inactive_file`.
pub fn v2_inactive_file(memory_stat: &str) -> Option<u64> {
    keyed(memory_stat, "inactive_file")
}

/// A file holding one number.
pub fn single(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// A memory limit: v2 writes `max`, v1 a page-aligned number near `i64::MAX`; both mean
/// "no limit", returned as `None`.
pub fn memory_limit(text: &str) -> Option<u64> {
    let t = text.trim();
    if t == "max" {
        return None;
    }
    t.parse::<u64>().ok().filter(|v| *v < 1 << 62)
}

/// Received and transmitted bytes summed over every interface but `lo`: the container's
/// traffic with the world outside its network namespace.
pub fn net_dev(text: &str) -> Option<(u64, u64)> {
    // A namespace with only `lo` (network none) has zero traffic, not an unknown.
    let (mut rx, mut tx) = (0u64, 0u64);
    for line in text.lines().skip(2) {
        let Some((iface, rest)) = line.split_once(':') else {
            continue;
        };
        if iface.trim() == "lo" {
            continue;
        }
        let f: Vec<&str> = rest.split_ascii_whitespace().collect();
        let (r, t) = (
            f.first()?.parse::<u64>().ok()?,
            f.get(8)?.parse::<u64>().ok()?,
        );
        rx = rx.saturating_add(r);
        tx = tx.saturating_add(t);
    }
    Some((rx, tx))
}

/// The cgroup path of a process in the hierarchy holding `controller` (v1), or in the
/// unified hierarchy when `controller` is `None` (v2), from `/proc/<pid>/cgroup`.
pub fn proc_cgroup_path(text: &str, controller: Option<&str>) -> Option<String> {
    text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (id, ctrls, path) = (f.next()?, f.next()?, f.next()?);
        let hit = match controller {
            None => id == "0" && ctrls.is_empty(),
            Some(c) => ctrls.split(',').any(|x| x == c),
        };
        hit.then(|| path.to_string())
    })
}

/// Where the v1 hierarchy holding `controller` is mounted, from `/proc/self/mountinfo`
/// (cpu and cpuacct are often mounted together as `cpu,cpuacct`).
pub fn v1_mount(mountinfo: &str, controller: &str) -> Option<String> {
    mountinfo.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        let mut post = post.split_ascii_whitespace();
        if post.next()? != "cgroup" {
            return None;
        }
        let opts = post.nth(1)?;
        opts.split(',')
            .any(|o| o == controller)
            .then(|| pre.split_ascii_whitespace().nth(4).map(str::to_string))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_v2_and_v1_cpu_stat() {
        let v2 = "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 10\nnr_throttled 3\nthrottled_usec 250\n";
        assert_eq!(keyed(v2, "usage_usec"), Some(1500));
        assert_eq!(keyed(v2, "throttled_usec"), Some(250));
        assert_eq!(keyed(v2, "nr_bursts"), None);
        let v1 = "nr_periods 32\nnr_throttled 30\nthrottled_time 1507246968\n";
        assert_eq!(keyed(v1, "throttled_time"), Some(1_507_246_968));
        assert_eq!(
            keyed("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", "oom_kill"),
            Some(2)
        );
        // A key that is a prefix of another is not confused with it.
        assert_eq!(
            keyed("oom_kill_disable 1\noom_kill 0\n", "oom_kill"),
            Some(0)
        );
    }

    #[test]
    fn reads_resident_memory_from_memory_stat() {
        // v1, as the kernel writes it: the cgroup's own figures, then the hierarchical ones.
        let v1 = "cache 42323968\nrss 6524928\nrss_huge 0\nshmem 9084928\nmapped_file 7684096\n\
                  swap 0\nactive_anon 1531904\nhierarchical_memory_limit 9223372036854771712\n\
                  total_cache 2903957504\ntotal_rss 518168576\ntotal_rss_huge 0\n\
                  total_shmem 9084928\ntotal_active_anon 1609728\n";
        assert_eq!(v1_rss(v1), Some(518_168_576));
        // Without the total_ lines (a kernel that omits them), the cgroup's own rss.
        let own = "cache 4096\nrss_huge 2097152\nrss 8192\nmapped_file 0\n";
        assert_eq!(v1_rss(own), Some(8192));
        assert_eq!(v1_rss("cache 4096\n"), None);
        let v2 = "anon 3145728\nfile 20480000\nkernel_stack 65536\nshmem 0\nfile_mapped 0\n\
                  anon_thp 0\ninactive_anon 3100000\nactive_anon 45728\n";
        assert_eq!(v2_anon(v2), Some(3_145_728));
        // `anon_thp` and `inactive_anon` are not `anon`.
        assert_eq!(v2_anon("anon_thp 2097152\ninactive_anon 5\n"), None);
    }

    #[test]
    fn working_set_is_usage_less_inactive_file_pages() {
        // Recorded on this project's cgroup v1 host (kernel 6.18, Docker with cgroupfs) from
        // a feed-rs replica of the smoke study, under load: its memory.stat and
        // memory.usage_in_bytes, read a moment apart.
        let v1 = include_str!("testdata/v1-feed-rs-replica.memory.stat");
        let usage = single(include_str!(
            "testdata/v1-feed-rs-replica.memory.usage_in_bytes"
        ))
        .unwrap();
        assert_eq!(usage, 6_557_696);
        let inactive = v1_inactive_file(v1).unwrap();
        assert_eq!(inactive, 4_849_664);
        let ws = crate::rundir::samples::working_set(usage, inactive);
        assert_eq!(ws, 1_708_032);
        assert!(v1_rss(v1).unwrap() <= ws && ws <= usage);
        // Without the total_ lines, the cgroup's own figure.
        assert_eq!(v1_inactive_file("inactive_file 4096\n"), Some(4096));
        // cgroup v2: memory.current less inactive_file. Not recorded (this host is cgroup
        // v1): keys the kernel's cgroup-v2 documentation names, with values made up.
        let v2 = "anon 3145728\nfile 20480000\ninactive_anon 3100000\nactive_anon 45728\n\
                  inactive_file 16384000\nactive_file 4096000\n";
        let current = 24_117_248;
        let ws = crate::rundir::samples::working_set(current, v2_inactive_file(v2).unwrap());
        assert_eq!(ws, 7_733_248);
        assert!(v2_anon(v2).unwrap() <= ws && ws <= current);
        assert_eq!(v2_inactive_file("active_file 5\n"), None);
        // Inactive pages not below the usage (read a moment apart): the usage.
        assert_eq!(crate::rundir::samples::working_set(4096, 8192), 4096);
    }

    #[test]
    fn reads_limits() {
        assert_eq!(memory_limit("max\n"), None);
        assert_eq!(memory_limit("9223372036854771712\n"), None);
        assert_eq!(memory_limit("67108864\n"), Some(67_108_864));
        assert_eq!(single(" 42\n"), Some(42));
        assert_eq!(single("x"), None);
    }

    #[test]
    fn sums_net_dev_without_lo() {
        let text = "Inter-|   Receive                                                |  Transmit\n \
             face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
             lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0\n  \
             eth0:     736       8    0    0    0     0          0         0      120       2    0    0    0     0       0          0\n  \
             eth1:      64       1    0    0    0     0          0         0        8       1    0    0    0     0       0          0\n";
        assert_eq!(net_dev(text), Some((800, 128)));
        assert_eq!(net_dev("h\nh\n  eth0: x\n"), None);
    }

    #[test]
    fn finds_cgroup_paths_and_mounts() {
        let pc = "9:name=systemd:/docker/abc\n2:cpuacct:/docker/abc\n1:cpu,cpuacct:/docker/def\n0::/system.slice/docker-abc.scope\n";
        assert_eq!(
            proc_cgroup_path(pc, None).as_deref(),
            Some("/system.slice/docker-abc.scope")
        );
        assert_eq!(
            proc_cgroup_path(pc, Some("cpuacct")).as_deref(),
            Some("/docker/abc")
        );
        assert_eq!(
            proc_cgroup_path(pc, Some("cpu")).as_deref(),
            Some("/docker/def")
        );
        assert_eq!(proc_cgroup_path(pc, Some("memory")), None);
        let mi =
            "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n\
                  35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                  41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(
            v1_mount(mi, "cpuacct").as_deref(),
            Some("/sys/fs/cgroup/cpu,cpuacct")
        );
        assert_eq!(
            v1_mount(mi, "memory").as_deref(),
            Some("/sys/fs/cgroup/memory")
        );
        assert_eq!(v1_mount(mi, "pids"), None);
    }
}
