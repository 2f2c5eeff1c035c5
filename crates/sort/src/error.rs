//! The sort's error type.
//!
//! [`SortError`] is either an I/O layer [`emsort_io::Error`] (a missing
//! input, a bad size, a full disk, an interrupt …, with the path concerned)
//! or a problem with the [`SortPlan`](crate::SortPlan) itself, such as a
//! memory budget too small for the fan-in and block size, which carries the
//! minimum it needs so the caller can say what would work.

use std::fmt;

use emsort_io::format_size;

/// What went wrong in a sort.
#[derive(Debug)]
#[non_exhaustive]
pub enum SortError {
    /// The I/O layer failed (its error names the file and the kind).
    Io(emsort_io::Error),
    /// The memory M cannot hold the buffers the plan needs.
    MemoryTooSmall {
        /// The memory given, in bytes.
        memory: u64,
        /// The least memory that works for this fan-in and block size.
        minimum: u64,
        /// The fan-in d.
        fan_in: usize,
        /// The block size B in bytes.
        block_size: usize,
        /// F: the bytes one stream buffers (B as the stream kind rounds
        /// it, × Q for `uring`).
        stream_buffer: u64,
    },
    /// The memory M cannot hold what DSM or SRM needs on D disks (for SRM:
    /// m ≥ 2R + D input blocks with R ≥ 2, two output buffers of D·B and
    /// forecasting buffers; for DSM: two logical blocks of D·B per run for
    /// R ≥ 2 and two for the output), or what run formation needs.
    MethodMemoryTooSmall {
        /// The method (`dsm` or `srm`).
        method: crate::method::MethodKind,
        /// The memory given, in bytes.
        memory: u64,
        /// The least memory that works for this method, D and B.
        minimum: u64,
        /// D, the number of disks.
        disks: usize,
        /// The block size B in bytes.
        block_size: usize,
    },
    /// A parameter is out of range (the message says which and why).
    BadPlan(String),
    /// The input is not a regular file (a pipe, a device) and was given to
    /// [`sort_file`](crate::sort_file), which must know its size; [`sort`](crate::sort)
    /// spools such inputs first.
    NotAFile(std::path::PathBuf),
}

impl SortError {
    /// The I/O error behind this one, if any.
    pub fn io(&self) -> Option<&emsort_io::Error> {
        match self {
            SortError::Io(e) => Some(e),
            _ => None,
        }
    }

    /// Turns this error into the I/O error behind it, or gives it back.
    pub fn into_io(self) -> Result<emsort_io::Error, SortError> {
        match self {
            SortError::Io(e) => Ok(e),
            other => Err(other),
        }
    }
}

impl From<emsort_io::Error> for SortError {
    fn from(e: emsort_io::Error) -> SortError {
        SortError::Io(e)
    }
}

impl fmt::Display for SortError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SortError::Io(e) => write!(f, "{e}"),
            SortError::MemoryTooSmall { memory, minimum, fan_in, block_size, stream_buffer } => {
                let f_note = if *stream_buffer == *block_size as u64 {
                    String::new()
                } else {
                    format!(" (streams of {} each)", format_size(*stream_buffer))
                };
                write!(
                    f,
                    "memory {} ({memory} bytes) is too small: fan-in d = {fan_in} with blocks of B = {}{f_note} \
                     needs at least {} ({minimum} bytes) for d + 1 stream buffers and run formation; \
                     give more memory (-S), a smaller fan-in (-d) or a smaller block size",
                    format_size(*memory),
                    format_size(*block_size as u64),
                    format_size(*minimum),
                )
            }
            SortError::MethodMemoryTooSmall { method, memory, minimum, disks, block_size } => {
                let needs = match method {
                    crate::method::MethodKind::Dsm => {
                        "two logical blocks of D·B per run for a merge order R ≥ 2 and two for the output"
                    }
                    _ => {
                        "m ≥ 2R + D input blocks with a merge order R ≥ 2, two output buffers of D·B \
                         and the forecasting buffers"
                    }
                };
                write!(
                    f,
                    "memory {} ({memory} bytes) is too small: {method} on D = {disks} disk(s) with blocks of B = {} \
                     needs at least {} ({minimum} bytes) for {needs}, and for run formation; \
                     give more memory (-S), fewer disks or a smaller block size",
                    format_size(*memory),
                    format_size(*block_size as u64),
                    format_size(*minimum),
                )
            }
            SortError::BadPlan(msg) => f.write_str(msg),
            SortError::NotAFile(p) => {
                write!(f, "{}: not a regular file (pipes and devices must be read as a stream)", p.display())
            }
        }
    }
}

impl std::error::Error for SortError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // Transparent: the I/O error's own message is already ours.
            SortError::Io(e) => std::error::Error::source(e),
            _ => None,
        }
    }
}
