//! Tests of the whole pipeline: every format, method-independent edge
//! cases, sources and sinks, merges of given files.

use super::*;
use crate::keys::{Key, LineOrder, OrderOptions};
use crate::merge_policy::MergePolicy;
use crate::test_util::{joined, split_lines};
use crate::Format;
use crate::{merge_files, merge_sources, sort, Sink, Source};
use emsort_io::{ErrorKind, NoProgress, StreamKind};
use proptest::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

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
    if plan.format() != Format::Lines {
        assert_eq!(Some(stats.runs), derived.expected_runs);
        assert_eq!(Some(stats.passes), derived.passes);
    }
    assert!(stats.merge_order <= plan.fan_in());
    (std::fs::read(&output).unwrap(), stats)
}

/// The output is in order (the oracle `slice::sort_by` up to the order
/// of equal keys) and holds the input's multiset; lines are
/// byte-identical to the oracle, final newline added.
fn check(format: Format, reverse: bool, input: &[u8], output: &[u8]) {
    crate::test_util::check(format, reverse, input, output, "");
    if format == Format::Lines {
        assert!(output == sorted_by(input, b'\n', reverse), "lines differ from the oracle");
    }
}

fn tiny(format: Format, d: usize, policy: MergePolicy, reverse: bool) -> crate::SortPlanBuilder {
    // Two chunk buffers: short runs, several merge levels.
    SortPlan::builder(format)
        .memory(512)
        .block_size(64)
        .fan_in(d)
        .policy(policy)
        .reverse(reverse)
        .threads(2)
        .chunk_buffers(2)
}

fn policy() -> impl Strategy<Value = MergePolicy> {
    prop_oneof![Just(MergePolicy::Fifo), Just(MergePolicy::Optimal)]
}

const SPECIAL32: [u32; 6] = [0x7fc0_0000, 0xffc0_0001, 0x8000_0000, 0, 0x7f80_0000, 0xff80_0000];
const SPECIAL64: [u64; 6] =
    [0x7ff8_0000_0000_0000, 0xfff8_0000_0000_0001, 1 << 63, 0, 0x7ff0_0000_0000_0000, 0xfff0_0000_0000_0000];

fn words32() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop_oneof![any::<u32>(), 0u32..8, prop::sample::select(&SPECIAL32[..])], 0..400)
        .prop_map(|v| v.iter().flat_map(|x| x.to_ne_bytes()).collect())
}

fn words64() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop_oneof![any::<u64>(), 0u64..8, prop::sample::select(&SPECIAL64[..])], 0..300)
        .prop_map(|v| v.iter().flat_map(|x| x.to_ne_bytes()).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn numbers_32(data in words32(), f in prop::sample::select(vec![Format::U32, Format::I32, Format::F32]),
                  d in 2usize..4, p in policy(), rev: bool) {
        let (out, _) = sort_bytes(tiny(f, d, p, rev), &data);
        check(f, rev, &data, &out);
    }

    #[test]
    fn numbers_64(data in words64(), f in prop::sample::select(vec![Format::U64, Format::I64, Format::F64]),
                  d in 2usize..4, p in policy(), rev: bool) {
        let (out, _) = sort_bytes(tiny(f, d, p, rev), &data);
        check(f, rev, &data, &out);
    }

    /// Chunks sorted in segments as they are read, and written as the
    /// segments' merge: in one buffer or two, as runs or as the whole
    /// output (a larger M), in either order.
    #[test]
    fn numbers_in_segments(data32 in words32(), data64 in words64(),
                           f in prop::sample::select(vec![Format::U32, Format::I32, Format::F32, Format::U64, Format::I64, Format::F64]),
                           s in 2usize..9, buffers in 1usize..3, fits: bool, rev: bool) {
        let data = if f.item_size() == Some(4) { data32 } else { data64 };
        let mut b = tiny(f, 3, MergePolicy::Optimal, rev).chunk_buffers(buffers).segments(s);
        if fits {
            b = b.memory(64 << 10);
        }
        let (out, stats) = sort_bytes(b, &data);
        check(f, rev, &data, &out);
        prop_assert_eq!(stats.plan.segments, s);
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
        check(f, rev, &data, &out);
    }
}

#[test]
fn long_lines_grow_the_buffer() {
    let mut data = vec![b'z'; 5000];
    data.extend_from_slice(b"\nb\n");
    data.extend(std::iter::repeat_n(b'a', 3000));
    let (out, stats) = sort_bytes(tiny(Format::Lines, 2, MergePolicy::Optimal, false), &data);
    check(Format::Lines, false, &data, &out);
    assert!(stats.runs >= 2);
}

#[test]
fn every_stream_kind_sorts() {
    let data: Vec<u8> =
        (0..60_000u32).map(|i| i.wrapping_mul(2_654_435_761)).flat_map(|x| x.to_ne_bytes()).collect();
    for kind in StreamKind::ALL {
        let b = SortPlan::builder(Format::U32)
            .memory(128 << 10)
            .block_size(4096)
            .fan_in(3)
            .io(kind)
            .chunk_buffers(2);
        let d = tempfile::tempdir().unwrap();
        let (input, output) = (d.path().join("in"), d.path().join("out"));
        std::fs::write(&input, &data).unwrap();
        let plan = b.temp_dir(d.path()).build().unwrap();
        match sort_file(&plan, &input, &output, &NoProgress, &AtomicBool::new(false)) {
            Ok(stats) => {
                assert!(stats.runs > 3 && stats.merge_levels >= 2, "{kind}: {stats:?}");
                check(Format::U32, false, &data, &std::fs::read(&output).unwrap());
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
    check(Format::Lines, false, &text, &out);
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
    check(Format::U64, false, &data, &std::fs::read(&f).unwrap());
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    // Empty input, empty output.
    let e = d.path().join("empty");
    std::fs::write(&e, b"").unwrap();
    let stats = sort_file(&plan, &e, &d.path().join("e.out"), &NoProgress, &AtomicBool::new(false)).unwrap();
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

// Merging given files.

/// Writes `parts` (each sorted by the oracle first) as files, merges
/// them with fan-in `d` and checks the output against the sorted
/// concatenation, the inputs untouched and no temporary file left.
fn merge_parts(format: Format, reverse: bool, d: usize, parts: &[Vec<Vec<u8>>]) -> SortStats {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let order = |a: &Vec<u8>, b: &Vec<u8>| {
        let (a, b) = if reverse { (b, a) } else { (a, b) };
        format.compare(a.strip_suffix(b"\n").unwrap_or(a), b.strip_suffix(b"\n").unwrap_or(b))
    };
    let mut paths = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let mut items = p.clone();
        items.sort_by(order);
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
    check(format, reverse, &parts.concat().concat(), &std::fs::read(&out).unwrap());
    for (p, b) in paths.iter().zip(&before) {
        assert_eq!(&std::fs::read(p).unwrap(), b, "input modified");
    }
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "temp files left behind");
    assert_eq!(stats.runs, parts.len() as u64);
    assert!(stats.merge_order <= d);
    stats
}

/// The next number of the xorshift generator at `x` (not 0).
fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn numbers(n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n).map(|_| ((xorshift(&mut x) % 5000) as u32).to_ne_bytes().to_vec()).collect()
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

/// Files given to merge are read, never freed behind the read as the
/// sort's own runs are: inputs longer than a free-behind step come out
/// whole (`merge_parts` checks them byte for byte).
#[test]
fn merging_given_files_never_frees_their_space() {
    let line =
        |n: &Vec<u8>| format!("{:0>60}\n", u32::from_ne_bytes(n[..4].try_into().unwrap())).into_bytes();
    let step = crate::read_ahead::FREE_STEP as usize;
    let parts: Vec<Vec<Vec<u8>>> =
        (0..2).map(|i| numbers(step / 61 + 1000, i + 40).iter().map(line).collect()).collect();
    merge_parts(Format::Lines, false, 2, &parts);
}

#[test]
fn merges_records_lines_and_edge_cases() {
    let rec: Format = "rec:12:2:3".parse().unwrap();
    let parts: Vec<Vec<Vec<u8>>> = (0..5)
        .map(|i| numbers(700, i + 9).iter().map(|n| [n.as_slice(), n.as_slice(), &n[..4]].concat()).collect())
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

// Streams in and out.

#[test]
fn reader_to_writer_and_back() {
    let d = tempfile::tempdir().unwrap();
    let plan = SortPlan::builder(Format::Lines)
        .memory(64 << 10)
        .block_size(4096)
        .temp_dir(d.path())
        .build()
        .unwrap();
    let text = b"pear\napple\n\xff\n\nfig".repeat(500);
    let mut out = Vec::new();
    let no = AtomicBool::new(false);
    let stats = sort(
        &plan,
        vec![Source::Reader(&mut &text[..])],
        Sink::Writer(&mut out),
        &emsort_io::NoProgress,
        &no,
    )
    .unwrap();
    assert!(stats.runs > 1);
    assert_eq!(out, sorted_by(&text, b'\n', false));
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
}

// Several sources, streams, and the push API.

/// The oracle: `LC_ALL=C sort` of the concatenation, each source's last
/// line ended.
fn sorted_lines_of(parts: &[&[u8]]) -> Vec<u8> {
    let mut all: Vec<&[u8]> = parts.iter().flat_map(|p| split_lines(p, b'\n')).collect();
    all.sort();
    joined(&all, b'\n')
}

#[test]
fn several_sources_are_one_input() {
    let d = tempfile::tempdir().unwrap();
    let parts: [&[u8]; 4] = [b"pear\nfig", b"", b"apple\n\xff\nb", b"zz\na\n"];
    let paths: Vec<PathBuf> = (0..parts.len()).map(|i| d.path().join(format!("in{i}"))).collect();
    for (p, data) in paths.iter().zip(parts) {
        std::fs::write(p, data.repeat(200)).unwrap();
    }
    let big: Vec<Vec<u8>> = parts.iter().map(|p| p.repeat(200)).collect();
    let refs: Vec<&[u8]> = big.iter().map(|v| v.as_slice()).collect();
    let expect = sorted_lines_of(&refs);
    let no = AtomicBool::new(false);
    for memory in [1 << 20, 16 << 10] {
        let plan = SortPlan::builder(Format::Lines)
            .memory(memory)
            .block_size(1024)
            .temp_dir(d.path())
            .build()
            .unwrap();
        let out = d.path().join("out");
        let sources = paths.iter().map(|p| Source::Path(p)).collect();
        let stats = sort(&plan, sources, Sink::Path(&out), &NoProgress, &no).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), expect, "M = {memory}");
        assert_eq!(stats.input_bytes, refs.iter().map(|r| r.len() as u64).sum::<u64>());
        // The last source through a reader instead (a stream: size unknown).
        let mut last = &big[3][..];
        let mut sources: Vec<Source> = paths[..3].iter().map(|p| Source::Path(p)).collect();
        sources.push(Source::Reader(&mut last));
        let mut got = Vec::new();
        sort(&plan, sources, Sink::Writer(&mut got), &NoProgress, &no).unwrap();
        assert_eq!(got, expect, "M = {memory}, with a stream");
    }
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), parts.len() + 1, "temp files left");
}

#[test]
fn streams_of_numbers_go_through_runs_without_a_spool() {
    let d = tempfile::tempdir().unwrap();
    let data: Vec<u8> =
        (0..50_000u32).map(|i| i.wrapping_mul(2_654_435_761)).flat_map(|x| x.to_ne_bytes()).collect();
    let plan =
        SortPlan::builder(Format::U32).memory(64 << 10).block_size(4096).temp_dir(d.path()).build().unwrap();
    let mut out = Vec::new();
    let no = AtomicBool::new(false);
    let stats =
        sort(&plan, vec![Source::Reader(&mut &data[..])], Sink::Writer(&mut out), &NoProgress, &no).unwrap();
    let mut expect: Vec<u32> =
        data.chunks_exact(4).map(|c| u32::from_ne_bytes(c.try_into().unwrap())).collect();
    expect.sort_unstable();
    assert_eq!(out, bytemuck::cast_slice::<u32, u8>(&expect));
    assert!(stats.runs > 4);
    // Read once and written once by run formation: no copy of the input.
    assert_eq!(stats.run_formation.bytes_read, data.len() as u64);
    assert_eq!(stats.run_formation.bytes_written, data.len() as u64);
    // A stream that is not whole items is refused, naming it.
    let e =
        sort(&plan, vec![Source::Reader(&mut &data[..6])], Sink::Writer(&mut Vec::new()), &NoProgress, &no)
            .unwrap_err();
    assert!(e.to_string().contains(crate::STDIN_NAME), "{e}");
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "temp files left");
}

#[test]
fn a_pushed_data_set_four_times_the_budget_sorts() {
    let d = tempfile::tempdir().unwrap();
    let memory = 256u64 << 10;
    let plan = SortPlan::builder(Format::U64).memory(memory).temp_dir(d.path()).build().unwrap();
    let mut sorter = crate::Sorter::new(plan).unwrap();
    let n = 4 * memory as usize / 8;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut all = Vec::with_capacity(n);
    for _ in 0..n / 1000 {
        let piece: Vec<u64> = (0..1000).map(|_| xorshift(&mut x)).collect();
        all.extend_from_slice(&piece);
        // Pushes cut items anywhere.
        let bytes: &[u8] = bytemuck::cast_slice(&piece);
        sorter.push(&bytes[..13]).unwrap();
        sorter.push(&bytes[13..]).unwrap();
    }
    let sorted = sorter.finish().unwrap();
    let mut blocks = sorted.blocks();
    let mut got: Vec<u8> = Vec::new();
    for b in blocks.by_ref() {
        let b = b.unwrap();
        assert_eq!(b.len() % 8, 0, "blocks hold whole items");
        got.extend_from_slice(&b);
    }
    all.sort_unstable();
    assert_eq!(got, bytemuck::cast_slice::<u64, u8>(&all));
    let stats = blocks.stats().expect("the sort's statistics");
    assert!(stats.runs >= 8 && stats.input_bytes == 8 * all.len() as u64, "{stats:?}");
    drop(blocks);
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "temp files left");
}

#[test]
fn a_single_pushed_run_comes_back_in_blocks_of_b() {
    // The input fits in one chunk buffer: the run is written whole from it,
    // and the items still come back in blocks of B, not in one copy of it.
    let d = tempfile::tempdir().unwrap();
    let block = 16 << 10;
    let plan =
        SortPlan::builder(Format::U32).memory(1 << 20).block_size(block).temp_dir(d.path()).build().unwrap();
    let mut sorter = crate::Sorter::new(plan).unwrap();
    let mut all: Vec<u32> = (0..25_000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    sorter.push(bytemuck::cast_slice(&all)).unwrap();
    let mut blocks = sorter.finish().unwrap().blocks();
    let mut got: Vec<u8> = Vec::new();
    let mut n = 0;
    for b in blocks.by_ref() {
        let b = b.unwrap();
        assert!(b.len() <= block && b.len() % 4 == 0, "a block of {} bytes", b.len());
        got.extend_from_slice(&b);
        n += 1;
    }
    all.sort_unstable();
    assert_eq!(got, bytemuck::cast_slice::<u32, u8>(&all));
    assert_eq!(n, (4 * all.len()).div_ceil(block));
    assert_eq!(blocks.stats().expect("statistics").runs, 1);
}

#[test]
fn merged_lines_come_back_in_the_merges_own_blocks() {
    // The last merge lends its output blocks to the reader (no copy) and
    // makes more when the reader keeps them all: every block whole lines,
    // together the sorted input.
    let d = tempfile::tempdir().unwrap();
    let plan = SortPlan::builder(Format::Lines)
        .memory(64 << 10)
        .block_size(1024)
        .temp_dir(d.path())
        .build()
        .unwrap();
    let mut x = 7u64;
    let text: Vec<u8> = (0..40_000)
        .flat_map(|_| {
            let n = xorshift(&mut x);
            let mut line = format!("{:x}", n >> (n % 50)).into_bytes();
            line.push(b'\n');
            line
        })
        .collect();
    let mut sorter = crate::Sorter::new(plan).unwrap();
    for piece in text.chunks(1000) {
        sorter.push(piece).unwrap();
    }
    let mut blocks = sorter.finish().unwrap().blocks();
    let kept: Vec<crate::Block> = blocks.by_ref().map(Result::unwrap).collect();
    assert!(blocks.stats().expect("statistics").runs > 2);
    assert!(kept.iter().all(|b| b.ends_with(b"\n")), "blocks of whole lines");
    let lent = kept.iter().filter(|b| b.is_lent()).count();
    assert!(kept.len() > 8 && lent * 10 >= kept.len() * 9, "{lent} of {} blocks lent", kept.len());
    assert_eq!(kept.iter().flat_map(|b| b.iter().copied()).collect::<Vec<u8>>(), sorted_lines_of(&[&text]));
}

#[test]
fn pushed_lines_go_to_a_file_and_a_dropped_sorter_leaves_nothing() {
    let d = tempfile::tempdir().unwrap();
    let tmp = d.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let plan =
        SortPlan::builder(Format::Lines).memory(32 << 10).block_size(1024).temp_dir(&tmp).build().unwrap();
    let text = b"kiwi\nfig\n\nbanana\x80\nfig".repeat(400);
    let mut sorter = crate::Sorter::new(plan.clone()).unwrap();
    for piece in text.chunks(777) {
        sorter.push(piece).unwrap();
    }
    let out = d.path().join("sorted.txt");
    let stats = sorter.finish().unwrap().write_to(&out).unwrap();
    assert!(stats.runs > 2);
    assert_eq!(std::fs::read(&out).unwrap(), sorted_lines_of(&[&text]));
    // Dropped before the end: the sort stops and its runs go.
    let mut sorter = crate::Sorter::new(plan.clone()).unwrap();
    sorter.push(&text).unwrap();
    drop(sorter);
    let mut sorter = crate::Sorter::new(plan).unwrap();
    sorter.push(&text).unwrap();
    drop(sorter.finish().unwrap());
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "temp files left");
}

// -z: lines ended by NUL.

/// Lines of `text` ended by `eol` (a last one without it too), sorted
/// bytewise and each ended by `eol`: `LC_ALL=C sort [-z]`.
fn sorted_by(text: &[u8], eol: u8, reverse: bool) -> Vec<u8> {
    sorted_with(text, eol, |a, b| if reverse { b.cmp(a) } else { a.cmp(b) })
}

/// The lines of `text` ended by `eol` sorted by `order`, each ended by `eol`.
fn sorted_with(text: &[u8], eol: u8, order: impl FnMut(&&[u8], &&[u8]) -> std::cmp::Ordering) -> Vec<u8> {
    let mut lines = split_lines(text, eol);
    lines.sort_by(order);
    joined(&lines, eol)
}

/// GNU `sort -t, -k KEY…` (`-r` with `reverse`).
fn comma_keys(keys: &[&str], reverse: bool) -> LineOrder {
    let mut o = OrderOptions { tab: Some(b','), ..OrderOptions::default() };
    o.keys = keys.iter().map(|k| Key::parse(k).unwrap()).collect();
    o.global.reverse = reverse;
    LineOrder::new(o).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Lines ended by `\n` holding NULs, or by NUL (`-z`) holding newlines,
    /// through runs on disk and several merge passes, every stream kind's
    /// way: as `LC_ALL=C sort [-z]`.
    #[test]
    fn lines_like_lc_all_c_sort(lines in prop::collection::vec(
            prop::collection::vec(prop::sample::select(vec![b'a', b'b', 0u8, b'\n', 0x80, 0xff, b' ']), 0..12), 0..80),
            final_eol: bool, z: bool, d in 2usize..4, p in policy(), rev: bool) {
        let eol = if z { 0 } else { b'\n' };
        let mut data: Vec<u8> = lines.iter().flat_map(|l| l.iter().copied().chain([eol])).collect();
        if !final_eol {
            data.pop();
        }
        let (out, stats) = sort_bytes(tiny(Format::Lines, d, p, rev).eol(eol), &data);
        prop_assert_eq!(&out, &sorted_by(&data, eol, rev));
        prop_assert!(data.len() as u64 <= stats.plan.run_bytes || stats.runs > 1);
    }
}

#[test]
fn nul_terminated_sources_streams_and_parallel_disks() {
    let d = tempfile::tempdir().unwrap();
    // The first source's last line has no NUL: it gets one, not a newline.
    let parts: [&[u8]; 3] = [b"pear\nfig\0b\0\nz", b"apple\0\n\0", b"x\ny\0a\n"];
    let big: Vec<Vec<u8>> = parts.iter().map(|p| p.repeat(5000)).collect();
    let first = d.path().join("in0");
    std::fs::write(&first, &big[0]).unwrap();
    let mut all = big.concat();
    // Each source's last line is ended before the next begins.
    let end0 = big[0].len();
    all.insert(end0, 0);
    let expect = sorted_by(&all, 0, false);
    let no = AtomicBool::new(false);
    let disks = [d.path().join("d0"), d.path().join("d1")];
    for dir in &disks {
        std::fs::create_dir(dir).unwrap();
    }
    for method in [
        Method::Plain,
        Method::Dsm(crate::ParallelDisks::new(disks.clone())),
        Method::Srm(crate::ParallelDisks::new(disks.clone()), crate::SrmOptions::default()),
    ] {
        let plan = SortPlan::builder(Format::Lines)
            .memory(128 << 10)
            .block_size(4096)
            .eol(0)
            .method(method.clone())
            .temp_dir(d.path())
            .build()
            .unwrap();
        let (mut s1, mut s2) = (&big[1][..], &big[2][..]);
        let sources = vec![Source::Path(&first), Source::Reader(&mut s1), Source::Reader(&mut s2)];
        let mut got = Vec::new();
        let stats = sort(&plan, sources, Sink::Writer(&mut got), &NoProgress, &no).unwrap();
        assert!(stats.runs > 2, "{method}: {} runs", stats.runs);
        assert!(got == expect, "{method}: differs from sort -z");
    }
    for dir in &disks {
        assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0, "left on a disk");
    }
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 3, "temp files left");
    // A terminator other than newline has no meaning for fixed-size items.
    let e = SortPlan::builder(Format::U32).eol(0).build().unwrap_err();
    assert!(e.to_string().contains("no lines"), "{e}");
}

// Merging streams: spooled to the temp dir first.

#[test]
fn merges_a_stream_with_files_through_a_spool() {
    let d = tempfile::tempdir().unwrap();
    let tmp = d.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let no = AtomicBool::new(false);
    for eol in [b'\n', 0] {
        // Four sorted inputs, the third a stream whose last line lacks its
        // terminator; fan-in 2, so the spooled run is read by a merge that
        // is not the last.
        let sorted = |seed: u64| {
            let lines: Vec<Vec<u8>> = numbers(400, seed)
                .iter()
                .map(|n| format!("{}\n{}", n[0] % 70, n[1] % 3).into_bytes())
                .collect();
            let text: Vec<u8> = lines.iter().flat_map(|l| l.iter().copied().chain([eol])).collect();
            sorted_by(&text, eol, false)
        };
        let parts: Vec<Vec<u8>> = (0..4).map(|i| sorted(i + 40)).collect();
        let paths: Vec<PathBuf> = (0..4).map(|i| d.path().join(format!("part{i}"))).collect();
        for (p, data) in paths.iter().zip(&parts) {
            std::fs::write(p, data).unwrap();
        }
        let mut stream = &parts[2][..parts[2].len() - 1];
        let plan = SortPlan::builder(Format::Lines)
            .memory(64 << 10)
            .block_size(1024)
            .fan_in(2)
            .eol(eol)
            .temp_dir(&tmp)
            .build()
            .unwrap();
        let sources = vec![
            Source::Path(&paths[0]),
            Source::Path(&paths[1]),
            Source::Reader(&mut stream),
            Source::Path(&paths[3]),
        ];
        let mut got = Vec::new();
        let stats = merge_sources(&plan, sources, Sink::Writer(&mut got), &NoProgress, &no).unwrap();
        assert!(got == sorted_by(&parts.concat(), eol, false), "eol {eol:#04x}");
        assert_eq!(
            (stats.runs, stats.input_bytes),
            (4, parts.iter().map(|p| p.len() as u64).sum::<u64>() - 1)
        );
        assert!(stats.merges >= 3, "{stats:?}");
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "the spool was left behind");
    }
    // A stream that is not whole items, and an interrupted spool: errors
    // naming standard input, nothing left.
    let plan = SortPlan::builder(Format::U32).memory(64 << 10).fan_in(2).temp_dir(&tmp).build().unwrap();
    let (mut odd, out) = (&[1u8, 2, 3, 4, 5][..], d.path().join("out"));
    let e =
        merge_sources(&plan, vec![Source::Reader(&mut odd)], Sink::Path(&out), &NoProgress, &no).unwrap_err();
    assert!(e.to_string().contains(crate::STDIN_NAME), "{e}");
    let mut some = &[0u8; 4096][..];
    let stop = AtomicBool::new(true);
    let e = merge_sources(&plan, vec![Source::Reader(&mut some)], Sink::Path(&out), &NoProgress, &stop)
        .unwrap_err();
    assert_eq!(e.io().map(|e| e.kind()), Some(&ErrorKind::Interrupted));
    assert!(!out.exists());
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "the spool was left behind");
}

/// Runs of megabytes merged in windows of thousands of lines, indexed in
/// pieces on all threads: lines whose length changes from window to window
/// (short, then long, then short again, and some longer than a read-ahead
/// block), gathered into runs on all threads, sorted as `LC_ALL=C sort`.
#[test]
fn large_runs_of_lines_of_changing_length() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut data = Vec::new();
    for i in 0..400_000usize {
        let len = match (i / 50_000) % 4 {
            0 => rng.random_range(0..12),
            1 => rng.random_range(20..200),
            2 => rng.random_range(0..3),
            _ if i % 20_000 == 0 => rng.random_range(300_000..600_000),
            _ => rng.random_range(0..60),
        };
        data.extend((0..len).map(|_| rng.random_range(b'a'..=b'd')));
        data.push(b'\n');
    }
    for threads in [1, 2] {
        let b = crate::SortPlan::builder(Format::Lines)
            .memory(12 << 20)
            .block_size(1 << 20)
            .threads(threads)
            .input_kind(StreamKind::Buffered)
            .output_kind(StreamKind::Buffered);
        let (out, stats) = sort_bytes(b, &data);
        assert!(stats.runs >= 4, "{} runs", stats.runs);
        assert_eq!(out, sorted_by(&data, b'\n', false), "{threads} threads");
    }
}

proptest! {
    /// Lines with GNU keys, in runs that carry their keys (every key of a
    /// chunk at most 8 bytes) and runs that do not (a long number in the
    /// chunk), merged together in several levels: the output is the lines
    /// in [`LineOrder::compare`]'s order (a total order: the last resort
    /// breaks every tie but equal lines). Months and `-z` give keys that
    /// hold the terminator byte (October is byte 10; with `-z` a text key
    /// ends with NUL bytes).
    #[test]
    fn keyed_and_plain_runs_merge_in_the_line_order(
        rows in prop::collection::vec(
            (prop::sample::select(vec!["jan", "oct", "nov", "x", ""]), -30i64..30, any::<bool>(),
             prop::collection::vec(prop::sample::select(vec![b'a', b'b', b' ', 0xff]), 0..6), any::<bool>()),
            0..120),
        spec in 0usize..5, reverse: bool, z: bool, d in 2usize..4,
    ) {
        let eol = if z { 0u8 } else { b'\n' };
        let mut data = Vec::new();
        for (month, n, long, word, wide) in &rows {
            let num = if *long { format!("{n}12345678901234567") } else { n.to_string() };
            data.extend_from_slice(format!("{month},{num},").as_bytes());
            data.extend_from_slice(word);
            if *wide {
                // Lines longer than a merge block.
                data.extend(std::iter::repeat_n(b'w', 70));
            }
            data.push(eol);
        }
        let keys: &[&str] = match spec {
            0 => &["1,1M"],
            1 => &["2,2n"],
            2 => &["2,2nr"],
            3 => &["1,1M", "2,2n"],
            _ => &["3,3"],
        };
        let lo = comma_keys(keys, reverse);
        let b = tiny(Format::Lines, d, MergePolicy::Optimal, false).line_order(lo.clone()).eol(eol);
        let (out, _) = sort_bytes(b, &data);
        prop_assert_eq!(out, sorted_with(&data, eol, |a, b| lo.compare(a, b)));
    }
}

/// Runs formed from chunks whose keys are all short carry them (more bytes
/// written than read), and the output holds the lines alone. Under `-z`
/// the keys' zero padding holds the terminator byte, and the merge's small
/// blocks cut some keys in two: the line's end is looked for after its key.
#[test]
fn short_keys_ride_in_the_runs() {
    for eol in [b'\n', 0] {
        let data: Vec<u8> = (0..3000u32)
            .flat_map(|i| {
                let mut l = format!("{},{}", i.wrapping_mul(2_654_435_761) % 1000, i).into_bytes();
                l.push(eol);
                l
            })
            .collect();
        let lo = comma_keys(&["1,1n"], false);
        let b = SortPlan::builder(Format::Lines)
            .memory(64 << 10)
            .block_size(4096)
            .threads(2)
            .line_order(lo.clone())
            .eol(eol);
        let (out, stats) = sort_bytes(b, &data);
        assert!(stats.runs > 3, "{stats:?}");
        // 8 key bytes per line in the runs.
        assert_eq!(stats.run_formation.bytes_written, data.len() as u64 + 8 * 3000, "{stats:?}");
        assert_eq!(out, sorted_with(&data, eol, |a, b| lo.compare(a, b)), "eol {eol:#04x}");
    }
}

/// The merge indexes a keyed run's window on all threads from guesses of
/// where items start (after a terminator byte); a guess that lands in a
/// key holding that byte is found out and indexed again. Reversed text
/// keys turn a 0xF5 byte into `\n`, so many keys here hold it, and blocks
/// of 256 KiB give windows large enough to be indexed in parallel.
#[test]
fn keyed_windows_indexed_in_parallel_survive_terminators_in_keys() {
    let alphabet = [b'a', b'b', 0xF5, b'z'];
    let mut x = 12345u64;
    let mut data = Vec::new();
    let mut lines = 0u64;
    while data.len() < 8 << 20 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let len = 1 + (x >> 60) as usize % 5;
        data.extend((0..len).map(|i| alphabet[(x >> (8 * i + 20)) as usize % 4]));
        data.extend_from_slice(format!(",{}\n", x >> 48).as_bytes());
        lines += 1;
    }
    let lo = comma_keys(&["1,1r"], false);
    let b = SortPlan::builder(Format::Lines)
        .memory(4 << 20)
        .block_size(1 << 20)
        .threads(2)
        .line_order(lo.clone());
    let (out, stats) = sort_bytes(b, &data);
    assert!(stats.runs > 3, "{stats:?}");
    // Keyed runs: 8 key bytes per line.
    assert_eq!(stats.run_formation.bytes_written, data.len() as u64 + 8 * lines, "{stats:?}");
    assert!(out == sorted_with(&data, b'\n', |a, b| lo.compare(a, b)), "output differs from the oracle");
}

/// The order of framed rows (module `crate::rows`), `-r`, `-u`.
fn rows_order(reverse: bool, unique: bool) -> LineOrder {
    let mut o = OrderOptions { rows: true, unique, ..OrderOptions::default() };
    o.global.reverse = reverse;
    LineOrder::new(o).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Framed rows whose keys and payloads hold newlines sort by their
    /// keys, equal keys in input order (`-r` reverses the keys' order only;
    /// `-u` keeps each key's first row), through runs on disk and merges,
    /// from a file and pushed into a `Sorter` in pieces: as a stable
    /// `slice::sort_by_key`.
    #[test]
    fn framed_rows_sort_stably_by_their_keys(
            rows in prop::collection::vec((
                // Keys end with their only NUL: prefix-free, as the rows'
                // keys must be.
                prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'\n', 0xff]), 0..10)
                    .prop_map(|k| [k, vec![0]].concat()),
                prop::collection::vec(prop::sample::select(vec![b'x', b'\n', 0u8, 4u8]), 0..40)), 0..120),
            d in 2usize..4, p in policy(), reverse: bool, unique: bool, piece in 1usize..50) {
        let mut data = Vec::new();
        for (k, v) in &rows {
            crate::rows::frame(k, v, &mut data).unwrap();
        }
        let mut want: Vec<&(Vec<u8>, Vec<u8>)> = rows.iter().collect();
        want.sort_by(|a, b| if reverse { b.0.cmp(&a.0) } else { a.0.cmp(&b.0) });
        if unique {
            want.dedup_by(|b, a| a.0 == b.0);
        }
        let mut expect = Vec::new();
        for (k, v) in want {
            crate::rows::frame(k, v, &mut expect).unwrap();
        }
        let order = rows_order(reverse, unique);
        let (out, _) = sort_bytes(tiny(Format::Lines, d, p, false).line_order(order.clone()), &data);
        prop_assert!(out == expect, "sorted from a file");
        let t = tempfile::tempdir().unwrap();
        let plan = tiny(Format::Lines, d, p, false).line_order(order).temp_dir(t.path()).build().unwrap();
        let mut sorter = crate::Sorter::new(plan).unwrap();
        for c in data.chunks(piece) {
            sorter.push(c).unwrap();
        }
        let mut got = Vec::new();
        for b in sorter.finish().unwrap().blocks() {
            let b = b.unwrap();
            let mut n = 0;
            while n < b.len() {
                n += crate::rows::row_len(&b[n..]).expect("blocks of whole rows");
            }
            prop_assert_eq!(n, b.len(), "blocks of whole rows");
            got.extend_from_slice(&b);
        }
        prop_assert!(got == expect, "sorted by a Sorter");
    }
}

/// Runs compressed by each codec (and by `auto`, whatever it decides on
/// this machine) give the uncompressed sort's output byte for byte:
/// numbers, records, lines bytewise, CSV by keys with `-u` and `-s`,
/// reversed, through several merge levels in a small budget, through the
/// page cache, `O_DIRECT` and io_uring; each run's bytes are read back as
/// written, and text takes fewer bytes on disk than in the runs.
#[test]
fn compressed_runs_sort_like_plain_ones() {
    use crate::Compression;
    let mut x = 7u64;
    let csv: Vec<u8> = (0..20_000)
        .flat_map(|_| {
            let v = xorshift(&mut x);
            format!("{},{},{}.{}\n", v % 997, v % 13, (v >> 20) % 5000, v % 10).into_bytes()
        })
        .collect();
    let u32s = numbers(100_000, 11).concat();
    let f64s: Vec<u8> = (0..40_000).flat_map(|_| (xorshift(&mut x) as f64 / 7.0).to_ne_bytes()).collect();
    let rec: Format = "rec:20:4:6".parse().unwrap();
    let recs: Vec<u8> =
        (0..20_000).flat_map(|_| xorshift(&mut x).to_le_bytes().repeat(3)[..20].to_vec()).collect();
    let keyed = |unique: bool, stable: bool| {
        let mut o = OrderOptions { tab: Some(b','), unique, stable, ..OrderOptions::default() };
        o.keys = vec![Key::parse("2,2").unwrap(), Key::parse("3,3n").unwrap()];
        LineOrder::new(o).unwrap()
    };
    let cases: Vec<(Format, &[u8], Option<LineOrder>, bool)> = vec![
        (Format::U32, &u32s, None, false),
        (Format::F64, &f64s, None, true),
        (rec, &recs, None, false),
        (Format::Lines, &csv, None, true),
        (Format::Lines, &csv, Some(comma_keys(&["3,3n"], false)), false),
        (Format::Lines, &csv, Some(keyed(true, false)), false),
        (Format::Lines, &csv, Some(keyed(false, true)), true),
    ];
    for (format, data, order, reverse) in cases {
        let plan = |c: Compression, kind: StreamKind| {
            let b = SortPlan::builder(format)
                .memory(128 << 10)
                .block_size(4096)
                .fan_in(2)
                .chunk_buffers(2)
                .threads(2)
                .io(kind)
                .reverse(reverse)
                .compression(c);
            match &order {
                Some(o) => b.line_order(o.clone()),
                None => b,
            }
        };
        let (want, _) = sort_bytes(plan(Compression::None, StreamKind::Buffered), data);
        for c in [Compression::Lz4, Compression::Zstd(3), Compression::Auto] {
            for kind in [StreamKind::Buffered, StreamKind::Direct, StreamKind::UringDirect] {
                let what = format!("{format} {c} {kind} {order:?}");
                // io_uring may be refused here (seccomp): its kinds are then skipped.
                if kind.queued() && emsort_io::uring_unavailable().is_some() {
                    continue;
                }
                let (out, stats) = sort_bytes(plan(c.clone(), kind), data);
                assert!(out == want, "{what}: differs from the uncompressed sort");
                assert!(stats.merge_levels >= 2, "{what}: {stats:?}");
                let s = stats.compression.expect("asked for");
                assert_eq!(s.raw_read, s.raw_written, "{what}");
                assert_eq!(s.stored_read, s.stored_written, "{what}");
                if c != Compression::Auto {
                    assert_eq!(s.chosen, c.to_string());
                    assert!(s.raw_written >= data.len() as u64, "{what}: {s:?}");
                    if format == Format::Lines {
                        assert!(s.stored_written < s.raw_written, "{what}: {s:?}");
                    }
                }
            }
        }
    }
}

/// A merge of more sorted files than d (`-m`) writes its new runs with the
/// codec asked for (`auto` has no run to sample there: none).
#[test]
fn merges_of_given_files_compress_their_new_runs() {
    use crate::Compression;
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut paths = Vec::new();
    let mut all = Vec::new();
    for i in 0..7u64 {
        let mut lines: Vec<Vec<u8>> = numbers(3000, i + 3)
            .iter()
            .map(|n| format!("line {:05}\n", u32::from_ne_bytes(n[..4].try_into().unwrap())).into_bytes())
            .collect();
        lines.sort();
        let path = dir.path().join(format!("part-{i}"));
        std::fs::write(&path, lines.concat()).unwrap();
        all.extend(lines);
        paths.push(path);
    }
    all.sort();
    for (c, chosen) in [(Compression::Zstd(1), "zstd:1"), (Compression::Auto, "none")] {
        let plan = SortPlan::builder(Format::Lines)
            .memory(256 << 10)
            .block_size(4096)
            .fan_in(2)
            .compression(c)
            .temp_dir(&tmp)
            .build()
            .unwrap();
        let out = dir.path().join("out");
        let stats = merge_files(&plan, &paths, &out, &NoProgress, &AtomicBool::new(false)).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), all.concat());
        let s = stats.compression.expect("asked for");
        assert_eq!(s.chosen, chosen);
        assert_eq!(s.raw_written > 0, chosen != "none", "{s:?}");
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "temp files left behind");
    }
}
