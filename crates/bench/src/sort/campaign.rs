//! A sort campaign (experiment 2): the points, the peers, and where
//! results go.
//!
//! [`Campaign::run`] proceeds in numbered steps:
//!
//! 1. **Check** that the campaign can run: the cache method is usable
//!    (`drop` needs root), the output directory holds no earlier
//!    `raw.csv`, no M exceeds half of the memory available, and the work
//!    directory's file system holds four copies of the largest input
//!    (input, runs, output, a peer's output); the CPU bound's directory
//!    (`/dev/shm` unless given) is tmpfs with room and memory for four
//!    copies — else the CPU bound is skipped with a note in
//!    `machine.json` (`cpu_bound`), or, for a directory given with
//!    [`cpu_bound_dir`](Campaign::cpu_bound_dir), the campaign stops.
//! 2. **Build the STXXL driver** when a u32 input is measured and STXXL's
//!    headers are installed ([`StxxlBuild::compile`], into the work
//!    directory), and **record the machine** (`machine.json`, with GNU
//!    sort's version, the C++ compiler's and STXXL's, and whether the driver
//!    was built or why not) and the `README.md`.
//! 3. **Run, data set by data set** (format, N): the input is generated
//!    once ([`emsort_sort::gen`], seed 42) and fingerprinted. Then, for each
//!    repetition: every emsort point, then the peers — the I/O bound, the
//!    in-memory sort where N fits in memory, GNU sort and uutils sort for
//!    `lines` and STXXL
//!    for `u32` at each (M, threads) of the grid, and the CPU bound at each
//!    (M, threads) ([`super::cpu_bound`]: emsort with its input, runs and
//!    output on tmpfs, emsort's defaults for d, policy and B, buffered
//!    streams). Before every run but the CPU bound's the page
//!    cache is emptied (`--cache`). emsort runs as a child process (`emsort
//!    sort … --stats FILE -q`, the binary given to
//!    [`sorter_exe`](Campaign::sorter_exe)), so its peak RSS, context
//!    switches and page faults are the sort's alone; without a binary it
//!    runs in this process ([`sort_file`](emsort_sort::sort_file)). Every output is checked:
//!    emsort's, the CPU bound's and the in-memory sort's with
//!    [`verify`](emsort_sort::verify::verify) (in order, same multiset as
//!    the input), GNU sort's and STXXL's byte for byte against emsort's. A
//!    failed check stops the campaign with an error; it never becomes a row
//!    — except STXXL's: a failed or wrong STXXL run is recorded in
//!    `machine.json` (`stxxl_errors`) and in the warnings, and the campaign
//!    goes on. Each run appends a row to `raw.csv` and flushes it.
//!    Then the **keys experiment** on `csv` inputs ([`super::keys`]):
//!    emsort (and, with a [`baseline`](Campaign::baseline), the earlier
//!    binary, the two alternating which runs first), GNU sort, uutils sort,
//!    DuckDB and the CPU bound per key sort, (M, threads) and repetition,
//!    and the I/O bound once per input and repetition, each on a cold
//!    cache; a failed or mismatched run is a row marked `FAILED`
//!    or `MISMATCH` (and listed in `machine.json`'s `keys_problems`), not
//!    the end of the campaign.
//! 4. **Clean up** the data set and the outputs (the CPU bound's tmpfs
//!    files after each run and data set, its directory at the end), also
//!    on error; rewrite
//!    `machine.json` and the README with STXXL's errors and the keys
//!    experiment's problems, if any.
//! 5. **Report from the CSV**: `summary.csv`, the plots and the README's
//!    tables (which bound binds; the keys experiment) are made by reading
//!    `raw.csv` back; the README lists the plots drawn.
//!
//! ```text
//!  (format, N) ──► generate ──► fingerprint
//!       for rep: emsort (M × d × policy × io × threads) ─► verify ─► raw.csv
//!                io-bound, in-memory, cpu-bound (tmpfs) ─► verify
//!                gnu-sort (lines), stxxl (u32) ─► cmp with emsort's ─► raw.csv
//!  raw.csv ──► summary.csv (ratios, the binding bound), plots/*.svg, README
//! ```
//!
//! This file holds the builder and the grid loop (steps 1 to 5); the
//! campaign's parts are its modules, none of which depends on this file:
//!
//! - [`point`]: one emsort setting ([`Point`]) and the cost model
//!   ([`predicted_blocks`]), the vocabulary the others share;
//! - [`emsort_run`]: one emsort run of a point, as a child process or in
//!   this process, and the check of an output;
//! - [`facts`]: `machine.json` ([`SortMachine`]);
//! - [`readme`]: the results README's text, and [`columns`]: what the
//!   columns of `raw.csv` and `summary.csv` mean, as the README says.

mod columns;
mod emsort_run;
mod facts;
mod point;
mod readme;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use emsort_io::{format_size, ErrorKind, NoProgress, Progress, StreamKind};
use emsort_sort::gen::{generate, GenSpec};
use emsort_sort::simd::Level;
use emsort_sort::verify::fingerprint_file;
use emsort_sort::{Format, SortPlan};

use self::emsort_run::{check_output, EmsortRunner, Variant};
pub(crate) use self::facts::simd_record;
pub use self::facts::SortMachine;
use self::point::{cores, whole_items};
pub use self::point::{predicted_blocks, Point};
use self::readme::Readme;
use super::cpu_bound::{CpuBoundDir, DEFAULT_CPU_BOUND_DIR};
use super::fio::{self, IoBound};
use super::keys::{self, DataSet, KeysCtx, KeysPeers, KeysPoint, PythonPeer, UutilsSort, Xan};
use super::params::{parse_params, read_params, Grid};
use super::peers::{self, PeakRss, StxxlBuild, StxxlDriver};
use super::plots::plots_from_csv;
use super::profile::ProfileFacts;
use super::record::{summary_from_csv, RawRow, RawWriter, SummaryRow};
use crate::campaign::{
    check_memory_m, formats_element, interrupted, memory_fs_warning, write_json, CampaignBuilder,
    CampaignSettings,
};
use crate::grid::{merge_repeats, product, rounds};
use crate::machine::meminfo;
use crate::{Error, Result};

/// The parameter file of the `--quick` campaign (u32 and lines of 64 MiB,
/// M = 8M and 32M, d = 2 and 16, 1 thread and all cores, fifo and direct
/// once; well under a minute).
pub const QUICK_PARAMS: &str = include_str!("../../params/sort-quick.csv");

/// A sort campaign; see the module docs for what [`run`](Campaign::run) does.
/// Its settings (cache method, output directory …) are set with the methods
/// of [`CampaignBuilder`]; the work directory holds the data, runs and
/// outputs (default: a temporary directory inside the output directory,
/// removed at the end).
#[derive(Debug, Clone)]
pub struct Campaign {
    points: Vec<Point>,
    keys_points: Vec<KeysPoint>,
    /// Run uutils sort in the keys experiment and on `lines` (when installed).
    uutils: bool,
    /// Run DuckDB in the keys experiment (when installed).
    duckdb: bool,
    settings: CampaignSettings,
    sorter_exe: Option<PathBuf>,
    stxxl: Option<StxxlBuild>,
    /// Also run each emsort point from standard input to standard output.
    stdio: bool,
    /// Also run each emsort point with this other emsort binary.
    baseline: Option<PathBuf>,
    /// Where the CPU bound runs (a tmpfs directory), `None` to leave it out.
    cpu_bound: Option<PathBuf>,
    /// Whether the directory was asked for (then a directory that cannot
    /// serve is an error, not a note).
    cpu_bound_required: bool,
    /// The SIMD level forced on every emsort run (`EMSORT_SIMD`), if any.
    simd: Option<Level>,
    /// How the I/O bound is measured.
    io_bound: IoBound,
    /// The machine profile this campaign measures (recorded in machine.json).
    profile: Option<ProfileFacts>,
}

/// What a finished campaign produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The output directory.
    pub out_dir: PathBuf,
    /// `raw.csv`: a row per run.
    pub raw_csv: PathBuf,
    /// `summary.csv`: a row per point.
    pub summary_csv: PathBuf,
    /// `machine.json`.
    pub machine_json: PathBuf,
    /// `README.md`.
    pub readme: PathBuf,
    /// The SVG plots drawn.
    pub plots: Vec<PathBuf>,
    /// The summary rows.
    pub summary: Vec<SummaryRow>,
    /// Things the user should know (skipped peers, a work dir in memory).
    pub warnings: Vec<String>,
    /// The keys experiment's failed and mismatched runs (also in the
    /// warnings and machine.json): to be shown even when quiet.
    pub keys_problems: Vec<String>,
    /// Runs done (every tool).
    pub runs: u64,
    /// Wall time of the whole campaign, seconds.
    pub seconds: f64,
}

impl CampaignBuilder for Campaign {
    const NAME: &'static str = "sort";

    fn settings(&self) -> &CampaignSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut CampaignSettings {
        &mut self.settings
    }
}

impl Campaign {
    /// A campaign of every point of `grids` (threads 0 = all cores); a
    /// point listed twice runs once with the larger reps. Fails when there
    /// is no point or a size holds no whole item.
    pub fn new(grids: &[Grid]) -> Result<Campaign> {
        let mut points = Vec::new();
        let mut keys_points = Vec::new();
        for g in grids {
            let lens = [g.data_sets.len(), g.sizes.len(), g.memories.len(), g.threads.len(), g.keys.len()];
            for [d, s, m, t, k] in product(lens) {
                if !g.keys[k].data_sets().contains(&g.data_sets[d]) {
                    continue;
                }
                keys_points.push(KeysPoint {
                    data: g.data_sets[d],
                    locale: g.locale.clone(),
                    bytes: g.sizes[s],
                    memory: g.memories[m],
                    threads: if g.threads[t] == 0 { cores() } else { g.threads[t] },
                    keys: g.keys[k],
                    // Beside its default streams, which it always runs, the
                    // grid's kinds when the grid names the default too.
                    io_kinds: match g.io.contains(&None) {
                        true => g.io.iter().flatten().copied().collect(),
                        false => Vec::new(),
                    },
                    reps: g.reps,
                });
            }
            // The inputs first, each size in whole items of each format.
            let mut inputs = Vec::new();
            for [f, s] in product([g.formats.len(), g.sizes.len()]) {
                let (format, size) = (g.formats[f], g.sizes[s]);
                let bytes = whole_items(format, size);
                if bytes == 0 {
                    return Err(Error::Campaign(format!("size {size} holds no whole {format} item")));
                }
                inputs.push((format, bytes));
            }
            let lens = [
                inputs.len(),
                g.memories.len(),
                g.fan_ins.len(),
                g.policies.len(),
                g.io.len(),
                g.threads.len(),
            ];
            points.extend(product(lens).map(|[i, m, d, policy, io, t]| Point {
                format: inputs[i].0,
                bytes: inputs[i].1,
                memory: g.memories[m],
                fan_in: g.fan_ins[d],
                policy: g.policies[policy],
                io: g.io[io],
                threads: if g.threads[t] == 0 { cores() } else { g.threads[t] },
                reps: g.reps,
            }));
        }
        let points = merge_repeats(
            points,
            |p| {
                let (policy, io) = (p.policy.map(|p| p.name()), p.io.map(|k| k.name()));
                (p.format.to_string(), p.bytes, p.memory, p.fan_in, policy, io, p.threads)
            },
            |p| &mut p.reps,
        );
        let keys_points = merge_repeats(
            keys_points,
            |p| (p.data, p.bytes, p.memory, p.threads, p.keys, p.locale.clone()),
            |p| &mut p.reps,
        );
        if points.is_empty() && keys_points.is_empty() {
            return Err(Error::Campaign("the campaign has no point to measure".into()));
        }
        Ok(Campaign {
            points,
            keys_points,
            uutils: true,
            duckdb: true,
            settings: CampaignSettings::new(Self::NAME),
            sorter_exe: None,
            stdio: false,
            baseline: None,
            stxxl: Some(StxxlBuild::default()),
            cpu_bound: Some(PathBuf::from(DEFAULT_CPU_BOUND_DIR)),
            cpu_bound_required: false,
            simd: None,
            io_bound: IoBound::Copy,
            profile: None,
        })
    }

    /// The campaign a parameter file describes (see [`parse_params`]).
    pub fn from_params_file(path: &Path) -> Result<Campaign> {
        Campaign::new(&read_params(path)?)
    }

    /// The quick campaign ([`QUICK_PARAMS`]).
    pub fn quick() -> Campaign {
        let grids = parse_params(QUICK_PARAMS, Path::new("<built-in sort-quick.csv>"))
            .expect("the built-in quick parameter file parses (checked by a test)");
        Campaign::new(&grids).expect("the built-in quick campaign is valid")
    }

    /// Runs every emsort point as a child process of this `emsort` binary
    /// (`EXE sort … --stats FILE -q`), so that its peak RSS, context
    /// switches and page faults are the sort's alone. Without it (the
    /// default) emsort sorts in this process with
    /// [`sort_file`](emsort_sort::sort_file).
    pub fn sorter_exe(mut self, exe: impl Into<PathBuf>) -> Campaign {
        self.sorter_exe = Some(exe.into());
        self
    }

    /// Also runs each emsort point as `EXE sort … < INPUT > OUTPUT` (tool
    /// `emsort-stdio`, right after the file-to-file run of the same point
    /// and repetition): standard input and output, read and written once
    /// as streams. Needs [`sorter_exe`](Campaign::sorter_exe).
    pub fn stdio(mut self, yes: bool) -> Campaign {
        self.stdio = yes;
        self
    }

    /// The emsort runs of each point in repetition `rep` (from 1), in
    /// order: the baseline, if any, last in odd repetitions and first in
    /// even ones ([`keys::emsort_order`]), so that neither binary always
    /// runs on the heels of the other.
    fn variants(&self, rep: u32) -> Vec<Variant<'_>> {
        let mut v = vec![Variant::Files];
        if self.sorter_exe.is_some() {
            if self.stdio {
                v.push(Variant::Stdio);
            }
            if let Some(b) = &self.baseline {
                match keys::emsort_order(rep, true)[0] {
                    keys::Binary::Current => v.push(Variant::Baseline(b)),
                    keys::Binary::Baseline => v.insert(0, Variant::Baseline(b)),
                }
            }
        }
        v
    }

    /// Also runs each emsort point with another emsort binary `exe` (tool
    /// `emsort-baseline`, same arguments): an earlier build measured side
    /// by side with this one, in the same run: beside the `emsort` run of
    /// the same point and repetition, the two alternating which runs first
    /// (the baseline first in even repetitions, [`keys::emsort_order`]), in
    /// the grid and in the keys experiment. The summary gives emsort's
    /// `ratio_to_baseline`. Needs [`sorter_exe`](Campaign::sorter_exe).
    pub fn baseline(mut self, exe: Option<PathBuf>) -> Campaign {
        self.baseline = exe;
        self
    }

    /// Whether the CPU bound runs (default: yes, in `/dev/shm` when that
    /// is tmpfs with room for four copies of the largest input; skipped
    /// with a note otherwise). See [`super::cpu_bound`].
    pub fn cpu_bound(mut self, yes: bool) -> Campaign {
        self.cpu_bound = yes.then(|| PathBuf::from(DEFAULT_CPU_BOUND_DIR));
        self.cpu_bound_required = false;
        self
    }

    /// Runs the CPU bound in `dir`, which must be tmpfs (or ramfs) with
    /// room for four copies of the largest input, else the campaign stops
    /// before any run.
    pub fn cpu_bound_dir(mut self, dir: impl Into<PathBuf>) -> Campaign {
        self.cpu_bound = Some(dir.into());
        self.cpu_bound_required = true;
        self
    }

    /// Whether the CPU bound's directory is a memory file system (whether
    /// its runs are counted; room is checked when the campaign runs).
    fn cpu_bound_wanted(&self) -> bool {
        self.cpu_bound.as_ref().is_some_and(|d| crate::machine::is_memory_fs(&crate::machine::fs_type(d).0))
    }

    /// Forces emsort's SIMD level on every emsort run of the campaign (the
    /// variable `EMSORT_SIMD` of its child processes: `emsort`, the
    /// baseline, the CPU bound, the keys experiment's); `None` (the
    /// default) leaves the environment as it is. Needs
    /// [`sorter_exe`](Campaign::sorter_exe): a process reads its level once.
    pub fn simd(mut self, level: Option<Level>) -> Campaign {
        self.simd = level;
        self
    }

    /// Keeps only the points of number formats (u32 … f64) and drops the
    /// keys experiment: what a forced SIMD level changes ([`super::matrix`]'s
    /// `simd-LEVEL` profiles; records and lines take the same code at every
    /// level, so their runs there would measure `root` again).
    pub fn numbers_only(mut self) -> Campaign {
        self.points.retain(|p| !matches!(p.format, Format::Rec(_) | Format::Lines));
        self.keys_points.clear();
        self
    }

    /// How the I/O bound is measured (default: the O_DIRECT copy;
    /// [`IoBound::Fio`]: fio at emsort's block size, see [`super::fio`]).
    pub fn io_bound(mut self, how: IoBound) -> Campaign {
        self.io_bound = how;
        self
    }

    /// The machine profile the campaign runs on, recorded in
    /// `machine.json` (`profile`) and the README ([`super::matrix`] records it).
    pub fn profile(mut self, facts: Option<ProfileFacts>) -> Campaign {
        self.profile = facts;
        self
    }

    /// How to build the STXXL peer (default: `g++` and `/usr/include`);
    /// `None` leaves STXXL out.
    pub fn stxxl(mut self, build: Option<StxxlBuild>) -> Campaign {
        self.stxxl = build;
        self
    }

    /// The largest input of the campaign, bytes (the grid's and the keys
    /// experiment's).
    pub fn largest_input(&self) -> u64 {
        self.points.iter().map(|p| p.bytes).chain(self.keys_points.iter().map(|p| p.bytes)).max().unwrap_or(0)
    }

    /// The emsort points, in the order they run.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// The keys experiment's points, in the order they run (by size, then
    /// repetition rounds).
    pub fn keys_points(&self) -> &[KeysPoint] {
        &self.keys_points
    }

    /// Whether uutils sort runs in the keys experiment and on `lines` when
    /// installed (default: yes).
    pub fn uutils(mut self, yes: bool) -> Campaign {
        self.uutils = yes;
        self
    }

    /// Whether DuckDB runs in the keys experiment when installed (default:
    /// yes).
    pub fn duckdb(mut self, yes: bool) -> Campaign {
        self.duckdb = yes;
        self
    }

    /// The keys experiment's inputs (data set, size), in run order.
    fn keys_inputs(&self) -> Vec<(DataSet, u64)> {
        let mut v: Vec<(DataSet, u64)> = Vec::new();
        for p in &self.keys_points {
            if !v.contains(&(p.data, p.bytes)) {
                v.push((p.data, p.bytes));
            }
        }
        v
    }

    /// Whether a keys point is on a data set `read` says a peer reads.
    fn keys_on(&self, read: fn(DataSet) -> bool) -> bool {
        self.keys_points.iter().any(|p| read(p.data))
    }

    /// The peers of the keys experiment and of `lines` inputs that can run
    /// here (none without keys points or `lines`; DuckDB only with keys
    /// points), with why the others cannot.
    fn keys_peers(&self) -> (KeysPeers, PeerStatus) {
        let lines = self.points.iter().any(|p| p.format == Format::Lines);
        if self.keys_points.is_empty() && !lines {
            let no = "not used: no keys or lines input".to_string();
            let status = PeerStatus { uutils: no.clone(), duckdb: no.clone(), polars: no.clone(), xan: no };
            return (KeysPeers::default(), status);
        }
        let gnu = peers::gnu_sort_version();
        let (uutils, u_status) = if !lines && !self.keys_on(|d| d == DataSet::Csv) {
            (None, "not used: no csv or lines input".to_string())
        } else if !self.uutils {
            (None, "not used: turned off".to_string())
        } else {
            match UutilsSort::find() {
                Ok(u) => {
                    let s = format!("{} ({})", u.version, u.exe.display());
                    (Some(u), s)
                }
                Err(e) => (None, format!("not installed: {e}")),
            }
        };
        let python = |module: &str, name: &str, on: fn(DataSet) -> bool, wanted: bool| {
            if !self.keys_on(on) {
                (None, "not used: no data set it reads".to_string())
            } else if !wanted {
                (None, "not used: turned off".to_string())
            } else {
                match PythonPeer::find(module) {
                    Ok(d) => {
                        let s = format!("{name} {} (python: {})", d.version, d.python.display());
                        (Some((d, PathBuf::new())), s)
                    }
                    Err(e) => (None, format!("not installed: {e}")),
                }
            }
        };
        let (duckdb, d_status) = python("duckdb", "DuckDB", DataSet::duckdb_reads, self.duckdb);
        let (polars, p_status) = python("polars", "Polars", DataSet::polars_reads, self.duckdb);
        let (xan, x_status) = if !self.keys_on(DataSet::xan_reads) {
            (None, "not used: no csv-export input".to_string())
        } else if !self.duckdb {
            (None, "not used: turned off".to_string())
        } else {
            match Xan::find() {
                Ok(x) => {
                    let s = format!("{} ({})", x.version, x.exe.display());
                    (Some(x), s)
                }
                Err(e) => (None, format!("not installed: {e}")),
            }
        };
        let baseline = self.baseline.clone().filter(|_| self.sorter_exe.is_some());
        let cpu_bound = self.cpu_bound_wanted();
        let peers = KeysPeers { gnu, uutils, duckdb, polars, xan, cpu_bound, baseline };
        let status = PeerStatus { uutils: u_status, duckdb: d_status, polars: p_status, xan: x_status };
        (peers, status)
    }

    /// The distinct inputs (format, N), in run order.
    fn data_sets(&self) -> Vec<(Format, u64)> {
        let mut v: Vec<(Format, u64)> = Vec::new();
        for p in &self.points {
            if !v.contains(&(p.format, p.bytes)) {
                v.push((p.format, p.bytes));
            }
        }
        v
    }

    fn points_of(&self, format: Format, bytes: u64) -> Vec<&Point> {
        self.points.iter().filter(|p| p.format == format && p.bytes == bytes).collect()
    }

    /// Whether the in-memory peer runs on an input of `bytes` of `format`:
    /// its data, index and copy must fit in half of the memory available.
    pub fn in_memory_fits(format: Format, bytes: u64) -> bool {
        let factor = if format.item_size().map(|s| s <= 8).unwrap_or(false) { 2 } else { 3 };
        match meminfo("MemAvailable:") {
            Some(avail) => bytes.saturating_mul(factor) <= avail / 2,
            None => false,
        }
    }

    /// A peer's settings (M, threads) on one input: GNU sort's on `lines`,
    /// STXXL's on `u32`.
    fn peer_settings(points: &[&Point]) -> Vec<(u64, usize)> {
        let mut v: Vec<(u64, usize)> = points.iter().map(|p| (p.memory, p.threads)).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Peer runs per repetition on one input (`text`: GNU sort and uutils
    /// sort, those of them that run).
    fn peer_runs(format: Format, bytes: u64, points: &[&Point], text: u64, stxxl: bool, cpu: bool) -> u64 {
        let mut n = 1 + u64::from(Self::in_memory_fits(format, bytes));
        if format == Format::Lines {
            n += text * Self::peer_settings(points).len() as u64;
        }
        if stxxl && format == Format::U32 {
            n += Self::peer_settings(points).len() as u64;
        }
        if cpu {
            n += Self::peer_settings(points).len() as u64;
        }
        n
    }

    /// The CPU bound's point at (M, threads) on one input: emsort's
    /// default fan-in, policy and block size for M (its plan's), buffered
    /// streams (tmpfs refuses O_DIRECT).
    fn cpu_bound_point(format: Format, bytes: u64, memory: u64, threads: usize, tmp: &Path) -> Result<Point> {
        let plan = SortPlan::builder(format)
            .memory(memory)
            .io(StreamKind::Buffered)
            .threads(threads)
            .temp_dir(tmp)
            .input_bytes(bytes)
            .build()
            .map_err(|e| {
                Error::Campaign(format!(
                    "cpu-bound {format} N={} M={} t={threads}: {e}",
                    format_size(bytes),
                    format_size(memory)
                ))
            })?;
        Ok(Point {
            format,
            bytes,
            memory,
            fan_in: Some(plan.fan_in()),
            policy: Some(plan.policy()),
            io: Some(StreamKind::Buffered),
            threads,
            reps: 1,
        })
    }

    /// Whether the campaign wants the STXXL peer: a u32 input, STXXL not
    /// turned off and installed.
    fn stxxl_wanted(&self) -> bool {
        self.points.iter().any(|p| p.format == Format::U32)
            && self.stxxl.as_ref().is_some_and(|b| b.installed())
    }

    /// Total runs of every tool (STXXL's counted when it is installed).
    pub fn runs(&self) -> u64 {
        let peers = self.keys_peers().0;
        let text = u64::from(peers::gnu_sort_version().is_some()) + u64::from(peers.uutils.is_some());
        self.runs_with_keys(text, self.stxxl_wanted(), self.cpu_bound_wanted(), |d| peers.tools(d))
    }

    /// Total runs, with `text` text sorts (GNU's, uutils') per `lines`
    /// setting and `keys_tools(data)` tools per keys point on `data` and
    /// repetition (and the keys experiment's I/O bound once per input and
    /// repetition).
    fn runs_with_keys(&self, text: u64, stxxl: bool, cpu: bool, keys_tools: impl Fn(DataSet) -> u64) -> u64 {
        let io_bounds: u64 = self
            .keys_inputs()
            .into_iter()
            .map(|(d, n)| {
                let on = self.keys_points.iter().filter(|p| (p.data, p.bytes) == (d, n));
                on.map(|p| u64::from(p.reps)).max().unwrap_or(0)
            })
            .sum();
        let keys: u64 =
            io_bounds + self.keys_points.iter().map(|p| u64::from(p.reps) * keys_tools(p.data)).sum::<u64>();
        keys + self
            .data_sets()
            .into_iter()
            .map(|(f, n)| {
                let ps = self.points_of(f, n);
                let reps = ps.iter().map(|p| p.reps).max().unwrap_or(1);
                let emsort_runs = ps.iter().map(|p| u64::from(p.reps)).sum::<u64>();
                let extra = self.variants(1).len() as u64 - 1;
                emsort_runs * (1 + extra) + u64::from(reps) * Self::peer_runs(f, n, &ps, text, stxxl, cpu)
            })
            .sum::<u64>()
    }

    /// Runs the campaign (see the module docs), one unit of progress per
    /// run in phase `"sort bench"`. Setting `cancel` stops it within a run
    /// with an [`Interrupted`](emsort_io::ErrorKind::Interrupted) error;
    /// the work files are removed and `raw.csv` keeps the finished runs.
    pub fn run(&self, progress: &dyn Progress, cancel: &AtomicBool) -> Result<Outcome> {
        let started = Instant::now();
        // 1. Checks.
        self.settings.check_cache()?;
        let raw_csv = self.settings.fresh_raw_csv("plots")?;
        let out = &self.settings.out_dir;
        check_memory_m(
            self.points.iter().map(|p| p.memory).chain(self.keys_points.iter().map(|p| p.memory)).max(),
        )?;
        if self.simd.is_some() && self.sorter_exe.is_none() {
            return Err(Error::Campaign(
                "a forced SIMD level needs emsort as a child process (not --in-process): \
                 a process chooses its level once"
                    .into(),
            ));
        }
        if !self.keys_points.is_empty() && self.sorter_exe.is_none() {
            return Err(Error::Campaign(
                "the keys experiment (csv inputs) runs emsort as a child process with key options: \
                 it needs the emsort binary (not --in-process)"
                    .into(),
            ));
        }
        // Every plan must be valid before any data is made (M ≥ (d + 1) buffers …).
        for p in &self.points {
            p.plan(Path::new("."))?;
        }
        let (work, temp) = match self.settings.work_dir_or_temp(".emsort-work-")? {
            // Absolute: peers run in the temp directory (a relative driver
            // or input path would not be found from there).
            (d, None) => (std::path::absolute(&d).map_err(|e| Error::io("resolve", &d, e))?, None),
            (d, temp) => (d, temp),
        };
        let largest = self
            .points
            .iter()
            .map(|p| p.bytes)
            .chain(self.keys_points.iter().map(|p| p.bytes))
            .max()
            .unwrap_or(0);
        crate::scratch::check_space(
            &work,
            4 * largest,
            format!("a sort of {} in {}", format_size(largest), work.display()),
        )?;
        // The CPU bound's tmpfs directory: removed when dropped, on error too.
        let (cpu_dir, cpu_status) = match &self.cpu_bound {
            None => (None, "not used: turned off".to_string()),
            Some(_) if self.points.is_empty() && self.keys_points.is_empty() => {
                (None, "not used: nothing to sort".to_string())
            }
            Some(base) => match CpuBoundDir::create(base, largest) {
                Ok(d) => (Some(d), format!("tmpfs {}", crate::machine::relative(base))),
                Err(why) if self.cpu_bound_required => {
                    return Err(Error::Campaign(format!("the CPU bound's directory: {why}")));
                }
                Err(why) => (None, format!("skipped: {why}")),
            },
        };

        // 2. The STXXL driver, the machine and the README.
        let any_u32 = self.points.iter().any(|p| p.format == Format::U32);
        let installed = self.stxxl.as_ref().is_some_and(|b| b.installed());
        let (stxxl_driver, stxxl_status): (Option<StxxlDriver>, String) = match &self.stxxl {
            None => (None, "not used: turned off".into()),
            Some(_) if !any_u32 => (None, "not used: no u32 input".into()),
            Some(_) if cancel.load(Ordering::Relaxed) => {
                (None, "not built: the campaign was cancelled".into())
            }
            Some(b) => {
                progress.message("compiling the STXXL driver");
                match b.compile(&work.join("stxxl")) {
                    Ok(d) => {
                        // The paths relative to the current directory (issue 19).
                        let cmd = crate::machine::portable_command_line(
                            d.command.split_whitespace().map(String::from),
                        );
                        let s = format!("built: {cmd}");
                        (Some(d), s)
                    }
                    Err(e) => (None, format!("not built: {e}")),
                }
            }
        };
        let gnu_version = peers::gnu_sort_version();
        let (mut keys_peers, status) = self.keys_peers();
        keys_peers.cpu_bound = cpu_dir.is_some() && !self.keys_points.is_empty();
        if let Some((_, script)) = &mut keys_peers.duckdb {
            *script = work.join("duckdb_sort.py");
            std::fs::write(&*script, keys::DUCKDB_SCRIPT).map_err(|e| Error::io("write", script, e))?;
        }
        if let Some((_, script)) = &mut keys_peers.polars {
            *script = work.join("polars_sort.py");
            std::fs::write(&*script, keys::POLARS_SCRIPT).map_err(|e| Error::io("write", script, e))?;
        }
        let mut machine = self.settings.machine(&work);
        machine.element = formats_element(self.points.iter().map(|p| p.format));
        let memory_fs_warning = memory_fs_warning(&work, &machine.fs_type);
        let mut facts = SortMachine {
            gnu_sort_version: gnu_version.clone().unwrap_or_else(|| "not installed".into()),
            stxxl: if installed { "installed" } else { "not installed" }.into(),
            stxxl_version: self.stxxl.as_ref().filter(|b| b.installed()).and_then(|b| b.version()),
            stxxl_driver: stxxl_status,
            stxxl_errors: Vec::new(),
            cxx_version: self
                .stxxl
                .as_ref()
                .filter(|b| b.installed())
                .and_then(|b| peers::cxx_version(&b.cxx)),
            emsort_runs: match &self.sorter_exe {
                Some(exe) => format!("child process: {}", crate::machine::relative(exe)),
                None => "in-process (sort_file)".into(),
            },
            uutils_sort_version: status.uutils,
            duckdb_version: status.duckdb,
            polars_version: status.polars,
            xan_version: status.xan,
            keys_problems: Vec::new(),
            peak_rss_resettable: PeakRss::reset(),
            cpu_migrations_countable: emsort_sort::stats::MigrationCounter::start().is_some(),
            cpu_bound: cpu_status,
            io_bound: self.io_bound.describe(),
            simd: simd_record(self.simd),
            profile: self.profile.clone(),
            machine,
        };
        let machine_json = out.join("machine.json");
        let readme = out.join("README.md");
        self.write_facts(&facts, &machine_json, &readme)?;
        let mut warnings: Vec<String> = memory_fs_warning.into_iter().collect();
        if facts.cpu_bound.starts_with("skipped") {
            warnings.push(format!("no CPU bound: {} (recorded in machine.json)", facts.cpu_bound));
        }
        if any_u32 && self.stxxl.is_some() && stxxl_driver.is_none() {
            warnings.push(format!("no STXXL peer: {} (recorded in machine.json)", facts.stxxl_driver));
        }
        if gnu_version.is_none()
            && (self.points.iter().any(|p| p.format == Format::Lines) || !self.keys_points.is_empty())
        {
            warnings.push("GNU sort could not run: no GNU sort peer".into());
        }
        let any_lines = self.points.iter().any(|p| p.format == Format::Lines);
        if (any_lines || self.keys_on(|d| d == DataSet::Csv)) && keys_peers.uutils.is_none() {
            warnings.push(format!("no uutils sort peer: {}", facts.uutils_sort_version));
        }
        if self.keys_on(DataSet::duckdb_reads) && keys_peers.duckdb.is_none() {
            warnings.push(format!("no DuckDB peer: {}", facts.duckdb_version));
        }
        if self.keys_on(DataSet::polars_reads) && keys_peers.polars.is_none() {
            warnings.push(format!("no Polars peer: {}", facts.polars_version));
        }
        if self.keys_on(DataSet::xan_reads) && keys_peers.xan.is_none() {
            warnings.push(format!("no xan peer: {}", facts.xan_version));
        }

        // 3. The runs; 4. clean up whatever happened.
        let mut writer = RawWriter::create(&raw_csv)?;
        let ctx = RunCtx {
            work: &work,
            writer: &mut writer,
            progress,
            cancel,
            gnu: gnu_version.as_deref(),
            stxxl: stxxl_driver.as_ref(),
            stxxl_errors: &mut facts.stxxl_errors,
            keys_peers: &keys_peers,
            keys_problems: &mut facts.keys_problems,
            cpu: cpu_dir.as_ref(),
        };
        let result = self.run_all(ctx, &mut warnings);
        drop(writer);
        drop(cpu_dir);
        if !facts.stxxl_errors.is_empty() || !facts.keys_problems.is_empty() {
            for e in &facts.stxxl_errors {
                warnings.push(format!("STXXL failed, no row: {e}"));
            }
            warnings.extend(facts.keys_problems.iter().cloned());
            self.write_facts(&facts, &machine_json, &readme)?;
        }
        let _ = std::fs::remove_dir_all(work.join("tmp"));
        let _ = std::fs::remove_dir_all(work.join("stxxl"));
        let _ = std::fs::remove_file(work.join("emsort-stats.json"));
        let _ = std::fs::remove_file(work.join("duckdb_sort.py"));
        let _ = std::fs::remove_file(work.join("polars_sort.py"));
        for (f, n) in self.data_sets() {
            let _ = std::fs::remove_file(input_path(&work, f, n));
        }
        for (d, n) in self.keys_inputs() {
            let _ = std::fs::remove_file(keys_input_path(&work, d, n));
        }
        drop(temp);
        let runs = result?;

        // 5. Reports from the CSV.
        let summary = summary_from_csv(out)?;
        let plots = plots_from_csv(out)?;
        // The README again, with the plots drawn and the tables.
        let text = self.readme().text(&facts, Some(&plots)) + &readme::results(&summary);
        std::fs::write(&readme, text).map_err(|e| Error::io("write", &readme, e))?;
        Ok(Outcome {
            out_dir: out.clone(),
            raw_csv,
            summary_csv: out.join("summary.csv"),
            machine_json,
            readme,
            plots,
            summary,
            warnings,
            keys_problems: facts.keys_problems.clone(),
            runs,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Step 3: every data set, every repetition; returns the runs done.
    fn run_all(&self, mut ctx: RunCtx<'_>, warnings: &mut Vec<String>) -> Result<u64> {
        let total = self.runs_with_keys(
            u64::from(ctx.gnu.is_some()) + u64::from(ctx.keys_peers.uutils.is_some()),
            ctx.stxxl.is_some(),
            ctx.cpu.is_some(),
            |d| ctx.keys_peers.tools(d),
        );
        ctx.progress.phase("sort bench", Some(total));
        let tmp = ctx.work.join("tmp");
        std::fs::create_dir_all(&tmp).map_err(|e| Error::io("create directory", &tmp, e))?;
        let mut runs = 0;
        for (format, bytes) in self.data_sets() {
            let input = input_path(ctx.work, format, bytes);
            let res = self.run_data_set(&mut ctx, format, bytes, &input, &tmp, warnings, &mut runs);
            for name in ["emsort.out", "reference.out", "peer.out"] {
                let _ = std::fs::remove_file(ctx.work.join(name));
            }
            let _ = std::fs::remove_file(&input);
            if let Some(c) = ctx.cpu {
                c.clean_all();
            }
            res?;
        }
        if let (Some(exe), false) = (&self.sorter_exe, self.keys_points.is_empty()) {
            let mut kctx = KeysCtx {
                work: ctx.work,
                tmp: &tmp,
                cache: self.settings.cache,
                writer: ctx.writer,
                progress: ctx.progress,
                cancel: ctx.cancel,
                exe,
                peers: ctx.keys_peers,
                problems: ctx.keys_problems,
                runs: &mut runs,
                cpu: ctx.cpu,
                io_bound: &self.io_bound,
                simd: self.simd,
            };
            for (data, bytes) in self.keys_inputs() {
                let input = keys_input_path(ctx.work, data, bytes);
                let points: Vec<&KeysPoint> =
                    self.keys_points.iter().filter(|p| (p.data, p.bytes) == (data, bytes)).collect();
                let res = keys::run_keys_data_set(&mut kctx, data, bytes, &points, &input);
                for name in ["emsort.out", "reference.out", "peer.out"] {
                    let _ = std::fs::remove_file(ctx.work.join(name));
                }
                let _ = std::fs::remove_file(&input);
                if let Some(c) = ctx.cpu {
                    c.clean_all();
                }
                res?;
            }
        }
        Ok(runs)
    }

    #[allow(clippy::too_many_arguments)]
    fn run_data_set(
        &self,
        ctx: &mut RunCtx<'_>,
        format: Format,
        bytes: u64,
        input: &Path,
        tmp: &Path,
        warnings: &mut Vec<String>,
        runs: &mut u64,
    ) -> Result<()> {
        ctx.progress.message(&format!("generating {format} N={}", format_size(bytes)));
        let spec = match format.item_size() {
            Some(s) => GenSpec::items(format, bytes / s as u64),
            None => GenSpec::lines(bytes),
        };
        generate(&spec, input, &NoProgress, ctx.cancel)?;
        let fp = fingerprint_file(input, format, ctx.cancel)?;
        let points = self.points_of(format, bytes);
        let cpu_input = match ctx.cpu {
            Some(c) => Some(c.stage(input)?),
            None => None,
        };
        let fits = Self::in_memory_fits(format, bytes);
        if !fits {
            warnings.push(format!(
                "{format} N={}: no in-memory peer (the data do not fit in half the memory available)",
                format_size(bytes)
            ));
        }
        let out = ctx.work.join("emsort.out");
        let reference = ctx.work.join("reference.out");
        let peer_out = ctx.work.join("peer.out");
        let fmt = format.to_string();
        for (rep, round) in rounds(&points, |p| p.reps) {
            for p in round {
                if ctx.cancel.load(Ordering::Relaxed) {
                    return Err(interrupted(ctx.work));
                }
                for v in self.variants(rep) {
                    ctx.progress.message(&format!("{} {} rep {rep}", v.tool(), p.label()));
                    let row =
                        self.runner().run(p, rep, input, &out, tmp, fp.count, ctx.work, ctx.cancel, v)?;
                    check_output(&out, format, &fp, ctx.cancel, &format!("{} ({})", p.label(), v.tool()))?;
                    ctx.writer.write(&row)?;
                    *runs += 1;
                    ctx.progress.advance(1);
                    let keep = format == Format::Lines || (format == Format::U32 && ctx.stxxl.is_some());
                    if keep && reference.exists() && !peers::same_bytes(&out, &reference)? {
                        return Err(Error::Campaign(format!(
                            "{}: {}'s output differs from the reference run's",
                            p.label(),
                            v.tool()
                        )));
                    }
                    if keep && !reference.exists() {
                        std::fs::rename(&out, &reference).map_err(|e| Error::io("rename", &out, e))?;
                    } else {
                        std::fs::remove_file(&out).map_err(|e| Error::io("remove", &out, e))?;
                    }
                }
            }
            // The I/O bound.
            if ctx.cancel.load(Ordering::Relaxed) {
                return Err(interrupted(ctx.work));
            }
            ctx.progress.message(&format!("I/O bound {fmt} N={} rep {rep}", format_size(bytes)));
            let row = fio::io_bound_run(
                (self.settings.cache, &self.io_bound, ctx.cancel),
                input,
                &peer_out,
                &fmt,
                (bytes, fp.count, rep),
            )?;
            ctx.writer.write(&row)?;
            *runs += 1;
            ctx.progress.advance(1);
            // The in-memory floor.
            if fits {
                if ctx.cancel.load(Ordering::Relaxed) {
                    return Err(interrupted(ctx.work));
                }
                ctx.progress.message(&format!("in-memory {fmt} N={} rep {rep}", format_size(bytes)));
                self.settings.cache.apply(&[input])?;
                let mut row = RawRow::new("in-memory", &fmt, bytes, fp.count, cores(), rep);
                row.cache = self.settings.cache.name().into();
                peers::in_memory(format, input, &peer_out, cores(), &mut row)?;
                check_output(&peer_out, format, &fp, ctx.cancel, "the in-memory sort")?;
                ctx.writer.write(&row)?;
                *runs += 1;
                ctx.progress.advance(1);
            }
            // The CPU bound: emsort with everything on tmpfs, at each (M, threads).
            if let (Some(c), Some(cpu_input)) = (ctx.cpu, &cpu_input) {
                for (memory, threads) in Self::peer_settings(&points) {
                    if ctx.cancel.load(Ordering::Relaxed) {
                        return Err(interrupted(ctx.work));
                    }
                    let cp = Self::cpu_bound_point(format, bytes, memory, threads, &c.tmp())?;
                    ctx.progress.message(&format!("CPU bound {} rep {rep}", cp.label()));
                    let (cpu_out, cpu_tmp) = (c.output(), c.tmp());
                    let v = Variant::CpuBound;
                    let res = self
                        .runner()
                        .run(&cp, rep, cpu_input, &cpu_out, &cpu_tmp, fp.count, ctx.work, ctx.cancel, v)
                        .and_then(|row| {
                            let who = format!("{} (cpu-bound)", cp.label());
                            check_output(&cpu_out, format, &fp, ctx.cancel, &who).map(|()| row)
                        });
                    c.clean_run();
                    ctx.writer.write(&res?)?;
                    *runs += 1;
                    ctx.progress.advance(1);
                }
            }
            // GNU sort and uutils sort on text, with the same options.
            let mut text_sorts: Vec<(&str, &str, String, peers::TextSort<'_>)> = Vec::new();
            if format == Format::Lines {
                if let Some(version) = ctx.gnu {
                    text_sorts.push(("gnu-sort", "GNU sort", version.to_string(), peers::TextSort::Gnu));
                }
                if let Some(u) = &ctx.keys_peers.uutils {
                    text_sorts.push((
                        "uutils-sort",
                        "uutils sort",
                        u.version.clone(),
                        peers::TextSort::Uutils(&u.exe),
                    ));
                }
            }
            for (tool, name, version, sort) in text_sorts {
                for (memory, threads) in Self::peer_settings(&points) {
                    if ctx.cancel.load(Ordering::Relaxed) {
                        return Err(interrupted(ctx.work));
                    }
                    ctx.progress.message(&format!(
                        "{name} N={} M={} t={threads} rep {rep}",
                        format_size(bytes),
                        format_size(memory)
                    ));
                    self.settings.cache.apply(&[input])?;
                    let mut row = RawRow::new(tool, &fmt, bytes, fp.count, threads, rep);
                    row.memory = Some(memory);
                    row.cache = self.settings.cache.name().into();
                    row.note = version.clone();
                    peers::text_sort(sort, input, &peer_out, tmp, memory, threads, ctx.cancel, &mut row)?;
                    if !peers::same_bytes(&peer_out, &reference)? {
                        return Err(Error::Campaign(format!(
                            "{name}'s output on {fmt} N={} differs from emsort's",
                            format_size(bytes)
                        )));
                    }
                    ctx.writer.write(&row)?;
                    *runs += 1;
                    ctx.progress.advance(1);
                }
            }
            // STXXL on u32: a failed or wrong run is recorded, not fatal.
            if let (Some(driver), Format::U32) = (ctx.stxxl, format) {
                for (memory, threads) in Self::peer_settings(&points) {
                    if ctx.cancel.load(Ordering::Relaxed) {
                        return Err(interrupted(ctx.work));
                    }
                    let setting = format!(
                        "u32 N={} M={} t={threads} rep {rep}",
                        format_size(bytes),
                        format_size(memory)
                    );
                    ctx.progress.message(&format!("STXXL {setting}"));
                    self.settings.cache.apply(&[input])?;
                    let mut row = RawRow::new("stxxl", &fmt, bytes, fp.count, threads, rep);
                    row.memory = Some(memory);
                    row.cache = self.settings.cache.name().into();
                    row.note = format!("STXXL {}", driver.version);
                    let res = peers::stxxl_sort(
                        driver, input, &peer_out, tmp, memory, threads, ctx.cancel, &mut row,
                    );
                    let failure = match res {
                        Err(Error::Io(e)) if *e.kind() == ErrorKind::Interrupted => return Err(Error::Io(e)),
                        Err(e) => Some(e.to_string()),
                        Ok(()) if !peers::same_bytes(&peer_out, &reference)? => {
                            Some(format!("{setting}: STXXL's output differs from emsort's"))
                        }
                        Ok(()) => None,
                    };
                    let _ = std::fs::remove_file(&peer_out);
                    match failure {
                        Some(e) => ctx.stxxl_errors.push(e),
                        None => {
                            ctx.writer.write(&row)?;
                            *runs += 1;
                        }
                    }
                    ctx.progress.advance(1);
                }
            }
        }
        Ok(())
    }

    /// How this campaign runs emsort ([`EmsortRunner`]).
    fn runner(&self) -> EmsortRunner<'_> {
        EmsortRunner { exe: self.sorter_exe.as_deref(), cache: self.settings.cache, simd: self.simd }
    }

    /// What the README says of this campaign ([`Readme`]).
    fn readme(&self) -> Readme<'_> {
        Readme {
            command_line: &self.settings.command_line,
            cache: self.settings.cache,
            points: &self.points,
            child_process: self.sorter_exe.is_some(),
        }
    }

    /// Writes `machine.json` and the README.
    fn write_facts(&self, facts: &SortMachine, machine_json: &Path, readme: &Path) -> Result<()> {
        write_json(machine_json, facts)?;
        std::fs::write(readme, self.readme().text(facts, None)).map_err(|e| Error::io("write", readme, e))
    }
}

struct RunCtx<'a> {
    work: &'a Path,
    writer: &'a mut RawWriter,
    progress: &'a dyn Progress,
    cancel: &'a AtomicBool,
    gnu: Option<&'a str>,
    stxxl: Option<&'a StxxlDriver>,
    stxxl_errors: &'a mut Vec<String>,
    keys_peers: &'a KeysPeers,
    keys_problems: &'a mut Vec<String>,
    /// The CPU bound's tmpfs directory, when it runs.
    cpu: Option<&'a CpuBoundDir>,
}

fn input_path(work: &Path, format: Format, bytes: u64) -> PathBuf {
    work.join(format!("data_{}_{bytes}.in", format.to_string().replace(':', "-")))
}

/// Where the keys experiment's input of `data` and `bytes` is generated.
fn keys_input_path(work: &Path, data: DataSet, bytes: u64) -> PathBuf {
    work.join(format!("data_{data}_{bytes}"))
}

/// What [`Campaign::keys_peers`] found of each optional peer (installed:
/// its version; else why not), for `machine.json`.
struct PeerStatus {
    uutils: String,
    duckdb: String,
    polars: String,
    xan: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sort::cpu_bound::CPU_BOUND_CACHE;
    use crate::sort::record::read_raw;
    use emsort_io::cache::CacheMethod;

    #[test]
    fn quick_campaign_is_valid() {
        let c = Campaign::quick();
        assert!(c.points().iter().any(|p| p.format == Format::Lines));
        assert!(c.points().iter().any(|p| p.format == Format::U32));
        assert!(c.points().iter().all(|p| p.bytes <= 64 << 20));
        assert!(c.runs() < 100, "{}", c.runs());
    }

    #[test]
    fn shipped_parameter_files_parse() {
        let text = include_str!("../../params/sort-1g.csv");
        let c = Campaign::new(&parse_params(text, Path::new("sort-1g.csv")).unwrap()).unwrap();
        assert!(c.points().iter().all(|p| p.bytes == 1 << 30));
        assert!(c.points().iter().any(|p| p.io == Some(StreamKind::Direct) && p.memory == 256 << 20));
        // The matrix's files: emsort with no tuning flag beside each --io kind.
        for (name, text, n) in [
            ("profiles.csv", include_str!("../../../../bench/params/profiles.csv"), 1u64 << 30),
            ("profiles-quick.csv", include_str!("../../../../bench/params/profiles-quick.csv"), 64 << 20),
        ] {
            let c = Campaign::new(&parse_params(text, Path::new(name)).unwrap()).unwrap();
            assert!(c.points().iter().all(|p| p.fan_in.is_none() && p.policy.is_none()), "{name}");
            for f in [Format::U32, Format::Lines] {
                let io: Vec<Option<StreamKind>> =
                    c.points().iter().filter(|p| p.format == f && p.bytes == n).map(|p| p.io).collect();
                assert_eq!(io.len(), 5, "{name}: {io:?}");
                assert!(io.contains(&None) && io.contains(&Some(StreamKind::UringDirect)), "{name}");
            }
            let keys: Vec<_> = c.keys_points().iter().map(|p| p.keys.label()).collect();
            assert_eq!(keys, ["-t, -k3,3n", "-u"], "{name}");
        }
        let text = include_str!("../../../../bench/params/sort-keys-1g.csv");
        let c = Campaign::new(&parse_params(text, Path::new("sort-keys-1g.csv")).unwrap()).unwrap();
        assert!(c.points().is_empty());
        assert_eq!(c.keys_points().len(), 4);
        assert!(c
            .keys_points()
            .iter()
            .all(|p| p.bytes == 1 << 30 && p.memory == 256 << 20 && p.threads == 2));
        assert!(c.keys_points().iter().all(|p| p.reps == 5));
    }

    /// In the grid the baseline runs after emsort in odd repetitions and
    /// before it in even ones.
    #[test]
    fn the_grid_alternates_the_baseline_with_emsort() {
        let text = "h\nu32;1M;1M;2;optimal;buffered;2;1\n";
        let c = Campaign::new(&parse_params(text, Path::new("t")).unwrap())
            .unwrap()
            .sorter_exe("new")
            .stdio(true);
        let tools = |c: &Campaign, rep| c.variants(rep).iter().map(|v| v.tool()).collect::<Vec<_>>();
        assert_eq!(tools(&c, 1), ["emsort", "emsort-stdio"]);
        let c = c.baseline(Some("old".into()));
        assert_eq!(tools(&c, 1), ["emsort", "emsort-stdio", "emsort-baseline"]);
        assert_eq!(tools(&c, 2), ["emsort-baseline", "emsort", "emsort-stdio"]);
        assert_eq!(tools(&c, 3), tools(&c, 1));
    }

    /// The keys experiment counts its tools per key point and repetition
    /// (the baseline one of them, with a binary) and the I/O bound once
    /// per csv input and repetition.
    #[test]
    fn keys_runs_count_the_io_bound_and_the_baseline() {
        let text = "h\ncsv;1M,2M;256K;8;optimal;direct;2;1;k3n,u\ncsv;1M;256K;8;optimal;direct;3;1;plain\n";
        let c = Campaign::new(&parse_params(text, Path::new("t")).unwrap()).unwrap();
        assert_eq!(c.keys_points().len(), 5);
        // 2 + 2 + 3 key points × reps per size 1M, 2 + 2 on 2M: 11 point-reps;
        // I/O bounds: 3 reps on 1M, 2 on 2M.
        assert_eq!(c.runs_with_keys(1, false, false, |_| 4), 11 * 4 + 5);
        let c = c.uutils(false).duckdb(false).cpu_bound(false);
        let (peers, ..) = c.clone().baseline(Some("old".into())).keys_peers();
        assert!(peers.baseline.is_none(), "no baseline without the binary to compare it with");
        let (peers, ..) = c.sorter_exe("new").baseline(Some("old".into())).keys_peers();
        assert_eq!(peers.baseline.as_deref(), Some(Path::new("old")));
        assert_eq!(peers.tools(DataSet::Csv), 2 + u64::from(peers.gnu.is_some()));
    }

    #[test]
    fn duplicates_run_once_and_empty_sizes_are_refused() {
        let text = "h\nu32;1M;1M;2;optimal;buffered;1;1\nu32;1M;1M;2;optimal;buffered;3;1\n";
        let c = Campaign::new(&parse_params(text, Path::new("t")).unwrap()).unwrap();
        assert_eq!(c.points().len(), 1);
        assert_eq!(c.points()[0].reps, 3);
        let g = parse_params("h\nu64;7;1M;2;optimal;buffered;1\n", Path::new("t")).unwrap();
        assert!(Campaign::new(&g).unwrap_err().to_string().contains("no whole u64"));
    }

    #[test]
    fn impossible_plans_are_refused_before_any_data_is_made() {
        let tmp = tempfile::tempdir().unwrap();
        let g = parse_params("h\nu32;1M;64K;64;optimal;buffered;1\n", Path::new("t")).unwrap();
        let e = Campaign::new(&g)
            .unwrap()
            .cache(CacheMethod::None)
            .out_dir(tmp.path().join("o"))
            .run(&NoProgress, &AtomicBool::new(false))
            .unwrap_err();
        assert!(e.to_string().contains("u32 N=1M M=64K d=64"), "{e}");
        assert!(!tmp.path().join("o/raw.csv").exists());
    }

    #[test]
    fn cancel_keeps_raw_csv_and_removes_work_files() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("o");
        let g = parse_params("h\nu32;1M;256K;2;optimal;buffered;1;1\n", Path::new("t")).unwrap();
        let e = Campaign::new(&g)
            .unwrap()
            .cache(CacheMethod::None)
            .out_dir(&out)
            .run(&NoProgress, &AtomicBool::new(true))
            .unwrap_err();
        match e {
            Error::Io(io) => assert_eq!(*io.kind(), ErrorKind::Interrupted),
            other => panic!("{other}"),
        }
        assert!(out.join("raw.csv").exists() && out.join("machine.json").exists());
        let left: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.iter().all(|n| !n.to_string_lossy().starts_with(".emsort-work")), "{left:?}");
    }

    /// STXXL "installed" (fake headers) but its build fails: the campaign
    /// records why in machine.json, warns, and measures everything else.
    #[test]
    fn a_failing_stxxl_build_is_recorded_and_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let inc = tmp.path().join("include");
        std::fs::create_dir_all(inc.join("stxxl")).unwrap();
        let out = tmp.path().join("res");
        let text = "h\nu32;256K;64K;2;optimal;buffered;1;1\n";
        let c = Campaign::new(&parse_params(text, Path::new("t")).unwrap())
            .unwrap()
            .cache(CacheMethod::None)
            .out_dir(&out)
            .cpu_bound(false)
            .stxxl(Some(StxxlBuild { cxx: "false".into(), include_dir: inc }));
        assert_eq!(c.runs(), 4, "emsort, io-bound, in-memory and STXXL (installed: it is counted)");
        let o = c.run(&NoProgress, &AtomicBool::new(false)).unwrap();
        let rows = read_raw(&o.raw_csv).unwrap();
        assert_eq!(
            rows.iter().map(|r| r.tool.as_str()).collect::<Vec<_>>(),
            ["emsort", "io-bound", "in-memory"]
        );
        assert_eq!(o.runs, 3);
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&o.machine_json).unwrap()).unwrap();
        assert_eq!(m["stxxl"], "installed");
        let driver = m["stxxl_driver"].as_str().unwrap();
        assert!(driver.starts_with("not built: `false -O3"), "{driver}");
        assert!(o.warnings.iter().any(|w| w.starts_with("no STXXL peer: not built")), "{:?}", o.warnings);
        let readme = std::fs::read_to_string(&o.readme).unwrap();
        assert!(readme.contains("driver not built"), "{readme}");
        // Missing headers: "not installed", not counted.
        let c = Campaign::new(&parse_params(text, Path::new("t")).unwrap())
            .unwrap()
            .cache(CacheMethod::None)
            .out_dir(tmp.path().join("res2"))
            .cpu_bound(false)
            .stxxl(Some(StxxlBuild { cxx: "g++".into(), include_dir: tmp.path().join("none") }));
        assert_eq!(c.runs(), 3);
        let o = c.run(&NoProgress, &AtomicBool::new(false)).unwrap();
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&o.machine_json).unwrap()).unwrap();
        assert_eq!(m["stxxl"], "not installed");
        assert!(m["stxxl_driver"].as_str().unwrap().contains("STXXL is not installed"), "{m}");
        assert_eq!(m["cpu_bound"], "not used: turned off");
    }

    /// An STXXL driver that fails, or whose output is wrong, is recorded in
    /// machine.json and the warnings; the campaign finishes without its rows.
    #[test]
    fn failing_or_wrong_stxxl_runs_are_recorded_not_fatal() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let inc = tmp.path().join("include");
        std::fs::create_dir_all(inc.join("stxxl")).unwrap();
        for (name, body) in [
            ("fails", "echo 'boom: out of luck' >&2; exit 1"),
            ("copies", "cp \"$1\" \"$2\"; echo 'stxxl_sort: seconds=1 run_formation_s=0.5 merge_s=0.5 items=1 block=4096 threads=1 fileio=syscall'"),
        ] {
            // A fake compiler that "builds" a shell script as the driver.
            let driver = tmp.path().join(format!("driver-{name}"));
            std::fs::write(&driver, format!("#!/bin/sh\n{body}\n")).unwrap();
            let cxx = tmp.path().join(format!("cxx-{name}"));
            let script = format!(
                "#!/bin/sh\nwhile [ \"$1\" != -o ]; do shift; done\ncp '{}' \"$2\"\nchmod +x \"$2\"\n",
                driver.display()
            );
            std::fs::write(&cxx, script).unwrap();
            std::fs::set_permissions(&cxx, std::fs::Permissions::from_mode(0o755)).unwrap();
            let out = tmp.path().join(format!("res-{name}"));
            let text = "h\nu32;256K;64K;2;optimal;buffered;1;1\n";
            let o = Campaign::new(&parse_params(text, Path::new("t")).unwrap())
                .unwrap()
                .cache(CacheMethod::None)
                .out_dir(&out)
                .stxxl(Some(StxxlBuild { cxx: cxx.display().to_string(), include_dir: inc.clone() }))
                .run(&NoProgress, &AtomicBool::new(false))
                .unwrap();
            let rows = read_raw(&o.raw_csv).unwrap();
            assert!(rows.iter().all(|r| r.tool != "stxxl"), "{name}: {rows:?}");
            let m: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&o.machine_json).unwrap()).unwrap();
            assert!(m["stxxl_driver"].as_str().unwrap().starts_with("built: "), "{name}: {m}");
            let errors = m["stxxl_errors"].as_array().unwrap();
            assert_eq!(errors.len(), 1, "{name}: {m}");
            let want = if name == "fails" { "boom: out of luck" } else { "differs from emsort's" };
            assert!(errors[0].as_str().unwrap().contains(want), "{name}: {m}");
            assert!(o.warnings.iter().any(|w| w.contains(want)), "{name}: {:?}", o.warnings);
            assert!(std::fs::read_to_string(&o.readme).unwrap().contains(want), "{name}");
        }
    }

    /// A sorter binary that fails stops the campaign with its message.
    #[test]
    fn a_failing_sorter_binary_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let text = "h\nu32;256K;64K;2;optimal;buffered;1;1\n";
        let e = Campaign::new(&parse_params(text, Path::new("t")).unwrap())
            .unwrap()
            .cache(CacheMethod::None)
            .out_dir(tmp.path().join("o"))
            .stxxl(None)
            .sorter_exe("false")
            .run(&NoProgress, &AtomicBool::new(false))
            .unwrap_err();
        assert!(e.to_string().contains("`false sort` failed"), "{e}");
    }

    fn shm() -> Option<tempfile::TempDir> {
        let base = Path::new(DEFAULT_CPU_BOUND_DIR);
        let tmpfs = base.is_dir() && crate::machine::is_memory_fs(&crate::machine::fs_type(base).0);
        if !tmpfs {
            eprintln!("no tmpfs at /dev/shm: the CPU bound's runs are not checked");
        }
        tmpfs.then(|| tempfile::tempdir_in(base).unwrap())
    }

    /// The CPU bound: a row per (M, threads) and repetition on each input,
    /// emsort's defaults for d, policy and B, buffered, its cache left
    /// alone, its usage recorded; the summary's ratio and binding bound;
    /// nothing left on tmpfs.
    #[test]
    fn cpu_bound_rows_beside_every_emsort_point() {
        let Some(shm) = shm() else { return };
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("res");
        let text = "h\nu32,lines;1M;256K,512K;2,8;optimal;direct;2;1\n";
        let c = Campaign::new(&parse_params(text, Path::new("t")).unwrap())
            .unwrap()
            .cache(CacheMethod::None)
            .out_dir(&out)
            .stxxl(None)
            .cpu_bound_dir(shm.path());
        let gnu = u64::from(peers::gnu_sort_version().is_some());
        let uutils = u64::from(UutilsSort::find().is_ok());
        let mem = u64::from(Campaign::in_memory_fits(Format::U32, 1 << 20));
        // Per input and rep: 4 emsort points, io-bound, in-memory, 2 cpu-bound (+ 2 GNU sort and
        // 2 uutils sort on lines, where installed).
        assert_eq!(c.runs(), 2 * (2 * (4 + 1 + mem + 2) + 2 * gnu + 2 * uutils));
        let o = c.run(&NoProgress, &AtomicBool::new(false)).unwrap();
        assert_eq!(o.runs, c.runs());
        let rows = read_raw(&o.raw_csv).unwrap();
        let cpu: Vec<&RawRow> = rows.iter().filter(|r| r.tool == "cpu-bound").collect();
        assert_eq!(cpu.len(), 8, "2 inputs × 2 M × 2 reps: {rows:?}");
        for r in &cpu {
            assert_eq!(
                (r.io.as_str(), r.cache.as_str(), r.threads),
                ("buffered", CPU_BOUND_CACHE, 1),
                "{r:?}"
            );
            let plan = SortPlan::builder(r.format.parse().unwrap())
                .memory(r.memory.unwrap())
                .input_bytes(r.bytes)
                .build()
                .unwrap();
            assert_eq!((r.fan_in, r.policy.as_str()), (Some(plan.fan_in()), plan.policy().name()), "{r:?}");
            assert!(r.seconds > 0.0 && r.runs.unwrap() > 1 && r.bytes_written.unwrap() >= 2 << 20, "{r:?}");
            assert!(r.user_s.is_some() && r.system_s.is_some(), "{r:?}");
        }
        assert!(rows.iter().filter(|r| r.tool == "emsort").all(|r| r.io == "direct"));
        let e = o.summary.iter().find(|s| s.tool == "emsort" && s.memory == Some(256 << 10)).unwrap();
        let cb = o
            .summary
            .iter()
            .find(|s| s.tool == "cpu-bound" && s.format == e.format && s.memory == e.memory)
            .unwrap();
        assert_eq!(e.cpu_bound_s, Some(cb.median_s));
        assert_eq!(e.ratio_to_cpu_bound, Some(e.median_s / cb.median_s));
        assert!(["io-bound", "cpu-bound"].contains(&e.bound.as_str()) && e.ratio_to_bound.is_some(), "{e:?}");
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&o.machine_json).unwrap()).unwrap();
        assert!(m["cpu_bound"].as_str().unwrap().starts_with("tmpfs "), "{m}");
        let readme = std::fs::read_to_string(&o.readme).unwrap();
        assert!(readme.contains("## Bounds: which one binds") && readme.contains("system time"), "{readme}");
        assert!(std::fs::read_dir(shm.path()).unwrap().next().is_none(), "tmpfs files left");
        let summary = std::fs::read_to_string(&o.summary_csv).unwrap();
        assert!(summary.lines().next().unwrap().contains(",ratio_to_cpu_bound,"), "{summary}");
    }

    /// A CPU bound directory that is not tmpfs: refused when given, a note
    /// when it is the default's (here: a default turned to a disk).
    #[test]
    fn a_cpu_bound_dir_on_disk_is_refused_when_given() {
        let tmp = tempfile::tempdir().unwrap();
        let disk = crate::scratch::disk_tempdir("emsort-cpu-").unwrap();
        let text = "h\nu32;256K;64K;2;optimal;buffered;1;1\n";
        let c = Campaign::new(&parse_params(text, Path::new("t")).unwrap())
            .unwrap()
            .cache(CacheMethod::None)
            .out_dir(tmp.path().join("o"))
            .stxxl(None)
            .cpu_bound_dir(disk.path());
        let e = c.run(&NoProgress, &AtomicBool::new(false)).unwrap_err();
        assert!(
            e.to_string().contains("the CPU bound's directory:") && e.to_string().contains("not tmpfs"),
            "{e}"
        );
        let mut c = Campaign::new(&parse_params(text, Path::new("t")).unwrap())
            .unwrap()
            .cache(CacheMethod::None)
            .out_dir(tmp.path().join("o2"))
            .stxxl(None);
        c.cpu_bound = Some(disk.path().to_path_buf());
        assert!(!c.cpu_bound_wanted());
        let o = c.run(&NoProgress, &AtomicBool::new(false)).unwrap();
        let rows = read_raw(&o.raw_csv).unwrap();
        assert!(rows.iter().all(|r| r.tool != "cpu-bound"), "{rows:?}");
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&o.machine_json).unwrap()).unwrap();
        assert!(m["cpu_bound"].as_str().unwrap().starts_with("skipped: "), "{m}");
        assert!(o.warnings.iter().any(|w| w.starts_with("no CPU bound: skipped")), "{:?}", o.warnings);
    }

    #[test]
    fn tiny_campaign_end_to_end() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("res");
        let text = "h\nu32,lines;1M;256K,512K;2,8;optimal;buffered;1;1\n";
        let c = Campaign::new(&parse_params(text, Path::new("t")).unwrap())
            .unwrap()
            .cache(CacheMethod::None)
            .out_dir(&out)
            .stxxl(None)
            .command_line("emsort bench sort test");
        let o = c.run(&NoProgress, &AtomicBool::new(false)).unwrap();
        let rows = read_raw(&o.raw_csv).unwrap();
        assert_eq!(rows.len() as u64, o.runs);
        assert_eq!(rows.iter().filter(|r| r.tool == "emsort").count(), 8);
        assert_eq!(rows.iter().filter(|r| r.tool == "io-bound").count(), 2);
        let e = rows.iter().find(|r| r.tool == "emsort" && r.memory == Some(256 << 10)).unwrap();
        assert!(e.runs.unwrap() > 1 && e.passes.unwrap() >= 2.0, "{e:?}");
        assert!(e.predicted_blocks.unwrap() > 0 && e.bytes_written.unwrap() >= 2 << 20);
        if peers::gnu_sort_version().is_some() {
            assert_eq!(rows.iter().filter(|r| r.tool == "gnu-sort").count(), 2);
        }
        // uutils sort on lines at each M, where installed, set beside emsort.
        let uutils = UutilsSort::find().is_ok();
        assert_eq!(rows.iter().filter(|r| r.tool == "uutils-sort").count(), 2 * usize::from(uutils));
        let mut lines_em = o.summary.iter().filter(|s| s.tool == "emsort" && s.format == "lines").peekable();
        assert!(lines_em.peek().is_some());
        assert!(lines_em.all(|s| s.speedup_vs_uutils_sort.is_some() == uutils));
        assert!(o.summary.iter().any(|s| s.ratio_to_io_bound.is_some()));
        assert!(!o.plots.is_empty());
        // The README lists exactly the plots drawn.
        let readme = std::fs::read_to_string(&o.readme).unwrap();
        let listed: Vec<&str> =
            readme.lines().filter(|l| l.starts_with("  - `") && l.contains(".svg`")).collect();
        assert_eq!(listed.len(), o.plots.len(), "{readme}");
        for p in &o.plots {
            let name = p.file_name().unwrap().to_string_lossy();
            assert!(listed.iter().any(|l| l.contains(&format!("`{name}`: "))), "{name}: {readme}");
        }
        assert!(!listed.iter().any(|l| l.ends_with(": a chart")), "{readme}");
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&o.machine_json).unwrap()).unwrap();
        assert_eq!(m["stxxl_driver"], "not used: turned off");
        assert_eq!(m["emsort_runs"], "in-process (sort_file)");
        let left: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.iter().all(|n| !n.to_string_lossy().starts_with(".emsort-work")), "{left:?}");
    }
}
