//! The `uring` reader: io_uring, requests split into pieces of B bytes with
//! up to Q pieces in flight, and a batch API.
//!
//! The thesis' `AsyncReader` (§3.2.4.4) issued overlapped reads, up to 64 at
//! a time. Here one ring of Q entries (rounded up to a power of two) serves
//! every request; the kernel reads straight into the caller's buffers.
//!
//! # A batch
//!
//! ```text
//! requests   r0 |<-- B -->|<-- B -->|<-->|   r1 |<->|   r2 |<-- B -->|<-- B -->| …
//! pieces        p0        p1        p2          p3          p4        p5
//! ring       p0 p1 p2 p3 in flight (Q = 4); as each completes, the next piece is queued
//! ```
//!
//! 1. Each request is clamped to the file's size at open (nothing is asked
//!    past the end; a request wholly past it completes at once with 0
//!    bytes) and cut into pieces of at most B bytes, in request order.
//! 2. Queue pieces while fewer than Q are in flight, then one
//!    `io_uring_enter` submits them and waits for at least one completion.
//! 3. Reap every completion (shared memory, no system call). A short read
//!    is queued again for its rest; a read of 0 bytes means the file shrank
//!    (the request then reports the bytes up to that point); an error fails
//!    its request, whose pieces not yet queued are dropped. When the last
//!    piece of a request is done, the caller's callback gets its
//!    [`Completion`] with the bytes read, while other requests are still in
//!    flight. Back to 2 until every request completed.
//!
//! `read_bytes` is a batch of one request: with B smaller than the request,
//! its pieces are read Q at a time.
//!
//! # Unavailable io_uring
//!
//! If `io_uring_setup` fails with `ENOSYS` (no kernel support, or a seccomp
//! filter), `EPERM` or `EACCES` (`/proc/sys/kernel/io_uring_disabled`),
//! `open` fails with [`ErrorKind::UringUnavailable`](crate::ErrorKind::UringUnavailable)
//! naming the file (the crate's one ring setup, `uring::setup`, which the
//! `uring` stream and the direct read-ahead share).
//!
//! # Safety
//!
//! The kernel writes into the caller's buffers until a piece's completion is
//! reaped, so a batch never returns while a piece is in flight: it waits for
//! each one, also after errors. Should waiting itself become impossible (an
//! `io_uring_enter` failing with anything but `EINTR`, `EAGAIN` or `EBUSY`,
//! which a working ring does not do), returning would hand the caller
//! buffers the kernel may still write, so the process aborts instead. A
//! callback that panics is caught long enough to wait for the pieces in
//! flight; then the panic goes on.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use io_uring::{opcode, types, IoUring};

use super::{
    check_buf, clamp, open_action, open_file, Completion, OpenAction, ReadRequest, Reader, ReaderConfig,
};
use crate::{Error, Result};

/// Largest piece one request reads (the kernel moves at most about 2 GiB
/// per read anyway, and the length is a `u32`).
const MAX_PIECE: usize = 1 << 30;

/// Largest queue depth (the kernel allows up to 32768 entries).
const MAX_QUEUE_DEPTH: u32 = 4096;

/// A ring of Q entries that reads batches of requests.
pub(crate) struct UringEngine {
    /// Boxed: the ring's handle is large and readers sit in an enum.
    ring: Box<IoUring>,
    q: usize,
}

/// One piece in flight: a part of request `req`.
#[derive(Clone, Copy)]
struct Piece {
    req: usize,
    /// File offset of the piece's first byte.
    off: u64,
    /// Where the piece's first byte goes.
    ptr: *mut u8,
    want: usize,
    done: usize,
}

/// A request's progress.
struct ReqState {
    offset: u64,
    ptr: *mut u8,
    /// Bytes to read (clamped to the file).
    len: usize,
    /// Bytes already cut into pieces.
    queued: usize,
    /// Pieces queued and not finished.
    pending: usize,
    /// Bytes up to the first hole (a piece that met the end of the file).
    short: Option<usize>,
    err: Option<Error>,
}

/// `io_uring_enter` on `ring`: submits what is queued and waits for `want`
/// completions, retrying `EINTR` (and `EAGAIN`/`EBUSY` up to 1000 times).
/// For rings with reads in flight into buffers the caller will free or hand
/// back: any other failure would leave the kernel writing into them, so the
/// process aborts instead.
pub(crate) fn enter_or_abort(ring: &mut IoUring, want: usize) {
    let mut tries = 0u32;
    loop {
        match ring.submit_and_wait(want) {
            Ok(_) => return,
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EBUSY)) && tries < 1000 => {
                tries += 1;
                std::thread::yield_now();
            }
            // The kernel may still write into the buffers.
            Err(_) => std::process::abort(),
        }
    }
}

impl UringEngine {
    /// Sets up a ring for queue depth `q`; errors name `path`.
    pub(crate) fn new(q: u32, path: &Path) -> Result<UringEngine> {
        let q = q.clamp(1, MAX_QUEUE_DEPTH);
        let ring = crate::uring::setup(q, path)?;
        Ok(UringEngine { ring: Box::new(ring), q: q as usize })
    }

    /// Reads every request of `reqs` from `file` (of `size` bytes at open) in
    /// pieces of at most `block` bytes, calling `on_complete` per request as
    /// it finishes. See the module docs.
    pub(crate) fn read_batch(
        &mut self,
        file: &File,
        size: u64,
        block: usize,
        path: &Path,
        reqs: &mut [ReadRequest<'_>],
        on_complete: &mut dyn FnMut(Completion<'_>),
    ) {
        let block = block.clamp(1, MAX_PIECE);
        let fd = types::Fd(file.as_raw_fd());
        // From here on the buffers are only reached through these pointers,
        // derived once from the exclusive borrows in `reqs`.
        let mut st: Vec<ReqState> = reqs
            .iter_mut()
            .map(|r| ReqState {
                offset: r.offset,
                ptr: r.buf.as_mut_ptr(),
                len: clamp(r.offset, r.buf.len(), size).1,
                queued: 0,
                pending: 0,
                short: None,
                err: None,
            })
            .collect();
        // Requests with nothing to read complete at once.
        for (id, s) in st.iter().enumerate() {
            if s.len == 0 {
                on_complete(Completion { id, result: Ok(0), data: &[] });
            }
        }
        let mut slots: Vec<Option<Piece>> = vec![None; self.q];
        // Free slots; in flight = Q − free.
        let mut free: Vec<usize> = (0..self.q).rev().collect();
        let mut cursor = 0usize;
        let mut cqes: Vec<(u64, i32)> = Vec::with_capacity(self.q);
        let mut finished_reqs: Vec<usize> = Vec::new();
        loop {
            // Queue pieces while fewer than Q are in flight.
            while !free.is_empty() {
                while cursor < st.len() && st[cursor].queued >= st[cursor].len {
                    cursor += 1;
                }
                if cursor == st.len() {
                    break;
                }
                let s = &mut st[cursor];
                let want = (s.len - s.queued).min(block);
                // SAFETY: `queued + want <= len <= buf.len()`.
                let ptr = unsafe { s.ptr.add(s.queued) };
                let piece = Piece { req: cursor, off: s.offset + s.queued as u64, ptr, want, done: 0 };
                s.queued += want;
                s.pending += 1;
                let i = free.pop().expect("a free slot");
                slots[i] = Some(piece);
                self.push(fd, &piece, i);
            }
            if free.len() == self.q {
                break;
            }
            self.enter_and_wait();
            cqes.clear();
            cqes.extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
            for &(ud, res) in &cqes {
                let i = ud as usize;
                let mut p = slots[i].expect("a completion for a piece in flight");
                let s = &mut st[p.req];
                let finished = if res == -libc::EINTR || res == -libc::EAGAIN {
                    self.push(fd, &p, i);
                    false
                } else if res < 0 {
                    if s.err.is_none() {
                        s.err = Some(Error::from_errno("read", path, -res));
                        // Drop the pieces not yet queued.
                        s.queued = s.len;
                    }
                    true
                } else if res == 0 {
                    // The file shrank below its size at open.
                    let upto = (p.off - s.offset) as usize + p.done;
                    s.short = Some(s.short.map_or(upto, |u| u.min(upto)));
                    true
                } else {
                    p.done += res as usize;
                    if p.done < p.want {
                        slots[i] = Some(p);
                        self.push(fd, &p, i);
                        false
                    } else {
                        true
                    }
                };
                if !finished {
                    continue;
                }
                slots[i] = None;
                free.push(i);
                s.pending -= 1;
                if s.pending == 0 && s.queued >= s.len {
                    finished_reqs.push(p.req);
                }
            }
            // Report the finished requests once every completion reaped is
            // accounted for, so that a panicking callback leaves exactly the
            // occupied slots in the kernel's hands.
            for id in finished_reqs.drain(..) {
                let s = &mut st[id];
                let (result, n) = match s.err.take() {
                    Some(e) => (Err(e), 0),
                    None => {
                        let n = s.short.unwrap_or(s.len);
                        (Ok(n), n)
                    }
                };
                // SAFETY: no piece of this request is in flight any more;
                // its first `n <= len` bytes were written by the kernel and
                // the exclusive borrow is held by `reqs`.
                let data = unsafe { std::slice::from_raw_parts(s.ptr, n) };
                let call = AssertUnwindSafe(|| on_complete(Completion { id, result, data }));
                if let Err(panic) = std::panic::catch_unwind(call) {
                    // Unwinding frees the caller's buffers: first wait for
                    // every piece the kernel may still write into them.
                    self.drain(self.q - free.len());
                    std::panic::resume_unwind(panic);
                }
            }
        }
    }

    /// Submits what is queued and waits for `n` completions, discarding them.
    fn drain(&mut self, mut n: usize) {
        while n > 0 {
            self.enter_and_wait();
            n = n.saturating_sub(self.ring.completion().count());
        }
    }

    /// Queues the rest of piece `p` as request `slot` (not yet submitted).
    fn push(&mut self, fd: types::Fd, p: &Piece, slot: usize) {
        let len = (p.want - p.done) as u32;
        // SAFETY: `done < want`, so the range is inside the piece's part of
        // the caller's buffer, which stays borrowed and untouched until the
        // completion is reaped (`read_batch` waits for every piece).
        let e = unsafe { opcode::Read::new(fd, p.ptr.add(p.done), len) }
            .offset(p.off + p.done as u64)
            .build()
            .user_data(slot as u64);
        // SAFETY: as above. The queue has at least Q entries and at most Q
        // pieces are queued or in flight, so it is never full.
        unsafe { self.ring.submission().push(&e) }.expect("submission queue has room for Q pieces");
    }

    /// `io_uring_enter`: submits what is queued and waits for at least one
    /// completion. Pieces are in flight, so failing here is not an option:
    /// see the module docs' Safety section.
    fn enter_and_wait(&mut self) {
        enter_or_abort(&mut self.ring, 1);
    }
}

/// Reader of the `uring` kind.
pub struct UringReader {
    path: PathBuf,
    file: Option<File>,
    engine: Option<UringEngine>,
    size: u64,
    block: usize,
    q: u32,
}

impl UringReader {
    /// A closed reader with pieces of at most `cfg.block_size` bytes (capped
    /// at 1 GiB) and `cfg.queue_depth` in flight. The ring is set up by `open`.
    pub fn new(cfg: &ReaderConfig) -> UringReader {
        UringReader {
            path: PathBuf::new(),
            file: None,
            engine: None,
            size: 0,
            block: cfg.block_size.clamp(1, MAX_PIECE),
            q: cfg.queue_depth.clamp(1, MAX_QUEUE_DEPTH),
        }
    }

    /// The block size B in use.
    pub fn block_size(&self) -> usize {
        self.block
    }

    /// The queue depth Q in use.
    pub fn queue_depth(&self) -> u32 {
        self.q
    }
}

impl Reader for UringReader {
    fn open(&mut self, path: &Path) -> Result<()> {
        if let OpenAction::Keep = open_action(self.is_open(), &self.path, path) {
            return Ok(());
        }
        self.file = None;
        self.size = 0;
        self.path = path.to_path_buf();
        let (file, size) = open_file(path)?;
        if self.engine.is_none() {
            self.engine = Some(UringEngine::new(self.q, path)?);
        }
        self.file = Some(file);
        self.size = size;
        Ok(())
    }

    fn is_open(&self) -> bool {
        self.file.is_some()
    }

    fn close(&mut self) -> Result<()> {
        self.file = None;
        self.engine = None;
        self.size = 0;
        Ok(())
    }

    fn name(&self) -> &'static str {
        "uring"
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
        let mut out = Ok(0);
        let mut reqs = [ReadRequest::new(offset, &mut buf[..amount])];
        self.read_batch(&mut reqs, &mut |c| out = c.result)?;
        out
    }

    fn read_batch(
        &mut self,
        reqs: &mut [ReadRequest<'_>],
        on_complete: &mut dyn FnMut(Completion<'_>),
    ) -> Result<()> {
        self.check_open()?;
        let file = self.file.as_ref().expect("open");
        let engine = self.engine.as_mut().expect("a ring while open");
        engine.read_batch(file, self.size, self.block, &self.path, reqs, on_complete);
        Ok(())
    }
}
