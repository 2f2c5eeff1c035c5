//! Python arguments to library values: formats, sizes, kinds, paths, plans
//! (the ordering options of `lines`: module `order`).
//!
//! Sizes take an `int` of bytes or a string as the command line takes it
//! (`"256M"`, `"1G"`: powers of 1024; memory also `"25%"` of the machine's
//! RAM). Bad values raise `ValueError`, values of the wrong type `TypeError`.

use std::path::PathBuf;

use emsort_io::StreamKind;
use emsort_sort::merge_policy::MergePolicy;
use emsort_sort::{Compression, Format, SortPlan, SortPlanBuilder};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString};

use crate::order::{Lines, OrderArgs};

/// Parses a format name (`u32` … `f64`, `rec:SIZE:KEY_OFFSET:KEY_LEN`, `lines`).
pub(crate) fn format(s: &str) -> PyResult<Format> {
    s.parse::<Format>().map_err(PyValueError::new_err)
}

/// A format whose items have a fixed size, with that size.
pub(crate) fn fixed_format(s: &str, what: &str) -> PyResult<(Format, usize)> {
    let f = format(s)?;
    match f.item_size() {
        Some(size) => Ok((f, size)),
        None => Err(PyValueError::new_err(format!(
            "{what} needs a format of fixed-size items (u32, i32, u64, i64, f32, f64 or \
             rec:SIZE:KEY_OFFSET:KEY_LEN), not 'lines'"
        ))),
    }
}

/// Parses a value of a `FromStr` type, with the type's own message on error.
pub(crate) fn parse<T: std::str::FromStr<Err = String>>(s: &str) -> PyResult<T> {
    s.parse::<T>().map_err(PyValueError::new_err)
}

/// A size in bytes from an `int` or a string with K/M/G/T suffixes; with
/// `percent`, also `"N%"` of the machine's total RAM (as `emsort sort -S`).
pub(crate) fn size(v: &Bound<'_, PyAny>, what: &str, percent: bool) -> PyResult<u64> {
    if v.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be an int of bytes or a size string, not a bool"
        )));
    }
    if v.is_instance_of::<PyInt>() {
        return v.extract::<u64>().map_err(|_| PyValueError::new_err(format!("{what} must be at least 0")));
    }
    let Ok(s) = v.cast::<PyString>() else {
        return Err(PyTypeError::new_err(format!(
            "{what} must be an int of bytes or a size string such as \"256M\", not {}",
            v.get_type().name()?
        )));
    };
    let s = s.to_str()?;
    if s.ends_with('%') {
        if !percent {
            return Err(PyValueError::new_err(format!(
                "{what} '{s}': a percentage is only allowed for memory"
            )));
        }
        return emsort_sort::budget::parse_memory(s).map_err(PyValueError::new_err);
    }
    emsort_io::parse_size(s).map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}

/// An optional size (see [`size`]).
pub(crate) fn opt_size(v: Option<&Bound<'_, PyAny>>, what: &str, percent: bool) -> PyResult<Option<u64>> {
    v.map(|v| size(v, what, percent)).transpose()
}

/// A block size: at least 1 byte.
pub(crate) fn block_size(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    match opt_size(v, "block_size", false)? {
        None => Ok(None),
        Some(0) => Err(PyValueError::new_err("the block size must be at least 1 byte")),
        Some(b) => usize::try_from(b).map(Some).map_err(|_| PyValueError::new_err("block size too large")),
    }
}

/// Directories from `None`, one path, or a sequence of paths.
pub(crate) fn dirs(v: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<PathBuf>> {
    match v {
        None => Ok(Vec::new()),
        Some(v) if v.is_none() => Ok(Vec::new()),
        Some(v) => {
            if let Ok(p) = v.extract::<PathBuf>() {
                return Ok(vec![p]);
            }
            let mut out = Vec::new();
            for item in v.try_iter().map_err(|_| {
                PyTypeError::new_err("temp_dirs must be a path or a sequence of paths (str or os.PathLike)")
            })? {
                out.push(item?.extract::<PathBuf>()?);
            }
            Ok(out)
        }
    }
}

/// The options of a sort or a merge, as `emsort sort` takes them.
pub(crate) struct PlanArgs<'a, 'py> {
    /// The format's name (`lines` by default, as the command line).
    pub format: &'a str,
    pub memory: Option<&'a Bound<'py, PyAny>>,
    pub fan_in: Option<usize>,
    pub temp_dirs: Option<&'a Bound<'py, PyAny>>,
    pub parallel: Option<usize>,
    pub reverse: bool,
    pub io: &'a str,
    /// How temporary runs are stored: `auto` (the command line's default),
    /// `none`, `lz4`, `zstd`, `zstd:LEVEL`.
    pub compress: &'a str,
    pub block_size: Option<&'a Bound<'py, PyAny>>,
    pub policy: &'a str,
    /// GNU sort's ordering options of lines (`**order`; `reverse` is above).
    pub order: OrderArgs<'py>,
}

impl PlanArgs<'_, '_> {
    /// Builds the plan as `emsort sort` does, for an input of `input_bytes`
    /// bytes when known (the default memory depends on it) whose first
    /// file is `first` (keys may name its header's columns).
    pub(crate) fn plan(
        &self,
        py: Python<'_>,
        input_bytes: Option<u64>,
        first: Option<&std::path::Path>,
    ) -> PyResult<SortPlan> {
        let format = format(self.format)?;
        let (b, _) = self.builder(format, input_bytes)?;
        // As `emsort sort`: lines take the order (reverse being its global
        // -r) and their terminator; numbers and records only reverse.
        let b = if format == Format::Lines {
            let Lines { order, eol, header } = self.order.compile(py, self.reverse, first)?;
            b.line_order(order).eol(eol).header(header)
        } else {
            self.order.refuse(format)?;
            b.reverse(self.reverse)
        };
        b.build().map_err(|e| crate::error::sort_error(py, &e))
    }

    /// The plan of a sort of tables (module `emsort_table`) whose rows
    /// take about `row_bytes`: framed rows, with the merge sort's share of
    /// the memory, as `emsort sort` plans one.
    pub(crate) fn table_plan(
        &self,
        py: Python<'_>,
        row_bytes: Option<u64>,
        unique: bool,
    ) -> PyResult<SortPlan> {
        let (b, memory) = self.builder(Format::Lines, row_bytes)?;
        b.memory(emsort_table::sort_share(memory))
            .line_order(emsort_table::rows_order(unique))
            .build()
            .map_err(|e| crate::error::sort_error(py, &e))
    }

    /// The builder of every option but the order, and the memory M.
    fn builder(&self, format: Format, input_bytes: Option<u64>) -> PyResult<(SortPlanBuilder, u64)> {
        let memory = opt_size(self.memory, "memory", true)?
            .unwrap_or_else(|| emsort_sort::budget::default_memory(input_bytes));
        let policy: MergePolicy = parse(self.policy)?;
        let mut b: SortPlanBuilder = SortPlan::builder(format).memory(memory).policy(policy);
        // "auto": the command line's default, chosen by the plan.
        b = if self.io == "auto" { b.io_auto() } else { b.io(parse::<StreamKind>(self.io)?) };
        b = b.compression(match Compression::parse(self.compress) {
            Some(c) => c.map_err(PyValueError::new_err)?,
            None => {
                return Err(PyValueError::new_err(format!(
                    "compress '{}': auto, none, lz4, zstd or zstd:LEVEL",
                    self.compress
                )))
            }
        });
        if let Some(d) = self.fan_in {
            b = b.fan_in(d);
        }
        if let Some(bs) = block_size(self.block_size)? {
            b = b.block_size(bs);
        }
        if let Some(n) = self.parallel {
            if n == 0 {
                return Err(PyValueError::new_err("parallel must be at least 1 thread"));
            }
            b = b.threads(n);
        }
        for t in dirs(self.temp_dirs)? {
            b = b.temp_dir(t);
        }
        if let Some(n) = input_bytes {
            b = b.input_bytes(n);
        }
        Ok((b, memory))
    }
}
