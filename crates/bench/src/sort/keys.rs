//! The keys experiment of a sort campaign: sorts by key of CSV lines
//! (issue 17's performance bar), of a quoted CSV export with a header, of
//! JSON lines, and of words in a locale (issue 41), emsort beside GNU
//! sort, uutils sort, DuckDB, Polars and xan, as each can read the input.
//!
//! A grid row naming a data set ([`DataSet`]: `csv`, `csv-export`,
//! `jsonl`, `words`; with a `keys` list, [`KeySort`], and optionally a
//! locale `LC_ALL=…`) generates, for each size, about that many bytes of
//! it (`emsort gen --format DATA`, seed 42), and runs every key sort that
//! applies to it at each (M, threads) of the row, `reps` times, each tool
//! on a cold cache, every tool with `LC_ALL` set to the row's locale (`C`
//! when it names none):
//!
//! | tool | data sets | command |
//! |---|---|---|
//! | `emsort` | all | `emsort sort KEYS -S M --parallel T -T TMP --stats F --quiet -o OUT IN` (its default fan-in, policy and streams, as a user runs it; KEYS e.g. `--csv --header -k amount:n`, `--jsonl -k .ts:n`) |
//! | `gnu-sort` | `csv`, `words` | `sort KEYS -S M --parallel=T -T TMP -o OUT IN` |
//! | `uutils-sort` | `csv` | `coreutils sort KEYS -S M --parallel T -T TMP -o OUT IN` (uutils coreutils' multi-call binary, [`UutilsSort`]) |
//! | `duckdb` | `csv`, `csv-export`, `jsonl` | `python3 duckdb_sort.py IN OUT M T TMP NAME`: `SET memory_limit`, `threads`, `temp_directory`, then `COPY (SELECT … FROM read_csv(IN, …) ORDER BY …) TO OUT` (`read_json(IN, format='newline_delimited')` on JSON lines; [`DUCKDB_SCRIPT`], [`PythonPeer`]) |
//! | `polars` | `csv-export`, `jsonl` | `POLARS_MAX_THREADS=T python3 polars_sort.py IN OUT NAME`: `pl.scan_csv(IN).sort(…).sink_csv(OUT)` (`scan_ndjson` / `sink_ndjson` on JSON lines), the streaming engine; Polars has no memory limit, so M does not bind it: its peak RSS is in the row ([`POLARS_SCRIPT`]) |
//! | `xan` | `csv-export` | `RAYON_NUM_THREADS=T xan sort -e -m M_MiB --tmp-dir TMP -p [-N] -s COLUMN -o OUT IN`: xan's external sort with M as its memory limit, in parallel ([`Xan`]) |
//! | `emsort-baseline` | all | with `--baseline EXE` ([`KeysPeers::baseline`]): `EXE sort …`, the same command as `emsort`'s with an earlier emsort binary; the two alternate ([`emsort_order`]): `emsort` first in odd repetitions, the baseline first in even ones, so that neither always runs on the heels of the other and the A/B comparison is of the same run |
//! | `cpu-bound` | all | `emsort sort KEYS -S M --parallel T --io buffered -T SHM/tmp --stats F --quiet -o SHM/out SHM/IN`: emsort with its input, runs and output on tmpfs, the page cache not emptied, in the same locale ([`super::cpu_bound`]) |
//! | `io-bound` | all | once per input and repetition, after the repetition's key sorts: read the input once and write as many bytes once with O_DIRECT ([`super::fio::io_bound`], the same run as the grid's), its `keys` empty |
//!
//! The summary sets each tool's median beside 2 × the I/O bound and the
//! CPU bound at the same keys, M and threads, names the larger as the
//! bound that binds (`bound`, `ratio_to_bound`), and gives emsort's time
//! over the baseline's (`ratio_to_baseline`); [`keys_table`] says the same
//! per key sort with each peer's time over emsort's, and the plot
//! `keys_{DATA}_{N}_M{M}_t{T}.svg` draws it ([`super::plots_from_csv`]).
//! The `keys` column is the key options, after `LC_ALL=LOCALE ` when the
//! row names a locale (`LC_ALL=en_US.UTF-8 plain`).
//!
//! `-S` is given as `NK` (KiB) whenever M is a whole number of KiB, which
//! GNU sort, uutils sort and emsort read alike. Checks:
//!
//! - where GNU sort reads the input (`csv`, `words`), its output is the
//!   reference (emsort's when GNU sort is missing or failed, else the
//!   baseline's); emsort's, uutils sort's, the CPU bound's and the
//!   baseline's outputs are compared with it byte for byte: on `words`
//!   in the locale, emsort must be byte-identical to GNU sort;
//! - on `csv-export` and `jsonl`, which GNU sort cannot parse, emsort's
//!   output is the reference, checked on its own: `emsort sort -c KEYS`
//!   (the same options and locale) must find it in order, and it must
//!   hold as many records as the input (a CSV export's records counted
//!   with the `csv` crate, [`DataSet::count_records`]); a failure makes
//!   emsort's row a `MISMATCH`;
//! - DuckDB, Polars and xan break ties and print numbers their own way:
//!   they are checked by the records of their output, counted the same
//!   way (the reference's count).
//!
//! A tool that fails (DuckDB out of memory, emsort refusing an option) or
//! whose output differs is a row with `verified` = `FAILED` or `MISMATCH`
//! and the message in `error`, listed in `machine.json` (`keys_problems`)
//! and the warnings; the campaign goes on. A peer that is not installed is
//! left out with a note (`machine.json`, the warnings).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use emsort_io::cache::CacheMethod;
use emsort_io::{format_size, ErrorKind, NoProgress, Progress, StreamKind};
use emsort_sort::gen::generate;
use emsort_sort::simd::Level;

use super::cpu_bound::{CpuBoundDir, CPU_BOUND_CACHE};
pub use super::data_set::{count_lines, DataSet};
use super::fio::IoBound;
pub use super::key_sort::{parse_keys, KeySort};
use super::peers::{self, run_child, tail, ChildRun};
use super::record::{RawRow, RawWriter, SummaryRow, FAILED, MISMATCH};
use super::report::bound_cells;
use crate::campaign::interrupted;
use crate::chart::format_seconds;
use crate::grid::rounds;
use crate::{Error, Result};

/// The DuckDB driver, `bench/duckdb/duckdb_sort.py` (see its docstring).
pub const DUCKDB_SCRIPT: &str = include_str!("../../../../bench/duckdb/duckdb_sort.py");

/// The Polars driver, `bench/polars/polars_sort.py` (see its docstring).
pub const POLARS_SCRIPT: &str = include_str!("../../../../bench/polars/polars_sort.py");

/// One key sort on one input at one (M, threads).
#[derive(Debug, Clone, PartialEq)]
pub struct KeysPoint {
    /// The input's kind.
    pub data: DataSet,
    /// Input size N in bytes (about: whole records).
    pub bytes: u64,
    /// Memory M (`-S`; DuckDB's `memory_limit`).
    pub memory: u64,
    /// Threads (`--parallel`; DuckDB's `threads`).
    pub threads: usize,
    /// The sort.
    pub keys: KeySort,
    /// The `--io` kinds emsort also runs with, after its run with its
    /// default streams (no `--io`), each a row with its kind in `io`; the
    /// peers and the baseline run once. A grid's kinds when its io list
    /// names `default` too (as the machine-profile matrix's do), else none.
    pub io_kinds: Vec<StreamKind>,
    /// Repetitions.
    pub reps: u32,
    /// The locale every tool sorts in (`LC_ALL`); `None`: `C`.
    pub locale: Option<String>,
}

impl KeysPoint {
    /// `csv N=1G M=256M t=2 -t, -k3,3n`.
    pub fn label(&self) -> String {
        format!(
            "{} N={} M={} t={} {}",
            self.data,
            format_size(self.bytes),
            format_size(self.memory),
            self.threads,
            self.keys_label()
        )
    }

    /// The `keys` column: the key options, after `LC_ALL=LOCALE ` when
    /// the point names a locale.
    ///
    /// ```
    /// use emsort_bench::sort::{DataSet, KeySort, KeysPoint};
    /// let mut p = KeysPoint { data: DataSet::Words, bytes: 1 << 20, memory: 1 << 20, threads: 2,
    ///     keys: KeySort::Plain, io_kinds: vec![], reps: 1, locale: None };
    /// assert_eq!(p.keys_label(), "plain");
    /// p.locale = Some("en_US.UTF-8".into());
    /// assert_eq!(p.keys_label(), "LC_ALL=en_US.UTF-8 plain");
    /// assert_eq!(p.lc_all(), "en_US.UTF-8");
    /// ```
    pub fn keys_label(&self) -> String {
        match &self.locale {
            Some(l) => format!("LC_ALL={l} {}", self.keys.label()),
            None => self.keys.label(),
        }
    }

    /// The `LC_ALL` every tool of the point runs with.
    pub fn lc_all(&self) -> &str {
        self.locale.as_deref().unwrap_or("C")
    }
}

/// uutils coreutils' `sort`, run as `EXE sort …` (the multi-call binary
/// `cargo install coreutils --no-default-features --features sort` makes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UutilsSort {
    /// The multi-call binary.
    pub exe: PathBuf,
    /// The first line of `EXE sort --version` (`sort (uutils coreutils) 0.12.0`).
    pub version: String,
}

impl UutilsSort {
    /// `coreutils` on the `PATH`, else in `$CARGO_HOME/bin` or
    /// `~/.cargo/bin`, when its `sort --version` says uutils (GNU
    /// coreutils built as one binary is not it); `Err` says why not.
    pub fn find() -> std::result::Result<UutilsSort, String> {
        let mut candidates = vec![PathBuf::from("coreutils")];
        if let Some(h) = std::env::var_os("CARGO_HOME") {
            candidates.push(Path::new(&h).join("bin/coreutils"));
        }
        if let Some(h) = std::env::var_os("HOME") {
            candidates.push(Path::new(&h).join(".cargo/bin/coreutils"));
        }
        let mut why = "not installed (bench/setup.sh installs it: cargo install coreutils \
                       --no-default-features --features sort)"
            .to_string();
        for exe in candidates {
            if let Ok(o) = Command::new(&exe).args(["sort", "--version"]).env("LC_ALL", "C").output() {
                let text = String::from_utf8_lossy(&o.stdout);
                let first = text.lines().next().unwrap_or("").trim().to_string();
                if o.status.success() && first.contains("uutils") {
                    return Ok(UutilsSort { exe, version: first });
                }
                why = format!("{} is not uutils' sort: {first:?}", exe.display());
            }
        }
        Err(why)
    }
}

/// A peer that is a Python module (DuckDB, Polars), run through its
/// driver script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonPeer {
    /// The Python interpreter.
    pub python: PathBuf,
    /// The module's `__version__`.
    pub version: String,
}

impl PythonPeer {
    /// The interpreter `$EMSORT_BENCH_PYTHON` (default `python3`) when it
    /// imports `module` (`duckdb`, `polars`); `Err` says why not.
    pub fn find(module: &str) -> std::result::Result<PythonPeer, String> {
        let python =
            PathBuf::from(std::env::var_os("EMSORT_BENCH_PYTHON").unwrap_or_else(|| "python3".into()));
        let o = Command::new(&python)
            .args(["-c", &format!("import {module}; print({module}.__version__)")])
            .output()
            .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
        if !o.status.success() {
            return Err(format!(
                "not installed for {} (bench/setup.sh installs it: pip install {module}): {}",
                python.display(),
                tail(&String::from_utf8_lossy(&o.stderr)).lines().last().unwrap_or("")
            ));
        }
        let version = String::from_utf8_lossy(&o.stdout).trim().to_string();
        Ok(PythonPeer { python, version })
    }
}

/// xan, the CSV toolkit (`cargo install xan`), for `xan sort`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xan {
    /// The binary.
    pub exe: PathBuf,
    /// `xan --version`'s first line.
    pub version: String,
}

impl Xan {
    /// `xan` on the `PATH`, else in `$CARGO_HOME/bin` or `~/.cargo/bin`;
    /// `Err` says why not.
    pub fn find() -> std::result::Result<Xan, String> {
        let mut candidates = vec![PathBuf::from("xan")];
        if let Some(h) = std::env::var_os("CARGO_HOME") {
            candidates.push(Path::new(&h).join("bin/xan"));
        }
        if let Some(h) = std::env::var_os("HOME") {
            candidates.push(Path::new(&h).join(".cargo/bin/xan"));
        }
        for exe in candidates {
            if let Ok(o) = Command::new(&exe).arg("--version").output() {
                let text = String::from_utf8_lossy(&o.stdout);
                let first = text.lines().next().unwrap_or("").trim().to_string();
                if o.status.success() {
                    return Ok(Xan { exe, version: first });
                }
            }
        }
        Err("no xan on the PATH nor in ~/.cargo/bin (bench/setup.sh tries: cargo install xan --locked)"
            .into())
    }
}

/// The peers of the keys experiment that can run here.
#[derive(Debug, Clone, Default)]
pub struct KeysPeers {
    /// GNU sort's version.
    pub gnu: Option<String>,
    /// uutils sort.
    pub uutils: Option<UutilsSort>,
    /// DuckDB, with the driver script written into the work directory.
    pub duckdb: Option<(PythonPeer, PathBuf)>,
    /// Polars, with the driver script written into the work directory.
    pub polars: Option<(PythonPeer, PathBuf)>,
    /// xan.
    pub xan: Option<Xan>,
    /// Whether the CPU bound runs (emsort on tmpfs, [`super::cpu_bound`]).
    pub cpu_bound: bool,
    /// An earlier emsort binary run beside emsort (tool `emsort-baseline`).
    pub baseline: Option<PathBuf>,
}

impl KeysPeers {
    /// Runs per repetition of a key point on `data`: emsort and each
    /// peer that reads it (not the I/O bound, which runs once per input
    /// and repetition).
    pub fn tools(&self, data: DataSet) -> u64 {
        1 + u64::from(self.gnu.is_some() && data.gnu_sort_reads())
            + u64::from(self.baseline.is_some())
            + u64::from(self.cpu_bound)
            + u64::from(self.uutils.is_some() && data == DataSet::Csv)
            + u64::from(self.duckdb.is_some() && data.duckdb_reads())
            + u64::from(self.polars.is_some() && data.polars_reads())
            + u64::from(self.xan.is_some() && data.xan_reads())
    }
}

/// The `-S` argument for M: `NK` when M is a whole number of KiB, else
/// `Nb` (GNU's bytes suffix).
pub fn size_arg(memory: u64) -> String {
    if memory.is_multiple_of(1024) {
        format!("{}K", memory / 1024)
    } else {
        format!("{memory}b")
    }
}

/// Where two files first differ: `None` when equal, else the byte offset
/// (the shorter file's length when one is a prefix of the other).
pub fn first_difference(a: &Path, b: &Path) -> Result<Option<u64>> {
    use std::io::Read;
    let open = |p: &Path| std::fs::File::open(p).map_err(|e| Error::io("open", p, e));
    let (mut fa, mut fb) = (open(a)?, open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 4 << 20], vec![0u8; 4 << 20]);
    let mut offset = 0u64;
    loop {
        let na = read_full(&mut fa, &mut ba).map_err(|e| Error::io("read", a, e))?;
        let nb = read_full(&mut fb, &mut bb).map_err(|e| Error::io("read", b, e))?;
        let n = na.min(nb);
        if let Some(i) = ba[..n].iter().zip(&bb[..n]).position(|(x, y)| x != y) {
            return Ok(Some(offset + i as u64));
        }
        if na != nb {
            return Ok(Some(offset + n as u64));
        }
        if na == 0 {
            return Ok(None);
        }
        offset += n as u64;
    }

    fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match f.read(&mut buf[n..])? {
                0 => break,
                k => n += k,
            }
        }
        Ok(n)
    }
}

/// A message for a CSV cell: its first line that says something (an
/// exit status alone is joined with the next), at most 300 bytes.
fn one_line(text: &str) -> String {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut s = lines.next().unwrap_or("").to_string();
    if s.ends_with(':') {
        if let Some(next) = lines.next() {
            s = format!("{s} {next}");
        }
    }
    if s.len() > 300 {
        let mut cut = 300;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

/// What the keys runs of one campaign share.
pub(crate) struct KeysCtx<'a> {
    pub work: &'a Path,
    pub tmp: &'a Path,
    pub cache: CacheMethod,
    pub writer: &'a mut RawWriter,
    pub progress: &'a dyn Progress,
    pub cancel: &'a AtomicBool,
    /// The emsort binary.
    pub exe: &'a Path,
    pub peers: &'a KeysPeers,
    /// Failed and mismatched runs, for machine.json and the warnings.
    pub problems: &'a mut Vec<String>,
    pub runs: &'a mut u64,
    /// The CPU bound's tmpfs directory, when it runs.
    pub cpu: Option<&'a CpuBoundDir>,
    /// How the I/O bound is measured.
    pub io_bound: &'a IoBound,
    /// The SIMD level forced on emsort's runs (`EMSORT_SIMD`), if any.
    pub simd: Option<Level>,
}

/// Which emsort binary runs ([`emsort_order`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    /// The campaign's own (tool `emsort`).
    Current,
    /// The `--baseline` binary (tool `emsort-baseline`).
    Baseline,
}

/// The order of the emsort runs of a key point in repetition `rep` (from
/// 1): the current binary alone without a baseline; with one, the current
/// binary first in odd repetitions and the baseline first in even ones,
/// so that each runs as often first as second (a warm machine, a
/// neighbour's load, or the other's left-over page cache favour neither).
///
/// ```
/// use emsort_bench::sort::keys::{emsort_order, Binary::*};
/// assert_eq!(emsort_order(1, false), vec![Current]);
/// assert_eq!(emsort_order(1, true), vec![Current, Baseline]);
/// assert_eq!(emsort_order(2, true), vec![Baseline, Current]);
/// ```
pub fn emsort_order(rep: u32, baseline: bool) -> Vec<Binary> {
    match (baseline, rep % 2) {
        (false, _) => vec![Binary::Current],
        (true, 1) => vec![Binary::Current, Binary::Baseline],
        (true, _) => vec![Binary::Baseline, Binary::Current],
    }
}

/// How a tool's run ended.
enum Outcome {
    /// Exited 0, output written.
    Done(ChildRun),
    /// Failed: the message.
    Failed(String, Option<ChildRun>),
}

/// Generates the input of `data` and `bytes` and runs its points (see
/// the module docs); the input is left for the caller to remove.
pub(crate) fn run_keys_data_set(
    ctx: &mut KeysCtx<'_>,
    data: DataSet,
    bytes: u64,
    points: &[&KeysPoint],
    input: &Path,
) -> Result<()> {
    ctx.progress.message(&format!("generating {data} N={}", format_size(bytes)));
    let stats = generate(&data.gen_spec(bytes), input, &NoProgress, ctx.cancel)?;
    let lines = stats.items;
    let records = data.records_of_items(stats.items);
    let cpu_input = match ctx.cpu {
        Some(c) => Some(c.stage(input)?),
        None => None,
    };
    let peer_out = ctx.work.join("peer.out");
    for (rep, round) in rounds(points, |p| p.reps) {
        for p in round {
            if ctx.cancel.load(Ordering::Relaxed) {
                return Err(interrupted(ctx.work));
            }
            run_point(ctx, p, rep, input, cpu_input.as_deref(), (lines, records))?;
        }
        // The I/O bound of the input, once per repetition, on a cold cache
        // like every other run.
        if ctx.cancel.load(Ordering::Relaxed) {
            return Err(interrupted(ctx.work));
        }
        ctx.progress.message(&format!("I/O bound {data} N={} rep {rep}", format_size(bytes)));
        let how = (ctx.cache, ctx.io_bound, ctx.cancel);
        let res = super::fio::io_bound_run(how, input, &peer_out, data.name(), (bytes, lines, rep));
        let _ = std::fs::remove_file(&peer_out);
        let mut row = res?;
        row.experiment = "keys".into();
        write_row(ctx, &row)?;
    }
    Ok(())
}

/// Every tool on one key point and repetition (the CPU bound on
/// `cpu_input`, the input's copy on tmpfs, when it runs); `lines` and
/// `records` are the input's (they differ on a CSV export).
fn run_point(
    ctx: &mut KeysCtx<'_>,
    p: &KeysPoint,
    rep: u32,
    input: &Path,
    cpu_input: Option<&Path>,
    (lines, records): (u64, u64),
) -> Result<()> {
    let (em_out, reference, peer_out) =
        (ctx.work.join("emsort.out"), ctx.work.join("reference.out"), ctx.work.join("peer.out"));
    let base_out = ctx.work.join("baseline.out");
    for f in [&em_out, &reference, &peer_out, &base_out] {
        let _ = std::fs::remove_file(f);
    }
    let (peers, tmp, exe, cache) = (ctx.peers, ctx.tmp, ctx.exe, ctx.cache.name());
    let row = |tool: &str| {
        let mut r = RawRow::new(tool, p.data.name(), p.bytes, lines, p.threads, rep);
        r.memory = Some(p.memory);
        r.experiment = "keys".into();
        r.keys = p.keys_label();
        r.cache = cache.into();
        r
    };
    let label = format!("{} rep {rep}", p.label());
    let stats_path = ctx.work.join("emsort-stats.json");

    // emsort, and the baseline binary in alternating order.
    let mut em = row("emsort");
    let mut base = row("emsort-baseline");
    let (mut em_done, mut base_done) = (false, false);
    for binary in emsort_order(rep, peers.baseline.is_some()) {
        let (bin, out, r, done, what) = match (binary, &peers.baseline) {
            (Binary::Baseline, Some(b)) => {
                (b.as_path(), &base_out, &mut base, &mut base_done, "emsort-baseline")
            }
            _ => (exe, &em_out, &mut em, &mut em_done, "emsort"),
        };
        ctx.progress.message(&format!("{what} {label}"));
        let _ = std::fs::remove_file(&stats_path);
        let cmd = emsort_command(bin, p, (None, ctx.simd), tmp, &stats_path, out, input);
        *done = run_tool(ctx, cmd, &format!("{what} sort ({label})"), Some(input), out, r)?;
        if *done {
            emsort_phases(&stats_path, r);
        }
    }

    // GNU sort: the reference where it reads the input.
    let mut gnu = None;
    if let (Some(version), true) = (&peers.gnu, p.data.gnu_sort_reads()) {
        ctx.progress.message(&format!("GNU sort {label}"));
        let mut g = row("gnu-sort");
        g.note = version.clone();
        let mut cmd = Command::new("sort");
        cmd.env("LC_ALL", p.lc_all())
            .args(p.keys.args())
            .arg("-S")
            .arg(size_arg(p.memory))
            .arg(format!("--parallel={}", p.threads))
            .arg("-T")
            .arg(tmp)
            .arg("-o")
            .arg(&reference)
            .arg(input);
        let done = run_tool(ctx, cmd, &format!("GNU sort ({label})"), Some(input), &reference, &mut g)?;
        if done {
            g.verified = "reference".into();
        }
        gnu = Some((g, done));
    }
    // The reference: GNU sort's output, else emsort's, else the baseline's;
    // an emsort output that is the reference is checked on its own.
    let gnu_ok = gnu.as_ref().is_some_and(|(_, done)| *done);
    let mut reference_tool = gnu_ok.then_some("gnu-sort");
    let emsorts =
        [(&em_out, &mut em, em_done, "emsort"), (&base_out, &mut base, base_done, "emsort-baseline")];
    for (out, r, done, tool) in emsorts {
        if !done {
            continue;
        }
        match reference_tool {
            Some(t) => check_same(ctx, out, &reference, t, &label, r)?,
            None => {
                std::fs::rename(out, &reference).map_err(|e| Error::io("rename", out, e))?;
                r.verified = "reference".into();
                reference_tool = Some(tool);
                check_alone(ctx, p, &reference, (records, label.as_str()), r)?;
            }
        }
        let _ = std::fs::remove_file(out);
    }
    write_row(ctx, &em)?;
    if peers.baseline.is_some() {
        write_row(ctx, &base)?;
    }
    if let Some((g, _)) = &gnu {
        write_row(ctx, g)?;
    }

    // emsort with each --io kind, checked against the same reference.
    for &kind in &p.io_kinds {
        let what = format!("emsort --io {kind}");
        ctx.progress.message(&format!("{what} {label}"));
        let mut r = row("emsort");
        r.io = kind.to_string();
        let _ = std::fs::remove_file(&stats_path);
        let cmd = emsort_command(exe, p, (Some(kind.name()), ctx.simd), tmp, &stats_path, &em_out, input);
        if run_tool(ctx, cmd, &format!("{what} sort ({label})"), Some(input), &em_out, &mut r)? {
            emsort_phases(&stats_path, &mut r);
            match reference_tool {
                Some(t) => check_same(ctx, &em_out, &reference, t, &label, &mut r)?,
                None => r.verified = "unchecked".into(),
            }
        }
        let _ = std::fs::remove_file(&em_out);
        write_row(ctx, &r)?;
    }

    // The CPU bound: emsort with the same keys and locale, everything on tmpfs.
    if let (Some(c), Some(cpu_input)) = (ctx.cpu, cpu_input) {
        ctx.progress.message(&format!("CPU bound {label}"));
        let mut r = row("cpu-bound");
        r.io = "buffered".into();
        r.cache = CPU_BOUND_CACHE.into();
        let _ = std::fs::remove_file(&stats_path);
        let (cpu_out, cpu_tmp) = (c.output(), c.tmp());
        let how = (Some("buffered"), ctx.simd);
        let cmd = emsort_command(exe, p, how, &cpu_tmp, &stats_path, &cpu_out, cpu_input);
        let res = run_tool(ctx, cmd, &format!("emsort sort on tmpfs ({label})"), None, &cpu_out, &mut r)
            .and_then(|done| {
                if done {
                    emsort_phases(&stats_path, &mut r);
                    match reference_tool {
                        Some(t) => check_same(ctx, &cpu_out, &reference, t, &label, &mut r)?,
                        None => r.verified = "unchecked".into(),
                    }
                }
                Ok(())
            });
        c.clean_run();
        res?;
        write_row(ctx, &r)?;
    }

    // uutils sort, on CSV lines.
    if let (Some(u), DataSet::Csv) = (&peers.uutils, p.data) {
        ctx.progress.message(&format!("uutils sort {label}"));
        let mut r = row("uutils-sort");
        r.note = u.version.clone();
        let mut cmd = Command::new(&u.exe);
        cmd.env("LC_ALL", p.lc_all())
            .arg("sort")
            .args(p.keys.args())
            .arg("-S")
            .arg(size_arg(p.memory))
            .arg("--parallel")
            .arg(p.threads.to_string())
            .arg("-T")
            .arg(tmp)
            .arg("-o")
            .arg(&peer_out)
            .arg(input);
        if run_tool(ctx, cmd, &format!("uutils sort ({label})"), Some(input), &peer_out, &mut r)? {
            match reference_tool {
                Some(t) => check_same(ctx, &peer_out, &reference, t, &label, &mut r)?,
                None => r.verified = "unchecked".into(),
            }
        }
        let _ = std::fs::remove_file(&peer_out);
        write_row(ctx, &r)?;
    }

    // The peers that sort records their own way, checked by their records.
    let expected = if reference_tool.is_some() {
        Some(p.data.count_records(&reference)?)
    } else if !p.keys.unique() {
        Some(records)
    } else {
        None
    };
    let counted = |ctx: &mut KeysCtx<'_>, mut r: RawRow, cmd: Command, what: String| -> Result<()> {
        ctx.progress.message(&format!("{what} {label}"));
        let what = format!("{what} ({label})");
        if run_tool(ctx, cmd, &what, Some(input), &peer_out, &mut r)? {
            check_records(ctx, p.data, &peer_out, expected, &what, &mut r)?;
        }
        let _ = std::fs::remove_file(&peer_out);
        write_row(ctx, &r)
    };
    if let (Some((d, script)), true) = (&peers.duckdb, p.data.duckdb_reads()) {
        let mut r = row("duckdb");
        r.note = format!("DuckDB {}", d.version);
        let dtmp = tmp.join("duckdb");
        std::fs::create_dir_all(&dtmp).map_err(|e| Error::io("create directory", &dtmp, e))?;
        let mut cmd = Command::new(&d.python);
        cmd.env("LC_ALL", p.lc_all())
            .arg(script)
            .arg(input)
            .arg(&peer_out)
            .arg(p.memory.to_string())
            .arg(p.threads.to_string())
            .arg(&dtmp)
            .arg(p.keys.name());
        let res = counted(ctx, r, cmd, "DuckDB".into());
        let _ = std::fs::remove_dir_all(&dtmp);
        res?;
    }
    if let (Some((py, script)), true) = (&peers.polars, p.data.polars_reads()) {
        let mut r = row("polars");
        r.note = format!("Polars {} (no memory limit: M does not bind it)", py.version);
        let mut cmd = Command::new(&py.python);
        cmd.env("LC_ALL", p.lc_all())
            .env("POLARS_MAX_THREADS", p.threads.to_string())
            .arg(script)
            .arg(input)
            .arg(&peer_out)
            .arg(p.keys.name());
        counted(ctx, r, cmd, "Polars".into())?;
    }
    if let (Some(x), true, Some(args)) = (&peers.xan, p.data.xan_reads(), p.keys.xan_args()) {
        let mut r = row("xan");
        r.note = x.version.clone();
        let xtmp = tmp.join("xan");
        std::fs::create_dir_all(&xtmp).map_err(|e| Error::io("create directory", &xtmp, e))?;
        let mut cmd = Command::new(&x.exe);
        cmd.env("LC_ALL", p.lc_all())
            .env("RAYON_NUM_THREADS", p.threads.to_string())
            .arg("sort")
            .arg("--external")
            .arg("--memory-limit")
            .arg((p.memory >> 20).max(1).to_string())
            .arg("--tmp-dir")
            .arg(&xtmp)
            .arg("--parallel")
            .args(args)
            .arg("-o")
            .arg(&peer_out)
            .arg(input);
        let res = counted(ctx, r, cmd, "xan".into());
        let _ = std::fs::remove_dir_all(&xtmp);
        res?;
    }
    for f in [&em_out, &reference, &peer_out, &base_out] {
        let _ = std::fs::remove_file(f);
    }
    Ok(())
}

/// Checks an emsort output that is the reference on its own (no GNU sort
/// to compare with): `emsort sort -c` with the point's options and
/// locale must find it in order, and it must hold the input's `records`
/// (unless the sort drops some); else the row is a `MISMATCH`.
fn check_alone(
    ctx: &mut KeysCtx<'_>,
    p: &KeysPoint,
    output: &Path,
    (records, label): (u64, &str),
    row: &mut RawRow,
) -> Result<()> {
    let mut cmd = Command::new(ctx.exe);
    cmd.env("LC_ALL", p.lc_all()).arg("sort").arg("-c").args(p.keys.args()).arg(output);
    let what = format!("emsort sort -c ({label})");
    let c = match run_child(cmd, &what, ctx.cancel, ctx.work) {
        Err(Error::Io(e)) if *e.kind() == ErrorKind::Interrupted => return Err(Error::Io(e)),
        Err(e) => Err(e.to_string()),
        Ok(c) if c.status.success() => Ok(()),
        Ok(c) => Err(format!("{}: {}", c.status, tail(&c.stderr))),
    };
    let mut wrong = match c {
        Ok(()) => None,
        Err(msg) => Some(format!("not in order by `emsort sort -c`: {}", one_line(&msg))),
    };
    if wrong.is_none() && !p.keys.unique() {
        let n = p.data.count_records(output)?;
        if n != records {
            wrong = Some(format!("{n} records, the input has {records}"));
        }
    }
    if let Some(e) = wrong {
        row.verified = MISMATCH.into();
        row.error = e;
        ctx.problems.push(format!("MISMATCH: {} ({label}): {}", row.tool, row.error));
    } else {
        let sep = if row.note.is_empty() { "" } else { "; " };
        row.note = format!("{}{sep}checked alone: in order (emsort sort -c), all records", row.note);
    }
    Ok(())
}

/// Checks a peer's output by its records: `rows` when it has the
/// `expected` count, `MISMATCH` when not, `unchecked` without a count to
/// expect (a unique sort and no reference).
fn check_records(
    ctx: &mut KeysCtx<'_>,
    data: DataSet,
    output: &Path,
    expected: Option<u64>,
    what: &str,
    row: &mut RawRow,
) -> Result<()> {
    let n = match data.count_records(output) {
        Ok(n) => n,
        Err(e) => {
            row.verified = MISMATCH.into();
            row.error = one_line(&e.to_string());
            ctx.problems.push(format!("MISMATCH: {what}: {}", row.error));
            return Ok(());
        }
    };
    match expected {
        Some(e) if n == e => row.verified = "rows".into(),
        Some(e) => {
            row.verified = MISMATCH.into();
            row.error = format!("{n} records, the reference has {e}");
            ctx.problems.push(format!("MISMATCH: {what}: {}", row.error));
        }
        None => row.verified = "unchecked".into(),
    }
    Ok(())
}

/// `emsort sort KEYS -S M --parallel T [--io IO] -T TMP --stats STATS
/// --quiet -o OUT INPUT`: emsort's run of a point, on the disk (`io`:
/// its default streams) or on tmpfs for the CPU bound (`buffered`), with
/// `EMSORT_SIMD` set when a level is forced and `LC_ALL` the point's
/// locale (emsort reads it from the environment, as GNU sort does).
fn emsort_command(
    exe: &Path,
    p: &KeysPoint,
    (io, simd): (Option<&str>, Option<Level>),
    tmp: &Path,
    stats: &Path,
    out: &Path,
    input: &Path,
) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg("sort")
        .args(p.keys.args())
        .arg("-S")
        .arg(size_arg(p.memory))
        .arg("--parallel")
        .arg(p.threads.to_string());
    if let Some(io) = io {
        cmd.arg("--io").arg(io);
    }
    if let Some(level) = simd {
        cmd.env(super::profile::SIMD_ENV, level.name());
    }
    cmd.env("LC_ALL", p.lc_all());
    cmd.arg("-T").arg(tmp).arg("--stats").arg(stats).arg("--quiet").arg("-o").arg(out).arg(input);
    cmd
}

fn write_row(ctx: &mut KeysCtx<'_>, row: &RawRow) -> Result<()> {
    ctx.writer.write(row)?;
    *ctx.runs += 1;
    ctx.progress.advance(1);
    Ok(())
}

/// Runs one tool on a cold cache (`cold_input` emptied from the page
/// cache first; `None` for the CPU bound, whose files are on tmpfs) and
/// fills `row`'s time and usage (the time includes an `fsync` of the
/// output); a failure is recorded in the row and the problems. Returns
/// whether it succeeded.
fn run_tool(
    ctx: &mut KeysCtx<'_>,
    cmd: Command,
    what: &str,
    cold_input: Option<&Path>,
    output: &Path,
    row: &mut RawRow,
) -> Result<bool> {
    if let Some(input) = cold_input {
        ctx.cache.apply(&[input])?;
    }
    let outcome = match run_child(cmd, what, ctx.cancel, ctx.work) {
        Err(Error::Io(e)) if *e.kind() == ErrorKind::Interrupted => return Err(Error::Io(e)),
        Err(e) => Outcome::Failed(e.to_string(), None),
        Ok(c) if matches!(c.status.code(), Some(130) | Some(143)) && ctx.cancel.load(Ordering::Relaxed) => {
            return Err(interrupted(ctx.work));
        }
        Ok(c) if !c.status.success() => {
            let msg = if c.stderr.trim().is_empty() { tail(&c.stdout) } else { tail(&c.stderr) };
            Outcome::Failed(format!("{}: {msg}", c.status), Some(c))
        }
        Ok(c) => Outcome::Done(c),
    };
    match outcome {
        Outcome::Done(c) => {
            let t = Instant::now();
            peers::sync_file(output)?;
            row.seconds = c.seconds + t.elapsed().as_secs_f64();
            peers::put_child(row, &c);
            // The drivers' own line: their query time and row count.
            for driver in ["duckdb_sort:", "polars_sort:"] {
                if let Some(line) = c.stdout.lines().find(|l| l.starts_with(driver)) {
                    row.note = format!("{}; {}", row.note, line.trim_start_matches(driver).trim());
                }
            }
            Ok(true)
        }
        Outcome::Failed(msg, c) => {
            if let Some(c) = &c {
                row.seconds = c.seconds;
                peers::put_child(row, c);
            }
            row.verified = FAILED.into();
            row.error = one_line(&msg);
            ctx.problems.push(format!("FAILED: {what}: {}", row.error));
            Ok(false)
        }
    }
}

/// Compares an output with the reference: `identical`, or `MISMATCH`
/// (recorded in the problems).
fn check_same(
    ctx: &mut KeysCtx<'_>,
    out: &Path,
    reference: &Path,
    reference_tool: &str,
    label: &str,
    row: &mut RawRow,
) -> Result<()> {
    match first_difference(out, reference)? {
        None => row.verified = "identical".into(),
        Some(at) => {
            let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
            row.verified = MISMATCH.into();
            row.error = format!(
                "differs from {reference_tool}'s output at byte {at} ({} bytes vs {})",
                size(out),
                size(reference)
            );
            ctx.problems.push(format!("MISMATCH: {} ({label}): {}", row.tool, row.error));
        }
    }
    Ok(())
}

/// The phases and counts of emsort's statistics file, where it has them.
fn emsort_phases(stats: &Path, row: &mut RawRow) {
    let Ok(text) = std::fs::read_to_string(stats) else { return };
    let _ = std::fs::remove_file(stats);
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else { return };
    let f = |p: &str| v.pointer(p).and_then(|x| x.as_f64());
    let u = |p: &str| v.pointer(p).and_then(|x| x.as_u64());
    row.run_formation_s = f("/run_formation/seconds");
    row.merge_s = f("/merge/seconds");
    row.runs = u("/runs");
    row.passes = f("/passes");
    row.merge_order = u("/merge_order").map(|x| x as usize);
    row.block_size = u("/plan/block_size");
    row.fan_in = u("/plan/fan_in").map(|x| x as usize);
    if let (Some(a), Some(b)) = (u("/run_formation/bytes_read"), u("/merge/bytes_read")) {
        row.bytes_read = Some(a + b);
    }
    if let (Some(a), Some(b)) = (u("/run_formation/bytes_written"), u("/merge/bytes_written")) {
        row.bytes_written = Some(a + b);
    }
    if let Some(m) = v.get("cpu_migrations").and_then(|x| x.as_u64()) {
        row.cpu_migrations = Some(m);
    }
    let text = |p: &str| v.pointer(p).and_then(|x| x.as_str());
    let chose: Vec<String> = [("streams", "/plan/input_kind"), ("simd", "/plan/simd")]
        .into_iter()
        .filter_map(|(name, ptr)| Some(format!("{name} {}", text(ptr)?)))
        .collect();
    if !chose.is_empty() {
        row.note = chose.join("; ");
    }
}

/// The keys experiment's tables (Markdown): per input, (M, threads) and
/// key sort, each tool's median and range, its time over emsort's, peak
/// RSS, runs and check, then the bar: on `csv` issue 17's (at least 4×
/// faster than GNU sort, faster than uutils sort and than DuckDB); on
/// `csv-export` and `jsonl` issue 41's (at least 2× faster than DuckDB,
/// and how emsort stands to Polars and xan); on `words` issue 41's
/// (output identical to GNU sort's in the locale, and the time against
/// it), then the bounds (2 × the
/// I/O bound, the CPU bound, which one binds and emsort's time over it, as
/// the grid's [`bounds_table`](super::bounds_table) says them) and, with a
/// baseline, emsort's time over the baseline's. Empty without keys rows.
pub fn keys_table(rows: &[SummaryRow]) -> String {
    // The I/O bound is per input, not per key sort: it shows in the bound line.
    let keys: Vec<&SummaryRow> =
        rows.iter().filter(|r| r.experiment == "keys" && r.tool != "io-bound").collect();
    let mut groups: Vec<(&str, u64, Option<u64>, usize, &str)> = Vec::new();
    for r in &keys {
        let g = (r.format.as_str(), r.bytes, r.memory, r.threads, r.keys.as_str());
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let mut s = String::new();
    for (data, bytes, memory, threads, k) in groups {
        let on: Vec<&SummaryRow> = keys
            .iter()
            .copied()
            .filter(|r| {
                (r.format.as_str(), r.bytes, r.memory, r.threads, r.keys.as_str())
                    == (data, bytes, memory, threads, k)
            })
            .collect();
        // emsort as a user runs it: no --io (its rows with a kind say it in `io`).
        let is_em = |r: &&&SummaryRow| r.tool == "emsort" && r.io.is_empty();
        let em = on.iter().find(is_em).map(|r| r.median_s).filter(|x| x.is_finite());
        s.push_str(&format!(
            "### `{k}` — {data} N = {}, M = {}, {threads} thread(s)\n\n\
             | tool | median | min – max | time / emsort's | peak RSS | runs | check |\n\
             |---|---:|---:|---:|---:|---:|---|\n",
            format_size(bytes),
            memory.map(format_size).unwrap_or_default()
        ));
        for r in &on {
            let ok = r.median_s.is_finite();
            let t = |x: f64| if x.is_finite() { format_seconds(x) } else { "-".into() };
            let ratio = match (ok, em) {
                (true, Some(e)) if e > 0.0 => format!("{:.2}x", r.median_s / e),
                _ => "-".into(),
            };
            let mut check = if r.reps == 0 { String::new() } else { r.verified.clone() };
            if r.failed > 0 {
                check = match check.is_empty() {
                    true => format!("{} FAILED", r.failed),
                    false => format!("{} FAILED; {check}", r.failed),
                };
            }
            if !r.error.is_empty() {
                check = format!("{check}: {}", r.error.replace('|', "/"));
            }
            let tool = match r.io.is_empty() {
                true => r.tool.clone(),
                false => format!("{} --io {}", r.tool, r.io),
            };
            s.push_str(&format!(
                "| {tool} | {} | {} – {} | {ratio} | {} | {} | {} |\n",
                t(r.median_s),
                t(r.min_s),
                t(r.max_s),
                r.peak_rss_bytes.map(|b| format!("{} MiB", b >> 20)).unwrap_or_else(|| "-".into()),
                r.reps + r.failed,
                check.trim_end_matches([';', ' ', ':'])
            ));
        }
        let peer = |tool: &str| on.iter().find(|r| r.tool == tool).copied();
        let bar = |tool: &str, name: &str, need: f64| -> String {
            let Some(p) = peer(tool) else { return format!("{name}: not measured") };
            match em {
                None => format!("{name}: NOT MET (emsort failed)"),
                Some(_) if !p.median_s.is_finite() => format!("{name}: met ({tool} failed)"),
                Some(e) => {
                    let x = p.median_s / e;
                    let met = if x >= need { "met" } else { "NOT MET" };
                    format!("{name}: {met} ({x:.2}x)")
                }
            }
        };
        let em_wrong = on.iter().any(|r| r.tool == "emsort" && r.mismatched > 0);
        let faster = 1.0 + f64::EPSILON;
        let bars = match data {
            "csv" => format!(
                "Bar: {}; {}; {}{}",
                bar("gnu-sort", ">= 4x GNU sort", 4.0),
                bar("uutils-sort", "faster than uutils sort", faster),
                bar("duckdb", "faster than DuckDB", faster),
                if em_wrong { "; emsort's output DIFFERS from GNU sort's" } else { "" }
            ),
            "words" => {
                let same = match on.iter().find(|r| r.tool == "emsort" && r.io.is_empty()) {
                    _ if peer("gnu-sort").is_none_or(|g| !g.median_s.is_finite()) => "not measured",
                    Some(e) if e.mismatched == 0 && e.failed == 0 && e.verified == "identical" => "yes",
                    Some(e) if e.failed > 0 && e.mismatched == 0 => "emsort FAILED",
                    _ => "NO",
                };
                format!(
                    "Bar (issue 41): output byte-identical to GNU sort's in the locale: {same}; {}",
                    bar("gnu-sort", "faster than GNU sort", faster)
                )
            }
            _ => format!(
                "Bar (issue 41): {}; {}; {}{}{}",
                bar("duckdb", ">= 2x DuckDB", 2.0),
                bar("polars", "faster than Polars", faster),
                bar("xan", "faster than xan", faster),
                if em.is_some() { "; emsort completed" } else { "" },
                if em_wrong { "; emsort's output FAILED its check" } else { "" }
            ),
        };
        s.push_str(&format!("\n{bars}\n"));
        if let Some(e) = on.iter().find(is_em) {
            s.push_str(&format!("\n{}\n", keys_bound(rows, e)));
            if let (Some(b), Some(x)) = (e.baseline_s, e.ratio_to_baseline) {
                s.push_str(&format!(
                    "\nBaseline: emsort-baseline {}; emsort at {x:.2}x its time (same run, alternating \
                     which runs first)\n",
                    format_seconds(b)
                ));
            }
        }
        s.push('\n');
    }
    s
}

/// The bound line of a key sort, from emsort's summary row `e`: 2 × the
/// I/O bound, the CPU bound (emsort on tmpfs, with its user and system
/// seconds), which one binds and emsort's time over it.
fn keys_bound(rows: &[SummaryRow], e: &SummaryRow) -> String {
    let b = bound_cells(rows, e);
    let ratio = match e.ratio_to_bound {
        Some(_) => format!("emsort at {} it", b.ratio),
        None if e.median_s.is_finite() => "nothing to compare with".into(),
        None => "emsort failed".into(),
    };
    let binds = match e.bound.as_str() {
        "" => "no bound measured".to_string(),
        name => format!("{name} binds"),
    };
    format!("Bound: {binds}: 2 × I/O bound {}, CPU bound (user + system) {}; {ratio}", b.io, b.cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_sorts_parse_and_name_their_options() {
        assert_eq!(parse_keys("all").unwrap(), KeySort::ALL.to_vec());
        assert_eq!(parse_keys("plain, K3N").unwrap(), vec![KeySort::K3n, KeySort::Plain]);
        assert!(parse_keys("k3n,,u").is_err());
        assert!(parse_keys("-k3,3n").unwrap_err().contains("unknown key sort"));
        assert_eq!(KeySort::K2K3nr.label(), "-t, -k2,2 -k3,3nr");
        assert_eq!(KeySort::K1nU.label(), "-t, -k1,1n -u");
        assert!(KeySort::U.unique() && !KeySort::K3n.unique());
        for k in KeySort::EVERY {
            assert_eq!(k.name().parse::<KeySort>(), Ok(k));
            assert!(DUCKDB_SCRIPT.contains(&format!("\"{}\":", k.name())), "{k:?}");
            let polars = POLARS_SCRIPT.contains(&format!("\"{}\":", k.name()));
            assert_eq!(polars, k.polars_query().is_some(), "{k:?}");
            assert_eq!(k.xan_args().is_some(), k.data_sets().contains(&DataSet::CsvExport), "{k:?}");
            for &d in k.data_sets() {
                assert!(KeySort::defaults(d).iter().all(|x| x.data_sets().contains(&d)));
            }
        }
        assert_eq!(parse_keys(".ts:n,name"), Ok(vec![KeySort::Name, KeySort::TsN]));
        assert_eq!(KeySort::AmountN.label(), "--csv --header -k amount:n");
        assert_eq!(size_arg(256 << 20), "262144K");
        assert_eq!(size_arg(1000), "1000b");
    }

    /// Without a baseline emsort runs alone; with one, each binary runs
    /// first in every other repetition.
    #[test]
    fn the_baseline_alternates_with_emsort() {
        for rep in 1..=4 {
            assert_eq!(emsort_order(rep, false), [Binary::Current]);
        }
        let firsts: Vec<Binary> = (1..=4).map(|rep| emsort_order(rep, true)[0]).collect();
        assert_eq!(firsts, [Binary::Current, Binary::Baseline, Binary::Current, Binary::Baseline]);
        for rep in 1..=4 {
            let mut o = emsort_order(rep, true);
            o.sort_by_key(|b| *b == Binary::Baseline);
            assert_eq!(o, [Binary::Current, Binary::Baseline], "rep {rep}");
        }
        let peers = KeysPeers { baseline: Some("old/emsort".into()), ..KeysPeers::default() };
        assert_eq!(peers.tools(DataSet::Csv), 2);
        let xan = Xan { exe: "xan".into(), version: "xan 0.61.0".into() };
        let peers = KeysPeers { gnu: Some("sort (GNU coreutils) 9.1".into()), xan: Some(xan), ..peers };
        assert_eq!((peers.tools(DataSet::Words), peers.tools(DataSet::CsvExport)), (3, 3));
        assert_eq!(peers.tools(DataSet::Jsonl), 2);
    }

    /// Issue 41's bars: on a CSV export emsort against 2x DuckDB, Polars
    /// and xan (a failed peer meets it); on words, GNU sort's output and time.
    #[test]
    fn the_data_sets_tables_state_issue_41s_bar() {
        use super::super::record::summarise;
        let mk = |tool: &str, data: &str, keys: &str, secs: f64, verified: &str| {
            let mut r = RawRow::new(tool, data, 64 << 20, 10, 2, 1);
            (r.memory, r.seconds, r.experiment, r.keys, r.verified) =
                (Some(64 << 20), secs, "keys".into(), keys.into(), verified.into());
            r
        };
        let k = "--csv --header -k amount:n";
        let w = "LC_ALL=en_US.UTF-8 plain";
        let rows = vec![
            mk("emsort", "csv-export", k, 1.0, "reference"),
            mk("duckdb", "csv-export", k, 2.5, "rows"),
            mk("polars", "csv-export", k, 0.0, FAILED),
            mk("emsort", "words", w, 2.0, "identical"),
            mk("gnu-sort", "words", w, 3.0, "reference"),
        ];
        let t = keys_table(&summarise(&rows));
        assert!(t.contains(&format!("### `{k}` — csv-export N = 64M, M = 64M, 2 thread(s)")), "{t}");
        assert!(
            t.contains(
                "Bar (issue 41): >= 2x DuckDB: met (2.50x); faster than Polars: met (polars failed); \
                 faster than xan: not measured; emsort completed"
            ),
            "{t}"
        );
        assert!(t.contains(&format!("### `{w}` — words N = 64M")), "{t}");
        assert!(
            t.contains(
                "Bar (issue 41): output byte-identical to GNU sort's in the locale: yes; faster than GNU \
                 sort: met (1.50x)"
            ),
            "{t}"
        );
        let mut rows = rows;
        rows[3].verified = MISMATCH.into();
        let t = keys_table(&summarise(&rows));
        assert!(t.contains("in the locale: NO;"), "{t}");
    }

    #[test]
    fn differences_and_lines() {
        let d = tempfile::tempdir().unwrap();
        let (a, b, c) = (d.path().join("a"), d.path().join("b"), d.path().join("c"));
        std::fs::write(&a, b"x\ny\nz\n").unwrap();
        std::fs::write(&b, b"x\ny\nz\n").unwrap();
        std::fs::write(&c, b"x\nY\n").unwrap();
        assert_eq!(first_difference(&a, &b).unwrap(), None);
        assert_eq!(first_difference(&a, &c).unwrap(), Some(2));
        std::fs::write(&c, b"x\ny\n").unwrap();
        assert_eq!(first_difference(&a, &c).unwrap(), Some(4));
        assert_eq!(count_lines(&a).unwrap(), 3);
        assert!(first_difference(&a, &d.path().join("none")).unwrap_err().to_string().contains("none"));
        assert_eq!(one_line("\na\nb\n"), "a");
        assert_eq!(one_line("exit status: 1:\n\nOut of memory\nhint"), "exit status: 1: Out of memory");
    }

    #[test]
    fn the_table_states_the_bar() {
        use super::super::record::summarise;
        let mk = |tool: &str, secs: f64, verified: &str| {
            let mut r = RawRow::new(tool, "csv", 1 << 30, 10, 2, 1);
            (r.memory, r.seconds, r.experiment, r.keys, r.verified) =
                (Some(256 << 20), secs, "keys".into(), "-t, -k3,3n".into(), verified.into());
            r
        };
        let rows = vec![
            mk("emsort", 1.0, "identical"),
            mk("gnu-sort", 5.0, "reference"),
            mk("uutils-sort", 0.5, "identical"),
            mk("duckdb", 0.0, FAILED),
        ];
        let t = keys_table(&summarise(&rows));
        assert!(
            t.contains(
                "Bound: no bound measured: 2 × I/O bound -, CPU bound (user + system) -; nothing to compare with"
            ),
            "{t}"
        );
        let mut rows = rows;
        let mut c = mk("cpu-bound", 0.4, "identical");
        (c.user_s, c.system_s) = (Some(0.5), Some(0.25));
        rows.push(c);
        let t = keys_table(&summarise(&rows));
        assert!(t.contains("| cpu-bound | 400 ms | 400 ms – 400 ms | 0.40x |"), "{t}");
        assert!(
            t.contains(
                "Bound: cpu-bound binds: 2 × I/O bound -, CPU bound (user + system) 400 ms (500 ms + 250 ms); \
                 emsort at 2.50x it"
            ),
            "{t}"
        );
        assert!(!t.contains("Baseline:"), "{t}");
        // The input's I/O bound (its keys empty) is the key sort's too, and
        // binds when 2 × it is above the CPU bound; it has no table of its own.
        let mut io = mk("io-bound", 0.25, "");
        (io.keys, io.memory, io.threads) = (String::new(), None, 1);
        rows.push(io);
        rows.push(mk("emsort-baseline", 1.25, "identical"));
        let t = keys_table(&summarise(&rows));
        assert!(
            t.contains(
                "Bound: io-bound binds: 2 × I/O bound 500 ms, CPU bound (user + system) 400 ms (500 ms + \
                 250 ms); emsort at 2.00x it"
            ),
            "{t}"
        );
        assert!(!t.contains("| io-bound |") && t.matches("### ").count() == 1, "{t}");
        assert!(t.contains("| emsort-baseline | 1.25 s | 1.25 s – 1.25 s | 1.25x |"), "{t}");
        assert!(t.contains("Baseline: emsort-baseline 1.25 s; emsort at 0.80x its time"), "{t}");
        assert!(t.contains("### `-t, -k3,3n` — csv N = 1G, M = 256M, 2 thread(s)"), "{t}");
        assert!(t.contains("| gnu-sort | 5 s | 5 s – 5 s | 5.00x |"), "{t}");
        assert!(t.contains(">= 4x GNU sort: met (5.00x)"), "{t}");
        assert!(t.contains("faster than uutils sort: NOT MET (0.50x)"), "{t}");
        assert!(t.contains("faster than DuckDB: met (duckdb failed)"), "{t}");
        assert!(t.contains("| duckdb | - | - – - | - | - | 1 | 1 FAILED |"), "{t}");
        assert_eq!(keys_table(&[]), "");
    }
}
