//! `emsort bench …`: experiment campaigns. `streams` is SPEC experiment 1.
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
use emsort_io::cache::CacheMethod;

use crate::interrupt;
use crate::progress::Bar;

/// Experiment campaigns: raw CSV first, then summary tables and plots made from it.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Experiment 1: read and write k streams of N elements with every stream kind.
    Streams(StreamsArgs),
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
  own system calls; those are set beside the seeds' cost formula:

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
  README.md     what the files and columns are
  plots/*.svg   time vs N per k, time vs k per N, time vs B per N, all kinds
                on one chart, counted vs predicted calls (log-log)
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

/// `base`, or `base-2`, `base-3` … when `base` already holds a campaign.
fn fresh_dir(base: &Path) -> PathBuf {
    let taken = |p: &Path| p.join("raw.csv").exists();
    if !taken(base) {
        return base.to_path_buf();
    }
    (2..)
        .map(|i| PathBuf::from(format!("{}-{i}", base.display())))
        .find(|p| !taken(p))
        .expect("an unused directory name")
}

/// The command line as typed (arguments with blanks or quotes are quoted).
fn command_line() -> String {
    std::env::args()
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c)) {
                format!("'{}'", a.replace('\'', r"'\''"))
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
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
    println!(
        "\nRewrote {} and {} plots in {}",
        dir.join("summary.csv").display(),
        plots.len(),
        dir.join("plots").display()
    );
    Ok(ExitCode::SUCCESS)
}
