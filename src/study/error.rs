//! What can stop a study, split by whose it is: a request the study refuses (bad input or
//! usage, nothing recorded) or a failure while it ran.

use crate::ledger::pilot::PilotError;
use crate::lock::LockError;
use crate::run::settle::SettleError;
use crate::rundir::record::RecordError;
use feedbench_core::files::FileError;

use super::testbed::TestbedError;

#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    /// The plan, the results directory or the command asks for something the study will not
    /// do (an uncommitted plan, results without --resume, an undeclared plan change, caps
    /// beyond the host…). Nothing was recorded. The command line exits 2.
    #[error("{0}")]
    Refused(String),
    /// The study went as far as it could and not every selected run stands, or it was
    /// interrupted: what happened is in the journal. Exit 1.
    #[error("{0}")]
    Unfinished(String),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    File(#[from] FileError),
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error(transparent)]
    Settle(#[from] SettleError),
    #[error(transparent)]
    Testbed(#[from] TestbedError),
    #[error(transparent)]
    Pilot(#[from] PilotError),
    #[error(transparent)]
    Claim(#[from] super::claim::ClaimError),
}

impl StudyError {
    /// Whether the request itself was at fault (bad input or usage).
    pub fn is_refusal(&self) -> bool {
        match self {
            StudyError::Refused(_) => true,
            // Another study holds the engine: the person chooses to wait or to share.
            StudyError::Claim(super::claim::ClaimError::InUse { .. }) => true,
            // A link, a directory or a pipe where a study's file should be.
            StudyError::File(e) => crate::confine::is_bad_input(&e.source),
            StudyError::Lock(LockError::Io { source, .. }) => crate::confine::is_bad_input(source),
            _ => false,
        }
    }
}
