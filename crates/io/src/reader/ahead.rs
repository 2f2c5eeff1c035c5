//! Direct read-ahead: a sequential run read with `O_DIRECT` through
//! io_uring, ahead of the caller, into a few reused buffers.
//!
//! The kernel's readahead serves a sequential run of `pread`s well, but
//! every byte then lands in a page-cache page that must be allocated and
//! is copied once more to the caller. For a run that is read once, that
//! page is only a detour. This engine keeps a window of [`CHUNK`]-sized
//! `O_DIRECT` reads in flight ahead of the run, in buffers that are reused
//! for the whole file, and copies each request out of them:
//!
//! ```text
//! file      |  c0  |  c1  |  c2  |  c3  |  c4  | …
//! window       done  done  flight flight          (depth 4; c0 released once the run passes it)
//! request        |<--- r --->|                    copied out of c0 and c1
//! ```
//!
//! - The window starts at [`FIRST_DEPTH`] chunks at the request's offset
//!   (rounded down to [`DIRECT_ALIGN`]) and doubles with every request up
//!   to the engine's depth, as the kernel's readahead grows its window.
//! - A request inside the window (also a forward skip) is served from it;
//!   chunks wholly before the request are released. A request before the
//!   window or beyond it starts a new window there. Chunks still in flight
//!   when they are released stay owned by the kernel until their
//!   completion is reaped (twice the depth of buffers exist, so a new
//!   window never waits for the old one).
//! - A chunk read short before the end of the file is read again for its
//!   rest; a read of 0 bytes before the end (the file shrank) ends the
//!   request there; an error fails the request that needs the chunk.
//! - A request outside the window whose bytes the page cache holds
//!   (`cachestat(2)`, which starts no I/O) is copied from the cache
//!   through a mapping with `MADV_RANDOM` ([`DirectAhead::read_or_cached`]):
//!   `O_DIRECT` would read them from the device again. The mapping, not
//!   `pread`, because a `pread` that meets a page the kernel's readahead
//!   marked reads further ahead, and the run would never leave the cache.
//! - The buffers, [`CHUNK`] bytes each, are taken when a read is queued
//!   and given back when its chunk is released, to a process-wide spare
//!   list (at most 32, 64 MiB) that the next window of any file takes
//!   from: fresh memory is dear here. Each is aligned to and backed by huge pages where
//!   the kernel allows (`MADV_HUGEPAGE`): a 2 MiB read is then one segment
//!   of one request to the device. With 4 KiB pages a 1 MiB read is 256
//!   segments, above this VM's `max_segments` (254), and the block layer
//!   splits it. Reading a 256 MiB file front to back here, 2 reads in
//!   flight: 754 MiB/s with 1 MiB reads on 4 KiB pages, 1 069 MiB/s with
//!   4 MiB reads on huge pages.
//!
//! Data written by others through the page cache is still seen: the
//! kernel writes dirty cached pages back before an `O_DIRECT` read of them.
//! File systems without `O_DIRECT` (tmpfs on older kernels) make
//! [`DirectAhead::open`] fail with `EINVAL`; the adaptive reader then uses
//! `pread`.
//!
//! # Safety
//!
//! The kernel writes into a chunk's buffer until its completion is reaped,
//! so dropping the engine waits for every read in flight; should waiting
//! fail (an `io_uring_enter` error other than `EINTR`, `EAGAIN`, `EBUSY`),
//! the process aborts rather than free memory the kernel may still write.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use io_uring::{opcode, types, IoUring};

use super::clamp;
use super::mmap::Mapping;
use super::uring::enter_or_abort;
use super::Madvise;
use crate::disks::DIRECT_ALIGN;
use crate::{Error, Result};

/// Bytes per read of the window: one huge page, so one segment of one
/// request to the device.
pub const CHUNK: usize = 2 << 20;

/// Alignment of the buffers: a huge page, so that a read's buffer is a few
/// physically contiguous segments, not 1024 pages (a request of more than
/// `max_segments`, 254 here, is split by the block layer).
const BUF_ALIGN: usize = 2 << 20;

/// The unit `cachestat` counts in.
const PAGE: u64 = 4096;

/// Chunks in flight when a window starts.
pub const FIRST_DEPTH: usize = 2;

/// What a chunk's buffer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Free,
    /// In the window, being read; `done` bytes already arrived.
    Reading {
        done: usize,
    },
    /// Released while in flight: free once its completion is reaped.
    Orphan,
    /// In the window; `len` bytes valid (short at the end of the file).
    Done {
        len: usize,
    },
    /// In the window; the read failed with this errno.
    Failed(i32),
}

struct Slot {
    /// Taken from [`SPARE`] when the slot is filled, given back when it is free.
    buf: Option<ChunkBuf>,
    off: u64,
    state: State,
}

/// A file opened with `O_DIRECT` and its read-ahead window.
pub(crate) struct DirectAhead {
    file: File,
    /// The file mapped with `MADV_RANDOM`, made for the first request the
    /// page cache already holds: copying through it starts no readahead
    /// (a `pread` hitting a page the kernel's readahead marked would read
    /// further ahead, and keep the run in the cache).
    map: Option<Mapping>,
    path: PathBuf,
    size: u64,
    /// Boxed: the ring's handle is large and readers sit in an enum.
    ring: Box<IoUring>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// Slots of the window, in file order, contiguous from the first.
    window: VecDeque<usize>,
    /// Where the next chunk of the window starts.
    next: u64,
    depth: usize,
    max_depth: usize,
    /// Reads submitted and not yet reaped (window and orphans).
    in_flight: usize,
}

impl DirectAhead {
    /// Opens `path` (of `size` bytes) with `O_DIRECT` for windows of up to
    /// `max_depth` chunks in flight. Fails with the errno of `O_DIRECT`
    /// (`EINVAL`: the file system refuses it) or of `cachestat` (`ENOSYS`,
    /// `EPERM`: the page cache's content cannot be known, so cached data
    /// would be read from the device again); a ring the system refuses is
    /// [`ErrorKind::UringUnavailable`](crate::ErrorKind::UringUnavailable)
    /// with its errno (`uring::setup`).
    pub(crate) fn open(path: &Path, size: u64, max_depth: usize) -> Result<DirectAhead> {
        let max_depth = max_depth.max(FIRST_DEPTH);
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .map_err(|e| Error::from_io("open (O_DIRECT)", path, e))?;
        cached_pages(&file, 0, PAGE).map_err(|errno| Error::from_errno("cachestat", path, errno))?;
        let entries = u32::try_from(2 * max_depth).unwrap_or(u32::MAX);
        let ring = crate::uring::setup(entries, path)?;
        let slots = (0..2 * max_depth).map(|_| Slot { buf: None, off: 0, state: State::Free }).collect();
        Ok(DirectAhead {
            file,
            map: None,
            path: path.to_path_buf(),
            size,
            ring: Box::new(ring),
            slots,
            free: (0..2 * max_depth).rev().collect(),
            window: VecDeque::new(),
            next: 0,
            depth: FIRST_DEPTH,
            max_depth,
            in_flight: 0,
        })
    }

    /// Whether `offset` lies in the window (submitted or read).
    fn covers(&self, offset: u64) -> bool {
        self.window.front().is_some_and(|&i| self.slots[i].off <= offset) && offset < self.next
    }

    /// Reads `buf.len()` bytes at `offset` (fewer at the end of the file,
    /// 0 past it): from the window when it holds `offset`; else from the
    /// page cache when the cache holds the whole request (`cachestat`),
    /// through a mapping that starts no readahead (`Ok((n, true))`); else
    /// from a new window.
    pub(crate) fn read_or_cached(&mut self, offset: u64, buf: &mut [u8]) -> Result<(usize, bool)> {
        let (_, want) = clamp(offset, buf.len(), self.size);
        if want > 0 && !self.covers(offset) {
            let first = offset / PAGE * PAGE;
            let pages = (offset + want as u64).div_ceil(PAGE) - first / PAGE;
            let cached = cached_pages(&self.file, first, pages * PAGE)
                .map_err(|errno| Error::from_errno("cachestat", &self.path, errno))?;
            if cached >= pages {
                if self.map.is_none() {
                    self.map = Some(Mapping::new(&self.file, self.size, Madvise::Random, &self.path)?);
                }
                let n = self.map.as_ref().expect("mapped").copy(offset, want, buf)?;
                return Ok((n, true));
            }
        }
        Ok((self.read(offset, buf)?, false))
    }

    /// Reads `buf.len()` bytes at `offset` (fewer at the end of the file,
    /// 0 past it) out of the window, moving it along.
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let (_, want) = clamp(offset, buf.len(), self.size);
        if want == 0 {
            return Ok(0);
        }
        self.release_before(offset);
        let covered = self.window.front().is_some_and(|&i| self.slots[i].off <= offset);
        if !covered {
            while let Some(i) = self.window.pop_front() {
                self.release(i);
            }
            self.next = offset / DIRECT_ALIGN as u64 * DIRECT_ALIGN as u64;
            self.depth = FIRST_DEPTH;
        } else {
            self.depth = (self.depth * 2).min(self.max_depth);
        }
        self.fill();
        let end = offset + want as u64;
        let mut pos = offset;
        while pos < end {
            let Some(&i) = self.window.front() else { break };
            let len = self.wait_for(i)?;
            let s = &self.slots[i];
            let from = (pos - s.off) as usize;
            if from >= len {
                // The file ended (shrank) inside this chunk.
                break;
            }
            let n = (len - from).min((end - pos) as usize);
            let at = (pos - offset) as usize;
            buf[at..at + n].copy_from_slice(
                &s.buf.as_ref().expect("a chunk read has a buffer").as_slice()[from..from + n],
            );
            pos += n as u64;
            if from + n == len {
                // The chunk is used up: free it and keep the window full.
                self.window.pop_front();
                self.release(i);
                if len < CHUNK {
                    break;
                }
                self.fill();
            }
        }
        self.fill();
        Ok((pos - offset) as usize)
    }

    /// Releases the chunks that end at or before `offset`.
    fn release_before(&mut self, offset: u64) {
        while let Some(&i) = self.window.front() {
            if self.slots[i].off + CHUNK as u64 > offset {
                break;
            }
            self.window.pop_front();
            self.release(i);
        }
    }

    fn release(&mut self, i: usize) {
        let s = &mut self.slots[i];
        s.state = match s.state {
            State::Reading { .. } => State::Orphan,
            _ => {
                give_buf(s.buf.take());
                self.free.push(i);
                State::Free
            }
        };
    }

    /// Submits chunks until the window holds `depth` of them or reaches
    /// the end of the file, waiting for a free buffer if needed.
    fn fill(&mut self) {
        while self.window.len() < self.depth && self.next < self.size {
            let i = match self.free.pop() {
                Some(i) => i,
                None => {
                    // Only orphans can hold the buffers: wait for one.
                    self.enter(1);
                    self.reap();
                    continue;
                }
            };
            let s = &mut self.slots[i];
            s.buf.get_or_insert_with(take_buf);
            s.off = self.next;
            s.state = State::Reading { done: 0 };
            self.next += CHUNK as u64;
            self.window.push_back(i);
            self.push(i);
        }
        if !self.ring.submission().is_empty() {
            self.enter(0);
        }
    }

    /// Queues the rest of slot `i`'s chunk (not yet submitted).
    fn push(&mut self, i: usize) {
        let s = &mut self.slots[i];
        let State::Reading { done } = s.state else { unreachable!("push of a chunk not being read") };
        let fd = types::Fd(self.file.as_raw_fd());
        let buf = s.buf.as_mut().expect("a slot being read has a buffer").as_mut_ptr();
        // SAFETY: `done < CHUNK`, inside the slot's buffer, which is neither
        // touched nor freed until the completion is reaped (`release` turns
        // a chunk in flight into an orphan; `drop` waits for all).
        let e = unsafe { opcode::Read::new(fd, buf.add(done), (CHUNK - done) as u32) }
            .offset(s.off + done as u64)
            .build()
            .user_data(i as u64);
        // SAFETY: as above. The ring has an entry per slot, and a slot is
        // queued at most once at a time.
        unsafe { self.ring.submission().push(&e) }.expect("submission queue has room for every slot");
        self.in_flight += 1;
    }

    /// Waits until slot `i` (in the window) is read; its valid length.
    fn wait_for(&mut self, i: usize) -> Result<usize> {
        loop {
            match self.slots[i].state {
                State::Done { len } => return Ok(len),
                State::Failed(errno) => {
                    // Read it again next time it is needed.
                    self.window.pop_front();
                    self.release(i);
                    while let Some(j) = self.window.pop_front() {
                        self.release(j);
                    }
                    return Err(Error::from_errno("read (O_DIRECT)", &self.path, errno));
                }
                _ => {
                    self.enter(1);
                    self.reap();
                }
            }
        }
    }

    /// Takes every completion off the ring.
    fn reap(&mut self) {
        let cqes: Vec<(u64, i32)> = self.ring.completion().map(|c| (c.user_data(), c.result())).collect();
        for (ud, res) in cqes {
            let i = ud as usize;
            self.in_flight -= 1;
            let file_end = self.size.saturating_sub(self.slots[i].off).min(CHUNK as u64) as usize;
            let s = &mut self.slots[i];
            let again = match s.state {
                State::Orphan => {
                    s.state = State::Free;
                    give_buf(s.buf.take());
                    self.free.push(i);
                    false
                }
                State::Reading { .. } if res == -libc::EINTR || res == -libc::EAGAIN => true,
                State::Reading { .. } if res < 0 => {
                    s.state = State::Failed(-res);
                    false
                }
                State::Reading { done } => {
                    let done = done + res as usize;
                    // Short before the end of the file: read the rest. A read
                    // of 0 bytes there means the file shrank: the chunk ends.
                    if res > 0 && done < file_end {
                        s.state = State::Reading { done };
                        true
                    } else {
                        s.state = State::Done { len: done };
                        false
                    }
                }
                other => unreachable!("a completion for a chunk in state {other:?}"),
            };
            if again {
                self.push(i);
            }
        }
        if !self.ring.submission().is_empty() {
            self.enter(0);
        }
    }

    /// `io_uring_enter`: submits what is queued and waits for `want`
    /// completions. Reads are in flight, so failing is not an option (see
    /// the module docs' Safety section).
    fn enter(&mut self, want: usize) {
        enter_or_abort(&mut self.ring, want);
    }
}

impl Drop for DirectAhead {
    fn drop(&mut self) {
        for i in std::mem::take(&mut self.window) {
            self.release(i);
        }
        while self.in_flight > 0 {
            self.enter(1);
            self.reap();
        }
        for s in &mut self.slots {
            give_buf(s.buf.take());
        }
    }
}

/// Buffers no window holds, for the next one (of any file, in any thread):
/// fresh memory costs here (this VM's host must hand it back, and a huge
/// page may need compaction: 3–100 ms for 16 MiB), so buffers are made
/// once per process and reused. At most [`SPARE_MAX`] are kept.
static SPARE: std::sync::Mutex<Vec<ChunkBuf>> = std::sync::Mutex::new(Vec::new());

/// Spare buffers kept: 64 MiB.
const SPARE_MAX: usize = 32;

fn take_buf() -> ChunkBuf {
    let spare = SPARE.lock().ok().and_then(|mut v| v.pop());
    spare.unwrap_or_else(ChunkBuf::new)
}

fn give_buf(buf: Option<ChunkBuf>) {
    if let (Some(b), Ok(mut v)) = (buf, SPARE.lock()) {
        if v.len() < SPARE_MAX {
            v.push(b);
        }
    }
}

/// `cachestat(2)` (Linux 6.5; the same number on every architecture).
const SYS_CACHESTAT: libc::c_long = 451;

#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

#[repr(C)]
#[derive(Default)]
struct Cachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// Pages of `[off, off + len)` of `file` in the page cache
/// (`cachestat(2)`, which starts no I/O); the errno when the kernel cannot
/// say (`ENOSYS` before Linux 6.5, `EPERM` for a file the caller could not
/// write).
fn cached_pages(file: &File, off: u64, len: u64) -> std::result::Result<u64, i32> {
    let range = CachestatRange { off, len };
    let mut cs = Cachestat::default();
    // SAFETY: both pointers are to live structs of the kernel's layout.
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd(),
            &range as *const CachestatRange,
            &mut cs as *mut Cachestat,
            0,
        )
    };
    if rc == 0 {
        Ok(cs.nr_cache)
    } else {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

/// A [`CHUNK`]-byte buffer aligned to [`BUF_ALIGN`], backed by huge pages
/// where the kernel allows (`MADV_HUGEPAGE`; plain pages otherwise).
struct ChunkBuf {
    ptr: std::ptr::NonNull<u8>,
}

// SAFETY: a `ChunkBuf` owns its memory exclusively, like a `Vec<u8>`.
unsafe impl Send for ChunkBuf {}

impl ChunkBuf {
    fn layout() -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(CHUNK, BUF_ALIGN).expect("a valid layout")
    }

    fn new() -> ChunkBuf {
        let layout = ChunkBuf::layout();
        // SAFETY: `layout` has a non-zero size.
        let p = unsafe { std::alloc::alloc(layout) };
        let ptr = std::ptr::NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        // SAFETY: the range is the allocation just made. A hint: an error
        // (no THP) leaves plain pages.
        unsafe { libc::madvise(p.cast(), CHUNK, libc::MADV_HUGEPAGE) };
        // SAFETY: writing the whole allocation initialises it (and faults
        // its pages in now, not during the first read).
        unsafe { std::ptr::write_bytes(p, 0, CHUNK) };
        ChunkBuf { ptr }
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: `CHUNK` initialised bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), CHUNK) }
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for ChunkBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), ChunkBuf::layout()) }
    }
}
