//! The adaptive reader's thresholds, built in or calibrated on this machine.
//!
//! A [`Calibration`] holds the numbers behind the thesis' guidelines (§4.1.4,
//! §4.2.3, §4.6, §4.7, §5.1). The built-in values are the thesis' own,
//! measured on Windows and an NVMe SSD; `emsort calibrate` measures them on
//! the user's machine and writes them to a small text file that
//! [`Calibration::load`] reads back:
//!
//! ```text
//! # emsort reader calibration
//! mmap_max_request = 32K       # random requests up to this size use mmap (off: never)
//! max_block = 4M               # buffered block size where throughput stops rising
//! queue_depth = 32             # io_uring depth where throughput plateaus
//! uring_min_request = 8M       # requests at least this large use io_uring (off: never)
//! sequential_run = 2           # continuing requests before a file counts as sequential (0: off)
//! random_run = 1               # jumps before a file counts as read at random (0: at once)
//! mmap_advice = normal         # madvise hint for the adaptive reader's mapping
//! prefetch = off               # read a mapped file whole in the background (on/off)
//! direct_readahead = off       # sequential runs: O_DIRECT reads of 1M ahead, this many in flight (off: pread)
//! threads_sequential = 4       # threads for large sequential reads
//! threads_random_small = all   # threads for small random reads
//! threads_random_large = 4     # threads for large random reads
//! ```
//!
//! One `key = value` per line; `#` starts a comment; blank lines are
//! ignored; sizes take `K`, `M`, `G` suffixes ([`parse_size`]). Keys left
//! out keep their built-in value; an unknown key, a repeated key or a bad
//! value is an [`ErrorKind::BadConfig`] naming the file and the line.
//!
//! **Where each value comes from** ([`Origin`], issue 38): `emsort
//! calibrate` ends each value's line with a comment whose first word says
//! it, so files stay readable by loaders that know nothing of it:
//!
//! ```text
//! max_block = 4M               # inconclusive: the thesis' value (256K was not clearly faster)
//! queue_depth = 8              # measured
//! ```
//!
//! `measured`: the measurement chose this value; `inconclusive`: it could
//! not separate its best candidate from the thesis' value, and **a value
//! marked so is the thesis' value whatever the line says** (the loader
//! puts it back, [`Calibration::effective`], and so does the adaptive
//! reader with a calibration made in code). Any other comment, or none,
//! leaves the origin [`Origin::Unmarked`] (files written before the marks,
//! values set by hand).
//!
//! The file lives at `$XDG_CONFIG_HOME/emsort/calibration`, or
//! `~/.config/emsort/calibration` without `XDG_CONFIG_HOME`
//! ([`Calibration::default_path`]); [`Calibration::discover`] loads it when
//! present and falls back to the built-in values otherwise.

use std::fmt;
use std::path::{Path, PathBuf};

use super::{Choice, Madvise, ReaderKind, Rule};
use crate::{format_size, parse_size, Error, ErrorKind, Result};

/// Where a value of a [`Calibration`] comes from (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Origin {
    /// Not said: the built-in value, a file written before the marks, or a
    /// value set by hand.
    #[default]
    Unmarked,
    /// Measured on this machine: the calibration chose it.
    Measured,
    /// Measured, but the measurement could not tell its best candidate
    /// from the thesis' value: the thesis' value is used.
    Inconclusive,
}

impl Origin {
    /// The first word of the comment that marks it (`""` for [`Origin::Unmarked`]).
    pub fn name(self) -> &'static str {
        match self {
            Origin::Unmarked => "",
            Origin::Measured => "measured",
            Origin::Inconclusive => "inconclusive",
        }
    }

    /// The origin a value line's comment marks: its first word, any case.
    fn of_comment(comment: &str) -> Origin {
        let word: String = comment.trim_start().chars().take_while(|c| c.is_ascii_alphabetic()).collect();
        if word.eq_ignore_ascii_case("measured") {
            Origin::Measured
        } else if word.eq_ignore_ascii_case("inconclusive") {
            Origin::Inconclusive
        } else {
            Origin::Unmarked
        }
    }
}

/// A key of the calibration file, one per value of a [`Calibration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[allow(missing_docs)]
pub enum Key {
    MmapMaxRequest,
    MaxBlock,
    QueueDepth,
    UringMinRequest,
    SequentialRun,
    RandomRun,
    MmapAdvice,
    Prefetch,
    DirectReadahead,
    ThreadsSequential,
    ThreadsRandomSmall,
    ThreadsRandomLarge,
}

impl Key {
    /// Every key, in the file's order.
    pub const ALL: [Key; 12] = [
        Key::MmapMaxRequest,
        Key::MaxBlock,
        Key::QueueDepth,
        Key::UringMinRequest,
        Key::SequentialRun,
        Key::RandomRun,
        Key::MmapAdvice,
        Key::Prefetch,
        Key::DirectReadahead,
        Key::ThreadsSequential,
        Key::ThreadsRandomSmall,
        Key::ThreadsRandomLarge,
    ];

    /// The key as the file spells it (`max_block` …).
    pub fn name(self) -> &'static str {
        KEYS[self as usize]
    }

    /// The key spelled `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Key> {
        KEYS.iter().position(|&k| k == name).map(|i| Key::ALL[i])
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The [`Origin`] of each value of a [`Calibration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Origins([Origin; 12]);

impl Origins {
    /// Where `key`'s value comes from.
    pub fn get(&self, key: Key) -> Origin {
        self.0[key as usize]
    }

    /// Says where `key`'s value comes from.
    pub fn set(&mut self, key: Key, origin: Origin) {
        self.0[key as usize] = origin;
    }

    /// The keys of origin `origin`, in the file's order.
    pub fn keys(&self, origin: Origin) -> Vec<Key> {
        Key::ALL.into_iter().filter(|&k| self.get(k) == origin).collect()
    }
}

/// The adaptive reader's thresholds (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Calibration {
    /// With the swapFlag set, requests of at most this many bytes use `mmap`
    /// (thesis: 32 KiB, §4.7; 0: never).
    pub mmap_max_request: usize,
    /// Largest block of a buffered read: a request is read in blocks of its
    /// own size clamped to [4 KiB, `max_block`] (thesis: 4 MiB, §4.1.4).
    pub max_block: usize,
    /// io_uring queue depth (thesis: 32, §4.2.3).
    pub queue_depth: u32,
    /// Requests of at least this many bytes use io_uring in blocks of
    /// `max_block`, so that at least two blocks are in flight (thesis §4.4.1.3:
    /// async reading passes `BufferReader4MB` once it can issue several
    /// requests; `usize::MAX`: never).
    pub uring_min_request: usize,
    /// With the [`AccessHint::Auto`](super::AccessHint::Auto) hint, after
    /// this many requests in a row that each start where the previous one
    /// ended, the file counts as read sequentially and gets buffered reads
    /// (thesis §4.7: "use buffered read for sequential reads"; 0: off).
    pub sequential_run: u32,
    /// With the [`AccessHint::Auto`](super::AccessHint::Auto) hint, a file
    /// counts as read at random offsets, the swapFlag's second condition
    /// (thesis §4.7: "the reads to be made are at non-sequential offsets"),
    /// once this many of its requests started somewhere else than where the
    /// previous one ended; until then small requests get `pread`. 0: at
    /// once, as the thesis' benchmark set the swapFlag for every file.
    pub random_run: u32,
    /// `madvise` hint of the adaptive reader's mapping (the thesis gave none).
    pub mmap_advice: Madvise,
    /// When the adaptive reader maps a file (swapFlag set: it fits in
    /// memory and is read at random, largely), also read the whole file
    /// into the page cache in the background, so the faults find their
    /// pages there (`posix_fadvise(WILLNEED)` from a thread; the thesis'
    /// "swap between memory-mapped reading and asynchronous reading",
    /// §4.7). Off in the built-in values (the thesis did not).
    pub prefetch: bool,
    /// With the [`AccessHint::Auto`](super::AccessHint::Auto) hint, serve
    /// the requests of a sequential run from `O_DIRECT` reads of 1 MiB kept
    /// in flight ahead of the run (io_uring, up to this many at once)
    /// instead of `pread` and the kernel's readahead: the data skips the
    /// page cache (its pages, and the copy out of them). What the page
    /// cache already holds is still taken from there. 0 (`off`, the
    /// built-in value: the thesis used buffered reads, §4.7): `pread`.
    pub direct_readahead: u32,
    /// Threads for large sequential reads (thesis §4.7: two or four).
    pub threads_sequential: u32,
    /// Threads for small random reads (thesis: all available; 0 means all).
    pub threads_random_small: u32,
    /// Threads for large random reads (thesis: four are enough).
    pub threads_random_large: u32,
    /// Where each value comes from: measured, or measured but
    /// inconclusive (then the value is the thesis' one), or unmarked.
    pub origins: Origins,
    /// The file the values came from (`None`: built in); not written by
    /// `Display`.
    pub source: Option<PathBuf>,
}

impl Default for Calibration {
    /// The thesis' values.
    fn default() -> Calibration {
        Calibration {
            mmap_max_request: 32 << 10,
            max_block: 4 << 20,
            queue_depth: 32,
            uring_min_request: 8 << 20,
            sequential_run: 2,
            random_run: 1,
            mmap_advice: Madvise::Normal,
            prefetch: false,
            direct_readahead: 0,
            threads_sequential: 4,
            threads_random_small: 0,
            threads_random_large: 4,
            origins: Origins::default(),
            source: None,
        }
    }
}

/// The smallest buffered block (thesis §4.1.4: "if request size ≤ 4KB then
/// use block size of 4KB").
pub const MIN_BLOCK: usize = 4 << 10;

const KEYS: [&str; 12] = [
    "mmap_max_request",
    "max_block",
    "queue_depth",
    "uring_min_request",
    "sequential_run",
    "random_run",
    "mmap_advice",
    "prefetch",
    "direct_readahead",
    "threads_sequential",
    "threads_random_small",
    "threads_random_large",
];

impl Calibration {
    /// The default location of the calibration file:
    /// `$XDG_CONFIG_HOME/emsort/calibration` (when set to an absolute path),
    /// else `$HOME/.config/emsort/calibration`; `None` without either.
    pub fn default_path() -> Option<PathBuf> {
        let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from).filter(|p| p.is_absolute());
        let base = xdg.or_else(|| {
            std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".config"))
        })?;
        Some(base.join("emsort").join("calibration"))
    }

    /// Loads the file at [`Calibration::default_path`] when it exists, else
    /// returns the built-in values. A file that exists but cannot be read or
    /// parsed is an error.
    pub fn discover() -> Result<Calibration> {
        match Calibration::default_path() {
            Some(p) => Calibration::load_if_present(&p),
            None => Ok(Calibration::default()),
        }
    }

    /// Loads `path` when it exists, else returns the built-in values.
    pub fn load_if_present(path: &Path) -> Result<Calibration> {
        match Calibration::load(path) {
            Err(e) if *e.kind() == ErrorKind::NotFound => Ok(Calibration::default()),
            r => r,
        }
    }

    /// Loads the calibration file at `path` (format in the module docs).
    pub fn load(path: &Path) -> Result<Calibration> {
        let bytes = std::fs::read(path).map_err(|e| Error::from_io("read", path, e))?;
        let mut c = Calibration::parse_bytes(&bytes)
            .map_err(|(line, reason)| Error::new(ErrorKind::BadConfig { line, reason }, path))?;
        c.source = Some(path.to_path_buf());
        Ok(c)
    }

    /// Parses the bytes of a calibration file, which must be UTF-8 text;
    /// errors are (line, reason).
    fn parse_bytes(bytes: &[u8]) -> std::result::Result<Calibration, (usize, String)> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let line = 1 + bytes[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count();
            (line, "not UTF-8 text".to_string())
        })?;
        Calibration::parse(text)
    }

    /// Parses the text of a calibration file; errors are (line, reason).
    fn parse(text: &str) -> std::result::Result<Calibration, (usize, String)> {
        let mut c = Calibration::default();
        let mut seen = [false; KEYS.len()];
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let (body, comment) = raw.split_once('#').unwrap_or((raw, ""));
            let body = body.trim();
            if body.is_empty() {
                continue;
            }
            let Some((key, value)) = body.split_once('=') else {
                return Err((line, format!("expected 'key = value', found '{body}'")));
            };
            let (key, value) = (key.trim(), value.trim());
            let Some(k) = KEYS.iter().position(|&x| x == key) else {
                return Err((line, format!("unknown key '{key}' (known keys: {})", KEYS.join(", "))));
            };
            if std::mem::replace(&mut seen[k], true) {
                return Err((line, format!("key '{key}' given twice")));
            }
            c.origins.set(Key::ALL[k], Origin::of_comment(comment));
            let bad = |why: String| (line, format!("{key}: {why}"));
            match key {
                "mmap_max_request" => c.mmap_max_request = size_or_off(value, 0).map_err(bad)?,
                "max_block" => c.max_block = positive(size(value).map_err(bad)?).map_err(bad)?,
                "queue_depth" => {
                    let q = count(value).map_err(bad)?;
                    if !(1..=4096).contains(&q) {
                        return Err(bad(format!("{q} is outside 1 … 4096")));
                    }
                    c.queue_depth = q;
                }
                "uring_min_request" => c.uring_min_request = size_or_off(value, usize::MAX).map_err(bad)?,
                "sequential_run" => c.sequential_run = count(value).map_err(bad)?,
                "random_run" => c.random_run = count(value).map_err(bad)?,
                "mmap_advice" => c.mmap_advice = value.parse().map_err(bad)?,
                "prefetch" => c.prefetch = on_off(value).map_err(bad)?,
                "direct_readahead" => {
                    let n = if value.eq_ignore_ascii_case("off") { 0 } else { count(value).map_err(bad)? };
                    if n > 64 {
                        return Err(bad(format!("{n} is outside 1 … 64 (or 'off')")));
                    }
                    c.direct_readahead = n;
                }
                "threads_sequential" => c.threads_sequential = positive_count(value).map_err(bad)?,
                "threads_random_small" => c.threads_random_small = threads(value).map_err(bad)?,
                "threads_random_large" => c.threads_random_large = positive_count(value).map_err(bad)?,
                _ => unreachable!("every key in KEYS is handled"),
            }
        }
        Ok(c.effective())
    }

    /// These values with every one marked [`Origin::Inconclusive`] set to
    /// the thesis' value (the built-in one): what the loader returns and
    /// what the adaptive reader uses.
    ///
    /// ```
    /// use emsort_io::reader::calibration::{Key, Origin};
    /// use emsort_io::Calibration;
    /// let mut c = Calibration { max_block: 64 << 10, queue_depth: 8, ..Calibration::default() };
    /// c.origins.set(Key::MaxBlock, Origin::Inconclusive);
    /// c.origins.set(Key::QueueDepth, Origin::Measured);
    /// let e = c.effective();
    /// assert_eq!((e.max_block, e.queue_depth), (4 << 20, 8));
    /// ```
    pub fn effective(&self) -> Calibration {
        let mut c = self.clone();
        for k in self.origins.keys(Origin::Inconclusive) {
            c.fall_back(k);
        }
        c
    }

    /// Sets `key` to the thesis' value and marks it [`Origin::Inconclusive`]:
    /// what a calibration does when its measurement cannot tell.
    pub fn fall_back(&mut self, key: Key) {
        let d = Calibration::default();
        match key {
            Key::MmapMaxRequest => self.mmap_max_request = d.mmap_max_request,
            Key::MaxBlock => self.max_block = d.max_block,
            Key::QueueDepth => self.queue_depth = d.queue_depth,
            Key::UringMinRequest => self.uring_min_request = d.uring_min_request,
            Key::SequentialRun => self.sequential_run = d.sequential_run,
            Key::RandomRun => self.random_run = d.random_run,
            Key::MmapAdvice => self.mmap_advice = d.mmap_advice,
            Key::Prefetch => self.prefetch = d.prefetch,
            Key::DirectReadahead => self.direct_readahead = d.direct_readahead,
            Key::ThreadsSequential => self.threads_sequential = d.threads_sequential,
            Key::ThreadsRandomSmall => self.threads_random_small = d.threads_random_small,
            Key::ThreadsRandomLarge => self.threads_random_large = d.threads_random_large,
        }
        self.origins.set(key, Origin::Inconclusive);
    }

    /// `key`'s value as the file writes it (`4M`, `off`, `all`, `normal` …).
    pub fn value_text(&self, key: Key) -> String {
        let size_or_off = |n: usize, off: usize| {
            if n == off {
                "off".to_string()
            } else {
                format_size(n as u64)
            }
        };
        match key {
            Key::MmapMaxRequest => size_or_off(self.mmap_max_request, 0),
            Key::MaxBlock => format_size(self.max_block as u64),
            Key::QueueDepth => self.queue_depth.to_string(),
            Key::UringMinRequest => size_or_off(self.uring_min_request, usize::MAX),
            Key::SequentialRun => self.sequential_run.to_string(),
            Key::RandomRun => self.random_run.to_string(),
            Key::MmapAdvice => self.mmap_advice.to_string(),
            Key::Prefetch => if self.prefetch { "on" } else { "off" }.to_string(),
            Key::DirectReadahead if self.direct_readahead == 0 => "off".to_string(),
            Key::DirectReadahead => self.direct_readahead.to_string(),
            Key::ThreadsSequential => self.threads_sequential.to_string(),
            Key::ThreadsRandomSmall if self.threads_random_small == 0 => "all".to_string(),
            Key::ThreadsRandomSmall => self.threads_random_small.to_string(),
            Key::ThreadsRandomLarge => self.threads_random_large.to_string(),
        }
    }

    /// The thesis' per-request rule, given the file's swapFlag and whether
    /// the request continues a sequential run:
    ///
    /// 1. swapFlag set, not sequential and `amount ≤ mmap_max_request` → `mmap`;
    /// 2. `amount ≥ uring_min_request` → `uring`, blocks of `max_block`, Q = `queue_depth`;
    /// 3. otherwise → `pread` with block = `amount` clamped to [4 KiB, `max_block`].
    ///
    /// ```
    /// use emsort_io::{Calibration, ReaderKind, Rule};
    /// let c = Calibration::default();
    /// assert_eq!(c.choose(4096, true, false).kind, ReaderKind::Mmap);
    /// assert_eq!(c.choose(4096, false, false).rule, Rule::NoSwapFlag);
    /// assert_eq!(c.choose(64 << 10, true, false).block_size, 64 << 10);
    /// assert_eq!(c.choose(64 << 20, true, false).kind, ReaderKind::Uring);
    /// ```
    pub fn choose(&self, amount: usize, swap_flag: bool, sequential: bool) -> Choice {
        let small = amount <= self.mmap_max_request;
        if small && swap_flag && !sequential {
            return Choice { kind: ReaderKind::Mmap, block_size: 0, queue_depth: 1, rule: Rule::SmallRandom };
        }
        if amount >= self.uring_min_request {
            return self.uring_choice(Rule::Large);
        }
        let rule = match (small, swap_flag) {
            (false, _) => Rule::LargerThanMmap,
            (true, false) => Rule::NoSwapFlag,
            (true, true) => Rule::SequentialRun,
        };
        self.pread_choice(amount, rule)
    }

    /// The block of a buffered read of `amount` bytes: `amount` clamped to
    /// [4 KiB, `max_block`] (thesis §4.1.4).
    pub fn pread_block(&self, amount: usize) -> usize {
        let max = self.max_block.max(1);
        amount.clamp(MIN_BLOCK.min(max), max)
    }

    /// `pread` with the thesis' block size for a request of `amount` bytes.
    pub(crate) fn pread_choice(&self, amount: usize, rule: Rule) -> Choice {
        Choice { kind: ReaderKind::Pread, block_size: self.pread_block(amount), queue_depth: 1, rule }
    }

    /// `uring` with blocks of `max_block` and the calibrated queue depth.
    pub(crate) fn uring_choice(&self, rule: Rule) -> Choice {
        Choice {
            kind: ReaderKind::Uring,
            block_size: self.max_block.max(1),
            queue_depth: self.queue_depth,
            rule,
        }
    }

    /// The guidelines these values give, as a decision list in the order of
    /// the thesis' flowchart (appendix B): system level, file level, request
    /// level, then threads. The first question answered "yes" decides.
    pub fn guidelines(&self) -> String {
        let sz = |n: usize| format_size(n as u64);
        let pread = format!("pread, block = request size clamped to [4K, {}]", sz(self.max_block));
        let mut s = String::new();
        s.push_str("System level\n");
        s.push_str(&format!(
            "  1. Will the data read from the file exceed the available memory?\n     yes → {pread}; never mmap.\n"
        ));
        s.push_str("File level\n");
        let seq = if self.sequential_run == 0 {
            String::new()
        } else {
            format!(" (unknown: after {} requests in a row that continue each other)", self.sequential_run)
        };
        let seq_tech = if self.direct_readahead > 0 && self.sequential_run > 0 {
            format!(
                "O_DIRECT reads of 1M ahead of the run, {} in flight (io_uring); what the page cache already holds is copied from it",
                self.direct_readahead
            )
        } else {
            pread.clone()
        };
        s.push_str(&format!("  2. Are the reads sequential{seq}?\n     yes → {seq_tech}.\n"));
        let random = if self.random_run == 0 {
            String::new()
        } else {
            format!(
                " (unknown: not before {} request{} jumped elsewhere in the file)",
                self.random_run,
                if self.random_run == 1 { "" } else { "s" }
            )
        };
        s.push_str(&format!("  3. Are the reads at random offsets{random}?\n     no → {pread}.\n"));
        s.push_str("  4. Will only a small part of the file be read?\n     yes → pread as above.\n");
        s.push_str("Request level (the file fits in memory and is read at random, largely)\n");
        if self.mmap_max_request == 0 {
            s.push_str("  5. (mmap is never used: mmap_max_request = off)\n");
        } else {
            let prefetch = if self.prefetch {
                "; the first such request starts reading the whole file in the background"
            } else {
                ""
            };
            s.push_str(&format!(
                "  5. Request ≤ {}?\n     yes → mmap (madvise {}){prefetch}.\n",
                sz(self.mmap_max_request),
                self.mmap_advice
            ));
        }
        if self.uring_min_request == usize::MAX {
            s.push_str("  6. (io_uring is never used for single requests: uring_min_request = off)\n");
        } else {
            s.push_str(&format!(
                "  6. Request ≥ {} (at any earlier question too)?\n     yes → io_uring, blocks of {}, queue depth {}.\n",
                sz(self.uring_min_request),
                sz(self.max_block),
                self.queue_depth
            ));
        }
        s.push_str(&format!("  7. Otherwise → {pread}.\n"));
        s.push_str("Threads (they amplify the technique chosen, they do not change it)\n");
        s.push_str(&format!("  large sequential reads: {}\n", self.threads_sequential));
        let small = if self.threads_random_small == 0 {
            "all available".to_string()
        } else {
            self.threads_random_small.to_string()
        };
        s.push_str(&format!("  small random reads: {small}\n"));
        s.push_str(&format!("  large random reads: {}\n", self.threads_random_large));
        s
    }
}

impl fmt::Display for Calibration {
    /// The values in the file format [`Calibration::load`] reads, each
    /// marked value's line ending in its [`Origin`]'s comment.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "# emsort reader calibration")?;
        for k in Key::ALL {
            let line = format!("{k} = {}", self.value_text(k));
            match self.origins.get(k) {
                Origin::Unmarked => writeln!(f, "{line}")?,
                Origin::Measured => writeln!(f, "{line:<32} # measured")?,
                Origin::Inconclusive => writeln!(f, "{line:<32} # inconclusive: the thesis' value")?,
            }
        }
        Ok(())
    }
}

fn size(v: &str) -> std::result::Result<usize, String> {
    let n = parse_size(v)?;
    usize::try_from(n).map_err(|_| format!("{v} is too large"))
}

fn size_or_off(v: &str, off: usize) -> std::result::Result<usize, String> {
    if v.eq_ignore_ascii_case("off") {
        Ok(off)
    } else {
        size(v)
    }
}

fn on_off(v: &str) -> std::result::Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("expected 'on' or 'off', found '{v}'")),
    }
}

fn positive(n: usize) -> std::result::Result<usize, String> {
    if n == 0 {
        Err("must be at least 1".into())
    } else {
        Ok(n)
    }
}

fn count(v: &str) -> std::result::Result<u32, String> {
    v.parse::<u32>().map_err(|_| format!("invalid number '{v}'"))
}

fn positive_count(v: &str) -> std::result::Result<u32, String> {
    match count(v)? {
        0 => Err("must be at least 1".into()),
        n => Ok(n),
    }
}

fn threads(v: &str) -> std::result::Result<u32, String> {
    if v.eq_ignore_ascii_case("all") {
        Ok(0)
    } else {
        positive_count(v).map_err(|e| format!("{e} (or 'all')"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_round_trips() {
        let mut c = Calibration {
            mmap_max_request: 0,
            uring_min_request: usize::MAX,
            random_run: 0,
            ..Default::default()
        };
        c.threads_random_small = 3;
        c.mmap_advice = Madvise::Random;
        c.prefetch = true;
        c.direct_readahead = 4;
        for c in [Calibration::default(), c] {
            assert_eq!(Calibration::parse(&c.to_string()).unwrap(), c);
        }
    }

    #[test]
    fn parse_errors_name_the_line() {
        let (line, why) = Calibration::parse("# c\n\nmax_block = 1M\nqueue_depth = zero\n").unwrap_err();
        assert_eq!(line, 4);
        assert!(why.contains("queue_depth") && why.contains("zero"), "{why}");
        assert_eq!(Calibration::parse("mmap_max_request 4K").unwrap_err().0, 1);
        assert!(Calibration::parse("colour = red").unwrap_err().1.contains("unknown key 'colour'"));
        assert!(Calibration::parse("queue_depth = 2\nqueue_depth = 3").unwrap_err().1.contains("twice"));
        assert!(Calibration::parse("max_block = 0").is_err());
        assert!(Calibration::parse("queue_depth = 0").is_err());
        assert!(Calibration::parse("mmap_advice = often").is_err());
        assert!(Calibration::parse("prefetch = maybe").unwrap_err().1.contains("'on' or 'off'"));
        assert!(Calibration::parse("prefetch = ON").unwrap().prefetch);
        assert_eq!(Calibration::parse("direct_readahead = 8").unwrap().direct_readahead, 8);
        assert_eq!(Calibration::parse("direct_readahead = OFF").unwrap().direct_readahead, 0);
        assert!(Calibration::parse("direct_readahead = 65").unwrap_err().1.contains("1 … 64"));
        assert!(Calibration::parse("direct_readahead = on").unwrap_err().1.contains("invalid number"));
    }

    #[test]
    fn marks_round_trip_and_inconclusive_values_fall_back() {
        let mut c =
            Calibration { max_block: 256 << 10, queue_depth: 8, prefetch: true, ..Default::default() };
        c.origins.set(Key::QueueDepth, Origin::Measured);
        c.origins.set(Key::Prefetch, Origin::Measured);
        c.fall_back(Key::MaxBlock);
        c.fall_back(Key::UringMinRequest);
        assert_eq!((c.max_block, c.uring_min_request), (4 << 20, 8 << 20));
        let text = c.to_string();
        assert!(text.contains("max_block = 4M"), "{text}");
        assert!(
            text.lines().any(|l| l.starts_with("max_block = 4M ") && l.contains("# inconclusive")),
            "{text}"
        );
        assert!(
            text.lines().any(|l| l.starts_with("queue_depth = 8 ") && l.ends_with("# measured")),
            "{text}"
        );
        assert!(text.lines().any(|l| l == "random_run = 1"), "unmarked lines have no comment: {text}");
        let back = Calibration::parse(&text).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.origins.keys(Origin::Inconclusive), [Key::MaxBlock, Key::UringMinRequest]);
        assert_eq!(back.origins.keys(Origin::Measured), [Key::QueueDepth, Key::Prefetch]);
        // A value marked inconclusive is the thesis' value, whatever the line says.
        let hand = Calibration::parse(
            "max_block = 16K   # Inconclusive (16K not clearly faster)
                                       queue_depth = 4 # measured
mmap_max_request = 8K # by hand
",
        )
        .unwrap();
        assert_eq!(hand.max_block, 4 << 20);
        assert_eq!(hand.queue_depth, 4);
        assert_eq!(hand.mmap_max_request, 8 << 10);
        assert_eq!(hand.origins.get(Key::MaxBlock), Origin::Inconclusive);
        assert_eq!(hand.origins.get(Key::MmapMaxRequest), Origin::Unmarked);
        // An older file (no marks) loads as before, every value unmarked.
        let old = "# emsort reader calibration\nmmap_max_request = 16K\nmax_block = 16K\nqueue_depth = 64\n";
        let o = Calibration::parse(old).unwrap();
        assert_eq!((o.mmap_max_request, o.max_block, o.queue_depth), (16 << 10, 16 << 10, 64));
        assert_eq!(o.origins, Origins::default());
    }

    #[test]
    fn keys_are_named_as_in_the_file() {
        for (i, k) in Key::ALL.into_iter().enumerate() {
            assert_eq!(k.name(), KEYS[i]);
            assert_eq!(Key::from_name(k.name()), Some(k));
        }
        assert_eq!(Key::from_name("block"), None);
    }

    #[test]
    fn partial_file_keeps_defaults() {
        let c = Calibration::parse("mmap_max_request = 64K  # measured\n").unwrap();
        assert_eq!(c.mmap_max_request, 64 << 10);
        assert_eq!(c.max_block, Calibration::default().max_block);
    }

    #[test]
    fn pread_block_follows_the_thesis() {
        let c = Calibration::default();
        assert_eq!(c.pread_choice(100, Rule::NoSwapFlag).block_size, 4096);
        assert_eq!(c.pread_choice(100 << 10, Rule::NoSwapFlag).block_size, 100 << 10);
        assert_eq!(c.pread_choice(7 << 20, Rule::NoSwapFlag).block_size, 4 << 20);
    }
}

/// Fuzz tests of the calibration file parser: any bytes, and files of known
/// lines whose outcome (values, or the first bad line) is known
/// (`PROPTEST_CASES=20000 cargo test -p emsort-io fuzz_`).
#[cfg(test)]
mod fuzz {
    use super::*;
    use crate::test_util::{cases, within};
    use proptest::prelude::*;

    /// What a generated value must parse to: `None` when it is bad.
    #[derive(Debug, Clone)]
    enum Want {
        Size(usize),
        Count(u32),
        Advice(Madvise),
        Bool(bool),
    }

    fn set(c: &mut Calibration, key: &str, w: &Want) {
        match (key, w) {
            ("mmap_max_request", Want::Size(n)) => c.mmap_max_request = *n,
            ("max_block", Want::Size(n)) => c.max_block = *n,
            ("uring_min_request", Want::Size(n)) => c.uring_min_request = *n,
            ("queue_depth", Want::Count(n)) => c.queue_depth = *n,
            ("sequential_run", Want::Count(n)) => c.sequential_run = *n,
            ("random_run", Want::Count(n)) => c.random_run = *n,
            ("direct_readahead", Want::Count(n)) => c.direct_readahead = *n,
            ("threads_sequential", Want::Count(n)) => c.threads_sequential = *n,
            ("threads_random_small", Want::Count(n)) => c.threads_random_small = *n,
            ("threads_random_large", Want::Count(n)) => c.threads_random_large = *n,
            ("mmap_advice", Want::Advice(a)) => c.mmap_advice = *a,
            ("prefetch", Want::Bool(b)) => c.prefetch = *b,
            _ => unreachable!("{key} = {w:?}"),
        }
    }

    /// A size: `N`, `NK`, `NM` with N near the edges, and its value.
    fn size_value() -> impl Strategy<Value = (String, Option<usize>)> {
        let n = prop_oneof![0u64..5000, any::<u64>(), Just(u64::MAX), Just(1 << 54)];
        (n, prop::sample::select(vec![("", 0u32), ("K", 10), ("m", 20), ("GiB", 30)])).prop_map(
            |(n, (u, k))| {
                let v = n.checked_mul(1 << k).and_then(|v| usize::try_from(v).ok());
                (format!("{n}{u}"), v)
            },
        )
    }

    /// A count as text, within or past a u32, and its value.
    fn count_value() -> impl Strategy<Value = (String, Option<u32>)> {
        prop_oneof![
            (0u32..5000).prop_map(|n| (n.to_string(), Some(n))),
            any::<u32>().prop_map(|n| (n.to_string(), Some(n))),
            // The edges of every range a count is checked against.
            prop::sample::select(vec![0u32, 1, 64, 65, 4096, 4097, u32::MAX])
                .prop_map(|n| (n.to_string(), Some(n))),
            Just(("4294967296".to_string(), None)),
            Just(("-1".to_string(), None)),
            Just(("".to_string(), None)),
            Just(("1e3".to_string(), None)),
            Just(("٣".to_string(), None)),
        ]
    }

    /// A value for `key` as text, and what it must parse to (`None`: an error).
    fn value_for(key: &'static str) -> BoxedStrategy<(String, Option<Want>)> {
        let junk =
            prop::sample::select(vec!["", "off", "OFF", "all", "ALL", "on", "maybe", "∞", "0x10", "1 2"])
                .prop_map(String::from);
        let size = size_value().prop_map(|(s, v)| (s, v.map(Want::Size)));
        let count = count_value().prop_map(|(s, v)| (s, v.map(Want::Count)));
        match key {
            "mmap_max_request" | "uring_min_request" => {
                let off = if key == "mmap_max_request" { 0 } else { usize::MAX };
                prop_oneof![
                    3 => size,
                    1 => junk.prop_map(move |s| {
                        let w = s.eq_ignore_ascii_case("off").then_some(Want::Size(off));
                        (s, w)
                    }),
                ]
                .boxed()
            }
            "max_block" => prop_oneof![
                3 => size.prop_map(|(s, w)| (s, w.filter(|w| !matches!(w, Want::Size(0))))),
                1 => junk.prop_map(|s| (s, None)),
            ]
            .boxed(),
            "queue_depth" => count
                .prop_map(|(s, w)| (s, w.filter(|w| matches!(w, Want::Count(1..=4096)))))
                .boxed(),
            "sequential_run" | "random_run" => count.boxed(),
            "direct_readahead" => prop_oneof![
                3 => count.prop_map(|(s, w)| (s, w.filter(|w| matches!(w, Want::Count(0..=64))))),
                1 => junk.prop_map(|s| {
                    let w = s.eq_ignore_ascii_case("off").then_some(Want::Count(0));
                    (s, w)
                }),
            ]
            .boxed(),
            "threads_sequential" | "threads_random_large" => count
                .prop_map(|(s, w)| (s, w.filter(|w| !matches!(w, Want::Count(0)))))
                .boxed(),
            "threads_random_small" => prop_oneof![
                3 => count.prop_map(|(s, w)| (s, w.filter(|w| !matches!(w, Want::Count(0))))),
                1 => junk.prop_map(|s| {
                    let w = s.eq_ignore_ascii_case("all").then_some(Want::Count(0));
                    (s, w)
                }),
            ]
            .boxed(),
            "mmap_advice" => prop_oneof![
                3 => prop::sample::select(Madvise::ALL.to_vec()).prop_map(|a| (a.name().to_string(), Some(Want::Advice(a)))),
                1 => prop::sample::select(vec!["Normal", "RANDOM", "will need", "", "often"])
                    .prop_map(|s| (s.to_string(), None)),
            ]
            .boxed(),
            "prefetch" => prop::sample::select(vec!["on", "off", "ON", "Off", "oN", "maybe", "", "1", "yes"])
                .prop_map(|s| {
                    let w = match s.to_ascii_lowercase().as_str() {
                        "on" => Some(Want::Bool(true)),
                        "off" => Some(Want::Bool(false)),
                        _ => None,
                    };
                    (s.to_string(), w)
                })
                .boxed(),
            _ => unreachable!("{key}"),
        }
    }

    /// One `key = value` line, spaced and commented at random, with what it
    /// must parse to; key indices may repeat.
    fn line() -> impl Strategy<Value = (usize, String, Option<Want>)> {
        (0..KEYS.len())
            .prop_flat_map(|k| {
                (
                    Just(k),
                    value_for(KEYS[k]),
                    prop::sample::select(vec!["=", " = ", "\t=  ", "= "]),
                    prop::sample::select(vec!["", "  # note", "# a = b", "\t#"]),
                    prop::sample::select(vec!["", "  ", "\t"]),
                )
            })
            .prop_map(|(k, (v, w), eq, comment, lead)| (k, format!("{lead}{}{eq}{v}{comment}", KEYS[k]), w))
    }

    /// A calibration with any values the file can hold.
    fn calibration() -> impl Strategy<Value = Calibration> {
        (
            (any::<usize>(), 1..=usize::MAX, 1u32..=4096, any::<usize>(), any::<u32>(), any::<u32>()),
            (prop::sample::select(Madvise::ALL.to_vec()), any::<bool>(), 0u32..=64),
            (1..=u32::MAX, any::<u32>(), 1..=u32::MAX),
        )
            .prop_map(|((mm, mb, q, ur, seq, rnd), (adv, pf, da), (ts, trs, trl))| Calibration {
                mmap_max_request: mm,
                max_block: mb,
                queue_depth: q,
                uring_min_request: ur,
                sequential_run: seq,
                random_run: rnd,
                mmap_advice: adv,
                prefetch: pf,
                direct_readahead: da,
                threads_sequential: ts,
                threads_random_small: trs,
                threads_random_large: trl,
                origins: Origins::default(),
                source: None,
            })
    }

    /// A calibration as above with any origins marked.
    fn marked_calibration() -> impl Strategy<Value = Calibration> {
        (calibration(), prop::collection::vec(0u8..3, 12)).prop_map(|(mut c, marks)| {
            for (k, m) in Key::ALL.into_iter().zip(marks) {
                let o = [Origin::Unmarked, Origin::Measured, Origin::Inconclusive][m as usize];
                c.origins.set(k, o);
            }
            c
        })
    }

    /// The invariants of a parsed calibration, and it prints back to itself.
    fn check_parsed(c: &Calibration) -> std::result::Result<(), TestCaseError> {
        prop_assert!(c.max_block >= 1 && (1..=4096).contains(&c.queue_depth) && c.direct_readahead <= 64);
        prop_assert!(c.threads_sequential >= 1 && c.threads_random_large >= 1);
        prop_assert_eq!(&Calibration::parse(&c.to_string()).unwrap(), c);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases(256)))]

        /// Any bytes (UTF-8 or not, `key = value` lines or noise): a
        /// calibration or an error naming an existing line, never a panic.
        #[test]
        fn fuzz_calibration_any_bytes(bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..400),
            prop::collection::vec(line(), 0..16).prop_flat_map(|lines| {
                let text: Vec<u8> = lines.iter().flat_map(|(_, l, _)| l.bytes().chain(*b"\n")).collect();
                let n = text.len();
                (Just(text), prop::collection::vec((0..n.max(1), any::<u8>()), 0..3))
            }).prop_map(|(mut text, edits)| {
                for (at, b) in edits {
                    if at < text.len() {
                        text[at] = b;
                    }
                }
                text
            }),
        ]) {
            let r = within(String::from_utf8_lossy(&bytes), || Calibration::parse_bytes(&bytes));
            match r {
                Ok(c) => check_parsed(&c)?,
                Err((line, why)) => {
                    let lines = 1 + bytes.iter().filter(|&&b| b == b'\n').count();
                    prop_assert!((1..=lines).contains(&line), "line {} of {}: {}", line, lines, why);
                    prop_assert!(!why.is_empty());
                }
            }
        }

        /// Lines of known keys and values: the values set, keys left out at
        /// their built-in values; or an error on the first line that repeats
        /// a key or holds a bad value.
        #[test]
        fn fuzz_calibration_known_lines(lines in prop::collection::vec(line(), 0..16), crlf: bool,
                                        blank in prop::collection::vec(any::<bool>(), 16)) {
            let mut text = String::new();
            let mut want = Calibration::default();
            let mut first_bad = None;
            let mut seen = [false; KEYS.len()];
            let mut line_no = 0;
            for (i, (k, l, w)) in lines.iter().enumerate() {
                if blank[i] {
                    text.push_str(if crlf { "  # blank\r\n" } else { "\n" });
                    line_no += 1;
                }
                text.push_str(l);
                text.push_str(if crlf { "\r\n" } else { "\n" });
                line_no += 1;
                if first_bad.is_none() {
                    match w {
                        Some(w) if !std::mem::replace(&mut seen[*k], true) => set(&mut want, KEYS[*k], w),
                        _ => first_bad = Some(line_no),
                    }
                }
            }
            let got = within(&text, || Calibration::parse_bytes(text.as_bytes()));
            match first_bad {
                None => {
                    prop_assert_eq!(got.as_ref().map_err(|e| &e.1), Ok(&want), "{}", text);
                    check_parsed(&want)?;
                }
                Some(n) => prop_assert_eq!(got.map_err(|e| e.0), Err(n), "{}", text),
            }
        }

        /// Any calibration the file can hold prints to text that parses back
        /// to it.
        #[test]
        fn fuzz_calibration_display_round_trips(c in calibration()) {
            prop_assert_eq!(within(&c, || Calibration::parse(&c.to_string())), Ok(c.clone()));
        }

        /// With marks too: the origins come back, and the values marked
        /// inconclusive come back as the thesis' values.
        #[test]
        fn fuzz_calibration_marks_round_trip(c in marked_calibration()) {
            let back = within(&c, || Calibration::parse(&c.to_string())).unwrap();
            prop_assert_eq!(back.origins, c.origins);
            prop_assert_eq!(&back, &c.effective());
            let d = Calibration::default();
            for k in c.origins.keys(Origin::Inconclusive) {
                prop_assert_eq!(back.value_text(k), d.value_text(k));
            }
        }
    }
}
