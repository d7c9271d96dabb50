//! An append-only CSV file: the header first, then a batch of lines per tick, flushed to
//! the kernel after each batch so that a crash loses at most the current second.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::error::MonitorError;

pub struct CsvFile {
    path: PathBuf,
    file: File,
    /// The current tick's lines.
    pub batch: String,
}

impl CsvFile {
    /// Creates (or truncates) `path` and writes `header`.
    pub fn create(path: &Path, header: &str) -> Result<CsvFile, MonitorError> {
        let fail = |source| MonitorError::Write {
            path: path.to_path_buf(),
            source,
        };
        let mut file = File::create(path).map_err(fail)?;
        file.write_all(format!("{header}\n").as_bytes())
            .map_err(fail)?;
        Ok(CsvFile {
            path: path.to_path_buf(),
            file,
            batch: String::with_capacity(8192),
        })
    }

    /// Writes the batch with one `write` and empties it.
    pub fn flush_batch(&mut self) -> Result<(), MonitorError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let r = self.file.write_all(self.batch.as_bytes());
        self.batch.clear();
        r.map_err(|source| MonitorError::Write {
            path: self.path.clone(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_header_and_batches() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.csv");
        let mut f = CsvFile::create(&p, "a,b").unwrap();
        f.batch.push_str("1,2\n");
        f.flush_batch().unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "a,b\n1,2\n");
        f.flush_batch().unwrap();
        assert!(CsvFile::create(&dir.path().join("no/such/dir.csv"), "a").is_err());
    }
}
