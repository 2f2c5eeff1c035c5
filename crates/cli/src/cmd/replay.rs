//! `emsort replay`: a trace of read calls replayed with each reader kind.
//!
//! The engine, the table and the CSV are in `emsort_bench::replay`; this
//! module turns flags into a [`Replay`], draws the progress bar and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use emsort_bench::machine::Machine;
use emsort_bench::replay::{
    describe_trace, format_choices, format_table, reading, sidecar_path, write_results, Replay, Split, Trace,
};
use emsort_io::cache::CacheMethod;
use emsort_io::{format_size, AccessHint, Calibration, ReaderConfig, ReaderKind};

use super::results::command_line;
use crate::interrupt;
use crate::progress::Bar;

const AFTER_HELP: &str = "\
Trace format: one read call per line, `file,offset,size` (bytes); an optional
header line `file,offset,size`; lines starting with '#' are comments. File
names are relative to the trace's directory unless absolute.
  # a trace
  file,offset,size
  ct_000.bin,1048576,4096
  /data/tiles.bin,0,131072

For each reader the page cache is emptied (--cache), every file of the trace
is opened once (untimed), and the requests are read in trace order, each
timed; with --threads N the trace is cut into N slices (--split), each read
by a thread with its own readers, and the time is the slowest thread's.
A request reaching past the end of its file is a short read (counted in
`short`), not an error. --verify compares every read with an independent
pread of the same range (untimed) and stops with exit status 1 at the first
difference, naming the reader, file and offset. The checks read only what the
reader has just read, but they take CPU and cache lookups between requests:
take timings from runs without --verify.

With --reps N every reader runs N times, each time on a cold cache, the
readers interleaved round by round, their order changing from round to round
so that each follows each other one equally often (a Williams design: what a
run leaves behind, such as a full page cache, is not always charged to the
same reader), and a drift of the machine touches all alike; `time` is the median run's, and the
`runs` column gives the fastest and slowest. On a shared machine compare
readers with --reps 3 or more.

The adaptive reader uses the calibration file when present
($XDG_CONFIG_HOME/emsort/calibration, see `emsort calibrate`), the thesis'
thresholds otherwise; its line below the table says how many requests and
bytes went to mmap, pread and io_uring, how many its direct read-ahead of
sequential runs served (calibration `direct_readahead`), and how many files
it read ahead in the background (calibration `prefetch = on`).

With -o FILE.csv: a row per reader (reader, threads, split, block_size,
queue_depth, seconds, mib_s, reps, min_seconds, max_seconds, rep_seconds, requests, bytes_requested, bytes_read,
short_reads, p50_us, p99_us, max_us, large_share, cache, verified, the
adaptive reader's mmap/pread/uring/direct requests and bytes, the files it
prefetched and their bytes, fallback), and beside
it FILE.json with the machine facts (CPU, memory, kernel, file system,
read_ahead_kb, command line, date, cache method). FILE.csv must not exist.

Examples:
  emsort gen-trace --kind mixed --dir /tmp/tr --scale 0.05
  emsort replay /tmp/tr/trace.csv --verify
  emsort replay /tmp/tr/trace.csv --readers mmap,adaptive --threads 2 -o mixed.csv
  emsort replay /tmp/tr/trace.csv --reps 5
  emsort replay trace.csv --readers pread,uring --block-size 1M --queue-depth 64";

/// Replay a trace of read calls (file,offset,size) with each reader kind on a
/// cold cache: time, throughput, latency percentiles; optionally verified.
#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct ReplayArgs {
    /// The trace (CSV of file,offset,size).
    #[arg(value_name = "TRACE.csv")]
    trace: PathBuf,
    /// Reader kinds, comma-separated, in the order to run: stream, mmap, pread, uring,
    /// adaptive, or all.
    #[arg(long, value_name = "LIST", default_value = "all")]
    readers: String,
    /// Block size B of pread and uring, with K/M/G suffixes.
    #[arg(short = 'B', long, value_name = "B", default_value = "4M", value_parser = parse_block)]
    block_size: usize,
    /// io_uring queue depth Q (uring).
    #[arg(short = 'Q', long, value_name = "Q", default_value_t = ReaderConfig::DEFAULT_QUEUE_DEPTH,
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    queue_depth: u32,
    /// Threads sharing the trace, each with its own readers.
    #[arg(short = 't', long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: u32,
    /// How threads share the trace: contiguous (slices, as OpenMP's static schedule)
    /// or round-robin.
    #[arg(long, value_name = "HOW", default_value = "contiguous", value_parser = clap::value_parser!(Split))]
    split: Split,
    /// The adaptive reader's access hint (the thesis' swapFlag): auto, random,
    /// sequential or larger-than-memory.
    #[arg(long, value_name = "HINT", default_value = "auto", value_parser = clap::value_parser!(AccessHint))]
    access: AccessHint,
    /// Runs per reader, each on a cold cache; the median is reported.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    reps: u32,
    /// Check every read against an independent pread of the same range.
    #[arg(long)]
    verify: bool,
    /// How to empty the page cache before each reader: drop (whole machine, root),
    /// fadvise (evict the trace's files), none (warm). Default: drop when this process
    /// can write /proc/sys/vm/drop_caches, else fadvise.
    #[arg(long, value_name = "METHOD", value_parser = clap::value_parser!(CacheMethod))]
    cache: Option<CacheMethod>,
    /// Also write the results as CSV (and the machine facts beside it as .json).
    #[arg(short = 'o', long = "output", value_name = "FILE.csv")]
    output: Option<PathBuf>,
    /// No progress bar.
    #[arg(short, long)]
    quiet: bool,
}

fn parse_block(s: &str) -> Result<usize, String> {
    match emsort_io::parse_size(s)? {
        0 => Err("block size must be at least 1 byte".into()),
        b if b > 1 << 30 => Err(format!("block size {s} is larger than 1G")),
        b => Ok(b as usize),
    }
}

fn parse_readers(s: &str) -> anyhow::Result<Vec<ReaderKind>> {
    let mut v = Vec::new();
    for item in s.split(',').map(str::trim) {
        if item == "all" {
            v.extend(ReaderKind::ALL);
        } else {
            v.push(item.parse::<ReaderKind>().map_err(anyhow::Error::msg).context("--readers")?);
        }
    }
    let mut seen = Vec::new();
    v.retain(|k| {
        let fresh = !seen.contains(k);
        seen.push(*k);
        fresh
    });
    Ok(v)
}

pub fn run(a: ReplayArgs) -> anyhow::Result<ExitCode> {
    let kinds = parse_readers(&a.readers)?;
    if let Some(o) = &a.output {
        if o.exists() {
            bail!("{}: already exists; remove it or choose another -o", o.display());
        }
    }
    let trace = Trace::read(&a.trace).with_context(|| format!("cannot read trace {}", a.trace.display()))?;
    if trace.requests().is_empty() {
        bail!("{}: the trace holds no requests", a.trace.display());
    }
    let calibration = Calibration::discover().context("cannot load the adaptive reader's calibration")?;
    let cal_source = calibration.source.clone();
    let cfg = ReaderConfig::new(ReaderKind::Adaptive)
        .block_size(a.block_size)
        .queue_depth(a.queue_depth)
        .access(a.access)
        .calibration(calibration);
    let cache = a.cache.unwrap_or_else(CacheMethod::best_available);
    let replay = Replay::new(&kinds)
        .config(cfg)
        .threads(a.threads as usize)
        .split(a.split)
        .verify(a.verify)
        .reps(a.reps as usize)
        .cache(cache);

    println!("trace: {}: {}", a.trace.display(), describe_trace(&trace));
    let read_ahead = trace.files().first().and_then(|f| emsort_io::cache::read_ahead_kb(f));
    println!(
        "cache: {cache} before each {}; read_ahead_kb {}; B = {}, Q = {}; {} thread{}{}; adaptive: {} \
         calibration, access {}{}",
        if a.reps > 1 { format!("run ({} runs per reader, median shown)", a.reps) } else { "reader".into() },
        read_ahead.map_or("unknown".to_string(), |k| k.to_string()),
        format_size(a.block_size as u64),
        a.queue_depth,
        a.threads,
        if a.threads == 1 { "" } else { "s" },
        if a.threads > 1 { format!(" ({})", a.split) } else { String::new() },
        cal_source.as_ref().map_or("built-in (thesis)".to_string(), |p| p.display().to_string()),
        a.access,
        if a.verify { "; every read verified against pread" } else { "" },
    );
    println!();

    let bar = Bar::new(a.quiet);
    let out = replay
        .run(&trace, &bar, interrupt::flag())
        .with_context(|| format!("cannot replay {}", a.trace.display()))?;
    if let Some(m) = &out.mismatch {
        eprintln!("emsort: replay: verification FAILED: {m}");
        return Ok(ExitCode::from(1));
    }
    print!("{}", format_table(&out.results));
    for r in &out.results {
        if let Some(line) = format_choices(r) {
            println!("{line}");
        }
    }
    println!("{}", reading(&out.results));
    if let Some(o) = &a.output {
        let work_dir = a.trace.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(".".as_ref());
        let mut machine = Machine::collect(work_dir, cache, &command_line(), env!("CARGO_PKG_VERSION"));
        machine.element = "bytes (trace replay)".into();
        write_results(o, &trace, &out, machine, cal_source.as_deref())
            .with_context(|| format!("cannot write {}", o.display()))?;
        println!("results: {} and {}", o.display(), sidecar_path(o).display());
    }
    Ok(ExitCode::SUCCESS)
}
