//! The `mmap` reader: the whole file mapped once, reads copy out of it.
//!
//! As the thesis' `MappedReader` (§3.2.4.2):
//!
//! 1. `open` maps the whole file read-only and shared (`memmap2`) and gives
//!    the mapping the configured [`Madvise`] hint. An empty
//!    file is not mapped (a zero-length mapping is invalid).
//! 2. `read_bytes` copies `[offset, offset + amount) ∩ [0, size)` from the
//!    mapping into `buf`. The copy touches the pages, so the kernel pages
//!    them in: on Linux a fault reads around the faulting page (up to the
//!    device's `read_ahead_kb`, unless the hint is `random`) and maps the
//!    neighbouring cached pages too (fault-around, 64 KiB by default), where
//!    Windows paged in fixed 32 KiB chunks (§4.3).
//! 3. `close` unmaps.
//!
//! Mapping costs one `mmap` per file, whatever its size; no read is a system
//! call. The price is a page fault per page not yet mapped, and pages the
//! kernel evicts late under memory pressure (§4.4.2.4), which is why the
//! `adaptive` reader avoids `mmap` for files larger than memory.
//!
//! The file must not shrink while mapped: touching a page past its new end
//! raises `SIGBUS` (readers assume nobody changes their files).

use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::{check_buf, clamp, open_action, open_file, Madvise, OpenAction, Reader, ReaderConfig};
use crate::sigbus::Guarded;
use crate::{Error, ErrorKind, Result};

/// A read-only mapping of a whole file (nothing for an empty file).
pub(crate) struct Mapping {
    map: Option<Mmap>,
    /// Listed with the `SIGBUS` guard: a file that shrinks under the
    /// mapping is an error, not a crash ([`crate::sigbus`]).
    guard: Option<Guarded>,
    path: PathBuf,
}

impl Mapping {
    /// Maps `file` of `size` bytes and applies `hint`.
    pub(crate) fn new(file: &std::fs::File, size: u64, hint: Madvise, path: &Path) -> Result<Mapping> {
        if size == 0 {
            return Ok(Mapping { map: None, guard: None, path: path.to_path_buf() });
        }
        // SAFETY: the mapping is read-only; a file truncated under it raises
        // SIGBUS on access, which the guard turns into an error.
        let map = unsafe { memmap2::MmapOptions::new().len(size as usize).map(file) }
            .map_err(|e| Error::from_io("mmap", path, e))?;
        if hint != Madvise::Normal {
            map.advise(hint.advice()).map_err(|e| Error::from_io("madvise", path, e))?;
        }
        let guard = Some(Guarded::map(map.as_ptr(), map.len()));
        Ok(Mapping { map: Some(map), guard, path: path.to_path_buf() })
    }

    /// Copies the mapped bytes `[offset, offset + amount)` into `buf`; an
    /// error if the file shrank under the mapping.
    pub(crate) fn copy(&self, offset: u64, amount: usize, buf: &mut [u8]) -> Result<usize> {
        let Some(map) = &self.map else { return Ok(0) };
        let (off, n) = clamp(offset, amount, map.len() as u64);
        if n > 0 {
            let off = off as usize;
            buf[..n].copy_from_slice(&map[off..off + n]);
        }
        if self.guard.as_ref().is_some_and(Guarded::faulted) {
            return Err(Error::new(ErrorKind::Io("read (the file shrank while it was mapped)"), &self.path));
        }
        Ok(n)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // Unlisted before the mapping goes.
        self.guard = None;
    }
}

/// Reader of the `mmap` kind.
pub struct MmapReader {
    path: PathBuf,
    hint: Madvise,
    map: Option<Mapping>,
    size: u64,
}

impl MmapReader {
    /// A closed reader that will give its mappings `cfg.madvise`.
    pub fn new(cfg: &ReaderConfig) -> MmapReader {
        MmapReader { path: PathBuf::new(), hint: cfg.madvise, map: None, size: 0 }
    }

    /// The `madvise` hint in use.
    pub fn madvise(&self) -> Madvise {
        self.hint
    }
}

impl Reader for MmapReader {
    fn open(&mut self, path: &Path) -> Result<()> {
        if let OpenAction::Keep = open_action(self.is_open(), &self.path, path) {
            return Ok(());
        }
        self.close()?;
        self.path = path.to_path_buf();
        // The descriptor is not needed once mapped: the mapping holds the file.
        let (file, size) = open_file(path)?;
        self.map = Some(Mapping::new(&file, size, self.hint, path)?);
        self.size = size;
        Ok(())
    }

    fn is_open(&self) -> bool {
        self.map.is_some()
    }

    fn close(&mut self) -> Result<()> {
        self.map = None;
        self.size = 0;
        Ok(())
    }

    fn name(&self) -> &'static str {
        "mmap"
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn len(&self) -> u64 {
        self.size
    }

    fn read_bytes(&mut self, offset: u64, amount: usize, buf: &mut [u8]) -> Result<usize> {
        check_buf(amount, buf);
        self.check_open()?;
        self.map.as_ref().expect("open").copy(offset, amount, buf)
    }
}
