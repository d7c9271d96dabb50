//! Where a run's rows are collected: the run's key and the current step, second,
//! container and definition, so that each figure is one line of code.

use super::rows::{Row, RunKey, NONE};

#[derive(Debug, Clone)]
pub struct Out {
    key: RunKey,
    step_rate: Option<f64>,
    second: Option<u64>,
    container: String,
    definition: String,
    pub rows: Vec<Row>,
}

impl Out {
    pub fn new(key: RunKey) -> Out {
        Out {
            key,
            step_rate: None,
            second: None,
            container: String::new(),
            definition: String::new(),
            rows: Vec::new(),
        }
    }

    /// The same context, no rows.
    fn scoped(&self) -> Out {
        Out {
            key: self.key.clone(),
            step_rate: self.step_rate,
            second: self.second,
            container: self.container.clone(),
            definition: self.definition.clone(),
            rows: Vec::new(),
        }
    }

    pub fn at_step(&self, rate: f64) -> Out {
        Out {
            step_rate: Some(rate),
            ..self.scoped()
        }
    }

    pub fn at_second(&self, second: u64) -> Out {
        Out {
            second: Some(second),
            ..self.scoped()
        }
    }

    pub fn for_container(&self, container: &str) -> Out {
        Out {
            container: container.to_string(),
            ..self.scoped()
        }
    }

    pub fn under(&self, definition: &str) -> Out {
        Out {
            definition: definition.to_string(),
            ..self.scoped()
        }
    }

    /// Takes a scoped builder's rows.
    pub fn absorb(&mut self, other: Out) {
        self.rows.extend(other.rows);
    }

    fn push(&mut self, metric: &str, value: Option<f64>, unit: &str, note: &str) {
        self.rows.push(Row {
            key: self.key.clone(),
            step_rate: self.step_rate,
            second: self.second,
            container: self.container.clone(),
            definition: self.definition.clone(),
            metric: metric.to_string(),
            value,
            unit: unit.to_string(),
            note: if value.is_some() {
                String::new()
            } else {
                note.to_string()
            },
        });
    }

    /// A value; `None` is written empty with the note `none`.
    pub fn value(&mut self, metric: &str, value: Option<f64>, unit: &str) {
        self.push(metric, value, unit, NONE);
    }

    pub fn count(&mut self, metric: &str, n: usize) {
        self.push(metric, Some(n as f64), "count", NONE);
    }

    /// A value, or empty with `note` when there is none.
    pub fn or(&mut self, metric: &str, value: Option<f64>, unit: &str, note: &str) {
        self.push(metric, value, unit, note);
    }

    /// A value with a note kept beside it (a saturation no step breached).
    pub fn noted(&mut self, metric: &str, value: Option<f64>, unit: &str, note: &str) {
        self.push(metric, value, unit, note);
        if let Some(r) = self.rows.last_mut() {
            r.note = note.to_string();
        }
    }

    pub fn empty(&mut self, metric: &str, unit: &str, note: &str) {
        self.push(metric, None, unit, note);
    }
}
