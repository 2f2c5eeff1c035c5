//! The `mmap` kind: a window of W bytes of the file mapped at a time.
//!
//! W is B rounded up to a multiple of the page size (at least one page).
//! Elements are powers of two no larger than 4096 bytes, so they divide the
//! page size and a window never splits an element. Elements are copied in
//! and out of the mapping; the kernel moves pages between the page cache and
//! the disk.
//!
//! # Input
//!
//! ```text
//! file  |<--- W --->|<--- W --->|<--- W --->|<- rest ->|
//!        window 0    window 1    window 2    window 3 (mapped length = rest)
//! ```
//!
//! 1. At open nothing is mapped (an empty file is never mapped).
//! 2. When the current window is used up, `munmap` it and `mmap` the next one,
//!    `[off, off + W) ∩ [0, size)`, read-only and `MAP_SHARED`.
//! 3. `close` unmaps the last window.
//!
//! Reading a file of S bytes costs ⌈S/W⌉ `mmap` and as many `munmap` calls
//! and no `read` at all.
//!
//! # Output
//!
//! 1. When a window is full (or at the first write), `munmap` it, grow the
//!    file by one window with `fallocate(fd, 0, off, W)` and map
//!    `[off, off + W)` read-write, `MAP_SHARED`.
//! 2. `close` unmaps the window, trims the file with `ftruncate` to the exact
//!    number of bytes written, `fsync`s when asked and closes.
//!
//! The file grows with `fallocate`, not `ftruncate`: `ftruncate` would leave
//! a sparse hole, and on a full disk touching a page of the hole kills the
//! process with `SIGBUS`. `fallocate` reserves the blocks first and fails
//! cleanly with `ENOSPC` ([`ErrorKind::DiskFull`]) or `EFBIG`
//! ([`ErrorKind::FileTooLarge`]). Where the file system does not implement
//! `fallocate` (`EOPNOTSUPP`, e.g. ramfs), the stream falls back to
//! `ftruncate` and says so in [`StreamInfo::fallback`].
//!
//! Writing S bytes costs w = ⌈S/W⌉ windows: w `mmap`, w `munmap`, w
//! `fallocate` plus one final `ftruncate` when w > 0 (counted together as
//! `truncate`: w + 1).
//!
//! Another process truncating an input while it is mapped makes the next
//! access raise `SIGBUS`: read windows are listed with [`crate::sigbus`]'s
//! guard, which turns that into an error ("the file shrank while it was
//! read"), and each window is mapped only after `fstat` says the file
//! still holds it (issue 37). Output windows are the stream's own file.

use std::ffi::c_void;
use std::fs::File;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use rustix::fs::FallocateFlags;
use rustix::mm::{MapFlags, ProtFlags};

use crate::file::{
    create_for_write, ftruncate, maybe_sync, open_for_read, page_size, round_up_at_least, Dest,
};
use crate::sigbus::Guarded;
use crate::{
    as_bytes, as_bytes_mut, from_bytes, Element, Error, ErrorKind, InputStream, OutputStream, Result,
    StreamConfig, StreamInfo, StreamKind, SyscallCounts,
};

/// The message in [`StreamInfo::fallback`] when `fallocate` is unsupported.
const FALLOCATE_FALLBACK: &str =
    "file system does not support fallocate (EOPNOTSUPP); growing the file with ftruncate \
     (a full disk may raise SIGBUS)";

/// One mapped window (a read window listed with the `SIGBUS` guard).
struct Window {
    ptr: *mut u8,
    len: usize,
    guard: Option<Guarded>,
}

impl Window {
    fn map(
        file: &File,
        off: u64,
        len: usize,
        write: bool,
        path: &Path,
        counts: &mut SyscallCounts,
    ) -> Result<Window> {
        let prot = if write { ProtFlags::READ | ProtFlags::WRITE } else { ProtFlags::READ };
        counts.mmap += 1;
        // SAFETY: a fresh mapping chosen by the kernel (null hint); `off` is
        // page aligned and `len` > 0. The memory is only accessed through this
        // `Window` while it is mapped.
        let ptr = unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, prot, MapFlags::SHARED, file, off) }
            .map_err(|e| Error::from_io("mmap", path, e.into()))?;
        let guard = (!write).then(|| Guarded::map(ptr.cast(), len));
        Ok(Window { ptr: ptr.cast(), len, guard })
    }

    /// Whether a page of this read window was past the file's end when
    /// read (the file shrank: the bytes read are not the file's).
    fn shrank(&self) -> bool {
        self.guard.as_ref().is_some_and(Guarded::faulted)
    }

    fn unmap(mut self, path: &Path, counts: &mut SyscallCounts) -> Result<()> {
        // Unlisted before the pages go.
        self.guard = None;
        counts.munmap += 1;
        // SAFETY: `ptr`/`len` are a live mapping made by `map`, consumed here.
        unsafe { rustix::mm::munmap(self.ptr.cast::<c_void>(), self.len) }
            .map_err(|e| Error::from_io("munmap", path, e.into()))
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the window is mapped readable for `len` bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: output windows are mapped writable for `len` bytes and no
        // other reference to them exists.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// The error of a file that shrank while it was read.
fn shrank(path: &Path) -> Error {
    Error::new(ErrorKind::Io("read (the file shrank while it was read)"), path)
}

fn window_size(cfg: &StreamConfig) -> usize {
    round_up_at_least(cfg.block_size, page_size())
}

fn info(w: usize, fallback: Option<String>) -> StreamInfo {
    StreamInfo { kind: StreamKind::Mmap, block_size: w, queue_depth: 1, fallback }
}

/// Input stream of the `mmap` kind.
pub struct MmapInput<T: Element> {
    path: PathBuf,
    file: Option<File>,
    size: u64,
    win: Option<Window>,
    /// File offset just past the mapped window (or 0 before the first).
    mapped_end: u64,
    /// Read position inside the window.
    pos: usize,
    counts: SyscallCounts,
    info: StreamInfo,
    _t: PhantomData<T>,
}

// SAFETY: the window is memory owned by this stream alone.
unsafe impl<T: Element> Send for MmapInput<T> {}

impl<T: Element> MmapInput<T> {
    /// Opens `path`; windows are `cfg.block_size` rounded up to whole pages.
    pub fn open(path: &Path, cfg: &StreamConfig) -> Result<Self> {
        let mut counts = SyscallCounts::default();
        let (file, size) = open_for_read(path, T::SIZE, 0, &mut counts)?;
        Ok(MmapInput {
            path: path.to_path_buf(),
            file: Some(file),
            size,
            win: None,
            mapped_end: 0,
            pos: 0,
            counts,
            info: info(window_size(cfg), None),
            _t: PhantomData,
        })
    }

    fn left_in_window(&self) -> usize {
        self.win.as_ref().map_or(0, |w| w.len - self.pos)
    }

    /// Unmaps the used-up window and maps the next; false at the end.
    fn next_window(&mut self) -> Result<bool> {
        let file = self.file.as_ref().ok_or_else(|| Error::new(ErrorKind::Closed, &self.path))?;
        if self.mapped_end >= self.size {
            return Ok(false);
        }
        if let Some(w) = self.win.take() {
            w.unmap(&self.path, &mut self.counts)?;
        }
        let len = (self.size - self.mapped_end).min(self.info.block_size as u64) as usize;
        // A file that shrank since it was opened: said now (the guard
        // catches what shrinks while the window is read).
        self.counts.other += 1;
        let now = file.metadata().map_err(|e| Error::from_io("fstat", &self.path, e))?.len();
        if now < self.mapped_end + len as u64 {
            return Err(shrank(&self.path));
        }
        self.win = Some(Window::map(file, self.mapped_end, len, false, &self.path, &mut self.counts)?);
        self.mapped_end += len as u64;
        self.pos = 0;
        Ok(true)
    }
}

impl<T: Element> InputStream<T> for MmapInput<T> {
    #[inline]
    fn read_next(&mut self) -> Result<Option<T>> {
        if self.left_in_window() == 0 && !self.next_window()? {
            return Ok(None);
        }
        let w = self.win.as_ref().expect("a window is mapped");
        let x = from_bytes::<T>(&w.bytes()[self.pos..]);
        if w.shrank() {
            return Err(shrank(&self.path));
        }
        self.pos += T::SIZE;
        Ok(Some(x))
    }

    fn end_of_stream(&mut self) -> Result<bool> {
        if self.file.is_none() {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        Ok(self.left_in_window() == 0 && self.mapped_end >= self.size)
    }

    fn read_into(&mut self, out: &mut [T]) -> Result<usize> {
        let out = as_bytes_mut(out);
        let mut n = 0;
        while n < out.len() {
            if self.left_in_window() == 0 && !self.next_window()? {
                break;
            }
            let w = self.win.as_ref().expect("a window is mapped");
            let take = (w.len - self.pos).min(out.len() - n);
            out[n..n + take].copy_from_slice(&w.bytes()[self.pos..self.pos + take]);
            if w.shrank() {
                return Err(shrank(&self.path));
            }
            self.pos += take;
            n += take;
        }
        Ok(n / T::SIZE)
    }

    fn len(&self) -> u64 {
        self.size / T::SIZE as u64
    }

    fn close(&mut self) -> Result<()> {
        let r = match self.win.take() {
            Some(w) => w.unmap(&self.path, &mut self.counts),
            None => Ok(()),
        };
        if self.file.take().is_some() {
            self.counts.close += 1;
        }
        r
    }

    fn syscalls(&self) -> SyscallCounts {
        self.counts
    }

    fn info(&self) -> &StreamInfo {
        &self.info
    }
}

impl<T: Element> Drop for MmapInput<T> {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Output stream of the `mmap` kind.
pub struct MmapOutput<T: Element> {
    path: PathBuf,
    file: Option<File>,
    win: Option<Window>,
    /// Write position inside the window.
    pos: usize,
    /// Bytes written so far (the file's length at close).
    written: u64,
    /// Bytes the file has been grown to.
    allocated: u64,
    sync: bool,
    failed: bool,
    counts: SyscallCounts,
    info: StreamInfo,
    _t: PhantomData<T>,
}

// SAFETY: the window is memory owned by this stream alone.
unsafe impl<T: Element> Send for MmapOutput<T> {}

impl<T: Element> MmapOutput<T> {
    /// Creates or truncates `path`; windows are `cfg.block_size` rounded up
    /// to whole pages.
    pub fn create(path: &Path, cfg: &StreamConfig) -> Result<Self> {
        Self::create_in(Dest::Path(path), cfg)
    }

    /// As [`Self::create`], into `dest` (a path, or a file already open).
    pub fn create_in(dest: Dest<'_>, cfg: &StreamConfig) -> Result<Self> {
        let path = dest.name();
        let mut counts = SyscallCounts::default();
        let file = create_for_write(dest, 0, &mut counts)?;
        Ok(MmapOutput {
            path: path.to_path_buf(),
            file: Some(file),
            win: None,
            pos: 0,
            written: 0,
            allocated: 0,
            sync: cfg.sync_on_close,
            failed: false,
            counts,
            info: info(window_size(cfg), None),
            _t: PhantomData,
        })
    }

    fn room(&self) -> usize {
        self.win.as_ref().map_or(0, |w| w.len - self.pos)
    }

    /// Unmaps the full window, grows the file by one window and maps it.
    fn next_window(&mut self) -> Result<()> {
        if self.failed {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        let file = self.file.as_ref().ok_or_else(|| Error::new(ErrorKind::Closed, &self.path))?;
        let r = (|| {
            if let Some(w) = self.win.take() {
                w.unmap(&self.path, &mut self.counts)?;
            }
            let w = self.info.block_size;
            let off = self.allocated;
            grow(file, off, w as u64, &self.path, &mut self.counts, &mut self.info)?;
            self.allocated = off + w as u64;
            self.win = Some(Window::map(file, off, w, true, &self.path, &mut self.counts)?);
            self.pos = 0;
            Ok(())
        })();
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn finish(&mut self) -> Result<()> {
        let Some(file) = self.file.take() else {
            return Ok(());
        };
        let mut r = match self.win.take() {
            Some(w) => w.unmap(&self.path, &mut self.counts),
            None => Ok(()),
        };
        if self.allocated > 0 {
            let t = ftruncate(&file, self.written, &self.path, &mut self.counts);
            r = r.and(t);
        }
        if self.failed {
            r = Err(Error::new(ErrorKind::Closed, &self.path));
        }
        if r.is_ok() {
            r = maybe_sync(&file, self.sync, &self.path, &mut self.counts);
        }
        self.counts.close += 1;
        drop(file);
        r
    }
}

/// Grows the file to `off + len` bytes with `fallocate`, or `ftruncate`
/// when the file system does not support it (noted in `info.fallback`).
fn grow(
    file: &File,
    off: u64,
    len: u64,
    path: &Path,
    counts: &mut SyscallCounts,
    info: &mut StreamInfo,
) -> Result<()> {
    if info.fallback.is_none() {
        loop {
            counts.truncate += 1;
            match rustix::fs::fallocate(file, FallocateFlags::empty(), off, len) {
                Ok(()) => return Ok(()),
                Err(rustix::io::Errno::INTR) => continue,
                Err(rustix::io::Errno::OPNOTSUPP) => {
                    info.fallback = Some(FALLOCATE_FALLBACK.to_string());
                    break;
                }
                Err(e) => return Err(Error::from_io("fallocate", path, e.into())),
            }
        }
    }
    ftruncate(file, off + len, path, counts)
}

impl<T: Element> OutputStream<T> for MmapOutput<T> {
    #[inline]
    fn write(&mut self, x: T) -> Result<()> {
        if self.file.is_none() || self.failed {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        if self.room() == 0 {
            self.next_window()?;
        }
        let pos = self.pos;
        let w = self.win.as_mut().expect("a window is mapped");
        w.bytes_mut()[pos..pos + T::SIZE].copy_from_slice(as_bytes(std::slice::from_ref(&x)));
        self.pos += T::SIZE;
        self.written += T::SIZE as u64;
        Ok(())
    }

    fn write_all(&mut self, xs: &[T]) -> Result<()> {
        if self.file.is_none() || self.failed {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        let mut bytes = as_bytes(xs);
        while !bytes.is_empty() {
            if self.room() == 0 {
                self.next_window()?;
            }
            let take = self.room().min(bytes.len());
            let pos = self.pos;
            let w = self.win.as_mut().expect("a window is mapped");
            w.bytes_mut()[pos..pos + take].copy_from_slice(&bytes[..take]);
            self.pos += take;
            self.written += take as u64;
            bytes = &bytes[take..];
        }
        Ok(())
    }

    fn close(&mut self) -> Result<()> {
        self.finish()
    }

    fn syscalls(&self) -> SyscallCounts {
        self.counts
    }

    fn info(&self) -> &StreamInfo {
        &self.info
    }
}

impl<T: Element> Drop for MmapOutput<T> {
    fn drop(&mut self) {
        // Best effort, see the contract in `stream/mod.rs`.
        let _ = self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_is_whole_pages() {
        let p = page_size();
        for (b, w) in [(0, p), (1, p), (p, p), (p + 1, 2 * p), (3 * p, 3 * p)] {
            assert_eq!(window_size(&StreamConfig::new(StreamKind::Mmap).block_size(b)), w, "B={b}");
        }
    }

    #[test]
    fn output_grows_one_window_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        let cfg = StreamConfig::new(StreamKind::Mmap).block_size(page_size());
        let mut out = MmapOutput::<u64>::create(&p, &cfg).unwrap();
        let per_window = page_size() / 8;
        for i in 0..per_window as u64 + 1 {
            out.write(i).unwrap();
        }
        // Two windows allocated, the file is two windows long until close.
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 2 * page_size() as u64);
        out.close().unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().len(), (per_window as u64 + 1) * 8);
        let c = out.syscalls();
        assert_eq!((c.mmap, c.munmap, c.truncate), (2, 2, 3));
        assert!(out.info().fallback.is_none());
    }
}
