//! Sorting any bytes as `lines` with memory budgets of a few hundred bytes
//! (so every input of more than a few lines takes the disk path), against
//! the naive oracle of `LC_ALL=C sort`: split on `\n` (a last line may lack
//! it), sort bytewise, join with `\n` after every line.
//!
//! The default case counts keep this binary fast; the large tier is
//! `PROPTEST_CASES=5000 cargo test -p emsort-sort --test tests fuzz_`.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use emsort_io::test_util::{cases, within};
use emsort_io::NoProgress;
use emsort_sort::merge_policy::MergePolicy;
use emsort_sort::{sort_file, Format, SortError, SortPlan, SortStats};
use emsort_sort::{Sink, Source};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// The oracle: `data`'s lines sorted bytewise (descending with `reverse`),
/// each followed by `\n`.
fn oracle(data: &[u8], reverse: bool) -> Vec<u8> {
    let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    if data.is_empty() || data.ends_with(b"\n") {
        lines.pop(); // the empty piece after the last '\n'
    }
    lines.sort();
    if reverse {
        lines.reverse();
    }
    lines.iter().flat_map(|l| l.iter().chain(b"\n")).copied().collect()
}

/// `default` cases (or `$PROPTEST_CASES`); failures are kept in the crate's
/// `proptest-regressions/` (proptest looks for a `lib.rs` beside the test's
/// source to place them, and an integration test has none).
fn config(default: u32) -> ProptestConfig {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/tests-lines.txt");
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(file))),
        ..ProptestConfig::with_cases(cases(default))
    }
}

/// A plan with a tiny budget: `spare` bytes above the least memory a plan
/// with blocks of `block` and fan-in `d` accepts (a few hundred bytes).
#[derive(Debug, Clone, Copy)]
struct Tiny {
    spare: u64,
    block: usize,
    d: usize,
    policy: MergePolicy,
    reverse: bool,
    /// Through `emsort_sort::sort` from a reader into a writer (standard input
    /// and output), else `sort_file`.
    stdio: bool,
}

fn tiny() -> impl Strategy<Value = Tiny> {
    (
        prop::sample::select(vec![0u64, 0, 1, 64, 200, 512, 4096]),
        prop::sample::select(vec![64usize, 128]),
        2usize..5,
        prop_oneof![Just(MergePolicy::Fifo), Just(MergePolicy::Optimal)],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(spare, block, d, policy, reverse, stdio)| Tiny {
            spare,
            block,
            d,
            policy,
            reverse,
            stdio,
        })
}

impl Tiny {
    fn plan(&self, tmp: &Path) -> SortPlan {
        let with = |memory: u64| {
            SortPlan::builder(Format::Lines)
                .memory(memory)
                .block_size(self.block)
                .fan_in(self.d)
                .policy(self.policy)
                .reverse(self.reverse)
                .threads(2)
                .temp_dir(tmp)
                .build()
        };
        match with(1) {
            Err(SortError::MemoryTooSmall { minimum, .. }) => with(minimum + self.spare).unwrap(),
            r => panic!("a plan of 1 byte: {r:?}"),
        }
    }
}

/// A reader that hands out at most `chunk` bytes per call, as a pipe does.
struct Trickle<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.chunk).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Sorts `data` with `t` in `dir` (its own temp dir under it, which must be
/// left empty); returns the output and the statistics.
fn sort_lines(dir: &Path, t: Tiny, data: &[u8]) -> (Vec<u8>, SortStats) {
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let plan = t.plan(&tmp);
    let no = AtomicBool::new(false);
    let (out, stats) = if t.stdio {
        let mut out = Vec::new();
        let mut input = Trickle { data, chunk: 1 + data.len() % 97 };
        let stats = within(t, || {
            emsort_sort::sort(
                &plan,
                vec![Source::Reader(&mut input)],
                Sink::Writer(&mut out),
                &NoProgress,
                &no,
            )
        })
        .unwrap();
        (out, stats)
    } else {
        let (input, output) = (dir.join("in"), dir.join("out"));
        std::fs::write(&input, data).unwrap();
        let stats = within(t, || sort_file(&plan, &input, &output, &NoProgress, &no)).unwrap();
        assert_eq!(std::fs::read(&input).unwrap(), data, "input modified");
        (std::fs::read(&output).unwrap(), stats)
    };
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
    (out, stats)
}

/// Any bytes, `\n` frequent so that there are lines, `\r`, NUL and bytes
/// ≥ 0x80 among them; empty, newlines only, or a single line too; at most
/// `max` bytes.
fn any_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        3 => any::<u8>(),
        2 => Just(b'\n'),
        2 => prop::sample::select(vec![b'\r', 0, 0x80, 0xff, b'a', b'b', b' ']),
    ];
    prop_oneof![
        8 => prop::collection::vec(byte, 0..max),
        1 => Just(Vec::new()),
        1 => (1..max.min(300)).prop_map(|n| vec![b'\n'; n]),
        1 => prop::collection::vec(any::<u8>().prop_filter("no newline", |&b| b != b'\n'), 1..max),
    ]
}

/// A few lines up to many times the memory budget, between short ones.
fn long_lines() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        (1usize..30_000, any::<u8>()).prop_map(|(n, b)| vec![if b == b'\n' { b'x' } else { b }; n]),
        prop::collection::vec(any::<u8>().prop_filter("no newline", |&b| b != b'\n'), 0..40),
    ];
    (prop::collection::vec(line, 0..8), any::<bool>()).prop_map(|(lines, final_newline)| {
        let mut data: Vec<u8> = lines.iter().flat_map(|l| l.iter().chain(b"\n")).copied().collect();
        if !final_newline {
            data.pop();
        }
        data
    })
}

#[test]
fn fuzz_sort_lines_any_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let spilled = std::cell::Cell::new(0);
    // Inputs sized to the budget: at the least memory a run holds a few
    // bytes of lines, and hundreds of runs take seconds to merge.
    let case = tiny().prop_flat_map(|t| (any_bytes((400 + 4 * t.spare as usize).min(3000)), Just(t)));
    proptest!(config(48), |((data, t) in case)| {
        let (out, stats) = sort_lines(dir.path(), t, &data);
        prop_assert!(out == oracle(&data, t.reverse), "{:?}: {} bytes in, {} out", t, data.len(), out.len());
        spilled.set(spilled.get() + usize::from(stats.runs > 1));
    });
    // Most cases took the disk path (several runs, merged).
    let spilled = spilled.get();
    assert!(spilled >= cases(48) as usize / 4, "{spilled} of {} cases made several runs", cases(48));
}

#[test]
fn fuzz_sort_lines_long_lines() {
    let dir = tempfile::tempdir().unwrap();
    proptest!(config(16), |(data in long_lines(), t in tiny())| {
        let (out, _) = sort_lines(dir.path(), t, &data);
        prop_assert!(out == oracle(&data, t.reverse), "{:?}: {} bytes in, {} out", t, data.len(), out.len());
    });
}

/// The edges the strategies reach only by chance, on both paths.
#[test]
fn fuzz_sort_lines_edges() {
    let dir = tempfile::tempdir().unwrap();
    let long = vec![b'z'; 10_000];
    let cases: [&[u8]; 9] = [
        b"",
        b"\n",
        b"\n\n\n",
        b"no newline at all",
        b"\r\n\r\n\r",
        b"\0\n\0\0\n\n\0",
        b"b\r\na\r\n\x80\n\xff\n\x7f",
        &long,
        b"a\nb\na\nb\na\n",
    ];
    for data in cases {
        for stdio in [false, true] {
            for reverse in [false, true] {
                let t = Tiny { spare: 0, block: 64, d: 2, policy: MergePolicy::Optimal, reverse, stdio };
                let (out, _) = sort_lines(dir.path(), t, data);
                assert_eq!(out, oracle(data, reverse), "{t:?} {:?}", String::from_utf8_lossy(data));
            }
        }
    }
}
