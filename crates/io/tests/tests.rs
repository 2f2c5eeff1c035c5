//! emsort-io's integration tests, one binary (as ripgrep does): every
//! stream kind against the `std::fs` oracle, its counted system calls, and
//! its errors (bad sizes, missing files, directories, permissions, a full
//! disk, a file size limit, io_uring refused, fallbacks).
//!
//! Tests that need process-wide state (an `RLIMIT_FSIZE`, a seccomp filter,
//! another user id) re-execute this binary for one test in a child process
//! (see `util::run_child`). Tests that mount a file system (tmpfs, ramfs)
//! need root and say `SKIPPED` when mounting is not permitted.

mod counts;
mod disks;
mod errors;
mod fallback;
mod full_disk;
mod readers;
mod streams;
mod uring;
mod util;
