//! Where image builds say what they are doing, line by line: the command line prints the
//! lines on stderr; tests and callers that want quiet pass `Progress::quiet()`.

use std::sync::Arc;

/// A sink for progress lines (`[images] feedbench/k6:1.1.0: building`, …).
#[derive(Clone)]
pub struct Progress(Arc<dyn Fn(&str) + Send + Sync>);

impl Progress {
    pub fn new(say: impl Fn(&str) + Send + Sync + 'static) -> Progress {
        Progress(Arc::new(say))
    }

    /// Says nothing.
    pub fn quiet() -> Progress {
        Progress::new(|_| {})
    }

    pub fn say(&self, line: &str) {
        (self.0)(line)
    }
}

impl Default for Progress {
    fn default() -> Self {
        Progress::quiet()
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress")
    }
}
