//! The run matrix: which (profile, fault) pairs each contender runs, how often, in what order.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plan::units::{Duration, Name, Percent};

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Matrix {
    /// How many times every entry runs for every contender.
    pub repetitions: u32,
    /// The order runs execute in.
    #[serde(default)]
    pub order: Order,
    /// Time allowed per run for deploy and teardown, in the study's time estimate.
    #[serde(default = "default_allowance")]
    pub setup_allowance: Duration,
    /// The (profile, fault) pairs.
    pub runs: Vec<MatrixEntry>,
    /// The smallest difference between two arms' medians on a headline figure the study
    /// means to be able to show, relative to the lower (10% : one arm's median 1.1 times the
    /// other's), above 0% and at most 100%. A pilot sizes the repetitions for it, and
    /// `feedbench plan` warns when the registered ones fall short (docs/analysis.md, "Sizing
    /// repetitions from a pilot"). In the plan hash, in no run hash: it changes no run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smallest_effect: Option<Percent>,
}

fn default_allowance() -> Duration {
    Duration::from_secs(60)
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MatrixEntry {
    pub profile: Name,
    /// A fault injected during the profile, or none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Name>,
    /// The contenders that run this entry: a contender's name selects all its variants,
    /// `name.variant` one of them. By default, every contender.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contenders: Option<Vec<String>>,
}

/// Run order. `sequential`: contender by contender, repetitions together. `interleaved`:
/// repetition by repetition, contenders alternating within it. `shuffled`: each
/// repetition in a random order drawn from `seed` (recorded in the plan), dependencies
/// first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub enum Order {
    Sequential,
    #[default]
    Interleaved,
    Shuffled {
        seed: u64,
    },
}
