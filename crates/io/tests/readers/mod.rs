//! Readers (SPEC part 4) against the `std::fs::read` oracle: every kind at
//! random offsets and sizes on files of 0, 1, 4095, 4096, 4097 and
//! 1 MiB + 12345 bytes, the batch API, the adaptive reader's choices and
//! calibration file, and the errors.

mod adaptive;
mod batch;
mod errors;

use std::path::{Path, PathBuf};

use emsort_io::{open_reader, AccessHint, Calibration, Madvise, Reader, ReaderConfig, ReaderKind};
use proptest::prelude::*;

use crate::util::tmp;

/// The file sizes every reader is checked on.
pub const SIZES: [usize; 6] = [0, 1, 4095, 4096, 4097, (1 << 20) + 12345];

/// A small seeded generator (xorshift64*), so failures reproduce.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..=max`.
    pub fn upto(&mut self, max: u64) -> u64 {
        if max == u64::MAX {
            self.next()
        } else {
            self.next() % (max + 1)
        }
    }
}

/// Writes `n` pseudo-random bytes to `dir/name` and returns the path and bytes.
pub fn file(dir: &Path, name: &str, n: usize, seed: u64) -> (PathBuf, Vec<u8>) {
    let mut r = Rng::new(seed);
    let bytes: Vec<u8> = (0..n).map(|_| (r.next() >> 32) as u8).collect();
    let p = dir.join(name);
    std::fs::write(&p, &bytes).unwrap();
    (p, bytes)
}

/// The oracle: what `read_bytes(offset, amount)` must return.
pub fn expected(bytes: &[u8], offset: u64, amount: usize) -> &[u8] {
    let len = bytes.len() as u64;
    if offset >= len {
        return &[];
    }
    let end = offset.saturating_add(amount as u64).min(len);
    &bytes[offset as usize..end as usize]
}

/// A configuration of every kind, with parameters that exercise splitting:
/// odd and page-sized blocks, Q of 1, 4 and 32, every madvise hint, and an
/// adaptive reader whose small thresholds send requests of a small file to
/// all three techniques.
pub fn configs() -> Vec<ReaderConfig> {
    let small = Calibration {
        mmap_max_request: 1000,
        uring_min_request: 50_000,
        max_block: 8192,
        ..Default::default()
    };
    let mut v = vec![ReaderConfig::new(ReaderKind::Stream)];
    for m in Madvise::ALL {
        v.push(ReaderConfig::new(ReaderKind::Mmap).madvise(m));
    }
    for b in [1000, 4096, 1 << 20] {
        v.push(ReaderConfig::new(ReaderKind::Pread).block_size(b));
    }
    for (b, q) in [(4096, 1), (4096, 4), (7777, 32), (1 << 20, 4)] {
        v.push(ReaderConfig::new(ReaderKind::Uring).block_size(b).queue_depth(q));
    }
    for a in AccessHint::ALL {
        v.push(ReaderConfig::new(ReaderKind::Adaptive).access(a).calibration(small.clone()));
    }
    let direct = Calibration { direct_readahead: 2, ..small.clone() };
    v.push(ReaderConfig::new(ReaderKind::Adaptive).calibration(direct));
    let prefetch = Calibration { prefetch: true, ..small };
    v.push(ReaderConfig::new(ReaderKind::Adaptive).access(AccessHint::Random).calibration(prefetch));
    v.push(ReaderConfig::new(ReaderKind::Adaptive));
    v
}

fn describe(c: &ReaderConfig) -> String {
    format!("{} B={} Q={} madvise={} access={}", c.kind, c.block_size, c.queue_depth, c.madvise, c.access)
}

/// A request: mostly small, some around a block, a few up to the whole file
/// and beyond; offsets anywhere up to a little past the end.
fn request(r: &mut Rng, size: usize) -> (u64, usize) {
    let offset = match r.upto(9) {
        0 => 0,
        1 => size as u64 + r.upto(5000), // at or past the end
        2 => size.saturating_sub(r.upto(10) as usize) as u64, // near the end
        _ => r.upto(size as u64),
    };
    let amount = match r.upto(9) {
        0 => 0,
        1..=4 => r.upto(64) as usize,
        5..=7 => r.upto(20_000) as usize,
        8 => r.upto(300_000) as usize,
        _ => r.upto(size as u64 + 100) as usize,
    };
    (offset, amount)
}

/// Checks `n` random requests of `reader` against `bytes`, with a buffer
/// longer than the amount whose tail must stay untouched.
pub fn check_random_reads(reader: &mut dyn Reader, bytes: &[u8], n: usize, seed: u64, what: &str) {
    let mut r = Rng::new(seed);
    let mut buf = Vec::new();
    for i in 0..n {
        let (offset, amount) = request(&mut r, bytes.len());
        let extra = r.upto(16) as usize;
        buf.clear();
        buf.resize(amount + extra, 0xA5);
        let got = reader
            .read_bytes(offset, amount, &mut buf)
            .unwrap_or_else(|e| panic!("{what}: request {i} ({offset}, {amount}): {e}"));
        let want = expected(bytes, offset, amount);
        assert_eq!(
            got,
            want.len(),
            "{what}: request {i} ({offset}, {amount}) of a {}-byte file",
            bytes.len()
        );
        assert!(buf[..got] == *want, "{what}: request {i} ({offset}, {amount}): wrong bytes");
        assert!(buf[got..].iter().all(|&b| b == 0xA5), "{what}: request {i}: wrote past the bytes read");
    }
}

#[test]
fn every_reader_matches_std_fs_read() {
    let dir = tmp();
    for (k, &size) in SIZES.iter().enumerate() {
        let (p, _) = file(dir.path(), &format!("f{size}"), size, k as u64 + 1);
        let bytes = std::fs::read(&p).unwrap();
        for cfg in configs() {
            let what = format!("{} on {size} bytes", describe(&cfg));
            let mut rd = open_reader(&p, &cfg).unwrap_or_else(|e| panic!("{what}: open: {e}"));
            assert!(rd.is_open(), "{what}");
            assert_eq!(rd.len(), size as u64, "{what}");
            assert_eq!(rd.name(), cfg.kind.name(), "{what}");
            assert_eq!(rd.kind(), cfg.kind, "{what}");
            assert_eq!(rd.path(), p, "{what}");
            let n = if size > 100_000 { 150 } else { 60 };
            check_random_reads(&mut rd, &bytes, n, 7 + size as u64, &what);
            rd.close().unwrap();
            assert!(!rd.is_open(), "{what}");
        }
    }
}

/// The whole file in one request, and in consecutive requests of an odd size.
#[test]
fn whole_file_and_sequential_sweeps() {
    let dir = tmp();
    let size = (1 << 20) + 12345;
    let (p, bytes) = file(dir.path(), "f", size, 3);
    for cfg in configs() {
        let what = describe(&cfg);
        let mut rd = open_reader(&p, &cfg).unwrap();
        let mut all = vec![0u8; size + 10];
        assert_eq!(rd.read_bytes(0, size + 10, &mut all).unwrap(), size, "{what}");
        assert!(all[..size] == bytes[..], "{what}: whole file");
        let mut out = Vec::with_capacity(size);
        let mut buf = vec![0u8; 40_000];
        let mut off = 0u64;
        loop {
            let n = rd.read_bytes(off, 33_333, &mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
            off += n as u64;
        }
        assert!(out == bytes, "{what}: sequential sweep");
    }
}

#[test]
fn past_the_end_zero_amount_and_short_at_the_end() {
    let dir = tmp();
    let (p, bytes) = file(dir.path(), "f", 4097, 5);
    for cfg in configs() {
        let what = describe(&cfg);
        let mut rd = open_reader(&p, &cfg).unwrap();
        let mut buf = vec![7u8; 100];
        assert_eq!(rd.read_bytes(4097, 10, &mut buf).unwrap(), 0, "{what}: at the end");
        assert_eq!(rd.read_bytes(1 << 40, 10, &mut buf).unwrap(), 0, "{what}: far past the end");
        assert_eq!(rd.read_bytes(u64::MAX, 10, &mut buf).unwrap(), 0, "{what}: at u64::MAX");
        assert_eq!(rd.read_bytes(10, 0, &mut buf).unwrap(), 0, "{what}: amount 0");
        assert_eq!(rd.read_bytes(10, 0, &mut []).unwrap(), 0, "{what}: amount 0, empty buffer");
        assert!(buf.iter().all(|&b| b == 7), "{what}: nothing written");
        assert_eq!(rd.read_bytes(4090, 100, &mut buf).unwrap(), 7, "{what}: short at the end");
        assert_eq!(buf[..7], bytes[4090..], "{what}");
        assert!(buf[7..].iter().all(|&b| b == 7), "{what}: nothing written past the end");
    }
}

#[test]
#[should_panic(expected = "shorter than amount")]
fn a_buffer_shorter_than_the_amount_is_a_bug() {
    let dir = tmp();
    let (p, _) = file(dir.path(), "f", 100, 1);
    let mut rd = open_reader(&p, &ReaderConfig::new(ReaderKind::Pread)).unwrap();
    let mut buf = [0u8; 4];
    let _ = rd.read_bytes(0, 5, &mut buf);
}

/// `open` keeps the file already open and switches to another one.
#[test]
fn open_reuses_or_switches_files() {
    let dir = tmp();
    let (a, abytes) = file(dir.path(), "a", 5000, 1);
    let (b, bbytes) = file(dir.path(), "b", 3000, 2);
    for cfg in configs() {
        let what = describe(&cfg);
        let mut rd = emsort_io::AnyReader::new(&cfg);
        assert!(!rd.is_open(), "{what}");
        assert_eq!(rd.len(), 0, "{what}");
        rd.open(&a).unwrap();
        rd.open(&a).unwrap();
        check_random_reads(&mut rd, &abytes, 10, 1, &what);
        rd.open(&b).unwrap();
        assert_eq!(rd.path(), b, "{what}");
        assert_eq!(rd.len(), 3000, "{what}");
        check_random_reads(&mut rd, &bbytes, 10, 2, &what);
        rd.close().unwrap();
        rd.close().unwrap();
        rd.open(&a).unwrap();
        check_random_reads(&mut rd, &abytes, 10, 3, &what);
    }
}

#[test]
fn kind_names_round_trip() {
    let names: Vec<String> = ReaderKind::ALL.iter().map(|k| k.to_string()).collect();
    assert_eq!(names, ["stream", "mmap", "pread", "uring", "adaptive"]);
    for k in ReaderKind::ALL {
        assert_eq!(k.name().parse::<ReaderKind>(), Ok(k));
    }
    assert!("buffered".parse::<ReaderKind>().unwrap_err().contains("expected one of"));
}

/// Any kind, block size, queue depth, offset and amount. The file is made
/// once per run, in a directory this test owns and removes (a `static`
/// would never be dropped, and left the directory in /tmp).
#[test]
fn any_request_matches_the_oracle() {
    let dir = tmp();
    let (p, bytes) = file(dir.path(), "prop", 3 * 4096 + 77, 11);
    proptest!(ProptestConfig::with_cases(64), |(
        kind in 0usize..5,
        block in 1usize..10_000,
        q in 1u32..40,
        reqs in proptest::collection::vec((0u64..13_000, 0usize..13_000), 1..20),
    )| {
        let cfg = ReaderConfig::new(ReaderKind::ALL[kind]).block_size(block).queue_depth(q);
        let mut rd = open_reader(&p, &cfg).unwrap();
        for (offset, amount) in reqs {
            let mut buf = vec![0u8; amount];
            let n = rd.read_bytes(offset, amount, &mut buf).unwrap();
            prop_assert_eq!(&buf[..n], expected(&bytes, offset, amount));
        }
    });
}
