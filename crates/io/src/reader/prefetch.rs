//! Background prefetch of a whole file into the page cache.
//!
//! The thesis found the best strategy to be "to swap between memory-mapped
//! reading and asynchronous reading" (§4.7). For a file that the adaptive
//! reader maps because it fits in memory and is read at random, largely
//! (the swapFlag), asynchronous reading can also serve the mapping: a
//! thread asks the kernel to read the whole file ahead
//! (`posix_fadvise(POSIX_FADV_WILLNEED)`, [`CHUNK`] at a time), so the
//! device gets many large requests at once instead of one read-around
//! window per page fault, and the faults that follow find their pages in
//! the cache or already on their way.
//!
//! `WILLNEED` only starts the reads: the kernel allocates the pages and
//! submits the I/O, then returns (a few milliseconds for 30 MiB here). The
//! thread keeps that submission off the caller's path and stops between
//! chunks when the prefetch is dropped (the reader closes the file).
//! The prefetch is a hint: an error from `posix_fadvise` stops it and
//! changes nothing else; the reads that follow still fault the pages in.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Bytes asked for per `posix_fadvise` call (the stop flag is checked between calls).
pub const CHUNK: u64 = 8 << 20;

/// A running (or finished) prefetch of one file; dropping it stops the
/// thread after its current chunk and waits for it.
pub(crate) struct Prefetch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Prefetch {
    /// Starts prefetching `[0, size)` of `file` (a duplicate of its
    /// descriptor is handed to the thread). `None` when the descriptor
    /// cannot be duplicated or the thread cannot be started: the prefetch is
    /// a hint, and the reads go on without it.
    pub(crate) fn start(file: &File, size: u64) -> Option<Prefetch> {
        let file = file.try_clone().ok()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("emsort-prefetch".into())
            .spawn(move || {
                let mut off = 0;
                while off < size && !flag.load(Ordering::Relaxed) {
                    let n = CHUNK.min(size - off);
                    // SAFETY: a plain system call on a descriptor this thread owns.
                    let rc = unsafe {
                        libc::posix_fadvise(file.as_raw_fd(), off as i64, n as i64, libc::POSIX_FADV_WILLNEED)
                    };
                    if rc != 0 {
                        break;
                    }
                    off += n;
                }
            })
            .ok()?;
        Some(Prefetch { stop, thread: Some(thread) })
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
