//! `emsort sort` of Parquet and Arrow files by named columns: outputs
//! against arrow-ord's comparator (a stable sort of row numbers), several
//! inputs, the footer's order, and GNU's exit status 2 with nothing written
//! for a key that names no column, an option of text lines, a file that is
//! not a table, or no `-o`.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_ord::sort::{LexicographicalComparator, SortColumn};
use arrow_schema::SortOptions;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

use crate::{p, run, setup, stderr};

fn table(n: usize, seed: u64) -> RecordBatch {
    let mut x = seed | 1;
    let mut r = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let id = Int64Array::from((0..n as i64).collect::<Vec<_>>());
    let group: StringArray = (0..n).map(|_| (r() % 10 != 0).then(|| format!("g{}", r() % 30))).collect();
    let score: Float64Array =
        (0..n).map(|_| (r() % 10 != 0).then(|| (r() % 1000) as f64 / 8.0 - 50.0)).collect();
    let cols: Vec<(&str, ArrayRef)> =
        vec![("id", Arc::new(id)), ("group", Arc::new(group)), ("score", Arc::new(score))];
    RecordBatch::try_from_iter(cols).unwrap()
}

/// Writes `batch` as Parquet with row groups of 1500 rows.
fn write(batch: &RecordBatch, path: &Path) {
    write_with(batch, path, WriterProperties::builder().set_max_row_group_row_count(Some(1500)).build());
}

fn write_with(batch: &RecordBatch, path: &Path, props: WriterProperties) {
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), Some(props)).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

fn ids(path: &Path) -> Vec<i64> {
    let r = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap();
    r.flat_map(|b| {
        let b = b.unwrap();
        b.column(0).as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec()
    })
    .collect()
}

/// The ids of `batch`'s rows stably sorted by (column, descending,
/// nulls_first) keys.
fn oracle(batch: &RecordBatch, keys: &[(&str, bool, bool)]) -> Vec<i64> {
    let cols: Vec<SortColumn> = keys
        .iter()
        .map(|&(c, descending, nulls_first)| SortColumn {
            values: batch.column_by_name(c).unwrap().clone(),
            options: Some(SortOptions { descending, nulls_first }),
        })
        .collect();
    let cmp = LexicographicalComparator::try_new(&cols).unwrap();
    let mut idx: Vec<usize> = (0..batch.num_rows()).collect();
    idx.sort_by(|&a, &b| cmp.compare(a, b));
    let id = batch.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
    idx.into_iter().map(|i| id.value(i)).collect()
}

#[test]
fn parquet_files_sort_by_named_columns() {
    let (d, tmp) = setup();
    let (a, b) = (table(6000, 3), table(2500, 9));
    let (pa, pb) = (d.path().join("a.parquet"), d.path().join("b.parquet"));
    write(&a, &pa);
    write(&b, &pb);
    let out = d.path().join("out.parquet");
    let o = run(&[
        "sort",
        "-k",
        "group",
        "-k",
        "score:desc,nulls_first",
        "-S",
        "300K",
        "-T",
        p(&tmp),
        "-o",
        p(&out),
        p(&pa),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(ids(&out), oracle(&a, &[("group", false, false), ("score", true, true)]));
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "temporary files left");
    let md = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&out).unwrap())
        .unwrap()
        .metadata()
        .clone();
    let g = &md.row_groups()[0];
    assert_eq!(g.num_rows(), 1500);
    let s = g.sorting_columns().expect("sorting_columns");
    assert_eq!((s[1].column_idx, s[1].descending, s[1].nulls_first), (2, true, true));

    // The row groups and codec as given.
    let o = run(&[
        "sort",
        "-k",
        "id",
        "--row-group-size",
        "700",
        "--parquet-compression",
        "zstd(3)",
        "-o",
        p(&out),
        p(&pa),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let md = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&out).unwrap())
        .unwrap()
        .metadata()
        .clone();
    assert_eq!(md.row_groups()[0].num_rows(), 700);
    assert!(matches!(md.row_groups()[0].column(0).compression(), parquet::basic::Compression::ZSTD(_)));
    assert_eq!(ids(&out), (0..6000).collect::<Vec<i64>>());

    // Two inputs as one, -r, into the first input itself (replaced when
    // complete).
    let both = arrow_select::concat::concat_batches(&a.schema(), [&a, &b]).unwrap();
    let o = run(&["sort", "-r", "-k", "score", "-S", "300K", "-T", p(&tmp), "-o", p(&pa), p(&pa), p(&pb)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(ids(&pa), oracle(&both, &[("score", true, false)]));
}

#[test]
fn bad_table_sorts_exit_2_and_write_nothing() {
    let (d, tmp) = setup();
    let input = d.path().join("in.parquet");
    write(&table(100, 1), &input);
    let before = std::fs::read(&input).unwrap();
    let out = d.path().join("out.parquet");
    let text = d.path().join("x.txt");
    std::fs::write(&text, "a\n").unwrap();
    let junk = d.path().join("junk.parquet");
    std::fs::write(&junk, "PAR1 but no more\n").unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["-k", "nope"], "no such column"),
        (&["-n", "-k", "id"], "-n"),
        (&["-t,", "-k", "id"], "-t"),
        (&[p(&text)], "x.txt: not a table"),
        (&[p(&junk)], "junk.parquet"),
    ];
    for (args, says) in cases {
        let mut all = vec!["sort", "-T", p(&tmp), "-o", p(&out), p(&input)];
        all.extend_from_slice(args);
        let o = run(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(!out.exists(), "{args:?} wrote an output");
    }
    let o = run(&["sort", "-k", "id", p(&input)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("-o"), "{}", stderr(&o));
    let o = run(&["sort", "--parquet-compression", "zip", "-o", p(&out), p(&input)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("zip") && !out.exists(), "{}", stderr(&o));
    let o = run(&["sort", "--row-group-size", "9", p(&text)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("Parquet output"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&input).unwrap(), before);
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

/// Whether each column of `path`'s first row group is dictionary-encoded.
fn dictionaries(path: &Path) -> Vec<bool> {
    let md = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap())
        .unwrap()
        .metadata()
        .clone();
    md.row_groups()[0].columns().iter().map(|c| c.dictionary_page_offset().is_some()).collect()
}

#[test]
fn each_columns_dictionary_encoding_follows_the_input() {
    let (d, tmp) = setup();
    let batch = table(5000, 5);
    let out = d.path().join("out.parquet");
    // Each of the three columns with and without a dictionary in turn.
    for plain in 0..3 {
        let input = d.path().join(format!("in{plain}.parquet"));
        let col = parquet::schema::types::ColumnPath::from(batch.schema().field(plain).name().as_str());
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(1500))
            .set_column_dictionary_enabled(col, false)
            .build();
        write_with(&batch, &input, props);
        let given = dictionaries(&input);
        assert_eq!(given.iter().filter(|&&on| !on).count(), 1, "{given:?}");
        let o =
            run(&["sort", "-k", "group", "-k", "id", "-S", "300K", "-T", p(&tmp), "-o", p(&out), p(&input)]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(dictionaries(&out), given, "column {plain} plain in the input");
        assert_eq!(ids(&out), oracle(&batch, &[("group", false, false), ("id", false, false)]));
    }
}

#[test]
fn a_damaged_row_group_read_ahead_is_exit_2_with_nothing_written() {
    // The input is decoded on a thread of its own while its rows are
    // framed: a page header destroyed in the last row group fails there,
    // after rows have been sorted, and the sort still ends as any bad
    // input does.
    let (d, tmp) = setup();
    let input = d.path().join("in.parquet");
    write(&table(6000, 7), &input);
    let md = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&input).unwrap())
        .unwrap()
        .metadata()
        .clone();
    let last = md.row_groups().last().unwrap();
    assert!(md.num_row_groups() >= 4);
    let at = last.column(0).data_page_offset() as usize;
    let mut bytes = std::fs::read(&input).unwrap();
    bytes[at..at + 24].fill(0xff);
    std::fs::write(&input, &bytes).unwrap();
    let out = d.path().join("out.parquet");
    std::fs::write(&out, "kept\n").unwrap();
    let o = run(&["sort", "-k", "score", "-S", "300K", "-T", p(&tmp), "-o", p(&out), p(&input)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("in.parquet"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), b"kept\n", "the output was touched");
    assert_eq!(std::fs::read(&input).unwrap(), bytes);
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "temporary files left");
}

/// A table of `n` rows: `id`, a key `k` (random) and a payload `p` of
/// `width` bytes per row, one of `distinct` values (each the row's id
/// repeated) or, with `distinct` 0, bytes of its own.
fn wide_table(n: usize, width: usize, distinct: usize) -> RecordBatch {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    let mut r = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let k = Int64Array::from((0..n).map(|_| (r() >> 2) as i64).collect::<Vec<_>>());
    let mut payload = |i: usize| {
        let v = if distinct == 0 { i } else { i % distinct };
        let mut s = format!("{v:08}-").repeat(width / 9 + 1);
        s.truncate(width);
        if distinct == 0 {
            // Bytes that do not compress.
            let noise: String = (0..width / 2).map(|_| (b'a' + (r() % 26) as u8) as char).collect();
            s.replace_range(..width / 2, &noise);
        }
        s
    };
    let p: StringArray = (0..n).map(|i| Some(payload(i))).collect();
    let id = Int64Array::from((0..n as i64).collect::<Vec<_>>());
    RecordBatch::try_from_iter(vec![
        ("id", Arc::new(id) as ArrayRef),
        ("k", Arc::new(k) as ArrayRef),
        ("p", Arc::new(p) as ArrayRef),
    ])
    .unwrap()
}

#[test]
fn wide_rows_stay_within_memory_plus_overhead() {
    // docs/commands.md: a table sort's peak RSS is about M + 40 MiB, plus
    // the input's largest page (compressed and decoded). Rows of 64 KiB
    // whose values a dictionary holds (a batch sized by the encoded width
    // held 1024 of them: 64 MiB), and rows of 3 MiB, longer than a block
    // (each run's reader gathers one whole: the merge's fan-in shrinks).
    const M: u64 = 24 << 20;
    const OVERHEAD: u64 = 48 << 20;
    let (d, tmp) = setup();
    let tiny = d.path().join("tiny.parquet");
    write(&table(10, 1), &tiny);
    let tiny_stats = d.path().join("tiny.json");
    let o =
        run(&["sort", "-k", "id", p(&tiny), "-o", p(&d.path().join("t.parquet")), "--stats", p(&tiny_stats)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let tiny_json: serde_json::Value = serde_json::from_slice(&std::fs::read(&tiny_stats).unwrap()).unwrap();
    let image = tiny_json["peak_rss_bytes"].as_u64().unwrap();
    for (n, width, distinct) in [(1600, 64 << 10, 7), (40, 3 << 20, 0)] {
        let batch = wide_table(n, width, distinct);
        let input = d.path().join("wide.parquet");
        // Pages of about 1 MiB (a row per page when wider).
        let props = WriterProperties::builder()
            .set_write_batch_size(1)
            .set_data_page_size_limit(1 << 20)
            .set_dictionary_page_size_limit(8 << 20)
            .build();
        write_with(&batch, &input, props);
        let out = d.path().join("out.parquet");
        let stats = d.path().join("stats.json");
        let o = run(&[
            "sort",
            "-k",
            "k",
            "-S",
            "24M",
            "-T",
            p(&tmp),
            "-o",
            p(&out),
            "--stats",
            p(&stats),
            p(&input),
        ]);
        assert!(o.status.success(), "{width}: {}", stderr(&o));
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        let rss = json["peak_rss_bytes"].as_u64().unwrap();
        assert!(json["runs"].as_u64().unwrap() > 2, "{width}: {json}");
        assert!(
            rss <= M + OVERHEAD + image,
            "rows of {width} B: peak RSS {rss} > M {M} + {OVERHEAD} + the binary's {image}"
        );
        assert_eq!(ids(&out), oracle(&batch, &[("k", false, false)]), "rows of {width} B");
        // Every row's payload came through whole.
        let sorted: Vec<RecordBatch> =
            ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&out).unwrap())
                .unwrap()
                .build()
                .unwrap()
                .map(|b| b.unwrap())
                .collect();
        let want = batch.column(2).as_any().downcast_ref::<StringArray>().unwrap();
        for b in &sorted {
            let (id, got) = (
                b.column(0).as_any().downcast_ref::<Int64Array>().unwrap(),
                b.column(2).as_any().downcast_ref::<StringArray>().unwrap(),
            );
            for i in 0..b.num_rows() {
                assert_eq!(got.value(i), want.value(id.value(i) as usize), "row {}", id.value(i));
            }
        }
    }
}

#[test]
fn a_table_sort_stopped_by_a_signal_or_a_full_file_leaves_nothing() {
    use std::process::Stdio;
    let (d, tmp) = setup();
    let input = d.path().join("big.parquet");
    write(&table(600_000, 11), &input);
    let out = d.path().join("out.parquet");
    std::fs::write(&out, "kept\n").unwrap();
    // Ctrl-C and SIGTERM once run formation has written runs: the sort dies
    // of the signal (130, 143), the old output untouched, -T empty.
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let child = crate::emsort()
            .args(["sort", "-q", "-k", "group", "-k", "score:desc", "-S", "1M", "-T", p(&tmp)])
            .args([p(&input), "-o", p(&out)])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        assert!(crate::wait_for_runs(&tmp, 2) >= 2, "no run appeared");
        unsafe { libc::kill(child.id() as i32, signal) };
        let o = child.wait_with_output().unwrap();
        assert!(crate::died_of(&o.status, signal), "signal {signal}: {:?} {}", o.status, stderr(&o));
        assert!(crate::entries(&tmp).is_empty(), "signal {signal}: left behind: {:?}", crate::entries(&tmp));
        assert_eq!(std::fs::read(&out).unwrap(), b"kept\n", "signal {signal}: the output was touched");
    }
    // A file that cannot grow past 256 KiB (RLIMIT_FSIZE: a full disk's
    // error on write): exit 2 naming the run, nothing left, the output kept.
    let mut cmd = crate::emsort();
    cmd.args(["sort", "-q", "-k", "group", "-S", "1M", "-T", p(&tmp), p(&input), "-o", p(&out)]);
    crate::file_size_limit(&mut cmd, 256 << 10);
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("file size limit exceeded"), "{}", stderr(&o));
    assert!(crate::entries(&tmp).is_empty(), "left behind: {:?}", crate::entries(&tmp));
    assert_eq!(std::fs::read(&out).unwrap(), b"kept\n", "the output was touched");
    assert_eq!(crate::entries(d.path()), ["big.parquet", "out.parquet", "tmp"]);
}
