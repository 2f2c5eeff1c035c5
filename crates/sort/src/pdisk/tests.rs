//! DSM and SRM against `slice::sort`, their accounting, and their cleanup.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use emsort_io::{ErrorKind, NoProgress, Progress};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::order;
use super::ParallelDiskStats;
use crate::test_util::{check, items};
use crate::{sort_file, Format, SortError, SortPlan, SortPlanBuilder, SortStats};
use crate::{Method, MethodKind, ParallelDisks, SrmOptions};

const B: usize = 512;

/// D disk directories (and a work directory for input and output).
struct Disks {
    _root: tempfile::TempDir,
    work: PathBuf,
    dirs: Vec<PathBuf>,
}

fn disks(d: usize) -> Disks {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let dirs: Vec<PathBuf> = (0..d).map(|i| root.path().join(format!("disk{i}"))).collect();
    for p in &dirs {
        std::fs::create_dir(p).unwrap();
    }
    Disks { _root: root, work, dirs }
}

fn left_in(dirs: &[PathBuf]) -> usize {
    dirs.iter().map(|d| std::fs::read_dir(d).unwrap().count()).sum()
}

/// A memory that allows merge order 3 for both methods (R_dsm = 3, R_srm ≤
/// 3): tiny, so that several passes happen.
fn tiny_memory(d: usize) -> u64 {
    order::dsm_memory(3, B, d).max(order::srm_memory(3, B, d))
}

/// The method `kind` on the disks of `d` (SRM with its default options).
fn method(kind: MethodKind, d: &Disks) -> Method {
    Method::of_kind(kind, ParallelDisks::new(d.dirs.clone()))
}

/// SRM on the disks of `d` with `options`.
fn srm(d: &Disks, options: SrmOptions) -> Method {
    Method::Srm(ParallelDisks::new(d.dirs.clone()), options)
}

fn builder(format: Format, kind: MethodKind, d: &Disks, reverse: bool) -> SortPlanBuilder {
    SortPlan::builder(format)
        .memory(tiny_memory(d.dirs.len()))
        .block_size(B)
        .method(method(kind, d))
        .reverse(reverse)
        .threads(2)
        // Two buffers, short runs: the cases are sized for several passes.
        .chunk_buffers(2)
        .temp_dir(&d.work)
}

/// Sorts `data` with `b`; checks that nothing is left on the disks.
fn run(b: SortPlanBuilder, d: &Disks, data: &[u8]) -> (Vec<u8>, SortStats) {
    let (input, output) = (d.work.join("in"), d.work.join("out"));
    std::fs::write(&input, data).unwrap();
    let plan = b.build().unwrap();
    let stats = sort_file(&plan, &input, &output, &NoProgress, &AtomicBool::new(false)).unwrap();
    assert_eq!(left_in(&d.dirs), 0, "temporary files left on the disks");
    (std::fs::read(&output).unwrap(), stats)
}

/// About `n` bytes of random data in `format`, with repeated keys, special
/// floats, and (lines) some lines longer than a block.
fn data(format: Format, n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n + 2000);
    match format {
        Format::Lines => {
            while out.len() < n {
                let len = match rng.random_range(0..40) {
                    0 => rng.random_range(B..3 * B),
                    _ => rng.random_range(0..30),
                };
                out.extend(
                    (0..len).map(|_| *[b'a', b'b', b'c', 0, 0xff, b' '].get(rng.random_range(0..6)).unwrap()),
                );
                out.push(b'\n');
            }
        }
        f => {
            let s = f.item_size().unwrap();
            while out.len() + s <= n {
                let mut item = vec![0u8; s];
                rng.fill(&mut item[..]);
                if rng.random_range(0..4) == 0 {
                    // Small values: many equal keys.
                    item.iter_mut().skip(1).for_each(|b| *b = 0);
                    item[0] %= 4;
                    if let Format::Rec(r) = f {
                        item[r.key_offset..r.key_offset + r.key_len].fill(rng.random_range(0..3));
                    }
                }
                if matches!(f, Format::F32 | Format::F64) && rng.random_range(0..10) == 0 {
                    let specials: [u64; 4] = [0x7ff8_0000_0000_0000, 1 << 63, 0x7ff0_0000_0000_0000, 0];
                    let x = specials[rng.random_range(0..4)];
                    if s == 4 {
                        let y = [0x7fc0_0000u32, 0x8000_0000, 0x7f80_0000, 0][(x % 4) as usize];
                        item.copy_from_slice(&y.to_ne_bytes());
                    } else {
                        item.copy_from_slice(&x.to_ne_bytes());
                    }
                }
                out.extend_from_slice(&item);
            }
        }
    }
    out
}

/// Bytes that make about `runs` runs with `b`'s plan.
fn bytes_for_runs(b: &SortPlanBuilder, runs: u64) -> usize {
    let plan = b.clone().build().unwrap().with_input_bytes(16 << 20);
    (plan.derived().run_bytes * runs) as usize
}

fn pd(stats: &SortStats) -> &ParallelDiskStats {
    stats.parallel_disks.as_ref().expect("parallel-disk stats")
}

#[test]
fn every_format_method_and_disk_count_sorts_like_slice_sort() {
    let formats: Vec<Format> =
        ["u32", "i32", "u64", "i64", "f32", "f64", "rec:12:2:3", "rec:104:0:8", "lines"]
            .iter()
            .map(|f| f.parse().unwrap())
            .collect();
    for (k, &format) in formats.iter().enumerate() {
        for (i, &nd) in [1usize, 2, 3, 6].iter().enumerate() {
            let d = disks(nd);
            let reverse = (k + i) % 2 == 1;
            let probe = builder(format, MethodKind::Srm, &d, reverse);
            let input = data(format, bytes_for_runs(&probe, 10), (k * 10 + i) as u64);
            let mut orders = vec![];
            for method in [MethodKind::Dsm, MethodKind::Srm] {
                for rev in [reverse, !reverse] {
                    let what = format!("{format} {method} D = {nd} reverse {rev}");
                    let (out, stats) = run(builder(format, method, &d, rev), &d, &input);
                    check(format, rev, &input, &out, &what);
                    let p = pd(&stats);
                    assert_eq!((p.method, p.disks, p.block_size), (method, nd, B), "{what}");
                    assert!(p.runs >= 8, "{what}: {} runs", p.runs);
                    assert!(p.passes >= 2, "{what}: {} passes", p.passes);
                    assert_eq!(p.passes, order::passes(p.runs, p.merge_orders[0]), "{what}");
                    assert_eq!(p.nu.len(), p.passes);
                    assert!(p.nu.iter().all(|&nu| nu >= 0.99), "{what}: ν {:?}", p.nu);
                    if method == MethodKind::Dsm {
                        assert!(p.flushes.iter().all(|&f| f == 0));
                    }
                    assert_eq!(stats.runs, p.runs);
                    orders.push((method, p.runs));
                }
            }
            // Both methods merge the same runs.
            assert!(orders.iter().all(|o| o.1 == orders[0].1), "{format} D = {nd}: {orders:?}");
        }
    }
}

#[test]
fn blocked_forecasting_data_sorts_the_same() {
    for (format, nd) in [("lines", 3), ("rec:104:0:8", 2), ("u64", 6)] {
        let format: Format = format.parse().unwrap();
        let d = disks(nd);
        let b = builder(format, MethodKind::Srm, &d, false)
            .method(srm(&d, SrmOptions::default().forecast_in_memory(Some(false))));
        let input = data(format, bytes_for_runs(&b, 12), 7);
        let (out, stats) = run(b, &d, &input);
        check(format, false, &input, &out, &format!("{format} blocked"));
        let p = pd(&stats);
        assert!(!p.forecast_in_memory);
        assert!(p.passes >= 2);
        // The forecasting files were written during run formation and read
        // while merging.
        assert!(stats.run_formation.bytes_written > stats.input_bytes);
        let in_memory = SrmOptions::default().forecast_in_memory(Some(true));
        let (out2, stats2) =
            run(builder(format, MethodKind::Srm, &d, false).method(srm(&d, in_memory)), &d, &input);
        assert_eq!(out, out2);
        assert!(pd(&stats2).forecast_in_memory);
    }
}

#[test]
fn skewed_runs_keep_nu_close_to_one() {
    // Almost sorted input: each run covers its own narrow key range, so a
    // merge consumes its runs one after another, at very unequal rates.
    let d = disks(3);
    let b = builder(Format::U64, MethodKind::Srm, &d, false).memory(64 << 10);
    let n = bytes_for_runs(&b, 9) / 8;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let input: Vec<u8> =
        (0..n as u64).map(|i| i * 100 + rng.random_range(0..300)).flat_map(|x| x.to_ne_bytes()).collect();
    for kind in [MethodKind::Srm, MethodKind::Dsm] {
        let (out, stats) = run(b.clone().method(method(kind, &d)), &d, &input);
        check(Format::U64, false, &input, &out, "skewed");
        let p = pd(&stats);
        assert!(p.runs >= 8 && p.passes >= 1, "{p:?}");
        assert!(p.nu.iter().all(|&nu| nu <= 1.2), "{kind}: ν {:?}", p.nu);
    }
    // Start disks drawn at random, reproducibly.
    let seeded = Method::Srm(ParallelDisks::new(d.dirs.clone()).seed(5), SrmOptions::default());
    let (_, a) = run(b.clone().method(seeded.clone()), &d, &input);
    let (_, c) = run(b.clone().method(seeded), &d, &input);
    assert_eq!(pd(&a).parallel_reads, pd(&c).parallel_reads);
    assert!(pd(&a).start_disks_drawn);
}

/// Sets the cancel flag once the merge phase has moved `after` bytes.
struct CancelInMerge<'a> {
    flag: &'a AtomicBool,
    merging: AtomicBool,
    after: u64,
    seen: std::sync::atomic::AtomicU64,
}

impl Progress for CancelInMerge<'_> {
    fn phase_bytes(&self, name: &str, _: Option<u64>) {
        self.merging.store(name == "merge", Ordering::Relaxed);
    }
    fn advance(&self, units: u64) {
        if self.merging.load(Ordering::Relaxed) && self.seen.fetch_add(units, Ordering::Relaxed) >= self.after
        {
            self.flag.store(true, Ordering::Relaxed);
        }
    }
}

#[test]
fn interrupts_and_errors_leave_nothing_behind() {
    for method in [MethodKind::Dsm, MethodKind::Srm] {
        for (blocked, after) in [(false, 0), (true, 3000), (false, 20_000)] {
            let d = disks(3);
            let mut b = builder(Format::Lines, method, &d, false);
            if method == MethodKind::Srm {
                b = b.method(srm(&d, SrmOptions::default().forecast_in_memory(Some(!blocked))));
            }
            let input = data(Format::Lines, bytes_for_runs(&b, 10), 1);
            let (inp, out) = (d.work.join("in"), d.work.join("out"));
            std::fs::write(&inp, &input).unwrap();
            let plan = b.build().unwrap();
            let flag = AtomicBool::new(false);
            let p = CancelInMerge {
                flag: &flag,
                merging: AtomicBool::new(false),
                after,
                seen: Default::default(),
            };
            let e = sort_file(&plan, &inp, &out, &p, &flag).unwrap_err();
            assert_eq!(e.io().map(|e| e.kind()), Some(&ErrorKind::Interrupted), "{e}");
            assert!(!out.exists());
            assert_eq!(left_in(&d.dirs), 0, "{method}: temp files left after an interrupt");
            assert_eq!(std::fs::read_dir(&d.work).unwrap().count(), 1, "only the input");
        }
        // Cancelled from the start, and a disk that is gone when the sort
        // starts (the builder refuses one that is gone already).
        let d = disks(2);
        let b = builder(Format::U32, method, &d, false);
        let input = data(Format::U32, bytes_for_runs(&b, 4), 2);
        std::fs::write(d.work.join("in"), &input).unwrap();
        let plan = b.clone().build().unwrap();
        let e =
            sort_file(&plan, &d.work.join("in"), &d.work.join("out"), &NoProgress, &AtomicBool::new(true))
                .unwrap_err();
        assert_eq!(e.io().map(|e| e.kind()), Some(&ErrorKind::Interrupted), "{e}");
        assert_eq!(left_in(&d.dirs), 0);
        let missing = d.work.join("no-such-disk");
        let mut dirs = d.dirs.clone();
        dirs.push(missing.clone());
        let with_missing = b.clone().method(Method::of_kind(method, ParallelDisks::new(dirs)));
        assert!(with_missing.clone().build().unwrap_err().to_string().contains("no-such-disk"));
        std::fs::create_dir(&missing).unwrap();
        let gone = with_missing.build().unwrap();
        std::fs::remove_dir(&missing).unwrap();
        let e =
            sort_file(&gone, &d.work.join("in"), &d.work.join("out"), &NoProgress, &AtomicBool::new(false))
                .unwrap_err();
        assert_eq!(e.io().map(|e| e.kind()), Some(&ErrorKind::NotFound), "{e}");
        assert_eq!(left_in(&d.dirs), 0);
        assert!(!d.work.join("out").exists());
    }
}

#[test]
fn small_inputs_and_single_runs() {
    for method in [MethodKind::Dsm, MethodKind::Srm] {
        let d = disks(2);
        for n in [0usize, 8, 800] {
            let input = data(Format::U64, n, 9);
            let (out, stats) = run(builder(Format::U64, method, &d, false).memory(1 << 20), &d, &input);
            check(Format::U64, false, &input, &out, "small");
            assert!(stats.runs <= 1);
            assert_eq!(pd(&stats).passes, 0);
        }
    }
}

#[test]
fn plans_refuse_too_little_memory_and_name_the_minimum() {
    let d = disks(6);
    for method in [MethodKind::Dsm, MethodKind::Srm] {
        let b = builder(Format::U32, method, &d, false).memory(8 << 10);
        match b.clone().build().unwrap_err() {
            SortError::MethodMemoryTooSmall { minimum, disks: 6, .. } => {
                let need = match method {
                    MethodKind::Dsm => order::dsm_memory(2, B, 6),
                    _ => order::srm_memory(2, B, 6),
                };
                assert!(minimum >= need, "{minimum} < {need}");
                let msg = b.clone().build().unwrap_err().to_string();
                assert!(msg.contains("needs at least") && msg.contains(method.name()), "{msg}");
                assert!(b.clone().memory(minimum).build().is_ok());
                assert!(b.memory(minimum - 1).build().is_err());
            }
            e => panic!("{e}"),
        }
    }
    let capped = |cap| {
        builder(Format::U32, MethodKind::Srm, &d, false).method(srm(&d, SrmOptions::default().max_order(cap)))
    };
    assert!(capped(Some(1)).build().is_err());
    assert!(capped(Some(2)).build().is_ok());
}

#[test]
fn methods_parse_print_and_serialise() {
    for m in MethodKind::ALL {
        assert_eq!(m.to_string().parse::<MethodKind>().unwrap(), m);
        assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{m}\""));
        let d = disks(1);
        let full = method(m, &d);
        assert_eq!((full.kind(), full.name(), full.to_string()), (m, m.name(), m.to_string()));
    }
    assert_eq!(Method::default(), Method::Plain);
    assert_eq!(MethodKind::default(), MethodKind::Plain);
    let e = "fast".parse::<MethodKind>().unwrap_err();
    assert!(e.contains("plain, dsm or srm"), "{e}");
}

#[test]
fn merge_order_cap_and_stats() {
    let d = disks(2);
    let b = builder(Format::U32, MethodKind::Srm, &d, false).memory(256 << 10);
    let input = data(Format::U32, bytes_for_runs(&b, 9), 4);
    let (_, stats) = run(b.clone(), &d, &input);
    let p = pd(&stats);
    // 9 runs, room for many: one pass of order 9.
    assert_eq!((p.runs, p.passes, p.merge_orders.clone()), (9, 1, vec![9]));
    let (out, stats) = run(b.method(srm(&d, SrmOptions::default().max_order(Some(3)))), &d, &input);
    check(Format::U32, false, &input, &out, "capped");
    let p = pd(&stats);
    assert_eq!((p.passes, p.merge_orders.clone()), (2, vec![3, 3]));
    assert!(p.merge_rate > 0.0 && p.merge_bytes_read >= 2 * stats.input_bytes);
    let json = serde_json::to_value(&stats).unwrap();
    assert_eq!(json["parallel_disks"]["method"], "srm");
    assert_eq!(json["parallel_disks"]["merge_orders"][1], 3);
}

#[test]
fn tight_memory_flushes_and_still_sorts() {
    // m = 2R + D exactly: prefetched blocks must be flushed now and then,
    // and (debug builds) the invariants of 4.2–4.4 are checked throughout.
    let mut flushes = 0;
    for nd in [3, 6] {
        for format in ["u32", "lines", "rec:12:2:3"] {
            for r in [2, 4] {
                let format: Format = format.parse().unwrap();
                let d = disks(nd);
                let mem = order::srm_memory(r, B, nd).max(crate::plan::method_minimum_memory(
                    &builder(format, MethodKind::Srm, &d, false).build().unwrap(),
                ));
                let b = builder(format, MethodKind::Srm, &d, r == 4)
                    .memory(mem)
                    .method(srm(&d, SrmOptions::default().max_order(Some(r))));
                let input = data(format, bytes_for_runs(&b, 9), (nd * r) as u64);
                let (out, stats) = run(b, &d, &input);
                check(format, r == 4, &input, &out, &format!("{format} D = {nd} R = {r} tight"));
                flushes += pd(&stats).flushes.iter().sum::<u64>();
            }
        }
    }
    assert!(flushes > 0);
}

#[test]
fn records_larger_than_a_block() {
    // Each 1300-byte record spans three blocks of 512: the cursor carries
    // it through, and its key forecasts two or three blocks.
    let format: Format = "rec:1300:5:4".parse().unwrap();
    for (method, nd) in [(MethodKind::Srm, 2), (MethodKind::Srm, 3), (MethodKind::Dsm, 2)] {
        let d = disks(nd);
        let b = builder(format, method, &d, false).memory(40 << 10);
        let input = data(format, bytes_for_runs(&b, 7), 5);
        let (out, stats) = run(b, &d, &input);
        check(format, false, &input, &out, &format!("{method} D = {nd}"));
        assert!(pd(&stats).runs >= 6);
    }
}

#[test]
fn plans_print_the_method() {
    let d = disks(3);
    let plan = builder(Format::U32, MethodKind::Srm, &d, false)
        .method(srm(&d, SrmOptions::default().max_order(Some(5))))
        .input_bytes(1 << 20)
        .build()
        .unwrap();
    let text = plan.to_string();
    assert!(text.contains("srm on D = 3") && text.contains("merge order R ="), "{text}");
    assert!(text.contains("cap 5") && text.contains("minimum M"), "{text}");
}

/// GNU keys, `-u`, `-s` and `-r` through DSM and SRM (forecasting keys in
/// memory and on disk): the output is `slice::sort_by` with the
/// [`LineOrder`](crate::keys::LineOrder)'s comparison (stable, so `-s` and
/// `-u` keep the first of equal lines), `-u` then keeping the first line of
/// each run of equal ones, over several merge passes.
#[test]
fn keys_unique_and_stable_through_both_methods() {
    use crate::keys::{Key, LineOrder, OrderOptions};
    let mut r = Xoshiro256PlusPlus::seed_from_u64(40);
    let mut input = Vec::new();
    for i in 0..3000 {
        let amount = match r.random_range(0..4) {
            0 => format!("{}", r.random_range(-50..50)),
            1 => format!("{}.{}", r.random_range(0..9), r.random_range(0..99)),
            2 => String::new(),
            _ => format!("{}", r.random_range(0..5)),
        };
        let cat = ["a", "b", "cc", "B", ""][r.random_range(0..5)];
        input.extend_from_slice(format!("{i},{cat},{amount},x{}\n", r.random_range(0..3)).as_bytes());
    }
    let specs: [(&[&str], Option<char>, bool, bool); 5] = [
        (&["3,3n"], None, false, false),
        (&["3,3n"], None, true, false),
        (&["2,2", "3,3nr"], None, false, true),
        (&["2,2f"], Some('r'), true, false),
        (&["4,4", "2,2V"], None, false, false),
    ];
    for (keys, global, unique, stable) in specs {
        let mut o = OrderOptions { tab: Some(b','), unique, stable, ..OrderOptions::default() };
        o.keys = keys.iter().map(|k| Key::parse(k).unwrap()).collect();
        if let Some(g) = global {
            o.global.set_global(g);
        }
        let lo = LineOrder::new(o).unwrap();
        let mut want = items(Format::Lines, &input);
        want.sort_by(|a, b| lo.compare(a, b));
        if unique {
            want.dedup_by(|b, a| lo.same(a, b));
        }
        let want: Vec<u8> = want.iter().flat_map(|l| l.iter().chain(b"\n")).copied().collect();
        for (kind, in_memory) in
            [(MethodKind::Dsm, None), (MethodKind::Srm, Some(true)), (MethodKind::Srm, Some(false))]
        {
            let d = disks(3);
            let m = match kind {
                MethodKind::Srm => srm(&d, SrmOptions::default().forecast_in_memory(in_memory)),
                _ => method(kind, &d),
            };
            let b = builder(Format::Lines, kind, &d, false).method(m).line_order(lo.clone());
            let (out, stats) = run(b, &d, &input);
            let what = format!("{keys:?} -r {global:?} -u {unique} -s {stable} {kind:?} {in_memory:?}");
            assert!(out == want, "{what}: differs from slice::sort_by");
            assert!(pd(&stats).passes >= 2, "{what}: {} passes", pd(&stats).passes);
        }
    }
}
