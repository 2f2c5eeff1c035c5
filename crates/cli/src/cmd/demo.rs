//! `emsort demo`: the main job on built-in data. By default it generates
//! 1 GiB of random u32 in a temporary directory, sorts it with a memory
//! budget of a quarter of its size, verifies the result against the input
//! and prints a summary; `--streams` runs the quick stream campaign instead.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;
use emsort_bench::scratch::disk_tempdir;
use emsort_bench::sort::fio::io_bound;
use emsort_bench::sort::{CpuBoundDir, RawRow, DEFAULT_CPU_BOUND_DIR};
use emsort_bench::streams::{reading, Campaign};
use emsort_bench::CampaignBuilder;
use emsort_io::cache::CacheMethod;
use emsort_io::{format_size, parse_size, Progress};
use emsort_sort::gen::{generate, GenSpec};
use emsort_sort::verify::verify;
use emsort_sort::{sort_file, Format, SortPlan};

use crate::cmd::bench::report;
use crate::interrupt;
use crate::progress::Bar;

/// Run the main job on built-in data: generate 1 GiB of random u32 in a
/// temporary directory, sort it with M = a quarter of its size (so it really
/// goes to disk: several runs, then a merge), verify the output is sorted and
/// a permutation of the input, print what it cost, and clean up.
///
/// With --streams: measure on this machine what a system call per element,
/// stdio, an own buffer, mmap, O_DIRECT and io_uring cost (the quick stream
/// campaign, well under a minute).
#[derive(Args)]
#[command(
    after_help = "Sort your own file: emsort sort --help. The full stream campaign: emsort bench streams --help"
)]
pub struct DemoArgs {
    /// Size of the generated data.
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    size: u64,
    /// Run the quick stream campaign instead of the sort.
    #[arg(long)]
    streams: bool,
    /// Keep the files (data and sorted output, or the campaign's CSV and plots) in DIR.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// No progress bar and no warnings.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(a: DemoArgs) -> anyhow::Result<ExitCode> {
    // The work must happen on a disk: under $TMPDIR unless that is in memory
    // (tmpfs), else under the current directory.
    let temp = match &a.keep {
        Some(_) => None,
        None => Some(disk_tempdir("emsort-demo-")?),
    };
    let dir = match (&a.keep, &temp) {
        (Some(d), _) => {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
            d.clone()
        }
        (None, Some(t)) => t.path().to_path_buf(),
        (None, None) => unreachable!("a temporary directory when not --keep"),
    };
    if a.streams {
        streams(&a, &dir)?;
    } else {
        sort(&a, &dir)?;
    }
    if let Some(d) = &a.keep {
        println!("\nFiles kept in {}.", d.display());
    }
    drop(temp);
    Ok(ExitCode::SUCCESS)
}

fn sort(a: &DemoArgs, dir: &std::path::Path) -> anyhow::Result<()> {
    let items = a.size / 4;
    if items == 0 {
        bail!("--size must be at least 4 bytes");
    }
    let bar = Bar::new(a.quiet);
    let cancel = interrupt::flag();
    let input = dir.join("demo.u32");
    let output = dir.join("demo.sorted.u32");
    let bytes = items * 4;
    let memory = (bytes / 4).max(1 << 20);
    println!(
        "emsort demo: sort {} of random u32 ({items} items) with M = {}, in {}",
        format_size(bytes),
        format_size(memory),
        dir.display()
    );

    let t = Instant::now();
    generate(&GenSpec::items(Format::U32, items), &input, &bar, cancel)?;
    let gen_s = t.elapsed().as_secs_f64();
    println!("  1. generated the input            {gen_s:>7.2} s");

    // Cold cache, so the sort reads from the disk as a real one would.
    let cache = CacheMethod::best_available();
    cache.apply(&[&input])?;
    // The command line's default streams (`--io auto`): chosen for the
    // device under `dir`.
    let plan =
        SortPlan::builder(Format::U32).memory(memory).temp_dir(dir).io_auto().input_bytes(bytes).build()?;
    let stats = sort_file(&plan, &input, &output, &bar as &dyn Progress, cancel)?;
    println!(
        "  2. sorted it                       {:>7.2} s  ({:.0} MiB/s; {} streams, cache emptied with '{cache}' first)",
        stats.total_seconds,
        bytes as f64 / (1 << 20) as f64 / stats.total_seconds,
        plan.input_kind()
    );
    if let Some(why) = plan.io_choice() {
        println!("       streams: {}", why.trim_start_matches("default: "));
    }
    println!(
        "       run formation {:>6.2} s: {} runs of up to {} sorted on {} threads",
        stats.run_formation.seconds,
        stats.runs,
        format_size(plan.derived().run_bytes),
        plan.threads()
    );
    println!(
        "       merge         {:>6.2} s: {} merge(s) of up to {} runs, {:.2} passes over the data",
        stats.merge.seconds, stats.merges, stats.merge_order, stats.passes
    );
    println!(
        "       peak memory {:.0} MiB (M = {}), {} voluntary / {} involuntary context switches",
        stats.rusage.peak_rss_bytes as f64 / (1 << 20) as f64,
        format_size(memory),
        stats.rusage.voluntary_context_switches,
        stats.rusage.involuntary_context_switches
    );

    let t = Instant::now();
    let r = verify(&output, Format::U32, false, Some(&input), cancel)?;
    let verify_s = t.elapsed().as_secs_f64();
    if !r.ok() {
        bail!("the sorted output failed verification: {r:?}");
    }
    println!("  3. verified: {} items in order, same multiset as the input {:>5.2} s", r.items, verify_s);
    limits(&plan, &stats, &input, &output, cache, &bar, cancel)?;
    println!(
        "\nNext: emsort sort --help (your own file: numbers, records or text), \
         emsort demo --streams (what each I/O technique costs here), emsort bench streams --help."
    );
    Ok(())
}

/// Step 4: the machine's two limits for this sort, measured as the
/// benchmarks measure them (`emsort bench sort`): the I/O bound, the data
/// read and written once with O_DIRECT (cold cache) times the sort's
/// passes that reach the device (one where the runs stayed in the page
/// cache), and the CPU bound, the same sort with input, runs and output on
/// tmpfs; the larger, and the sort's time over it.
fn limits(
    plan: &SortPlan,
    stats: &emsort_sort::SortStats,
    input: &Path,
    output: &Path,
    cache: CacheMethod,
    bar: &Bar,
    cancel: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<()> {
    let bytes = stats.input_bytes;
    cache.apply(&[input])?;
    let mut row = RawRow::new("io-bound", "u32", bytes, bytes / 4, 1, 1);
    io_bound(input, output, &mut row)?;
    let _ = std::fs::remove_file(output);
    // Runs written through the page cache (`--io auto` does so only when
    // they fit under the kernel's background write-back threshold) are
    // deleted before they reach the device: it sees the input read once and
    // the output written once, whatever the passes.
    let cached = !plan.output_kind().bypasses_cache();
    let device_passes = if cached { 1.0 } else { stats.passes };
    let io = row.seconds * device_passes;
    println!("  4. this machine's limits for this sort (as emsort bench sort measures them):");
    println!(
        "       I/O bound {:>7.2} s  the data read ({:.2} s) and written ({:.2} s) once with O_DIRECT, × {:.2} passes{}",
        io,
        row.run_formation_s.unwrap_or(0.0),
        row.merge_s.unwrap_or(0.0),
        device_passes,
        if cached { " (the runs stayed in the page cache: only the input and the output reach the device)" } else { "" }
    );
    let cpu = match CpuBoundDir::create(Path::new(DEFAULT_CPU_BOUND_DIR), bytes) {
        Ok(shm) => {
            let copy = shm.stage(input)?;
            let p = SortPlan::builder(Format::U32)
                .memory(plan.memory())
                .temp_dir(shm.tmp())
                .io(emsort_io::StreamKind::Buffered)
                .input_bytes(bytes)
                .build()?;
            let s = sort_file(&p, &copy, &shm.output(), bar as &dyn Progress, cancel)?;
            println!(
                "       CPU bound {:>7.2} s  the same sort with input, runs and output on tmpfs ({DEFAULT_CPU_BOUND_DIR})",
                s.total_seconds
            );
            Some(s.total_seconds)
        }
        Err(why) => {
            println!("       CPU bound    -      not measured: {why}");
            None
        }
    };
    let (name, bound) = match cpu {
        Some(c) if c > io => ("CPU", c),
        _ => ("I/O", io),
    };
    println!(
        "     the sort took {:.2} s = {:.2}× the {name} bound, the larger of the two{}",
        stats.total_seconds,
        stats.total_seconds / bound.max(1e-9),
        if cpu.is_none() { " (of the one measured)" } else { "" }
    );
    Ok(())
}

fn streams(a: &DemoArgs, dir: &std::path::Path) -> anyhow::Result<()> {
    let out_dir = match &a.keep {
        Some(d) => d.clone(),
        None => dir.join("results"),
    };
    let cache = CacheMethod::best_available();
    let campaign = Campaign::quick()
        .cache(cache)
        .out_dir(&out_dir)
        .command_line(std::env::args().collect::<Vec<_>>().join(" "))
        .version(env!("CARGO_PKG_VERSION"));
    let bar = Bar::new(a.quiet);
    let outcome = campaign.run(&bar, interrupt::flag())?;
    if !a.quiet {
        for w in &outcome.warnings {
            eprintln!("emsort: warning: {w}");
        }
    }
    // Without --keep the files go away with the temporary directory: do not
    // point at them.
    print!("{}", report(&outcome, cache, a.keep.is_some()));
    println!("\n{}", reading(&outcome.summary));
    if a.keep.is_none() {
        println!("\nThe full campaign with its CSV files and plots: emsort bench streams (see --help).");
    }
    Ok(())
}
