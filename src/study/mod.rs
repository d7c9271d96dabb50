//! The study runner: what `feedbench run` decides and does for a study, as a library.
//!
//! `Session` is the study opened once: its directory, lock, journal writer and ledger
//! state, and the one place that appends to the journal. `run_study` applies the
//! plan-change policy, reaps what a killed invocation left, gates contenders, waits for
//! the runs a run depends on, runs and settles each run, and reports every step as a
//! `StudyEvent` to a `Reporter` (the command line has a human and a JSON one). The engine
//! is behind `Testbed`, so this policy is tested with a fake testbed
//! (tests/offline/study_runner.rs) as well as on Docker (tests/testbed/ledger.rs). `claim`
//! holds the engines for one study at a time (tests/testbed/instances.rs). `decide` records a
//! person's decision about a run (`feedbench invalidate`, `feedbench skip`). `pilot` opens a
//! pilot's area, where the same runner runs a scaled plan (`feedbench pilot`).

mod claim;
mod decide;
mod dependencies;
mod dispatch;
mod error;
mod gate;
mod interrupt;
mod pilot;
mod reporter;
mod runner;
mod session;
mod testbed;

pub use claim::{claim_engines, fresh_instance, Claim, ClaimError, Holder};
pub use decide::{decide, Decision};
pub use error::StudyError;
pub use interrupt::Interrupt;
pub use pilot::{open_area, size as size_pilot, Pilot, PilotRequest};
pub use reporter::{Reporter, StudyEvent};
pub use runner::{run_study, StudyRequest};
pub use session::Session;
pub use testbed::{DockerTestbed, Observer, Testbed, TestbedError};
