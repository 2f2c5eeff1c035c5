//! The sort plan: every budget and parameter of one sort, as a value.
//!
//! A [`SortPlan`] holds the format, the memory M, the fan-in d, the block
//! size B, the stream kinds, the order, the merge policy, the threads, the
//! temporary directories and the merge [`Method`] with its own parameters
//! (DSM's and SRM's disks, SRM's merge order cap …). Its fields are
//! private: a plan is made only by [`SortPlanBuilder::build`], which fills
//! in defaults (B from M, d from M and B) and does every check — d, B, the
//! threads, the temp dirs, the method's parameters (SRM's cap ≥ 2, the
//! disks existing directories) and M against what the plan needs — so a
//! plan that exists can work, and the front ends (`emsort sort`, the Python
//! package) check nothing of their own. It is read through accessors
//! ([`SortPlan::memory`], [`SortPlan::method`] …); only the input size can
//! be changed afterwards ([`SortPlan::with_input_size`]), which moves the
//! derived numbers but nothing the checks depend on.
//! Like TPIE's `sort_parameters::dump()`, a plan prints itself
//! (`Display`), including the numbers derived from it.
//!
//! # Where M goes
//!
//! Every number derived from the plan is computed in one place,
//! [`SortPlan::derived`]. With F = the bytes one open stream buffers (B
//! rounded up as its kind rounds it, times Q for `uring`):
//!
//! ```text
//!  run formation                              merge (one d-way merge)
//!  ┌──────────────────────────────────┐       ┌──────────────────────────────┐
//!  │ input stream             F       │       │ d input streams     d · F    │
//!  │ run output stream   F (or 4B*)   │       │ output stream           F    │
//!  │ partial line carry (lines)  B    │       └──────────────────────────────┘
//!  │ chunk buffer 1   ┐ the rest,     │       needs M ≥ (d + 1) · F
//!  │ chunk buffer 2   ┘ split in two  │
//!  └──────────────────────────────────┘
//! ```
//!
//! \* Records and lines are gathered from their chunk into write-behind
//! blocks of 2B in all that feed a stream of 2B, when M ≥ 64·B (else B/2
//! and B/2: F) ([`SortPlan::run_write_block`]).
//!
//! In a merge, F per stream is split where it helps: the output is a stream
//! of B/2 fed by four write-behind blocks of B/8, each run a stream of B/4
//! read ahead into two blocks of B/4.
//!
//! Run formation reads into one chunk buffer while the other is sorted and
//! written, so each gets half of what is left; when the whole input fits in
//! one buffer, one buffer gets everything and the single run is the output.
//! A chunk buffer holds the data and, for records and lines, the sort index
//! of 16 bytes per item (an 8-byte key prefix and the item's position):
//! records take `SIZE + 16` bytes each; lines get ¾ of the buffer for text
//! and ¼ for the index, so a run ends early when its lines average under 47
//! bytes. A line longer than the text buffer is not refused: the buffer grows
//! to hold it (memory then exceeds M by about that line's length); only a
//! line of 4 GiB or more is refused. A run holds at most 2³² − 1 records or
//! bytes of text (32-bit positions in the index).
//!
//! Beyond M, the process needs its own baseline: the binary, libc, thread
//! stacks, a few MiB in all (about 5 MiB measured), and the radix sort of a
//! record or line index sorts small buckets out of place (module `radix`:
//! at most about 1 MiB per thread). A merge of records or lines indexes
//! each run's read-ahead block in at most half its size, within M: the
//! merge's streams take at most half of M. A merge of numbers on a CPU
//! with AVX2 or AVX-512 (module `simd_merge`) keeps two scratch buffers per thread
//! as large as its part of a round (at most the output block, F/8 of the
//! merge's memory per stream F), also within that other half; run
//! formation's merge of a chunk's sorted segments keeps the same two
//! buffers, for at most 64 Ki items at a time (512 KiB over all threads
//! for 32-bit items, 1 MiB for 64-bit ones, within the 1 MiB per thread
//! below). The binary's
//! tests check that the peak RSS stays within M + 8 MiB + 1 MiB per thread.
//! That holds with an allocator that returns freed large buffers to the
//! system: the `emsort` binary makes glibc map every allocation of 256 KiB
//! or more on its own (`M_MMAP_THRESHOLD`); with glibc's default sliding
//! threshold, freed chunk buffers and indexes below 32 MiB stay resident
//! and the peak reached M + 20–27 MiB (1 GiB, M = 64–256 MiB). A program
//! that embeds this crate should do the same.
//!
//! ```
//! use emsort_sort::{Format, SortPlan};
//! let plan = SortPlan::builder(Format::U32)
//!     .memory(64 << 20)
//!     .fan_in(8)
//!     .block_size(1 << 20)
//!     .input_bytes(200 << 20)
//!     .build()
//!     .unwrap();
//! let d = plan.derived();
//! assert_eq!(d.chunk_buffers, 2);
//! assert_eq!(d.items_per_run, Some(31 << 18)); // (64M − 2 · 1M) / 2 / 4 bytes
//! println!("{plan}");
//! ```

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use emsort_io::device::{self, DeviceCache, DeviceCost};
use emsort_io::{format_size, StreamConfig, StreamKind};

use crate::compress::Compression;
use crate::keys::LineOrder;
use crate::merge_policy::{schedule, MergePolicy, Schedule};
pub use crate::method::{Method, MethodKind, ParallelDisks, SrmOptions};
use crate::pdisk::order;
use crate::{Format, SortError};

/// Accessors that return a copy of the field of their name.
macro_rules! getters {
    ($($(#[$doc:meta])* $name:ident: $t:ty;)*) => {
        $($(#[$doc])* pub fn $name(&self) -> $t { self.$name })*
    };
}

/// Builder methods that set the field of their name (`in plan`: of the
/// plan being built) to their argument (`= Some`: wrapped in `Some`).
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident($arg:ident: $t:ty) $(in $in:ident)? $(= $wrap:ident)?;)*) => {
        $($(#[$doc])* pub fn $name(mut self, $arg: $t) -> Self { self$(.$in)?.$name = $($wrap)?($arg); self })*
    };
}

/// Bytes of sort index per record or line: an 8-byte key prefix and a
/// position.
pub const INDEX_ENTRY_BYTES: u64 = 16;

/// Where run formation puts a chunk's data in its buffer: at addresses
/// congruent to their file offsets modulo this (module `run_formation`),
/// and what chunks of numbers are a multiple of.
pub(crate) const DATA_ALIGN: u64 = 4096;

/// The most records, or bytes of text, in one run: the index keeps 32-bit
/// record numbers and line offsets.
pub const MAX_CHUNK_ITEMS: u64 = u32::MAX as u64;

/// The part of a pass over the data that runs of M (one chunk buffer) must
/// save over runs of M/2 (two) for the planner to take them when they save
/// no whole merge level ([`Derived::chunk_buffers`]). One buffer's run
/// formation no longer overlaps its writes with its reads: on 16 GiB of u32
/// with M = 256 MiB and d = 64 it took 7-12 s longer (25-29 s against
/// 32-40 s), 0.2-0.35 of a pass, where its 65 runs in 2.02 passes against
/// 130 in 2.52 saved 13-34 s in the merge; in total 81-113 s against
/// 104-114 s, faster in 3 of 4 pairs (bench/results/2026-11-27-large/
/// planner-16g and the A/B before it). 0.4 keeps a margin above the cost.
pub const PASSES_FOR_ONE_BUFFER: f64 = 0.4;

/// The most sorted segments a chunk may have ([`SortPlanBuilder::segments`]).
pub const MAX_SEGMENTS: usize = 64;

/// Sorted segments of a chunk of numbers in one chunk buffer, by default
/// ([`Derived::segments`]). Each is sorted as soon as it is read; the run is
/// written as their merge. 1 GiB of u32 in M = 256 MiB with one buffer:
/// run formation 2.0-2.2 s with 4 or 8 segments, 2.5 s with 16, 2.8 s
/// sorted whole; an input that fits (256 MiB in M = 1 GiB) 0.67 s against
/// 0.93 s whole; 8 GiB (disk-bound) 17.8 s against 17.4 s, no gain
/// (bench/results/2026-11-27-large/segments-8g). Two buffers of M/2 sorted
/// whole stay faster where they are used (1.6-1.8 s): the segments' merge
/// costs CPU, and nothing is read while it runs. Records and lines are
/// sorted whole: sorting their index in segments as they were read and
/// merging the index segments by comparison while gathering was tried and
/// was slower (1 GiB of lines that fits: 2.8 s against 2.2 s; records in
/// tmpfs: run formation 1.56 s against 1.26 s) — the radix sort of a whole
/// chunk's index after its read takes 0.2 s of 2.3 s, the merge 0.5 s more
/// (git branch `tried/index-segments`).
pub const DEFAULT_SEGMENTS: usize = 8;

/// The parameters of one sort, made by [`SortPlan::builder`] and checked
/// when built, so a `SortPlan` is always one that can work (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct SortPlan {
    format: Format,
    memory: u64,
    fan_in: usize,
    block_size: usize,
    input_kind: StreamKind,
    output_kind: StreamKind,
    files_kind: Option<StreamKind>,
    queue_depth: u32,
    reverse: bool,
    policy: MergePolicy,
    threads: usize,
    temp_dirs: Vec<PathBuf>,
    input_bytes: Option<u64>,
    method: Method,
    lines: Option<Arc<LineOrder>>,
    compression: Compression,
    eol: u8,
    header: bool,
    chunk_buffers: Option<usize>,
    chunk_memory: Option<u64>,
    segments: Option<usize>,
    io_choice: Option<String>,
    device_cost: Option<DeviceCost>,
}

/// Numbers that follow from a [`SortPlan`], computed by [`SortPlan::derived`].
#[derive(Debug, Clone, PartialEq)]
pub struct Derived {
    /// F: bytes one open stream buffers (B rounded per kind, × Q for `uring`).
    pub stream_buffer: u64,
    /// Memory one d-way merge needs: (d + 1) · F.
    pub merge_memory: u64,
    /// The least M this plan's d and B can work with.
    pub minimum_memory: u64,
    /// Memory for the chunk buffers of run formation.
    pub run_memory: u64,
    /// Chunk buffers in run formation: 2 (read one while sorting the other),
    /// or 1 when the whole input fits in it or when runs twice as long save
    /// a level of merging or [`PASSES_FOR_ONE_BUFFER`] of a pass over the
    /// data (or as [`SortPlanBuilder::chunk_buffers`] sets).
    pub chunk_buffers: usize,
    /// Segments of a chunk of numbers, each sorted as soon as it is read;
    /// the run is their merge (1: the chunk is sorted whole).
    /// [`DEFAULT_SEGMENTS`] with one buffer of numbers and the plain merge,
    /// else 1 (or as [`SortPlanBuilder::segments`] sets).
    pub segments: usize,
    /// Capacity of one chunk buffer in bytes (data and index).
    pub chunk_bytes: u64,
    /// Data bytes in one full run.
    pub run_bytes: u64,
    /// Items in one full run (fixed-size formats).
    pub items_per_run: Option<u64>,
    /// The most lines in one run (`lines`: the index's share of the buffer).
    pub max_lines_per_run: Option<u64>,
    /// Runs U that run formation makes, when the input size is known:
    /// exact for fixed-size formats, an estimate for `lines` (lines shorter
    /// than 47 bytes on average end runs early; a line longer than the
    /// buffer makes its run larger).
    pub expected_runs: Option<u64>,
    /// The merge schedule for those runs.
    pub schedule: Option<Schedule>,
    /// Passes over the data, run formation counting as the first (see
    /// [`Schedule::passes`]).
    pub passes: Option<f64>,
}

impl SortPlan {
    /// A builder with defaults: M = 64 MiB, B from M, d from M and B,
    /// `buffered` streams, ascending, `optimal`, all cores, the system's
    /// temporary directory (`$TMPDIR` or `/tmp`), the plain merge.
    pub fn builder(format: Format) -> SortPlanBuilder {
        SortPlanBuilder {
            // d, B, Q and the threads are filled in by `build`.
            plan: SortPlan {
                format,
                memory: 64 << 20,
                fan_in: 0,
                block_size: 0,
                input_kind: StreamKind::Buffered,
                output_kind: StreamKind::Buffered,
                files_kind: None,
                queue_depth: 0,
                reverse: false,
                policy: MergePolicy::Optimal,
                threads: 0,
                temp_dirs: Vec::new(),
                input_bytes: None,
                method: Method::Plain,
                lines: None,
                compression: Compression::None,
                eol: b'\n',
                header: false,
                chunk_buffers: None,
                chunk_memory: None,
                segments: None,
                io_choice: None,
                device_cost: None,
            },
            fan_in: None,
            block_size: None,
            queue_depth: None,
            threads: None,
            io_auto: false,
            reverse: false,
            lines: None,
        }
    }

    /// The default seed of SRM's starting disks
    /// ([`ParallelDisks::DEFAULT_SEED`]).
    pub const DEFAULT_SEED: u64 = ParallelDisks::DEFAULT_SEED;

    getters! {
        /// The data format (and so the order).
        format: Format;
        /// The byte that ends each line of `lines`: `\n`, or NUL for GNU
        /// `sort -z` ([`SortPlanBuilder::eol`]). The lines' item codec ends
        /// every line at this byte, and every reader of lines asks the codec
        /// (run formation's reader and index, the merges); the output's
        /// item blocks and `-c` look for the byte themselves. A last line
        /// without it gets one. Always `\n` for the binary formats.
        eol: u8;
        /// Whether each input's first line (record) is a header
        /// (`--header`, module `header`): the first input's is written
        /// first, the others' must equal it, and none is sorted.
        header: bool;
        /// Memory M in bytes for buffers and in-memory sorting.
        memory: u64;
        /// Fan-in d: the most runs one merge reads (≥ 2).
        fan_in: usize;
        /// Block size B in bytes of every stream (≥ 1).
        block_size: usize;
        /// Stream kind that reads the input and the runs.
        input_kind: StreamKind;
        /// Stream kind that writes the runs and the output.
        output_kind: StreamKind;
        /// Stream kind of the user's input and output files where it is not
        /// [`SortPlan::input_kind`] / [`SortPlan::output_kind`]: `--io auto`
        /// keeping the runs in the page cache sends the files, which come
        /// from and go to the device in any case, through `O_DIRECT`
        /// (of the same footprint per stream, so M's accounting holds).
        files_kind: Option<StreamKind>;
        /// io_uring queue depth Q (`uring` streams only).
        queue_depth: u32;
        /// What the device under the runs' directory costs, when it was
        /// measured: by the probe of [`SortPlanBuilder::io_auto`], or by
        /// `emsort calibrate` ([`DeviceCache`]). The statistics' I/O bound
        /// rests on it.
        device_cost: Option<DeviceCost>;
        /// Descending order.
        reverse: bool;
        /// Which runs each merge takes.
        policy: MergePolicy;
        /// Threads of the sort's own pool (in-memory sorting; ≥ 1).
        threads: usize;
        /// Size of the input in bytes, when known (for the derived numbers).
        input_bytes: Option<u64>;
    }

    /// GNU `sort`'s keys and options for `lines` ([`LineOrder`]); `None`:
    /// whole lines bytewise (reversed by [`SortPlan::reverse`]).
    pub fn line_order(&self) -> Option<&LineOrder> {
        self.lines.as_deref()
    }
    /// Whether items equal by the order keep their input order (`-s`,
    /// `-u`): the merges then take consecutive runs only.
    pub fn keeps_input_order(&self) -> bool {
        self.lines.as_ref().is_some_and(|l| l.keeps_input_order())
    }
    /// How temporary runs are stored ([`SortPlanBuilder::compression`]).
    pub fn compression(&self) -> &Compression {
        &self.compression
    }
    /// Raw bytes per frame of a compressed run (module `compress`): B, at
    /// most M/256 (a small budget keeps small frames), within the codecs'
    /// limits.
    pub(crate) fn run_frame(&self) -> usize {
        crate::compress::frame_bytes(self.block_size.min((self.memory / 256) as usize))
    }
    /// Memory a compressed stream holds beside its buffers: a raw frame
    /// and a stored one; 0 where the plan compresses no run in frames.
    fn frame_memory(&self) -> u64 {
        match self.compression.may_use_frames() && self.method == Method::Plain {
            true => crate::compress::frame_memory(self.run_frame()),
            false => 0,
        }
    }
    /// [`SortPlan::frame_memory`] for every stream of a merge: with a codec
    /// asked for, counted in each stream's footprint (so in the least M);
    /// with `auto`, which may choose none, not — `auto` compresses only
    /// where the merges leave room for them ([`SortPlan::frames_fit`]).
    fn stream_frame_memory(&self) -> u64 {
        match self.compression {
            Compression::Auto => 0,
            _ => self.frame_memory(),
        }
    }
    /// Whether the merges of compressed runs fit in M with their frames
    /// (`auto` compresses only then): merges of at most d runs, or of the
    /// runs expected when the input's size is known; each stream's share
    /// ([`SortPlan::merge_block`]: of half of M, or Q blocks with io_uring)
    /// must hold its buffers and its frames.
    pub(crate) fn frames_fit(&self) -> bool {
        let runs = self.derived().expected_runs.map_or(self.fan_in as u64, |u| u.min(self.fan_in as u64));
        let streams = runs.max(2) + 1;
        let f = self
            .footprint(self.input_kind, self.block_size)
            .max(self.footprint(self.output_kind, self.block_size));
        let frames = self.frame_memory();
        match self.input_kind.queued() || self.output_kind.queued() {
            true => streams * (f + frames) <= self.memory,
            false => self.memory / (2 * streams) >= f + frames,
        }
    }

    /// Why the stream kinds were chosen, when the plan chose them
    /// ([`SortPlanBuilder::io_auto`]).
    pub fn io_choice(&self) -> Option<&str> {
        self.io_choice.as_deref()
    }
    /// Directories for temporary runs (runs go round-robin across them;
    /// at least one).
    pub fn temp_dirs(&self) -> &[PathBuf] {
        &self.temp_dirs
    }
    /// How runs are merged, with the merge's parameters: the plain d-way
    /// merge, or DSM / SRM over D disks ([`crate::pdisk`]).
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// The disks of DSM and SRM: the method's disk directories, or the temp
    /// dirs when none are given (empty for the plain merge).
    pub fn disk_dirs(&self) -> &[PathBuf] {
        match self.method.disks() {
            None => &[],
            Some(d) if d.dirs.is_empty() => &self.temp_dirs,
            Some(d) => &d.dirs,
        }
    }

    /// The I/O unit of the format: the element type its streams carry
    /// (the item for numbers; the largest of 8, 4, 1 that divides a record;
    /// a byte for lines).
    pub fn unit(&self) -> usize {
        match self.format {
            Format::Lines => 1,
            Format::Rec(r) if r.size % 8 == 0 => 8,
            Format::Rec(r) if r.size % 4 == 0 => 4,
            Format::Rec(_) => 1,
            f => f.item_size().expect("fixed-size format"),
        }
    }

    /// The stream configuration for reading (`input`) or writing runs.
    pub fn stream_config(&self, input: bool) -> StreamConfig {
        StreamConfig::new(if input { self.input_kind } else { self.output_kind })
            .block_size(self.block_size)
            .queue_depth(self.queue_depth)
    }

    /// This plan with `kind` for the runs' streams (the files keep
    /// theirs): where the first run finds the runs better on the device
    /// than in the page cache (module `plain`). A kind of no larger
    /// footprint per stream than the plan's, so M's accounting holds.
    pub(crate) fn with_run_kind(&self, kind: StreamKind) -> SortPlan {
        let files = self.files_kind.or(Some(self.input_kind));
        SortPlan { input_kind: kind, output_kind: kind, files_kind: files, ..self.clone() }
    }

    /// The stream configuration for reading the user's input files
    /// (`input`) or writing the output file: [`SortPlan::stream_config`]
    /// of [`SortPlan::files_kind`] where the plan has one.
    pub fn file_config(&self, input: bool) -> StreamConfig {
        match self.files_kind {
            Some(kind) => StreamConfig { kind, ..self.stream_config(input) },
            None => self.stream_config(input),
        }
    }

    /// Bytes one stream of `kind` buffers with block size `b`.
    fn footprint(&self, kind: StreamKind, b: usize) -> u64 {
        let page = 4096;
        let b = b.max(self.unit()) as u64;
        self.stream_frame_memory()
            + match kind {
                StreamKind::Mmap | StreamKind::Direct => b.div_ceil(page) * page,
                StreamKind::Uring | StreamKind::UringDirect => b * self.queue_depth.max(1) as u64,
                _ => b,
            }
    }

    /// Largest stream block of a merge (see [`SortPlan::merge_block`]).
    pub const MAX_MERGE_BLOCK: usize = 16 << 20;

    /// The memory each stream of a merge of `k` runs gets: the plan's block
    /// size B, or more when M leaves room. The k inputs and the output
    /// share half of M, M/(2(k+1)) each, rounded down to a power of two and
    /// at most [`SortPlan::MAX_MERGE_BLOCK`]; the other half is left for the
    /// allocator's slack after run formation (an allocator may keep some of
    /// the freed chunk buffers resident), so the peak RSS stays within M plus
    /// the documented overhead. A final merge of 9 runs with M = 256 MiB thus
    /// reads in 2 MiB blocks through 4 MiB stream requests instead of
    /// 256 KiB / 512 KiB, and switches between runs 8 times less often.
    /// `io_uring` streams, whose footprint is Q blocks, keep B.
    pub fn merge_block(&self, k: usize) -> usize {
        self.merge_block_framed(k, false)
    }

    /// [`SortPlan::merge_block`] of a merge that reads or writes compressed
    /// runs (`framed`): the frames' buffers come out of each stream's share.
    pub(crate) fn merge_block_framed(&self, k: usize, framed: bool) -> usize {
        let b = self.block_size.max(self.unit());
        if self.input_kind.queued() || self.output_kind.queued() {
            return b;
        }
        // A compressed run's frames take their memory from the stream's share.
        let frames = if framed { self.frame_memory() } else { 0 };
        let share = (self.memory / (2 * (k as u64 + 1))).saturating_sub(frames);
        if share < b as u64 {
            return b;
        }
        let pow2 = 1u64 << (63 - share.leading_zeros());
        (pow2 as usize).min(Self::MAX_MERGE_BLOCK).max(b)
    }

    /// The stream block of a run of records or lines, filled from
    /// write-behind blocks of as many bytes in all, which the chunk's items
    /// are gathered into on all threads: 2B when M is at least 64 B (with
    /// B/2, a run of 36-byte lines waited for its writes as long as it
    /// gathered), else B/2, so that small budgets need no more than B.
    pub fn run_write_block(&self) -> usize {
        self.write_block_for(self.memory)
    }

    /// [`SortPlan::run_write_block`] with M = `memory`.
    fn write_block_for(&self, memory: u64) -> usize {
        let b = self.block_size as u64;
        let w = if memory >= 64 * b { 2 * b } else { b / 2 };
        (w as usize).max(self.unit())
    }

    /// Memory reserved outside the chunk buffers during run formation,
    /// with M = `memory` (which sets the run's write block); `segmented`:
    /// chunks of numbers sorted in segments, whose merge writes runs like
    /// records are gathered.
    fn run_formation_reserve(&self, memory: u64, segmented: bool) -> u64 {
        let carry = if self.format == Format::Lines { self.block_size as u64 } else { 0 };
        // DSM and SRM write runs through a striped writer with two logical
        // blocks of D·B (one filling, one being written). A chunk of sorted
        // segments is merged into write-behind blocks as records are
        // gathered.
        let gathered = matches!(self.format, Format::Lines | Format::Rec(_)) || segmented;
        let run_output = match &self.method {
            // Records and lines with room: gathered into write-behind
            // blocks of 2B feeding a stream of 2B.
            Method::Plain if gathered && self.write_block_for(memory) > self.block_size => {
                let b = self.write_block_for(memory);
                self.footprint(self.output_kind, b) + b as u64
            }
            // Numbers: one stream of B, written from the chunk itself;
            // records and lines in a small budget: B/2 and B/2.
            Method::Plain => self.footprint(self.output_kind, self.block_size),
            _ => 2 * self.disk_dirs().len().max(1) as u64 * self.block_size as u64,
        };
        // A run compressed in frames (a codec, or `auto`): the writer's.
        self.footprint(self.input_kind, self.block_size) + run_output + carry + self.frame_memory()
    }

    /// Whether run formation can sort a chunk in segments: binary numbers
    /// (sorted in place, merged with [`crate::multiway`]) written as plain
    /// runs.
    fn segmentable(&self) -> bool {
        !matches!(self.format, Format::Lines | Format::Rec(_)) && self.method == Method::Plain
    }

    /// Sorted segments per chunk with `buffers` chunk buffers
    /// ([`Derived::segments`]).
    fn segments_for(&self, buffers: usize) -> usize {
        match self.segments {
            Some(n) => n,
            // One buffer: sorting overlaps reading, merging writing.
            None if buffers == 1 && self.segmentable() => DEFAULT_SEGMENTS,
            None => 1,
        }
    }

    /// The smallest useful chunk buffer (a few items).
    fn minimum_chunk(&self) -> u64 {
        match self.format {
            Format::Lines => 4 * INDEX_ENTRY_BYTES,
            Format::Rec(r) => r.size as u64 + INDEX_ENTRY_BYTES,
            f => f.item_size().expect("fixed-size format") as u64,
        }
    }

    /// The fan-in for runs whose longest item is `longest` bytes: d as the
    /// plan says, fewer when that item is longer than a block, since each
    /// run's reader then gathers it whole (into a buffer of up to twice its
    /// size, as the buffer grows): d + 1 such streams stay within M.
    pub(crate) fn fan_in_for_items(&self, longest: u64) -> usize {
        if longest <= self.block_size as u64 {
            return self.fan_in;
        }
        let per_stream = self.derived().stream_buffer + 2 * longest;
        ((self.memory / per_stream).saturating_sub(1) as usize).clamp(2, self.fan_in.max(2))
    }

    /// Every number that follows from the plan.
    pub fn derived(&self) -> Derived {
        let f = self
            .footprint(self.input_kind, self.block_size)
            .max(self.footprint(self.output_kind, self.block_size));
        let merge_memory = (self.fan_in as u64 + 1) * f;
        // What the chunk buffers get with 1 or 2 of them (segments reserve
        // write-behind blocks).
        // (At most [`SortPlanBuilder::chunk_memory`], never below two of
        // the smallest chunk.)
        let chunk_cap = self.chunk_memory.map_or(u64::MAX, |c| c.max(2 * self.minimum_chunk()));
        let uncapped_for = |buffers: usize| {
            self.memory
                .saturating_sub(self.run_formation_reserve(self.memory, self.segments_for(buffers) > 1))
        };
        let run_memory_for = |buffers: usize| uncapped_for(buffers).min(chunk_cap);
        // The least M that works: with the small write block (M ≥ 64·B,
        // where the larger one is used, leaves room for it).
        let reserve0 = [1, 2].map(|b| self.run_formation_reserve(0, self.segments_for(b) > 1));
        let minimum_memory = merge_memory.max(reserve0[0].max(reserve0[1]) + 2 * self.minimum_chunk());
        // Data bytes a chunk buffer of `cap` bytes holds.
        let data_in = |cap: u64| -> u64 {
            match self.format {
                // The index holds 32-bit offsets and record numbers.
                Format::Lines => (cap / 4 * 3).min(MAX_CHUNK_ITEMS),
                Format::Rec(r) => {
                    (cap / (r.size as u64 + INDEX_ENTRY_BYTES)).min(MAX_CHUNK_ITEMS) * r.size as u64
                }
                // Whole pages where a chunk holds one or more: every
                // chunk then starts at a page of the file, and its data at
                // a page of memory, so that a `direct` run is written from
                // where its sorted numbers lie, without a copy.
                fmt => {
                    let s = fmt.item_size().expect("fixed-size format") as u64;
                    let unit = if cap >= DATA_ALIGN && DATA_ALIGN.is_multiple_of(s) { DATA_ALIGN } else { s };
                    cap / unit * unit
                }
            }
        };
        // One buffer when the whole input fits in it (lines: plus the
        // newline a last line may need).
        let fits_one = self
            .input_bytes
            .is_some_and(|n| n + u64::from(self.format == Format::Lines) <= data_in(run_memory_for(1)));
        // Two buffers overlap reading with sorting and writing, but make
        // runs of half the memory; one buffer makes runs twice as long.
        // Two, unless the longer runs save a whole level of merging, or
        // [`PASSES_FOR_ONE_BUFFER`] of a pass over the data: e.g. Barve &
        // Vitter's 1 M records of 104 bytes with M = 15 MB and SRM on 6
        // disks, 20 runs in two passes or 10 in one; 16 GiB of u32 with
        // M = 256 MiB and d = 64, 130 runs in 2.52 passes or 65 in 2.02.
        let runs_with = |buffers: u64| {
            let run = data_in(run_memory_for(buffers as usize) / buffers).max(1);
            self.input_bytes.map(|n| (n.div_ceil(run), run, n))
        };
        // Below the least M, a plan is refused: no schedule is worth
        // computing (runs of a few bytes would make millions of them).
        let workable = self.memory >= minimum_memory;
        let chunk_buffers = match (fits_one, self.chunk_buffers) {
            (true, _) => 1,
            (false, Some(n)) => n,
            (false, None) if !workable => 2,
            // Chunks capped below what M leaves (`-S 1k` grown): one
            // buffer, runs twice as long; such chunks gain nothing from
            // overlapping.
            (false, None) if uncapped_for(1) > chunk_cap => 1,
            (false, None) => match (runs_with(2), runs_with(1)) {
                (Some(two), Some(one)) if self.merge_levels(one.0) < self.merge_levels(two.0) => 1,
                (Some(two), Some(one))
                    if self.plain_passes(two) - self.plain_passes(one) >= PASSES_FOR_ONE_BUFFER =>
                {
                    1
                }
                _ => 2,
            },
        };
        let run_memory = run_memory_for(chunk_buffers);
        let chunk_bytes = run_memory / chunk_buffers as u64;
        let run_bytes = data_in(chunk_bytes);
        let items_per_run = self.format.item_size().map(|s| run_bytes / s as u64);
        let max_lines_per_run =
            (self.format == Format::Lines).then(|| (chunk_bytes / 4 / INDEX_ENTRY_BYTES).max(1));
        let expected_runs = match self.input_bytes {
            Some(0) => Some(0),
            Some(_) if fits_one => Some(1),
            Some(n) if run_bytes > 0 => Some(n.div_ceil(run_bytes)),
            _ => None,
        };
        let schedule = match (expected_runs, self.input_bytes) {
            (Some(u), Some(n)) if self.fan_in >= 2 && workable => {
                Some(schedule(&run_sizes(u, run_bytes, n), self.fan_in, self.policy))
            }
            _ => None,
        };
        let passes = schedule.as_ref().zip(self.input_bytes).map(|(s, n)| s.passes(n));
        Derived {
            stream_buffer: f,
            merge_memory,
            minimum_memory,
            run_memory,
            chunk_buffers,
            segments: self.segments_for(chunk_buffers),
            chunk_bytes,
            run_bytes,
            items_per_run,
            max_lines_per_run,
            expected_runs,
            schedule,
            passes,
        }
    }

    /// Passes over the data of the plain method's merge schedule for
    /// `(runs, run size, input size)` (0 for DSM and SRM, whose passes are
    /// levels).
    fn plain_passes(&self, (runs, run, n): (u64, u64, u64)) -> f64 {
        if self.method != Method::Plain || self.fan_in < 2 {
            return 0.0;
        }
        schedule(&run_sizes(runs, run, n), self.fan_in, self.policy).passes(n)
    }

    /// The merge order for `runs` runs with this plan's method (at least
    /// 2): d, or DSM's and SRM's R.
    fn merge_order(&self, runs: u64) -> usize {
        let (b, disks) = (self.block_size, self.disk_dirs().len().max(1));
        let order = match &self.method {
            Method::Plain => self.fan_in,
            Method::Dsm(_) => order::dsm_merge_order(self.memory, b, disks),
            Method::Srm(_, srm) => {
                order::srm_merge_order(runs, order::srm_max_fit(self.memory, b, disks).max(2), srm.max_order)
            }
        };
        order.max(2)
    }

    /// Levels of merging that `runs` runs need with this plan's method: a
    /// tree of d-way merges, or the passes of DSM's and SRM's merge orders.
    fn merge_levels(&self, runs: u64) -> u64 {
        order::passes(runs, self.merge_order(runs)) as u64
    }

    /// The checks of [`SortPlanBuilder::build`] (and a temporary directory).
    /// None depends on the input size, so the plans
    /// [`SortPlan::with_input_size`] makes stay valid.
    fn check(&self) -> Result<(), SortError> {
        check_method(&self.method)?;
        if let Some(n) = self.chunk_buffers.filter(|n| !(1..=2).contains(n)) {
            return Err(SortError::BadPlan(format!("run formation takes 1 or 2 chunk buffers, not {n}")));
        }
        if let Some(n) = self.segments.filter(|&n| n != 1) {
            if !(2..=MAX_SEGMENTS).contains(&n) {
                return Err(SortError::BadPlan(format!(
                    "a chunk takes 1 to {MAX_SEGMENTS} sorted segments, not {n}"
                )));
            }
            if !self.segmentable() {
                return Err(SortError::BadPlan(format!(
                    "sorted segments apply to binary numbers with the plain merge, not {} with --method {}",
                    self.format,
                    self.method.kind()
                )));
            }
        }
        if self.lines.is_some() && self.format != Format::Lines {
            return Err(SortError::BadPlan(format!("keys and -u order text lines, not {}", self.format)));
        }
        if self.header && self.format != Format::Lines {
            return Err(SortError::BadPlan(format!(
                "a header line (--header) belongs to text, not {}",
                self.format
            )));
        }
        if self.eol != b'\n' && self.format != Format::Lines {
            return Err(SortError::BadPlan(format!(
                "a line terminator other than newline (-z) applies to text lines; {} has no lines",
                self.format
            )));
        }
        if let Compression::Program(p) = &self.compression {
            if p.as_os_str().is_empty() {
                return Err(SortError::BadPlan("the compress program's name is empty".into()));
            }
        }
        if !matches!(self.compression, Compression::None | Compression::Auto) && self.method != Method::Plain
        {
            let what = match &self.compression {
                Compression::Program(_) => "a compress program".to_string(),
                c => format!("compressed runs (--compress={c})"),
            };
            return Err(SortError::BadPlan(format!(
                "{what} need the plain merge (--method plain), not --method {}: \
                 DSM and SRM stripe their runs in blocks over the disks",
                self.method.kind()
            )));
        }
        if self.fan_in < 2 {
            return Err(SortError::BadPlan(format!("fan-in d must be at least 2 (got {})", self.fan_in)));
        }
        if self.block_size == 0 {
            return Err(SortError::BadPlan("block size B must be at least 1 byte".into()));
        }
        if self.threads == 0 {
            return Err(SortError::BadPlan("the sort needs at least 1 thread".into()));
        }
        if self.temp_dirs.is_empty() {
            return Err(SortError::BadPlan("no temporary directory given".into()));
        }
        if self.method != Method::Plain {
            return check_method_memory(self);
        }
        let d = self.derived();
        if self.memory < d.minimum_memory {
            return Err(SortError::MemoryTooSmall {
                memory: self.memory,
                minimum: d.minimum_memory,
                fan_in: self.fan_in,
                block_size: self.block_size,
                stream_buffer: d.stream_buffer,
            });
        }
        Ok(())
    }

    /// The most threads this process can use: the CPUs it may run on
    /// (`sched_getaffinity`, cgroup quotas). The builder caps the plan's
    /// threads at this; more would only add threads that wait.
    pub fn max_threads() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }

    /// A warning when M is so small for the input that the runs need more
    /// than one merge pass, with what that costs and the memory that would
    /// merge them in one (as the builder's defaults derive d and B from M).
    /// `None` when one merge pass (or none) suffices or the input size is
    /// not known.
    pub fn memory_warning(&self) -> Option<String> {
        let n = self.input_bytes?;
        let d = self.derived();
        let passes = d.passes?;
        if passes <= 2.0 + 1e-9 {
            return None;
        }
        let mut m = self.memory.max(1);
        let enough = loop {
            m = m.checked_mul(2)?;
            if m > (1 << 50) {
                break None;
            }
            let mut b = SortPlan::builder(self.format)
                .memory(m)
                .input_kind(self.input_kind)
                .output_kind(self.output_kind)
                .queue_depth(self.queue_depth)
                .threads(self.threads)
                .method(self.method.clone())
                .input_bytes(n);
            b.plan.temp_dirs = self.temp_dirs.clone();
            if let Ok(p) = b.build() {
                if p.derived().passes.is_some_and(|p| p <= 2.0 + 1e-9) {
                    break Some(m);
                }
            }
        };
        let runs = d.expected_runs.unwrap_or(0);
        let mut text = format!(
            "memory {} for {} of input makes about {runs} runs, merged {} at a time in {:.1} passes: \
             the data is read and written {:.1} times instead of 2",
            human(self.memory),
            human(n),
            self.fan_in,
            passes - 1.0,
            passes,
        );
        if let Some(m) = enough {
            text.push_str(&format!("; {} or more would merge them in one pass", human(m)));
        }
        Some(text)
    }

    /// The same plan for an input of `bytes` bytes.
    pub fn with_input_bytes(&self, bytes: u64) -> SortPlan {
        self.with_input_size(Some(bytes))
    }

    /// The same plan for an input of `bytes` bytes, or of unknown size
    /// (a stream). The input size changes only the derived numbers (the
    /// runs, their buffers, the schedule), never what the checks of
    /// [`SortPlanBuilder::build`] look at, so the plan stays valid.
    pub fn with_input_size(&self, bytes: Option<u64>) -> SortPlan {
        SortPlan { input_bytes: bytes, ..self.clone() }
    }
}

/// The least memory `plan`'s method needs: the merge with R = 2 and run
/// formation (an input stream, the striped run writer's 2·D·B and two
/// small chunks).
pub(crate) fn method_minimum_memory(plan: &SortPlan) -> u64 {
    let (b, d) = (plan.block_size(), plan.disk_dirs().len().max(1));
    let merge = match plan.method() {
        Method::Dsm(_) => order::dsm_memory(2, b, d),
        Method::Srm(_, o) if o.forecast_in_memory == Some(true) => order::srm_block_memory(2, b, d),
        _ => order::srm_memory(2, b, d),
    };
    let item = plan.format().item_size().unwrap_or(64) as u64 + INDEX_ENTRY_BYTES;
    let formation = b as u64 + 2 * (d * b) as u64 + 2 * item + b as u64;
    merge.max(formation)
}

/// Checks the parameters a [`Method`] carries: SRM's merge order cap at
/// least 2, and each disk directory given an existing directory (checked
/// before any output exists; the messages are those `emsort sort` prints).
fn check_method(method: &Method) -> Result<(), SortError> {
    if let Some(c) = method.srm().and_then(|o| o.max_order).filter(|&c| c < 2) {
        return Err(SortError::BadPlan(format!("the SRM merge order cap must be at least 2 (got {c})")));
    }
    for d in method.disks().map_or(&[][..], |d| &d.dirs) {
        match std::fs::metadata(d) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(SortError::BadPlan(format!("disk {} is not a directory", d.display()))),
            Err(e) => {
                return Err(SortError::BadPlan(format!("disk directory {} cannot be used: {e}", d.display())))
            }
        }
    }
    Ok(())
}

/// Checks that a DSM or SRM plan has a disk and the memory its method
/// needs (the plain checks done by the caller first).
fn check_method_memory(plan: &SortPlan) -> Result<(), SortError> {
    let disks = plan.disk_dirs().len();
    if disks == 0 {
        return Err(SortError::BadPlan(format!("{} needs at least one disk", plan.method())));
    }
    let minimum = method_minimum_memory(plan);
    if plan.memory() < minimum {
        return Err(SortError::MethodMemoryTooSmall {
            method: plan.method().kind(),
            memory: plan.memory(),
            minimum,
            disks,
            block_size: plan.block_size(),
        });
    }
    Ok(())
}

/// Builds a [`SortPlan`]; see [`SortPlan::builder`] for the defaults.
#[derive(Debug, Clone)]
pub struct SortPlanBuilder {
    /// The plan as given; [`SortPlanBuilder::build`] fills in the rest
    /// (from the fields below, which are `None` until given).
    plan: SortPlan,
    fan_in: Option<usize>,
    block_size: Option<usize>,
    queue_depth: Option<u32>,
    threads: Option<usize>,
    io_auto: bool,
    /// The order, as [`SortPlanBuilder::line_order`] sets it.
    reverse: bool,
    lines: Option<Arc<LineOrder>>,
}

impl SortPlanBuilder {
    /// Largest default fan-in.
    pub const MAX_AUTO_FAN_IN: usize = 64;
    /// Largest default block size (1 MiB).
    pub const MAX_AUTO_BLOCK: usize = 1 << 20;
    /// Smallest default block size (4 KiB).
    pub const MIN_AUTO_BLOCK: usize = 4 << 10;

    /// Orders `lines` by GNU `sort`'s keys and options. A plain order
    /// (no key, no `-u`, not of CSV records) becomes the bytewise order,
    /// reversed by its `-r`.
    pub fn line_order(mut self, order: LineOrder) -> Self {
        if order.is_plain() && !order.unique() && order.csv().is_none() {
            self.reverse = order.reverse();
            self.lines = None;
        } else {
            self.reverse = false;
            self.lines = Some(Arc::new(order));
        }
        self
    }

    /// Sets the stream kind for reading and for writing.
    pub fn io(mut self, kind: StreamKind) -> Self {
        self.plan.input_kind = kind;
        self.plan.output_kind = kind;
        self.io_auto = false;
        self
    }
    /// Lets [`SortPlanBuilder::build`] choose the stream kind and the queue
    /// depth for the device the runs go to
    /// ([`emsort_io::device::choose`]: `uring-direct` with Q from the
    /// device's bandwidth × latency, `uring` (the page cache) when the
    /// runs fit under the kernel's background write-back threshold, or
    /// `direct` on memory, below
    /// [`emsort_io::device::QUEUED_MEMORY`] or without io_uring), from
    /// `emsort calibrate`'s measurement of that device or a probe of a few
    /// milliseconds; the plan says what and why
    /// ([`SortPlan::io_choice`]). The command line's and Python's default.
    pub fn io_auto(mut self) -> Self {
        self.io_auto = true;
        self
    }
    /// Sets the stream kind that reads the input and the runs.
    pub fn input_kind(mut self, kind: StreamKind) -> Self {
        self.plan.input_kind = kind;
        self.io_auto = false;
        self
    }
    /// Sets the stream kind that writes the runs and the output.
    pub fn output_kind(mut self, kind: StreamKind) -> Self {
        self.plan.output_kind = kind;
        self.io_auto = false;
        self
    }
    /// Adds a temporary directory (default: `$TMPDIR` or `/tmp`).
    pub fn temp_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.plan.temp_dirs.push(dir.into());
        self
    }
    /// Writes every temporary run through `program` (found on `PATH`, or a
    /// path; run with no argument, the run's bytes on its standard input,
    /// the run file as its standard output) and reads it back through
    /// `program -d`, as GNU sort's `--compress-program` does:
    /// [`Compression::Program`]. The program is started only when a run is
    /// written: a sort that makes a single run never runs it.
    pub fn compress_program(mut self, program: impl Into<PathBuf>) -> Self {
        self.plan.compression = Compression::Program(program.into());
        self
    }
    /// How temporary runs are stored (module `compress`; default
    /// [`Compression::None`]): `Auto` decides at the first run whether a
    /// codec makes the sort faster on the measured device, `Lz4` and
    /// `Zstd` compress every run in checksummed frames, `Program` is GNU's
    /// `--compress-program`. The plain method only (DSM and SRM refuse a
    /// codec; `Auto` is none there); the input, the output and the files
    /// of a merge are never compressed. With a codec or `Auto`, each
    /// stream's memory counts its frames' buffers.
    pub fn compression(mut self, c: Compression) -> Self {
        self.plan.compression = c;
        self
    }

    setters! {
        /// Sets the byte that ends each line of `lines` (default `\n`; NUL for
        /// GNU `sort -z`, whose lines may hold newlines). The binary formats
        /// have no lines: [`SortPlanBuilder::build`] refuses any other byte
        /// for them.
        eol(byte: u8) in plan;
        /// Makes each input's first line (or CSV record) a header, kept
        /// apart from the sort ([`SortPlan::header`]); text lines only.
        header(yes: bool) in plan;
        /// Sets the memory M in bytes.
        memory(bytes: u64) in plan;
        /// Sets the chunk buffers of run formation: 2 overlap reading one with
        /// sorting and writing the other, 1 makes runs twice as long (default:
        /// 2, or 1 when that saves a level of merging or
        /// [`PASSES_FOR_ONE_BUFFER`] of a pass, or the input fits in it).
        chunk_buffers(n: usize) in plan = Some;
        /// Caps the memory of run formation's chunk buffers at `bytes` (at
        /// least two of the smallest chunk; default: what M leaves beside the
        /// streams). `emsort sort -S 1k`: M grows to what a merge of GNU's 16
        /// runs needs, while runs stay as small as the user asked, as GNU's
        /// buffer of 1 KiB makes runs of a few dozen lines.
        chunk_memory(bytes: u64) in plan = Some;
        /// Sets the sorted segments of a chunk of numbers: each is sorted as
        /// soon as it is read (sorting overlaps reading), and the run is
        /// written by merging them. Binary numbers with the plain merge only
        /// (default: [`DEFAULT_SEGMENTS`] with one chunk buffer, else 1: the
        /// chunk sorted whole after it is read).
        segments(n: usize) in plan = Some;
        /// Sets the fan-in d (default: as many as M allows, up to 64).
        fan_in(d: usize) = Some;
        /// Sets the block size B (default: M / 16, or less if d + 1 streams of
        /// it would not fit in M, rounded down to a power of two, within
        /// 4 KiB … 1 MiB).
        block_size(bytes: usize) = Some;
        /// Sets the io_uring queue depth Q (default: the device's with
        /// [`SortPlanBuilder::io_auto`], else
        /// [`StreamConfig::DEFAULT_QUEUE_DEPTH`]).
        queue_depth(q: u32) = Some;
        /// Sorts in descending order.
        reverse(yes: bool);
        /// Sets the merge policy.
        policy(policy: MergePolicy) in plan;
        /// Sets the number of threads (default: all cores; at most
        /// [`SortPlan::max_threads`], the CPUs this process may use).
        threads(n: usize) = Some;
        /// Sets the input size, for the derived numbers (the sort sets it from
        /// the file).
        input_bytes(bytes: u64) in plan = Some;
        /// Sets the merge method with its parameters (default:
        /// [`Method::Plain`]): `Method::Srm(ParallelDisks::new(dirs),
        /// SrmOptions::default())` for SRM on the disks `dirs`.
        method(method: Method) in plan;
    }

    /// Fills in the defaults and checks the plan: the only way to make a
    /// [`SortPlan`]. Refuses ([`SortError::BadPlan`]) d < 2, B = 0,
    /// 0 threads, an SRM merge order cap below 2, a disk directory that
    /// does not exist or is not a directory, DSM or SRM without a disk, a
    /// compress program with DSM or SRM; refuses M below what the plan needs
    /// ([`SortError::MemoryTooSmall`], [`SortError::MethodMemoryTooSmall`]:
    /// for DSM and SRM what the method needs on D disks), naming the minimum.
    pub fn build(self) -> Result<SortPlan, SortError> {
        let Self { mut plan, fan_in, block_size, mut queue_depth, threads, io_auto, reverse, lines } = self;
        (plan.reverse, plan.lines) = (reverse, lines);
        if plan.temp_dirs.is_empty() {
            plan.temp_dirs.push(std::env::temp_dir());
        }
        // Where the runs go: the first disk of DSM and SRM, else the first
        // temp dir; there will be runs when the input is larger than M or
        // of unknown size.
        let runs_dir = plan
            .method
            .disks()
            .and_then(|d| d.dirs.first().cloned())
            .unwrap_or_else(|| plan.temp_dirs[0].clone());
        let runs = plan.input_bytes.is_none_or(|n| n > plan.memory);
        // `emsort calibrate`'s devices file, read only when something asks it.
        let cache =
            (io_auto || runs).then(DeviceCache::default_path).flatten().map(|p| DeviceCache::load(&p));
        if io_auto {
            let d = device::choose(
                runs.then_some(runs_dir.as_path()),
                plan.input_bytes,
                plan.memory,
                cache.as_ref(),
            );
            (plan.input_kind, plan.output_kind, plan.files_kind) = (d.kind, d.kind, d.files_kind);
            queue_depth = queue_depth.or(Some(d.queue_depth));
            (plan.io_choice, plan.device_cost) = (Some(d.why), d.cost);
            // A ring costs each stream one descriptor more: where the limit
            // leaves too few for a 2-way merge with rings (`ulimit -n 6`),
            // the same kind without one.
            if d.kind.queued() && descriptor_streams(true) < 3 {
                let kind = if d.kind.bypasses_cache() { StreamKind::Direct } else { StreamKind::Buffered };
                (plan.input_kind, plan.output_kind) = (kind, kind);
                plan.files_kind = d.files_kind.map(|_| StreamKind::Direct);
                plan.io_choice = plan.io_choice.map(|why| {
                    format!("{why}; {kind} instead of {}: too few descriptors for io_uring's rings", d.kind)
                });
            }
        } else if runs {
            plan.device_cost = cache.and_then(|c| c.lookup(&runs_dir)).map(|(c, _)| c);
        }
        // `auto` compression weighs the device's bandwidths: measured here
        // when neither `--io auto` nor `emsort calibrate` did.
        if runs && plan.compression == Compression::Auto && plan.method == Method::Plain {
            plan.device_cost = plan.device_cost.or_else(|| DeviceCost::probe(&runs_dir));
        }
        plan.queue_depth = queue_depth.unwrap_or(StreamConfig::DEFAULT_QUEUE_DEPTH);
        let uring = plan.input_kind.queued() || plan.output_kind.queued();
        plan.block_size = block_size.unwrap_or_else(|| {
            // M/16, and small enough for d + 1 streams (of Q blocks each,
            // with io_uring) when d is given.
            let q = if uring { plan.queue_depth.max(1) as u64 } else { 1 };
            let per_stream = match fan_in {
                Some(d) => plan.memory / ((d as u64).max(2) + 1) / q,
                None => plan.memory / 16 / q,
            };
            let b = (plan.memory / 16).min(per_stream).max(1);
            let pow2 = 1usize << (63 - b.leading_zeros());
            pow2.clamp(Self::MIN_AUTO_BLOCK, Self::MAX_AUTO_BLOCK)
        });
        // More threads than CPUs only wait (and tens of thousands exhaust the
        // process before the sort starts): capped at what the machine gives.
        plan.threads = threads.unwrap_or_else(SortPlan::max_threads).min(SortPlan::max_threads());
        // d as M allows (unless given), and never more than the process's
        // descriptors allow (a given d too: GNU's --batch-size is "at most").
        plan.fan_in = fan_in.unwrap_or(2);
        if fan_in.is_none() {
            let f = plan.derived().stream_buffer.max(1);
            plan.fan_in = ((plan.memory / f).saturating_sub(1) as usize).clamp(2, Self::MAX_AUTO_FAN_IN);
        }
        plan.fan_in = plan.fan_in.min(descriptor_fan_in(uring).max(2));
        plan.check()?;
        Ok(plan)
    }
}

/// The fan-in the process's descriptors allow, as GNU sort sizes its
/// merges from `RLIMIT_NOFILE`: the descriptors the limit leaves, less a
/// few for the output, the temporary directory's lock, the statistics'
/// counter and a short-lived `/proc` read, over what one stream takes (its
/// file, and its ring with io_uring), less the output's. At least 2 (a
/// merge needs two inputs; with so few descriptors the lock and the
/// counter give theirs up: [`emsort_io::TempDir`], [`crate::stats`]).
fn descriptor_fan_in(uring: bool) -> usize {
    (descriptor_streams(uring).saturating_sub(1).min(usize::MAX as u64) as usize).max(2)
}

/// The streams (output and inputs) the process's descriptors allow: see
/// [`descriptor_fan_in`].
fn descriptor_streams(uring: bool) -> u64 {
    const RESERVE: u64 = 5;
    let per_stream = if uring { 2 } else { 1 };
    emsort_io::rusage::free_descriptors().saturating_sub(RESERVE) / per_stream
}

/// The sizes of `runs` runs of `run` bytes of an input of `n` bytes: full
/// runs, and whatever is left in the last one.
fn run_sizes(runs: u64, run: u64, n: u64) -> Vec<u64> {
    let mut sizes = vec![run.min(n); runs as usize];
    if let Some(last) = sizes.last_mut() {
        *last = n - run.min(n) * (runs - 1);
    }
    sizes
}

/// A size in the largest binary unit: exact (`64K`) when it divides, else
/// with one decimal (`28.6M`).
fn human(b: u64) -> String {
    let exact = format_size(b);
    if b < 1024 || !exact.chars().all(|c| c.is_ascii_digit()) {
        return exact;
    }
    let (mut v, mut unit) = (b as f64, 0);
    while v >= 1024.0 && unit < 4 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1}{}", ["", "K", "M", "G", "T"][unit])
}

impl fmt::Display for SortPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.derived();
        let sz = |b: u64| format!("{} ({b} bytes)", human(b));
        writeln!(f, "sort plan")?;
        writeln!(
            f,
            "  format            {} ({}), {}",
            self.format,
            match self.format.item_size() {
                Some(s) => format!("{s}-byte items"),
                None if self.eol == b'\n' => "newline-terminated lines".into(),
                None if self.eol == 0 => "NUL-terminated lines".into(),
                None => format!("lines ended by byte {:#04x}", self.eol),
            },
            if self.reverse { "descending" } else { "ascending" }
        )?;
        if self.header {
            writeln!(f, "                    each input's first line is a header, kept first")?;
        }
        writeln!(f, "  memory M          {}", sz(self.memory))?;
        if let Some(c) = self.chunk_memory {
            writeln!(f, "                    (run formation's chunks capped at {})", human(c))?;
        }
        writeln!(f, "  fan-in d          {}", self.fan_in)?;
        writeln!(f, "  block size B      {}", sz(self.block_size as u64))?;
        writeln!(
            f,
            "  streams           input {}, output {}{} (F = {} buffered per stream{})",
            self.input_kind,
            self.output_kind,
            self.files_kind.map_or(String::new(), |k| format!("; the input and output files {k}")),
            human(d.stream_buffer),
            if self.input_kind.queued() || self.output_kind.queued() {
                format!(", Q = {}", self.queue_depth)
            } else {
                String::new()
            }
        )?;
        if let Some(why) = &self.io_choice {
            writeln!(f, "                    ({why})")?;
        }
        writeln!(f, "  merge policy      {}", self.policy)?;
        if matches!(
            self.format,
            Format::U32 | Format::I32 | Format::U64 | Format::I64 | Format::F32 | Format::F64
        ) {
            let (l, cpu) = (crate::simd::level(), crate::simd::detected());
            writeln!(
                f,
                "  SIMD kernels      {l} ({})",
                if l == cpu {
                    "the CPU's highest; EMSORT_SIMD=avx2|scalar forces a lower one".to_string()
                } else {
                    format!("EMSORT_SIMD; the CPU has {cpu}")
                }
            )?;
        }
        if let Some(disks) = self.method.disks() {
            let dirs: Vec<String> = self.disk_dirs().iter().map(|p| p.display().to_string()).collect();
            writeln!(
                f,
                "  method            {} on D = {} disk(s): {} (logical block D·B = {}){}",
                self.method,
                dirs.len(),
                dirs.join(", "),
                human((dirs.len() * self.block_size) as u64),
                disks.emulate.map(|m| format!(", emulated {m}")).unwrap_or_default()
            )?;
            if let Some(srm) = self.method.srm() {
                writeln!(
                    f,
                    "  srm               seed {}, merge order cap {}, forecasting data {}",
                    disks.seed,
                    srm.max_order.map_or("none".to_string(), |c| c.to_string()),
                    match srm.forecast_in_memory {
                        None => "by memory (4.1.3)",
                        Some(true) => "in memory",
                        Some(false) => "blocked (4.1.2)",
                    }
                )?;
            }
        }
        match &self.compression {
            Compression::None => {}
            Compression::Program(p) => {
                writeln!(f, "  compress          runs through {0}, read back through {0} -d", p.display())?
            }
            Compression::Auto => writeln!(
                f,
                "  compress          auto: decided at the first run from a sample of it (lz4, zstd:1 or none), \
                 frames of {}",
                human(self.run_frame() as u64)
            )?,
            c => writeln!(f, "  compress          {c}, frames of {}", human(self.run_frame() as u64))?,
        }
        writeln!(f, "  threads           {}", self.threads)?;
        let dirs: Vec<String> = self.temp_dirs.iter().map(|p| p.display().to_string()).collect();
        writeln!(f, "  temp dirs         {}", dirs.join(", "))?;
        writeln!(f, "  minimum M         {} for this d and B", sz(d.minimum_memory))?;
        writeln!(f, "  merge memory      {} = (d + 1) · F", sz(d.merge_memory))?;
        writeln!(
            f,
            "  run formation     {} chunk buffer(s) of {}{}, {} of data per run{}",
            d.chunk_buffers,
            human(d.chunk_bytes),
            if d.segments > 1 { format!(" in {} sorted segments", d.segments) } else { String::new() },
            human(d.run_bytes),
            match (d.items_per_run, d.max_lines_per_run) {
                (Some(n), _) => format!(", {n} items per run"),
                (None, Some(l)) => format!(", at most {l} lines per run"),
                _ => String::new(),
            }
        )?;
        match self.input_bytes {
            Some(n) => {
                let items = self.format.item_size().map(|s| format!(", {} items", n / s as u64));
                writeln!(f, "  input             {}{}", sz(n), items.unwrap_or_default())?;
            }
            None => writeln!(f, "  input             size unknown")?,
        }
        if let (Some(u), Some(s), Some(p)) = (d.expected_runs, &d.schedule, d.passes) {
            writeln!(
                f,
                "  runs U            {u}{}",
                if self.format == Format::Lines { " (estimate)" } else { "" }
            )?;
            if self.method == Method::Plain {
                let order = s.merges.iter().map(|m| m.inputs.len()).max().unwrap_or(0);
                writeln!(
                    f,
                    "  merges            {} in {} level(s), at most {order} runs each; {:.2} passes over the data",
                    s.merges.len(),
                    s.levels,
                    p
                )?;
            } else {
                let r = self.merge_order(u);
                writeln!(
                    f,
                    "  merges            merge order R = {r}, {} pass(es) over the runs",
                    order::passes(u, r)
                )?;
            }
        }
        if self.method != Method::Plain {
            writeln!(
                f,
                "  minimum M         {} for {} with this D and B",
                sz(method_minimum_memory(self)),
                self.method
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(format: Format, m: u64, d: usize, b: usize) -> Result<SortPlan, SortError> {
        SortPlan::builder(format).memory(m).fan_in(d).block_size(b).build()
    }

    #[test]
    fn refuses_memory_below_d_plus_one_buffers_and_names_the_minimum() {
        let e = plan(Format::U32, 4 << 20, 8, 1 << 20).unwrap_err();
        match e {
            SortError::MemoryTooSmall { minimum, fan_in: 8, .. } => assert_eq!(minimum, 9 << 20),
            other => panic!("{other}"),
        }
        let msg = plan(Format::U32, 4 << 20, 8, 1 << 20).unwrap_err().to_string();
        assert!(msg.contains("needs at least 9M"), "{msg}");
        assert!(plan(Format::U32, 9 << 20, 8, 1 << 20).is_ok());
        assert!(matches!(plan(Format::U32, 1 << 30, 1, 1 << 20), Err(SortError::BadPlan(_))));
    }

    /// A chunk of numbers holds whole pages where it holds one or more
    /// (every chunk then starts at a page of its file, so that its run is
    /// written from where it lies), else whole numbers.
    #[test]
    fn chunks_of_numbers_are_whole_pages() {
        let mut small = 0;
        for (format, size) in [(Format::U32, 4), (Format::U64, 8), (Format::F64, 8)] {
            for m in [5 << 10, 7 << 10, 64 << 10, 1 << 20, (5 << 20) + 12_345, 256 << 20, (300 << 20) + 4] {
                let p = SortPlan::builder(format).memory(m).fan_in(2).block_size(512).chunk_buffers(2);
                let d = p.build().unwrap().derived();
                let run = d.run_bytes;
                let whole = if d.chunk_bytes >= DATA_ALIGN { DATA_ALIGN } else { size };
                small += usize::from(whole == size);
                assert!(
                    run > 0 && run.is_multiple_of(whole) && run + whole > d.chunk_bytes,
                    "{format:?} M={m}: {run}"
                );
            }
        }
        assert!(small > 0, "no chunk below a page was tried");
    }

    #[test]
    fn derives_runs_and_passes_in_one_place() {
        let two =
            SortPlan::builder(Format::U64).memory(10 * 1024).fan_in(3).block_size(1024).chunk_buffers(2);
        let p = two.build().unwrap().with_input_bytes(80_000);
        let d = p.derived();
        // (10K − 2K) / 2 buffers = 4K per chunk = 512 u64 per run.
        assert_eq!(d.chunk_buffers, 2);
        assert_eq!(d.items_per_run, Some(512));
        assert_eq!(d.expected_runs, Some(20)); // 10000 items / 512
        let s = d.schedule.as_ref().unwrap();
        assert!(s.merges.iter().all(|m| m.inputs.len() <= 3));
        assert_eq!(s.merges.iter().map(|m| m.size).max(), Some(80_000));
        let small = p.with_input_bytes(8000);
        assert_eq!(small.derived().chunk_buffers, 1);
        assert_eq!(small.derived().expected_runs, Some(1));
        assert!(small.derived().schedule.unwrap().merges.is_empty());
        let text = format!("{p}");
        assert!(text.contains("fan-in d          3") && text.contains("runs U            20"), "{text}");
    }

    /// A budget below the least M (issue 39: `-S 1K` on 40 MB spent 20 s
    /// and 2.2 GB planning a schedule of millions of runs of a few bytes)
    /// derives no schedule; the builder refuses it at once with the minimum.
    #[test]
    fn memory_below_the_minimum_plans_no_schedule() {
        let b = SortPlan::builder(Format::U32).memory(1 << 10).input_bytes(40_000_000).io(StreamKind::Direct);
        let minimum = match b.clone().build() {
            Err(SortError::MemoryTooSmall { minimum, .. }) => minimum,
            other => panic!("{other:?}"),
        };
        let mut p = b.memory(minimum).build().unwrap();
        assert!(p.derived().schedule.is_some());
        p.memory = 1 << 10;
        let d = p.derived();
        assert!(d.schedule.is_none() && d.passes.is_none());
    }

    /// `emsort sort -S 1k`: M grown for a 16-way merge, chunks capped at
    /// the 1 KiB asked for, in one buffer (issue 39: grown only to a 2-way
    /// merge's buffers, GNU's sort-compress-hang.sh made 200,000 one-line
    /// runs and ran past 10 minutes).
    #[test]
    fn capped_chunks_keep_runs_small_in_one_buffer() {
        let b = SortPlan::builder(Format::Lines).io(StreamKind::Direct).input_bytes(1_400_000);
        let p = b.clone().memory(17 * 4096).chunk_memory(1 << 10).build().unwrap();
        let d = p.derived();
        assert_eq!((p.fan_in(), d.chunk_buffers, d.chunk_bytes, d.run_bytes), (16, 1, 1024, 768));
        let uncapped = b.memory(17 * 4096).build().unwrap().derived();
        assert!(uncapped.run_bytes > 16 * d.run_bytes, "{uncapped:?}");
        assert!(d.expected_runs.unwrap() > 1000 && d.schedule.is_some());
        // Never below two of the smallest chunk; above what M leaves, no cap.
        let tiny = SortPlan::builder(Format::U64).memory(1 << 20).chunk_memory(1).build().unwrap();
        assert_eq!(tiny.derived().run_memory, 16);
        let roomy = SortPlan::builder(Format::U64).memory(1 << 20).chunk_memory(1 << 30).build().unwrap();
        assert_eq!(
            roomy.derived(),
            SortPlan::builder(Format::U64).memory(1 << 20).build().unwrap().derived()
        );
        assert!(format!("{p}").contains("chunks capped at 1K"));
    }

    #[test]
    fn a_built_plan_stays_valid_for_any_input_size() {
        // M exactly the minimum: the tightest plan that builds.
        for format in [Format::U32, Format::Lines, "rec:100:0:10".parse().unwrap()] {
            let minimum = plan(format, 1 << 30, 4, 4096).unwrap().derived().minimum_memory;
            let p = plan(format, minimum, 4, 4096).unwrap();
            assert!(plan(format, minimum - 1, 4, 4096).is_err());
            for n in [None, Some(0), Some(1), Some(minimum), Some(64 * minimum)] {
                p.with_input_size(n).check().unwrap();
            }
        }
    }

    #[test]
    fn method_parameters_are_checked_when_built() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let on = |dirs: Vec<PathBuf>, srm: SrmOptions| {
            SortPlan::builder(Format::U32).method(Method::Srm(ParallelDisks::new(dirs), srm)).build()
        };
        let ok = SrmOptions::default();
        assert!(on(vec![dir.path().into()], ok).is_ok());
        assert!(on(vec![], ok).is_ok(), "no disks: the temp dirs");
        let msg = |r: Result<SortPlan, SortError>| r.unwrap_err().to_string();
        assert!(msg(on(vec![file.clone()], ok)).contains("is not a directory"));
        let missing = msg(on(vec![dir.path().join("gone")], ok));
        assert!(missing.contains("gone") && missing.contains("cannot be used"), "{missing}");
        for cap in [0, 1] {
            assert!(msg(on(vec![], ok.max_order(Some(cap)))).contains("must be at least 2"));
        }
        assert!(on(vec![], ok.max_order(Some(2))).is_ok());
        let dsm = SortPlan::builder(Format::U32).method(Method::Dsm(ParallelDisks::new([file]))).build();
        assert!(msg(dsm).contains("is not a directory"));
    }

    /// One chunk buffer (runs twice as long) exactly when that saves a
    /// level of merging: Barve & Vitter's first configuration (1 M
    /// records of 104 bytes, M = 15 MB, B = 256 KiB, SRM on 6 disks) forms
    /// at most 12 runs, as theirs did, and merges them in one pass; a
    /// sort that merges in one pass either way keeps both buffers.
    #[test]
    fn one_chunk_buffer_when_it_saves_a_merge_level() {
        let dir = tempfile::tempdir().unwrap();
        let disks: Vec<PathBuf> = (0..6).map(|_| dir.path().into()).collect();
        let rec: Format = "rec:104:0:8".parse().unwrap();
        let bv = SortPlan::builder(rec)
            .memory(15 << 20)
            .block_size(256 << 10)
            .method(Method::Srm(ParallelDisks::new(disks), SrmOptions::default()));
        let p = bv.clone().build().unwrap().with_input_size(Some(104_000_000));
        let d = p.derived();
        assert_eq!(d.chunk_buffers, 1);
        let runs = d.expected_runs.unwrap();
        assert!(runs <= 12, "{runs} runs");
        assert_eq!(p.merge_levels(runs), 1);
        // Pinned to two buffers: about twice the runs, and two passes.
        let two = bv.chunk_buffers(2).build().unwrap().with_input_size(Some(104_000_000));
        assert_eq!(two.derived().chunk_buffers, 2);
        let runs2 = two.derived().expected_runs.unwrap();
        assert!(runs2 >= 2 * runs - 1, "{runs2} against {runs}");
        assert_eq!(two.merge_levels(runs2), 2);
        // 8 GiB of u32 in 256 MiB with d = 64: 65 runs of M/2 would need a
        // level that merges only 2 of them, but the 64-way merge's smaller
        // blocks cost more than the overlap saves (41.9-44.4 s in 33 runs
        // against 48.8-51.4 s in 65: bench/results/2026-11-27-large): one.
        // (The default d for 256 MiB is 64.)
        let u32s = |n: u64| {
            SortPlan::builder(Format::U32)
                .memory(256 << 20)
                .build()
                .unwrap()
                .with_input_size(Some(n))
                .derived()
        };
        let big = u32s(8 << 30);
        assert_eq!(big.chunk_buffers, 1);
        assert!(big.expected_runs.unwrap() <= 64);
        // One buffer of numbers is sorted in segments as it is read.
        assert_eq!(big.segments, DEFAULT_SEGMENTS);
        // 16 GiB: 130 runs of M/2 in 2.52 passes, 65 of M in 2.02 (both
        // two levels): one buffer (PASSES_FOR_ONE_BUFFER).
        let d = u32s(16 << 30);
        assert_eq!((d.chunk_buffers, d.segments), (1, DEFAULT_SEGMENTS));
        assert!((65..=66).contains(&d.expected_runs.unwrap()), "{:?}", d.expected_runs);
        assert!(d.passes.unwrap() < 2.1, "{:?}", d.passes);
        // 4 GiB: 33 runs of M/2 or 17 of M, one pass of merging either way.
        assert_eq!(u32s(4 << 30).chunk_buffers, 2);
        // 1 GiB of u32 in 256 MiB merges in one level either way.
        let u = u32s(1 << 30);
        assert_eq!((u.chunk_buffers, u.segments), (2, 1));
        // The input fits: one buffer, one run.
        let small = u32s(1 << 20);
        assert_eq!((small.chunk_buffers, small.expected_runs), (1, Some(1)));
        let e = SortPlan::builder(Format::U32).chunk_buffers(3).build().unwrap_err().to_string();
        assert!(e.contains("1 or 2 chunk buffers"), "{e}");
    }

    /// Segments: by default in one buffer of numbers with the plain merge;
    /// as set otherwise; refused for records, lines, DSM and SRM, and
    /// outside 1..=64.
    #[test]
    fn segments_are_for_numbers_with_the_plain_merge() {
        let seg = |b: SortPlanBuilder| b.build().map(|p| p.with_input_size(Some(1 << 20)).derived().segments);
        let u32s = || SortPlan::builder(Format::U32).memory(256 << 20);
        assert_eq!(seg(u32s()).unwrap(), DEFAULT_SEGMENTS, "the input fits in one buffer");
        assert_eq!(seg(u32s().segments(1)).unwrap(), 1);
        assert_eq!(seg(SortPlan::builder(Format::F64).memory(1 << 20).chunk_buffers(2)).unwrap(), 1);
        assert_eq!(
            seg(SortPlan::builder(Format::F64).memory(1 << 20).chunk_buffers(2).segments(3)).unwrap(),
            3
        );
        assert_eq!(seg(SortPlan::builder(Format::Lines).memory(256 << 20)).unwrap(), 1);
        let rec: Format = "rec:100:0:10".parse().unwrap();
        assert_eq!(seg(SortPlan::builder(rec).memory(256 << 20)).unwrap(), 1);
        let msg = |b: SortPlanBuilder| b.build().unwrap_err().to_string();
        for f in [Format::Lines, rec] {
            let e = msg(SortPlan::builder(f).segments(4));
            assert!(e.contains("binary numbers with the plain merge"), "{e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let dsm = Method::Dsm(ParallelDisks::new([dir.path().to_path_buf()]));
        assert_eq!(seg(u32s().method(dsm.clone())).unwrap(), 1);
        assert!(msg(u32s().method(dsm).segments(2)).contains("--method dsm"));
        for n in [0, MAX_SEGMENTS + 1] {
            assert!(msg(u32s().segments(n)).contains("1 to 64 sorted segments"), "{n}");
        }
        assert_eq!(seg(u32s().segments(MAX_SEGMENTS)).unwrap(), MAX_SEGMENTS);
        // The segments' merge writes through write-behind blocks, reserved
        // outside the chunk buffer whether S is the default or given.
        let one =
            |b: SortPlanBuilder| b.chunk_buffers(1).build().unwrap().with_input_size(Some(1 << 30)).derived();
        let (default, given, whole) = (one(u32s()), one(u32s().segments(8)), one(u32s().segments(1)));
        assert_eq!((default.segments, default.run_memory), (given.segments, given.run_memory));
        assert!(default.run_memory < whole.run_memory, "{} {}", default.run_memory, whole.run_memory);
    }

    #[test]
    fn defaults_shrink_the_block_and_pick_the_fan_in() {
        let p = SortPlan::builder(Format::U32).memory(1 << 20).build().unwrap();
        assert_eq!(p.block_size, 64 << 10);
        assert_eq!(p.fan_in, 15);
        let p = SortPlan::builder(Format::U32).memory(1 << 30).build().unwrap();
        assert_eq!((p.block_size, p.fan_in), (1 << 20, 64));
        let r = SortPlan::builder("rec:100:0:10".parse().unwrap()).memory(1 << 20).build().unwrap();
        assert_eq!(r.unit(), 4);
    }

    #[test]
    fn items_longer_than_a_block_shrink_the_fan_in() {
        let p = SortPlan::builder(Format::Lines).memory(64 << 20).build().unwrap();
        let (b, d) = (p.block_size as u64, p.fan_in);
        assert_eq!(p.fan_in_for_items(0), d);
        assert_eq!(p.fan_in_for_items(b), d);
        // Each of d + 1 streams: its buffer and twice the longest item.
        let f = p.derived().stream_buffer;
        let d2 = p.fan_in_for_items(3 << 20);
        assert!(d2 < d && (d2 as u64 + 1) * (f + (6 << 20)) <= 64 << 20, "{d2}");
        assert!((d2 as u64 + 2) * (f + (6 << 20)) > 64 << 20, "{d2}: not the most that fits");
        assert_eq!(p.fan_in_for_items(1 << 30), 2, "never below 2");
    }
}
