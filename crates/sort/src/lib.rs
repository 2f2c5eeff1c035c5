//! emsort's sort engine.
//!
//! So far: data [`Format`]s and their order, seeded data generation
//! ([`gen::generate`]) and streamed verification ([`verify::verify`]) with an
//! order-independent multiset [`Fingerprint`]. Run formation, the loser tree
//! and the merge policies come next (SPEC part 2).
//!
//! ```no_run
//! use std::sync::atomic::AtomicBool;
//! use emsort_sort::{gen, verify, Format};
//! # fn main() -> Result<(), emsort_io::Error> {
//! let spec = gen::GenSpec::items(Format::U32, 1_000_000);
//! gen::generate(&spec, "data.bin".as_ref(), &emsort_io::NoProgress, &AtomicBool::new(false))?;
//! let report = verify::verify("data.bin".as_ref(), Format::U32, false, None, &AtomicBool::new(false))?;
//! assert_eq!(report.items, 1_000_000);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod fingerprint;
mod format;
pub mod gen;
pub mod loser_tree;
pub mod merge_policy;
pub mod verify;

pub use fingerprint::Fingerprint;
pub use format::{f32_key, f64_key, Format, RecordFormat};
