//! `raw.csv` files: written a row at a time and flushed after each, so a
//! crash or Ctrl-C keeps every finished run; read back whole to make the
//! summary and the plots. Shared by every campaign; each names its row type.

use std::fs::File;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{Error, Result};

/// Writes rows of type `R` to a CSV file, flushing after each.
pub struct RawWriter<R> {
    path: PathBuf,
    wtr: csv::Writer<File>,
    _row: PhantomData<fn(&R)>,
}

impl<R: Serialize> RawWriter<R> {
    /// Creates `path` (which must not exist yet); the header comes with the
    /// first row.
    pub fn create(path: &Path) -> Result<RawWriter<R>> {
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io("create", path, e))?;
        Ok(RawWriter { path: path.to_path_buf(), wtr: csv::Writer::from_writer(file), _row: PhantomData })
    }

    /// Appends one row and flushes it to the file.
    pub fn write(&mut self, row: &R) -> Result<()> {
        self.wtr.serialize(row).map_err(|e| Error::csv("write", &self.path, e))?;
        self.wtr.flush().map_err(|e| Error::io("write", &self.path, e))
    }
}

/// Reads every row of a CSV file written by a [`RawWriter`].
pub fn read_rows<R: DeserializeOwned>(path: &Path) -> Result<Vec<R>> {
    let mut rdr = csv::Reader::from_path(path).map_err(|e| Error::csv("open", path, e))?;
    rdr.deserialize().map(|r| r.map_err(|e| Error::csv("read", path, e))).collect()
}

/// Writes `rows` to a new CSV file at `path` (replacing it), with a header
/// from the row type: every campaign's `summary.csv`.
pub fn write_rows<R: Serialize>(path: &Path, rows: &[R]) -> Result<()> {
    let mut w = csv::Writer::from_path(path).map_err(|e| Error::csv("create", path, e))?;
    for r in rows {
        w.serialize(r).map_err(|e| Error::csv("write", path, e))?;
    }
    w.flush().map_err(|e| Error::io("write", path, e))
}
