//! One emsort setting of a sort campaign ([`Point`]: format, N, M, d,
//! merge policy, stream kind, threads, repetitions), the plan it makes, and
//! the cost model it is measured against ([`predicted_blocks`]).
//!
//! The vocabulary the campaign's other modules share: the grid loop
//! ([`super::Campaign`]) makes the points, [`super::emsort_run`] runs one,
//! [`super::readme`] lists them.
//!
//! ```
//! use emsort_bench::sort::Point;
//! use emsort_sort::Format;
//!
//! let p = Point {
//!     format: Format::U32,
//!     bytes: 64 << 20,
//!     memory: 16 << 20,
//!     fan_in: Some(8),
//!     policy: None,
//!     io: None,
//!     threads: 2,
//!     reps: 3,
//! };
//! assert_eq!(p.label(), "u32 N=64M M=16M d=8 default default t=2");
//! ```

use std::path::Path;

use emsort_io::{format_size, StreamKind};
use emsort_sort::merge_policy::MergePolicy;
use emsort_sort::{Format, SortPlan};

use crate::sort::params::or_default;
use crate::{Error, Result};

/// One emsort setting on one input.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Data format.
    pub format: Format,
    /// Input size N in bytes (a whole number of items).
    pub bytes: u64,
    /// Memory M.
    pub memory: u64,
    /// Fan-in d; `None`: emsort's own, no `--fan-in` and no `--block-size`.
    pub fan_in: Option<usize>,
    /// Merge policy; `None`: emsort's own, no `--policy`.
    pub policy: Option<MergePolicy>,
    /// Stream kind; `None`: the sort's own choice, no `--io` (`--io auto`).
    pub io: Option<StreamKind>,
    /// Threads.
    pub threads: usize,
    /// Repetitions.
    pub reps: u32,
}

impl Point {
    /// emsort's plan for this point (B = the plan's default for M and d),
    /// temporary files in `tmp`; a plan that cannot work is an error naming
    /// the point. A point without a stream kind plans with the kind `--io
    /// auto` takes without its probe ([`emsort_io::device::choose`]: the
    /// queued `uring-direct` from M = 128 MiB, which needs the most memory;
    /// the sort itself probes its temp dir and records its choice).
    pub fn plan(&self, tmp: &Path) -> Result<SortPlan> {
        self.plan_with(tmp, false)
    }

    /// [`plan`](Point::plan), with `probe`: a point without a stream kind
    /// gets the kind `--io auto` chooses after probing `tmp`, as `emsort
    /// sort` does (for a sort in this process).
    pub(super) fn plan_with(&self, tmp: &Path, probe: bool) -> Result<SortPlan> {
        let mut b = SortPlan::builder(self.format)
            .memory(self.memory)
            .threads(self.threads)
            .temp_dir(tmp)
            .input_bytes(self.bytes);
        b = match (self.io, probe) {
            (Some(k), _) => b.io(k),
            (None, true) => b.io_auto(),
            (None, false) => {
                let d = emsort_io::device::choose(None, None, self.memory, None);
                b.io(d.kind).queue_depth(d.queue_depth)
            }
        };
        if let Some(d) = self.fan_in {
            b = b.fan_in(d);
        }
        if let Some(p) = self.policy {
            b = b.policy(p);
        }
        b.build().map_err(|e| Error::Campaign(format!("{}: {e}", self.label())))
    }

    /// `u32 N=64M M=16M d=8 optimal buffered t=2` (`default` where emsort
    /// chooses: `u32 N=1G M=256M d=default default default t=2`).
    pub fn label(&self) -> String {
        format!(
            "{} N={} M={} d={} {} {} t={}",
            self.format,
            format_size(self.bytes),
            format_size(self.memory),
            or_default(self.fan_in),
            or_default(self.policy.map(|p| p.name())),
            or_default(self.io.map(|k| k.name())),
            self.threads
        )
    }
}

/// The cores of this machine (a grid's threads 0 means all of them).
pub(super) fn cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// The size of an input of `format` at most `bytes` long: whole items.
pub(super) fn whole_items(format: Format, bytes: u64) -> u64 {
    match format.item_size() {
        Some(s) => bytes / s as u64 * s as u64,
        None => bytes,
    }
}

/// The cost model: ⌈2 · N · passes / B⌉ block transfers.
///
/// ```
/// assert_eq!(emsort_bench::sort::predicted_blocks(1 << 20, 2.0, 1 << 16), 64);
/// ```
pub fn predicted_blocks(bytes: u64, passes: f64, block: u64) -> u64 {
    (2.0 * bytes as f64 * passes / block.max(1) as f64).ceil() as u64
}
