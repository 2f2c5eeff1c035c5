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
use crate::{Error, Result};

/// A read-only mapping of a whole file (nothing for an empty file).
pub(crate) struct Mapping {
    map: Option<Mmap>,
}

impl Mapping {
    /// Maps `file` of `size` bytes and applies `hint`.
    pub(crate) fn new(file: &std::fs::File, size: u64, hint: Madvise, path: &Path) -> Result<Mapping> {
        if size == 0 {
            return Ok(Mapping { map: None });
        }
        // SAFETY: the mapping is read-only; readers assume nobody truncates
        // their files while open (documented above: a shrunk file raises
        // SIGBUS rather than corrupting memory).
        let map = unsafe { memmap2::MmapOptions::new().len(size as usize).map(file) }
            .map_err(|e| Error::from_io("mmap", path, e))?;
        if hint != Madvise::Normal {
            map.advise(hint.advice()).map_err(|e| Error::from_io("madvise", path, e))?;
        }
        Ok(Mapping { map: Some(map) })
    }

    /// Copies the mapped bytes `[offset, offset + amount)` into `buf`.
    pub(crate) fn copy(&self, offset: u64, amount: usize, buf: &mut [u8]) -> usize {
        let Some(map) = &self.map else { return 0 };
        let (off, n) = clamp(offset, amount, map.len() as u64);
        if n > 0 {
            let off = off as usize;
            buf[..n].copy_from_slice(&map[off..off + n]);
        }
        n
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
        Ok(self.map.as_ref().expect("open").copy(offset, amount, buf))
    }
}
