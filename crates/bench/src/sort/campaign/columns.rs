//! What the columns of the sort campaign's CSV files mean, in the words
//! its results README uses ([`super::readme`]): [`RAW_COLUMNS`], a bullet
//! per column of `raw.csv`, and [`SUMMARY_COLUMNS`], what a row of
//! `summary.csv` holds. The crate's own reference for the columns is
//! [`crate::sort::RawRow`] and [`crate::sort::SummaryRow`] (and the table
//! in `record.rs`'s docs).

/// The columns of `raw.csv`, as the README lists them.
pub(super) const RAW_COLUMNS: &str = "\
- `tool`: emsort, emsort-stdio, emsort-baseline, gnu-sort, uutils-sort, duckdb, stxxl, in-memory, cpu-bound, io-bound (once per input and repetition, the keys experiment's csv inputs too)
- `format`, `bytes`, `items`: the input (items = lines for `lines`)
- `memory`, `fan_in`, `block_size`, `policy`, `io`: emsort's M, d, B, merge policy, stream kind (GNU sort, STXXL: M; STXXL: its block size and I/O implementation)
- `threads`: emsort's and GNU sort's --parallel, STXXL's OpenMP threads, the in-memory pool's threads
- `rep`: repetition, from 1
- `seconds`: wall time, including an fsync of the output
- `run_formation_s`, `merge_s`: emsort's and STXXL's phases (io-bound: the read and the write)
- `runs`, `passes`, `merge_order`: emsort's U, passes (run formation = 1), most runs in one merge
- `bytes_read`, `bytes_written`: bytes read and written by emsort over both phases
- `predicted_passes`, `predicted_blocks`, `blocks_moved`: the cost model (above)
- `peak_rss_bytes`: peak resident memory of the run (child processes — emsort with a binary, GNU sort, STXXL: the child's VmHWM, read every 4 ms while it runs, as its ru_maxrss starts from the parent's peak; in-process tools: VmHWM reset before the run)
- `rss_before_bytes`: in-process tools only: resident memory just before the run (the harness's own, after malloc_trim), included in peak_rss_bytes
- `voluntary_cs`, `involuntary_cs`, `minor_faults`, `major_faults`: wait4's rusage of a child process; getrusage deltas in-process
- `cpu_migrations`: perf software event cpu-migrations of the run's threads (emsort: its own count from its statistics; GNU sort, STXXL: the child and the waiting thread); empty where perf is not allowed
- `cache`: how the page cache was emptied (`none (tmpfs)` for the CPU bound); `note`: the peer's version (DuckDB: also its own query time and row count)
- `experiment`: `sort` (the grid of formats; every output verified, else the campaign stopped) or `keys` (csv inputs sorted by key)
- `keys`: the key options of a keys run (`-t, -k3,3n`, `-t, -k2,2 -k3,3nr`, `-u`, `-t, -k1,1n -u`, `plain`; empty for the input's `io-bound` runs)
- `verified`: keys runs: `reference`, `identical` (byte for byte the reference), `rows` (DuckDB's row count right), `unchecked`, `MISMATCH`, `FAILED`
- `error`: why a keys run failed or mismatched
- `user_s`, `system_s`: CPU seconds in user mode and in the kernel (`wait4` of a child process, all its threads; `getrusage` deltas of an in-process emsort run)
";

/// What `summary.csv` holds, as the README's list of files says it (after
/// "`summary.csv`: ").
pub(super) const SUMMARY_COLUMNS: &str = "\
a row per point (tool, format, N, M, d, policy, io, threads): \
min/median/max seconds, median phases and counts, and the ratios on the same input: \
`ratio_to_io_bound` = median / (2 × the I/O bound's median), \
`speedup_vs_gnu_sort` = GNU sort's median at the same M and threads / median, \
`speedup_vs_stxxl` = STXXL's median at the same M and threads / median, \
`ratio_to_in_memory` = median / the in-memory sort's median, \
`ratio_to_cpu_bound` = median / `cpu_bound_s` (the CPU bound's median at the same M and \
threads, and keys), `bound` = the one that binds (the larger of `io_bound_s` and \
`cpu_bound_s`) and `ratio_to_bound` = median / it (in the keys experiment too, where the \
I/O bound is the csv input's, whatever the keys); `baseline_s` = the median of \
`emsort-baseline` at the same setting and `ratio_to_baseline` = emsort's median / it \
(with `--baseline`); `user_s`, `system_s`: median CPU seconds.";
