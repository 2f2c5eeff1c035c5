//! emsort's I/O layer.
//!
//! Everything that touches a file goes through this crate:
//!
//! - **Element streams** ([`InputStream`], [`OutputStream`]), six kinds
//!   ([`StreamKind`]), each really its technique: a system call per element
//!   (`syscall`), libc's `FILE` (`stdio`), an own buffer of B bytes
//!   (`buffered`), `mmap` windows of B bytes (`mmap`), `O_DIRECT` with aligned
//!   buffers (`direct`) and io_uring with Q requests in flight (`uring`).
//!   Open one with [`open_input`] / [`create_output`] and a [`StreamConfig`].
//!   Each stream counts its own system calls ([`SyscallCounts`]).
//! - **Readers** ([`Reader`]): byte ranges at any offset, five kinds
//!   ([`ReaderKind`]): `stream` (`BufReader` with seek), `mmap` (the whole
//!   file mapped), `pread` (blocks of B bytes), `uring` (io_uring, Q blocks in
//!   flight, with a batch API) and `adaptive` (per request by the guidelines
//!   of the Chalmers thesis and a [`Calibration`]). Open one with
//!   [`open_reader`] and a [`ReaderConfig`].
//! - **Aligned buffers** ([`AlignedBuf`]): zeroed, growable, aligned to a
//!   chosen power of two (the device's for `O_DIRECT`, 8 for the sort's
//!   buffers).
//! - **Resource usage** ([`rusage`]): `getrusage` of the process, a thread
//!   or the children, and `wait4`'s usage of one child.
//! - **Cache control** ([`cache`]): dropping the page cache or evicting one
//!   file, for cold-cache measurements.
//! - **Sizes** ([`parse_size`], [`format_size`]): `64K`, `1M`, … as GNU
//!   `sort -S` takes them.
//! - **Nothing lost**: outputs written beside their target and renamed
//!   when complete, keeping the target's mode, owner and attributes
//!   ([`AtomicFile`]; [`WriteBack`] hands a page-cache output to the disk
//!   as it is written, so the commit's `fsync` is short); outputs that
//!   are devices or FIFOs written into ([`OutputTarget`]); inputs of
//!   unknown size read to their end ([`input_size`]); temporary
//!   directories ([`TempDir`]) and files that the next run removes when
//!   their process was killed ([`temp`]).
//!
//! Errors are [`Error`] values with an [`ErrorKind`] and the path concerned.
//!
//! ```no_run
//! use emsort_io::{create_output, InputStream, OutputStream, StreamConfig, StreamKind};
//! # fn main() -> emsort_io::Result<()> {
//! let cfg = StreamConfig::new(StreamKind::Mmap).block_size(1 << 20);
//! let mut out = create_output::<u32>("x.bin".as_ref(), &cfg)?;
//! out.write(42)?;
//! out.close()?;
//! println!("{}", out.syscalls());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod atomic;
mod buf;
pub mod cache;
mod config;
mod counts;
pub mod device;
pub mod disks;
mod element;
mod error;
mod file;
mod memory;
mod place;
pub mod progress;
pub mod reader;
pub mod rusage;
pub mod sigbus;
mod size;
mod stream;
mod target;
pub mod temp;
#[cfg(any(test, feature = "test-util"))]
pub mod test_util;
mod threads;
mod uring;

pub use atomic::{resolve_links, AtomicFile, WriteBack};
pub use buf::AlignedBuf;
pub use config::{StreamConfig, StreamInfo, StreamKind};
pub use counts::SyscallCounts;
pub use element::{as_bytes, as_bytes_mut, from_bytes, Element};
pub use error::{Error, ErrorKind, Result};
pub use file::Dest;
pub use memory::{meminfo, self_status};
pub use place::{Found, Place};
pub use progress::{NoProgress, Progress};
pub use reader::{
    open_reader, AccessHint, AdaptiveReader, AnyReader, Calibration, Choice, ChoiceCounts, Completion,
    Madvise, MmapReader, PreadReader, ReadRequest, Reader, ReaderConfig, ReaderKind, Rule, StreamReader,
    UringReader,
};
pub use size::{format_size, parse_count, parse_size};
pub use stream::{
    create_output, create_output_in, open_input, AnyInput, AnyOutput, BufferedInput, BufferedOutput,
    DirectInput, DirectOutput, InputStream, MmapInput, MmapOutput, OutputStream, StdioInput, StdioOutput,
    SyscallInput, SyscallOutput, UringInput, UringOutput,
};
pub use target::{input_size, open_into, write_into, IntoKind, OutputTarget};
pub use temp::TempDir;
pub use threads::spawn_scoped;
/// Why this process may not use io_uring (`None` when it may).
pub use uring::unavailable as uring_unavailable;
