//! The I/O layer's error type.
//!
//! [`Error`] carries the path it concerns and an [`ErrorKind`] that tells
//! callers (and `main`, which maps kinds to exit codes) what went wrong
//! without parsing messages: a missing file, a directory given as a file,
//! a file whose size is not a whole number of elements, a full disk, io_uring
//! being unavailable, and plain system errors with the operation that failed.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A specialized `Result` for the I/O layer.
pub type Result<T> = std::result::Result<T, Error>;

/// An error of the I/O layer: what went wrong and on which file.
#[derive(Debug)]
pub struct Error(Box<Inner>);

#[derive(Debug)]
struct Inner {
    kind: ErrorKind,
    path: PathBuf,
    source: Option<io::Error>,
}

/// What went wrong, as a value callers can match on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file does not exist.
    NotFound,
    /// A directory was given where a file was expected.
    IsADirectory,
    /// The process may not read or write the path.
    PermissionDenied,
    /// The file's size is not a whole number of elements.
    BadSize {
        /// The file's size in bytes.
        size: u64,
        /// The element size in bytes.
        element_size: usize,
    },
    /// No space left on the device (`ENOSPC`, `EDQUOT`).
    DiskFull,
    /// The file would exceed the process's file size limit (`EFBIG`, `RLIMIT_FSIZE`).
    FileTooLarge,
    /// The output exists and cannot be replaced by a new file: a device, a
    /// FIFO or a socket, or a file whose owner this user cannot give to a
    /// new file ([`crate::OutputTarget`] writes into such outputs instead).
    NotReplaceable,
    /// io_uring cannot be used here (kernel without it, disabled by
    /// `io_uring_disabled`, or refused by a seccomp filter).
    UringUnavailable,
    /// The stream was used after `close` or after an earlier error.
    Closed,
    /// The work was cancelled (Ctrl-C, SIGTERM) before it finished.
    Interrupted,
    /// No memory for what the work needs (a thread the kernel refused
    /// under `ulimit -v`): GNU sort's "memory exhausted".
    OutOfMemory,
    /// A configuration file (e.g. the readers' calibration) is malformed.
    BadConfig {
        /// The line at fault (1-based; 0 for the file as a whole).
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The input is malformed where its format is parsed (a CSV record
    /// whose quoted field never closes).
    BadInput {
        /// The line the malformed item starts on (1-based).
        line: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A program the sort runs (GNU sort's `--compress-program`) could
    /// not be started, or it failed; the path is the program, the text
    /// says what happened.
    Program(String),
    /// A file the sort wrote itself reads back damaged (a compressed
    /// temporary run cut short, or whose checksum does not match); the
    /// text says what is wrong. Never a wrong result: the sort stops.
    Corrupt(String),
    /// Any other system error; the string names the operation (`read`, `mmap`, …).
    Io(&'static str),
}

impl Error {
    /// Makes an error of `kind` about `path`.
    pub fn new(kind: ErrorKind, path: impl AsRef<Path>) -> Error {
        Error(Box::new(Inner { kind, path: path.as_ref().to_path_buf(), source: None }))
    }

    /// Classifies a system error from operation `op` on `path`: `ENOENT`,
    /// `EISDIR`, `EACCES`/`EPERM`, `ENOSPC`/`EDQUOT` and `EFBIG` get their own
    /// kinds, everything else becomes [`ErrorKind::Io`].
    pub fn from_io(op: &'static str, path: impl AsRef<Path>, err: io::Error) -> Error {
        let kind = match err.raw_os_error() {
            Some(libc::ENOENT) => ErrorKind::NotFound,
            Some(libc::EISDIR) => ErrorKind::IsADirectory,
            Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => ErrorKind::PermissionDenied,
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => ErrorKind::DiskFull,
            Some(libc::EFBIG) => ErrorKind::FileTooLarge,
            _ => ErrorKind::Io(op),
        };
        Error(Box::new(Inner { kind, path: path.as_ref().to_path_buf(), source: Some(err) }))
    }

    /// Makes an error of `kind` about `path` that keeps the system error
    /// behind it (e.g. the `ENOSYS` that made io_uring unavailable).
    pub(crate) fn with_source(kind: ErrorKind, path: impl AsRef<Path>, err: io::Error) -> Error {
        Error(Box::new(Inner { kind, path: path.as_ref().to_path_buf(), source: Some(err) }))
    }

    /// Classifies a raw `errno` value from operation `op`, as [`Error::from_io`].
    pub(crate) fn from_errno(op: &'static str, path: impl AsRef<Path>, errno: i32) -> Error {
        // An error flag without a saved errno should not happen; EIO is the
        // honest "something failed below us".
        let errno = if errno == 0 { libc::EIO } else { errno };
        Error::from_io(op, path, io::Error::from_raw_os_error(errno))
    }

    /// The `errno` behind this error, if it came from a system call.
    pub fn raw_os_error(&self) -> Option<i32> {
        self.0.source.as_ref().and_then(|e| e.raw_os_error())
    }

    /// The system error when it adds to what the kind says: not the
    /// `errno` a kind stands for (`ENOENT`, `EISDIR`, `EACCES`, `ENOSPC`,
    /// `EFBIG`), which would only repeat it ("permission denied: Permission
    /// denied (os error 13)"), but `EROFS` behind `PermissionDenied` or
    /// `EDQUOT` behind `DiskFull`.
    fn extra_source(&self) -> Option<&io::Error> {
        let src = self.0.source.as_ref()?;
        let says_it_all = match self.0.kind {
            ErrorKind::NotFound | ErrorKind::IsADirectory => true,
            ErrorKind::PermissionDenied => {
                matches!(src.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM))
            }
            ErrorKind::DiskFull => src.raw_os_error() == Some(libc::ENOSPC),
            ErrorKind::FileTooLarge => src.raw_os_error() == Some(libc::EFBIG),
            _ => false,
        };
        (!says_it_all).then_some(src)
    }

    /// The same error about another path (e.g. `<standard input>` instead
    /// of the file it was spooled to).
    pub fn with_path(mut self, path: impl AsRef<Path>) -> Error {
        self.0.path = path.as_ref().to_path_buf();
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// The file the error concerns.
    pub fn path(&self) -> &Path {
        &self.0.path
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.0.path.display();
        match &self.0.kind {
            ErrorKind::NotFound => write!(f, "{p}: no such file")?,
            ErrorKind::IsADirectory => write!(f, "{p}: is a directory, not a file")?,
            ErrorKind::PermissionDenied => write!(f, "{p}: permission denied")?,
            ErrorKind::BadSize { size, element_size } => write!(
                f,
                "{p}: size {size} bytes is not a multiple of the element size {element_size} \
                 ({} trailing bytes)",
                size % *element_size as u64
            )?,
            ErrorKind::DiskFull => write!(f, "{p}: no space left on device")?,
            ErrorKind::FileTooLarge => {
                write!(f, "{p}: file size limit exceeded (RLIMIT_FSIZE, `ulimit -f`)")?
            }
            ErrorKind::NotReplaceable => {
                write!(f, "{p}: is not a regular file this user can replace (a device, FIFO or socket, or another owner's file)")?
            }
            ErrorKind::UringUnavailable => write!(
                f,
                "{p}: io_uring is unavailable on this system (kernel support missing, \
                 disabled by /proc/sys/kernel/io_uring_disabled, or blocked by seccomp); \
                 use another stream kind"
            )?,
            ErrorKind::Closed => write!(f, "{p}: stream used after close or after an error")?,
            ErrorKind::Interrupted => write!(f, "{p}: interrupted")?,
            ErrorKind::OutOfMemory => write!(f, "{p}: memory exhausted")?,
            ErrorKind::BadConfig { line: 0, reason } => write!(f, "{p}: {reason}")?,
            ErrorKind::BadConfig { line, reason } => write!(f, "{p}:{line}: {reason}")?,
            ErrorKind::BadInput { line, reason } => write!(f, "{p}:{line}: {reason}")?,
            ErrorKind::Program(what) | ErrorKind::Corrupt(what) => write!(f, "{p}: {what}")?,
            ErrorKind::Io(op) => write!(f, "{p}: {op} failed")?,
        }
        if let Some(src) = self.extra_source() {
            write!(f, ": {src}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    /// The system error, except where the kind's message says it all
    /// (`ENOENT` for `NotFound`, `EACCES` for `PermissionDenied` …), so a
    /// printed chain does not repeat itself.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.extra_source().map(|e| e as _)
    }
}
