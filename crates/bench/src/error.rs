//! The harness's error type.
//!
//! [`Error`] says what went wrong in terms of the experiment: a bad line in a
//! parameter file (with the file and line), a campaign that cannot run here
//! (not enough disk or memory, `drop_caches` not writable), a run whose data
//! did not read back as written, or a file-system failure. File-system
//! failures carry an [`emsort_io::Error`] as their source, so the binary maps
//! them to the same exit codes as the rest of emsort (a full disk is an I/O
//! failure, a missing parameter file is bad input).

use std::path::PathBuf;

/// A specialized `Result` for the harness.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong while preparing, running or reporting a campaign.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter file (or a command-line list) could not be parsed.
    #[error("{}:{line}: {msg}", path.display())]
    Params {
        /// The parameter file (`<command line>` for flags).
        path: PathBuf,
        /// The line, counted from 1.
        line: usize,
        /// What is wrong with it.
        msg: String,
    },
    /// The campaign cannot run as described (empty, too much memory asked,
    /// an unavailable cache method, an output directory already used).
    #[error("{0}")]
    Campaign(String),
    /// The work directory's file system has too little free space for the
    /// files a point needs.
    #[error("not enough free space for {what}: need {need} bytes, {avail} available")]
    DiskSpace {
        /// The files that need the space (e.g. `k=4 N=1e8 (4 files)`).
        what: String,
        /// Bytes needed.
        need: u64,
        /// Bytes available to this user.
        avail: u64,
        /// A [`DiskFull`](emsort_io::ErrorKind::DiskFull) error on the work
        /// directory, so callers classify this as an I/O failure.
        #[source]
        source: emsort_io::Error,
    },
    /// A read run did not read back what the write wrote.
    #[error(
        "{point}: read back sum {got} over {elements} elements, expected {expected}: \
         the stream returned wrong data"
    )]
    WrongData {
        /// The point (`buffered read k=4 N=1e6 B=64K`).
        point: String,
        /// Sum of the values read (wrapping).
        got: u64,
        /// Sum of the values written (wrapping).
        expected: u64,
        /// Number of elements read.
        elements: u64,
    },
    /// A stream failed during a run.
    #[error("{point} (rep {rep})")]
    Run {
        /// The point being measured.
        point: String,
        /// The repetition, counted from 1.
        rep: u32,
        /// The stream's error.
        #[source]
        source: emsort_io::Error,
    },
    /// A file or directory of the harness itself (CSV, JSON, plot, work
    /// directory) could not be read or written.
    #[error(transparent)]
    Io(#[from] emsort_io::Error),
    /// A CSV file is malformed (not an I/O failure).
    #[error("{}: {source}", path.display())]
    Csv {
        /// The CSV file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: csv::Error,
    },
    /// Drawing a plot failed.
    #[error("{}: drawing the plot failed: {msg}", path.display())]
    Plot {
        /// The SVG file.
        path: PathBuf,
        /// The drawing backend's message.
        msg: String,
    },
}

impl Error {
    /// Wraps a CSV error on `path`, turning its I/O failures into
    /// [`emsort_io::Error`]s (so a full disk stays a full disk).
    pub(crate) fn csv(op: &'static str, path: &std::path::Path, e: csv::Error) -> Error {
        if e.is_io_error() {
            if let csv::ErrorKind::Io(io) = e.into_kind() {
                return Error::Io(emsort_io::Error::from_io(op, path, io));
            }
            unreachable!("is_io_error() implies ErrorKind::Io");
        }
        Error::Csv { path: path.to_path_buf(), source: e }
    }

    /// Wraps a `std::io::Error` from operation `op` on `path`.
    pub(crate) fn io(op: &'static str, path: &std::path::Path, e: std::io::Error) -> Error {
        Error::Io(emsort_io::Error::from_io(op, path, e))
    }
}
