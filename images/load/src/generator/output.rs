//! The output file: rows and records are buffered in memory and written once a second by
//! the scheduler's thread (and at exit).

use std::fs::File;
use std::io::Write;
use std::path::Path;

use super::error::Error;
use super::shared::Shared;

/// The output file and its path, for errors.
pub struct Output<'a> {
    pub file: File,
    pub path: &'a Path,
}

impl Output<'_> {
    /// Writes the buffered output. The file is unbuffered: this is the flush.
    pub fn flush(&mut self, shared: &Shared) -> Result<(), Error> {
        let mut state = shared.state();
        self.file
            .write_all(&state.out)
            .map_err(|source| Error::Write {
                path: self.path.to_path_buf(),
                source,
            })?;
        state.out.clear();
        Ok(())
    }
}
