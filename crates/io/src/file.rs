//! Opening files for streams, with the checks every kind shares.
//!
//! [`open_for_read`] refuses directories and files whose size is not a whole
//! number of elements (never silently dropping a tail); [`create_for_write`]
//! creates or truncates a file, adding flags such as `O_DIRECT`. Both count
//! the system calls they make. The rest are small counted wrappers
//! (`read`, `write`, `fsync`, `ftruncate`) the kinds share.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::{Error, ErrorKind, Result, SyscallCounts};

/// Opens `path` read-only with extra `flags` (e.g. `libc::O_DIRECT`) and
/// checks that it is a regular file of a whole number of `element_size`
/// elements. Returns the file and its length in bytes.
pub(crate) fn open_for_read(
    path: &Path,
    element_size: usize,
    flags: i32,
    counts: &mut SyscallCounts,
) -> Result<(File, u64)> {
    counts.open += 1;
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| Error::from_io("open", path, e))?;
    counts.open += 1; // fstat
    let md = f.metadata().map_err(|e| Error::from_io("fstat", path, e))?;
    if md.is_dir() {
        return Err(Error::new(ErrorKind::IsADirectory, path));
    }
    let size = md.len();
    if size % element_size as u64 != 0 {
        return Err(Error::new(ErrorKind::BadSize { size, element_size }, path));
    }
    Ok((f, size))
}

/// Where an output stream writes.
#[derive(Debug, Clone, Copy)]
pub enum Dest<'a> {
    /// A path, created or truncated.
    Path(&'a Path),
    /// A file already open for reading and writing (an
    /// [`crate::AtomicFile`]'s), written from its start through a duplicate
    /// of its descriptor and never reopened by name; the path names it in
    /// messages.
    Open(&'a File, &'a Path),
}

impl Dest<'_> {
    /// The name for messages.
    pub fn name(&self) -> &Path {
        match self {
            Dest::Path(p) | Dest::Open(_, p) => p,
        }
    }
}

/// Creates or truncates `dest` for writing (and reading, which `mmap`
/// needs) with extra `flags` (`O_DIRECT` is the only one a file already
/// open can be given: `fcntl(F_SETFL)`).
pub(crate) fn create_for_write(dest: Dest<'_>, flags: i32, counts: &mut SyscallCounts) -> Result<File> {
    counts.open += 1;
    match dest {
        Dest::Path(path) => OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(flags)
            .open(path)
            .map_err(|e| Error::from_io("open", path, e)),
        Dest::Open(file, name) => {
            let f = file.try_clone().map_err(|e| Error::from_io("dup", name, e))?;
            let io = |e: rustix::io::Errno| Error::from_io("open", name, e.into());
            let fl = rustix::fs::fcntl_getfl(&f).map_err(io)?;
            let direct = rustix::fs::OFlags::DIRECT;
            let want = if flags & libc::O_DIRECT != 0 { fl | direct } else { fl - direct };
            if want != fl {
                rustix::fs::fcntl_setfl(&f, want).map_err(io)?;
            }
            counts.truncate += 1;
            rustix::fs::ftruncate(&f, 0).map_err(|e| Error::from_io("ftruncate", name, e.into()))?;
            rustix::fs::seek(&f, rustix::fs::SeekFrom::Start(0))
                .map_err(|e| Error::from_io("seek", name, e.into()))?;
            Ok(f)
        }
    }
}

/// `read(2)` into `buf`, retrying on `EINTR`; returns bytes read (0 at end).
pub(crate) fn read_retry(f: &File, buf: &mut [u8], counts: &mut SyscallCounts) -> std::io::Result<usize> {
    loop {
        counts.read += 1;
        match rustix::io::read(f, &mut *buf) {
            Ok(n) => return Ok(n),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Writes all of `buf` with `write(2)`, retrying on `EINTR` and short writes.
pub(crate) fn write_all_retry(f: &File, mut buf: &[u8], counts: &mut SyscallCounts) -> std::io::Result<()> {
    while !buf.is_empty() {
        counts.write += 1;
        match rustix::io::write(f, buf) {
            Ok(0) => return Err(std::io::Error::from_raw_os_error(libc::ENOSPC)),
            Ok(n) => buf = &buf[n..],
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// `fsync` when asked, counting it.
pub(crate) fn maybe_sync(f: &File, yes: bool, path: &Path, counts: &mut SyscallCounts) -> Result<()> {
    if yes {
        counts.other += 1;
        f.sync_all().map_err(|e| Error::from_io("fsync", path, e))?;
    }
    Ok(())
}

/// `ftruncate(2)` to `len` bytes, counted as a truncate.
pub(crate) fn ftruncate(f: &File, len: u64, path: &Path, counts: &mut SyscallCounts) -> Result<()> {
    loop {
        counts.truncate += 1;
        match rustix::fs::ftruncate(f, len) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(Error::from_io("ftruncate", path, e.into())),
        }
    }
}

/// The page size, the granularity of `mmap` offsets.
pub(crate) fn page_size() -> usize {
    rustix::param::page_size()
}

/// `n` rounded up to a multiple of `m` (`m` > 0), at least `m`.
pub(crate) fn round_up_at_least(n: usize, m: usize) -> usize {
    n.max(1).div_ceil(m) * m
}
