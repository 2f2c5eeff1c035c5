//! Python bindings of emsort: the extension module `emsort._emsort` that
//! the Python package `emsort` (`python/` in the repository) re-exports.
//!
//! Built by maturin (`pip install ./python`); the Python API, its type
//! stubs and its tests live in `python/`. Every function is a thin layer
//! over the library crates:
//!
//! | Python | Rust | module |
//! |---|---|---|
//! | `sort`, `merge_files`, `gen`, `verify` | [`emsort_sort::sort`], [`emsort_sort::merge_files`], [`emsort_sort::gen::generate`], [`emsort_sort::verify::verify`] | `files` |
//! | `sort_array`, `sort_array_to_file`, `read_array` | [`emsort_sort::sort_numbers`], [`emsort_io::open_reader`] | `array` |
//! | `sort_buffer`, `partition_points`, `compare`, `item_key_less`, `sort_key`, `item_size` | [`emsort_sort::Format`]'s order | `buffer` |
//! | `Reader` | [`emsort_io::AnyReader`] | `reader` |
//! | `Sorter` | [`emsort_sort::Sorter`], [`emsort_sort::Sorted`], [`emsort_sort::Blocks`] | `sorter` |
//! | `LineOrder` | [`emsort_sort::keys::LineOrder`], [`emsort_sort::check::check_order`] | `lines` |
//! | `EmsortError` and its subclasses | [`emsort_io::Error`], [`emsort_sort::SortError`] | `error` |
//!
//! `sort`, `merge_files`, `Sorter` and `LineOrder` take GNU sort's
//! ordering options for `lines` as keywords named after its long options
//! (`key="3,3n"`, `field_separator=","`, `numeric_sort=True` …; module
//! `order`), and `lines` is their default format, as on the command line.
//! Long calls release the GIL, report progress to a Python callback and
//! stop cleanly on Ctrl-C (`worker`). Arguments are converted in
//! `args` (sizes such as `"256M"` or `"25%"` as on the command line).
//! The extension's own allocations of 256 KiB or more are mapped on their
//! own (`alloc`), as the binary has glibc do, so sorts keep to their
//! memory budget inside any Python program.
//!
//! ```python
//! import emsort
//! emsort.gen("data.u32", count=10_000_000, seed=1)
//! stats = emsort.sort("data.u32", "sorted.u32", format="u32", memory="64M")
//! assert emsort.verify("sorted.u32", input="data.u32")["ok"]
//! ```
#![deny(missing_docs)]

use pyo3::prelude::*;

/// Large blocks mapped on their own, so freed ones leave the process
/// (module `alloc`: the sort's memory budget depends on it).
#[global_allocator]
static ALLOCATOR: alloc::Allocator = alloc::Allocator;

mod alloc;
mod args;
mod array;
mod buffer;
mod error;
mod files;
mod lines;
mod order;
mod reader;
mod sorter;
mod table;
mod worker;

/// The extension module `emsort._emsort`.
#[pymodule]
fn _emsort(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    let c = error::classes(py)?;
    m.add("EmsortError", c.base.bind(py))?;
    m.add("EmsortOSError", c.os.bind(py))?;
    m.add("EmsortFileNotFoundError", c.not_found.bind(py))?;
    m.add("EmsortIsADirectoryError", c.is_a_directory.bind(py))?;
    m.add("EmsortPermissionError", c.permission.bind(py))?;
    m.add_function(wrap_pyfunction!(files::sort, m)?)?;
    m.add_function(wrap_pyfunction!(files::merge_files, m)?)?;
    m.add_function(wrap_pyfunction!(files::gen, m)?)?;
    m.add_function(wrap_pyfunction!(files::verify, m)?)?;
    m.add_function(wrap_pyfunction!(table::sort_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(table::table_keys, m)?)?;
    m.add_function(wrap_pyfunction!(table::parse_table_key, m)?)?;
    m.add_function(wrap_pyfunction!(table::table_ranges, m)?)?;
    m.add_class::<table::SortedArrow>()?;
    m.add_function(wrap_pyfunction!(array::sort_array, m)?)?;
    m.add_function(wrap_pyfunction!(array::sort_array_to_file, m)?)?;
    m.add_function(wrap_pyfunction!(array::read_array, m)?)?;
    m.add_function(wrap_pyfunction!(buffer::sort_buffer, m)?)?;
    m.add_function(wrap_pyfunction!(buffer::partition_points, m)?)?;
    m.add_function(wrap_pyfunction!(buffer::compare, m)?)?;
    m.add_function(wrap_pyfunction!(buffer::item_key_less, m)?)?;
    m.add_function(wrap_pyfunction!(buffer::sort_key, m)?)?;
    m.add_function(wrap_pyfunction!(buffer::item_size, m)?)?;
    m.add_class::<reader::PyReader>()?;
    m.add_class::<sorter::PySorter>()?;
    m.add_class::<lines::PyLineOrder>()?;
    Ok(())
}
