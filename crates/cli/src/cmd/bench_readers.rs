//! `emsort bench readers`: experiment 4, the readers on a cold cache;
//! `--traces`, its trace experiment (calibrate, then replay the thesis'
//! traces with every reader); `--plot-only DIR`, the reports of either
//! again from their raw CSV; and the hidden `emsort bench readers-worker`
//! that runs the memory experiment's reads (and its balloon) in a child
//! process.
//!
//! The measuring, the CSV files and the plots are in
//! `emsort_bench::readers` (`readers::traces` for `--traces`); this module
//! turns flags into a campaign, draws the progress bar and prints the
//! summary table.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use emsort_bench::machine::portable_command_line;
use emsort_bench::readers::traces::{self, CampaignKind, TracesCampaign, TracesPlan};
use emsort_bench::readers::{
    format_fio, format_table, parse_experiments, parse_sizes, read_plan, worker_main, Campaign, LimitMethod,
    Plan,
};
use emsort_bench::readers::{plots_from_csv, summary_from_csv};
use emsort_bench::replay::Workload;
use emsort_bench::CampaignBuilder;
use emsort_io::cache::CacheMethod;

use crate::interrupt;
use crate::progress::Bar;

const AFTER_HELP: &str = "\
Experiments (--experiments, default all), every run on a cold cache (--cache):
  blocksize    pread and uring (Q=1) with one block of B bytes per request, B from 4K
               to 64M: the whole file front to back, and distinct blocks at random;
               p50/p99 are the latency of one block
  queue-depth  uring's batch API with Q = 1..128 requests in flight: sequential (1M
               requests) and random (4K, 64K, 1M); fio --ioengine=io_uring --direct=0
               with the same file, bs, iodepth and bytes right after each point
  mmap         single random reads through mmap, 1 byte .. 1M, one per stretch of the
               file, for each madvise hint (normal, random, sequential, willneed);
               faults per read (getrusage) and bytes paged in per read (mincore)
  sequential   every reader, whole files of each size, and the first bytes of the
               largest file
  random       every reader at distinct random offsets: request size, file size,
               bytes read
  memory       random reads (with repeats) of a file larger than the memory left to
               the reader: a child process in a cgroup v2 with memory.max when the
               v2 memory controller is available, else beside a locked balloon
               (mlock of MemAvailable - limit); then the same reads without a limit
  threads      1 .. 2 x cores threads sharing one file: sequential, random 4K, random 4M
Readers of the last four: stream, mmap, pread (B=4M), uring (B=4M, Q=32), adaptive.

Parameter file (--params FILE.csv): `key;value` lines after a `key;value` header;
bench/params/readers-full.csv is the full campaign (the default) and lists every key,
bench/params/readers-quick.csv the --quick one. --size replaces every file size.

Files written into OUTDIR:
  raw-<experiment>.csv  a row per run: experiment, sweep, reader, api, pattern,
                file_bytes, request_bytes, block_size, queue_depth, madvise, threads,
                limit, rep, requests, bytes_requested, bytes_read, seconds, mib_s,
                p50_us, p99_us, max_us, open_ms, minor_faults, major_faults,
                resident_bytes, cache (flushed as each run finishes)
  summary.csv   a row per point: medians of MiB/s, p50, p99, faults and bytes paged in
                per request; fio's MiB/s beside uring and the ratio uring_to_fio
  machine.json  CPU, memory, kernel, file system, device, read_ahead_kb,
                fault_around_bytes, cgroups, memory limit method, fio, command line
  plots/*.svg   one or more charts per experiment (log-log; throughput with the
                runs' min - max)
  README.md     the command, the files, the best point per experiment and reader,
                uring beside fio, and the Chalmers thesis' chapter 4 findings beside this
                run's (holds, differs, within the noise when the runs overlap, or
                one run: no verdict from a single repetition)

The trace experiment (--traces): the thesis' traces as `emsort gen-trace` writes them
(ct, am, im, mixed; --scale, default the recorded campaigns' ct 1, am 1, im 0.5,
mixed 1), after a calibration of the adaptive reader as `emsort calibrate` makes it,
written to OUTDIR/calibration (never to your configuration) and used by the replays;
then every trace replayed as `emsort replay --reps N` does: N rounds (--reps, default
5), each round every reader once (stream, mmap, pread B=4M, uring B=4M Q=32, adaptive)
in a Williams order (each reader follows each other equally often), every run on a
cold cache. --quick: scale 0.01, one round, the quick calibration (seconds). Each
trace's files are written into a new directory .emsort-traces-* inside WORKDIR
(default OUTDIR) and removed after its replays (--keep-files keeps them). Files
written into OUTDIR:
  raw.csv        a row per trace x reader x round: trace, scale, seed, reader, round,
                 position, seconds, requests, bytes_requested, bytes_read, short_reads,
                 mib_s, p50_us, p99_us, max_us, block_size, queue_depth, cache, the
                 adaptive reader's choices (mmap/pread/uring/direct requests and bytes,
                 prefetched files and bytes), fallback (flushed per run)
  summary.csv    per trace x reader: rounds, median/min/max seconds, median MiB/s, the
                 best fixed reader, ratio_to_best_fixed, ratio_to_mmap, and the ratio
                 to the best fixed reader paired by round (median, min, max, rounds
                 faster); for adaptive the shares of its bytes by mmap, pread, io_uring
                 and its direct read-ahead
  machine.json   CPU, memory, kernel, file system, device and its
                 /sys/block/DEV/queue/read_ahead_kb, free page reporting, version,
                 command line, date, cache method, the traces generated
  calibration, calibrate.txt   the calibration and the measurements it rests on
  README.md      the command, the headline per trace (adaptive vs the best fixed reader
                 and vs mmap), every reader's times, the calibration used and the
                 thesis' trace claims beside the measurement (holds/differs/within the
                 noise; one run: no verdict from a single round)
  plots/traces_time.svg, plots/traces_ratio.svg
Paths in these files are relative to the current directory.

Calibrate-then-replay rounds (--traces --rounds N, issue 38): the traces (--trace
LIST, e.g. mixed) generated once, then N rounds, each a new calibration of the
adaptive reader (the quick plan with --quick, else the full one; with
--compare-one-run also one by the rules before issue 38, one run per point, the two
in alternating order) followed by --reps replays (default 3) of every fixed reader
and of the adaptive reader with each calibration, in a Williams order, on a cold
cache. --quick --scale F keeps the trace at scale F. Files written into OUTDIR:
  raw.csv           a row per replay: trace, scale, seed, round, rep, position, reader,
                    calibration (paired, one-run; empty for fixed readers), seconds,
                    bytes_read, mib_s, the adaptive reader's bytes by technique
  calibrations.csv  a row per round x calibration x key: order, seconds, key, value,
                    origin (measured, inconclusive; empty for one-run)
  rounds.csv        per trace, round and calibration: the adaptive reader's median time,
                    the best fixed reader and its median time, their ratio
  summary.csv       per trace and calibration: the ratio's median, min, max, rounds
                    within 1.05x, rounds below 1x
  stability.csv     per calibration and key: changes between consecutive rounds,
                    distinct values, rounds inconclusive, each value's count
  machine.json, README.md, plots/rounds_ratio.svg

--plot-only DIR measures nothing: for a --traces campaign (DIR/raw.csv) it writes
summary.csv, plots/ and README.md again from raw.csv and machine.json; for the
experiments (DIR/raw-*.csv) summary.csv and plots/. The same raw CSV gives the same
files.

Examples:
  emsort bench readers --quick
  emsort bench readers --experiments blocksize,mmap --reps 3 --dir /data/scratch
  emsort bench readers --params bench/params/readers-full.csv -o bench/results/2026-01-01-readers
  emsort bench readers --traces -o bench/results/2026-01-01-readers-traces
  emsort bench readers --traces --quick -o traces-quick
  emsort bench readers --traces --trace mixed --quick --scale 1 --rounds 10 --compare-one-run -o rounds
  emsort bench readers --plot-only bench/results/2026-01-01-readers-traces";

/// Measure the readers (stream, mmap, pread, uring, adaptive) on a cold cache: block
/// size, queue depth beside fio, mmap page-in, sequential, random, reading more than
/// memory, threads; write raw CSVs, a summary, machine facts and plots.
#[derive(Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct ReadersArgs {
    /// A tiny grid on files of at most 16 MiB that runs in seconds (no memory limit
    /// unless --memory-limit says otherwise); with --traces, traces at scale 0.01, one
    /// round and the quick calibration.
    #[arg(long, conflicts_with = "params")]
    quick: bool,
    /// Experiments, comma-separated: blocksize, queue-depth, mmap, sequential, random,
    /// memory, threads, or all.
    #[arg(long, value_name = "LIST", default_value = "all")]
    experiments: String,
    /// Take the grid from a parameter file (default: the full campaign).
    #[arg(long, value_name = "FILE.csv")]
    params: Option<PathBuf>,
    /// Directory for the data files (must exist). Default: a temporary directory inside
    /// OUTDIR (on a disk), removed at the end.
    #[arg(long = "dir", value_name = "WORKDIR")]
    work_dir: Option<PathBuf>,
    /// Output directory. Default: emsort-results/YYYY-MM-DD-readers (-readers-traces with
    /// --traces).
    #[arg(short = 'o', long = "output", value_name = "OUTDIR")]
    out_dir: Option<PathBuf>,
    /// Repetitions of each point (default: the parameter file's); with --traces, rounds of
    /// every reader on every trace (default 5, 1 with --quick).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    reps: Option<u32>,
    /// How to empty the page cache before each run: drop (whole machine, root) or fadvise
    /// (evict the file). Default: drop when possible, else fadvise.
    #[arg(long, value_name = "METHOD", value_parser = parse_cold_cache)]
    cache: Option<CacheMethod>,
    /// File sizes (K/M/G), replacing the parameter file's: single-file experiments use
    /// the largest, the file-size sweeps all. May be repeated or comma-separated.
    #[arg(long = "size", value_name = "SIZE")]
    sizes: Vec<String>,
    /// How the memory experiment limits memory: auto (cgroup v2 memory.max, else a
    /// locked balloon), cgroup2, balloon, none. Default: auto, none with --quick.
    #[arg(long, value_name = "METHOD", value_parser = clap::value_parser!(LimitMethod))]
    memory_limit: Option<LimitMethod>,
    /// Keep the data files at the end.
    #[arg(long)]
    keep_files: bool,
    /// The trace experiment instead: calibrate the adaptive reader (into
    /// OUTDIR/calibration), then replay the thesis' traces ct, am, im and mixed with every
    /// reader for --reps rounds (default 5), on a cold cache; raw CSV, summary, plots and a
    /// README beside the thesis' claims.
    #[arg(long, conflicts_with_all = ["params", "experiments", "sizes", "memory_limit"])]
    traces: bool,
    /// --traces: the traces' size factor, as `emsort gen-trace --scale` (default: the
    /// recorded campaigns' ct 1, am 1, im 0.5, mixed 1; 0.01 with --quick).
    #[arg(long, value_name = "F", requires = "traces", value_parser = parse_scale)]
    scale: Option<f64>,
    /// --traces: seed of the traces.
    #[arg(long, value_name = "S", requires = "traces", default_value_t = 42)]
    seed: u64,
    /// --traces: only these traces, comma-separated (ct, am, im, mixed; default all).
    #[arg(long = "trace", value_name = "LIST", requires = "traces")]
    trace: Option<String>,
    /// --traces: N calibrate-then-replay rounds instead: each round a new calibration of
    /// the adaptive reader, then --reps replays (default 3) of every reader; the adaptive
    /// reader's time over the best fixed reader's per round, and how the calibrated
    /// values moved.
    #[arg(long, value_name = "N", requires = "traces", value_parser = clap::value_parser!(u32).range(1..=1000))]
    rounds: Option<u32>,
    /// --rounds: also calibrate by the rules before issue 38 (one run per point, as
    /// `emsort calibrate --one-run`) each round, and replay the adaptive reader with it.
    #[arg(long, requires = "rounds")]
    compare_one_run: bool,
    /// Measure nothing: write the reports of the campaign in DIR again from its raw CSV
    /// (a --traces campaign: summary.csv, plots/ and README.md; the experiments:
    /// summary.csv and plots/).
    #[arg(long, value_name = "DIR", conflicts_with_all = [
        "quick", "experiments", "params", "work_dir", "out_dir", "reps", "cache", "sizes",
        "memory_limit", "keep_files", "rounds",
    ])]
    plot_only: Option<PathBuf>,
    /// No progress bar and no warnings; the final table is still printed.
    #[arg(short, long)]
    quiet: bool,
}

/// `--scale`: a positive number.
fn parse_scale(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(f),
        _ => Err(format!("invalid scale '{s}' (expected a positive number, e.g. 0.01)")),
    }
}

/// `--trace`: workload names, comma-separated.
fn parse_workloads(s: &str) -> Result<Vec<Workload>, String> {
    let mut v = Vec::new();
    for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let w: Workload = name.parse()?;
        if !v.contains(&w) {
            v.push(w);
        }
    }
    if v.is_empty() {
        return Err("no trace named (expected ct, am, im or mixed)".into());
    }
    Ok(v)
}

/// `--cache`: a cold-cache method (`none` would measure the page cache).
fn parse_cold_cache(s: &str) -> Result<CacheMethod, String> {
    match s.parse::<CacheMethod>()? {
        CacheMethod::None => {
            Err("the reader campaign always reads on a cold cache: use drop or fadvise".into())
        }
        m => Ok(m),
    }
}

/// Arguments of the hidden worker (none: the job comes on stdin).
#[derive(Args)]
pub struct WorkerArgs {}

/// Runs `emsort bench readers`.
pub fn run(a: ReadersArgs) -> anyhow::Result<ExitCode> {
    if let Some(dir) = &a.plot_only {
        // `--traces --plot-only DIR` as well: DIR says which campaign it
        // holds; a --traces that names another kind is refused.
        let kind = traces::campaign_kind(dir)?;
        if a.traces && kind == CampaignKind::Experiments {
            anyhow::bail!(
                "{}: not a --traces campaign (its raw.csv is of the readers experiments)",
                dir.display()
            );
        }
        return plot_only(dir, kind);
    }
    if a.traces {
        return run_traces(&a);
    }
    let mut plan = if a.quick {
        Plan::quick()
    } else if let Some(p) = &a.params {
        read_plan(p)?
    } else {
        Plan::full()
    };
    if let Some(r) = a.reps {
        plan.reps = r;
    }
    if !a.sizes.is_empty() {
        let mut sizes = Vec::new();
        for s in &a.sizes {
            sizes.extend(parse_sizes(s).map_err(anyhow::Error::msg).context("--size")?);
        }
        plan = plan.with_sizes(&sizes);
    }
    let experiments =
        parse_experiments(&a.experiments).map_err(anyhow::Error::msg).context("--experiments")?;
    if let Some(d) = &a.work_dir {
        if !d.is_dir() {
            anyhow::bail!("--dir {}: no such directory", d.display());
        }
    }
    let out_dir = a.out_dir.clone().unwrap_or_else(Campaign::default_out_dir);
    let limit = a.memory_limit.unwrap_or(if a.quick { LimitMethod::None } else { LimitMethod::Auto });
    let cache = a.cache.unwrap_or_else(CacheMethod::best_available);
    let exe = std::env::current_exe().context("cannot find the emsort binary for the memory experiment")?;
    let mut campaign = Campaign::new(plan, &experiments)?
        .cache(cache)
        .out_dir(&out_dir)
        .keep_files(a.keep_files)
        .limit_method(limit)
        .worker_exe(exe)
        .command_line(portable_command_line(std::env::args()))
        .version(env!("CARGO_PKG_VERSION"));
    if let Some(w) = &a.work_dir {
        campaign = campaign.work_dir(w);
    }
    let bar = Bar::new(a.quiet);
    let o = campaign.run(&bar, interrupt::flag())?;
    if !a.quiet {
        for w in &o.warnings {
            eprintln!("emsort: warning: {w}");
        }
    }
    println!(
        "\nReader campaign: {} runs in {:.1} s, page cache emptied with '{}' before each run.\n\
         Per experiment, reader and pattern, the best point (median of the repetitions):\n",
        o.runs, o.seconds, cache
    );
    print!("{}", format_table(&o.summary));
    let fio = format_fio(&o.summary);
    if !fio.is_empty() {
        println!("\nuring at its best queue depth beside fio (same file, bs, iodepth, bytes):\n");
        print!("{fio}");
    }
    print_thesis(&o.summary);
    println!("\nfio: {}", o.fio);
    println!("Memory limit: {}", o.memory_limit);
    println!(
        "\nResults in {}: raw-*.csv, summary.csv, machine.json, README.md, plots/ ({} SVG)",
        o.out_dir.display(),
        o.plots.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// `--traces`: the trace experiment.
fn run_traces(a: &ReadersArgs) -> anyhow::Result<ExitCode> {
    let mut plan = if a.quick { TracesPlan::quick() } else { TracesPlan::recorded() };
    if let Some(s) = a.scale {
        plan = plan.scale(s);
    }
    if let Some(list) = &a.trace {
        plan = plan.only(&parse_workloads(list).map_err(anyhow::Error::msg).context("--trace")?);
    }
    if let Some(n) = a.rounds {
        plan.rounds = n as usize;
        plan.compare_one_run = a.compare_one_run;
        plan.reps = 3;
    }
    if let Some(r) = a.reps {
        plan.reps = r as usize;
    }
    plan.seed = a.seed;
    if let Some(d) = &a.work_dir {
        if !d.is_dir() {
            anyhow::bail!("--dir {}: no such directory", d.display());
        }
    }
    let out_dir =
        a.out_dir.clone().unwrap_or_else(|| super::results::fresh_dir(&TracesCampaign::default_out_dir()));
    let cache = a.cache.unwrap_or_else(CacheMethod::best_available);
    let mut campaign = TracesCampaign::new(plan)
        .cache(cache)
        .out_dir(&out_dir)
        .keep_files(a.keep_files)
        .command_line(portable_command_line(std::env::args()))
        .version(env!("CARGO_PKG_VERSION"));
    if let Some(w) = &a.work_dir {
        campaign = campaign.work_dir(w);
    }
    let bar = Bar::new(a.quiet);
    let o = campaign.run(&bar, interrupt::flag())?;
    drop(bar);
    if !a.quiet {
        for w in &o.warnings {
            eprintln!("emsort: warning: {w}");
        }
    }
    let p = campaign.plan();
    if let Some(r) = &o.rounds {
        println!(
            "\nCalibrate-then-replay rounds: {} rounds, {} replays in {:.1} s, page cache emptied with '{}' \
             before each run.\n",
            p.rounds, o.runs, o.seconds, cache
        );
        print_rounds(r);
        println!(
            "\nResults in {}: raw.csv, calibrations.csv, rounds.csv, summary.csv, stability.csv, machine.json, \
             README.md, plots/ ({} SVG)",
            o.out_dir.display(),
            r.plots.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let scales: Vec<String> = p.traces.iter().map(|(w, s)| format!("{w} {s}")).collect();
    println!(
        "\nTrace campaign: {} replays in {:.1} s ({}; {} round{}), page cache emptied with '{}' \
         before each run.\nPer trace, the adaptive reader against the best fixed reader (medians):\n",
        o.runs,
        o.seconds,
        scales.join(", "),
        p.reps,
        if p.reps == 1 { "" } else { "s" },
        cache
    );
    print!("{}", traces::format_table(&o.summary));
    print_claims(&o.summary);
    println!(
        "\nResults in {}: raw.csv, summary.csv, machine.json, calibration, calibrate.txt, README.md, \
         plots/ ({} SVG)",
        o.out_dir.display(),
        o.report.plots.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// A rounds campaign's headline: the ratio per trace and calibration over
/// the rounds, and the keys whose values changed.
fn print_rounds(r: &traces::rounds::RoundsReport) {
    println!("Adaptive reader ÷ best fixed reader, per round (median of the round's replays):");
    for s in &r.summary {
        let per: Vec<String> = r
            .rounds
            .iter()
            .filter(|x| x.trace == s.trace && x.calibration == s.calibration)
            .map(|x| format!("{:.2}", x.ratio))
            .collect();
        println!(
            "  {:<6} {:<8} median {:.2}×, {:.2}× – {:.2}× ({} of {} rounds ≤ {}×): {}",
            s.trace,
            s.calibration,
            s.median_ratio,
            s.min_ratio,
            s.max_ratio,
            s.rounds_as_fast,
            s.rounds,
            traces::rounds::AS_FAST,
            per.join(" ")
        );
    }
    println!("Calibrated values that changed between rounds:");
    for s in r.stability.iter().filter(|s| s.changes > 0 || s.inconclusive > 0) {
        println!(
            "  {:<8} {:<22} {} change(s), {} inconclusive: {}",
            s.calibration, s.key, s.changes, s.inconclusive, s.values
        );
    }
}

/// The thesis' claims beside the measurement, a line each.
fn print_claims(summary: &[traces::SummaryRow]) {
    let claims = traces::claims(summary);
    if claims.is_empty() {
        return;
    }
    println!("\nThe thesis' claims (chapter 5):");
    print!("{}", emsort_bench::claims::lines(&claims));
}

/// The thesis' chapter 4 findings beside the experiments', a line each.
fn print_thesis(summary: &[emsort_bench::readers::SummaryRow]) {
    let claims = emsort_bench::readers::claims(summary);
    if !claims.is_empty() {
        print!("\nThe thesis' findings (chapter 4):\n{}", emsort_bench::claims::lines(&claims));
    }
}

/// `--plot-only DIR`: the reports again from the raw CSV in DIR, a
/// campaign of `kind`.
fn plot_only(dir: &std::path::Path, kind: CampaignKind) -> anyhow::Result<ExitCode> {
    match kind {
        CampaignKind::Rounds => {
            let r = traces::rounds::redraw(dir)?;
            print_rounds(&r);
            println!(
                "\nRewrote rounds.csv, summary.csv, stability.csv, {} and {} plots",
                r.readme.display(),
                r.plots.len()
            );
        }
        CampaignKind::Traces => {
            let r = traces::redraw(dir)?;
            print!("{}", traces::format_table(&r.summary));
            print_claims(&r.summary);
            println!(
                "\nRewrote {}, {} and {} plots in {}",
                dir.join("summary.csv").display(),
                r.readme.display(),
                r.plots.len(),
                dir.join("plots").display()
            );
        }
        CampaignKind::Experiments => {
            let summary = summary_from_csv(dir)?;
            let plots = plots_from_csv(dir)?;
            print!("{}", format_table(&summary));
            print_thesis(&summary);
            println!(
                "\nRewrote {} and {} plots in {}",
                dir.join("summary.csv").display(),
                plots.len(),
                dir.join("plots").display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs the hidden `emsort bench readers-worker`: one job from stdin.
pub fn worker(_: WorkerArgs) -> anyhow::Result<ExitCode> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut out = std::io::stdout().lock();
    worker_main(&mut input, &mut out)?;
    Ok(ExitCode::SUCCESS)
}
