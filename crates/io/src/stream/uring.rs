//! The `uring` kind: io_uring with Q requests of B bytes in flight.
//!
//! B is rounded up to a whole number of elements (at least one); Q is
//! [`StreamConfig::queue_depth`] (at least 1). The stream owns one ring (Q
//! submission entries, rounded up to a power of two) and Q buffers of B
//! bytes, allocated when first used. Every request names its file offset, so
//! requests are independent and may complete in any order; a completion is
//! matched to its buffer by `user_data` (the buffer's index).
//!
//! # Input: read-ahead
//!
//! ```text
//! blocks   0   1   2   3   4   5   6 …      (block b lives in buffer b mod Q)
//!          ^consumed    ^^^^^^^^^^^ in flight (Q = 4): reads of b+1 … b+Q
//! ```
//!
//! 1. At open, queue reads of blocks 0 … Q−1 (or fewer for a short file) and
//!    submit them with one `io_uring_enter`.
//! 2. To consume block b, reap completions (from shared memory, no system
//!    call); while block b's buffer is not complete, `io_uring_enter` to
//!    submit and wait for at least one completion.
//! 3. When block b is used up, its buffer is free: queue the read of block
//!    b + Q into it and submit at once, so the device always has up to Q reads.
//!
//! A short read (fewer bytes than asked, before the end of the file) is
//! resubmitted for the rest; a negative result is the `errno` of the failed
//! read ([`Error::from_io`]); a read returning 0 before the size found at
//! open means the file shrank.
//!
//! # Output: write-behind
//!
//! 1. Elements are copied into the current buffer.
//! 2. When it is full, queue a write of it at its file offset, submit, and
//!    continue in the next free buffer. When all Q buffers are in flight,
//!    `io_uring_enter` to wait for one completion.
//! 3. `close` submits the partial last buffer (its exact length, so no
//!    truncation is needed), waits for every write, `fsync`s when asked and
//!    drops the ring.
//!
//! Short writes are resubmitted for the rest; a failed write (`ENOSPC`,
//! `EFBIG`, …) is reported by the next `write` or by `close`, and the stream
//! accepts nothing more.
//!
//! # Counted calls
//!
//! Reads and writes go through the ring, so `read` and `write` stay 0. Ring
//! setup (`io_uring_setup`) counts as `open`, the ring's descriptor as one
//! `close`, and every `submit` / `submit_and_wait` as one `uring_enter`. For
//! a file of nb = ⌈S/B⌉ blocks, input makes s = (1 if nb > 0) + max(0, nb − Q)
//! submissions plus at most nb waits (each wait reaps at least one
//! completion); output makes nb submissions plus at most nb waits.
//!
//! # Unavailable io_uring
//!
//! If `io_uring_setup` fails with `ENOSYS` (no kernel support, or a seccomp
//! filter), `EPERM` or `EACCES` (`/proc/sys/kernel/io_uring_disabled`), the
//! stream fails with [`ErrorKind::UringUnavailable`] naming the file (the
//! crate's one ring setup, `uring::setup`, which the readers share).
//!
//! # Safety
//!
//! The kernel writes into (or reads from) a buffer until its completion is
//! reaped. Buffers are separate heap allocations, so moving the stream does
//! not move them, and `close` and `Drop` wait for every request in flight
//! before freeing them. Should that wait fail, the buffers are leaked
//! rather than freed under the kernel's feet.

use std::fs::File;
use std::marker::PhantomData;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use io_uring::{opcode, squeue, types, IoUring};

use super::direct::{block_and_align, dio_alignment, open_direct};
use crate::file::{create_for_write, ftruncate, maybe_sync, open_for_read, Dest};
use crate::{
    as_bytes, as_bytes_mut, from_bytes, AlignedBuf, Element, Error, ErrorKind, InputStream, OutputStream,
    Result, StreamConfig, StreamInfo, StreamKind, SyscallCounts,
};

/// Largest length of one request; longer blocks go in several requests
/// (the kernel moves at most about 2 GiB per read or write anyway).
const MAX_OP: usize = 1 << 30;

/// A ring and the number of requests queued or in flight on it.
struct Ring {
    /// Boxed: the ring's handle is large and streams sit in an enum.
    ring: Box<IoUring>,
    inflight: usize,
    cqes: Vec<(u64, i32)>,
}

impl Ring {
    fn new(q: u32, path: &Path, counts: &mut SyscallCounts) -> Result<Ring> {
        counts.open += 1;
        let ring = crate::uring::setup(q, path)?;
        Ok(Ring { ring: Box::new(ring), inflight: 0, cqes: Vec::new() })
    }

    /// Queues `e` (not yet submitted).
    ///
    /// # Safety
    ///
    /// The buffer `e` names must stay valid until its completion is reaped.
    unsafe fn push(&mut self, e: &squeue::Entry) {
        // The queue holds at least Q entries and each buffer has at most one
        // request, so it is never full.
        // SAFETY: forwarded to the caller.
        unsafe { self.ring.submission().push(e) }.expect("submission queue has room for Q requests");
        self.inflight += 1;
    }

    /// `io_uring_enter`: submits what is queued and, with `wait`, waits for at
    /// least one completion.
    fn enter(&mut self, wait: bool, counts: &mut SyscallCounts) -> std::io::Result<()> {
        loop {
            counts.uring_enter += 1;
            let r = if wait { self.ring.submit_and_wait(1) } else { self.ring.submit() };
            match r {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Takes the available completions as `(user_data, result)` pairs.
    fn reap(&mut self) -> Vec<(u64, i32)> {
        let mut out = std::mem::take(&mut self.cqes);
        out.clear();
        out.extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
        self.inflight -= out.len();
        out
    }

    /// Hands the completion vector back for reuse.
    fn recycle(&mut self, v: Vec<(u64, i32)>) {
        self.cqes = v;
    }

    /// Waits for every request in flight; false if waiting failed (the
    /// caller must then leak its buffers).
    fn drain(&mut self, counts: &mut SyscallCounts) -> bool {
        while self.inflight > 0 {
            if self.enter(true, counts).is_err() {
                return false;
            }
            let v = self.reap();
            self.recycle(v);
        }
        true
    }
}

fn rounded_block<T: Element>(cfg: &StreamConfig) -> usize {
    cfg.block_size.max(T::SIZE).div_ceil(T::SIZE) * T::SIZE
}

/// Alignment of the buffers of the page-cache mode (a page: any element
/// size divides it or is a multiple of it, and copies are fastest).
const PAGE: usize = 4096;

/// Whether `cfg` asks for `O_DIRECT` (the `uring-direct` kind).
fn is_direct(cfg: &StreamConfig) -> bool {
    cfg.kind == StreamKind::UringDirect
}

/// Block size and request alignment of a stream of `T` on `file`: the
/// `direct` kind's for `uring-direct` (and requests of whole aligned
/// lengths), else B rounded to whole elements (any length).
fn block_and_request_align<T: Element>(
    cfg: &StreamConfig,
    file: &File,
    direct: bool,
    counts: &mut SyscallCounts,
) -> (usize, usize) {
    if direct {
        let (mem, off) = dio_alignment(file, counts);
        let (block, align) = block_and_align(cfg.block_size, mem, off, T::SIZE);
        (block, align.max(off))
    } else {
        (rounded_block::<T>(cfg), 1)
    }
}

fn info(cfg: &StreamConfig, block: usize, q: u32, fallback: Option<String>) -> StreamInfo {
    StreamInfo { kind: cfg.kind, block_size: block, queue_depth: q, fallback }
}

/// Opens `path` for reading, with `O_DIRECT` when `direct` (falling back
/// as the `direct` kind does); the file, its size and the fallback note.
fn open_read<T: Element>(
    path: &Path,
    direct: bool,
    counts: &mut SyscallCounts,
) -> Result<(File, u64, Option<String>)> {
    if !direct {
        let (f, size) = open_for_read(path, T::SIZE, 0, counts)?;
        return Ok((f, size, None));
    }
    let mut size = 0;
    let (f, fallback) = open_direct(|flags| {
        let (f, s) = open_for_read(path, T::SIZE, flags, counts)?;
        size = s;
        Ok(f)
    })?;
    Ok((f, size, fallback))
}

/// One buffer and the request that fills or drains it.
#[derive(Default)]
struct Slot {
    buf: AlignedBuf,
    /// File offset of the buffer's first byte.
    off: u64,
    /// Bytes the request moves in total.
    want: usize,
    /// Bytes moved so far.
    done: usize,
    /// A request for this buffer is queued or in flight.
    busy: bool,
}

/// Queues the rest of `slot`'s request (read or write) as request `index`,
/// its length rounded up to `align` (`O_DIRECT`: a read of the file's last
/// block asks for whole aligned blocks and gets the rest of the file).
fn push_rest(ring: &mut Ring, fd: types::Fd, slot: &mut Slot, index: usize, write: bool, align: usize) {
    let rest = (slot.want - slot.done).div_ceil(align) * align;
    let len = rest.min(slot.buf.capacity() - slot.done).min(MAX_OP) as u32;
    let off = slot.off + slot.done as u64;
    // SAFETY: `done < want <= buf.capacity()` and `done + len <=
    // capacity`, so the range is inside the buffer; the buffer stays
    // allocated (and untouched) until the completion is reaped, which
    // `close`/`Drop` guarantee.
    let e = unsafe {
        let p = slot.buf.bytes_mut().as_mut_ptr().add(slot.done);
        if write {
            opcode::Write::new(fd, p, len).offset(off).build()
        } else {
            opcode::Read::new(fd, p, len).offset(off).build()
        }
    };
    slot.busy = true;
    // SAFETY: see above.
    unsafe { ring.push(&e.user_data(index as u64)) };
}

/// Input stream of the `uring` kind.
pub struct UringInput<T: Element> {
    path: PathBuf,
    file: Option<File>,
    ring: Option<Ring>,
    slots: Vec<Slot>,
    block: usize,
    /// Alignment of buffers, offsets and request lengths (1 without
    /// `O_DIRECT`, for lengths).
    align: usize,
    size: u64,
    nblocks: u64,
    /// Next block whose read is to be queued.
    next_submit: u64,
    /// Next block to hand out.
    next_consume: u64,
    /// The buffer being consumed and the position in it.
    cur: Option<usize>,
    pos: usize,
    failed: bool,
    counts: SyscallCounts,
    info: StreamInfo,
    _t: PhantomData<T>,
}

impl<T: Element> UringInput<T> {
    /// Opens `path` (with `O_DIRECT` for `uring-direct`), sets up a ring of
    /// Q entries and starts reading ahead.
    pub fn open(path: &Path, cfg: &StreamConfig) -> Result<Self> {
        let mut counts = SyscallCounts::default();
        let direct = is_direct(cfg);
        let (file, size, fallback) = open_read::<T>(path, direct, &mut counts)?;
        let q = cfg.queue_depth.max(1);
        let ring = Ring::new(q, path, &mut counts)?;
        let (block, align) =
            block_and_request_align::<T>(cfg, &file, direct && fallback.is_none(), &mut counts);
        let nblocks = size.div_ceil(block as u64);
        let nslots = (q as u64).min(nblocks) as usize;
        let mut s = UringInput {
            path: path.to_path_buf(),
            file: Some(file),
            ring: Some(ring),
            slots: (0..nslots).map(|_| Slot::default()).collect(),
            block,
            align,
            size,
            nblocks,
            next_submit: 0,
            next_consume: 0,
            cur: None,
            pos: 0,
            failed: false,
            counts,
            info: info(cfg, block, q, fallback),
            _t: PhantomData,
        };
        if nslots > 0 {
            for _ in 0..nslots {
                s.queue_next();
            }
            s.submit()?;
        }
        Ok(s)
    }

    /// Queues the read of block `next_submit` into its buffer.
    fn queue_next(&mut self) {
        let b = self.next_submit;
        let i = (b % self.slots.len() as u64) as usize;
        let fd = types::Fd(self.file.as_ref().expect("open").as_raw_fd());
        let slot = &mut self.slots[i];
        if slot.buf.capacity() < self.block {
            slot.buf = AlignedBuf::with_align(self.block, self.align.max(PAGE));
        }
        slot.off = b * self.block as u64;
        slot.want = (self.size - slot.off).min(self.block as u64) as usize;
        slot.done = 0;
        push_rest(self.ring.as_mut().expect("open"), fd, slot, i, false, self.align);
        self.next_submit += 1;
    }

    fn submit(&mut self) -> Result<()> {
        let ring = self.ring.as_mut().expect("open");
        ring.enter(false, &mut self.counts).map_err(|e| {
            self.failed = true;
            Error::from_io("io_uring_enter", &self.path, e)
        })
    }

    /// Processes the available completions: finished buffers become ready,
    /// short reads are resubmitted, the first error is returned.
    fn reap(&mut self) -> Result<()> {
        let ring = self.ring.as_mut().expect("open");
        let fd = types::Fd(self.file.as_ref().expect("open").as_raw_fd());
        let cqes = ring.reap();
        let mut err = None;
        let mut resubmit = false;
        for &(ud, res) in &cqes {
            let i = ud as usize;
            let slot = &mut self.slots[i];
            slot.busy = false;
            if res < 0 {
                err.get_or_insert_with(|| Error::from_errno("read", &self.path, -res));
            } else if res == 0 {
                err.get_or_insert_with(|| {
                    let e = std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!("file shrank below {} bytes while open", slot.off + slot.done as u64),
                    );
                    Error::from_io("read", &self.path, e)
                });
            } else {
                // More than asked: the file grew since it was opened (its
                // size at open is the stream's length).
                slot.done = (slot.done + res as usize).min(slot.want);
                if slot.done < slot.want && err.is_none() {
                    push_rest(ring, fd, slot, i, false, self.align);
                    resubmit = true;
                }
            }
        }
        ring.recycle(cqes);
        if let Some(e) = err {
            self.failed = true;
            return Err(e);
        }
        if resubmit {
            self.submit()?;
        }
        Ok(())
    }

    /// Frees the used-up buffer (queuing the next read into it) and waits
    /// for the next block; false at the end of the file.
    fn next_block(&mut self) -> Result<bool> {
        if self.failed || self.file.is_none() {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        if self.cur.take().is_some() && self.next_submit < self.nblocks {
            self.queue_next();
            self.submit()?;
        }
        if self.next_consume >= self.nblocks {
            return Ok(false);
        }
        let i = (self.next_consume % self.slots.len() as u64) as usize;
        loop {
            self.reap()?;
            let s = &self.slots[i];
            if !s.busy && s.done == s.want {
                break;
            }
            let ring = self.ring.as_mut().expect("open");
            if let Err(e) = ring.enter(true, &mut self.counts) {
                self.failed = true;
                return Err(Error::from_io("io_uring_enter", &self.path, e));
            }
        }
        self.cur = Some(i);
        self.pos = 0;
        self.next_consume += 1;
        Ok(true)
    }

    fn left(&self) -> usize {
        self.cur.map_or(0, |i| self.slots[i].want - self.pos)
    }
}

impl<T: Element> InputStream<T> for UringInput<T> {
    #[inline]
    fn read_next(&mut self) -> Result<Option<T>> {
        if self.left() == 0 && !self.next_block()? {
            return Ok(None);
        }
        let i = self.cur.expect("a block is current");
        let x = from_bytes::<T>(&self.slots[i].buf.bytes()[self.pos..]);
        self.pos += T::SIZE;
        Ok(Some(x))
    }

    fn end_of_stream(&mut self) -> Result<bool> {
        if self.file.is_none() {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        Ok(self.left() == 0 && self.next_consume >= self.nblocks)
    }

    fn read_into(&mut self, out: &mut [T]) -> Result<usize> {
        let out = as_bytes_mut(out);
        let mut n = 0;
        while n < out.len() {
            if self.left() == 0 && !self.next_block()? {
                break;
            }
            let i = self.cur.expect("a block is current");
            let take = self.left().min(out.len() - n);
            out[n..n + take].copy_from_slice(&self.slots[i].buf.bytes()[self.pos..self.pos + take]);
            self.pos += take;
            n += take;
        }
        Ok(n / T::SIZE)
    }

    fn len(&self) -> u64 {
        self.size / T::SIZE as u64
    }

    fn close(&mut self) -> Result<()> {
        let Some(mut ring) = self.ring.take() else {
            return Ok(());
        };
        if !ring.drain(&mut self.counts) {
            // The kernel may still write into the buffers: never free them.
            std::mem::forget(std::mem::take(&mut self.slots));
        }
        self.counts.close += 1;
        drop(ring);
        if self.file.take().is_some() {
            self.counts.close += 1;
        }
        self.cur = None;
        Ok(())
    }

    fn syscalls(&self) -> SyscallCounts {
        self.counts
    }

    fn info(&self) -> &StreamInfo {
        &self.info
    }
}

impl<T: Element> Drop for UringInput<T> {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Output stream of the `uring` kind.
pub struct UringOutput<T: Element> {
    path: PathBuf,
    file: Option<File>,
    ring: Option<Ring>,
    slots: Vec<Slot>,
    block: usize,
    /// Alignment of buffers, offsets and request lengths (1 without
    /// `O_DIRECT`).
    align: usize,
    /// Bytes given to the stream (the file's length at `close`).
    exact: u64,
    /// The file's length as allocated ahead of the writes (see
    /// [`UringOutput::allocate_ahead`]); 0 when not preallocating.
    allocated: u64,
    /// Whether to preallocate (`uring-direct` on a regular file).
    prealloc: bool,
    /// The buffer being filled and the bytes in it.
    cur: usize,
    filled: usize,
    /// File offset of the next buffer to write.
    next_off: u64,
    sync: bool,
    failed: bool,
    counts: SyscallCounts,
    info: StreamInfo,
    _t: PhantomData<T>,
}

impl<T: Element> UringOutput<T> {
    /// Creates or truncates `path` and sets up a ring of Q entries.
    pub fn create(path: &Path, cfg: &StreamConfig) -> Result<Self> {
        Self::create_in(Dest::Path(path), cfg)
    }

    /// As [`Self::create`], into `dest` (a path, or a file already open).
    pub fn create_in(dest: Dest<'_>, cfg: &StreamConfig) -> Result<Self> {
        let path = dest.name();
        let mut counts = SyscallCounts::default();
        let direct = is_direct(cfg);
        let (file, fallback) = if direct {
            open_direct(|flags| create_for_write(dest, flags, &mut counts))?
        } else {
            (create_for_write(dest, 0, &mut counts)?, None)
        };
        let q = cfg.queue_depth.max(1);
        let ring = Ring::new(q, path, &mut counts)?;
        let direct = direct && fallback.is_none();
        let (block, align) = block_and_request_align::<T>(cfg, &file, direct, &mut counts);
        let prealloc = direct && file.metadata().is_ok_and(|m| m.file_type().is_file());
        let mut slots: Vec<Slot> = (0..q).map(|_| Slot::default()).collect();
        slots[0].buf = AlignedBuf::with_align(block, align.max(PAGE));
        Ok(UringOutput {
            path: path.to_path_buf(),
            file: Some(file),
            ring: Some(ring),
            slots,
            block,
            align,
            exact: 0,
            allocated: 0,
            prealloc,
            cur: 0,
            filled: 0,
            next_off: 0,
            sync: cfg.sync_on_close,
            failed: false,
            counts,
            info: info(cfg, block, q, fallback),
            _t: PhantomData,
        })
    }

    /// Extends the file ahead of a write that ends at `end`, with
    /// `fallocate` (mode 0: the length grows too), by at least a quarter of
    /// what it has and 8 blocks. An `O_DIRECT` write past the end of the
    /// file is waited for under the inode's lock on ext4 (it must set the
    /// new length), so Q of them in flight would still reach the device
    /// one at a time; a write inside the file's length does not. `close`
    /// trims the file to what was written. A file system without
    /// `fallocate` (or a full one: the write then reports it) is simply
    /// written past its end.
    fn allocate_ahead(&mut self, end: u64) {
        if !self.prealloc || end <= self.allocated {
            return;
        }
        let file = self.file.as_ref().expect("open");
        let step = (self.allocated / 4).max(8 * self.block as u64).max(end - self.allocated);
        let len = (step.div_ceil(self.align as u64)) * self.align as u64;
        self.counts.truncate += 1;
        match rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), self.allocated, len) {
            Ok(()) => self.allocated += len,
            Err(_) => self.prealloc = false,
        }
    }

    fn check_open(&self) -> Result<()> {
        if self.failed || self.ring.is_none() {
            return Err(Error::new(ErrorKind::Closed, &self.path));
        }
        Ok(())
    }

    fn fail(&mut self, e: Error) -> Error {
        self.failed = true;
        e
    }

    /// Queues and submits the write of the current buffer's `filled` bytes.
    fn submit_current(&mut self) -> Result<()> {
        self.allocate_ahead(self.next_off + self.filled as u64);
        let fd = types::Fd(self.file.as_ref().expect("open").as_raw_fd());
        let ring = self.ring.as_mut().expect("open");
        let i = self.cur;
        let slot = &mut self.slots[i];
        // O_DIRECT: a partial last block padded with zeros to the
        // alignment (close trims the file).
        let padded = self.filled.div_ceil(self.align) * self.align;
        slot.buf.bytes_mut()[self.filled..padded].fill(0);
        slot.off = self.next_off;
        slot.want = padded;
        slot.done = 0;
        push_rest(ring, fd, slot, i, true, self.align);
        self.exact = self.next_off + self.filled as u64;
        self.next_off += padded as u64;
        self.filled = 0;
        ring.enter(false, &mut self.counts)
            .map_err(|e| Error::from_io("io_uring_enter", &self.path, e))
            .map_err(|e| self.fail(e))
    }

    /// Processes the available completions: resubmits short writes, returns
    /// the first error.
    fn reap(&mut self) -> Result<()> {
        let fd = types::Fd(self.file.as_ref().expect("open").as_raw_fd());
        let ring = self.ring.as_mut().expect("open");
        let cqes = ring.reap();
        let mut err = None;
        let mut resubmit = false;
        for &(ud, res) in &cqes {
            let i = ud as usize;
            let slot = &mut self.slots[i];
            slot.busy = false;
            if res <= 0 {
                // A write of 0 bytes for a non-empty request: no room.
                let errno = if res == 0 { libc::ENOSPC } else { -res };
                err.get_or_insert_with(|| Error::from_errno("write", &self.path, errno));
            } else {
                slot.done += res as usize;
                if slot.done < slot.want && err.is_none() {
                    push_rest(ring, fd, slot, i, true, self.align);
                    resubmit = true;
                }
            }
        }
        ring.recycle(cqes);
        if let Some(e) = err {
            return Err(self.fail(e));
        }
        if resubmit {
            let ring = self.ring.as_mut().expect("open");
            ring.enter(false, &mut self.counts)
                .map_err(|e| Error::from_io("io_uring_enter", &self.path, e))
                .map_err(|e| self.fail(e))?;
        }
        Ok(())
    }

    /// Writes the full current buffer behind and moves to a free buffer,
    /// waiting for a completion when all Q are in flight.
    fn flush_full(&mut self) -> Result<()> {
        self.submit_current()?;
        loop {
            self.reap()?;
            if let Some(i) = self.slots.iter().position(|s| !s.busy) {
                if self.slots[i].buf.capacity() < self.block {
                    self.slots[i].buf = AlignedBuf::with_align(self.block, self.align.max(PAGE));
                }
                self.cur = i;
                return Ok(());
            }
            let ring = self.ring.as_mut().expect("open");
            ring.enter(true, &mut self.counts)
                .map_err(|e| Error::from_io("io_uring_enter", &self.path, e))
                .map_err(|e| self.fail(e))?;
        }
    }

    fn finish(&mut self) -> Result<()> {
        if self.ring.is_none() {
            return Ok(());
        }
        let mut r = if self.failed { Err(Error::new(ErrorKind::Closed, &self.path)) } else { Ok(()) };
        if r.is_ok() && self.filled > 0 {
            r = self.submit_current();
        }
        // Wait for every write; keep the first error.
        while self.ring.as_ref().expect("open").inflight > 0 {
            let ring = self.ring.as_mut().expect("open");
            if let Err(e) = ring.enter(true, &mut self.counts) {
                // Cannot wait: the kernel may still read the buffers.
                std::mem::forget(std::mem::take(&mut self.slots));
                let e = Error::from_io("io_uring_enter", &self.path, e);
                r = r.and(Err(e));
                break;
            }
            let reaped = if self.failed {
                // Only drain; no resubmission after an error.
                let ring = self.ring.as_mut().expect("open");
                let v = ring.reap();
                for &(ud, _) in &v {
                    self.slots[ud as usize].busy = false;
                }
                ring.recycle(v);
                Ok(())
            } else {
                self.reap()
            };
            r = r.and(reaped);
        }
        self.failed = true;
        let ring = self.ring.take().expect("open");
        let file = self.file.take().expect("open");
        if r.is_ok() && (self.next_off != self.exact || self.allocated > self.exact) {
            // Padding or preallocation past the data: the exact length.
            r = ftruncate(&file, self.exact, &self.path, &mut self.counts);
        }
        if r.is_ok() {
            r = maybe_sync(&file, self.sync, &self.path, &mut self.counts);
        }
        self.counts.close += 2; // the ring and the file
        drop(ring);
        drop(file);
        r
    }
}

impl<T: Element> OutputStream<T> for UringOutput<T> {
    #[inline]
    fn write(&mut self, x: T) -> Result<()> {
        self.check_open()?;
        let p = self.filled;
        self.slots[self.cur].buf.bytes_mut()[p..p + T::SIZE]
            .copy_from_slice(as_bytes(std::slice::from_ref(&x)));
        self.filled += T::SIZE;
        if self.filled == self.block {
            self.flush_full()?;
        }
        Ok(())
    }

    fn write_all(&mut self, xs: &[T]) -> Result<()> {
        self.check_open()?;
        let mut bytes = as_bytes(xs);
        while !bytes.is_empty() {
            let p = self.filled;
            let take = (self.block - p).min(bytes.len());
            self.slots[self.cur].buf.bytes_mut()[p..p + take].copy_from_slice(&bytes[..take]);
            self.filled += take;
            bytes = &bytes[take..];
            if self.filled == self.block {
                self.flush_full()?;
            }
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

impl<T: Element> Drop for UringOutput<T> {
    fn drop(&mut self) {
        // Best effort, see the contract in `stream/mod.rs`; waits for every write.
        let _ = self.finish();
    }
}
