//! The README of a sort campaign's output directory: what was run, the
//! files, the tools, the cost model, the columns of `raw.csv` and the
//! points ([`Readme::text`]), then, once the runs are done, the tables read
//! back from `summary.csv` ([`results`]): which bound binds, the keys
//! experiment, and the published claims set beside this machine's numbers.
//!
//! The campaign writes the README three times: at the start (the plots to
//! come), again if STXXL or the keys experiment failed, and at the end with
//! the plots drawn and the tables.

use std::path::PathBuf;

use emsort_io::cache::CacheMethod;
use emsort_io::format_size;

use super::columns::{RAW_COLUMNS, SUMMARY_COLUMNS};
use super::facts::SortMachine;
use super::point::Point;
use crate::sort::fio::IO_BOUND_BLOCK;
use crate::sort::keys::keys_table;
use crate::sort::plots::describe_plot;
use crate::sort::record::SummaryRow;
use crate::sort::report::{self, bounds_table};

/// What the README says of the campaign itself: its command, cache
/// method, points and how emsort runs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Readme<'a> {
    /// The command line that started the campaign.
    pub command_line: &'a str,
    /// How the page cache was emptied before each run.
    pub cache: CacheMethod,
    /// The emsort points, in the order they run.
    pub points: &'a [Point],
    /// Whether emsort runs as a child process (`emsort sort … --stats FILE
    /// -q`) rather than in the harness's process.
    pub child_process: bool,
}

impl Readme<'_> {
    /// The README: the command, the files, the tools, the cost model, the
    /// columns and the points; `plots`, the SVG files drawn (`None` before
    /// they are: the README written at the start says they come at the end).
    pub(super) fn text(&self, facts: &SortMachine, plots: Option<&[PathBuf]>) -> String {
        let mut points = String::new();
        for p in self.points {
            points.push_str(&format!("- {} × {} reps\n", p.label(), p.reps));
        }
        format!(
            "# emsort sort campaign (experiment 2: the external sort)\n\n\
             Command: `{cmd}`\n\n\
             {profile}Page cache emptied before every run with `{cache}`. emsort: {runs_how}; SIMD level \
             {simd}. GNU sort: {gnu}. \
             STXXL: {stxxl}; driver {driver}.{stxxl_errors}\n\n\
             ## Files\n\n\
             - `raw.csv`: a row per run of every tool, written as the run finished.\n\
             - `summary.csv`: {summary}\n\
             - `machine.json`: the machine, the command, GNU sort's version, STXXL's version, the C++ \
             compiler's, how the STXXL driver was built (or why not), any STXXL run that failed, and \
             where the CPU bound ran or why it did not (`cpu_bound`).\n\
             - `plots/`: {plots}\n\n\
             ## Tools\n\n\
             - `emsort`: {emsort_tool} with the point's M, d, policy, stream kind and threads \
             (B = the plan's default for M and d); output verified (in order, same multiset).\n\
             - `emsort-stdio` (with `--stdio`): the same run from standard input to standard output, \
             `emsort sort … -q < INPUT > OUTPUT` (the input read once with read(2) as a stream of \
             unknown size, the output written as the last merge produces it), right after the \
             `emsort` run of the same point; its ratio to `emsort` is what a pipeline pays.\n\
             - `emsort-baseline` (with `--baseline EXE`): the same run with another emsort binary \
             (an earlier build), beside the `emsort` run of the same point, alternating with it: \
             `emsort` runs first in odd repetitions and second in even ones (in the keys experiment \
             per key sort; its output checked like emsort's): before and after side by side \
             in the same run, `ratio_to_baseline` in the summary.\n\
             - `gnu-sort`: `LC_ALL=C sort -S M --parallel=P -T TMP -o OUT` on `lines` inputs; output \
             compared byte for byte with emsort's.\n\
             - `uutils-sort`: uutils coreutils' `coreutils sort` with GNU sort's options on `lines` \
             inputs ({uutils}); output compared byte for byte with emsort's.\n\
             - Keys experiment (`experiment` = `keys`; `format` = the data set, about N bytes from \
             `emsort gen --format DATA`, seed 42: `csv`, typed lines `id,category,amount,date`; \
             `csv-export`, a CSV export with a header `id,name,city,amount,date,note` and quoted fields \
             holding commas, doubled quotes and newlines; `jsonl`, JSON events one a line; `words`, \
             natural-language-like words one a line with accented letters): per key sort (column \
             `keys`, after `LC_ALL=LOCALE ` when the row sets a locale; every tool runs with that \
             `LC_ALL`, `C` otherwise), M and threads, on a cold cache each: `emsort` = `emsort sort KEYS \
             -S M --parallel T -T TMP --stats F --quiet -o OUT` (its default fan-in, policy and streams; \
             KEYS e.g. `--csv --header -k amount:n`, `--jsonl -k .ts:n`); `gnu-sort` = `sort KEYS -S M \
             --parallel=T -T TMP -o OUT` on `csv` and `words`, the reference there; `uutils-sort` = \
             uutils coreutils' `coreutils sort` with the same options on `csv` ({uutils}); `duckdb` = \
             DuckDB ({duckdb}) on `csv`, `csv-export`, `jsonl` through `bench/duckdb/duckdb_sort.py`: \
             `SET memory_limit` = M, `threads` = T, `temp_directory`, then `COPY (SELECT … FROM \
             read_csv(IN, …) ORDER BY …) TO OUT` — `-t, -k3,3n`: ORDER BY amount; `-t, -k2,2 -k3,3nr`: \
             ORDER BY category, amount DESC; `-u`: SELECT DISTINCT line ORDER BY line; `-t, -k1,1n -u`: \
             SELECT DISTINCT ON (id) ORDER BY id; `amount:n`, `name`: read_csv(IN, header=true) ORDER BY \
             amount, name, written with a header; `.ts:n`, `.amount:n`: read_json(IN, \
             format='newline_delimited') ORDER BY TRY_CAST(ts AS DOUBLE) (amount), written as JSON \
             lines; `polars` = Polars ({polars}) on `csv-export` and `jsonl` through \
             `bench/polars/polars_sort.py` with POLARS_MAX_THREADS = T: `pl.scan_csv(IN).sort(COLUMN)\
             .sink_csv(OUT)` (`scan_ndjson` … `sink_ndjson`), the streaming engine — Polars has no \
             memory limit, so M does not bind it: its peak RSS is in the row; `xan` = `RAYON_NUM_THREADS=T xan \
             sort -e -m M_MiB --tmp-dir TMP -p [-N] -s COLUMN -o OUT IN` on `csv-export` ({xan}): its \
             external sort with M as its memory limit. On `csv` and \
             `words` emsort's and uutils sort's outputs are compared byte for byte with GNU sort's \
             (with emsort's when GNU sort is missing or failed); on `csv-export` and `jsonl`, which GNU \
             sort cannot parse, emsort's output is the reference, checked alone: `emsort sort -c` with \
             the same options and locale finds it in order and it holds as many records as the input \
             (a CSV export's records counted with the `csv` crate); DuckDB, Polars and xan, whose ties \
             and number format differ, by the records of their output. `verified`: reference, \
             identical, rows, unchecked, MISMATCH or FAILED (`error` says why; a failed run's time is \
             left out of the summary, its row stays). Once per input and repetition, after its key \
             sorts, the `io-bound` run below (its `keys` empty); with `cpu-bound` (the same sort and \
             locale on tmpfs) it gives each key sort its binding bound. The chart `keys_{{data}}_*.svg` \
             draws each tool's median and min – max per key sort with the two bounds.{keys_problems}\n\
             - `in-memory`: read the whole file, sort it on all cores (numbers: emsort's radix sort; records, lines: `par_sort`), write (where 2-3× N \
             fits in half the memory available); output verified.\n\
             - `stxxl`: on `u32` inputs, STXXL's `stxxl::sorter` (pipelined run formation and merge) through \
             the driver `bench/stxxl/stxxl_sort.cpp`, compiled with `g++ -O3` at the start; the same M, \
             OpenMP threads = the point's threads (`OMP_WAIT_POLICY=passive`), its scratch file (O_DIRECT, \
             `syscall` I/O) in the same \
             temporary directory; a child process measured like GNU sort. `run_formation_s` / `merge_s` \
             are the driver's own: pushing the input into the sorter until its last run is written / \
             merging and writing the output. Output compared byte for byte with emsort's; a failed run \
             is listed in machine.json (`stxxl_errors`), not a row.\n\
             - `io-bound` ({io_bound}): read the input once and write as many bytes once (the O_DIRECT \
             copy: streams of {iob} blocks, write synced; fio: its own I/O time of a sequential read \
             and write, see `emsort_bench::sort::fio`); `run_formation_s` is the read, `merge_s` the write. A sort that \
             reads and writes its data twice cannot beat 2 × this: the summary's `io_bound_s`. Once per \
             input and repetition, csv inputs of the keys experiment included.\n\
             - `cpu-bound` ({cpu_bound}): the other limit of the machine, the same sort with no device: \
             {cpu_tool} with its input copied into a directory on tmpfs, `-T` there, the output there, \
             `--io buffered` (tmpfs refuses O_DIRECT), the page cache not emptied (the files are memory); \
             once per input and (M, threads) of the grid, with emsort's default fan-in, policy and block \
             size for M (recorded in the row), so an emsort point with another d or stream kind is set \
             beside the best CPU time at its M; in the keys experiment, per key sort, (M, threads) and \
             repetition, emsort with the same key options. Output verified like emsort's (keys: byte for \
             byte against the reference). tmpfs is not a pure CPU bound: the kernel allocates, zeroes and \
             copies every page of the runs and the output, which is system time (a 1 GiB u32 sort in \
             /dev/shm took 2.0–2.8 s of system time of ~10 s CPU on the development machine): the rows' \
             `user_s` and `system_s` tell them apart. A sort on a disk should approach the larger of \
             2 × io-bound and cpu-bound; the table below says which one binds.\n\n\
             Every tool's `seconds` includes an `fsync` of its output.\n\n\
             ## Cost model\n\n\
             With N the input size in bytes, B emsort's block size and p = `predicted_passes` \
             (run formation counts as the first pass, each merge level adds the fraction of the data \
             it merges; from the plan's schedule), a sort moves\n\n\
             `predicted_blocks = ceil(2 · N · p / B)`\n\n\
             block transfers (each pass reads and writes the data once). `blocks_moved` = \
             ceil((bytes_read + bytes_written) / B) is what emsort really moved.\n\n\
             ## Columns of raw.csv\n\n{cols}\n\
             ## Points\n\n{points}",
            cmd = self.command_line,
            profile = match &facts.profile {
                Some(p) => format!("Machine profile: {}.\n\n", p.sentence()),
                None => String::new(),
            },
            simd = facts.simd,
            cache = self.cache,
            gnu = facts.gnu_sort_version,
            stxxl = facts.stxxl,
            driver = facts.stxxl_driver,
            stxxl_errors = if facts.stxxl_errors.is_empty() {
                String::new()
            } else {
                format!(" Failed STXXL runs (no row): {}.", facts.stxxl_errors.join("; "))
            },
            runs_how = facts.emsort_runs,
            emsort_tool = match self.child_process {
                true =>
                    "`emsort sort … --stats FILE -q` as a child process (its time, `wait4` usage and \
                            `VmHWM` are the sort's alone; phases and counts from its statistics file)",
                false => "`sort_file` in the harness's process",
            },
            iob = format_size(IO_BOUND_BLOCK as u64),
            io_bound = facts.io_bound,
            cpu_bound = facts.cpu_bound,
            cpu_tool = match self.child_process {
                true => "`emsort sort … --stats FILE -q` as a child process, like `emsort`",
                false => "`sort_file` in the harness's process, like `emsort`",
            },
            uutils = facts.uutils_sort_version,
            duckdb = facts.duckdb_version,
            polars = facts.polars_version,
            xan = facts.xan_version,
            keys_problems = if facts.keys_problems.is_empty() {
                String::new()
            } else {
                format!(" **Failed or mismatched runs**: {}.", facts.keys_problems.join("; "))
            },
            cols = RAW_COLUMNS,
            summary = SUMMARY_COLUMNS,
            plots = plot_list(plots),
        )
    }
}

/// The README's words on `plots/`: each SVG file drawn, with what it
/// shows, or that they come when the runs are done.
fn plot_list(plots: Option<&[PathBuf]>) -> String {
    let redraw = "drawn from raw.csv (`emsort bench sort --plot-only DIR` redraws them)";
    match plots {
        None => format!("SVG charts {redraw}, once the runs are done."),
        Some([]) => format!("no chart: too few points to draw one ({redraw})."),
        Some(files) => {
            let mut s = format!("SVG charts {redraw}:\n");
            for f in files {
                let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                s.push_str(&format!("  - `{name}`: {}\n", describe_plot(&name)));
            }
            s.trim_end().to_string()
        }
    }
}

/// The README's sections read back from `summary.csv` (step 5): the
/// bounds (which one binds each emsort point), the keys experiment's
/// results and the published claims beside this machine's numbers; empty
/// sections are left out.
pub(super) fn results(summary: &[SummaryRow]) -> String {
    let mut text = String::new();
    let bounds = bounds_table(summary);
    if !bounds.is_empty() {
        text.push_str(&format!(
            "\n## Bounds: which one binds\n\nPer emsort point: its median, 2 × the I/O bound, the CPU \
             bound at the same M and threads (its user + system seconds), the larger of the two \
             (`binds`) and emsort's time over it.\n\n{bounds}"
        ));
    }
    let table = keys_table(summary);
    if !table.is_empty() {
        text.push_str(&format!("\n## Keys experiment: results\n\n{table}"));
    }
    let claims = crate::claims::table(&report::claims(summary));
    if !claims.is_empty() {
        text.push_str(&format!(
            "\n## Beside the published conclusions\n\nThe INFO-H-417 reports (two student reports for ULB's \
             Database Systems Architecture course, 2018, Java) found M far more important than d: the claim \
             holds when the time's range over M (slowest median over fastest) is wider than its range over \
             d. A claim judged from one repetition says *one run: no verdict*.\n\n{claims}"
        ));
    }
    text
}
