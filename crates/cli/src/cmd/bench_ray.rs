//! `emsort bench ray --plot-only DIR`: the reports of the distributed sort
//! on Ray. The campaign itself runs in Python (`bench/ray/bench_ray.py`:
//! it needs Ray and the Python package), which writes `raw.csv` and
//! `machine.json` and then calls this command; the summary, the plot and
//! the README are made in `emsort_bench::ray`, with the published
//! Exoshuffle results beside this machine's.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

const AFTER_HELP: &str = "\
The campaign (one command; root, for the cold page cache):
  python3 bench/ray/bench_ray.py --quick                 # u32 256 MiB, minutes
  python3 bench/ray/bench_ray.py --out bench/results/2026-01-01-ray
It sorts each data set with `single` (the emsort binary with the Ray tasks' memory),
`single-inmem` (all in memory), `ray-pP` (emsort.ray.sort with P partitions) and
measures the I/O bound (the input copied twice with O_DIRECT), each on a cold cache,
then calls this command.

Files written into DIR (from DIR/raw.csv and DIR/machine.json alone):
  summary.csv         a row per (data set, engine): median, min, max, MB/s, ratios
                      to single, single-inmem and the I/O bound, Ray's phases
  plots/ray_time.svg  time per engine and data set (median, min-max bar, the I/O
                      bound as a mark)
  README.md           the command, the machine, the method, the table, and
                      Exoshuffle's published results judged beside this run's

Example:
  emsort bench ray --plot-only bench/results/2026-01-01-ray";

/// The distributed sort on Ray (run by bench/ray/bench_ray.py): remake its summary,
/// plot and README from its raw.csv.
#[derive(Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct RayArgs {
    /// Measure nothing: write summary.csv, plots/ray_time.svg and README.md of the Ray
    /// campaign in DIR from DIR/raw.csv and DIR/machine.json.
    #[arg(long, value_name = "DIR", required = true)]
    plot_only: PathBuf,
}

/// Runs `emsort bench ray`.
pub fn run(a: RayArgs) -> anyhow::Result<ExitCode> {
    let dir = &a.plot_only;
    let r = emsort_bench::ray::reports_from_csv(dir)?;
    print!("{}", emsort_bench::ray::table_markdown(&r.summary));
    if !r.claims.is_empty() {
        print!(
            "\nExoshuffle's published results beside this run:\n{}",
            emsort_bench::claims::lines(&r.claims)
        );
    }
    println!(
        "\nWrote {}, {} and {} plot(s) in {}",
        dir.join("summary.csv").display(),
        dir.join("README.md").display(),
        r.plots.len(),
        dir.join("plots").display()
    );
    Ok(ExitCode::SUCCESS)
}
