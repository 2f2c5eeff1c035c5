//! System calls counted by the streams themselves.
//!
//! Every stream increments a [`SyscallCounts`] each time it enters the
//! kernel on the file's behalf, so benchmarks can set counted calls beside the
//! cost model's predicted I/Os. Counting happens at the call site, not by
//! tracing, so it costs one add per call.

use std::fmt;

/// Number of system calls a stream made, by call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyscallCounts {
    /// `open`/`openat` (and `io_uring_setup`, `statx`, `fstat` used while opening).
    pub open: u64,
    /// `read` and `pread`.
    pub read: u64,
    /// `write` and `pwrite`.
    pub write: u64,
    /// `mmap`.
    pub mmap: u64,
    /// `munmap`.
    pub munmap: u64,
    /// `ftruncate` and `fallocate`.
    pub truncate: u64,
    /// `io_uring_enter` (submissions and waits).
    pub uring_enter: u64,
    /// `fsync`/`fdatasync`, `posix_fadvise`, `madvise`, `lseek`.
    pub other: u64,
    /// `close`.
    pub close: u64,
}

impl SyscallCounts {
    /// The calls that move or map data: read, write, mmap, munmap, truncate
    /// and io_uring_enter (what the cost model's "I/Os" corresponds to).
    pub fn data_calls(&self) -> u64 {
        self.read + self.write + self.mmap + self.munmap + self.truncate + self.uring_enter
    }

    /// Every counted call.
    pub fn total(&self) -> u64 {
        self.data_calls() + self.open + self.other + self.close
    }
}

impl std::ops::AddAssign for SyscallCounts {
    fn add_assign(&mut self, o: SyscallCounts) {
        self.open += o.open;
        self.read += o.read;
        self.write += o.write;
        self.mmap += o.mmap;
        self.munmap += o.munmap;
        self.truncate += o.truncate;
        self.uring_enter += o.uring_enter;
        self.other += o.other;
        self.close += o.close;
    }
}

impl fmt::Display for SyscallCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "open={} read={} write={} mmap={} munmap={} truncate={} uring_enter={} other={} close={}",
            self.open,
            self.read,
            self.write,
            self.mmap,
            self.munmap,
            self.truncate,
            self.uring_enter,
            self.other,
            self.close
        )
    }
}
