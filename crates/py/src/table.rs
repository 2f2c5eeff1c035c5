//! Arrow data sorted by columns, larger than the budget: any object with
//! `__arrow_c_stream__` (a `pyarrow.Table` or `RecordBatchReader`, a Polars
//! or pandas frame) in, an Arrow C stream of the sorted batches out
//! (`emsort.sort_arrow`), through `emsort_table::TableSorter` — no copy
//! through Python per row.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use emsort_sort::SortError;
use emsort_table::{SortedBatches, TableError, TableKey, TableKeys, TableSort, TableSorter};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule};

use crate::args::PlanArgs;
use crate::order::OrderArgs;
use crate::worker::{self, Reporter, Tracker};

/// A table sort's error as the sort's: an I/O error stays one (its kind
/// picks the Python exception); others are bad input.
pub(crate) fn table_error(e: TableError) -> SortError {
    match e {
        TableError::Sort(e) => e,
        TableError::Io(e) => SortError::Io(e),
        other => SortError::BadPlan(other.to_string()),
    }
}

/// The capsule name of an Arrow C stream (the PyCapsule interface).
const STREAM: &std::ffi::CStr = c"arrow_array_stream";

/// The keys `key` names: a column name such as "ts" or "user:desc", or a
/// list of them; `None`: none (every column).
fn key_arg(key: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<TableKey>> {
    let Some(k) = key else { return Ok(Vec::new()) };
    let specs: Vec<String> = match k.extract::<String>() {
        Ok(s) => vec![s],
        Err(_) => k.extract::<Vec<String>>().map_err(|_| {
            PyTypeError::new_err(
                "key must be a column name such as \"ts\" or \"user:desc\", or a list of them",
            )
        })?,
    };
    specs.iter().map(|s| TableKey::parse(s).map_err(PyValueError::new_err)).collect()
}

/// The batches of `data`, an object with `__arrow_c_stream__` (`what`
/// names the function, for the error).
fn arrow_stream(data: &Bound<'_, PyAny>, what: &str) -> PyResult<RecordBatchStreamReader> {
    if !data.hasattr("__arrow_c_stream__")? {
        return Err(PyTypeError::new_err(format!(
            "{what} takes Arrow data (an object with __arrow_c_stream__: a pyarrow Table or \
             RecordBatchReader, a Polars or pandas DataFrame), not {}",
            data.get_type().name()?
        )));
    }
    let capsule = data.call_method0("__arrow_c_stream__")?;
    let capsule = capsule.cast::<PyCapsule>()?;
    let ptr = capsule.pointer_checked(Some(STREAM))?;
    // SAFETY: the capsule holds an ArrowArrayStream (its name says so);
    // from_raw moves the stream out and leaves the capsule's released.
    unsafe { RecordBatchStreamReader::from_raw(ptr.as_ptr().cast::<FFI_ArrowArrayStream>()) }
        .map_err(|e| PyValueError::new_err(format!("cannot read the Arrow stream: {e}")))
}

/// A table key's column, direction and null placement (see
/// `_emsort.pyi`).
#[pyfunction]
pub(crate) fn parse_table_key(spec: &str) -> PyResult<(String, bool, bool)> {
    let k = TableKey::parse(spec).map_err(PyValueError::new_err)?;
    Ok((k.column, k.descending, k.nulls_first))
}

/// Calls `each` with the encoded keys of every batch of `data`, in order.
fn each_keys(
    data: &Bound<'_, PyAny>,
    key: Option<&Bound<'_, PyAny>>,
    reverse: bool,
    what: &str,
    mut each: impl FnMut(&arrow_row::Rows),
) -> PyResult<()> {
    let spec = TableSort { keys: key_arg(key)?, reverse, ..TableSort::default() };
    let reader = arrow_stream(data, what)?;
    let keys = TableKeys::new(&reader.schema(), &spec).map_err(|e| PyValueError::new_err(e.to_string()))?;
    for batch in reader {
        let batch = batch.map_err(|e| PyValueError::new_err(format!("the Arrow stream failed: {e}")))?;
        each(&keys.encode(&batch).map_err(|e| PyValueError::new_err(e.to_string()))?);
    }
    Ok(())
}

/// The sort keys of the rows of `data` as bytes that compare as
/// `sort_arrow` orders the rows (see `_emsort.pyi`).
#[pyfunction]
#[pyo3(signature = (data, *, key = None, reverse = false))]
pub(crate) fn table_keys<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    key: Option<&Bound<'py, PyAny>>,
    reverse: bool,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let mut out = Vec::new();
    each_keys(data, key, reverse, "table_keys", |rows| {
        out.extend(rows.iter().map(|r| PyBytes::new(py, r.data())));
    })?;
    Ok(out)
}

/// For each row of `data`, the key range it falls in: the number of
/// `boundaries` (keys of `table_keys`, in order) not after its key (see
/// `_emsort.pyi`).
#[pyfunction]
#[pyo3(signature = (data, boundaries, *, key = None, reverse = false))]
pub(crate) fn table_ranges<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    boundaries: Vec<Vec<u8>>,
    key: Option<&Bound<'py, PyAny>>,
    reverse: bool,
) -> PyResult<Bound<'py, numpy::PyArray1<u32>>> {
    if boundaries.windows(2).any(|w| w[0] > w[1]) {
        return Err(PyValueError::new_err("boundaries must be in order (as table_keys sorted)"));
    }
    let mut out: Vec<u32> = Vec::new();
    each_keys(data, key, reverse, "table_ranges", |rows| {
        out.extend(rows.iter().map(|r| boundaries.partition_point(|b| b.as_slice() <= r.data()) as u32));
    })?;
    Ok(numpy::PyArray1::from_vec(py, out))
}

/// Sorts the Arrow data `data` by the columns `key` names (as
/// `emsort.sort` of a Parquet file takes them) within `memory`; returns
/// the sorted batches as an Arrow C stream (see `_emsort.pyi`).
#[pyfunction]
#[pyo3(signature = (
    data, *, key = None, unique = false, reverse = false, memory = None, temp_dirs = None,
    parallel = None, io = "auto", compress = "auto", block_size = None, progress = None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sort_arrow<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    key: Option<&Bound<'py, PyAny>>,
    unique: bool,
    reverse: bool,
    memory: Option<&Bound<'py, PyAny>>,
    temp_dirs: Option<&Bound<'py, PyAny>>,
    parallel: Option<usize>,
    io: &str,
    compress: &str,
    block_size: Option<&Bound<'py, PyAny>>,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<SortedArrow> {
    worker::check_callback(progress)?;
    let keys = key_arg(key)?;
    let reader = arrow_stream(data, "sort_arrow")?;
    let a = PlanArgs {
        format: "lines",
        memory,
        fan_in: None,
        temp_dirs,
        parallel,
        reverse: false,
        io,
        compress,
        block_size,
        policy: "optimal",
        order: OrderArgs::default(),
    };
    let plan = a.table_plan(py, None, unique)?;
    let spec = TableSort { keys, unique, reverse, ..TableSort::default() };
    let tracker = Arc::new(Tracker::default());
    let cancel = Arc::new(AtomicBool::new(false));
    let mut sorter = TableSorter::new(&plan, reader.schema(), &spec, tracker.clone(), cancel.clone())
        .map_err(|e| crate::error::sort_error(py, &table_error(e)))?;
    let mut reporter = Reporter::default();
    let sorted = worker::watch(py, progress, &mut reporter, &tracker, &cancel, true, move || {
        for batch in reader {
            let batch =
                batch.map_err(|e| table_error(TableError::Key(format!("the Arrow stream failed: {e}"))))?;
            sorter.push(&batch).map_err(table_error)?;
        }
        sorter.finish(false).map_err(table_error)
    })?;
    Ok(SortedArrow { batches: Mutex::new(Some(sorted)) })
}

/// The sorted batches of [`sort_arrow`], given once as an Arrow C stream
/// (`__arrow_c_stream__`); dropping it unread cancels the sort and removes
/// its temporary files.
#[pyclass(name = "SortedArrow", module = "emsort")]
pub(crate) struct SortedArrow {
    batches: Mutex<Option<SortedBatches>>,
}

/// The sorted batches as arrow-rs' `RecordBatchReader`, for the C stream.
struct Batches(SortedBatches, SchemaRef);

impl Iterator for Batches {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|r| r.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for Batches {
    fn schema(&self) -> SchemaRef {
        self.1.clone()
    }
}

#[pymethods]
impl SortedArrow {
    /// The sorted batches as an Arrow C stream (the PyCapsule interface):
    /// `pyarrow.RecordBatchReader.from_stream(s)`, `polars.from_arrow(...)`.
    /// Once only; `requested_schema` is not supported (None).
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        if requested_schema.is_some_and(|s| !s.is_none()) {
            return Err(PyValueError::new_err(
                "the sorted stream has its input's schema: no requested_schema",
            ));
        }
        let batches = self
            .batches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| PyValueError::new_err("the sorted batches were already taken"))?;
        let schema = batches.schema();
        let stream = FFI_ArrowArrayStream::new(Box::new(Batches(batches, schema)));
        PyCapsule::new_with_value(py, stream, STREAM)
    }
}
