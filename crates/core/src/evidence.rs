//! Evidence: a figure that proves a verdict (a run invalid, a guard tripped), the one shape
//! the validity checks produce and the journal, manifests and run records keep.

use serde::{Deserialize, Serialize};

/// A figure that proves a verdict: which container (or component), which figure, its value
/// against the threshold it broke.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// What the check is, e.g. `cpu`, `throttling`, `dropped-iterations`, `arrival-rate`, `oom`.
    pub check: String,
    /// The role, e.g. `fault-proxy`, `load-generator`, `balancer`.
    pub role: String,
    /// The container's name, when the figure belongs to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// What was measured, in words, e.g. `p95 CPU over the measured window, share of its cap`.
    pub figure: String,
    pub value: f64,
    pub threshold: f64,
    pub unit: String,
}

impl std::fmt::Display for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): {} {} {} against {} {}",
            self.role,
            self.container.as_deref().unwrap_or("-"),
            self.figure,
            fmt_num(self.value),
            self.unit,
            fmt_num(self.threshold),
            self.unit
        )
    }
}

/// A figure as the evidence line shows it: whole numbers bare, others to three places.
fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}
