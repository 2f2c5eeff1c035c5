//! What every campaign shares: its settings, their builder methods and the
//! plumbing around the output and work directories and `machine.json`.
//!
//! Each campaign ([`streams`](crate::streams), [`sort`](crate::sort),
//! [`srm`](crate::srm), [`readers`](crate::readers)) holds a
//! [`CampaignSettings`] and implements [`CampaignBuilder`], which gives it
//! the builder methods `cache`, `out_dir`, `work_dir`, `command_line` and
//! `version` (bring the trait into scope to call them):
//!
//! ```no_run
//! use emsort_bench::streams::Campaign;
//! use emsort_bench::CampaignBuilder;
//! use emsort_io::cache::CacheMethod;
//!
//! let campaign = Campaign::quick()
//!     .cache(CacheMethod::Fadvise)
//!     .out_dir("results/quick")
//!     .command_line("emsort bench streams --quick");
//! assert_eq!(campaign.cache_method(), CacheMethod::Fadvise);
//! ```

use std::path::{Path, PathBuf};

use emsort_io::cache::{self, CacheMethod};
use emsort_io::{format_size, ErrorKind};
use serde::Serialize;

use crate::machine::{is_memory_fs, meminfo, Machine};
use crate::{Error, Result};

/// The settings every campaign has: how the page cache is emptied, where
/// the results and the work files go, and what `machine.json` records.
#[derive(Debug, Clone)]
pub struct CampaignSettings {
    /// How to empty the page cache before each run.
    pub cache: CacheMethod,
    /// Where the results go (raw CSV, `summary.csv`, `machine.json`, plots).
    pub out_dir: PathBuf,
    /// Where the work files go; `None`: inside the output directory.
    pub work_dir: Option<PathBuf>,
    /// The command line recorded in `machine.json`.
    pub command_line: String,
    /// The emsort version recorded in `machine.json`.
    pub version: String,
}

impl CampaignSettings {
    /// The defaults: the best cache method available (`drop` when this
    /// process may, else `fadvise`), the output directory
    /// [`default_out_dir(name)`](CampaignSettings::default_out_dir), no work
    /// directory, no command line, this crate's version.
    pub fn new(name: &str) -> CampaignSettings {
        CampaignSettings {
            cache: CacheMethod::best_available(),
            out_dir: CampaignSettings::default_out_dir(name),
            work_dir: None,
            command_line: String::new(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }

    /// `emsort-results/<YYYY-MM-DD>-<name>`, relative to the current
    /// directory.
    pub fn default_out_dir(name: &str) -> PathBuf {
        PathBuf::from("emsort-results").join(format!("{}-{name}", crate::machine::local_date()))
    }

    /// The facts about the machine, for the work directory `work`, with
    /// the cache method, command line and version.
    pub(crate) fn machine(&self, work: &Path) -> Machine {
        Machine::collect(work, self.cache, &self.command_line, &self.version)
    }

    /// Fails when the cache method is `drop` and this process may not drop
    /// the page cache.
    pub(crate) fn check_cache(&self) -> Result<()> {
        if self.cache == CacheMethod::Drop && !cache::can_drop_caches() {
            return Err(Error::Campaign(
                "cache method 'drop' needs write access to /proc/sys/vm/drop_caches (root); \
                 use 'fadvise' instead"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Creates the output directory and returns its `raw.csv`, failing when
    /// that exists already; `redraws` names what `--plot-only` redraws
    /// ("plots").
    pub(crate) fn fresh_raw_csv(&self, redraws: &str) -> Result<PathBuf> {
        let out = &self.out_dir;
        std::fs::create_dir_all(out).map_err(|e| Error::io("create directory", out, e))?;
        let raw_csv = out.join("raw.csv");
        if raw_csv.exists() {
            return Err(Error::Campaign(format!(
                "{} already holds a campaign's raw.csv: choose another output directory \
                 (or redraw its {redraws} with --plot-only)",
                out.display()
            )));
        }
        Ok(raw_csv)
    }

    /// The work directory given, created; `None` when none was given.
    pub(crate) fn create_work_dir(&self) -> Result<Option<PathBuf>> {
        match &self.work_dir {
            Some(d) => {
                std::fs::create_dir_all(d).map_err(|e| Error::io("create directory", d, e))?;
                Ok(Some(d.clone()))
            }
            None => Ok(None),
        }
    }

    /// The work directory given (created), or else a new temporary
    /// directory `prefix…` inside the output directory, removed when the
    /// returned [`TempDir`](tempfile::TempDir) is dropped.
    pub(crate) fn work_dir_or_temp(&self, prefix: &str) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
        match self.create_work_dir()? {
            Some(d) => Ok((d, None)),
            None => {
                let t = temp_dir_in(&self.out_dir, prefix)?;
                Ok((t.path().to_path_buf(), Some(t)))
            }
        }
    }
}

/// A campaign's builder methods, given once for every campaign: each
/// campaign implements [`settings`](CampaignBuilder::settings) and
/// [`settings_mut`](CampaignBuilder::settings_mut), and its own module docs
/// say how it uses the work directory.
pub trait CampaignBuilder: Sized {
    /// The campaign's name in its default output directory
    /// (`emsort-results/<YYYY-MM-DD>-<NAME>`): `streams`, `sort`, `srm`,
    /// `readers`.
    const NAME: &'static str;

    /// The campaign's settings.
    fn settings(&self) -> &CampaignSettings;

    /// The campaign's settings, to change.
    fn settings_mut(&mut self) -> &mut CampaignSettings;

    /// `emsort-results/<YYYY-MM-DD>-<NAME>`, relative to the current
    /// directory (see [`CampaignSettings::default_out_dir`]).
    fn default_out_dir() -> PathBuf {
        CampaignSettings::default_out_dir(Self::NAME)
    }

    /// How to empty the page cache before each run (default: `drop` when
    /// this process may, else `fadvise`).
    fn cache(mut self, m: CacheMethod) -> Self {
        self.settings_mut().cache = m;
        self
    }

    /// Where the results go: the raw CSV, `summary.csv`, `machine.json`
    /// and `plots/` (default
    /// [`default_out_dir`](CampaignBuilder::default_out_dir)).
    fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.settings_mut().out_dir = dir.into();
        self
    }

    /// Where the work files (data sets, runs, outputs) go (default: a
    /// temporary directory inside the output directory, removed at the
    /// end); each campaign's module docs say how it uses it.
    fn work_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.settings_mut().work_dir = Some(dir.into());
        self
    }

    /// The command line recorded in `machine.json`.
    fn command_line(mut self, line: impl Into<String>) -> Self {
        self.settings_mut().command_line = line.into();
        self
    }

    /// The emsort version recorded in `machine.json` (default: this crate's).
    fn version(mut self, v: impl Into<String>) -> Self {
        self.settings_mut().version = v.into();
        self
    }

    /// The cache method.
    fn cache_method(&self) -> CacheMethod {
        self.settings().cache
    }
}

/// A new temporary directory `prefix…` inside `dir`, removed when dropped.
pub(crate) fn temp_dir_in(dir: &Path, prefix: &str) -> Result<tempfile::TempDir> {
    tempfile::Builder::new().prefix(prefix).tempdir_in(dir).map_err(|e| Error::io("create directory", dir, e))
}

/// Fails when the largest memory M of a campaign's points is more than
/// half of the memory available.
pub(crate) fn check_memory_m(largest: Option<u64>) -> Result<()> {
    if let (Some(avail), Some(m)) = (meminfo("MemAvailable:"), largest) {
        if m > avail / 2 {
            return Err(Error::Campaign(format!(
                "M = {} is more than half of the {} of memory available",
                format_size(m),
                format_size(avail)
            )));
        }
    }
    Ok(())
}

/// The warning when the work directory `work` is on a file system in
/// memory (`fs_type`), else `None`.
pub(crate) fn memory_fs_warning(work: &Path, fs_type: &str) -> Option<String> {
    is_memory_fs(fs_type).then(|| {
        format!(
            "the work directory {} is on {}: its files live in memory, so the times say \
             nothing about a disk (use --dir on a disk)",
            work.display(),
            fs_type
        )
    })
}

/// `formats: u32, lines`: the formats of a campaign's points, a run of
/// equal formats named once, for [`Machine::element`].
pub(crate) fn formats_element(formats: impl Iterator<Item = emsort_sort::Format>) -> String {
    let mut names: Vec<String> = formats.map(|f| f.to_string()).collect();
    names.dedup();
    format!("formats: {}", names.join(", "))
}

/// Writes `value` as pretty JSON and a newline to `path` (`machine.json`).
pub(crate) fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    let json = serde_json::to_string_pretty(value).expect("machine.json serialises");
    std::fs::write(path, json + "\n").map_err(|e| Error::io("write", path, e))
}

/// The error of a campaign stopped by its cancel flag, naming `work`.
pub(crate) fn interrupted(work: &Path) -> Error {
    Error::Io(emsort_io::Error::new(ErrorKind::Interrupted, work))
}
