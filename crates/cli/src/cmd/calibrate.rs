//! `emsort calibrate`: measure this machine's crossover points and write
//! the adaptive reader's calibration file.
//!
//! The measurements are in `emsort_bench::calibrate`; this module turns
//! flags into a [`Calibrate`], draws the progress, prints the tables and
//! the guidelines, and writes the file.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use emsort_bench::calibrate::{file_text, format_tables, write_calibration, Calibrate};
use emsort_bench::scratch::disk_tempdir;
use emsort_io::cache::CacheMethod;
use emsort_io::device::{DeviceCache, DeviceCost, DeviceId};
use emsort_io::{format_size, Calibration};

use crate::interrupt;
use crate::progress::Bar;

const AFTER_HELP: &str = "\
Each step runs its candidates in paired rounds (every candidate once per round,
the order alternating, every run on a cold cache) and compares two candidates by
their time ratio in each round. A value other than the thesis' one is kept only
when those ratios show it faster beyond their spread (all on one side of 1; from
10 rounds on, the most extreme tenth at each end left out); otherwise the thesis'
value is written, marked `# inconclusive` (the adaptive reader then uses the
thesis' value, whatever the line says). Steps:
  1. random 4K reads of half of 8 files through mmap, by madvise hint
       -> mmap_advice: the fastest hint if faster than normal by > 5 %, else normal
  2. the same reads, each file also read whole in the background
       (posix_fadvise WILLNEED) -> prefetch: on unless slower by > 5 %
  3. random reads of half of the files, 4K ... 1M: mmap vs pread
       -> mmap_max_request: up to where mmap wins at every size, if the sizes
          between it and the thesis' 32K say so (off: never)
  4. the whole file with pread, blocks 4K ... 16M
       -> max_block: the smallest block within 5 % of the best, if faster than
          the thesis' 4M by > 5 %
  5. the whole file with uring in blocks of max_block, Q = 1 ... 64
       -> queue_depth: the same rule against 32
  6. random requests of 256K ... 32M: uring vs pread
       -> uring_min_request: from where uring wins at every size, if the sizes
          between it and the thesis' 8M say so (off: never)
  7. threads 1 ... 2 x cores (and 4): sequential slices, random 4K, random 4M
       -> threads_sequential, threads_random_small, threads_random_large
  8. runs of 16M (requests of 256K) among random 4K reads of other files,
       the runs by pread or by O_DIRECT reads of 2M ahead of them (as many
       in flight as make read_ahead_kb)
       -> direct_readahead: on unless slower by more than 5 %
  9. the device under --dir and under the sorts' temp dir ($TMPDIR or /tmp):
       1 MiB O_DIRECT writes one at a time and 8 at once, read back, 9 rounds
       -> latency, bandwidths: `emsort sort --io auto` (the default) picks
          its stream kind and queue depth from them instead of a probe
A step runs at least 5 rounds and at most 15 (11 with --quick; --reps sets the
most), stopping earlier once its decision is clear or after 40 s (3 s with
--quick). --one-run measures as emsort did before (one run per point, or --reps
runs, each value from the medians alone, no marks), to compare.

The file is written to $XDG_CONFIG_HOME/emsort/calibration (or
~/.config/emsort/calibration), where `emsort replay` and the adaptive reader
find it; --output writes elsewhere, --dry-run nowhere. It is written beside
its name and renamed, so a reader never sees half a file. Each value's line
ends in `# measured` or `# inconclusive`; loaders before these marks read it
as before. The devices' measurements go to the file `devices` beside it (one
line per device, kept for the devices not measured this time).

The full calibration reads a 256 MiB file and takes a few minutes (at most a
quarter of an hour); --quick reads a 16 MiB file, fewer points, and takes about
a minute (rough values). The data file lives in a new directory inside --dir
(default: a temporary directory on a disk, not in memory), removed at the end,
also after an error or Ctrl-C.

Examples:
  emsort calibrate
  emsort calibrate --quick --dry-run
  emsort calibrate --quick --one-run --dry-run
  emsort calibrate --dir /mnt/data --output cal.txt";

/// Measure this machine's crossover points (mmap vs pread, block size, queue
/// depth, io_uring vs pread, threads, readahead for sequential runs) and
/// write the adaptive reader's calibration file.
#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct CalibrateArgs {
    /// Directory for the data file (a new directory inside it, removed at the end).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// A 16 MiB file, fewer points, no new round after 3 s per step: about a minute, rough values.
    #[arg(long)]
    quick: bool,
    /// Paired rounds per step at most (default: 15, or 11 with --quick); with
    /// --one-run, runs per point (default 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    reps: Option<u32>,
    /// Measure as before issue 38, to compare: one run per point (or --reps),
    /// each value from the medians alone, never the thesis' value for want of
    /// a clear difference.
    #[arg(long)]
    one_run: bool,
    /// Where to write the calibration (default: $XDG_CONFIG_HOME/emsort/calibration).
    #[arg(short = 'o', long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// Measure and print, but write no file.
    #[arg(long)]
    dry_run: bool,
    /// How to empty the page cache before each run: drop (root) or fadvise.
    /// Default: drop when this process can write /proc/sys/vm/drop_caches, else fadvise.
    #[arg(long, value_name = "METHOD", value_parser = clap::value_parser!(CacheMethod))]
    cache: Option<CacheMethod>,
    /// No progress line.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(a: CalibrateArgs) -> anyhow::Result<ExitCode> {
    let output = match (&a.output, a.dry_run) {
        (Some(p), _) => Some(p.clone()),
        (None, true) => None,
        (None, false) => Some(Calibration::default_path().context(
            "no place for the calibration file: neither XDG_CONFIG_HOME nor HOME is set; use --output",
        )?),
    };
    if let Some(o) = output.as_ref().filter(|o| o.is_dir()) {
        bail!("{}: is a directory; --output names the calibration file", o.display());
    }
    let cache = a.cache.unwrap_or_else(CacheMethod::best_available);
    if cache == CacheMethod::None {
        bail!("--cache none would measure the page cache, not the disk; use drop or fadvise");
    }
    // Without --dir, a temporary directory on a disk (removed when dropped).
    let scratch = match &a.dir {
        Some(_) => None,
        None => Some(disk_tempdir("emsort-calibrate-")?),
    };
    let dir = a.dir.clone().unwrap_or_else(|| scratch.as_ref().expect("made above").path().to_path_buf());
    let mut cal = Calibrate::new(&dir).quick(a.quick).cache(cache);
    let mut plan = cal.planned().clone();
    if a.one_run {
        plan = plan.one_run(a.reps.unwrap_or(1) as usize);
    } else if let Some(n) = a.reps {
        plan.max_rounds = n as usize;
        plan.min_rounds = plan.min_rounds.min(n as usize);
    }
    cal = cal.plan(plan.clone());
    println!(
        "calibrating in {}: a {} data file, {}, cache emptied by {cache} before each run{}",
        dir.display(),
        format_size(plan.file_size),
        plan.rounds_text(),
        if a.quick { " (--quick: rough values)" } else { "" }
    );
    let bar = Bar::new(a.quiet);
    let out =
        cal.run(&bar, interrupt::flag()).with_context(|| format!("cannot calibrate in {}", dir.display()))?;
    drop(bar);
    println!(
        "read_ahead_kb {}; measured in {:.1} s\n",
        out.read_ahead_kb.map_or("unknown".into(), |k| k.to_string()),
        out.seconds
    );
    print!("{}", format_tables(&out));
    println!();
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    println!("Calibration:");
    for line in file_text(&out, &command).lines().filter(|l| !l.starts_with('#')) {
        println!("  {line}");
    }
    println!();
    println!("Guidelines (the thesis' flowchart, appendix B, with these values):");
    print!("{}", out.calibration.guidelines());
    println!();
    // Step 9: the devices the sorts' runs go to.
    let devices_path = output.as_ref().map(|o| o.with_file_name("devices"));
    let mut devices = devices_path.as_deref().map(DeviceCache::load).unwrap_or_default();
    println!("Devices (for emsort sort --io auto):");
    let mut seen = Vec::new();
    for d in [dir.clone(), std::env::temp_dir()] {
        let id = DeviceId::of(&d);
        if id.is_some() && seen.contains(&id) {
            continue;
        }
        seen.push(id);
        match DeviceCost::measure(&d, 9) {
            Some(c) => {
                let kept = devices.insert(&d, c);
                println!(
                    "  {}: {}{}",
                    d.display(),
                    c.describe(),
                    if kept { "" } else { " (no device of its own: a sort probes it each time)" }
                );
            }
            None => println!("  {}: cannot be measured (no O_TMPFILE or O_DIRECT there)", d.display()),
        }
    }
    println!();
    match output {
        Some(o) => {
            write_calibration(&o, &out, &command).with_context(|| format!("cannot write {}", o.display()))?;
            println!("written to {}", o.display());
            let p = devices_path.expect("beside the output");
            devices.save(&p).with_context(|| format!("cannot write {}", p.display()))?;
            println!("devices written to {}", p.display());
        }
        None => println!("--dry-run: no file written"),
    }
    Ok(ExitCode::SUCCESS)
}
