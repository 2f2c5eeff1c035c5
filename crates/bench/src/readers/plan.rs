//! What a reader campaign measures: the experiments and their grids.
//!
//! A [`Plan`] holds every list the seven experiments draw their points
//! from. It comes from a parameter file of `key;value` lines ([`parse_plan`];
//! `bench/params/readers-full.csv` is the full campaign and documents every
//! key, `bench/params/readers-quick.csv` the `--quick` one), each value a
//! list:
//!
//! - sizes: `4K,64K,1M`, or `4K..64M` (every power of two between), or `4K..64M*4`
//!   (every fourth power: 4K, 16K, 64K …);
//! - integers: `1,2,4` or `1..4`; `threads.list` also takes `2x` (1 … 2 ×
//!   the cores);
//! - names: `pread,uring`, `all` for every reader kind.
//!
//! A key missing from the file keeps its value from [`Plan::default`] (the
//! full campaign's grid).

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use emsort_io::{parse_size, Madvise, ReaderKind};

use crate::list::{parse_int_list, split_list};
use crate::{Error, Result};

/// The seven experiments of experiment 4, the readers (issue 5 §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Experiment {
    /// `pread` and `uring` (Q = 1) throughput and single-block latency
    /// against the block size B, sequential and random.
    BlockSize,
    /// `uring` throughput against the queue depth Q through its batch API,
    /// sequential and random × request size, beside fio.
    QueueDepth,
    /// `mmap` page-in: single random read latency against the request size
    /// for each `madvise` hint, with page faults and the bytes paged in.
    Mmap,
    /// Every reader reading a file front to back: against the file size and
    /// against the total bytes read.
    Sequential,
    /// Every reader at random offsets: against the request size, the file
    /// size and the total bytes read.
    Random,
    /// Random reads of a file larger than the memory left to the reader
    /// (a cgroup v2 `memory.max`, or a locked balloon), beside the same
    /// reads without a limit.
    Memory,
    /// 1 … 2 × cores threads reading one file: sequential, random small and
    /// random large requests.
    Threads,
}

impl Experiment {
    /// All experiments, in the order they run.
    pub const ALL: [Experiment; 7] = [
        Experiment::BlockSize,
        Experiment::QueueDepth,
        Experiment::Mmap,
        Experiment::Sequential,
        Experiment::Random,
        Experiment::Memory,
        Experiment::Threads,
    ];

    /// The name used on the command line and in file names.
    pub fn name(self) -> &'static str {
        match self {
            Experiment::BlockSize => "blocksize",
            Experiment::QueueDepth => "queue-depth",
            Experiment::Mmap => "mmap",
            Experiment::Sequential => "sequential",
            Experiment::Random => "random",
            Experiment::Memory => "memory",
            Experiment::Threads => "threads",
        }
    }
}

impl fmt::Display for Experiment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Experiment {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Experiment, String> {
        Experiment::ALL.iter().copied().find(|e| e.name() == s.trim()).ok_or_else(|| {
            format!(
                "unknown experiment '{}' (expected one of: {}, or all)",
                s.trim(),
                Experiment::ALL.map(|e| e.name()).join(", ")
            )
        })
    }
}

/// Parses `blocksize,mmap` or `all` into experiments in run order.
pub fn parse_experiments(s: &str) -> std::result::Result<Vec<Experiment>, String> {
    if s.trim() == "all" {
        return Ok(Experiment::ALL.to_vec());
    }
    let mut v = split_list(s)?.into_iter().map(str::parse).collect::<std::result::Result<Vec<_>, _>>()?;
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// Thread counts: a list, or `2x` for 1 … 2 × cores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreadList {
    /// These counts.
    List(Vec<usize>),
    /// 1 … 2 × the logical CPUs of this machine.
    TwiceCores,
}

impl ThreadList {
    /// The counts on this machine.
    pub fn counts(&self) -> Vec<usize> {
        match self {
            ThreadList::List(v) => v.clone(),
            ThreadList::TwiceCores => {
                let c = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
                (1..=2 * c).collect()
            }
        }
    }
}

/// Every list the experiments draw their points from (see the module docs;
/// the keys of the parameter file are the field paths, e.g.
/// `blocksize.blocks`).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// `reps`: repetitions of every point.
    pub reps: u32,
    /// `seed`: seeds the random offsets.
    pub seed: u64,
    /// `blocksize.file`: the file read.
    pub bs_file: u64,
    /// `blocksize.blocks`: block sizes B (each request is one block).
    pub bs_blocks: Vec<u64>,
    /// `blocksize.requests`: random blocks read per point (at most the
    /// blocks in the file; the sequential runs read the whole file).
    pub bs_requests: u64,
    /// `queue-depth.file`: the file read.
    pub qd_file: u64,
    /// `queue-depth.depths`: queue depths Q.
    pub qd_depths: Vec<u32>,
    /// `queue-depth.seq_block`: request (and block) size of the sequential runs.
    pub qd_seq_block: u64,
    /// `queue-depth.rand_sizes`: request sizes of the random runs.
    pub qd_rand_sizes: Vec<u64>,
    /// `queue-depth.requests`: random requests per point (capped by the
    /// file and `queue-depth.rand_total`).
    pub qd_requests: u64,
    /// `queue-depth.rand_total`: largest total of a random point.
    pub qd_rand_total: u64,
    /// `queue-depth.fio`: run fio beside (`yes`/`no`).
    pub qd_fio: bool,
    /// `mmap.file`: the file mapped.
    pub mm_file: u64,
    /// `mmap.sizes`: request sizes (1 byte … 1 MiB).
    pub mm_sizes: Vec<u64>,
    /// `mmap.hints`: madvise hints compared.
    pub mm_hints: Vec<Madvise>,
    /// `mmap.requests`: reads per point, each in its own stretch of
    /// file_size / requests bytes so that one read's page-in cannot serve
    /// another.
    pub mm_requests: u64,
    /// `readers`: reader kinds of the sequential, random, memory and
    /// threads experiments.
    pub readers: Vec<ReaderKind>,
    /// `sequential.files`: file sizes, each read whole.
    pub seq_files: Vec<u64>,
    /// `sequential.totals`: bytes read from the front of the largest file.
    pub seq_totals: Vec<u64>,
    /// `sequential.request`: request size.
    pub seq_request: u64,
    /// `random.file`: the file of the request-size and total sweeps.
    pub rnd_file: u64,
    /// `random.sizes`: request sizes of the request-size sweep.
    pub rnd_sizes: Vec<u64>,
    /// `random.size`: the request size of the file-size and total sweeps.
    pub rnd_size: u64,
    /// `random.total`: bytes read per point of the request-size and
    /// file-size sweeps (at most the file).
    pub rnd_total: u64,
    /// `random.files`: file sizes of the file-size sweep.
    pub rnd_files: Vec<u64>,
    /// `random.totals`: totals of the total sweep.
    pub rnd_totals: Vec<u64>,
    /// `random.requests`: most requests of one point.
    pub rnd_requests: u64,
    /// `memory.file`: the file, larger than the limit.
    pub mem_file: u64,
    /// `memory.limit`: memory left to the reading process.
    pub mem_limit: u64,
    /// `memory.size`: request size (random offsets, with repeats).
    pub mem_size: u64,
    /// `memory.totals`: bytes read per point.
    pub mem_totals: Vec<u64>,
    /// `threads.file`: the file read.
    pub th_file: u64,
    /// `threads.list`: thread counts.
    pub th_threads: ThreadList,
    /// `threads.seq_request`: request size of the sequential runs.
    pub th_seq_request: u64,
    /// `threads.rand_sizes`: request sizes of the random runs.
    pub th_rand_sizes: Vec<u64>,
    /// `threads.rand_total`: bytes of a random point.
    pub th_rand_total: u64,
    /// `threads.requests`: most requests of a random point.
    pub th_requests: u64,
}

/// The full campaign's parameter file (`bench/params/readers-full.csv`).
pub const FULL_PARAMS: &str = include_str!("../../../../bench/params/readers-full.csv");
/// The `--quick` campaign's parameter file (`bench/params/readers-quick.csv`).
pub const QUICK_PARAMS: &str = include_str!("../../../../bench/params/readers-quick.csv");

const M: u64 = 1 << 20;
const G: u64 = 1 << 30;

impl Default for Plan {
    /// The full campaign's grid (what `readers-full.csv` says too).
    fn default() -> Plan {
        Plan {
            reps: 2,
            seed: 42,
            bs_file: G,
            bs_blocks: (0..=7).map(|i| 4096u64 << (2 * i)).collect(),
            bs_requests: 2048,
            qd_file: G,
            qd_depths: vec![1, 2, 4, 8, 16, 32, 64, 128],
            qd_seq_block: M,
            qd_rand_sizes: vec![4096, 64 << 10, M],
            qd_requests: 4096,
            qd_rand_total: 256 * M,
            qd_fio: true,
            mm_file: G,
            mm_sizes: vec![1, 64, 4096, 16 << 10, 32 << 10, 64 << 10, 256 << 10, M],
            mm_hints: Madvise::ALL.to_vec(),
            mm_requests: 64,
            readers: ReaderKind::ALL.to_vec(),
            seq_files: vec![64 * M, 256 * M, G, 4 * G],
            seq_totals: vec![M, 16 * M, 256 * M],
            seq_request: M,
            rnd_file: G,
            rnd_sizes: vec![4096, 32 << 10, 256 << 10, M, 4 * M],
            rnd_size: 64 << 10,
            rnd_total: 64 * M,
            rnd_files: vec![64 * M, 256 * M, G, 4 * G],
            rnd_totals: vec![4 * M, 16 * M, 64 * M, 256 * M],
            rnd_requests: 4096,
            mem_file: G,
            mem_limit: 256 * M,
            mem_size: M,
            mem_totals: vec![256 * M, G, 2 * G],
            th_file: G,
            th_threads: ThreadList::TwiceCores,
            th_seq_request: M,
            th_rand_sizes: vec![4096, 4 * M],
            th_rand_total: 256 * M,
            th_requests: 4096,
        }
    }
}

impl Plan {
    /// The full campaign ([`FULL_PARAMS`]).
    pub fn full() -> Plan {
        parse_plan(FULL_PARAMS, Path::new("<built-in readers-full.csv>"))
            .expect("the built-in full parameter file parses (checked by a test)")
    }

    /// The `--quick` campaign ([`QUICK_PARAMS`]): small files, few points.
    pub fn quick() -> Plan {
        parse_plan(QUICK_PARAMS, Path::new("<built-in readers-quick.csv>"))
            .expect("the built-in quick parameter file parses (checked by a test)")
    }

    /// Replaces every file size by `sizes`: single-file experiments take
    /// the largest, the file-size sweeps all of them (`--size`).
    pub fn with_sizes(mut self, sizes: &[u64]) -> Plan {
        let Some(&largest) = sizes.iter().max() else { return self };
        let mut all = sizes.to_vec();
        all.sort_unstable();
        all.dedup();
        self.bs_file = largest;
        self.qd_file = largest;
        self.mm_file = largest;
        self.seq_files = all.clone();
        self.rnd_file = largest;
        self.rnd_files = all;
        self.mem_file = largest;
        self.th_file = largest;
        self
    }

    /// Applies one `key;value` line.
    fn set(&mut self, key: &str, v: &str) -> std::result::Result<(), String> {
        let size = |v: &str| -> std::result::Result<u64, String> {
            let s = parse_sizes(v)?;
            if s.len() != 1 {
                return Err(format!("expected one size, got '{v}'"));
            }
            Ok(s[0])
        };
        let count = |v: &str| -> std::result::Result<u64, String> {
            v.trim()
                .parse::<u64>()
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| format!("expected a count >= 1, got '{v}'"))
        };
        match key {
            "reps" => self.reps = count(v)?.min(u64::from(u32::MAX)) as u32,
            "seed" => self.seed = v.trim().parse().map_err(|_| format!("invalid seed '{v}'"))?,
            "readers" => self.readers = parse_readers(v)?,
            "blocksize.file" => self.bs_file = size(v)?,
            "blocksize.blocks" => self.bs_blocks = parse_sizes(v)?,
            "blocksize.requests" => self.bs_requests = count(v)?,
            "queue-depth.file" => self.qd_file = size(v)?,
            "queue-depth.depths" => {
                self.qd_depths =
                    parse_int_list(v, "queue depth", 1, 4096)?.into_iter().map(|q| q as u32).collect()
            }
            "queue-depth.seq_block" => self.qd_seq_block = size(v)?,
            "queue-depth.rand_sizes" => self.qd_rand_sizes = parse_sizes(v)?,
            "queue-depth.requests" => self.qd_requests = count(v)?,
            "queue-depth.rand_total" => self.qd_rand_total = size(v)?,
            "queue-depth.fio" => {
                self.qd_fio = match v.trim() {
                    "yes" | "true" | "1" => true,
                    "no" | "false" | "0" => false,
                    _ => return Err(format!("expected yes or no, got '{v}'")),
                }
            }
            "mmap.file" => self.mm_file = size(v)?,
            "mmap.sizes" => self.mm_sizes = parse_sizes(v)?,
            "mmap.hints" => {
                self.mm_hints = if v.trim() == "all" {
                    Madvise::ALL.to_vec()
                } else {
                    split_list(v)?.into_iter().map(str::parse).collect::<std::result::Result<_, _>>()?
                }
            }
            "mmap.requests" => self.mm_requests = count(v)?,
            "sequential.files" => self.seq_files = parse_sizes(v)?,
            "sequential.totals" => self.seq_totals = parse_sizes(v)?,
            "sequential.request" => self.seq_request = size(v)?,
            "random.file" => self.rnd_file = size(v)?,
            "random.sizes" => self.rnd_sizes = parse_sizes(v)?,
            "random.size" => self.rnd_size = size(v)?,
            "random.total" => self.rnd_total = size(v)?,
            "random.files" => self.rnd_files = parse_sizes(v)?,
            "random.totals" => self.rnd_totals = parse_sizes(v)?,
            "random.requests" => self.rnd_requests = count(v)?,
            "memory.file" => self.mem_file = size(v)?,
            "memory.limit" => self.mem_limit = size(v)?,
            "memory.size" => self.mem_size = size(v)?,
            "memory.totals" => self.mem_totals = parse_sizes(v)?,
            "threads.file" => self.th_file = size(v)?,
            "threads.list" => {
                self.th_threads = if v.trim() == "2x" {
                    ThreadList::TwiceCores
                } else {
                    ThreadList::List(
                        parse_int_list(v, "threads", 1, 1024)?.into_iter().map(|t| t as usize).collect(),
                    )
                }
            }
            "threads.seq_request" => self.th_seq_request = size(v)?,
            "threads.rand_sizes" => self.th_rand_sizes = parse_sizes(v)?,
            "threads.rand_total" => self.th_rand_total = size(v)?,
            "threads.requests" => self.th_requests = count(v)?,
            _ => return Err(format!("unknown key '{key}'")),
        }
        Ok(())
    }
}

/// Parses a parameter file's text (`path` names it in errors): a header
/// `key;value`, then `key;value` lines; `#` starts a comment.
pub fn parse_plan(text: &str, path: &Path) -> Result<Plan> {
    let mut plan = Plan::default();
    let err = |line: usize, msg: String| Error::Params { path: path.to_path_buf(), line, msg };
    let mut header_seen = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let Some((key, value)) = line.split_once(';') else {
            return Err(err(i + 1, format!("expected 'key;value', got '{line}'")));
        };
        let key = key.trim();
        if !header_seen {
            header_seen = true;
            if key == "key" && value.trim() == "value" {
                continue;
            }
            return Err(err(i + 1, "the first line must be the header 'key;value'".into()));
        }
        plan.set(key, value).map_err(|m| err(i + 1, format!("{key}: {m}")))?;
    }
    if !header_seen {
        return Err(err(1, "empty parameter file (expected the header 'key;value')".into()));
    }
    Ok(plan)
}

/// Reads and parses a parameter file.
pub fn read_plan(path: &Path) -> Result<Plan> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io("read", path, e))?;
    parse_plan(&text, path)
}

/// Reader kinds: `pread,uring` or `all`.
pub fn parse_readers(s: &str) -> std::result::Result<Vec<ReaderKind>, String> {
    if s.trim() == "all" {
        return Ok(ReaderKind::ALL.to_vec());
    }
    let mut v: Vec<ReaderKind> =
        split_list(s)?.into_iter().map(str::parse).collect::<std::result::Result<_, _>>()?;
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// Sizes: `4K,64K`, `4K..64M` (powers of two) or `4K..64M*4` (every
/// fourth power); sorted, without duplicates, each at least 1 byte.
pub fn parse_sizes(s: &str) -> std::result::Result<Vec<u64>, String> {
    let mut v = Vec::new();
    for item in split_list(s)? {
        match item.split_once("..") {
            Some((a, rest)) => {
                let (b, step) = match rest.split_once('*') {
                    Some((b, f)) => {
                        let f: u64 =
                            f.trim().parse().map_err(|_| format!("invalid step '{f}' in '{item}'"))?;
                        if f < 2 || !f.is_power_of_two() {
                            return Err(format!("the step of '{item}' must be a power of two >= 2"));
                        }
                        (b, f)
                    }
                    None => (rest, 2),
                };
                let (a, b) = (parse_size(a)?, parse_size(b)?);
                if a == 0 || !a.is_power_of_two() || !b.is_power_of_two() || a > b {
                    return Err(format!("'{item}': a range needs powers of two, smallest first"));
                }
                let mut x = a;
                while x <= b {
                    v.push(x);
                    x = x.saturating_mul(step);
                }
            }
            None => v.push(parse_size(item)?),
        }
    }
    if v.contains(&0) {
        return Err(format!("a size of 0 in '{}'", s.trim()));
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_files_parse_and_full_equals_default() {
        assert_eq!(Plan::full(), Plan::default());
        let q = Plan::quick();
        assert!(q.bs_file <= 64 * M && q.seq_files.iter().all(|&f| f <= 64 * M), "{q:?}");
        assert_eq!(q.reps, 1);
    }

    #[test]
    fn sizes_and_lists() {
        assert_eq!(parse_sizes("4K..64K").unwrap(), vec![4096, 8192, 16384, 32768, 65536]);
        assert_eq!(parse_sizes("4K..1M*4").unwrap(), vec![4096, 16384, 65536, 262144, 1 << 20]);
        assert_eq!(parse_sizes("1, 64,1").unwrap(), vec![1, 64]);
        assert!(parse_sizes("0").is_err());
        assert!(parse_sizes("3..8").is_err());
        assert!(parse_sizes("4K..1M*3").is_err());
        assert_eq!(
            parse_experiments("mmap,blocksize").unwrap(),
            vec![Experiment::BlockSize, Experiment::Mmap]
        );
        assert_eq!(parse_experiments("all").unwrap().len(), 7);
        assert!(parse_experiments("disk").unwrap_err().contains("queue-depth"));
        assert_eq!(parse_readers("uring,pread").unwrap(), vec![ReaderKind::Pread, ReaderKind::Uring]);
    }

    #[test]
    fn params_errors_name_file_and_line() {
        let p = Path::new("x.csv");
        let e = parse_plan("key;value\nreps;2\nblocksize.blocks;4K,zz\n", p).unwrap_err().to_string();
        assert!(e.starts_with("x.csv:3: blocksize.blocks: invalid size 'zz'"), "{e}");
        let e = parse_plan("key;value\nnope;1\n", p).unwrap_err().to_string();
        assert!(e.contains("x.csv:2: nope: unknown key"), "{e}");
        let e = parse_plan("reps;2\n", p).unwrap_err().to_string();
        assert!(e.contains("header"), "{e}");
        let plan = parse_plan("key;value # header\nthreads.list;1,3\nqueue-depth.fio;no\n", p).unwrap();
        assert_eq!(plan.th_threads, ThreadList::List(vec![1, 3]));
        assert!(!plan.qd_fio);
        let s = Plan::default().with_sizes(&[8 * M, 2 * M]);
        assert_eq!((s.bs_file, s.seq_files.clone()), (8 * M, vec![2 * M, 8 * M]));
    }
}

/// Fuzz tests of the readers campaign's parameter file
/// (`PROPTEST_CASES=20000 cargo test -p emsort-bench fuzz_`).
#[cfg(test)]
mod fuzz {
    use super::*;
    use crate::fuzz::{check_error, strictly_sorted, text};
    use emsort_io::test_util::{cases, within};
    use proptest::prelude::*;

    /// `key;value` files: the shipped keys (and a few unknown), values good
    /// and bad for any of them, after the header or not.
    fn plan_text() -> impl Strategy<Value = String> {
        let mut keys: Vec<&'static str> = QUICK_PARAMS
            .lines()
            .filter_map(|l| l.split_once(';'))
            .map(|(k, _)| k)
            .filter(|&k| k != "key")
            .collect();
        keys.extend(["nope", "Reps", ""]);
        let values = vec![
            "1",
            "42",
            "16M",
            "4K,64K,1M",
            "1,8",
            "yes",
            "no",
            "maybe",
            "normal,random",
            "all",
            "2x",
            "4K..64M",
            "4K..1M*4",
            "4K..1M*3",
            "4K..1M*1",
            "4K..1M*0",
            "3..8",
            "0",
            "",
            "1..4096",
            "0..5",
            "1,2,4097",
            "8192P",
            "1..8192P",
            "1..8192P*2",
            "1..8192P*4611686018427387904",
            "16384P",
            "18446744073709551615",
            "-1",
            "pread,uring",
            "willneed",
            "1,,2",
        ];
        let line = prop_oneof![
            8 => (prop::sample::select(keys), prop::sample::select(values), prop::sample::select(vec![";", " ; ", ";;"]))
                .prop_map(|(k, v, sep)| format!("{k}{sep}{v}")),
            1 => Just("# comment".to_string()),
            1 => text(&[";", "1", "K", ","], 4),
        ];
        (any::<bool>(), prop::collection::vec(line, 0..12)).prop_map(|(header, lines)| {
            let head = if header { "key;value # header" } else { "reps;2" };
            std::iter::once(head.to_string()).chain(lines).collect::<Vec<_>>().join("\n")
        })
    }

    fn sizes_ok(v: &[u64]) -> bool {
        strictly_sorted(v) && !v.contains(&0)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases(512)))]

        /// Any text: a plan of valid values, or an error naming a line.
        #[test]
        fn fuzz_readers_plan(s in prop_oneof![any::<String>(), plan_text()]) {
            match within(&s, || parse_plan(&s, Path::new("x.csv"))) {
                Ok(p) => {
                    for v in [&p.bs_blocks, &p.qd_rand_sizes, &p.mm_sizes, &p.seq_files, &p.seq_totals,
                              &p.rnd_sizes, &p.rnd_files, &p.rnd_totals, &p.mem_totals, &p.th_rand_sizes] {
                        prop_assert!(sizes_ok(v), "{:?}", v);
                    }
                    for n in [p.bs_file, p.qd_file, p.qd_seq_block, p.qd_rand_total, p.mm_file, p.seq_request,
                              p.rnd_file, p.rnd_size, p.rnd_total, p.mem_file, p.mem_limit, p.mem_size, p.th_file,
                              p.th_seq_request, p.th_rand_total, p.bs_requests, p.qd_requests, p.mm_requests,
                              p.rnd_requests, p.th_requests, u64::from(p.reps)] {
                        prop_assert!(n >= 1);
                    }
                    prop_assert!(strictly_sorted(&p.qd_depths) && p.qd_depths.iter().all(|q| (1..=4096).contains(q)));
                    if let ThreadList::List(t) = &p.th_threads {
                        prop_assert!(strictly_sorted(t) && t.iter().all(|t| (1..=1024).contains(t)));
                    }
                }
                Err(e) => check_error(&e, &s)?,
            }
        }

        /// `a..b*f` size ranges: a, a·f, a·f², … up to b; or an error for
        /// ends that are not powers of two, a step that is not one, or a > b.
        #[test]
        fn fuzz_readers_size_ranges(a in 0u32..64, b in 0u32..64, f in 0u32..64, star: bool) {
            let step = if star { 1u64 << f } else { 2 };
            let s = if star { format!("{}..{}*{step}", 1u64 << a, 1u64 << b) } else { format!("{}..{}", 1u64 << a, 1u64 << b) };
            let want: Option<Vec<u64>> = (a <= b && step >= 2).then(|| {
                let k = step.trailing_zeros();
                (0..).map(|i: u32| a + i * k).take_while(|&e| e <= b).map(|e| 1u64 << e).collect()
            });
            prop_assert_eq!(within(&s, || parse_sizes(&s)).ok(), want, "{}", s);
        }
    }
}
