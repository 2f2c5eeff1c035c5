//! Synthetic workloads that mimic the thesis' three traces, and a mixed one.
//!
//! The thesis replayed logs of the Carmenta engine (§5.2, §5.3); the logs
//! are not public, but their summaries are: bytes read and the share of
//! bytes in requests larger than 32 KiB. The engine reads in 4 KiB blocks,
//! and runs of consecutive blocks were merged into larger requests (§3.4),
//! so every request here is a whole number of 4 KiB pages at a page-aligned
//! offset. [`Workload`] names four patterns:
//!
//! | kind    | bytes read (scale 1) | in requests > 32 KiB | files (scale 1) | requests |
//! |---------|----------------------|----------------------|-----------------|----------|
//! | `ct`    | 652.88 MB            | 9.2 %                | ≤ 32 of about 32 MiB, together ¾ of the bytes read | small: 4K (50 %), 8K (25 %), 16K (15 %), 32K (10 %) by count; large: 64K–1M log-uniform; random files (∝ size) and offsets |
//! | `am`    | 7 MB                 | 99.8 %               | ≤ 8 of at least 32 MiB and 4 × their run | a 4 KiB header read at offset 0, then one contiguous run of frames from a random offset, front to back in chunks of 128K–1M |
//! | `im`    | 2415 MB              | 0.6 %                | ≤ 64 of about 64 MiB, together 0.6 × the bytes read (tiles read again) | small: 4K (40 %), 8K (30 %), 12K (15 %), 16K (10 %), 32K (5 %); large: 64K–256K; random |
//! | `mixed` | ≈ 913 MB             | ≈ 51 %               | the three sets of files (`am`'s 4 × what is read of them) | `ct` × ¼, `am` × 64 and `im` × ⅛, interleaved request by request |
//!
//! **File sizes.** Data files are several times the kernel's readahead
//! window (`read_ahead_kb`, 8 MiB on the machines we measured; 128 KiB is
//! the usual default): a map or animation file of tens of MiB, of which a
//! random read touches one part. With files smaller than the window, a
//! single page fault of `mmap` (which reads around the faulting page, up to
//! the window) or one readahead would bring in the whole file, which no
//! real workload of large files sees. The file size at scale 1 does not
//! depend on the mix factor (`mixed` reads fewer bytes of `ct`, not smaller
//! files); it follows `scale`, so quick runs keep small files.
//!
//! The mixed trace is the one where neither `mmap` (best for small random
//! reads) nor a buffered reader with a large block (best for large reads)
//! wins on every request, so an adaptive reader has something to gain (the
//! thesis' §5.4: "the workload has to contain a mix of larger and smaller
//! read request sizes"). Its parts keep their own order; which part gives
//! the next request is drawn at random in proportion to the requests each
//! has left.
//!
//! # Sizes and scale
//!
//! `scale` multiplies the bytes read (and so the files); it is raised where
//! needed so that each part reads at least [`MIN_BYTES`] (tiny scales still
//! hold large requests, and `mixed` keeps its proportions):
//! [`Workload::effective_scale`]. `am` therefore never reads less than
//! 1 MiB (scale 0.15), `mixed` less than about 5.9 MiB (scale 0.0064).
//! Request sizes are drawn until the byte budgets of the small and the large
//! requests are spent (the last request of each is cut to fit), so the share
//! of bytes in large requests is the target within about 36 KiB over the
//! bytes read. A file is at least as large as the largest request; random
//! patterns have as many files of about `file_size` × `scale` as their
//! `file_ratio` × bytes read fill (at most `files`).
//!
//! # Determinism
//!
//! Everything comes from seeded xoshiro256++ generators: the plan
//! ([`plan`]) from `seed` and the pattern, each data file's bytes from
//! `seed`, the pattern and the file's number. The same kind, scale and seed
//! give the same trace and the same bytes.
//!
//! ```no_run
//! use emsort_bench::replay::{generate, Workload};
//! use emsort_io::NoProgress;
//! use std::sync::atomic::AtomicBool;
//! # fn main() -> Result<(), emsort_bench::Error> {
//! let s = generate("/tmp/tr".as_ref(), Workload::Ct, 0.01, 42, &NoProgress, &AtomicBool::new(false))?;
//! println!("{} files, {} requests, {:.1} % large", s.files, s.requests, s.large_share * 100.0);
//! # Ok(()) }
//! ```

use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};

use emsort_io::{AtomicFile, Progress};
use rand::{Rng, RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::trace::{Request, Trace, LARGE_REQUEST};
use crate::{Error, Result};

/// The page size of the thesis' engine: requests and offsets are multiples.
pub const PAGE: u64 = 4096;

/// Each pattern reads at least this many bytes, whatever the scale: 1 MiB.
pub const MIN_BYTES: u64 = 1 << 20;

/// The name of the trace file `generate` writes into its directory.
pub const TRACE_FILE: &str = "trace.csv";

/// A synthetic workload (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Workload {
    /// The Carmenta test suite: mostly small random reads, 9.2 % of bytes large.
    Ct,
    /// Animation files: large sequential reads, 99.8 % of bytes large.
    Am,
    /// Interactive map: small random reads of tiles, 0.6 % of bytes large.
    Im,
    /// The three interleaved, about half the bytes in large requests.
    Mixed,
}

impl Workload {
    /// All workloads.
    pub const ALL: [Workload; 4] = [Workload::Ct, Workload::Am, Workload::Im, Workload::Mixed];

    /// The name used on the command line (`ct`, `am`, `im`, `mixed`).
    pub fn name(self) -> &'static str {
        match self {
            Workload::Ct => "ct",
            Workload::Am => "am",
            Workload::Im => "im",
            Workload::Mixed => "mixed",
        }
    }

    /// The bytes read at `scale` and the share of them in requests larger
    /// than 32 KiB that the workload aims at (the thesis' numbers for `ct`,
    /// `am` and `im`; the weighted mix for `mixed`).
    pub fn target(self, scale: f64) -> (u64, f64) {
        let scale = self.effective_scale(scale);
        let parts: Vec<(u64, f64)> = self
            .parts()
            .into_iter()
            .map(|(p, f)| (((p.bytes as f64 * scale * f).round() as u64).max(MIN_BYTES), p.large_share))
            .collect();
        let bytes: u64 = parts.iter().map(|p| p.0).sum();
        let large: f64 = parts.iter().map(|&(b, s)| b as f64 * s).sum();
        (bytes, large / bytes as f64)
    }

    /// `scale`, raised so that every part reads at least [`MIN_BYTES`]
    /// (all parts together, so a mix keeps its proportions).
    pub fn effective_scale(self, scale: f64) -> f64 {
        self.parts().into_iter().map(|(p, f)| MIN_BYTES as f64 / (p.bytes as f64 * f)).fold(scale, f64::max)
    }

    /// The patterns it is made of, each with its scale factor.
    fn parts(self) -> Vec<(&'static Pattern, f64)> {
        match self {
            Workload::Ct => vec![(&CT, 1.0)],
            Workload::Am => vec![(&AM, 1.0)],
            Workload::Im => vec![(&IM, 1.0)],
            Workload::Mixed => vec![(&CT, 0.25), (&AM, 64.0), (&IM, 0.125)],
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Workload {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Workload, String> {
        Workload::ALL
            .into_iter()
            .find(|w| w.name() == s)
            .ok_or_else(|| format!("unknown workload '{s}' (expected ct, am, im or mixed)"))
    }
}

/// One access pattern: what the thesis tells of a workload, plus the
/// choices that fill in what it does not.
#[derive(Debug)]
struct Pattern {
    /// File name prefix (`ct` → `ct_000.bin`).
    prefix: &'static str,
    /// Bytes read at scale 1.
    bytes: u64,
    /// Share of the bytes in requests larger than 32 KiB.
    large_share: f64,
    /// Most files.
    files: usize,
    /// Typical file size at scale 1 (random patterns); the smallest file
    /// (sequential patterns, whose files also hold what is read of them).
    file_size: u64,
    /// Total file size over bytes read (random patterns; < 1 means some
    /// data are read more than once).
    file_ratio: f64,
    /// Small request sizes in pages, with weights (by count).
    small: &'static [(u64, u32)],
    /// Large request sizes in pages, drawn log-uniformly in this range.
    large: (u64, u64),
    /// Files read front to back (else random files and offsets).
    sequential: bool,
}

const CT: Pattern = Pattern {
    prefix: "ct",
    bytes: 652_880_000,
    large_share: 0.092,
    files: 32,
    file_size: 32 << 20,
    file_ratio: 0.75,
    small: &[(1, 50), (2, 25), (4, 15), (8, 10)],
    large: (16, 256),
    sequential: false,
};

const AM: Pattern = Pattern {
    prefix: "am",
    bytes: 7_000_000,
    large_share: 0.998,
    files: 8,
    file_size: 32 << 20,
    file_ratio: 1.0,
    small: &[(1, 1)],
    large: (32, 256),
    sequential: true,
};

const IM: Pattern = Pattern {
    prefix: "im",
    bytes: 2_415_000_000,
    large_share: 0.006,
    files: 64,
    file_size: 64 << 20,
    file_ratio: 0.6,
    small: &[(1, 40), (2, 30), (3, 15), (4, 10), (8, 5)],
    large: (16, 64),
    sequential: false,
};

/// A planned data file: its path, size and the seed of its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFile {
    /// Where it goes.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Seed of its pseudo-random bytes.
    pub seed: u64,
}

/// What [`generate`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct GenSummary {
    /// The workload.
    pub workload: Workload,
    /// The trace file (`DIR/trace.csv`).
    pub trace_path: PathBuf,
    /// Data files written.
    pub files: usize,
    /// Their total size in bytes.
    pub file_bytes: u64,
    /// Requests in the trace.
    pub requests: usize,
    /// Bytes the requests ask for.
    pub bytes: u64,
    /// Bytes in requests larger than 32 KiB.
    pub large_bytes: u64,
    /// `large_bytes / bytes`.
    pub large_share: f64,
}

/// Plans a workload without writing anything: the trace (to be written at
/// `dir/trace.csv`) and its data files.
pub fn plan(dir: &Path, workload: Workload, scale: f64, seed: u64) -> Result<(Trace, Vec<DataFile>)> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(Error::Campaign(format!("scale {scale} must be a positive number")));
    }
    let scale = workload.effective_scale(scale);
    let mut files = Vec::new();
    let mut parts = Vec::new();
    for (p, factor) in workload.parts() {
        let (reqs, sizes) = plan_pattern(p, scale * factor, scale, seed);
        let base = files.len();
        for (i, size) in sizes.into_iter().enumerate() {
            files.push(DataFile {
                path: dir.join(format!("{}_{i:03}.bin", p.prefix)),
                size,
                seed: mix(seed, p.prefix, i as u64 + 1),
            });
        }
        parts.push(reqs.into_iter().map(|r| Request { file: r.file + base, ..r }).collect::<Vec<_>>());
    }
    let requests = interleave(parts, mix(seed, "interleave", 0));
    let paths = files.iter().map(|f| f.path.clone()).collect();
    Ok((Trace::from_parts(&dir.join(TRACE_FILE), paths, requests), files))
}

/// Writes the data files and `dir/trace.csv` of `workload` at `scale`
/// (see the [module docs](self)); `dir` is created if needed. Each file is
/// written beside its name and renamed when complete; the trace comes last.
pub fn generate(
    dir: &Path,
    workload: Workload,
    scale: f64,
    seed: u64,
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<GenSummary> {
    let (trace, files) = plan(dir, workload, scale, seed)?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))?;
    let file_bytes: u64 = files.iter().map(|f| f.size).sum();
    crate::scratch::check_space(
        dir,
        file_bytes + trace.requests().len() as u64 * 32,
        format!("the trace's data files in {}", dir.display()),
    )?;
    progress.phase_bytes("gen-trace", Some(file_bytes));
    for f in &files {
        write_data_file(f, progress, cancel)?;
    }
    progress.finish_phase();
    let summary = GenSummary {
        workload,
        trace_path: trace.path().to_path_buf(),
        files: files.len(),
        file_bytes,
        requests: trace.requests().len(),
        bytes: trace.bytes(),
        large_bytes: trace.large_bytes(),
        large_share: trace.large_share(),
    };
    let comments = [
        format!("emsort gen-trace --kind {workload} --scale {scale} --seed {seed}"),
        format!(
            "{} requests over {} files, {} bytes, {:.2} % of them in requests > 32 KiB",
            summary.requests,
            summary.files,
            summary.bytes,
            summary.large_share * 100.0
        ),
    ];
    let out = AtomicFile::create(trace.path())?;
    std::io::Write::write_all(&mut out.file(), trace.to_text(dir, &comments).as_bytes())
        .map_err(|e| Error::io("write", trace.path(), e))?;
    out.commit()?;
    Ok(summary)
}

/// The bytes of a data file: its seeded generator's output.
pub fn data_rng(seed: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

fn write_data_file(f: &DataFile, progress: &dyn Progress, cancel: &AtomicBool) -> Result<()> {
    const CHUNK: usize = 1 << 20;
    let out = AtomicFile::create(&f.path)?;
    let mut file = out.file();
    let mut rng = data_rng(f.seed);
    let mut buf = vec![0u8; CHUNK];
    let mut left = f.size;
    while left > 0 {
        if cancel.load(Ordering::Relaxed) {
            return Err(emsort_io::Error::new(emsort_io::ErrorKind::Interrupted, &f.path).into());
        }
        let n = left.min(CHUNK as u64) as usize;
        rng.fill_bytes(&mut buf[..n]);
        file.write_all(&buf[..n]).map_err(|e| Error::io("write", &f.path, e))?;
        left -= n as u64;
        progress.advance(n as u64);
    }
    out.commit()?;
    Ok(())
}

/// A seed for `what` number `i`, derived from the user's seed.
fn mix(seed: u64, what: &str, i: u64) -> u64 {
    // FNV-1a over the name, then a splitmix-style finaliser.
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in what.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let mut z = seed ^ h ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Request sizes (bytes) spending `budget` bytes: each drawn by `draw`
/// (pages), cut to what is left; stops when less than `min` bytes are left.
fn spend(budget: u64, min: u64, mut draw: impl FnMut() -> u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut left = budget;
    while left >= min {
        let size = (draw() * PAGE).min(left / PAGE * PAGE);
        v.push(size);
        left -= size;
    }
    v
}

/// The requests of one pattern (file indexes local to it) and its file
/// sizes; `scale` sets the bytes read, `file_scale` the size of the files.
fn plan_pattern(p: &Pattern, scale: f64, file_scale: f64, seed: u64) -> (Vec<Request>, Vec<u64>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(mix(seed, p.prefix, 0));
    let total = ((p.bytes as f64 * scale).round() as u64).max(MIN_BYTES);
    let small_budget = (total as f64 * (1.0 - p.large_share)).round() as u64;
    let weight_sum: u32 = p.small.iter().map(|s| s.1).sum();
    let small = spend(small_budget, PAGE, || {
        let mut x = rng.random_range(0..weight_sum);
        for &(pages, w) in p.small {
            if x < w {
                return pages;
            }
            x -= w;
        }
        unreachable!("x < weight_sum")
    });
    let (lo, hi) = (p.large.0 as f64, p.large.1 as f64);
    let large = spend(total - small_budget, LARGE_REQUEST + PAGE, || {
        (lo * (hi / lo).powf(rng.random::<f64>())).round() as u64
    });
    let largest = p.large.1 * PAGE;
    let typical = ((p.file_size as f64 * file_scale) as u64 / PAGE * PAGE).max(largest);
    if p.sequential {
        sequential_plan(p, &small, &large, typical, &mut rng)
    } else {
        let file_total = (total as f64 * p.file_ratio) as u64;
        let n = ((file_total / typical) as usize).clamp(1, p.files);
        let weights: Vec<f64> = (0..n).map(|_| rng.random_range(0.75..1.25)).collect();
        let wsum: f64 = weights.iter().sum();
        let sizes: Vec<u64> = weights
            .iter()
            .map(|w| ((file_total as f64 * w / wsum) as u64 / PAGE * PAGE).max(largest))
            .collect();
        let mut all: Vec<u64> = small.into_iter().chain(large).collect();
        shuffle(&mut all, &mut rng);
        let size_sum: u64 = sizes.iter().sum();
        let reqs = all
            .into_iter()
            .map(|size| {
                // A file with probability ∝ its size, then a page-aligned offset.
                let mut x = rng.random_range(0..size_sum);
                let mut file = 0;
                while x >= sizes[file] {
                    x -= sizes[file];
                    file += 1;
                }
                let pages = (sizes[file] - size) / PAGE;
                Request { file, offset: rng.random_range(0..=pages) * PAGE, size }
            })
            .collect();
        (reqs, sizes)
    }
}

/// A sequential pattern's run of frames is at most this share of its file:
/// an animation is a part of a larger file (the thesis' `am` reads about
/// 1 MB of each file of at least 32 MiB). It matters for `mixed`, whose
/// `am` part reads 64 times more per file: without it the files would be
/// read whole, and a reader that wastes a readahead window at the header
/// and before the run (`mmap`) would pay nothing for it.
pub const RUN_SHARE: u64 = 4;

/// Files read front to back: each starts with a one-page header (read by
/// the small requests, at offset 0), then its share of the large requests
/// as consecutive chunks: one run of frames, from a random page after the
/// header. A file holds at least `min_size` bytes and [`RUN_SHARE`] times
/// its run. Files are read one after the other.
fn sequential_plan(
    p: &Pattern,
    small: &[u64],
    large: &[u64],
    min_size: u64,
    rng: &mut impl Rng,
) -> (Vec<Request>, Vec<u64>) {
    let total: u64 = small.iter().chain(large).sum();
    let n = p.files.min(large.len().max(1)).min((total / (512 << 10)).max(1) as usize);
    let header = small.iter().copied().max().unwrap_or(PAGE).max(PAGE);
    let mut reqs = Vec::new();
    let mut sizes = Vec::new();
    for file in 0..n {
        for &size in small.iter().skip(file).step_by(n) {
            reqs.push(Request { file, offset: 0, size });
        }
        let chunk = &large[large.len() * file / n..large.len() * (file + 1) / n];
        let run: u64 = chunk.iter().sum();
        let size = (header + run).max(min_size).max(RUN_SHARE * run / PAGE * PAGE);
        let mut offset = header + rng.random_range(0..=(size - header - run) / PAGE) * PAGE;
        for &s in chunk {
            reqs.push(Request { file, offset, size: s });
            offset += s;
        }
        sizes.push(size);
    }
    (reqs, sizes)
}

/// Fisher–Yates.
fn shuffle<T>(v: &mut [T], rng: &mut impl Rng) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.random_range(0..=i));
    }
}

/// Merges lists keeping each one's order; the next request comes from a
/// list drawn in proportion to the requests it has left.
fn interleave(parts: Vec<Vec<Request>>, seed: u64) -> Vec<Request> {
    if parts.len() == 1 {
        return parts.into_iter().next().unwrap_or_default();
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut next = vec![0usize; parts.len()];
    let mut left: usize = parts.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(left);
    while left > 0 {
        let mut x = rng.random_range(0..left);
        let mut i = 0;
        while x >= parts[i].len() - next[i] {
            x -= parts[i].len() - next[i];
            i += 1;
        }
        out.push(parts[i][next[i]]);
        next[i] += 1;
        left -= 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_plan(w: Workload, scale: f64) -> Trace {
        let (t, files) = plan(Path::new("/d"), w, scale, 7).unwrap();
        assert_eq!(t.files().len(), files.len());
        for r in t.requests() {
            let f = &files[r.file];
            assert!(r.offset + r.size <= f.size, "{w}: {r:?} past {} bytes", f.size);
            assert_eq!((r.offset % PAGE, r.size % PAGE), (0, 0), "{w}: {r:?}");
            assert!(r.size > 0);
        }
        t
    }

    #[test]
    fn shares_and_sizes_match_the_thesis_at_small_scales() {
        for (w, scale, bytes, share, tol) in [
            (Workload::Ct, 0.01, 6_528_800.0, 0.092, 0.01),
            (Workload::Am, 1.0, 7_000_000.0, 0.998, 0.002),
            (Workload::Im, 0.005, 12_075_000.0, 0.006, 0.004),
        ] {
            let t = check_plan(w, scale);
            let b = t.bytes() as f64;
            assert!((b / bytes - 1.0).abs() < 0.01, "{w}: {b} bytes, want {bytes}");
            assert!((t.large_share() - share).abs() < tol, "{w}: share {}", t.large_share());
        }
        let (b, share) = Workload::Ct.target(1.0);
        assert_eq!(b, 652_880_000);
        assert!((share - 0.092).abs() < 1e-12);
        let (b, share) = Workload::Mixed.target(1.0);
        assert!((b as f64 / 913e6 - 1.0).abs() < 0.01 && (share - 0.51).abs() < 0.01, "{b} {share}");
        let t = check_plan(Workload::Mixed, 0.01);
        assert!((t.large_share() - 0.5).abs() < 0.05, "mixed share {}", t.large_share());
        // Tiny scales still read MIN_BYTES per part, and mixed keeps its proportions.
        let t = check_plan(Workload::Am, 0.0001);
        assert!(t.bytes() >= MIN_BYTES - 40 * 1024 && t.large_share() > 0.99);
        let t = check_plan(Workload::Mixed, 0.0001);
        assert!((t.large_share() - 0.51).abs() < 0.03, "mixed share {}", t.large_share());
        assert!((Workload::Mixed.effective_scale(0.0) - 0.00642).abs() < 1e-4);
    }

    #[test]
    fn files_are_larger_than_a_readahead_window_at_scale_1() {
        // Planning does not write: scale 1 is cheap. The byte totals and
        // shares stay the thesis' (tested above); the files are realistic:
        // several times an 8 MiB readahead window, and not shrunk by the mix.
        for w in Workload::ALL {
            let (t, files) = plan(Path::new("/d"), w, 1.0, 7).unwrap();
            let (bytes, share) = w.target(1.0);
            assert!((t.bytes() as f64 / bytes as f64 - 1.0).abs() < 0.001, "{w}: {} bytes", t.bytes());
            assert!((t.large_share() - share).abs() < 0.01, "{w}: share {}", t.large_share());
            for f in &files {
                assert!(f.size >= 24 << 20, "{w}: {} has {} bytes", f.path.display(), f.size);
            }
        }
        // An animation's run is at most a quarter of its file, in `mixed` too.
        for w in [Workload::Am, Workload::Mixed] {
            let (t, files) = plan(Path::new("/d"), w, 1.0, 7).unwrap();
            for (i, f) in files.iter().enumerate().filter(|(_, f)| f.path.to_string_lossy().contains("/am_"))
            {
                let read: u64 =
                    t.requests().iter().filter(|r| r.file == i && r.offset > 0).map(|r| r.size).sum();
                assert!(
                    read > 0 && read * RUN_SHARE <= f.size + PAGE * RUN_SHARE,
                    "{w}: {read} of {}",
                    f.size
                );
            }
        }
        // At small scales the files shrink with the bytes read.
        let (_, files) = plan(Path::new("/d"), Workload::Ct, 0.01, 7).unwrap();
        assert!(files.iter().all(|f| f.size < 4 << 20), "{files:?}");
    }

    #[test]
    fn plans_are_deterministic() {
        let a = plan(Path::new("/d"), Workload::Mixed, 0.002, 1).unwrap();
        let b = plan(Path::new("/d"), Workload::Mixed, 0.002, 1).unwrap();
        let c = plan(Path::new("/d"), Workload::Mixed, 0.002, 2).unwrap();
        assert_eq!(a, b);
        assert_ne!(a.0, c.0);
        assert!(plan(Path::new("/d"), Workload::Ct, 0.0, 1).is_err());
        assert!(plan(Path::new("/d"), Workload::Ct, f64::NAN, 1).is_err());
    }

    #[test]
    fn mixed_keeps_each_parts_order() {
        let (t, files) = plan(Path::new("/d"), Workload::Mixed, 0.002, 3).unwrap();
        let am: Vec<&Request> = t
            .requests()
            .iter()
            .filter(|r| files[r.file].path.file_name().unwrap().to_string_lossy().starts_with("am_"))
            .collect();
        // am files are read front to back, one file after the other: the
        // header, then one run of frames somewhere after it.
        for w in am.windows(2) {
            if w[0].file == w[1].file && w[1].offset != 0 {
                if w[0].offset == 0 {
                    assert!(w[1].offset >= PAGE);
                } else {
                    assert_eq!(w[1].offset, w[0].offset + w[0].size);
                }
            }
        }
        let kinds: std::collections::HashSet<&str> =
            files.iter().map(|f| &f.path.file_name().unwrap().to_str().unwrap()[..2]).collect();
        assert_eq!(kinds.len(), 3);
    }

    #[test]
    fn generate_writes_files_and_trace() {
        let dir = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(false);
        let s = generate(dir.path(), Workload::Am, 0.001, 5, &emsort_io::NoProgress, &stop).unwrap();
        let t = Trace::read(&s.trace_path).unwrap();
        assert_eq!((t.requests().len(), t.bytes()), (s.requests, s.bytes));
        let sizes = t.check_files().unwrap();
        assert_eq!(sizes.iter().sum::<u64>(), s.file_bytes);
        let (_, planned) = plan(dir.path(), Workload::Am, 0.001, 5).unwrap();
        let mut rng = data_rng(planned[0].seed);
        let mut want = vec![0u8; planned[0].size as usize];
        rng.fill_bytes(&mut want);
        assert_eq!(std::fs::read(&planned[0].path).unwrap(), want);
        let text = std::fs::read_to_string(&s.trace_path).unwrap();
        assert!(text.starts_with("# emsort gen-trace --kind am --scale 0.001 --seed 5\n# "), "{text}");
        // Cancelled: no trace, no temporary files.
        let other = dir.path().join("x");
        stop.store(true, Ordering::Relaxed);
        let e = generate(&other, Workload::Ct, 0.001, 5, &emsort_io::NoProgress, &stop).unwrap_err();
        assert!(e.to_string().contains("interrupted"), "{e}");
        assert_eq!(std::fs::read_dir(&other).unwrap().count(), 0);
    }
}
