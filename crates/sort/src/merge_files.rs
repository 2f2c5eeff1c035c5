//! Merging files that are already sorted: [`merge_files`].
//!
//! The merge phase of [`sort_file`](crate::sort_file) without its run
//! formation: the given files are the runs. A distributed sort (the Python
//! package's Ray sort) sorts pieces on many machines and merges them here.
//!
//! 1. Each input must be a regular file of whole items, sorted in the
//!    plan's order (ascending, or descending with `reverse`); this is not
//!    checked (use [`verify::verify`](crate::verify::verify)), an unsorted
//!    input gives an unsorted output.
//! 2. The merges follow [`merge_policy::schedule`](crate::merge_policy::schedule)
//!    on the inputs' sizes with the plan's fan-in d: one d-way merge when
//!    there are at most d inputs, otherwise intermediate merges into a
//!    temporary directory under the plan's temp dirs (removed as soon as they
//!    are merged, and on error or interrupt), then the last merge.
//! 3. The output is written beside its target and renamed when complete
//!    ([`AtomicFile`]), so it may name one of the inputs. The inputs are
//!    never modified or removed.
//!
//! ```no_run
//! use std::path::PathBuf;
//! use std::sync::atomic::AtomicBool;
//! use emsort_sort::{merge_files, Format, SortPlan};
//! # fn main() -> Result<(), emsort_sort::SortError> {
//! let plan = SortPlan::builder(Format::U64).memory(64 << 20).build()?;
//! let parts: Vec<PathBuf> = (0..100).map(|i| format!("part-{i}.u64").into()).collect();
//! let stats = merge_files(&plan, &parts, "all.u64".as_ref(), &emsort_io::NoProgress, &AtomicBool::new(false))?;
//! println!("{} merges in {} level(s)", stats.merges, stats.merge_levels);
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use emsort_io::{AtomicFile, Error, Progress};

use crate::merge::merge_runs;
use crate::merge_policy::schedule;
use crate::pdisk::Method;
use crate::sorter::{check_input, finish_pool, sort_pool, temp_dir_in};
use crate::stats::{MigrationCounter, PhaseStats, PlanRecord, Rusage, SortStats};
use crate::{SortError, SortPlan};

/// Merges the sorted files `inputs` into `output` with `plan`'s format,
/// order, memory, fan-in, streams and temp dirs (see the module docs).
///
/// The statistics are those of [`sort_file`](crate::sort_file) with
/// `runs` = the number of inputs, an empty run formation phase and
/// `passes` = the merges' bytes read over the input's size (1 for a single
/// merge, more when intermediate merges were needed). Progress goes to one
/// `"merge"` phase in bytes; setting `cancel` stops the merge with
/// [`ErrorKind::Interrupted`](emsort_io::ErrorKind::Interrupted), leaving
/// no output and no temporary file. Only the plain method is supported.
pub fn merge_files(
    plan: &SortPlan,
    inputs: &[PathBuf],
    output: &Path,
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<SortStats, SortError> {
    if plan.method != Method::Plain {
        return Err(SortError::BadPlan(format!(
            "merging sorted files supports the plain method only, not {}",
            plan.method
        )));
    }
    let start = Instant::now();
    let usage0 = Rusage::now();
    let migrations = MigrationCounter::start();
    let sizes = inputs.iter().map(|p| check_input(plan, p)).collect::<Result<Vec<u64>, _>>()?;
    let input_bytes: u64 = sizes.iter().sum();
    let plan = plan.with_input_bytes(input_bytes);
    plan.validate()?;
    let derived = plan.derived();
    let (pool, pool_name) = sort_pool(&plan)?;
    let out = AtomicFile::create(output)?;
    let sched = schedule(&sizes, plan.fan_in, plan.policy);
    // Intermediate runs only when some merge does not write the output.
    let temps = if sched.merges.len() > 1 {
        plan.temp_dirs.iter().map(|dir| temp_dir_in(dir, "emsort-merge-")).collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    let run_path = |id: usize| temps[id % temps.len()].path().join(format!("run-{id:06}"));

    let t = Instant::now();
    let mut merge = PhaseStats::default();
    let mut output_bytes = 0;
    if sched.merges.is_empty() {
        // No input (an empty output) or one (a one-way merge: a copy).
        if !inputs.is_empty() {
            progress.phase_bytes("merge", Some(input_bytes));
            let moved = merge_runs(&plan, &pool, inputs, out.path(), progress, cancel)?;
            (merge.bytes_read, merge.bytes_written) = (moved.read, moved.written);
            output_bytes = moved.written;
            progress.finish_phase();
        } else {
            std::fs::File::create(out.path()).map_err(|e| Error::from_io("create", out.path(), e))?;
        }
    } else {
        progress.phase_bytes("merge", Some(sched.merged));
        // Run ids below `inputs.len()` are the caller's files, never removed.
        let mut table: Vec<PathBuf> = inputs.to_vec();
        for (k, m) in sched.merges.iter().enumerate() {
            let paths: Vec<PathBuf> = m.inputs.iter().map(|&i| table[i].clone()).collect();
            let last = k + 1 == sched.merges.len();
            let dest = if last { out.path().to_path_buf() } else { run_path(m.output) };
            let moved = merge_runs(&plan, &pool, &paths, &dest, progress, cancel)?;
            merge.bytes_read += moved.read;
            merge.bytes_written += moved.written;
            if last {
                output_bytes = moved.written;
            }
            for (&i, p) in m.inputs.iter().zip(&paths) {
                if i >= inputs.len() {
                    std::fs::remove_file(p).map_err(|e| Error::from_io("remove", p, e))?;
                }
            }
            table.push(dest);
        }
        progress.finish_phase();
    }
    merge.seconds = t.elapsed().as_secs_f64();
    out.commit()?;
    drop(temps);
    let total_seconds = start.elapsed().as_secs_f64();
    let cpu_migrations = finish_pool(pool, &pool_name, migrations);
    Ok(SortStats {
        plan: PlanRecord::new(&plan, &derived),
        input_bytes,
        output_bytes,
        runs: inputs.len() as u64,
        passes: if input_bytes == 0 { 0.0 } else { merge.bytes_read as f64 / input_bytes as f64 },
        merge_levels: sched.levels,
        merges: sched.merges.len(),
        merge_order: sched.merges.iter().map(|m| m.inputs.len()).max().unwrap_or(inputs.len().min(1)),
        run_formation: PhaseStats::default(),
        merge,
        total_seconds,
        rusage: Rusage::now().since(&usage0),
        cpu_migrations,
        parallel_disks: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Format;
    use emsort_io::{NoProgress, StreamKind};

    /// Writes `parts` (each sorted by the oracle first) as files, merges
    /// them with fan-in `d` and checks the output against the sorted
    /// concatenation, the inputs untouched and no temporary file left.
    fn merge_parts(format: Format, reverse: bool, d: usize, parts: &[Vec<Vec<u8>>]) -> SortStats {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let order = |a: &Vec<u8>, b: &Vec<u8>| {
            let strip = |x: &Vec<u8>| x.strip_suffix(b"\n").map(<[u8]>::to_vec).unwrap_or(x.clone());
            let (a, b) = (strip(a), strip(b));
            if reverse {
                format.compare(&b, &a)
            } else {
                format.compare(&a, &b)
            }
        };
        let mut paths = Vec::new();
        let mut all = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            let mut items = p.clone();
            items.sort_by(order);
            all.extend(items.iter().cloned());
            let path = dir.path().join(format!("part-{i}"));
            std::fs::write(&path, items.concat()).unwrap();
            paths.push(path);
        }
        let before: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
        let plan = SortPlan::builder(format)
            .memory(256 << 10)
            .block_size(4096)
            .fan_in(d)
            .io(StreamKind::Buffered)
            .reverse(reverse)
            .temp_dir(&tmp)
            .build()
            .unwrap();
        let out = dir.path().join("out");
        let stats = merge_files(&plan, &paths, &out, &NoProgress, &AtomicBool::new(false)).unwrap();
        all.sort_by(order);
        let got = std::fs::read(&out).unwrap();
        if format == Format::Lines {
            let mut g: Vec<&[u8]> = got.split(|&b| b == b'\n').collect();
            g.pop();
            let want: Vec<&[u8]> = all.iter().map(|l| l.strip_suffix(b"\n").unwrap()).collect();
            assert_eq!(g, want);
        } else {
            // Equal keys may come in any order: compare keys, then multisets.
            let size = format.item_size().unwrap();
            let items: Vec<&[u8]> = got.chunks_exact(size).collect();
            assert_eq!(items.len(), all.len());
            for (g, w) in items.iter().zip(&all) {
                assert_eq!(format.compare(g, w), std::cmp::Ordering::Equal);
            }
            let (mut a, mut b) = (items.iter().map(|x| x.to_vec()).collect::<Vec<_>>(), all.clone());
            a.sort();
            b.sort();
            assert_eq!(a, b);
        }
        for (p, b) in paths.iter().zip(&before) {
            assert_eq!(&std::fs::read(p).unwrap(), b, "input modified");
        }
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "temp files left behind");
        assert_eq!(stats.runs, parts.len() as u64);
        assert!(stats.merge_order <= d);
        stats
    }

    fn numbers(n: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ((x % 5000) as u32).to_ne_bytes().to_vec()
            })
            .collect()
    }

    #[test]
    fn merges_in_one_pass_or_several() {
        let parts: Vec<Vec<Vec<u8>>> = (0..7).map(|i| numbers(3000 + 100 * i, i as u64 + 1)).collect();
        let one = merge_parts(Format::U32, false, 8, &parts);
        assert_eq!((one.merges, one.merge_levels, one.passes), (1, 1, 1.0));
        let many = merge_parts(Format::U32, false, 2, &parts);
        assert!(many.merges == 6 && many.merge_levels >= 3 && many.passes > 1.0, "{many:?}");
        merge_parts(Format::U32, true, 3, &parts);
    }

    #[test]
    fn merges_records_lines_and_edge_cases() {
        let rec: Format = "rec:12:2:3".parse().unwrap();
        let parts: Vec<Vec<Vec<u8>>> = (0..5)
            .map(|i| {
                numbers(700, i + 9).iter().map(|n| [n.as_slice(), n.as_slice(), &n[..4]].concat()).collect()
            })
            .collect();
        merge_parts(rec, false, 2, &parts);
        let lines: Vec<Vec<Vec<u8>>> = (0..4)
            .map(|i| numbers(500, i + 20).iter().map(|n| format!("{}\n", n[0] % 50).into_bytes()).collect())
            .collect();
        merge_parts(Format::Lines, false, 3, &lines);
        merge_parts(Format::Lines, true, 2, &lines);
        // One input is copied; no input gives an empty output.
        assert_eq!(merge_parts(Format::U32, false, 2, &[numbers(10, 3)]).output_bytes, 40);
        assert_eq!(merge_parts(Format::U32, false, 2, &[]).output_bytes, 0);
        assert_eq!(merge_parts(Format::U32, false, 2, &[vec![], numbers(5, 1), vec![]]).output_bytes, 20);
    }

    #[test]
    fn refuses_a_bad_input_and_leaves_no_output() {
        let dir = tempfile::tempdir().unwrap();
        let (good, bad, out) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("out"));
        std::fs::write(&good, [0u8; 8]).unwrap();
        std::fs::write(&bad, [0u8; 7]).unwrap();
        let plan = SortPlan::builder(Format::U32).memory(1 << 20).temp_dir(dir.path()).build().unwrap();
        let no = AtomicBool::new(false);
        let e = merge_files(&plan, &[good.clone(), bad], &out, &NoProgress, &no).unwrap_err();
        assert!(e.to_string().contains("not a multiple"), "{e}");
        let e = merge_files(&plan, &[good, dir.path().join("missing")], &out, &NoProgress, &no).unwrap_err();
        assert!(e.to_string().contains("missing"), "{e}");
        assert!(!out.exists());
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }
}
