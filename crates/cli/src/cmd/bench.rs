//! `emsort bench …`: experiment campaigns. `streams` is experiment 1,
//! `sort` experiment 2, `srm` experiment 3 (in `bench_srm`), `readers`
//! experiment 4 (in `bench_readers`), `ray` the distributed sort's reports
//! (in `bench_ray`).
//!
//! The measuring, the CSV files and the plots are in `emsort-bench`; this
//! module turns flags into a [`Campaign`], draws the progress bar and
//! prints the final table.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use emsort_bench::streams::{
    format_table, headline, parse_blocks, parse_counts, parse_kinds, parse_ks, parse_ops, plots_from_csv,
    reading, summary_from_csv, Campaign, Outcome, Sweep,
};
use emsort_bench::CampaignBuilder;
use emsort_io::cache::CacheMethod;

use super::results::{command_line, fresh_dir};
use crate::interrupt;
use crate::progress::Bar;

/// Experiment campaigns: raw CSV first, then summary tables and plots made from it.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Experiment 1: read and write k streams of N elements with every stream kind.
    Streams(StreamsArgs),
    /// Experiment 2: emsort's external sort over a grid of N, M, d, policy, I/O kind and
    /// threads, beside the cost model, an I/O lower bound, GNU sort, STXXL and an in-memory sort.
    Sort(SortBenchArgs),
    /// Experiment 4: the readers (stream, mmap, pread, uring, adaptive) against block size,
    /// queue depth (beside fio), mmap page-in, request and file size, memory and threads.
    Readers(super::bench_readers::ReadersArgs),
    /// Experiment 3: SRM against DSM on D disks (Barve & Vitter's tables): U, passes, merge
    /// order, merge time, streaming rate and ν over N, M and D, with and without emulated disks.
    Srm(super::bench_srm::SrmArgs),
    /// The distributed sort on Ray (run by bench/ray/bench_ray.py, beside single-node emsort
    /// and the I/O bound): its summary, plot and README from its raw.csv, with Exoshuffle's
    /// published results beside it.
    Ray(super::bench_ray::RayArgs),
    /// Runs one job of the readers campaign's memory experiment (internal).
    #[command(hide = true)]
    ReadersWorker(super::bench_readers::WorkerArgs),
}

const STREAMS_AFTER_HELP: &str = "\
What is measured:
  write  k files k{k}_n{N}_{i}.bin are created and N u32 values written to each,
         round-robin (element j goes to stream j mod k), from a seeded generator;
         streams sync on close, so the time (first create to last close)
         includes putting the data on the device.
  read   the k files are read round-robin until all are exhausted; the sum of
         the values is checked against what was written (a mismatch is an error).
  Before every run the page cache is emptied (--cache). Each stream counts its
  own system calls; those are set beside the INFO-H-417 reports' cost formula:

Predicted I/Os (B = the block size the stream really used, W = mmap window):
  syscall                  k*N
  stdio                    ceil(k*N*4 / BUFSIZ)   (libc's own FILE buffer)
  buffered, direct, uring  ceil(k*N*4 / B)
  mmap                     2*ceil(k*N*4 / W)      (one mmap + one munmap per window)

Lists: N accepts 1e6 or 1000000; k accepts 1,2,4 or 1..8; B accepts sizes with
K/M/G suffixes (4,4K,64K,1M), a range of powers of two (4..64M), and 'file' for
the whole file (N*4 bytes). syscall and stdio ignore B.

Parameter file (--params FILE.csv), a header line then one row per sweep:
  kind;ops;N list;k list;B range;reps
  buffered;read,write;1e3,1e6,1e8;1,2,4;4..64M;3
  syscall;read,write;1e3,1e4,1e5;1,2,4;-;3
'#' starts a comment. A kind may have several rows.

Files written into OUTDIR:
  raw.csv       a row per run (kind, op, k, n, b_requested, b_effective, rep,
                seconds, bytes, syscalls_data, syscalls_total, predicted_ios,
                cache, fallback), flushed as each run finishes
  summary.csv   a row per point: min/median/max seconds, median MiB/s,
                ns per element, calls counted, I/Os predicted
  machine.json  CPU, cores, memory, kernel, file system, read_ahead_kb,
                version, command line, date, cache method
  README.md     what the files and columns are, the results, and the INFO-H-417
                reports' conclusions beside them (holds, differs, within the
                noise when the runs' ranges overlap, or one run: no verdict
                from a single repetition)
  plots/*.svg   time vs N per k, time vs k per N, time vs B per N, all kinds
                on one chart (medians with the runs' min - max), counted vs
                predicted calls (log-log)
Plots are made from raw.csv; --plot-only DIR redraws them (and summary.csv).

Examples:
  emsort bench streams --quick
  emsort bench streams --kinds buffered,mmap -k 1 -n 1e6,1e7 -B 4..64M --reps 3
  emsort bench streams --params campaign.csv -o bench/results/2026-01-01-streams
  emsort bench streams --plot-only emsort-results/2026-01-01-streams";

/// Read and write k streams of N elements with every stream kind, on a cold
/// cache, and write raw CSV, a summary, machine facts and plots.
#[derive(Args)]
#[command(after_long_help = STREAMS_AFTER_HELP)]
pub struct StreamsArgs {
    /// Stream kinds, comma-separated: syscall, stdio, buffered, mmap, direct, uring, or all.
    #[arg(long, value_name = "LIST", default_value = "all")]
    kinds: String,
    /// Operations: read, write or read,write.
    #[arg(long, value_name = "LIST", default_value = "read,write")]
    ops: String,
    /// Numbers of streams open at once (e.g. 1,2,4 or 1..30).
    #[arg(short = 'k', value_name = "LIST", default_value = "1,2,4")]
    k: String,
    /// Elements (u32) per stream (e.g. 1e3,1e6).
    #[arg(short = 'n', value_name = "LIST", default_value = "1e3,1e4,1e5,1e6")]
    n: String,
    /// Block sizes B: a list (4,4K,64K,1M), a power-of-two range (4..64M) and/or 'file'.
    #[arg(short = 'B', value_name = "LIST", default_value = "4K,64K,1M")]
    b: String,
    /// Repetitions of each point.
    #[arg(long, value_name = "R", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// How to empty the page cache before each run: drop (whole machine, root), fadvise
    /// (evict the files), none (warm). Default: drop when this process can write
    /// /proc/sys/vm/drop_caches, else fadvise.
    #[arg(long, value_name = "METHOD", value_parser = clap::value_parser!(CacheMethod))]
    cache: Option<CacheMethod>,
    /// Take the whole campaign from a parameter file (see below); replaces the list flags.
    #[arg(long, value_name = "FILE.csv", conflicts_with_all = ["kinds", "ops", "k", "n", "b", "reps", "quick"])]
    params: Option<PathBuf>,
    /// A small campaign (every kind, read and write, N up to 1e6, k = 1 and 4) that runs
    /// in well under a minute.
    #[arg(long, conflicts_with_all = ["kinds", "ops", "k", "n", "b", "reps"])]
    quick: bool,
    /// Directory for the data files. Default: a temporary directory inside OUTDIR (so on
    /// its file system), removed at the end.
    #[arg(long = "dir", value_name = "WORKDIR")]
    work_dir: Option<PathBuf>,
    /// Output directory. Default: emsort-results/YYYY-MM-DD-streams in the current
    /// directory (-2, -3 … appended if that one already holds a campaign).
    #[arg(short = 'o', long = "output", value_name = "OUTDIR")]
    out_dir: Option<PathBuf>,
    /// Keep the data files at the end (in WORKDIR, or the temporary directory).
    #[arg(long)]
    keep_files: bool,
    /// Measure nothing: redraw summary.csv and the plots of an earlier campaign from its raw.csv.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["params", "quick", "work_dir", "out_dir", "keep_files", "cache"])]
    plot_only: Option<PathBuf>,
    /// No progress bar and no warnings; the final table is still printed.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(cmd: BenchCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        BenchCommand::Streams(a) => streams(a),
        BenchCommand::Sort(a) => sort_bench(a),
        BenchCommand::Readers(a) => super::bench_readers::run(a),
        BenchCommand::Srm(a) => super::bench_srm::run(a),
        BenchCommand::Ray(a) => super::bench_ray::run(a),
        BenchCommand::ReadersWorker(a) => super::bench_readers::worker(a),
    }
}

fn streams(a: StreamsArgs) -> anyhow::Result<ExitCode> {
    if let Some(dir) = &a.plot_only {
        return plot_only(dir);
    }
    let campaign = if a.quick {
        Campaign::quick()
    } else if let Some(p) = &a.params {
        Campaign::from_params_file(p)?
    } else {
        Campaign::new(&sweeps_from_flags(&a)?)?
    };
    let out_dir = match &a.out_dir {
        Some(d) => d.clone(),
        None => fresh_dir(&Campaign::default_out_dir()),
    };
    let mut campaign = campaign
        .cache(a.cache.unwrap_or_else(CacheMethod::best_available))
        .out_dir(&out_dir)
        .keep_files(a.keep_files)
        .command_line(command_line())
        .version(env!("CARGO_PKG_VERSION"));
    if let Some(w) = &a.work_dir {
        campaign = campaign.work_dir(w);
    }
    let bar = Bar::new(a.quiet);
    let outcome = campaign.run(&bar, interrupt::flag())?;
    if !a.quiet {
        for w in &outcome.warnings {
            eprintln!("emsort: warning: {w}");
        }
    }
    print!("{}", report(&outcome, campaign.cache_method(), true));
    Ok(ExitCode::SUCCESS)
}

/// One sweep per kind from the list flags.
fn sweeps_from_flags(a: &StreamsArgs) -> anyhow::Result<Vec<Sweep>> {
    let kinds = parse_kinds(&a.kinds).map_err(anyhow::Error::msg).context("--kinds")?;
    let ops = parse_ops(&a.ops).map_err(anyhow::Error::msg).context("--ops")?;
    let n = parse_counts(&a.n).map_err(anyhow::Error::msg).context("-n")?;
    let k = parse_ks(&a.k).map_err(anyhow::Error::msg).context("-k")?;
    let blocks = parse_blocks(&a.b).map_err(anyhow::Error::msg).context("-B")?;
    if blocks.is_empty() && kinds.iter().any(|k| k.uses_block_size()) {
        bail!("-B: give at least one block size for {}", a.kinds);
    }
    Ok(kinds
        .into_iter()
        .map(|kind| Sweep {
            kind,
            ops: ops.clone(),
            n: n.clone(),
            k: k.clone(),
            blocks: blocks.clone(),
            reps: a.reps,
        })
        .collect())
}

/// The text printed at the end of a campaign: the headline table and, with
/// `show_paths`, where the files went.
pub fn report(o: &Outcome, cache: CacheMethod, show_paths: bool) -> String {
    let mut s = format!(
        "\nStream campaign: {} runs in {:.1} s, page cache emptied with '{}' before each run.\n\
         Per kind and op, the largest N at the smallest k (median of the repetitions):\n\n",
        o.runs, o.seconds, cache
    );
    s.push_str(&format_table(&headline(&o.summary)));
    if !show_paths {
        return s;
    }
    s.push_str(&format!(
        "\nResults in {}: raw.csv, summary.csv, machine.json, README.md, plots/ ({} SVG)\n",
        o.out_dir.display(),
        o.plots.len()
    ));
    if o.files_kept {
        s.push_str(&format!("Data files kept in {}\n", o.work_dir.display()));
    }
    s
}

/// `--plot-only DIR`: summary and plots again from `DIR/raw.csv`.
fn plot_only(dir: &Path) -> anyhow::Result<ExitCode> {
    let summary = summary_from_csv(dir)?;
    let plots = plots_from_csv(dir)?;
    print!("{}", format_table(&headline(&summary)));
    let text = reading(&summary);
    if !text.is_empty() {
        println!("\n{text}");
    }
    let claims = emsort_bench::streams::claims(&summary);
    if !claims.is_empty() {
        print!("\nThe published conclusions:\n{}", emsort_bench::claims::lines(&claims));
    }
    println!(
        "\nRewrote {} and {} plots in {}",
        dir.join("summary.csv").display(),
        plots.len(),
        dir.join("plots").display()
    );
    Ok(ExitCode::SUCCESS)
}

const SORT_AFTER_HELP: &str = "\
The grid: every combination of --formats x --sizes x -M x -d x --policies x --io x
--threads is a point, run --reps times. Each input (format, N) is generated once
(seeded, emsort's generator) in WORKDIR; the page cache is emptied (--cache) before
every run. emsort runs as a child process (this binary's `emsort sort ... --stats
FILE -q`), so its time, peak RSS, context switches and page faults are the sort's
alone. Every emsort output is verified (sorted, same multiset as the input) and a
failed check stops the campaign.

Peers, on the same input in the same run (once per repetition):
  io-bound   read the input once and write as many bytes once with O_DIRECT streams
             of 8 MiB blocks; a sort that reads and writes its data twice cannot beat
             2 x this, the I/O lower bound (summary: io_bound_s, ratio_to_io_bound)
  in-memory  read the whole file, par_sort_unstable on all cores, write: the floor,
             where 2-3 x N fits in half the memory available
  gnu-sort   for lines: LC_ALL=C sort -S M --parallel=P -T TMP -o OUT at every (M, P)
             of the grid; its output must equal emsort's byte for byte
  stxxl      for u32, when Debian's libstxxl-dev and g++ are installed (bench/setup.sh):
             a small driver (bench/stxxl/stxxl_sort.cpp: stxxl::sorter, STXXL's
             pipelined run formation and merge) compiled with g++ -O3 at the start,
             run at every (M, P) of the grid with M bytes, P OpenMP threads and its
             O_DIRECT scratch file in the same temp directory; its output must equal
             emsort's byte for byte. A failed build or run is recorded in
             machine.json (stxxl_driver, stxxl_errors) and the campaign goes on;
             --no-stxxl leaves it out (summary: stxxl_s, speedup_vs_stxxl)
  cpu-bound  the other limit of the machine: the same `emsort sort ... --stats FILE -q`
             with the input copied into a directory on tmpfs (/dev/shm, or
             --cpu-bound-dir DIR), -T and the output there, --io buffered (tmpfs
             refuses O_DIRECT), the page cache not emptied; at every (M, P) of the grid
             with emsort's default d, policy and B for M (and per key sort in the keys
             experiment); output verified. Skipped with a note in machine.json
             (cpu_bound) when /dev/shm is not tmpfs or lacks room for 4 x N; a
             --cpu-bound-dir that cannot serve is an error; --no-cpu-bound leaves it
             out. tmpfs is no pure CPU bound: its page allocations and copies are
             system time (user_s, system_s columns). Summary: cpu_bound_s,
             ratio_to_cpu_bound, and bound = the larger of 2 x io-bound and cpu-bound,
             the one a sort should approach, with ratio_to_bound; README.md's table
             says which one binds per point
Every tool's time includes an fsync of its output.

Keys experiment (--formats csv, --keys LIST): about N bytes of typed CSV lines
id,category,amount,date (emsort gen --format csv, seed 42), sorted at each M and
thread count by each key sort, every tool on a cold cache:
  k3n = -t, -k3,3n   k2-k3nr = -t, -k2,2 -k3,3nr   u = -u   k1n-u = -t, -k1,1n -u
  (plain = no option; all = the first four)
Issue 41's data sets, named in the format list beside csv (emsort gen --format DATA):
  csv-export   a CSV export with a header and quoted fields: amount:n = --csv --header
               -k amount:n, name = --csv --header -k name; peers DuckDB, Polars, xan
  jsonl        JSON events: .ts:n = --jsonl -k .ts:n, .amount:n; peers DuckDB, Polars
  words        words with accented letters, plain; peer GNU sort (the reference)
  LC_ALL=LOCALE in the keys list: every tool of the row sorts in that locale (C
  otherwise). Polars (bench/polars/polars_sort.py, POLARS_MAX_THREADS = T, streaming
  scan_csv/scan_ndjson ... sink_*) has no memory limit: its peak RSS is in the row;
  xan runs its external sort, xan sort -e -m M --tmp-dir TMP -p. On csv-export and jsonl emsort's output is the reference,
  checked alone (emsort sort -c in order, the input's record count); the peers by
  the records of their output.
  emsort       emsort sort KEYS -S M --parallel T -T TMP -o OUT (its default fan-in,
               policy and streams; -d and --policies apply to the other formats; when
               the io list names `default` beside kinds, emsort also runs with each
               --io KIND, a row per kind with the kind in its io column)
  gnu-sort     LC_ALL=C sort KEYS -S M --parallel=T -T TMP -o OUT: the reference
  uutils-sort  uutils coreutils' `coreutils sort KEYS ...` (bench/setup.sh installs it
               with cargo install coreutils --no-default-features --features sort)
  duckdb       DuckDB (pip install duckdb; Python from $EMSORT_BENCH_PYTHON, default
               python3) through bench/duckdb/duckdb_sort.py: SET memory_limit = M,
               threads = T, temp_directory; COPY (SELECT ... FROM read_csv(IN) ORDER BY
               amount | category, amount DESC | DISTINCT line | DISTINCT ON (id) ...)
               TO OUT
  cpu-bound    emsort sort KEYS -S M --parallel T --io buffered with input, -T and
               output on tmpfs (see above)
  emsort-baseline  with --baseline EXE: EXE sort KEYS ..., the same command as
               emsort's; the two alternate, emsort first in odd repetitions and the
               baseline first in even ones (summary: baseline_s, ratio_to_baseline =
               emsort's median / the baseline's)
  io-bound     once per csv input and repetition, after its key sorts: the same
               O_DIRECT read + write as the grid's (keys column empty)
emsort's, the CPU bound's, the baseline's and uutils sort's outputs are compared byte
for byte with GNU sort's; DuckDB's (its ties and number format differ) by its row
count. A failed
run (DuckDB out of memory, say) or a different output is a row with verified =
FAILED or MISMATCH and the message in `error`, listed in machine.json
(keys_problems) and printed at the end; the campaign goes on. A peer that is not
installed is left out with a warning (--no-uutils, --no-duckdb leave them out).
README.md (and the terminal) gets a table per key sort: each tool's median, its time
over emsort's, issue 17's bar (at least 4x faster than GNU sort, faster than uutils
sort and than DuckDB), 2 x the I/O bound and the CPU bound with the one that binds
(the larger) and emsort's time over it (summary: io_bound_s, ratio_to_io_bound,
bound, ratio_to_bound), and emsort's time over the baseline's. The chart
plots/keys_csv_{N}_M{M}_t{T}.svg draws, per key sort, each tool's median with a bar
from its fastest to its slowest repetition, and the CPU bound and 2 x the I/O bound
as marks.

Cost model: predicted_blocks = ceil(2 * N * passes / B) block transfers, with passes
from the plan's merge schedule (run formation counts as the first pass) and B the
plan's block size; blocks_moved = ceil((bytes_read + bytes_written) / B) is what
emsort really moved.

Threads (a course report found a merge sort forking a process per partition lose on
these counts): with --threads 1,all the raw CSV shows voluntary and involuntary
context switches, CPU migrations (perf, where allowed) and page faults beside the time,
for emsort and GNU sort; plots/threads_*.svg draws them.

Parameter file (--params FILE.csv), a header line then one row per grid:
  format;sizes;M list;d list;policies;io kinds;reps;threads;keys
  u32,lines;256M,1G;64M,256M;2,8,32;optimal;buffered,direct;3;1,all
  u32;1G;256M;default;default;default,direct,uring-direct;3;2
  csv;1G;256M;8;optimal;direct;5;2;all
  csv-export;1G;256M,64M;default;default;default;3;2;amount:n,name
  words;1G;256M;default;default;default;3;2;plain,LC_ALL=en_US.UTF-8
'#' starts a comment; the threads field may be left out (all cores), the keys
field too (each data set's defaults: all four key sorts on csv).

Files written into OUTDIR:
  raw.csv       a row per run of every tool: tool, format, bytes, items, memory,
                fan_in, block_size, policy, io, threads, rep, seconds,
                run_formation_s, merge_s, runs, passes, merge_order, bytes_read,
                bytes_written, predicted_passes, predicted_blocks, blocks_moved,
                peak_rss_bytes, rss_before_bytes, voluntary_cs, involuntary_cs, minor_faults,
                major_faults, cpu_migrations, cache, note, experiment, keys,
                verified, error, user_s, system_s (flushed per run)
  summary.csv   a row per point: min/median/max seconds, median phases and counts,
                ratio to the I/O bound and to the CPU bound, which one binds,
                speedup over GNU sort and over STXXL (same M and threads), ratio to
                the in-memory sort and to the baseline (--baseline)
  machine.json  CPU, cores, memory, kernel, file system, command line, date, cache
                method, GNU sort's version, STXXL's and the C++ compiler's versions,
                how the STXXL driver was built (or why not), failed STXXL runs,
                where the CPU bound ran or why not (cpu_bound)
  README.md     the columns, the tools, the cost model, which bound binds and the
                plots drawn
  plots/*.svg   time vs M per d, time vs d per M, time per phase vs M, emsort vs
                peers per N, context switches / migrations / faults vs threads;
                keys experiment: time per key sort and tool, with the bounds
Plots are made from raw.csv; --plot-only DIR redraws them (and summary.csv).

Machine-profile matrix (--profiles LIST): the whole grid, its peers and both bounds on
each profile, in one run, each into OUTDIR/PROFILE/ (its own raw.csv, summary.csv,
machine.json, README.md, plots/):
  root        WORKDIR's file system as it is
  xfs, btrfs  a sparse image file in WORKDIR, mkfs.xfs / mkfs.btrfs, loop-mounted
              (direct I/O); skipped with the reason without root, loop devices or
              the mkfs tool (bench/setup.sh installs xfsprogs and btrfs-progs)
  tmpfs       a tmpfs mount of 6 x N plus fio's probe (memory: the CPU bound's ground)
  simd-LEVEL  root with EMSORT_SIMD=LEVEL on every emsort run and the CPU bound, for
              each level below the CPU's ('simd' = all of them); only the number
              formats' points (records, lines and csv take the same code at every
              level)
Every mount, loop device and image is taken down at the end, also on an error or
Ctrl-C. Per profile, fio (when installed; --no-fio leaves it out) measures the
device in its directory (1 MiB O_DIRECT requests: latency at queue depth 1,
bandwidth at 32; machine.json's `profile`, profiles.json) and the I/O bound: a
sequential read of the input and a write of as many bytes, 1 MiB blocks, queue
depth 32, fio's own I/O time (without fio: the O_DIRECT copy above). In the grid,
'default' in the d, policies or io field runs emsort with no such flag (no
--fan-in/--block-size, --policy, --io: as a user runs it; io column `default`).
OUTDIR gets raw.csv and summary.csv of every profile with a first column
`profile`, profiles.json, plots/matrix_PROFILE.svg (per input each tool's median
with min - max, the CPU bound and 2 x the I/O bound) and README.md with a table per
profile of issue 38's bars, each holding, missing or not measured (and why):
default <= 1.3 x max(2 x I/O bound, CPU bound) on u32, records and lines; GNU sort
>= 4 x default on lines; on csv -t, -k3,3n GNU sort >= 5 x and DuckDB >= 2.5 x
default; default <= 1.05 x the fastest --io kind; with --baseline, default <= 1.05 x
the baseline. A profile whose campaign fails is recorded and the matrix goes on;
the exit status is then 1.

Examples:
  emsort bench sort --quick
  emsort bench sort --params bench/params/profiles-quick.csv --profiles -o OUTDIR
  emsort bench sort --params bench/params/profiles.csv --profiles root,xfs,tmpfs -o OUTDIR
  emsort bench sort --formats u32 --sizes 1G -M 64M,256M -d 2,8,32 --io buffered,direct
  emsort bench sort --formats lines --sizes 1G -M 256M --threads 1,all --reps 3
  emsort bench sort --formats csv --keys all --sizes 1G -M 256M --threads 2 --reps 5
  emsort bench sort --plot-only emsort-results/2026-01-01-sort";

/// Sort inputs over a grid of N, M, d, policy, I/O kind and threads on a cold cache,
/// with the I/O and CPU bounds, GNU sort, STXXL and an in-memory sort as peers; write
/// raw CSV, a summary, machine facts and plots.
#[derive(Args)]
#[command(after_long_help = SORT_AFTER_HELP)]
pub struct SortBenchArgs {
    /// Formats, comma-separated: u32, i32, u64, i64, f32, f64, rec:SIZE:OFF:LEN, lines;
    /// csv runs the keys experiment (see below).
    #[arg(long, value_name = "LIST", default_value = "u32,lines")]
    formats: String,
    /// Key sorts of the keys experiment (with --formats csv): k3n, k2-k3nr, u, k1n-u,
    /// plain, all [default: all].
    #[arg(long, value_name = "LIST")]
    keys: Option<String>,
    /// Input sizes N in bytes, K/M/G suffixes (e.g. 64M,256M,1G).
    #[arg(long, value_name = "LIST", default_value = "64M")]
    sizes: String,
    /// Memory budgets M, K/M/G suffixes (e.g. 16M,64M).
    #[arg(short = 'M', long = "memory", value_name = "LIST", default_value = "8M,32M")]
    memory: String,
    /// Fan-ins d (e.g. 2,8,32 or 2..8; default = emsort's own, no --fan-in).
    #[arg(short = 'd', long = "fan-in", value_name = "LIST", default_value = "2,8,32")]
    fan_in: String,
    /// Merge policies: fifo, optimal (default = emsort's own, no --policy).
    #[arg(long, value_name = "LIST", default_value = "optimal")]
    policies: String,
    /// Stream kinds for reading and writing: buffered, direct, uring, uring-direct, mmap,
    /// syscall, stdio, all (default = no --io: the sort's own choice).
    #[arg(long, value_name = "LIST", default_value = "buffered")]
    io: String,
    /// Threads (--parallel of emsort and GNU sort), e.g. 1,all or 1,2.
    #[arg(long, value_name = "LIST", default_value = "all")]
    threads: String,
    /// Repetitions of each point.
    #[arg(long, value_name = "R", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// How to empty the page cache before each run: drop (whole machine, root), fadvise
    /// (evict the input), none (warm). Default: drop when this process can write
    /// /proc/sys/vm/drop_caches, else fadvise.
    #[arg(long, value_name = "METHOD", value_parser = clap::value_parser!(CacheMethod))]
    cache: Option<CacheMethod>,
    /// Take the whole grid from a parameter file (see below); replaces the list flags.
    #[arg(long, value_name = "FILE.csv", conflicts_with_all = ["formats", "keys", "sizes", "memory", "fan_in", "policies", "io", "threads", "reps", "quick"])]
    params: Option<PathBuf>,
    /// A small grid (u32 and lines of 64 MiB, M = 8M and 32M, d = 2 and 16, 1 thread
    /// and all cores, fifo and direct once) that runs in well under a minute.
    #[arg(long, conflicts_with_all = ["formats", "sizes", "memory", "fan_in", "policies", "io", "threads", "reps"])]
    quick: bool,
    /// Directory for the inputs, runs and outputs. Default: a temporary directory inside
    /// OUTDIR (so on its file system), removed at the end.
    #[arg(long = "dir", value_name = "WORKDIR")]
    work_dir: Option<PathBuf>,
    /// Output directory. Default: emsort-results/YYYY-MM-DD-sort in the current
    /// directory (-2, -3 … appended if that one already holds a campaign).
    #[arg(short = 'o', long = "output", value_name = "OUTDIR")]
    out_dir: Option<PathBuf>,
    /// Leave STXXL out (by default it runs on u32 inputs when libstxxl-dev and g++ are installed).
    #[arg(long)]
    no_stxxl: bool,
    /// Leave uutils sort out of the keys experiment and the lines inputs (by default it runs
    /// when installed).
    #[arg(long)]
    no_uutils: bool,
    /// Leave DuckDB out of the keys experiment (by default it runs when installed).
    #[arg(long)]
    no_duckdb: bool,
    /// Leave the CPU bound out (by default it runs in /dev/shm when that is tmpfs with room).
    #[arg(long)]
    no_cpu_bound: bool,
    /// Run the CPU bound in DIR, which must be tmpfs with room for 4 x the largest input.
    #[arg(long, value_name = "DIR", conflicts_with = "no_cpu_bound")]
    cpu_bound_dir: Option<PathBuf>,
    /// Run emsort inside the harness's process instead of as a child `emsort sort`
    /// (its peak RSS, context switches and page faults then include the harness's).
    #[arg(long)]
    in_process: bool,
    /// Also run each emsort point from standard input to standard output
    /// (`emsort sort … < INPUT > OUTPUT`, tool `emsort-stdio`, right after the
    /// file-to-file run of the same point): what a pipeline pays.
    #[arg(long, conflicts_with = "in_process")]
    stdio: bool,
    /// Also run each emsort point with another emsort binary (an earlier build,
    /// tool `emsort-baseline`) beside this one's run of the same point, the two
    /// alternating which runs first (this one in odd repetitions): before and after
    /// measured side by side in the same run.
    #[arg(long, value_name = "EXE", conflicts_with = "in_process")]
    baseline: Option<PathBuf>,
    /// Run the whole grid on each machine profile of LIST, in one run (see "Machine-profile
    /// matrix" below): root, xfs, btrfs, tmpfs, simd (each SIMD level below the CPU's, forced),
    /// simd-LEVEL, or all [default when given without LIST: all].
    #[arg(long, value_name = "LIST", num_args = 0..=1, default_missing_value = "all", conflicts_with = "in_process")]
    profiles: Option<String>,
    /// With --profiles: leave fio out (the I/O bound is then the O_DIRECT copy, and the profiles
    /// get no device facts).
    #[arg(long, requires = "profiles")]
    no_fio: bool,
    /// Measure nothing: redraw summary.csv and the plots of an earlier campaign from its raw.csv.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["params", "quick", "work_dir", "out_dir", "cache", "no_stxxl", "no_uutils", "no_duckdb", "no_cpu_bound", "cpu_bound_dir", "in_process", "stdio", "baseline", "profiles"])]
    plot_only: Option<PathBuf>,
    /// No progress bar and no warnings; the final table is still printed.
    #[arg(short, long)]
    quiet: bool,
}

/// A parsed list flag, or an error naming the flag.
fn list<T>(flag: &str, r: Result<Vec<T>, String>) -> anyhow::Result<Vec<T>> {
    list1(flag, r)
}

/// A parsed flag, or an error naming the flag.
fn list1<T>(flag: &str, r: Result<T, String>) -> anyhow::Result<T> {
    r.map_err(anyhow::Error::msg).with_context(|| flag.to_string())
}

fn sort_bench(a: SortBenchArgs) -> anyhow::Result<ExitCode> {
    use emsort_bench::sort::{self as sb, Campaign as SortCampaign};
    if let Some(dir) = &a.plot_only {
        let summary = sb::summary_from_csv(dir)?;
        let plots = sb::plots_from_csv(dir)?;
        print!("{}", sb::format_table(&sb::headline(&summary)));
        let keys = sb::keys_table(&summary);
        if !keys.is_empty() {
            print!("\nKeys experiment:\n\n{keys}");
        }
        let threads = sb::threads_reading(&summary);
        if !threads.is_empty() {
            print!("\nFewest vs most threads (medians per run):\n{threads}");
        }
        let claims = sb::claims(&summary);
        if !claims.is_empty() {
            print!("\nThe published conclusions:\n{}", emsort_bench::claims::lines(&claims));
        }
        println!(
            "\nRewrote {} and {} plots in {}",
            dir.join("summary.csv").display(),
            plots.len(),
            dir.join("plots").display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let campaign = if a.quick {
        SortCampaign::quick()
    } else if let Some(p) = &a.params {
        SortCampaign::from_params_file(p)?
    } else {
        let (formats, data_sets) = list1("--formats", sb::parse_inputs(&a.formats))?;
        let (keys, locale) = list1("--keys", sb::grid_keys(&data_sets, a.keys.as_deref().unwrap_or("")))?;
        let grid = sb::Grid {
            formats,
            data_sets,
            keys,
            locale,
            sizes: list("--sizes", sb::parse_sizes(&a.sizes))?,
            memories: list("-M", sb::parse_sizes(&a.memory))?,
            fan_ins: list("-d", sb::parse_fan_ins(&a.fan_in))?,
            policies: list("--policies", sb::parse_policies(&a.policies))?,
            io: list("--io", sb::parse_io(&a.io))?,
            threads: list("--threads", sb::parse_threads(&a.threads))?,
            reps: a.reps,
        };
        SortCampaign::new(&[grid])?
    };
    let out_dir = match &a.out_dir {
        Some(d) => d.clone(),
        None => fresh_dir(&SortCampaign::default_out_dir()),
    };
    let cache = a.cache.unwrap_or_else(CacheMethod::best_available);
    let mut campaign = campaign
        .cache(cache)
        .out_dir(&out_dir)
        .command_line(command_line())
        .version(env!("CARGO_PKG_VERSION"));
    if let Some(w) = &a.work_dir {
        campaign = campaign.work_dir(w);
    }
    if a.no_stxxl {
        campaign = campaign.stxxl(None);
    }
    campaign = campaign.uutils(!a.no_uutils).duckdb(!a.no_duckdb);
    campaign = match &a.cpu_bound_dir {
        Some(dir) => campaign.cpu_bound_dir(dir),
        None => campaign.cpu_bound(!a.no_cpu_bound),
    };
    if !a.in_process {
        let exe = std::env::current_exe().context("cannot find the emsort binary to run the sorts")?;
        campaign = campaign.sorter_exe(exe).stdio(a.stdio).baseline(a.baseline.clone());
    }
    let bar = Bar::new(a.quiet);
    if let Some(list) = &a.profiles {
        let profiles = list1("--profiles", sb::matrix::parse_profiles(list))?;
        let matrix = sb::matrix::Matrix::new(campaign, profiles).fio(!a.no_fio);
        return matrix_report(&matrix.run(&bar, interrupt::flag())?, a.quiet);
    }
    let o = campaign.run(&bar, interrupt::flag())?;
    if !a.quiet {
        for w in &o.warnings {
            eprintln!("emsort: warning: {w}");
        }
    }
    println!(
        "\nSort campaign: {} runs in {:.1} s, page cache emptied with '{}' before each run.",
        o.runs, o.seconds, cache
    );
    let headline = sb::headline(&o.summary);
    if !headline.is_empty() {
        println!("Per input, emsort's fastest point (median of the repetitions) and its peers:\n");
        print!("{}", sb::format_table(&headline));
    }
    let threads = sb::threads_reading(&o.summary);
    if !threads.is_empty() {
        print!("\nFewest vs most threads (medians per run):\n{threads}");
    }
    let keys = sb::keys_table(&o.summary);
    if !keys.is_empty() {
        print!("\nKeys experiment (medians; time / emsort's: how many times faster emsort is):\n\n{keys}");
    }
    // Failed and mismatched keys runs are shown even with -q.
    for p in &o.keys_problems {
        eprintln!("emsort: keys experiment: {p}");
    }
    println!(
        "\nResults in {}: raw.csv, summary.csv, machine.json, README.md, plots/ ({} SVG)",
        o.out_dir.display(),
        o.plots.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// The end of a matrix: each profile's status, the bars, where the files
/// went; a failed profile makes the exit status 1.
fn matrix_report(o: &emsort_bench::sort::matrix::MatrixOutcome, quiet: bool) -> anyhow::Result<ExitCode> {
    use emsort_bench::sort::matrix::bars_table;
    if !quiet {
        for w in &o.warnings {
            eprintln!("emsort: warning: {w}");
        }
    }
    println!("\nMachine-profile matrix: {} runs in {:.1} s.\n", o.runs, o.seconds);
    for p in &o.profiles {
        println!("  {:<12} {} ({} runs, {:.1} s)", p.name, p.status, p.runs, p.seconds);
    }
    let table = bars_table(&o.bars, true);
    if !table.is_empty() {
        print!("\nIssue 38's bars (medians; see README.md):\n\n{table}");
    }
    println!(
        "\nResults in {}: raw.csv, summary.csv (a profile column), profiles.json, README.md, plots/ ({} SVG), \
         and a folder per profile",
        o.out_dir.display(),
        o.plots.len()
    );
    let failed = o.profiles.iter().any(|p| p.status.starts_with("failed"));
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
