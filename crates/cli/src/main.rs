//! The `emsort` command: argument parsing, progress bars and exit codes.
//! Every algorithm lives in the library crates; this binary only glues.

mod annotate;
mod cmd;
mod gnu_args;
mod interrupt;
mod oom;
mod progress;

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{CommandFactory, Parser, Subcommand};

#[global_allocator]
static ALLOCATOR: oom::Guard = oom::Guard;

/// Sort and stream data larger than memory, and measure what each I/O
/// strategy costs on this machine.
#[derive(Parser)]
#[command(name = "emsort", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Sort a file larger than memory (numbers, records, text lines, CSV, JSON lines, Parquet or Arrow tables) with an external merge sort.
    Sort(Box<cmd::sort::SortArgs>),
    /// Generate a seeded data file (binary numbers, records or text lines).
    Gen(cmd::gen::GenArgs),
    /// Check that a file is sorted (and, with --input, a permutation of the original).
    Verify(cmd::verify::VerifyArgs),
    /// Run an experiment campaign and write raw CSV, a summary, machine facts and plots.
    #[command(subcommand)]
    Bench(Box<cmd::bench::BenchCommand>),
    /// Run the main job on built-in data: generate, sort and verify 1 GiB of u32 in a temp directory.
    Demo(cmd::demo::DemoArgs),
    /// Replay a trace of read calls (file,offset,size) with each reader kind on a cold cache.
    Replay(cmd::replay::ReplayArgs),
    /// Write a synthetic trace and its data files (the thesis' ct, am, im workloads, or mixed).
    GenTrace(cmd::gen_trace::GenTraceArgs),
    /// Measure this machine's crossover points and write the adaptive reader's calibration file.
    Calibrate(cmd::calibrate::CalibrateArgs),
}

/// Exit codes: 0 success, 1 a check failed (verify), 2 bad usage or input,
/// 3 an I/O failure (full disk, permissions …); a signal (SIGINT, SIGTERM,
/// SIGHUP …, see `interrupt`) ends the process by that signal once its
/// temporary files are removed (130, 143, 129 … in a shell).
/// Makes glibc serve every allocation of 256 KiB or more (chunk buffers,
/// indexes, read-ahead and write-behind blocks) with its own mapping, which
/// goes back to the system when freed. Left to itself, glibc raises this
/// threshold after the first large free (up to 32 MiB), so later buffers
/// below it come from the heap, where freed ones stay resident: a sort's
/// peak RSS then exceeded M by 20 MiB and more (lines, M = 64 MiB: M + 19.5
/// MiB; with the fixed threshold M + 3.2 MiB).
fn large_buffers_to_mmap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before any
    // other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 10);
        // Under `ulimit -v`, each thread's own arena would reserve 64 MiB of
        // address space (6 of them took 380 MiB beside M = 160 MiB): one
        // arena for all then, so the limit serves the sort's buffers.
        if rustix::process::getrlimit(rustix::process::Resource::As).current.is_some() {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}

/// Before a table sort of budget `memory`: blocks under M/16 (at most
/// 8 MiB, at least the usual 256 KiB) from glibc's heap again. Arrow and
/// Parquet allocate and free a batch's columns (a batch is at most M/24),
/// a page's bytes and a row group's encoders (256 KiB – 8 MiB each) for
/// every batch; mapping each afresh faulted in 6.5 M pages for 1 GiB of
/// Parquet (17 s of system time in a 40 s sort, `-S 256M`), which the heap
/// serves from memory it keeps. Measured on that file: `-S 256M` 8 MiB
/// 17.2 s, 4 MiB 20.4 s (229 and 221 MiB resident); `-S 64M` 4 MiB 22.3 s
/// (106 MiB), 8 MiB 25.6 s (126 MiB), 256 KiB 25.9 s (90 MiB). The sort's
/// chunk buffers, larger, stay mapped.
///
/// The heap keeps up to M/8 (1–64 MiB) of free memory at its top instead
/// of glibc's fixed 128 KiB (fixed once the threshold above is set): the
/// 1.5 MiB blocks of framed rows and the batches' buffers, freed on one
/// thread and made again on another, went back to the system and were
/// faulted in again — 1.1 M page faults in the same sort. Measured
/// (`GLIBC_TUNABLES=glibc.malloc.trim_threshold`, 64 MiB, 5 pairs): 0.22 M
/// faults, system time 7.1 → 4.4 s, wall 0.92×, peak RSS 213 → 223 MiB.
pub(crate) fn table_buffers_to_heap(memory: u64) {
    let threshold = (memory / 16).clamp(256 << 10, 8 << 20) as i32;
    let trim = (memory / 8).clamp(1 << 20, 64 << 20) as i32;
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters (glibc takes the
    // main arena's lock); a block keeps the kind it was given when freed.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, threshold);
        libc::mallopt(libc::M_TRIM_THRESHOLD, trim);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = (threshold, trim);
}

/// Started as `sort` (a link named so): GNU sort's program name in
/// messages, the arguments are `emsort sort`'s, and `--quiet` is implied.
static AS_SORT: AtomicBool = AtomicBool::new(false);

/// The program name messages begin with: `emsort`, or `sort` when the
/// binary was started under that name.
pub(crate) fn program() -> &'static str {
    if AS_SORT.load(Ordering::Relaxed) {
        "sort"
    } else {
        "emsort"
    }
}

/// Whether the binary was started as `sort`: then standard error holds
/// only what GNU sort's would (no warnings of emsort's own).
pub(crate) fn as_sort() -> bool {
    AS_SORT.load(Ordering::Relaxed)
}

/// How the user calls the sort, for "Try '… --help'".
pub(crate) fn sort_command() -> &'static str {
    if AS_SORT.load(Ordering::Relaxed) {
        "sort"
    } else {
        "emsort sort"
    }
}

/// The command line, with `emsort sort`'s arguments read as GNU sort reads
/// them (`gnu_args`); an argument error is reported here, exit status 2.
fn arguments() -> Result<Vec<OsString>, ExitCode> {
    let mut args: Vec<OsString> = std::env::args_os().collect();
    let name = args.first().and_then(|a| std::path::Path::new(a).file_name().map(|n| n.to_os_string()));
    if name.is_some_and(|n| n == "sort") {
        AS_SORT.store(true, Ordering::Relaxed);
        // clap's usage line then reads "emsort sort", what runs.
        args[0] = "emsort".into();
        args.insert(1, "sort".into());
    }
    if args.get(1).is_some_and(|a| a == "sort") {
        let cli = Cli::command();
        let sort = cli.find_subcommand("sort").expect("the sort subcommand");
        match gnu_args::canonical(&args[2..], sort, gnu_args::Env::current()) {
            Ok(canonical) => {
                args.truncate(2);
                // As `sort`, standard error holds what GNU's does: no
                // progress bar, summary or notes (`--quiet`).
                if AS_SORT.load(Ordering::Relaxed) {
                    args.push("--quiet".into());
                }
                args.extend(canonical.args);
                let _ = gnu_args::TRADITIONAL_KEYS.set(canonical.traditional_keys);
            }
            Err(e) => {
                for line in &e.lines {
                    eprintln!("{}: {line}", program());
                }
                for line in &e.tail {
                    eprintln!("{line}");
                }
                if e.usage {
                    eprintln!("Try '{} --help' for more information.", sort_command());
                }
                return Err(ExitCode::from(e.status));
            }
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    large_buffers_to_mmap();
    // Before anything else: a signal that comes during argument parsing
    // must still end with 130/143 and no leftovers.
    interrupt::install();
    let args = match arguments() {
        Ok(args) => args,
        Err(code) => return code,
    };
    let cli = Cli::parse_from(args);
    let result = match cli.command {
        Command::Sort(a) => cmd::sort::run(*a),
        Command::Gen(a) => cmd::gen::run(a),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Bench(a) => cmd::bench::run(*a),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Replay(a) => cmd::replay::run(a),
        Command::GenTrace(a) => cmd::gen_trace::run(a),
        Command::Calibrate(a) => cmd::calibrate::run(a),
    };
    match result {
        // A signal that came once the work was done (a commit it did not
        // cut short): the process still dies of it, as GNU sort would.
        Ok(_) if interrupt::interrupted() => interrupt::die(),
        Ok(code) => code,
        Err(e) if interrupt::interrupted() => {
            if interrupt::signal() != libc::SIGPIPE {
                eprintln!("{}: interrupted; temporary files removed ({})", crate::program(), describe(&e));
            }
            interrupt::die()
        }
        Err(e) => {
            eprintln!("{}: {}", crate::program(), describe(&e));
            ExitCode::from(cmd::exit_code(&e))
        }
    }
}

/// The error and its causes, `: `-separated, leaving out a cause whose text
/// an outer message already includes (library errors put the system error in
/// their message and also return it as their source).
fn describe(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if !text.contains(&c) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&c);
        }
    }
    text
}
