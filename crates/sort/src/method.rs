//! How a sort merges its runs: [`Method`], a value that carries the
//! parameters of its merge, and [`MethodKind`], its name.
//!
//! - [`Method::Plain`]: d-way merges over the temp dirs; no parameters.
//! - [`Method::Dsm`]`(`[`ParallelDisks`]`)`: disk-striped mergesort on D
//!   disks (the directories, an optional emulated disk model, the seed the
//!   statistics record).
//! - [`Method::Srm`]`(`[`ParallelDisks`]`, `[`SrmOptions`]`)`: simple
//!   randomized mergesort on D disks, the runs' starting disks drawn from
//!   the seed, with SRM's own choices (a cap on the merge order, where the
//!   forecasting data lives).
//!
//! An option that belongs to another method cannot be written (the plain
//! merge has no disks, DSM no merge order cap). What the types cannot say
//! (a cap below 2, a disk that is not a directory, too little memory) is
//! checked by [`SortPlanBuilder::build`](crate::SortPlanBuilder::build).
//!
//! ```
//! use emsort_sort::{Method, MethodKind, ParallelDisks, SrmOptions};
//! let m = Method::Srm(ParallelDisks::new(["/d0", "/d1"]), SrmOptions::default().max_order(Some(8)));
//! assert_eq!(m.kind(), MethodKind::Srm);
//! assert_eq!(m.to_string(), "srm");
//! assert_eq!(m.disks().unwrap().dirs.len(), 2);
//! assert_eq!("dsm".parse::<MethodKind>(), Ok(MethodKind::Dsm));
//! ```

use std::fmt;
use std::path::PathBuf;

use emsort_io::disks::DiskModel;
use serde::{Serialize, Serializer};

/// The command-line names of a fieldless enum's variants: `name()`,
/// `Display` by that name, and `FromStr` from it, which refuses any other
/// string with "unknown WHAT 'S' (expected LIST)".
macro_rules! cli_names {
    ($t:ident, $what:literal, $expected:literal, { $($v:ident => $name:literal),+ $(,)? }) => {
        impl $t {
            /// The command-line name.
            pub fn name(self) -> &'static str {
                match self {
                    $($t::$v => $name,)+
                }
            }
        }

        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<$t, String> {
                match s {
                    $($name => Ok($t::$v),)+
                    _ => Err(format!(concat!("unknown ", $what, " '{}' (expected ", $expected, ")"), s)),
                }
            }
        }
    };
}
pub(crate) use cli_names;

/// How a sort merges its runs, with the parameters of that merge.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Method {
    /// The plain d-way merge of [`crate::merge`] over the temp dirs.
    #[default]
    Plain,
    /// Disk-striped mergesort: logical blocks of D·B striped over all disks
    /// (`pdisk/dsm.rs`).
    Dsm(ParallelDisks),
    /// Simple randomized mergesort: runs start on a random disk, blocks are
    /// read by forecasting (`pdisk/srm.rs`).
    Srm(ParallelDisks, SrmOptions),
}

impl Method {
    /// Which method this is, without its parameters.
    pub fn kind(&self) -> MethodKind {
        match self {
            Method::Plain => MethodKind::Plain,
            Method::Dsm(_) => MethodKind::Dsm,
            Method::Srm(..) => MethodKind::Srm,
        }
    }

    /// The command-line name: `plain`, `dsm` or `srm`.
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// The disks of DSM and SRM (`None` for the plain merge).
    pub fn disks(&self) -> Option<&ParallelDisks> {
        match self {
            Method::Plain => None,
            Method::Dsm(d) | Method::Srm(d, _) => Some(d),
        }
    }

    /// SRM's own options (`None` for the others).
    pub fn srm(&self) -> Option<&SrmOptions> {
        match self {
            Method::Srm(_, o) => Some(o),
            _ => None,
        }
    }

    /// The method of `kind` on `disks`, SRM with the default
    /// [`SrmOptions`] (`disks` unused for the plain merge).
    pub fn of_kind(kind: MethodKind, disks: ParallelDisks) -> Method {
        match kind {
            MethodKind::Plain => Method::Plain,
            MethodKind::Dsm => Method::Dsm(disks),
            MethodKind::Srm => Method::Srm(disks, SrmOptions::default()),
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The D disks of DSM and SRM.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParallelDisks {
    /// The disks, one directory each (empty: the temp dirs are the disks).
    pub dirs: Vec<PathBuf>,
    /// Serve each disk at this bandwidth and latency (the parallel-disk
    /// model on one device); `None`: as fast as the device goes.
    pub emulate: Option<DiskModel>,
    /// The seed of the runs' starting disks: SRM draws each run's first
    /// disk from it; DSM starts every run on disk 0 and only records it
    /// ([`ParallelDiskStats::seed`](crate::ParallelDiskStats::seed)).
    pub seed: u64,
}

impl ParallelDisks {
    /// The default seed of SRM's starting disks.
    pub const DEFAULT_SEED: u64 = 42;

    /// The disks `dirs` (empty: the temp dirs), not emulated, with the
    /// default seed.
    pub fn new<P: Into<PathBuf>>(dirs: impl IntoIterator<Item = P>) -> ParallelDisks {
        ParallelDisks {
            dirs: dirs.into_iter().map(Into::into).collect(),
            emulate: None,
            seed: Self::DEFAULT_SEED,
        }
    }

    /// Emulates each disk with `model` (or not, with `None`).
    pub fn emulate(mut self, model: Option<DiskModel>) -> ParallelDisks {
        self.emulate = model;
        self
    }

    /// Sets the seed of the starting disks.
    pub fn seed(mut self, seed: u64) -> ParallelDisks {
        self.seed = seed;
        self
    }
}

/// SRM's own choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SrmOptions {
    /// The largest merge order SRM may use (`None`: no cap; at least 2).
    pub max_order: Option<usize>,
    /// Where SRM keeps forecasting data: `None` decides by the memory
    /// formula of Barve & Vitter 4.1.3, `Some(true)` in memory,
    /// `Some(false)` forces the blocked scheme of 4.1.2 (forecasting data
    /// runs on disk read through small buffers).
    pub forecast_in_memory: Option<bool>,
}

impl SrmOptions {
    /// Caps the merge order (`None`: no cap).
    pub fn max_order(mut self, cap: Option<usize>) -> SrmOptions {
        self.max_order = cap;
        self
    }

    /// Keeps the forecasting data in memory (`Some(true)`), on disk in the
    /// blocked scheme (`Some(false)`), or decides by memory (`None`).
    pub fn forecast_in_memory(mut self, yes: Option<bool>) -> SrmOptions {
        self.forecast_in_memory = yes;
        self
    }
}

/// Which merge a [`Method`] is, without its parameters: what the command
/// line names (`--method`), the statistics record and errors report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MethodKind {
    /// [`Method::Plain`].
    #[default]
    Plain,
    /// [`Method::Dsm`].
    Dsm,
    /// [`Method::Srm`].
    Srm,
}

impl MethodKind {
    /// Every method, in the order the command line lists them.
    pub const ALL: [MethodKind; 3] = [MethodKind::Plain, MethodKind::Dsm, MethodKind::Srm];
}

cli_names!(MethodKind, "merge method", "plain, dsm or srm", { Plain => "plain", Dsm => "dsm", Srm => "srm" });

impl Serialize for MethodKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}
