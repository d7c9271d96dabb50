//! A run directory's CSV files read by column name, one row at a time, each field parsed
//! with its place: a missing file, a missing column and a damaged field are each an error
//! naming the file (and the line and column), never a row skipped in silence. The report's
//! reader and each run file's own (`host::read`, `links::read`, `health::read`,
//! `readiness::read`) go through it.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("`{0}` is missing")]
    Missing(PathBuf),
    #[error("cannot read `{path}`: {message}")]
    Io { path: PathBuf, message: String },
    #[error("`{path}` has no `{column}` column (is it feedbench's {file}?)")]
    NoColumn {
        path: PathBuf,
        column: &'static str,
        file: &'static str,
    },
    #[error("`{path}` line {line}, column `{column}`: `{value}` is not {expected}")]
    Bad {
        path: PathBuf,
        line: u64,
        column: &'static str,
        value: String,
        expected: &'static str,
    },
}

impl ReadError {
    /// A file is missing (the run is not analysable), rather than damaged.
    pub fn is_missing(&self) -> bool {
        matches!(self, ReadError::Missing(_))
    }
}

pub(crate) struct Table {
    path: PathBuf,
    reader: csv::Reader<std::io::BufReader<std::fs::File>>,
    header: csv::ByteRecord,
    file: &'static str,
}

impl Table {
    pub(crate) fn open(dir: &Path, file: &'static str) -> Result<Table, ReadError> {
        let path = dir.join(file);
        let f = match crate::confine::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ReadError::Missing(path))
            }
            Err(e) => {
                return Err(ReadError::Io {
                    path,
                    message: e.to_string(),
                })
            }
        };
        let mut reader = csv::ReaderBuilder::new()
            .buffer_capacity(1 << 16)
            .from_reader(std::io::BufReader::with_capacity(1 << 16, f));
        let header = reader
            .byte_headers()
            .map_err(|e| ReadError::Io {
                path: path.clone(),
                message: e.to_string(),
            })?
            .clone();
        Ok(Table {
            path,
            reader,
            header,
            file,
        })
    }

    pub(crate) fn column(&self, name: &'static str) -> Result<usize, ReadError> {
        self.optional(name).ok_or_else(|| ReadError::NoColumn {
            path: self.path.clone(),
            column: name,
            file: self.file,
        })
    }

    pub(crate) fn optional(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name.as_bytes())
    }

    /// Calls `row` for every record, with its line.
    pub(crate) fn each(
        &mut self,
        mut row: impl FnMut(&csv::ByteRecord, &Cell<'_>) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        let mut rec = csv::ByteRecord::new();
        loop {
            match self.reader.read_byte_record(&mut rec) {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                Err(e) => {
                    return Err(ReadError::Io {
                        path: self.path.clone(),
                        message: e.to_string(),
                    })
                }
            }
            let cell = Cell {
                path: &self.path,
                line: rec.position().map_or(0, |p| p.line()),
            };
            row(&rec, &cell)?;
        }
    }
}

/// Parses one field, naming the place when it does not.
pub(crate) struct Cell<'a> {
    path: &'a Path,
    line: u64,
}

impl Cell<'_> {
    pub(crate) fn text<'r>(&self, rec: &'r csv::ByteRecord, i: usize) -> &'r str {
        rec.get(i)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
    }

    pub(crate) fn bad(
        &self,
        column: &'static str,
        value: &str,
        expected: &'static str,
    ) -> ReadError {
        ReadError::Bad {
            path: self.path.to_path_buf(),
            line: self.line,
            column,
            value: value.to_string(),
            expected,
        }
    }

    pub(crate) fn int(
        &self,
        rec: &csv::ByteRecord,
        i: usize,
        column: &'static str,
    ) -> Result<i128, ReadError> {
        let t = self.text(rec, i);
        t.parse().map_err(|_| self.bad(column, t, "an integer"))
    }

    pub(crate) fn num(
        &self,
        rec: &csv::ByteRecord,
        i: usize,
        column: &'static str,
    ) -> Result<f64, ReadError> {
        let t = self.text(rec, i);
        t.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| self.bad(column, t, "a number"))
    }

    /// An empty field is `None`.
    pub(crate) fn opt_num(
        &self,
        rec: &csv::ByteRecord,
        i: Option<usize>,
        column: &'static str,
    ) -> Result<Option<f64>, ReadError> {
        match i {
            Some(i) if !self.text(rec, i).is_empty() => self.num(rec, i, column).map(Some),
            _ => Ok(None),
        }
    }

    /// An empty field is `None`; a number below zero is refused as not `expected`.
    pub(crate) fn opt_non_negative(
        &self,
        rec: &csv::ByteRecord,
        i: usize,
        column: &'static str,
        expected: &'static str,
    ) -> Result<Option<f64>, ReadError> {
        match self.opt_num(rec, Some(i), column)? {
            Some(v) if v < 0.0 => Err(self.bad(column, self.text(rec, i), expected)),
            v => Ok(v),
        }
    }
}
