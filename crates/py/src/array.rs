//! numpy arrays: `sort_array`, `sort_array_to_file`, `read_array`.
//!
//! The six number dtypes map to emsort's number formats: `uint32` = `u32`,
//! `int32` = `i32`, `uint64` = `u64`, `int64` = `i64`, `float32` = `f32`,
//! `float64` = `f64` (native byte order). Arrays are sorted with
//! [`emsort_sort::sort_numbers`], run formation's parallel radix sort, so
//! floats come in total order with NaNs last (first with `reverse`).

use std::path::PathBuf;

use emsort_io::{open_reader, AtomicFile, Calibration, Reader, ReaderConfig, ReaderKind};
use emsort_sort::key::NumKey;
use emsort_sort::Format;
use numpy::{
    dtype, Element, PyArray1, PyArrayDescr, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::error::io_error;

/// Evaluates `$body` with `$T` the Rust type of the [`Num`] `$num`
/// (`u32` for `Num::U32` …): one generic call for the six dtypes.
macro_rules! for_num {
    ($num:expr, $T:ident => $body:expr) => {
        for_num!(@ $num, $T, $body, U32 u32, I32 i32, U64 u64, I64 i64, F32 f32, F64 f64)
    };
    (@ $num:expr, $T:ident, $body:expr, $($V:ident $t:ty),*) => {
        match $num {
            $(Num::$V => {
                type $T = $t;
                $body
            })*
        }
    };
}
pub(crate) use for_num;

/// A number format, as a numpy dtype.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Num {
    U32,
    I32,
    U64,
    I64,
    F32,
    F64,
}

impl Num {
    const ALL: [Num; 6] = [Num::U32, Num::I32, Num::U64, Num::I64, Num::F32, Num::F64];

    fn format(self) -> Format {
        match self {
            Num::U32 => Format::U32,
            Num::I32 => Format::I32,
            Num::U64 => Format::U64,
            Num::I64 => Format::I64,
            Num::F32 => Format::F32,
            Num::F64 => Format::F64,
        }
    }

    /// The number format `f` as a dtype; None for records and lines.
    pub(crate) fn of_format(f: Format) -> Option<Num> {
        Num::ALL.into_iter().find(|n| n.format() == f)
    }

    pub(crate) fn descr(self, py: Python<'_>) -> Bound<'_, PyArrayDescr> {
        for_num!(self, T => dtype::<T>(py))
    }

    /// The number format of a numpy dtype (native byte order only).
    fn of_descr(d: &Bound<'_, PyArrayDescr>) -> Option<Num> {
        Num::ALL.into_iter().find(|n| d.is_equiv_to(&n.descr(d.py())))
    }

    /// A format name (`"u32"` …) or anything `numpy.dtype()` takes.
    fn from_py(v: &Bound<'_, PyAny>) -> PyResult<Num> {
        let py = v.py();
        if let Ok(s) = v.cast::<PyString>() {
            if let Ok(f) = s.to_str()?.parse::<Format>() {
                return Num::of_format(f).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "dtype '{f}': read_array reads numbers (u32, i32, u64, i64, f32, f64)"
                    ))
                });
            }
        }
        let d = py.import("numpy")?.getattr("dtype")?.call1((v,))?;
        let d = d.cast::<PyArrayDescr>()?;
        Num::of_descr(d).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "unsupported dtype {}: expected uint32, int32, uint64, int64, float32 or float64 in native byte order",
                d.str().map(|s| s.to_string()).unwrap_or_default()
            ))
        })
    }
}

/// The 1-D number array `a` and its number format; `TypeError` for
/// anything else, `ValueError` for another number of dimensions.
fn number_array<'a, 'py>(
    a: &'a Bound<'py, PyAny>,
    what: &str,
) -> PyResult<(&'a Bound<'py, PyUntypedArray>, Num)> {
    let arr = a.cast::<PyUntypedArray>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} needs a numpy.ndarray, not {}",
            a.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    let num = Num::of_descr(&arr.dtype()).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "{what}: unsupported dtype {}: expected uint32, int32, uint64, int64, float32 or float64 in native byte order",
            arr.dtype().str().map(|s| s.to_string()).unwrap_or_default()
        ))
    })?;
    if arr.ndim() != 1 {
        return Err(PyValueError::new_err(format!(
            "{what} needs a 1-D array, not one of {} dimensions (sort a.ravel() or a view of one axis)",
            arr.ndim()
        )));
    }
    Ok((arr, num))
}

fn sort_typed<T: Element + NumKey>(py: Python<'_>, a: &Bound<'_, PyAny>, reverse: bool) -> PyResult<()> {
    let arr = a.cast::<PyArray1<T>>()?;
    let mut rw =
        arr.try_readwrite().map_err(|e| PyValueError::new_err(format!("cannot write the array: {e}")))?;
    let items = rw.as_slice_mut().map_err(|_| {
        PyValueError::new_err(
            "sort_array needs a contiguous array (a[::2] is not; sort a copy, or use np.ascontiguousarray)",
        )
    })?;
    py.detach(|| emsort_sort::sort_numbers(items, reverse));
    Ok(())
}

/// Sort a 1-D contiguous numpy array of numbers in place, with the GIL released.
///
/// dtypes uint32, int32, uint64, int64, float32, float64 (native byte
/// order); emsort's radix sort on all cores; floats in total order with
/// NaNs last (first with reverse). TypeError for other dtypes or
/// non-arrays, ValueError for other shapes, strided or read-only arrays.
#[pyfunction]
#[pyo3(signature = (a, *, reverse = false))]
pub(crate) fn sort_array(py: Python<'_>, a: &Bound<'_, PyAny>, reverse: bool) -> PyResult<()> {
    for_num!(number_array(a, "sort_array")?.1, T => sort_typed::<T>(py, a, reverse))
}

fn sort_to_file<T: Element + NumKey + bytemuck::Pod>(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    output: &std::path::Path,
    reverse: bool,
) -> PyResult<()> {
    let arr = a.cast::<PyArray1<T>>()?;
    let ro = arr.try_readonly().map_err(|e| PyValueError::new_err(format!("cannot read the array: {e}")))?;
    let result = match ro.as_slice() {
        Ok(items) => py.detach(|| write_sorted(items.to_vec(), output, reverse)),
        Err(_) => {
            let items: Vec<T> = ro.as_array().iter().copied().collect();
            py.detach(|| write_sorted(items, output, reverse))
        }
    };
    result.map_err(|e| io_error(py, &e))
}

/// Sorts `items` and writes them to `output` (beside, then renamed).
fn write_sorted<T: NumKey + bytemuck::Pod>(
    mut items: Vec<T>,
    output: &std::path::Path,
    reverse: bool,
) -> emsort_io::Result<()> {
    emsort_sort::sort_numbers(&mut items, reverse);
    let out = AtomicFile::create(output)?;
    std::io::Write::write_all(&mut out.file(), bytemuck::cast_slice::<T, u8>(&items))
        .map_err(|e| emsort_io::Error::from_io("write", output, e))?;
    out.commit()
}

/// Write a sorted copy of a 1-D numpy array of numbers to `output`.
///
/// The array is not changed (it may be strided). The file holds the items
/// in native byte order, the format of the dtype (uint32 → u32 …); written
/// beside and renamed when complete.
#[pyfunction]
#[pyo3(signature = (a, output, *, reverse = false))]
pub(crate) fn sort_array_to_file(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    output: PathBuf,
    reverse: bool,
) -> PyResult<()> {
    for_num!(number_array(a, "sort_array_to_file")?.1, T => sort_to_file::<T>(py, a, &output, reverse))
}

/// Reads `buf.len()` bytes at `offset`, all of them or an error.
pub(crate) fn read_exact(r: &mut impl Reader, offset: u64, buf: &mut [u8]) -> emsort_io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        let n = r.read_bytes(offset + got as u64, buf.len() - got, &mut buf[got..])?;
        if n == 0 {
            return Err(emsort_io::Error::from_io(
                "read",
                r.path(),
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the file ended early (was it truncated?)",
                ),
            ));
        }
        got += n;
    }
    Ok(())
}

/// A reader configuration for a kind name, with the adaptive reader's
/// calibration from `$XDG_CONFIG_HOME/emsort/calibration` when present.
pub(crate) fn reader_config(py: Python<'_>, kind: &str) -> PyResult<ReaderConfig> {
    let kind: ReaderKind = crate::args::parse(kind)?;
    let mut cfg = ReaderConfig::new(kind);
    if kind == ReaderKind::Adaptive {
        cfg = cfg.calibration(Calibration::discover().map_err(|e| io_error(py, &e))?);
    }
    Ok(cfg)
}

fn read_typed<'py, T: Element + bytemuck::Pod>(
    py: Python<'py>,
    path: &std::path::Path,
    cfg: &ReaderConfig,
    offset: u64,
    count: Option<u64>,
) -> PyResult<Bound<'py, PyAny>> {
    let size = std::mem::size_of::<T>() as u64;
    let mut reader = py.detach(|| open_reader(path, cfg)).map_err(|e| io_error(py, &e))?;
    let len = reader.len();
    let available = len.saturating_sub(offset);
    let n = match count {
        Some(n) => {
            if n.saturating_mul(size) > available {
                return Err(PyValueError::new_err(format!(
                    "{}: {n} items of {size} bytes at offset {offset} go past the end of the file ({len} bytes)",
                    path.display()
                )));
            }
            n
        }
        None => {
            if available % size != 0 {
                return Err(PyValueError::new_err(format!(
                    "{}: the {available} bytes from offset {offset} are not a whole number of {size}-byte items \
                     ({} trailing bytes); give count",
                    path.display(),
                    available % size
                )));
            }
            available / size
        }
    };
    let n = usize::try_from(n).map_err(|_| PyValueError::new_err("count too large"))?;
    let arr = PyArray1::<T>::zeros(py, n, false);
    {
        let mut rw = arr.readwrite();
        let items = rw.as_slice_mut().expect("a new array is contiguous");
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(items);
        py.detach(|| {
            let r = read_exact(&mut reader, offset, bytes);
            let _ = reader.close();
            r
        })
        .map_err(|e| io_error(py, &e))?;
    }
    Ok(arr.into_any())
}

/// Read numbers from a file into a new 1-D numpy array with emsort's readers.
///
/// As numpy.fromfile: `offset` in bytes, `count` in items (default: all to
/// the end, which must be whole items). dtype: "u32" (default) … "f64" or
/// a numpy dtype. kind: stream, mmap, pread, uring or adaptive.
#[pyfunction]
#[pyo3(signature = (path, *, dtype = None, offset = 0, count = None, kind = "adaptive"))]
pub(crate) fn read_array<'py>(
    py: Python<'py>,
    path: PathBuf,
    dtype: Option<&Bound<'py, PyAny>>,
    offset: u64,
    count: Option<u64>,
    kind: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let num = match dtype {
        None => Num::U32,
        Some(d) => Num::from_py(d)?,
    };
    let cfg = reader_config(py, kind)?;
    for_num!(num, T => read_typed::<T>(py, &path, &cfg, offset, count))
}
