//! One measurement setting of a reader campaign, and the requests it makes.
//!
//! A [`Point`] names the reader and its parameters, the file, the access
//! [`Pattern`], the request size, how many requests, the threads and the
//! [`Api`]. [`Point::requests_list`] turns it into `(offset, length)` pairs,
//! seeded, so every repetition (and fio) reads the same ranges:
//!
//! | pattern  | offsets                                                                 |
//! |----------|-------------------------------------------------------------------------|
//! | `seq`    | 0, R, 2R … up to the total (the last request shortened to end there)     |
//! | `rand`   | distinct R-aligned slots of the file, in random order (no block twice)  |
//! | `spread` | one page-aligned offset at random inside each of n equal stretches of the file, stretches in random order (a read's page-in cannot serve the next) |
//! | `repeat` | R-aligned slots drawn with repeats (the memory experiment: re-reads hit the cache only if it holds them) |

use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use emsort_io::{format_size, Madvise, ReaderConfig, ReaderKind};

/// Where the requests of a point fall (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Front to back.
    Seq,
    /// Distinct aligned slots in random order.
    Rand,
    /// One read per stretch of the file.
    Spread,
    /// Aligned slots with repeats.
    Repeat,
}

impl Pattern {
    /// The name in CSV files.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Seq => "seq",
            Pattern::Rand => "rand",
            Pattern::Spread => "spread",
            Pattern::Repeat => "repeat",
        }
    }
}

/// How the requests reach the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// One `read_bytes` call per request, timed one by one.
    Single,
    /// `read_batch` with windows of requests, Q in flight.
    Batch,
    /// fio (the peer), not an emsort reader.
    Fio,
}

impl Api {
    /// The name in CSV files.
    pub fn name(self) -> &'static str {
        match self {
            Api::Single => "single",
            Api::Batch => "batch",
            Api::Fio => "fio",
        }
    }
}

/// One measurement setting (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    /// The experiment's name.
    pub experiment: String,
    /// The parameter the experiment sweeps here (the plots' x axis):
    /// `block`, `depth`, `request`, `file`, `total`, `threads`.
    pub sweep: String,
    /// Reader kind name, or `fio`.
    pub reader: String,
    /// Block size B (bytes).
    pub block_size: u64,
    /// Queue depth Q.
    pub queue_depth: u32,
    /// The `mmap` reader's hint (`normal` for the others).
    pub madvise: String,
    /// Where the requests fall.
    pub pattern: Pattern,
    /// How they are issued.
    pub api: Api,
    /// Size of the file read.
    pub file_bytes: u64,
    /// Size of each request (the last `seq` one may be shorter).
    pub request_bytes: u64,
    /// Bytes asked for in all.
    pub total_bytes: u64,
    /// Threads sharing the requests (contiguous parts).
    pub threads: usize,
    /// Run under the memory limit (memory experiment).
    pub limited: bool,
    /// Repetitions.
    pub reps: u32,
}

impl Point {
    /// The reader's configuration (`kind` from [`Point::reader`]; `None` for fio).
    pub fn config(&self) -> Option<ReaderConfig> {
        let kind: ReaderKind = self.reader.parse().ok()?;
        let madvise: Madvise = self.madvise.parse().unwrap_or_default();
        Some(
            ReaderConfig::new(kind)
                .block_size(self.block_size as usize)
                .queue_depth(self.queue_depth)
                .madvise(madvise),
        )
    }

    /// Number of requests.
    pub fn request_count(&self) -> u64 {
        self.total_bytes.div_ceil(self.request_bytes.max(1))
    }

    /// A short label: `pread seq R=1M B=1M Q=1 T=1`.
    pub fn label(&self) -> String {
        let mut s = format!(
            "{} {} {} R={} F={}",
            self.experiment,
            self.reader,
            self.pattern.name(),
            format_size(self.request_bytes),
            format_size(self.file_bytes)
        );
        if self.reader == "pread" || self.reader == "uring" || self.reader == "fio" {
            s.push_str(&format!(" B={}", format_size(self.block_size)));
        }
        if self.reader == "uring" || self.reader == "fio" {
            s.push_str(&format!(" Q={}", self.queue_depth));
        }
        if self.reader == "mmap" {
            s.push_str(&format!(" {}", self.madvise));
        }
        if self.threads > 1 {
            s.push_str(&format!(" T={}", self.threads));
        }
        if self.total_bytes != self.file_bytes {
            s.push_str(&format!(" total={}", format_size(self.total_bytes)));
        }
        if self.limited {
            s.push_str(" limited");
        }
        s
    }

    /// The requests, `(offset, length)`, seeded by `seed` (see the module docs).
    pub fn requests_list(&self, seed: u64) -> Vec<(u64, usize)> {
        let r = self.request_bytes.max(1);
        let f = self.file_bytes;
        let n = self.request_count();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ r.rotate_left(17) ^ f.rotate_left(41));
        match self.pattern {
            Pattern::Seq => {
                let mut v = Vec::with_capacity(n as usize);
                let mut off = 0;
                while off < self.total_bytes {
                    let len = r.min(self.total_bytes - off);
                    v.push((off, len as usize));
                    off += len;
                }
                v
            }
            Pattern::Rand => {
                let slots = (f / r).max(1);
                let n = n.min(slots);
                sample(&mut rng, slots as usize, n as usize)
                    .into_iter()
                    .map(|s| (s as u64 * r, r as usize))
                    .collect()
            }
            Pattern::Spread => {
                let stride = (f / n.max(1)).max(r);
                let slots = (f / stride).max(1).min(n);
                sample(&mut rng, slots as usize, slots as usize)
                    .into_iter()
                    .map(|s| {
                        let room = (stride - r) / 4096;
                        let inside = if room > 0 { rng.random_range(0..=room) * 4096 } else { 0 };
                        (s as u64 * stride + inside, r as usize)
                    })
                    .collect()
            }
            Pattern::Repeat => {
                let slots = (f / r).max(1);
                (0..n).map(|_| (rng.random_range(0..slots) * r, r as usize)).collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pattern: Pattern, f: u64, r: u64, total: u64) -> Point {
        Point {
            experiment: "t".into(),
            sweep: "request".into(),
            reader: "pread".into(),
            block_size: r,
            queue_depth: 1,
            madvise: "normal".into(),
            pattern,
            api: Api::Single,
            file_bytes: f,
            request_bytes: r,
            total_bytes: total,
            threads: 1,
            limited: false,
            reps: 1,
        }
    }

    #[test]
    fn requests_cover_what_the_point_says() {
        let s = p(Pattern::Seq, 10_000, 4096, 10_000).requests_list(1);
        assert_eq!(s, vec![(0, 4096), (4096, 4096), (8192, 1808)]);
        let r = p(Pattern::Rand, 1 << 20, 4096, 64 * 4096).requests_list(1);
        assert_eq!(r.len(), 64);
        let mut offs: Vec<u64> = r.iter().map(|x| x.0).collect();
        offs.sort_unstable();
        offs.dedup();
        assert_eq!(offs.len(), 64, "distinct");
        assert!(offs.iter().all(|o| o % 4096 == 0 && o + 4096 <= 1 << 20));
        assert_eq!(r, p(Pattern::Rand, 1 << 20, 4096, 64 * 4096).requests_list(1), "seeded");
        let sp = p(Pattern::Spread, 1 << 24, 1, 8).requests_list(3);
        assert_eq!(sp.len(), 8);
        let mut stretch: Vec<u64> = sp.iter().map(|x| x.0 / (1 << 21)).collect();
        stretch.sort_unstable();
        assert_eq!(stretch, (0..8).collect::<Vec<_>>());
        let rep = p(Pattern::Repeat, 1 << 20, 1 << 16, 1 << 22).requests_list(1);
        assert_eq!(rep.len(), 64);
        assert!(rep.iter().all(|&(o, l)| o % (1 << 16) == 0 && o + l as u64 <= 1 << 20));
    }
}
