//! Bytes-like objects as Rust slices, and sorting and searching them by a
//! format's order: `sort_buffer`, `partition_points`, `compare`,
//! `item_key_less`, `sort_key`, `item_size`.
//!
//! A buffer is taken through the buffer protocol as plain contiguous bytes
//! (any element type: a `bytearray`, a `memoryview`, a numpy array of any
//! dtype), so a numpy `uint32` array can be sorted as `u32` or as records.
//!
//! # Order
//!
//! Items compare as [`Format::compare`]: numbers numerically (floats in
//! total order, NaNs last), records bytewise on their key. `sort_buffer`
//! sorts as run formation sorts a chunk ([`emsort_sort::sort_items_in_place`]):
//! numbers in place, records through an index; records with equal keys keep
//! their order in the buffer, as they do in a file sort.

use std::cmp::Ordering;

use emsort_sort::key::NumKey;
use emsort_sort::Format;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::args;
use crate::array::{for_num, Num};

/// A buffer exported by a Python object as contiguous bytes; released on
/// drop.
pub(crate) struct RawBuffer {
    view: Box<ffi::Py_buffer>,
}

impl RawBuffer {
    /// Exports `obj`'s buffer as contiguous bytes, writable when asked.
    /// A non-buffer or read-only object is a `TypeError`, a non-contiguous
    /// one a `ValueError`; `what` names the argument in the message.
    pub(crate) fn get(obj: &Bound<'_, PyAny>, writable: bool, what: &str) -> PyResult<RawBuffer> {
        let py = obj.py();
        // SAFETY: a zeroed Py_buffer is a valid target for PyObject_GetBuffer.
        let mut view: Box<ffi::Py_buffer> = Box::new(unsafe { std::mem::zeroed() });
        let flags = if writable { ffi::PyBUF_WRITABLE } else { ffi::PyBUF_SIMPLE };
        // SAFETY: obj is a live object; on success the view is released in Drop.
        if unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), &mut *view, flags) } == 0 {
            return Ok(RawBuffer { view });
        }
        let cause = PyErr::fetch(py);
        let type_name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
        // Say why: not a buffer at all, read-only, or not contiguous.
        let mut probe: Box<ffi::Py_buffer> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: as above; the probe is released at once.
        let readonly =
            if unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), &mut *probe, ffi::PyBUF_FULL_RO) } == 0 {
                let ro = probe.readonly != 0;
                unsafe { ffi::PyBuffer_Release(&mut *probe) };
                ro
            } else {
                let _ = PyErr::take(py);
                let kind = if writable { "a writable bytes-like object" } else { "a bytes-like object" };
                return Err(PyTypeError::new_err(format!(
                    "{what} must be {kind} (bytearray, memoryview, numpy array …), not {type_name}"
                )));
            };
        if writable && readonly {
            return Err(PyTypeError::new_err(format!(
                "{what} must be writable (a bytearray, a writable memoryview or numpy array); \
                 this {type_name} is read-only"
            )));
        }
        Err(PyValueError::new_err(format!("{what} must be C-contiguous: {cause}")))
    }

    /// The bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        let len = self.view.len as usize;
        if len == 0 || self.view.buf.is_null() {
            return &[];
        }
        // SAFETY: the exporter keeps `len` bytes at `buf` alive until release.
        unsafe { std::slice::from_raw_parts(self.view.buf as *const u8, len) }
    }

    /// The bytes, writable (only for buffers got with `writable`).
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        assert!(self.view.readonly == 0, "a writable buffer");
        let len = self.view.len as usize;
        if len == 0 || self.view.buf.is_null() {
            return &mut [];
        }
        // SAFETY: as in `bytes`; the exporter granted write access, and
        // `&mut self` makes this the only slice of it.
        unsafe { std::slice::from_raw_parts_mut(self.view.buf as *mut u8, len) }
    }
}

impl Drop for RawBuffer {
    fn drop(&mut self) {
        // SAFETY: the view was filled by a successful PyObject_GetBuffer;
        // releasing needs the interpreter (attach is cheap when attached).
        Python::attach(|_| unsafe { ffi::PyBuffer_Release(&mut *self.view) });
    }
}

/// Checks that `len` bytes are whole items of `size` bytes.
fn whole_items(len: usize, size: usize, format: &str, what: &str) -> PyResult<usize> {
    if !len.is_multiple_of(size) {
        return Err(PyValueError::new_err(format!(
            "{what} holds {len} bytes, not a whole number of {size}-byte items of format {format} \
             ({} trailing bytes)",
            len % size
        )));
    }
    Ok(len / size)
}

/// Sort, in place, a writable bytes-like object of whole items of a fixed-size format.
///
/// `buf` (bytearray, writable memoryview, numpy array of any dtype) is
/// taken as bytes. Numbers by emsort's radix sort (floats NaNs last),
/// records rec:SIZE:KEY_OFFSET:KEY_LEN by their key bytewise, stably (equal
/// keys keep their order). The GIL is released. ValueError for `lines` or
/// a length that is not whole items, TypeError for read-only objects.
#[pyfunction]
#[pyo3(signature = (buf, format, *, reverse = false))]
pub(crate) fn sort_buffer(
    py: Python<'_>,
    buf: &Bound<'_, PyAny>,
    format: &str,
    reverse: bool,
) -> PyResult<()> {
    let (f, size) = args::fixed_format(format, "sort_buffer")?;
    let mut b = RawBuffer::get(buf, true, "buf")?;
    let bytes = b.bytes_mut();
    whole_items(bytes.len(), size, format, "buf")?;
    py.detach(|| emsort_sort::sort_items_in_place(f, reverse, bytes))
        .map_err(|e| crate::error::sort_error(py, &e))
}

/// The order of two items, reversed with `reverse`.
fn order(f: Format, a: &[u8], b: &[u8], reverse: bool) -> Ordering {
    let o = f.compare(a, b);
    if reverse {
        o.reverse()
    } else {
        o
    }
}

/// For each boundary, the index (in items) of the first item of `sorted_buf` not less than it.
///
/// A lower bound by binary search in the format's order (descending with
/// `reverse`), as bisect.bisect_left on the items' keys. Each boundary is
/// exactly one item of the format.
#[pyfunction]
#[pyo3(signature = (sorted_buf, format, boundaries, *, reverse = false))]
pub(crate) fn partition_points(
    py: Python<'_>,
    sorted_buf: &Bound<'_, PyAny>,
    format: &str,
    boundaries: &Bound<'_, PyAny>,
    reverse: bool,
) -> PyResult<Vec<usize>> {
    let (f, size) = args::fixed_format(format, "partition_points")?;
    let buf = RawBuffer::get(sorted_buf, false, "sorted_buf")?;
    let data = buf.bytes();
    let n = whole_items(data.len(), size, format, "sorted_buf")?;
    let mut bounds: Vec<Vec<u8>> = Vec::new();
    for (i, b) in boundaries.try_iter()?.enumerate() {
        let b = b?;
        let bytes = RawBuffer::get(&b, false, "each boundary")?.bytes().to_vec();
        if bytes.len() != size {
            return Err(PyValueError::new_err(format!(
                "boundary {i} has {} bytes; a boundary is exactly one item of format {format} ({size} bytes)",
                bytes.len()
            )));
        }
        bounds.push(bytes);
    }
    let item = |i: usize| &data[i * size..(i + 1) * size];
    let lower_bound = |b: &[u8]| {
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if order(f, item(mid), b, reverse) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    };
    Ok(py.detach(|| bounds.iter().map(|b| lower_bound(b)).collect()))
}

/// Checks an item's length for a format (any length for `lines`).
fn item<'a>(b: &'a RawBuffer, f: Format, format: &str, what: &str) -> PyResult<&'a [u8]> {
    let bytes = b.bytes();
    match f.item_size() {
        Some(size) if bytes.len() != size => Err(PyValueError::new_err(format!(
            "{what} has {} bytes; an item of format {format} has {size}",
            bytes.len()
        ))),
        _ => Ok(bytes),
    }
}

/// Compare two items by the format's order: -1 (a first), 0 (equal) or 1.
#[pyfunction]
#[pyo3(signature = (a, b, format, *, reverse = false))]
pub(crate) fn compare(
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    format: &str,
    reverse: bool,
) -> PyResult<i32> {
    let f = args::format(format)?;
    let (ba, bb) = (RawBuffer::get(a, false, "a")?, RawBuffer::get(b, false, "b")?);
    let o = order(f, item(&ba, f, format, "a")?, item(&bb, f, format, "b")?, reverse);
    Ok(o as i32)
}

/// Whether item `a` comes strictly before item `b` in the format's order.
#[pyfunction]
#[pyo3(signature = (a, b, format, *, reverse = false))]
pub(crate) fn item_key_less(
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    format: &str,
    reverse: bool,
) -> PyResult<bool> {
    Ok(compare(a, b, format, reverse)? < 0)
}

/// The key of a number as big-endian bytes of its normalised key.
fn num_key<T: NumKey + bytemuck::Pod>(item: &[u8]) -> Vec<u8> {
    let x: T = bytemuck::pod_read_unaligned(item);
    let k: u64 = x.key().into();
    let width = std::mem::size_of::<T>();
    k.to_be_bytes()[8 - width..].to_vec()
}

/// Bytes whose bytewise order is the format's order of the items.
///
/// sorted(items, key=lambda x: emsort.sort_key(x, fmt)) sorts like emsort.
#[pyfunction]
pub(crate) fn sort_key<'py>(
    py: Python<'py>,
    item: &Bound<'py, PyAny>,
    format: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let f = args::format(format)?;
    let b = RawBuffer::get(item, false, "item")?;
    let x = self::item(&b, f, format, "item")?;
    let key = match f {
        Format::Rec(r) => x[r.key_offset..r.key_offset + r.key_len].to_vec(),
        Format::Lines => x.to_vec(),
        f => for_num!(Num::of_format(f).expect("a number format"), T => num_key::<T>(x)),
    };
    Ok(PyBytes::new(py, &key))
}

/// The size in bytes of one item of a fixed-size format (ValueError for lines).
#[pyfunction]
pub(crate) fn item_size(format: &str) -> PyResult<usize> {
    Ok(args::fixed_format(format, "item_size")?.1)
}
