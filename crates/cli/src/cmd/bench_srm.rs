//! `emsort bench srm`: experiment 3, SRM against DSM on D disks
//! (Barve & Vitter's Tables 1 and 2 and Figure 2, and a sweep of D).
//!
//! The measuring, the CSV files, the table and the plots are in
//! `emsort_bench::srm`; this module turns flags into a campaign, draws the
//! progress bar and prints the tables.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use emsort_bench::srm::{format_table, reports_from_csv, Campaign};
use emsort_bench::CampaignBuilder;
use emsort_io::cache::CacheMethod;

use crate::interrupt;
use crate::progress::Bar;

const AFTER_HELP: &str = "\
What is measured: for each input (format, N records), generated once (seeded),
every method sorts it with the same M, so DSM and SRM merge the same U runs:
  emsort sort --method dsm|srm --disks WORK/disk0,...,disk{D-1} -f FORMAT -S M
              --block-size B [--emulate-disk BW,LAT] --seed S --stats FILE -q IN -o OUT
as a child process on a cold cache (--cache), its output synced and verified (in
order, same multiset as the input; --no-verify skips this). The D disks are
directories on the work directory's device; --emulate-disk serves each at a set
bandwidth and per-request latency. The statistics give U, the merge passes, the
merge order R, parallel reads, nu and flushes of each pass, the merge time and the
streaming rate ((bytes read + written while merging) / merge time).

Parameter file (--params FILE.csv), a header line then one row per grid:
  format;n;memory;block;disks;methods;emulate;reps
  rec:104:0:8;1e6,2e6,4e6;15M,24M;256K;6;dsm,srm;;1
  rec:104:0:8;1e6,2e6,4e6;15M,24M;256K;6;dsm,srm;60M,1ms;1
  rec:104:0:8;4e6;24M;256K;1,2,3,4,6,8;dsm,srm;;1
n counts records (1e6 = one million); emulate is empty (the disks as they are) or
BANDWIDTH,LATENCY; '#' starts a comment. The default is bench/params/srm-full.csv
(built in): the paper's grid, N = 1 to 10 million records of 104 bytes, M = 15M and
24M, B = 256K, D = 6, with and without emulated disks, and a sweep of D.

Files written into OUTDIR:
  raw.csv       a row per sort: method, format, items, bytes, memory, block_size,
                disks, emulate, rep, seed, runs, passes, merge_orders, merge_s,
                merge_mib_s, merge_bytes_read, merge_bytes_written, parallel_reads,
                nu, flushes (per pass, ';'-separated), forecast_in_memory,
                run_formation_s, total_s, peak_rss_bytes, cache, verified
  summary.csv   a row per point: medians of the repetitions
  table.md      the paper's tables: per M (and emulation) a row per N with U, DSM's
                passes, R, merge time and rate, SRM's and its nu, and SRM/DSM; a
                table per sweep of D; Barve & Vitter's conclusions judged over every
                setting (SRM's passes, and its merge time with the runs' spread)
  README.md     the command, the files and the tables
  machine.json  CPU, memory, kernel, file system, read_ahead_kb, command line, date,
                cache method, the disk directories, the seed
  merge-time-vs-n.svg, merge-time-vs-n-emulated.svg, d-sweep.svg
Tables and plots are made from raw.csv; --plot-only DIR remakes them.

Examples:
  emsort bench srm --quick
  emsort bench srm -o bench/results/2026-01-01-srm --dir /data/scratch
  emsort bench srm --params my-grid.csv --reps 3
  emsort bench srm --plot-only bench/results/2026-01-01-srm";

/// SRM against DSM on D disks (experiment 3): sort the same inputs with both
/// methods on a cold cache and write raw CSV, a summary, the paper's tables, machine
/// facts and plots.
#[derive(Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct SrmArgs {
    /// A tiny grid (N = 10 000 to 40 000 records, M = 1M, B = 16K, D = 2 and 3) that
    /// runs in seconds.
    #[arg(long, conflicts_with = "params")]
    quick: bool,
    /// Take the grid from a parameter file (default: the built-in full campaign).
    #[arg(long, value_name = "FILE.csv")]
    params: Option<PathBuf>,
    /// Repetitions of every point (default: the parameter file's).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    reps: Option<u32>,
    /// Directory for the inputs, disk directories and outputs (a temporary directory
    /// is made in it and removed at the end). Default: ./target when it exists (a
    /// Cargo checkout), else OUTDIR.
    #[arg(long = "dir", value_name = "WORKDIR")]
    work_dir: Option<PathBuf>,
    /// Output directory. Default: emsort-results/YYYY-MM-DD-srm in the current
    /// directory (-2, -3 … appended if that one already holds a campaign).
    #[arg(short = 'o', long = "output", value_name = "OUTDIR")]
    out_dir: Option<PathBuf>,
    /// How to empty the page cache before each sort: drop (whole machine, root),
    /// fadvise (evict the input), none (warm). Default: drop when this process can
    /// write /proc/sys/vm/drop_caches, else fadvise.
    #[arg(long, value_name = "METHOD", value_parser = clap::value_parser!(CacheMethod))]
    cache: Option<CacheMethod>,
    /// The sorts' --seed in the first repetition (repetition r: S + r - 1) [default: emsort sort's].
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// Do not verify the outputs (saves a read of each output).
    #[arg(long)]
    no_verify: bool,
    /// Measure nothing: remake summary.csv, table.md and the plots of an earlier
    /// campaign from its raw.csv.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["quick", "params", "reps", "work_dir", "out_dir", "cache", "seed", "no_verify"])]
    plot_only: Option<PathBuf>,
    /// No progress bar and no warnings; the tables are still printed.
    #[arg(short, long)]
    quiet: bool,
}

/// Runs `emsort bench srm`.
pub fn run(a: SrmArgs) -> anyhow::Result<ExitCode> {
    if let Some(dir) = &a.plot_only {
        return plot_only(dir);
    }
    let mut campaign = if a.quick {
        Campaign::quick()
    } else if let Some(p) = &a.params {
        Campaign::from_params_file(p)?
    } else {
        Campaign::full()
    };
    if let Some(r) = a.reps {
        campaign = campaign.reps(r);
    }
    let out_dir = match &a.out_dir {
        Some(d) => d.clone(),
        None => super::results::fresh_dir(&Campaign::default_out_dir()),
    };
    let cache = a.cache.unwrap_or_else(CacheMethod::best_available);
    let exe = std::env::current_exe().context("cannot find the emsort binary to run the sorts")?;
    campaign = campaign
        .cache(cache)
        .out_dir(&out_dir)
        .sorter_exe(exe)
        .verify(!a.no_verify)
        .command_line(super::results::command_line())
        .version(env!("CARGO_PKG_VERSION"));
    if let Some(s) = a.seed {
        campaign = campaign.seed(s);
    }
    match &a.work_dir {
        Some(w) => campaign = campaign.work_dir(w),
        None if Path::new("target").is_dir() => campaign = campaign.work_dir("target"),
        None => {}
    }
    let bar = Bar::new(a.quiet);
    let o = campaign.run(&bar, interrupt::flag())?;
    if !a.quiet {
        for w in &o.warnings {
            eprintln!("emsort: warning: {w}");
        }
    }
    println!(
        "\nSRM campaign: {} sorts in {:.1} s ({} outputs verified), page cache emptied with '{}' \
         before each sort.\nMedians of the repetitions; times are the merge phase's, rates in MiB/s:\n",
        o.runs, o.seconds, o.verified, cache
    );
    print!("{}", format_table(&o.summary));
    print_claims(&o.summary);
    println!(
        "\nResults in {}: raw.csv, summary.csv, table.md, machine.json, README.md, {} SVG",
        o.out_dir.display(),
        o.plots.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// `--plot-only DIR`: summary, table and plots again from `DIR/raw.csv`.
fn plot_only(dir: &Path) -> anyhow::Result<ExitCode> {
    let (summary, plots) = reports_from_csv(dir)?;
    print!("{}", format_table(&summary));
    print_claims(&summary);
    println!(
        "\nRewrote {}, {} and {} plots in {}",
        dir.join("summary.csv").display(),
        dir.join("table.md").display(),
        plots.len(),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Barve & Vitter's conclusions beside the measurement, a line each.
fn print_claims(summary: &[emsort_bench::srm::SummaryRow]) {
    let claims = emsort_bench::srm::claims(summary);
    if !claims.is_empty() {
        print!("\nBarve & Vitter's conclusions:\n{}", emsort_bench::claims::lines(&claims));
    }
}
