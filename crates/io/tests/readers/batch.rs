//! The batch API: many requests in, one completion per request out, with
//! the right bytes, for Q in {1, 4, 32} and for every kind.

use emsort_io::{open_reader, Calibration, ReadRequest, Reader, ReaderConfig, ReaderKind};

use super::{expected, file, Rng};
use crate::util::tmp;

/// `n` random requests (some empty, some past the end, some spanning many
/// blocks) on a file of `size` bytes.
pub fn requests(size: usize, n: usize, seed: u64) -> Vec<(u64, usize)> {
    let mut r = Rng::new(seed);
    (0..n)
        .map(|_| {
            let offset = match r.upto(7) {
                0 => size as u64 + r.upto(100),
                _ => r.upto(size as u64),
            };
            let amount = match r.upto(7) {
                0 => 0,
                1..=3 => r.upto(5000) as usize,
                4..=6 => r.upto(70_000) as usize,
                _ => r.upto(size as u64) as usize,
            };
            (offset, amount)
        })
        .collect()
}

/// Runs `reqs` as one batch on `rd` and checks every completion.
pub fn check_batch(rd: &mut dyn Reader, bytes: &[u8], reqs: &[(u64, usize)], what: &str) {
    let mut bufs: Vec<Vec<u8>> = reqs.iter().map(|&(_, a)| vec![0xEE; a]).collect();
    let mut batch: Vec<ReadRequest<'_>> =
        reqs.iter().zip(bufs.iter_mut()).map(|(&(o, _), b)| ReadRequest::new(o, b)).collect();
    let mut seen = vec![false; reqs.len()];
    let mut order = Vec::new();
    rd.read_batch(&mut batch, &mut |c| {
        assert!(!seen[c.id], "{what}: request {} completed twice", c.id);
        seen[c.id] = true;
        order.push(c.id);
        let (o, a) = reqs[c.id];
        let want = expected(bytes, o, a);
        let n = c.result.unwrap_or_else(|e| panic!("{what}: request {} ({o}, {a}): {e}", c.id));
        assert_eq!(n, want.len(), "{what}: request {} ({o}, {a})", c.id);
        assert!(c.data == want, "{what}: request {} ({o}, {a}): wrong bytes in the completion", c.id);
    })
    .unwrap_or_else(|e| panic!("{what}: batch: {e}"));
    assert!(seen.iter().all(|&s| s), "{what}: some requests never completed");
    drop(batch);
    for (i, (&(o, a), b)) in reqs.iter().zip(&bufs).enumerate() {
        let want = expected(bytes, o, a);
        assert!(b[..want.len()] == *want, "{what}: request {i}: wrong bytes in the buffer");
        assert!(b[want.len()..].iter().all(|&x| x == 0xEE), "{what}: request {i}: wrote past the end");
    }
}

#[test]
fn uring_batches_at_every_queue_depth() {
    let dir = tmp();
    let size = (1 << 20) + 12345;
    let (p, bytes) = file(dir.path(), "f", size, 21);
    for q in [1, 4, 32] {
        for block in [4096, 10_000, 1 << 20] {
            let cfg = ReaderConfig::new(ReaderKind::Uring).block_size(block).queue_depth(q);
            let mut rd = open_reader(&p, &cfg).unwrap();
            let what = format!("uring B={block} Q={q}");
            check_batch(&mut rd, &bytes, &requests(size, 150, q as u64 * 1000 + block as u64), &what);
            // The reader stays usable after a batch, for single reads too.
            super::check_random_reads(&mut rd, &bytes, 20, 5, &what);
            check_batch(&mut rd, &bytes, &[], &format!("{what}, empty batch"));
        }
    }
}

/// Small pieces and Q = 4 with many requests: completions come while other
/// requests are in flight, so not necessarily in order; every id once.
#[test]
fn uring_completions_out_of_order_are_each_reported_once() {
    let dir = tmp();
    let (p, bytes) = file(dir.path(), "f", 200_000, 22);
    let cfg = ReaderConfig::new(ReaderKind::Uring).block_size(4096).queue_depth(4);
    let mut rd = open_reader(&p, &cfg).unwrap();
    // Requests of very different lengths: a long one first, then short ones.
    let mut reqs = vec![(0u64, 150_000usize)];
    reqs.extend((0..50).map(|i| (i * 3000 + 7, 100)));
    check_batch(&mut rd, &bytes, &reqs, "uring mixed lengths");
}

#[test]
fn every_kind_serves_batches() {
    let dir = tmp();
    let size = 300_001;
    let (p, bytes) = file(dir.path(), "f", size, 23);
    let small = Calibration {
        mmap_max_request: 2000,
        uring_min_request: 100_000,
        max_block: 16_384,
        ..Default::default()
    };
    let mut cfgs: Vec<ReaderConfig> =
        ReaderKind::ALL.iter().map(|&k| ReaderConfig::new(k).block_size(8192).queue_depth(4)).collect();
    cfgs.push(ReaderConfig::new(ReaderKind::Adaptive).calibration(small));
    for cfg in cfgs {
        let mut rd = open_reader(&p, &cfg).unwrap();
        let what = format!("{} batch", cfg.kind);
        check_batch(&mut rd, &bytes, &requests(size, 120, 9), &what);
        if let Some(a) = rd.as_adaptive() {
            let c = a.counts();
            assert_eq!(c.requests(), 120, "{what}: every request counted");
            assert!(c.mmap_requests > 0 && c.uring_requests > 0, "{what}: {c:?}");
        }
    }
}

/// A callback that panics mid-batch: the reader waits for the reads in
/// flight before the panic frees the buffers, and stays usable.
#[test]
fn a_panicking_callback_leaves_the_reader_usable() {
    let dir = tmp();
    let size = 500_000;
    let (p, bytes) = file(dir.path(), "f", size, 24);
    let cfg = ReaderConfig::new(ReaderKind::Uring).block_size(4096).queue_depth(8);
    let mut rd = open_reader(&p, &cfg).unwrap();
    let reqs = requests(size, 60, 3);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut bufs: Vec<Vec<u8>> = reqs.iter().map(|&(_, a)| vec![0; a]).collect();
        let mut batch: Vec<ReadRequest<'_>> =
            reqs.iter().zip(bufs.iter_mut()).map(|(&(o, _), b)| ReadRequest::new(o, b)).collect();
        let mut seen = 0;
        rd.read_batch(&mut batch, &mut |_| {
            seen += 1;
            if seen == 10 {
                panic!("callback gives up");
            }
        })
    }));
    assert!(r.is_err(), "the panic comes through");
    check_batch(&mut rd, &bytes, &reqs, "uring after a panicking callback");
}
