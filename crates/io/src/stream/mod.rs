//! The element stream interface, dispatch over the six kinds, and the kinds
//! themselves, one module each: `syscall`, `stdio`, `buffered`, `mmap`,
//! `direct` and `uring` (their module docs give each technique and what it
//! costs in system calls).
//!
//! [`InputStream`] and [`OutputStream`] are experiment 1's interface
//! (`open`, `read_next`, `end_of_stream`, `close`; `create`, `write`,
//! `close`), plus bulk calls ([`InputStream::read_into`],
//! [`OutputStream::write_all`]) that the sort uses. [`open_input`] and
//! [`create_output`] pick the kind from a [`StreamConfig`] and return an
//! [`AnyInput`] / [`AnyOutput`], an enum whose `match` per call the compiler
//! keeps cheap and predictable (no virtual call per element).
//!
//! # Contract of an output stream dropped without `close`
//!
//! Dropping an output stream without calling `close` makes a best-effort
//! close: the elements written so far are flushed and the file is trimmed to
//! their exact length, but any error is lost (as with `std::io::BufWriter`).
//! Call `close` to learn whether the data reached the file. `close` is
//! idempotent (a second call returns `Ok`); `write` after `close`, or after a
//! write that failed, returns [`ErrorKind::Closed`](crate::ErrorKind::Closed).
//! After a failed write, `close` releases the file and also returns
//! `Closed` (the first error already said what went wrong). Input streams
//! return `Closed` from every read after `close`.
//!
//! ```no_run
//! use emsort_io::{create_output, open_input, InputStream, OutputStream, StreamConfig, StreamKind};
//! # fn main() -> emsort_io::Result<()> {
//! let cfg = StreamConfig::new(StreamKind::Buffered).block_size(64 << 10);
//! let mut out = create_output::<u32>("numbers.bin".as_ref(), &cfg)?;
//! for x in 0..1000u32 { out.write(x)?; }
//! out.close()?;
//! let mut inp = open_input::<u32>("numbers.bin".as_ref(), &cfg)?;
//! let mut sum = 0u64;
//! while let Some(x) = inp.read_next()? { sum += x as u64; }
//! inp.close()?;
//! # Ok(()) }
//! ```

use std::path::Path;

use crate::file::Dest;
use crate::{Element, Result, StreamConfig, StreamInfo, StreamKind, SyscallCounts};

mod buffered;
mod direct;
mod mmap;
mod stdio;
mod syscall;
mod uring;

pub use buffered::{BufferedInput, BufferedOutput};
pub use direct::{DirectInput, DirectOutput};
pub use mmap::{MmapInput, MmapOutput};
pub use stdio::{StdioInput, StdioOutput};
pub use syscall::{SyscallInput, SyscallOutput};
pub use uring::{UringInput, UringOutput};

/// A stream of elements read from a file, front to back.
pub trait InputStream<T: Element> {
    /// The next element, or `None` at the end of the stream.
    fn read_next(&mut self) -> Result<Option<T>>;

    /// Whether every element has been read.
    fn end_of_stream(&mut self) -> Result<bool>;

    /// Reads up to `buf.len()` elements into `buf` and returns how many; 0
    /// only at the end of the stream (or for an empty `buf`).
    fn read_into(&mut self, buf: &mut [T]) -> Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match self.read_next()? {
                Some(x) => {
                    buf[n] = x;
                    n += 1;
                }
                None => break,
            }
        }
        Ok(n)
    }

    /// Number of elements in the file.
    fn len(&self) -> u64;

    /// Whether the file holds no element.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Releases the file and its buffers; idempotent.
    fn close(&mut self) -> Result<()>;

    /// System calls made so far on the stream's behalf.
    fn syscalls(&self) -> SyscallCounts;

    /// What the stream really does (rounded block size, fallbacks).
    fn info(&self) -> &StreamInfo;
}

/// A stream of elements written to a new file, front to back.
pub trait OutputStream<T: Element> {
    /// Appends one element.
    fn write(&mut self, x: T) -> Result<()>;

    /// Appends every element of `xs`.
    fn write_all(&mut self, xs: &[T]) -> Result<()> {
        for &x in xs {
            self.write(x)?;
        }
        Ok(())
    }

    /// Flushes what is buffered, trims the file to its exact length, syncs
    /// it when the config asks, and closes it; idempotent. Errors (a full
    /// disk, a file size limit) are reported here at the latest.
    fn close(&mut self) -> Result<()>;

    /// System calls made so far on the stream's behalf.
    fn syscalls(&self) -> SyscallCounts;

    /// What the stream really does (rounded block size, fallbacks).
    fn info(&self) -> &StreamInfo;
}

macro_rules! dispatch {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            Self::Syscall($s) => $e,
            Self::Stdio($s) => $e,
            Self::Buffered($s) => $e,
            Self::Mmap($s) => $e,
            Self::Direct($s) => $e,
            Self::Uring($s) => $e,
        }
    };
}

/// An input stream of any kind (see [`open_input`]).
#[allow(missing_docs)]
pub enum AnyInput<T: Element> {
    Syscall(SyscallInput<T>),
    Stdio(StdioInput<T>),
    Buffered(BufferedInput<T>),
    Mmap(MmapInput<T>),
    Direct(DirectInput<T>),
    Uring(UringInput<T>),
}

/// An output stream of any kind (see [`create_output`]).
#[allow(missing_docs)]
pub enum AnyOutput<T: Element> {
    Syscall(SyscallOutput<T>),
    Stdio(StdioOutput<T>),
    Buffered(BufferedOutput<T>),
    Mmap(MmapOutput<T>),
    Direct(DirectOutput<T>),
    Uring(UringOutput<T>),
}

/// Opens `path` for reading as a stream of `T` with the kind `cfg` names.
///
/// Fails with a clear error when the file is missing, is a directory, cannot
/// be read, or its size is not a multiple of `T`'s size.
pub fn open_input<T: Element>(path: &Path, cfg: &StreamConfig) -> Result<AnyInput<T>> {
    Ok(match cfg.kind {
        StreamKind::Syscall => AnyInput::Syscall(SyscallInput::open(path, cfg)?),
        StreamKind::Stdio => AnyInput::Stdio(StdioInput::open(path, cfg)?),
        StreamKind::Buffered => AnyInput::Buffered(BufferedInput::open(path, cfg)?),
        StreamKind::Mmap => AnyInput::Mmap(MmapInput::open(path, cfg)?),
        StreamKind::Direct => AnyInput::Direct(DirectInput::open(path, cfg)?),
        StreamKind::Uring | StreamKind::UringDirect => AnyInput::Uring(UringInput::open(path, cfg)?),
    })
}

/// Creates (or truncates) `path` for writing a stream of `T` with the kind
/// `cfg` names.
pub fn create_output<T: Element>(path: &Path, cfg: &StreamConfig) -> Result<AnyOutput<T>> {
    create_output_in(Dest::Path(path), cfg)
}

/// [`create_output`] into `dest`: a path, or a file already open (written
/// through its descriptor, never reopened by name: an
/// [`crate::AtomicFile`]'s temporary file).
pub fn create_output_in<T: Element>(dest: Dest<'_>, cfg: &StreamConfig) -> Result<AnyOutput<T>> {
    Ok(match cfg.kind {
        StreamKind::Syscall => AnyOutput::Syscall(SyscallOutput::create_in(dest, cfg)?),
        StreamKind::Stdio => AnyOutput::Stdio(StdioOutput::create_in(dest, cfg)?),
        StreamKind::Buffered => AnyOutput::Buffered(BufferedOutput::create_in(dest, cfg)?),
        StreamKind::Mmap => AnyOutput::Mmap(MmapOutput::create_in(dest, cfg)?),
        StreamKind::Direct => AnyOutput::Direct(DirectOutput::create_in(dest, cfg)?),
        StreamKind::Uring | StreamKind::UringDirect => AnyOutput::Uring(UringOutput::create_in(dest, cfg)?),
    })
}

impl<T: Element> InputStream<T> for AnyInput<T> {
    #[inline]
    fn read_next(&mut self) -> Result<Option<T>> {
        dispatch!(self, s => s.read_next())
    }
    fn end_of_stream(&mut self) -> Result<bool> {
        dispatch!(self, s => s.end_of_stream())
    }
    fn read_into(&mut self, buf: &mut [T]) -> Result<usize> {
        dispatch!(self, s => s.read_into(buf))
    }
    fn len(&self) -> u64 {
        dispatch!(self, s => s.len())
    }
    fn close(&mut self) -> Result<()> {
        dispatch!(self, s => s.close())
    }
    fn syscalls(&self) -> SyscallCounts {
        dispatch!(self, s => s.syscalls())
    }
    fn info(&self) -> &StreamInfo {
        dispatch!(self, s => s.info())
    }
}

impl<T: Element> OutputStream<T> for AnyOutput<T> {
    #[inline]
    fn write(&mut self, x: T) -> Result<()> {
        dispatch!(self, s => s.write(x))
    }
    fn write_all(&mut self, xs: &[T]) -> Result<()> {
        dispatch!(self, s => s.write_all(xs))
    }
    fn close(&mut self) -> Result<()> {
        dispatch!(self, s => s.close())
    }
    fn syscalls(&self) -> SyscallCounts {
        dispatch!(self, s => s.syscalls())
    }
    fn info(&self) -> &StreamInfo {
        dispatch!(self, s => s.info())
    }
}
