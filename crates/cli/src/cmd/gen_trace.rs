//! `emsort gen-trace`: write a synthetic trace and its data files.
//!
//! The workloads and the generation are in `emsort_bench::replay`; this
//! module turns flags into a call and prints the summary.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use emsort_bench::replay::{generate, human_bytes, Workload};

use crate::interrupt;
use crate::progress::Bar;

const AFTER_HELP: &str = "\
Workloads (the Chalmers thesis' traces of the Carmenta engine, chapter 5):
  ct     test suite: 652.88 MB read, 9.2 % of bytes in requests > 32 KiB;
         small random reads (4K-32K), some 64K-1M; up to 32 files
  am     animation files: 7 MB read, 99.8 % in requests > 32 KiB; a 4 KiB
         header, then one run of frames per file, front to back in chunks
         of 128K-1M
  im     interactive map: 2415 MB read, 0.6 % in requests > 32 KiB; small
         random tile reads (4K-32K), a few of 64K-256K; up to 64 files
  mixed  ct x 1/4, am x 64 and im x 1/8 interleaved: about 913 MB read, half
         of it in requests > 32 KiB (no fixed reader is best for every request)
Requests and offsets are multiples of 4 KiB. At scale 1 the data files are
tens of MiB (ct about 32 MiB, im about 64 MiB, am at least 32 MiB, of which
one run of frames is read), several times the kernel's readahead window, as
real map and animation files are. --scale multiplies the bytes read and the
file sizes (each part reads at least 1 MiB); the same kind, scale and seed
give the same trace and the same bytes.

Files written into DIR: <kind>_NNN.bin (seeded pseudo-random bytes) and
trace.csv (file,offset,size per line, file names relative to DIR), for
`emsort replay DIR/trace.csv`.

Examples:
  emsort gen-trace --kind mixed --dir /tmp/tr --scale 0.05
  emsort gen-trace --kind ct --dir traces/ct --seed 7
  emsort replay /tmp/tr/trace.csv --verify";

/// Write the data files and a trace (DIR/trace.csv) mimicking one of the
/// thesis' workloads, or a mix of them.
#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct GenTraceArgs {
    /// ct, am, im or mixed.
    #[arg(long, value_name = "KIND", value_parser = clap::value_parser!(Workload))]
    kind: Workload,
    /// Directory for the data files and trace.csv (created if needed).
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Size factor: 0.01 reads about 1 % of the workload's bytes.
    #[arg(long, value_name = "F", default_value_t = 1.0, value_parser = parse_scale)]
    scale: f64,
    /// Seed of the generators.
    #[arg(long, value_name = "S", default_value_t = 42)]
    seed: u64,
    /// No progress bar and no summary.
    #[arg(short, long)]
    quiet: bool,
}

fn parse_scale(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(f),
        _ => Err(format!("invalid scale '{s}' (expected a positive number, e.g. 0.01)")),
    }
}

pub fn run(a: GenTraceArgs) -> anyhow::Result<ExitCode> {
    let start = Instant::now();
    let bar = Bar::new(a.quiet);
    let s = generate(&a.dir, a.kind, a.scale, a.seed, &bar, interrupt::flag())
        .with_context(|| format!("cannot write the {} trace into {}", a.kind, a.dir.display()))?;
    if !a.quiet {
        let (_, target) = a.kind.target(a.scale);
        println!(
            "{}: {} requests, {} read, {:.2} % of bytes in requests > 32 KiB (target {:.1} %)",
            s.trace_path.display(),
            s.requests,
            human_bytes(s.bytes),
            s.large_share * 100.0,
            target * 100.0
        );
        println!(
            "{} data files, {} in {}; kind {}, scale {}, seed {}; {:.1} s",
            s.files,
            human_bytes(s.file_bytes),
            a.dir.display(),
            a.kind,
            a.scale,
            a.seed,
            start.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}
