//! `emsort sort`: the external merge sort of files and standard input.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use emsort_io::disks::DiskModel;
use emsort_io::StreamKind;
use emsort_sort::merge_policy::MergePolicy;
use emsort_sort::{
    sort, Format, Method, MethodKind, ParallelDiskStats, ParallelDisks, Sink, SortError, SortPlan, SortStats,
    Source, SrmOptions,
};

use crate::progress::Bar;

/// Sort a file larger than memory: numbers, fixed-size records or text lines.
///
/// The INPUT files (and `-`, standard input) are read once, in order, as one
/// input, as GNU `sort a b c` does; pipes and standard input are read as they
/// come, never copied first. Run formation reads M bytes at a time, sorts them
/// on all cores and writes sorted runs to a temporary directory; d-way merges
/// (a loser tree) then combine the runs into the output. An OUTPUT file is
/// written beside its target and renamed when complete, so OUTPUT may be an
/// INPUT, and an error or Ctrl-C leaves neither a partial output nor temporary
/// files; standard output, devices and FIFOs get the result as the last merge
/// produces it. `lines` output is byte for byte that of `LC_ALL=C sort`.
#[derive(Args)]
#[command(after_help = "Examples:\n  \
    emsort gen --count 268435456 -o data.u32 && emsort sort data.u32 -o sorted.u32 -S 256M\n  \
    emsort sort --format lines -S 25% -T /mnt/scratch big.txt -o big.sorted.txt\n  \
    emsort sort -f rec:100:0:10 -d 16 --io direct --stats stats.json recs.bin -o recs.sorted\n  \
    cat words.txt | emsort sort -f lines -r - > words.sorted\n  \
    emsort sort part-*.txt - extra.txt -o all.sorted.txt < more.txt\n  \
    emsort sort -f rec:104:0:8 -S 24M --block-size 256K --method srm --disks /d0,/d1,/d2,/d3,/d4,/d5 \\\n      \
    --stats srm.json recs.bin -o recs.sorted\n  \
    emsort sort -f rec:104:0:8 -S 24M --block-size 256K --method dsm --disks a,b,c --emulate-disk 60M,1ms recs.bin -o r.out\n\n\
    On D disks (--method dsm|srm, Barve & Vitter): runs are striped block by block (B = --block-size)\n\
    round-robin over the --disks directories. DSM moves one block on every disk at once, so it merges\n\
    about M / (2·D·B) runs at a time; SRM starts each run on a random disk and reads blocks ahead in\n\
    the order the merge needs them (forecasting), so it merges about M / (2·B) runs at a time and\n\
    needs fewer passes. Both form the same runs. --stats then adds U, the passes, R, the parallel\n\
    reads, ν and flushes of each pass and the merge's streaming rate.\n\n\
    Sizes take K, M, G, T suffixes (powers of 1024) or N% of the machine's RAM.\n\
    Exit status: 0 sorted, 2 bad usage or input, 3 I/O failure (full disk …), 130 Ctrl-C, 143 SIGTERM.")]
pub struct SortArgs {
    /// lines (text, as `LC_ALL=C sort`), or a binary format: u32, i32, u64, i64, f32, f64 (NaNs
    /// last), rec:SIZE:KEY_OFFSET:KEY_LEN (fixed-size records, bytewise key).
    #[arg(long, short = 'f', default_value = "lines", value_parser = clap::value_parser!(Format))]
    format: Format,
    /// Memory M for the sort's buffers and in-memory sorting [default: 25% of the available RAM, at most about twice the input].
    #[arg(short = 'S', long, value_name = "SIZE", value_parser = emsort_sort::budget::parse_memory)]
    memory: Option<u64>,
    /// Fan-in d: how many runs one merge reads (≥ 2) [default: as many as M allows, at most 64].
    #[arg(short = 'd', long, value_name = "D")]
    fan_in: Option<usize>,
    /// Directory for temporary runs; repeat to spread runs over several disks [default: $TMPDIR or /tmp].
    #[arg(short = 'T', long = "temp-dir", value_name = "DIR")]
    temp_dirs: Vec<PathBuf>,
    /// Threads for in-memory sorting [default: all cores; more than the CPUs this process may use
    /// are capped, with a note].
    #[arg(long, value_name = "N")]
    parallel: Option<usize>,
    /// Sort in descending order.
    #[arg(short, long)]
    reverse: bool,
    /// Merge policy: fifo (the seeds' queue) or optimal (fewest passes, smallest runs first).
    #[arg(long, default_value = "optimal", value_parser = clap::value_parser!(MergePolicy))]
    policy: MergePolicy,
    /// Stream kind for every read and write: syscall, stdio, buffered, mmap, direct or uring [default: direct: O_DIRECT, 1.5x faster than buffered here and the page cache keeps nothing; where the file system refuses O_DIRECT (tmpfs), buffered I/O with the same block size].
    #[arg(long = "io", value_name = "KIND", default_value = "direct", hide_default_value = true, value_parser = clap::value_parser!(StreamKind))]
    io: StreamKind,
    /// Block size B of every stream [default: M/16 as a power of two, within 4K … 1M].
    #[arg(long, value_name = "SIZE", value_parser = parse_block)]
    block_size: Option<usize>,
    /// How runs are merged: plain (d-way merges over the temp dirs), dsm (disk-striped mergesort:
    /// each I/O moves one block on every disk at once) or srm (simple randomized mergesort: each run
    /// starts on a random disk, blocks are read ahead by forecasting).
    #[arg(long, default_value = "plain", value_parser = clap::value_parser!(MethodKind))]
    method: MethodKind,
    /// The D disks of --method dsm or srm, one directory each, comma-separated or repeated
    /// (D = how many); runs are striped over them in blocks of --block-size [default: the temp dirs].
    #[arg(long, value_name = "DIR,DIR,…", value_delimiter = ',')]
    disks: Vec<PathBuf>,
    /// Serve each disk of dsm/srm at BANDWIDTH bytes per second with LATENCY per request
    /// (e.g. 60M,1ms or 1G,200us): the parallel-disk model on one device.
    #[arg(long, value_name = "BANDWIDTH,LATENCY", value_parser = clap::value_parser!(DiskModel))]
    emulate_disk: Option<DiskModel>,
    /// Seed of SRM's random starting disks: the same seed draws the same disks, so a sort is
    /// reproducible.
    #[arg(long, value_name = "S", default_value_t = SortPlan::DEFAULT_SEED)]
    seed: u64,
    /// Cap on SRM's merge order R [default: the smallest R that gives the fewest passes within M].
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(usize))]
    srm_max_order: Option<usize>,
    /// Write the statistics (runs, passes, bytes and seconds per phase, peak RSS, context switches, page faults) as JSON.
    #[arg(long, value_name = "FILE.json")]
    stats: Option<PathBuf>,
    /// Print the sort plan (M, d, B, run length, runs, passes) on standard error before sorting.
    #[arg(long)]
    show_plan: bool,
    /// No progress bar and no summary line.
    #[arg(short, long)]
    quiet: bool,
    /// Write the result to OUTPUT (may be INPUT itself) instead of standard output.
    #[arg(short = 'o', long, value_name = "OUTPUT")]
    output: Option<PathBuf>,
    /// The files to sort, read in order as one input (as GNU `sort a b c`);
    /// `-` or none reads standard input.
    #[arg(value_name = "INPUT", default_value = "-")]
    inputs: Vec<PathBuf>,
}

fn parse_block(s: &str) -> Result<usize, String> {
    let b = emsort_io::parse_size(s)?;
    if b == 0 {
        return Err("the block size must be at least 1 byte".into());
    }
    usize::try_from(b).map_err(|_| format!("block size '{s}' is too large"))
}

/// Keeps the I/O error at the top of the chain, so `exit_code` and the
/// message see it as it is.
fn to_anyhow(e: SortError) -> anyhow::Error {
    match e.into_io() {
        Ok(io) => anyhow::Error::new(io),
        Err(other) => anyhow::Error::new(other),
    }
}

/// The merge method the flags describe, with its parameters. A disk
/// option the method has no place for is refused here (it would be
/// ignored); everything else about them (SRM's cap ≥ 2, disks that are
/// directories) is checked when the plan is built.
fn method(a: &SortArgs) -> anyhow::Result<Method> {
    let disks = ParallelDisks { dirs: a.disks.clone(), emulate: a.emulate_disk, seed: a.seed };
    match a.method {
        MethodKind::Plain => {
            let given = [
                (!a.disks.is_empty(), "--disks"),
                (a.emulate_disk.is_some(), "--emulate-disk"),
                (a.srm_max_order.is_some(), "--srm-max-order"),
            ];
            if let Some((_, flag)) = given.iter().find(|(on, _)| *on) {
                anyhow::bail!(
                    "{flag} needs --method dsm or srm (the plain merge spreads its runs over the temp dirs, -T)"
                );
            }
            Ok(Method::Plain)
        }
        MethodKind::Dsm => {
            if a.srm_max_order.is_some() {
                anyhow::bail!("--srm-max-order needs --method srm (DSM's merge order is M / (2·D·B))");
            }
            Ok(Method::Dsm(disks))
        }
        MethodKind::Srm => Ok(Method::Srm(disks, SrmOptions::default().max_order(a.srm_max_order))),
    }
}

pub fn run(a: SortArgs) -> anyhow::Result<ExitCode> {
    crate::interrupt::arm_watchdog();
    let method = method(&a)?;
    let is_stdin = |p: &PathBuf| p.as_os_str() == "-";
    // Pipes, devices and files of /proc are streamed: their size is unknown.
    let input_bytes = a
        .inputs
        .iter()
        .map(|p| if is_stdin(p) { None } else { emsort_io::input_size(p).ok().flatten() })
        .sum::<Option<u64>>();
    let memory = a.memory.unwrap_or_else(|| emsort_sort::budget::default_memory(input_bytes));
    let mut b = SortPlan::builder(a.format)
        .memory(memory)
        .io(a.io)
        .reverse(a.reverse)
        .policy(a.policy)
        .method(method);
    if let Some(d) = a.fan_in {
        b = b.fan_in(d);
    }
    if let Some(bs) = a.block_size {
        b = b.block_size(bs);
    }
    if let Some(n) = a.parallel {
        b = b.threads(n);
    }
    for t in &a.temp_dirs {
        b = b.temp_dir(t);
    }
    if let Some(n) = input_bytes {
        b = b.input_bytes(n);
    }
    let plan = b.build().map_err(to_anyhow).context("cannot plan the sort")?;
    if let Some(n) = a.parallel.filter(|&n| n > plan.threads()) {
        eprintln!("emsort: note: --parallel {n} capped at {}, the CPUs this process may use", plan.threads());
    }
    if let Some(w) = plan.memory_warning() {
        eprintln!("emsort: warning: {w}");
    }
    if a.show_plan {
        eprint!("{plan}");
    }
    let other_links = a.output.as_deref().map_or(0, other_links);
    let bar = Bar::new(a.quiet);
    let flag = crate::interrupt::flag();
    let sources =
        a.inputs.iter().map(|p| if is_stdin(p) { Source::Stdin } else { Source::Path(p) }).collect();
    let sink = match &a.output {
        Some(o) => Sink::Path(o),
        None => Sink::Stdout,
    };
    let stats = match sort(&plan, sources, sink, &bar, flag) {
        Ok(s) => s,
        // The reader of standard output went away (`emsort sort … | head`):
        // stop quietly, as other filters do; temporary files are gone.
        Err(e) if is_broken_pipe(&e) => return Ok(ExitCode::SUCCESS),
        Err(e) => {
            let names: Vec<String> = a
                .inputs
                .iter()
                .map(|p| if is_stdin(p) { "standard input".into() } else { p.display().to_string() })
                .collect();
            let what = names.join(", ");
            return Err(to_anyhow(e).context(format!("cannot sort {what}")));
        }
    };
    if !a.quiet {
        report_stale();
        if other_links > 0 {
            let o = a.output.as_deref().expect("an output").display();
            eprintln!(
                "emsort: note: {o} had {other_links} other name{} (hard link{}); {} the previous content",
                if other_links == 1 { "" } else { "s" },
                if other_links == 1 { "" } else { "s" },
                if other_links == 1 { "it keeps" } else { "they keep" },
            );
        }
    }
    if let Some(path) = &a.stats {
        write_stats(path, &stats)?;
    }
    // Like the progress bar: a summary for a person at a terminal, silence
    // in scripts and pipelines (GNU sort prints nothing).
    if !a.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        summary(&stats);
    }
    Ok(ExitCode::SUCCESS)
}

/// How many other names (hard links) an output file that will be replaced
/// has: they keep the previous content.
fn other_links(output: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    match emsort_io::OutputTarget::classify(output) {
        Ok(emsort_io::OutputTarget::Replace(_)) => {
            std::fs::metadata(output).map_or(0, |m| if m.is_file() { m.nlink().saturating_sub(1) } else { 0 })
        }
        _ => 0,
    }
}

/// Says what this run removed of killed emsort runs (their temporary
/// directories and partial outputs).
pub(crate) fn report_stale() {
    let removed = emsort_io::temp::take_stale_reports();
    if removed.is_empty() {
        return;
    }
    let bytes: u64 = removed.iter().map(|e| e.bytes).sum();
    let mut dirs: Vec<String> = removed
        .iter()
        .map(|e| e.path.parent().map_or_else(|| ".".into(), |p| p.display().to_string()))
        .collect();
    dirs.dedup();
    let size = match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    };
    eprintln!(
        "emsort: note: removed what killed emsort runs left in {}: {} temporary entr{}, {size}",
        dirs.join(", "),
        removed.len(),
        if removed.len() == 1 { "y" } else { "ies" },
    );
}

fn is_broken_pipe(e: &SortError) -> bool {
    let src = e.io().and_then(std::error::Error::source);
    src.and_then(|s| s.downcast_ref::<std::io::Error>())
        .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

fn write_stats(path: &std::path::Path, stats: &SortStats) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(stats)?;
    std::fs::write(path, json + "\n")
        .with_context(|| format!("cannot write the statistics to {}", path.display()))
}

fn summary(s: &SortStats) {
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    eprintln!(
        "sorted {:.1} MiB of {} in {:.2} s ({:.0} MiB/s): {} runs, {} merges of at most {} runs, \
         {:.2} passes; run formation {:.2} s, merge {:.2} s; peak RSS {:.1} MiB",
        mib(s.input_bytes),
        s.plan.format,
        s.total_seconds,
        mib(s.input_bytes) / s.total_seconds.max(1e-9),
        s.runs,
        s.merges,
        s.merge_order,
        s.passes,
        s.run_formation.seconds,
        s.merge.seconds,
        mib(s.rusage.peak_rss_bytes),
    );
    if let Some(pd) = &s.parallel_disks {
        eprintln!("{}", parallel_disks_summary(pd));
    }
}

/// `a, b, c` of per-pass values.
fn per_pass<T: std::fmt::Display>(xs: &[T]) -> String {
    xs.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
}

/// The lines a DSM or SRM sort adds to the summary: D, B, U, passes, R,
/// parallel reads, ν and flushes per pass, the merge time and rate.
fn parallel_disks_summary(pd: &ParallelDiskStats) -> String {
    let nu: Vec<String> = pd.nu.iter().map(|v| format!("{v:.3}")).collect();
    let mut s = format!(
        "{} on D = {} disks, B = {}: U = {} runs, {} merge pass{}, R = {}; parallel reads {}, ν = {}",
        pd.method.name().to_uppercase(),
        pd.disks,
        emsort_io::format_size(pd.block_size as u64),
        pd.runs,
        pd.passes,
        if pd.passes == 1 { "" } else { "es" },
        per_pass(&pd.merge_orders),
        per_pass(&pd.parallel_reads),
        per_pass(&nu),
    );
    if pd.method == MethodKind::Srm {
        s.push_str(&format!(", flushes {}", per_pass(&pd.flushes)));
    }
    s.push_str(&format!(
        "\nmerge {:.2} s, streaming {:.1} MiB/s (read + written){}",
        pd.merge_seconds,
        pd.merge_rate / (1u64 << 20) as f64,
        match &pd.emulated_disk {
            Some(m) => format!("; emulated disks {m} each"),
            None => String::new(),
        }
    ));
    s
}
