//! emsort's sort engine: an external multiway merge sort over every data
//! format, and the tools around it.
//!
//! - [`sort`] sorts any [`Source`]s (files, standard input, pipes, read
//!   once in order as one input) into any [`Sink`] (a file replaced
//!   atomically, standard output, a device or FIFO, a writer) with a memory
//!   budget far below the input's size: run formation on all cores into a
//!   run store, then merges into the output, through one pipeline for every
//!   method (module `pipeline`, drawn in `docs/ARCHITECTURE.md`). It returns
//!   [`SortStats`] ([`stats`]) and fails with a [`SortError`].
//!   [`sort_file`] is the file-to-file case; [`merge_files`] runs the merge
//!   phase alone on files already sorted; [`Sorter`] takes items pushed by
//!   a program and gives them back sorted ([`Sorted::blocks`]) or writes
//!   them to a file ([`Sorted::write_to`]).
//! - Merges: d-way through tournament trees ([`merge`]) following
//!   a [`merge_policy`], or on D parallel disks with DSM or SRM ([`pdisk`],
//!   [`Method`], Barve & Vitter: runs striped over the disks, SRM's
//!   forecasting and prefetching, and their statistics,
//!   [`ParallelDiskStats`]).
//! - [`budget`]: how front ends write a memory budget (`256M`, `25%`) and
//!   the default one.
//! - [`SortPlan`] ([`plan`]) holds every budget and parameter of a sort
//!   (memory M, fan-in d, block size B, stream kinds, order, policy,
//!   threads, temp dirs, the [`Method`] with its own parameters), is made
//!   and checked only by its builder, derives the run length, the number
//!   of runs and the passes in one place, and prints itself.
//! - Data [`Format`]s and their order, normalised number keys ([`key`]),
//!   seeded data generation ([`gen::generate`]) and streamed verification
//!   ([`verify::verify`]) with an order-independent multiset [`Fingerprint`].
//!
//! ```no_run
//! use std::sync::atomic::AtomicBool;
//! use emsort_sort::{gen, sort_file, verify, Format, SortPlan};
//! # fn main() -> Result<(), emsort_sort::SortError> {
//! let no = AtomicBool::new(false);
//! let spec = gen::GenSpec::items(Format::U32, 1_000_000);
//! gen::generate(&spec, "data.bin".as_ref(), &emsort_io::NoProgress, &no)?;
//! let plan = SortPlan::builder(Format::U32).memory(1 << 20).build()?;
//! let stats = sort_file(&plan, "data.bin".as_ref(), "sorted.bin".as_ref(), &emsort_io::NoProgress, &no)?;
//! assert!(stats.runs > 1);
//! let report = verify::verify("sorted.bin".as_ref(), Format::U32, false, Some("data.bin".as_ref()), &no)?;
//! assert!(report.ok());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod budget;
mod byte_stream;
pub mod check;
mod chunk_sort;
mod codec;
mod compress;
mod csv;
mod error;
mod fingerprint;
mod format;
pub mod gen;
pub mod header;
mod json;
pub mod key;
pub mod keys;
#[cfg(target_arch = "x86_64")]
mod lanes;
mod line_ends;
pub mod merge;
mod merge_items;
pub mod merge_policy;
mod method;
mod multiway;
mod output;
pub mod pdisk;
mod pipeline;
mod plain;
pub mod plan;
mod radix;
mod read_ahead;
pub mod record_ends;
pub mod rows;
mod run_formation;
mod run_store;
mod runtime;
pub mod simd;
mod simd_merge;
mod simd_sort;
mod sorter;
mod source;
pub mod stats;
#[cfg(test)]
mod test_util;
mod tree;
pub mod verify;
mod write_behind;

pub use codec::{line_spans, sort_in_memory, sort_items_in_place};
pub use compress::Compression;
pub use error::SortError;
pub use fingerprint::Fingerprint;
pub use format::{f32_key, f64_key, Format, RecordFormat};
pub use method::{Method, MethodKind, ParallelDisks, SrmOptions};
pub use output::{Block, Sink, STDOUT_NAME};
pub use pipeline::{merge_files, merge_into, merge_sources, sort, sort_file};
pub use plan::{Derived, SortPlan, SortPlanBuilder};
pub use sorter::{Blocks, Sorted, Sorter};
pub use source::{Source, STDIN_NAME};
pub use stats::ParallelDiskStats;

/// Sorts numbers in memory as run formation does: the parallel in-place
/// radix sort of module `radix` (`rdst`'s low-memory tuner) on the current
/// rayon pool, by the format's order ([`key::NumKey`]: floats in total
/// order, NaNs last), descending when `reverse`. The benchmark's in-memory
/// peer uses it, so that peer is the floor of emsort's own CPU work.
///
/// ```
/// let mut v = vec![3u32, 1, 2];
/// emsort_sort::sort_numbers(&mut v, false);
/// assert_eq!(v, [1, 2, 3]);
/// ```
pub fn sort_numbers<T: key::NumKey>(items: &mut [T], reverse: bool) {
    radix::sort_numbers(items, reverse);
}
pub use stats::{Bounds, CompressionStats, SortStats};
