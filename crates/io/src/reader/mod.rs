//! Readers: byte ranges at any offset, by five techniques (experiment 4).
//!
//! Where an element stream reads a file front to back, a [`Reader`] answers
//! `read_bytes(offset, amount, buf)` at any offset, as the thesis' `IReader`
//! does (the Chalmers thesis, Bäckemo and Olsson, "Minimizing read bottlenecks in
//! I/O bound systems", 2022, §3.2.3): `open`, `is_open`, `close`,
//! `name`, `read_bytes`. Five kinds ([`ReaderKind`]), one file each:
//!
//! | kind       | type               | technique                                                        |
//! |------------|--------------------|------------------------------------------------------------------|
//! | `stream`   | [`StreamReader`]   | `std::io::BufReader` over a `File`, with seek (the thesis' iostream `StreamReader`) |
//! | `mmap`     | [`MmapReader`]     | the whole file mapped once; a read copies out of the mapping (its `MappedReader`) |
//! | `pread`    | [`PreadReader`]    | `pread` straight into the caller's buffer, in pieces of at most B bytes (its `BufferReader`) |
//! | `uring`    | [`UringReader`]    | io_uring, a request split into B-byte pieces with up to Q in flight (its `AsyncReader`) |
//! | `adaptive` | [`AdaptiveReader`] | per request, `mmap`, `pread` or `uring` by the thesis' guidelines and a [`Calibration`] |
//!
//! Open one with [`open_reader`] and a [`ReaderConfig`] (block size B, queue
//! depth Q, madvise hint, the adaptive reader's [`AccessHint`] and
//! [`Calibration`]); it returns an [`AnyReader`].
//!
//! # Contract
//!
//! - `read_bytes(offset, amount, buf)` returns exactly the file's bytes
//!   `[offset, offset + amount)` in `buf[..n]`: `n == amount` inside the
//!   file, fewer at its end, 0 at or past it and for `amount == 0`. `buf`
//!   may be longer than `amount` (the rest is untouched) but not shorter.
//! - Readers assume nobody changes their files while open. [`Reader::len`]
//!   is the size at `open`; `mmap`, `uring` and `adaptive` never read past
//!   it, `stream` and `pread` read up to the end the kernel reports.
//!   Truncating a mapped file under an `mmap` reader raises `SIGBUS`, as
//!   with any mapping.
//! - `open` on the file already open does nothing (the thesis keeps the
//!   handle so the kernel's per-file state survives); `open` on another path
//!   closes the current file first. `close` is idempotent.
//! - Reading a closed reader is [`ErrorKind::Closed`];
//!   every error names the file ([`Error::path`]).
//! - [`Reader::read_batch`] takes many requests and reports each through a
//!   callback as it completes ([`Completion`]); the `uring` and `adaptive`
//!   readers keep up to Q reads in flight, the others serve the requests one
//!   after the other.
//!
//! ```no_run
//! use emsort_io::{open_reader, Reader, ReaderConfig, ReaderKind};
//! # fn main() -> emsort_io::Result<()> {
//! let cfg = ReaderConfig::new(ReaderKind::Pread).block_size(1 << 20);
//! let mut r = open_reader("data.bin".as_ref(), &cfg)?;
//! let mut buf = vec![0u8; 4096];
//! let n = r.read_bytes(123_456, 4096, &mut buf)?;
//! println!("{} read {n} bytes", r.name());
//! r.close()?;
//! # Ok(()) }
//! ```

use std::fs::File;
use std::path::Path;

use crate::{Error, ErrorKind, Result};

pub mod adaptive;
mod ahead;
pub mod calibration;
mod choice;
pub mod config;
mod kind;
pub mod mmap;
pub mod pread;
mod prefetch;
pub mod stream;
pub mod uring;

pub use adaptive::AdaptiveReader;
pub use ahead::CHUNK as DIRECT_CHUNK;
pub use calibration::Calibration;
pub use choice::{Choice, ChoiceCounts, Rule};
pub use config::ReaderConfig;
pub use kind::{AccessHint, Madvise, ReaderKind};
pub use mmap::MmapReader;
pub use pread::PreadReader;
pub use stream::StreamReader;
pub use uring::UringReader;

/// One request of a batch: read `buf.len()` bytes at `offset` into `buf`.
#[derive(Debug)]
pub struct ReadRequest<'a> {
    /// File offset of the first byte.
    pub offset: u64,
    /// Where the bytes go; its length is the amount asked for.
    pub buf: &'a mut [u8],
}

impl<'a> ReadRequest<'a> {
    /// A request for `buf.len()` bytes at `offset`.
    pub fn new(offset: u64, buf: &'a mut [u8]) -> ReadRequest<'a> {
        ReadRequest { offset, buf }
    }
}

/// A finished request of a batch, handed to the caller's callback.
#[derive(Debug)]
pub struct Completion<'b> {
    /// The request's index in the batch.
    pub id: usize,
    /// Bytes read (short at the end of the file, 0 past it), or the error
    /// that failed this request.
    pub result: Result<usize>,
    /// The bytes read (`&buf[..n]`; empty after an error).
    pub data: &'b [u8],
}

/// A reader of byte ranges at any offset (the thesis' `IReader`).
///
/// See the [module docs](self) for the contract every kind keeps.
pub trait Reader: Send {
    /// Opens `path` (nothing to do if it is the file already open; another
    /// file open is closed first).
    fn open(&mut self, path: &Path) -> Result<()>;

    /// Whether a file is open.
    fn is_open(&self) -> bool;

    /// Closes the file (idempotent).
    fn close(&mut self) -> Result<()>;

    /// The reader kind's name (`stream`, `mmap`, `pread`, `uring`, `adaptive`).
    fn name(&self) -> &'static str;

    /// The file open (or last open; empty before the first `open`).
    fn path(&self) -> &Path;

    /// The file's size in bytes when it was opened (0 when closed).
    fn len(&self) -> u64;

    /// Whether the open file is empty (or no file is open).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads the file's bytes `[offset, offset + amount)` into `buf[..amount]`
    /// and returns how many were read: `amount` inside the file, fewer at its
    /// end, 0 at or past it.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than `amount` (a caller's bug, like an index out
    /// of bounds).
    fn read_bytes(&mut self, offset: u64, amount: usize, buf: &mut [u8]) -> Result<usize>;

    /// Reads every request of `reqs` and calls `on_complete` once per request
    /// as it finishes, in any order. A failed read fails only its request
    /// (in [`Completion::result`]); the returned error is for the batch as a
    /// whole (a closed reader, a broken ring).
    ///
    /// This default serves the requests in order with [`Reader::read_bytes`].
    fn read_batch(
        &mut self,
        reqs: &mut [ReadRequest<'_>],
        on_complete: &mut dyn FnMut(Completion<'_>),
    ) -> Result<()> {
        self.check_open()?;
        for (id, r) in reqs.iter_mut().enumerate() {
            let result = self.read_bytes(r.offset, r.buf.len(), r.buf);
            let n = *result.as_ref().unwrap_or(&0);
            on_complete(Completion { id, result, data: &r.buf[..n] });
        }
        Ok(())
    }

    /// `Err(Closed)` unless a file is open.
    fn check_open(&self) -> Result<()> {
        if self.is_open() {
            Ok(())
        } else {
            Err(Error::new(ErrorKind::Closed, self.path()))
        }
    }

    /// For the `adaptive` reader, the technique it used for the last request
    /// (`None` for the other kinds and before the first request).
    fn last_choice(&self) -> Option<Choice> {
        None
    }
}

/// A reader of any kind, as [`open_reader`] returns it.
///
/// An enum rather than a `Box<dyn Reader>` so that callers can reach a
/// kind's own API ([`AnyReader::as_adaptive`]) without downcasting.
// The adaptive variant is the largest (a few hundred bytes): there is one
// reader per open file, so boxing it would save nothing worth an indirection.
#[allow(clippy::large_enum_variant)]
pub enum AnyReader {
    /// See [`StreamReader`].
    Stream(StreamReader),
    /// See [`MmapReader`].
    Mmap(MmapReader),
    /// See [`PreadReader`].
    Pread(PreadReader),
    /// See [`UringReader`].
    Uring(UringReader),
    /// See [`AdaptiveReader`].
    Adaptive(AdaptiveReader),
}

impl AnyReader {
    /// A closed reader of the kind `cfg` names.
    pub fn new(cfg: &ReaderConfig) -> AnyReader {
        match cfg.kind {
            ReaderKind::Stream => AnyReader::Stream(StreamReader::new(cfg)),
            ReaderKind::Mmap => AnyReader::Mmap(MmapReader::new(cfg)),
            ReaderKind::Pread => AnyReader::Pread(PreadReader::new(cfg)),
            ReaderKind::Uring => AnyReader::Uring(UringReader::new(cfg)),
            ReaderKind::Adaptive => AnyReader::Adaptive(AdaptiveReader::new(cfg)),
        }
    }

    /// The kind.
    pub fn kind(&self) -> ReaderKind {
        match self {
            AnyReader::Stream(_) => ReaderKind::Stream,
            AnyReader::Mmap(_) => ReaderKind::Mmap,
            AnyReader::Pread(_) => ReaderKind::Pread,
            AnyReader::Uring(_) => ReaderKind::Uring,
            AnyReader::Adaptive(_) => ReaderKind::Adaptive,
        }
    }

    /// The adaptive reader, for its statistics ([`AdaptiveReader::counts`]).
    pub fn as_adaptive(&self) -> Option<&AdaptiveReader> {
        match self {
            AnyReader::Adaptive(r) => Some(r),
            _ => None,
        }
    }

    /// The adaptive reader, mutably (e.g. for [`AdaptiveReader::swap_flag`]).
    pub fn as_adaptive_mut(&mut self) -> Option<&mut AdaptiveReader> {
        match self {
            AnyReader::Adaptive(r) => Some(r),
            _ => None,
        }
    }

    fn inner(&self) -> &dyn Reader {
        match self {
            AnyReader::Stream(r) => r,
            AnyReader::Mmap(r) => r,
            AnyReader::Pread(r) => r,
            AnyReader::Uring(r) => r,
            AnyReader::Adaptive(r) => r,
        }
    }

    fn inner_mut(&mut self) -> &mut dyn Reader {
        match self {
            AnyReader::Stream(r) => r,
            AnyReader::Mmap(r) => r,
            AnyReader::Pread(r) => r,
            AnyReader::Uring(r) => r,
            AnyReader::Adaptive(r) => r,
        }
    }
}

impl Reader for AnyReader {
    fn open(&mut self, path: &Path) -> Result<()> {
        self.inner_mut().open(path)
    }
    fn is_open(&self) -> bool {
        self.inner().is_open()
    }
    fn close(&mut self) -> Result<()> {
        self.inner_mut().close()
    }
    fn name(&self) -> &'static str {
        self.inner().name()
    }
    fn path(&self) -> &Path {
        self.inner().path()
    }
    fn len(&self) -> u64 {
        self.inner().len()
    }
    fn read_bytes(&mut self, offset: u64, amount: usize, buf: &mut [u8]) -> Result<usize> {
        self.inner_mut().read_bytes(offset, amount, buf)
    }
    fn read_batch(
        &mut self,
        reqs: &mut [ReadRequest<'_>],
        on_complete: &mut dyn FnMut(Completion<'_>),
    ) -> Result<()> {
        self.inner_mut().read_batch(reqs, on_complete)
    }
    fn last_choice(&self) -> Option<Choice> {
        self.inner().last_choice()
    }
}

/// Opens `path` with a reader of the kind and parameters in `cfg`.
pub fn open_reader(path: &Path, cfg: &ReaderConfig) -> Result<AnyReader> {
    let mut r = AnyReader::new(cfg);
    r.open(path)?;
    Ok(r)
}

/// Opens `path` read-only and checks that it is not a directory; returns
/// the file and its size.
pub(crate) fn open_file(path: &Path) -> Result<(File, u64)> {
    let f = File::open(path).map_err(|e| Error::from_io("open", path, e))?;
    let md = f.metadata().map_err(|e| Error::from_io("fstat", path, e))?;
    if md.is_dir() {
        return Err(Error::new(ErrorKind::IsADirectory, path));
    }
    Ok((f, md.len()))
}

/// The part of `[offset, offset + amount)` inside a file of `size` bytes, as
/// (offset, length); length 0 at or past the end.
pub(crate) fn clamp(offset: u64, amount: usize, size: u64) -> (u64, usize) {
    if offset >= size {
        return (offset, 0);
    }
    (offset, (size - offset).min(amount as u64) as usize)
}

/// Panics unless `buf` holds `amount` bytes (the contract of `read_bytes`).
#[track_caller]
pub(crate) fn check_buf(amount: usize, buf: &[u8]) {
    assert!(buf.len() >= amount, "read_bytes: buffer of {} bytes is shorter than amount {amount}", buf.len());
}

/// What an open-or-reuse call should do for a reader at `current` (open or
/// not) asked to open `path`.
pub(crate) enum OpenAction {
    /// The file is already open.
    Keep,
    /// Open it (after closing whatever is open).
    Open,
}

/// The thesis' `openNewFile`: keep the file when it is the one open.
pub(crate) fn open_action(is_open: bool, current: &Path, path: &Path) -> OpenAction {
    if is_open && current == path {
        OpenAction::Keep
    } else {
        OpenAction::Open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamp_ranges() {
        assert_eq!(clamp(0, 10, 5), (0, 5));
        assert_eq!(clamp(5, 10, 5), (5, 0));
        assert_eq!(clamp(6, 10, 5), (6, 0));
        assert_eq!(clamp(2, 2, 5), (2, 2));
        assert_eq!(clamp(u64::MAX, usize::MAX, 5), (u64::MAX, 0));
        assert_eq!(clamp(0, usize::MAX, u64::MAX), (0, usize::MAX));
    }
}
