//! The keys experiment of a sort campaign: sorts of CSV lines by key,
//! emsort beside GNU sort, uutils sort and DuckDB (issue 17's performance
//! bar).
//!
//! A grid row with the pseudo-format `csv` (and a `keys` list, [`KeySort`])
//! generates, for each size, about that many bytes of typed CSV lines
//! `id,category,amount,date` ([`emsort_sort::gen::Text::Csv`], seed 42),
//! and runs every key sort at each (M, threads) of the row, `reps` times,
//! each tool on a cold cache:
//!
//! | tool | command |
//! |---|---|
//! | `emsort` | `emsort sort KEYS -S M --parallel T -T TMP --stats F --quiet -o OUT IN` (its default fan-in, policy and streams, as a user runs it) |
//! | `gnu-sort` | `LC_ALL=C sort KEYS -S M --parallel=T -T TMP -o OUT IN` |
//! | `uutils-sort` | `coreutils sort KEYS -S M --parallel T -T TMP -o OUT IN` (uutils coreutils' multi-call binary, [`UutilsSort`]) |
//! | `duckdb` | `python3 duckdb_sort.py IN OUT M T TMP NAME`: `SET memory_limit`, `threads`, `temp_directory`, then `COPY (SELECT … FROM read_csv(IN, …) ORDER BY …) TO OUT` ([`DUCKDB_SCRIPT`], [`DuckDb`]) |
//! | `emsort-baseline` | with `--baseline EXE` ([`KeysPeers::baseline`]): `EXE sort …`, the same command as `emsort`'s with an earlier emsort binary; the two alternate ([`emsort_order`]): `emsort` first in odd repetitions, the baseline first in even ones, so that neither always runs on the heels of the other and the A/B comparison is of the same run |
//! | `cpu-bound` | `emsort sort KEYS -S M --parallel T --io buffered -T SHM/tmp --stats F --quiet -o SHM/out SHM/IN`: emsort with its input, runs and output on tmpfs, the page cache not emptied ([`super::cpu_bound`]) |
//! | `io-bound` | once per input and repetition, after the repetition's key sorts: read the input once and write as many bytes once with O_DIRECT ([`super::fio::io_bound`], the same run as the grid's), its `keys` empty |
//!
//! The summary sets each tool's median beside 2 × the I/O bound and the
//! CPU bound at the same keys, M and threads, names the larger as the
//! bound that binds (`bound`, `ratio_to_bound`), and gives emsort's time
//! over the baseline's (`ratio_to_baseline`); [`keys_table`] says the same
//! per key sort, and the plot `keys_csv_{N}_M{M}_t{T}.svg` draws it
//! ([`super::plots_from_csv`]).
//!
//! `-S` is given as `NK` (KiB) whenever M is a whole number of KiB, which
//! GNU sort, uutils sort and emsort read alike. GNU sort's output is the
//! reference (emsort's when GNU sort is missing or failed, else the
//! baseline's); emsort's and uutils sort's outputs are compared with it
//! byte for byte; DuckDB, which breaks ties and prints numbers its own
//! way, is checked by its row count only (the reference's line count);
//! the CPU bound's and the baseline's outputs are compared byte for byte
//! like emsort's. A tool that fails (DuckDB out of memory, emsort refusing
//! an option) or whose output differs is a row with `verified` = `FAILED`
//! or `MISMATCH` and the message in `error`, listed in `machine.json`
//! (`keys_problems`) and the warnings; the campaign goes on. A peer that
//! is not installed is left out with a note.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use emsort_io::cache::CacheMethod;
use emsort_io::{format_size, ErrorKind, NoProgress, Progress, StreamKind};
use emsort_sort::gen::{generate, GenSpec};
use emsort_sort::simd::Level;

use super::cpu_bound::{CpuBoundDir, CPU_BOUND_CACHE};
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

/// One key sort on one CSV input at one (M, threads).
#[derive(Debug, Clone, PartialEq)]
pub struct KeysPoint {
    /// Input size N in bytes (about: whole CSV lines).
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
}

impl KeysPoint {
    /// `csv N=1G M=256M t=2 -t, -k3,3n`.
    pub fn label(&self) -> String {
        format!(
            "csv N={} M={} t={} {}",
            format_size(self.bytes),
            format_size(self.memory),
            self.threads,
            self.keys.label()
        )
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

/// DuckDB through Python (`python3 -c 'import duckdb'`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuckDb {
    /// The Python interpreter.
    pub python: PathBuf,
    /// `duckdb.__version__`.
    pub version: String,
}

impl DuckDb {
    /// The interpreter `$EMSORT_BENCH_PYTHON` (default `python3`) when it
    /// imports `duckdb`; `Err` says why not.
    pub fn find() -> std::result::Result<DuckDb, String> {
        let python =
            PathBuf::from(std::env::var_os("EMSORT_BENCH_PYTHON").unwrap_or_else(|| "python3".into()));
        let o = Command::new(&python)
            .args(["-c", "import duckdb; print(duckdb.__version__)"])
            .output()
            .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
        if !o.status.success() {
            return Err(format!(
                "not installed for {} (bench/setup.sh installs it: pip install duckdb): {}",
                python.display(),
                tail(&String::from_utf8_lossy(&o.stderr)).lines().last().unwrap_or("")
            ));
        }
        let version = String::from_utf8_lossy(&o.stdout).trim().to_string();
        Ok(DuckDb { python, version })
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
    pub duckdb: Option<(DuckDb, PathBuf)>,
    /// Whether the CPU bound runs (emsort on tmpfs, [`super::cpu_bound`]).
    pub cpu_bound: bool,
    /// An earlier emsort binary run beside emsort (tool `emsort-baseline`).
    pub baseline: Option<PathBuf>,
}

impl KeysPeers {
    /// Runs per repetition of a key point: emsort and each peer (not the
    /// I/O bound, which runs once per input and repetition).
    pub fn tools(&self) -> u64 {
        1 + u64::from(self.gnu.is_some())
            + u64::from(self.baseline.is_some())
            + u64::from(self.cpu_bound)
            + u64::from(self.uutils.is_some())
            + u64::from(self.duckdb.is_some())
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

/// Lines (newlines) in a file.
pub fn count_lines(path: &Path) -> Result<u64> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
    let mut buf = vec![0u8; 4 << 20];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf).map_err(|e| Error::io("read", path, e))?;
        if k == 0 {
            return Ok(n);
        }
        n += buf[..k].iter().filter(|&&b| b == b'\n').count() as u64;
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

/// Generates the CSV input of `bytes` and runs its points (see the module
/// docs); the input is left for the caller to remove.
pub(crate) fn run_keys_data_set(
    ctx: &mut KeysCtx<'_>,
    bytes: u64,
    points: &[&KeysPoint],
    input: &Path,
) -> Result<()> {
    ctx.progress.message(&format!("generating csv N={}", format_size(bytes)));
    let stats = generate(&GenSpec::csv_bytes(bytes), input, &NoProgress, ctx.cancel)?;
    let lines = stats.items;
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
            run_point(ctx, p, rep, input, cpu_input.as_deref(), lines)?;
        }
        // The I/O bound of the input, once per repetition, on a cold cache
        // like every other run.
        if ctx.cancel.load(Ordering::Relaxed) {
            return Err(interrupted(ctx.work));
        }
        ctx.progress.message(&format!("I/O bound csv N={} rep {rep}", format_size(bytes)));
        let how = (ctx.cache, ctx.io_bound, ctx.cancel);
        let res = super::fio::io_bound_run(how, input, &peer_out, "csv", (bytes, lines, rep));
        let _ = std::fs::remove_file(&peer_out);
        let mut row = res?;
        row.experiment = "keys".into();
        write_row(ctx, &row)?;
    }
    Ok(())
}

/// Every tool on one key point and repetition (the CPU bound on
/// `cpu_input`, the input's copy on tmpfs, when it runs).
fn run_point(
    ctx: &mut KeysCtx<'_>,
    p: &KeysPoint,
    rep: u32,
    input: &Path,
    cpu_input: Option<&Path>,
    lines: u64,
) -> Result<()> {
    let (em_out, reference, peer_out) =
        (ctx.work.join("emsort.out"), ctx.work.join("reference.out"), ctx.work.join("peer.out"));
    let base_out = ctx.work.join("baseline.out");
    for f in [&em_out, &reference, &peer_out, &base_out] {
        let _ = std::fs::remove_file(f);
    }
    let (peers, tmp, exe, cache) = (ctx.peers, ctx.tmp, ctx.exe, ctx.cache.name());
    let row = |tool: &str| {
        let mut r = RawRow::new(tool, "csv", p.bytes, lines, p.threads, rep);
        r.memory = Some(p.memory);
        r.experiment = "keys".into();
        r.keys = p.keys.label();
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

    // GNU sort: the reference.
    let mut gnu = None;
    if let Some(version) = &peers.gnu {
        ctx.progress.message(&format!("GNU sort {label}"));
        let mut g = row("gnu-sort");
        g.note = version.clone();
        let mut cmd = Command::new("sort");
        cmd.env("LC_ALL", "C")
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
    // The reference: GNU sort's output, else emsort's, else the baseline's.
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

    // The CPU bound: emsort with the same keys, everything on tmpfs.
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

    // uutils sort.
    if let Some(u) = &peers.uutils {
        ctx.progress.message(&format!("uutils sort {label}"));
        let mut r = row("uutils-sort");
        r.note = u.version.clone();
        let mut cmd = Command::new(&u.exe);
        cmd.env("LC_ALL", "C")
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

    // DuckDB: its row count.
    if let Some((d, script)) = &peers.duckdb {
        ctx.progress.message(&format!("DuckDB {label}"));
        let mut r = row("duckdb");
        r.note = format!("DuckDB {}", d.version);
        let dtmp = tmp.join("duckdb");
        std::fs::create_dir_all(&dtmp).map_err(|e| Error::io("create directory", &dtmp, e))?;
        let mut cmd = Command::new(&d.python);
        cmd.arg(script)
            .arg(input)
            .arg(&peer_out)
            .arg(p.memory.to_string())
            .arg(p.threads.to_string())
            .arg(&dtmp)
            .arg(p.keys.name());
        let what = format!("DuckDB ({label})");
        let done = run_tool(ctx, cmd, &what, Some(input), &peer_out, &mut r)?;
        let _ = std::fs::remove_dir_all(&dtmp);
        if done {
            let rows =
                r.note.split("rows=").nth(1).and_then(|x| x.split_whitespace().next()?.parse::<u64>().ok());
            let expected = if reference_tool.is_some() {
                Some(count_lines(&reference)?)
            } else if !p.keys.unique() {
                Some(lines)
            } else {
                None
            };
            match (rows, expected) {
                (Some(n), Some(e)) if n == e => r.verified = "rows".into(),
                (Some(n), Some(e)) => {
                    r.verified = MISMATCH.into();
                    r.error = format!("{n} rows, the reference has {e} lines");
                    ctx.problems.push(format!("MISMATCH: {what}: {}", r.error));
                }
                (Some(_), None) => r.verified = "unchecked".into(),
                (None, _) => {
                    r.verified = FAILED.into();
                    r.error = "no 'duckdb_sort: … rows=N' line in its output".into();
                    ctx.problems.push(format!("FAILED: {what}: {}", r.error));
                }
            }
        }
        let _ = std::fs::remove_file(&peer_out);
        write_row(ctx, &r)?;
    }
    for f in [&em_out, &reference, &peer_out, &base_out] {
        let _ = std::fs::remove_file(f);
    }
    Ok(())
}

/// `emsort sort KEYS -S M --parallel T [--io IO] -T TMP --stats STATS
/// --quiet -o OUT INPUT`: emsort's run of a point, on the disk (`io`:
/// its default streams) or on tmpfs for the CPU bound (`buffered`), with
/// `EMSORT_SIMD` set when a level is forced.
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
            if let Some(line) = c.stdout.lines().find(|l| l.starts_with("duckdb_sort:")) {
                row.note = format!("{}; {}", row.note, line.trim_start_matches("duckdb_sort:").trim());
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
/// RSS, runs and check, then the bar of issue 17 (at least 4× faster than
/// GNU sort, faster than uutils sort and than DuckDB), the bounds (2 × the
/// I/O bound, the CPU bound, which one binds and emsort's time over it, as
/// the grid's [`bounds_table`](super::bounds_table) says them) and, with a
/// baseline, emsort's time over the baseline's. Empty without keys rows.
pub fn keys_table(rows: &[SummaryRow]) -> String {
    // The I/O bound is per input, not per key sort: it shows in the bound line.
    let keys: Vec<&SummaryRow> =
        rows.iter().filter(|r| r.experiment == "keys" && r.tool != "io-bound").collect();
    let mut groups: Vec<(u64, Option<u64>, usize, &str)> = Vec::new();
    for r in &keys {
        let g = (r.bytes, r.memory, r.threads, r.keys.as_str());
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let mut s = String::new();
    for (bytes, memory, threads, k) in groups {
        let on: Vec<&SummaryRow> = keys
            .iter()
            .copied()
            .filter(|r| r.bytes == bytes && r.memory == memory && r.threads == threads && r.keys == k)
            .collect();
        // emsort as a user runs it: no --io (its rows with a kind say it in `io`).
        let is_em = |r: &&&SummaryRow| r.tool == "emsort" && r.io.is_empty();
        let em = on.iter().find(is_em).map(|r| r.median_s).filter(|x| x.is_finite());
        s.push_str(&format!(
            "### `{k}` — csv N = {}, M = {}, {threads} thread(s)\n\n\
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
        s.push_str(&format!(
            "\nBar: {}; {}; {}{}\n",
            bar("gnu-sort", ">= 4x GNU sort", 4.0),
            bar("uutils-sort", "faster than uutils sort", 1.0 + f64::EPSILON),
            bar("duckdb", "faster than DuckDB", 1.0 + f64::EPSILON),
            if em_wrong { "; emsort's output DIFFERS from GNU sort's" } else { "" }
        ));
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
        }
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
        assert_eq!(peers.tools(), 2);
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
