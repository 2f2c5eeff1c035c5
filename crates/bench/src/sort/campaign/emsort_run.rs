//! One emsort run of a sort campaign's point, the row it makes, and the
//! check of a sorted output.
//!
//! [`EmsortRunner::run`] empties the page cache (not for the CPU bound, whose
//! files are memory), then sorts the input either as a child process, `emsort
//! sort … --stats FILE -q` (the binary the campaign was given, or the
//! baseline's: its time, `wait4` usage and `VmHWM` are the sort's alone, its
//! phases and counts come from its statistics file), or in this process with
//! [`sort_file`]; every way times an `fsync` of the output. The four ways a
//! point runs are the [`Variant`]s: file to file, standard input to standard
//! output, another binary, and the CPU bound on tmpfs. [`check_output`]
//! verifies an output against the input's fingerprint (in order, same
//! multiset).
//!
//! ```text
//!  Point ──► plan (B, passes) ──► cold cache ──► emsort sort … --stats F ──► fsync ──► RawRow
//!                                              └─ or sort_file in-process ─┘
//! ```

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use emsort_io::cache::CacheMethod;
use emsort_io::rusage::{Usage, Who};
use emsort_io::{ErrorKind, NoProgress};
use emsort_sort::simd::Level;
use emsort_sort::verify::verify;
use emsort_sort::{sort_file, Fingerprint, Format, SortError, SortPlan};

use super::point::{predicted_blocks, Point};
use crate::campaign::interrupted;
use crate::sort::cpu_bound::CPU_BOUND_CACHE;
use crate::sort::params::or_default;
use crate::sort::peers::{self, PeakRss};
use crate::sort::profile::SIMD_ENV;
use crate::sort::record::RawRow;
use crate::{Error, Result};

/// How an emsort run of a point is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Variant<'a> {
    /// `emsort sort … INPUT -o OUTPUT` (tool `emsort`).
    Files,
    /// `emsort sort … < INPUT > OUTPUT` (tool `emsort-stdio`).
    Stdio,
    /// Another binary, file to file (tool `emsort-baseline`).
    Baseline(&'a Path),
    /// The CPU bound: emsort's defaults for M, everything on tmpfs (tool
    /// `cpu-bound`, [`crate::sort::cpu_bound`]).
    CpuBound,
}

impl Variant<'_> {
    /// The run's `tool` in `raw.csv`.
    pub(super) fn tool(self) -> &'static str {
        match self {
            Variant::Files => "emsort",
            Variant::Stdio => "emsort-stdio",
            Variant::Baseline(_) => "emsort-baseline",
            Variant::CpuBound => "cpu-bound",
        }
    }
}

/// How the campaign runs emsort: the binary (none: in this process), the
/// cache method and the SIMD level forced on the child.
#[derive(Debug, Clone, Copy)]
pub(super) struct EmsortRunner<'a> {
    /// The `emsort` binary run as a child process; `None`: [`sort_file`] in
    /// this process.
    pub exe: Option<&'a Path>,
    /// How the page cache is emptied before a run.
    pub cache: CacheMethod,
    /// The SIMD level forced on the child (`EMSORT_SIMD`), if any.
    pub simd: Option<Level>,
}

impl EmsortRunner<'_> {
    /// One emsort run: cold cache, `emsort sort` as a child process (or
    /// `sort_file` in this process without [`sorter_exe`](super::Campaign::sorter_exe)),
    /// timed with an `fsync` of the output; the row.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run(
        &self,
        p: &Point,
        rep: u32,
        input: &Path,
        out: &Path,
        tmp: &Path,
        items: u64,
        work: &Path,
        cancel: &AtomicBool,
        v: Variant<'_>,
    ) -> Result<RawRow> {
        let plan = p.plan_with(tmp, self.exe.is_none())?;
        let b = plan.block_size() as u64;
        let mut row = RawRow::new(v.tool(), &p.format.to_string(), p.bytes, items, p.threads, rep);
        row.memory = Some(p.memory);
        // What the plan chose where the point leaves it to emsort (a child's
        // statistics say what it really chose).
        row.fan_in = Some(plan.fan_in());
        row.block_size = Some(b);
        row.policy = plan.policy().name().into();
        row.io = or_default(p.io.map(|k| k.name()));
        if p.io.is_none() {
            row.note = format!("streams {}; simd {}", plan.input_kind(), emsort_sort::simd::level());
        }
        row.cache = self.cache.name().into();
        let predicted = plan.derived().passes;
        row.predicted_passes = predicted;
        row.predicted_blocks = predicted.map(|pp| predicted_blocks(p.bytes, pp, b));
        if v == Variant::CpuBound {
            // tmpfs pages are the files: nothing to empty (and emptying the
            // whole page cache would make the binary's own pages cold).
            row.cache = CPU_BOUND_CACHE.into();
        } else {
            self.cache.apply(&[input])?;
        }
        let (read, written) = match self.exe {
            Some(exe) => {
                let exe = match v {
                    Variant::Baseline(b) => b,
                    _ => exe,
                };
                let stdio = v == Variant::Stdio;
                self.child(exe, p, &plan, rep, input, out, work, cancel, stdio, &mut row)?
            }
            None => {
                let before = PeakRss::start();
                let usage0 = Usage::now(Who::Process).ok();
                let t0 = Instant::now();
                let stats = sort_file(&plan, input, out, &NoProgress, cancel).map_err(|e| match e {
                    SortError::Io(io) if *io.kind() == ErrorKind::Interrupted => Error::Io(io),
                    SortError::Io(io) => Error::Run { point: p.label(), rep, source: io },
                    other => Error::Campaign(format!("{}: {other}", p.label())),
                })?;
                peers::sync_file(out)?;
                row.seconds = t0.elapsed().as_secs_f64();
                if let (Some(a), Ok(b)) = (usage0, Usage::now(Who::Process)) {
                    let d = b.since(&a);
                    (row.user_s, row.system_s) = (Some(d.user_seconds), Some(d.system_seconds));
                }
                row.run_formation_s = Some(stats.run_formation.seconds);
                row.merge_s = Some(stats.merge.seconds);
                row.runs = Some(stats.runs);
                row.passes = Some(stats.passes);
                row.merge_order = Some(stats.merge_order);
                row.rss_before_bytes = before;
                row.peak_rss_bytes = match before {
                    Some(_) => PeakRss::read(),
                    None => Some(stats.rusage.peak_rss_bytes),
                };
                peers::put_usage(&mut row, &stats.rusage);
                row.cpu_migrations = stats.cpu_migrations;
                (
                    stats.run_formation.bytes_read + stats.merge.bytes_read,
                    stats.run_formation.bytes_written + stats.merge.bytes_written,
                )
            }
        };
        row.bytes_read = Some(read);
        row.bytes_written = Some(written);
        row.blocks_moved = Some((read + written).div_ceil(b.max(1)));
        Ok(row)
    }

    /// `EXE sort --format F -S Mb --fan-in D --policy P --io IO --block-size B --parallel
    /// T -T TMP --stats FILE -q INPUT -o OUT` as a child process (with
    /// `stdio`: `… -q < INPUT > OUT`, the output a new file): its time
    /// (with an `fsync` of the output), usage (`wait4`, its `VmHWM`) and the
    /// phases, counts and migrations of its statistics file go into `row`;
    /// returns the bytes read and written.
    #[allow(clippy::too_many_arguments)]
    fn child(
        &self,
        exe: &Path,
        p: &Point,
        plan: &SortPlan,
        rep: u32,
        input: &Path,
        out: &Path,
        work: &Path,
        cancel: &AtomicBool,
        stdio: bool,
        row: &mut RawRow,
    ) -> Result<(u64, u64)> {
        let stats_path = work.join("emsort-stats.json");
        let _ = std::fs::remove_file(&stats_path);
        let tmp = plan.temp_dirs().first().cloned().unwrap_or_else(|| work.join("tmp"));
        let mut cmd = std::process::Command::new(exe);
        cmd.arg("sort")
            .arg("--format")
            .arg(p.format.to_string())
            .arg("-S")
            .arg(crate::sort_size_arg(p.memory));
        // Only the flags the point sets: without them emsort chooses.
        if let Some(d) = p.fan_in {
            cmd.arg("--fan-in").arg(d.to_string()).arg("--block-size").arg(plan.block_size().to_string());
        }
        if let Some(policy) = p.policy {
            cmd.arg("--policy").arg(policy.name());
        }
        if let Some(io) = p.io {
            cmd.arg("--io").arg(io.name());
        }
        if let Some(level) = self.simd {
            cmd.env(SIMD_ENV, level.name());
        }
        cmd.arg("--parallel")
            .arg(p.threads.to_string())
            .arg("-T")
            .arg(&tmp)
            .arg("--stats")
            .arg(&stats_path)
            .arg("-q");
        let files = if stdio {
            let i = std::fs::File::open(input).map_err(|e| Error::io("open", input, e))?;
            let o = std::fs::File::create(out).map_err(|e| Error::io("create", out, e))?;
            Some((i, o))
        } else {
            cmd.arg(input).arg("-o").arg(out);
            None
        };
        let what = format!("emsort sort ({})", p.label());
        let c = peers::run_child_with(cmd, &what, cancel, work, files)?;
        match c.status.code() {
            Some(0) => {}
            Some(130) | Some(143) => {
                return Err(interrupted(work));
            }
            Some(2) => {
                return Err(Error::Run {
                    point: p.label(),
                    rep,
                    source: emsort_io::Error::from_io(
                        "emsort sort",
                        out,
                        std::io::Error::other(peers::tail(&c.stderr)),
                    ),
                });
            }
            _ => {
                return Err(Error::Campaign(format!(
                    "{} (rep {rep}): `{} sort` failed ({}): {}",
                    p.label(),
                    exe.display(),
                    c.status,
                    peers::tail(&c.stderr)
                )));
            }
        }
        let t = Instant::now();
        peers::sync_file(out)?;
        row.seconds = c.seconds + t.elapsed().as_secs_f64();
        let text = std::fs::read_to_string(&stats_path).map_err(|e| Error::io("read", &stats_path, e))?;
        let _ = std::fs::remove_file(&stats_path);
        let bad = |what: &str| {
            Error::Campaign(format!(
                "{}: the statistics file {} lacks {what}",
                p.label(),
                stats_path.display()
            ))
        };
        let v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| Error::Campaign(format!("{}: {}: {e}", p.label(), stats_path.display())))?;
        let u = |ptr: &str| v.pointer(ptr).and_then(|x| x.as_u64()).ok_or_else(|| bad(ptr));
        let f = |ptr: &str| v.pointer(ptr).and_then(|x| x.as_f64()).ok_or_else(|| bad(ptr));
        row.run_formation_s = Some(f("/run_formation/seconds")?);
        row.merge_s = Some(f("/merge/seconds")?);
        row.runs = Some(u("/runs")?);
        row.passes = Some(f("/passes")?);
        row.merge_order = Some(u("/merge_order")? as usize);
        // What emsort chose: d, policy, streams (the same both ways), SIMD
        // (where its statistics say: an earlier binary's may not).
        if let Some(d) = v.pointer("/plan/fan_in").and_then(|x| x.as_u64()) {
            row.fan_in = Some(d as usize);
        }
        let text_at = |ptr: &str| v.pointer(ptr).and_then(|x| x.as_str());
        if let Some(policy) = text_at("/plan/policy") {
            row.policy = policy.to_string();
        }
        row.note = [("streams", "/plan/input_kind"), ("simd", "/plan/simd")]
            .into_iter()
            .filter_map(|(name, ptr)| Some(format!("{name} {}", text_at(ptr)?)))
            .collect::<Vec<_>>()
            .join("; ");
        let block = u("/plan/block_size")?;
        if Some(block) != row.block_size {
            row.block_size = Some(block);
            row.predicted_blocks = row.predicted_passes.map(|pp| predicted_blocks(p.bytes, pp, block));
        }
        peers::put_child(row, &c);
        // The sort's own perf counter sees only its threads (not the harness's).
        if let Some(m) = v.get("cpu_migrations").and_then(|x| x.as_u64()) {
            row.cpu_migrations = Some(m);
        }
        Ok((
            u("/run_formation/bytes_read")? + u("/merge/bytes_read")?,
            u("/run_formation/bytes_written")? + u("/merge/bytes_written")?,
        ))
    }
}

/// Verifies a sorted output against the input's fingerprint.
pub(super) fn check_output(
    out: &Path,
    format: Format,
    fp: &Fingerprint,
    cancel: &AtomicBool,
    who: &str,
) -> Result<()> {
    let r = verify(out, format, false, None, cancel)?;
    if let Some(d) = r.disorder {
        return Err(Error::Campaign(format!(
            "{who}: the output is not sorted (item {} at byte {})",
            d.index, d.offset
        )));
    }
    if r.fingerprint != *fp {
        return Err(Error::Campaign(format!(
            "{who}: the output does not hold the input's items ({} items, input {})",
            r.fingerprint.count, fp.count
        )));
    }
    Ok(())
}
