//! The INFO-H-417 reports' cost model (two student reports for ULB's
//! Database Systems Architecture course, 2018): how many I/Os a point
//! should take.
//!
//! The INFO-H-417 reports predict the number of I/Os (system calls that move
//! data) from k, N, the element size (4 bytes) and the block size each kind
//! really uses (B_eff, [`StreamInfo::block_size`](emsort_io::StreamInfo)):
//!
//! | kind                              | predicted I/Os            |
//! |-----------------------------------|---------------------------|
//! | `syscall`                         | k · N                     |
//! | `stdio`                           | ⌈k · N · 4 / BUFSIZ⌉ (libc's real `FILE` buffer) |
//! | `buffered`, `direct`, `uring`     | ⌈k · N · 4 / B_eff⌉       |
//! | `mmap`                            | 2 · ⌈k · N · 4 / W⌉ (one `mmap` and one `munmap` per window W = B_eff) |
//!
//! Like the reports, the formula rounds once over all k streams rather than
//! per stream, so it may undercount by up to k for files that are not a
//! whole number of blocks. The streams' own counts
//! ([`SyscallCounts::data_calls`](emsort_io::SyscallCounts::data_calls))
//! also include what the model leaves out — the `read` that returns 0 at the
//! end of each file, an `ftruncate` on close, `io_uring_enter` calls that
//! batch several requests — which is what the counted-vs-predicted plot
//! shows.

use emsort_io::StreamKind;

use super::point::ELEMENT_SIZE;

/// The I/Os the cost model predicts for k streams of `n` elements each with
/// effective block size `block_effective` bytes (see the module docs).
///
/// ```
/// use emsort_bench::streams::predicted_ios;
/// use emsort_io::StreamKind;
/// assert_eq!(predicted_ios(StreamKind::Syscall, 2, 1000, 4), 2000);
/// assert_eq!(predicted_ios(StreamKind::Buffered, 1, 1000, 1024), 4); // ⌈4000/1024⌉
/// assert_eq!(predicted_ios(StreamKind::Mmap, 1, 1024, 4096), 2);
/// ```
pub fn predicted_ios(kind: StreamKind, k: u32, n: u64, block_effective: u64) -> u64 {
    let elements = u64::from(k) * n;
    let bytes = elements * ELEMENT_SIZE;
    let block = block_effective.max(1);
    match kind {
        StreamKind::Syscall => elements,
        StreamKind::Mmap => 2 * bytes.div_ceil(block),
        StreamKind::Stdio
        | StreamKind::Buffered
        | StreamKind::Direct
        | StreamKind::Uring
        | StreamKind::UringDirect => bytes.div_ceil(block),
    }
}

/// The formula of [`predicted_ios`] as text, for reports and CSV notes.
pub fn formula(kind: StreamKind) -> &'static str {
    match kind {
        StreamKind::Syscall => "k*N",
        StreamKind::Stdio => "ceil(k*N*4/BUFSIZ)",
        StreamKind::Mmap => "2*ceil(k*N*4/W)",
        StreamKind::Buffered | StreamKind::Direct | StreamKind::Uring | StreamKind::UringDirect => {
            "ceil(k*N*4/B)"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reports_formulas() {
        // One call per element, whatever B.
        assert_eq!(predicted_ios(StreamKind::Syscall, 3, 1_000_000, 1 << 20), 3_000_000);
        // stdio with glibc's 8 KiB buffer: 1e6 * 4 / 8192 = 488.28 -> 489.
        assert_eq!(predicted_ios(StreamKind::Stdio, 1, 1_000_000, 8192), 489);
        // Rounds once over all k streams.
        assert_eq!(predicted_ios(StreamKind::Buffered, 4, 1000, 4096), 4);
        assert_eq!(predicted_ios(StreamKind::Direct, 1, 1024, 4096), 1);
        assert_eq!(predicted_ios(StreamKind::Uring, 2, 1 << 20, 1 << 20), 8);
        // map + unmap per window.
        assert_eq!(predicted_ios(StreamKind::Mmap, 1, 1_000_000, 1 << 20), 8);
        // B = 4: one call per element for the buffered kinds too.
        assert_eq!(predicted_ios(StreamKind::Buffered, 1, 777, 4), 777);
        // A zero block size never divides by zero.
        assert_eq!(predicted_ios(StreamKind::Buffered, 1, 10, 0), 40);
        assert_eq!(formula(StreamKind::Mmap), "2*ceil(k*N*4/W)");
    }
}
