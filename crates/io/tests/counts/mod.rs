//! The system calls each kind counts, against the formulas its module
//! documents. S = bytes, B = block size used (`info().block_size`).

use emsort_io::{
    as_bytes, create_output, open_input, InputStream, OutputStream, StreamConfig, StreamKind, SyscallCounts,
};

use crate::util::{data, tmp};

/// Element counts (u32): empty, one, exactly one and two stdio buffers,
/// odd, many blocks.
const NS: [usize; 7] = [0, 1, 1024, 2048, 2049, 5000, 70_000];

/// Writes `n` u32 one at a time with `cfg`, then reads them one at a time;
/// returns (write counts, read counts, block size used, file).
fn measure(
    dir: &std::path::Path,
    cfg: &StreamConfig,
    n: usize,
) -> (SyscallCounts, SyscallCounts, usize, std::path::PathBuf) {
    let p = dir.join(format!("{}-{}-{n}", cfg.kind, cfg.block_size));
    let xs = data::<u32>(n, n as u64);
    let mut out = create_output::<u32>(&p, cfg).unwrap();
    for &x in &xs {
        out.write(x).unwrap();
    }
    out.close().unwrap();
    assert!(std::fs::read(&p).unwrap() == as_bytes(&xs));
    let mut inp = open_input::<u32>(&p, cfg).unwrap();
    let mut m = 0;
    while inp.read_next().unwrap().is_some() {
        m += 1;
    }
    assert_eq!(m, n);
    inp.close().unwrap();
    (out.syscalls(), inp.syscalls(), inp.info().block_size, p)
}

#[test]
fn syscall_one_call_per_element() {
    let dir = tmp();
    for n in NS {
        let (w, r, _, _) = measure(dir.path(), &StreamConfig::new(StreamKind::Syscall), n);
        let n = n as u64;
        // One write per element; reading takes one read per element plus
        // the read that returns 0 at the end.
        assert_eq!((w.open, w.write, w.close, w.other), (1, n, 1, 0), "N={n}: {w}");
        assert_eq!((r.open, r.read, r.close), (2, n + 1, 1), "N={n}: {r}");
        assert_eq!(w.data_calls(), n);
    }
}

#[test]
fn stdio_counts_follow_bufsiz() {
    let dir = tmp();
    for n in NS {
        let (w, r, b, _) = measure(dir.path(), &StreamConfig::new(StreamKind::Stdio), n);
        assert_eq!(b, 8192);
        let s = (n * 4) as u64;
        // glibc fills its 8 KiB buffer once per 8 KiB, and one more read
        // returns 0; it writes a full buffer each time and the rest at fflush.
        assert_eq!(r.read, s.div_ceil(8192) + 1, "N={n}: {r}");
        assert_eq!(w.write, s.div_ceil(8192), "N={n}: {w}");
        assert_eq!((w.open, w.close, r.open, r.close), (1, 1, 2, 1), "N={n}: {w} / {r}");
    }
}

#[test]
fn buffered_one_call_per_block() {
    let dir = tmp();
    for b in [4096, 5000, 65536] {
        for n in NS {
            let cfg = StreamConfig::new(StreamKind::Buffered).block_size(b);
            let (w, r, bb, _) = measure(dir.path(), &cfg, n);
            let s = (n * 4) as u64;
            let bb = bb as u64;
            assert_eq!(r.read, s.div_ceil(bb) + 1, "B={b} N={n}: {r}");
            assert_eq!(w.write, s.div_ceil(bb), "B={b} N={n}: {w}");
        }
    }
}

#[test]
fn mmap_one_mapping_per_window() {
    let dir = tmp();
    for b in [1, 4096, 65536] {
        for n in NS {
            let cfg = StreamConfig::new(StreamKind::Mmap).block_size(b);
            let (w, r, wsize, _) = measure(dir.path(), &cfg, n);
            let windows = ((n * 4) as u64).div_ceil(wsize as u64);
            assert_eq!((r.mmap, r.munmap, r.read), (windows, windows, 0), "B={b} N={n}: {r}");
            assert_eq!((w.mmap, w.munmap, w.write), (windows, windows, 0), "B={b} N={n}: {w}");
            // One fallocate per window, one ftruncate to the exact length.
            assert_eq!(w.truncate, windows + (windows > 0) as u64, "B={b} N={n}: {w}");
        }
    }
}

/// `STATX_DIOALIGN` offset alignment of `path`, as the stream computes it.
fn offset_align(path: &std::path::Path) -> u64 {
    use rustix::fs::{AtFlags, StatxFlags, CWD};
    match rustix::fs::statx(CWD, path, AtFlags::empty(), StatxFlags::DIOALIGN) {
        Ok(st) if st.stx_mask & StatxFlags::DIOALIGN.bits() != 0 && st.stx_dio_offset_align > 0 => {
            st.stx_dio_offset_align as u64
        }
        _ => 4096,
    }
}

#[test]
fn direct_one_call_per_block() {
    let dir = tmp();
    for b in [512, 4096, 65536] {
        for n in NS {
            let cfg = StreamConfig::new(StreamKind::Direct).block_size(b);
            let (w, r, bb, p) = measure(dir.path(), &cfg, n);
            let s = (n * 4) as u64;
            let blocks = s.div_ceil(bb as u64);
            // The size is known: no read returning 0.
            assert_eq!(r.read, blocks, "B={b} N={n}: {r}");
            assert_eq!(w.write, blocks, "B={b} N={n}: {w}");
            // ftruncate only when the last block had to be padded.
            assert_eq!(w.truncate, !s.is_multiple_of(offset_align(&p)) as u64, "B={b} N={n}: {w}");
            // open (+ fstat for input) + statx.
            assert_eq!((w.open, r.open), (2, 3), "B={b} N={n}: {w} / {r}");
        }
    }
}

#[test]
fn uring_enters_within_bounds() {
    let dir = tmp();
    for q in [1u32, 4] {
        for b in [4096, 65536] {
            for n in NS {
                let cfg = StreamConfig::new(StreamKind::Uring).block_size(b).queue_depth(q);
                let (w, r, bb, _) = measure(dir.path(), &cfg, n);
                let nb = ((n * 4) as u64).div_ceil(bb as u64);
                let q = q as u64;
                // Input: one submission at open, one per later block, and at
                // most one wait per block.
                let s = (nb > 0) as u64 + nb.saturating_sub(q);
                assert!(r.uring_enter >= s && r.uring_enter <= s + nb, "Q={q} B={b} N={n}: {r}");
                // Output: one submission per block, at most one wait per block.
                assert!(w.uring_enter >= nb && w.uring_enter <= 2 * nb, "Q={q} B={b} N={n}: {w}");
                assert_eq!((r.read, w.write), (0, 0));
                // open (+ fstat) + io_uring_setup; the file and the ring closed.
                assert_eq!((w.open, r.open, w.close, r.close), (2, 3, 2, 2), "{w} / {r}");
                if n > 0 {
                    assert!(r.uring_enter > 0 && w.uring_enter > 0);
                }
            }
        }
    }
}
