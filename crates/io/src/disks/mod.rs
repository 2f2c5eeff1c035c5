//! The D-disk layer: runs striped block by block over D disks, one I/O
//! thread per disk, optionally emulated disks (experiment 3, SRM against DSM).
//!
//! - [`DiskSet`]: D directories (one per disk), the block size B, `O_DIRECT`
//!   or not, and an optional [`DiskModel`] (`latency + bytes / bandwidth`
//!   per request, one request at a time per disk).
//! - [`StripedRun`]: where one run lives. Block j (B bytes, the last one
//!   shorter) is on disk `(s + j) mod D` at offset `⌊j / D⌋ · B` of that
//!   disk's file for the run, `dir(d)/run-{id:06}.s`.
//! - [`DiskIo`]: one thread per disk serving a FIFO queue with real
//!   `pread`/`pwrite`; [`IoClient`]s queue block reads and writes without
//!   blocking and wait for their own completions ([`Done`]).
//! - [`StripedWriter`] / [`StripedReader`]: a run written / read
//!   sequentially with a number of blocks in flight.
//! - [`Block`]: a B-byte buffer aligned to 4096 for `O_DIRECT`.
//!
//! # Layout
//!
//! A run of 7½ blocks on D = 3 disks starting at disk s = 1; a logical
//! block (one stripe) is D·B bytes, one block on each disk, so a stripe is
//! one parallel I/O in the parallel disk model:
//!
//! ```text
//!              disk 0            disk 1            disk 2
//!            run-000042.s      run-000042.s      run-000042.s
//! offset 0   [ block 2 ]       [ block 0 ]       [ block 1 ]
//! offset B   [ block 5 ]       [ block 3 ]       [ block 4 ]
//! offset 2B                    [ block 6 ]       [ 7 (½) ]
//! ```
//!
//! Different runs start on different disks (e.g. s = id mod D) so that the
//! first blocks of the runs of a merge are spread over the disks.
//!
//! # `O_DIRECT`
//!
//! With `direct`, B must be a multiple of 4096 and every transfer uses a
//! 4096-aligned [`Block`]. The short last block of a run is written padded
//! with zeros to a multiple of 4096, and the file is then cut back to its
//! true length (`ftruncate`), so each disk's file holds exactly its blocks.
//! Reads of that block ask for the padded length and get the true one.
//!
//! # Example
//!
//! ```no_run
//! use std::io::Read;
//! use std::sync::Arc;
//! use emsort_io::disks::{DiskIo, DiskModel, DiskSet, StripedReader, StripedWriter};
//! # fn main() -> emsort_io::Result<()> {
//! let model: DiskModel = "100M,5ms".parse().unwrap();
//! let dirs = vec!["/tmp/d0".into(), "/tmp/d1".into()];
//! let io = DiskIo::start(Arc::new(DiskSet::new(dirs, 1 << 20, false, Some(model))?))?;
//! let mut w = StripedWriter::new(&io, 42, 42 % 2, 2);
//! w.write_all(&[7u8; 3 << 20])?;
//! let run = w.finish()?;
//! let mut back = Vec::new();
//! StripedReader::new(&io, run.clone(), 2).read_to_end(&mut back).unwrap();
//! assert_eq!(back.len(), 3 << 20);
//! io.remove_run(&run)?;
//! println!("{:?}", io.counters());
//! # Ok(()) }
//! ```

mod block;
mod layout;
mod model;
mod reader;
mod worker;
mod writer;

pub use block::Block;
pub use layout::{DiskSet, StripedRun, DIRECT_ALIGN};
pub use model::DiskModel;
pub use reader::StripedReader;
pub use worker::{DiskCounters, DiskIo, Done, IoClient};
pub use writer::StripedWriter;
