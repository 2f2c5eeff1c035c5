//! The file commands: `sort`, `merge_files`, `gen`, `verify`.
//!
//! Each is the library call behind the command of the same name, run by
//! [`crate::worker::run`] (GIL released, progress callback, Ctrl-C). The
//! statistics of `sort` and `merge_files` are the JSON that
//! `emsort sort --stats` writes, as a `dict`.

use std::path::PathBuf;

use emsort_sort::gen::{generate, Distribution, GenSpec};
use emsort_sort::{Sink, SortError, SortStats, Source};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::args::{self, PlanArgs};
use crate::order::OrderArgs;
use crate::worker;

/// The statistics as a `dict`, through the `--stats` JSON.
pub(crate) fn stats_dict<'py>(py: Python<'py>, stats: &SortStats) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_string(stats)
        .map_err(|e| PyValueError::new_err(format!("cannot serialise the statistics: {e}")))?;
    py.import("json")?.call_method1("loads", (json,))
}

/// The size of a regular file, for the default memory (as the CLI).
fn file_size(path: &std::path::Path) -> Option<u64> {
    std::fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| m.len())
}

/// Sort the file `input` into `output`: `emsort sort INPUT -o OUTPUT`.
///
/// An external multiway merge sort: run formation reads `memory` bytes at a
/// time, sorts them on `parallel` threads and writes sorted runs under
/// `temp_dirs`; d-way loser-tree merges (`fan_in` = d, `policy` optimal or
/// fifo) combine them. The output is written beside and renamed when
/// complete, so `output` may be `input`; an error or Ctrl-C
/// (KeyboardInterrupt) leaves no partial output and no temporary file.
///
/// format: lines (the default, as `emsort sort`: text ordered as `LC_ALL=C
/// sort`), u32, i32, u64, i64, f32, f64 (NaNs last) or
/// rec:SIZE:KEY_OFFSET:KEY_LEN. reverse: descending (-r), for every format.
/// Lines take GNU sort's ordering options as keywords named after its long
/// options, listed by emsort.OrderOptions: key="3,3n" (-k),
/// field_separator="," (-t), numeric_sort=True (-n), unique=True (-u) ….
/// memory and block_size: bytes or "256M" (memory also "25%"; default as
/// the CLI: a quarter of the available RAM, at most twice the input + 16
/// MiB). io: syscall, stdio, buffered, mmap, direct (O_DIRECT, buffered
/// where refused, e.g. on tmpfs) or uring. compress: how temporary runs
/// are stored: "auto" (the default, as the CLI: lz4 or zstd where a sample
/// of the first run shows compression makes the sort faster on the measured
/// device, else none), "none", "lz4", "zstd" or "zstd:LEVEL"; the
/// statistics' "compression" says what was chosen. progress: called as
/// progress(phase, done, total) at most 10 times a second and at the end of
/// each phase ("run formation", "merge"; bytes).
///
/// Returns the statistics `emsort sort --stats` writes (runs, passes,
/// merges, seconds and bytes per phase, peak RSS …) as a dict.
#[pyfunction]
#[pyo3(signature = (
    input, output, *, format = "lines", memory = None, fan_in = None, temp_dirs = None,
    parallel = None, reverse = false, io = "auto", compress = "auto", block_size = None,
    policy = "optimal", progress = None, **order
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sort<'py>(
    py: Python<'py>,
    input: PathBuf,
    output: PathBuf,
    format: &str,
    memory: Option<&Bound<'py, PyAny>>,
    fan_in: Option<usize>,
    temp_dirs: Option<&Bound<'py, PyAny>>,
    parallel: Option<usize>,
    reverse: bool,
    io: &str,
    compress: &str,
    block_size: Option<&Bound<'py, PyAny>>,
    policy: &str,
    progress: Option<&Bound<'py, PyAny>>,
    order: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let order = OrderArgs::from_kwargs("sort", order)?;
    if [&input, &output].iter().any(|p| emsort_table::TableKind::of_name(p).is_some()) {
        let (keys, unique) = order.table()?;
        let spec = emsort_table::TableSort { keys, unique, reverse, ..Default::default() };
        let a = PlanArgs {
            format,
            memory,
            fan_in,
            temp_dirs,
            parallel,
            reverse: false,
            io,
            compress,
            block_size,
            policy,
            order,
        };
        return sort_tables(py, &a, spec, &[input], &output, progress);
    }
    let a = PlanArgs {
        format,
        memory,
        fan_in,
        temp_dirs,
        parallel,
        reverse,
        io,
        compress,
        block_size,
        policy,
        order,
    };
    let plan = a.plan(py, file_size(&input), Some(&input))?;
    let stats = worker::run(py, progress, |p, cancel| {
        emsort_sort::sort(&plan, vec![Source::Path(&input)], Sink::Path(&output), p, cancel)
    })?;
    stats_dict(py, &stats)
}

/// Merge files that are each already sorted into one sorted `output`.
///
/// The merge phase of `sort` alone: one d-way loser-tree merge when there
/// are at most `fan_in` inputs, else intermediate merges in `temp_dirs`
/// first. Inputs must be sorted in the order asked for (not checked); they
/// are never modified. Format (default lines) and ordering options as
/// `sort`; with `unique`, one line of each group of equal lines across all
/// inputs (the first input's). Returns the statistics of `sort` with runs
/// = the number of inputs and passes = bytes merged / input bytes.
/// Sorts the tables `inputs` (Parquet, Arrow IPC) into `output` by `spec`,
/// with the plan options of `a` (memory split as `emsort sort` splits it);
/// returns the statistics with the rows read and written.
fn sort_tables<'py>(
    py: Python<'py>,
    a: &PlanArgs<'_, 'py>,
    spec: emsort_table::TableSort,
    inputs: &[PathBuf],
    output: &std::path::Path,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    if a.format != "lines" {
        return Err(PyValueError::new_err(
            "format applies to files of items, not to tables (Parquet, Arrow)",
        ));
    }
    if let Some(p) = inputs.iter().find(|p| emsort_table::TableKind::of_name(p).is_none()) {
        return Err(PyValueError::new_err(format!(
            "{}: not a table (.parquet, .arrow, .feather, .ipc, .arrows)",
            p.display()
        )));
    }
    let tables = emsort_table::open_tables(inputs)
        .map_err(|e| crate::error::sort_error(py, &crate::table::table_error(e)))?;
    let plan = a.table_plan(py, emsort_table::row_bytes(&tables, &spec), spec.unique)?;
    let mut rows = (0u64, 0u64);
    // The sort's whole budget (the plan's memory is its merge sort's 2/3).
    let _heap = crate::alloc::table_blocks_to_heap(plan.memory() / 2 * 3);
    let stats = worker::run(py, progress, |p, cancel| {
        let s = emsort_table::sort_tables(&plan, &tables, output, &spec, p, cancel)
            .map_err(crate::table::table_error)?;
        rows = (s.rows_in, s.rows_out);
        Ok(s.sort)
    })?;
    let d = stats_dict(py, &stats)?;
    d.set_item("rows_in", rows.0)?;
    d.set_item("rows_out", rows.1)?;
    Ok(d)
}

#[pyfunction]
#[pyo3(signature = (
    inputs, output, *, format = "lines", memory = None, reverse = false, temp_dirs = None,
    progress = None, fan_in = None, parallel = None, io = "auto", compress = "auto",
    block_size = None, policy = "optimal", **order
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn merge_files<'py>(
    py: Python<'py>,
    inputs: Vec<PathBuf>,
    output: PathBuf,
    format: &str,
    memory: Option<&Bound<'py, PyAny>>,
    reverse: bool,
    temp_dirs: Option<&Bound<'py, PyAny>>,
    progress: Option<&Bound<'py, PyAny>>,
    fan_in: Option<usize>,
    parallel: Option<usize>,
    io: &str,
    compress: &str,
    block_size: Option<&Bound<'py, PyAny>>,
    policy: &str,
    order: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let order = OrderArgs::from_kwargs("merge_files", order)?;
    let a = PlanArgs {
        format,
        memory,
        fan_in,
        temp_dirs,
        parallel,
        reverse,
        io,
        compress,
        block_size,
        policy,
        order,
    };
    let total: Option<u64> = inputs.iter().map(|p| file_size(p)).sum();
    let plan = a.plan(py, total, inputs.first().map(PathBuf::as_path))?;
    let stats =
        worker::run(py, progress, |p, cancel| emsort_sort::merge_files(&plan, &inputs, &output, p, cancel))?;
    stats_dict(py, &stats)
}

/// Write a seeded data file: `emsort gen`; the same seed gives the same bytes.
///
/// Fixed-size formats need `count` items, `lines` needs `bytes` (a total
/// size, int or "64M") and takes `line_len` = (min, max); "csv" (typed
/// lines id,category,amount,date) and "csv-export" (a header, then records
/// with quoted commas, quotes and newlines) take `count` or `bytes`. dist: uniform,
/// sorted, reverse, few-distinct or zipf. progress: see `sort` (phase "gen").
#[pyfunction]
#[pyo3(signature = (
    output, *, format = "u32", count = None, bytes = None, dist = "uniform", seed = 0,
    progress = None, line_len = (10, 100), io = "direct", block_size = None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn gen<'py>(
    py: Python<'py>,
    output: PathBuf,
    format: &str,
    count: Option<u64>,
    bytes: Option<Bound<'py, PyAny>>,
    dist: &str,
    seed: u64,
    progress: Option<Bound<'py, PyAny>>,
    line_len: (usize, usize),
    io: &str,
    block_size: Option<Bound<'py, PyAny>>,
) -> PyResult<()> {
    let bytes = args::opt_size(bytes.as_ref(), "bytes", false)?;
    let csv = match (format, count, bytes) {
        ("csv", Some(n), None) => Some(GenSpec::csv(n)),
        ("csv", None, Some(b)) => Some(GenSpec::csv_bytes(b)),
        ("csv-export", Some(n), None) => Some(GenSpec::csv_export(n)),
        ("csv-export", None, Some(b)) => Some(GenSpec::csv_export_bytes(b)),
        ("csv" | "csv-export", _, _) => {
            return Err(PyValueError::new_err(format!("format '{format}' needs count=N or bytes=SIZE")))
        }
        _ => None,
    };
    let mut spec = match csv {
        Some(spec) => spec,
        None => match (args::format(format)?, count, bytes) {
            (emsort_sort::Format::Lines, None, Some(b)) => GenSpec::lines(b),
            (emsort_sort::Format::Lines, _, _) => {
                return Err(PyValueError::new_err("format 'lines' needs bytes=SIZE (and no count)"))
            }
            (f, Some(n), None) => GenSpec::items(f, n),
            (f, _, _) => {
                return Err(PyValueError::new_err(format!("format '{f}' needs count=N (and no bytes)")))
            }
        },
    };
    if line_len.0 > line_len.1 {
        return Err(PyValueError::new_err(format!(
            "line_len {line_len:?}: the shortest length is larger than the longest"
        )));
    }
    spec.line_len = line_len;
    spec.dist = args::parse::<Distribution>(dist)?;
    spec.seed = seed;
    let kind: emsort_io::StreamKind = args::parse(io)?;
    let block = args::block_size(block_size.as_ref())?.unwrap_or(8 << 20);
    spec.io = emsort_io::StreamConfig::new(kind).block_size(block);
    worker::run(py, progress.as_ref(), |p, cancel| {
        generate(&spec, &output, p, cancel).map_err(SortError::from)
    })?;
    Ok(())
}

/// Check that a file is sorted (and, with `input`, holds the same items):
/// `emsort verify`.
///
/// Returns {"ok", "items", "path", "format", "reverse", "disorder" (None or
/// {"index", "offset"} of the first item out of order), "same_multiset"
/// (None without input), "message" (the line `emsort verify` prints)}.
#[pyfunction]
#[pyo3(signature = (path, *, format = "u32", input = None, reverse = false))]
pub(crate) fn verify<'py>(
    py: Python<'py>,
    path: PathBuf,
    format: &str,
    input: Option<PathBuf>,
    reverse: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let f = args::format(format)?;
    let r = worker::run(py, None, |_, cancel| {
        emsort_sort::verify::verify(&path, f, reverse, input.as_deref(), cancel).map_err(SortError::from)
    })?;
    let order = if reverse { "descending" } else { "ascending" };
    let mut problems = Vec::new();
    let d = PyDict::new(py);
    d.set_item("ok", r.ok())?;
    d.set_item("items", r.items)?;
    d.set_item("path", r.path.display().to_string())?;
    d.set_item("format", f.to_string())?;
    d.set_item("reverse", reverse)?;
    match &r.disorder {
        Some(x) => {
            let dis = PyDict::new(py);
            dis.set_item("index", x.index)?;
            dis.set_item("offset", x.offset)?;
            d.set_item("disorder", dis)?;
            problems.push(format!(
                "NOT in {order} order: item {} (byte offset {}) is {} than item {}",
                x.index,
                x.offset,
                if reverse { "larger" } else { "smaller" },
                x.index - 1
            ));
        }
        None => d.set_item("disorder", py.None())?,
    }
    d.set_item("same_multiset", r.same_multiset())?;
    if let (Some(false), Some(orig), Some(o)) = (r.same_multiset(), &input, r.original) {
        problems.push(format!(
            "does NOT hold the same items as {} ({} items vs {}{})",
            orig.display(),
            r.items,
            o.count,
            if o.count == r.items { ", same count but different values" } else { "" }
        ));
    }
    let message = if problems.is_empty() {
        let same = if input.is_some() { ", same multiset as the input" } else { "" };
        format!("{}: OK, {} items in {order} order ({f}){same}", r.path.display(), r.items)
    } else {
        format!("{}: {}", r.path.display(), problems.join("; "))
    };
    d.set_item("message", message)?;
    Ok(d)
}
