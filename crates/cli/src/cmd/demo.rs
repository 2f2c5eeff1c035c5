//! `emsort demo`: the quick stream campaign in a temporary directory, its
//! table and a one-paragraph reading of it.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use emsort_bench::scratch::disk_tempdir;
use emsort_bench::streams::{reading, Campaign};
use emsort_io::cache::CacheMethod;

use crate::cmd::bench::report;
use crate::interrupt;
use crate::progress::Bar;

/// Measure on this machine what a system call per element, stdio, an own buffer,
/// mmap, O_DIRECT and io_uring cost: runs `emsort bench streams --quick` (well under
/// a minute) in a temporary directory, prints the table and what it says, and
/// removes the directory.
#[derive(Args)]
#[command(after_help = "The full campaign and its flags: emsort bench streams --help")]
pub struct DemoArgs {
    /// Keep the results (CSV, machine.json, plots) in DIR instead of a temporary directory.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// No progress bar and no warnings.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(a: DemoArgs) -> anyhow::Result<ExitCode> {
    // The temporary directory must be on a disk: under $TMPDIR unless that
    // is in memory (tmpfs), else under the current directory.
    let temp = match &a.keep {
        Some(_) => None,
        None => Some(disk_tempdir("emsort-demo-")?),
    };
    let out_dir = match (&a.keep, &temp) {
        (Some(d), _) => d.clone(),
        (None, Some(t)) => t.path().join("results"),
        (None, None) => unreachable!("a temporary directory when not --keep"),
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
    match &a.keep {
        Some(d) => println!("\nResults kept in {}.", d.display()),
        None => {
            println!("\nThe full campaign with its CSV files and plots: emsort bench streams (see --help).")
        }
    }
    drop(temp);
    Ok(ExitCode::SUCCESS)
}
