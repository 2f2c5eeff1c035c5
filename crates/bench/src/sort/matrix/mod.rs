//! A machine-profile matrix (issue 38): one sort campaign on each profile
//! the machine can make, in one run, judged against the issue's bars.
//!
//! A claim about speed holds on one machine as it was measured; a matrix
//! measures the same campaign (a [`Campaign`] built from a parameter file,
//! [`crate::sort::parse_params`]) on several *profiles* ([`Profile`]):
//!
//! | profile | where the inputs, runs and outputs go |
//! |---|---|
//! | `root` | the work directory's file system as it is (ext4 on the root disk here) |
//! | `xfs`, `btrfs` | a sparse image file in the work directory with `mkfs.xfs` / `mkfs.btrfs` defaults, loop-mounted (direct I/O on the loop device); skipped with the reason when root, loop devices or the mkfs tool are missing |
//! | `tmpfs` | a tmpfs mount of 6 × the largest input plus room for fio's probe (memory: where the CPU bound lives) |
//! | `simd-LEVEL` | `root`, with `EMSORT_SIMD=LEVEL` on every emsort run (and on the CPU bound), one per level below the CPU's; only the number formats' points (records, lines and the keys experiment take the same code at every level) |
//!
//! [`Matrix::run`] proceeds in steps:
//!
//! 1. **Check** the output directory (no `raw.csv` yet) and find fio.
//! 2. **Per profile**, in order: make its directory or mount
//!    (`mount.rs`); record its facts ([`ProfileFacts`]: the mount from
//!    `/proc/self/mountinfo`, the CPU and SIMD levels, the device's 1 MiB
//!    latency at queue depth 1 and bandwidth at 32 measured by fio in that
//!    directory, [`crate::sort::fio::device_facts`]); run the campaign into
//!    `OUTDIR/PROFILE/` (its own `raw.csv`, `summary.csv`, `machine.json`
//!    with the facts, README and plots), with the I/O bound measured by fio
//!    at 1 MiB where installed ([`IoBound`]) and the profile's SIMD level;
//!    then unmount and remove what the profile made (also on an error or an
//!    interrupt). A profile that cannot be made is *skipped*, one whose
//!    campaign fails is *failed*, both with the reason; an interrupt stops
//!    the matrix.
//! 3. **Report from the CSV** ([`report`]): `raw.csv` and `summary.csv`
//!    of every profile with a first column `profile`, `profiles.json`,
//!    `plots/matrix_PROFILE.svg` (per input, each tool's median with its
//!    min – max beside the CPU bound and 2 × the I/O bound) and a README
//!    with a table per profile that says which of the issue's bars hold
//!    and which do not ([`report::bars`]).
//!
//! ```no_run
//! use emsort_bench::sort::matrix::{parse_profiles, Matrix};
//! use emsort_bench::sort::Campaign;
//! use emsort_bench::CampaignBuilder;
//! use emsort_io::NoProgress;
//! use std::sync::atomic::AtomicBool;
//! # fn main() -> Result<(), emsort_bench::Error> {
//! let campaign = Campaign::from_params_file("bench/params/profiles-quick.csv".as_ref())?
//!     .sorter_exe("target/release/emsort")
//!     .out_dir("results/matrix");
//! let o = Matrix::new(campaign, parse_profiles("all").unwrap()).run(&NoProgress, &AtomicBool::new(false))?;
//! println!("{}", o.readme.display());
//! # Ok(()) }
//! ```

pub(crate) mod mount;
pub mod report;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use emsort_io::{format_size, ErrorKind, Progress};
use serde::Serialize;

pub use super::profile::{device_sentence, parse_profiles, rate, Profile, ProfileFacts};
pub use report::{bars, bars_table, Bar, Verdict};

use super::campaign::{simd_record, Campaign};
use super::fio::{self, IoBound};
use crate::campaign::{interrupted, write_json, CampaignBuilder};
use crate::machine::{cpu_model_name, mount_info, relative};
use crate::{Error, Result};
use mount::{loop_mount_unavailable, ProfileMount};

/// One profile's outcome, as `profiles.json` records it.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileRecord {
    /// The profile's name.
    pub name: String,
    /// `measured`, `skipped: WHY` or `failed: WHY`.
    pub status: String,
    /// Its results folder (relative to the matrix's), when it ran.
    pub results: Option<String>,
    /// Runs done.
    pub runs: u64,
    /// Seconds the profile took (set-up, facts and campaign).
    pub seconds: f64,
    /// Its facts, when it could be made.
    pub facts: Option<ProfileFacts>,
}

/// What a finished matrix produced.
#[derive(Debug, Clone)]
pub struct MatrixOutcome {
    /// The output directory.
    pub out_dir: PathBuf,
    /// `raw.csv` of every profile, with its `profile` column.
    pub raw_csv: PathBuf,
    /// `summary.csv` of every profile, with its `profile` column.
    pub summary_csv: PathBuf,
    /// `profiles.json`.
    pub profiles_json: PathBuf,
    /// `README.md`.
    pub readme: PathBuf,
    /// The plots drawn.
    pub plots: Vec<PathBuf>,
    /// Each profile's outcome.
    pub profiles: Vec<ProfileRecord>,
    /// The bars, per profile.
    pub bars: Vec<Bar>,
    /// Things the user should know (skipped or failed profiles, the
    /// campaigns' warnings with their profile).
    pub warnings: Vec<String>,
    /// Runs done over all profiles.
    pub runs: u64,
    /// Wall time, seconds.
    pub seconds: f64,
}

/// A campaign run on each of a list of profiles (see the module docs).
#[derive(Debug, Clone)]
pub struct Matrix {
    campaign: Campaign,
    profiles: Vec<Profile>,
    fio: bool,
}

impl Matrix {
    /// The matrix of `campaign` (its points, peers, cache method, output
    /// directory and — when given — work directory) on `profiles`. The
    /// campaign must run emsort as a child process
    /// ([`Campaign::sorter_exe`]) for the SIMD profiles.
    pub fn new(campaign: Campaign, profiles: Vec<Profile>) -> Matrix {
        Matrix { campaign, profiles, fio: true }
    }

    /// Whether fio measures the I/O bound and the device facts where it is
    /// installed (default: yes; otherwise the O_DIRECT copy and no device
    /// facts).
    pub fn fio(mut self, yes: bool) -> Matrix {
        self.fio = yes;
        self
    }

    /// The profiles, in the order they run.
    pub fn profiles(&self) -> &[Profile] {
        &self.profiles
    }

    /// Runs the matrix (see the module docs). Setting `cancel` stops it
    /// within a run with an [`Interrupted`](ErrorKind::Interrupted) error,
    /// every mount taken down and work file removed.
    pub fn run(&self, progress: &dyn Progress, cancel: &AtomicBool) -> Result<MatrixOutcome> {
        let started = Instant::now();
        if self.profiles.is_empty() {
            return Err(Error::Campaign("the matrix has no profile".into()));
        }
        let settings = self.campaign.settings();
        let out = settings.out_dir.clone();
        let raw_csv = settings.fresh_raw_csv("plots")?;
        let (base, _base_temp) = settings.work_dir_or_temp(".emsort-matrix-")?;
        let base = std::path::absolute(&base).map_err(|e| Error::io("resolve", &base, e))?;
        let largest = self.campaign.largest_input();
        let (io_bound, fio_note) = match self.fio {
            true => IoBound::best_available(),
            false => (IoBound::Copy, Some("turned off".to_string())),
        };
        let mut records = Vec::new();
        let mut warnings = Vec::new();
        if let Some(why) = &fio_note {
            warnings.push(format!("no fio ({why}): the I/O bound is the O_DIRECT copy, no device facts"));
        }
        let mut runs = 0;
        for &profile in &self.profiles {
            if cancel.load(Ordering::Relaxed) {
                return Err(interrupted(&base));
            }
            let t = Instant::now();
            progress.message(&format!("profile {}: setting up", profile.name()));
            let res =
                self.run_profile(profile, &base, largest, &io_bound, fio_note.as_deref(), progress, cancel);
            let mut record = ProfileRecord {
                name: profile.name(),
                status: String::new(),
                results: None,
                runs: 0,
                seconds: 0.0,
                facts: None,
            };
            match res {
                Err(Error::Io(e)) if *e.kind() == ErrorKind::Interrupted => return Err(Error::Io(e)),
                Err(e) => return Err(e),
                Ok(ProfileRun::Skipped(why)) => {
                    warnings.push(format!("profile {}: skipped: {why}", profile.name()));
                    record.status = format!("skipped: {why}");
                }
                Ok(ProfileRun::Failed(facts, why)) => {
                    warnings.push(format!("profile {}: failed: {why}", profile.name()));
                    record.status = format!("failed: {why}");
                    record.facts = facts;
                    record.results = Some(profile.name());
                }
                Ok(ProfileRun::Measured(facts, o)) => {
                    warnings.extend(o.warnings.iter().map(|w| format!("profile {}: {w}", profile.name())));
                    record.status = "measured".into();
                    record.facts = Some(*facts);
                    record.results = Some(profile.name());
                    record.runs = o.runs;
                    runs += o.runs;
                }
            }
            record.seconds = t.elapsed().as_secs_f64();
            records.push(record);
            write_json(&out.join("profiles.json"), &records)?;
        }
        let reports = report::write_reports(&out, &records, &self.campaign, &io_bound)?;
        Ok(MatrixOutcome {
            out_dir: out.clone(),
            raw_csv,
            summary_csv: out.join("summary.csv"),
            profiles_json: out.join("profiles.json"),
            readme: out.join("README.md"),
            plots: reports.plots,
            profiles: records,
            bars: reports.bars,
            warnings,
            runs,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Makes one profile, records its facts, runs the campaign on it and
    /// takes it down again.
    #[allow(clippy::too_many_arguments)]
    fn run_profile(
        &self,
        profile: Profile,
        base: &Path,
        largest: u64,
        io_bound: &IoBound,
        fio_note: Option<&str>,
        progress: &dyn Progress,
        cancel: &AtomicBool,
    ) -> Result<ProfileRun> {
        let name = profile.name();
        let probe = fio::probe_bytes(largest);
        // The directory, and the mount behind it for the profiles that make one.
        let (dir, mount): (PathBuf, Option<ProfileMount>) = match profile {
            Profile::Root | Profile::Simd(_) => {
                let d = base.join(&name);
                std::fs::create_dir(&d).map_err(|e| Error::io("create directory", &d, e))?;
                (d, None)
            }
            Profile::Tmpfs => {
                // The keys experiment holds 5 × N when GNU sort runs (the
                // input, emsort's and the baseline's outputs kept for the
                // check, GNU sort's temporary files and its output): 4 × N
                // ran out of space there.
                let size = 6 * largest + probe + (64 << 20);
                // The CPU bound's copies on /dev/shm come on top of these.
                let need = size + 4 * largest + (64 << 20);
                let avail = crate::machine::meminfo("MemAvailable:").unwrap_or(0);
                if avail < need {
                    return Ok(ProfileRun::Skipped(format!(
                        "{} of memory available, a tmpfs of {} and the CPU bound's copies need {}",
                        format_size(avail),
                        format_size(size),
                        format_size(need)
                    )));
                }
                match ProfileMount::tmpfs(&base.join(&name), size) {
                    Ok(m) => (m.point().to_path_buf(), Some(m)),
                    Err(why) => return Ok(ProfileRun::Skipped(why)),
                }
            }
            Profile::Xfs | Profile::Btrfs => {
                if let Some(why) = loop_mount_unavailable(&name) {
                    return Ok(ProfileRun::Skipped(why));
                }
                // Input, runs, output and a peer's output, fio's probe,
                // and room for the file system's own metadata.
                let size = (5 * largest + probe + (512 << 20)).max(1 << 30).next_multiple_of(1 << 30);
                if let Err(e) = crate::scratch::check_space(base, size, format!("the {name} image")) {
                    return Ok(ProfileRun::Skipped(e.to_string()));
                }
                let image = base.join(format!("{name}.img"));
                progress.message(&format!("profile {name}: mkfs.{name} and loop mount"));
                match ProfileMount::image(&name, &image, &base.join(&name), size) {
                    Ok(m) => (m.point().to_path_buf(), Some(m)),
                    Err(why) => return Ok(ProfileRun::Skipped(why)),
                }
            }
        };
        let res =
            self.measure_profile(profile, &dir, mount.as_ref(), probe, io_bound, fio_note, progress, cancel);
        // Take the profile down whatever happened.
        if mount.is_none() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        let down = mount.map(ProfileMount::finish).transpose();
        match (res, down) {
            (Err(e), _) => Err(e),
            (Ok(r), Ok(_)) => Ok(r),
            (Ok(_), Err(why)) => Err(Error::Campaign(format!("profile {name}: cannot take it down: {why}"))),
        }
    }

    /// The facts and the campaign of a profile made in `dir`.
    #[allow(clippy::too_many_arguments)]
    fn measure_profile(
        &self,
        profile: Profile,
        dir: &Path,
        mount: Option<&ProfileMount>,
        probe: u64,
        io_bound: &IoBound,
        fio_note: Option<&str>,
        progress: &dyn Progress,
        cancel: &AtomicBool,
    ) -> Result<ProfileRun> {
        let name = profile.name();
        let (device, device_note) = match io_bound {
            IoBound::Fio(f) => {
                progress.message(&format!("profile {name}: fio on {}", relative(dir)));
                match fio::device_facts(f, dir, probe, cancel) {
                    Ok(d) => (Some(d), None),
                    Err(Error::Io(e)) if *e.kind() == ErrorKind::Interrupted => return Err(Error::Io(e)),
                    Err(e) => (None, Some(e.to_string())),
                }
            }
            IoBound::Copy => (None, fio_note.map(|n| format!("no fio: {n}"))),
        };
        let facts = ProfileFacts {
            name: name.clone(),
            description: profile.description(),
            work_dir: relative(dir),
            mount: mount_info(dir),
            image: mount.and_then(|m| m.description()).map(String::from),
            cpu_model: cpu_model_name(),
            simd_detected: emsort_sort::simd::detected().to_string(),
            simd: simd_record(profile.simd()),
            device,
            device_note,
            io_bound: io_bound.describe(),
        };
        let out = self.campaign.settings().out_dir.join(&name);
        let work = dir.join("work");
        let campaign = match profile {
            Profile::Simd(_) => self.campaign.clone().numbers_only(),
            _ => self.campaign.clone(),
        };
        let campaign = campaign
            .out_dir(&out)
            .work_dir(&work)
            .simd(profile.simd())
            .io_bound(io_bound.clone())
            .profile(Some(facts.clone()));
        progress.message(&format!("profile {name}: sort campaign"));
        match campaign.run(progress, cancel) {
            Ok(o) => Ok(ProfileRun::Measured(Box::new(facts), o)),
            Err(Error::Io(e)) if *e.kind() == ErrorKind::Interrupted => Err(Error::Io(e)),
            Err(e) => Ok(ProfileRun::Failed(Some(facts), e.to_string())),
        }
    }
}

/// How one profile went.
enum ProfileRun {
    Skipped(String),
    Failed(Option<ProfileFacts>, String),
    Measured(Box<ProfileFacts>, super::Outcome),
}
