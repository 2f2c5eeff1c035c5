//! The external multiway merge sort of one file: [`sort_file`].
//!
//! This is the plain method ([`Method::Plain`]); a plan with
//! [`Method::Dsm`] or [`Method::Srm`] is sorted on D parallel disks by
//! [`crate::pdisk`] (same run formation, other merges).
//!
//! # Phases
//!
//! 1. **Check and plan.** The input must be a regular file whose size is a
//!    whole number of items (fixed-size formats). The plan gets the input's
//!    size, is validated (M ≥ (d + 1) buffers …) and derives U and the
//!    schedule. A temporary directory `emsort-XXXXXX` is made under each of
//!    the plan's temp dirs, and the output is opened beside its target
//!    ([`AtomicFile`]).
//! 2. **Run formation** ([`crate::run_formation`]): chunks of about M/2
//!    are read, sorted on all cores, written as runs round-robin across the
//!    temp directories. A single run is written straight to the output.
//! 3. **Merge** ([`crate::merge`]) following
//!    [`merge_policy::schedule`](crate::merge_policy::schedule) on the real
//!    run sizes: each merge reads up to d runs and writes a new one, whose
//!    inputs are deleted at once (temp space stays about one copy of the
//!    data); the last merge writes the output.
//! 4. **Commit**: the output is renamed over its target, so it appears only
//!    when complete and may name the input itself. The temporary
//!    directories go away on success, on error and on interrupt (drops).
//!
//! ```text
//!  input ──► run formation ──► run 0, run 1, … run U−1      (temp dirs)
//!                                  │    │          │
//!                                  └─┬──┘   …      │        d-way merges,
//!                                  run U    …      │        per the schedule
//!                                    └──────┬──────┘
//!                                   last merge ──► .out.emsort-….tmp ──rename──► output
//! ```
//!
//! ```no_run
//! use std::sync::atomic::AtomicBool;
//! use emsort_sort::{sort_file, Format, SortPlan};
//! # fn main() -> Result<(), emsort_sort::SortError> {
//! let plan = SortPlan::builder(Format::U32).memory(256 << 20).build()?;
//! let stats = sort_file(&plan, "in.u32".as_ref(), "out.u32".as_ref(), &emsort_io::NoProgress, &AtomicBool::new(false))?;
//! println!("{} runs, {:.2} passes, {:.1} s", stats.runs, stats.passes, stats.total_seconds);
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use emsort_io::{AtomicFile, Error, ErrorKind, Progress};

use crate::merge::merge_runs;
use crate::merge_policy::schedule;
use crate::pdisk::Method;
use crate::plan::SortPlan;
use crate::run_formation::{Run, RunFormation};
use crate::stats::{MigrationCounter, PhaseStats, PlanRecord, Rusage, SortStats};
use crate::SortError;

/// Sorts `input` into `output` (which may be the same file) with `plan`.
///
/// Progress goes to `progress` in two phases, `"run formation"` and
/// `"merge"`, in bytes. Setting `cancel` stops the sort between blocks
/// with [`ErrorKind::Interrupted`]; every temporary file is removed and the
/// output is left untouched.
pub fn sort_file(
    plan: &SortPlan,
    input: &Path,
    output: &Path,
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<SortStats, SortError> {
    if plan.method != Method::Plain {
        return crate::pdisk::sort_file(plan, input, output, progress, cancel);
    }
    let start = Instant::now();
    let usage0 = Rusage::now();
    // Opened before the sort's threads start, so they inherit it.
    let migrations = MigrationCounter::start();
    let input_bytes = check_input(plan, input)?;
    let plan = plan.with_input_bytes(input_bytes);
    plan.validate()?;
    let derived = plan.derived();
    let (pool, pool_name) = sort_pool(&plan)?;
    let temps =
        plan.temp_dirs.iter().map(|dir| temp_dir_in(dir, "emsort-")).collect::<Result<Vec<_>, _>>()?;
    let run_path = |id: usize| temps[id % temps.len()].path().join(format!("run-{id:06}"));
    let out = AtomicFile::create(output)?;

    // Run formation.
    let t = Instant::now();
    progress.phase_bytes("run formation", Some(input_bytes));
    let formation =
        RunFormation { plan: &plan, derived: &derived, pool: &pool, progress, cancel, striped: None };
    let formed =
        formation.form(input, |i, single| if single { out.path().to_path_buf() } else { run_path(i) })?;
    progress.finish_phase();
    let run_formation = PhaseStats {
        seconds: t.elapsed().as_secs_f64(),
        bytes_read: formed.bytes_read,
        bytes_written: formed.bytes_written,
    };
    let runs = formed.runs.len() as u64;
    let output_bytes = formed.runs.iter().map(|r| r.bytes).sum();

    // Merges, on the real run sizes.
    let t = Instant::now();
    let sizes: Vec<u64> = formed.runs.iter().map(|r| r.bytes).collect();
    let sched = schedule(&sizes, plan.fan_in, plan.policy);
    let mut merge = PhaseStats::default();
    if !formed.wrote_output {
        let mut table: Vec<Option<Run>> = formed.runs.into_iter().map(Some).collect();
        if sched.merges.is_empty() {
            // No run (empty input), or a single one that was not written to
            // the output: an empty output, or a one-way "merge" (a copy).
            let inputs: Vec<PathBuf> = table.iter().flatten().map(|r| r.path.clone()).collect();
            if !inputs.is_empty() {
                progress.phase_bytes("merge", Some(output_bytes));
                let moved = merge_runs(&plan, &pool, &inputs, out.path(), progress, cancel)?;
                (merge.bytes_read, merge.bytes_written) = (moved.read, moved.written);
            }
        } else {
            progress.phase_bytes("merge", Some(sched.merged));
        }
        for (k, m) in sched.merges.iter().enumerate() {
            let inputs: Vec<Run> =
                m.inputs.iter().map(|&i| table[i].take().expect("each run merged once")).collect();
            let paths: Vec<PathBuf> = inputs.iter().map(|r| r.path.clone()).collect();
            let last = k + 1 == sched.merges.len();
            let dest = if last { out.path().to_path_buf() } else { run_path(m.output) };
            let moved = merge_runs(&plan, &pool, &paths, &dest, progress, cancel)?;
            merge.bytes_read += moved.read;
            merge.bytes_written += moved.written;
            for p in &paths {
                std::fs::remove_file(p).map_err(|e| Error::from_io("remove", p, e))?;
            }
            table.push(Some(Run { path: dest, bytes: m.size }));
        }
        progress.finish_phase();
    }
    merge.seconds = t.elapsed().as_secs_f64();
    out.commit()?;
    drop(temps);
    let d = &derived;
    let total_seconds = start.elapsed().as_secs_f64();
    let cpu_migrations = finish_pool(pool, &pool_name, migrations);
    Ok(SortStats {
        plan: PlanRecord::new(&plan, d),
        input_bytes,
        output_bytes,
        runs,
        passes: sched.passes(input_bytes),
        merge_levels: sched.levels,
        merges: sched.merges.len(),
        merge_order: sched.merges.iter().map(|m| m.inputs.len()).max().unwrap_or(0),
        run_formation,
        merge,
        total_seconds,
        rusage: Rusage::now().since(&usage0),
        cpu_migrations,
        parallel_disks: None,
    })
}

/// The sort's own rayon pool, and the name of its threads (unique to this
/// sort, to see when the pool's threads are gone).
pub(crate) fn sort_pool(plan: &SortPlan) -> Result<(rayon::ThreadPool, String), SortError> {
    static SORTS: AtomicU64 = AtomicU64::new(0);
    let pool_name = format!("emsort{}", SORTS.fetch_add(1, Ordering::Relaxed) % 100_000);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(plan.threads)
        .thread_name({
            let name = pool_name.clone();
            move |i| format!("{name}-{i}")
        })
        .build()
        .map_err(|e| SortError::BadPlan(format!("cannot start {} sort threads: {e}", plan.threads)))?;
    Ok((pool, pool_name))
}

/// Makes a temporary directory `{prefix}PID-N` in `root`, locked while
/// this process lives, after removing what killed emsort processes left
/// there ([`emsort_io::temp`]); with the I/O layer's error kinds (a missing
/// `root` is [`ErrorKind::NotFound`], a full disk [`ErrorKind::DiskFull`] …).
pub(crate) fn temp_dir_in(root: &Path, prefix: &str) -> Result<emsort_io::TempDir, Error> {
    emsort_io::TempDir::new_in(root, prefix)
}

/// Shuts down a pool made by [`sort_pool`] and returns the CPU migrations
/// counted since `migrations` started: a thread's perf counts reach the
/// inherited counter only when it exits, so this waits for the pool's
/// threads first.
pub(crate) fn finish_pool(
    pool: rayon::ThreadPool,
    pool_name: &str,
    migrations: Option<MigrationCounter>,
) -> Option<u64> {
    drop(pool);
    migrations.and_then(|m| {
        wait_for_exit(pool_name);
        m.read()
    })
}

/// Waits (up to a second) until no thread of this process is named
/// `{name}-…`: a dropped rayon pool's threads exit on their own time.
fn wait_for_exit(name: &str) {
    let prefix = format!("{name}-");
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(1) {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return };
        let alive = tasks
            .flatten()
            .any(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with(&prefix)));
        if !alive {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The input's size, after checking it is a regular file of whole items.
pub(crate) fn check_input(plan: &SortPlan, input: &Path) -> Result<u64, SortError> {
    let md = std::fs::metadata(input).map_err(|e| Error::from_io("stat", input, e))?;
    if md.is_dir() {
        return Err(Error::new(ErrorKind::IsADirectory, input).into());
    }
    if !md.is_file() {
        return Err(SortError::NotAFile(input.to_path_buf()));
    }
    let size = md.len();
    if let Some(s) = plan.format.item_size() {
        if size % s as u64 != 0 {
            return Err(Error::new(ErrorKind::BadSize { size, element_size: s }, input).into());
        }
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge_policy::MergePolicy;
    use crate::Format;
    use emsort_io::{NoProgress, StreamKind};
    use proptest::prelude::*;

    /// Sorts `data` with a plan from `b`, checks the temp dir is left empty
    /// and the stats agree with the plan; returns the output.
    fn sort_bytes(b: crate::SortPlanBuilder, data: &[u8]) -> (Vec<u8>, SortStats) {
        let d = tempfile::tempdir().unwrap();
        let tmp = d.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let (input, output) = (d.path().join("in"), d.path().join("out"));
        std::fs::write(&input, data).unwrap();
        let plan = b.temp_dir(&tmp).build().unwrap();
        let stats = sort_file(&plan, &input, &output, &NoProgress, &AtomicBool::new(false)).unwrap();
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "temp files left behind");
        assert_eq!(std::fs::read(&input).unwrap(), data, "input modified");
        let derived = plan.with_input_bytes(data.len() as u64).derived();
        if plan.format != Format::Lines {
            assert_eq!(Some(stats.runs), derived.expected_runs);
            assert_eq!(Some(stats.passes), derived.passes);
        }
        assert!(stats.merge_order <= plan.fan_in);
        (std::fs::read(&output).unwrap(), stats)
    }

    /// Items of `bytes` in `format` (lines without their '\n').
    fn items(format: Format, bytes: &[u8]) -> Vec<Vec<u8>> {
        match format.item_size() {
            Some(s) => bytes.chunks_exact(s).map(|c| c.to_vec()).collect(),
            None => {
                let mut v: Vec<Vec<u8>> = bytes.split(|&b| b == b'\n').map(|l| l.to_vec()).collect();
                if bytes.last() == Some(&b'\n') || bytes.is_empty() {
                    v.pop();
                }
                v
            }
        }
    }

    /// The output is in order (the oracle `slice::sort_by` up to the order
    /// of equal keys) and holds the input's multiset.
    fn check(format: Format, reverse: bool, input: &[u8], output: &[u8]) -> Result<(), TestCaseError> {
        let mut expect = items(format, input);
        expect.sort_by(|a, b| if reverse { format.compare(b, a) } else { format.compare(a, b) });
        let got = items(format, output);
        prop_assert_eq!(got.len(), expect.len());
        for (i, (g, e)) in got.iter().zip(&expect).enumerate() {
            prop_assert_eq!(format.compare(g, e), std::cmp::Ordering::Equal, "item {} differs in key", i);
        }
        let (mut a, mut b) = (got.clone(), expect);
        a.sort();
        b.sort();
        prop_assert!(a == b, "not the same multiset");
        if format == Format::Lines {
            // Lines: byte-identical to the oracle, final newline added.
            let mut oracle = items(format, input);
            oracle.sort();
            if reverse {
                oracle.reverse();
            }
            let joined: Vec<u8> = oracle.iter().flat_map(|l| l.iter().copied().chain([b'\n'])).collect();
            prop_assert_eq!(output, &joined[..]);
        }
        Ok(())
    }

    fn tiny(format: Format, d: usize, policy: MergePolicy, reverse: bool) -> crate::SortPlanBuilder {
        SortPlan::builder(format)
            .memory(512)
            .block_size(64)
            .fan_in(d)
            .policy(policy)
            .reverse(reverse)
            .threads(2)
    }

    fn policy() -> impl Strategy<Value = MergePolicy> {
        prop_oneof![Just(MergePolicy::Fifo), Just(MergePolicy::Optimal)]
    }

    const SPECIAL32: [u32; 6] = [0x7fc0_0000, 0xffc0_0001, 0x8000_0000, 0, 0x7f80_0000, 0xff80_0000];
    const SPECIAL64: [u64; 6] = [
        0x7ff8_0000_0000_0000,
        0xfff8_0000_0000_0001,
        1 << 63,
        0,
        0x7ff0_0000_0000_0000,
        0xfff0_0000_0000_0000,
    ];

    fn words32() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(
            prop_oneof![any::<u32>(), 0u32..8, prop::sample::select(&SPECIAL32[..])],
            0..400,
        )
        .prop_map(|v| v.iter().flat_map(|x| x.to_ne_bytes()).collect())
    }

    fn words64() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(
            prop_oneof![any::<u64>(), 0u64..8, prop::sample::select(&SPECIAL64[..])],
            0..300,
        )
        .prop_map(|v| v.iter().flat_map(|x| x.to_ne_bytes()).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        #[test]
        fn numbers_32(data in words32(), f in prop::sample::select(vec![Format::U32, Format::I32, Format::F32]),
                      d in 2usize..4, p in policy(), rev: bool) {
            let (out, _) = sort_bytes(tiny(f, d, p, rev), &data);
            check(f, rev, &data, &out)?;
        }

        #[test]
        fn numbers_64(data in words64(), f in prop::sample::select(vec![Format::U64, Format::I64, Format::F64]),
                      d in 2usize..4, p in policy(), rev: bool) {
            let (out, _) = sort_bytes(tiny(f, d, p, rev), &data);
            check(f, rev, &data, &out)?;
        }

        #[test]
        fn records_with_duplicate_keys(recs in prop::collection::vec(
                (prop::collection::vec(0u8..3, 3), prop::collection::vec(any::<u8>(), 9)), 0..120),
                d in 2usize..4, p in policy(), rev: bool, size8: bool) {
            // rec:12:2:3 (unit 4) or rec:16:2:3 (unit 8); the key drawn from a
            // small alphabet so keys repeat with different payloads.
            let (size, f) = if size8 { (16, "rec:16:2:3") } else { (12, "rec:12:2:3") };
            let f: Format = f.parse().unwrap();
            let data: Vec<u8> = recs.iter().flat_map(|(k, rest)| {
                let mut r = vec![0u8; size];
                r[2..5].copy_from_slice(k);
                r[..2].copy_from_slice(&rest[..2]);
                r[5..12].copy_from_slice(&rest[2..]);
                r
            }).collect();
            let (out, _) = sort_bytes(SortPlan::builder(f).memory(1024).block_size(64).fan_in(d).policy(p).reverse(rev), &data);
            check(f, rev, &data, &out)?;
        }

        #[test]
        fn lines_like_lc_all_c_sort(lines in prop::collection::vec(
                prop::collection::vec(prop::sample::select(vec![b'a', b'b', 0u8, 0x80, 0xff, b' ']), 0..12), 0..80),
                final_newline: bool, d in 2usize..4, p in policy(), rev: bool) {
            let mut data: Vec<u8> = lines.iter().flat_map(|l| l.iter().copied().chain([b'\n'])).collect();
            if !final_newline {
                data.pop();
            }
            let (out, stats) = sort_bytes(tiny(Format::Lines, d, p, rev), &data);
            check(Format::Lines, rev, &data, &out)?;
            prop_assert!(data.len() as u64 <= stats.plan.run_bytes || stats.runs > 1);
        }
    }

    #[test]
    fn long_lines_grow_the_buffer() {
        let mut data = vec![b'z'; 5000];
        data.extend_from_slice(b"\nb\n");
        data.extend(std::iter::repeat_n(b'a', 3000));
        let (out, stats) = sort_bytes(tiny(Format::Lines, 2, MergePolicy::Optimal, false), &data);
        check(Format::Lines, false, &data, &out).unwrap();
        assert!(stats.runs >= 2);
    }

    #[test]
    fn every_stream_kind_sorts() {
        let data: Vec<u8> =
            (0..60_000u32).map(|i| i.wrapping_mul(2_654_435_761)).flat_map(|x| x.to_ne_bytes()).collect();
        for kind in StreamKind::ALL {
            let b = SortPlan::builder(Format::U32).memory(128 << 10).block_size(4096).fan_in(3).io(kind);
            let d = tempfile::tempdir().unwrap();
            let (input, output) = (d.path().join("in"), d.path().join("out"));
            std::fs::write(&input, &data).unwrap();
            let plan = b.temp_dir(d.path()).build().unwrap();
            match sort_file(&plan, &input, &output, &NoProgress, &AtomicBool::new(false)) {
                Ok(stats) => {
                    assert!(stats.runs > 3 && stats.merge_levels >= 2, "{kind}: {stats:?}");
                    check(Format::U32, false, &data, &std::fs::read(&output).unwrap()).unwrap();
                }
                Err(SortError::Io(e)) if *e.kind() == ErrorKind::UringUnavailable => continue,
                Err(e) => panic!("{kind}: {e}"),
            }
            assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2, "{kind}: temp files left");
        }
        // Lines and records through a kind with its own buffering too.
        let text = b"b\x80\na\0b\n\nab\nb\x80\n".repeat(300);
        let plan =
            SortPlan::builder(Format::Lines).memory(64 << 10).block_size(4096).fan_in(2).io(StreamKind::Mmap);
        let (out, _) = sort_bytes(plan, &text);
        check(Format::Lines, false, &text, &out).unwrap();
    }

    #[test]
    fn output_may_be_the_input_and_single_runs_skip_the_merge() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("data");
        let data: Vec<u8> = (0..1000u64).rev().flat_map(|x| x.to_ne_bytes()).collect();
        std::fs::write(&f, &data).unwrap();
        let plan = SortPlan::builder(Format::U64).memory(1 << 20).temp_dir(d.path()).build().unwrap();
        let stats = sort_file(&plan, &f, &f, &NoProgress, &AtomicBool::new(false)).unwrap();
        assert_eq!((stats.runs, stats.merges, stats.merge.bytes_written), (1, 0, 0));
        check(Format::U64, false, &data, &std::fs::read(&f).unwrap()).unwrap();
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        // Empty input, empty output.
        let e = d.path().join("empty");
        std::fs::write(&e, b"").unwrap();
        let stats =
            sort_file(&plan, &e, &d.path().join("e.out"), &NoProgress, &AtomicBool::new(false)).unwrap();
        assert_eq!(stats.runs, 0);
        assert_eq!(std::fs::read(d.path().join("e.out")).unwrap(), b"");
    }

    #[test]
    fn errors_leave_nothing_behind() {
        let d = tempfile::tempdir().unwrap();
        let tmp = d.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let odd = d.path().join("odd");
        std::fs::write(&odd, [0u8; 10]).unwrap();
        let plan = SortPlan::builder(Format::U64).memory(1 << 20).temp_dir(&tmp).build().unwrap();
        let out = d.path().join("out");
        let no = AtomicBool::new(false);
        let e = sort_file(&plan, &odd, &out, &NoProgress, &no).unwrap_err();
        assert!(
            matches!(e.io().map(|e| e.kind()), Some(ErrorKind::BadSize { size: 10, element_size: 8 })),
            "{e}"
        );
        // Interrupted: no output, no temp files.
        let big = d.path().join("big");
        std::fs::write(&big, vec![7u8; 1 << 20]).unwrap();
        let small = SortPlan::builder(Format::U64).memory(64 << 10).temp_dir(&tmp).build().unwrap();
        let e = sort_file(&small, &big, &out, &NoProgress, &AtomicBool::new(true)).unwrap_err();
        assert_eq!(e.io().map(|e| e.kind()), Some(&ErrorKind::Interrupted), "{e}");
        assert!(!out.exists());
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 3, "only tmp, odd and big");
        // Missing input, directory input.
        let e = sort_file(&plan, &d.path().join("nope"), &out, &NoProgress, &no).unwrap_err();
        assert_eq!(e.io().map(|e| e.kind()), Some(&ErrorKind::NotFound));
        let e = sort_file(&plan, &tmp, &out, &NoProgress, &no).unwrap_err();
        assert_eq!(e.io().map(|e| e.kind()), Some(&ErrorKind::IsADirectory));
    }
}
