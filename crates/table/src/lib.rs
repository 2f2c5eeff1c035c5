//! emsort's tables: Parquet and Arrow IPC files sorted by columns through
//! the external merge sort, in bounded memory.
//!
//! ```text
//!  Parquet / Arrow IPC ─► batches ─► arrow-row ─► framed rows ─► Sorter ─► blocks of rows ─► arrow-row ─► batches ─► Parquet / Arrow IPC
//!  (row groups stream)               key │ payload  (emsort_sort::rows)  (runs, merges)                 decode      (row groups, sorting_columns)
//! ```
//!
//! Each row becomes one framed row (module `emsort_sort::rows`): its key
//! columns as `arrow-row` writes them — bytes whose memcmp order is the Arrow
//! order asked for (descending, nulls first or last, floats in total order,
//! decimals, timestamps, strings, dictionaries by their values) and prefix-free
//! — then its other columns, only to be written again: values of fixed width,
//! booleans, strings and binaries as their bytes (module `payload`), the rest
//! as `arrow-row` rows. The engine sorts them as it sorts text lines with
//! normalised keys (stably: equal keys keep their input order; `-u` keeps the
//! first of each), and the output is decoded back into batches of the input's
//! schema.
//!
//! Memory: the merge sort gets two thirds of the budget M ([`sort_share`]);
//! a batch being read or written holds about M/24 of rows (and as much
//! again as `arrow-row` rows), and a Parquet row group in progress at most
//! M/6 encoded bytes (the output's row groups are the input's in rows, or
//! smaller when that bound is reached first), so the whole stays near M.

#![deny(missing_docs)]

mod key;
mod payload;
mod read;
mod sort;
mod write;

pub use key::TableKey;
pub use read::{TableInput, TableKind};
pub use sort::{
    open_tables, row_bytes, rows_order, sort_share, sort_tables, SortedBatches, TableKeys, TableSort,
    TableSorter, TableStats,
};
pub use write::parse_codec;

use std::path::PathBuf;

/// What went wrong in a table sort.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TableError {
    /// An input is not a table of its kind, or differs from the first.
    #[error("{}: {message}", path.display())]
    Input {
        /// The input.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The output could not be written as a table.
    #[error("{}: {message}", path.display())]
    Output {
        /// The output.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A key names no column, or a column no key can order.
    #[error("{0}")]
    Key(String),
    /// The I/O layer failed (its error names the file).
    #[error(transparent)]
    Io(#[from] emsort_io::Error),
    /// The sort failed.
    #[error(transparent)]
    Sort(#[from] emsort_sort::SortError),
}
