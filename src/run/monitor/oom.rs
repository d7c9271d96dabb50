//! Counting OOM kills across a run for the live guards. The cgroup's `oom_kill` counter
//! restarts at zero with each new cgroup (a restarted container), and a kill of the main
//! process removes the cgroup before the next read can see it; the engine's `OOMKilled`
//! flag, read when a container goes down, covers that case.

/// OOM kills of one container since the monitors started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OomTracker {
    /// The last counter read in the current life of the container.
    last: Option<u64>,
    /// The next reading comes from a new cgroup, counting from zero.
    fresh: bool,
    /// Kills seen in the current life.
    this_life: u64,
    up: bool,
    pub total: u64,
}

impl OomTracker {
    /// A counter read from the container's cgroup.
    pub fn observe(&mut self, value: u64) {
        let base = match self.last {
            Some(l) if value >= l => l,
            Some(_) => 0,
            None if self.fresh => 0,
            // The first reading: earlier kills are not the run's.
            None => value,
        };
        let new = value - base;
        self.total += new;
        self.this_life += new;
        self.last = Some(value);
        self.fresh = false;
        self.up = true;
    }

    /// The container answered without an OOM counter (the engine-API source).
    pub fn up(&mut self) {
        self.up = true;
    }

    /// The container is down; `engine_oom` is the engine's `OOMKilled` flag. Counts one kill
    /// when the container was up, the engine saw a kill, and the counter had not shown one.
    pub fn down(&mut self, engine_oom: bool) {
        if self.up && engine_oom && self.this_life == 0 {
            self.total += 1;
        }
        self.restarted();
        self.up = false;
    }

    /// The container has a new cgroup (restarted between two reads).
    pub fn restarted(&mut self) {
        self.last = None;
        self.fresh = true;
        self.this_life = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_kills_across_lives() {
        let mut t = OomTracker::default();
        t.observe(2); // before the run
        t.observe(3);
        assert_eq!(t.total, 1);
        t.down(true); // the counter showed a kill in this life: not counted twice
        assert_eq!(t.total, 1);
        t.down(true); // still down: nothing more
        t.observe(0);
        t.down(true); // the main process was killed before a read saw it
        assert_eq!(t.total, 2);
        t.observe(1); // a new cgroup with a kill in its first second
        assert_eq!(t.total, 3);
        t.restarted();
        t.observe(0);
        t.down(false);
        assert_eq!(t.total, 3);
    }
}
